/*
 * mover_steps.c — move_event's steps in order, with the undo of a move that
 * failed before place_own and the finish of one that got past it
 * (mover_move.h; docs/design.md, "The mover"). Mover thread only.
 */
#include <errno.h>
#include <signal.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mover_move.h"
#include "slot/failpoint.h"

static uint64_t now_ms(void)
{
    return uv_hrtime() / 1000000u;
}

static void reply_fields(mv_move *m);

/* wrong_set's fields: the owner, its gen and its primary. */
static void wrong_set(mv_move *m, const mv_entry *e)
{
    char addr[SLOT_CLUSTER_ADDR_BYTES] = "";
    mv_set_addr(m->x, e->set, addr, sizeof addr);
    json_t *f = json_pack("{s:s,s:s,s:I}", "event", m->j->event, "set", e->set, "gen", (json_int_t)e->gen);
    if (f && addr[0])
        json_object_set_new(f, "primary", json_string(addr));
    char *t = f ? json_dumps(f, JSON_COMPACT | JSON_PRESERVE_ORDER) : NULL;
    json_decref(f);
    if (t && t[1] != '}') { /* "{...}" -> ",..." */
        size_t n = strlen(t);
        t[0] = ',';
        t[n - 1] = 0;
        m->j->fields = t;
        m->j->fields_len = n - 1;
    } else {
        free(t);
    }
    mv_fail(m->j, SLOT_E_WRONG_SET, "event %s is placed on replica set %s", m->j->event, e->set);
}

/* Step 0: T is a set of the placement, E's map entry says serving here, and
 * the local record is owned at the map's gen. 0, or the job's error is set. */
static int check(mv_move *m, char *target, size_t tn)
{
    mv_job *j = m->j;
    int rc = mv_set_addr(m->x, j->to, target, tn);
    if (rc == 1) {
        mv_fail(j, SLOT_E_INVALID_ARGUMENT, "no replica set %s in this placement", j->to);
        return -1;
    }
    if (rc != 0 || !target[0]) {
        mv_fail(j, SLOT_E_UNAVAILABLE, "the placement map could not be read (%s); nothing was changed, retry",
                rc ? slot_etcd_err_name(rc) : "the target has no primary published");
        return -1;
    }
    char key[SLOT_PLACE_KEY_BYTES];
    snprintf(key, sizeof key, "%sevent/%s", j->prefix, j->event);
    mv_kv kv = {0};
    rc = mv_etcd_get(m->x, key, &kv);
    mv_entry e;
    if (rc != 0) {
        mv_fail(j, SLOT_E_UNAVAILABLE, "the placement map could not be read (%s); nothing was changed, retry",
                slot_etcd_err_name(rc));
    } else if (!kv.found) {
        mv_fail(j, SLOT_E_UNKNOWN_EVENT, "the placement map holds no event %s", j->event);
        rc = -1;
    } else if (!mv_entry_parse(kv.value, &e)) {
        mv_fail(j, SLOT_E_INTERNAL, "the event's placement entry is not one slotd wrote");
        rc = -1;
    } else if (strcmp(e.set, j->set) != 0) {
        wrong_set(m, &e);
        rc = -1;
    } else if (strcmp(e.state, "serving") != 0) {
        mv_fail(j, SLOT_E_MOVING, "event %s is being moved to %s", j->event, e.to);
        j->retry_after_ms = SLOT_PLACE_BUSY_RETRY_MS;
        rc = -1;
    } else if (strcmp(j->to, j->set) == 0) {
        mv_fail(j, SLOT_E_INVALID_ARGUMENT, "event %s is already placed on %s", j->event, j->set);
        rc = -1;
    }
    m->map_rev = kv.mod_rev;
    m->gen = rc == 0 ? e.gen : 0;
    mv_kv_free(&kv);
    if (rc != 0)
        return -1;
    mv_pstate st;
    rc = mv_state(m, &m->src, &st);
    if (rc != 0) {
        mv_fail(j, SLOT_E_UNAVAILABLE, "this server's place_state failed (%s); nothing was changed",
                rc == 1 ? st.error : strerror(-rc));
        return -1;
    }
    bool mine = (strcmp(st.state, "absent") == 0 && m->gen == 1) ||
                (strcmp(st.state, "owned") == 0 && st.gen == m->gen);
    if (!st.exists || !mine) {
        mv_fail(j, SLOT_E_UNAVAILABLE,
                "this set's record of %s is %s at gen %" PRIu64 ", the map's gen is %" PRIu64 "; nothing was changed",
                j->event, st.state, st.gen, m->gen);
        return -1;
    }
    return 0;
}

/* Step 3: the target holds nothing of E (an old copy, gone or aborted, is purged). */
static int target_clean(mv_move *m)
{
    mv_pstate st;
    int rc = mv_state(m, &m->dst, &st);
    if (rc != 0) {
        snprintf(m->why, sizeof m->why, "place_state on %s failed (%s)", m->j->to, rc == 1 ? st.error : strerror(-rc));
        return -1;
    }
    if (strcmp(st.state, "absent") == 0 && !st.exists)
        return 0;
    if (strcmp(st.state, "staged") == 0) { /* a copy an earlier try left: abort it, then purge */
        json_t *r = NULL;
        rc = mv_place(m, &m->dst, mv_op(m, "place_abort", st.gen, st.peer), &r);
        json_decref(r);
        if (rc != 0) {
            snprintf(m->why, sizeof m->why, "the target's staged copy of gen %" PRIu64 " could not be aborted", st.gen);
            return -1;
        }
        snprintf(st.state, sizeof st.state, "aborted");
    }
    if (strcmp(st.state, "gone") == 0 || strcmp(st.state, "aborted") == 0 || strcmp(st.state, "absent") == 0) {
        if (mv_purge(m, &m->dst, st.gen) != 0) {
            snprintf(m->why, sizeof m->why, "the target's old copy could not be purged");
            return -1;
        }
        return 0;
    }
    snprintf(m->why, sizeof m->why, "the target holds the event as %s at gen %" PRIu64, st.state, st.gen);
    return -1;
}

int mv_undo(mv_move *m)
{
    mv_job *j = m->j;
    json_t *r = NULL;
    int rc;
    if (!m->staged_any) { /* T was sent nothing: it cannot own E at G+1; the map goes back at once */
        rc = mv_map_cas(m, m->map_rev, j->set, m->gen, "serving", NULL, NULL);
        if (rc == 0) {
            mv_fail(j, SLOT_E_UNAVAILABLE, "%s; nothing was sent to %s, the event is served here", m->why, j->to);
            return 0;
        }
    }
    mv_close(&m->dst); /* replies of the pipeline may be unread: a fresh connection */
    rc = mv_place(m, &m->dst, mv_op(m, "place_abort", m->gen + 1, j->set), &r);
    json_decref(r);
    if (rc == 1) { /* refused: finished only when T's record says owned at G+1 */
        mv_pstate st;
        if (mv_state(m, &m->dst, &st) == 0 && strcmp(st.state, "owned") == 0 && st.gen == m->gen + 1)
            return mv_finish(m) == 0 ? 1 : -1; /* own committed although its answer was lost */
    }
    if (rc != 0) {
        mv_fail(j, SLOT_E_UNAVAILABLE, "%s; the target could not be told to abort: recovery resolves the move", m->why);
        return -1;
    }
    rc = mv_place(m, &m->src, mv_op(m, "place_reclaim", m->gen + 1, NULL), &r); /* owned here at G+1 */
    json_decref(r);
    if (rc != 0) {
        mv_fail(j, SLOT_E_UNAVAILABLE, "%s; undone on the target, this set's reclaim is left to recovery", m->why);
        return -1;
    }
    rc = mv_map_cas(m, m->map_rev, j->set, m->gen + 1, "serving", NULL, NULL);
    if (rc != 0) {
        mv_fail(j, SLOT_E_UNAVAILABLE, "%s; undone, the map's flip back is left to recovery", m->why);
        return -1;
    }
    mv_fail(j, SLOT_E_UNAVAILABLE, "%s; the move was undone, the event is served here", m->why);
    return 0;
}

int mv_finish(mv_move *m)
{
    mv_job *j = m->j;
    int rc = -1;
    for (int i = 0; i < SLOT_PLACE_FINISH_TRIES && rc != 0; i++)
        rc = mv_map_cas(m, m->map_rev, j->to, m->gen + 1, "serving", NULL, &m->map_rev);
    if (rc != 0) {
        mv_fail(j, SLOT_E_UNAVAILABLE, "event %s is owned by %s now; the map's flip is left to recovery", j->event,
                j->to);
        j->want_check = true;
        return -1;
    }
    uint64_t pause_end = now_ms();
    rc = -1;
    for (int i = 0; i < SLOT_PLACE_FINISH_TRIES && rc != 0; i++) {
        json_t *r = NULL;
        rc = mv_place(m, &m->src, mv_op(m, "place_done", m->gen + 1, NULL), &r);
        json_decref(r);
    }
    if (rc != 0)
        j->want_check = true; /* relinquished here, served there: recovery's pass sends place_done */
    j->err = SLOT_E_OK;
    j->pause_end_ms = pause_end;
    return 0;
}

/* The lock's lease was found gone, or may be (no keep-alive answered for
 * SLOT_PLACE_LOCK_TRUST_MS: this server cut from etcd, say): recovery may act
 * on the move, so this mover stops before place_own and undoes what it did
 * (undo and recovery do the same steps; T's own or abort, whichever commits
 * first, decides, so a mover that goes on regardless is still safe). */
static bool lock_lost(mv_move *m)
{
    mv_pump(m->x);
    if (mv_lock_trusted(m->x))
        return false;
    snprintf(m->why, sizeof m->why, "the move lock's lease was lost or could not be kept alive (etcd unreachable?)");
    return true;
}

#ifdef SLOT_FAILPOINTS
/* pause_move_*: the mover stands still for SLOT_FP_PAUSE_MOVE_MS between two
 * steps, its loop (the lock's keep-alive) still turning, so a test can cut this
 * server from etcd in that step (tests/test_placement_partition.py). */
static void fp_pause(mv_move *m)
{
    uint64_t end = now_ms() + SLOT_FP_PAUSE_MOVE_MS;
    while (now_ms() < end) {
        mv_pump(m->x);
        uv_sleep(10);
    }
}
#define FP_PAUSE(m, fp)      \
    do {                     \
        if (SLOT_FAIL(fp))   \
            fp_pause(m);     \
    } while (0)
#else
#define FP_PAUSE(m, fp) ((void)(m))
#endif

static void reply_fields(mv_move *m)
{
    mv_job *j = m->j;
    json_t *f = json_pack("{s:s,s:s,s:I,s:I,s:I,s:I,s:I}", "event", j->event, "to", j->to, "gen",
                          (json_int_t)(m->gen + 1), "pause_ms", (json_int_t)(j->pause_end_ms - j->pause_start_ms),
                          "total_ms", (json_int_t)(now_ms() - j->start_ms), "records", (json_int_t)m->tab.n,
                          "tail_records", (json_int_t)m->tail_records);
    char *t = f ? json_dumps(f, JSON_COMPACT | JSON_PRESERVE_ORDER) : NULL;
    json_decref(f);
    if (!t)
        return; /* the move is done; its reply goes without the numbers */
    size_t n = strlen(t);
    t[0] = ',';
    t[n - 1] = 0;
    j->fields = t;
    j->fields_len = n - 1;
}

void mv_run_move(mv_ctx *x)
{
    mv_job *j = x->job;
    mv_move m = {.x = x, .j = j};
    char self[SLOT_CLUSTER_ADDR_BYTES], target[SLOT_CLUSTER_ADDR_BYTES] = "";
    snprintf(self, sizeof self, strchr(j->self_host, ':') ? "[%s]:%u" : "%s:%u", j->self_host, j->self_port);
    snprintf(m.src.addr, sizeof m.src.addr, "%s", self);
    j->start_ms = now_ms();
    if (check(&m, target, sizeof target) != 0)
        goto out;
    snprintf(m.dst.addr, sizeof m.dst.addr, "%s", target);
    char *holder = NULL;
    int rc = mv_lock(x, j->event, j->set, j->to, m.gen, &holder); /* 1 */
    if (rc != 0) {
        if (rc == 1)
            mv_fail(j, SLOT_E_MOVING, "another move holds the placement's lock: %.160s", holder ? holder : "");
        else
            mv_fail(j, SLOT_E_UNAVAILABLE, "the move lock could not be taken (%s); nothing was changed",
                    slot_etcd_err_name(rc));
        j->retry_after_ms = SLOT_PLACE_BUSY_RETRY_MS;
        free(holder);
        goto out;
    }
    rc = mv_map_cas(&m, m.map_rev, j->set, m.gen, "moving", j->to, &m.map_rev); /* 2 */
    if (rc != 0) {
        mv_fail(j, SLOT_E_UNAVAILABLE, "the event's map entry changed meanwhile; nothing was changed, retry");
        goto out;
    }
    if (target_clean(&m) != 0 || mv_copy(&m, false) != 0 || lock_lost(&m)) { /* 3, 4 */
        if (mv_undo(&m) == 1)
            reply_fields(&m);
        goto out;
    }
    if (SLOT_FAIL(KILL_MOVE_BEFORE_RELINQUISH))
        raise(SIGKILL); /* as kill -9 would, mid-move (tests/test_placement_move.py) */
    FP_PAUSE(&m, PAUSE_MOVE_BEFORE_RELINQUISH);
    j->pause_start_ms = now_ms();
    json_t *r = NULL;
    rc = mv_place(&m, &m.src, mv_op(&m, "place_relinquish", m.gen, j->to), &r); /* 5 */
    if (rc != 0)
        snprintf(m.why, sizeof m.why, "place_relinquish on this set failed: %s", r ? mv_err(r) : "no answer");
    json_decref(r);
    if (SLOT_FAIL(KILL_MOVE_AFTER_RELINQUISH))
        raise(SIGKILL); /* as kill -9 would, mid-move (tests/test_placement_move.py) */
    FP_PAUSE(&m, PAUSE_MOVE_AFTER_RELINQUISH);
    if (rc != 0 || mv_copy(&m, true) != 0 || lock_lost(&m)) { /* 6 */
        if (mv_undo(&m) == 1)
            reply_fields(&m);
        goto out;
    }
    rc = mv_place(&m, &m.dst, mv_op(&m, "place_own", m.gen + 1, NULL), &r); /* 7 */
    if (rc != 0)
        snprintf(m.why, sizeof m.why, "place_own on %s failed: %s", j->to, r ? mv_err(r) : "no answer");
    json_decref(r);
    if (SLOT_FAIL(KILL_MOVE_AFTER_OWN))
        raise(SIGKILL); /* as kill -9 would, mid-move (tests/test_placement_move.py) */
    FP_PAUSE(&m, PAUSE_MOVE_AFTER_OWN);
    if (rc != 0) {
        if (mv_undo(&m) == 1) /* an own that did commit makes the abort refuse: then it finishes */
            reply_fields(&m);
        goto out;
    }
    if (mv_finish(&m) == 0) /* 8, 9 */
        reply_fields(&m);
out:
    mv_close(&m.src);
    mv_close(&m.dst);
    mv_table_free(&m.tab);
}
