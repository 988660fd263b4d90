/*
 * repl.c — the replication endpoint (slot/repl.h): its options, the listener,
 * dialling, the connections' lifetime, reading frames, writing them, and
 * ending a connection (REFUSE, shutdown, linger, close). What the frames
 * mean is repl_proto.c.
 */
#include "repl_int.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/crypto.h>

/* One write: the frame's bytes follow, or a shared record buffer. */
typedef struct wreq {
    uv_write_t req;
    slot__repl_buf *buf;
    uint8_t bytes[];
} wreq;

static const char *state_name(slot__repl_state s)
{
    static const char *const names[] = {
#define SLOT__REPL_STATE_NAME(name, str) str,
        SLOT_REPL_STATE_MAP(SLOT__REPL_STATE_NAME)
#undef SLOT__REPL_STATE_NAME
    };
    return names[s];
}

/* The edges of the state machine in repl_int.h. */
static bool transition_ok(bool inbound, slot__repl_state from, slot__repl_state to)
{
    if (from == SLOT__REPL_CLOSING)
        return false;
    if (to == SLOT__REPL_CLOSING)
        return true;
    if (inbound)
        return (from == SLOT__REPL_ACCEPTED && to == SLOT__REPL_CHALLENGED) ||
               (from == SLOT__REPL_CHALLENGED && to == SLOT__REPL_READY);
    return (from == SLOT__REPL_CONNECTING && to == SLOT__REPL_HELLO_SENT) ||
           (from == SLOT__REPL_HELLO_SENT && to == SLOT__REPL_AUTH_SENT) ||
           (from == SLOT__REPL_AUTH_SENT && to == SLOT__REPL_READY);
}

void slot__repl_set_state(slot__repl_conn *c, slot__repl_state to)
{
    if (!transition_ok(c->inbound, c->state, to)) {
        fprintf(stderr, "slotd: repl: no edge %s -> %s\n", state_name(c->state), state_name(to));
        SLOT_ASSERT(!"repl state edge");
    }
    bool was_handshake = c->inbound && (c->state == SLOT__REPL_ACCEPTED || c->state == SLOT__REPL_CHALLENGED);
    if (was_handshake && (to == SLOT__REPL_READY || to == SLOT__REPL_CLOSING)) {
        SLOT_ASSERT(c->r->handshakes > 0);
        c->r->handshakes--;
    }
    if (to == SLOT__REPL_READY)
        uv_timer_stop(&c->timer);
    c->state = to;
}

void slot__repl_log(slot_repl *r, const char *fmt, ...)
{
    if (!r->opts.cbs.log)
        return;
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    r->opts.cbs.log(r->opts.cbs.ctx, msg);
}

/* ---- the endpoint's lifetime */

static void maybe_free_endpoint(slot_repl *r)
{
    if (r->freeing && r->handles == 0 && r->conns == NULL) {
        OPENSSL_cleanse(r->secret, sizeof(r->secret));
        free(r);
    }
}

static void conn_free(slot__repl_conn *c)
{
    slot_repl *r = c->r;
    if (c->prev)
        c->prev->next = c->next;
    else
        r->conns = c->next;
    if (c->next)
        c->next->prev = c->prev;
    free(c->body);
    free(c->chunk);
    free(c->ring);
    free(c);
    maybe_free_endpoint(r);
}

static void conn_handle_closed(uv_handle_t *h)
{
    slot__repl_conn *c = h->data;
    SLOT_ASSERT(c->handles > 0);
    if (--c->handles == 0)
        conn_free(c);
}

static void conn_close_handles(slot__repl_conn *c)
{
    if (c->tcp_open && !uv_is_closing((uv_handle_t *)&c->tcp))
        uv_close((uv_handle_t *)&c->tcp, conn_handle_closed);
    if (!uv_is_closing((uv_handle_t *)&c->timer))
        uv_close((uv_handle_t *)&c->timer, conn_handle_closed);
}

static void conn_timer_cb(uv_timer_t *t);

static slot__repl_conn *conn_new(slot_repl *r, bool inbound)
{
    slot__repl_conn *c = calloc(1, sizeof(*c));
    if (!c)
        return NULL;
    c->chunk = malloc(SLOT_REPL_READ_CHUNK_BYTES);
    if (!inbound)
        c->ring = calloc(r->opts.inflight_records_max, sizeof(*c->ring));
    if (!c->chunk || (!inbound && !c->ring)) {
        free(c->chunk);
        free(c->ring);
        free(c);
        return NULL;
    }
    c->r = r;
    c->inbound = inbound;
    c->state = inbound ? SLOT__REPL_ACCEPTED : SLOT__REPL_CONNECTING;
    c->last_heard_ms = uv_now(r->loop);
    snprintf(c->addr, sizeof(c->addr), "?");
    uv_tcp_init(r->loop, &c->tcp); /* cannot fail for AF_UNSPEC */
    c->tcp.data = c;
    c->tcp_open = true;
    uv_timer_init(r->loop, &c->timer);
    c->timer.data = c;
    c->handles = 2;
    c->next = r->conns;
    if (r->conns)
        r->conns->prev = c;
    r->conns = c;
    uv_timer_start(&c->timer, conn_timer_cb, r->opts.handshake_timeout_ms, 0);
    return c;
}

/* ---- writing */

static void write_cb(uv_write_t *req, int status)
{
    wreq *w = (wreq *)req;
    slot__repl_conn *c = req->data;
    if (w->buf)
        slot__repl_buf_unref(w->buf);
    free(w);
    if (status < 0 && status != UV_ECANCELED && c->state != SLOT__REPL_CLOSING)
        slot__repl_end(c, SLOT_REPL_R_CLOSED, false, false, "write: %s", uv_strerror(status));
}

static int write_raw(slot__repl_conn *c, uint8_t type, const void *payload, size_t len)
{
    wreq *w = malloc(sizeof(*w) + SLOT_REPL_FRAME_HEADER_BYTES + len);
    if (!w)
        return UV_ENOMEM;
    w->buf = NULL;
    w->req.data = c;
    slot__repl_put_u32(w->bytes, (uint32_t)(len + 1));
    w->bytes[4] = type;
    if (len)
        memcpy(w->bytes + SLOT_REPL_FRAME_HEADER_BYTES, payload, len);
    uv_buf_t b = uv_buf_init((char *)w->bytes, (unsigned)(SLOT_REPL_FRAME_HEADER_BYTES + len));
    int rc = uv_write(&w->req, (uv_stream_t *)&c->tcp, &b, 1, write_cb);
    if (rc < 0)
        free(w);
    return rc;
}

int slot__repl_write(slot__repl_conn *c, uint8_t type, const void *payload, size_t len)
{
    SLOT_ASSERT(c->state != SLOT__REPL_CLOSING);
    return write_raw(c, type, payload, len);
}

void slot__repl_buf_unref(slot__repl_buf *b)
{
    SLOT_ASSERT(b->refs > 0);
    if (--b->refs == 0)
        free(b);
}

int slot__repl_write_buf(slot__repl_conn *c, slot__repl_buf *b)
{
    wreq *w = malloc(sizeof(*w));
    if (!w)
        return UV_ENOMEM;
    w->buf = b;
    w->req.data = c;
    b->refs++;
    uv_buf_t ub = uv_buf_init((char *)b->bytes, (unsigned)b->len);
    int rc = uv_write(&w->req, (uv_stream_t *)&c->tcp, &ub, 1, write_cb);
    if (rc < 0) {
        slot__repl_buf_unref(b);
        free(w);
    }
    return rc;
}

/* ---- ending a connection */

static void shutdown_cb(uv_shutdown_t *req, int status)
{
    (void)req;
    (void)status; /* the linger timer or the peer's EOF closes the handles */
}

void slot__repl_end(slot__repl_conn *c, slot_repl_reason reason, bool refuse, bool by_peer, const char *fmt, ...)
{
    if (c->state == SLOT__REPL_CLOSING)
        return;
    slot_repl *r = c->r;
    char text[SLOT_REPL_TEXT_BYTES_MAX + 1];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof(text), fmt, ap);
    va_end(ap);
    bool connected = c->inbound || c->state != SLOT__REPL_CONNECTING;
    slot__repl_set_state(c, SLOT__REPL_CLOSING);
    if (r->stream == c)
        r->stream = NULL;
    if (!c->reported) {
        c->reported = true;
        slot__repl_log(r, "repl: %s %s %s (node %s): %s: %s",
                       by_peer  ? "refused by"
                       : refuse ? "refused"
                                : "lost",
                       c->inbound ? "inbound" : "outbound", c->addr, c->node[0] ? c->node : "?",
                       slot_repl_reason_name(reason), text);
        if (r->opts.cbs.on_close) {
            slot_repl_close_info info = {c->node, c->addr, c->inbound, reason, by_peer, text};
            r->opts.cbs.on_close(r->opts.cbs.ctx, &info);
            if (r->freeing)
                return; /* slot_repl_free closed every handle */
        }
    }
    if (refuse && connected) {
        uint8_t p[1 + SLOT_REPL_TEXT_BYTES_MAX];
        size_t n = strlen(text);
        p[0] = (uint8_t)reason;
        memcpy(p + 1, text, n);
        if (write_raw(c, SLOT_REPL_F_REFUSE, p, 1 + n) == 0 &&
            uv_shutdown(&c->sreq, (uv_stream_t *)&c->tcp, shutdown_cb) == 0) {
            /* Linger: read (and drop) until the peer closes, at most
             * SLOT_REPL_LINGER_MS, so that closing with unread input does not
             * reset the connection before the REFUSE arrives. */
            uv_timer_stop(&c->timer);
            uv_timer_start(&c->timer, conn_timer_cb, SLOT_REPL_LINGER_MS, 0);
            return;
        }
    }
    conn_close_handles(c);
}

static void conn_timer_cb(uv_timer_t *t)
{
    slot__repl_conn *c = t->data;
    if (c->state == SLOT__REPL_CLOSING)
        conn_close_handles(c);
    else if (c->state != SLOT__REPL_READY)
        slot__repl_end(c, SLOT_REPL_R_TIMEOUT, true, false, "no handshake within %u ms",
                       c->r->opts.handshake_timeout_ms);
}

/* ---- reading */

static void alloc_cb(uv_handle_t *h, size_t suggested, uv_buf_t *buf)
{
    (void)suggested;
    slot__repl_conn *c = h->data;
    *buf = uv_buf_init((char *)c->chunk, SLOT_REPL_READ_CHUNK_BYTES);
}

/* Starts the body of the frame whose header is complete; false when ended. */
static bool frame_begin(slot__repl_conn *c)
{
    uint32_t blen = slot__repl_get_u32(c->hdr);
    size_t max = slot__repl_body_max(c);
    if (blen == 0) {
        slot__repl_end(c, SLOT_REPL_R_PROTOCOL, true, false, "an empty frame");
        return false;
    }
    if (blen > max) {
        if (c->state == SLOT__REPL_READY)
            slot__repl_end(c, SLOT_REPL_R_TOO_BIG, true, false, "a frame of %u bytes, at most %zu", blen, max);
        else
            slot__repl_end(c, SLOT_REPL_R_PROTOCOL, true, false, "a first frame of %u bytes: not a replication hello",
                           blen);
        return false;
    }
    if (c->body_cap < blen) {
        free(c->body);
        c->body_cap = 0;
        c->body = malloc(blen);
        if (!c->body) {
            slot__repl_end(c, SLOT_REPL_R_CLOSED, false, false, "no memory for a frame of %u bytes", blen);
            return false;
        }
        c->body_cap = blen;
    }
    c->body_need = blen;
    c->body_len = 0;
    return true;
}

static void consume(slot__repl_conn *c, const uint8_t *p, size_t n)
{
    size_t off = 0;
    while (off < n && c->state != SLOT__REPL_CLOSING) {
        if (c->body_need == 0) {
            size_t k = SLOT_REPL_FRAME_HEADER_BYTES - c->hdr_len;
            if (k > n - off)
                k = n - off;
            memcpy(c->hdr + c->hdr_len, p + off, k);
            c->hdr_len += k;
            off += k;
            if (c->hdr_len < SLOT_REPL_FRAME_HEADER_BYTES || !frame_begin(c))
                continue;
            c->body[0] = c->hdr[4];
            c->body_len = 1;
        }
        size_t k = c->body_need - c->body_len;
        if (k > n - off)
            k = n - off;
        memcpy(c->body + c->body_len, p + off, k);
        c->body_len += k;
        off += k;
        if (c->body_len < c->body_need)
            continue;
        size_t len = c->body_len;
        c->hdr_len = 0;
        c->body_need = 0;
        c->last_heard_ms = uv_now(c->r->loop);
        slot__repl_frame(c, c->body[0], c->body + 1, len - 1);
        if (c->body_cap > SLOT_REPL_KEEP_BYTES) {
            free(c->body);
            c->body = NULL;
            c->body_cap = 0;
        }
    }
}

static void read_cb(uv_stream_t *s, ssize_t nread, const uv_buf_t *buf)
{
    (void)buf;
    slot__repl_conn *c = s->data;
    if (nread == 0)
        return;
    if (c->state == SLOT__REPL_CLOSING) {
        if (nread < 0)
            conn_close_handles(c); /* the peer closed during the linger */
        return;                    /* input after a refusal is dropped */
    }
    if (nread < 0) {
        if (nread == UV_EOF && (c->hdr_len > 0 || c->body_need > 0))
            slot__repl_end(c, SLOT_REPL_R_TRUNCATED, false, false, "closed after %zu of %zu bytes of a frame",
                           c->body_need ? c->body_len + 4 : c->hdr_len,
                           c->body_need ? c->body_need + 4 : (size_t)SLOT_REPL_FRAME_HEADER_BYTES);
        else
            slot__repl_end(c, SLOT_REPL_R_CLOSED, false, false, "%s",
                           nread == UV_EOF ? "the peer closed" : uv_strerror((int)nread));
        return;
    }
    consume(c, (const uint8_t *)buf->base, (size_t)nread);
}

static void start_reading(slot__repl_conn *c)
{
    uv_tcp_nodelay(&c->tcp, 1);
    int rc = uv_read_start((uv_stream_t *)&c->tcp, alloc_cb, read_cb);
    if (rc < 0)
        slot__repl_end(c, SLOT_REPL_R_CLOSED, false, false, "read: %s", uv_strerror(rc));
}

/* ---- accepting and dialling */

static void free_handle(uv_handle_t *h)
{
    free(h);
}

static void on_connection(uv_stream_t *server, int status)
{
    slot_repl *r = server->data;
    if (status < 0) {
        slot__repl_log(r, "repl: accept: %s", uv_strerror(status));
        return;
    }
    slot__repl_conn *c = conn_new(r, true);
    if (!c) {
        /* Take the connection off the backlog and drop it (else the
         * listener stalls); if even that fails, it waits in the backlog. */
        uv_tcp_t *tmp = malloc(sizeof(*tmp));
        slot__repl_log(r, "repl: accept: out of memory");
        if (tmp) {
            uv_tcp_init(r->loop, tmp);
            uv_accept(server, (uv_stream_t *)tmp);
            uv_close((uv_handle_t *)tmp, free_handle);
        }
        return;
    }
    r->handshakes++; /* counted from ACCEPTED; slot__repl_set_state uncounts */
    int rc = uv_accept(server, (uv_stream_t *)&c->tcp);
    if (rc < 0) {
        slot__repl_end(c, SLOT_REPL_R_CLOSED, false, false, "accept: %s", uv_strerror(rc));
        return;
    }
    struct sockaddr_storage ss;
    int len = sizeof(ss);
    char ip[48] = "?";
    if (uv_tcp_getpeername(&c->tcp, (struct sockaddr *)&ss, &len) == 0) {
        uv_ip_name((struct sockaddr *)&ss, ip, sizeof(ip));
        int port = ntohs(ss.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&ss)->sin6_port
                                                  : ((struct sockaddr_in *)&ss)->sin_port);
        snprintf(c->addr, sizeof(c->addr), "%s:%d", ip, port);
    }
    if (r->handshakes > SLOT_REPL_HANDSHAKES_MAX) {
        slot__repl_end(c, SLOT_REPL_R_BUSY, true, false, "%d handshakes in progress", SLOT_REPL_HANDSHAKES_MAX);
        return;
    }
    start_reading(c);
}

static void connect_cb(uv_connect_t *req, int status)
{
    slot__repl_conn *c = req->data;
    if (c->state == SLOT__REPL_CLOSING)
        return;
    if (status < 0) {
        slot__repl_end(c, SLOT_REPL_R_CLOSED, false, false, "connect: %s", uv_strerror(status));
        return;
    }
    start_reading(c);
    if (c->state == SLOT__REPL_CLOSING)
        return;
    int rc = slot__repl_send_hello(c, SLOT_REPL_F_HELLO);
    if (rc < 0) {
        slot__repl_end(c, SLOT_REPL_R_CLOSED, false, false, "hello: %s", uv_strerror(rc));
        return;
    }
    slot__repl_set_state(c, SLOT__REPL_HELLO_SENT);
}

static int parse_addr(const char *host, int port, struct sockaddr_storage *ss)
{
    if (port < 0 || port > 65535)
        return UV_EINVAL;
    if (uv_ip4_addr(host, port, (struct sockaddr_in *)ss) == 0)
        return 0;
    return uv_ip6_addr(host, port, (struct sockaddr_in6 *)ss);
}

int slot_repl_connect(slot_repl *r, const char *node_id, const char *host, int port)
{
    struct sockaddr_storage ss;
    if (!node_id || !host || !slot__repl_name_ok(node_id) || port < 1 || parse_addr(host, port, &ss) != 0)
        return -EINVAL;
    for (slot__repl_conn *o = r->conns; o; o = o->next)
        if (!o->inbound && o->state != SLOT__REPL_CLOSING && strcmp(o->node, node_id) == 0) {
            o->reported = true;
            slot__repl_end(o, SLOT_REPL_R_CLOSED, false, false, "replaced by a new connection");
        }
    slot__repl_conn *c = conn_new(r, false);
    if (!c)
        return -ENOMEM;
    snprintf(c->node, sizeof(c->node), "%s", node_id);
    snprintf(c->addr, sizeof(c->addr), strchr(host, ':') ? "[%s]:%d" : "%s:%d", host, port);
    c->creq.data = c;
    int rc = uv_tcp_connect(&c->creq, &c->tcp, (struct sockaddr *)&ss, connect_cb);
    if (rc < 0) {
        c->reported = true;
        slot__repl_end(c, SLOT_REPL_R_CLOSED, false, false, "connect: %s", uv_strerror(rc));
        return rc;
    }
    return 0;
}

int slot_repl_disconnect(slot_repl *r, const char *node_id)
{
    int rc = -ENOTCONN;
    for (slot__repl_conn *c = r->conns; c; c = c->next)
        if (c->state != SLOT__REPL_CLOSING && strcmp(c->node, node_id) == 0) {
            slot__repl_end(c, SLOT_REPL_R_CLOSED, false, false, "closed by this node");
            rc = 0;
        }
    return rc;
}

int slot_repl_listen(slot_repl *r, const char *host, int port, int *bound_port)
{
    struct sockaddr_storage ss;
    if (r->listening)
        return -EALREADY;
    if (!host || parse_addr(host, port, &ss) != 0)
        return -EINVAL;
    int rc = uv_tcp_bind(&r->listener, (struct sockaddr *)&ss, 0);
    if (rc == 0)
        rc = uv_listen((uv_stream_t *)&r->listener, 128, on_connection);
    if (rc < 0)
        return rc;
    r->listening = true;
    if (bound_port) {
        int len = sizeof(ss);
        uv_tcp_getsockname(&r->listener, (struct sockaddr *)&ss, &len);
        *bound_port = ntohs(ss.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&ss)->sin6_port
                                                     : ((struct sockaddr_in *)&ss)->sin_port);
    }
    return 0;
}

/* ---- the endpoint */

static void heartbeat_cb(uv_timer_t *t)
{
    slot__repl_heartbeat(t->data);
}

static void endpoint_handle_closed(uv_handle_t *h)
{
    slot_repl *r = h->data;
    r->handles--;
    maybe_free_endpoint(r);
}

/* Options: 0 picks the default; anything else must be in range. */
static int fill_opts(slot_repl_opts *o)
{
#define SLOT__REPL_OPT(field, def, lo, hi)           \
    do {                                             \
        if (o->field == 0)                           \
            o->field = (def);                        \
        else if (o->field < (lo) || o->field > (hi)) \
            return -EINVAL;                          \
    } while (0)
    SLOT__REPL_OPT(inflight_records_max, SLOT_REPL_INFLIGHT_RECORDS_DEFAULT, 1, SLOT_REPL_INFLIGHT_RECORDS_MAX);
    SLOT__REPL_OPT(inflight_bytes_max, SLOT_REPL_INFLIGHT_BYTES_DEFAULT, SLOT_REPL_INFLIGHT_BYTES_MIN,
                   SLOT_REPL_INFLIGHT_BYTES_MAX);
    SLOT__REPL_OPT(record_bytes_max, SLOT_WSET_RECORD_BYTES_MAX, SLOT_REPL_RECORD_BYTES_MIN,
                   SLOT_WSET_RECORD_BYTES_MAX);
    SLOT__REPL_OPT(heartbeat_ms, SLOT_REPL_HEARTBEAT_MS_DEFAULT, SLOT_REPL_HEARTBEAT_MS_MIN,
                   SLOT_REPL_HEARTBEAT_MS_MAX);
    SLOT__REPL_OPT(handshake_timeout_ms, SLOT_REPL_HANDSHAKE_MS_DEFAULT, SLOT_REPL_HANDSHAKE_MS_MIN,
                   SLOT_REPL_HANDSHAKE_MS_MAX);
#undef SLOT__REPL_OPT
    return 0;
}

int slot_repl_new(uv_loop_t *loop, const slot_repl_opts *opts, slot_repl **out)
{
    *out = NULL;
    if (!loop || !opts || !opts->cluster || !opts->node_id || !slot__repl_name_ok(opts->cluster) ||
        !slot__repl_name_ok(opts->node_id) || !opts->secret || opts->secret_bytes < SLOT_REPL_SECRET_BYTES_MIN ||
        opts->secret_bytes > SLOT_REPL_SECRET_BYTES_MAX)
        return -EINVAL;
    slot_repl_opts o = *opts;
    if (fill_opts(&o) != 0)
        return -EINVAL;
    slot_repl *r = calloc(1, sizeof(*r));
    if (!r)
        return -ENOMEM;
    r->loop = loop;
    r->opts = o;
    snprintf(r->cluster, sizeof(r->cluster), "%s", o.cluster);
    snprintf(r->node, sizeof(r->node), "%s", o.node_id);
    memcpy(r->secret, o.secret, o.secret_bytes);
    r->opts.cluster = r->cluster;
    r->opts.node_id = r->node;
    r->opts.secret = r->secret;
    uv_tcp_init(loop, &r->listener);
    r->listener.data = r;
    uv_timer_init(loop, &r->heartbeat);
    r->heartbeat.data = r;
    r->handles = 2;
    r->last_heard_ms = uv_now(loop);
    uv_timer_start(&r->heartbeat, heartbeat_cb, o.heartbeat_ms, o.heartbeat_ms);
    *out = r;
    return 0;
}

void slot_repl_free(slot_repl *r)
{
    if (!r || r->freeing)
        return;
    r->freeing = true;
    r->stream = NULL;
    for (slot__repl_conn *c = r->conns; c; c = c->next) {
        c->reported = true;
        if (c->state != SLOT__REPL_CLOSING)
            slot__repl_set_state(c, SLOT__REPL_CLOSING);
        conn_close_handles(c);
    }
    uv_close((uv_handle_t *)&r->listener, endpoint_handle_closed);
    uv_close((uv_handle_t *)&r->heartbeat, endpoint_handle_closed);
}

int slot_repl_set_config(slot_repl *r, uint64_t epoch, uint64_t tenure, const char *primary_id)
{
    if (!primary_id || (primary_id[0] && !slot__repl_name_ok(primary_id)))
        return -EINVAL;
    if (strcmp(r->primary, primary_id) != 0)
        r->last_heard_ms = uv_now(r->loop); /* a new primary gets a full timeout to be heard */
    r->epoch = epoch;
    r->tenure = tenure;
    snprintf(r->primary, sizeof(r->primary), "%s", primary_id);
    slot__repl_recheck(r);
    return 0;
}

void slot_repl_set_log_last(slot_repl *r, uint64_t tenure, uint64_t seq)
{
    r->last_tenure = tenure;
    r->last_seq = seq;
}

void slot_repl_set_commit(slot_repl *r, uint64_t commit_seq)
{
    r->commit_seq = commit_seq;
}

uint64_t slot_repl_silence_ms(const slot_repl *r)
{
    uint64_t now = uv_now(r->loop);
    return now > r->last_heard_ms ? now - r->last_heard_ms : 0;
}

size_t slot_repl_peers(const slot_repl *r, slot_repl_peer_info *out, size_t max)
{
    size_t n = 0;
    uint64_t now = uv_now(r->loop);
    for (const slot__repl_conn *c = r->conns; c; c = c->next) {
        if (c->inbound || c->state == SLOT__REPL_CLOSING)
            continue;
        if (n < max) {
            slot_repl_peer_info *p = &out[n];
            memset(p, 0, sizeof(*p));
            snprintf(p->node_id, sizeof(p->node_id), "%s", c->node);
            p->ready = c->state == SLOT__REPL_READY;
            p->inflight_records = c->ring_count;
            p->inflight_bytes = c->inflight_bytes;
            p->last_sent_seq = c->last_sent_seq;
            p->last_acked_seq = c->last_acked_seq;
            p->silence_ms = now > c->last_heard_ms ? now - c->last_heard_ms : 0;
        }
        n++;
    }
    return n;
}
