/*
 * mover.c — the mover thread's steps (mover_int.h; docs/design.md, "The
 * mover"; docs/protocol.md, "Placement"): move_event's steps 0 to 9 with
 * their undo and finish, and recovery's pass over the map. Mover thread
 * only; its I/O is mover_io.c's.
 *
 * A move of E from this set S (map gen G) to T:
 *   0 checks  1 lock  2 map: moving  3 target's old copy purged
 *   4 export -> place_stage (pipelined)  5 place_relinquish (pause starts)
 *   6 the tail: what changed since 4  7 place_own on T
 *   8 map: serving on T at G+1 (pause ends)  9 place_done on S, unlock.
 * A failure before 7 is undone (place_abort on T at G+1, place_reclaim on S
 * at G+1, the map back to serving on S at G+1); after 7 the move is finished. What cannot be done now is left
 * to recovery (mover_recover.c's pass), which the lock's lease frees.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mover_move.h"

void mv_fail(mv_job *j, slot_err err, const char *fmt, ...)
{
    j->err = err;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(j->msg, sizeof j->msg, fmt, ap);
    va_end(ap);
}

/* ---- the map's value */

bool mv_entry_parse(const char *text, mv_entry *out)
{
    memset(out, 0, sizeof(*out));
    json_t *v = text ? json_loads(text, 0, NULL) : NULL;
    const char *set = json_string_value(json_object_get(v, "set"));
    const char *state = json_string_value(json_object_get(v, "state"));
    const char *to = json_string_value(json_object_get(v, "to"));
    json_int_t gen = json_integer_value(json_object_get(v, "gen"));
    bool ok = set && gen >= 1;
    if (ok) {
        snprintf(out->set, sizeof out->set, "%s", set);
        snprintf(out->state, sizeof out->state, "%s", state ? state : "serving");
        snprintf(out->to, sizeof out->to, "%s", to ? to : "");
        out->gen = (uint64_t)gen;
    }
    json_decref(v);
    return ok;
}

int mv_map_cas(mv_move *m, int64_t expect, const char *set, uint64_t gen, const char *state, const char *to,
               int64_t *new_rev)
{
    char key[SLOT_PLACE_KEY_BYTES];
    snprintf(key, sizeof key, "%sevent/%s", m->j->prefix, m->j->event);
    json_t *v = json_pack("{s:s,s:I,s:s}", "set", set, "gen", (json_int_t)gen, "state", state);
    if (v && to)
        json_object_set_new(v, "to", json_string(to));
    char *t = v ? json_dumps(v, JSON_COMPACT | JSON_PRESERVE_ORDER) : NULL;
    json_decref(v);
    if (!t)
        return -ENOMEM;
    bool ok = false;
    int rc = mv_etcd_cas(m->x, key, expect, t, 0, &ok, NULL, new_rev);
    free(t);
    if (rc != 0)
        return rc;
    return ok ? 0 : 1;
}

/* A set's primary address from P set/NAME; 0, 1 (no such set) or an etcd code. */
int mv_set_addr(mv_ctx *x, const char *set, char *addr, size_t n)
{
    char key[SLOT_PLACE_KEY_BYTES];
    snprintf(key, sizeof key, "%sset/%s", x->job->prefix, set);
    mv_kv kv = {0};
    int rc = mv_etcd_get(x, key, &kv);
    if (rc == 0 && !kv.found)
        rc = 1;
    if (rc == 0) {
        json_t *v = json_loads(kv.value, 0, NULL);
        const char *p = json_string_value(json_object_get(v, "primary"));
        snprintf(addr, n, "%s", p ? p : "");
        json_decref(v);
    }
    mv_kv_free(&kv);
    return rc;
}

/* ---- the internal ops */

json_t *mv_op(mv_move *m, const char *op, uint64_t gen, const char *set)
{
    json_t *r = json_pack("{s:s,s:s,s:I}", "op", op, "event", m->j->event, "gen", (json_int_t)gen);
    if (r && set)
        json_object_set_new(r, "set", json_string(set));
    return r;
}

/* Sends one signed internal op on k and reads its answer. The reply in
 * *out (NULL on an I/O error); 0 when it is ok:true. */
int mv_place(mv_move *m, mv_conn *k, json_t *req, json_t **out)
{
    *out = NULL;
    if (!req || mv_sign(m->j, req) != 0) {
        json_decref(req);
        return -ENOMEM;
    }
    if (!k->cl && mv_connect(k, k->addr) != 0) {
        json_decref(req);
        return -ECONNREFUSED;
    }
    int rc = mv_call(k, req, out);
    json_decref(req);
    if (rc != 0) {
        mv_close(k); /* a connection whose reply is lost is not used again */
        return rc;
    }
    return mv_err(*out)[0] ? 1 : 0;
}

/* place_state of the event on k: 0 and the fields, or an error. */
int mv_state(mv_move *m, mv_conn *k, mv_pstate *st)
{
    memset(st, 0, sizeof(*st));
    json_t *req = json_pack("{s:s,s:s}", "op", "place_state", "event", m->j->event);
    json_t *r = NULL;
    if (!req)
        return -ENOMEM;
    if (!k->cl && mv_connect(k, k->addr) != 0) {
        json_decref(req);
        return -ECONNREFUSED;
    }
    int rc = mv_call(k, req, &r);
    json_decref(req);
    if (rc != 0) {
        mv_close(k);
        return rc;
    }
    if (mv_err(r)[0]) {
        snprintf(st->error, sizeof st->error, "%s", mv_err(r));
        json_decref(r);
        return 1;
    }
    const char *s = json_string_value(json_object_get(r, "state"));
    const char *p = json_string_value(json_object_get(r, "peer"));
    snprintf(st->state, sizeof st->state, "%s", s ? s : "absent");
    snprintf(st->peer, sizeof st->peer, "%s", p ? p : "");
    st->gen = (uint64_t)json_integer_value(json_object_get(r, "gen"));
    st->exists = json_is_true(json_object_get(r, "exists"));
    json_decref(r);
    return 0;
}

/* Deletes the event's keys on k (state gone/aborted at gen) in bounded steps. */
int mv_purge(mv_move *m, mv_conn *k, uint64_t gen)
{
    for (;;) {
        json_t *r = NULL;
        int rc = mv_place(m, k, mv_op(m, "place_purge", gen, NULL), &r);
        bool more = r && json_is_true(json_object_get(r, "more"));
        json_decref(r);
        if (rc != 0)
            return rc;
        if (!more)
            return 0;
    }
}

/* ---- steps 4 and 6: the records */

/* The records of one export reply's data into the table (step 4: every
 * record; step 6: what changed, into the delta). 0 or -1 (bad data, memory). */
typedef struct delta {
    uint8_t *raw;
    size_t n;
} delta;

static int put_rec(delta *d, uint8_t db, const uint8_t *key, uint16_t klen, const uint8_t *v, uint32_t vlen, bool del)
{
    size_t need = 1 + 2 + klen + 4 + (del ? 0 : vlen);
    if (d->n + need > SLOT_PLACE_CHUNK_BYTES)
        return 1; /* full: flush first */
    uint8_t *p = d->raw + d->n;
    *p++ = db;
    *p++ = (uint8_t)(klen >> 8);
    *p++ = (uint8_t)klen;
    memcpy(p, key, klen);
    p += klen;
    uint32_t l = del ? 0xFFFFFFFFu : vlen;
    *p++ = (uint8_t)(l >> 24);
    *p++ = (uint8_t)(l >> 16);
    *p++ = (uint8_t)(l >> 8);
    *p++ = (uint8_t)l;
    if (!del) {
        memcpy(p, v, vlen);
        p += vlen;
    }
    d->n = (size_t)(p - d->raw);
    return 0;
}

/* The pipeline to the target: one place_stage line more in flight; when
 * SLOT_PLACE_PIPELINE are, the oldest answer is read first. */
static int stage_send(mv_move *m, const char *b64, bool first)
{
    while (m->inflight >= SLOT_PLACE_PIPELINE) {
        int rc = mv_stage_drain_one(m);
        if (rc != 0)
            return rc;
    }
    json_t *req = mv_op(m, "place_stage", m->gen + 1, m->j->set);
    if (!req)
        return -ENOMEM;
    json_object_set_new(req, "data", json_string(b64));
    if (first)
        json_object_set_new(req, "first", json_true());
    if (mv_sign(m->j, req) != 0) {
        json_decref(req);
        return -ENOMEM;
    }
    m->staged_any = true; /* from here T may hold a copy, even if the send fails */
    int rc = mv_send(&m->dst, req);
    json_decref(req);
    if (rc != 0)
        return rc;
    m->inflight++;
    mv_pump(m->x);
    return 0;
}

int mv_stage_drain_one(mv_move *m)
{
    json_t *r = NULL;
    int rc = mv_recv(&m->dst, &r);
    if (rc == 0 && mv_err(r)[0]) {
        snprintf(m->why, sizeof m->why, "the target refused place_stage: %s: %.120s", mv_err(r),
                 json_string_value(json_object_get(r, "message")) ? json_string_value(json_object_get(r, "message"))
                                                                  : "");
        rc = 1;
    }
    json_decref(r);
    if (rc == 0)
        m->inflight--;
    return rc;
}

static int stage_drain(mv_move *m)
{
    while (m->inflight > 0) {
        int rc = mv_stage_drain_one(m);
        if (rc != 0)
            return rc;
    }
    return 0;
}

static int flush_delta(mv_move *m, delta *d, bool first)
{
    size_t cap = 4 * ((d->n + 2) / 3) + 1;
    char *b = malloc(cap);
    if (!b)
        return -ENOMEM;
    long n = slot_etcd_b64_encode(d->raw, d->n, b, cap);
    int rc = n < 0 ? -EINVAL : stage_send(m, b, first);
    free(b);
    d->n = 0;
    return rc;
}

/* Walks one export's raw records: tail false (step 4) records every one in
 * the table; tail true (step 6) puts into d what is new or changed. */
static int walk(mv_move *m, const uint8_t *raw, size_t n, bool tail, delta *d)
{
    size_t i = 0;
    while (i < n) {
        if (n - i < 3)
            return -EPROTO;
        uint8_t db = raw[i];
        uint16_t klen = (uint16_t)(raw[i + 1] << 8 | raw[i + 2]);
        i += 3;
        if (n - i < (size_t)klen + 4)
            return -EPROTO;
        const uint8_t *key = raw + i;
        i += klen;
        uint32_t vlen = (uint32_t)raw[i] << 24 | (uint32_t)raw[i + 1] << 16 | (uint32_t)raw[i + 2] << 8 | raw[i + 3];
        i += 4;
        if (n - i < vlen)
            return -EPROTO;
        const uint8_t *v = raw + i;
        i += vlen;
        uint64_t h = mv_hash(v, vlen);
        mv_rec *r = mv_table_get(&m->tab, db, key, klen, !tail);
        m->records++;
        if (!tail) {
            if (!r)
                return -ENOMEM;
            r->vhash = h;
            continue;
        }
        if (r) {
            r->seen = true;
            if (r->vhash == h)
                continue;
        }
        int rc = put_rec(d, db, key, klen, v, vlen, false);
        if (rc == 1) {
            if ((rc = flush_delta(m, d, false)) != 0)
                return rc;
            rc = put_rec(d, db, key, klen, v, vlen, false);
        }
        if (rc != 0)
            return -EPROTO; /* one record larger than a chunk: not one the source exports */
        m->tail_records++;
    }
    return 0;
}

/* Step 4 (tail false) or 6 (tail true): the event's records exported from
 * this server; step 4 stages each chunk as it came, step 6 what changed
 * and the deletes of the keys gone. 0, or an error with m->why. */
int mv_copy(mv_move *m, bool tail)
{
    char *cursor = NULL;
    bool first = !tail;
    delta d = {.raw = tail ? malloc(SLOT_PLACE_CHUNK_BYTES) : NULL};
    int rc = 0;
    if (tail && !d.raw)
        return -ENOMEM;
    m->records = 0;
    for (;;) {
        json_t *req = mv_op(m, "place_export", m->gen, NULL);
        if (req && cursor)
            json_object_set_new(req, "cursor", json_string(cursor));
        json_t *r = NULL;
        rc = mv_place(m, &m->src, req, &r);
        if (rc != 0) {
            snprintf(m->why, sizeof m->why, "place_export on this set failed: %s", r ? mv_err(r) : "no answer");
            json_decref(r);
            break;
        }
        const char *data = json_string_value(json_object_get(r, "data"));
        size_t dlen = data ? strlen(data) : 0;
        uint8_t *raw = malloc(dlen / 4 * 3 + 1);
        long n = raw ? slot_etcd_b64_decode(data ? data : "", dlen, raw, dlen / 4 * 3 + 1) : -ENOMEM;
        rc = n < 0 ? -EPROTO : walk(m, raw, (size_t)n, tail, &d);
        free(raw);
        if (rc == 0 && !tail)
            rc = stage_send(m, data ? data : "", first);
        first = false;
        const char *next = json_string_value(json_object_get(r, "cursor"));
        free(cursor);
        cursor = next ? strdup(next) : NULL;
        json_decref(r);
        if (rc != 0) {
            if (!m->why[0])
                snprintf(m->why, sizeof m->why, "staging on %s failed: %s", m->j->to,
                         rc < 0 ? strerror(-rc) : "refused");
            break;
        }
        if (!cursor)
            break;
        mv_pump(m->x); /* the lock's keep-alive */
    }
    free(cursor);
    if (rc == 0 && tail) { /* the keys gone since step 4 */
        for (size_t i = 0; rc == 0 && i < m->tab.cap; i++) {
            mv_rec *r = &m->tab.slots[i];
            if (!r->key || r->seen)
                continue;
            rc = put_rec(&d, r->key[0], r->key + 1, (uint16_t)(r->klen - 1), NULL, 0, true);
            if (rc == 1 && (rc = flush_delta(m, &d, false)) == 0)
                rc = put_rec(&d, r->key[0], r->key + 1, (uint16_t)(r->klen - 1), NULL, 0, true);
            m->tail_records++;
        }
        if (rc == 0 && d.n)
            rc = flush_delta(m, &d, false);
    }
    free(d.raw);
    if (rc == 0)
        rc = stage_drain(m);
    if (rc != 0 && !m->why[0])
        snprintf(m->why, sizeof m->why, "staging on %s failed: %s", m->j->to, rc < 0 ? strerror(-rc) : "refused");
    return rc;
}
