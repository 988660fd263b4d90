/*
 * test_client.c — the client library without slotd: the request codec is
 * checked by encoding and reading the line back with jansson, the reply
 * parser on every reply shape of docs/protocol.md, and the blocking connection
 * against small fake servers (threads on 127.0.0.1, port 0) that answer,
 * stay silent, split lines, close early or send lines that are too long.
 */
#include <errno.h>
#include <jansson.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "harness.h"
#include "slot/proto.h"
#include "slot/client.h"

TEST_DECLARE(client_encode_hold)
TEST_DECLARE(client_encode_hold_ops)
TEST_DECLARE(client_encode_event_ops)
TEST_DECLARE(client_encode_create_event)
TEST_DECLARE(client_req_create_event)
TEST_DECLARE(client_encode_admin_ops)
TEST_DECLARE(client_encode_ids)
TEST_DECLARE(client_encode_escaping)
TEST_DECLARE(client_encode_small_buffer)
TEST_DECLARE(client_setters_limits)
TEST_DECLARE(client_reply_hold)
TEST_DECLARE(client_reply_hold_ops)
TEST_DECLARE(client_reply_event_view)
TEST_DECLARE(client_reply_admin)
TEST_DECLARE(client_reply_errors)
TEST_DECLARE(client_reply_invalid)
TEST_DECLARE(client_reply_not_terminated)
TEST_DECLARE(client_reply_long_and_odd_fields)
TEST_DECLARE(client_call)
TEST_DECLARE(client_pipeline)
TEST_DECLARE(client_pipeline_beyond_socket_buffers)
TEST_DECLARE(client_split_line)
TEST_DECLARE(client_recv_timeout)
TEST_DECLARE(client_eintr)
TEST_DECLARE(client_burst_then_eof)
TEST_DECLARE(client_line_max)
TEST_DECLARE(client_line_too_long)
TEST_DECLARE(client_refused)
TEST_DECLARE(client_connect_by_name)
TEST_DECLARE(client_send_after_close)
TEST_LIST_START
TEST_ENTRY(client_encode_hold)
TEST_ENTRY(client_encode_hold_ops)
TEST_ENTRY(client_encode_event_ops)
TEST_ENTRY(client_encode_create_event)
TEST_ENTRY(client_req_create_event)
TEST_ENTRY(client_encode_admin_ops)
TEST_ENTRY(client_encode_ids)
TEST_ENTRY(client_encode_escaping)
TEST_ENTRY(client_encode_small_buffer)
TEST_ENTRY(client_setters_limits)
TEST_ENTRY(client_reply_hold)
TEST_ENTRY(client_reply_hold_ops)
TEST_ENTRY(client_reply_event_view)
TEST_ENTRY(client_reply_admin)
TEST_ENTRY(client_reply_errors)
TEST_ENTRY(client_reply_invalid)
TEST_ENTRY(client_reply_not_terminated)
TEST_ENTRY(client_reply_long_and_odd_fields)
TEST_ENTRY(client_call)
TEST_ENTRY(client_pipeline)
TEST_ENTRY(client_pipeline_beyond_socket_buffers)
TEST_ENTRY(client_split_line)
TEST_ENTRY(client_recv_timeout)
TEST_ENTRY(client_eintr)
TEST_ENTRY(client_burst_then_eof)
TEST_ENTRY(client_line_max)
TEST_ENTRY(client_line_too_long)
TEST_ENTRY(client_refused)
TEST_ENTRY(client_connect_by_name)
TEST_ENTRY(client_send_after_close)
TEST_LIST_END

/* ---------------------------------------------------------------- codec helpers */

/* Encode req and read the line back: exactly one "\n", at the end, and one JSON object. */
static json_t *encode_parse(const slot_req *req)
{
    static char buf[16384];
    long n = slot_req_encode(req, buf, sizeof(buf));
    ASSERT_GT(n, 2);
    ASSERT_LT(n, (long)sizeof(buf));
    ASSERT_EQ(strlen(buf), n);
    ASSERT_EQ(buf[n - 1], '\n');
    ASSERT(memchr(buf, '\n', (size_t)n - 1) == NULL);
    json_error_t jerr;
    json_t *o = json_loadb(buf, (size_t)n, JSON_REJECT_DUPLICATES, &jerr);
    if (!o)
        T_FAIL_("not JSON: %s (%s)", buf, jerr.text);
    ASSERT(json_is_object(o));
    return o;
}

/* The object has exactly these keys (NULL-terminated list). */
static void assert_keys(json_t *o, const char *const *keys)
{
    size_t n = 0;
    for (; keys[n]; n++)
        if (!json_object_get(o, keys[n]))
            T_FAIL_("key \"%s\" missing", keys[n]);
    ASSERT_EQ(json_object_size(o), n);
}

static const char *jstr(json_t *o, const char *key)
{
    json_t *v = json_object_get(o, key);
    if (!json_is_string(v))
        T_FAIL_("\"%s\" is not a string", key);
    return json_string_value(v);
}

static int64_t jint(json_t *o, const char *key)
{
    json_t *v = json_object_get(o, key);
    if (!json_is_integer(v))
        T_FAIL_("\"%s\" is not an integer", key);
    return json_integer_value(v);
}

/* ---------------------------------------------------------------- encoding */

TEST_IMPL(client_encode_hold)
{
    slot_req req;
    ASSERT_EQ(slot_req_hold(&req, "concert-1", "alice", "r-1", 2), 0);
    json_t *o = encode_parse(&req);
    assert_keys(o, (const char *[]){"op", "event", "user", "request", "qty", NULL});
    ASSERT_STR_EQ(jstr(o, "op"), "hold");
    ASSERT_STR_EQ(jstr(o, "event"), "concert-1");
    ASSERT_STR_EQ(jstr(o, "user"), "alice");
    ASSERT_STR_EQ(jstr(o, "request"), "r-1");
    ASSERT_EQ(jint(o, "qty"), 2);
    json_decref(o);
}

TEST_IMPL(client_encode_hold_ops)
{
    const slot_op ops[] = {SLOT_OP_CONFIRM, SLOT_OP_RELEASE, SLOT_OP_GET_HOLD};
    for (size_t i = 0; i < 3; i++) {
        slot_req req;
        ASSERT_EQ(slot_req_hold_op(&req, ops[i], "E", "H1", "bob"), 0);
        json_t *o = encode_parse(&req);
        assert_keys(o, (const char *[]){"op", "event", "hold", "user", NULL});
        ASSERT_STR_EQ(jstr(o, "op"), slot_op_name(ops[i]));
        ASSERT_STR_EQ(jstr(o, "hold"), "H1");
        ASSERT_STR_EQ(jstr(o, "user"), "bob");
        json_decref(o);
    }
    slot_req req;
    ASSERT_EQ(slot_req_hold_op(&req, SLOT_OP_CANCEL, "E", "H2", NULL), 0);
    json_t *o = encode_parse(&req);
    assert_keys(o, (const char *[]){"op", "event", "hold", NULL});
    ASSERT_STR_EQ(jstr(o, "op"), "cancel");
    json_decref(o);
    /* cancel carries no user even when one was set */
    ASSERT_EQ(slot_req_hold_op(&req, SLOT_OP_CANCEL, "E", "H2", "bob"), 0);
    o = encode_parse(&req);
    assert_keys(o, (const char *[]){"op", "event", "hold", NULL});
    json_decref(o);
    ASSERT_EQ(slot_req_hold_op(&req, SLOT_OP_HOLD, "E", "H", "u"), -EINVAL);
    /* Regression (found by fuzz_proto): a get_hold without a user (a worker's or
     * admin's, any user's hold) was encoded with "user":"", which the parser
     * refuses; the field is left out, and the line parses back the same. */
    ASSERT_EQ(slot_req_hold_op(&req, SLOT_OP_GET_HOLD, "E", "H3", NULL), 0);
    o = encode_parse(&req);
    assert_keys(o, (const char *[]){"op", "event", "hold", NULL});
    json_decref(o);
    char line[512];
    long n = slot_req_encode(&req, line, sizeof(line));
    ASSERT_GT(n, 0);
    slot_req back;
    char msg[256];
    ASSERT_EQ(slot_proto_parse(line, (size_t)n - 1, &back, msg, sizeof(msg)), SLOT_E_OK);
    ASSERT_EQ(back.op, SLOT_OP_GET_HOLD);
    ASSERT_EQ(back.user_len, 0u);
}

TEST_IMPL(client_encode_event_ops)
{
    slot_req req;
    ASSERT_EQ(slot_req_event(&req, SLOT_OP_EVENT, "E1"), 0);
    json_t *o = encode_parse(&req);
    assert_keys(o, (const char *[]){"op", "event", NULL});
    ASSERT_STR_EQ(jstr(o, "op"), "event");
    json_decref(o);

    ASSERT_EQ(slot_req_event(&req, SLOT_OP_SHARDS, "E1"), 0);
    o = encode_parse(&req);
    assert_keys(o, (const char *[]){"op", "event", NULL});
    json_decref(o);

    ASSERT_EQ(slot_req_event(&req, SLOT_OP_CHECK, NULL), 0);
    o = encode_parse(&req);
    assert_keys(o, (const char *[]){"op", NULL});
    ASSERT_STR_EQ(jstr(o, "op"), "check");
    json_decref(o);

    ASSERT_EQ(slot_req_event(&req, SLOT_OP_CHECK, "E2"), 0);
    o = encode_parse(&req);
    assert_keys(o, (const char *[]){"op", "event", NULL});
    ASSERT_STR_EQ(jstr(o, "event"), "E2");
    json_decref(o);

    const slot_op bare[] = {SLOT_OP_EXPIRE, SLOT_OP_STATS, SLOT_OP_HELLO};
    for (size_t i = 0; i < 3; i++) {
        slot_req_init(&req, bare[i]);
        o = encode_parse(&req);
        assert_keys(o, (const char *[]){"op", NULL});
        ASSERT_STR_EQ(jstr(o, "op"), slot_op_name(bare[i]));
        json_decref(o);
    }
    slot_req_init(&req, SLOT_OP_HELLO);
    ASSERT_EQ(slot_req_set_token(&req, "s3cret"), 0);
    o = encode_parse(&req);
    assert_keys(o, (const char *[]){"op", "token", NULL});
    ASSERT_STR_EQ(jstr(o, "token"), "s3cret");
    json_decref(o);
    ASSERT_EQ(slot_req_event(&req, SLOT_OP__COUNT, "E"), -EINVAL);
}

TEST_IMPL(client_encode_create_event)
{
    slot_req req;
    ASSERT_EQ(slot_req_event(&req, SLOT_OP_CREATE_EVENT, "big"), 0);
    req.capacity = SLOT_CAPACITY_MAX;
    json_t *o = encode_parse(&req);
    assert_keys(o, (const char *[]){"op", "event", "capacity", NULL});
    ASSERT_EQ(jint(o, "capacity"), (int64_t)SLOT_CAPACITY_MAX);
    json_decref(o);

    req.shards = 64;
    req.hold_ttl_ms = 5000;
    req.max_per_user = 4;
    req.max_per_request = 2;
    req.has |= SLOT_HAS_SHARDS | SLOT_HAS_HOLD_TTL | SLOT_HAS_MAX_PER_USER | SLOT_HAS_MAX_PER_REQUEST;
    o = encode_parse(&req);
    assert_keys(o, (const char *[]){"op", "event", "capacity", "shards", "hold_ttl_ms", "max_per_user",
                                    "max_per_request", NULL});
    ASSERT_EQ(jint(o, "shards"), 64);
    ASSERT_EQ(jint(o, "hold_ttl_ms"), 5000);
    ASSERT_EQ(jint(o, "max_per_user"), 4);
    ASSERT_EQ(jint(o, "max_per_request"), 2);
    json_decref(o);

    /* max_per_user 0 (no limit) is still written when its bit is set */
    req.has = SLOT_HAS_EVENT | SLOT_HAS_MAX_PER_USER;
    req.max_per_user = 0;
    o = encode_parse(&req);
    assert_keys(o, (const char *[]){"op", "event", "capacity", "max_per_user", NULL});
    ASSERT_EQ(jint(o, "max_per_user"), 0);
    json_decref(o);
}

/* slot_req_create_event: NULL or zeroed settings send event and capacity only;
 * every setting given is sent, and proto's parser reads back what was given. */
TEST_IMPL(client_req_create_event)
{
    slot_req req;
    ASSERT_EQ(slot_req_create_event(&req, "gig", 4, NULL), 0);
    ASSERT_EQ(req.op, SLOT_OP_CREATE_EVENT);
    json_t *o = encode_parse(&req);
    assert_keys(o, (const char *[]){"op", "event", "capacity", NULL});
    ASSERT_STR_EQ(jstr(o, "event"), "gig");
    ASSERT_EQ(jint(o, "capacity"), 4);
    json_decref(o);
    slot_event_settings none = {0};
    ASSERT_EQ(slot_req_create_event(&req, "gig", 0, &none), 0);
    o = encode_parse(&req);
    assert_keys(o, (const char *[]){"op", "event", "capacity", NULL});
    ASSERT_EQ(jint(o, "capacity"), 0);
    json_decref(o);

    slot_event_settings s = {.shards = 64,
                             .hold_ttl_ms = 5000,
                             .max_per_user = 4,
                             .max_per_request = 2,
                             .opens_at_ms = 1700000000000,
                             .closes_at_ms = 1700000600000,
                             .has_max_extensions = true,
                             .max_extensions = 0,
                             .max_hold_ms = 9000,
                             .waitlist_max = 50};
    ASSERT_EQ(slot_req_create_event(&req, "gig", SLOT_CAPACITY_MAX, &s), 0);
    o = encode_parse(&req);
    assert_keys(o,
                (const char *[]){"op", "event", "capacity", "shards", "hold_ttl_ms", "max_per_user", "max_per_request",
                                 "opens_at", "closes_at", "max_extensions", "max_hold_ms", "waitlist_max", NULL});
    ASSERT_EQ(jint(o, "max_extensions"), 0);
    json_decref(o);
    char line[4096];
    long n = slot_req_encode(&req, line, sizeof line);
    ASSERT(n > 0 && (size_t)n < sizeof line);
    slot_req back;
    char msg[256];
    ASSERT_EQ(slot_proto_parse(line, (size_t)n - 1, &back, msg, sizeof msg), SLOT_E_OK);
    ASSERT_EQ(back.op, SLOT_OP_CREATE_EVENT);
    ASSERT_STR_EQ(back.event, "gig");
    ASSERT_U64_EQ(back.capacity, SLOT_CAPACITY_MAX);
    ASSERT_EQ(back.shards, 64);
    ASSERT_EQ(back.hold_ttl_ms, 5000);
    ASSERT_U64_EQ(back.max_per_user, 4);
    ASSERT_EQ(back.max_per_request, 2);
    ASSERT_U64_EQ(back.opens_at_ms, 1700000000000);
    ASSERT_U64_EQ(back.closes_at_ms, 1700000600000);
    ASSERT_EQ(back.max_extensions, 0);
    ASSERT_U64_EQ(back.max_hold_ms, 9000);
    ASSERT_EQ(back.waitlist_max, 50);
    ASSERT_EQ(back.has & req.has, req.has);

    /* a name too long for the field */
    char longname[SLOT_EVENT_BYTES_MAX + 2];
    memset(longname, 'e', sizeof longname - 1);
    longname[sizeof longname - 1] = 0;
    ASSERT_EQ(slot_req_create_event(&req, longname, 1, &s), -EINVAL);
}

TEST_IMPL(client_encode_admin_ops)
{
    slot_req req;
    ASSERT_EQ(slot_req_event(&req, SLOT_OP_SET_CAPACITY, "E"), 0);
    req.capacity = 0;
    json_t *o = encode_parse(&req);
    assert_keys(o, (const char *[]){"op", "event", "capacity", NULL});
    ASSERT_EQ(jint(o, "capacity"), 0);
    json_decref(o);

    ASSERT_EQ(slot_req_event(&req, SLOT_OP_RESHARD, "E"), 0);
    req.shards = 1024;
    o = encode_parse(&req);
    assert_keys(o, (const char *[]){"op", "event", "shards", NULL});
    ASSERT_EQ(jint(o, "shards"), 1024);
    json_decref(o);

    ASSERT_EQ(slot_req_event(&req, SLOT_OP_SET_STATUS, "E"), 0);
    req.status = SLOT_EVENT_CLOSED;
    o = encode_parse(&req);
    assert_keys(o, (const char *[]){"op", "event", "status", NULL});
    ASSERT_STR_EQ(jstr(o, "status"), "closed");
    json_decref(o);
    req.status = SLOT_EVENT_ON_SALE;
    o = encode_parse(&req);
    ASSERT_STR_EQ(jstr(o, "status"), "on_sale");
    json_decref(o);

    /* The cluster op has no field: it encodes to the raw line exactly. */
    slot_req_init(&req, SLOT_OP_CLUSTER);
    char line[64];
    ASSERT_EQ(slot_req_encode(&req, line, sizeof(line)), (long)strlen(SLOT_CLUSTER_REQ_LINE));
    ASSERT_STR_EQ(line, SLOT_CLUSTER_REQ_LINE);
}

TEST_IMPL(client_encode_ids)
{
    const int64_t ints[] = {0, 1, -1, 42, INT64_MAX, INT64_MIN};
    slot_req req;
    for (size_t i = 0; i < sizeof(ints) / sizeof(ints[0]); i++) {
        ASSERT_EQ(slot_req_event(&req, SLOT_OP_EVENT, "E"), 0);
        slot_req_set_id_int(&req, ints[i]);
        json_t *o = encode_parse(&req);
        assert_keys(o, (const char *[]){"op", "id", "event", NULL});
        ASSERT_EQ(jint(o, "id"), ints[i]);
        json_decref(o);
    }
    ASSERT_EQ(slot_req_event(&req, SLOT_OP_EVENT, "E"), 0);
    ASSERT_EQ(slot_req_set_id_str(&req, "a\"b\\c\n"), 0);
    json_t *o = encode_parse(&req);
    ASSERT_STR_EQ(jstr(o, "id"), "a\"b\\c\n");
    json_decref(o);
    /* an empty string id is still an id */
    ASSERT_EQ(slot_req_set_id_str(&req, ""), 0);
    o = encode_parse(&req);
    ASSERT_STR_EQ(jstr(o, "id"), "");
    json_decref(o);
    char longid[SLOT_ID_BYTES_MAX + 2];
    memset(longid, 'i', sizeof(longid) - 1);
    longid[sizeof(longid) - 1] = 0;
    ASSERT_EQ(slot_req_set_id_str(&req, longid), -EINVAL);
    longid[SLOT_ID_BYTES_MAX] = 0;
    ASSERT_EQ(slot_req_set_id_str(&req, longid), 0);
    ASSERT_EQ(req.id.len, SLOT_ID_BYTES_MAX);
}

/* Every ASCII byte but NUL, multi-byte UTF-8 and DEL survive the round trip. */
TEST_IMPL(client_encode_escaping)
{
    char user[SLOT_USER_BYTES_MAX + 1];
    size_t n = 0;
    for (int ch = 1; ch < 128 && n < 127; ch++)
        user[n++] = (char)ch;
    user[n] = 0;
    slot_req req;
    ASSERT_EQ(slot_req_hold(&req, "E", user, "r", 1), 0);
    json_t *o = encode_parse(&req);
    ASSERT_STR_EQ(jstr(o, "user"), user);
    json_decref(o);

    const char *utf8 = "J\xc3\xbcrgen \xe2\x82\xac \xf0\x9f\x8e\xab \"q\" \\ \t\r\n\x01\x1f\x7f";
    ASSERT_EQ(slot_req_hold(&req, "E", utf8, "r", 1), 0);
    char buf[1024];
    long len = slot_req_encode(&req, buf, sizeof(buf));
    ASSERT_GT(len, 0);
    ASSERT(strstr(buf, "\\u0001") != NULL);
    ASSERT(strstr(buf, "\\u001f") != NULL);
    ASSERT(strstr(buf, "\\\"q\\\"") != NULL);
    o = encode_parse(&req);
    ASSERT_STR_EQ(jstr(o, "user"), utf8);
    json_decref(o);

    slot_req_init(&req, SLOT_OP_HELLO);
    ASSERT_EQ(slot_req_set_token(&req, "tok\"en\\"), 0);
    o = encode_parse(&req);
    ASSERT_STR_EQ(jstr(o, "token"), "tok\"en\\");
    json_decref(o);
}

/* Like snprintf: a short buffer gets the needed length back and is never overrun. */
TEST_IMPL(client_encode_small_buffer)
{
    slot_req req;
    ASSERT_EQ(slot_req_hold(&req, "E", "user\"x", "r1", 3), 0);
    slot_req_set_id_int(&req, 7);
    char full[512];
    long need = slot_req_encode(&req, full, sizeof(full));
    ASSERT_GT(need, 10);
    for (size_t cap = 0; cap <= (size_t)need; cap++) {
        char buf[600];
        memset(buf, '#', sizeof(buf));
        long n = slot_req_encode(&req, buf, cap);
        ASSERT_EQ(n, need);
        ASSERT_GE((size_t)n, cap);
        for (size_t i = cap; i < sizeof(buf); i++)
            ASSERT_EQ(buf[i], '#');
    }
    char buf[600];
    ASSERT_EQ(slot_req_encode(&req, buf, (size_t)need + 1), need);
    ASSERT_STR_EQ(buf, full);
    slot_req bad;
    slot_req_init(&bad, SLOT_OP__COUNT);
    ASSERT_EQ(slot_req_encode(&bad, buf, sizeof(buf)), -EINVAL);
}

TEST_IMPL(client_setters_limits)
{
    slot_req req;
    slot_req_init(&req, SLOT_OP_HOLD);
    char s[SLOT_TOKEN_BYTES_MAX + 2];
    memset(s, 'a', sizeof(s) - 1);
    s[sizeof(s) - 1] = 0;
    ASSERT_EQ(slot_req_set_token(&req, s), -EINVAL);
    s[SLOT_TOKEN_BYTES_MAX] = 0;
    ASSERT_EQ(slot_req_set_token(&req, s), 0);
    ASSERT_EQ(req.token_len, SLOT_TOKEN_BYTES_MAX);
    s[SLOT_USER_BYTES_MAX + 1] = 0;
    ASSERT_EQ(slot_req_set_user(&req, s), -EINVAL);
    s[SLOT_USER_BYTES_MAX] = 0;
    ASSERT_EQ(slot_req_set_user(&req, s), 0);
    ASSERT_EQ(req.user_len, SLOT_USER_BYTES_MAX);
    s[SLOT_EVENT_BYTES_MAX + 1] = 0;
    ASSERT_EQ(slot_req_set_event(&req, s), -EINVAL);
    ASSERT_EQ(slot_req_set_request(&req, s), -EINVAL);
    s[SLOT_EVENT_BYTES_MAX] = 0;
    ASSERT_EQ(slot_req_set_event(&req, s), 0);
    ASSERT_EQ(slot_req_set_request(&req, s), 0);
    ASSERT_EQ(req.event_len, SLOT_EVENT_BYTES_MAX);
    memset(s, 'h', sizeof(s) - 1);
    s[SLOT_HOLD_ARG_BYTES_MAX + 1] = 0;
    ASSERT_EQ(slot_req_set_hold(&req, s), -EINVAL);
    s[SLOT_HOLD_ARG_BYTES_MAX] = 0;
    ASSERT_EQ(slot_req_set_hold(&req, s), 0);
    ASSERT_EQ(req.hold_len, SLOT_HOLD_ARG_BYTES_MAX);
    /* the longest request of all still encodes */
    char user[SLOT_USER_BYTES_MAX + 1];
    memset(user, '\x01', SLOT_USER_BYTES_MAX);
    user[SLOT_USER_BYTES_MAX] = 0;
    ASSERT_EQ(slot_req_hold(&req, "E", user, "r", 1), 0);
    json_t *o = encode_parse(&req);
    ASSERT_EQ(strlen(jstr(o, "user")), SLOT_USER_BYTES_MAX);
    json_decref(o);
}

/* ---------------------------------------------------------------- replies */

static void parse_ok(const char *line, slot_reply *r)
{
    int rc = slot_reply_parse(line, strlen(line), r);
    if (rc != 0)
        T_FAIL_("slot_reply_parse(%s) = %d", line, rc);
    ASSERT_STR_EQ(r->line, line);
}

TEST_IMPL(client_reply_hold)
{
    slot_reply r;
    parse_ok("{\"id\":5,\"ok\":true,\"status\":\"held\",\"hold\":\"0000000000000001abcdef0123456789\","
             "\"qty\":2,\"expires_at\":1764500000000}",
             &r);
    ASSERT(r.ok);
    ASSERT_EQ(r.err, SLOT_E_OK);
    ASSERT_EQ(r.id.kind, SLOT_ID_INT);
    ASSERT_EQ(r.id.i, 5);
    ASSERT_STR_EQ(r.status, "held");
    ASSERT_STR_EQ(r.hold, "0000000000000001abcdef0123456789");
    ASSERT_EQ(r.qty, 2);
    ASSERT_EQ(r.expires_at_ms, 1764500000000ull);
    ASSERT(!r.replay);
    slot_reply_clear(&r);
    ASSERT(r.line == NULL);

    parse_ok("{\"ok\":true,\"status\":\"sold_out\",\"available\":1}", &r);
    ASSERT(r.ok);
    ASSERT_EQ(r.id.kind, SLOT_ID_NONE);
    ASSERT_STR_EQ(r.status, "sold_out");
    ASSERT_EQ(r.available, 1);
    slot_reply_clear(&r);

    parse_ok("{\"ok\":true,\"status\":\"expired\",\"hold\":\"H\",\"qty\":1,\"expires_at\":9,\"replay\":true}", &r);
    ASSERT(r.replay);
    ASSERT_STR_EQ(r.status, "expired");
    slot_reply_clear(&r);
}

TEST_IMPL(client_reply_hold_ops)
{
    slot_reply r;
    parse_ok("{\"ok\":true,\"status\":\"confirmed\",\"hold\":\"H\",\"qty\":2,\"replay\":true}", &r);
    ASSERT_STR_EQ(r.status, "confirmed");
    ASSERT(r.replay);
    ASSERT_EQ(r.qty, 2);
    slot_reply_clear(&r);

    parse_ok("{\"ok\":true,\"released\":true,\"status\":\"released\"}", &r);
    ASSERT(r.released);
    slot_reply_clear(&r);
    parse_ok("{\"ok\":true,\"released\":false,\"status\":\"expired\"}", &r);
    ASSERT(!r.released);
    ASSERT_STR_EQ(r.status, "expired");
    slot_reply_clear(&r);

    parse_ok("{\"ok\":true,\"cancelled\":true,\"status\":\"cancelled\"}", &r);
    ASSERT(r.cancelled);
    slot_reply_clear(&r);
    parse_ok("{\"ok\":true,\"cancelled\":false,\"status\":\"released\"}", &r);
    ASSERT(!r.cancelled);
    slot_reply_clear(&r);

    parse_ok("{\"ok\":true,\"hold\":\"H9\",\"user\":\"J\\u00fcrgen\",\"status\":\"held\",\"qty\":3,"
             "\"expires_at\":2000,\"created_at\":1000}",
             &r);
    ASSERT_STR_EQ(r.user, "J\xc3\xbcrgen");
    ASSERT_EQ(r.created_at_ms, 1000);
    ASSERT_EQ(r.expires_at_ms, 2000);
    slot_reply_clear(&r);
}

TEST_IMPL(client_reply_event_view)
{
    slot_reply r;
    parse_ok("{\"ok\":true,\"event\":\"E\",\"status\":\"on_sale\",\"capacity\":1099511627776,\"available\":7,"
             "\"held\":2,\"confirmed\":1,\"shards\":16,\"hold_ttl_ms\":600000,\"max_per_user\":0,"
             "\"max_per_request\":10,\"replay\":true}",
             &r);
    ASSERT_STR_EQ(r.event, "E");
    ASSERT_STR_EQ(r.status, "on_sale");
    ASSERT_EQ(r.capacity, SLOT_CAPACITY_MAX);
    ASSERT_EQ(r.available, 7);
    ASSERT_EQ(r.held, 2);
    ASSERT_EQ(r.confirmed, 1);
    ASSERT_EQ(r.shards, 16);
    ASSERT_EQ(r.nshard_free, 0);
    ASSERT_EQ(r.hold_ttl_ms, 600000);
    ASSERT_EQ(r.max_per_user, 0);
    ASSERT_EQ(r.max_per_request, 10);
    ASSERT(r.replay);
    slot_reply_clear(&r);
}

TEST_IMPL(client_reply_admin)
{
    slot_reply r;
    parse_ok("{\"ok\":true,\"shards\":[{\"shard\":0,\"free\":5},{\"shard\":1,\"free\":4},{\"shard\":2,\"free\":0}]}",
             &r);
    ASSERT_EQ(r.nshard_free, 3);
    ASSERT_EQ(r.shard_free[0], 5);
    ASSERT_EQ(r.shard_free[1], 4);
    ASSERT_EQ(r.shard_free[2], 0);
    ASSERT_EQ(r.shards, 0);
    slot_reply_clear(&r);
    ASSERT(r.shard_free == NULL);

    parse_ok("{\"ok\":true,\"events\":3,\"holds\":12,\"violations\":[]}", &r);
    ASSERT_EQ(r.events, 3);
    ASSERT_EQ(r.holds, 12);
    ASSERT_EQ(r.nviolations, 0);
    slot_reply_clear(&r);
    parse_ok("{\"ok\":true,\"events\":1,\"holds\":0,\"violations\":[{\"invariant\":1,\"event\":\"E\","
             "\"detail\":\"x\"},{\"invariant\":2,\"event\":\"E\",\"detail\":\"y\"}]}",
             &r);
    ASSERT_EQ(r.nviolations, 2);
    slot_reply_clear(&r);
    /* the list is capped; the exact count comes beside it */
    parse_ok("{\"ok\":true,\"events\":1,\"holds\":0,\"violations\":[{\"invariant\":1}],\"violations_total\":250}", &r);
    ASSERT_EQ(r.nviolations, 250);
    slot_reply_clear(&r);
    parse_ok("{\"ok\":true,\"events\":1,\"holds\":0,\"violations\":[],\"violations_total\":0}", &r);
    ASSERT_EQ(r.nviolations, 0);
    slot_reply_clear(&r);

    parse_ok("{\"ok\":true,\"expired\":17}", &r);
    ASSERT_EQ(r.expired, 17);
    slot_reply_clear(&r);

    parse_ok("{\"ok\":true,\"server\":\"slotd\",\"version\":\"0.1.0\",\"protocol\":1,\"role\":\"admin\"}", &r);
    ASSERT_STR_EQ(r.version, "0.1.0");
    ASSERT_EQ(r.protocol, 1);
    ASSERT_STR_EQ(r.role, "admin");
    slot_reply_clear(&r);

    /* stats: free-form; unknown members are ignored, the line is kept whole */
    parse_ok("{\"ok\":true,\"connections\":4,\"requests\":{\"hold\":10},\"latency_us_p99\":250.5}", &r);
    ASSERT(r.ok);
    ASSERT(strstr(r.line, "latency_us_p99") != NULL);
    slot_reply_clear(&r);
}

TEST_IMPL(client_reply_errors)
{
    slot_reply r;
    parse_ok("{\"id\":\"req-1\",\"ok\":false,\"error\":\"unknown_event\",\"message\":\"no such event\"}", &r);
    ASSERT(!r.ok);
    ASSERT_EQ(r.err, SLOT_E_UNKNOWN_EVENT);
    ASSERT_STR_EQ(r.error, "unknown_event");
    ASSERT_STR_EQ(r.message, "no such event");
    ASSERT_EQ(r.id.kind, SLOT_ID_STR);
    ASSERT_STR_EQ(r.id.s, "req-1");
    ASSERT_EQ(r.id.len, 5);
    slot_reply_clear(&r);

    parse_ok("{\"id\":-9223372036854775808,\"ok\":false,\"error\":\"hold_not_active\",\"message\":\"m\","
             "\"status\":\"expired\"}",
             &r);
    ASSERT_EQ(r.err, SLOT_E_HOLD_NOT_ACTIVE);
    ASSERT_STR_EQ(r.status, "expired");
    ASSERT_EQ(r.id.kind, SLOT_ID_INT);
    ASSERT_EQ(r.id.i, INT64_MIN);
    slot_reply_clear(&r);

    for (int e = SLOT_E_BAD_JSON; e < SLOT_E__COUNT; e++) {
        char line[256];
        snprintf(line, sizeof(line), "{\"ok\":false,\"error\":\"%s\",\"message\":\"%s\"}", slot_err_name((slot_err)e),
                 slot_err_message((slot_err)e));
        parse_ok(line, &r);
        ASSERT_EQ(r.err, e);
        ASSERT_STR_EQ(r.message, slot_err_message((slot_err)e));
        slot_reply_clear(&r);
    }
    parse_ok("{\"ok\":false,\"error\":\"from_the_future\",\"message\":\"?\"}", &r);
    ASSERT_EQ(r.err, SLOT_E__COUNT);
    ASSERT_STR_EQ(r.error, "from_the_future");
    slot_reply_clear(&r);
}

TEST_IMPL(client_reply_invalid)
{
    const char *bad[] = {"",
                         "   ",
                         "[1,2]",
                         "\"ok\"",
                         "{}",
                         "{\"ok\":1}",
                         "{\"ok\":\"true\"}",
                         "{\"ok\":true",
                         "{\"ok\":true}}",
                         "{\"ok\":null}",
                         "nonsense"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        slot_reply r;
        int rc = slot_reply_parse(bad[i], strlen(bad[i]), &r);
        if (rc != -EINVAL)
            T_FAIL_("slot_reply_parse(%s) = %d, want -EINVAL", bad[i], rc);
        ASSERT(r.line == NULL);
        slot_reply_clear(&r);
    }
}

/* The line need not be NUL-terminated: only len bytes are read. */
TEST_IMPL(client_reply_not_terminated)
{
    const char *two = "{\"ok\":true,\"qty\":1}{\"ok\":false}";
    slot_reply r;
    ASSERT_EQ(slot_reply_parse(two, 19, &r), 0);
    ASSERT(r.ok);
    ASSERT_EQ(r.qty, 1);
    ASSERT_STR_EQ(r.line, "{\"ok\":true,\"qty\":1}");
    slot_reply_clear(&r);
}

/* Over-long strings are cut to their field at a character boundary; wrong types are ignored. */
TEST_IMPL(client_reply_long_and_odd_fields)
{
    char line[2048];
    size_t n = (size_t)snprintf(line, sizeof(line), "{\"ok\":false,\"error\":\"internal\",\"message\":\"");
    for (int i = 0; i < 200; i++)
        n += (size_t)snprintf(line + n, sizeof(line) - n, "\xc3\xa9"); /* 400 bytes of é */
    snprintf(line + n, sizeof(line) - n, "\",\"qty\":\"3\",\"held\":-1,\"replay\":1}");
    slot_reply r;
    parse_ok(line, &r);
    ASSERT_EQ(strlen(r.message), sizeof(r.message) - 2); /* 254: 127 whole characters */
    ASSERT_EQ(r.qty, 0);
    ASSERT_EQ(r.held, 0);
    ASSERT(!r.replay);
    slot_reply_clear(&r);
}

/* ---------------------------------------------------------------- fake servers */

typedef struct fake_server {
    int lfd;
    uint16_t port;
    pthread_t thread;
    void (*serve)(int fd, void *arg);
    void *arg;
} fake_server;

static void *fake_main(void *p)
{
    fake_server *s = p;
    int fd = accept(s->lfd, NULL, NULL);
    if (fd >= 0) {
        s->serve(fd, s->arg);
        close(fd);
    }
    return NULL;
}

/* Listen on 127.0.0.1:0 and serve one connection with fn on a thread. */
static void fake_start(fake_server *s, void (*fn)(int fd, void *arg), void *arg)
{
    s->lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    ASSERT_GE(s->lfd, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    ASSERT_EQ(bind(s->lfd, (struct sockaddr *)&a, sizeof(a)), 0);
    ASSERT_EQ(listen(s->lfd, 8), 0);
    socklen_t al = sizeof(a);
    ASSERT_EQ(getsockname(s->lfd, (struct sockaddr *)&a, &al), 0);
    s->port = ntohs(a.sin_port);
    s->serve = fn;
    s->arg = arg;
    ASSERT_EQ(pthread_create(&s->thread, NULL, fake_main, s), 0);
}

static void fake_join(fake_server *s)
{
    ASSERT_EQ(pthread_join(s->thread, NULL), 0);
    close(s->lfd);
}

static void write_all(int fd, const void *data, size_t len)
{
    const char *p = data;
    while (len > 0) {
        ssize_t n = send(fd, p, len, MSG_NOSIGNAL);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return; /* the client went away: the test's own asserts say what that means */
        p += n;
        len -= (size_t)n;
    }
}

/* Read one line (without "\n") into buf; returns its length, or -1 at EOF. */
static long read_line(int fd, char *buf, size_t cap)
{
    size_t n = 0;
    for (;;) {
        char ch;
        ssize_t r = recv(fd, &ch, 1, 0);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            return -1;
        if (ch == '\n') {
            buf[n] = 0;
            return (long)n;
        }
        if (n + 1 < cap)
            buf[n++] = ch;
    }
}

static void sleep_ms(long ms)
{
    struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) < 0 && errno == EINTR) {
    }
}

/* Answers each request with a held reply that echoes its id, user and qty, and
 * counts in "hold" how many lines it has answered; returns at EOF. */
static void serve_answer(int fd, void *arg)
{
    (void)arg;
    char line[8192];
    long n;
    for (int count = 1; (n = read_line(fd, line, sizeof(line))) >= 0; count++) {
        json_t *req = json_loadb(line, (size_t)n, 0, NULL);
        json_t *rep = json_pack("{s:b,s:s,s:s}", "ok", 1, "status", "held", "op", "?");
        if (req) {
            json_object_set(rep, "op", json_object_get(req, "op"));
            if (json_object_get(req, "id"))
                json_object_set(rep, "id", json_object_get(req, "id"));
            if (json_object_get(req, "user"))
                json_object_set(rep, "user", json_object_get(req, "user"));
            if (json_object_get(req, "qty"))
                json_object_set(rep, "qty", json_object_get(req, "qty"));
        }
        char hold[32];
        snprintf(hold, sizeof(hold), "H%d", count);
        json_object_set_new(rep, "hold", json_string(hold));
        char *out = json_dumps(rep, JSON_COMPACT);
        write_all(fd, out, strlen(out));
        write_all(fd, "\n", 1);
        free(out);
        json_decref(rep);
        json_decref(req);
    }
}

static slot_client *connect_ok(uint16_t port)
{
    slot_client *c = NULL;
    int rc = slot_client_connect("127.0.0.1", port, 2000, &c);
    if (rc != 0)
        T_FAIL_("connect 127.0.0.1:%u = %d (%s)", (unsigned)port, rc, strerror(-rc));
    ASSERT(c != NULL);
    ASSERT_GE(slot_client_fd(c), 0);
    return c;
}

TEST_IMPL(client_call)
{
    fake_server s;
    fake_start(&s, serve_answer, NULL);
    slot_client *c = connect_ok(s.port);
    slot_req req;
    ASSERT_EQ(slot_req_hold(&req, "E", "al\"ice\n", "r1", 3), 0);
    slot_req_set_id_str(&req, "x-1");
    slot_reply r;
    ASSERT_EQ(slot_client_call(c, &req, &r, 2000), 0);
    ASSERT(r.ok);
    ASSERT_STR_EQ(r.status, "held");
    ASSERT_STR_EQ(r.hold, "H1");
    ASSERT_STR_EQ(r.user, "al\"ice\n");
    ASSERT_EQ(r.qty, 3);
    ASSERT_EQ(r.id.kind, SLOT_ID_STR);
    ASSERT_STR_EQ(r.id.s, "x-1");
    slot_reply_clear(&r);
    slot_client_close(c);
    fake_join(&s);
}

/* Many requests sent before any reply is read come back in order. */
TEST_IMPL(client_pipeline)
{
    enum { N = 1000 }; /* ~70 KiB of replies: fits the socket buffers while nothing is read */
    fake_server s;
    fake_start(&s, serve_answer, NULL);
    slot_client *c = connect_ok(s.port);
    slot_req req;
    for (int i = 0; i < N; i++) {
        char user[32];
        snprintf(user, sizeof(user), "u%d", i);
        ASSERT_EQ(slot_req_hold(&req, "E", user, "r", 1), 0);
        slot_req_set_id_int(&req, i);
        ASSERT_EQ(slot_client_send(c, &req), 0);
    }
    for (int i = 0; i < N; i++) {
        slot_reply r;
        ASSERT_EQ(slot_client_recv(c, &r, 5000), 0);
        ASSERT_EQ(r.id.kind, SLOT_ID_INT);
        ASSERT_EQ(r.id.i, i);
        char hold[32];
        snprintf(hold, sizeof(hold), "H%d", i + 1);
        ASSERT_STR_EQ(r.hold, hold);
        slot_reply_clear(&r);
    }
    slot_client_close(c);
    fake_join(&s);
}

/* A reply written one byte at a time (plus a raw request in pieces the other way). */
static void serve_split(int fd, void *arg)
{
    (void)arg;
    char line[1024];
    long n = read_line(fd, line, sizeof(line));
    if (n < 0 || strcmp(line, "{\"op\":\"stats\"}") != 0)
        return; /* the client sees EOF and the test fails there */
    const char *rep = "{\"ok\":true,\"event\":\"split\",\"capacity\":123456789,\"status\":\"closed\"}\r\n";
    for (size_t i = 0; rep[i]; i++) {
        write_all(fd, rep + i, 1);
        sleep_ms(i % 8 == 0 ? 3 : 0);
    }
    read_line(fd, line, sizeof(line)); /* wait for the client to close */
}

TEST_IMPL(client_split_line)
{
    fake_server s;
    fake_start(&s, serve_split, NULL);
    slot_client *c = connect_ok(s.port);
    const char *raw = "{\"op\":\"stats\"}\n";
    for (size_t i = 0; raw[i]; i++)
        ASSERT_EQ(slot_client_send_raw(c, raw + i, 1), 0);
    slot_reply r;
    ASSERT_EQ(slot_client_recv(c, &r, 5000), 0);
    ASSERT_STR_EQ(r.event, "split");
    ASSERT_EQ(r.capacity, 123456789);
    ASSERT_STR_EQ(r.status, "closed");
    ASSERT_EQ(r.line[strlen(r.line) - 1], '}'); /* "\r\n" stripped */
    slot_reply_clear(&r);
    slot_client_close(c);
    fake_join(&s);
}

/* Reads the request, then says nothing until the client hangs up. */
static void serve_silent(int fd, void *arg)
{
    (void)arg;
    char line[1024];
    while (read_line(fd, line, sizeof(line)) >= 0) {
    }
}

TEST_IMPL(client_recv_timeout)
{
    fake_server s;
    fake_start(&s, serve_silent, NULL);
    slot_client *c = connect_ok(s.port);
    slot_req req;
    slot_req_init(&req, SLOT_OP_STATS);
    slot_reply r;
    uint64_t t0 = slot_test_now_ms();
    ASSERT_EQ(slot_client_call(c, &req, &r, 150), -ETIMEDOUT);
    uint64_t dt = slot_test_now_ms() - t0;
    ASSERT_GE(dt, 140);
    ASSERT_LT(dt, 2000);
    const char *line = NULL;
    t0 = slot_test_now_ms();
    ASSERT_EQ(slot_client_recv_line(c, &line, 0), -ETIMEDOUT);
    ASSERT_LT(slot_test_now_ms() - t0, 100);
    slot_client_close(c);
    fake_join(&s);
}

static volatile sig_atomic_t alarms;

static void on_alarm(int sig)
{
    (void)sig;
    alarms++;
}

/* Answers after 300 ms, while the client is interrupted by SIGALRM every 20 ms. */
static void serve_late(int fd, void *arg)
{
    (void)arg;
    char line[1024];
    if (read_line(fd, line, sizeof(line)) < 0)
        return;
    sleep_ms(300);
    write_all(fd, "{\"ok\":true,\"expired\":3}\n", 24);
    serve_silent(fd, NULL);
}

TEST_IMPL(client_eintr)
{
    /* The server thread starts with SIGALRM blocked, so every alarm lands in
     * the client (this thread). */
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGALRM);
    ASSERT_EQ(pthread_sigmask(SIG_BLOCK, &set, NULL), 0);
    fake_server s;
    fake_start(&s, serve_late, NULL);
    ASSERT_EQ(pthread_sigmask(SIG_UNBLOCK, &set, NULL), 0);
    slot_client *c = connect_ok(s.port);
    struct sigaction sa = {.sa_handler = on_alarm}; /* no SA_RESTART: poll and recv see EINTR */
    ASSERT_EQ(sigaction(SIGALRM, &sa, NULL), 0);
    struct itimerval it = {.it_interval = {0, 20000}, .it_value = {0, 20000}};
    ASSERT_EQ(setitimer(ITIMER_REAL, &it, NULL), 0);
    slot_req req;
    slot_req_init(&req, SLOT_OP_EXPIRE);
    slot_reply r;
    ASSERT_EQ(slot_client_call(c, &req, &r, 5000), 0);
    struct itimerval off = {0};
    setitimer(ITIMER_REAL, &off, NULL);
    ASSERT_EQ(r.expired, 3);
    ASSERT_GE(alarms, 3);
    slot_reply_clear(&r);
    slot_client_close(c);
    fake_join(&s);
}

/* Several lines in one write, the last one cut off by the close. */
static void serve_burst_close(int fd, void *arg)
{
    (void)arg;
    const char *burst = "{\"ok\":true,\"qty\":1}\n{\"ok\":true,\"qty\":2}\r\n\n{\"ok\":true,\"qty\":3}\n{\"ok\":tr";
    write_all(fd, burst, strlen(burst));
}

TEST_IMPL(client_burst_then_eof)
{
    fake_server s;
    fake_start(&s, serve_burst_close, NULL);
    slot_client *c = connect_ok(s.port);
    fake_join(&s); /* the server has written and closed */
    const char *line = NULL;
    ASSERT_EQ(slot_client_recv_line(c, &line, 2000), 19);
    ASSERT_STR_EQ(line, "{\"ok\":true,\"qty\":1}");
    ASSERT_EQ(slot_client_recv_line(c, &line, 2000), 19);
    ASSERT_STR_EQ(line, "{\"ok\":true,\"qty\":2}");
    ASSERT_EQ(slot_client_recv_line(c, &line, 2000), 0); /* an empty line is a line */
    ASSERT_STR_EQ(line, "");
    slot_reply r;
    ASSERT_EQ(slot_client_recv(c, &r, 2000), 0);
    ASSERT_EQ(r.qty, 3);
    slot_reply_clear(&r);
    ASSERT_EQ(slot_client_recv_line(c, &line, 2000), -ECONNRESET);
    ASSERT_EQ(slot_client_recv_line(c, &line, 2000), -ECONNRESET);
    slot_client_close(c);
}

/* A line of exactly `*(size_t *)arg` bytes (of 'a'), newline-terminated when
 * the length is at most SLOT_CLIENT_LINE_MAX, then a short one. */
static void serve_long_line(int fd, void *arg)
{
    size_t len = *(size_t *)arg;
    char *big = malloc(len + 1);
    memset(big, 'a', len);
    big[len] = '\n';
    write_all(fd, big, len <= SLOT_CLIENT_LINE_MAX ? len + 1 : len);
    write_all(fd, "{\"ok\":true}\n", 12);
    free(big);
    serve_silent(fd, NULL);
}

TEST_IMPL(client_line_max)
{
    size_t len = SLOT_CLIENT_LINE_MAX;
    fake_server s;
    fake_start(&s, serve_long_line, &len);
    slot_client *c = connect_ok(s.port);
    const char *line = NULL;
    ASSERT_EQ(slot_client_recv_line(c, &line, 10000), SLOT_CLIENT_LINE_MAX);
    ASSERT_EQ(line[0], 'a');
    ASSERT_EQ(line[SLOT_CLIENT_LINE_MAX - 1], 'a');
    ASSERT_EQ(line[SLOT_CLIENT_LINE_MAX], 0);
    ASSERT_EQ(slot_client_recv_line(c, &line, 10000), 11);
    ASSERT_STR_EQ(line, "{\"ok\":true}");
    slot_client_close(c);
    fake_join(&s);
}

TEST_IMPL(client_line_too_long)
{
    size_t len = SLOT_CLIENT_LINE_MAX + 1;
    fake_server s;
    fake_start(&s, serve_long_line, &len);
    slot_client *c = connect_ok(s.port);
    const char *line = NULL;
    ASSERT_EQ(slot_client_recv_line(c, &line, 10000), -EMSGSIZE);
    ASSERT_EQ(slot_client_recv_line(c, &line, 10000), -EMSGSIZE); /* the stream is lost: it stays so */
    slot_client_close(c);
    fake_join(&s);
}

/* Answers every line with a reply of PIPE_REPLY_BYTES, reading in chunks. */
enum { PIPE_REQS = 2000, PIPE_REQ_BYTES = 4096, PIPE_REPLY_BYTES = 1500, PIPE_SOCKBUF_BYTES = 32768 };

static void serve_fat_replies(int fd, void *arg)
{
    (void)arg;
    char *reply = malloc(PIPE_REPLY_BYTES);
    memset(reply, ' ', PIPE_REPLY_BYTES);
    memcpy(reply, "{\"ok\":true}", 11);
    reply[PIPE_REPLY_BYTES - 1] = '\n';
    char chunk[65536];
    ssize_t n;
    while ((n = recv(fd, chunk, sizeof(chunk), 0)) > 0 || (n < 0 && errno == EINTR))
        for (ssize_t i = 0; i < n; i++)
            if (chunk[i] == '\n')
                write_all(fd, reply, PIPE_REPLY_BYTES);
    free(reply);
}

/* Regression: 8 MB of requests sent before any of 3 MB of replies is read,
 * through socket buffers of 32 KiB. A client that only waited to write would
 * hang here: the server stops reading while its replies are not read. */
TEST_IMPL(client_pipeline_beyond_socket_buffers)
{
    alarm(20); /* a hang is a failure, not a stuck test run (the test takes ~0.1 s) */
    fake_server s;
    int small = PIPE_SOCKBUF_BYTES;
    fake_start(&s, serve_fat_replies, NULL);
    ASSERT_EQ(setsockopt(s.lfd, SOL_SOCKET, SO_SNDBUF, &small, sizeof(small)), 0);
    ASSERT_EQ(setsockopt(s.lfd, SOL_SOCKET, SO_RCVBUF, &small, sizeof(small)), 0);
    slot_client *c = connect_ok(s.port);
    ASSERT_EQ(setsockopt(slot_client_fd(c), SOL_SOCKET, SO_RCVBUF, &small, sizeof(small)), 0);
    ASSERT_EQ(setsockopt(slot_client_fd(c), SOL_SOCKET, SO_SNDBUF, &small, sizeof(small)), 0);
    char *req = malloc(PIPE_REQ_BYTES);
    memset(req, ' ', PIPE_REQ_BYTES);
    memcpy(req, "{\"op\":\"stats\"}", 14);
    req[PIPE_REQ_BYTES - 1] = '\n';
    for (int i = 0; i < PIPE_REQS; i++)
        ASSERT_EQ(slot_client_send_raw(c, req, PIPE_REQ_BYTES), 0);
    for (int i = 0; i < PIPE_REQS; i++) {
        slot_reply r;
        ASSERT_EQ(slot_client_recv(c, &r, 10000), 0);
        ASSERT(r.ok);
        slot_reply_clear(&r);
    }
    const char *line = NULL;
    ASSERT_EQ(slot_client_recv_line(c, &line, 0), -ETIMEDOUT);
    free(req);
    slot_client_close(c);
    fake_join(&s);
    alarm(0);
}

TEST_IMPL(client_refused)
{
    /* A port that was just free: bound, never listened on, closed. */
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    ASSERT_GE(fd, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    ASSERT_EQ(bind(fd, (struct sockaddr *)&a, sizeof(a)), 0);
    socklen_t al = sizeof(a);
    ASSERT_EQ(getsockname(fd, (struct sockaddr *)&a, &al), 0);
    close(fd);
    slot_client *c = (slot_client *)&a; /* must be reset to NULL on failure */
    ASSERT_EQ(slot_client_connect("127.0.0.1", ntohs(a.sin_port), 1000, &c), -ECONNREFUSED);
    ASSERT(c == NULL);
    slot_client_close(NULL);
}

/* A name, not a number: "localhost" may resolve to ::1 first, where nothing
 * listens; the next address (127.0.0.1) is tried. */
TEST_IMPL(client_connect_by_name)
{
    fake_server s;
    fake_start(&s, serve_answer, NULL);
    slot_client *c = NULL;
    ASSERT_EQ(slot_client_connect("localhost", s.port, 2000, &c), 0);
    slot_req req;
    slot_req_init(&req, SLOT_OP_STATS);
    slot_reply r;
    ASSERT_EQ(slot_client_call(c, &req, &r, 2000), 0);
    ASSERT_STR_EQ(r.hold, "H1");
    slot_reply_clear(&r);
    slot_client_close(c);
    fake_join(&s);
}

/* The server goes away; a send then fails with an error, never SIGPIPE. */
static void serve_close_now(int fd, void *arg)
{
    (void)fd;
    (void)arg;
}

TEST_IMPL(client_send_after_close)
{
    signal(SIGPIPE, SIG_DFL); /* a SIGPIPE would kill this test */
    fake_server s;
    fake_start(&s, serve_close_now, NULL);
    slot_client *c = connect_ok(s.port);
    fake_join(&s);
    slot_req req;
    slot_req_init(&req, SLOT_OP_STATS);
    int rc = 0;
    for (int i = 0; i < 100 && rc == 0; i++) {
        rc = slot_client_send(c, &req);
        sleep_ms(1);
    }
    ASSERT(rc == -EPIPE || rc == -ECONNRESET);
    slot_client_close(c);
}
