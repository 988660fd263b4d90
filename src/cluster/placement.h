/*
 * placement.h — the placement layer of a replica set (--placement NAME;
 * placement.c; docs/design.md, "Many replica sets"; docs/protocol.md,
 * "Placement"). Loop thread only. Errors: slot/error.h.
 */
#ifndef SLOT_CLUSTER_PLACEMENT_H
#define SLOT_CLUSTER_PLACEMENT_H

#include "cluster_int.h"

typedef struct slot__placement slot__placement;
typedef struct slot__place_cache slot__place_cache;

/* ---- place_cache.c: this node's copy of the map, kept by an etcd watch */

/* slot__place_cache_start — read the map under prefix (a string that must
 * outlive the cache) and keep it by a watch on etcd. NULL when out of memory.
 * slot__place_cache_stop — cancel the watch and close the timer (before the
 * etcd client closes); slot__place_cache_free — free it after the loop ran
 * the closes. NULL-safe. */
slot__place_cache *slot__place_cache_start(slot__placement *p, uv_loop_t *loop, slot_etcd *etcd, const char *prefix);
void slot__place_cache_stop(slot__place_cache *pc);
void slot__place_cache_free(slot__place_cache *pc);
/* slot__place_cache_event — the cached entry of event ev: its set (the
 * target while moving), gen and whether it is moving. false: not cached. */
bool slot__place_cache_event(const slot__place_cache *pc, const char *ev, char set[SLOT_CLUSTER_NAME_BYTES],
                             uint64_t *gen, bool *moving);
/* slot__place_cache_set — set's published addresses (valid until the next
 * loop turn; "" when unknown). false: the set is not cached. */
bool slot__place_cache_set(const slot__place_cache *pc, const char *set, const char **primary, const char **http);

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
 * out (called for a reply of an entry with place_step, and for every
 * unknown_event and wrong_set). A refused create_event whose CAS made the
 * map entry deletes it; an unknown_event of an event the map places on
 * another set becomes wrong_set naming it; a wrong_set gets the owner's
 * "primary" and "http" when the map knows them.
 */
void slot__place_answered(server *s, entry *e);

/*
 * slot__place_mac — the mac of an internal op (docs/design.md, "Moving an
 * event"): HMAC-SHA256 with the cluster secret over "slotd-place-1\n" op
 * "\n" event "\n" gen (decimal) "\n" set "\n" data, as 64 lowercase hex
 * digits and a NUL into out. set, data: "" when the op has none (data: the
 * "data" field's base64 text, data_len bytes). Any thread (it reads only
 * c->place_secret, set before the loop runs). Returns 0, or -1 when
 * libcrypto fails (out is then "").
 */
int slot__place_mac(const clu *c, const char *op, const char *event, uint64_t gen, const char *set, const char *data,
                    size_t data_len, char out[SLOT_PLACE_MAC_HEX_BYTES + 1]);

/*
 * slot__place_auth — s->clu_up->place_auth: internal op e may run here when
 * its mac matches (compared in constant time). false: e->res is forbidden
 * (a wrong or missing mac). Loop thread.
 */
bool slot__place_auth(server *s, entry *e);

#endif
