/*
 * commit.h — the commit thread: it takes the batch the loop collected, runs
 * it in ONE write transaction, commits (one fsync) and hands it back to the
 * loop through s->async (docs/design.md, "Group commit"). While it commits
 * batch N the loop collects batch N+1.
 */
#ifndef SLOT_COMMIT_H
#define SLOT_COMMIT_H

#include "server_int.h"

/* slot__commit_start — start the commit thread. Returns 0 or an errno. Loop thread, once. */
int slot__commit_start(server *s);

/* slot__commit_stop — stop and join the commit thread (after the batch it
 * runs, if any). A thread never started is fine. Loop thread, once. */
void slot__commit_stop(server *s);

/* slot__batch_complete — s->async's callback: the loop's side of a finished
 * batch (results become answers; the next batch goes; connections with new
 * answers are flushed). Loop thread. */
void slot__batch_complete(uv_async_t *h);

/* slot__batch_finish — the rest of a batch's completion, once its acks are
 * in (or at once, standalone): results become answers (every one replaced
 * by err with message why when err is not SLOT_E_OK: the replica-set layer
 * answers unavailable that way), the next batch goes, connections are
 * flushed, reads that waited for the commit point run. Loop thread. */
void slot__batch_finish(server *s, slot_err err, const char *why);

/* slot__job_dispatch — hand the commit thread the replica-set layer's job
 * (s->clu_up->job_run; job_done when it is back) when it is idle. Returns
 * false when a batch or job is in flight (try again after it). Loop thread. */
bool slot__job_dispatch(server *s);

#endif
