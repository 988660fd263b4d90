/*
 * mover_recover.c — recovery's pass (mover_move.h; docs/design.md, "The
 * mover", "Recovery"): a move whose mover died is finished or undone by the
 * source set's primary. Mover thread only.
 *
 * For each map entry that says moving from this set while no lock key
 * exists (the dead mover's lease expired): take the lock, ask the target's
 * place_state; owned at G+1: finish (map to serving on T at G+1, place_done
 * here); else place_abort on T (it must succeed, or the pass tries again
 * later), place_reclaim at G+1 here, map back to serving here at G+1. With
 * check_done, also: a local record relinquished at G whose map entry says
 * serving on its target at G+1 gets its place_done.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mover_move.h"

/* One moving entry of this set: 0 resolved, -1 left for a later pass. */
static int resolve_one(mv_move *m, const mv_entry *e, int64_t rev)
{
    mv_job *j = m->j;
    char *holder = NULL;
    int rc = mv_lock(m->x, j->event, j->set, e->to, e->gen, &holder);
    free(holder);
    if (rc != 0)
        return -1;
    snprintf(j->to, sizeof j->to, "%s", e->to);
    m->gen = e->gen;
    m->map_rev = rev;
    m->staged_any = true; /* what the dead mover sent T is not known: the undo aborts on T first */
    char addr[SLOT_CLUSTER_ADDR_BYTES] = "";
    if (mv_set_addr(m->x, e->to, addr, sizeof addr) != 0 || !addr[0]) {
        mv_unlock(m->x);
        return -1;
    }
    snprintf(m->dst.addr, sizeof m->dst.addr, "%s", addr);
    mv_close(&m->dst);
    mv_pstate st;
    rc = mv_state(m, &m->dst, &st);
    if (rc != 0) {
        mv_unlock(m->x);
        return -1; /* the target cannot be asked: later */
    }
    if (strcmp(st.state, "owned") == 0 && st.gen == e->gen + 1) {
        rc = mv_finish(m);
    } else {
        snprintf(m->why, sizeof m->why, "recovery of a move whose mover died");
        rc = mv_undo(m) >= 0 ? 0 : -1;
    }
    mv_unlock(m->x);
    return rc;
}

/* A relinquished record here whose move finished on the map: place_done. */
static void done_one(mv_move *m, const mv_entry *e)
{
    mv_pstate st;
    if (mv_state(m, &m->src, &st) != 0)
        return;
    if (strcmp(st.state, "relinquished") != 0 || st.gen + 1 != e->gen || strcmp(st.peer, e->set) != 0)
        return;
    json_t *r = NULL;
    if (mv_place(m, &m->src, mv_op(m, "place_done", e->gen, NULL), &r) != 0)
        m->j->want_check = true;
    json_decref(r);
}

void mv_run_resolve(mv_ctx *x)
{
    mv_job *j = x->job;
    json_t *list = NULL;
    int rc = mv_etcd_list(x, j->prefix, &list);
    if (rc != 0) {
        j->want_check = j->check_done;
        json_decref(list);
        return;
    }
    if (json_object_get(list, "lock")) { /* a mover runs (or its lease has not expired yet) */
        j->want_check = j->check_done;
        json_decref(list);
        return;
    }
    mv_move m = {.x = x, .j = j};
    snprintf(m.src.addr, sizeof m.src.addr, strchr(j->self_host, ':') ? "[%s]:%u" : "%s:%u", j->self_host,
             j->self_port);
    const char *k;
    json_t *v;
    json_object_foreach(list, k, v)
    {
        mv_entry e;
        if (strncmp(k, "event/", 6) != 0 || !mv_entry_parse(json_string_value(v), &e))
            continue;
        snprintf(j->event, sizeof j->event, "%.*s", (int)sizeof(j->event) - 1, k + 6);
        if (strcmp(e.state, "moving") == 0 && strcmp(e.set, j->set) == 0) {
            char key[SLOT_PLACE_KEY_BYTES];
            mv_kv kv = {0};
            snprintf(key, sizeof key, "%s%s", j->prefix, k);
            if (mv_etcd_get(x, key, &kv) == 0 && kv.found) { /* its revision, for the CAS */
                j->msg[0] = 0;
                if (resolve_one(&m, &e, kv.mod_rev) == 0)
                    j->resolved++;
            }
            mv_kv_free(&kv);
        } else if (j->check_done && strcmp(e.set, j->set) != 0 && e.gen >= 2 && strcmp(e.state, "serving") == 0) {
            done_one(&m, &e);
        }
        mv_pump(x);
    }
    json_decref(list);
    mv_close(&m.src);
    mv_close(&m.dst);
    j->err = SLOT_E_OK;
    j->msg[0] = 0;
}
