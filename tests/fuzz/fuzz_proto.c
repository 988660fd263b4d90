/*
 * fuzz_proto.c — libFuzzer target for the wire format (slot/proto.h and the
 * codec half of slot/client.h). Each input is one request line. Whatever it
 * holds, nothing may crash, leak or trip a sanitizer, and:
 *   - a parsed request is within the limits of slot/limits.h;
 *   - the reply encoded for it (from a synthetic result whose strings are
 *     raw bytes of the input, as a cut message could be) is one line of one
 *     JSON object that jansson accepts, with "ok" and the request's id;
 *   - the client library's encoding of a parsed request parses back to a
 *     request that encodes to the same line (one canonical form);
 *   - the client's reply parser takes every reply the server encodes, and
 *     any bytes at all without crashing.
 * Built and run by tests/fuzz/run.sh.
 */
#include <jansson.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "slot/client.h"
#include "slot/proto.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(cond)                                                                       \
    do {                                                                                  \
        if (!(cond)) {                                                                    \
            fprintf(stderr, "fuzz_proto: check failed: %s (line %d)\n", #cond, __LINE__); \
            abort();                                                                      \
        }                                                                                 \
    } while (0)

/* A field of the request: NUL-terminated, its length kept beside it. */
static void check_name(const char *s, size_t len, size_t max)
{
    CHECK(len <= max);
    CHECK(strlen(s) == len);
}

static void check_req(const slot_req *q)
{
    CHECK((unsigned)q->op < SLOT_OP__COUNT);
    check_name(q->event, q->event_len, SLOT_EVENT_BYTES_MAX);
    check_name(q->request, q->request_len, SLOT_REQUEST_BYTES_MAX);
    check_name(q->user, q->user_len, SLOT_USER_BYTES_MAX);
    check_name(q->hold, q->hold_len, SLOT_HOLD_ARG_BYTES_MAX);
    check_name(q->token, q->token_len, SLOT_TOKEN_BYTES_MAX);
    if (q->id.kind == SLOT_ID_STR)
        check_name(q->id.s, q->id.len, SLOT_ID_BYTES_MAX);
    if (q->op == SLOT_OP_HOLD)
        CHECK(q->qty >= 1 && q->qty <= SLOT_MAX_PER_REQUEST_MAX);
    CHECK(q->capacity <= SLOT_CAPACITY_MAX);
    CHECK(q->max_per_user <= SLOT_CAPACITY_MAX);
    CHECK(q->shards <= SLOT_SHARDS_MAX);
}

/* Copies up to cap-1 bytes of the input (any bytes but NUL, which would only
 * end the string early) into a fixed field: what a message cut mid-character
 * or a stray byte would look like to the encoder. */
static void fill(char *dst, size_t cap, const uint8_t **p, size_t *n)
{
    size_t k = *n < cap - 1 ? *n : cap - 1;
    memcpy(dst, *p, k);
    dst[k] = 0;
    *p += k;
    *n -= k;
}

static uint64_t hash(const uint8_t *p, size_t n)
{
    uint64_t h = UINT64_C(1469598103934665603);
    for (size_t i = 0; i < n; i++)
        h = (h ^ p[i]) * UINT64_C(1099511628211);
    return h;
}

/* A result as the allocator or the server could make it for req, its
 * choices and strings taken from the input. */
static void synth_res(const slot_req *req, const uint8_t *data, size_t size, slot_res *res, uint64_t *shards)
{
    uint64_t h = hash(data, size);
    memset(res, 0, sizeof *res);
    if ((h & 7) == 0) {
        res->err = (slot_err)(1 + (h >> 3) % (SLOT_E__COUNT - 1));
        slot_res_error(res, res->err, "no hold \"%s\" for user \"%s\" in event \"%s\"", req->hold, req->user,
                       req->event);
    }
    res->sold_out = (h >> 8) & 1;
    res->replay = (h >> 9) & 1;
    res->done = (h >> 10) & 1;
    res->hold_status = (slot_hold_status)((h >> 11) % SLOT_HOLD__COUNT);
    res->role = (slot_role)((h >> 14) % 3);
    /* Numbers as large as they get: capacities up to 2^40, times in ms
     * (jansson, like most readers, takes integers up to 2^63 - 1). */
    uint64_t big = h & ((UINT64_C(1) << 48) - 1);
    res->qty = (uint32_t)(h >> 16);
    res->available = big;
    res->expires_at_ms = big * 3;
    res->created_at_ms = big ^ 0xffff;
    res->view.status = (slot_event_status)((h >> 20) & 1);
    res->view.capacity = big >> 7;
    res->nshards = (uint32_t)((h >> 24) % 8);
    res->shard_free = shards;
    for (uint32_t i = 0; i < res->nshards; i++)
        shards[i] = big >> i;
    const uint8_t *p = data;
    size_t n = size;
    fill(res->hold, sizeof res->hold, &p, &n);
    fill(res->user, sizeof res->user, &p, &n);
    fill(res->view.event, sizeof res->view.event, &p, &n);
    if (res->err != SLOT_E_OK && (h >> 30) & 1)
        fill(res->message, sizeof res->message, &p, &n);
}

/* A cluster reply's view (slot_cluster_view, typed: the encoder writes and
 * escapes every string of it), here with the request's strings, which may
 * hold quotes, line breaks and bytes that are not UTF-8. Heap; NULL when out
 * of memory (the reply then has no view). */
static slot_cluster_view *synth_view(const slot_req *req)
{
    slot_cluster_view *v = calloc(1, sizeof(*v));
    if (!v)
        return NULL;
    snprintf(v->cluster, sizeof(v->cluster), "%s", req->event);
    snprintf(v->node, sizeof(v->node), "%s", req->user);
    v->role = "replica";
    v->epoch = req->qty;
    snprintf(v->primary, sizeof(v->primary), "%s", req->request);
    v->seq = req->qty * 3u;
    v->member = req->qty & 1;
    v->nmembers = (uint32_t)(req->qty % (SLOT_CLUSTER_MEMBERS_MAX + 1));
    for (uint32_t i = 0; i < v->nmembers; i++) {
        snprintf(v->members[i].node, sizeof(v->members[i].node), "%s", i & 1 ? req->user : req->event);
        snprintf(v->members[i].addr, sizeof(v->members[i].addr), "%s", req->request);
        v->members[i].role = i ? "replica" : "primary";
        v->members[i].seq = i;
        v->members[i].lag_ms = UINT64_MAX - i;
    }
    return v;
}

/* One line of one JSON object with a boolean "ok", echoing the id. */
static void check_reply(const char *buf, size_t len, const slot_id *id)
{
    CHECK(len >= 2 && buf[len - 1] == '\n');
    CHECK(memchr(buf, '\n', len - 1) == NULL);
    CHECK(strlen(buf) == len);
    json_error_t jerr;
    json_t *o = json_loadb(buf, len - 1, JSON_REJECT_DUPLICATES, &jerr);
    if (!o) {
        fprintf(stderr, "fuzz_proto: reply is not JSON (%s): %s", jerr.text, buf);
        abort();
    }
    CHECK(json_is_object(o));
    CHECK(json_is_boolean(json_object_get(o, "ok")));
    json_t *jid = json_object_get(o, "id");
    if (id && id->kind == SLOT_ID_INT)
        CHECK(json_is_integer(jid) && json_integer_value(jid) == id->i);
    else if (id && id->kind == SLOT_ID_STR)
        CHECK(json_is_string(jid) && json_string_length(jid) == id->len &&
              memcmp(json_string_value(jid), id->s, id->len) == 0);
    else
        CHECK(jid == NULL);
    json_decref(o);
    /* The client library reads every reply the server can write. */
    slot_reply r;
    CHECK(slot_reply_parse(buf, len - 1, &r) == 0);
    CHECK(r.id.kind == (id ? id->kind : SLOT_ID_NONE));
    slot_reply_clear(&r);
}

/* Encodes into a buffer of exactly the size the encoder asks for. */
static char *encode(const slot_req *req, const slot_res *res, size_t *len)
{
    char small[64];
    size_t need = slot_proto_encode(req, res, small, sizeof small);
    char *buf = malloc(need + 1);
    CHECK(buf != NULL);
    *len = slot_proto_encode(req, res, buf, need + 1);
    CHECK(*len == need);
    return buf;
}

/* The client's line for a parsed request parses again, to the same line. */
static void check_canonical(const slot_req *req)
{
    /* What the C client cannot send: set_admission (slotctl writes that line itself), and an
     * admission whose ticket the parser kept as "" (not a ticket's length: unknown_hold). */
    if (req->op == SLOT_OP_SET_ADMISSION || (req->op == SLOT_OP_ADMISSION && req->ticket[0] == 0))
        return;
    /* Nor the placement's internal ops (one primary to another) or move_event. */
    if (slot_op_internal(req->op) || req->op == SLOT_OP_MOVE_EVENT)
        return;
    char a[4096], b[4096], msg[256];
    long la = slot_req_encode(req, a, sizeof a);
    CHECK(la > 1 && (size_t)la < sizeof a && a[la - 1] == '\n');
    slot_req again;
    slot_err err = slot_proto_parse(a, (size_t)la - 1, &again, msg, sizeof msg);
    if (err != SLOT_E_OK) {
        fprintf(stderr, "fuzz_proto: the client's line is refused (%s: %s): %s", slot_err_name(err), msg, a);
        abort();
    }
    long lb = slot_req_encode(&again, b, sizeof b);
    if (lb != la || memcmp(a, b, (size_t)la) != 0) {
        fprintf(stderr, "fuzz_proto: encode(parse(line)) differs:\n  %s  %s", a, b);
        abort();
    }
    slot_req_clear(&again);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    slot_reply raw; /* any bytes as a reply: an error or a reply, never a crash */
    slot_reply_parse((const char *)data, size, &raw);
    slot_reply_clear(&raw);
    if (size == 0)
        return 0;
    slot_req req;
    char msg[256];
    slot_err err = slot_proto_parse((const char *)data, size, &req, msg, sizeof msg);
    size_t len;
    char *buf;
    if (err != SLOT_E_OK) {
        CHECK(err == SLOT_E_BAD_JSON || err == SLOT_E_INVALID_ARGUMENT || err == SLOT_E_UNKNOWN_OP);
        char small[64];
        size_t need = slot_proto_encode_error(&req.id, err, msg, small, sizeof small);
        buf = malloc(need + 1);
        CHECK(buf != NULL);
        len = slot_proto_encode_error(&req.id, err, msg, buf, need + 1);
        CHECK(len == need);
        check_reply(buf, len, err == SLOT_E_BAD_JSON ? NULL : &req.id);
        free(buf);
        return 0;
    }
    check_req(&req);
    check_canonical(&req);
    slot_res res;
    uint64_t shards[8];
    synth_res(&req, data, size, &res, shards);
    if (req.op == SLOT_OP_CLUSTER || req.op == SLOT_OP_CLUSTER_CHANGE)
        res.cluster_view = synth_view(&req);
    buf = encode(&req, &res, &len);
    check_reply(buf, len, &req.id);
    free(buf);
    free(res.cluster_view);
    slot_req_clear(&req);
    return 0;
}
