/*
 * mover_io.c — the mover thread's I/O (mover_int.h): its etcd client run
 * on its own loop one call at a time, the move lock under a lease with its
 * keep-alive, the blocking JSON-line connections to the two sets'
 * primaries, the internal ops' macs, and the table of the records step 4
 * sent. Mover thread only (docs/design.md, "The mover").
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/evp.h>
#include <openssl/hmac.h>

#include "mover_int.h"

/* ---- the thread's loop and etcd client */

int mv_ctx_open(mv_ctx *x, mv_job *job)
{
    memset(x, 0, sizeof(*x));
    x->job = job;
    if (uv_loop_init(&x->loop) != 0)
        return SLOT_ETCD_ENOMEM;
    int rc = slot_etcd_new(&x->loop, job->endpoints, NULL, &x->etcd);
    if (rc != 0) {
        uv_loop_close(&x->loop);
        return rc;
    }
    uv_timer_init(&x->loop, &x->keep);
    x->keep.data = x;
    snprintf(x->key_lock, sizeof x->key_lock, "%slock", job->prefix);
    return 0;
}

void mv_pump(mv_ctx *x)
{
    uv_run(&x->loop, UV_RUN_NOWAIT);
}

void mv_ctx_close(mv_ctx *x)
{
    mv_unlock(x);
    slot_etcd_close(x->etcd);
    uv_close((uv_handle_t *)&x->keep, NULL);
    while (uv_run(&x->loop, UV_RUN_DEFAULT) != 0) {
    }
    uv_loop_close(&x->loop);
}

/* One call's outcome, filled by its callback. */
typedef struct mv_wait {
    bool done;
    int status;
    mv_kv kv;
    bool ok;
    int64_t rev;
    int64_t lease, ttl;
    json_t *list;
    size_t plen;
} mv_wait;

static void run_until(mv_ctx *x, mv_wait *w)
{
    while (!w->done)
        uv_run(&x->loop, UV_RUN_ONCE);
}

static void kv_copy(mv_kv *kv, const slot_etcd_kv *src)
{
    kv->found = true;
    kv->value = malloc(src->value_len + 1);
    if (kv->value) {
        memcpy(kv->value, src->value, src->value_len);
        kv->value[src->value_len] = 0;
    }
    kv->mod_rev = src->mod_revision;
}

void mv_kv_free(mv_kv *kv)
{
    free(kv->value);
    memset(kv, 0, sizeof(*kv));
}

static void on_get(slot_etcd *e, int status, const slot_etcd_get_result *r, void *data)
{
    (void)e;
    mv_wait *w = data;
    w->status = status;
    if (status == 0 && r->found) {
        kv_copy(&w->kv, &r->kv);
        if (!w->kv.value)
            w->status = SLOT_ETCD_ENOMEM;
    }
    w->done = true;
}

int mv_etcd_get(mv_ctx *x, const char *key, mv_kv *out)
{
    mv_wait w = {0};
    int rc = slot_etcd_get(x->etcd, key, on_get, &w);
    if (rc != 0)
        return rc;
    run_until(x, &w);
    *out = w.kv;
    return w.status;
}

static void on_list(slot_etcd *e, int status, const slot_etcd_range_result *r, void *data)
{
    (void)e;
    mv_wait *w = data;
    w->status = status;
    w->done = true;
    if (status != 0)
        return;
    w->list = json_object();
    for (size_t i = 0; w->list && i < r->count; i++) {
        const slot_etcd_kv *kv = &r->kvs[i];
        if (kv->key_len <= w->plen)
            continue;
        json_t *v = json_stringn((const char *)kv->value, kv->value_len);
        if (v)
            json_object_set_new(w->list, kv->key + w->plen, v);
    }
    if (!w->list)
        w->status = SLOT_ETCD_ENOMEM;
}

int mv_etcd_list(mv_ctx *x, const char *prefix, json_t **out)
{
    mv_wait w = {.plen = strlen(prefix)};
    *out = NULL;
    int rc = slot_etcd_get_prefix(x->etcd, prefix, SLOT_PLACE_LIST_MAX, on_list, &w);
    if (rc != 0)
        return rc;
    run_until(x, &w);
    *out = w.list;
    return w.status;
}

static void on_cas(slot_etcd *e, int status, const slot_etcd_cas_result *r, void *data)
{
    (void)e;
    mv_wait *w = data;
    w->status = status;
    if (status == 0) {
        w->ok = r->succeeded;
        w->rev = r->revision;
        if (!r->succeeded && r->found) {
            kv_copy(&w->kv, &r->current);
            if (!w->kv.value)
                w->status = SLOT_ETCD_ENOMEM;
        }
    }
    w->done = true;
}

int mv_etcd_cas(mv_ctx *x, const char *key, int64_t expect_rev, const char *value, int64_t lease, bool *ok,
                mv_kv *current, int64_t *new_rev)
{
    mv_wait w = {0};
    int rc = slot_etcd_cas(x->etcd, key, expect_rev, value, strlen(value), lease, on_cas, &w);
    if (rc != 0)
        return rc;
    run_until(x, &w);
    if (w.status == 0 && !w.ok && w.kv.found && w.kv.value && strcmp(w.kv.value, value) == 0) {
        /* a retried CAS that etcd applied the first time (slot/etcd.h): ours */
        w.ok = true;
        w.rev = w.kv.mod_rev;
    }
    *ok = w.ok;
    if (new_rev)
        *new_rev = w.rev;
    if (current)
        *current = w.kv;
    else
        mv_kv_free(&w.kv);
    return w.status;
}

/* ---- the lock */

static void on_lease(slot_etcd *e, int status, const slot_etcd_lease_result *r, void *data)
{
    (void)e;
    mv_wait *w = data;
    w->status = status;
    w->lease = r->id;
    w->ttl = r->ttl_s;
    w->done = true;
}

static void on_keep(slot_etcd *e, int status, const slot_etcd_lease_result *r, void *data)
{
    (void)e;
    mv_ctx *x = data;
    x->keep_busy = false;
    if (status == 0 && r->ttl_s == 0)
        x->lock_lost = true; /* the lease is gone: recovery may act; the move stops at its next check */
    else if (status == 0)
        x->lease_ok_ms = x->keep_sent_ms; /* etcd's TTL restarted no earlier than this send */
}

static void keep_tick(uv_timer_t *t)
{
    mv_ctx *x = t->data;
    if (x->lease && !x->keep_busy && slot_etcd_lease_keepalive(x->etcd, x->lease, on_keep, x) == 0) {
        x->keep_busy = true;
        x->keep_sent_ms = uv_hrtime() / 1000000u;
    }
}

bool mv_lock_trusted(mv_ctx *x)
{
    if (x->lock_lost)
        return false;
    if (uv_hrtime() / 1000000u - x->lease_ok_ms > SLOT_PLACE_LOCK_TRUST_MS)
        x->lock_lost = true; /* etcd may have expired it: a partition from etcd, or a stall */
    return !x->lock_lost;
}

int mv_lock(mv_ctx *x, const char *event, const char *from, const char *to, uint64_t gen, char **holder)
{
    *holder = NULL;
    mv_wait w = {0};
    uint64_t sent = uv_hrtime() / 1000000u;
    int rc = slot_etcd_lease_grant(x->etcd, SLOT_PLACE_LOCK_TTL_S, on_lease, &w);
    if (rc != 0)
        return rc;
    run_until(x, &w);
    if (w.status != 0)
        return w.status;
    x->lease = w.lease;
    x->lease_ok_ms = sent;
    x->lock_lost = false;
    json_t *v = json_pack("{s:s,s:s,s:s,s:I,s:s}", "event", event, "from", from, "to", to, "gen", (json_int_t)gen,
                          "node", x->job->node);
    char *t = v ? json_dumps(v, JSON_COMPACT | JSON_PRESERVE_ORDER) : NULL;
    json_decref(v);
    if (!t) {
        mv_unlock(x);
        return SLOT_ETCD_ENOMEM;
    }
    bool ok = false;
    mv_kv cur = {0};
    rc = mv_etcd_cas(x, x->key_lock, 0, t, x->lease, &ok, &cur, NULL);
    free(t);
    if (rc != 0 || !ok) {
        mv_unlock(x);
        if (rc == 0) {
            *holder = cur.value; /* held by another mover */
            cur.value = NULL;
            rc = 1;
        }
        mv_kv_free(&cur);
        return rc;
    }
    uint64_t every = SLOT_PLACE_LOCK_TTL_S * 1000 / 3;
    uv_timer_start(&x->keep, keep_tick, every, every);
    x->keep_on = true;
    return 0;
}

void mv_unlock(mv_ctx *x)
{
    if (x->keep_on) {
        uv_timer_stop(&x->keep);
        x->keep_on = false;
    }
    if (!x->lease)
        return;
    mv_wait w = {0};
    /* revoking the lease deletes the lock key; when it fails the key goes
     * with the lease's TTL */
    if (slot_etcd_lease_revoke(x->etcd, x->lease, on_lease, &w) == 0)
        run_until(x, &w);
    x->lease = 0;
}

/* ---- the connections */

int mv_connect(mv_conn *k, const char *addr)
{
    char host[SLOT_CLUSTER_ADDR_BYTES];
    uint16_t port = 0;
    k->cl = NULL;
    if (addr != k->addr)
        snprintf(k->addr, sizeof k->addr, "%s", addr);
    if (slot_addr_split(addr, strlen(addr), host, sizeof host, &port) != 0)
        return -EINVAL;
    return slot_client_connect(host, port, SLOT_PLACE_CONNECT_MS, &k->cl);
}

void mv_close(mv_conn *k)
{
    slot_client_close(k->cl);
    k->cl = NULL;
}

static void hex(const uint8_t *b, size_t n, char *out)
{
    static const char d[] = "0123456789abcdef";
    for (size_t i = 0; i < n; i++) {
        out[2 * i] = d[b[i] >> 4];
        out[2 * i + 1] = d[b[i] & 15];
    }
    out[2 * n] = 0;
}

/* The mac of an internal op (docs/protocol.md, "Placement"): HMAC-SHA256
 * with the cluster secret over "slotd-place-1\n" op "\n" event "\n" gen "\n"
 * set "\n" data. */
int mv_sign(const mv_job *job, json_t *req)
{
    const char *op = json_string_value(json_object_get(req, "op"));
    const char *ev = json_string_value(json_object_get(req, "event"));
    const char *set = json_string_value(json_object_get(req, "set"));
    const char *data = json_string_value(json_object_get(req, "data"));
    json_int_t gen = json_integer_value(json_object_get(req, "gen"));
    char head[256];
    int n = snprintf(head, sizeof head, "slotd-place-1\n%s\n%s\n%" PRId64 "\n%s\n", op ? op : "", ev ? ev : "",
                     (int64_t)gen, set ? set : "");
    if (n < 0 || (size_t)n >= sizeof head)
        return -1;
    size_t dlen = data ? strlen(data) : 0;
    uint8_t *msg = malloc((size_t)n + dlen + 1);
    if (!msg)
        return -1;
    memcpy(msg, head, (size_t)n);
    if (dlen)
        memcpy(msg + n, data, dlen);
    uint8_t mac[EVP_MAX_MD_SIZE];
    unsigned mlen = 0;
    bool ok = HMAC(EVP_sha256(), job->secret.bytes, (int)job->secret.len, msg, (size_t)n + dlen, mac, &mlen) != NULL;
    free(msg);
    if (!ok)
        return -1;
    char text[2 * EVP_MAX_MD_SIZE + 1];
    hex(mac, mlen, text);
    return json_object_set_new(req, "mac", json_string(text)) == 0 ? 0 : -1;
}

int mv_send(mv_conn *k, json_t *req)
{
    if (!k->cl)
        return -ENOTCONN;
    char *t = json_dumps(req, JSON_COMPACT);
    if (!t)
        return -ENOMEM;
    size_t n = strlen(t);
    char *line = realloc(t, n + 2);
    if (!line) {
        free(t);
        return -ENOMEM;
    }
    line[n] = '\n';
    line[n + 1] = 0;
    int rc = slot_client_send_raw(k->cl, line, n + 1);
    free(line);
    return rc;
}

int mv_recv(mv_conn *k, json_t **out)
{
    *out = NULL;
    if (!k->cl)
        return -ENOTCONN;
    const char *line = NULL;
    long n = slot_client_recv_line(k->cl, &line, SLOT_PLACE_IO_MS);
    if (n < 0)
        return (int)n;
    *out = json_loadb(line, (size_t)n, 0, NULL);
    if (!*out || !json_is_object(*out)) {
        json_decref(*out);
        *out = NULL;
        return -EPROTO;
    }
    return 0;
}

int mv_call(mv_conn *k, json_t *req, json_t **out)
{
    int rc = mv_send(k, req);
    if (rc != 0) {
        *out = NULL;
        return rc;
    }
    return mv_recv(k, out);
}

const char *mv_err(json_t *reply)
{
    if (json_is_true(json_object_get(reply, "ok")))
        return "";
    const char *e = json_string_value(json_object_get(reply, "error"));
    return e ? e : "internal";
}

/* ---- the record table (open addressing, linear probing, grown at 1/2) */

uint64_t mv_hash(const uint8_t *b, size_t n)
{
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < n; i++) {
        h ^= b[i];
        h *= 1099511628211ull;
    }
    return h;
}

static uint64_t key_hash(uint8_t db, const uint8_t *key, size_t klen)
{
    uint64_t h = mv_hash(key, klen);
    return (h ^ db) * 0x9e3779b97f4a7c15ull;
}

void mv_table_free(mv_table *t)
{
    for (size_t i = 0; i < t->cap; i++)
        free(t->slots[i].key);
    free(t->slots);
    memset(t, 0, sizeof(*t));
}

static bool table_grow(mv_table *t)
{
    size_t cap = t->cap ? t->cap * 2 : 1024;
    mv_rec *s = calloc(cap, sizeof(*s));
    if (!s)
        return false;
    for (size_t i = 0; i < t->cap; i++) {
        mv_rec *r = &t->slots[i];
        if (!r->key)
            continue;
        size_t j = key_hash(r->key[0], r->key + 1, r->klen - 1) & (cap - 1);
        while (s[j].key)
            j = (j + 1) & (cap - 1);
        s[j] = *r;
    }
    free(t->slots);
    t->slots = s;
    t->cap = cap;
    return true;
}

mv_rec *mv_table_get(mv_table *t, uint8_t db, const uint8_t *key, uint16_t klen, bool add)
{
    if (add && (t->n + 1) * 2 > t->cap) {
        if (t->n >= SLOT_PLACE_MOVE_RECORDS_MAX || !table_grow(t))
            return NULL;
    }
    if (!t->cap)
        return NULL;
    size_t j = key_hash(db, key, klen) & (t->cap - 1);
    for (;;) {
        mv_rec *r = &t->slots[j];
        if (!r->key)
            break;
        if (r->klen == (uint32_t)klen + 1 && r->key[0] == db && memcmp(r->key + 1, key, klen) == 0)
            return r;
        j = (j + 1) & (t->cap - 1);
    }
    if (!add)
        return NULL;
    mv_rec *r = &t->slots[j];
    r->key = malloc((size_t)klen + 1);
    if (!r->key)
        return NULL;
    r->key[0] = db;
    memcpy(r->key + 1, key, klen);
    r->klen = (uint32_t)klen + 1;
    r->seen = false;
    t->n++;
    return r;
}
