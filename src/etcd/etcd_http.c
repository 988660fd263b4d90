/*
 * etcd_http.c — the etcd client's transport (etcd_int.h): libcurl's multi
 * interface on the caller's libuv loop, requests on the wire, endpoint
 * retries, the in-flight and body bounds, and teardown.
 *
 * How the loop drives curl (libcurl's docs/examples/multi-uv.c): curl tells
 * us which sockets to watch (on_socket: one uv_poll_t each) and when to wake
 * it (on_curl_timer: one uv_timer_t); libuv tells curl what happened
 * (curl_multi_socket_action from on_poll / on_timer). After each action we
 * deliver buffered watch events (slot__etcd_dispatch_watches), then finished
 * transfers (check_done). Nothing calls back into curl from inside a curl
 * callback: on_write only buffers, and user callbacks run from
 * slot__etcd_dispatch_watches and check_done, where adding and removing
 * handles is allowed.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "etcd_int.h"
#include "slot/assert.h"

/* The gateway's path for each kind, in slot__etcd_kind's order. */
static const char *const kind_path[] = {"/v3/kv/range",        "/v3/kv/range",       "/v3/kv/txn",
                                        "/v3/kv/put",          "/v3/kv/deleterange", "/v3/lease/grant",
                                        "/v3/lease/keepalive", "/v3/lease/revoke",   "/v3/watch"};
_Static_assert(sizeof kind_path / sizeof kind_path[0] == SLOT__ETCD_WATCH + 1, "a path per kind");
_Static_assert(SLOT_ETCD_ENDPOINT_BYTES_MAX + sizeof "/v3/lease/keepalive" <= SLOT_ETCD_URL_BYTES_MAX,
               "an endpoint and the longest path fit a URL");

/* ---- uv handles ---- */

static void client_maybe_free(slot_etcd *c)
{
    if (c->torn_down && c->open_handles == 0)
        free(c);
}

static void on_poll_closed(uv_handle_t *h)
{
    slot__etcd_poll *p = h->data;
    slot_etcd *c = p->c;
    free(p);
    SLOT_ASSERT(c->open_handles > 0);
    c->open_handles--;
    client_maybe_free(c);
}

static void poll_close(slot_etcd *c, slot__etcd_poll *p)
{
    uv_poll_stop(&p->poll);
    if (p->prev)
        p->prev->next = p->next;
    else
        c->polls = p->next;
    if (p->next)
        p->next->prev = p->prev;
    p->prev = p->next = NULL;
    uv_close((uv_handle_t *)&p->poll, on_poll_closed);
}

static void on_timer_closed(uv_handle_t *h)
{
    slot_etcd *c = h->data;
    SLOT_ASSERT(c->open_handles > 0);
    c->open_handles--;
    client_maybe_free(c);
}

/* ---- requests ---- */

void slot__etcd_req_unlink(slot__etcd_req *r)
{
    slot_etcd *c = r->c;
    c->ended++;
    if (r->prev)
        r->prev->next = r->next;
    else
        c->reqs = r->next;
    if (r->next)
        r->next->prev = r->prev;
    r->prev = r->next = NULL;
    SLOT_ASSERT(c->inflight > 0);
    c->inflight--;
}

void slot__etcd_req_free(slot__etcd_req *r)
{
    if (r->easy)
        curl_easy_cleanup(r->easy);
    free(r->body);
    free(r->resp);
    free(r);
}

void slot__etcd_req_detach(slot__etcd_req *r)
{
    if (r->attached) {
        curl_multi_remove_handle(r->c->multi, r->easy);
        r->attached = false;
    }
}

static size_t on_write(char *ptr, size_t size, size_t nmemb, void *ud)
{
    slot__etcd_req *r = ud;
    size_t n = size * nmemb;
    if (n == 0)
        return 0;
    r->got_bytes = true;
    if (n > r->c->body_max - r->resp_len) {
        r->too_big = true;
        return 0; /* anything but n makes curl fail the transfer (CURLE_WRITE_ERROR) */
    }
    if (r->resp_len + n + 1 > r->resp_cap) {
        size_t cap = r->resp_cap ? r->resp_cap : SLOT_ETCD_RESP_BYTES_INITIAL;
        while (cap < r->resp_len + n + 1)
            cap *= 2;
        if (cap > (size_t)r->c->body_max + 1)
            cap = (size_t)r->c->body_max + 1;
        char *p = realloc(r->resp, cap);
        if (!p)
            return 0;
        r->resp = p;
        r->resp_cap = cap;
    }
    memcpy(r->resp + r->resp_len, ptr, n);
    r->resp_len += n;
    r->resp[r->resp_len] = '\0';
    if (r->kind == SLOT__ETCD_WATCH)
        r->dirty = true;
    return n;
}

/* Start (or restart) the attempt on endpoint r->ep. */
static int req_attach(slot__etcd_req *r)
{
    slot_etcd *c = r->c;
    char url[SLOT_ETCD_URL_BYTES_MAX];
    snprintf(url, sizeof url, "%s%s", c->eps[r->ep], kind_path[r->kind]);
    r->resp_len = 0;
    r->too_big = r->got_bytes = false;
    if (curl_easy_setopt(r->easy, CURLOPT_URL, url) != CURLE_OK)
        return SLOT_ETCD_ENOMEM;
    if (curl_multi_add_handle(c->multi, r->easy) != CURLM_OK)
        return SLOT_ETCD_ENOMEM;
    r->attached = true;
    return 0;
}

static int req_setup_easy(slot__etcd_req *r)
{
    slot_etcd *c = r->c;
    CURL *e = curl_easy_init();
    if (!e)
        return SLOT_ETCD_ENOMEM;
    r->easy = e;
    CURLcode rc = CURLE_OK;
#define SET(opt, val)                           \
    do {                                        \
        if (rc == CURLE_OK)                     \
            rc = curl_easy_setopt(e, opt, val); \
    } while (0)
    SET(CURLOPT_PRIVATE, (void *)r);
    SET(CURLOPT_NOSIGNAL, 1L);
    SET(CURLOPT_PROXY, ""); /* never an http_proxy from the environment */
    SET(CURLOPT_PROTOCOLS_STR, "http,https");
    SET(CURLOPT_POST, 1L);
    SET(CURLOPT_POSTFIELDS, r->body);
    SET(CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)strlen(r->body));
    SET(CURLOPT_HTTPHEADER, c->headers);
    SET(CURLOPT_WRITEFUNCTION, on_write);
    SET(CURLOPT_WRITEDATA, (void *)r);
    SET(CURLOPT_CONNECTTIMEOUT_MS, (long)c->timeout_ms);
    if (r->kind == SLOT__ETCD_WATCH) {
        SET(CURLOPT_TCP_KEEPALIVE, 1L);
        SET(CURLOPT_TCP_KEEPIDLE, (long)SLOT_ETCD_WATCH_KEEPIDLE_S);
        SET(CURLOPT_TCP_KEEPINTVL, (long)SLOT_ETCD_WATCH_KEEPINTVL_S);
    } else {
        SET(CURLOPT_TIMEOUT_MS, (long)c->timeout_ms);
    }
#undef SET
    return rc == CURLE_OK ? 0 : SLOT_ETCD_ENOMEM;
}

/* Make a request of `kind` with `body` (stolen, may be NULL on ENOMEM). */
int slot__etcd_req_start(slot_etcd *c, slot__etcd_kind kind, json_t *body, void *cb, void *data, slot__etcd_req **out)
{
    if (!body)
        return SLOT_ETCD_ENOMEM;
    int rc = 0;
    if (c->closing)
        rc = SLOT_ETCD_ECANCELLED;
    else if (c->inflight >= c->inflight_max)
        rc = SLOT_ETCD_EFULL;
    if (rc != 0) {
        json_decref(body);
        return rc;
    }
    slot__etcd_req *r = calloc(1, kind == SLOT__ETCD_WATCH ? sizeof(struct slot_etcd_watch) : sizeof(slot__etcd_req));
    char *text = json_dumps(body, JSON_COMPACT);
    json_decref(body);
    if (!r || !text) {
        free(r);
        free(text);
        return SLOT_ETCD_ENOMEM;
    }
    r->c = c;
    r->kind = kind;
    r->body = text;
    r->cb = cb;
    r->data = data;
    r->ep = c->ep_pref;
    r->tries = 1;
    rc = req_setup_easy(r);
    if (rc == 0)
        rc = req_attach(r);
    if (rc != 0) {
        slot__etcd_req_detach(r);
        slot__etcd_req_free(r);
        return rc;
    }
    r->next = c->reqs;
    if (c->reqs)
        c->reqs->prev = r;
    c->reqs = r;
    c->inflight++;
    if (out)
        *out = r;
    return 0;
}

/* Parse the first JSON value of the body (a streaming answer may carry a
 * newline after it). */
json_t *slot__etcd_body_json(slot__etcd_req *r)
{
    if (!r->resp)
        return NULL;
    json_error_t jerr;
    json_t *root = json_loadb(r->resp, r->resp_len, JSON_DISABLE_EOF_CHECK, &jerr);
    if (root && !json_is_object(root)) {
        json_decref(root);
        return NULL;
    }
    return root;
}

/* End a request: unlink, run its callback once, free. */
static void req_finish(slot__etcd_req *r, int status)
{
    slot__etcd_req_detach(r);
    slot__etcd_req_unlink(r);
    slot__etcd_deliver(r, status);
    slot__etcd_req_free(r);
}

/* ---- finished transfers ---- */

/* The outcome of one attempt: 0, or an error; *retry when another endpoint
 * may do better. */
static int attempt_status(slot__etcd_req *r, CURLcode rc, bool *retry)
{
    *retry = false;
    switch (rc) {
    case CURLE_OK:
        break;
    case CURLE_COULDNT_CONNECT:
    case CURLE_COULDNT_RESOLVE_HOST:
        *retry = true;
        return SLOT_ETCD_ECONNECT;
    case CURLE_OPERATION_TIMEDOUT:
        *retry = true;
        return SLOT_ETCD_ETIMEDOUT;
    case CURLE_GOT_NOTHING:
    case CURLE_SEND_ERROR:
    case CURLE_RECV_ERROR:
    case CURLE_PARTIAL_FILE:
        *retry = true;
        return SLOT_ETCD_EDISCONNECT;
    case CURLE_WRITE_ERROR:
        return r->too_big ? SLOT_ETCD_ETOOBIG : SLOT_ETCD_ENOMEM;
    case CURLE_OUT_OF_MEMORY:
        return SLOT_ETCD_ENOMEM;
    default:
        return SLOT_ETCD_EPROTO;
    }
    long http = 0;
    curl_easy_getinfo(r->easy, CURLINFO_RESPONSE_CODE, &http);
    if (http == 200)
        return 0;
    /* etcd's gateway error: {"error": "...", "code": gRPC code, "message": "..."} */
    json_t *root = slot__etcd_body_json(r);
    json_int_t code = json_integer_value(json_object_get(root, "code"));
    json_decref(root);
    if (http == 503 || code == 14) { /* UNAVAILABLE: this member has no leader */
        *retry = true;
        return SLOT_ETCD_ESERVER;
    }
    if (code == 5) /* NOT_FOUND: the lease */
        return SLOT_ETCD_ENOTFOUND;
    return SLOT_ETCD_ESERVER;
}

static void attempt_done(slot__etcd_req *r, CURLcode rc)
{
    slot_etcd *c = r->c;
    bool retry;
    int status = attempt_status(r, rc, &retry);
    if (r->kind == SLOT__ETCD_WATCH) {
        if (status == 0) /* a watch's stream never ends by itself */
            status = SLOT_ETCD_EDISCONNECT;
        if (r->got_bytes)
            retry = false; /* it was up: report the loss, the caller re-arms */
    }
    SLOT_ASSERT(r->tries >= 1 && r->tries <= c->neps && c->neps <= SLOT_ETCD_ATTEMPTS_MAX);
    if (status != 0 && retry && r->tries < c->neps) { /* each endpoint once */
        r->tries++;
        r->ep = (r->ep + 1) % c->neps;
        int arc = req_attach(r);
        if (arc == 0)
            return;
        status = arc;
    }
    if (status == 0)
        c->ep_pref = r->ep;
    else if (retry)
        c->ep_pref = (r->ep + 1) % c->neps; /* the next request starts past the failed one */
    if (r->kind == SLOT__ETCD_WATCH)
        slot__etcd_watch_end(r, status);
    else
        req_finish(r, status);
}

static void check_done(slot_etcd *c)
{
    CURLMsg *m;
    int left;
    while (!c->closing && (m = curl_multi_info_read(c->multi, &left))) {
        if (m->msg != CURLMSG_DONE)
            continue;
        CURL *e = m->easy_handle;
        CURLcode rc = m->data.result;
        char *priv = NULL;
        curl_easy_getinfo(e, CURLINFO_PRIVATE, &priv);
        slot__etcd_req *r = (slot__etcd_req *)(void *)priv;
        SLOT_ASSERT(r && r->easy == e);
        slot__etcd_req_detach(r);
        attempt_done(r, rc);
    }
}

void slot__etcd_teardown(slot_etcd *c)
{
    SLOT_ASSERT(c->closing && !c->torn_down && c->busy == 0);
    c->torn_down = true;
    /* Each pass ends the head; a cancelled callback may end others (a watch
     * cancel), never add (closing). */
    while (c->reqs) {
        slot__etcd_req *r = c->reqs;
        if (r->kind == SLOT__ETCD_WATCH)
            slot__etcd_watch_end(r, SLOT_ETCD_ECANCELLED);
        else
            req_finish(r, SLOT_ETCD_ECANCELLED);
    }
    curl_multi_cleanup(c->multi);
    c->multi = NULL;
    while (c->polls)
        poll_close(c, c->polls);
    uv_timer_stop(&c->timer);
    uv_close((uv_handle_t *)&c->timer, on_timer_closed);
    curl_slist_free_all(c->headers);
    c->headers = NULL;
}

/* One step of curl on the loop, then what it finished. */
static void drive(slot_etcd *c, curl_socket_t fd, int flags)
{
    SLOT_ASSERT(!c->torn_down);
    c->busy++;
    int running = 0;
    curl_multi_socket_action(c->multi, fd, flags, &running);
    slot__etcd_dispatch_watches(c);
    check_done(c);
    c->busy--;
    if (c->closing && c->busy == 0)
        slot__etcd_teardown(c);
}

static void on_poll(uv_poll_t *h, int status, int events)
{
    slot__etcd_poll *p = h->data;
    int flags = 0;
    if (status < 0)
        flags = CURL_CSELECT_ERR;
    else {
        if (events & UV_READABLE)
            flags |= CURL_CSELECT_IN;
        if (events & UV_WRITABLE)
            flags |= CURL_CSELECT_OUT;
    }
    drive(p->c, p->fd, flags);
}

static void on_timer(uv_timer_t *t)
{
    drive(t->data, CURL_SOCKET_TIMEOUT, 0);
}

static int on_curl_timer(CURLM *multi, long timeout_ms, void *userp)
{
    (void)multi;
    slot_etcd *c = userp;
    if (c->torn_down)
        return 0;
    if (timeout_ms < 0) {
        uv_timer_stop(&c->timer);
        return 0;
    }
    /* 0 means "now": 1 ms lets the loop poll first (a 0 ms timer restarted
     * from its own callback would run again in the same iteration). */
    uv_timer_start(&c->timer, on_timer, timeout_ms > 0 ? (uint64_t)timeout_ms : 1, 0);
    return 0;
}

static int on_socket(CURL *easy, curl_socket_t s, int what, void *userp, void *socketp)
{
    (void)easy;
    slot_etcd *c = userp;
    slot__etcd_poll *p = socketp;
    if (what == CURL_POLL_REMOVE) {
        if (p) {
            poll_close(c, p);
            if (!c->torn_down)
                curl_multi_assign(c->multi, s, NULL);
        }
        return 0;
    }
    if (!p) {
        p = calloc(1, sizeof *p);
        if (!p)
            return -1;
        if (uv_poll_init_socket(c->loop, &p->poll, s) != 0) {
            free(p);
            return -1;
        }
        p->poll.data = p;
        p->fd = s;
        p->c = c;
        p->next = c->polls;
        if (c->polls)
            c->polls->prev = p;
        c->polls = p;
        c->open_handles++;
        curl_multi_assign(c->multi, s, p);
    }
    int ev = 0;
    if (what & CURL_POLL_IN)
        ev |= UV_READABLE;
    if (what & CURL_POLL_OUT)
        ev |= UV_WRITABLE;
    return uv_poll_start(&p->poll, ev, on_poll) == 0 ? 0 : -1;
}

/* ---- set-up ---- */

static pthread_once_t curl_once = PTHREAD_ONCE_INIT;
static CURLcode curl_init_rc = CURLE_FAILED_INIT;

static void curl_init(void)
{
    /* process-wide, never cleaned up: other users of libcurl may share it */
    curl_init_rc = curl_global_init(CURL_GLOBAL_DEFAULT);
}

int slot__etcd_curl_init(void)
{
    pthread_once(&curl_once, curl_init);
    return curl_init_rc == CURLE_OK ? 0 : SLOT_ETCD_ENOMEM;
}

int slot__etcd_http_open(slot_etcd *c)
{
    struct curl_slist *h = curl_slist_append(NULL, "Content-Type: application/json");
    struct curl_slist *h2 = h ? curl_slist_append(h, "Expect:") : NULL; /* no 100-continue round trip */
    c->multi = curl_multi_init();
    if (!h2 || !c->multi) {
        curl_slist_free_all(h2 ? h2 : h);
        if (c->multi)
            curl_multi_cleanup(c->multi);
        c->multi = NULL;
        return SLOT_ETCD_ENOMEM;
    }
    c->headers = h2;
    curl_multi_setopt(c->multi, CURLMOPT_SOCKETFUNCTION, on_socket);
    curl_multi_setopt(c->multi, CURLMOPT_SOCKETDATA, (void *)c);
    curl_multi_setopt(c->multi, CURLMOPT_TIMERFUNCTION, on_curl_timer);
    curl_multi_setopt(c->multi, CURLMOPT_TIMERDATA, (void *)c);
    SLOT_ASSERT(uv_timer_init(c->loop, &c->timer) == 0); /* cannot fail on Unix */
    c->timer.data = c;
    c->open_handles = 1;
    return 0;
}
