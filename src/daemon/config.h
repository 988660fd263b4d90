/*
 * config.h — slotd's --config FILE (docs/operations.md, "The config file"):
 * `name = value` lines, each handed to the daemon's own flag parser as the
 * flag --name=value, so a setting in the file means exactly what the flag
 * means and is checked by the same code. Internal to the daemon.
 */
#ifndef SLOT_CONFIG_H
#define SLOT_CONFIG_H

#include <getopt.h>
#include "slot/limits.h"

/* Parses the argv {"slotd", "--name=value"} (argc 2) into the caller's
 * options; returns 0, or -1 after printing why on stderr. */
typedef int (*slot__config_apply_fn)(int argc, char **argv, void *ctx);

/*
 * slot__config_read — read the settings file at path and apply each line.
 *   A line is blank, a comment (first non-blank character '#'), or
 *   `name = value`: name is a long flag of opts without its dashes; value is
 *   the rest of the line, trimmed, up to a '#' that follows a blank (a
 *   comment), or a double-quoted string (the quotes removed; it may hold '#').
 *   A flag that takes no value (opts' no_argument) is written `name = true`
 *   or `name = false`; false leaves it off. Of several lines with one such
 *   name the last counts; a flag with a value is applied line by line, so the
 *   last value wins as on a command line.
 *   opts: the parser's long options, ended by a zero entry; refused: names
 *   (NULL-ended) that may not appear in a file (help, version, config).
 *   apply(argc, argv, ctx) is called once per applied line, in file order;
 *   the argv strings are heap copies that stay valid until the process exits
 *   (the parser may keep pointers to them, as it does to the real argv's;
 *   an atexit handler frees them).
 * Returns 0, or -1 after printing "slotd: PATH:LINE: why" (or "slotd:
 * --config PATH: why" when the file cannot be read or is over
 * SLOT_CONFIG_BYTES_MAX) on stderr: a usage error. Lines before the bad one
 * may have been applied already. Main thread, before the server starts.
 */
int slot__config_read(const char *path, const struct option *opts, const char *const *refused,
                      slot__config_apply_fn apply, void *ctx);

#endif
