/*
 * etcd_int.h — what the etcd client's files share: the client's and a
 * request's structs, and the functions one file calls in another. Internal
 * to libslot; slot/etcd.h is the public side.
 *
 *   etcd.c        errors, endpoints, slot_etcd_new / slot_etcd_close
 *   etcd_http.c   the transport: libcurl's multi interface on the libuv
 *                 loop (uv_poll / uv_timer glue), requests on the wire,
 *                 endpoint retries, the in-flight and body bounds, teardown
 *   etcd_kv.c     the KV, CAS and lease requests: their JSON bodies, and
 *                 the answers decoded and delivered to the callbacks
 *   etcd_watch.c  the streaming watch: the stream split into messages,
 *                 events delivered, cancel
 *   etcd_b64.c    base64 (RFC 4648), as the gateway carries keys and values
 *
 * Lifetimes: a request (slot__etcd_req) lives from the call that makes it to
 * the return of its callback. The client lives until slot_etcd_close has run
 * (slot__etcd_teardown) and every uv handle it opened has been closed. `busy`
 * counts the loop callbacks running on the client, so a close from inside one
 * of them waits for it to unwind before tearing anything down.
 *
 * Threads: all of it runs on the loop's thread (slot/etcd.h); errors are the
 * negative SLOT_ETCD_E* codes.
 */
#ifndef SLOT_ETCD_INT_H
#define SLOT_ETCD_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <curl/curl.h>
#include <jansson.h>

#include "slot/etcd.h"

/* What a request asks etcd; etcd_http.c maps each to its gateway path. */
typedef enum slot__etcd_kind {
    SLOT__ETCD_GET,
    SLOT__ETCD_RANGE,
    SLOT__ETCD_CAS,
    SLOT__ETCD_PUT,
    SLOT__ETCD_DEL,
    SLOT__ETCD_GRANT,
    SLOT__ETCD_KEEPALIVE,
    SLOT__ETCD_REVOKE,
    SLOT__ETCD_WATCH
} slot__etcd_kind;

typedef struct slot__etcd_req {
    slot_etcd *c;
    struct slot__etcd_req *prev, *next; /* c->reqs */
    slot__etcd_kind kind;
    CURL *easy;
    bool attached; /* added to c->multi */
    char *body;    /* the request JSON, owned */
    char *resp;    /* the response so far, owned; resp_len <= c->body_max */
    size_t resp_len, resp_cap;
    bool too_big, got_bytes;
    uint32_t tries; /* endpoints tried, 1..c->neps (<= SLOT_ETCD_ATTEMPTS_MAX) */
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
} slot__etcd_req;

struct slot_etcd_watch {
    slot__etcd_req r; /* first: a watch is a request */
};

typedef struct slot__etcd_poll {
    uv_poll_t poll;
    curl_socket_t fd;
    slot_etcd *c;
    struct slot__etcd_poll *prev, *next; /* c->polls */
} slot__etcd_poll;

struct slot_etcd {
    uv_loop_t *loop;
    CURLM *multi;
    uv_timer_t timer;
    char eps[SLOT_ETCD_ENDPOINTS_MAX][SLOT_ETCD_ENDPOINT_BYTES_MAX + 1];
    uint32_t neps, ep_pref; /* ep_pref: the endpoint that answered last */
    uint32_t timeout_ms, inflight_max, body_max;
    uint32_t inflight;
    uint64_t ended; /* requests ended so far (slot__etcd_dispatch_watches' check) */
    slot__etcd_req *reqs;
    slot__etcd_poll *polls;
    struct curl_slist *headers;
    int busy;
    bool closing, torn_down;
    uint32_t open_handles; /* uv handles not yet closed (the timer, the polls) */
};

/* ---- etcd_http.c: the transport ---- */

/* slot__etcd_curl_init — libcurl's process-wide set-up, once (any thread);
 * 0 or SLOT_ETCD_ENOMEM. Never cleaned up: other users of libcurl may share it. */
int slot__etcd_curl_init(void);
/* slot__etcd_http_open — c's curl multi handle, its headers and its timer on
 * c->loop (c->loop, timeout_ms, inflight_max, body_max set). 0, or
 * SLOT_ETCD_ENOMEM with nothing left open (the caller frees c). */
int slot__etcd_http_open(slot_etcd *c);
/* slot__etcd_teardown — end every request cancelled, then close curl and
 * the uv handles; c is freed once the last handle has closed. Only with
 * c->closing set and no loop callback running on c (busy == 0). */
void slot__etcd_teardown(slot_etcd *c);
/*
 * slot__etcd_req_start — make a request of `kind` with `body` (a JSON object,
 * stolen; NULL means the caller ran out of memory) and put it on the wire.
 *   cb: one of the slot_etcd_*_cb, by kind (for a watch: its end_cb).
 *   out: the request (may be NULL); valid until its callback returns.
 * 0, or SLOT_ETCD_ECANCELLED (closing), SLOT_ETCD_EFULL (inflight_max
 * reached), SLOT_ETCD_ENOMEM; on an error nothing was sent.
 */
int slot__etcd_req_start(slot_etcd *c, slot__etcd_kind kind, json_t *body, void *cb, void *data, slot__etcd_req **out);
/* slot__etcd_req_detach — take r off curl's multi handle (when on it). */
void slot__etcd_req_detach(slot__etcd_req *r);
/* slot__etcd_req_unlink — take r off c->reqs; it no longer counts in flight. */
void slot__etcd_req_unlink(slot__etcd_req *r);
/* slot__etcd_req_free — free r, its curl handle and its buffers. */
void slot__etcd_req_free(slot__etcd_req *r);
/* slot__etcd_body_json — the first JSON value of r's response body, when
 * it is an object (a streaming answer may carry a newline after it); new
 * reference, NULL when absent or not an object. */
json_t *slot__etcd_body_json(slot__etcd_req *r);

/* ---- etcd_kv.c: requests and answers ---- */

/* slot__etcd_deliver — decode r's answer by its kind (not a watch) and run
 * its callback once with `status` (0: decode the body; else the error). */
void slot__etcd_deliver(slot__etcd_req *r, int status);
/* slot__etcd_key_ok — key is NUL-terminated, 1..SLOT_ETCD_KEY_BYTES_MAX bytes. */
bool slot__etcd_key_ok(const char *key);
/* slot__etcd_key_body — a new request object {"key": base64 of key}; NULL on ENOMEM. */
json_t *slot__etcd_key_body(const char *key);
/* slot__etcd_prefix_end_json — the base64 "range_end" that ends the range
 * of keys starting with prefix; NULL on ENOMEM. */
json_t *slot__etcd_prefix_end_json(const char *prefix);
/* slot__etcd_json_i64 — an int64 field of obj (obj may be NULL) into *out:
 * absent = 0. 0 or SLOT_ETCD_EPROTO. */
int slot__etcd_json_i64(json_t *obj, const char *name, int64_t *out);
/* slot__etcd_json_i64_str — v as a JSON string, as etcd writes int64s; NULL on ENOMEM. */
json_t *slot__etcd_json_i64_str(int64_t v);
/* slot__etcd_header_revision — root's header.revision into *rev (absent = 0). 0 or SLOT_ETCD_EPROTO. */
int slot__etcd_header_revision(json_t *root, int64_t *rev);
/* slot__etcd_kv_parse — one etcd KeyValue object into kv, key and value on
 * the heap (slot__etcd_kv_free); kv is zero on an error. 0, SLOT_ETCD_EPROTO
 * or SLOT_ETCD_ENOMEM. */
int slot__etcd_kv_parse(json_t *o, slot_etcd_kv *kv);
/* slot__etcd_kv_free — free what slot__etcd_kv_parse put in kv, and zero it. */
void slot__etcd_kv_free(slot_etcd_kv *kv);

/* ---- etcd_watch.c: watches ---- */

/* slot__etcd_watch_end — end the watch r (not already ending): off the
 * wire, its end callback once with status and its last revision, freed. */
void slot__etcd_watch_end(slot__etcd_req *r, int status);
/* slot__etcd_dispatch_watches — deliver the events buffered on c's watches
 * since the last pass; ends those whose stream went bad. */
void slot__etcd_dispatch_watches(slot_etcd *c);

#endif
