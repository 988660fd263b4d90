/*
 * proto.c — the wire format of docs/protocol.md (proto.h).
 *
 * Parsing: jansson builds the tree (duplicate keys rejected; it already
 * refuses invalid UTF-8, \u0000, lone surrogates, NaN and a scalar top level),
 * then slotd's own checks run in the order of the contract: the shape (an
 * object, at most SLOT_JSON_DEPTH_MAX deep), the id, the op, the op's fields.
 * The only heap use is jansson's tree, freed before returning. The hot ops'
 * common shape skips the tree: proto_fast.c parses it by hand and gives
 * exactly this file's result, or hands the line here.
 *
 * Encoding is in proto_enc.c.
 */
#include "slot/proto.h"

#include <inttypes.h>
#include <jansson.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "base/jsonw.h"
#include "slot/assert.h"
#include "proto_int.h"

/* ------------------------------------------------------------------------ */
/* Parsing                                                                   */
/* ------------------------------------------------------------------------ */

#define TRY(expr)                   \
    do {                            \
        slot_err try_err_ = (expr); \
        if (try_err_ != SLOT_E_OK)  \
            return try_err_;        \
    } while (0)

/* What the field checks share: the parsed object and where messages go. */
typedef struct parse_ctx {
    json_t *root;
    char *msg;
    size_t msglen;
} parse_ctx;

/* Required or optional, for the field getters. */
enum { OPTIONAL = 0, REQUIRED = 1 };

__attribute__((format(printf, 4, 5))) static slot_err fail(char *msg, size_t msglen, slot_err err, const char *fmt, ...)
{
    if (msg && msglen > 0) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(msg, msglen, fmt, ap);
        va_end(ap);
    }
    return err;
}

/*
 * A field is missing or bad: "<key>: must be <spec>", or "<key>: missing;
 * must be <spec>" when absent, so every message names the field.
 */
__attribute__((format(printf, 4, 5))) static slot_err field_fail(const parse_ctx *c, const char *key, const json_t *v,
                                                                 const char *spec_fmt, ...)
{
    if (c->msg && c->msglen > 0) {
        char spec[96];
        va_list ap;
        va_start(ap, spec_fmt);
        vsnprintf(spec, sizeof(spec), spec_fmt, ap);
        va_end(ap);
        snprintf(c->msg, c->msglen, "%s: %smust be %s", key, v ? "" : "missing; ", spec);
    }
    return SLOT_E_INVALID_ARGUMENT;
}

/* True when a container below `v` (itself at level `depth`) passes the limit; stops at the first. */
static bool too_deep(json_t *v, int depth)
{
    if (depth > SLOT_JSON_DEPTH_MAX)
        return true;
    if (json_is_object(v)) {
        const char *key;
        json_t *m;
        json_object_foreach(v, key, m)
        {
            if ((json_is_object(m) || json_is_array(m)) && too_deep(m, depth + 1))
                return true;
        }
    } else if (json_is_array(v)) {
        size_t i;
        json_t *m;
        json_array_foreach(v, i, m)
        {
            if ((json_is_object(m) || json_is_array(m)) && too_deep(m, depth + 1))
                return true;
        }
    }
    return false;
}

/* The checks jansson does not make: the top level is an object, the nesting is bounded. */
static slot_err check_shape(json_t *root, char *msg, size_t msglen)
{
    if (!json_is_object(root))
        return fail(msg, msglen, SLOT_E_BAD_JSON, "the top level must be an object");
    if (too_deep(root, 1))
        return fail(msg, msglen, SLOT_E_BAD_JSON, "nesting deeper than %d levels", SLOT_JSON_DEPTH_MAX);
    return SLOT_E_OK;
}

/* A byte position of the line as the caller counts it: jansson's plus
 * byte_delta, never below 0 (a position inside bytes the caller added). */
static long long shifted(int position, ptrdiff_t byte_delta)
{
    long long p = (long long)position + (long long)byte_delta;
    return p < 0 ? 0 : p;
}

/*
 * jansson stops at a number too large for int64 (or a double), so the rest of
 * the line is unseen and a later syntax error, duplicate key or bad shape
 * would be hidden behind invalid_argument. Parse once more with integers read
 * as doubles to see the rest: bad_json wins over invalid_argument (contract
 * order). Only this error path pays for the second parse.
 */
static slot_err overflow_verdict(const char *line, size_t len, ptrdiff_t byte_delta, const json_error_t *first,
                                 char *msg, size_t msglen)
{
    json_error_t e;
    json_t *root = json_loadb(line, len, JSON_REJECT_DUPLICATES | JSON_DECODE_INT_AS_REAL, &e);
    if (!root && json_error_code(&e) != json_error_numeric_overflow)
        return fail(msg, msglen, SLOT_E_BAD_JSON, "%s (byte %lld)", e.text, shifted(e.position, byte_delta));
    if (root) {
        slot_err err = check_shape(root, msg, msglen);
        json_decref(root);
        if (err != SLOT_E_OK)
            return err;
    }
    return fail(msg, msglen, SLOT_E_INVALID_ARGUMENT, "number out of range: %s (byte %lld)", first->text,
                shifted(first->position, byte_delta));
}

/* jansson's parse plus the shape checks; *out is a new reference on success.
 * Byte positions in messages are jansson's plus byte_delta (slot_proto_parse_at). */
static slot_err load(const char *line, size_t len, ptrdiff_t byte_delta, json_t **out, char *msg, size_t msglen)
{
    json_error_t e;
    json_t *root = json_loadb(line, len, JSON_REJECT_DUPLICATES, &e);
    if (!root) {
        if (json_error_code(&e) == json_error_numeric_overflow)
            return overflow_verdict(line, len, byte_delta, &e, msg, msglen);
        return fail(msg, msglen, SLOT_E_BAD_JSON, "%s (byte %lld)", e.text, shifted(e.position, byte_delta));
    }
    slot_err err = check_shape(root, msg, msglen);
    if (err != SLOT_E_OK) {
        json_decref(root);
        return err;
    }
    *out = root;
    return SLOT_E_OK;
}

static slot_err parse_id(const parse_ctx *c, slot_id *id)
{
    json_t *v = json_object_get(c->root, "id");
    if (!v)
        return SLOT_E_OK;
    if (json_is_integer(v)) {
        id->kind = SLOT_ID_INT;
        id->i = (int64_t)json_integer_value(v);
        return SLOT_E_OK;
    }
    if (json_is_string(v) && json_string_length(v) <= SLOT_ID_BYTES_MAX) {
        size_t n = json_string_length(v);
        memcpy(id->s, json_string_value(v), n);
        id->s[n] = 0;
        id->len = (uint8_t)n;
        id->kind = SLOT_ID_STR;
        return SLOT_E_OK;
    }
    return field_fail(c, "id", v, "a string of at most %d bytes or an integer that fits in int64", SLOT_ID_BYTES_MAX);
}

static slot_err parse_op(const parse_ctx *c, slot_op *op)
{
    json_t *v = json_object_get(c->root, "op");
    if (!json_is_string(v))
        return fail(c->msg, c->msglen, SLOT_E_UNKNOWN_OP, "op: %s", v ? "must be a string" : "missing");
    *op = slot_op_from_name(json_string_value(v), json_string_length(v));
    if (*op == SLOT_OP__COUNT)
        return fail(c->msg, c->msglen, SLOT_E_UNKNOWN_OP, "op: unknown op \"%.32s\"", json_string_value(v));
    return SLOT_E_OK;
}

/* docs/protocol.md, "Names and numbers": the alphabet of event and request names. */
static bool name_char(unsigned char ch)
{
    return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') || ch == '.' || ch == '_' ||
           ch == ':' || ch == '-';
}

/* User names: any UTF-8 (jansson checked it) except U+0000..U+001F and U+007F. */
static bool user_char(unsigned char ch)
{
    return ch >= 0x20 && ch != 0x7f;
}

/*
 * A string field of 1..max bytes whose every byte passes `ok` (NULL: any).
 * *given (may be NULL) says whether an optional field was present.
 */
static slot_err get_string(const parse_ctx *c, const char *key, int required, size_t max, bool (*ok)(unsigned char),
                           const char *spec, char *dst, size_t *dst_len, bool *given)
{
    json_t *v = json_object_get(c->root, key);
    if (given)
        *given = v != NULL;
    if (!v && !required)
        return SLOT_E_OK;
    if (!json_is_string(v))
        return field_fail(c, key, v, "%s", spec);
    const char *s = json_string_value(v);
    size_t n = json_string_length(v);
    if (n < 1 || n > max)
        return field_fail(c, key, v, "%s", spec);
    for (size_t i = 0; ok && i < n; i++)
        if (!ok((unsigned char)s[i]))
            return field_fail(c, key, v, "%s", spec);
    SLOT_ASSERT(n >= 1 && n <= max);
    memcpy(dst, s, n);
    dst[n] = 0;
    *dst_len = n;
    return SLOT_E_OK;
}

#define NAME_SPEC "1..64 bytes of [A-Za-z0-9._:-]"
_Static_assert(SLOT_EVENT_BYTES_MAX == 64 && SLOT_REQUEST_BYTES_MAX == 64, "NAME_SPEC says 64");

/* backup's path: any byte but NUL (the server opens it as a C string). */
static bool path_char(unsigned char ch)
{
    return ch != 0;
}

#define PATH_SPEC "an absolute path of 1..1023 bytes"
_Static_assert(SLOT_PATH_BYTES_MAX == 1023, "PATH_SPEC says 1023");

static slot_err get_path(const parse_ctx *c, slot_req *r)
{
    size_t n = 0;
    TRY(get_string(c, "path", REQUIRED, SLOT_PATH_BYTES_MAX, path_char, PATH_SPEC, r->path, &n, NULL));
    if (r->path[0] != '/')
        return field_fail(c, "path", json_object_get(c->root, "path"), "%s", PATH_SPEC);
    r->path_len = (uint16_t)n;
    return SLOT_E_OK;
}

static slot_err get_event(const parse_ctx *c, slot_req *r, int required)
{
    size_t n = 0;
    bool given = false;
    TRY(get_string(c, "event", required, SLOT_EVENT_BYTES_MAX, name_char, NAME_SPEC, r->event, &n, &given));
    if (given) {
        r->event_len = (uint8_t)n;
        r->has |= SLOT_HAS_EVENT;
    }
    return SLOT_E_OK;
}

/* allocation: a block's name (the event rule), docs/protocol.md, "Allocations". */
static slot_err get_alloc(const parse_ctx *c, slot_req *r, int required)
{
    size_t n = 0;
    bool given = false;
    TRY(get_string(c, "allocation", required, SLOT_EVENT_BYTES_MAX, name_char, NAME_SPEC, r->alloc, &n, &given));
    if (given) {
        r->alloc_len = (uint8_t)n;
        r->has |= SLOT_HAS_ALLOCATION;
    }
    return SLOT_E_OK;
}

static slot_err get_request(const parse_ctx *c, slot_req *r)
{
    size_t n = 0;
    TRY(get_string(c, "request", REQUIRED, SLOT_REQUEST_BYTES_MAX, name_char, NAME_SPEC, r->request, &n, NULL));
    r->request_len = (uint8_t)n;
    return SLOT_E_OK;
}

static slot_err get_user(const parse_ctx *c, slot_req *r)
{
    size_t n = 0;
    TRY(get_string(c, "user", REQUIRED, SLOT_USER_BYTES_MAX, user_char,
                   "1..128 bytes of UTF-8 without control characters", r->user, &n, NULL));
    r->user_len = (uint8_t)n;
    return SLOT_E_OK;
}

/* The optional client key of a hold, cart or waitlist_join (docs/protocol.md,
 * "Client limits"): 1..SLOT_CLIENT_BYTES_MAX bytes, like a user name. */
static slot_err get_client(const parse_ctx *c, slot_req *r)
{
    size_t n = 0;
    bool given = false;
    TRY(get_string(c, "client", OPTIONAL, SLOT_CLIENT_BYTES_MAX, user_char,
                   "1..128 bytes of UTF-8 without control characters", r->client, &n, &given));
    r->client_len = given ? (uint8_t)n : 0;
    return SLOT_E_OK;
}

/* The hold id's format is not checked here: a malformed one is the allocator's unknown_hold. */
static slot_err get_hold(const parse_ctx *c, slot_req *r)
{
    size_t n = 0;
    TRY(get_string(c, "hold", REQUIRED, SLOT_HOLD_ARG_BYTES_MAX, NULL, "a string of 1..128 bytes", r->hold, &n, NULL));
    r->hold_len = (uint8_t)n;
    return SLOT_E_OK;
}

_Static_assert(SLOT_USER_BYTES_MAX <= UINT8_MAX && SLOT_HOLD_ARG_BYTES_MAX <= UINT8_MAX, "lengths are uint8_t");
_Static_assert(SLOT_TOKEN_BYTES_MAX <= UINT16_MAX, "token_len is uint16_t");

/* hello's token: optional, 0..SLOT_TOKEN_BYTES_MAX bytes (whether it is right is the server's call). */
static slot_err get_token(const parse_ctx *c, slot_req *r)
{
    json_t *v = json_object_get(c->root, "token");
    if (!v)
        return SLOT_E_OK;
    if (!json_is_string(v) || json_string_length(v) > SLOT_TOKEN_BYTES_MAX)
        return field_fail(c, "token", v, "a string of at most %d bytes", SLOT_TOKEN_BYTES_MAX);
    size_t n = json_string_length(v);
    SLOT_ASSERT(n <= SLOT_TOKEN_BYTES_MAX);
    memcpy(r->token, json_string_value(v), n);
    r->token[n] = 0;
    r->token_len = (uint16_t)n;
    r->has |= SLOT_HAS_TOKEN;
    return SLOT_E_OK;
}

/*
 * An integer field in lo..hi. Only a JSON integer counts: 1.0 and 1e0 are
 * reals to jansson, "1", true and null are other types; all are refused.
 */
static slot_err get_int(const parse_ctx *c, const char *key, int required, int64_t lo, int64_t hi, int64_t *out,
                        bool *given)
{
    json_t *v = json_object_get(c->root, key);
    if (given)
        *given = v != NULL;
    if (!v && !required)
        return SLOT_E_OK;
    if (!json_is_integer(v) || json_integer_value(v) < lo || json_integer_value(v) > hi)
        return field_fail(c, key, v, "an integer in %" PRId64 "..%" PRId64, lo, hi);
    *out = (int64_t)json_integer_value(v);
    SLOT_ASSERT(*out >= lo && *out <= hi);
    return SLOT_E_OK;
}

static slot_err get_qty(const parse_ctx *c, slot_req *r)
{
    int64_t v = 0;
    TRY(get_int(c, "qty", REQUIRED, 1, SLOT_MAX_PER_REQUEST_MAX, &v, NULL));
    r->qty = (uint32_t)v;
    return SLOT_E_OK;
}

static slot_err get_capacity(const parse_ctx *c, slot_req *r)
{
    int64_t v = 0;
    TRY(get_int(c, "capacity", REQUIRED, 0, (int64_t)SLOT_CAPACITY_MAX, &v, NULL));
    r->capacity = (uint64_t)v;
    return SLOT_E_OK;
}

static slot_err get_shards(const parse_ctx *c, slot_req *r, int required)
{
    int64_t v = SLOT_SHARDS_DEFAULT;
    bool given = false;
    TRY(get_int(c, "shards", required, 1, SLOT_SHARDS_MAX, &v, &given));
    r->shards = (uint32_t)v;
    if (given)
        r->has |= SLOT_HAS_SHARDS;
    return SLOT_E_OK;
}

static slot_err get_status(const parse_ctx *c, slot_req *r)
{
    json_t *v = json_object_get(c->root, "status");
    const char *s = json_string_value(v); /* NULL when v is missing or not a string */
    if (s && strcmp(s, "on_sale") == 0)
        r->status = SLOT_EVENT_ON_SALE;
    else if (s && strcmp(s, "closed") == 0)
        r->status = SLOT_EVENT_CLOSED;
    else
        return field_fail(c, "status", v, "\"on_sale\" or \"closed\"");
    return SLOT_E_OK;
}

/* A time field (opens_at, closes_at): 0 (none) or ms since the epoch, up to 2^53. */
static slot_err get_time(const parse_ctx *c, const char *key, int required, uint64_t *out, bool *given)
{
    int64_t v = 0;
    TRY(get_int(c, key, required, 0, (int64_t)SLOT_TIME_MS_MAX, &v, given));
    *out = (uint64_t)v;
    return SLOT_E_OK;
}

/* The window's own rule (docs/protocol.md, "Sale windows"): closes_at > opens_at when both are set. */
static slot_err check_window(const parse_ctx *c, const slot_req *r)
{
    if (r->opens_at_ms && r->closes_at_ms && r->closes_at_ms <= r->opens_at_ms)
        return fail(c->msg, c->msglen, SLOT_E_INVALID_ARGUMENT, "closes_at: must be after opens_at (%llu)",
                    (unsigned long long)r->opens_at_ms);
    return SLOT_E_OK;
}

/* set_sale_window: event and both times (0 = none), required. */
static slot_err parse_sale_window(const parse_ctx *c, slot_req *r)
{
    TRY(get_event(c, r, REQUIRED));
    TRY(get_time(c, "opens_at", REQUIRED, &r->opens_at_ms, NULL));
    TRY(get_time(c, "closes_at", REQUIRED, &r->closes_at_ms, NULL));
    return check_window(c, r);
}

/* The waiting room's settings (docs/protocol.md, "Admission") of
 * create_event and set_admission, with their defaults. */
static slot_err get_room_settings(const parse_ctx *c, slot_req *r)
{
    json_t *v = json_object_get(c->root, "admission");
    r->admission = SLOT_ADMISSION_NONE;
    if (v) {
        const char *m = json_is_string(v) ? json_string_value(v) : NULL;
        if (m && strcmp(m, "none") == 0)
            r->admission = SLOT_ADMISSION_NONE;
        else if (m && strcmp(m, "queue") == 0)
            r->admission = SLOT_ADMISSION_QUEUE;
        else if (m && strcmp(m, "lottery") == 0)
            r->admission = SLOT_ADMISSION_LOTTERY;
        else
            return field_fail(c, "admission", v, "\"none\", \"queue\" or \"lottery\"");
    }
    int64_t rate = SLOT_ADMIT_PER_S_DEFAULT, ttl = SLOT_GRANT_TTL_MS_DEFAULT;
    TRY(get_int(c, "admit_per_s", OPTIONAL, SLOT_ADMIT_PER_S_MIN, SLOT_ADMIT_PER_S_MAX, &rate, NULL));
    TRY(get_int(c, "grant_ttl_ms", OPTIONAL, SLOT_GRANT_TTL_MS_MIN, SLOT_GRANT_TTL_MS_MAX, &ttl, NULL));
    r->admit_per_s = (uint32_t)rate;
    r->grant_ttl_ms = (uint32_t)ttl;
    return get_time(c, "queue_opens_at", OPTIONAL, &r->queue_opens_at_ms, NULL);
}

/* A ticket or grant: a string of 1..128 bytes; kept only when it has a
 * hold id's length (anything else is no ticket of the room: the
 * allocator's unknown_hold or admission_required). */
static slot_err get_room_id(const parse_ctx *c, const char *key, int required, char *dst, bool *given)
{
    char tmp[SLOT_HOLD_ARG_BYTES_MAX + 1];
    size_t n = 0;
    TRY(get_string(c, key, required, SLOT_HOLD_ARG_BYTES_MAX, NULL, "a string of 1..128 bytes", tmp, &n, given));
    dst[0] = 0;
    if (n == SLOT_HOLD_ID_BYTES) {
        memcpy(dst, tmp, n);
        dst[n] = 0;
    }
    return SLOT_E_OK;
}

/* create_event's v1.1 settings: the window, max_extensions and max_hold_ms (0 here: 2 x hold_ttl_ms). */
static slot_err parse_create_v11(const parse_ctx *c, slot_req *r)
{
    int64_t mx = SLOT_MAX_EXTENSIONS_DEFAULT, mh = 0;
    bool given = false;
    TRY(get_time(c, "opens_at", OPTIONAL, &r->opens_at_ms, &given));
    if (given)
        r->has |= SLOT_HAS_OPENS_AT;
    TRY(get_time(c, "closes_at", OPTIONAL, &r->closes_at_ms, &given));
    if (given)
        r->has |= SLOT_HAS_CLOSES_AT;
    TRY(check_window(c, r));
    TRY(get_int(c, "max_extensions", OPTIONAL, 0, SLOT_MAX_EXTENSIONS_MAX, &mx, &given));
    if (given)
        r->has |= SLOT_HAS_MAX_EXTENSIONS;
    TRY(get_int(c, "max_hold_ms", OPTIONAL, SLOT_MAX_HOLD_MS_MIN, (int64_t)SLOT_MAX_HOLD_MS_MAX, &mh, &given));
    if (given)
        r->has |= SLOT_HAS_MAX_HOLD_MS;
    r->max_extensions = (uint32_t)mx;
    r->max_hold_ms = (uint64_t)mh;
    int64_t wl = 0;
    TRY(get_int(c, "waitlist_max", OPTIONAL, 0, SLOT_WAITLIST_MAX_MAX, &wl, &given));
    if (given)
        r->has |= SLOT_HAS_WAITLIST_MAX;
    r->waitlist_max = (uint32_t)wl;
    /* v1.2 "Client limits": the event's limits per client key */
    int64_t mac = 0, rate = 0;
    bool g2 = false;
    TRY(get_int(c, "max_active_per_client", OPTIONAL, 0, (int64_t)SLOT_CAPACITY_MAX, &mac, &given));
    TRY(get_int(c, "client_rate", OPTIONAL, 0, SLOT_CLIENT_RATE_MAX, &rate, &g2));
    if (given || g2)
        r->has |= SLOT_HAS_CLIENT_LIMITS;
    r->max_active_per_client = (uint64_t)mac;
    r->client_rate = (uint32_t)rate;
    return get_room_settings(c, r);
}

/* confirm: the hold's fields, then the optional qty (a partial confirm) and reacquire. */
static slot_err parse_confirm(const parse_ctx *c, slot_req *r)
{
    int64_t q = 0;
    bool given = false;
    TRY(get_event(c, r, REQUIRED));
    TRY(get_hold(c, r));
    TRY(get_user(c, r));
    TRY(get_int(c, "qty", OPTIONAL, 1, SLOT_MAX_PER_REQUEST_MAX, &q, &given));
    if (given) {
        r->qty = (uint32_t)q;
        r->has |= SLOT_HAS_QTY;
    }
    json_t *v = json_object_get(c->root, "reacquire");
    if (v && !json_is_boolean(v))
        return field_fail(c, "reacquire", v, "true or false");
    r->reacquire = json_is_true(v);
    return slot__proto_seat_confirm(c->root, r, c->msg, c->msglen);
}

/* extend: the hold's fields and by_ms. */
static slot_err parse_extend(const parse_ctx *c, slot_req *r)
{
    int64_t by = 0;
    TRY(get_event(c, r, REQUIRED));
    TRY(get_hold(c, r));
    TRY(get_user(c, r));
    TRY(get_int(c, "by_ms", REQUIRED, SLOT_EXTEND_BY_MS_MIN, SLOT_EXTEND_BY_MS_MAX, &by, NULL));
    r->by_ms = (uint32_t)by;
    return SLOT_E_OK;
}

/* create_event: event and capacity, then the optional settings with their defaults (limits.h). */
static slot_err parse_create_event(const parse_ctx *c, slot_req *r)
{
    int64_t ttl = SLOT_HOLD_TTL_MS_DEFAULT, mpu = 0, mpr = SLOT_MAX_PER_REQUEST_DEFAULT;
    bool given = false;
    TRY(get_event(c, r, REQUIRED));
    if (json_object_get(c->root, "seats")) /* a seated event: capacity is its seat count */
        TRY(slot__proto_seat_map(c->root, r, c->msg, c->msglen));
    else
        TRY(get_capacity(c, r));
    TRY(get_shards(c, r, OPTIONAL));
    TRY(get_int(c, "hold_ttl_ms", OPTIONAL, SLOT_HOLD_TTL_MS_MIN, SLOT_HOLD_TTL_MS_MAX, &ttl, &given));
    if (given)
        r->has |= SLOT_HAS_HOLD_TTL;
    TRY(get_int(c, "max_per_user", OPTIONAL, 0, (int64_t)SLOT_CAPACITY_MAX, &mpu, &given));
    if (given)
        r->has |= SLOT_HAS_MAX_PER_USER;
    TRY(get_int(c, "max_per_request", OPTIONAL, 1, SLOT_MAX_PER_REQUEST_MAX, &mpr, &given));
    if (given)
        r->has |= SLOT_HAS_MAX_PER_REQUEST;
    r->hold_ttl_ms = (uint32_t)ttl;
    r->max_per_user = (uint64_t)mpu;
    r->max_per_request = (uint32_t)mpr;
    size_t n = 0;
    TRY(get_string(c, "parent", OPTIONAL, SLOT_EVENT_BYTES_MAX, name_char, NAME_SPEC, r->parent, &n, &given));
    if (given) {
        r->parent_len = (uint8_t)n;
        r->has |= SLOT_HAS_PARENT;
    }
    return parse_create_v11(c, r);
}

/* hold_many's items: 1..SLOT_CART_ITEMS_MAX objects {event, qty, allocation?} of distinct
 * events (docs/protocol.md, "hold_many"); messages name the item. */
static slot_err parse_items(const parse_ctx *c, slot_req *r)
{
    json_t *arr = json_object_get(c->root, "items");
    if (!json_is_array(arr) || json_array_size(arr) < 1 || json_array_size(arr) > SLOT_CART_ITEMS_MAX)
        return field_fail(c, "items", arr, "an array of 1..%d items {\"event\",\"qty\"}", SLOT_CART_ITEMS_MAX);
    size_t i;
    json_t *m;
    json_array_foreach(arr, i, m)
    {
        char key[32];
        snprintf(key, sizeof(key), "items[%zu]", i);
        if (!json_is_object(m))
            return field_fail(c, key, m, "an object {\"event\",\"qty\"}");
        parse_ctx item = {.root = m, .msg = c->msg, .msglen = c->msglen};
        slot_item *it = &r->items[i];
        size_t n = 0;
        int64_t q = 0;
        slot_err err = get_string(&item, "event", REQUIRED, SLOT_EVENT_BYTES_MAX, name_char, NAME_SPEC, it->event, &n,
                                  NULL);
        if (err == SLOT_E_OK)
            err = get_int(&item, "qty", REQUIRED, 1, SLOT_MAX_PER_REQUEST_MAX, &q, NULL);
        if (err == SLOT_E_OK) /* the item's own grant ("Clarifications of v1.2", Admission) */
            err = get_room_id(&item, "grant", OPTIONAL, it->grant, NULL);
        size_t an = 0;
        if (err == SLOT_E_OK) /* the item's block (docs/protocol.md, "Allocations") */
            err = get_string(&item, "allocation", OPTIONAL, SLOT_EVENT_BYTES_MAX, name_char, NAME_SPEC, it->alloc, &an,
                             NULL);
        if (err != SLOT_E_OK) { /* "event: ..." becomes "items[i].event: ..." */
            char inner[160];
            snprintf(inner, sizeof(inner), "%s", c->msg ? c->msg : "");
            return fail(c->msg, c->msglen, err, "%s.%s", key, inner);
        }
        it->event_len = (uint8_t)n;
        it->qty = (uint16_t)q;
        it->alloc_len = (uint8_t)an;
        it->alloc[an] = 0;
        for (size_t j = 0; j < i; j++)
            if (r->items[j].event_len == it->event_len && memcmp(r->items[j].event, it->event, n) == 0)
                return fail(c->msg, c->msglen, SLOT_E_INVALID_ARGUMENT, "items[%zu].event: \"%s\" is also items[%zu]",
                            i, it->event, j);
        r->nitems = (uint8_t)(i + 1);
    }
    return SLOT_E_OK;
}

/* cluster_change: "change" (add, remove, promote) and "node" (docs/protocol.md, "cluster_change"). */
static slot_err parse_cluster_change(const parse_ctx *c, slot_req *r)
{
    json_t *v = json_object_get(c->root, "change");
    const char *ch = json_is_string(v) ? json_string_value(v) : "";
    r->change = SLOT_CHANGE_NONE;
    for (int k = SLOT_CHANGE_ADD; k <= SLOT_CHANGE_PROMOTE; k++)
        if (strcmp(ch, slot_cluster_change_name((slot_cluster_change)k)) == 0)
            r->change = (slot_cluster_change)k;
    if (r->change == SLOT_CHANGE_NONE)
        return field_fail(c, "change", v, "\"add\", \"remove\" or \"promote\"");
    size_t n = 0;
    TRY(get_string(c, "node", REQUIRED, SLOT_CLUSTER_NAME_BYTES_MAX, name_char, NAME_SPEC, r->node, &n, NULL));
    r->node_len = (uint8_t)n;
    return SLOT_E_OK;
}

/* The fields of each op (docs/protocol.md); fields an op does not use are never looked at. */
static slot_err parse_fields(const parse_ctx *c, slot_req *r)
{
    switch (r->op) {
    case SLOT_OP_HELLO:
        return get_token(c, r);
    case SLOT_OP_HOLD:
    case SLOT_OP_WAITLIST_JOIN:
        TRY(get_event(c, r, REQUIRED));
        TRY(get_user(c, r));
        TRY(get_request(c, r));
        TRY(get_client(c, r));
        TRY(get_room_id(c, "grant", OPTIONAL, r->grant, NULL));
        TRY(get_alloc(c, r, OPTIONAL));
        if (r->op == SLOT_OP_HOLD) { /* seats, adjacent, category, section (proto_seat.c) */
            bool qty_done = false;
            TRY(slot__proto_seat_hold(c->root, r, &qty_done, c->msg, c->msglen));
            if (!qty_done)
                TRY(get_qty(c, r));
        } else {
            TRY(get_qty(c, r));
        }
        return SLOT_E_OK;
    case SLOT_OP_ALLOCATE:
    case SLOT_OP_DEALLOCATE: {
        int64_t q = 0, mpu = 0;
        bool given = false;
        TRY(get_event(c, r, REQUIRED));
        TRY(get_alloc(c, r, REQUIRED));
        TRY(get_int(c, "qty", r->op == SLOT_OP_ALLOCATE ? REQUIRED : OPTIONAL, 1, (int64_t)SLOT_CAPACITY_MAX, &q,
                    &given));
        r->alloc_qty = (uint64_t)q;
        if (given)
            r->has |= SLOT_HAS_ALLOC_QTY;
        if (r->op == SLOT_OP_ALLOCATE) {
            TRY(get_int(c, "max_per_user", OPTIONAL, 0, (int64_t)SLOT_CAPACITY_MAX, &mpu, &given));
            r->max_per_user = (uint64_t)mpu;
            if (given)
                r->has |= SLOT_HAS_MAX_PER_USER;
        }
        return SLOT_E_OK;
    }
    case SLOT_OP_WAITLIST_LEAVE:
    case SLOT_OP_WAITLIST:
        TRY(get_event(c, r, REQUIRED));
        TRY(get_user(c, r));
        return get_request(c, r);
    case SLOT_OP_HOLD_MANY:
        TRY(get_user(c, r));
        TRY(get_request(c, r));
        TRY(get_client(c, r));
        TRY(get_room_id(c, "grant", OPTIONAL, r->grant, NULL));
        return parse_items(c, r);
    case SLOT_OP_WAITLIST_ENTRIES: {
        int64_t lim = 10;
        TRY(get_event(c, r, REQUIRED));
        TRY(get_int(c, "limit", OPTIONAL, 1, SLOT_WAITLIST_SHOW_MAX, &lim, NULL));
        r->limit = (uint32_t)lim;
        return SLOT_E_OK;
    }
    case SLOT_OP_JOIN:
        TRY(get_event(c, r, REQUIRED));
        TRY(get_user(c, r));
        return get_request(c, r);
    case SLOT_OP_ADMISSION:
        TRY(get_event(c, r, REQUIRED));
        return get_room_id(c, "ticket", REQUIRED, r->ticket, NULL);
    case SLOT_OP_SET_ADMISSION:
        TRY(get_event(c, r, REQUIRED));
        return get_room_settings(c, r);
    case SLOT_OP_CONFIRM:
        return parse_confirm(c, r);
    case SLOT_OP_EXTEND:
        return parse_extend(c, r);
    case SLOT_OP_SET_SALE_WINDOW:
        return parse_sale_window(c, r);
    case SLOT_OP_RELEASE:
        TRY(get_event(c, r, REQUIRED));
        TRY(get_hold(c, r));
        return get_user(c, r);
    case SLOT_OP_GET_HOLD: /* user may be left out by worker and admin (the server's call) */
        TRY(get_event(c, r, REQUIRED));
        TRY(get_hold(c, r));
        if (!json_object_get(c->root, "user"))
            return SLOT_E_OK; /* user_len stays 0: any user's hold */
        return get_user(c, r);
    case SLOT_OP_EVENT:
    case SLOT_OP_SHARDS:
    case SLOT_OP_SEAT_MAP:
        return get_event(c, r, REQUIRED);
    case SLOT_OP_CREATE_EVENT:
        return parse_create_event(c, r);
    case SLOT_OP_SET_CAPACITY:
        TRY(get_event(c, r, REQUIRED));
        return get_capacity(c, r);
    case SLOT_OP_RESHARD:
        TRY(get_event(c, r, REQUIRED));
        return get_shards(c, r, REQUIRED);
    case SLOT_OP_SET_STATUS:
        TRY(get_event(c, r, REQUIRED));
        return get_status(c, r);
    case SLOT_OP_CANCEL:
        TRY(get_event(c, r, REQUIRED));
        return get_hold(c, r);
    case SLOT_OP_CHECK:
    case SLOT_OP_PLACEMENT:
        return get_event(c, r, OPTIONAL);
    case SLOT_OP_EXPIRE:
    case SLOT_OP_STATS:
    case SLOT_OP_DIGEST:
    case SLOT_OP_CLUSTER:
    case SLOT_OP_METRICS:
        return SLOT_E_OK;
    case SLOT_OP_BACKUP:
        return get_path(c, r);
    case SLOT_OP_CLUSTER_CHANGE:
        return parse_cluster_change(c, r);
    case SLOT_OP_MOVE_EVENT:
    case SLOT_OP_PLACE_STATE:
    case SLOT_OP_PLACE_EXPORT:
    case SLOT_OP_PLACE_STAGE:
    case SLOT_OP_PLACE_RELINQUISH:
    case SLOT_OP_PLACE_OWN:
    case SLOT_OP_PLACE_DONE:
    case SLOT_OP_PLACE_ABORT:
    case SLOT_OP_PLACE_RECLAIM:
    case SLOT_OP_PLACE_PURGE: /* docs/design.md, "Moving an event" (proto_place.c) */
        TRY(get_event(c, r, REQUIRED));
        return slot__proto_place_parse(c->root, r, c->msg, c->msglen);
    default:
        return slot__proto_feed_parse(c->root, r, c->msg, c->msglen);
    }
}

slot_err slot_proto_parse(const char *line, size_t len, slot_req *req, char *msg, size_t msglen)
{
    return slot_proto_parse_at(line, len, 0, req, msg, msglen);
}

slot_err slot_proto_parse_at(const char *line, size_t len, ptrdiff_t byte_delta, slot_req *req, char *msg,
                             size_t msglen)
{
    if (slot__proto_parse_fast(line, len, req)) { /* the hot ops' common shape (proto_fast.c) */
        if (msg && msglen > 0)
            msg[0] = 0;
        slot__proto_check_parsed(req);
        return SLOT_E_OK;
    }
    return slot__proto_parse_full(line, len, byte_delta, req, msg, msglen);
}

slot_err slot__proto_parse_full(const char *line, size_t len, ptrdiff_t byte_delta, slot_req *req, char *msg,
                                size_t msglen)
{
    memset(req, 0, sizeof(*req));
    if (msg && msglen > 0)
        msg[0] = 0;
    parse_ctx c = {.root = NULL, .msg = msg, .msglen = msglen};
    TRY(load(line, len, byte_delta, &c.root, msg, msglen));
    slot_err err = parse_id(&c, &req->id);
    if (err == SLOT_E_OK)
        err = parse_op(&c, &req->op);
    if (err == SLOT_E_OK)
        err = parse_fields(&c, req);
    json_decref(c.root);
    if (err == SLOT_E_OK)
        slot__proto_check_parsed(req);
    else
        slot_req_clear(req); /* a refused create_event keeps no seat map */
    return err;
}
