/*
 * slot/etcd.h — an asynchronous etcd v3 client on a libuv loop.
 *
 * slotd keeps each replica set's configuration in etcd (docs/design.md,
 * "A replica set (failover)"):
 *
 *   /slotd/<cluster>/config     {epoch, primary, members[]}   changed only by CAS on mod_revision
 *   /slotd/<cluster>/node/<id>  {addr, seq, ...}              under the node's lease (liveness)
 *
 * This module is the client for that: key reads, prefix listings, a
 * compare-and-swap on a key's mod_revision, plain puts and deletes, leases
 * (grant, keep-alive, revoke) and watches. It speaks etcd's v3 JSON gateway
 * (etcd 3.4: POST /v3/kv/range, /v3/kv/put, /v3/kv/txn, /v3/kv/deleterange,
 * /v3/lease/grant, /v3/lease/keepalive, /v3/lease/revoke, /v3/watch) over
 * HTTP/1.1 with libcurl's multi interface driven by the caller's libuv loop
 * (one uv_poll_t per socket, one uv_timer_t, as in libcurl's multi-uv.c
 * example). Keys and values travel base64-encoded; int64 fields come back as
 * JSON strings; fields equal to zero are left out by the gateway, so a
 * missing number reads as 0.
 *
 * Threads: every function here, and every callback, runs on the loop's
 * thread only ("loop thread only"), except slot_etcd_err_name and the
 * base64 helpers, which any thread may call (as may slot_strerror, which
 * names a status).
 *
 * Calls that take a callback follow libuv's rule: when the call returns an
 * error, the callback never runs; when it returns 0, the callback runs
 * exactly once, later, from the loop (never from inside the call), with a
 * status of 0 or a negative SLOT_ETCD_E* code. The client copies every input
 * (keys, values) before the call returns. What a callback receives (the
 * result struct, its keys and values) is owned by the client and valid only
 * until the callback returns; copy what you keep.
 *
 * Endpoints and retries: a request goes first to the endpoint that last
 * answered; when it cannot connect, times out, loses its connection or gets
 * etcd's "unavailable" (HTTP 503), it is sent to the next endpoint, each
 * endpoint at most once per request, so one request takes at most
 * (number of endpoints) x timeout_ms. A retried write may have been applied
 * by the endpoint that timed out: a CAS retried that way can report failure
 * with the current value being its own value; callers compare the value.
 *
 * Bounds: at most opts.inflight_max requests (watches included) are in
 * flight; beyond that a call fails at once with SLOT_ETCD_EFULL and nothing
 * is queued. A response body, and a watch's undelivered stream, is at most
 * opts.body_bytes_max bytes (SLOT_ETCD_ETOOBIG beyond it).
 */
#ifndef SLOT_ETCD_H
#define SLOT_ETCD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <uv.h>

#include "slot/error.h"
#include "slot/limits.h"

/*
 * The client's errors, all negative: SLOT_ETCD_ETIMEDOUT, ECONNECT,
 * EDISCONNECT, EPROTO, ESERVER, ENOTFOUND, ECOMPACTED, ECANCELLED, EFULL,
 * EINVAL, ETOOBIG and ENOMEM, defined with their messages in the registry of
 * slot/error.h (SLOT_RC_MAP, the ETCD range: apart from -errno, so an etcd
 * status and an errno value never share a number).
 */

/* The client's limits and defaults (SLOT_ETCD_*_MAX, *_DEFAULT) are in slot/limits.h. */

typedef struct slot_etcd slot_etcd;
typedef struct slot_etcd_watch slot_etcd_watch;

/* Options; a zero field takes its default. */
typedef struct slot_etcd_opts {
    uint32_t timeout_ms;     /* one attempt on one endpoint, connect included; 1..SLOT_ETCD_TIMEOUT_MS_MAX,
                                default 2000. A watch uses it to connect only. */
    uint32_t inflight_max;   /* requests and watches in flight; 1..SLOT_ETCD_INFLIGHT_MAX, default 64 */
    uint32_t body_bytes_max; /* one response body / a watch's undelivered bytes;
                                SLOT_ETCD_BODY_BYTES_MIN..SLOT_ETCD_BODY_BYTES_MAX, default 1 MiB */
} slot_etcd_opts;

/* One key as etcd holds it. key and value are NUL-terminated for convenience
 * (the NUL is not counted in the lengths); both may hold any bytes. */
typedef struct slot_etcd_kv {
    const char *key;
    size_t key_len;
    const uint8_t *value;
    size_t value_len;
    int64_t create_revision; /* revision of the put that created the key */
    int64_t mod_revision;    /* revision of its last change (for a DELETE event: of the delete) */
    int64_t version;         /* puts since creation, 1 for a new key */
    int64_t lease;           /* lease id, 0 = none */
} slot_etcd_kv;

typedef struct slot_etcd_get_result {
    int64_t revision; /* the store's revision when etcd answered (the response header's) */
    bool found;
    slot_etcd_kv kv; /* zero when !found */
} slot_etcd_get_result;

typedef struct slot_etcd_range_result {
    int64_t revision;
    size_t count; /* kvs[0..count) in key order */
    const slot_etcd_kv *kvs;
    bool more; /* more keys match than the limit let through */
} slot_etcd_range_result;

typedef struct slot_etcd_cas_result {
    int64_t revision; /* the header revision; on success it is the key's new mod_revision */
    bool succeeded;
    bool found; /* on failure: whether the key exists; then current is its value */
    slot_etcd_kv current;
} slot_etcd_cas_result;

typedef struct slot_etcd_write_result {
    int64_t revision; /* the header revision after the put or delete */
    int64_t deleted;  /* del: keys deleted (0 or 1); put: 0 */
} slot_etcd_write_result;

typedef struct slot_etcd_lease_result {
    int64_t id;    /* the lease */
    int64_t ttl_s; /* grant: the TTL granted (etcd may round a short TTL up, to 2 s by default);
                      keepalive: the TTL now, 0 = the lease is gone (expired or revoked); revoke: 0 */
} slot_etcd_lease_result;

typedef enum slot_etcd_event_type { SLOT_ETCD_EVENT_PUT, SLOT_ETCD_EVENT_DELETE } slot_etcd_event_type;

typedef struct slot_etcd_event {
    slot_etcd_event_type type;
    slot_etcd_kv kv; /* DELETE: key and mod_revision (the delete's) only */
} slot_etcd_event;

/* Callbacks. `status` is 0 or a negative SLOT_ETCD_E* code; the result
 * pointer is never NULL and is all zero when status != 0. */
typedef void (*slot_etcd_get_cb)(slot_etcd *c, int status, const slot_etcd_get_result *r, void *data);
typedef void (*slot_etcd_range_cb)(slot_etcd *c, int status, const slot_etcd_range_result *r, void *data);
typedef void (*slot_etcd_cas_cb)(slot_etcd *c, int status, const slot_etcd_cas_result *r, void *data);
typedef void (*slot_etcd_write_cb)(slot_etcd *c, int status, const slot_etcd_write_result *r, void *data);
typedef void (*slot_etcd_lease_cb)(slot_etcd *c, int status, const slot_etcd_lease_result *r, void *data);
/* One event of a watch, in revision order. */
typedef void (*slot_etcd_event_cb)(slot_etcd_watch *w, const slot_etcd_event *ev, void *data);
/* The end of a watch, exactly once: the watch is freed when it returns.
 * last_revision: the mod_revision of the last event delivered (or, before
 * any, start_revision - 1, or the revision etcd started a "from now" watch
 * at): re-arm with start_revision = last_revision + 1 to miss nothing. */
typedef void (*slot_etcd_watch_end_cb)(slot_etcd_watch *w, int status, int64_t last_revision, void *data);

/*
 * slot_etcd_new — a client for the etcd cluster at `endpoints`.
 *   loop: the libuv loop every request and callback runs on; must outlive the client.
 *   endpoints: "http://HOST:PORT[,http://HOST:PORT...]" (https:// too), 1..SLOT_ETCD_ENDPOINTS_MAX
 *     entries of at most SLOT_ETCD_ENDPOINT_BYTES_MAX bytes each; copied.
 *   opts: NULL for the defaults; copied.
 *   out: receives the client.
 *   Returns 0, SLOT_ETCD_EINVAL (bad endpoint list or option out of range;
 *   nothing is allocated) or SLOT_ETCD_ENOMEM. Nothing is sent until the
 *   first request. Initializes libcurl's global state on first use (once per
 *   process, thread-safe). Loop thread only.
 */
int slot_etcd_new(uv_loop_t *loop, const char *endpoints, const slot_etcd_opts *opts, slot_etcd **out);

/*
 * slot_etcd_close — cancel everything and free the client.
 *   Every pending request's callback and every watch's end callback runs
 *   once with SLOT_ETCD_ECANCELLED: before slot_etcd_close returns, or, when
 *   it is called from one of this client's callbacks, as soon as that
 *   callback returns (no other result is delivered after close). Calls made
 *   from those callbacks fail with SLOT_ETCD_ECANCELLED. The memory is freed
 *   once the loop has closed the client's uv handles (run the loop). Calling
 *   it twice is harmless until the loop frees the client. Loop thread only.
 */
void slot_etcd_close(slot_etcd *c);

/*
 * slot_etcd_get — read one key (POST /v3/kv/range).
 *   key: NUL-terminated, 1..SLOT_ETCD_KEY_BYTES_MAX bytes; copied.
 *   cb: gets found, the value, its revisions and the header revision.
 *   Returns 0 (cb will run), SLOT_ETCD_EINVAL, SLOT_ETCD_EFULL,
 *   SLOT_ETCD_ECANCELLED (client closing), SLOT_ETCD_ENOMEM.
 *   cb's errors: ETIMEDOUT, ECONNECT, EDISCONNECT, EPROTO, ESERVER,
 *   ETOOBIG, ECANCELLED. Loop thread only.
 */
int slot_etcd_get(slot_etcd *c, const char *key, slot_etcd_get_cb cb, void *data);

/*
 * slot_etcd_get_prefix — list keys starting with `prefix`, in key order.
 *   prefix: NUL-terminated, 1..SLOT_ETCD_KEY_BYTES_MAX bytes; copied.
 *   limit: keys returned at most, 1..SLOT_ETCD_RANGE_LIMIT_MAX; r->more
 *     says more keys matched. Values count against opts.body_bytes_max.
 *   Returns and errors as slot_etcd_get. Loop thread only.
 */
int slot_etcd_get_prefix(slot_etcd *c, const char *prefix, uint32_t limit, slot_etcd_range_cb cb, void *data);

/*
 * slot_etcd_cas — compare-and-swap in one transaction (POST /v3/kv/txn).
 *   If the key's mod_revision equals expected_mod_revision (or, when
 *   expected_mod_revision is 0, the key does not exist: its create_revision
 *   is 0), put value (under lease_id, 0 = none); otherwise read the key.
 *   key: as slot_etcd_get. expected_mod_revision: >= 0.
 *   value: value_len bytes, any bytes, 0..SLOT_ETCD_VALUE_BYTES_MAX; copied.
 *   lease_id: >= 0.
 *   cb: r->succeeded and r->revision (the key's new mod_revision); on failure
 *   r->found and r->current (the value now there and its mod_revision).
 *   A failed comparison is status 0 with succeeded = false.
 *   Returns and errors as slot_etcd_get. See the header comment on retries.
 *   Loop thread only.
 */
int slot_etcd_cas(slot_etcd *c, const char *key, int64_t expected_mod_revision, const void *value, size_t value_len,
                  int64_t lease_id, slot_etcd_cas_cb cb, void *data);

/*
 * slot_etcd_put — write a key unconditionally (POST /v3/kv/put).
 *   Arguments as slot_etcd_cas; cb gets the header revision after the put
 *   (the key's new mod_revision). Returns and errors as slot_etcd_get;
 *   a lease that does not exist is ENOTFOUND. Loop thread only.
 */
int slot_etcd_put(slot_etcd *c, const char *key, const void *value, size_t value_len, int64_t lease_id,
                  slot_etcd_write_cb cb, void *data);

/*
 * slot_etcd_del — delete one key (POST /v3/kv/deleterange).
 *   cb gets r->deleted (0 when there was no such key) and the revision.
 *   Returns and errors as slot_etcd_get. Loop thread only.
 */
int slot_etcd_del(slot_etcd *c, const char *key, slot_etcd_write_cb cb, void *data);

/*
 * slot_etcd_lease_grant — a new lease (POST /v3/lease/grant).
 *   ttl_s: seconds, 1..SLOT_ETCD_TTL_S_MAX; etcd may grant more (its minimum).
 *   cb gets the id and the TTL granted. Returns and errors as slot_etcd_get.
 *   Loop thread only.
 */
int slot_etcd_lease_grant(slot_etcd *c, int64_t ttl_s, slot_etcd_lease_cb cb, void *data);

/*
 * slot_etcd_lease_keepalive — refresh a lease once (POST /v3/lease/keepalive).
 *   lease_id: > 0. cb gets the TTL it now has, or 0 when the lease is gone
 *   (a status of 0 either way). Call it every TTL/3 or so. Returns and errors
 *   as slot_etcd_get. Loop thread only.
 */
int slot_etcd_lease_keepalive(slot_etcd *c, int64_t lease_id, slot_etcd_lease_cb cb, void *data);

/*
 * slot_etcd_lease_revoke — end a lease now and delete its keys
 *   (POST /v3/lease/revoke). lease_id: > 0. cb's status is ENOTFOUND when
 *   there is no such lease. Returns and errors as slot_etcd_get.
 *   Loop thread only.
 */
int slot_etcd_lease_revoke(slot_etcd *c, int64_t lease_id, slot_etcd_lease_cb cb, void *data);

/*
 * slot_etcd_watch_start — follow changes of a key, or of every key under a
 *   prefix, from a revision on (one streaming POST /v3/watch).
 *   key: NUL-terminated, 1..SLOT_ETCD_KEY_BYTES_MAX bytes; copied.
 *   prefix: true to watch every key starting with `key`.
 *   start_revision: first revision to report, >= 1; 0 = changes from now on.
 *   ev_cb: once per event, in revision order. end_cb: exactly once, when the
 *   watch ends: ECANCELLED (slot_etcd_watch_cancel or close), EDISCONNECT
 *   (the stream was lost: etcd stopped, the connection broke), ECOMPACTED
 *   (start_revision is older than etcd keeps), ECONNECT / ETIMEDOUT (no
 *   endpoint took the watch), ETOOBIG, EPROTO, ESERVER. A watch never ends
 *   by itself with status 0, and never resumes by itself: the caller re-arms
 *   from end_cb's last_revision + 1, so no change is missed silently.
 *   A silently dead peer (no FIN/RST) is noticed by TCP keep-alive only;
 *   callers that must notice sooner also keep a lease alive and cancel the
 *   watch when keep-alives fail.
 *   out: receives the watch handle, valid until end_cb returns.
 *   Counts as one request in flight for its whole life.
 *   Returns 0, SLOT_ETCD_EINVAL, EFULL, ECANCELLED, ENOMEM (then no
 *   callback runs and *out is untouched). Loop thread only.
 */
int slot_etcd_watch_start(slot_etcd *c, const char *key, bool prefix, int64_t start_revision, slot_etcd_event_cb ev_cb,
                          slot_etcd_watch_end_cb end_cb, void *data, slot_etcd_watch **out);

/*
 * slot_etcd_watch_cancel — stop a watch. No event is delivered after it;
 *   end_cb runs once with SLOT_ETCD_ECANCELLED before this returns, or, when
 *   called from the watch's own ev_cb, right after that ev_cb returns.
 *   Calling it from end_cb does nothing; after end_cb returned, w is freed
 *   and must not be passed. Loop thread only.
 */
void slot_etcd_watch_cancel(slot_etcd_watch *w);

/*
 * slot_etcd_err_name — the code's name without the prefix ("ETIMEDOUT"),
 *   "OK" for 0, "UNKNOWN" otherwise. A static string. Any thread.
 */
const char *slot_etcd_err_name(int err);

/*
 * slot_etcd_b64_encode — standard base64 (RFC 4648 section 4, with '='
 *   padding), as etcd's gateway carries bytes.
 *   src: n bytes (any). dst: cap bytes; receives the text and a NUL.
 *   Returns the text's length (4 * ceil(n / 3)), or SLOT_ETCD_EINVAL when
 *   it and its NUL do not fit in cap (dst is then untouched). Any thread.
 */
long slot_etcd_b64_encode(const void *src, size_t n, char *dst, size_t cap);

/*
 * slot_etcd_b64_decode — the inverse, strict: n must be a multiple of 4,
 *   only the standard alphabet, '=' only as the last one or two characters,
 *   and the unused bits of the last character zero.
 *   dst: cap bytes; receives the bytes and a NUL after them (not counted).
 *   Returns the number of bytes, or SLOT_ETCD_EPROTO for text that is not
 *   such base64, SLOT_ETCD_EINVAL when the bytes and the NUL do not fit in
 *   cap. Any thread.
 */
long slot_etcd_b64_decode(const char *src, size_t n, uint8_t *dst, size_t cap);

#endif
