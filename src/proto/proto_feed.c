/*
 * proto_feed.c — the feed ops' fields and replies (proto_int.h), beside
 * proto.c, whose strictness they follow: only a JSON integer is a number,
 * names follow the event rule, and every message names its field.
 */
#include "proto_int.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

static bool name_char(unsigned char ch)
{
    return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') || ch == '.' || ch == '_' ||
           ch == ':' || ch == '-';
}

static slot_err bad(char *msg, size_t msglen, const char *key, const json_t *v, const char *spec)
{
    if (msg && msglen > 0)
        snprintf(msg, msglen, "%s: %smust be %s", key, v ? "" : "missing; ", spec);
    return SLOT_E_INVALID_ARGUMENT;
}

static slot_err get_consumer(json_t *root, slot_req *r, char *msg, size_t msglen)
{
    static const char spec[] = "1..64 bytes of [A-Za-z0-9._:-]";
    json_t *v = json_object_get(root, "consumer");
    if (!json_is_string(v))
        return bad(msg, msglen, "consumer", v, spec);
    const char *s = json_string_value(v);
    size_t n = json_string_length(v);
    if (n < 1 || n > SLOT_CONSUMER_BYTES_MAX)
        return bad(msg, msglen, "consumer", v, spec);
    for (size_t i = 0; i < n; i++)
        if (!name_char((unsigned char)s[i]))
            return bad(msg, msglen, "consumer", v, spec);
    memcpy(r->consumer, s, n);
    r->consumer[n] = 0;
    r->consumer_len = (uint8_t)n;
    return SLOT_E_OK;
}

/* An integer in lo..INT64_MAX into *out; `dflt` when absent and optional. */
static slot_err get_count(json_t *root, const char *key, bool required, int64_t lo, int64_t hi, int64_t *out, char *msg,
                          size_t msglen)
{
    json_t *v = json_object_get(root, key);
    if (!v && !required)
        return SLOT_E_OK;
    if (!json_is_integer(v) || json_integer_value(v) < lo || json_integer_value(v) > hi) {
        char spec[64];
        snprintf(spec, sizeof(spec), "an integer in %" PRId64 "..%" PRId64, lo, hi);
        return bad(msg, msglen, key, v, spec);
    }
    *out = (int64_t)json_integer_value(v);
    return SLOT_E_OK;
}

static slot_err get_from(json_t *root, slot_req *r, char *msg, size_t msglen)
{
    json_t *v = json_object_get(root, "from");
    r->from = SLOT_FEED_FROM_ACKED;
    if (!v)
        return SLOT_E_OK;
    const char *s = json_string_value(v);
    if (s && strcmp(s, "acked") == 0 && json_string_length(v) == 5)
        return SLOT_E_OK;
    if (s && strcmp(s, "start") == 0 && json_string_length(v) == 5) {
        r->from = SLOT_FEED_FROM_START;
        return SLOT_E_OK;
    }
    if (json_is_integer(v) && json_integer_value(v) >= 1) {
        r->from = SLOT_FEED_FROM_SEQ;
        r->feed_seq = (uint64_t)json_integer_value(v);
        return SLOT_E_OK;
    }
    return bad(msg, msglen, "from", v, "\"acked\", \"start\" or an integer seq of at least 1");
}

slot_err slot__proto_feed_parse(json_t *root, slot_req *r, char *msg, size_t msglen)
{
    slot_err err = SLOT_E_OK;
    int64_t n = SLOT_FEED_WINDOW_DEFAULT;
    switch (r->op) {
    case SLOT_OP_SUBSCRIBE:
        err = get_consumer(root, r, msg, msglen);
        if (err == SLOT_E_OK)
            err = get_from(root, r, msg, msglen);
        if (err == SLOT_E_OK)
            err = get_count(root, "window", false, 1, SLOT_FEED_WINDOW_MAX, &n, msg, msglen);
        r->window = (uint32_t)n;
        return err;
    case SLOT_OP_ACK:
        err = get_consumer(root, r, msg, msglen);
        n = 0;
        if (err == SLOT_E_OK)
            err = get_count(root, "seq", true, 0, INT64_MAX, &n, msg, msglen);
        r->feed_seq = (uint64_t)n;
        return err;
    case SLOT_OP_FEED_FORGET:
        return get_consumer(root, r, msg, msglen);
    case SLOT_OP_UNSUBSCRIBE:
    case SLOT_OP_FEED_CONSUMERS:
        return SLOT_E_OK;
    default:
        if (msg && msglen > 0)
            snprintf(msg, msglen, "op: unknown op");
        return SLOT_E_UNKNOWN_OP;
    }
}

void slot__proto_feed_put(slot__jw *w, const slot_req *req, const slot_res *res)
{
    switch (req->op) {
    case SLOT_OP_SUBSCRIBE:
        slot__jw_key_str(w, "consumer", req->consumer, req->consumer_len, SLOT__JW_STR_STRICT);
        slot__jw_key_u64(w, "from", res->feed_from);
        slot__jw_key_u64(w, "head", res->feed_head);
        break;
    case SLOT_OP_ACK:
        slot__jw_key_str(w, "consumer", req->consumer, req->consumer_len, SLOT__JW_STR_STRICT);
        slot__jw_key_u64(w, "acked", res->feed_acked);
        break;
    case SLOT_OP_UNSUBSCRIBE:
        slot__jw_key_str(w, "consumer", res->user, strnlen(res->user, sizeof(res->user)), SLOT__JW_STR_STRICT);
        break;
    case SLOT_OP_FEED_FORGET:
        slot__jw_key_str(w, "consumer", req->consumer, req->consumer_len, SLOT__JW_STR_STRICT);
        slot__jw_key(w, "forgotten");
        SLOT__JW_LIT(w, "true");
        break;
    case SLOT_OP_FEED_CONSUMERS: /* {"head":H,"consumers":[{"consumer":N,"acked":A,"lag":L},...]} */
        slot__jw_key_u64(w, "head", res->feed_head);
        slot__jw_key(w, "consumers");
        SLOT__JW_LIT(w, "[");
        for (uint32_t i = 0; res->consumers && i < res->nconsumers; i++) {
            const slot_consumer_pos *c = &res->consumers[i];
            if (i > 0)
                SLOT__JW_LIT(w, ",");
            SLOT__JW_LIT(w, "{\"consumer\":");
            slot__jw_str(w, c->name, strlen(c->name), SLOT__JW_STR_STRICT);
            slot__jw_key_u64(w, "acked", c->acked);
            slot__jw_key_u64(w, "lag", res->feed_head > c->acked ? res->feed_head - c->acked : 0);
            SLOT__JW_LIT(w, "}");
        }
        SLOT__JW_LIT(w, "]");
        break;
    default:
        break;
    }
}
