/*
 * etcd_kv.c — the etcd client's KV, CAS and lease requests (etcd_int.h):
 * their JSON bodies as etcd's v3 gateway takes them, and its answers
 * decoded and handed to the callbacks.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "etcd_int.h"
#include "slot/assert.h"
#include "slot/failpoint.h"

/* ---- keys and values: base64 in JSON strings ---- */

/* A heap base64 copy of n bytes as a new JSON string (NULL on ENOMEM). */
static json_t *b64_json(const void *src, size_t n)
{
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
static int b64_from_json(json_t *j, uint8_t **out, size_t *out_len)
{
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
int slot__etcd_json_i64(json_t *obj, const char *name, int64_t *out)
{
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

json_t *slot__etcd_json_i64_str(int64_t v)
{
    char t[24];
    snprintf(t, sizeof t, "%" PRId64, v);
    return json_string(t);
}

int slot__etcd_header_revision(json_t *root, int64_t *rev)
{
    json_t *h = json_object_get(root, "header");
    if (h && !json_is_object(h))
        return SLOT_ETCD_EPROTO;
    return slot__etcd_json_i64(h, "revision", rev);
}

void slot__etcd_kv_free(slot_etcd_kv *kv)
{
    free((void *)kv->key);
    free((void *)kv->value);
    memset(kv, 0, sizeof *kv);
}

/* Parse one etcd KeyValue object into kv (heap key and value; slot__etcd_kv_free). */
int slot__etcd_kv_parse(json_t *o, slot_etcd_kv *kv)
{
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
        rc = slot__etcd_json_i64(o, "create_revision", &kv->create_revision);
    if (rc == 0)
        rc = slot__etcd_json_i64(o, "mod_revision", &kv->mod_revision);
    if (rc == 0)
        rc = slot__etcd_json_i64(o, "version", &kv->version);
    if (rc == 0)
        rc = slot__etcd_json_i64(o, "lease", &kv->lease);
    if (rc != 0)
        slot__etcd_kv_free(kv);
    return rc;
}

/* ---- argument checks ---- */

bool slot__etcd_key_ok(const char *key)
{
    if (!key)
        return false;
    size_t n = strnlen(key, SLOT_ETCD_KEY_BYTES_MAX + 1);
    return n >= 1 && n <= SLOT_ETCD_KEY_BYTES_MAX;
}

static bool value_ok(const void *value, size_t len)
{
    return len <= SLOT_ETCD_VALUE_BYTES_MAX && (value || len == 0);
}

/* ---- results by kind ---- */

static void deliver_get(slot__etcd_req *r, int status, json_t *root)
{
    slot_etcd_get_result res = {0};
    if (status == 0) {
        status = slot__etcd_header_revision(root, &res.revision);
        json_t *kvs = json_object_get(root, "kvs");
        if (status == 0 && kvs && (!json_is_array(kvs) || json_array_size(kvs) > 1))
            status = SLOT_ETCD_EPROTO;
        if (status == 0 && kvs && json_array_size(kvs) == 1) {
            status = slot__etcd_kv_parse(json_array_get(kvs, 0), &res.kv);
            res.found = status == 0;
        }
        if (status != 0)
            memset(&res, 0, sizeof res);
    }
    ((slot_etcd_get_cb)r->cb)(r->c, status, &res, r->data);
    slot__etcd_kv_free(&res.kv);
}

static void deliver_range(slot__etcd_req *r, int status, json_t *root)
{
    slot_etcd_range_result res = {0};
    slot_etcd_kv *kvs = NULL;
    size_t n = 0;
    if (status == 0)
        status = slot__etcd_header_revision(root, &res.revision);
    json_t *arr = root ? json_object_get(root, "kvs") : NULL;
    if (status == 0 && arr && !json_is_array(arr))
        status = SLOT_ETCD_EPROTO;
    if (status == 0 && arr && json_array_size(arr) > 0) {
        kvs = calloc(json_array_size(arr), sizeof *kvs);
        if (!kvs)
            status = SLOT_ETCD_ENOMEM;
        for (; status == 0 && n < json_array_size(arr); n++) {
            status = slot__etcd_kv_parse(json_array_get(arr, n), &kvs[n]);
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
        slot__etcd_kv_free(&kvs[i]);
    free(kvs);
}

static void deliver_cas(slot__etcd_req *r, int status, json_t *root)
{
    slot_etcd_cas_result res = {0};
    if (status == 0)
        status = slot__etcd_header_revision(root, &res.revision);
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
                status = slot__etcd_kv_parse(json_array_get(kvs, 0), &res.current);
                res.found = status == 0;
            }
        }
        if (status != 0)
            memset(&res, 0, sizeof res);
    }
    ((slot_etcd_cas_cb)r->cb)(r->c, status, &res, r->data);
    slot__etcd_kv_free(&res.current);
}

static void deliver_write(slot__etcd_req *r, int status, json_t *root)
{
    slot_etcd_write_result res = {0};
    if (status == 0)
        status = slot__etcd_header_revision(root, &res.revision);
    if (status == 0 && r->kind == SLOT__ETCD_DEL)
        status = slot__etcd_json_i64(root, "deleted", &res.deleted);
    if (status != 0)
        memset(&res, 0, sizeof res);
    ((slot_etcd_write_cb)r->cb)(r->c, status, &res, r->data);
}

static void deliver_lease(slot__etcd_req *r, int status, json_t *root)
{
    slot_etcd_lease_result res = {0};
    json_t *o = root;
    if (status == 0 && r->kind == SLOT__ETCD_KEEPALIVE) {
        /* a streaming answer: {"result": {...}}, or {"error": {"grpc_code": N, ...}} */
        o = json_object_get(root, "result");
        json_t *e = json_object_get(root, "error");
        json_int_t code = json_integer_value(json_object_get(e, "grpc_code"));
        if (!json_is_object(o))
            status = !json_is_object(e)        ? SLOT_ETCD_EPROTO
                     : code == 14 || code == 1 ? SLOT_ETCD_EDISCONNECT
                                               : SLOT_ETCD_ESERVER;
    }
    if (status == 0 && r->kind != SLOT__ETCD_REVOKE) {
        status = slot__etcd_json_i64(o, "ID", &res.id);
        if (status == 0)
            status = slot__etcd_json_i64(o, "TTL", &res.ttl_s);
        if (status == 0 && r->kind == SLOT__ETCD_GRANT && (res.id <= 0 || res.ttl_s <= 0))
            status = SLOT_ETCD_EPROTO;
        if (status == 0 && r->kind == SLOT__ETCD_KEEPALIVE && res.id != r->lease_id)
            status = SLOT_ETCD_EPROTO;
    }
    if (status == 0 && r->kind == SLOT__ETCD_REVOKE)
        res.id = r->lease_id;
    if (status != 0)
        memset(&res, 0, sizeof res);
    ((slot_etcd_lease_cb)r->cb)(r->c, status, &res, r->data);
}

void slot__etcd_deliver(slot__etcd_req *r, int status)
{
    json_t *root = NULL;
    if (status == 0) {
        root = slot__etcd_body_json(r);
        if (!root)
            status = SLOT_ETCD_EPROTO;
    }
    switch (r->kind) {
    case SLOT__ETCD_GET:
        deliver_get(r, status, root);
        break;
    case SLOT__ETCD_RANGE:
        deliver_range(r, status, root);
        break;
    case SLOT__ETCD_CAS:
        deliver_cas(r, status, root);
        break;
    case SLOT__ETCD_PUT:
    case SLOT__ETCD_DEL:
        deliver_write(r, status, root);
        break;
    case SLOT__ETCD_GRANT:
    case SLOT__ETCD_KEEPALIVE:
    case SLOT__ETCD_REVOKE:
        deliver_lease(r, status, root);
        break;
    case SLOT__ETCD_WATCH:
        SLOT_ASSERT(!"watches end in slot__etcd_watch_end");
    }
    json_decref(root);
}

/* ---- requests ---- */

/* A request object with a base64 "key". */
json_t *slot__etcd_key_body(const char *key)
{
    json_t *b = json_object();
    if (b && json_object_set_new(b, "key", b64_json(key, strlen(key))) != 0) {
        json_decref(b);
        return NULL;
    }
    return b;
}

int slot_etcd_get(slot_etcd *c, const char *key, slot_etcd_get_cb cb, void *data)
{
    if (!c || !cb || !slot__etcd_key_ok(key))
        return SLOT_ETCD_EINVAL;
    return slot__etcd_req_start(c, SLOT__ETCD_GET, slot__etcd_key_body(key), (void *)cb, data, NULL);
}

/* The end of a prefix range: the prefix with its last byte below 0xff
 * raised by one, the 0xff bytes after it dropped ("\0" = to the end). */
json_t *slot__etcd_prefix_end_json(const char *prefix)
{
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

int slot_etcd_get_prefix(slot_etcd *c, const char *prefix, uint32_t limit, slot_etcd_range_cb cb, void *data)
{
    if (!c || !cb || !slot__etcd_key_ok(prefix) || limit < 1 || limit > SLOT_ETCD_RANGE_LIMIT_MAX)
        return SLOT_ETCD_EINVAL;
    json_t *b = slot__etcd_key_body(prefix);
    if (b && (json_object_set_new(b, "range_end", slot__etcd_prefix_end_json(prefix)) != 0 ||
              json_object_set_new(b, "limit", slot__etcd_json_i64_str(limit)) != 0)) {
        json_decref(b);
        b = NULL;
    }
    return slot__etcd_req_start(c, SLOT__ETCD_RANGE, b, (void *)cb, data, NULL);
}

/* {"key":..., "value":..., "lease":...} for a put. */
static json_t *put_body(const char *key, const void *value, size_t value_len, int64_t lease_id)
{
    json_t *b = slot__etcd_key_body(key);
    if (b && json_object_set_new(b, "value", b64_json(value ? value : "", value_len)) != 0) {
        json_decref(b);
        return NULL;
    }
    if (b && lease_id != 0 && json_object_set_new(b, "lease", slot__etcd_json_i64_str(lease_id)) != 0) {
        json_decref(b);
        return NULL;
    }
    return b;
}

int slot_etcd_cas(slot_etcd *c, const char *key, int64_t expected_mod_revision, const void *value, size_t value_len,
                  int64_t lease_id, slot_etcd_cas_cb cb, void *data)
{
    if (!c || !cb || !slot__etcd_key_ok(key) || expected_mod_revision < 0 || !value_ok(value, value_len) ||
        lease_id < 0)
        return SLOT_ETCD_EINVAL;
    if (SLOT_FAIL(CAS_LOST)) /* a revision the key never had: etcd refuses the CAS (slot/failpoint.h) */
        expected_mod_revision = INT64_C(1) << 62;
    json_t *cmp = slot__etcd_key_body(key);
    if (cmp) {
        bool absent = expected_mod_revision == 0;
        int rc = json_object_set_new(cmp, "result", json_string("EQUAL"));
        rc |= json_object_set_new(cmp, "target", json_string(absent ? "CREATE" : "MOD"));
        rc |= json_object_set_new(cmp, absent ? "create_revision" : "mod_revision",
                                  slot__etcd_json_i64_str(expected_mod_revision));
        if (rc != 0) {
            json_decref(cmp);
            cmp = NULL;
        }
    }
    json_t *put = put_body(key, value, value_len, lease_id);
    json_t *range = slot__etcd_key_body(key);
    json_t *b = (cmp && put && range) ? json_pack("{s:[o], s:[{s:o}], s:[{s:o}]}", "compare", cmp, "success",
                                                  "request_put", put, "failure", "request_range", range)
                                      : NULL;
    if (!b) { /* json_pack steals its "o" arguments even when it fails */
        if (!(cmp && put && range)) {
            json_decref(cmp);
            json_decref(put);
            json_decref(range);
        }
    }
    return slot__etcd_req_start(c, SLOT__ETCD_CAS, b, (void *)cb, data, NULL);
}

int slot_etcd_put(slot_etcd *c, const char *key, const void *value, size_t value_len, int64_t lease_id,
                  slot_etcd_write_cb cb, void *data)
{
    if (!c || !cb || !slot__etcd_key_ok(key) || !value_ok(value, value_len) || lease_id < 0)
        return SLOT_ETCD_EINVAL;
    return slot__etcd_req_start(c, SLOT__ETCD_PUT, put_body(key, value, value_len, lease_id), (void *)cb, data, NULL);
}

int slot_etcd_del(slot_etcd *c, const char *key, slot_etcd_write_cb cb, void *data)
{
    if (!c || !cb || !slot__etcd_key_ok(key))
        return SLOT_ETCD_EINVAL;
    return slot__etcd_req_start(c, SLOT__ETCD_DEL, slot__etcd_key_body(key), (void *)cb, data, NULL);
}

static json_t *lease_body(const char *name, int64_t v)
{
    json_t *b = json_object();
    if (b && json_object_set_new(b, name, slot__etcd_json_i64_str(v)) != 0) {
        json_decref(b);
        return NULL;
    }
    return b;
}

int slot_etcd_lease_grant(slot_etcd *c, int64_t ttl_s, slot_etcd_lease_cb cb, void *data)
{
    if (!c || !cb || ttl_s < 1 || ttl_s > SLOT_ETCD_TTL_S_MAX)
        return SLOT_ETCD_EINVAL;
    return slot__etcd_req_start(c, SLOT__ETCD_GRANT, lease_body("TTL", ttl_s), (void *)cb, data, NULL);
}

static int lease_req(slot_etcd *c, slot__etcd_kind kind, int64_t lease_id, slot_etcd_lease_cb cb, void *data)
{
    if (!c || !cb || lease_id <= 0)
        return SLOT_ETCD_EINVAL;
    slot__etcd_req *r = NULL;
    int rc = slot__etcd_req_start(c, kind, lease_body("ID", lease_id), (void *)cb, data, &r);
    if (rc == 0)
        r->lease_id = lease_id;
    return rc;
}

int slot_etcd_lease_keepalive(slot_etcd *c, int64_t lease_id, slot_etcd_lease_cb cb, void *data)
{
    return lease_req(c, SLOT__ETCD_KEEPALIVE, lease_id, cb, data);
}

int slot_etcd_lease_revoke(slot_etcd *c, int64_t lease_id, slot_etcd_lease_cb cb, void *data)
{
    return lease_req(c, SLOT__ETCD_REVOKE, lease_id, cb, data);
}
