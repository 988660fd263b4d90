/*
 * slotctl_cluster.h — `slotctl cluster [add|remove|promote NODE]`: show a
 * replica set, or change its membership on purpose through the primary's
 * cluster_change op (docs/protocol.md, "cluster_change"; docs/design.md,
 * "Planned changes"). Part of slotctl; uses only client.h.
 */
#ifndef SLOTCTL_CLUSTER_H
#define SLOTCTL_CLUSTER_H

#include <stdbool.h>

#include "slot/client.h"

/* slotctl_cluster_print — the cluster op's (or cluster_change's) answer as a
 * table: the node's line, then one line per member. stdout. */
void slotctl_cluster_print(const slot_reply *r);

/*
 * slotctl_cluster_change — send cluster_change {change, node} through f
 * (slotctl's follower: it goes to the primary, and resends on unavailable,
 * e.g. while another change runs, within its deadline) and print the set as
 * the primary sees it afterwards (json: the raw reply line instead).
 *   change: "add", "remove" or "promote"; node: a member id.
 * Returns slotctl's exit status: 0, 1 a server error (printed on stderr),
 * 2 the connection failed, 64 a usage error (an unknown change, a bad name).
 */
int slotctl_cluster_change(slot_follow *f, bool json, const char *change, const char *node);

#endif
