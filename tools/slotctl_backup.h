/*
 * slotctl_backup.h — `slotctl backup`, `slotctl restore` and `slotctl
 * verify-backup` (docs/operations.md, "Backups"). backup asks the server
 * (the backup op); restore and verify-backup work on files here, offline,
 * through slot/backup.h, and never talk to a server.
 */
#ifndef SLOTCTL_BACKUP_H
#define SLOTCTL_BACKUP_H

#include <stdbool.h>

#include "slot/client.h"

/*
 * slotctl_backup — send {"op":"backup","path":ABS} through f (slotctl's
 * follower, token set) and print the answer: file is made absolute against
 * the current folder (the server writes it, on its own machine).
 *   json: print the raw reply line instead.
 * Returns slotctl's exit status: 0, 1 a server error, 2 the connection failed,
 * 64 a usage error (a name too long).
 */
int slotctl_backup(slot_follow *f, bool json, const char *file);

/*
 * slotctl_restore — `restore FILE --data DIR [--force]`: argv[optind..]
 * are the command's arguments (getopt state as slotctl left it). Offline:
 * slot_backup_restore. Returns 0, 1 refused or failed (a message says
 * why), 64 a usage error.
 */
int slotctl_restore(int argc, char **argv);

/*
 * slotctl_verify_backup — `verify-backup FILE`: slot_backup_verify on a
 * scratch copy in $TMPDIR (or /tmp); prints seq, digest, sizes and the
 * check's result. Returns 0 intact and no violation, 1 otherwise, 64 a usage
 * error.
 */
int slotctl_verify_backup(int argc, char **argv, bool json);

/* The commands' help texts (static). */
const char *slotctl_backup_help(void);
const char *slotctl_restore_help(void);
const char *slotctl_verify_backup_help(void);

#endif
