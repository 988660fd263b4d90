/*
 * drv_slotd.c — the slotd target's load: newline-delimited JSON over libuv
 * TCP (docs/protocol.md), following a replica set's primary. Administration
 * is drv_slotd_admin.c, the reply parser drv_slotd_parse.c.
 *
 * The load writes hold lines directly (drv_slotd_encode.c: event names are
 * plain [A-Za-z0-9._:-], user and key names are ours) and encodes the other
 * ops with slot_req_encode.
 *
 * Following: every connection goes to the run's target (slotd_state). A
 * request answered not_primary or unavailable, a connection closed or
 * refused, or requests in flight without a reply for BENCH_FOLLOW_REPLY_MS
 * make the connection close and open again — on the primary that
 * not_primary named, else on the next --host — after a backoff; once it is
 * up, the requests it had in flight are sent again from the engine's ring,
 * with the same request keys, so the ledger sees each key once (a replay
 * when the first send had committed). The target moves once per generation:
 * 256 connections meeting the same failover move it once, not 256 times.
 * Each connection gives up (the run fails) after BENCH_FOLLOW_ATTEMPTS_MAX
 * reconnects or BENCH_FOLLOW_DEADLINE_MS without an answer.
 *
 * --placement (several replica sets): connection i belongs to set i % sets and
 * goes to that set's primary (its own target, moved only by a not_primary that
 * names the set's new primary); the workload gives it only that set's events.
 */
#include <errno.h>
#include <inttypes.h>
#include <netdb.h>
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

#define SLOTD_IN_BYTES (64u << 10) /* per connection; a reply line is ~100-250 bytes */
#define SLOTD_HELLO_BYTES 2048     /* a hello line with the longest token */
#define ADDR_CAP (SLOT_CLIENT_ADDR_BYTES_MAX + 1)

/* Where the load goes (run->drv_state). */
typedef struct slotd_state {
    char node[ADDR_CAP];  /* "H:P" of run->addr */
    uint32_t idx;         /* cfg->hosts index to move on from */
    uint64_t gen;         /* raised by every move */
    char acked[BENCH_SETS_MAX][ADDR_CAP]; /* the node of the last acknowledged write, per set (--placement) */
    uv_timer_t tick;      /* the silence detector */
    /* --placement: each set's primary, where its connections go */
    struct sockaddr_storage set_addr[BENCH_SETS_MAX];
    char set_node[BENCH_SETS_MAX][ADDR_CAP];
} slotd_state;

typedef struct slotd_conn {
    uv_tcp_t *tcp; /* NULL while closed; a new one for each connect */
    uv_connect_t connect_req;
    uv_write_t write_req, hello_req;
    uv_timer_t retry; /* the pause before a reconnect */
    bench_conn *c;
    bool writing, hello_pending;
    bool ready;          /* connected (and hello answered): requests may go out */
    bool closing;        /* slotd_close: free once `handles` are closed */
    int handles;         /* while closing: handles whose close callback is still to come */
    uint64_t gen;        /* the state's gen when this connection was opened */
    uint8_t set;         /* --placement: the replica set it sells on (run->nsets > 1) */
    char node[ADDR_CAP]; /* where it was opened */
    uint64_t wait_ns;    /* since when the oldest request in flight waits */
    uint32_t lost;       /* requests in flight when it was cut: sent again on reconnect */
    uint32_t fails, backoff_ms, delay_ms;
    uint64_t fail_since_ns;
    char *out, *wbuf; /* queued / being written; swapped on each write */
    size_t out_len, wbuf_len, out_cap;
    size_t in_len;
    char hello[SLOTD_HELLO_BYTES];
    char in[SLOTD_IN_BYTES];
} slotd_conn;

/* ---------------------------------------------------------------- requests */

/* confirm / release / get_hold / extend of ledger entry t->key, through the client codec:
 * a confirm with the ticket's flags (qty for a partial one, reacquire for a late payment),
 * an extend by run->cfg->hold_ttl_ms. */
static long encode_hold_op(const bench_run *run, const bench_ticket *t, char *buf, size_t cap)
{
    static const slot_op ops[] = {[BENCH_OP_CONFIRM] = SLOT_OP_CONFIRM,
                                  [BENCH_OP_RELEASE] = SLOT_OP_RELEASE,
                                  [BENCH_OP_GET_HOLD] = SLOT_OP_GET_HOLD,
                                  [BENCH_OP_EXTEND] = SLOT_OP_EXTEND};
    const bench_hold *h = &run->ledger.holds[t->key];
    char id[SLOT_HOLD_ARG_BYTES_MAX + 1], user[32];
    memcpy(id, bench_ledger_id(&run->ledger, t->key), h->id_len);
    id[h->id_len] = 0;
    bench_user_name(h->user, user, sizeof(user));
    slot_req req;
    const char *ev = run->events[h->event].name;
    if (t->op == BENCH_OP_EXTEND ? slot_req_extend(&req, ev, id, user, run->cfg->hold_ttl_ms) < 0
                                 : slot_req_hold_op(&req, ops[t->op], ev, id, user) < 0)
        return -1;
    if (t->op == BENCH_OP_CONFIRM && (t->flags & BENCH_TICKET_PARTIAL))
        slot_req_set_confirm_qty(&req, t->qty);
    if (t->op == BENCH_OP_CONFIRM && (t->flags & BENCH_TICKET_REACQUIRE))
        slot_req_set_reacquire(&req, true);
    return slot_req_encode(&req, buf, cap);
}

/* waitlist_join (qty t->qty), waitlist or waitlist_leave of ("u<user>", "r<key>") on t's event, through the client codec. */
static long encode_wait_op(const bench_run *run, const bench_ticket *t, char *buf, size_t cap)
{
    static const slot_op ops[] = {[BENCH_OP_WAIT_JOIN] = SLOT_OP_WAITLIST_JOIN,
                                  [BENCH_OP_WAIT_STATUS] = SLOT_OP_WAITLIST,
                                  [BENCH_OP_WAIT_LEAVE] = SLOT_OP_WAITLIST_LEAVE};
    char user[32], key[32];
    bench_user_name(t->user, user, sizeof(user));
    bench_key_name(t->key, key, sizeof(key));
    slot_req req;
    if (slot_req_waitlist(&req, ops[t->op], run->events[t->event].name, user, key, t->qty) < 0)
        return -1;
    return slot_req_encode(&req, buf, cap);
}

/* The ping scenario's request: a hello (with the run's token, which keeps the connection's role);
 * read-only, answered on slotd's loop thread without the store. */
static long encode_ping(const bench_run *run, char *buf, size_t cap)
{
    slot_req req;
    slot_req_init(&req, SLOT_OP_HELLO);
    if (run->cfg->token && slot_req_set_token(&req, run->cfg->token) < 0)
        return -1;
    return slot_req_encode(&req, buf, cap);
}

static int slotd_send(bench_conn *c, const bench_ticket *t)
{
    slotd_conn *sc = c->drv;
    size_t room = sc->out_cap - sc->out_len;
    if (room < bench_slotd_req_bytes(c->run->cfg, t))
        return -1;
    char *dst = sc->out + sc->out_len;
    bool wait = t->op == BENCH_OP_WAIT_JOIN || t->op == BENCH_OP_WAIT_STATUS || t->op == BENCH_OP_WAIT_LEAVE;
    long n = t->op == BENCH_OP_PING   ? encode_ping(c->run, dst, room)
             : wait                   ? encode_wait_op(c->run, t, dst, room)
             : t->op != BENCH_OP_HOLD ? encode_hold_op(c->run, t, dst, room)
             : t->cart > 1            ? (long)bench_slotd_encode_cart(c->run, t, dst)
                                      : (long)bench_slotd_encode_hold(c->run, t, dst);
    if (n < 0 || (size_t)n >= room)
        return -1;
    if (c->inflight == 0)
        sc->wait_ns = uv_hrtime(); /* the first request in flight: the wait for a reply starts */
    sc->out_len += (size_t)n;
    return 0;
}

static void write_cb(uv_write_t *req, int status);

static void slotd_flush(bench_conn *c)
{
    slotd_conn *sc = c->drv;
    if (sc->writing || sc->out_len == 0 || !sc->ready)
        return; /* not ready: the requests wait, and go out when the connection is up again */
    char *tmp = sc->wbuf;
    sc->wbuf = sc->out;
    sc->wbuf_len = sc->out_len;
    sc->out = tmp;
    sc->out_len = 0;
    uv_buf_t b = uv_buf_init(sc->wbuf, (unsigned)sc->wbuf_len);
    int rc = uv_write(&sc->write_req, (uv_stream_t *)sc->tcp, &b, 1, write_cb);
    if (rc < 0) {
        bench_fail(c->run, BENCH_EXIT_CONNECTION, "connection %u: write: %s", c->index, uv_strerror(rc));
        return;
    }
    sc->writing = true;
}

static void reroute(slotd_conn *sc, const char *primary, const char *why);

static void write_cb(uv_write_t *req, int status)
{
    slotd_conn *sc = req->data;
    sc->writing = false;
    if (status == UV_ECANCELED || !sc->ready)
        return;
    if (status < 0) {
        reroute(sc, NULL, uv_strerror(status));
        return;
    }
    slotd_flush(sc->c);
}

/* ---------------------------------------------------------------- following the primary */

/* addr ("H:P") resolved (numeric or by name) into *out. false when it does not. */
static bool resolve(const char *addr, struct sockaddr_storage *out)
{
    char host[ADDR_CAP], port[8];
    uint16_t p;
    if (slot_addr_split(addr, strlen(addr), host, sizeof(host), &p) < 0)
        return false;
    snprintf(port, sizeof(port), "%u", (unsigned)p);
    struct addrinfo hints = {.ai_socktype = SOCK_STREAM, .ai_flags = AI_NUMERICSERV}, *res = NULL;
    if (getaddrinfo(host, port, &hints, &res) != 0 || !res)
        return false;
    memcpy(out, res->ai_addr, res->ai_addrlen);
    freeaddrinfo(res);
    return true;
}

/* Point the run at addr ("H:P"). false when it does not resolve. */
static bool set_target(bench_run *run, const char *addr)
{
    slotd_state *st = run->drv_state;
    if (!resolve(addr, &run->addr))
        return false;
    snprintf(st->node, sizeof(st->node), "%s", addr);
    for (uint32_t i = 0; i < run->cfg->nhosts; i++)
        if (strcmp(run->cfg->hosts[i], addr) == 0)
            st->idx = i;
    st->gen++;
    return true;
}

/* Move the target on: to primary when named and new, else (once per
 * generation) to the next --host that resolves. Returns true when it went
 * straight to a named primary. */
static bool move_target(slotd_conn *sc, const char *primary)
{
    bench_run *run = sc->c->run;
    slotd_state *st = run->drv_state;
    if (run->nsets > 1) { /* --placement: the set's own primary, when a not_primary names a new one */
        if (primary && primary[0] && strcmp(primary, st->set_node[sc->set]) != 0 &&
            resolve(primary, &st->set_addr[sc->set])) {
            snprintf(st->set_node[sc->set], sizeof(st->set_node[0]), "%s", primary);
            return true;
        }
        return primary && primary[0] && strcmp(primary, st->set_node[sc->set]) == 0;
    }
    if (primary && primary[0] && strcmp(primary, st->node) != 0 && set_target(run, primary))
        return true;
    if (primary && primary[0] && strcmp(primary, st->node) == 0 && sc->gen != st->gen)
        return true; /* another connection moved there already */
    if (sc->gen != st->gen)
        return false;
    for (uint32_t k = 1; k <= run->cfg->nhosts; k++)
        if (set_target(run, run->cfg->hosts[(st->idx + k) % run->cfg->nhosts]))
            return false;
    return false;
}

static void tcp_closed(uv_handle_t *h);

/* The connection lost its node (why: for the message when it gives up):
 * close it, and open it again after a pause, bounded by count and time. */
static void reroute(slotd_conn *sc, const char *primary, const char *why)
{
    bench_conn *c = sc->c;
    bench_run *run = c->run;
    if (!sc->tcp || uv_is_closing((uv_handle_t *)sc->tcp) || run->fatal[0])
        return;
    uint64_t now = uv_hrtime();
    if (sc->fails++ == 0)
        sc->fail_since_ns = now;
    uint64_t spent_ms = (now - sc->fail_since_ns) / 1000000u;
    if (sc->fails > BENCH_FOLLOW_ATTEMPTS_MAX || spent_ms > BENCH_FOLLOW_DEADLINE_MS) {
        bench_fail(run, BENCH_EXIT_CONNECTION,
                   "connection %u: gave up following the primary after %u reconnects in %" PRIu64 " ms; last: %s: %s",
                   c->index, sc->fails - 1, spent_ms, sc->node, why);
        return;
    }
    bool direct = move_target(sc, primary);
    sc->delay_ms = direct && sc->fails == 1 ? 0 : sc->backoff_ms;
    sc->backoff_ms = sc->backoff_ms * 2 > BENCH_FOLLOW_BACKOFF_MAX_MS ? BENCH_FOLLOW_BACKOFF_MAX_MS
                                                                      : sc->backoff_ms * 2;
    if (sc->ready || sc->hello_pending)
        sc->lost = c->inflight; /* each may have reached the node: all go again */
    sc->ready = sc->hello_pending = false;
    sc->in_len = 0;
    uv_close((uv_handle_t *)sc->tcp, tcp_closed);
}

/* The connection is up (and authenticated): first time, tell the engine;
 * after a reconnect, send every request in flight again, in ring order. */
static void conn_ready(slotd_conn *sc)
{
    bench_conn *c = sc->c;
    bench_run *run = c->run;
    sc->ready = true;
    sc->out_len = 0; /* what was queued meanwhile is in the ring: it goes below */
    if (!c->up) {
        bench_conn_up(c);
        return;
    }
    for (uint32_t i = 0; i < c->inflight; i++) {
        bench_ticket *t = &c->ring[(c->head + i) % c->ring_cap];
        if (i < sc->lost) {
            t->tries = t->tries < UINT8_MAX ? (uint8_t)(t->tries + 1) : UINT8_MAX;
            run->retries++;
        }
        if (slotd_send(c, t) < 0) {
            bench_fail(run, BENCH_EXIT_FAILED, "connection %u: a request did not fit its buffer", c->index);
            return;
        }
    }
    sc->lost = 0;
    sc->wait_ns = uv_hrtime();
    slotd_flush(c);
}

/* A write was acknowledged on sc: a new node of the same replica set doing
 * so is a failover seen (each set of a placement has its own primary). */
static void acked(slotd_conn *sc)
{
    bench_run *run = sc->c->run;
    slotd_state *st = run->drv_state;
    char *last = st->acked[run->nsets > 1 ? sc->set : 0];
    if (strcmp(last, sc->node) == 0)
        return;
    if (last[0])
        run->failovers++;
    snprintf(last, ADDR_CAP, "%s", sc->node);
}

/* The silence detector: requests in flight and no reply for BENCH_FOLLOW_REPLY_MS. */
static void tick_cb(uv_timer_t *t)
{
    bench_run *run = t->data;
    uint64_t now = uv_hrtime();
    for (uint32_t i = 0; i < run->nconns && !run->fatal[0]; i++) {
        slotd_conn *sc = run->conns[i].drv;
        if (sc && sc->ready && run->conns[i].inflight > 0 && now - sc->wait_ns > BENCH_FOLLOW_REPLY_MS * 1000000ull)
            reroute(sc, NULL, "no reply in time");
    }
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
    if (bench_parse_slotd_reply(line, len, &r) == 0 && !r.ok &&
        (r.err == SLOT_E_NOT_PRIMARY || r.err == SLOT_E_UNAVAILABLE)) {
        reroute(sc, r.primary, r.text);
        return;
    }
    if (!r.ok) {
        bench_fail(sc->c->run, BENCH_EXIT_FAILED, "hello: %s", r.text[0] ? r.text : "refused");
        return;
    }
    conn_ready(sc);
}

/* One reply line. false: the connection was cut (the rest of its input is void). */
static bool one_line(slotd_conn *sc, const char *line, size_t len, uint64_t now_ns)
{
    if (sc->hello_pending) {
        hello_answer(sc, line, len);
        return sc->ready;
    }
    bench_result r;
    static const char ok_head[] = "{\"ok\":true,";
    bench_conn *hc = sc->c;
    if (hc->inflight > 0 && hc->ring[hc->head].op == BENCH_OP_PING && len > sizeof(ok_head) &&
        memcmp(line, ok_head, sizeof(ok_head) - 1) == 0 && line[len - 1] == '}') {
        bench_result_clear(&r); /* a hello's answer: only whether it is ok matters (its features are nested) */
        r.ok = true;
    } else if (bench_parse_slotd_reply(line, len, &r) < 0) {
        bench_fail(sc->c->run, BENCH_EXIT_FAILED, "connection %u: not a reply: %.*s", sc->c->index,
                   (int)(len > 100 ? 100 : len), line);
        return false;
    }
    if (!r.ok && (r.err == SLOT_E_NOT_PRIMARY || r.err == SLOT_E_UNAVAILABLE)) {
        reroute(sc, r.primary, r.text[0] ? r.text : slot_err_name(r.err));
        return false;
    }
    sc->fails = 0;
    sc->backoff_ms = BENCH_FOLLOW_BACKOFF_MS;
    sc->wait_ns = now_ns;
    bench_conn *c = sc->c;
    if (r.ok && c->inflight > 0 && !bench_op_is_read(c->ring[c->head].op))
        acked(sc);
    bench_deliver(c, &r, now_ns);
    return true;
}

static void read_cb(uv_stream_t *s, ssize_t nread, const uv_buf_t *buf)
{
    (void)buf;
    slotd_conn *sc = s->data;
    bench_run *run = sc->c->run;
    if (nread == 0)
        return;
    if (nread < 0) {
        if (nread == UV_ENOBUFS)
            bench_fail(run, BENCH_EXIT_CONNECTION, "connection %u: a reply line longer than the read buffer",
                       sc->c->index);
        else
            reroute(sc, NULL, nread == UV_EOF ? "the server closed the connection" : uv_strerror((int)nread));
        return;
    }
    sc->in_len += (size_t)nread;
    uint64_t now_ns = uv_hrtime();
    size_t pos = 0;
    char *nl;
    while (!run->fatal[0] && (nl = memchr(sc->in + pos, '\n', sc->in_len - pos)) != NULL) {
        size_t len = (size_t)(nl - (sc->in + pos));
        if (!one_line(sc, sc->in + pos, len > 0 && nl[-1] == '\r' ? len - 1 : len, now_ns)) {
            bench_turn_end(run);
            return; /* cut: in_len is 0 again */
        }
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
    if (status == UV_ECANCELED || sc->closing)
        return;
    if (status < 0) {
        reroute(sc, NULL, uv_strerror(status));
        return;
    }
    uv_tcp_nodelay(sc->tcp, 1);
    int rc = uv_read_start((uv_stream_t *)sc->tcp, alloc_cb, read_cb);
    if (rc < 0) {
        reroute(sc, NULL, uv_strerror(rc));
        return;
    }
    const char *token = c->run->cfg->token;
    if (!token) {
        conn_ready(sc);
        return;
    }
    slot_req hello;
    slot_req_init(&hello, SLOT_OP_HELLO);
    long n = slot_req_set_token(&hello, token) < 0 ? -1 : slot_req_encode(&hello, sc->hello, sizeof(sc->hello));
    if (n < 0 || (size_t)n >= sizeof(sc->hello)) {
        bench_fail(c->run, BENCH_EXIT_USAGE, "--token: longer than %d bytes", SLOT_TOKEN_BYTES_MAX);
        return;
    }
    uv_buf_t b = uv_buf_init(sc->hello, (unsigned)n);
    sc->hello_pending = true;
    if ((rc = uv_write(&sc->hello_req, (uv_stream_t *)sc->tcp, &b, 1, NULL)) < 0)
        reroute(sc, NULL, uv_strerror(rc));
}

/* ---------------------------------------------------------------- open and close */

/* A new TCP handle for sc, connecting to the run's target. */
static void conn_open(slotd_conn *sc)
{
    bench_run *run = sc->c->run;
    slotd_state *st = run->drv_state;
    sc->tcp = malloc(sizeof(*sc->tcp));
    if (!sc->tcp) {
        bench_fail(run, BENCH_EXIT_FAILED, "out of memory for connection %u", sc->c->index);
        return;
    }
    uv_tcp_init(&run->loop, sc->tcp);
    sc->tcp->data = sc;
    sc->gen = st->gen;
    bool placed = run->nsets > 1;
    snprintf(sc->node, sizeof(sc->node), "%s", placed ? st->set_node[sc->set] : st->node);
    const struct sockaddr *to = placed ? (const struct sockaddr *)&st->set_addr[sc->set]
                                       : (const struct sockaddr *)&run->addr;
    int rc = uv_tcp_connect(&sc->connect_req, sc->tcp, to, connect_cb);
    if (rc < 0)
        reroute(sc, NULL, uv_strerror(rc));
}

static void retry_cb(uv_timer_t *t)
{
    conn_open(t->data);
}

static void conn_free(slotd_conn *sc)
{
    free(sc->out);
    free(sc->wbuf);
    free(sc);
}

static void retry_closed(uv_handle_t *h)
{
    slotd_conn *sc = h->data;
    if (--sc->handles == 0)
        conn_free(sc);
}

static void tcp_closed(uv_handle_t *h)
{
    slotd_conn *sc = h->data;
    free(h);
    sc->tcp = NULL;
    if (!sc->closing)
        uv_timer_start(&sc->retry, retry_cb, sc->delay_ms, 0);
    else if (--sc->handles == 0)
        conn_free(sc);
}

/* --placement: the sets' primaries and each event's set (run->nsets, events[].set). 0, or -1
 * with the run failed. */
static int placement_open(bench_run *run, slotd_state *st)
{
    uint32_t n = bench_slotd_admin_sets(run->admin);
    if (n <= 1)
        return 0; /* one set (or no --placement): the run's one target */
    if (n > run->cfg->events || n > run->nconns) {
        bench_fail(run, BENCH_EXIT_USAGE, "--placement: %u replica sets need at least %u events and connections", n, n);
        return -1;
    }
    for (uint32_t i = 0; i < n; i++) {
        const char *p = bench_slotd_admin_set_primary(run->admin, i);
        if (!resolve(p, &st->set_addr[i])) {
            bench_fail(run, BENCH_EXIT_CONNECTION, "--placement: set primary %s does not resolve", p);
            return -1;
        }
        snprintf(st->set_node[i], sizeof(st->set_node[i]), "%s", p);
    }
    for (uint32_t i = 0; i < run->nevents; i++) {
        int s = bench_slotd_admin_event_set(run->admin, run->events[i].name);
        if (s < 0) {
            bench_fail(run, BENCH_EXIT_FAILED, "--placement: event %s was not created by this run",
                       run->events[i].name);
            return -1;
        }
        run->events[i].set = (uint8_t)s;
    }
    run->nsets = n;
    return 0;
}

static int slotd_open(bench_run *run)
{
    slotd_state *st = calloc(1, sizeof(*st));
    if (!st) {
        bench_fail(run, BENCH_EXIT_FAILED, "out of memory");
        return -1;
    }
    run->drv_state = st;
    /* Where the admin connection got through (the primary): a name like "localhost" may
     * resolve to several addresses, and the load must go where the server listens. */
    memcpy(&run->addr, bench_slotd_admin_peer(run->admin), sizeof(run->addr));
    snprintf(st->node, sizeof(st->node), "%s", bench_slotd_admin_node(run->admin));
    for (uint32_t i = 0; i < run->cfg->nhosts; i++)
        if (strcmp(run->cfg->hosts[i], st->node) == 0)
            st->idx = i;
    if (placement_open(run, st) < 0)
        return -1;
    uv_timer_init(&run->loop, &st->tick);
    st->tick.data = run;
    uv_timer_start(&st->tick, tick_cb, BENCH_FOLLOW_TICK_MS, BENCH_FOLLOW_TICK_MS);
    uint32_t depth = run->cfg->pipeline > BENCH_VERIFY_PIPELINE ? run->cfg->pipeline : BENCH_VERIFY_PIPELINE;
    for (uint32_t i = 0; i < run->nconns; i++) {
        bench_conn *c = &run->conns[i];
        slotd_conn *sc = calloc(1, sizeof(*sc));
        size_t cap = (size_t)depth * bench_slotd_req_bytes(run->cfg, NULL);
        if (!sc || !(sc->out = malloc(cap)) || !(sc->wbuf = malloc(cap))) {
            if (sc)
                free(sc->out);
            free(sc);
            bench_fail(run, BENCH_EXIT_FAILED, "out of memory for connection %u", i);
            return -1;
        }
        sc->out_cap = cap;
        sc->c = c;
        sc->set = run->nsets > 1 ? (uint8_t)(i % run->nsets) : 0;
        sc->backoff_ms = BENCH_FOLLOW_BACKOFF_MS;
        c->drv = sc;
        sc->connect_req.data = sc->write_req.data = sc->hello_req.data = sc;
        uv_timer_init(&run->loop, &sc->retry);
        sc->retry.data = sc;
        conn_open(sc);
        if (run->fatal[0])
            return -1;
    }
    return 0;
}

static void state_closed(uv_handle_t *h)
{
    free(h->data);
}

static void slotd_close(bench_run *run)
{
    for (uint32_t i = 0; i < run->nconns; i++) {
        slotd_conn *sc = run->conns[i].drv;
        run->conns[i].drv = NULL;
        if (!sc)
            continue;
        sc->closing = true;
        sc->handles = sc->tcp ? 2 : 1; /* a tcp closing already (a reroute) calls tcp_closed too */
        uv_timer_stop(&sc->retry);
        if (sc->tcp && !uv_is_closing((uv_handle_t *)sc->tcp))
            uv_close((uv_handle_t *)sc->tcp, tcp_closed);
        uv_close((uv_handle_t *)&sc->retry, retry_closed);
    }
    slotd_state *st = run->drv_state;
    run->drv_state = NULL;
    if (st) {
        st->tick.data = st;
        uv_close((uv_handle_t *)&st->tick, state_closed);
    }
}

const bench_driver bench_driver_slotd = {
    .name = "slotd",
    .open = slotd_open,
    .send = slotd_send,
    .flush = slotd_flush,
    .close = slotd_close,
    .admin_open = bench_slotd_admin_open,
    .admin_close = bench_slotd_admin_close,
    .server_info = bench_slotd_server_info,
    .create_event = bench_slotd_create_event,
    .event = bench_slotd_event,
    .check = bench_slotd_check,
    .expire = bench_slotd_expire,
    .stats = bench_slotd_stats,
    .allocate = bench_slotd_allocate,
    .to_primary = bench_slotd_admin_to_primary,
    .node = bench_slotd_admin_node,
    .seat_map = bench_slotd_seat_map,
};
