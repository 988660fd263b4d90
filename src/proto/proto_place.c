/*
 * proto_place.c — the fields of move_event and of the placement's internal
 * ops (place_*; docs/design.md, "Moving an event"): a set's name, the gen,
 * the mac, place_stage's records and place_export's cursor, both base64
 * (RFC 4648, OpenSSL's decoder). The event is parsed by proto.c first.
 * Thread-safe.
 */
#include <openssl/evp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proto_int.h"
#include "slot/proto.h"
#include "slot/assert.h"

static slot_err fail(char *msg, size_t msglen, const char *fmt, ...)
{
    if (msg && msglen > 0) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(msg, msglen, fmt, ap);
        va_end(ap);
    }
    return SLOT_E_INVALID_ARGUMENT;
}

static bool set_char(unsigned char ch)
{
    return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') || ch == '.' ||
           ch == '_' || ch == ':' || ch == '-';
}

/* base64 text s (n bytes, padded) decoded into out (cap bytes): its length, or -1. */
static long b64_decode(const char *s, size_t n, uint8_t *out, size_t cap)
{
    if (n % 4 != 0 || n / 4 * 3 > cap || n > INT32_MAX)
        return -1;
    if (n == 0)
        return 0;
    int got = EVP_DecodeBlock(out, (const unsigned char *)s, (int)n);
    if (got < 0)
        return -1;
    size_t pad = (s[n - 1] == '=') + (n > 1 && s[n - 2] == '=');
    return (long)got - (long)pad;
}

size_t slot_place_b64_encode(const uint8_t *src, size_t n, char *dst, size_t cap)
{
    size_t need = (n + 2) / 3 * 4 + 1;
    if (cap < need || n > INT32_MAX / 2)
        return 0;
    return (size_t)EVP_EncodeBlock((unsigned char *)dst, src, (int)n);
}

slot_err slot__proto_place_parse(json_t *root, slot_req *r, char *msg, size_t msglen)
{
    slot_place_args *p = calloc(1, sizeof(*p));
    if (!p)
        return fail(msg, msglen, "out of memory");
    r->place = p; /* slot_req_clear frees it, also when a field below is refused */
    const char *set_key = r->op == SLOT_OP_MOVE_EVENT ? "to" : "set";
    json_t *v = json_object_get(root, set_key);
    bool set_needed = r->op == SLOT_OP_MOVE_EVENT || r->op == SLOT_OP_PLACE_STAGE ||
                      r->op == SLOT_OP_PLACE_RELINQUISH || r->op == SLOT_OP_PLACE_ABORT;
    if (v || set_needed) {
        const char *s = json_is_string(v) ? json_string_value(v) : NULL;
        size_t n = s ? json_string_length(v) : 0;
        bool ok = s && n >= 1 && n <= SLOT_CLUSTER_NAME_BYTES_MAX;
        for (size_t i = 0; ok && i < n; i++)
            ok = set_char((unsigned char)s[i]);
        if (!ok)
            return fail(msg, msglen, "%s: %s a replica set's name, 1..%u bytes of [A-Za-z0-9._:-]", set_key,
                        v ? "must be" : "missing;", (unsigned)SLOT_CLUSTER_NAME_BYTES_MAX);
        memcpy(p->set, s, n);
        p->set[n] = 0;
        p->set_len = (uint8_t)n;
    }
    if (r->op == SLOT_OP_MOVE_EVENT)
        return SLOT_E_OK;
    if (r->op != SLOT_OP_PLACE_STATE) {
        v = json_object_get(root, "gen");
        if (!json_is_integer(v) || json_integer_value(v) < 1 || (uint64_t)json_integer_value(v) > SLOT_PLACE_GEN_MAX)
            return fail(msg, msglen, "gen: %s an integer 1..2^53", v ? "must be" : "missing;");
        p->gen = (uint64_t)json_integer_value(v);
        v = json_object_get(root, "mac");
        if (v) {
            const char *s = json_is_string(v) ? json_string_value(v) : "";
            bool ok = json_is_string(v) && json_string_length(v) == SLOT_PLACE_MAC_HEX_BYTES;
            for (size_t i = 0; ok && i < SLOT_PLACE_MAC_HEX_BYTES; i++)
                ok = (s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f');
            if (!ok)
                return fail(msg, msglen, "mac: must be %u lowercase hex digits", (unsigned)SLOT_PLACE_MAC_HEX_BYTES);
            memcpy(p->mac, s, SLOT_PLACE_MAC_HEX_BYTES + 1);
            p->has_mac = true;
        }
    }
    v = json_object_get(root, "first");
    if (v && !json_is_boolean(v))
        return fail(msg, msglen, "first: must be true or false");
    p->first = v && json_is_true(v);
    if (r->op == SLOT_OP_PLACE_STAGE) {
        v = json_object_get(root, "data");
        if (!json_is_string(v))
            return fail(msg, msglen, "data: %s base64 text of records", v ? "must be" : "missing;");
        size_t n = json_string_length(v);
        if (n / 4 * 3 > SLOT_PLACE_DATA_BYTES_MAX)
            return fail(msg, msglen, "data: over %u bytes of records", (unsigned)SLOT_PLACE_DATA_BYTES_MAX);
        p->data_b64 = malloc(n + 1);
        p->data = malloc(n / 4 * 3 + 1);
        if (!p->data_b64 || !p->data)
            return fail(msg, msglen, "out of memory");
        memcpy(p->data_b64, json_string_value(v), n + 1);
        p->data_b64_len = n;
        long got = b64_decode(p->data_b64, n, p->data, n / 4 * 3 + 1);
        if (got < 0)
            return fail(msg, msglen, "data: not base64");
        p->data_len = (size_t)got;
    }
    if (r->op == SLOT_OP_PLACE_EXPORT && (v = json_object_get(root, "cursor")) != NULL) {
        uint8_t tmp[SLOT_PLACE_CURSOR_BYTES + 3];
        long got = json_is_string(v) ? b64_decode(json_string_value(v), json_string_length(v), tmp, sizeof tmp) : -1;
        if (got < 1 || got > (long)SLOT_PLACE_CURSOR_BYTES)
            return fail(msg, msglen, "cursor: must be a cursor an earlier place_export answered");
        memcpy(p->cursor, tmp, (size_t)got);
        p->cursor_len = (uint16_t)got;
    }
    return SLOT_E_OK;
}
