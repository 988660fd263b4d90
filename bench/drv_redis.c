/*
 * drv_redis.c — the Redis target: the same scenarios against Redis running
 * the Lua peer (bench/peers/slot_hold.lua), through hiredis. The load uses
 * hiredis's async API on the bench's own libuv loop (hiredis/adapters/libuv.h),
 * so both targets are driven by the same event-loop design; administration
 * uses its blocking API. Built only when hiredis is found (BENCH_HAVE_REDIS).
 *
 * The loop adapter is this file's own (hiredis's adapters/libuv.h polls for
 * writable after every command, and writes on the next loop turn): a load
 * connection's commands are written at the end of the engine's turn (the
 * engine's flush, after each read), in one write; only a write that did not
 * finish, or a connect, waits for writable.
 *
 * Redis has no sweeper of its own for these holds, so the driver runs one: a
 * separate connection calls the script's "expire" op for every event once a
 * second, as slotd's sweeper does (--sweep-interval-ms 1000).
 *
 * --peer min: holds go to bench/peers/slot_hold_min.lua, the minimal script a
 * user would write, which keeps the full script's keys; everything else
 * (create, event, get_hold, expire, check) goes to the full script.
 */
#include <errno.h>
#include <hiredis/async.h>
#include <hiredis/hiredis.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include <uv.h>

#include "driver.h"
#include "drv_redis.h"
#include "engine.h"
#include "exit.h"
#include "ledger.h"
#include "limits.h"
#include "util.h"
#include "wire.h"

#define REDIS_SWEEP_MS 1000    /* like slotd's default --sweep-interval-ms */
#define REDIS_SWEEP_LIMIT 1024 /* holds per event per sweep, like SLOT_SWEEP_BATCH_MAX */
#define REDIS_ARGS_MAX 10      /* EVALSHA sha 1 prefix op + up to 5 op arguments (create) */
#define REDIS_PREFIX_BYTES (SLOT_EVENT_BYTES_MAX + 8)

extern const char bench_peer_lua[];
extern const size_t bench_peer_lua_len;
extern const char bench_peer_lua_min[];
extern const size_t bench_peer_lua_min_len;

struct bench_admin {
    redisContext *c;
    char sha[41];      /* of the loaded peer script (the full one) */
    char hold_sha[41]; /* of the script that answers holds: --peer full (the same) or min */
    json_t *info;
};

typedef struct redis_state {
    redisAsyncContext *sweeper;
    uv_timer_t sweep_timer;
    bool closing, sweeper_up;
    uint32_t sweeps_failed;
} redis_state;

/* ---------------------------------------------------------------- the loop adapter */

typedef struct redis_poll {
    uv_poll_t handle;
    redisAsyncContext *ac; /* NULL once hiredis let go of it (cleanup) */
    bench_run *run;        /* a load connection's run: writes wait for the engine's flush; NULL: the sweeper */
    int events;            /* UV_READABLE | UV_WRITABLE being polled */
    bool want_write;       /* commands queued, to be written by redis_flush */
    bool writing;          /* inside redisAsyncHandleWrite: a write that does not finish polls */
    uint64_t read_ns;      /* when the bytes being parsed were read (uv_hrtime): the answers' time */
} redis_poll;

static void poll_cb(uv_poll_t *h, int status, int events);

static void poll_set(redis_poll *p, int events)
{
    if (events == p->events)
        return;
    p->events = events;
    if (events)
        uv_poll_start(&p->handle, events, poll_cb);
    else
        uv_poll_stop(&p->handle);
}

static void poll_write(redis_poll *p)
{
    p->want_write = false;
    p->writing = true;
    redisAsyncHandleWrite(p->ac);
    p->writing = false;
}

static void poll_cb(uv_poll_t *h, int status, int events)
{
    redis_poll *p = h->data;
    if (status < 0 || !p->ac)
        return;
    if (events & UV_READABLE) {
        p->read_ns = uv_hrtime(); /* one clock read per read, as drv_slotd.c's */
        redisAsyncHandleRead(p->ac);
        if (p->run)
            bench_turn_end(p->run); /* the requests the answers made room for go out now */
    }
    if (p->ac && (events & UV_WRITABLE))
        poll_write(p);
}

static void ev_add_read(void *d)
{
    redis_poll *p = d;
    poll_set(p, p->events | UV_READABLE);
}

static void ev_del_read(void *d)
{
    redis_poll *p = d;
    poll_set(p, p->events & ~UV_READABLE);
}

static void ev_add_write(void *d)
{
    redis_poll *p = d;
    if (p->run && !p->writing && (p->ac->c.flags & REDIS_CONNECTED))
        p->want_write = true; /* redis_flush writes it at the end of the turn */
    else
        poll_set(p, p->events | UV_WRITABLE);
}

static void ev_del_write(void *d)
{
    redis_poll *p = d;
    p->want_write = false;
    poll_set(p, p->events & ~UV_WRITABLE);
}

static void poll_closed(uv_handle_t *h)
{
    free(h->data);
}

static void ev_cleanup(void *d)
{
    redis_poll *p = d;
    p->ac = NULL;
    uv_close((uv_handle_t *)&p->handle, poll_closed);
}

/* Attach ac to loop; run: a load connection's (writes at the engine's flush), NULL for the sweeper. 0 or -1. */
static int poll_attach(redisAsyncContext *ac, uv_loop_t *loop, bench_run *run)
{
    redis_poll *p = calloc(1, sizeof(*p));
    if (!p || uv_poll_init(loop, &p->handle, ac->c.fd) != 0) {
        free(p);
        return -1;
    }
    p->handle.data = p;
    p->ac = ac;
    p->run = run;
    ac->ev.data = p;
    ac->ev.addRead = ev_add_read;
    ac->ev.delRead = ev_del_read;
    ac->ev.addWrite = ev_add_write;
    ac->ev.delWrite = ev_del_write;
    ac->ev.cleanup = ev_cleanup;
    return 0;
}

/* ---------------------------------------------------------------- replies to results */

static uint64_t elem_u64(const redisReply *a, size_t i)
{
    if (i >= a->elements || a->element[i]->type != REDIS_REPLY_INTEGER || a->element[i]->integer < 0)
        return 0;
    return (uint64_t)a->element[i]->integer;
}

/* An error reply "<code> <message>" (the script's), or Redis's own ("NOSCRIPT ...", "BUSY ..."). */
static void error_result(const redisReply *rep, bench_result *r)
{
    char code[32];
    const char *sp = memchr(rep->str, ' ', rep->len);
    size_t n = sp ? (size_t)(sp - rep->str) : rep->len;
    snprintf(code, sizeof(code), "%.*s", (int)(n < sizeof(code) ? n : sizeof(code) - 1), rep->str);
    r->ok = false;
    r->err = slot_err_from_name(code);
    snprintf(r->text, sizeof(r->text), "%.*s", (int)(rep->len > 150 ? 150 : rep->len), rep->str);
    if (r->err == SLOT_E_HOLD_NOT_ACTIVE && sp)
        bench_result_status(sp + 1, rep->len - n - 1, r);
}

/* The script's array replies (see slot_hold.lua) for the op that was asked. */
static int result_of(const redisReply *rep, uint8_t op, bench_result *r)
{
    bench_result_clear(r);
    if (rep->type == REDIS_REPLY_ERROR) {
        error_result(rep, r);
        return 0;
    }
    if (rep->type != REDIS_REPLY_ARRAY || rep->elements < 2 || rep->element[0]->type != REDIS_REPLY_STRING)
        return -1;
    r->ok = true;
    bench_result_status(rep->element[0]->str, rep->element[0]->len, r);
    if (r->sold_out) {
        r->available = elem_u64(rep, 1);
        return 0;
    }
    if (op == BENCH_OP_RELEASE) {
        r->released = elem_u64(rep, 1) == 1;
        return 0;
    }
    const redisReply *id = rep->element[1];
    if (id->type == REDIS_REPLY_STRING && id->len <= SLOT_HOLD_ARG_BYTES_MAX) {
        memcpy(r->hold, id->str, id->len);
        r->hold[id->len] = 0;
        r->hold_len = (uint32_t)id->len;
    }
    r->qty = (uint32_t)elem_u64(rep, 2);
    r->expires_at_ms = op == BENCH_OP_CONFIRM ? 0 : elem_u64(rep, 3);
    r->replay = op == BENCH_OP_HOLD ? elem_u64(rep, 4) == 1 : op == BENCH_OP_CONFIRM ? elem_u64(rep, 3) == 1 : false;
    return 0;
}

/* ---------------------------------------------------------------- the load (async) */

static void reply_cb(redisAsyncContext *ac, void *reply, void *privdata)
{
    (void)privdata;
    bench_conn *c = ac->data;
    bench_run *run = c->run;
    redis_state *rs = run->drv_state;
    if (rs->closing)
        return;
    if (!reply) {
        bench_fail(run, BENCH_EXIT_CONNECTION, "connection %u: %s", c->index, ac->errstr[0] ? ac->errstr : "closed");
        return;
    }
    bench_result r;
    if (c->inflight > 0 && c->ring[c->head].op == BENCH_OP_PING) {
        const redisReply *rep = reply;
        bench_result_clear(&r);
        r.ok = rep->type == REDIS_REPLY_STATUS && rep->len == 4 && memcmp(rep->str, "PONG", 4) == 0;
        if (rep->type == REDIS_REPLY_ERROR)
            error_result(rep, &r);
        else if (!r.ok)
            snprintf(r.text, sizeof(r.text), "a reply to PING of type %d, not PONG", rep->type);
        bench_deliver(c, &r, ((redis_poll *)ac->ev.data)->read_ns);
        return;
    }
    if (c->inflight == 0 || result_of(reply, c->ring[c->head].op, &r) < 0) {
        bench_fail(run, BENCH_EXIT_FAILED, "connection %u: a reply the Lua peer does not give (type %d)", c->index,
                   ((redisReply *)reply)->type);
        return;
    }
    bench_deliver(c, &r, ((redis_poll *)ac->ev.data)->read_ns);
}

static void auth_cb(redisAsyncContext *ac, void *reply, void *privdata)
{
    (void)privdata;
    bench_conn *c = ac->data;
    redisReply *rep = reply;
    if (((redis_state *)c->run->drv_state)->closing)
        return;
    if (!rep || rep->type == REDIS_REPLY_ERROR) {
        bench_fail(c->run, BENCH_EXIT_FAILED, "AUTH: %s", rep ? rep->str : "no reply");
        return;
    }
    bench_conn_up(c);
}

static void connect_cb(const redisAsyncContext *ac, int status)
{
    bench_conn *c = ac->data;
    if (status != REDIS_OK) {
        bench_fail(c->run, BENCH_EXIT_CONNECTION, "connection %u: cannot connect: %s", c->index, ac->errstr);
        return;
    }
    if (!c->run->cfg->token)
        bench_conn_up(c);
}

static void disconnect_cb(const redisAsyncContext *ac, int status)
{
    bench_conn *c = ac->data;
    redis_state *rs = c->run->drv_state;
    c->drv = NULL; /* hiredis frees the context after this callback */
    if (!rs->closing && status != REDIS_OK)
        bench_fail(c->run, BENCH_EXIT_CONNECTION, "connection %u: %s", c->index, ac->errstr);
}

static void prefix_of(const char *event, char *buf)
{
    snprintf(buf, REDIS_PREFIX_BYTES, "slot:%s", event);
}

static int redis_send(bench_conn *c, const bench_ticket *t)
{
    static const char *const ops[] = {"hold", "confirm", "release", "get_hold"};
    bench_run *run = c->run;
    if (t->op == BENCH_OP_PING) {
        static const char ping[] = "*1\r\n$4\r\nPING\r\n"; /* formatted once: RESP of PING */
        redisAsyncContext *pac = c->drv;
        return pac && redisAsyncFormattedCommand(pac, reply_cb, NULL, ping, sizeof(ping) - 1) == REDIS_OK ? 0 : -1;
    }
    char prefix[REDIS_PREFIX_BYTES], a1[SLOT_HOLD_ARG_BYTES_MAX + 1], a2[32], a3[16], a4[24];
    const char *script = t->op == BENCH_OP_HOLD ? run->admin->hold_sha : run->admin->sha;
    const char *argv[REDIS_ARGS_MAX] = {"EVALSHA", script, "1", prefix, ops[t->op], a1, a2, a3, a4};
    size_t lens[REDIS_ARGS_MAX];
    int argc;
    prefix_of(run->events[t->event].name, prefix);
    if (t->op == BENCH_OP_HOLD) {
        bench_user_name(t->user, a1, sizeof(a1));
        bench_key_name(t->key, a2, sizeof(a2));
        snprintf(a3, sizeof(a3), "%u", (unsigned)t->qty);
        snprintf(a4, sizeof(a4), "%" PRIu64, bench_rand(&c->rng) & ((UINT64_C(1) << 48) - 1));
        argc = 9;
    } else {
        const bench_hold *h = &run->ledger.holds[t->key];
        memcpy(a1, bench_ledger_id(&run->ledger, t->key), h->id_len);
        a1[h->id_len] = 0;
        bench_user_name(h->user, a2, sizeof(a2));
        argc = 7;
    }
    for (int i = 0; i < argc; i++)
        lens[i] = strlen(argv[i]);
    redisAsyncContext *ac = c->drv;
    return ac && redisAsyncCommandArgv(ac, reply_cb, NULL, argc, argv, lens) == REDIS_OK ? 0 : -1;
}

static void redis_flush(bench_conn *c)
{
    redisAsyncContext *ac = c->drv;
    redis_poll *p = ac ? ac->ev.data : NULL;
    if (p && p->want_write)
        poll_write(p); /* one write of everything queued this turn */
}

/* ---------------------------------------------------------------- the sweeper */

static void sweep_cb(redisAsyncContext *ac, void *reply, void *privdata)
{
    (void)privdata;
    bench_run *run = ac->data;
    redis_state *rs = run->drv_state;
    redisReply *rep = reply;
    if (!rs->closing && (!rep || rep->type == REDIS_REPLY_ERROR) && rs->sweeps_failed++ == 0)
        fprintf(stderr, "slot-bench: redis sweeper: %s\n", rep ? rep->str : "no reply");
}

static void sweep_timer_cb(uv_timer_t *t)
{
    bench_run *run = t->data;
    redis_state *rs = run->drv_state;
    for (uint32_t i = 0; rs->sweeper && i < run->nevents; i++) {
        char prefix[REDIS_PREFIX_BYTES], limit[16];
        prefix_of(run->events[i].name, prefix);
        snprintf(limit, sizeof(limit), "%d", REDIS_SWEEP_LIMIT);
        const char *argv[] = {"EVALSHA", run->admin->sha, "1", prefix, "expire", limit};
        redisAsyncCommandArgv(rs->sweeper, sweep_cb, NULL, 6, argv, NULL);
    }
}

static void sweeper_disconnect_cb(const redisAsyncContext *ac, int status)
{
    (void)status;
    bench_run *run = ac->data;
    ((redis_state *)run->drv_state)->sweeper = NULL;
}

static int sweeper_open(bench_run *run, redis_state *rs)
{
    rs->sweeper = redisAsyncConnect(run->cfg->host, run->cfg->port);
    if (!rs->sweeper || rs->sweeper->err) {
        bench_fail(run, BENCH_EXIT_CONNECTION, "sweeper: cannot connect: %s",
                   rs->sweeper ? rs->sweeper->errstr : "out of memory");
        return -1;
    }
    rs->sweeper->data = run;
    if (poll_attach(rs->sweeper, &run->loop, NULL) < 0) {
        bench_fail(run, BENCH_EXIT_FAILED, "sweeper: out of memory");
        return -1;
    }
    redisAsyncSetDisconnectCallback(rs->sweeper, sweeper_disconnect_cb);
    if (run->cfg->token)
        redisAsyncCommand(rs->sweeper, sweep_cb, NULL, "AUTH %s", run->cfg->token);
    uv_timer_start(&rs->sweep_timer, sweep_timer_cb, REDIS_SWEEP_MS, REDIS_SWEEP_MS);
    uv_unref((uv_handle_t *)&rs->sweep_timer); /* a phase ends when its own work is done */
    return 0;
}

static int redis_open(bench_run *run)
{
    redis_state *rs = calloc(1, sizeof(*rs));
    if (!rs) {
        bench_fail(run, BENCH_EXIT_FAILED, "out of memory");
        return -1;
    }
    run->drv_state = rs;
    uv_timer_init(&run->loop, &rs->sweep_timer);
    rs->sweep_timer.data = run;
    for (uint32_t i = 0; i < run->nconns; i++) {
        bench_conn *c = &run->conns[i];
        redisAsyncContext *ac = redisAsyncConnect(run->cfg->host, run->cfg->port);
        if (!ac || ac->err) {
            bench_fail(run, BENCH_EXIT_CONNECTION, "connection %u: cannot connect: %s", i,
                       ac ? ac->errstr : "out of memory");
            return -1;
        }
        ac->data = c;
        c->drv = ac;
        if (poll_attach(ac, &run->loop, run) < 0) {
            bench_fail(run, BENCH_EXIT_FAILED, "connection %u: out of memory", i);
            return -1;
        }
        redisAsyncSetConnectCallback(ac, connect_cb);
        redisAsyncSetDisconnectCallback(ac, disconnect_cb);
        if (run->cfg->token)
            redisAsyncCommand(ac, auth_cb, NULL, "AUTH %s", run->cfg->token);
    }
    return run->loop_index ? 0 : sweeper_open(run, rs); /* --threads: one sweeper, on loop 0 */
}

static void redis_close(bench_run *run)
{
    redis_state *rs = run->drv_state;
    if (!rs)
        return;
    rs->closing = true;
    for (uint32_t i = 0; i < run->nconns; i++)
        if (run->conns[i].drv) {
            redisAsyncContext *ac = run->conns[i].drv;
            run->conns[i].drv = NULL;
            redisAsyncFree(ac);
        }
    if (rs->sweeper)
        redisAsyncFree(rs->sweeper);
    uv_close((uv_handle_t *)&rs->sweep_timer, NULL);
    uv_run(&run->loop, UV_RUN_DEFAULT); /* the adapters' poll handles close; then rs may go */
    free(rs);
    run->drv_state = NULL;
}

/* ---------------------------------------------------------------- administration (blocking) */

/* One EVALSHA of the peer on the admin connection. The reply (owned; freeReplyObject)
 * or NULL with err set and *rc an exit status. */
static redisReply *eval(bench_admin *a, const char *event, const char *const *args, int nargs, int *rc, char *err,
                        size_t errlen)
{
    char prefix[REDIS_PREFIX_BYTES];
    const char *argv[REDIS_ARGS_MAX] = {"EVALSHA", a->sha, "1", prefix};
    prefix_of(event, prefix);
    for (int i = 0; i < nargs && 4 + i < REDIS_ARGS_MAX; i++)
        argv[4 + i] = args[i];
    redisReply *rep = redisCommandArgv(a->c, 4 + nargs, argv, NULL);
    *rc = 0;
    if (!rep) {
        snprintf(err, errlen, "%s: %s", args[0], a->c->errstr[0] ? a->c->errstr : "no reply");
        *rc = BENCH_EXIT_CONNECTION;
    } else if (rep->type == REDIS_REPLY_ERROR) {
        snprintf(err, errlen, "%s: %s", args[0], rep->str);
        *rc = BENCH_EXIT_FAILED;
        freeReplyObject(rep);
        rep = NULL;
    }
    return rep;
}

/* A command with printf-style arguments; its string reply into out (may be NULL). 0 or an exit status. */
static int command_str(bench_admin *a, char *out, size_t outlen, char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 6, 7)));

static int command_str(bench_admin *a, char *out, size_t outlen, char *err, size_t errlen, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    redisReply *rep = redisvCommand(a->c, fmt, ap);
    va_end(ap);
    if (!rep) {
        snprintf(err, errlen, "redis: %s", a->c->errstr[0] ? a->c->errstr : "no reply");
        return BENCH_EXIT_CONNECTION;
    }
    int rc = 0;
    if (rep->type == REDIS_REPLY_ERROR) {
        snprintf(err, errlen, "redis: %s", rep->str);
        rc = BENCH_EXIT_FAILED;
    } else if (out && (rep->type == REDIS_REPLY_STRING || rep->type == REDIS_REPLY_STATUS)) {
        snprintf(out, outlen, "%s", rep->str);
    }
    freeReplyObject(rep);
    return rc;
}

/* SCRIPT LOAD a peer script (len bytes); its sha into sha (41 bytes). 0 or an exit status. */
static int load_script(bench_admin *a, const char *script, size_t len, char *sha, char *err, size_t errlen)
{
    const char *argv[] = {"SCRIPT", "LOAD", script};
    size_t lens[] = {6, 4, len};
    redisReply *rep = redisCommandArgv(a->c, 3, argv, lens);
    int rc = 0;
    if (!rep) {
        snprintf(err, errlen, "SCRIPT LOAD: %s", a->c->errstr[0] ? a->c->errstr : "no reply");
        rc = BENCH_EXIT_CONNECTION;
    } else if (rep->type != REDIS_REPLY_STRING || rep->len != 40) {
        snprintf(err, errlen, "SCRIPT LOAD: %s", rep->type == REDIS_REPLY_ERROR ? rep->str : "no sha1 in the reply");
        rc = BENCH_EXIT_FAILED;
    } else {
        memcpy(sha, rep->str, 41);
    }
    freeReplyObject(rep);
    return rc;
}

/* "key:value" of an INFO text. */
static bool info_field(const char *info, const char *key, char *out, size_t n)
{
    size_t klen = strlen(key);
    for (const char *p = info; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL)
        if (strncmp(p, key, klen) == 0 && p[klen] == ':') {
            size_t len = strcspn(p + klen + 1, "\r\n");
            snprintf(out, n, "%.*s", (int)len, p + klen + 1);
            return true;
        }
    return false;
}

/* Version and durability settings: what the comparison needs to name the run. */
static int server_facts(bench_admin *a, const char *script, char *err, size_t errlen)
{
    char info[8192] = "", version[64] = "?", aof[16] = "?";
    int rc = command_str(a, info, sizeof(info), err, errlen, "INFO server");
    info_field(info, "redis_version", version, sizeof(version));
    redisReply *rep = rc ? NULL : redisCommand(a->c, "CONFIG GET appendfsync");
    if (rep && rep->type == REDIS_REPLY_ARRAY && rep->elements == 2)
        snprintf(aof, sizeof(aof), "%s", rep->element[1]->str);
    freeReplyObject(rep);
    char appendonly[16] = "?";
    rep = rc ? NULL : redisCommand(a->c, "CONFIG GET appendonly");
    if (rep && rep->type == REDIS_REPLY_ARRAY && rep->elements == 2)
        snprintf(appendonly, sizeof(appendonly), "%s", rep->element[1]->str);
    freeReplyObject(rep);
    a->info = json_pack("{s:s, s:s, s:s, s:s, s:s}", "server", "redis", "version", version, "appendonly", appendonly,
                        "appendfsync", aof, "script", script);
    return rc;
}

static void redis_admin_close(bench_admin *a)
{
    if (!a)
        return;
    redisFree(a->c); /* takes NULL */
    json_decref(a->info);
    free(a);
}

static int redis_admin_open(const bench_config *cfg, bench_admin **out, char *err, size_t errlen)
{
    bench_admin *a = calloc(1, sizeof(*a));
    struct timeval tv = {BENCH_CONNECT_TIMEOUT_MS / 1000, 0};
    if (!a || !(a->c = redisConnectWithTimeout(cfg->host, cfg->port, tv)) || a->c->err) {
        snprintf(err, errlen, "cannot connect to redis at %s:%u: %s", cfg->host, (unsigned)cfg->port,
                 a && a->c ? a->c->errstr : "out of memory");
        redis_admin_close(a);
        return BENCH_EXIT_CONNECTION;
    }
    struct timeval call = {BENCH_CALL_TIMEOUT_MS / 1000, 0};
    redisSetTimeout(a->c, call);
    int rc = cfg->token ? command_str(a, NULL, 0, err, errlen, "AUTH %s", cfg->token) : 0;
    if (rc == 0)
        rc = load_script(a, bench_peer_lua, bench_peer_lua_len, a->sha, err, errlen);
    if (rc == 0 && cfg->peer == BENCH_PEER_MIN)
        rc = load_script(a, bench_peer_lua_min, bench_peer_lua_min_len, a->hold_sha, err, errlen);
    else if (rc == 0)
        memcpy(a->hold_sha, a->sha, sizeof(a->sha));
    if (rc == 0)
        rc = server_facts(a,
                          cfg->peer == BENCH_PEER_MIN ? "bench/peers/slot_hold_min.lua" : "bench/peers/slot_hold.lua",
                          err, errlen);
    if (rc) {
        redis_admin_close(a);
        return rc;
    }
    *out = a;
    return 0;
}

static int redis_server_info(bench_admin *a, json_t **info, char *err, size_t errlen)
{
    (void)err;
    (void)errlen;
    *info = json_deep_copy(a->info);
    return 0;
}

/* The script's event view: {status, capacity, available, held, confirmed, shards, replay}. */
static int view_of(redisReply *rep, bench_view *v, char *err, size_t errlen)
{
    if (rep->type != REDIS_REPLY_ARRAY || rep->elements < 6 || rep->element[0]->type != REDIS_REPLY_STRING) {
        snprintf(err, errlen, "event: not the peer's view");
        freeReplyObject(rep);
        return BENCH_EXIT_FAILED;
    }
    snprintf(v->status, sizeof(v->status), "%s", rep->element[0]->str);
    v->capacity = elem_u64(rep, 1);
    v->available = elem_u64(rep, 2);
    v->held = elem_u64(rep, 3);
    v->confirmed = elem_u64(rep, 4);
    freeReplyObject(rep);
    return 0;
}

static int redis_create_event(bench_admin *a, const bench_event_spec *s, bench_view *v, char *err, size_t errlen)
{
    char cap[24], shards[16], ttl[16], mpu[24], mpr[16];
    snprintf(cap, sizeof(cap), "%" PRIu64, s->capacity);
    snprintf(shards, sizeof(shards), "%u", s->shards);
    snprintf(ttl, sizeof(ttl), "%u", s->hold_ttl_ms);
    snprintf(mpu, sizeof(mpu), "%" PRIu64, s->max_per_user);
    snprintf(mpr, sizeof(mpr), "%u", s->max_per_request);
    const char *args[] = {"create", cap, shards, ttl, mpu, mpr};
    int rc;
    redisReply *rep = eval(a, s->name, args, 6, &rc, err, errlen);
    return rep ? view_of(rep, v, err, errlen) : rc;
}

static int redis_event(bench_admin *a, const char *event, bench_view *v, char *err, size_t errlen)
{
    const char *args[] = {"event"};
    int rc;
    redisReply *rep = eval(a, event, args, 1, &rc, err, errlen);
    return rep ? view_of(rep, v, err, errlen) : rc;
}

static int redis_check(bench_admin *a, const char *event, uint32_t *violations, char *detail, size_t detlen)
{
    const char *args[] = {"check"};
    int rc;
    redisReply *rep = eval(a, event, args, 1, &rc, detail, detlen);
    if (!rep)
        return rc;
    if (rep->type != REDIS_REPLY_ARRAY || rep->elements < 4) {
        snprintf(detail, detlen, "check: not the peer's answer");
        freeReplyObject(rep);
        return BENCH_EXIT_FAILED;
    }
    *violations = (uint32_t)elem_u64(rep, 2);
    snprintf(detail, detlen, "%s", rep->element[3]->type == REDIS_REPLY_STRING ? rep->element[3]->str : "");
    freeReplyObject(rep);
    return 0;
}

static int redis_expire(bench_admin *a, const char *event, uint64_t *expired, char *err, size_t errlen)
{
    const char *args[] = {"expire", "1000000"};
    int rc;
    redisReply *rep = eval(a, event, args, 2, &rc, err, errlen);
    if (!rep)
        return rc;
    *expired = rep->type == REDIS_REPLY_INTEGER && rep->integer > 0 ? (uint64_t)rep->integer : 0;
    freeReplyObject(rep);
    return 0;
}

/* INFO commandstats: the script's calls and their cost inside Redis. */
static int redis_stats(bench_admin *a, json_t **stats, char *err, size_t errlen)
{
    char info[16384] = "", calls[128] = "", total[32] = "0";
    int rc = command_str(a, info, sizeof(info), err, errlen, "INFO commandstats");
    info_field(info, "cmdstat_evalsha", calls, sizeof(calls));
    char stats_text[4096] = "";
    if (rc == 0)
        rc = command_str(a, stats_text, sizeof(stats_text), err, errlen, "INFO stats");
    info_field(stats_text, "total_commands_processed", total, sizeof(total));
    *stats = rc ? NULL
                : json_pack("{s:s, s:s, s:I}", "server", "redis", "cmdstat_evalsha", calls, "total_commands_processed",
                            (json_int_t)strtoll(total, NULL, 10));
    return rc;
}

const bench_driver bench_driver_redis = {
    .name = "redis",
    .open = redis_open,
    .send = redis_send,
    .flush = redis_flush,
    .close = redis_close,
    .admin_open = redis_admin_open,
    .admin_close = redis_admin_close,
    .server_info = redis_server_info,
    .create_event = redis_create_event,
    .event = redis_event,
    .check = redis_check,
    .expire = redis_expire,
    .stats = redis_stats,
};
