/*
 * fuzz_etcd.c — libFuzzer target for what the etcd client reads from etcd
 * (src/etcd/etcd_int.h): the v3 JSON gateway's answers to each kind of request
 * (src/etcd/etcd_kv.c), the watch stream split into messages and events
 * (src/etcd/etcd_watch.c), and base64 (src/etcd_b64.c). etcd is the
 * configuration store every node trusts for who is primary: a misbehaving or
 * hostile one must get an error, never a crash or a made-up result.
 *
 * The answers are fed to the client's own decoding functions on a request
 * made here as etcd_http.c makes one (a zeroed client, no curl, no loop):
 * byte 0 picks the request's kind, byte 1 its lease id (keepalive, revoke)
 * and whether a watch starts "from now", byte 2 the size of the chunks a
 * watch's stream arrives in; the rest is the body. Whatever it holds,
 * nothing may crash, leak or trip a sanitizer, and:
 *   - a request's callback runs exactly once, with 0 or one of the errors
 *     its kind can have, and an all-zero result on an error;
 *   - on success every key and value is the base64 of its JSON string,
 *     decoded (encoding it again gives that string back: the decoder is
 *     strict); a range has as many kvs as the answer's array; a granted
 *     lease has an id and a TTL above 0, a kept-alive or revoked one the
 *     request's id; a CAS that succeeded has no current value;
 *   - a watch delivers the same events and ends the same way whether its
 *     stream comes in one piece or in chunks of any size; its events come
 *     in revision order (slot/etcd.h), none below the revision the watch
 *     had reached, and the end's last_revision is at least every delivered
 *     event's; it ends at most once, and nothing comes after its end;
 *   - base64: decode(encode(bytes)) is the bytes; text that decodes is the
 *     encoding of what it decodes to.
 * Built and run by tests/fuzz/run.sh.
 */
#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "etcd/etcd_int.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(cond)                                                                      \
    do {                                                                                 \
        if (!(cond)) {                                                                   \
            fprintf(stderr, "fuzz_etcd: check failed: %s (line %d)\n", #cond, __LINE__); \
            abort();                                                                     \
        }                                                                                \
    } while (0)

#define EVENTS_MAX 4096

static slot_etcd client; /* zero: no curl, no loop; only what the decoders read */

/* What the callbacks saw. */
typedef struct seen {
    int calls;
    int status;
    uint8_t result[sizeof(slot_etcd_cas_result) > sizeof(slot_etcd_range_result) ? sizeof(slot_etcd_cas_result)
                                                                                 : sizeof(slot_etcd_range_result)];
    json_t *root; /* the body as JSON, to check the result against */
    int64_t lease_id;
    slot__etcd_kind kind;
} seen;

static slot__etcd_req *new_req(slot__etcd_kind kind, void *cb, void *ctx, const uint8_t *body, size_t n)
{
    slot__etcd_req *r = calloc(1, sizeof *r);
    CHECK(r != NULL);
    r->c = &client;
    r->kind = kind;
    r->cb = cb;
    r->data = ctx;
    r->resp_cap = n + 1;
    r->resp = malloc(r->resp_cap);
    CHECK(r->resp != NULL);
    memcpy(r->resp, body, n);
    r->resp_len = n;
    r->tries = 1;
    /* on the client's list, as slot__etcd_req_start puts it */
    r->next = client.reqs;
    if (client.reqs)
        client.reqs->prev = r;
    client.reqs = r;
    client.inflight++;
    return r;
}

static bool all_zero(const void *p, size_t n)
{
    const uint8_t *b = p;
    for (size_t i = 0; i < n; i++)
        if (b[i])
            return false;
    return true;
}

/* kv came from the JSON object o: its key and value are o's base64, decoded. */
static void check_kv(const slot_etcd_kv *kv, json_t *o)
{
    CHECK(json_is_object(o));
    const char *names[2] = {"key", "value"};
    const uint8_t *bytes[2] = {(const uint8_t *)kv->key, kv->value};
    size_t lens[2] = {kv->key_len, kv->value_len};
    for (int i = 0; i < 2; i++) {
        CHECK(bytes[i] != NULL && bytes[i][lens[i]] == 0);
        json_t *s = json_object_get(o, names[i]);
        const char *text = s ? json_string_value(s) : "";
        size_t tlen = s ? json_string_length(s) : 0;
        char *again = malloc((lens[i] + 2) / 3 * 4 + 1);
        CHECK(again != NULL);
        long el = slot_etcd_b64_encode(bytes[i], lens[i], again, (lens[i] + 2) / 3 * 4 + 1);
        CHECK(el >= 0 && (size_t)el == tlen && memcmp(again, text, tlen) == 0);
        free(again);
    }
}

static void on_get(slot_etcd *c, int status, const slot_etcd_get_result *r, void *data)
{
    seen *s = data;
    CHECK(c == &client && r != NULL);
    s->calls++;
    s->status = status;
    memcpy(s->result, r, sizeof *r);
    if (status != 0)
        return;
    json_t *kvs = json_object_get(s->root, "kvs");
    CHECK(r->found == (kvs && json_array_size(kvs) == 1));
    if (r->found)
        check_kv(&r->kv, json_array_get(kvs, 0));
    else
        CHECK(all_zero(&r->kv, sizeof r->kv));
}

static void on_range(slot_etcd *c, int status, const slot_etcd_range_result *r, void *data)
{
    seen *s = data;
    CHECK(c == &client && r != NULL);
    s->calls++;
    s->status = status;
    memcpy(s->result, r, sizeof *r);
    if (status != 0)
        return;
    json_t *kvs = json_object_get(s->root, "kvs");
    CHECK(r->count == json_array_size(kvs));
    CHECK((r->count == 0) == (r->kvs == NULL));
    for (size_t i = 0; i < r->count; i++)
        check_kv(&r->kvs[i], json_array_get(kvs, i));
}

static void on_cas(slot_etcd *c, int status, const slot_etcd_cas_result *r, void *data)
{
    seen *s = data;
    CHECK(c == &client && r != NULL);
    s->calls++;
    s->status = status;
    memcpy(s->result, r, sizeof *r);
    if (status != 0)
        return;
    if (r->succeeded)
        CHECK(!r->found && all_zero(&r->current, sizeof r->current));
    if (r->found) {
        json_t *rr = json_object_get(json_array_get(json_object_get(s->root, "responses"), 0), "response_range");
        check_kv(&r->current, json_array_get(json_object_get(rr, "kvs"), 0));
    }
}

static void on_write(slot_etcd *c, int status, const slot_etcd_write_result *r, void *data)
{
    seen *s = data;
    CHECK(c == &client && r != NULL);
    s->calls++;
    s->status = status;
    memcpy(s->result, r, sizeof *r);
    if (status == 0 && s->kind == SLOT__ETCD_PUT)
        CHECK(r->deleted == 0);
}

static void on_lease(slot_etcd *c, int status, const slot_etcd_lease_result *r, void *data)
{
    seen *s = data;
    CHECK(c == &client && r != NULL);
    s->calls++;
    s->status = status;
    memcpy(s->result, r, sizeof *r);
    if (status != 0)
        return;
    if (s->kind == SLOT__ETCD_GRANT)
        CHECK(r->id > 0 && r->ttl_s > 0);
    else
        CHECK(r->id == s->lease_id);
    if (s->kind == SLOT__ETCD_REVOKE)
        CHECK(r->ttl_s == 0);
}

static void fuzz_answer(slot__etcd_kind kind, int64_t lease_id, const uint8_t *body, size_t n)
{
    static void *const cbs[] = {
        [SLOT__ETCD_GET] = (void *)on_get,         [SLOT__ETCD_RANGE] = (void *)on_range,
        [SLOT__ETCD_CAS] = (void *)on_cas,         [SLOT__ETCD_PUT] = (void *)on_write,
        [SLOT__ETCD_DEL] = (void *)on_write,       [SLOT__ETCD_GRANT] = (void *)on_lease,
        [SLOT__ETCD_KEEPALIVE] = (void *)on_lease, [SLOT__ETCD_REVOKE] = (void *)on_lease,
    };
    seen s;
    memset(&s, 0, sizeof s);
    s.kind = kind;
    s.lease_id = lease_id;
    json_error_t e;
    s.root = json_loadb((const char *)body, n, JSON_DISABLE_EOF_CHECK, &e);
    slot__etcd_req *r = new_req(kind, cbs[kind], &s, body, n);
    r->lease_id = lease_id;
    /* as req_finish does: off the list, the answer delivered, freed */
    slot__etcd_req_unlink(r);
    slot__etcd_deliver(r, 0);
    slot__etcd_req_free(r);
    CHECK(s.calls == 1);
    int st = s.status;
    bool lease_stream = kind == SLOT__ETCD_KEEPALIVE;
    CHECK(st == 0 || st == SLOT_ETCD_EPROTO ||
          (lease_stream && (st == SLOT_ETCD_EDISCONNECT || st == SLOT_ETCD_ESERVER)));
    if (st != 0)
        CHECK(all_zero(s.result, sizeof s.result));
    if (st == 0)
        CHECK(json_is_object(s.root));
    json_decref(s.root);
}

/* ---- watches */

typedef struct wevent {
    slot_etcd_event_type type;
    int64_t mod_revision;
    uint64_t hash; /* of key and value */
} wevent;

typedef struct wrun {
    wevent ev[EVENTS_MAX];
    size_t n;
    bool ended, cancelling;
    int status;
    int64_t last_rev;
    slot__etcd_req *r;
} wrun;

static uint64_t hash_bytes(uint64_t h, const void *p, size_t n)
{
    const uint8_t *b = p;
    for (size_t i = 0; i < n; i++)
        h = (h ^ b[i]) * UINT64_C(1099511628211);
    return h ^ n;
}

static void on_event(slot_etcd_watch *w, const slot_etcd_event *ev, void *data)
{
    wrun *run = data;
    CHECK(!run->ended && (slot__etcd_req *)w == run->r);
    CHECK(ev->type == SLOT_ETCD_EVENT_PUT || ev->type == SLOT_ETCD_EVENT_DELETE);
    CHECK(ev->kv.key != NULL && ev->kv.value != NULL);
    if (run->n > 0) /* in revision order */
        CHECK(ev->kv.mod_revision >= run->ev[run->n - 1].mod_revision);
    /* not below what the watch had reached (it takes the maximum before the call) */
    CHECK(ev->kv.mod_revision == run->r->last_rev);
    if (run->n < EVENTS_MAX) {
        wevent *e = &run->ev[run->n];
        e->type = ev->type;
        e->mod_revision = ev->kv.mod_revision;
        e->hash = hash_bytes(hash_bytes(UINT64_C(1469598103934665603), ev->kv.key, ev->kv.key_len), ev->kv.value,
                             ev->kv.value_len);
    }
    run->n++;
}

static void on_watch_end(slot_etcd_watch *w, int status, int64_t last_revision, void *data)
{
    wrun *run = data;
    CHECK(!run->ended && (slot__etcd_req *)w == run->r);
    if (run->cancelling)
        CHECK(status == SLOT_ETCD_ECANCELLED);
    else
        CHECK(status == SLOT_ETCD_EPROTO || status == SLOT_ETCD_EDISCONNECT || status == SLOT_ETCD_ESERVER ||
              status == SLOT_ETCD_ECOMPACTED);
    run->ended = true;
    run->status = status;
    run->last_rev = last_revision;
    for (size_t i = 0; i < run->n && i < EVENTS_MAX; i++) /* never behind what it delivered */
        CHECK(last_revision >= run->ev[i].mod_revision);
}

/* The stream in chunks of chunk bytes (0: all at once). */
static void watch_run(wrun *run, bool from_now, const uint8_t *body, size_t n, size_t chunk)
{
    memset(run, 0, sizeof *run);
    slot__etcd_req *r = new_req(SLOT__ETCD_WATCH, (void *)on_watch_end, run, body, 0);
    free(r->resp);
    r->resp = malloc(n + 1);
    CHECK(r->resp != NULL);
    r->resp_cap = n + 1;
    r->ev_cb = on_event;
    r->data = run;
    r->from_now = from_now;
    r->last_rev = from_now ? 0 : 41; /* a watch from revision 42 */
    run->r = r;
    size_t at = 0;
    do {
        size_t k = chunk == 0 || n - at < chunk ? n - at : chunk;
        memcpy(r->resp + r->resp_len, body + at, k); /* as etcd_http.c's write callback appends */
        r->resp_len += k;
        at += k;
        r->dirty = true;
        slot__etcd_dispatch_watches(&client);
    } while (!run->ended && at < n);
    if (!run->ended) { /* still open at the end of the input: cancelled, as slot_etcd_watch_cancel would */
        run->cancelling = true;
        slot__etcd_watch_end(r, SLOT_ETCD_ECANCELLED);
    }
    CHECK(client.reqs == NULL && client.inflight == 0);
}

static void fuzz_watch(bool from_now, size_t chunk, const uint8_t *body, size_t n)
{
    static wrun whole, parts;
    watch_run(&whole, from_now, body, n, 0);
    watch_run(&parts, from_now, body, n, chunk);
    CHECK(whole.n == parts.n);
    CHECK(whole.cancelling == parts.cancelling && whole.status == parts.status && whole.last_rev == parts.last_rev);
    for (size_t i = 0; i < whole.n && i < EVENTS_MAX; i++)
        CHECK(whole.ev[i].type == parts.ev[i].type && whole.ev[i].mod_revision == parts.ev[i].mod_revision &&
              whole.ev[i].hash == parts.ev[i].hash);
}

/* ---- base64 */

static void fuzz_b64(const uint8_t *p, size_t n)
{
    size_t cap = (n + 2) / 3 * 4 + 1;
    char *text = malloc(cap);
    uint8_t *back = malloc(n + 1);
    CHECK(text && back);
    long tl = slot_etcd_b64_encode(p, n, text, cap);
    CHECK(tl >= 0 && (size_t)tl == cap - 1 && text[tl] == 0);
    long bl = slot_etcd_b64_decode(text, (size_t)tl, back, n + 1);
    CHECK(bl == (long)n && memcmp(back, p, n) == 0);
    free(text);
    free(back);
    /* the input as base64 text */
    uint8_t *dec = malloc(n / 4 * 3 + 1);
    CHECK(dec != NULL);
    long dl = slot_etcd_b64_decode((const char *)p, n, dec, n / 4 * 3 + 1);
    CHECK(dl >= 0 || dl == SLOT_ETCD_EPROTO);
    if (dl >= 0) {
        char *again = malloc(n + 1);
        CHECK(again != NULL);
        CHECK(slot_etcd_b64_encode(dec, (size_t)dl, again, n + 1) == (long)n && memcmp(again, p, n) == 0);
        free(again);
    }
    free(dec);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 3)
        return 0;
    unsigned pick = data[0] % 10;
    const uint8_t *body = data + 3;
    size_t n = size - 3;
    if (pick == 9)
        fuzz_b64(body, n);
    else if (pick == SLOT__ETCD_WATCH)
        fuzz_watch(data[1] & 1, data[2] % 64, body, n);
    else
        fuzz_answer((slot__etcd_kind)pick, data[1], body, n);
    return 0;
}
