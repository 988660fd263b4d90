/*
 * cluster.h — the replica-set layer as the server sees it (docs/design.md,
 * "Replica sets"): a node of a set found in etcd (--cluster) is a primary,
 * a replica or joining; this layer owns that role, the batch log (DATA/rlog)
 * and the replication channel, and plugs into the server through
 * s->clu_up (server_int.h). Loop thread only, unless a hook says otherwise.
 */
#ifndef SLOT_CLUSTER_H
#define SLOT_CLUSTER_H

#include "server/server_int.h"

/*
 * slot__cluster_start — when s->opts.cluster is set: load the secret file
 * (refused when group or others may read it), open DATA/rlog, listen for
 * replication, set s->clu, s->clu_up and s->batch.wset, and start talking to
 * etcd (the role is decided from there, asynchronously). Call after the
 * store is open and before the commit thread starts.
 * Returns 0, or -1 after logging why (the server must not start).
 */
int slot__cluster_start(server *s);

/*
 * slot__cluster_stop — the server is stopping: answer a batch that waits
 * for acks unavailable, close the replication channel, revoke nothing (the
 * node key's lease runs out), close the etcd client. Idempotent. The loop
 * must run afterwards for the handles to close.
 */
void slot__cluster_stop(server *s);

/* slot__cluster_free — free what is left (after the loop ended and the
 * commit thread stopped). NULL-safe on s->clu. */
void slot__cluster_free(server *s);

#endif
