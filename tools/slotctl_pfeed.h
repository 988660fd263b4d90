/*
 * slotctl_pfeed.h — `slotctl feed --placement NAME --etcd URL`: the feeds of
 * every replica set of a placement read at once and merged, each event's
 * entries in order and once across its moves (docs/design.md, "The feed of a
 * placement"). Part of slotctl; uses client.h and the etcd client.
 */
#ifndef SLOTCTL_PFEED_H
#define SLOTCTL_PFEED_H

#include <stdbool.h>

typedef struct slotctl_pfeed_opts {
    const char *placement; /* the placement's name, 1..SLOT_CLUSTER_NAME_BYTES_MAX bytes */
    const char *etcd;      /* etcd endpoints, "http://H:P[,http://H:P...]" (slot_etcd_new's) */
    const char *token;     /* slotctl's --token (admin: feed_consumers, feed_forget); NULL: none */
    const char *state;     /* --state FILE: read at start when it exists, rewritten as entries
                              are printed and at the end; NULL: start at each set's oldest entry */
    const char *from;      /* --from "SET=SEQ[,SET=SEQ...]": positions over the state's; NULL: none */
    bool follow;           /* go on until SIGINT or SIGTERM; else stop at every set's head */
    bool json;             /* each entry's line as the set sent it, with "set" added */
    int timeout_ms;        /* each reply, 1..; the --follow wait itself is unbounded */
} slotctl_pfeed_opts;

/*
 * slotctl_pfeed — run the command with o (every string borrowed for the
 * call). Prints the entries on stdout; at the end, on stderr, how many were
 * printed and dropped and each set's next seq. Single-threaded; installs
 * handlers of SIGINT and SIGTERM that end the run at the next turn.
 * Returns slotctl's exit status: 0; 64 a bad --from (a set the placement
 * lacks, a seq out of 1..2^63-1) or --etcd; 1 a server's error, an entry that waited
 * SLOT_CTL_FEED_HOLD_MS_MAX for its hand-over, a bad state file, more events
 * than SLOT_CTL_FEED_EVENTS_MAX; 2 etcd or a set could not be reached
 * (SLOT_CTL_FEED_RESUBSCRIBES_MAX subscribes in a row failed).
 */
int slotctl_pfeed(const slotctl_pfeed_opts *o);

#endif
