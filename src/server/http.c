/*
 * http.c — the HTTP listener (http.h).
 *
 * libmicrohttpd runs without a thread of its own (MHD_USE_EPOLL, external
 * polling): its epoll descriptor is a uv_poll of the loop and its next
 * timeout a uv_timer, and every MHD_run happens on the loop thread, so its
 * callbacks may touch the server as conn.c does. A request's life:
 *
 *   headers in   -> a stand-in conn and its request state (hreq) are made;
 *   body chunks  -> appended, at most --max-line bytes (over: 413);
 *   body done    -> the body becomes one request line ("op" from the path)
 *                   and goes through slot__conn_parse and slot__admit;
 *                   answered at once (errors, most reads), or the connection
 *                   is suspended while its entry waits for its batch;
 *   answered     -> slot__http_flush encodes the NDJSON reply and resumes
 *                   the connection; libmicrohttpd calls back and the reply
 *                   is queued with its status;
 *   completed    -> the request state is freed (an entry still queued is
 *                   left to its batch, as for a TCP connection that closed).
 */
#include "http.h"

#include <microhttpd.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "admit.h"
#include "auth.h"
#include "conn.h"
#include "http_line.h"
#include "loop.h"
#include "reads.h"
#include "metrics.h"
#include "slot/assert.h"
#include "slot/proto.h"
#include "slot/limits.h"

/* Retry-After of a 503, in seconds: about the time a failover or a full
 * queue takes to clear (docs/protocol.md, "HTTP"). */
#define SLOT_HTTP_RETRY_AFTER_S "1"

/*
 * A head over SLOT_HTTP_HEAD_BYTES_MAX is answered here, in JSON like every
 * other error (libmicrohttpd 0.9.75 has no way to replace its own 431 page,
 * an HTML text without Content-Type). libmicrohttpd's memory per connection
 * (MHD_OPTION_CONNECTION_MEMORY_LIMIT) is SLOT_HTTP_CONN_MEMORY_BYTES, twice
 * that, so such a head reaches the access handler; only a head too big for
 * that memory still gets libmicrohttpd's page.
 */
_Static_assert(SLOT_HTTP_HEAD_BYTES_MAX >= 4096, "room for an ordinary request head");

typedef struct slot__http {
    server *s;
    struct MHD_Daemon *d;
    uv_poll_t poll;
    uv_timer_t timer;
    bool handles; /* poll and timer are initialized (closed by the loop's walk) */
    bool quiesced;
    uint32_t live;           /* hreqs not yet freed */
    uint32_t nconns;         /* open HTTP connections (MHD_OPTION_NOTIFY_CONNECTION) */
    bool at_limit;           /* refusing connections at --max-connections (logged once) */
    struct slot__hreq *pool; /* free request states, linked by c.next */
    uint32_t npool;
} slot__http;

/* What a path asks for. */
typedef enum hreq_kind { HR_OP, HR_EVENT, HR_HEALTH, HR_PRIMARY, HR_METRICS } hreq_kind;

/* The fields below `kind` are zeroed for each request; the buffers are kept. */
typedef struct slot__hreq {
    conn c; /* the stand-in: c.http == this; c.head is the request's entry */
    slot__http *h;
    struct MHD_Connection *mc;
    char *body; /* the body so far (GET /v1/events/E: {"event":E}) */
    size_t body_cap;
    char *line; /* the request line made of it */
    size_t line_cap;
    hreq_kind kind; /* HR_OP, HR_EVENT: an entry; HR_HEALTH..: none */
    size_t body_len;
    bool suspended;       /* waiting for its batch (or its read's turn) */
    bool too_long;        /* the body passed --max-line: 413 */
    bool head_too_long;   /* the head passed SLOT_HTTP_HEAD_BYTES_MAX: 431 */
    size_t dropped_bytes; /* of a body past --max-line, read and dropped */
    bool answered;        /* c.out holds the reply; err is its code */
    bool queued;          /* the reply was handed to libmicrohttpd */
    slot_err err;
    uint64_t retry_after_ms; /* rate_limited: its Retry-After */
    char op[SLOT_HTTP_OP_BYTES_MAX + 1];
} hreq;

static void on_timer(uv_timer_t *t);

/* ---- answers */

/* A plain-text answer that is not a protocol reply (/health, 404, 405). */
static enum MHD_Result answer_text(struct MHD_Connection *mc, unsigned status, const char *allow, const char *text)
{
    struct MHD_Response *r = MHD_create_response_from_buffer(strlen(text), (void *)text, MHD_RESPMEM_PERSISTENT);
    if (!r)
        return MHD_NO; /* out of memory: libmicrohttpd closes the connection */
    MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, "text/plain; charset=utf-8");
    if (allow)
        MHD_add_response_header(r, MHD_HTTP_HEADER_ALLOW, allow);
    enum MHD_Result rc = MHD_queue_response(mc, status, r);
    MHD_destroy_response(r);
    return rc;
}

/* The primary's HTTP address for a 307's Location, or NULL when not known. */
static const char *primary_http(server *s)
{
    if (!s->clu || !s->clu_up->primary_http)
        return NULL;
    const char *a = s->clu_up->primary_http(s);
    return a && a[0] ? a : NULL;
}

/* Queues r's reply (c.out) with its status and headers. */
static enum MHD_Result answer_reply(hreq *r, const char *url)
{
    server *s = r->h->s;
    size_t out_len = r->c.out_len;
    struct MHD_Response *resp = MHD_create_response_from_buffer(out_len, r->c.out, MHD_RESPMEM_MUST_COPY);
    r->c.out_len = 0;
    if (!resp)
        return MHD_NO;
    MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, "application/json");
    unsigned status = r->head_too_long ? MHD_HTTP_REQUEST_HEADER_FIELDS_TOO_LARGE : slot__http_status(r->err);
    if (status == MHD_HTTP_SERVICE_UNAVAILABLE)
        MHD_add_response_header(resp, MHD_HTTP_HEADER_RETRY_AFTER, SLOT_HTTP_RETRY_AFTER_S);
    if (status == MHD_HTTP_TOO_MANY_REQUESTS) { /* whole seconds, rounded up, of retry_after_ms */
        char ra[24];
        snprintf(ra, sizeof(ra), "%llu", (unsigned long long)((r->retry_after_ms + 999) / 1000));
        MHD_add_response_header(resp, MHD_HTTP_HEADER_RETRY_AFTER, ra);
    }
    /* not_primary: this set's primary; wrong_set: the owning set's, as its reply names it
     * ("http"), and no Location when it does not (this set's primary is not the owner). */
    char owner[SLOT_CLUSTER_ADDR_BYTES];
    const char *primary = NULL;
    if (status == MHD_HTTP_TEMPORARY_REDIRECT && r->err != SLOT_E_WRONG_SET)
        primary = primary_http(s);
    else if (status == MHD_HTTP_TEMPORARY_REDIRECT && slot__http_owner_addr(r->c.out, out_len, owner, sizeof(owner)))
        primary = owner;
    if (primary) {
        char loc[128 + SLOT_HTTP_OP_BYTES_MAX + SLOT_EVENT_BYTES_MAX];
        int n = snprintf(loc, sizeof(loc), "http://%s%s", primary, url);
        if (n > 0 && (size_t)n < sizeof(loc))
            MHD_add_response_header(resp, MHD_HTTP_HEADER_LOCATION, loc);
    }
    if (r->err == SLOT_E_LINE_TOO_LONG)
        MHD_add_response_header(resp, MHD_HTTP_HEADER_CONNECTION, "close"); /* what is left of the body is not read */
    enum MHD_Result rc = MHD_queue_response(r->mc, status, resp);
    MHD_destroy_response(resp);
    r->queued = rc == MHD_YES;
    return rc;
}

/* ---- the request's entry */

static void hreq_free(hreq *r)
{
    slot__http *h = r->h;
    server *s = h->s;
    conn *c = &r->c;
    entry *e = c->head;
    if (e) { /* still queued: its batch drops the answer (commit.c); else back to the pool */
        if (e->state == ENTRY_QUEUED || e->state == ENTRY_PARKED)
            e->conn = NULL;
        else
            slot__entry_put(s, e);
    }
    slot__conn_undirty(c);
    if (c->prev)
        c->prev->next = c->next;
    else
        s->http.conns = c->next;
    if (c->next)
        c->next->prev = c->prev;
    SLOT_ASSERT(h->live > 0);
    h->live--;
    if (h->npool < SLOT_HTTP_POOL_MAX) {
        c->next = (conn *)h->pool;
        h->pool = r;
        h->npool++;
        return;
    }
    free(c->out);
    free(r->body);
    free(r->line);
    free(r);
}

static hreq *hreq_new(slot__http *h, struct MHD_Connection *mc)
{
    hreq *r = h->pool;
    if (r) {
        h->pool = (hreq *)r->c.next;
        h->npool--;
        char *out = r->c.out;
        size_t out_cap = r->c.out_cap;
        memset(&r->c, 0, sizeof(r->c));
        r->c.out = out;
        r->c.out_cap = out_cap;
        memset(&r->kind, 0, sizeof(*r) - offsetof(hreq, kind));
    } else if (!(r = calloc(1, sizeof(*r)))) {
        return NULL;
    }
    server *s = h->s;
    r->h = h;
    r->mc = mc;
    r->c.srv = s;
    r->c.http = r;
    r->c.state = CONN_OPEN;
    r->c.next = s->http.conns;
    if (s->http.conns)
        s->http.conns->prev = &r->c;
    s->http.conns = &r->c;
    h->live++;
    return r;
}

/* Encodes the reply once r's entry is answered (running it first when it
 * is a read whose turn came); true when r is answered now. */
static bool hreq_progress(hreq *r)
{
    server *s = r->h->s;
    conn *c = &r->c;
    entry *e = c->head;
    if (r->answered)
        return true;
    if (!e)
        return false;
    if (e->state == ENTRY_READ_WAIT)
        slot__run_read(s, e);
    if (e->state != ENTRY_DONE)
        return false;
    if (s->clu && s->clu_up->place_answered &&
        (e->place_step || e->res.err == SLOT_E_UNKNOWN_EVENT || e->res.err == SLOT_E_WRONG_SET))
        s->clu_up->place_answered(s, e); /* --placement: a refused create's map entry goes; redirects */
    r->err = e->res.err;
    r->retry_after_ms = e->res.retry_after_ms;
    if (!slot__conn_encode(c, e)) { /* out of memory: a 500 without a body */
        slot__log(SLOT__LOG_ERROR, "out of memory for an HTTP reply");
        c->out_len = 0;
        r->err = SLOT_E_INTERNAL;
    }
    slot__count_reply(s, e);
    slot_hist_record(s->stats.latency_us, (uv_hrtime() - e->t0_ns) / 1000u);
    c->head = c->tail = NULL;
    c->pending = 0;
    slot__entry_put(s, e);
    r->answered = true;
    return true;
}

void slot__http_flush(conn *c)
{
    hreq *r = c->http;
    SLOT_ASSERT(r != NULL);
    if (hreq_progress(r) && r->suspended) {
        r->suspended = false;
        MHD_resume_connection(r->mc);
        /* and MHD_run goes on with it at the loop's next turn (its timer) */
        uv_timer_start(&r->h->timer, on_timer, 0, 0);
    }
}

/* Appends len bytes to r's body, bounded by --max-line. */
static void body_append(hreq *r, const char *data, size_t len)
{
    size_t max = r->h->s->opts.line_bytes_max;
    if (r->too_long || len > max - r->body_len) {
        r->too_long = true;
        return;
    }
    if (r->body_len + len > r->body_cap) {
        size_t cap = r->body_cap ? r->body_cap : 1024;
        while (cap < r->body_len + len)
            cap *= 2;
        char *p = realloc(r->body, cap);
        if (!p) {
            r->too_long = true; /* out of memory: refused as too long, the connection closes */
            return;
        }
        r->body = p;
        r->body_cap = cap;
    }
    memcpy(r->body + r->body_len, data, len);
    r->body_len += len;
}

/* mc's peer address (without its port) into buf[cap], or "?". */
static void peer_name(struct MHD_Connection *mc, char *buf, size_t cap)
{
    const union MHD_ConnectionInfo *ci = MHD_get_connection_info(mc, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
    snprintf(buf, cap, "?");
    if (ci && ci->client_addr)
        uv_ip_name(ci->client_addr, buf, cap);
}

/* The role of the request's "Authorization: Bearer TOKEN" (admin without
 * tokens, as every TCP connection is then; none when missing or unknown). */
static slot_role bearer_role(server *s, struct MHD_Connection *mc)
{
    if (s->auth.ntokens == 0)
        return SLOT_ROLE_ADMIN;
    const char *v = MHD_lookup_connection_value(mc, MHD_HEADER_KIND, MHD_HTTP_HEADER_AUTHORIZATION);
    if (!v || strncasecmp(v, "Bearer ", 7) != 0)
        return SLOT_ROLE_NONE;
    v += 7;
    while (*v == ' ')
        v++;
    size_t len = strlen(v);
    while (len > 0 && v[len - 1] == ' ')
        len--;
    slot_role role = len > 0 && len <= SLOT_TOKEN_BYTES_MAX ? slot__token_role(s, v, len) : SLOT_ROLE_NONE;
    if (role == SLOT_ROLE_NONE) {
        char peer[64];
        peer_name(mc, peer, sizeof(peer));
        /* the token tried is never logged: it may be a real one mistyped */
        slot__log(SLOT__LOG_WARN, "failed HTTP bearer token (token not shown)", SLOT__LF_S("peer", peer),
                  SLOT__LF_S("reason", len ? "unknown_token" : "no_token"));
    }
    return role;
}

/* Body complete: r's line enters the same path as a TCP line. Returns false
 * when out of memory (the connection is then closed). */
static bool hreq_submit(hreq *r)
{
    server *s = r->h->s;
    conn *c = &r->c;
    entry *e = slot__entry_get(s);
    if (!e)
        return false;
    e->t0_ns = uv_hrtime();
    e->conn = c;
    e->state = ENTRY_DONE;
    c->head = c->tail = e;
    c->pending = 1;
    if (r->head_too_long) { /* before the token: a refused head is not authenticated */
        s->stats.bad_lines++;
        slot__count_error(s, SLOT_E_LINE_TOO_LONG);
        slot_res_error(&e->res, SLOT_E_LINE_TOO_LONG, "request head (request line and headers) longer than %u bytes",
                       SLOT_HTTP_HEAD_BYTES_MAX);
        return true;
    }
    c->role = bearer_role(s, r->mc);
    if (r->too_long) {
        s->stats.bad_lines++;
        slot__count_error(s, SLOT_E_LINE_TOO_LONG);
        /* the words of a TCP line over the limit: the same answer (conn.c) */
        slot_res_error(&e->res, SLOT_E_LINE_TOO_LONG, "line longer than %u bytes", s->opts.line_bytes_max);
        return true;
    }
    const char *key = r->kind == HR_OP ? MHD_lookup_connection_value(r->mc, MHD_HEADER_KIND, "Idempotency-Key") : NULL;
    if (key && slot__http_body_has_request(r->body, r->body_len))
        key = NULL; /* the header fills "request" only when the body has none */
    ptrdiff_t byte_delta = 0;
    size_t len = slot__http_line(&r->line, &r->line_cap, r->op, r->body ? r->body : "", r->body_len, key, &byte_delta);
    if (len == 0)
        return false;
    /* a bad_json's "(byte N)" counts from the body the client sent, not from the line made of it */
    if (slot__conn_parse(s, c, e, r->line, len, byte_delta)) {
        /* docs/protocol.md, "Client limits": over HTTP without "client", the
         * peer address is the client key */
        slot_op op = e->req.op;
        if (e->req.client_len == 0 && (op == SLOT_OP_HOLD || op == SLOT_OP_HOLD_MANY || op == SLOT_OP_WAITLIST_JOIN)) {
            char peer[64];
            peer_name(r->mc, peer, sizeof(peer));
            size_t n = strnlen(peer, sizeof(peer));
            SLOT_ASSERT(n >= 1 && n <= SLOT_CLIENT_BYTES_MAX);
            memcpy(e->req.client, peer, n);
            e->req.client[n] = 0;
            e->req.client_len = (uint8_t)n;
        }
        slot__admit(s, c, e);
    }
    return true;
}

/* ---- the endpoints without a protocol request */

/* /health, /primary, /metrics: no entry, no token (no user data). */
static enum MHD_Result answer_plain(server *s, struct MHD_Connection *mc, hreq_kind kind)
{
    if (kind == HR_HEALTH)
        return s->stopping ? answer_text(mc, MHD_HTTP_SERVICE_UNAVAILABLE, NULL, "stopping\n")
                           : answer_text(mc, MHD_HTTP_OK, NULL, "ok\n");
    if (kind == HR_PRIMARY) {
        bool primary = !s->stopping && (!s->clu || (s->clu_up->is_primary && s->clu_up->is_primary(s)));
        return primary ? answer_text(mc, MHD_HTTP_OK, NULL, s->clu ? "primary\n" : "standalone\n")
                       : answer_text(mc, MHD_HTTP_SERVICE_UNAVAILABLE, NULL, "not the primary\n");
    }
    /* GET /metrics (docs/operations.md, "Metrics"): no token, it carries no user data */
    size_t len = 0;
    char *text = slot__metrics_text(s, &len);
    if (!text)
        return answer_text(mc, MHD_HTTP_INTERNAL_SERVER_ERROR, NULL, "out of memory\n");
    struct MHD_Response *r = MHD_create_response_from_buffer(len, text, MHD_RESPMEM_MUST_FREE);
    if (!r) {
        free(text);
        return MHD_NO; /* out of memory: libmicrohttpd closes the connection */
    }
    MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, "text/plain; version=0.0.4; charset=utf-8");
    enum MHD_Result rc = MHD_queue_response(mc, MHD_HTTP_OK, r);
    MHD_destroy_response(r);
    return rc;
}

/* ---- libmicrohttpd's callbacks */

static bool is_get(const char *method)
{
    return strcmp(method, MHD_HTTP_METHOD_GET) == 0 || strcmp(method, MHD_HTTP_METHOD_HEAD) == 0;
}

/* The first call of a request (its head is in): route it. Returns the
 * result for libmicrohttpd; *r is set when a request state was made. */
static enum MHD_Result route(slot__http *h, struct MHD_Connection *mc, const char *url, const char *method, hreq **out)
{
    server *s = h->s;
    bool get = is_get(method);
    hreq_kind plain = strcmp(url, "/health") == 0    ? HR_HEALTH
                      : strcmp(url, "/primary") == 0 ? HR_PRIMARY
                      : strcmp(url, "/metrics") == 0 ? HR_METRICS
                                                     : HR_OP;
    if (plain != HR_OP) { /* answered on the next call, once libmicrohttpd knows there is no body */
        if (!get)
            return answer_text(mc, MHD_HTTP_METHOD_NOT_ALLOWED, "GET, HEAD", "method not allowed\n");
        if (!(*out = hreq_new(h, mc)))
            return MHD_NO;
        (*out)->kind = plain;
        return MHD_YES;
    }
    /* an event name has no '/' (docs/protocol.md, "Names"): /v1/events/E/x is no path of ours */
    size_t url_len = strlen(url);
    bool under_events = url_len >= 11 && memcmp(url, "/v1/events/", 11) == 0;
    bool event = under_events && !memchr(url + 11, '/', url_len - 11);
    if (under_events && !event)
        return answer_text(mc, MHD_HTTP_NOT_FOUND, NULL, "not found: try POST /v1/OP or GET /v1/events/EVENT\n");
    if (!event && strncmp(url, "/v1/", 4) != 0)
        return answer_text(mc, MHD_HTTP_NOT_FOUND, NULL, "not found: try POST /v1/OP or GET /v1/events/EVENT\n");
    if (event ? !get : strcmp(method, MHD_HTTP_METHOD_POST) != 0)
        return answer_text(mc, MHD_HTTP_METHOD_NOT_ALLOWED, event ? "GET, HEAD" : "POST", "method not allowed\n");
    if (!event && !slot__http_op_ok(url + 4))
        return answer_text(mc, MHD_HTTP_NOT_FOUND, NULL, "not found: the op in /v1/OP is [a-z_]\n");
    hreq *r = hreq_new(h, mc);
    if (!r)
        return MHD_NO;
    *out = r;
    if (!event) {
        snprintf(r->op, sizeof(r->op), "%s", url + 4);
        const char *cl = MHD_lookup_connection_value(mc, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
        if (cl && strtoull(cl, NULL, 10) > s->opts.line_bytes_max)
            r->too_long = true;
        return MHD_YES;
    }
    /* GET /v1/events/E is the event op's request; the name is checked by the parser */
    r->kind = HR_EVENT;
    snprintf(r->op, sizeof(r->op), "event");
    r->body_len = slot__http_event_body(&r->body, &r->body_cap, url + 11);
    return r->body_len ? MHD_YES : MHD_NO;
}

static enum MHD_Result add_value_bytes(void *cls, enum MHD_ValueKind kind, const char *key, const char *value)
{
    size_t *n = cls;
    /* "KEY: VALUE\r\n" for a header; "KEY=VALUE" and a '?' or '&' for a query argument */
    *n += strlen(key) + (value ? strlen(value) : 0) + (kind == MHD_HEADER_KIND ? 4 : 2);
    return MHD_YES;
}

/* The bytes of mc's head: its request line and header lines with their
 * CRLFs and the empty line. The path and query are counted as libmicrohttpd
 * decoded them (a %XX escape is one byte here), so a head is at most a few
 * bytes longer on the wire than this says. */
static size_t head_bytes(struct MHD_Connection *mc, const char *url, const char *method, const char *version)
{
    size_t n = strlen(method) + 1 + strlen(url) + 1 + strlen(version) + 2 + 2;
    MHD_get_connection_values(mc, MHD_HEADER_KIND | MHD_GET_ARGUMENT_KIND, add_value_bytes, &n);
    return n;
}

/* A head over SLOT_HTTP_HEAD_BYTES_MAX: 431 with a line_too_long reply (the
 * shape of every other error), the connection closed after it, its body not
 * read. */
static enum MHD_Result answer_head_too_long(slot__http *h, struct MHD_Connection *mc, const char *url, size_t bytes,
                                            void **req_cls)
{
    char peer[64];
    peer_name(mc, peer, sizeof(peer));
    slot__log(SLOT__LOG_WARN, "HTTP request head too long: answered 431, the connection closed",
              SLOT__LF_S("peer", peer), SLOT__LF_U("head_bytes", bytes),
              SLOT__LF_U("max_head_bytes", SLOT_HTTP_HEAD_BYTES_MAX));
    hreq *r = hreq_new(h, mc);
    *req_cls = r;
    if (!r)
        return MHD_NO;
    r->head_too_long = true;
    if (!hreq_submit(r) || !hreq_progress(r))
        return MHD_NO;
    return answer_reply(r, url);
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *mc, const char *url, const char *method,
                                  const char *version, const char *upload, size_t *upload_size, void **req_cls)
{
    slot__http *h = cls;
    hreq *r = *req_cls;
    if (!r) {
        size_t head = head_bytes(mc, url, method, version);
        if (head > SLOT_HTTP_HEAD_BYTES_MAX)
            return answer_head_too_long(h, mc, url, head, req_cls);
        enum MHD_Result rc = route(h, mc, url, method, &r);
        *req_cls = r;
        if (!r || !r->too_long)
            return rc;
        /* Content-Length over --max-line: answered now, the body is not read */
        if (!hreq_submit(r) || !hreq_progress(r))
            return MHD_NO;
        return answer_reply(r, url);
    }
    if (r->queued)
        return MHD_YES; /* answered before its body ended (413): the rest is dropped */
    if (*upload_size > 0) {
        /* Past --max-line the body is read and dropped, and answered 413 at
         * its end (libmicrohttpd queues no answer in the middle of a body);
         * one that goes on past twice the limit (and a read buffer) is
         * dropped with its connection. */
        if (r->kind == HR_OP) /* a GET's body is dropped */
            body_append(r, upload, *upload_size);
        if (r->too_long)
            r->dropped_bytes += *upload_size;
        *upload_size = 0;
        return r->dropped_bytes > 2 * (size_t)h->s->opts.line_bytes_max + SLOT_HTTP_CONN_MEMORY_BYTES ? MHD_NO
                                                                                                      : MHD_YES;
    }
    if (r->kind != HR_OP && r->kind != HR_EVENT) {
        r->queued = true;
        return answer_plain(h->s, mc, r->kind);
    }
    if (!r->answered && !r->c.head && !hreq_submit(r))
        return MHD_NO;
    if (hreq_progress(r))
        return answer_reply(r, url);
    r->suspended = true;
    MHD_suspend_connection(mc);
    return MHD_YES;
}

static void on_completed(void *cls, struct MHD_Connection *mc, void **req_cls, enum MHD_RequestTerminationCode why)
{
    (void)cls;
    (void)mc;
    (void)why;
    hreq *r = *req_cls;
    *req_cls = NULL;
    if (r)
        hreq_free(r);
}

/* --max-connections is kept here rather than by MHD_OPTION_CONNECTION_LIMIT:
 * libmicrohttpd 0.9.75 with an external epoll loop stops serving the
 * connections it has once one more arrives at its own limit, while one
 * refused here is closed at once and the rest go on. */
static enum MHD_Result on_accept(void *cls, const struct sockaddr *addr, socklen_t len)
{
    slot__http *h = cls;
    (void)addr;
    (void)len;
    if (h->nconns < h->s->opts.conns_max) {
        h->at_limit = false;
        return MHD_YES;
    }
    if (!h->at_limit)
        slot__log(SLOT__LOG_WARN, "HTTP connection limit reached: new HTTP connections are closed",
                  SLOT__LF_U("max_connections", h->s->opts.conns_max));
    h->at_limit = true;
    return MHD_NO;
}

static void on_connection(void *cls, struct MHD_Connection *mc, void **socket_ctx,
                          enum MHD_ConnectionNotificationCode what)
{
    slot__http *h = cls;
    (void)mc;
    (void)socket_ctx;
    if (what == MHD_CONNECTION_NOTIFY_STARTED) {
        h->nconns++;
        h->s->stats.conns_total++;
    } else if (h->nconns > 0) {
        h->nconns--;
    }
}

static void on_mhd_log(void *cls, const char *fmt, va_list ap)
{
    (void)cls;
    char line[256];
    vsnprintf(line, sizeof(line), fmt, ap);
    line[strcspn(line, "\r\n")] = 0;
    slot__log(SLOT__LOG_WARN, "libmicrohttpd", SLOT__LF_S("detail", line));
}

/* ---- driving it from the loop */

/* One MHD_run, then the timer re-armed from libmicrohttpd's next timeout. */
static void http_run(slot__http *h)
{
    MHD_run(h->d);
    /* From the timer (the loop's timer phase) the loop would block in its
     * poll before its check handle dispatches what was queued: go now. */
    slot__dispatch(h->s);
    MHD_UNSIGNED_LONG_LONG to_ms = 0;
    if (MHD_get_timeout(h->d, &to_ms) == MHD_YES)
        uv_timer_start(&h->timer, on_timer, to_ms, 0);
    else
        uv_timer_stop(&h->timer);
}

static void on_timer(uv_timer_t *t)
{
    http_run(t->data);
}

static void on_poll(uv_poll_t *p, int status, int events)
{
    (void)status;
    (void)events;
    http_run(p->data);
}

int slot__http_start(server *s, const struct sockaddr *sa)
{
    const slot__server_opts *o = &s->opts;
    slot__http *h = calloc(1, sizeof(*h));
    if (!h) {
        slot__log(SLOT__LOG_ERROR, "--http: out of memory");
        return -1;
    }
    h->s = s;
    s->http.listener = h;
    /* libmicrohttpd's one timeout is a silence bound: a head or body that
     * stops coming, and an idle keep-alive connection, are dropped after it */
    uint32_t to_ms = o->line_timeout_ms;
    if (o->idle_timeout_ms && o->idle_timeout_ms < to_ms)
        to_ms = o->idle_timeout_ms;
    unsigned to_s = (to_ms + 999) / 1000;
    h->d = MHD_start_daemon(MHD_USE_EPOLL | MHD_ALLOW_SUSPEND_RESUME | MHD_USE_ERROR_LOG, 0, on_accept, h, on_request,
                            h, MHD_OPTION_EXTERNAL_LOGGER, on_mhd_log, h, MHD_OPTION_SOCK_ADDR, sa,
                            MHD_OPTION_CONNECTION_LIMIT, (unsigned)o->conns_max + 64u, MHD_OPTION_CONNECTION_TIMEOUT,
                            to_s ? to_s : 1u, MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)SLOT_HTTP_CONN_MEMORY_BYTES,
                            MHD_OPTION_LISTEN_BACKLOG_SIZE, (unsigned)SLOT_LISTEN_BACKLOG, MHD_OPTION_NOTIFY_COMPLETED,
                            on_completed, h, MHD_OPTION_NOTIFY_CONNECTION, on_connection, h, MHD_OPTION_END);
    if (!h->d) {
        slot__log(SLOT__LOG_ERROR, "--http: libmicrohttpd could not listen there (the address may be taken)",
                  SLOT__LF_S("host", o->http_host), SLOT__LF_U("port", o->http_port));
        return -1;
    }
    const union MHD_DaemonInfo *ep = MHD_get_daemon_info(h->d, MHD_DAEMON_INFO_EPOLL_FD);
    const union MHD_DaemonInfo *lf = MHD_get_daemon_info(h->d, MHD_DAEMON_INFO_LISTEN_FD);
    if (!ep || !lf) {
        slot__log(SLOT__LOG_ERROR, "--http: libmicrohttpd has no epoll descriptor");
        return -1;
    }
    struct sockaddr_storage ss;
    socklen_t len = sizeof(ss);
    char name[64] = "?";
    unsigned port = 0;
    if (getsockname(lf->listen_fd, (struct sockaddr *)&ss, &len) == 0) {
        uv_ip_name((struct sockaddr *)&ss, name, sizeof(name));
        port = ntohs(ss.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&ss)->sin6_port
                                              : ((struct sockaddr_in *)&ss)->sin_port);
    }
    snprintf(s->http.addr, sizeof(s->http.addr), ss.ss_family == AF_INET6 ? "[%s]:%u" : "%s:%u", name, port);
    uv_poll_init(s->loop, &h->poll, ep->epoll_fd);
    uv_timer_init(s->loop, &h->timer);
    h->poll.data = h->timer.data = h;
    h->handles = true;
    uv_poll_start(&h->poll, UV_READABLE, on_poll);
    http_run(h);
    return 0;
}

void slot__http_quiesce(server *s)
{
    slot__http *h = s->http.listener;
    if (!h || h->quiesced)
        return;
    h->quiesced = true;
    MHD_socket fd = MHD_quiesce_daemon(h->d);
    if (fd != MHD_INVALID_SOCKET)
        close(fd);
}

bool slot__http_busy(const server *s)
{
    return s->http.listener && s->http.listener->live > 0;
}

void slot__http_free(server *s)
{
    slot__http *h = s->http.listener;
    if (!h)
        return;
    /* libmicrohttpd refuses to stop with a connection still suspended (a
     * read that waited past the stop's deadline): resume them to be closed */
    for (conn *c = s->http.conns; c; c = c->next)
        if (c->http->suspended) {
            c->http->suspended = false;
            MHD_resume_connection(c->http->mc);
        }
    if (h->d)
        MHD_stop_daemon(h->d); /* its completion callbacks free the requests left */
    while (h->pool) {
        hreq *r = h->pool;
        h->pool = (hreq *)r->c.next;
        free(r->c.out);
        free(r->body);
        free(r->line);
        free(r);
    }
    free(h);
    s->http.listener = NULL;
}
