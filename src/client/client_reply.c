/* client_reply.c — the C client's reply parser (slot/client.h): a reply
 * line into a typed struct slot_reply, the cluster op's members included.
 * The request codec and the connection are in client.c. */
#include "slot/client.h"

#include <errno.h>
#include <jansson.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

/* ---------------------------------------------------------------- replies */

/* Copy a reply string into a fixed field, cut (at a UTF-8 character
 * boundary) when the server sent more than the field holds. */
static void copy_str(char *dst, size_t size, const char *src, size_t n)
{
    if (n >= size) {
        n = size - 1;
        while (n > 0 && ((unsigned char)src[n] & 0xC0) == 0x80)
            n--; /* src[n] would be a continuation byte: back off to a lead byte */
    }
    memcpy(dst, src, n);
    dst[n] = 0;
}

#define REPLY_STR(key, field)                                              \
    {                                                                      \
        key, offsetof(slot_reply, field), sizeof(((slot_reply *)0)->field) \
    }
static const struct {
    const char *key;
    size_t off, size;
} reply_strs[] = {
    REPLY_STR("error", error),
    REPLY_STR("message", message),
    REPLY_STR("status", status),
    REPLY_STR("hold", hold),
    REPLY_STR("user", user),
    REPLY_STR("event", event),
    REPLY_STR("role", role),
    REPLY_STR("version", version),
    REPLY_STR("digest", digest),
    REPLY_STR("primary", primary),
    REPLY_STR("cluster", cluster),
    REPLY_STR("node", node),
    REPLY_STR("replaces", replaces),
    REPLY_STR("replaced_by", replaced_by),
    REPLY_STR("hold_status", hold_status),
};

#define REPLY_U64(key, field)            \
    {                                    \
        key, offsetof(slot_reply, field) \
    }
static const struct {
    const char *key;
    size_t off;
} reply_u64s[] = {
    REPLY_U64("qty", qty),
    REPLY_U64("expires_at", expires_at_ms),
    REPLY_U64("created_at", created_at_ms),
    REPLY_U64("available", available),
    REPLY_U64("capacity", capacity),
    REPLY_U64("held", held),
    REPLY_U64("confirmed", confirmed),
    REPLY_U64("shards", shards),
    REPLY_U64("hold_ttl_ms", hold_ttl_ms),
    REPLY_U64("max_per_user", max_per_user),
    REPLY_U64("max_per_request", max_per_request),
    REPLY_U64("events", events),
    REPLY_U64("holds", holds),
    REPLY_U64("expired", expired),
    REPLY_U64("seq", seq),
    REPLY_U64("epoch", epoch),
    REPLY_U64("opens_at", opens_at_ms),
    REPLY_U64("closes_at", closes_at_ms),
    REPLY_U64("max_extensions", max_extensions),
    REPLY_U64("max_hold_ms", max_hold_ms),
    REPLY_U64("returned", returned),
    REPLY_U64("extensions", extensions),
    REPLY_U64("position", position),
    REPLY_U64("retry_after_ms", retry_after_ms),
    REPLY_U64("waitlist_max", waitlist_max),
    REPLY_U64("waiting", waiting),
    REPLY_U64("waiting_qty", waiting_qty),
};

/* A string member of a JSON object into a fixed field ("" when absent or not a string). */
static void get_str(json_t *obj, const char *key, char *dst, size_t size)
{
    json_t *v = json_object_get(obj, key);
    if (json_is_string(v))
        copy_str(dst, size, json_string_value(v), json_string_length(v));
}

static uint64_t get_u64(json_t *obj, const char *key)
{
    json_t *v = json_object_get(obj, key);
    return json_is_integer(v) && json_integer_value(v) >= 0 ? (uint64_t)json_integer_value(v) : 0;
}

/* The cluster op's "members": the first SLOT_CLUSTER_MEMBERS_MAX are kept,
 * nmembers_total counts them all; entries that are not objects are skipped. */
static int parse_members(json_t *arr, slot_reply *out)
{
    size_t n = json_array_size(arr);
    out->nmembers_total = n > UINT32_MAX ? UINT32_MAX : (uint32_t)n;
    if (n == 0)
        return 0;
    size_t keep = n < SLOT_CLUSTER_MEMBERS_MAX ? n : SLOT_CLUSTER_MEMBERS_MAX;
    out->members = calloc(keep, sizeof(slot_member));
    if (!out->members)
        return -ENOMEM;
    for (size_t i = 0; i < n && out->nmembers < keep; i++) {
        json_t *m = json_array_get(arr, i);
        if (!json_is_object(m))
            continue;
        slot_member *d = &out->members[out->nmembers++];
        get_str(m, "node", d->node, sizeof(d->node));
        get_str(m, "addr", d->addr, sizeof(d->addr));
        get_str(m, "role", d->role, sizeof(d->role));
        d->seq = get_u64(m, "seq");
        d->lag_ms = get_u64(m, "lag_ms");
    }
    return 0;
}

/* hello's "features": the names joined by commas, as far as they fit. */
static void parse_features(json_t *arr, slot_reply *out)
{
    size_t i, n = 0;
    json_t *m;
    json_array_foreach(arr, i, m)
    {
        size_t len = json_string_length(m);
        if (!json_is_string(m) || n + len + 2 > sizeof(out->features))
            continue;
        if (n > 0)
            out->features[n++] = ',';
        memcpy(out->features + n, json_string_value(m), len);
        n += len;
        out->features[n] = 0;
    }
}

/* The "shards" op's array: shard_free[i] is the free units of the i-th entry
 * (the server lists shards in order, from 0). */
static int parse_shard_array(json_t *arr, slot_reply *out)
{
    size_t n = json_array_size(arr);
    if (n == 0)
        return 0;
    if (n > SLOT_SHARDS_MAX)
        return -EINVAL;
    out->shard_free = calloc(n, sizeof(uint64_t));
    if (!out->shard_free)
        return -ENOMEM;
    out->nshard_free = (uint32_t)n;
    for (size_t i = 0; i < n; i++) {
        json_t *fr = json_object_get(json_array_get(arr, i), "free");
        if (json_is_integer(fr) && json_integer_value(fr) >= 0)
            out->shard_free[i] = (uint64_t)json_integer_value(fr);
    }
    return 0;
}

/* Everything but "ok": the known fields, each only when of the expected type. */
static int parse_fields(json_t *root, slot_reply *out)
{
    char *base = (char *)out;
    for (size_t i = 0; i < sizeof(reply_strs) / sizeof(reply_strs[0]); i++) {
        json_t *v = json_object_get(root, reply_strs[i].key);
        if (json_is_string(v))
            copy_str(base + reply_strs[i].off, reply_strs[i].size, json_string_value(v), json_string_length(v));
    }
    for (size_t i = 0; i < sizeof(reply_u64s) / sizeof(reply_u64s[0]); i++) {
        json_t *v = json_object_get(root, reply_u64s[i].key);
        if (json_is_integer(v) && json_integer_value(v) >= 0)
            *(uint64_t *)(void *)(base + reply_u64s[i].off) = (uint64_t)json_integer_value(v);
    }
    out->replay = json_is_true(json_object_get(root, "replay"));
    out->released = json_is_true(json_object_get(root, "released"));
    out->cancelled = json_is_true(json_object_get(root, "cancelled"));
    out->left = json_is_true(json_object_get(root, "left"));
    out->waitlist_full = json_is_true(json_object_get(root, "waitlist_full"));
    out->offered = json_is_true(json_object_get(root, "offered"));
    json_t *holds = json_object_get(root, "holds");
    if (json_is_array(holds))
        out->nholds = (uint32_t)json_array_size(holds);
    json_t *v = json_object_get(root, "protocol");
    if (json_is_integer(v))
        out->protocol = json_integer_value(v);
    v = json_object_get(root, "violations");
    if (json_is_array(v))
        out->nviolations = (uint32_t)json_array_size(v);
    /* slotd lists at most SLOT_CHECK_VIOLATIONS_MAX and may give the exact count beside them. */
    v = json_object_get(root, "violations_total");
    if (json_is_integer(v) && json_integer_value(v) > (json_int_t)out->nviolations)
        out->nviolations = json_integer_value(v) > UINT32_MAX ? UINT32_MAX : (uint32_t)json_integer_value(v);
    v = json_object_get(root, "id");
    if (json_is_integer(v)) {
        out->id.kind = SLOT_ID_INT;
        out->id.i = json_integer_value(v);
    } else if (json_is_string(v)) {
        out->id.kind = SLOT_ID_STR;
        copy_str(out->id.s, sizeof(out->id.s), json_string_value(v), json_string_length(v));
        out->id.len = (uint8_t)strlen(out->id.s);
    }
    v = json_object_get(root, "members");
    if (json_is_array(v) && parse_members(v, out) < 0)
        return -ENOMEM;
    v = json_object_get(root, "features");
    if (json_is_array(v))
        parse_features(v, out);
    v = json_object_get(root, "shards");
    return json_is_array(v) ? parse_shard_array(v, out) : 0;
}

int slot_reply_parse(const char *line, size_t len, slot_reply *out)
{
    memset(out, 0, sizeof(*out));
    json_error_t jerr;
    json_t *root = json_loadb(line, len, 0, &jerr);
    if (!root)
        return -EINVAL;
    json_t *ok = json_object_get(root, "ok");
    if (!json_is_object(root) || !json_is_boolean(ok)) {
        json_decref(root);
        return -EINVAL;
    }
    out->ok = json_is_true(ok);
    int rc = parse_fields(root, out);
    json_decref(root);
    if (rc == 0 && !(out->line = malloc(len + 1)))
        rc = -ENOMEM;
    if (rc < 0) {
        slot_reply_clear(out);
        return rc;
    }
    memcpy(out->line, line, len);
    out->line[len] = 0;
    /* A failure without a known code is SLOT_E__COUNT: the caller sees it is not one of ours. */
    out->err = out->ok ? SLOT_E_OK : slot_err_from_name(out->error);
    return 0;
}

void slot_reply_clear(slot_reply *r)
{
    free(r->shard_free);
    free(r->members);
    free(r->line);
    memset(r, 0, sizeof(*r));
}
