/*
 * room.c — the waiting-room scenario's flow (room.h): create an event of
 * --crowd units with a room, the crowd joins before the opening, then every
 * buyer polls its admission, holds one unit with its grant, and confirms or
 * releases it. Blocking connections (slot_client) in rounds: a round sends a
 * batch on each connection and reads all its answers; a batch of polls is
 * framed by two views of the event, so a waiting entry's position counts
 * (rank = admitted + position - 1) only when both views show the same
 * room.admitted. Bounded: --crowd entries, --duration from the opening,
 * BENCH_ROOM_POLL_MS between an entry's polls, the lookahead window.
 */
#include <errno.h>
#include <inttypes.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "exit.h"
#include "limits.h"
#include "room.h"
#include "util.h"
#include "slot/client.h"

enum { RQ_VIEW, RQ_JOIN, RQ_POLL, RQ_HOLD, RQ_SETTLE, RQ_NOGRANT };

typedef struct rq {
    uint8_t kind;
    uint32_t entry;
} rq;

typedef struct room_ctx {
    room_run *r;
    slot_client **conns;
    uint32_t k, d;  /* connections, requests per batch */
    rq *batch;      /* k x (d + 2) */
    uint32_t *nb;   /* per connection */
    char *buf;      /* k x (d + 2) x BENCH_REQ_BYTES */
    uint32_t *ord;  /* entries in expected admission order */
    uint32_t head;  /* no entry before ord[head] is still waiting */
    uint32_t *act;  /* entries with a hold or a confirm/release to send */
    uint32_t nact;
    uint32_t sweep; /* lottery: the next entry whose rank the sweep asks */
    uint32_t sweeps;
    bool ord_built, nogrant_done;
    uint64_t rng;
} room_ctx;

static void problem(room_run *r, const char *fmt, const char *a, const char *b)
{
    r->unexpected++;
    if (!r->first_problem[0])
        snprintf(r->first_problem, sizeof(r->first_problem), fmt, a, b);
}

static const char *jstr(json_t *o, const char *k)
{
    const char *s = json_string_value(json_object_get(o, k));
    return s ? s : "";
}

static uint64_t jint(json_t *o, const char *k)
{
    json_t *v = json_object_get(o, k);
    return json_is_integer(v) && json_integer_value(v) > 0 ? (uint64_t)json_integer_value(v) : 0;
}

/* A ticket's seq: its first 16 hex digits. */
static uint64_t id_seq(const char *id)
{
    char h[17];
    snprintf(h, sizeof(h), "%.16s", id);
    return strlen(id) == BENCH_ROOM_ID_BYTES ? strtoull(h, NULL, 16) : 0;
}

/* The request of q into out (cap bytes); its length. */
static int encode(room_ctx *x, const rq *q, char *out, size_t cap)
{
    room_run *r = x->r;
    const char *ev = r->cfg->event;
    room_entry *e = &r->e[q->entry];
    switch (q->kind) {
    case RQ_VIEW:
        return snprintf(out, cap, "{\"op\":\"event\",\"event\":\"%s\"}\n", ev);
    case RQ_JOIN:
        return snprintf(out, cap, "{\"op\":\"join\",\"event\":\"%s\",\"user\":\"u%u\",\"request\":\"j%u\"}\n", ev,
                        q->entry, q->entry);
    case RQ_POLL:
        return snprintf(out, cap, "{\"op\":\"admission\",\"event\":\"%s\",\"ticket\":\"%s\"}\n", ev, e->ticket);
    case RQ_HOLD:
        return snprintf(out, cap,
                        "{\"op\":\"hold\",\"event\":\"%s\",\"user\":\"u%u\",\"request\":\"h%u\",\"qty\":1,"
                        "\"grant\":\"%s\"}\n",
                        ev, q->entry, q->entry, e->grant);
    case RQ_SETTLE:
        return snprintf(out, cap, "{\"op\":\"%s\",\"event\":\"%s\",\"hold\":\"%s\",\"user\":\"u%u\"}\n",
                        e->confirms ? "confirm" : "release", ev, e->hold, q->entry);
    default: /* RQ_NOGRANT: none; a made-up grant; another user's grant */
        if (r->nogrant_sent == 0)
            return snprintf(out, cap, "{\"op\":\"hold\",\"event\":\"%s\",\"user\":\"u%u\",\"request\":\"n0\",\"qty\":1}\n",
                            ev, q->entry);
        if (r->nogrant_sent == 1)
            return snprintf(out, cap,
                            "{\"op\":\"hold\",\"event\":\"%s\",\"user\":\"u%u\",\"request\":\"n1\",\"qty\":1,"
                            "\"grant\":\"%016" PRIx64 "0000000000000000\"}\n",
                            ev, q->entry, e->seq);
        return snprintf(out, cap,
                        "{\"op\":\"hold\",\"event\":\"%s\",\"user\":\"intruder\",\"request\":\"n2\",\"qty\":1,"
                        "\"grant\":\"%s\"}\n",
                        ev, e->grant);
    }
}

/* An admission state in a join or admission answer: waiting (position), admitted (grant, expires_at). */
static void entry_state(room_ctx *x, room_entry *e, json_t *j, uint64_t now_ms, uint64_t stable_admitted, bool stable)
{
    room_run *r = x->r;
    const char *st = jstr(j, "status");
    if (strcmp(st, "admitted") == 0) {
        const char *g = jstr(j, "grant");
        if (e->grants_seen && strcmp(g, e->grant) != 0)
            e->grants_seen = 2; /* admitted twice */
        if (!e->grants_seen) {
            snprintf(e->grant, sizeof(e->grant), "%s", g);
            e->grants_seen = 1;
            e->seen_ms = now_ms;
            uint64_t exp = jint(j, "expires_at");
            e->admitted_at_ms = exp >= BENCH_ROOM_GRANT_TTL_MS ? exp - BENCH_ROOM_GRANT_TTL_MS : 0;
            r->admitted++;
            if (e->state == ROOM_WAITING) {
                e->state = ROOM_ADMITTED;
                x->act[x->nact++] = (uint32_t)(e - r->e);
            }
        }
        return;
    }
    if (strcmp(st, "waiting") != 0) {
        e->state = ROOM_FAILED;
        problem(r, "an admission answered status %s (%s)", st, jstr(j, "error"));
        return;
    }
    json_t *p = json_object_get(j, "position");
    if (stable && json_is_integer(p) && json_integer_value(p) > 0) {
        e->rank = stable_admitted + (uint64_t)json_integer_value(p) - 1;
        e->rank_known = true;
        if (!r->cfg->lottery && e->rank != e->seq - 1)
            r->pos_mismatch++;
    }
}

/* One round: send every connection's batch, read every answer. 0 or an exit status. */
static int round_trip(room_ctx *x)
{
    room_run *r = x->r;
    for (uint32_t c = 0; c < x->k; c++) {
        if (!x->nb[c])
            continue;
        size_t len = 0;
        char *b = x->buf + (size_t)c * (x->d + 2) * BENCH_REQ_BYTES;
        for (uint32_t i = 0; i < x->nb[c]; i++)
            len += (size_t)encode(x, &x->batch[c * (x->d + 2) + i], b + len, BENCH_REQ_BYTES);
        if (slot_client_send_raw(x->conns[c], b, len) < 0) {
            fprintf(stderr, "slot-bench: waiting-room: send: connection %u broke\n", c);
            return BENCH_EXIT_CONNECTION;
        }
    }
    for (uint32_t c = 0; c < x->k; c++) {
        uint32_t n = x->nb[c];
        json_t *ans[BENCH_PIPELINE_MAX + 2];
        for (uint32_t i = 0; i < n; i++) {
            const char *line;
            long l = slot_client_recv_line(x->conns[c], &line, BENCH_CALL_TIMEOUT_MS);
            if (l < 0) {
                for (uint32_t j = 0; j < i; j++)
                    json_decref(ans[j]);
                fprintf(stderr, "slot-bench: waiting-room: no answer on connection %u: %s\n", c, strerror((int)-l));
                return BENCH_EXIT_CONNECTION;
            }
            ans[i] = json_loadb(line, (size_t)l, 0, NULL);
            if (!ans[i])
                ans[i] = json_object();
        }
        uint64_t now = bench_wall_ms();
        rq *q = &x->batch[c * (x->d + 2)];
        /* the views framing the batch: positions between them count when both show the same admitted */
        uint64_t a0 = UINT64_MAX, a1 = UINT64_MAX - 1;
        for (uint32_t i = 0; i < n; i++)
            if (q[i].kind == RQ_VIEW) {
                json_t *room = json_object_get(ans[i], "room");
                r->views++;
                if (room) {
                    uint64_t og = jint(room, "open_grants"), av = jint(ans[i], "available");
                    r->stop_rule_views++;
                    if (og > av) {
                        r->stop_rule_violations++;
                        char m[64];
                        snprintf(m, sizeof(m), "%" PRIu64 " > %" PRIu64, og, av);
                        problem(r, "the stop rule: open_grants > available (%s)%s", m, "");
                    }
                    if (a0 == UINT64_MAX)
                        a0 = jint(room, "admitted");
                    else
                        a1 = jint(room, "admitted");
                }
            }
        bool stable = a0 == a1;
        bool any_poll = false;
        for (uint32_t i = 0; i < n; i++) {
            json_t *j = ans[i];
            room_entry *e = &r->e[q[i].entry];
            bool ok = json_is_true(json_object_get(j, "ok"));
            switch (q[i].kind) {
            case RQ_JOIN:
                if (!ok) {
                    r->join_errors++;
                    e->state = ROOM_FAILED;
                    problem(r, "a join was refused: %s: %s", jstr(j, "error"), jstr(j, "message"));
                    break;
                }
                r->joins_ok++;
                snprintf(e->ticket, sizeof(e->ticket), "%s", jstr(j, "ticket"));
                e->seq = id_seq(e->ticket);
                e->join_pos = jint(j, "position");
                e->state = ROOM_WAITING;
                if (!r->cfg->lottery && e->join_pos != e->seq)
                    r->pos_mismatch++;
                if (r->opens_at_ms && now >= r->opens_at_ms)
                    r->joins_late = true;
                if (strcmp(jstr(j, "status"), "waiting") != 0)
                    entry_state(x, e, j, now, 0, false);
                break;
            case RQ_POLL:
                any_poll = true;
                r->polls++;
                if (!ok) {
                    r->poll_errors++;
                    problem(r, "an admission was refused: %s: %s", jstr(j, "error"), jstr(j, "message"));
                    break;
                }
                entry_state(x, e, j, now, a0, stable);
                break;
            case RQ_HOLD:
                if (ok && strcmp(jstr(j, "status"), "held") == 0) {
                    snprintf(e->hold, sizeof(e->hold), "%s", jstr(j, "hold"));
                    e->state = ROOM_HELD;
                    r->held++;
                    x->act[x->nact++] = q[i].entry;
                } else {
                    r->hold_errors++;
                    e->state = ROOM_FAILED;
                    problem(r, "a hold with its grant was refused: %s %s", jstr(j, "error"), jstr(j, "status"));
                }
                break;
            case RQ_SETTLE:
                if (ok) {
                    e->state = ROOM_DONE;
                    if (e->confirms)
                        r->confirmed++;
                    else
                        r->released++;
                } else {
                    r->settle_errors++;
                    e->state = ROOM_FAILED;
                    problem(r, "a confirm or release was refused: %s: %s", jstr(j, "error"), jstr(j, "message"));
                }
                break;
            case RQ_NOGRANT:
                r->nogrant_sent++;
                r->nogrant_refused += !ok && strcmp(jstr(j, "error"), "admission_required") == 0;
                break;
            default:
                break;
            }
            json_decref(j);
        }
        r->unstable_batches += any_poll && !stable;
        x->nb[c] = 0;
    }
    return 0;
}

/* Add q to the next connection's batch (the connections are filled in turn). false: all full. */
static bool add(room_ctx *x, uint32_t *c, uint8_t kind, uint32_t entry)
{
    for (uint32_t tries = 0; tries < x->k; tries++, *c = (*c + 1) % x->k)
        if (x->nb[*c] < x->d + 1) {
            if (x->nb[*c] == 0)
                x->batch[*c * (x->d + 2) + x->nb[*c]++] = (rq){RQ_VIEW, 0};
            x->batch[*c * (x->d + 2) + x->nb[*c]++] = (rq){kind, entry};
            *c = (*c + 1) % x->k;
            return true;
        }
    return false;
}

static void close_batches(room_ctx *x)
{
    for (uint32_t c = 0; c < x->k; c++)
        if (x->nb[c])
            x->batch[c * (x->d + 2) + x->nb[c]++] = (rq){RQ_VIEW, 0};
}

static const room_entry *sort_base;
static int by_expected(const void *a, const void *b)
{
    const room_entry *p = &sort_base[*(const uint32_t *)a], *q = &sort_base[*(const uint32_t *)b];
    uint64_t ka = p->rank_known ? p->rank : UINT64_MAX, kb = q->rank_known ? q->rank : UINT64_MAX;
    if (ka != kb)
        return ka < kb ? -1 : 1;
    return p->seq < q->seq ? -1 : p->seq > q->seq;
}

static void build_ord(room_ctx *x)
{
    for (uint32_t i = 0; i < x->r->n; i++)
        x->ord[i] = i;
    sort_base = x->r->e;
    qsort(x->ord, x->r->n, sizeof(uint32_t), by_expected);
    x->ord_built = true;
    x->head = 0;
}

/* The joins: every entry once, D in flight on each connection. 0 or an exit status. */
static int join_phase(room_ctx *x)
{
    room_run *r = x->r;
    r->join_start_ms = bench_wall_ms();
    for (uint32_t next = 0; next < r->n;) {
        for (uint32_t c = 0; c < x->k; c++)
            for (uint32_t i = 0; i < x->d && next < r->n; i++)
                x->batch[c * (x->d + 2) + x->nb[c]++] = (rq){RQ_JOIN, next++};
        int rc = round_trip(x);
        if (rc)
            return rc;
    }
    r->join_end_ms = bench_wall_ms();
    return 0;
}

/* From the opening until every entry is done (or failed), or --duration. 0 or an exit status. */
static int admit_phase(room_ctx *x)
{
    room_run *r = x->r;
    const bench_config *cfg = r->cfg;
    uint64_t end = r->opens_at_ms + cfg->duration_ms;
    uint64_t window = (uint64_t)cfg->admit_per_s * BENCH_ROOM_LOOKAHEAD_MS / 1000 + (uint64_t)x->k * x->d;
    if (!cfg->lottery)
        build_ord(x);
    bench_sleep_until_wall_ms(r->opens_at_ms);
    for (;;) {
        uint64_t now = bench_wall_ms();
        if (now >= end) {
            r->stopped_by_duration = true;
            break;
        }
        uint32_t c = 0;
        uint32_t cap = x->k * x->d;
        uint32_t used = 0;
        /* holds and confirms/releases first; an entry added here is taken off the list */
        uint32_t kept = 0;
        for (uint32_t i = 0; i < x->nact; i++) {
            room_entry *e = &r->e[x->act[i]];
            if (used < cap && add(x, &c, e->state == ROOM_ADMITTED ? RQ_HOLD : RQ_SETTLE, x->act[i]))
                used++;
            else
                x->act[kept++] = x->act[i];
        }
        x->nact = kept;
        if (!x->nogrant_done && r->admitted > 0 && used + BENCH_ROOM_NOGRANT_TRIES <= cap) {
            uint32_t who = 0; /* an admitted entry: its grant serves the "another user's" try */
            while (who < r->n && !r->e[who].grants_seen)
                who++;
            for (uint32_t t = 0; t < BENCH_ROOM_NOGRANT_TRIES && who < r->n; t++)
                used += add(x, &c, RQ_NOGRANT, who);
            x->nogrant_done = who < r->n;
        }
        if (cfg->lottery && !x->ord_built) { /* the sweep: each waiting entry's position after the draw */
            uint32_t swept = 0;
            while (used < cap && x->sweep < r->n) {
                room_entry *e = &r->e[x->sweep];
                if (e->state == ROOM_WAITING && !e->rank_known && add(x, &c, RQ_POLL, x->sweep)) {
                    e->polled_ms = now;
                    used++;
                    swept++;
                }
                x->sweep++;
            }
            if (x->sweep >= r->n && swept == 0) {
                bool missing = false;
                for (uint32_t i = 0; i < r->n && !missing; i++)
                    missing = r->e[i].state == ROOM_WAITING && !r->e[i].rank_known;
                if (missing && ++x->sweeps < 3)
                    x->sweep = 0; /* a position before the draw, or between moving views: ask again */
                else
                    build_ord(x);
            }
        }
        if (x->ord_built) {
            while (x->head < r->n && r->e[x->ord[x->head]].state != ROOM_WAITING)
                x->head++;
            for (uint64_t i = x->head; i < r->n && i < x->head + window && used < cap; i++) {
                room_entry *e = &r->e[x->ord[i]];
                if (e->state == ROOM_WAITING && now >= e->polled_ms + BENCH_ROOM_POLL_MS &&
                    add(x, &c, RQ_POLL, x->ord[i])) {
                    e->polled_ms = now;
                    used++;
                }
            }
            if (x->head >= r->n && x->nact == 0) {
                bool busy = false;
                for (uint32_t i = 0; i < x->k; i++)
                    busy |= x->nb[i] > 0;
                if (!busy)
                    break; /* every entry done or failed */
            }
        }
        if (used == 0) {
            bench_sleep_until_wall_ms(now + BENCH_ROOM_IDLE_SLEEP_MS);
            continue;
        }
        close_batches(x);
        int rc = round_trip(x);
        if (rc)
            return rc;
    }
    r->end_ms = bench_wall_ms();
    return 0;
}

/* One admin request on connection 0 (one answer); the parsed answer (caller owns) or NULL. */
static json_t *call0(room_ctx *x, const char *line)
{
    const char *ans;
    if (slot_client_send_raw(x->conns[0], line, strlen(line)) < 0)
        return NULL;
    long l = slot_client_recv_line(x->conns[0], &ans, BENCH_CALL_TIMEOUT_MS);
    return l < 0 ? NULL : json_loadb(ans, (size_t)l, 0, NULL);
}

/* The event with its room; then (--opens-in 0, after the joins) the opening. 0 or an exit status. */
static int create(room_ctx *x)
{
    room_run *r = x->r;
    const bench_config *cfg = r->cfg;
    char line[BENCH_REQ_BYTES];
    r->created_ms = bench_wall_ms();
    r->opens_at_ms = cfg->opens_in_ms ? r->created_ms + cfg->opens_in_ms : r->created_ms + BENCH_ROOM_HOLD_OFF_MS;
    r->capacity = cfg->crowd; /* one unit each: the stop rule (open grants < available) never stalls admission */
    snprintf(line, sizeof(line),
             "{\"op\":\"create_event\",\"event\":\"%s\",\"capacity\":%" PRIu64 ",\"admission\":\"%s\","
             "\"admit_per_s\":%u,\"opens_at\":%" PRIu64 ",\"grant_ttl_ms\":%u}\n",
             cfg->event, r->capacity, cfg->lottery ? "lottery" : "queue", cfg->admit_per_s, r->opens_at_ms,
             BENCH_ROOM_GRANT_TTL_MS);
    json_t *j = call0(x, line);
    int rc = 0;
    if (!j || !json_is_true(json_object_get(j, "ok"))) {
        fprintf(stderr, "slot-bench: waiting-room: create_event %s: %s: %s\n", cfg->event,
                j ? jstr(j, "error") : "no answer", j ? jstr(j, "message") : "");
        rc = j ? BENCH_EXIT_FAILED : BENCH_EXIT_CONNECTION;
    } else if (jint(json_object_get(j, "room"), "joined") != 0) {
        fprintf(stderr, "slot-bench: waiting-room: event %s exists with entries: use a new --event\n", cfg->event);
        rc = BENCH_EXIT_FAILED;
    }
    json_decref(j);
    return rc;
}

static int open_sale(room_ctx *x)
{
    room_run *r = x->r;
    char line[BENCH_REQ_BYTES];
    r->opens_at_ms = bench_wall_ms() + BENCH_ROOM_OPEN_DELAY_MS;
    snprintf(line, sizeof(line),
             "{\"op\":\"set_sale_window\",\"event\":\"%s\",\"opens_at\":%" PRIu64 ",\"closes_at\":0}\n",
             r->cfg->event, r->opens_at_ms);
    json_t *j = call0(x, line);
    int rc = j && json_is_true(json_object_get(j, "ok")) ? 0 : j ? BENCH_EXIT_FAILED : BENCH_EXIT_CONNECTION;
    if (rc)
        fprintf(stderr, "slot-bench: waiting-room: set_sale_window: %s\n", j ? jstr(j, "error") : "no answer");
    json_decref(j);
    return rc;
}

/* The final view and check. */
static void final_view(room_ctx *x)
{
    room_run *r = x->r;
    char line[BENCH_REQ_BYTES];
    snprintf(line, sizeof(line), "{\"op\":\"event\",\"event\":\"%s\"}\n", r->cfg->event);
    json_t *j = call0(x, line);
    json_t *room = json_object_get(j, "room");
    r->v_admitted = jint(room, "admitted");
    r->v_joined = jint(room, "joined");
    r->v_open = jint(room, "open_grants");
    r->v_confirmed = jint(j, "confirmed");
    r->v_held = jint(j, "held");
    r->v_available = jint(j, "available");
    json_decref(j);
    snprintf(line, sizeof(line), "{\"op\":\"check\",\"event\":\"%s\"}\n", r->cfg->event);
    j = call0(x, line);
    json_t *v = json_object_get(j, "violations");
    r->check_violations = !j || !json_is_true(json_object_get(j, "ok")) ? 1 : (uint32_t)json_array_size(v);
    if (r->check_violations) {
        char *s = j ? json_dumps(j, JSON_COMPACT) : NULL;
        snprintf(r->check_detail, sizeof(r->check_detail), "%s", s ? s : "no answer");
        free(s);
    }
    json_decref(j);
}

static int connect_all(room_ctx *x)
{
    const bench_config *cfg = x->r->cfg;
    char line[BENCH_REQ_BYTES];
    for (uint32_t c = 0; c < x->k; c++) {
        if (slot_client_connect(cfg->host, cfg->port, BENCH_CONNECT_TIMEOUT_MS, &x->conns[c]) < 0) {
            fprintf(stderr, "slot-bench: waiting-room: cannot connect to %s:%u\n", cfg->host, (unsigned)cfg->port);
            return BENCH_EXIT_CONNECTION;
        }
        if (cfg->token) {
            const char *ans;
            snprintf(line, sizeof(line), "{\"op\":\"hello\",\"token\":\"%s\"}\n", cfg->token);
            if (slot_client_send_raw(x->conns[c], line, strlen(line)) < 0 ||
                slot_client_recv_line(x->conns[c], &ans, BENCH_CALL_TIMEOUT_MS) < 0)
                return BENCH_EXIT_CONNECTION;
        }
    }
    return 0;
}

int bench_room_run(const bench_config *cfg)
{
    room_run r = {.cfg = cfg, .n = cfg->crowd};
    room_ctx x = {.r = &r, .k = cfg->connections, .d = cfg->pipeline < 3 ? 3 : cfg->pipeline, .rng = cfg->seed};
    x.d -= 2; /* a batch: view, d requests, view */
    r.e = calloc(r.n, sizeof(room_entry));
    x.ord = calloc(r.n, sizeof(uint32_t));
    x.act = calloc(r.n, sizeof(uint32_t));
    x.conns = calloc(x.k, sizeof(slot_client *));
    x.nb = calloc(x.k, sizeof(uint32_t));
    x.batch = calloc((size_t)x.k * (x.d + 2), sizeof(rq));
    x.buf = malloc((size_t)x.k * (x.d + 2) * BENCH_REQ_BYTES);
    int rc = BENCH_EXIT_FAILED;
    if (!r.e || !x.ord || !x.act || !x.conns || !x.nb || !x.batch || !x.buf) {
        fprintf(stderr, "slot-bench: waiting-room: out of memory for %u entries\n", r.n);
        goto out;
    }
    for (uint32_t i = 0; i < r.n; i++)
        r.e[i].confirms = bench_rand(&x.rng) % BENCH_PCT_MAX < cfg->confirm_pct;
    if ((rc = connect_all(&x)) || (rc = create(&x)) || (rc = join_phase(&x)))
        goto out;
    if (!cfg->opens_in_ms && (rc = open_sale(&x)))
        goto out;
    if ((rc = admit_phase(&x)))
        goto out;
    final_view(&x);
    rc = bench_room_verify_report(&r);
out:
    for (uint32_t c = 0; x.conns && c < x.k; c++)
        if (x.conns[c])
            slot_client_close(x.conns[c]);
    free(r.e);
    free(x.ord);
    free(x.act);
    free(x.conns);
    free(x.nb);
    free(x.batch);
    free(x.buf);
    return rc;
}
