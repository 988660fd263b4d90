/*
 * drv_slotd.c — the slotd target: newline-delimited JSON over libuv TCP for
 * the load, the blocking slot_client for administration (docs/protocol.md).
 *
 * The load side writes hold lines directly (event names are plain
 * [A-Za-z0-9._:-], user and key names are ours) and encodes the other ops
 * with slot_req_encode. Replies are scanned by a small parser for flat
 * objects, the shape of every frontend reply; anything else (escapes,
 * nesting, spaces) goes to slot_reply_parse.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "driver.h"
#include "drv_slotd.h"
#include "engine.h"
#include "exit.h"
#include "ledger.h"
#include "limits.h"
#include "wire.h"
#include "slot/client.h"

#define SLOTD_IN_BYTES (64u << 10)      /* per connection; a reply line is ~100-250 bytes */
#define SLOTD_HELLO_BYTES 2048          /* a hello line with the longest token */

typedef struct slotd_conn {
    uv_tcp_t tcp;
    uv_connect_t connect_req;
    uv_write_t write_req;
    bench_conn *c;
    bool writing, hello_pending;
    char *out, *wbuf;                   /* queued / being written; swapped on each write */
    size_t out_len, wbuf_len, out_cap;
    size_t in_len;
    char in[SLOTD_IN_BYTES];
} slotd_conn;

/* ---------------------------------------------------------------- replies */

static bool key_is(const char *k, size_t n, const char *lit)
{
    return strlen(lit) == n && memcmp(k, lit, n) == 0;
}

enum { V_STR, V_NUM, V_TRUE, V_FALSE, V_NULL };

/* One member of a flat reply into r. false: a value the fast path does not take. */
static bool apply(const char *k, size_t kn, int kind, const char *v, size_t vn, bench_result *r, bool *saw_ok)
{
    if (key_is(k, kn, "ok")) {
        *saw_ok = kind == V_TRUE || kind == V_FALSE;
        r->ok = kind == V_TRUE;
    } else if (key_is(k, kn, "status") && kind == V_STR) {
        bench_result_status(v, vn, r);
    } else if (key_is(k, kn, "hold") && kind == V_STR) {
        if (vn > SLOT_HOLD_ARG_BYTES_MAX)
            return false;
        memcpy(r->hold, v, vn);
        r->hold[vn] = 0;
        r->hold_len = (uint32_t)vn;
    } else if (kind == V_NUM && (key_is(k, kn, "qty") || key_is(k, kn, "expires_at") || key_is(k, kn, "available"))) {
        uint64_t x = 0;
        for (size_t i = 0; i < vn; i++) {
            if (v[i] < '0' || v[i] > '9' || x > UINT64_MAX / 10 - 1)
                return false;
            x = x * 10 + (uint64_t)(v[i] - '0');
        }
        if (k[0] == 'q')
            r->qty = x > UINT32_MAX ? UINT32_MAX : (uint32_t)x;
        else if (k[0] == 'e')
            r->expires_at_ms = x;
        else
            r->available = x;
    } else if (key_is(k, kn, "error") && kind == V_STR) {
        char code[32];
        size_t m = vn < sizeof(code) - 1 ? vn : sizeof(code) - 1;
        memcpy(code, v, m);
        code[m] = 0;
        r->err = slot_err_from_name(code);
    } else if (key_is(k, kn, "message") && kind == V_STR) {
        size_t m = vn < sizeof(r->text) - 1 ? vn : sizeof(r->text) - 1;
        memcpy(r->text, v, m);
        r->text[m] = 0;
    } else if (key_is(k, kn, "replay") || key_is(k, kn, "released")) {
        bool *b = k[2] == 'p' ? &r->replay : &r->released;
        *b = kind == V_TRUE;
    }
    return true;
}

/* A value at *pp: its kind, start and length. false: not a flat value. */
static bool scan_value(const char **pp, const char *end, int *kind, const char **v, size_t *vn)
{
    const char *p = *pp;
    *v = p;
    if (*p == '"') {
        *v = ++p;
        while (p < end && *p != '"' && *p != '\\')
            p++;
        if (p >= end || *p != '"')
            return false;
        *vn = (size_t)(p - *v);
        *kind = V_STR;
        p++;
    } else if ((*p >= '0' && *p <= '9') || *p == '-') {
        while (p < end && ((*p >= '0' && *p <= '9') || *p == '-'))
            p++;
        *vn = (size_t)(p - *v);
        *kind = V_NUM;
    } else if (end - p >= 4 && memcmp(p, "true", 4) == 0) {
        p += 4, *kind = V_TRUE, *vn = 0;
    } else if (end - p >= 5 && memcmp(p, "false", 5) == 0) {
        p += 5, *kind = V_FALSE, *vn = 0;
    } else if (end - p >= 4 && memcmp(p, "null", 4) == 0) {
        p += 4, *kind = V_NULL, *vn = 0;
    } else {
        return false;
    }
    *pp = p;
    return true;
}

/* The fast path: {"k":v,...} with flat values, no spaces, no escapes. 0 or -1. */
static int fast_scan(const char *p, size_t n, bench_result *r)
{
    if (n < 2 || p[0] != '{' || p[n - 1] != '}')
        return -1;
    const char *end = p + n - 1;
    bool saw_ok = false;
    p++;
    while (p < end) {
        if (*p != '"')
            return -1;
        const char *k = ++p;
        while (p < end && *p != '"' && *p != '\\')
            p++;
        if (p + 1 >= end || *p != '"' || p[1] != ':')
            return -1;
        size_t kn = (size_t)(p - k);
        p += 2;
        int kind;
        const char *v;
        size_t vn;
        if (p >= end || !scan_value(&p, end, &kind, &v, &vn) || !apply(k, kn, kind, v, vn, r, &saw_ok))
            return -1;
        if (p < end && (*p != ',' || ++p >= end))
            return -1;
    }
    return saw_ok ? 0 : -1;
}

/* The slow path: the client library's parser. */
static int slow_parse(const char *line, size_t len, bench_result *r)
{
    slot_reply rep;
    if (slot_reply_parse(line, len, &rep) < 0) {
        slot_reply_clear(&rep);
        return -1;
    }
    r->ok = rep.ok;
    r->err = rep.ok ? SLOT_E_OK : rep.err;
    snprintf(r->text, sizeof(r->text), "%.150s", rep.message);
    bench_result_status(rep.status, strlen(rep.status), r);
    r->replay = rep.replay;
    r->released = rep.released;
    r->qty = rep.qty > UINT32_MAX ? UINT32_MAX : (uint32_t)rep.qty;
    r->expires_at_ms = rep.expires_at_ms;
    r->available = rep.available;
    r->hold_len = (uint32_t)strlen(rep.hold);
    memcpy(r->hold, rep.hold, r->hold_len + 1);
    slot_reply_clear(&rep);
    return 0;
}

int bench_parse_slotd_reply(const char *line, size_t len, bench_result *r)
{
    bench_result_clear(r);
    if (fast_scan(line, len, r) == 0) {
        if (r->ok)
            r->err = SLOT_E_OK;
        else if (r->err == SLOT_E_OK)
            r->err = SLOT_E__COUNT; /* ok:false without a code we know */
        return 0;
    }
    bench_result_clear(r);
    return slow_parse(line, len, r);
}

/* ---------------------------------------------------------------- requests */

static char *put(char *p, const char *s, size_t n)
{
    memcpy(p, s, n);
    return p + n;
}

#define PUT_LIT(p, lit) put((p), (lit), sizeof(lit) - 1)

/* A hold line, written directly: every string in it is plain. */
static size_t encode_hold(const bench_run *run, const bench_ticket *t, char *buf)
{
    const char *ev = run->events[t->event].name;
    char *p = buf;
    p = PUT_LIT(p, "{\"op\":\"hold\",\"event\":\"");
    p = put(p, ev, strlen(ev));
    p = PUT_LIT(p, "\",\"user\":\"");
    p += bench_user_name(t->user, p, 32);
    p = PUT_LIT(p, "\",\"request\":\"");
    p += bench_key_name(t->key, p, 32);
    p = PUT_LIT(p, "\",\"qty\":");
    p += snprintf(p, 16, "%u", (unsigned)t->qty);
    p = PUT_LIT(p, "}\n");
    return (size_t)(p - buf);
}

/* confirm / release / get_hold of ledger entry t->key, through the client codec. */
static long encode_hold_op(const bench_run *run, const bench_ticket *t, char *buf, size_t cap)
{
    static const slot_op ops[] = {[BENCH_OP_CONFIRM] = SLOT_OP_CONFIRM, [BENCH_OP_RELEASE] = SLOT_OP_RELEASE,
                                  [BENCH_OP_GET_HOLD] = SLOT_OP_GET_HOLD};
    const bench_hold *h = &run->ledger.holds[t->key];
    char id[SLOT_HOLD_ARG_BYTES_MAX + 1], user[32];
    memcpy(id, bench_ledger_id(&run->ledger, t->key), h->id_len);
    id[h->id_len] = 0;
    bench_user_name(h->user, user, sizeof(user));
    slot_req req;
    if (slot_req_hold_op(&req, ops[t->op], run->events[h->event].name, id, user) < 0)
        return -1;
    return slot_req_encode(&req, buf, cap);
}

static int slotd_send(bench_conn *c, const bench_ticket *t)
{
    slotd_conn *sc = c->drv;
    size_t room = sc->out_cap - sc->out_len;
    if (room < BENCH_REQ_BYTES)
        return -1;
    char *dst = sc->out + sc->out_len;
    long n = t->op == BENCH_OP_HOLD ? (long)encode_hold(c->run, t, dst) : encode_hold_op(c->run, t, dst, room);
    if (n < 0 || (size_t)n >= room)
        return -1;
    sc->out_len += (size_t)n;
    return 0;
}

static void write_cb(uv_write_t *req, int status);

static void slotd_flush(bench_conn *c)
{
    slotd_conn *sc = c->drv;
    if (sc->writing || sc->out_len == 0)
        return;
    char *tmp = sc->wbuf;
    sc->wbuf = sc->out;
    sc->wbuf_len = sc->out_len;
    sc->out = tmp;
    sc->out_len = 0;
    uv_buf_t b = uv_buf_init(sc->wbuf, (unsigned)sc->wbuf_len);
    int rc = uv_write(&sc->write_req, (uv_stream_t *)&sc->tcp, &b, 1, write_cb);
    if (rc < 0) {
        bench_fail(c->run, BENCH_EXIT_CONNECTION, "connection %u: write: %s", c->index, uv_strerror(rc));
        return;
    }
    sc->writing = true;
}

static void write_cb(uv_write_t *req, int status)
{
    slotd_conn *sc = req->data;
    sc->writing = false;
    if (status == UV_ECANCELED)
        return;
    if (status < 0) {
        bench_fail(sc->c->run, BENCH_EXIT_CONNECTION, "connection %u: write: %s", sc->c->index, uv_strerror(status));
        return;
    }
    slotd_flush(sc->c);
}

/* ---------------------------------------------------------------- reading */

static void alloc_cb(uv_handle_t *h, size_t suggested, uv_buf_t *buf)
{
    (void)suggested;
    slotd_conn *sc = h->data;
    *buf = uv_buf_init(sc->in + sc->in_len, (unsigned)(sizeof(sc->in) - sc->in_len));
}

/* The answer to our hello: the connection is up once it is ok. */
static void hello_answer(slotd_conn *sc, const char *line, size_t len)
{
    bench_result r;
    sc->hello_pending = false;
    if (bench_parse_slotd_reply(line, len, &r) < 0 || !r.ok) {
        bench_fail(sc->c->run, BENCH_EXIT_FAILED, "hello: %s", r.text[0] ? r.text : "refused");
        return;
    }
    bench_conn_up(sc->c);
}

static void one_line(slotd_conn *sc, const char *line, size_t len, uint64_t now_ns)
{
    if (sc->hello_pending) {
        hello_answer(sc, line, len);
        return;
    }
    bench_result r;
    if (bench_parse_slotd_reply(line, len, &r) < 0) {
        bench_fail(sc->c->run, BENCH_EXIT_FAILED, "connection %u: not a reply: %.*s", sc->c->index,
                   (int)(len > 100 ? 100 : len), line);
        return;
    }
    bench_deliver(sc->c, &r, now_ns);
}

static void read_cb(uv_stream_t *s, ssize_t nread, const uv_buf_t *buf)
{
    (void)buf;
    slotd_conn *sc = s->data;
    bench_run *run = sc->c->run;
    if (nread == 0)
        return;
    if (nread < 0) {
        bench_fail(run, BENCH_EXIT_CONNECTION, "connection %u: %s", sc->c->index,
                   nread == UV_EOF       ? "the server closed the connection"
                   : nread == UV_ENOBUFS ? "a reply line longer than the read buffer"
                                         : uv_strerror((int)nread));
        return;
    }
    sc->in_len += (size_t)nread;
    uint64_t now_ns = uv_hrtime();
    size_t pos = 0;
    char *nl;
    while (!run->fatal[0] && (nl = memchr(sc->in + pos, '\n', sc->in_len - pos)) != NULL) {
        size_t len = (size_t)(nl - (sc->in + pos));
        one_line(sc, sc->in + pos, len > 0 && nl[-1] == '\r' ? len - 1 : len, now_ns);
        pos += len + 1;
    }
    if (run->fatal[0])
        return;
    memmove(sc->in, sc->in + pos, sc->in_len - pos);
    sc->in_len -= pos;
    bench_turn_end(run);
}

static void connect_cb(uv_connect_t *req, int status)
{
    slotd_conn *sc = req->data;
    bench_conn *c = sc->c;
    if (status == UV_ECANCELED)
        return;
    if (status < 0) {
        bench_fail(c->run, BENCH_EXIT_CONNECTION, "connection %u: cannot connect: %s", c->index, uv_strerror(status));
        return;
    }
    uv_tcp_nodelay(&sc->tcp, 1);
    int rc = uv_read_start((uv_stream_t *)&sc->tcp, alloc_cb, read_cb);
    if (rc < 0) {
        bench_fail(c->run, BENCH_EXIT_CONNECTION, "connection %u: read: %s", c->index, uv_strerror(rc));
        return;
    }
    const char *token = c->run->cfg->token;
    if (!token) {
        bench_conn_up(c);
        return;
    }
    slot_req hello;
    slot_req_init(&hello, SLOT_OP_HELLO);
    long n = slot_req_set_token(&hello, token) < 0 ? -1 : slot_req_encode(&hello, sc->out, sc->out_cap);
    if (n < 0 || (size_t)n >= sc->out_cap) {
        bench_fail(c->run, BENCH_EXIT_USAGE, "--token: longer than %d bytes", SLOT_TOKEN_BYTES_MAX);
        return;
    }
    sc->out_len = (size_t)n;
    sc->hello_pending = true;
    slotd_flush(c);
}

/* ---------------------------------------------------------------- open and close */

static const struct sockaddr_storage *admin_peer(const bench_admin *a);

static int slotd_open(bench_run *run)
{
    /* Where the admin connection got through: a name like "localhost" may resolve
     * to several addresses, and the load must go where the server listens. */
    memcpy(&run->addr, admin_peer(run->admin), sizeof(run->addr));
    uint32_t depth = run->cfg->pipeline > BENCH_VERIFY_PIPELINE ? run->cfg->pipeline : BENCH_VERIFY_PIPELINE;
    for (uint32_t i = 0; i < run->nconns; i++) {
        bench_conn *c = &run->conns[i];
        slotd_conn *sc = calloc(1, sizeof(*sc));
        size_t cap = (size_t)depth * BENCH_REQ_BYTES + SLOTD_HELLO_BYTES;
        if (!sc || !(sc->out = malloc(cap)) || !(sc->wbuf = malloc(cap))) {
            if (sc)
                free(sc->out);
            free(sc);
            bench_fail(run, BENCH_EXIT_FAILED, "out of memory for connection %u", i);
            return -1;
        }
        sc->out_cap = cap;
        sc->c = c;
        c->drv = sc;
        uv_tcp_init(&run->loop, &sc->tcp);
        sc->tcp.data = sc->connect_req.data = sc->write_req.data = sc;
        int rc = uv_tcp_connect(&sc->connect_req, &sc->tcp, (struct sockaddr *)&run->addr, connect_cb);
        if (rc < 0) {
            bench_fail(run, BENCH_EXIT_CONNECTION, "connection %u: cannot connect: %s", i, uv_strerror(rc));
            return -1;
        }
    }
    return 0;
}

static void conn_closed(uv_handle_t *h)
{
    slotd_conn *sc = h->data;
    free(sc->out);
    free(sc->wbuf);
    free(sc);
}

static void slotd_close(bench_run *run)
{
    for (uint32_t i = 0; i < run->nconns; i++) {
        slotd_conn *sc = run->conns[i].drv;
        if (sc && !uv_is_closing((uv_handle_t *)&sc->tcp))
            uv_close((uv_handle_t *)&sc->tcp, conn_closed);
        run->conns[i].drv = NULL;
    }
}

/* ---------------------------------------------------------------- administration (blocking) */

struct bench_admin {
    slot_client *c;
    const bench_config *cfg;
    json_t *hello;
    struct sockaddr_storage peer;       /* the address the connection reached */
};

static const struct sockaddr_storage *admin_peer(const bench_admin *a)
{
    return &a->peer;
}

static int admin_connect(bench_admin *a, char *err, size_t errlen);

/* One call; 0 on an ok reply, else an exit status and err. r must be cleared by the caller.
 * The admin connection sits idle through the load, and slotd closes connections idle past
 * its --idle-timeout-ms: a connection found closed is opened again, once. */
static int call(bench_admin *a, const char *what, const slot_req *req, slot_reply *r, char *err, size_t errlen)
{
    memset(r, 0, sizeof(*r));
    int rc = slot_client_call(a->c, req, r, BENCH_CALL_TIMEOUT_MS);
    if ((rc == -ECONNRESET || rc == -EPIPE) && req->op != SLOT_OP_HELLO) {
        slot_reply_clear(r);
        slot_client_close(a->c);
        a->c = NULL;
        int crc = admin_connect(a, err, errlen);
        if (crc)
            return crc;
        memset(r, 0, sizeof(*r));
        rc = slot_client_call(a->c, req, r, BENCH_CALL_TIMEOUT_MS);
    }
    if (rc < 0) {
        snprintf(err, errlen, "%s: %s", what, rc == -ECONNRESET ? "the server closed the connection" : strerror(-rc));
        return BENCH_EXIT_CONNECTION;
    }
    if (!r->ok) {
        snprintf(err, errlen, "%s: %s: %s", what, r->error, r->message);
        return BENCH_EXIT_FAILED;
    }
    return 0;
}

/* Connect and say hello (with the token when there is one); keeps hello's reply. */
static int admin_connect(bench_admin *a, char *err, size_t errlen)
{
    const bench_config *cfg = a->cfg;
    int rc = slot_client_connect(cfg->host, cfg->port, BENCH_CONNECT_TIMEOUT_MS, &a->c);
    if (rc < 0) {
        snprintf(err, errlen, "cannot connect to slotd at %s:%u: %s", cfg->host, (unsigned)cfg->port,
                 rc == -ENXIO ? "host name not found" : strerror(-rc));
        a->c = NULL;
        return BENCH_EXIT_CONNECTION;
    }
    socklen_t plen = sizeof(a->peer);
    if (getpeername(slot_client_fd(a->c), (struct sockaddr *)&a->peer, &plen) < 0) {
        snprintf(err, errlen, "getpeername: %s", strerror(errno));
        return BENCH_EXIT_CONNECTION;
    }
    slot_req req;
    slot_reply r;
    slot_req_init(&req, SLOT_OP_HELLO);
    if (cfg->token && slot_req_set_token(&req, cfg->token) < 0) {
        snprintf(err, errlen, "--token: longer than %d bytes", SLOT_TOKEN_BYTES_MAX);
        return BENCH_EXIT_USAGE;
    }
    if ((rc = call(a, "hello", &req, &r, err, errlen)) == 0 && !a->hello) {
        a->hello = json_loads(r.line, 0, NULL);
        json_object_del(a->hello, "ok");
    }
    slot_reply_clear(&r);
    return rc;
}

static void slotd_admin_close(bench_admin *a)
{
    if (!a)
        return;
    slot_client_close(a->c);
    json_decref(a->hello);
    free(a);
}

static int slotd_admin_open(const bench_config *cfg, bench_admin **out, char *err, size_t errlen)
{
    bench_admin *a = calloc(1, sizeof(*a));
    if (!a) {
        snprintf(err, errlen, "out of memory");
        return BENCH_EXIT_FAILED;
    }
    a->cfg = cfg;
    int rc = admin_connect(a, err, errlen);
    if (rc) {
        slotd_admin_close(a);
        return rc;
    }
    *out = a;
    return 0;
}

static int slotd_server_info(bench_admin *a, json_t **info, char *err, size_t errlen)
{
    (void)err;
    (void)errlen;
    *info = a->hello ? json_deep_copy(a->hello) : json_object();
    return 0;
}

/* A call whose reply is an event's view (create_event, event): into v. 0 or an exit status. */
static int view_call(bench_admin *a, const char *what, const slot_req *req, bench_view *v, char *err, size_t errlen)
{
    slot_reply r;
    int rc = call(a, what, req, &r, err, errlen);
    if (rc == 0) {
        v->capacity = r.capacity;
        v->available = r.available;
        v->held = r.held;
        v->confirmed = r.confirmed;
        v->opens_at_ms = r.opens_at_ms;
        snprintf(v->status, sizeof(v->status), "%s", r.status);
    }
    slot_reply_clear(&r);
    return rc;
}

static int slotd_create_event(bench_admin *a, const bench_event_spec *s, bench_view *v, char *err, size_t errlen)
{
    slot_req req;
    slot_req_event(&req, SLOT_OP_CREATE_EVENT, s->name);
    req.capacity = s->capacity;
    req.shards = s->shards;
    req.hold_ttl_ms = s->hold_ttl_ms;
    req.max_per_user = s->max_per_user;
    req.max_per_request = s->max_per_request;
    req.has |= SLOT_HAS_SHARDS | SLOT_HAS_HOLD_TTL | SLOT_HAS_MAX_PER_USER | SLOT_HAS_MAX_PER_REQUEST;
    if (s->opens_at_ms)
        slot_req_set_window(&req, s->opens_at_ms, 0);
    return view_call(a, "create_event", &req, v, err, errlen);
}

static int slotd_event(bench_admin *a, const char *event, bench_view *v, char *err, size_t errlen)
{
    slot_req req;
    slot_req_event(&req, SLOT_OP_EVENT, event);
    return view_call(a, "event", &req, v, err, errlen);
}

static int slotd_check(bench_admin *a, const char *event, uint32_t *violations, char *detail, size_t detlen)
{
    slot_req req;
    slot_req_event(&req, SLOT_OP_CHECK, event);
    slot_reply r;
    int rc = call(a, "check", &req, &r, detail, detlen);
    if (rc == 0) {
        *violations = r.nviolations;
        snprintf(detail, detlen, "%s", r.nviolations ? r.line : "");
    }
    slot_reply_clear(&r);
    return rc;
}

static int slotd_expire(bench_admin *a, const char *event, uint64_t *expired, char *err, size_t errlen)
{
    (void)event; /* slotd's expire runs the sweeper over every event */
    slot_req req;
    slot_req_init(&req, SLOT_OP_EXPIRE);
    slot_reply r;
    int rc = call(a, "expire", &req, &r, err, errlen);
    if (rc == 0)
        *expired = r.expired;
    slot_reply_clear(&r);
    return rc;
}

static int slotd_stats(bench_admin *a, json_t **stats, char *err, size_t errlen)
{
    slot_req req;
    slot_req_init(&req, SLOT_OP_STATS);
    slot_reply r;
    int rc = call(a, "stats", &req, &r, err, errlen);
    *stats = NULL;
    if (rc == 0 && !(*stats = json_loads(r.line, 0, NULL))) {
        snprintf(err, errlen, "stats: the reply is not JSON");
        rc = BENCH_EXIT_FAILED;
    }
    json_object_del(*stats, "ok");
    slot_reply_clear(&r);
    return rc;
}

const bench_driver bench_driver_slotd = {
    .name = "slotd",
    .open = slotd_open,
    .send = slotd_send,
    .flush = slotd_flush,
    .close = slotd_close,
    .admin_open = slotd_admin_open,
    .admin_close = slotd_admin_close,
    .server_info = slotd_server_info,
    .create_event = slotd_create_event,
    .event = slotd_event,
    .check = slotd_check,
    .expire = slotd_expire,
    .stats = slotd_stats,
};
