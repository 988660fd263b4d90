/*
 * conn.c — connections (conn.h): libuv I/O, line framing, per-connection
 * limits and states, writing replies. A parsed line goes to admit.c's
 * router; the feed's subscriptions (feed_sub.c, which calls this file) are
 * reached through s->conn_up only.
 */
#include "conn.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "admit.h"
#include "loop.h"
#include "reads.h"
#include "slot/assert.h"
#include "slot/proto.h"

static const char *const conn_state_names[CONN__COUNT] = {
#define SLOT__CS_NAME(name, text) text,
    SLOT__CONN_STATE_MAP(SLOT__CS_NAME)
#undef SLOT__CS_NAME
};

const char *slot__conn_state_name(conn_state st)
{
    return (unsigned)st < CONN__COUNT ? conn_state_names[st] : "?";
}

bool slot__conn_state_ok(conn_state from, conn_state to)
{
    switch (from) {
    case CONN_OPEN:
        return to == CONN_DRAINING || to == CONN_CLOSING;
    case CONN_DRAINING:
        return to == CONN_CLOSING;
    default:
        return false; /* closing is final: the handle is being closed */
    }
}

/* The one place a connection changes state; an edge not in the machine is a
 * programmer error. */
static void conn_set_state(conn *c, conn_state to)
{
    if (!slot__conn_state_ok(c->state, to)) {
        fprintf(stderr, "slotd: connection state %s -> %s\n", slot__conn_state_name(c->state),
                slot__conn_state_name(to));
        SLOT_ASSERT(slot__conn_state_ok(c->state, to));
    }
    c->state = to;
}

static bool accept_one(server *s);
static void on_read(uv_stream_t *stream, ssize_t nread, const uv_buf_t *buf);
static void on_write(uv_write_t *req, int status);

static void conn_push(conn *c, entry *e)
{
    e->conn = c;
    e->next = NULL;
    if (c->tail)
        c->tail->next = e;
    else
        c->head = e;
    c->tail = e;
    c->pending++;
}

bool slot__conn_parse(server *s, conn *c, entry *e, const char *line, size_t len, ptrdiff_t byte_delta)
{
    char msg[sizeof(e->res.message)];
    slot_err err = slot_proto_parse_at(line, len, byte_delta, &e->req, msg, sizeof(msg));
    if (err != SLOT_E_OK) {
        s->stats.bad_lines++;
        if (s->auth.ntokens && c->role == SLOT_ROLE_NONE) {
            slot__count_error(s, SLOT_E_UNAUTHENTICATED);
            slot__conn_dropped(c, "unauthenticated", "its first line was not a hello");
            slot_res_error(&e->res, SLOT_E_UNAUTHENTICATED, "send hello with a valid token first");
            c->close_after_flush = true;
            return false;
        }
        slot__count_error(s, err);
        slot_res_error(&e->res, err, "%s", msg);
        return false;
    }
    e->parsed = true;
    return true;
}

/* Decides where a line goes: an answer now (errors), the write queue, or a
 * read that runs once the connection's earlier entries are answered. */
static void handle_line(server *s, conn *c, const char *line, size_t len)
{
    entry *e = slot__entry_get(s);
    if (!e) {
        slot__conn_dropped(c, "out_of_memory", "no memory for a request");
        slot__conn_close(c);
        return;
    }
    e->t0_ns = uv_hrtime();
    conn_push(c, e);
    e->state = ENTRY_DONE;
    if (slot__conn_parse(s, c, e, line, len, 0))
        slot__admit(s, c, e);
}

/* line_too_long: answered, then the connection closes (docs/protocol.md, "Framing"). */
static void line_too_long(server *s, conn *c)
{
    entry *e = slot__entry_get(s);
    c->partial_len = 0;
    c->close_after_flush = true;
    slot__conn_dropped(c, "line_too_long", "a line longer than --max-line");
    if (c->reading) {
        uv_read_stop((uv_stream_t *)&c->tcp);
        c->reading = false;
    }
    if (!e) {
        slot__conn_close(c);
        return;
    }
    e->t0_ns = uv_hrtime();
    conn_push(c, e);
    e->state = ENTRY_DONE;
    s->stats.bad_lines++;
    slot__count_error(s, SLOT_E_LINE_TOO_LONG);
    slot_res_error(&e->res, SLOT_E_LINE_TOO_LONG, "line longer than %u bytes", s->opts.line_bytes_max);
}

static bool partial_append(conn *c, const char *data, size_t n)
{
    if (c->partial_len + n > c->partial_cap) {
        size_t cap = c->partial_cap ? c->partial_cap : SLOT_PARTIAL_BYTES_INITIAL;
        while (cap < c->partial_len + n)
            cap *= 2;
        char *p = realloc(c->partial, cap);
        if (!p)
            return false;
        c->partial = p;
        c->partial_cap = cap;
    }
    memcpy(c->partial + c->partial_len, data, n);
    c->partial_len += n;
    return true;
}

/* Splits what was read into lines. Complete lines are parsed straight from
 * the read buffer; only an unfinished tail is copied, bounded by --max-line.
 * The bytes that count against --max-line are the line's without its \r\n;
 * a trailing \r without its \n yet may be the first half of that ending. */
static void conn_feed(server *s, conn *c, const char *data, size_t n)
{
    size_t max = s->opts.line_bytes_max;
    while (n > 0 && !c->close_after_flush && c->state == CONN_OPEN) {
        const char *nl = memchr(data, '\n', n);
        size_t seg = nl ? (size_t)(nl - data) : n;
        size_t total = c->partial_len + seg;
        char last = seg ? data[seg - 1] : (c->partial_len ? c->partial[c->partial_len - 1] : 0);
        if (total - (last == '\r' ? 1 : 0) > max) {
            line_too_long(s, c);
            return;
        }
        if (!nl) {
            if (c->partial_len == 0)
                c->partial_since_ms = uv_now(s->loop);
            if (!partial_append(c, data, seg))
                slot__conn_close(c);
            return;
        }
        const char *line = data;
        size_t len = seg;
        if (c->partial_len) {
            if (!partial_append(c, data, seg)) {
                slot__conn_close(c);
                return;
            }
            line = c->partial;
            len = c->partial_len;
        }
        if (len > 0 && line[len - 1] == '\r')
            len--;
        if (len > 0)
            handle_line(s, c, line, len);
        c->partial_len = 0;
        data = nl + 1;
        n -= seg + 1;
    }
}

static void on_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf)
{
    (void)suggested;
    conn *c = h->data;
    buf->base = c->srv->read_buf;
    buf->len = sizeof(c->srv->read_buf);
}

bool slot__conn_out_reserve(conn *c, size_t need)
{
    if (c->out_len + need <= c->out_cap)
        return true;
    size_t cap = c->out_cap ? c->out_cap : SLOT_OUT_BYTES_INITIAL;
    while (cap < c->out_len + need)
        cap *= 2;
    char *p = realloc(c->out, cap);
    if (!p)
        return false;
    c->out = p;
    c->out_cap = cap;
    return true;
}

bool slot__conn_encode(conn *c, const entry *e)
{
    for (int attempt = 0; attempt < 2; attempt++) {
        char *dst = c->out ? c->out + c->out_len : NULL; /* no arithmetic on a NULL buffer */
        size_t room = c->out_cap - c->out_len;
        size_t n = e->parsed ? slot_proto_encode(&e->req, &e->res, dst, room)
                             : slot_proto_encode_error(&e->req.id, e->res.err,
                                                       e->res.message[0] ? e->res.message : NULL, dst, room);
        if (n < room) {
            c->out_len += n;
            return true;
        }
        if (!slot__conn_out_reserve(c, n + 1))
            return false;
    }
    return false;
}

/* Writes what is collected: directly when the socket takes it all, else
 * through one uv_write with the buffers swapped so collecting goes on. */
static void conn_write(conn *c)
{
    if (c->writing || c->out_len == 0 || c->state != CONN_OPEN)
        return;
    uv_buf_t b = uv_buf_init(c->out, (unsigned)c->out_len);
    int n = uv_try_write((uv_stream_t *)&c->tcp, &b, 1);
    if (n == (int)c->out_len) {
        c->out_len = 0;
        return;
    }
    if (n < 0 && n != UV_EAGAIN) {
        slot__conn_close(c);
        return;
    }
    size_t done = n > 0 ? (size_t)n : 0;
    size_t rest = c->out_len - done;
    char *w = c->wbuf;
    size_t wcap = c->wbuf_cap;
    c->wbuf = c->out;
    c->wbuf_cap = c->out_cap;
    c->out = w;
    c->out_cap = wcap;
    c->out_len = 0;
    memmove(c->wbuf, c->wbuf + done, rest);
    b = uv_buf_init(c->wbuf, (unsigned)rest);
    c->writing = true;
    c->write_since_ms = uv_now(c->srv->loop);
    c->wreq.data = c;
    if (uv_write(&c->wreq, (uv_stream_t *)&c->tcp, &b, 1, on_write) != 0) {
        c->writing = false;
        slot__conn_close(c);
    }
}

/* Reading pauses while a connection has too many unanswered requests or
 * too many unsent reply bytes (docs/protocol.md, "Limits": slowed, never refused). */
void slot__conn_pace(conn *c)
{
    server *s = c->srv;
    if (c->state != CONN_OPEN || c->close_after_flush || s->stopping)
        return;
    bool starved = s->pool.live >= SLOT_ENTRIES_MAX;
    bool full = starved || c->pending >= s->opts.conn_inflight_max || c->out_len > s->opts.out_bytes_max;
    s->pool.mem_paused = s->pool.mem_paused || (starved && c->reading);
    if (full && c->reading) {
        uv_read_stop((uv_stream_t *)&c->tcp);
        c->reading = false;
        s->stats.reads_paused++;
    } else if (!full && !c->reading && c->pending <= s->opts.conn_inflight_max / 2) {
        if (uv_read_start((uv_stream_t *)&c->tcp, on_alloc, on_read) == 0)
            c->reading = true;
    }
}

static void on_write(uv_write_t *req, int status)
{
    conn *c = req->data;
    c->writing = false;
    if (status < 0) {
        slot__conn_close(c);
        return;
    }
    slot__conn_flush(c);
}

/* Answers the connection's entries in request order, as far as they are
 * answered: a read runs when it reaches the head, a queued write stops it. */
void slot__conn_flush(conn *c)
{
    server *s = c->srv;
    uint64_t now_ns = uv_hrtime();
    while (c->head && c->state == CONN_OPEN) {
        entry *e = c->head;
        if (e->state == ENTRY_READ_WAIT)
            slot__run_read(s, e);
        if (e->state != ENTRY_DONE)
            break;
        s->conn_up.feed_answered(c, e);
        if (s->clu && s->clu_up->place_answered &&
            (e->place_step || e->res.err == SLOT_E_UNKNOWN_EVENT || e->res.err == SLOT_E_WRONG_SET))
            s->clu_up->place_answered(s, e); /* --placement: a refused create's map entry goes; redirects */
        if (!slot__conn_encode(c, e)) {
            slot__conn_dropped(c, "out_of_memory", "no memory for a reply");
            slot__conn_close(c);
            return;
        }
        slot_hist_record(s->stats.latency_us, (now_ns - e->t0_ns) / 1000u);
        slot__count_reply(s, e);
        c->head = e->next;
        if (!c->head)
            c->tail = NULL;
        SLOT_ASSERT(c->pending > 0);
        c->pending--;
        SLOT_ASSERT((c->pending == 0) == (c->head == NULL)); /* pending counts the FIFO */
        slot__entry_put(s, e);
    }
    if (c->state != CONN_OPEN)
        return;
    /* Pushes (feed_sub.c) go after the answers, one output limit at a time,
     * for as long as the socket takes them at once: at most the consumer's
     * window of entries, so the loop is bounded. */
    for (;;) {
        size_t before = c->out_len;
        s->conn_up.feed_fill(c);
        bool pushed = c->out_len > before;
        conn_write(c);
        if (!pushed || c->writing || c->out_len > 0 || c->state != CONN_OPEN)
            break;
    }
    if (c->state != CONN_OPEN)
        return;
    if (c->close_after_flush && !c->head && c->out_len == 0) {
        slot__conn_drain(c);
        return;
    }
    slot__conn_pace(c);
}

static void on_read(uv_stream_t *stream, ssize_t nread, const uv_buf_t *buf)
{
    conn *c = stream->data;
    if (nread < 0) {
        slot__conn_close(c); /* EOF or reset: what was committed stays committed */
        return;
    }
    if (c->state != CONN_OPEN)
        return; /* draining: input after the last answer is discarded */
    c->last_read_ms = uv_now(c->srv->loop);
    if (nread == 0)
        return;
    conn_feed(c->srv, c, buf->base, (size_t)nread);
    if (c->state == CONN_OPEN)
        slot__conn_flush(c);
}

static void on_conn_closed(uv_handle_t *h)
{
    conn *c = h->data;
    server *s = c->srv;
    /* Entries still queued for a batch (or parked) outlive the connection:
     * they commit, and slot__batch_complete() drops their answers. */
    for (entry *e = c->head, *next; e; e = next) {
        next = e->next;
        if (e->state == ENTRY_QUEUED || e->state == ENTRY_PARKED || e->state == ENTRY_WORKING)
            e->conn = NULL;
        else
            slot__entry_put(s, e);
    }
    if (c->prev)
        c->prev->next = c->next;
    else
        s->conns = c->next;
    if (c->next)
        c->next->prev = c->prev;
    s->nconns--;
    if (s->accept_paused && s->listener_open && s->nconns < s->opts.conns_max) {
        s->accept_paused = false;
        accept_one(s); /* also makes libuv poll the listener again */
    }
    free(c->partial);
    free(c->out);
    free(c->wbuf);
    free(c);
}

void slot__conn_undirty(conn *c)
{
    if (!c->dirty)
        return;
    conn **p = &c->srv->dirty;
    while (*p && *p != c)
        p = &(*p)->dirty_next;
    if (*p)
        *p = c->dirty_next;
    c->dirty = false;
}

void slot__conn_close(conn *c)
{
    if (c->state == CONN_CLOSING)
        return;
    conn_set_state(c, CONN_CLOSING);
    c->srv->conn_up.feed_gone(c);
    slot__conn_undirty(c); /* it must not be flushed after close */
    uv_close((uv_handle_t *)&c->tcp, on_conn_closed);
}

static void on_shutdown(uv_shutdown_t *req, int status)
{
    conn *c = req->data;
    if (c->state != CONN_DRAINING)
        return;
    if (status < 0 || uv_read_start((uv_stream_t *)&c->tcp, on_alloc, on_read) != 0)
        slot__conn_close(c);
    else
        c->reading = true;
}

/* Ends a connection politely: the replies queued are written, then FIN;
 * what the peer still sends is read and dropped until its EOF, or until
 * SLOT_DRAIN_MS have passed (slot__conns_reap). */
void slot__conn_drain(conn *c)
{
    if (c->state != CONN_OPEN)
        return;
    conn_set_state(c, CONN_DRAINING);
    if (c->reading) {
        uv_read_stop((uv_stream_t *)&c->tcp);
        c->reading = false;
    }
    c->drain_deadline_ms = uv_now(c->srv->loop) + SLOT_DRAIN_MS;
    c->sreq.data = c;
    if (uv_shutdown(&c->sreq, (uv_stream_t *)&c->tcp, on_shutdown) != 0)
        slot__conn_close(c);
}

/* Why a connection should be dropped now (a reason code of
 * slot__conn_dropped, the sentence into *detail), or NULL. Every bound here
 * is a flag; times are loop times (uv_now, monotonic ms). */
static const char *conn_overdue(server *s, conn *c, uint64_t now_ms, const char **detail)
{
    const slot__server_opts *o = &s->opts;
    if (c->state == CONN_DRAINING) {
        *detail = "did not close after its last answer";
        return now_ms >= c->drain_deadline_ms ? "drain_timeout" : NULL;
    }
    if (c->state != CONN_OPEN)
        return NULL;
    if (c->writing && now_ms - c->write_since_ms >= o->write_timeout_ms) {
        *detail = "took none of its replies within --write-timeout-ms";
        return "write_timeout";
    }
    if (c->partial_len > 0 && now_ms - c->partial_since_ms >= o->line_timeout_ms) {
        *detail = "left a line unfinished past --line-timeout-ms";
        return "line_timeout";
    }
    if (o->idle_timeout_ms && !c->sub && !c->head && !c->writing && c->out_len == 0 && c->partial_len == 0 &&
        now_ms - c->last_read_ms >= o->idle_timeout_ms) {
        *detail = "was idle past --idle-timeout-ms";
        return "idle_timeout";
    }
    return NULL;
}

/* Closes the connections that passed one of their time bounds. O(connections);
 * runs on the sweeper's timer and while stopping. */
void slot__conns_reap(server *s)
{
    uint64_t now_ms = uv_now(s->loop);
    for (conn *c = s->conns, *next; c; c = next) {
        next = c->next;
        const char *detail = NULL;
        const char *why = conn_overdue(s, c, now_ms, &detail);
        if (!why)
            continue;
        if (c->state == CONN_OPEN) {
            s->stats.conns_timed_out++;
            slot__conn_dropped(c, why, detail);
        }
        slot__conn_close(c);
    }
}

static void on_unaccepted_closed(uv_handle_t *h)
{
    free(h->data);
}

/* Takes the connection libuv has waiting. Returns false when it could not. */
static bool accept_one(server *s)
{
    conn *c = calloc(1, sizeof(*c));
    if (!c) {
        slot__log(SLOT__LOG_ERROR, "accept: out of memory for a connection");
        return false;
    }
    c->srv = s;
    c->role = s->auth.ntokens ? SLOT_ROLE_NONE : SLOT_ROLE_ADMIN;
    c->last_read_ms = uv_now(s->loop);
    uv_tcp_init(s->loop, &c->tcp);
    c->tcp.data = c;
    if (uv_accept((uv_stream_t *)&s->listener, (uv_stream_t *)&c->tcp) != 0) {
        uv_close((uv_handle_t *)&c->tcp, on_unaccepted_closed);
        return false;
    }
    c->next = s->conns;
    if (s->conns)
        s->conns->prev = c;
    s->conns = c;
    s->nconns++;
    s->stats.conns_total++;
    uv_tcp_nodelay(&c->tcp, 1);
    if (uv_read_start((uv_stream_t *)&c->tcp, on_alloc, on_read) == 0)
        c->reading = true;
    else
        slot__conn_close(c);
    if (slot__log_on(SLOT__LOG_DEBUG)) {
        char peer[64];
        slot__conn_peer(c, peer, sizeof peer);
        slot__log(SLOT__LOG_DEBUG, "accepted a client", SLOT__LF_S("peer", peer), SLOT__LF_U("connections", s->nconns));
    }
    return true;
}

/*
 * At --max-connections, the new connection is left in libuv: while one is
 * waiting un-accepted, libuv stops polling the listener, so accepting pauses
 * without spinning, and on_conn_closed resumes it. When descriptors run out
 * (EMFILE) libuv sheds the connection itself (its reserve-fd trick) and
 * reports the error here; the server goes on.
 */
void slot__on_connection(uv_stream_t *listener, int status)
{
    server *s = listener->data;
    if (status < 0) {
        slot__log(SLOT__LOG_WARN, "accept failed", SLOT__LF_S("error", uv_strerror(status)));
        return;
    }
    if (s->nconns >= s->opts.conns_max) {
        if (!s->accept_paused)
            slot__log(SLOT__LOG_WARN, "connection limit reached: accepting paused",
                      SLOT__LF_U("max_connections", s->opts.conns_max));
        s->accept_paused = true;
        s->stats.accepts_paused++;
        return;
    }
    accept_one(s);
}
