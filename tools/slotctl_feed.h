/*
 * slotctl_feed.h — `slotctl feed`: print the feed's entries (docs/protocol.md,
 * "Feed") or the consumers' positions. Part of slotctl; uses only client.h.
 */
#ifndef SLOTCTL_FEED_H
#define SLOTCTL_FEED_H

#include <stdbool.h>
#include <stdint.h>

#include <jansson.h>

#include "slot/client.h"

/*
 * slotctl_feed — run `slotctl feed [--from N] [--consumer NAME] [--follow]
 * [--consumers]` through f (slotctl's follower, token set): the first request
 * follows the primary, the rest go on that connection (slot_follow_client);
 * argv[optind..] are the command's arguments (getopt state as slotctl left it).
 * With --placement NAME --etcd URL [--state FILE] [--follow] it runs
 * slotctl_pfeed (slotctl_pfeed.h) instead, and f is not used.
 *   token: slotctl's --token, for the placement's sets (NULL: none); borrowed.
 *   json: print the raw lines instead of a human line per entry.
 *   timeout_ms: for each reply (the --follow wait itself is unbounded).
 * Returns slotctl's exit status: 0, 1 a server error, 2 the connection
 * failed, 64 a usage error.
 */
int slotctl_feed(slot_follow *f, const char *token, bool json, int timeout_ms, int argc, char **argv);

/*
 * slotctl_feed_show — prints entry v (raw: its line as it came, NUL-terminated)
 * on stdout: with json the raw line, else "SEQ  TIME(UTC)  TYPE  EVENT
 * key=value..."; set (NULL: none) goes first ("SET  " before a human line,
 * "set":"SET" first in a JSON one). Borrows v and raw for the call.
 */
void slotctl_feed_show(json_t *v, const char *raw, bool json, const char *set);

/* slotctl_feed_help — the command's help text (static). */
const char *slotctl_feed_help(void);

#endif
