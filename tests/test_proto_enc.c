/*
 * test_proto_enc.c — the reply encoder (proto.h) against docs/protocol.md:
 * every reply shape parsed back with jansson, escaping, small buffers, v1.1's
 * replies. The request parser: test_proto_parse.c.
 */
#include <errno.h>
#include <jansson.h>

#include "harness.h"
#include "proto_util.h"
#include "slot/client.h"
#include "slot/proto.h"

TEST_DECLARE(proto_encode_id_first_and_echo)
TEST_DECLARE(proto_encode_hello)
TEST_DECLARE(proto_encode_hold_shapes)
TEST_DECLARE(proto_encode_confirm_release_cancel)
TEST_DECLARE(proto_encode_get_hold)
TEST_DECLARE(proto_encode_event_view_ops)
TEST_DECLARE(proto_encode_shards)
TEST_DECLARE(proto_encode_check)
TEST_DECLARE(proto_encode_digest)
TEST_DECLARE(proto_encode_cluster_view)
TEST_DECLARE(proto_encode_errors)
TEST_DECLARE(proto_encode_error_standalone)
TEST_DECLARE(proto_encode_escaping)
TEST_DECLARE(proto_encode_invalid_utf8_replaced)
TEST_DECLARE(proto_encode_small_buffer)
TEST_DECLARE(proto_parse_then_encode)
TEST_DECLARE(proto_v11_encode_replies)

TEST_LIST_START
TEST_ENTRY(proto_encode_id_first_and_echo)
TEST_ENTRY(proto_encode_hello)
TEST_ENTRY(proto_encode_hold_shapes)
TEST_ENTRY(proto_encode_confirm_release_cancel)
TEST_ENTRY(proto_encode_get_hold)
TEST_ENTRY(proto_encode_event_view_ops)
TEST_ENTRY(proto_encode_shards)
TEST_ENTRY(proto_encode_check)
TEST_ENTRY(proto_encode_digest)
TEST_ENTRY(proto_encode_cluster_view)
TEST_ENTRY(proto_encode_errors)
TEST_ENTRY(proto_encode_error_standalone)
TEST_ENTRY(proto_encode_escaping)
TEST_ENTRY(proto_encode_invalid_utf8_replaced)
TEST_ENTRY(proto_encode_small_buffer)
TEST_ENTRY(proto_parse_then_encode)
TEST_ENTRY(proto_v11_encode_replies)
TEST_LIST_END

/* ------------------------------------------------------------------------ */
/* Encoder                                                                   */
/* ------------------------------------------------------------------------ */

static void req_for(slot_req *req, slot_op op, const char *id_str)
{
    memset(req, 0, sizeof(*req));
    req->op = op;
    if (id_str) {
        req->id.kind = SLOT_ID_STR;
        req->id.len = (uint8_t)strlen(id_str);
        memcpy(req->id.s, id_str, req->id.len + 1u);
    }
}

TEST_IMPL(proto_encode_id_first_and_echo)
{
    char buf[1024];
    slot_req req;
    slot_res res = {0};
    req_for(&req, SLOT_OP_EXPIRE, "abc");
    res.expired = 9;
    json_t *j = roundtrip(&req, &res, buf, sizeof(buf));
    ASSERT_STR_EQ(buf, "{\"id\":\"abc\",\"ok\":true,\"expired\":9}\n");
    json_decref(j);
    req.id.kind = SLOT_ID_INT;
    req.id.i = INT64_MIN;
    j = roundtrip(&req, &res, buf, sizeof(buf));
    ASSERT(jint(j, "id") == INT64_MIN);
    json_decref(j);
    req.id.i = INT64_MAX;
    j = roundtrip(&req, &res, buf, sizeof(buf));
    ASSERT(jint(j, "id") == INT64_MAX);
    json_decref(j);
    req.id.kind = SLOT_ID_NONE;
    j = roundtrip(&req, &res, buf, sizeof(buf));
    ASSERT(json_object_get(j, "id") == NULL);
    ASSERT_STR_EQ(buf, "{\"ok\":true,\"expired\":9}\n");
    json_decref(j);
}

TEST_IMPL(proto_encode_hello)
{
    char buf[1024];
    slot_req req;
    slot_res res = {0};
    req_for(&req, SLOT_OP_HELLO, NULL);
    res.role = SLOT_ROLE_FRONTEND;
    res.version = "0.1.0"; /* static text, written as "version" */
    json_t *j = roundtrip(&req, &res, buf, sizeof(buf));
    ASSERT_STR_EQ(jstr(j, "server"), "slotd");
    ASSERT_EQ(jint(j, "protocol"), 1);
    ASSERT_STR_EQ(jstr(j, "role"), "frontend");
    ASSERT_STR_EQ(jstr(j, "version"), "0.1.0");
    ASSERT(jtrue(j, "ok"));
    json_decref(j);
    slot_res_clear(&res);
}

TEST_IMPL(proto_encode_hold_shapes)
{
    char buf[1024];
    slot_req req;
    slot_res res = {0};
    req_for(&req, SLOT_OP_HOLD, "h1");
    res.hold_status = SLOT_HOLD_HELD;
    strcpy(res.hold, "00000000000000010123456789abcdef");
    res.qty = 2;
    res.expires_at_ms = UINT64_C(1764500000000);
    json_t *j = roundtrip(&req, &res, buf, sizeof(buf));
    ASSERT_STR_EQ(jstr(j, "status"), "held");
    ASSERT_STR_EQ(jstr(j, "hold"), "00000000000000010123456789abcdef");
    ASSERT_EQ(jint(j, "qty"), 2);
    ASSERT_EQ(jint(j, "expires_at"), 1764500000000);
    ASSERT(json_object_get(j, "replay") == NULL);
    json_decref(j);
    /* Replay shows the current status. */
    res.replay = true;
    res.hold_status = SLOT_HOLD_EXPIRED;
    j = roundtrip(&req, &res, buf, sizeof(buf));
    ASSERT_STR_EQ(jstr(j, "status"), "expired");
    ASSERT(jtrue(j, "replay"));
    json_decref(j);
    /* Sold out: ok, status and available only. */
    memset(&res, 0, sizeof(res));
    res.sold_out = true;
    res.available = 1;
    j = roundtrip(&req, &res, buf, sizeof(buf));
    ASSERT(jtrue(j, "ok"));
    ASSERT_STR_EQ(jstr(j, "status"), "sold_out");
    ASSERT_EQ(jint(j, "available"), 1);
    ASSERT(json_object_get(j, "hold") == NULL);
    ASSERT_EQ(json_object_size(j), 4);
    json_decref(j);
}

TEST_IMPL(proto_encode_confirm_release_cancel)
{
    char buf[1024];
    slot_req req;
    slot_res res = {0};
    req_for(&req, SLOT_OP_CONFIRM, NULL);
    res.hold_status = SLOT_HOLD_CONFIRMED;
    strcpy(res.hold, "H");
    res.qty = 5;
    res.replay = true;
    json_t *j = roundtrip(&req, &res, buf, sizeof(buf));
    ASSERT_STR_EQ(jstr(j, "status"), "confirmed");
    ASSERT_STR_EQ(jstr(j, "hold"), "H");
    ASSERT_EQ(jint(j, "qty"), 5);
    ASSERT(jtrue(j, "replay"));
    json_decref(j);

    memset(&res, 0, sizeof(res));
    req_for(&req, SLOT_OP_RELEASE, NULL);
    res.done = true;
    res.hold_status = SLOT_HOLD_RELEASED;
    j = roundtrip(&req, &res, buf, sizeof(buf));
    ASSERT(jtrue(j, "released"));
    ASSERT_STR_EQ(jstr(j, "status"), "released");
    json_decref(j);
    res.done = false;
    res.hold_status = SLOT_HOLD_EXPIRED;
    j = roundtrip(&req, &res, buf, sizeof(buf));
    ASSERT(json_is_false(json_object_get(j, "released")));
    ASSERT_STR_EQ(jstr(j, "status"), "expired");
    json_decref(j);

    req_for(&req, SLOT_OP_CANCEL, NULL);
    res.done = true;
    res.hold_status = SLOT_HOLD_CANCELLED;
    j = roundtrip(&req, &res, buf, sizeof(buf));
    ASSERT(jtrue(j, "cancelled"));
    ASSERT_STR_EQ(jstr(j, "status"), "cancelled");
    ASSERT(json_object_get(j, "released") == NULL);
    json_decref(j);
    res.done = false;
    res.hold_status = SLOT_HOLD_RELEASED;
    j = roundtrip(&req, &res, buf, sizeof(buf));
    ASSERT(json_is_false(json_object_get(j, "cancelled")));
    ASSERT_STR_EQ(jstr(j, "status"), "released");
    json_decref(j);
}

TEST_IMPL(proto_encode_get_hold)
{
    char buf[1024];
    slot_req req;
    slot_res res = {0};
    req_for(&req, SLOT_OP_GET_HOLD, NULL);
    strcpy(res.hold, "HH");
    strcpy(res.user, "bob");
    res.hold_status = SLOT_HOLD_HELD;
    res.qty = 2;
    res.expires_at_ms = 2000;
    res.created_at_ms = 1000;
    json_t *j = roundtrip(&req, &res, buf, sizeof(buf));
    ASSERT_STR_EQ(jstr(j, "hold"), "HH");
    ASSERT_STR_EQ(jstr(j, "user"), "bob");
    ASSERT_STR_EQ(jstr(j, "status"), "held");
    ASSERT_EQ(jint(j, "qty"), 2);
    ASSERT_EQ(jint(j, "expires_at"), 2000);
    ASSERT_EQ(jint(j, "created_at"), 1000);
    json_decref(j);
}

TEST_IMPL(proto_encode_event_view_ops)
{
    const slot_op ops[] = {SLOT_OP_EVENT, SLOT_OP_CREATE_EVENT, SLOT_OP_SET_CAPACITY, SLOT_OP_RESHARD,
                           SLOT_OP_SET_STATUS};
    for (size_t i = 0; i < sizeof(ops) / sizeof(ops[0]); i++) {
        char buf[1024];
        slot_req req;
        slot_res res = {0};
        req_for(&req, ops[i], "v");
        strcpy(res.view.event, "sale.2025");
        res.view.status = i % 2 ? SLOT_EVENT_CLOSED : SLOT_EVENT_ON_SALE;
        res.view.capacity = UINT64_C(1) << 40;
        res.view.available = 7;
        res.view.held = 8;
        res.view.confirmed = 9;
        res.view.shards = 1024;
        res.view.hold_ttl_ms = 86400000;
        res.view.max_per_user = 3;
        res.view.max_per_request = 1000;
        res.view.opens_at_ms = UINT64_C(1) << 53;
        res.view.closes_at_ms = 0;
        res.view.max_extensions = 100;
        res.view.max_hold_ms = UINT64_C(1) << 40;
        res.view.holds_made = UINT64_C(1) << 50;
        res.replay = ops[i] == SLOT_OP_CREATE_EVENT;
        json_t *j = roundtrip(&req, &res, buf, sizeof(buf));
        ASSERT_STR_EQ(jstr(j, "id"), "v");
        ASSERT_STR_EQ(jstr(j, "event"), "sale.2025");
        ASSERT_STR_EQ(jstr(j, "status"), i % 2 ? "closed" : "on_sale");
        ASSERT_EQ(jint(j, "capacity"), INT64_C(1) << 40);
        ASSERT_EQ(jint(j, "available"), 7);
        ASSERT_EQ(jint(j, "held"), 8);
        ASSERT_EQ(jint(j, "confirmed"), 9);
        ASSERT_EQ(jint(j, "shards"), 1024);
        ASSERT_EQ(jint(j, "hold_ttl_ms"), 86400000);
        ASSERT_EQ(jint(j, "max_per_user"), 3);
        ASSERT_EQ(jint(j, "max_per_request"), 1000);
        ASSERT_EQ(jint(j, "opens_at"), INT64_C(1) << 53);
        ASSERT_EQ(jint(j, "closes_at"), 0);
        ASSERT_EQ(jint(j, "max_extensions"), 100);
        ASSERT_EQ(jint(j, "max_hold_ms"), INT64_C(1) << 40);
        ASSERT_EQ(jtrue(j, "replay"), ops[i] == SLOT_OP_CREATE_EVENT);
        ASSERT_EQ(jint(j, "waitlist_max"), 0);
        ASSERT_EQ(jint(j, "waiting"), 0);
        ASSERT_EQ(jint(j, "waiting_qty"), 0);
        ASSERT_EQ(jint(j, "allocated"), 0); /* v1.2; a root has no parent nor effective_available */
        ASSERT(!json_object_get(j, "parent") && !json_object_get(j, "effective_available"));
        /* holds_made (slotctl rebalance --by holds) is the event op's alone, not the shared view's */
        ASSERT_EQ(json_object_get(j, "holds_made") != NULL, ops[i] == SLOT_OP_EVENT);
        if (ops[i] == SLOT_OP_EVENT)
            ASSERT_EQ(jint(j, "holds_made"), INT64_C(1) << 50);
        ASSERT_EQ(json_object_size(j), 20u + (ops[i] == SLOT_OP_CREATE_EVENT) + (ops[i] == SLOT_OP_EVENT));
        json_decref(j);
    }
}

TEST_IMPL(proto_encode_shards)
{
    char buf[4096];
    slot_req req;
    slot_res res = {0};
    req_for(&req, SLOT_OP_SHARDS, NULL);
    json_t *j = roundtrip(&req, &res, buf, sizeof(buf));
    ASSERT(json_is_array(json_object_get(j, "shards")));
    ASSERT_EQ(json_array_size(json_object_get(j, "shards")), 0);
    json_decref(j);
    res.nshards = 3;
    res.shard_free = calloc(3, sizeof(uint64_t));
    res.shard_free[0] = 10;
    res.shard_free[1] = 0;
    res.shard_free[2] = UINT64_C(1) << 40;
    j = roundtrip(&req, &res, buf, sizeof(buf));
    json_t *a = json_object_get(j, "shards");
    ASSERT_EQ(json_array_size(a), 3);
    for (size_t i = 0; i < 3; i++) {
        json_t *s = json_array_get(a, i);
        ASSERT_EQ(jint(s, "shard"), (int64_t)i);
        ASSERT_EQ(jint(s, "free"), (int64_t)res.shard_free[i]);
    }
    json_decref(j);
    slot_res_clear(&res);
}

/* digest: the exact line, the reply's fields in the order of docs/protocol.md, "digest". */
TEST_IMPL(proto_encode_digest)
{
    char buf[256];
    slot_req req;
    slot_res res = {0};
    req_for(&req, SLOT_OP_DIGEST, NULL);
    res.seq = 2;
    snprintf(res.digest, sizeof res.digest, "%s", "95d7bef7825c04a1ef3869a276c1ffa8d7de79c0f91686fc3cc277af76b64156");
    size_t n = slot_proto_encode(&req, &res, buf, sizeof buf);
    ASSERT(n < sizeof buf);
    ASSERT_STR_EQ(buf, "{\"ok\":true,\"seq\":2,"
                       "\"digest\":\"95d7bef7825c04a1ef3869a276c1ffa8d7de79c0f91686fc3cc277af76b64156\"}\n");
    slot_reply r;
    ASSERT_EQ(slot_reply_parse(buf, n - 1, &r), 0);
    ASSERT_U64_EQ(r.seq, 2);
    ASSERT_STR_EQ(r.digest, res.digest);
    slot_reply_clear(&r);
}

TEST_IMPL(proto_encode_check)
{
    static char buf[65536];
    slot_req req;
    slot_res res = {0};
    req_for(&req, SLOT_OP_CHECK, NULL);
    res.events_checked = 2;
    res.holds_checked = 30;
    json_t *j = roundtrip(&req, &res, buf, sizeof(buf));
    ASSERT_EQ(jint(j, "events"), 2);
    ASSERT_EQ(jint(j, "holds"), 30);
    ASSERT_EQ(json_array_size(json_object_get(j, "violations")), 0);
    ASSERT_EQ(jint(j, "violations_total"), 0);
    json_decref(j);
    /* More violations than are reported: the list is capped, the total exact. */
    res.nviolations = 150;
    res.violations = calloc(SLOT_CHECK_VIOLATIONS_MAX, sizeof(slot_violation));
    for (int i = 0; i < SLOT_CHECK_VIOLATIONS_MAX; i++) {
        res.violations[i].invariant = 1 + i % 7;
        snprintf(res.violations[i].event, sizeof(res.violations[i].event), "ev%d", i);
        snprintf(res.violations[i].detail, sizeof(res.violations[i].detail), "free %d + \"held\" != cap\n", i);
    }
    j = roundtrip(&req, &res, buf, sizeof(buf));
    json_t *a = json_object_get(j, "violations");
    ASSERT_EQ(json_array_size(a), SLOT_CHECK_VIOLATIONS_MAX);
    ASSERT_EQ(jint(j, "violations_total"), 150);
    json_t *v = json_array_get(a, 9);
    ASSERT_EQ(jint(v, "invariant"), 3);
    ASSERT_STR_EQ(jstr(v, "event"), "ev9");
    ASSERT_STR_EQ(jstr(v, "detail"), "free 9 + \"held\" != cap\n");
    json_decref(j);
    slot_res_clear(&res);
}

TEST_IMPL(proto_encode_cluster_view)
{
    char buf[2048];
    slot_req req;
    slot_res res = {0};
    /* A standalone server's: the exact bytes slotd wrote when jansson built them; no stray comma in "members". */
    req_for(&req, SLOT_OP_CLUSTER, NULL);
    res.cluster_view = calloc(1, sizeof(*res.cluster_view));
    ASSERT(res.cluster_view != NULL);
    res.cluster_view->role = "standalone";
    res.cluster_view->seq = 7;
    json_t *j = roundtrip(&req, &res, buf, sizeof(buf)); /* roundtrip asserts one line */
    json_decref(j);
    ASSERT_STR_EQ(buf,
                  "{\"ok\":true,\"cluster\":\"\",\"node\":\"\",\"role\":\"standalone\",\"epoch\":0,\"primary\":\"\","
                  "\"seq\":7,\"members\":[]}\n");
    /* A member's, as a 3-node set's primary answered before: snapshots_*, then members in order. */
    slot_cluster_view *v = res.cluster_view;
    snprintf(v->cluster, sizeof v->cluster, "demo");
    snprintf(v->node, sizeof v->node, "n1");
    v->role = "primary";
    v->epoch = 3;
    snprintf(v->primary, sizeof v->primary, "127.0.0.1:57789");
    v->seq = 2;
    v->member = true;
    v->snapshots_sent = 2;
    v->nmembers = 2;
    snprintf(v->members[0].node, sizeof v->members[0].node, "n1");
    snprintf(v->members[0].addr, sizeof v->members[0].addr, "127.0.0.1:57789");
    v->members[0].role = "primary";
    v->members[0].seq = 2;
    snprintf(v->members[1].node, sizeof v->members[1].node, "n2");
    v->members[1].role = "joining";
    v->members[1].seq = 1;
    v->members[1].lag_ms = 4;
    req_for(&req, SLOT_OP_CLUSTER_CHANGE, "c");
    j = roundtrip(&req, &res, buf, sizeof(buf));
    json_decref(j);
    ASSERT_STR_EQ(buf,
                  "{\"id\":\"c\",\"ok\":true,\"cluster\":\"demo\",\"node\":\"n1\",\"role\":\"primary\",\"epoch\":3,"
                  "\"primary\":\"127.0.0.1:57789\",\"seq\":2,\"snapshots_installed\":0,\"snapshots_sent\":2,"
                  "\"members\":[{\"node\":\"n1\",\"addr\":\"127.0.0.1:57789\",\"role\":\"primary\",\"seq\":2,"
                  "\"lag_ms\":0},{\"node\":\"n2\",\"addr\":\"\",\"role\":\"joining\",\"seq\":1,\"lag_ms\":4}]}\n");
    /* Names are escaped (the reply stays one line), \n short as jansson wrote it; a large number as it is. */
    snprintf(v->cluster, sizeof v->cluster, "x\ny\"");
    v->epoch = UINT64_C(1) << 62;
    j = roundtrip(&req, &res, buf, sizeof(buf));
    ASSERT_STR_EQ(jstr(j, "cluster"), "x\ny\"");
    ASSERT(strstr(buf, "\"cluster\":\"x\\ny\\\"\"") != NULL);
    ASSERT(strstr(buf, "\"epoch\":4611686018427387904,") != NULL);
    ASSERT_EQ(json_array_size(json_object_get(j, "members")), 2u);
    json_decref(j);
    /* No view: the op's head alone. */
    free(res.cluster_view);
    res.cluster_view = NULL;
    req_for(&req, SLOT_OP_CLUSTER, "s");
    j = roundtrip(&req, &res, buf, sizeof(buf));
    ASSERT_STR_EQ(buf, "{\"id\":\"s\",\"ok\":true}\n");
    json_decref(j);
    slot_res_clear(&res);
}

TEST_IMPL(proto_encode_errors)
{
    char buf[1024];
    slot_req req;
    slot_res res = {0};
    req_for(&req, SLOT_OP_HOLD, "e1");
    slot_res_error(&res, SLOT_E_UNKNOWN_EVENT, NULL);
    snprintf(res.primary, sizeof res.primary, "127.0.0.1:1"); /* only not_primary writes it */
    res.cluster_view = calloc(1, sizeof(*res.cluster_view));  /* and no error reply a view */
    ASSERT(res.cluster_view != NULL);
    json_t *j = roundtrip(&req, &res, buf, sizeof(buf));
    ASSERT_STR_EQ(jstr(j, "id"), "e1");
    ASSERT(json_is_false(json_object_get(j, "ok")));
    ASSERT_STR_EQ(jstr(j, "error"), "unknown_event");
    ASSERT_STR_EQ(jstr(j, "message"), slot_err_message(SLOT_E_UNKNOWN_EVENT));
    ASSERT_EQ(json_object_size(j), 4);
    ASSERT(strncmp(buf, "{\"id\":\"e1\",\"ok\":false,", 21) == 0);
    json_decref(j);
    slot_res_error(&res, SLOT_E_INVALID_ARGUMENT, "qty: above max_per_request %d", 4);
    j = roundtrip(&req, &res, buf, sizeof(buf));
    ASSERT_STR_EQ(jstr(j, "message"), "qty: above max_per_request 4");
    json_decref(j);
    /* hold_not_active carries the hold's status. */
    req_for(&req, SLOT_OP_CONFIRM, NULL);
    slot_res_error(&res, SLOT_E_HOLD_NOT_ACTIVE, NULL);
    res.hold_status = SLOT_HOLD_EXPIRED;
    j = roundtrip(&req, &res, buf, sizeof(buf));
    ASSERT_STR_EQ(jstr(j, "error"), "hold_not_active");
    ASSERT_STR_EQ(jstr(j, "status"), "expired");
    ASSERT(json_object_get(j, "id") == NULL);
    json_decref(j);
    slot_res_clear(&res);
}

TEST_IMPL(proto_encode_error_standalone)
{
    char buf[512];
    size_t n = slot_proto_encode_error(NULL, SLOT_E_BAD_JSON, NULL, buf, sizeof(buf));
    ASSERT_EQ(n, strlen(buf));
    ASSERT_STR_EQ(buf, "{\"ok\":false,\"error\":\"bad_json\",\"message\":\"the line is not one valid JSON object\"}\n");
    slot_id id = {.kind = SLOT_ID_INT, .i = -3};
    n = slot_proto_encode_error(&id, SLOT_E_OVERLOADED, "queue full", buf, sizeof(buf));
    ASSERT_STR_EQ(buf, "{\"id\":-3,\"ok\":false,\"error\":\"overloaded\",\"message\":\"queue full\"}\n");
    slot_id none = {0};
    slot_proto_encode_error(&none, SLOT_E_LINE_TOO_LONG, NULL, buf, sizeof(buf));
    ASSERT(strncmp(buf, "{\"ok\":false,\"error\":\"line_too_long\"", 35) == 0);
    /* OK is no wire error: the closed set holds. */
    slot_proto_encode_error(NULL, SLOT_E_OK, NULL, buf, sizeof(buf));
    ASSERT(strstr(buf, "\"error\":\"internal\"") != NULL);
}

TEST_IMPL(proto_encode_escaping)
{
    char buf[2048];
    slot_req req;
    slot_res res = {0};
    const char *user = "q\"b\\s/\x01\x1f\x7f\t\n\xc3\xa9\xf0\x9f\x98\x80";
    const char *id = "i\"d\\\x02";
    req_for(&req, SLOT_OP_GET_HOLD, id);
    strcpy(res.user, user);
    strcpy(res.hold, "h");
    json_t *j = roundtrip(&req, &res, buf, sizeof(buf));
    ASSERT_STR_EQ(jstr(j, "user"), user);
    ASSERT_STR_EQ(jstr(j, "id"), id);
    json_decref(j);
    /* The exact escapes: RFC 8259 short forms for quote and backslash, \u00XX for controls. */
    ASSERT(strstr(buf, "\"id\":\"i\\\"d\\\\\\u0002\"") != NULL);
    ASSERT(strstr(buf, "q\\\"b\\\\s/\\u0001\\u001f\x7f\\u0009\\u000a\xc3\xa9\xf0\x9f\x98\x80") != NULL);
    /* A parsed id echoes unchanged. */
    slot_req parsed;
    ASSERT_EQ(parse("{\"id\":\"a\\\"b\\\\c\\u0001\\u00e9\",\"op\":\"expire\"}", &parsed), SLOT_E_OK);
    memset(&res, 0, sizeof(res));
    j = roundtrip(&parsed, &res, buf, sizeof(buf));
    ASSERT_STR_EQ(jstr(j, "id"), "a\"b\\c\x01\xc3\xa9");
    json_decref(j);
}

TEST_IMPL(proto_encode_invalid_utf8_replaced)
{
    char buf[1024];
    slot_req req;
    slot_res res = {0};
    req_for(&req, SLOT_OP_HOLD, NULL);
    /* A message cut mid-character, a stray byte, an overlong, an encoded surrogate. */
    slot_res_error(&res, SLOT_E_INVALID_ARGUMENT, "a\xc3|b\xff|c\xc0\xaf|d\xed\xa0\x80|e\xe2\x82");
    json_t *j = roundtrip(&req, &res, buf, sizeof(buf));
#define FFFD "\xef\xbf\xbd" /* U+FFFD, once per ill-formed byte */
    ASSERT_STR_EQ(jstr(j, "message"), "a" FFFD "|b" FFFD "|c" FFFD FFFD "|d" FFFD FFFD FFFD "|e" FFFD FFFD);
#undef FFFD
    ASSERT(strstr(buf, "\\ufffd") != NULL); /* escaped, so the reply itself is ASCII here */
    json_decref(j);
}

TEST_IMPL(proto_encode_small_buffer)
{
    static char full[4096];
    char buf[4096];
    slot_req req;
    slot_res res = {0};
    req_for(&req, SLOT_OP_GET_HOLD, "small");
    strcpy(res.hold, "HOLD");
    strcpy(res.user, "\"u\"");
    size_t n = slot_proto_encode(&req, &res, full, sizeof(full));
    ASSERT_EQ(n, strlen(full));
    ASSERT_EQ(slot_proto_encode(&req, &res, NULL, 0), n);
    for (size_t cap = 0; cap <= n + 1; cap++) {
        memset(buf, '#', sizeof(buf));
        size_t m = slot_proto_encode(&req, &res, buf, cap);
        ASSERT_EQ(m, n);
        for (size_t k = cap; k < sizeof(buf); k++)
            if (buf[k] != '#')
                T_FAIL_("cap %zu: byte %zu written", cap, k);
        if (cap > n)
            ASSERT_STR_EQ(buf, full); /* fits exactly with its NUL at cap n+1 */
    }
    /* The retry rule of proto.h: a buffer of the returned size + 1 suffices. */
    char *big = malloc(n + 1);
    ASSERT_EQ(slot_proto_encode(&req, &res, big, n + 1), n);
    ASSERT_STR_EQ(big, full);
    free(big);
    ASSERT_EQ(slot_proto_encode_error(NULL, SLOT_E_INTERNAL, NULL, buf, 5),
              slot_proto_encode_error(NULL, SLOT_E_INTERNAL, NULL, NULL, 0));
}

TEST_IMPL(proto_parse_then_encode)
{
    char buf[1024];
    slot_req req;
    slot_res res = {0};
    ASSERT_EQ(
        parse("{\"id\":12345678901234,\"op\":\"hold\",\"event\":\"e\",\"user\":\"u\",\"request\":\"r\",\"qty\":1}",
              &req),
        SLOT_E_OK);
    res.sold_out = true;
    json_t *j = roundtrip(&req, &res, buf, sizeof(buf));
    ASSERT_EQ(jint(j, "id"), INT64_C(12345678901234));
    json_decref(j);
    /* A parse error echoes the id it kept. */
    slot_req bad;
    slot_err e = parse("{\"id\":\"x-1\",\"op\":\"hold\",\"event\":\"e\",\"user\":\"u\",\"request\":\"r\",\"qty\":1.0}",
                       &bad);
    ASSERT_EQ(e, SLOT_E_INVALID_ARGUMENT);
    size_t n = slot_proto_encode_error(&bad.id, e, last_msg, buf, sizeof(buf));
    ASSERT_LT(n, sizeof(buf));
    ASSERT_STR_EQ(buf, "{\"id\":\"x-1\",\"ok\":false,\"error\":\"invalid_argument\","
                       "\"message\":\"qty: must be an integer in 1..1000\"}\n");
}

TEST_IMPL(proto_v11_encode_replies)
{
    char buf[1024];
    slot_req req;
    slot_res res = {0};
    /* hello lists the v1.1 features. */
    req_for(&req, SLOT_OP_HELLO, NULL);
    res.role = SLOT_ROLE_ADMIN;
    json_t *j = roundtrip(&req, &res, buf, sizeof(buf));
    json_t *f = json_object_get(j, "features");
    ASSERT(json_is_array(f));
    ASSERT_EQ(json_array_size(f), 12u);
    ASSERT_STR_EQ(json_string_value(json_array_get(f, 0)), "windows");
    ASSERT_STR_EQ(json_string_value(json_array_get(f, 3)), "reacquire");
    ASSERT_STR_EQ(json_string_value(json_array_get(f, 4)), "hold_many");
    ASSERT_STR_EQ(json_string_value(json_array_get(f, 5)), "waitlist");
    ASSERT_STR_EQ(json_string_value(json_array_get(f, 6)), "feed");
    ASSERT_STR_EQ(json_string_value(json_array_get(f, 7)), "types"); /* v1.2 */
    ASSERT_STR_EQ(json_string_value(json_array_get(f, 8)), "allocations");
    ASSERT_STR_EQ(json_string_value(json_array_get(f, 9)), "admission");
    ASSERT_STR_EQ(json_string_value(json_array_get(f, 10)), "client_limits");
    ASSERT_STR_EQ(json_string_value(json_array_get(f, 11)), "seats");
    json_decref(j);
    /* A replica-set member's hello: one "features", with "cluster" last, and the server facts. */
    res.cluster = true;
    res.version = "9.9";
    j = roundtrip(&req, &res, buf, sizeof(buf)); /* duplicate keys are refused */
    f = json_object_get(j, "features");
    ASSERT_EQ(json_array_size(f), 13u);
    ASSERT_STR_EQ(json_string_value(json_array_get(f, 12)), "cluster");
    ASSERT_STR_EQ(jstr(j, "version"), "9.9");
    json_decref(j);
    slot_res_clear(&res);
    /* rate_limited carries limit and retry_after_ms (docs/protocol.md, "Client limits"). */
    req_for(&req, SLOT_OP_HOLD, "p");
    slot_res_error(&res, SLOT_E_RATE_LIMITED, NULL);
    res.limit = "client_rate";
    res.retry_after_ms = 250;
    j = roundtrip(&req, &res, buf, sizeof(buf));
    ASSERT_STR_EQ(jstr(j, "error"), "rate_limited");
    ASSERT_STR_EQ(jstr(j, "limit"), "client_rate");
    ASSERT_EQ(json_integer_value(json_object_get(j, "retry_after_ms")), 250);
    json_decref(j);
    slot_res_clear(&res);
    /* not_primary names the primary when the server knows it; without it, the plain error shape. */
    req_for(&req, SLOT_OP_HOLD, "p");
    slot_res_error(&res, SLOT_E_NOT_PRIMARY, NULL);
    snprintf(res.primary, sizeof res.primary, "127.0.0.1:7420");
    j = roundtrip(&req, &res, buf, sizeof(buf));
    ASSERT_STR_EQ(jstr(j, "error"), "not_primary");
    ASSERT_STR_EQ(jstr(j, "primary"), "127.0.0.1:7420");
    json_decref(j);
    slot_res_clear(&res);
    slot_res_error(&res, SLOT_E_NOT_PRIMARY, NULL);
    j = roundtrip(&req, &res, buf, sizeof(buf));
    ASSERT(json_object_get(j, "primary") == NULL);
    json_decref(j);
    /* not_on_sale carries both times. */
    req_for(&req, SLOT_OP_HOLD, "w");
    memset(&res, 0, sizeof(res));
    slot_res_error(&res, SLOT_E_NOT_ON_SALE, NULL);
    res.opens_at_ms = 1764500000000;
    j = roundtrip(&req, &res, buf, sizeof(buf));
    ASSERT_STR_EQ(jstr(j, "error"), "not_on_sale");
    ASSERT_EQ(jint(j, "opens_at"), 1764500000000);
    ASSERT_EQ(jint(j, "closes_at"), 0);
    json_decref(j);
    /* A reacquire's confirm: the new hold, qty, returned and replaces. */
    req_for(&req, SLOT_OP_CONFIRM, NULL);
    memset(&res, 0, sizeof(res));
    res.hold_status = SLOT_HOLD_CONFIRMED;
    strcpy(res.hold, "00000000000000020000000000000002");
    strcpy(res.replaces, "00000000000000010000000000000001");
    res.qty = 2;
    j = roundtrip(&req, &res, buf, sizeof(buf));
    ASSERT_STR_EQ(jstr(j, "status"), "confirmed");
    ASSERT_STR_EQ(jstr(j, "replaces"), "00000000000000010000000000000001");
    ASSERT_EQ(jint(j, "qty"), 2);
    ASSERT_EQ(jint(j, "returned"), 0);
    json_decref(j);
    /* extend */
    req_for(&req, SLOT_OP_EXTEND, NULL);
    memset(&res, 0, sizeof(res));
    res.hold_status = SLOT_HOLD_HELD;
    strcpy(res.hold, "00000000000000020000000000000002");
    res.expires_at_ms = 5;
    res.extensions = 1;
    j = roundtrip(&req, &res, buf, sizeof(buf));
    ASSERT_STR_EQ(jstr(j, "status"), "held");
    ASSERT_EQ(jint(j, "expires_at"), 5);
    ASSERT_EQ(jint(j, "extensions"), 1);
    json_decref(j);
    /* get_hold shows returned and the links. */
    req_for(&req, SLOT_OP_GET_HOLD, NULL);
    memset(&res, 0, sizeof(res));
    res.hold_status = SLOT_HOLD_EXPIRED;
    strcpy(res.replaced_by, "00000000000000030000000000000003");
    j = roundtrip(&req, &res, buf, sizeof(buf));
    ASSERT_STR_EQ(jstr(j, "replaced_by"), "00000000000000030000000000000003");
    ASSERT_EQ(jint(j, "returned"), 0);
    ASSERT(json_object_get(j, "replaces") == NULL);
    json_decref(j);
}
