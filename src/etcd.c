/*
 * etcd.c — the etcd v3 client (slot/etcd.h): libcurl's multi interface on
 * the caller's libuv loop, etcd's JSON gateway, jansson.
 *
 * How the loop drives curl (libcurl's docs/examples/multi-uv.c): curl tells
 * us which sockets to watch (on_socket: one uv_poll_t each) and when to wake
 * it (on_curl_timer: one uv_timer_t); libuv tells curl what happened
 * (curl_multi_socket_action from on_poll / on_timer). After each action we
 * deliver buffered watch events (dispatch_watches), then finished transfers
 * (check_done). Nothing calls back into curl from inside a curl callback:
 * on_write only buffers, and user callbacks run from dispatch_watches and
 * check_done, where adding and removing handles is allowed.
 *
 * Lifetimes: a request (struct req) lives from the call that makes it to the
 * return of its callback. The client lives until slot_etcd_close has run
 * (teardown) and every uv handle it opened has been closed. `busy` counts
 * the loop callbacks running on the client, so a close from inside one of
 * them waits for it to unwind before tearing anything down.
 */
#include "slot/etcd.h"

#include <curl/curl.h>
#include <errno.h>
#include <inttypes.h>
#include <jansson.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "slot/assert.h"

#define URL_BYTES_MAX (SLOT_ETCD_ENDPOINT_BYTES_MAX + 32) /* an endpoint plus the longest path */

typedef enum req_kind { K_GET, K_RANGE, K_CAS, K_PUT, K_DEL, K_GRANT, K_KEEPALIVE, K_REVOKE, K_WATCH } req_kind;
static const char *const kind_path[] = {"/v3/kv/range",     "/v3/kv/range",        "/v3/kv/txn",
                                        "/v3/kv/put",       "/v3/kv/deleterange",  "/v3/lease/grant",
                                        "/v3/lease/keepalive", "/v3/lease/revoke", "/v3/watch"};
_Static_assert(sizeof kind_path / sizeof kind_path[0] == K_WATCH + 1, "a path per kind");

typedef struct req {
    slot_etcd *c;
    struct req *prev, *next; /* c->reqs */
    req_kind kind;
    CURL *easy;
    bool attached; /* added to c->multi */
    char *body;    /* the request JSON, owned */
    char *resp;    /* the response so far, owned; resp_len <= c->body_max */
    size_t resp_len, resp_cap;
    bool too_big, got_bytes;
    uint32_t tries; /* endpoints tried, 1..c->neps */
    uint32_t ep;    /* the endpoint of this attempt */
    void *cb;       /* one of the slot_etcd_*_cb, by kind */
    void *data;
    int64_t lease_id; /* keepalive, revoke */
    /* watches only */
    slot_etcd_event_cb ev_cb;
    bool dirty;       /* bytes arrived since the last dispatch */
    bool dispatching; /* inside dispatch: cancel is deferred */
    bool cancel_asked, ending, from_now;
    size_t scan_pos, msg_start; /* the message splitter's state over resp */
    int depth;
    bool in_str, esc;
    int64_t last_rev;
} req;

struct slot_etcd_watch {
    req r; /* first: a watch is a request */
};

typedef struct poll_ctx {
    uv_poll_t poll;
    curl_socket_t fd;
    slot_etcd *c;
    struct poll_ctx *prev, *next; /* c->polls */
} poll_ctx;

struct slot_etcd {
    uv_loop_t *loop;
    CURLM *multi;
    uv_timer_t timer;
    char eps[SLOT_ETCD_ENDPOINTS_MAX][SLOT_ETCD_ENDPOINT_BYTES_MAX + 1];
    uint32_t neps, ep_pref; /* ep_pref: the endpoint that answered last */
    uint32_t timeout_ms, inflight_max, body_max;
    uint32_t inflight;
    uint64_t ended; /* requests ended so far (dispatch_watches' check) */
    req *reqs;
    poll_ctx *polls;
    struct curl_slist *headers;
    int busy;
    bool closing, torn_down;
    uint32_t open_handles; /* uv handles not yet closed (the timer, the polls) */
};

/* ---- errors ---- */

const char *slot_etcd_strerror(int err) {
    if (err == 0)
        return "success";
    switch (err) {
#define SLOT__ETCD_ERR_MSG(name, value, msg)                                                    \
    case value:                                                                                \
        return msg;
        SLOT_ETCD_ERR_MAP(SLOT__ETCD_ERR_MSG)
#undef SLOT__ETCD_ERR_MSG
    }
    return "unknown etcd client error";
}

const char *slot_etcd_err_name(int err) {
    if (err == 0)
        return "OK";
    switch (err) {
#define SLOT__ETCD_ERR_NAME(name, value, msg)                                                   \
    case value:                                                                                \
        return #name;
        SLOT_ETCD_ERR_MAP(SLOT__ETCD_ERR_NAME)
#undef SLOT__ETCD_ERR_NAME
    }
    return "UNKNOWN";
}

/* ---- base64 ---- */

static const char b64_alphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

long slot_etcd_b64_encode(const void *src, size_t n, char *dst, size_t cap) {
    const uint8_t *s = src;
    if (n > ((size_t)LONG_MAX / 4) * 3 - 3)
        return SLOT_ETCD_EINVAL;
    size_t out = (n + 2) / 3 * 4;
    if (out + 1 > cap)
        return SLOT_ETCD_EINVAL;
    size_t o = 0;
    for (size_t i = 0; i < n; i += 3) {
        uint32_t v = (uint32_t)s[i] << 16;
        if (i + 1 < n)
            v |= (uint32_t)s[i + 1] << 8;
        if (i + 2 < n)
            v |= s[i + 2];
        dst[o++] = b64_alphabet[(v >> 18) & 63];
        dst[o++] = b64_alphabet[(v >> 12) & 63];
        dst[o++] = i + 1 < n ? b64_alphabet[(v >> 6) & 63] : '=';
        dst[o++] = i + 2 < n ? b64_alphabet[v & 63] : '=';
    }
    SLOT_ASSERT(o == out);
    dst[o] = '\0';
    return (long)o;
}

static int b64_value(char ch) {
    if (ch >= 'A' && ch <= 'Z')
        return ch - 'A';
    if (ch >= 'a' && ch <= 'z')
        return ch - 'a' + 26;
    if (ch >= '0' && ch <= '9')
        return ch - '0' + 52;
    if (ch == '+')
        return 62;
    if (ch == '/')
        return 63;
    return -1;
}

long slot_etcd_b64_decode(const char *src, size_t n, uint8_t *dst, size_t cap) {
    if (n % 4 != 0 || n > (size_t)LONG_MAX)
        return SLOT_ETCD_EPROTO;
    size_t pad = 0;
    if (n >= 4 && src[n - 1] == '=')
        pad = src[n - 2] == '=' ? 2 : 1;
    size_t out = n / 4 * 3 - pad;
    if (out + 1 > cap)
        return SLOT_ETCD_EINVAL;
    size_t o = 0;
    for (size_t i = 0; i < n; i += 4) {
        bool last = i + 4 == n;
        int v[4];
        for (size_t j = 0; j < 4; j++) {
            bool is_pad = last && j >= 4 - pad;
            v[j] = is_pad ? 0 : b64_value(src[i + j]);
            if (v[j] < 0)
                return SLOT_ETCD_EPROTO;
        }
        uint32_t w = (uint32_t)v[0] << 18 | (uint32_t)v[1] << 12 | (uint32_t)v[2] << 6 | (uint32_t)v[3];
        if (last && pad == 2 && (w & 0xffff) != 0)
            return SLOT_ETCD_EPROTO; /* bits past the last byte must be zero */
        if (last && pad == 1 && (w & 0xff) != 0)
            return SLOT_ETCD_EPROTO;
        dst[o++] = (uint8_t)(w >> 16);
        if (!(last && pad == 2))
            dst[o++] = (uint8_t)(w >> 8);
        if (!(last && pad >= 1))
            dst[o++] = (uint8_t)w;
    }
    SLOT_ASSERT(o == out);
    dst[o] = '\0';
    return (long)o;
}

/* A heap base64 copy of n bytes as a new JSON string (NULL on ENOMEM). */
static json_t *b64_json(const void *src, size_t n) {
    size_t cap = (n + 2) / 3 * 4 + 1;
    char *t = malloc(cap);
    if (!t)
        return NULL;
    long len = slot_etcd_b64_encode(src, n, t, cap);
    SLOT_ASSERT(len >= 0);
    json_t *s = json_stringn(t, (size_t)len);
    free(t);
    return s;
}

/* Decode the base64 JSON string `j` (absent = empty) into a new heap
 * buffer. Returns 0 or EPROTO / ENOMEM. */
static int b64_from_json(json_t *j, uint8_t **out, size_t *out_len) {
    const char *s = "";
    size_t n = 0;
    if (j) {
        if (!json_is_string(j))
            return SLOT_ETCD_EPROTO;
        s = json_string_value(j);
        n = json_string_length(j);
    }
    size_t cap = n / 4 * 3 + 1;
    uint8_t *b = malloc(cap);
    if (!b)
        return SLOT_ETCD_ENOMEM;
    long len = slot_etcd_b64_decode(s, n, b, cap);
    if (len < 0) {
        free(b);
        return (int)len;
    }
    *out = b;
    *out_len = (size_t)len;
    return 0;
}

/* ---- JSON helpers ---- */

/* An int64 field that etcd writes as a string (or, from other writers, a
 * number); absent means 0, as the gateway leaves zeros out. */
static int json_i64(json_t *obj, const char *name, int64_t *out) {
    json_t *v = obj ? json_object_get(obj, name) : NULL;
    *out = 0;
    if (!v)
        return 0;
    if (json_is_integer(v)) {
        *out = json_integer_value(v);
        return 0;
    }
    if (!json_is_string(v))
        return SLOT_ETCD_EPROTO;
    const char *s = json_string_value(v);
    char *end;
    errno = 0;
    long long x = strtoll(s, &end, 10);
    if (errno != 0 || end == s || *end != '\0' || (size_t)(end - s) != json_string_length(v))
        return SLOT_ETCD_EPROTO;
    *out = x;
    return 0;
}

static json_t *json_i64_str(int64_t v) {
    char t[24];
    snprintf(t, sizeof t, "%" PRId64, v);
    return json_string(t);
}

static int header_revision(json_t *root, int64_t *rev) {
    json_t *h = json_object_get(root, "header");
    if (h && !json_is_object(h))
        return SLOT_ETCD_EPROTO;
    return json_i64(h, "revision", rev);
}

static void kv_free(slot_etcd_kv *kv) {
    free((void *)kv->key);
    free((void *)kv->value);
    memset(kv, 0, sizeof *kv);
}

/* Parse one etcd KeyValue object into kv (heap key and value; kv_free). */
static int kv_parse(json_t *o, slot_etcd_kv *kv) {
    memset(kv, 0, sizeof *kv);
    if (!json_is_object(o))
        return SLOT_ETCD_EPROTO;
    uint8_t *k = NULL, *v = NULL;
    size_t klen = 0, vlen = 0;
    int rc = b64_from_json(json_object_get(o, "key"), &k, &klen);
    if (rc == 0)
        rc = b64_from_json(json_object_get(o, "value"), &v, &vlen);
    kv->key = (const char *)k;
    kv->key_len = klen;
    kv->value = v;
    kv->value_len = vlen;
    if (rc == 0)
        rc = json_i64(o, "create_revision", &kv->create_revision);
    if (rc == 0)
        rc = json_i64(o, "mod_revision", &kv->mod_revision);
    if (rc == 0)
        rc = json_i64(o, "version", &kv->version);
    if (rc == 0)
        rc = json_i64(o, "lease", &kv->lease);
    if (rc != 0)
        kv_free(kv);
    return rc;
}

/* ---- argument checks ---- */

static bool key_ok(const char *key) {
    if (!key)
        return false;
    size_t n = strnlen(key, SLOT_ETCD_KEY_BYTES_MAX + 1);
    return n >= 1 && n <= SLOT_ETCD_KEY_BYTES_MAX;
}

static bool value_ok(const void *value, size_t len) {
    return len <= SLOT_ETCD_VALUE_BYTES_MAX && (value || len == 0);
}

/* ---- uv handles ---- */

static void client_maybe_free(slot_etcd *c) {
    if (c->torn_down && c->open_handles == 0)
        free(c);
}

static void on_poll_closed(uv_handle_t *h) {
    poll_ctx *p = h->data;
    slot_etcd *c = p->c;
    free(p);
    SLOT_ASSERT(c->open_handles > 0);
    c->open_handles--;
    client_maybe_free(c);
}

static void poll_close(slot_etcd *c, poll_ctx *p) {
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

static void on_timer_closed(uv_handle_t *h) {
    slot_etcd *c = h->data;
    SLOT_ASSERT(c->open_handles > 0);
    c->open_handles--;
    client_maybe_free(c);
}

/* ---- requests ---- */

static void req_unlink(req *r) {
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

static void req_free(req *r) {
    if (r->easy)
        curl_easy_cleanup(r->easy);
    free(r->body);
    free(r->resp);
    free(r);
}

static void req_detach(req *r) {
    if (r->attached) {
        curl_multi_remove_handle(r->c->multi, r->easy);
        r->attached = false;
    }
}

static size_t on_write(char *ptr, size_t size, size_t nmemb, void *ud) {
    req *r = ud;
    size_t n = size * nmemb;
    if (n == 0)
        return 0;
    r->got_bytes = true;
    if (n > r->c->body_max - r->resp_len) {
        r->too_big = true;
        return 0; /* anything but n makes curl fail the transfer (CURLE_WRITE_ERROR) */
    }
    if (r->resp_len + n + 1 > r->resp_cap) {
        size_t cap = r->resp_cap ? r->resp_cap : 1024;
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
    if (r->kind == K_WATCH)
        r->dirty = true;
    return n;
}

/* Start (or restart) the attempt on endpoint r->ep. */
static int req_attach(req *r) {
    slot_etcd *c = r->c;
    char url[URL_BYTES_MAX];
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

static int req_setup_easy(req *r) {
    slot_etcd *c = r->c;
    CURL *e = curl_easy_init();
    if (!e)
        return SLOT_ETCD_ENOMEM;
    r->easy = e;
    CURLcode rc = CURLE_OK;
#define SET(opt, val)                                                                           \
    do {                                                                                        \
        if (rc == CURLE_OK)                                                                     \
            rc = curl_easy_setopt(e, opt, val);                                                 \
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
    if (r->kind == K_WATCH) {
        SET(CURLOPT_TCP_KEEPALIVE, 1L);
        SET(CURLOPT_TCP_KEEPIDLE, 2L);
        SET(CURLOPT_TCP_KEEPINTVL, 1L);
    } else {
        SET(CURLOPT_TIMEOUT_MS, (long)c->timeout_ms);
    }
#undef SET
    return rc == CURLE_OK ? 0 : SLOT_ETCD_ENOMEM;
}

/* Make a request of `kind` with `body` (stolen, may be NULL on ENOMEM). */
static int req_start(slot_etcd *c, req_kind kind, json_t *body, void *cb, void *data, req **out) {
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
    req *r = calloc(1, kind == K_WATCH ? sizeof(struct slot_etcd_watch) : sizeof(req));
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
        req_detach(r);
        req_free(r);
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

/* ---- results by kind ---- */

static void deliver_get(req *r, int status, json_t *root) {
    slot_etcd_get_result res = {0};
    if (status == 0) {
        status = header_revision(root, &res.revision);
        json_t *kvs = json_object_get(root, "kvs");
        if (status == 0 && kvs && (!json_is_array(kvs) || json_array_size(kvs) > 1))
            status = SLOT_ETCD_EPROTO;
        if (status == 0 && kvs && json_array_size(kvs) == 1) {
            status = kv_parse(json_array_get(kvs, 0), &res.kv);
            res.found = status == 0;
        }
        if (status != 0)
            memset(&res, 0, sizeof res);
    }
    ((slot_etcd_get_cb)r->cb)(r->c, status, &res, r->data);
    kv_free(&res.kv);
}

static void deliver_range(req *r, int status, json_t *root) {
    slot_etcd_range_result res = {0};
    slot_etcd_kv *kvs = NULL;
    size_t n = 0;
    if (status == 0)
        status = header_revision(root, &res.revision);
    json_t *arr = root ? json_object_get(root, "kvs") : NULL;
    if (status == 0 && arr && !json_is_array(arr))
        status = SLOT_ETCD_EPROTO;
    if (status == 0 && arr && json_array_size(arr) > 0) {
        kvs = calloc(json_array_size(arr), sizeof *kvs);
        if (!kvs)
            status = SLOT_ETCD_ENOMEM;
        for (; status == 0 && n < json_array_size(arr); n++) {
            status = kv_parse(json_array_get(arr, n), &kvs[n]);
            if (status != 0)
                break;
        }
    }
    if (status == 0) {
        res.count = n;
        res.kvs = kvs;
        res.more = json_is_true(json_object_get(root, "more"));
    } else {
        memset(&res, 0, sizeof res);
    }
    ((slot_etcd_range_cb)r->cb)(r->c, status, &res, r->data);
    for (size_t i = 0; kvs && i < n; i++)
        kv_free(&kvs[i]);
    free(kvs);
}

static void deliver_cas(req *r, int status, json_t *root) {
    slot_etcd_cas_result res = {0};
    if (status == 0)
        status = header_revision(root, &res.revision);
    if (status == 0) {
        res.succeeded = json_is_true(json_object_get(root, "succeeded"));
        if (!res.succeeded) {
            /* responses[0].response_range.kvs: the failure branch's read */
            json_t *resp = json_object_get(root, "responses");
            json_t *rr = json_object_get(json_array_get(resp, 0), "response_range");
            json_t *kvs = json_object_get(rr, "kvs");
            if (!json_is_array(resp) || json_array_size(resp) != 1 || !json_is_object(rr))
                status = SLOT_ETCD_EPROTO;
            else if (kvs && (!json_is_array(kvs) || json_array_size(kvs) > 1))
                status = SLOT_ETCD_EPROTO;
            else if (kvs && json_array_size(kvs) == 1) {
                status = kv_parse(json_array_get(kvs, 0), &res.current);
                res.found = status == 0;
            }
        }
        if (status != 0)
            memset(&res, 0, sizeof res);
    }
    ((slot_etcd_cas_cb)r->cb)(r->c, status, &res, r->data);
    kv_free(&res.current);
}

static void deliver_write(req *r, int status, json_t *root) {
    slot_etcd_write_result res = {0};
    if (status == 0)
        status = header_revision(root, &res.revision);
    if (status == 0 && r->kind == K_DEL)
        status = json_i64(root, "deleted", &res.deleted);
    if (status != 0)
        memset(&res, 0, sizeof res);
    ((slot_etcd_write_cb)r->cb)(r->c, status, &res, r->data);
}

static void deliver_lease(req *r, int status, json_t *root) {
    slot_etcd_lease_result res = {0};
    json_t *o = root;
    if (status == 0 && r->kind == K_KEEPALIVE) {
        /* a streaming answer: {"result": {...}}, or {"error": {"grpc_code": N, ...}} */
        o = json_object_get(root, "result");
        json_t *e = json_object_get(root, "error");
        json_int_t code = json_integer_value(json_object_get(e, "grpc_code"));
        if (!json_is_object(o))
            status = !json_is_object(e) ? SLOT_ETCD_EPROTO
                     : code == 14 || code == 1 ? SLOT_ETCD_EDISCONNECT
                                               : SLOT_ETCD_ESERVER;
    }
    if (status == 0 && r->kind != K_REVOKE) {
        status = json_i64(o, "ID", &res.id);
        if (status == 0)
            status = json_i64(o, "TTL", &res.ttl_s);
        if (status == 0 && r->kind == K_GRANT && (res.id <= 0 || res.ttl_s <= 0))
            status = SLOT_ETCD_EPROTO;
        if (status == 0 && r->kind == K_KEEPALIVE && res.id != r->lease_id)
            status = SLOT_ETCD_EPROTO;
    }
    if (status == 0 && r->kind == K_REVOKE)
        res.id = r->lease_id;
    if (status != 0)
        memset(&res, 0, sizeof res);
    ((slot_etcd_lease_cb)r->cb)(r->c, status, &res, r->data);
}

/* Parse the first JSON value of the body (a streaming answer may carry a
 * newline after it). */
static json_t *body_json(req *r) {
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

static void deliver(req *r, int status) {
    json_t *root = NULL;
    if (status == 0) {
        root = body_json(r);
        if (!root)
            status = SLOT_ETCD_EPROTO;
    }
    switch (r->kind) {
    case K_GET:
        deliver_get(r, status, root);
        break;
    case K_RANGE:
        deliver_range(r, status, root);
        break;
    case K_CAS:
        deliver_cas(r, status, root);
        break;
    case K_PUT:
    case K_DEL:
        deliver_write(r, status, root);
        break;
    case K_GRANT:
    case K_KEEPALIVE:
    case K_REVOKE:
        deliver_lease(r, status, root);
        break;
    case K_WATCH:
        SLOT_ASSERT(!"watches end in watch_end");
    }
    json_decref(root);
}

/* End a request: unlink, run its callback once, free. */
static void req_finish(req *r, int status) {
    req_detach(r);
    req_unlink(r);
    deliver(r, status);
    req_free(r);
}

static void watch_end(req *r, int status) {
    SLOT_ASSERT(r->kind == K_WATCH);
    SLOT_ASSERT(!r->ending);
    r->ending = true;
    req_detach(r);
    req_unlink(r);
    ((slot_etcd_watch_end_cb)r->cb)((slot_etcd_watch *)r, status, r->last_rev, r->data);
    req_free(r);
}

/* ---- watches: split the stream into JSON messages, deliver events ---- */

/* Deliver the events of one watch message. Returns 0 to go on, or the
 * status the watch ends with. */
static int watch_message(req *r, const char *msg, size_t len) {
    json_error_t jerr;
    json_t *root = json_loadb(msg, len, 0, &jerr);
    if (!root || !json_is_object(root)) {
        json_decref(root);
        return SLOT_ETCD_EPROTO;
    }
    json_t *res = json_object_get(root, "result");
    int rc = 0;
    int64_t hdr_rev = 0, compact = 0;
    if (!json_is_object(res)) {
        /* {"error": {"grpc_code": 14, "message": "transport is closing"}} when
         * etcd stops: UNAVAILABLE (14) and CANCELED (1) are a lost stream */
        json_t *e = json_object_get(root, "error");
        json_int_t code = json_integer_value(json_object_get(e, "grpc_code"));
        rc = !json_is_object(e) ? SLOT_ETCD_EPROTO : code == 14 || code == 1 ? SLOT_ETCD_EDISCONNECT : SLOT_ETCD_ESERVER;
    }
    if (rc == 0)
        rc = header_revision(res, &hdr_rev);
    if (rc == 0)
        rc = json_i64(res, "compact_revision", &compact);
    if (rc == 0 && json_is_true(json_object_get(res, "canceled")))
        rc = compact > 0 ? SLOT_ETCD_ECOMPACTED : SLOT_ETCD_ESERVER;
    json_t *evs = rc == 0 ? json_object_get(res, "events") : NULL;
    if (rc == 0 && evs && !json_is_array(evs))
        rc = SLOT_ETCD_EPROTO;
    size_t n = evs ? json_array_size(evs) : 0;
    slot_etcd_event *ev = n ? calloc(n, sizeof *ev) : NULL;
    if (rc == 0 && n && !ev)
        rc = SLOT_ETCD_ENOMEM;
    size_t parsed = 0;
    /* Parse the whole message first, so an error never splits a revision. */
    for (; rc == 0 && parsed < n; parsed++) {
        json_t *e = json_array_get(evs, parsed);
        json_t *type = json_object_get(e, "type");
        if (!json_is_object(e) || (type && !json_is_string(type))) {
            rc = SLOT_ETCD_EPROTO;
            break;
        }
        const char *t = type ? json_string_value(type) : "PUT"; /* PUT is 0, left out */
        if (strcmp(t, "PUT") == 0)
            ev[parsed].type = SLOT_ETCD_EVENT_PUT;
        else if (strcmp(t, "DELETE") == 0)
            ev[parsed].type = SLOT_ETCD_EVENT_DELETE;
        else
            rc = SLOT_ETCD_EPROTO;
        if (rc == 0)
            rc = kv_parse(json_object_get(e, "kv"), &ev[parsed].kv);
        if (rc != 0)
            break;
    }
    if (rc == 0) {
        bool created = json_is_true(json_object_get(res, "created"));
        if (created && r->from_now)
            r->last_rev = hdr_rev; /* events come after the revision it started at */
        else if (!created && n == 0 && hdr_rev > r->last_rev)
            r->last_rev = hdr_rev; /* a progress notice: everything up to it was sent */
        for (size_t i = 0; i < n && !r->cancel_asked && !r->c->closing; i++) {
            if (ev[i].kv.mod_revision > r->last_rev)
                r->last_rev = ev[i].kv.mod_revision;
            r->ev_cb((slot_etcd_watch *)r, &ev[i], r->data);
        }
    }
    for (size_t i = 0; i < parsed && ev; i++)
        kv_free(&ev[i].kv);
    free(ev);
    json_decref(root);
    return rc;
}

/* Find the next whole JSON object in the buffer; the scanner's state
 * survives between calls so each byte is looked at once. Returns 1 with
 * [*start, *end) set, 0 when more bytes are needed, EPROTO on junk between
 * messages. */
static int watch_next(req *r, size_t *start, size_t *end) {
    for (; r->scan_pos < r->resp_len; r->scan_pos++) {
        char ch = r->resp[r->scan_pos];
        if (r->depth == 0) {
            if (ch == ' ' || ch == '\n' || ch == '\r' || ch == '\t') {
                r->msg_start = r->scan_pos + 1;
                continue;
            }
            if (ch != '{')
                return SLOT_ETCD_EPROTO;
            r->msg_start = r->scan_pos;
            r->depth = 1;
            continue;
        }
        if (r->in_str) {
            if (r->esc)
                r->esc = false;
            else if (ch == '\\')
                r->esc = true;
            else if (ch == '"')
                r->in_str = false;
            continue;
        }
        if (ch == '"')
            r->in_str = true;
        else if (ch == '{' || ch == '[')
            r->depth++;
        else if ((ch == '}' || ch == ']') && --r->depth == 0) {
            *start = r->msg_start;
            *end = ++r->scan_pos;
            r->msg_start = r->scan_pos;
            return 1;
        }
    }
    return 0;
}

static void watch_dispatch(req *r) {
    r->dirty = false;
    r->dispatching = true;
    int rc = 0;
    size_t start, end;
    while (rc == 0 && !r->cancel_asked && !r->c->closing) {
        int got = watch_next(r, &start, &end);
        if (got <= 0) {
            rc = got;
            break;
        }
        rc = watch_message(r, r->resp + start, end - start);
    }
    r->dispatching = false;
    size_t consumed = r->msg_start; /* everything before it is delivered or blank */
    if (rc == 0 && consumed > 0) {
        /* keep only the message in progress */
        memmove(r->resp, r->resp + consumed, r->resp_len - consumed);
        r->resp_len -= consumed;
        r->scan_pos -= consumed;
        r->msg_start -= consumed;
    }
    if (rc != 0)
        watch_end(r, rc);
    else if (r->cancel_asked)
        watch_end(r, SLOT_ETCD_ECANCELLED);
}

static void dispatch_watches(slot_etcd *c) {
    /* A callback may end any request, the next one in the list included:
     * then start again from the head. Each watch is dispatched at most once
     * (dispatch clears dirty), so this ends; it costs O(requests) per pass. */
    req *r = c->reqs;
    while (r && !c->closing) {
        if (!(r->kind == K_WATCH && r->dirty)) {
            r = r->next;
            continue;
        }
        uint64_t ended = c->ended;
        req *next = r->next;
        watch_dispatch(r);
        r = c->ended == ended ? next : c->reqs;
    }
}

/* ---- finished transfers ---- */

/* The outcome of one attempt: 0, or an error; *retry when another endpoint
 * may do better. */
static int attempt_status(req *r, CURLcode rc, bool *retry) {
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
    json_t *root = body_json(r);
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

static void attempt_done(req *r, CURLcode rc) {
    slot_etcd *c = r->c;
    bool retry;
    int status = attempt_status(r, rc, &retry);
    if (r->kind == K_WATCH) {
        if (status == 0) /* a watch's stream never ends by itself */
            status = SLOT_ETCD_EDISCONNECT;
        if (r->got_bytes)
            retry = false; /* it was up: report the loss, the caller re-arms */
    }
    if (status != 0 && retry && r->tries < c->neps) {
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
    if (r->kind == K_WATCH)
        watch_end(r, status);
    else
        req_finish(r, status);
}

static void check_done(slot_etcd *c) {
    CURLMsg *m;
    int left;
    while (!c->closing && (m = curl_multi_info_read(c->multi, &left))) {
        if (m->msg != CURLMSG_DONE)
            continue;
        CURL *e = m->easy_handle;
        CURLcode rc = m->data.result;
        char *priv = NULL;
        curl_easy_getinfo(e, CURLINFO_PRIVATE, &priv);
        req *r = (req *)(void *)priv;
        SLOT_ASSERT(r && r->easy == e);
        req_detach(r);
        attempt_done(r, rc);
    }
}

static void teardown(slot_etcd *c) {
    SLOT_ASSERT(c->closing && !c->torn_down && c->busy == 0);
    c->torn_down = true;
    /* Each pass ends the head; a cancelled callback may end others (a watch
     * cancel), never add (closing). */
    while (c->reqs) {
        req *r = c->reqs;
        if (r->kind == K_WATCH)
            watch_end(r, SLOT_ETCD_ECANCELLED);
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
static void drive(slot_etcd *c, curl_socket_t fd, int flags) {
    SLOT_ASSERT(!c->torn_down);
    c->busy++;
    int running = 0;
    curl_multi_socket_action(c->multi, fd, flags, &running);
    dispatch_watches(c);
    check_done(c);
    c->busy--;
    if (c->closing && c->busy == 0)
        teardown(c);
}

static void on_poll(uv_poll_t *h, int status, int events) {
    poll_ctx *p = h->data;
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

static void on_timer(uv_timer_t *t) {
    drive(t->data, CURL_SOCKET_TIMEOUT, 0);
}

static int on_curl_timer(CURLM *multi, long timeout_ms, void *userp) {
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

static int on_socket(CURL *easy, curl_socket_t s, int what, void *userp, void *socketp) {
    (void)easy;
    slot_etcd *c = userp;
    poll_ctx *p = socketp;
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

/* ---- the client ---- */

static pthread_once_t curl_once = PTHREAD_ONCE_INIT;
static CURLcode curl_init_rc = CURLE_FAILED_INIT;

static void curl_init(void) {
    /* process-wide, never cleaned up: other users of libcurl may share it */
    curl_init_rc = curl_global_init(CURL_GLOBAL_DEFAULT);
}

static int parse_endpoints(slot_etcd *c, const char *list) {
    if (!list)
        return SLOT_ETCD_EINVAL;
    const char *p = list;
    for (;;) {
        const char *comma = strchr(p, ',');
        size_t n = comma ? (size_t)(comma - p) : strlen(p);
        while (n > 0 && p[n - 1] == '/')
            n--;
        bool scheme = (n > 7 && strncmp(p, "http://", 7) == 0) || (n > 8 && strncmp(p, "https://", 8) == 0);
        if (!scheme || n > SLOT_ETCD_ENDPOINT_BYTES_MAX || c->neps == SLOT_ETCD_ENDPOINTS_MAX)
            return SLOT_ETCD_EINVAL;
        for (size_t i = 0; i < n; i++)
            if ((unsigned char)p[i] <= ' ' || p[i] == 0x7f)
                return SLOT_ETCD_EINVAL;
        memcpy(c->eps[c->neps], p, n);
        c->eps[c->neps][n] = '\0';
        c->neps++;
        if (!comma)
            return 0;
        p = comma + 1;
    }
}

int slot_etcd_new(uv_loop_t *loop, const char *endpoints, const slot_etcd_opts *opts, slot_etcd **out) {
    slot_etcd_opts o = opts ? *opts : (slot_etcd_opts){0};
    if (!loop || !out)
        return SLOT_ETCD_EINVAL;
    if (o.timeout_ms == 0)
        o.timeout_ms = SLOT_ETCD_TIMEOUT_MS_DEFAULT;
    if (o.inflight_max == 0)
        o.inflight_max = SLOT_ETCD_INFLIGHT_DEFAULT;
    if (o.body_bytes_max == 0)
        o.body_bytes_max = SLOT_ETCD_BODY_BYTES_DEFAULT;
    if (o.timeout_ms > SLOT_ETCD_TIMEOUT_MS_MAX || o.inflight_max > SLOT_ETCD_INFLIGHT_MAX ||
        o.body_bytes_max < SLOT_ETCD_BODY_BYTES_MIN || o.body_bytes_max > SLOT_ETCD_BODY_BYTES_MAX)
        return SLOT_ETCD_EINVAL;
    pthread_once(&curl_once, curl_init);
    if (curl_init_rc != CURLE_OK)
        return SLOT_ETCD_ENOMEM;
    slot_etcd *c = calloc(1, sizeof *c);
    if (!c)
        return SLOT_ETCD_ENOMEM;
    int rc = parse_endpoints(c, endpoints);
    if (rc != 0) {
        free(c);
        return rc;
    }
    c->loop = loop;
    c->timeout_ms = o.timeout_ms;
    c->inflight_max = o.inflight_max;
    c->body_max = o.body_bytes_max;
    struct curl_slist *h = curl_slist_append(NULL, "Content-Type: application/json");
    struct curl_slist *h2 = h ? curl_slist_append(h, "Expect:") : NULL; /* no 100-continue round trip */
    c->multi = curl_multi_init();
    if (!h2 || !c->multi) {
        curl_slist_free_all(h2 ? h2 : h);
        if (c->multi)
            curl_multi_cleanup(c->multi);
        free(c);
        return SLOT_ETCD_ENOMEM;
    }
    c->headers = h2;
    curl_multi_setopt(c->multi, CURLMOPT_SOCKETFUNCTION, on_socket);
    curl_multi_setopt(c->multi, CURLMOPT_SOCKETDATA, (void *)c);
    curl_multi_setopt(c->multi, CURLMOPT_TIMERFUNCTION, on_curl_timer);
    curl_multi_setopt(c->multi, CURLMOPT_TIMERDATA, (void *)c);
    SLOT_ASSERT(uv_timer_init(loop, &c->timer) == 0); /* cannot fail on Unix */
    c->timer.data = c;
    c->open_handles = 1;
    *out = c;
    return 0;
}

void slot_etcd_close(slot_etcd *c) {
    if (!c || c->closing)
        return;
    c->closing = true;
    if (c->busy == 0)
        teardown(c);
}

/* A request object with a base64 "key". */
static json_t *key_body(const char *key) {
    json_t *b = json_object();
    if (b && json_object_set_new(b, "key", b64_json(key, strlen(key))) != 0) {
        json_decref(b);
        return NULL;
    }
    return b;
}

int slot_etcd_get(slot_etcd *c, const char *key, slot_etcd_get_cb cb, void *data) {
    if (!c || !cb || !key_ok(key))
        return SLOT_ETCD_EINVAL;
    return req_start(c, K_GET, key_body(key), (void *)cb, data, NULL);
}

/* The end of a prefix range: the prefix with its last byte below 0xff
 * raised by one, the 0xff bytes after it dropped ("\0" = to the end). */
static json_t *prefix_end_json(const char *prefix) {
    size_t n = strlen(prefix);
    char end[SLOT_ETCD_KEY_BYTES_MAX];
    memcpy(end, prefix, n);
    while (n > 0 && (unsigned char)end[n - 1] == 0xff)
        n--;
    if (n == 0)
        return b64_json("", 1);
    end[n - 1] = (char)((unsigned char)end[n - 1] + 1);
    return b64_json(end, n);
}

int slot_etcd_get_prefix(slot_etcd *c, const char *prefix, uint32_t limit, slot_etcd_range_cb cb, void *data) {
    if (!c || !cb || !key_ok(prefix) || limit < 1 || limit > SLOT_ETCD_RANGE_LIMIT_MAX)
        return SLOT_ETCD_EINVAL;
    json_t *b = key_body(prefix);
    if (b && (json_object_set_new(b, "range_end", prefix_end_json(prefix)) != 0 ||
              json_object_set_new(b, "limit", json_i64_str(limit)) != 0)) {
        json_decref(b);
        b = NULL;
    }
    return req_start(c, K_RANGE, b, (void *)cb, data, NULL);
}

/* {"key":..., "value":..., "lease":...} for a put. */
static json_t *put_body(const char *key, const void *value, size_t value_len, int64_t lease_id) {
    json_t *b = key_body(key);
    if (b && json_object_set_new(b, "value", b64_json(value ? value : "", value_len)) != 0) {
        json_decref(b);
        return NULL;
    }
    if (b && lease_id != 0 && json_object_set_new(b, "lease", json_i64_str(lease_id)) != 0) {
        json_decref(b);
        return NULL;
    }
    return b;
}

int slot_etcd_cas(slot_etcd *c, const char *key, int64_t expected_mod_revision, const void *value, size_t value_len,
                  int64_t lease_id, slot_etcd_cas_cb cb, void *data) {
    if (!c || !cb || !key_ok(key) || expected_mod_revision < 0 || !value_ok(value, value_len) || lease_id < 0)
        return SLOT_ETCD_EINVAL;
    json_t *cmp = key_body(key);
    if (cmp) {
        bool absent = expected_mod_revision == 0;
        int rc = json_object_set_new(cmp, "result", json_string("EQUAL"));
        rc |= json_object_set_new(cmp, "target", json_string(absent ? "CREATE" : "MOD"));
        rc |= json_object_set_new(cmp, absent ? "create_revision" : "mod_revision",
                                  json_i64_str(expected_mod_revision));
        if (rc != 0) {
            json_decref(cmp);
            cmp = NULL;
        }
    }
    json_t *put = put_body(key, value, value_len, lease_id);
    json_t *range = key_body(key);
    json_t *b = (cmp && put && range)
                    ? json_pack("{s:[o], s:[{s:o}], s:[{s:o}]}", "compare", cmp, "success", "request_put", put,
                                "failure", "request_range", range)
                    : NULL;
    if (!b) { /* json_pack steals its "o" arguments even when it fails */
        if (!(cmp && put && range)) {
            json_decref(cmp);
            json_decref(put);
            json_decref(range);
        }
    }
    return req_start(c, K_CAS, b, (void *)cb, data, NULL);
}

int slot_etcd_put(slot_etcd *c, const char *key, const void *value, size_t value_len, int64_t lease_id,
                  slot_etcd_write_cb cb, void *data) {
    if (!c || !cb || !key_ok(key) || !value_ok(value, value_len) || lease_id < 0)
        return SLOT_ETCD_EINVAL;
    return req_start(c, K_PUT, put_body(key, value, value_len, lease_id), (void *)cb, data, NULL);
}

int slot_etcd_del(slot_etcd *c, const char *key, slot_etcd_write_cb cb, void *data) {
    if (!c || !cb || !key_ok(key))
        return SLOT_ETCD_EINVAL;
    return req_start(c, K_DEL, key_body(key), (void *)cb, data, NULL);
}

static json_t *lease_body(const char *name, int64_t v) {
    json_t *b = json_object();
    if (b && json_object_set_new(b, name, json_i64_str(v)) != 0) {
        json_decref(b);
        return NULL;
    }
    return b;
}

int slot_etcd_lease_grant(slot_etcd *c, int64_t ttl_s, slot_etcd_lease_cb cb, void *data) {
    if (!c || !cb || ttl_s < 1 || ttl_s > SLOT_ETCD_TTL_S_MAX)
        return SLOT_ETCD_EINVAL;
    return req_start(c, K_GRANT, lease_body("TTL", ttl_s), (void *)cb, data, NULL);
}

static int lease_req(slot_etcd *c, req_kind kind, int64_t lease_id, slot_etcd_lease_cb cb, void *data) {
    if (!c || !cb || lease_id <= 0)
        return SLOT_ETCD_EINVAL;
    req *r = NULL;
    int rc = req_start(c, kind, lease_body("ID", lease_id), (void *)cb, data, &r);
    if (rc == 0)
        r->lease_id = lease_id;
    return rc;
}

int slot_etcd_lease_keepalive(slot_etcd *c, int64_t lease_id, slot_etcd_lease_cb cb, void *data) {
    return lease_req(c, K_KEEPALIVE, lease_id, cb, data);
}

int slot_etcd_lease_revoke(slot_etcd *c, int64_t lease_id, slot_etcd_lease_cb cb, void *data) {
    return lease_req(c, K_REVOKE, lease_id, cb, data);
}

int slot_etcd_watch_start(slot_etcd *c, const char *key, bool prefix, int64_t start_revision, slot_etcd_event_cb ev_cb,
                          slot_etcd_watch_end_cb end_cb, void *data, slot_etcd_watch **out) {
    if (!c || !ev_cb || !end_cb || !out || !key_ok(key) || start_revision < 0)
        return SLOT_ETCD_EINVAL;
    json_t *cr = key_body(key);
    if (cr && prefix && json_object_set_new(cr, "range_end", prefix_end_json(key)) != 0) {
        json_decref(cr);
        cr = NULL;
    }
    if (cr && start_revision > 0 && json_object_set_new(cr, "start_revision", json_i64_str(start_revision)) != 0) {
        json_decref(cr);
        cr = NULL;
    }
    json_t *b = cr ? json_pack("{s:o}", "create_request", cr) : NULL;
    req *r = NULL;
    int rc = req_start(c, K_WATCH, b, (void *)end_cb, data, &r);
    if (rc != 0)
        return rc;
    r->ev_cb = ev_cb;
    r->from_now = start_revision == 0;
    r->last_rev = start_revision > 0 ? start_revision - 1 : 0;
    *out = (slot_etcd_watch *)r;
    return 0;
}

void slot_etcd_watch_cancel(slot_etcd_watch *w) {
    if (!w)
        return;
    req *r = &w->r;
    SLOT_ASSERT(r->kind == K_WATCH);
    if (r->ending)
        return;
    if (r->dispatching) {
        r->cancel_asked = true;
        return;
    }
    watch_end(r, SLOT_ETCD_ECANCELLED);
}
