/*
 * slotctl_watch.h — `slotctl watch [EVENT]`: a live view of a server,
 * redrawn every --interval MS on a terminal, like `redis-cli --stat` or
 * top (docs/operations.md, "slotctl"). Uses only client.h.
 */
#ifndef SLOTCTL_WATCH_H
#define SLOTCTL_WATCH_H

#include "slot/client.h"

/*
 * slotctl_watch — run `watch [EVENT] [--once] [--interval MS]` through f
 * (slotctl's follower, token set); argv[optind..] are the command's
 * arguments (getopt state as slotctl left it). On a terminal it redraws
 * until q or Ctrl-C (the terminal's modes are restored); with --once, or
 * when stdout is not a terminal and --once is not given either, see the
 * help text. Each frame takes the stats op (and event EVENT): rates are the
 * counters' differences over the interval.
 * Returns slotctl's exit status: 0, 1 a server error (an unknown EVENT), 2
 * the server could not be reached or went away, 64 a usage error.
 */
int slotctl_watch(slot_follow *f, int argc, char **argv);

/* slotctl_watch_help — the command's help text (static). */
const char *slotctl_watch_help(void);

#endif
