/*
 * placement.h — the placement layer of a replica set (--placement NAME;
 * placement.c; docs/design.md, "Many replica sets"; docs/protocol.md,
 * "Placement"). Loop thread only. Errors: slot/error.h.
 */
#ifndef SLOT_CLUSTER_PLACEMENT_H
#define SLOT_CLUSTER_PLACEMENT_H

#include "cluster_int.h"

typedef struct slot__placement slot__placement;

/*
 * slot__place_start — with --placement, the layer's state and its timer
 * (the primary's addresses published under the set's key). Without it,
 * nothing. Called by slot__cluster_start once the etcd client exists.
 *   Returns 0, or -1 (logged) when out of memory.
 */
int slot__place_start(clu *c);
/* slot__place_stop — closes the timer (before the etcd client closes). */
void slot__place_stop(clu *c);
/* slot__place_free — frees the state (after the loop ran the closes). */
void slot__place_free(clu *c);

/*
 * slot__place_admit — s->clu_up->place_admit: a write being admitted on
 * connection c. Takes a create_event, and every write of c admitted while
 * one of c's waits: e becomes READ_WAIT with place_step SLOT__PLACE_DEFER
 * and runs when it reaches c's head (slot__place_run). true: taken.
 */
bool slot__place_admit(server *s, conn *c, entry *e);

/*
 * slot__place_run — s->clu_up->place_run: a deferred write at its
 * connection's head, or the placement op. A create_event on the primary
 * makes its map entry by CAS (the parent's placement checked first);
 * the placement op lists the map. Returns SLOT__PLACE_RUNNING (etcd is
 * asked: it stays READ_WAIT; reads_resume wakes it), SLOT__PLACE_QUEUE (go
 * on to the write queue) or SLOT__PLACE_ANSWERED (res is filled: wrong_set
 * with res.fields, unknown_event, not_primary, unavailable, overloaded; or
 * the placement op's answer in res.fields).
 */
slot__place_state slot__place_run(server *s, entry *e);

/*
 * slot__place_answered — s->clu_up->place_answered: e's reply is going
 * out; a refused create_event whose CAS made the map entry deletes it.
 */
void slot__place_answered(server *s, entry *e);

#endif
