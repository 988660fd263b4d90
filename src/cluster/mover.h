/*
 * mover.h — the placement's mover: move_event and the recovery of a move a
 * dead mover left behind (docs/design.md, "Many replica sets", "The mover";
 * docs/protocol.md, "Placement").
 *
 * The loop side (mover_loop.c) runs on the server's loop thread: it starts
 * one mover thread at a time, answers the move_event entry when the thread
 * posts its result, and runs the recovery timer. The thread (mover.c, with
 * its I/O in mover_io.c) has its own uv loop and its own etcd client, and
 * talks to this server's client port over loopback and to the target set's
 * primary with the blocking C client; it touches nothing of the server's.
 */
#ifndef SLOT_CLUSTER_MOVER_H
#define SLOT_CLUSTER_MOVER_H

#include "cluster_int.h"

typedef struct slot__mover slot__mover;

/*
 * slot__mover_start — the loop side's state and its recovery timer, for a
 * --placement node (called by slot__place_start, after the cluster secret
 * is in c->place_secret: the internal ops' macs are made with it).
 *   Returns 0, or -1 (logged) when out of memory.
 *   Loop thread.
 */
int slot__mover_start(clu *c);
/* slot__mover_stop — stops the timer and closes the async handle; waits for
 * a running mover thread to end (a move it runs is left to recovery: every
 * step is safe to stop after). Loop thread, before the etcd client closes. */
void slot__mover_stop(clu *c);
/* slot__mover_free — frees the state (after the loop ran the closes). */
void slot__mover_free(clu *c);

/*
 * slot__mover_run — the move_event entry e (from slot__place_run): the
 * first call checks the request and starts the mover thread (or answers:
 * invalid_argument for a move to this set, not_primary, moving while a move
 * or a recovery runs here); later calls answer it once the thread is done.
 *   Returns SLOT__PLACE_RUNNING (it stays READ_WAIT) or SLOT__PLACE_ANSWERED
 *   (e->res holds the reply: its fields on success, or the error).
 *   Loop thread.
 */
slot__place_state slot__mover_run(server *s, entry *e);

#endif
