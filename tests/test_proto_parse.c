/*
 * test_proto_parse.c — the request parser (proto.h) against docs/protocol.md:
 * every class of bad input, the id rules, each op's fields, names and numbers,
 * v1.1's settings and backup's path. Encoded replies: test_proto_enc.c.
 */
#include <errno.h>
#include <jansson.h>

#include "harness.h"
#include "proto_util.h"
#include "slot/client.h"
#include "slot/proto.h"

TEST_DECLARE(proto_bad_json_syntax)
TEST_DECLARE(proto_bad_json_duplicate_keys)
TEST_DECLARE(proto_bad_json_invalid_utf8)
TEST_DECLARE(proto_bad_json_nul_escape)
TEST_DECLARE(proto_bad_json_lone_surrogate)
TEST_DECLARE(proto_bad_json_nan_infinity)
TEST_DECLARE(proto_bad_json_depth)
TEST_DECLARE(proto_bad_json_top_level)
TEST_DECLARE(proto_bad_json_spaces_only)
TEST_DECLARE(proto_int_not_integers)
TEST_DECLARE(proto_int_ranges)
TEST_DECLARE(proto_int_overflow_is_invalid_argument_without_id)
TEST_DECLARE(proto_int_minus_zero_is_zero)
TEST_DECLARE(proto_int_bounds_of_each_field)
TEST_DECLARE(proto_id_string)
TEST_DECLARE(proto_id_integer)
TEST_DECLARE(proto_id_other_types_not_echoed)
TEST_DECLARE(proto_id_checked_before_op_and_echoed_after)
TEST_DECLARE(proto_op_missing_or_unknown)
TEST_DECLARE(proto_every_op_parses)
TEST_DECLARE(proto_every_required_field)
TEST_DECLARE(proto_hold_fields_filled)
TEST_DECLARE(proto_create_event_defaults_and_has_bits)
TEST_DECLARE(proto_set_status_values)
TEST_DECLARE(proto_cluster_change_fields)
TEST_DECLARE(proto_hello_token)
TEST_DECLARE(proto_hold_argument)
TEST_DECLARE(proto_check_optional_event)
TEST_DECLARE(proto_unknown_and_unused_fields_ignored)
TEST_DECLARE(proto_event_and_request_names)
TEST_DECLARE(proto_user_names)
TEST_DECLARE(proto_non_terminated_input)
TEST_DECLARE(proto_tiny_message_buffer)
TEST_DECLARE(proto_parse_at_moves_byte_positions)
TEST_DECLARE(proto_v11_windows_parse)
TEST_DECLARE(proto_v11_create_event_settings)
TEST_DECLARE(proto_v11_confirm_qty_and_reacquire)
TEST_DECLARE(proto_v11_extend_by_ms)
TEST_DECLARE(proto_backup_path)

TEST_LIST_START
TEST_ENTRY(proto_bad_json_syntax)
TEST_ENTRY(proto_bad_json_duplicate_keys)
TEST_ENTRY(proto_bad_json_invalid_utf8)
TEST_ENTRY(proto_bad_json_nul_escape)
TEST_ENTRY(proto_bad_json_lone_surrogate)
TEST_ENTRY(proto_bad_json_nan_infinity)
TEST_ENTRY(proto_bad_json_depth)
TEST_ENTRY(proto_bad_json_top_level)
TEST_ENTRY(proto_bad_json_spaces_only)
TEST_ENTRY(proto_int_not_integers)
TEST_ENTRY(proto_int_ranges)
TEST_ENTRY(proto_int_overflow_is_invalid_argument_without_id)
TEST_ENTRY(proto_int_minus_zero_is_zero)
TEST_ENTRY(proto_int_bounds_of_each_field)
TEST_ENTRY(proto_id_string)
TEST_ENTRY(proto_id_integer)
TEST_ENTRY(proto_id_other_types_not_echoed)
TEST_ENTRY(proto_id_checked_before_op_and_echoed_after)
TEST_ENTRY(proto_op_missing_or_unknown)
TEST_ENTRY(proto_every_op_parses)
TEST_ENTRY(proto_every_required_field)
TEST_ENTRY(proto_hold_fields_filled)
TEST_ENTRY(proto_create_event_defaults_and_has_bits)
TEST_ENTRY(proto_set_status_values)
TEST_ENTRY(proto_cluster_change_fields)
TEST_ENTRY(proto_hello_token)
TEST_ENTRY(proto_hold_argument)
TEST_ENTRY(proto_check_optional_event)
TEST_ENTRY(proto_unknown_and_unused_fields_ignored)
TEST_ENTRY(proto_event_and_request_names)
TEST_ENTRY(proto_user_names)
TEST_ENTRY(proto_non_terminated_input)
TEST_ENTRY(proto_tiny_message_buffer)
TEST_ENTRY(proto_parse_at_moves_byte_positions)
TEST_ENTRY(proto_v11_windows_parse)
TEST_ENTRY(proto_v11_create_event_settings)
TEST_ENTRY(proto_v11_confirm_qty_and_reacquire)
TEST_ENTRY(proto_v11_extend_by_ms)
TEST_ENTRY(proto_backup_path)
TEST_LIST_END

/* ------------------------------------------------------------------------ */
/* bad_json                                                                  */
/* ------------------------------------------------------------------------ */

TEST_IMPL(proto_bad_json_syntax)
{
    EXPECT("{", SLOT_E_BAD_JSON);
    EXPECT("{\"op\":\"stats\"", SLOT_E_BAD_JSON);
    EXPECT("{\"op\":\"stats\"} x", SLOT_E_BAD_JSON);
    EXPECT("{\"op\":\"stats\",}", SLOT_E_BAD_JSON);
    EXPECT("{\"op\":tru}", SLOT_E_BAD_JSON);
    EXPECT("{op:\"stats\"}", SLOT_E_BAD_JSON);
    EXPECT("{'op':'stats'}", SLOT_E_BAD_JSON);
    EXPECT("{\"op\":\"stats\",\"a\":01}", SLOT_E_BAD_JSON);
    EXPECT("\xef\xbb\xbf{\"op\":\"stats\"}", SLOT_E_BAD_JSON); /* a BOM is not JSON */
    EXPECT("{\"op\":\"st\x01\"}", SLOT_E_BAD_JSON);            /* raw control char in a string */
    /* A raw NUL byte inside the line, and one after the object. */
    slot_req r;
    ASSERT_EQ(parse_n("{\"op\":\"st\0ats\"}", 15, &r), SLOT_E_BAD_JSON);
    ASSERT_EQ(parse_n("{\"op\":\"stats\"}\0", 15, &r), SLOT_E_BAD_JSON);
    /* Control: the same object is fine. */
    EXPECT("{\"op\":\"stats\"}", SLOT_E_OK);
    EXPECT("  {\"op\" : \"stats\" }\t", SLOT_E_OK);
}

TEST_IMPL(proto_bad_json_duplicate_keys)
{
    EXPECT("{\"op\":\"stats\",\"op\":\"stats\"}", SLOT_E_BAD_JSON);
    EXPECT("{\"op\":\"stats\",\"x\":1,\"x\":1}", SLOT_E_BAD_JSON);
    EXPECT("{\"op\":\"stats\",\"x\":{\"a\":1,\"a\":2}}", SLOT_E_BAD_JSON);
    EXPECT("{\"id\":1,\"id\":1,\"op\":\"stats\"}", SLOT_E_BAD_JSON);
    /* The same key in two different objects is not a duplicate. */
    EXPECT("{\"op\":\"stats\",\"x\":{\"op\":1},\"y\":{\"op\":2}}", SLOT_E_OK);
}

TEST_IMPL(proto_bad_json_invalid_utf8)
{
    EXPECT("{\"op\":\"stats\",\"x\":\"\xff\"}", SLOT_E_BAD_JSON);
    EXPECT("{\"op\":\"stats\",\"x\":\"\xc0\xaf\"}", SLOT_E_BAD_JSON);         /* overlong '/' */
    EXPECT("{\"op\":\"stats\",\"x\":\"\xed\xa0\x80\"}", SLOT_E_BAD_JSON);     /* UTF-8 of a surrogate */
    EXPECT("{\"op\":\"stats\",\"x\":\"\xf4\x90\x80\x80\"}", SLOT_E_BAD_JSON); /* above U+10FFFF */
    EXPECT("{\"op\":\"stats\",\"x\":\"\xe2\x82\"}", SLOT_E_BAD_JSON);         /* truncated */
    EXPECT("{\"op\":\"stats\",\"\x80\":1}", SLOT_E_BAD_JSON);                 /* in a key */
    EXPECT("{\"op\":\"hold\",\"event\":\"e\",\"user\":\"\xff\",\"request\":\"r\",\"qty\":1}", SLOT_E_BAD_JSON);
    /* Well-formed multi-byte UTF-8 passes. */
    EXPECT("{\"op\":\"stats\",\"x\":\"\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80\"}", SLOT_E_OK);
}

TEST_IMPL(proto_bad_json_nul_escape)
{
    EXPECT("{\"op\":\"stats\",\"x\":\"a\\u0000b\"}", SLOT_E_BAD_JSON);
    EXPECT("{\"op\":\"stats\",\"a\\u0000b\":1}", SLOT_E_BAD_JSON);
    EXPECT("{\"op\":\"hold\",\"event\":\"e\",\"user\":\"u\\u0000\",\"request\":\"r\",\"qty\":1}", SLOT_E_BAD_JSON);
    EXPECT("{\"id\":\"\\u0000\",\"op\":\"stats\"}", SLOT_E_BAD_JSON);
}

TEST_IMPL(proto_bad_json_lone_surrogate)
{
    EXPECT("{\"op\":\"stats\",\"x\":\"\\ud800\"}", SLOT_E_BAD_JSON);
    EXPECT("{\"op\":\"stats\",\"x\":\"\\udc00\"}", SLOT_E_BAD_JSON);
    EXPECT("{\"op\":\"stats\",\"x\":\"\\ud800\\u0041\"}", SLOT_E_BAD_JSON);
    EXPECT("{\"op\":\"stats\",\"\\udfff\":1}", SLOT_E_BAD_JSON);
    /* A proper pair is one character, U+1F600, four bytes of UTF-8. */
    slot_req r;
    ASSERT_EQ(parse("{\"op\":\"hold\",\"event\":\"e\",\"user\":\"\\ud83d\\ude00\",\"request\":\"r\",\"qty\":1}", &r),
              SLOT_E_OK);
    ASSERT_EQ(r.user_len, 4);
    ASSERT_STR_EQ(r.user, "\xf0\x9f\x98\x80");
}

TEST_IMPL(proto_bad_json_nan_infinity)
{
    EXPECT("{\"op\":\"stats\",\"x\":NaN}", SLOT_E_BAD_JSON);
    EXPECT("{\"op\":\"stats\",\"x\":Infinity}", SLOT_E_BAD_JSON);
    EXPECT("{\"op\":\"stats\",\"x\":-Infinity}", SLOT_E_BAD_JSON);
    EXPECT("{\"op\":\"hold\",\"event\":\"e\",\"user\":\"u\",\"request\":\"r\",\"qty\":NaN}", SLOT_E_BAD_JSON);
}

TEST_IMPL(proto_bad_json_depth)
{
    static char line[20000];
    slot_req r;
    nested(line, sizeof(line), 32, false);
    ASSERT_EQ(parse(line, &r), SLOT_E_OK);
    nested(line, sizeof(line), 33, false);
    ASSERT_EQ(parse(line, &r), SLOT_E_BAD_JSON);
    ASSERT_MSG_HAS("32");
    nested(line, sizeof(line), 32, true);
    ASSERT_EQ(parse(line, &r), SLOT_E_OK);
    nested(line, sizeof(line), 33, true);
    ASSERT_EQ(parse(line, &r), SLOT_E_BAD_JSON);
    /* Past jansson's own limit (2048) as well. */
    nested(line, sizeof(line), 3000, false);
    ASSERT_EQ(parse(line, &r), SLOT_E_BAD_JSON);
    /* A deep branch after a shallow one is still found. */
    EXPECT("{\"op\":\"stats\",\"a\":[],\"b\":[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]}",
           SLOT_E_BAD_JSON);
    EXPECT("{\"op\":\"stats\",\"a\":[],\"b\":[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]}",
           SLOT_E_OK);
}

TEST_IMPL(proto_bad_json_top_level)
{
    EXPECT("[{\"op\":\"stats\"}]", SLOT_E_BAD_JSON);
    EXPECT("[]", SLOT_E_BAD_JSON);
    EXPECT("1", SLOT_E_BAD_JSON);
    EXPECT("\"stats\"", SLOT_E_BAD_JSON);
    EXPECT("true", SLOT_E_BAD_JSON);
    EXPECT("null", SLOT_E_BAD_JSON);
}

TEST_IMPL(proto_bad_json_spaces_only)
{
    EXPECT(" ", SLOT_E_BAD_JSON);
    EXPECT("      ", SLOT_E_BAD_JSON);
    EXPECT("\t", SLOT_E_BAD_JSON);
    slot_req r;
    ASSERT_EQ(parse_n("", 0, &r), SLOT_E_BAD_JSON);
}

/* ------------------------------------------------------------------------ */
/* Integers                                                                  */
/* ------------------------------------------------------------------------ */

TEST_IMPL(proto_int_not_integers)
{
    const char *bad[] = {"1.0", "1e0", "1E0", "0.5", "\"1\"", "true", "false", "null", "[1]", "{}", "-0.0"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        slot_req r;
        if (parse_qty(bad[i], &r) != SLOT_E_INVALID_ARGUMENT)
            T_FAIL_("qty %s accepted", bad[i]);
        ASSERT_STR_EQ(last_msg, "qty: must be an integer in 1..1000");
        ASSERT_EQ(r.id.kind, SLOT_ID_INT); /* later errors echo the id */
        ASSERT_EQ(r.id.i, 7);
    }
    /* Where 0 is in range too (a real must not be read as integer 0). */
    const char *reals[] = {"0.0", "5.0", "1e2", "-0.0", "0e0"};
    for (size_t i = 0; i < sizeof(reals) / sizeof(reals[0]); i++) {
        char line[160];
        slot_req r;
        snprintf(line, sizeof(line), "{\"op\":\"set_capacity\",\"event\":\"e\",\"capacity\":%s}", reals[i]);
        if (parse(line, &r) != SLOT_E_INVALID_ARGUMENT)
            T_FAIL_("capacity %s accepted", reals[i]);
        ASSERT_MSG_HAS("capacity");
        snprintf(line, sizeof(line), "{\"op\":\"create_event\",\"event\":\"e\",\"capacity\":1,\"max_per_user\":%s}",
                 reals[i]);
        if (parse(line, &r) != SLOT_E_INVALID_ARGUMENT)
            T_FAIL_("max_per_user %s accepted", reals[i]);
        ASSERT_MSG_HAS("max_per_user");
    }
}

TEST_IMPL(proto_int_ranges)
{
    const char *bad[] = {"-1", "0", "-0", "1001", "9223372036854775807", "-9223372036854775808"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        slot_req r;
        if (parse_qty(bad[i], &r) != SLOT_E_INVALID_ARGUMENT)
            T_FAIL_("qty %s accepted", bad[i]);
        ASSERT_MSG_HAS("qty");
    }
    slot_req r;
    ASSERT_EQ(parse_qty("1", &r), SLOT_E_OK);
    ASSERT_EQ(r.qty, 1);
    ASSERT_EQ(parse_qty("1000", &r), SLOT_E_OK);
    ASSERT_EQ(r.qty, 1000);
}

TEST_IMPL(proto_int_overflow_is_invalid_argument_without_id)
{
    const char *bad[] = {"18446744073709551615", "9223372036854775808", "-9223372036854775809",
                         "99999999999999999999999999999999", "1e400"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        slot_req r;
        if (parse_qty(bad[i], &r) != SLOT_E_INVALID_ARGUMENT)
            T_FAIL_("qty %s: %s", bad[i], last_msg);
        ASSERT_EQ(r.id.kind, SLOT_ID_NONE); /* the line could not be parsed: no id */
    }
    /* Anywhere in the request, used or not, even in a nested array. */
    EXPECT("{\"op\":\"stats\",\"junk\":[1,2,18446744073709551616]}", SLOT_E_INVALID_ARGUMENT);
    EXPECT("{\"id\":18446744073709551616,\"op\":\"stats\"}", SLOT_E_INVALID_ARGUMENT);
    /* But a line that is also not one valid JSON object stays bad_json. */
    EXPECT("{\"op\":\"stats\",\"x\":18446744073709551616,\"x\":1}", SLOT_E_BAD_JSON);
    EXPECT("{\"op\":\"stats\",\"x\":18446744073709551616,}", SLOT_E_BAD_JSON);
    EXPECT("{\"op\":\"stats\",\"x\":18446744073709551616", SLOT_E_BAD_JSON);
    EXPECT("[18446744073709551616]", SLOT_E_BAD_JSON);
    EXPECT("{\"x\":18446744073709551616,\"y\":[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]}",
           SLOT_E_BAD_JSON);
}

TEST_IMPL(proto_int_minus_zero_is_zero)
{
    slot_req r;
    ASSERT_EQ(parse("{\"op\":\"set_capacity\",\"event\":\"e\",\"capacity\":-0}", &r), SLOT_E_OK);
    ASSERT_EQ(r.capacity, 0);
    ASSERT_EQ(parse("{\"op\":\"stats\",\"id\":-0}", &r), SLOT_E_OK);
    ASSERT_EQ(r.id.kind, SLOT_ID_INT);
    ASSERT_EQ(r.id.i, 0);
}

TEST_IMPL(proto_int_bounds_of_each_field)
{
    struct {
        const char *fmt;
        const char *value;
        slot_err want;
    } cases[] = {
        {"{\"op\":\"set_capacity\",\"event\":\"e\",\"capacity\":%s}", "1099511627776", SLOT_E_OK},
        {"{\"op\":\"set_capacity\",\"event\":\"e\",\"capacity\":%s}", "1099511627777", SLOT_E_INVALID_ARGUMENT},
        {"{\"op\":\"set_capacity\",\"event\":\"e\",\"capacity\":%s}", "-1", SLOT_E_INVALID_ARGUMENT},
        {"{\"op\":\"reshard\",\"event\":\"e\",\"shards\":%s}", "0", SLOT_E_INVALID_ARGUMENT},
        {"{\"op\":\"reshard\",\"event\":\"e\",\"shards\":%s}", "1", SLOT_E_OK},
        {"{\"op\":\"reshard\",\"event\":\"e\",\"shards\":%s}", "1024", SLOT_E_OK},
        {"{\"op\":\"reshard\",\"event\":\"e\",\"shards\":%s}", "1025", SLOT_E_INVALID_ARGUMENT},
        {"{\"op\":\"create_event\",\"event\":\"e\",\"capacity\":1,\"hold_ttl_ms\":%s}", "999", SLOT_E_INVALID_ARGUMENT},
        {"{\"op\":\"create_event\",\"event\":\"e\",\"capacity\":1,\"hold_ttl_ms\":%s}", "1000", SLOT_E_OK},
        {"{\"op\":\"create_event\",\"event\":\"e\",\"capacity\":1,\"hold_ttl_ms\":%s}", "86400000", SLOT_E_OK},
        {"{\"op\":\"create_event\",\"event\":\"e\",\"capacity\":1,\"hold_ttl_ms\":%s}", "86400001",
         SLOT_E_INVALID_ARGUMENT},
        {"{\"op\":\"create_event\",\"event\":\"e\",\"capacity\":1,\"max_per_request\":%s}", "0",
         SLOT_E_INVALID_ARGUMENT},
        {"{\"op\":\"create_event\",\"event\":\"e\",\"capacity\":1,\"max_per_request\":%s}", "1000", SLOT_E_OK},
        {"{\"op\":\"create_event\",\"event\":\"e\",\"capacity\":1,\"max_per_request\":%s}", "1001",
         SLOT_E_INVALID_ARGUMENT},
        {"{\"op\":\"create_event\",\"event\":\"e\",\"capacity\":1,\"max_per_user\":%s}", "0", SLOT_E_OK},
        {"{\"op\":\"create_event\",\"event\":\"e\",\"capacity\":1,\"max_per_user\":%s}", "1099511627776", SLOT_E_OK},
        {"{\"op\":\"create_event\",\"event\":\"e\",\"capacity\":1,\"max_per_user\":%s}", "1099511627777",
         SLOT_E_INVALID_ARGUMENT},
        {"{\"op\":\"create_event\",\"event\":\"e\",\"capacity\":1,\"max_per_user\":%s}", "-1", SLOT_E_INVALID_ARGUMENT},
        {"{\"op\":\"create_event\",\"event\":\"e\",\"capacity\":1,\"shards\":%s}", "\"4\"", SLOT_E_INVALID_ARGUMENT},
        {"{\"op\":\"create_event\",\"event\":\"e\",\"capacity\":1,\"shards\":%s}", "null", SLOT_E_INVALID_ARGUMENT},
        {"{\"op\":\"create_event\",\"event\":\"e\",\"capacity\":1,\"shards\":%s}", "4.0", SLOT_E_INVALID_ARGUMENT},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char line[256];
        slot_req r;
        snprintf(line, sizeof(line), cases[i].fmt, cases[i].value);
        slot_err e = parse(line, &r);
        if (e != cases[i].want)
            T_FAIL_("%s = %s, want %s (%s)", line, slot_err_name(e), slot_err_name(cases[i].want), last_msg);
    }
    slot_req r;
    ASSERT_EQ(parse("{\"op\":\"set_capacity\",\"event\":\"e\",\"capacity\":1099511627776}", &r), SLOT_E_OK);
    ASSERT_EQ(r.capacity, UINT64_C(1) << 40);
    ASSERT_EQ(parse("{\"op\":\"reshard\",\"event\":\"e\",\"shards\":1025}", &r), SLOT_E_INVALID_ARGUMENT);
    ASSERT_STR_EQ(last_msg, "shards: must be an integer in 1..1024");
}

/* ------------------------------------------------------------------------ */
/* id                                                                        */
/* ------------------------------------------------------------------------ */

TEST_IMPL(proto_id_string)
{
    char line[1024];
    slot_req r;
    snprintf(line, sizeof(line), "{\"id\":\"%s\",\"op\":\"stats\"}", rep('i', 64));
    ASSERT_EQ(parse(line, &r), SLOT_E_OK);
    ASSERT_EQ(r.id.kind, SLOT_ID_STR);
    ASSERT_EQ(r.id.len, 64);
    ASSERT_STR_EQ(r.id.s, rep('i', 64));
    snprintf(line, sizeof(line), "{\"id\":\"%s\",\"op\":\"stats\"}", rep('i', 65));
    ASSERT_EQ(parse(line, &r), SLOT_E_INVALID_ARGUMENT);
    ASSERT_EQ(r.id.kind, SLOT_ID_NONE);
    ASSERT_MSG_HAS("id");
    ASSERT_EQ(parse("{\"id\":\"\",\"op\":\"stats\"}", &r), SLOT_E_OK);
    ASSERT_EQ(r.id.kind, SLOT_ID_STR);
    ASSERT_EQ(r.id.len, 0);
    /* 64 bytes, not 64 characters: 32 two-byte characters fit, 33 do not. */
    char id[200] = "";
    for (int i = 0; i < 33; i++)
        strcat(id, "\xc3\xa9");
    snprintf(line, sizeof(line), "{\"id\":\"%s\",\"op\":\"stats\"}", id);
    ASSERT_EQ(parse(line, &r), SLOT_E_INVALID_ARGUMENT);
    id[64] = 0;
    snprintf(line, sizeof(line), "{\"id\":\"%s\",\"op\":\"stats\"}", id);
    ASSERT_EQ(parse(line, &r), SLOT_E_OK);
    ASSERT_EQ(r.id.len, 64);
}

TEST_IMPL(proto_id_integer)
{
    slot_req r;
    ASSERT_EQ(parse("{\"id\":42,\"op\":\"stats\"}", &r), SLOT_E_OK);
    ASSERT_EQ(r.id.kind, SLOT_ID_INT);
    ASSERT_EQ(r.id.i, 42);
    ASSERT_EQ(parse("{\"id\":9223372036854775807,\"op\":\"stats\"}", &r), SLOT_E_OK);
    ASSERT(r.id.i == INT64_MAX);
    ASSERT_EQ(parse("{\"id\":-9223372036854775808,\"op\":\"stats\"}", &r), SLOT_E_OK);
    ASSERT(r.id.i == INT64_MIN);
}

TEST_IMPL(proto_id_other_types_not_echoed)
{
    const char *bad[] = {"1.5", "1.0", "1e2", "true", "null", "[1]", "{}", "{\"a\":1}"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        char line[128];
        slot_req r;
        snprintf(line, sizeof(line), "{\"id\":%s,\"op\":\"stats\"}", bad[i]);
        if (parse(line, &r) != SLOT_E_INVALID_ARGUMENT)
            T_FAIL_("id %s accepted", bad[i]);
        ASSERT_EQ(r.id.kind, SLOT_ID_NONE);
    }
}

TEST_IMPL(proto_id_checked_before_op_and_echoed_after)
{
    slot_req r;
    /* A bad id wins over a missing op. */
    ASSERT_EQ(parse("{\"id\":1.5}", &r), SLOT_E_INVALID_ARGUMENT);
    ASSERT_EQ(parse("{\"id\":1.5,\"op\":\"nope\"}", &r), SLOT_E_INVALID_ARGUMENT);
    /* A good id is kept for the op and field errors that follow. */
    ASSERT_EQ(parse("{\"id\":\"x\",\"op\":\"nope\"}", &r), SLOT_E_UNKNOWN_OP);
    ASSERT_EQ(r.id.kind, SLOT_ID_STR);
    ASSERT_STR_EQ(r.id.s, "x");
    ASSERT_EQ(parse("{\"id\":-5,\"op\":\"hold\"}", &r), SLOT_E_INVALID_ARGUMENT);
    ASSERT_EQ(r.id.kind, SLOT_ID_INT);
    ASSERT_EQ(r.id.i, -5);
    /* bad_json comes before everything: no id. */
    ASSERT_EQ(parse("{\"id\":3,\"op\":\"stats\",\"op\":\"stats\"}", &r), SLOT_E_BAD_JSON);
    ASSERT_EQ(r.id.kind, SLOT_ID_NONE);
}

/* ------------------------------------------------------------------------ */
/* op and fields                                                             */
/* ------------------------------------------------------------------------ */

TEST_IMPL(proto_op_missing_or_unknown)
{
    EXPECT("{}", SLOT_E_UNKNOWN_OP);
    EXPECT("{\"id\":1}", SLOT_E_UNKNOWN_OP);
    EXPECT("{\"op\":1}", SLOT_E_UNKNOWN_OP);
    EXPECT("{\"op\":null}", SLOT_E_UNKNOWN_OP);
    EXPECT("{\"op\":[\"hold\"]}", SLOT_E_UNKNOWN_OP);
    EXPECT("{\"op\":\"\"}", SLOT_E_UNKNOWN_OP);
    EXPECT("{\"op\":\"HOLD\"}", SLOT_E_UNKNOWN_OP);
    EXPECT("{\"op\":\"hold \"}", SLOT_E_UNKNOWN_OP);
    EXPECT("{\"op\":\"frobnicate\"}", SLOT_E_UNKNOWN_OP);
    /* op comes before fields: an unknown op with bad fields is unknown_op. */
    EXPECT("{\"op\":\"nope\",\"qty\":\"x\"}", SLOT_E_UNKNOWN_OP);
}

/* One valid request per op, its fields as "key":value fragments; the first nreq are required. */
typedef struct op_case {
    const char *op;
    slot_op want;
    int nreq;
    const char *frag[6];
} op_case;

static const op_case op_cases[] = {
    {"hello", SLOT_OP_HELLO, 0, {"\"token\":\"t\""}},
    {"hold", SLOT_OP_HOLD, 4, {"\"event\":\"e\"", "\"user\":\"u\"", "\"request\":\"r\"", "\"qty\":2"}},
    {"confirm",
     SLOT_OP_CONFIRM,
     3,
     {"\"event\":\"e\"", "\"hold\":\"h\"", "\"user\":\"u\"", "\"qty\":2", "\"reacquire\":true"}},
    {"extend", SLOT_OP_EXTEND, 4, {"\"event\":\"e\"", "\"hold\":\"h\"", "\"user\":\"u\"", "\"by_ms\":60000"}},
    {"release", SLOT_OP_RELEASE, 3, {"\"event\":\"e\"", "\"hold\":\"h\"", "\"user\":\"u\""}},
    {"get_hold",
     SLOT_OP_GET_HOLD,
     2,
     {"\"event\":\"e\"", "\"hold\":\"h\"", "\"user\":\"u\""}}, /* user: worker, admin may leave it out */
    {"event", SLOT_OP_EVENT, 1, {"\"event\":\"e\""}},
    {"create_event",
     SLOT_OP_CREATE_EVENT,
     2,
     {"\"event\":\"e\"", "\"capacity\":100", "\"shards\":4", "\"hold_ttl_ms\":5000", "\"max_per_user\":3",
      "\"max_per_request\":2"}},
    {"set_capacity", SLOT_OP_SET_CAPACITY, 2, {"\"event\":\"e\"", "\"capacity\":100"}},
    {"reshard", SLOT_OP_RESHARD, 2, {"\"event\":\"e\"", "\"shards\":4"}},
    {"set_status", SLOT_OP_SET_STATUS, 2, {"\"event\":\"e\"", "\"status\":\"closed\""}},
    {"set_sale_window", SLOT_OP_SET_SALE_WINDOW, 3, {"\"event\":\"e\"", "\"opens_at\":0", "\"closes_at\":0"}},
    {"cancel", SLOT_OP_CANCEL, 2, {"\"event\":\"e\"", "\"hold\":\"h\""}},
    {"shards", SLOT_OP_SHARDS, 1, {"\"event\":\"e\""}},
    {"check", SLOT_OP_CHECK, 0, {"\"event\":\"e\""}},
    {"expire", SLOT_OP_EXPIRE, 0, {NULL}},
    {"stats", SLOT_OP_STATS, 0, {NULL}},
    {"digest", SLOT_OP_DIGEST, 0, {NULL}},
    {"hold_many",
     SLOT_OP_HOLD_MANY,
     3,
     {"\"user\":\"u\"", "\"request\":\"r\"", "\"items\":[{\"event\":\"a\",\"qty\":1},{\"event\":\"b\",\"qty\":2}]"}},
    {"waitlist_join",
     SLOT_OP_WAITLIST_JOIN,
     4,
     {"\"event\":\"e\"", "\"user\":\"u\"", "\"request\":\"r\"", "\"qty\":2"}},
    {"waitlist_leave", SLOT_OP_WAITLIST_LEAVE, 3, {"\"event\":\"e\"", "\"user\":\"u\"", "\"request\":\"r\""}},
    {"waitlist", SLOT_OP_WAITLIST, 3, {"\"event\":\"e\"", "\"user\":\"u\"", "\"request\":\"r\""}},
    {"waitlist_entries", SLOT_OP_WAITLIST_ENTRIES, 1, {"\"event\":\"e\"", "\"limit\":5"}},
    {"subscribe", SLOT_OP_SUBSCRIBE, 1, {"\"consumer\":\"mail\"", "\"from\":\"start\"", "\"window\":10"}},
    {"ack", SLOT_OP_ACK, 2, {"\"consumer\":\"mail\"", "\"seq\":3"}},
    {"unsubscribe", SLOT_OP_UNSUBSCRIBE, 0, {NULL}},
    {"feed_consumers", SLOT_OP_FEED_CONSUMERS, 0, {NULL}},
    {"feed_forget", SLOT_OP_FEED_FORGET, 1, {"\"consumer\":\"mail\""}},
    {"cluster", SLOT_OP_CLUSTER, 0, {NULL}},
    {"metrics", SLOT_OP_METRICS, 0, {NULL}},
    {"backup", SLOT_OP_BACKUP, 1, {"\"path\":\"/tmp/b.bak\""}},
    {"cluster_change", SLOT_OP_CLUSTER_CHANGE, 2, {"\"change\":\"promote\"", "\"node\":\"n2\""}},
    {"allocate",
     SLOT_OP_ALLOCATE,
     3,
     {"\"event\":\"e\"", "\"allocation\":\"fans\"", "\"qty\":1000", "\"max_per_user\":2"}},
    {"deallocate", SLOT_OP_DEALLOCATE, 2, {"\"event\":\"e\"", "\"allocation\":\"fans\"", "\"qty\":10"}},
    {"join", SLOT_OP_JOIN, 3, {"\"event\":\"e\"", "\"user\":\"u\"", "\"request\":\"r\""}},
    {"admission", SLOT_OP_ADMISSION, 2, {"\"event\":\"e\"", "\"ticket\":\"t\""}},
    {"set_admission",
     SLOT_OP_SET_ADMISSION,
     1,
     {"\"event\":\"e\"", "\"admission\":\"queue\"", "\"admit_per_s\":50", "\"grant_ttl_ms\":1000"}},
    {"seat_map", SLOT_OP_SEAT_MAP, 1, {"\"event\":\"e\""}},
    {"placement", SLOT_OP_PLACEMENT, 0, {NULL}},
    {"move_event", SLOT_OP_MOVE_EVENT, 2, {"\"event\":\"e\"", "\"to\":\"s2\""}},
    {"place_state", SLOT_OP_PLACE_STATE, 1, {"\"event\":\"e\""}},
    {"place_export", SLOT_OP_PLACE_EXPORT, 2, {"\"event\":\"e\"", "\"gen\":1", "\"cursor\":\"AQE=\""}},
    {"place_stage",
     SLOT_OP_PLACE_STAGE,
     4,
     {"\"event\":\"e\"", "\"gen\":2", "\"set\":\"s1\"", "\"data\":\"\"", "\"first\":true"}},
    {"place_relinquish", SLOT_OP_PLACE_RELINQUISH, 3, {"\"event\":\"e\"", "\"gen\":1", "\"set\":\"s2\""}},
    {"place_own", SLOT_OP_PLACE_OWN, 2, {"\"event\":\"e\"", "\"gen\":2"}},
    {"place_done", SLOT_OP_PLACE_DONE, 2, {"\"event\":\"e\"", "\"gen\":2"}},
    {"place_abort", SLOT_OP_PLACE_ABORT, 3, {"\"event\":\"e\"", "\"gen\":2", "\"set\":\"s1\""}},
    {"place_reclaim", SLOT_OP_PLACE_RECLAIM, 2, {"\"event\":\"e\"", "\"gen\":1"}},
    {"place_purge", SLOT_OP_PLACE_PURGE, 2, {"\"event\":\"e\"", "\"gen\":1"}},
};

/* The request of c without fragment `skip` (-1: all of them). */
static void op_line(const op_case *c, int skip, char *line, size_t cap)
{
    size_t n = (size_t)snprintf(line, cap, "{\"id\":\"q\",\"op\":\"%s\"", c->op);
    for (int i = 0; i < 6 && c->frag[i]; i++)
        if (i != skip)
            n += (size_t)snprintf(line + n, cap - n, ",%s", c->frag[i]);
    snprintf(line + n, cap - n, "}");
}

TEST_IMPL(proto_every_op_parses)
{
    ASSERT_EQ(sizeof(op_cases) / sizeof(op_cases[0]), SLOT_OP__COUNT);
    for (size_t i = 0; i < SLOT_OP__COUNT; i++) {
        char line[512];
        slot_req r;
        op_line(&op_cases[i], -1, line, sizeof(line));
        if (parse(line, &r) != SLOT_E_OK)
            T_FAIL_("%s: %s", line, last_msg);
        ASSERT_EQ(r.op, op_cases[i].want);
        ASSERT_EQ(r.id.kind, SLOT_ID_STR);
        slot_req_clear(&r);
    }
}

TEST_IMPL(proto_every_required_field)
{
    for (size_t i = 0; i < SLOT_OP__COUNT; i++) {
        const op_case *c = &op_cases[i];
        for (int k = 0; k < c->nreq; k++) {
            char line[512], key[32];
            slot_req r;
            op_line(c, k, line, sizeof(line));
            if (parse(line, &r) != SLOT_E_INVALID_ARGUMENT)
                T_FAIL_("%s accepted without %s", line, c->frag[k]);
            sscanf(c->frag[k], "\"%31[^\"]\"", key);
            char want[48];
            snprintf(want, sizeof(want), "%s: missing", key);
            if (strncmp(last_msg, want, strlen(want)) != 0)
                T_FAIL_("%s: message \"%s\" does not start with \"%s\"", line, last_msg, want);
            ASSERT_EQ(r.id.kind, SLOT_ID_STR); /* echoed */
        }
        /* The optional ones may go. */
        for (int k = c->nreq; k < 6 && c->frag[k]; k++) {
            char line[512];
            slot_req r;
            op_line(c, k, line, sizeof(line));
            if (parse(line, &r) != SLOT_E_OK)
                T_FAIL_("%s: %s", line, last_msg);
            slot_req_clear(&r);
        }
    }
}

TEST_IMPL(proto_hold_fields_filled)
{
    slot_req r;
    memset(&r, 0xa5, sizeof(r)); /* parse zeroes what it does not fill */
    ASSERT_EQ(parse("{\"op\":\"hold\",\"event\":\"sale-1\",\"user\":\"alice\",\"request\":\"r:1\",\"qty\":3}", &r),
              SLOT_E_OK);
    ASSERT_EQ(r.op, SLOT_OP_HOLD);
    ASSERT_EQ(r.id.kind, SLOT_ID_NONE);
    ASSERT_STR_EQ(r.event, "sale-1");
    ASSERT_EQ(r.event_len, 6);
    ASSERT_STR_EQ(r.user, "alice");
    ASSERT_EQ(r.user_len, 5);
    ASSERT_STR_EQ(r.request, "r:1");
    ASSERT_EQ(r.request_len, 3);
    ASSERT_EQ(r.qty, 3);
    ASSERT_EQ(r.hold_len, 0);
    ASSERT_EQ(r.hold[0], 0);
    ASSERT_EQ(r.capacity, 0);
    ASSERT_EQ(r.token_len, 0);
    ASSERT_EQ(r.has & SLOT_HAS_TOKEN, 0);
    ASSERT_EQ(last_msg[0], 0);
}

TEST_IMPL(proto_create_event_defaults_and_has_bits)
{
    slot_req r;
    ASSERT_EQ(parse("{\"op\":\"create_event\",\"event\":\"e\",\"capacity\":500}", &r), SLOT_E_OK);
    ASSERT_EQ(r.capacity, 500);
    ASSERT_EQ(r.shards, SLOT_SHARDS_DEFAULT);
    ASSERT_EQ(r.hold_ttl_ms, SLOT_HOLD_TTL_MS_DEFAULT);
    ASSERT_EQ(r.max_per_user, 0);
    ASSERT_EQ(r.max_per_request, SLOT_MAX_PER_REQUEST_DEFAULT);
    ASSERT_EQ(r.has & (SLOT_HAS_SHARDS | SLOT_HAS_HOLD_TTL | SLOT_HAS_MAX_PER_USER | SLOT_HAS_MAX_PER_REQUEST), 0);
    ASSERT_EQ(parse("{\"op\":\"create_event\",\"event\":\"e\",\"capacity\":500,\"shards\":3,\"hold_ttl_ms\":2000,"
                    "\"max_per_user\":4,\"max_per_request\":5}",
                    &r),
              SLOT_E_OK);
    ASSERT_EQ(r.shards, 3);
    ASSERT_EQ(r.hold_ttl_ms, 2000);
    ASSERT_EQ(r.max_per_user, 4);
    ASSERT_EQ(r.max_per_request, 5);
    ASSERT_EQ(r.has & SLOT_HAS_SHARDS, SLOT_HAS_SHARDS);
    ASSERT_EQ(r.has & SLOT_HAS_HOLD_TTL, SLOT_HAS_HOLD_TTL);
    ASSERT_EQ(r.has & SLOT_HAS_MAX_PER_USER, SLOT_HAS_MAX_PER_USER);
    ASSERT_EQ(r.has & SLOT_HAS_MAX_PER_REQUEST, SLOT_HAS_MAX_PER_REQUEST);
    /* Defaults given explicitly are still "given". */
    ASSERT_EQ(parse("{\"op\":\"create_event\",\"event\":\"e\",\"capacity\":5,\"max_per_user\":0}", &r), SLOT_E_OK);
    ASSERT_EQ(r.has & SLOT_HAS_MAX_PER_USER, SLOT_HAS_MAX_PER_USER);
    ASSERT_EQ(r.has & SLOT_HAS_SHARDS, 0);
}

TEST_IMPL(proto_set_status_values)
{
    slot_req r;
    ASSERT_EQ(parse("{\"op\":\"set_status\",\"event\":\"e\",\"status\":\"closed\"}", &r), SLOT_E_OK);
    ASSERT_EQ(r.status, SLOT_EVENT_CLOSED);
    ASSERT_EQ(parse("{\"op\":\"set_status\",\"event\":\"e\",\"status\":\"on_sale\"}", &r), SLOT_E_OK);
    ASSERT_EQ(r.status, SLOT_EVENT_ON_SALE);
    const char *bad[] = {"\"open\"", "\"CLOSED\"", "\"on_sale \"", "\"\"", "1", "null", "true"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        char line[128];
        snprintf(line, sizeof(line), "{\"op\":\"set_status\",\"event\":\"e\",\"status\":%s}", bad[i]);
        ASSERT_EQ(parse(line, &r), SLOT_E_INVALID_ARGUMENT);
        ASSERT_MSG_HAS("status");
    }
}

/* cluster_change: the three changes and a node name; the client encodes the same line back. */
TEST_IMPL(proto_cluster_change_fields)
{
    slot_req r;
    const char *names[] = {"add", "remove", "promote"};
    for (int k = 0; k < 3; k++) {
        char line[128];
        snprintf(line, sizeof(line), "{\"op\":\"cluster_change\",\"change\":\"%s\",\"node\":\"n-2.b\"}", names[k]);
        ASSERT_EQ(parse(line, &r), SLOT_E_OK);
        ASSERT_EQ(r.change, (slot_cluster_change)(SLOT_CHANGE_ADD + k));
        ASSERT_STR_EQ(r.node, "n-2.b");
        ASSERT_EQ(r.node_len, 5);
        slot_req e;
        ASSERT_EQ(slot_req_cluster_change(&e, r.change, "n-2.b"), 0);
        char out[256];
        long n = slot_req_encode(&e, out, sizeof(out));
        ASSERT(n > 0);
        slot_req back;
        ASSERT_EQ(parse(out, &back), SLOT_E_OK);
        ASSERT_EQ(back.change, r.change);
        ASSERT_STR_EQ(back.node, "n-2.b");
    }
    const char *bad_change[] = {"\"Promote\"", "\"\"", "1", "null"};
    for (size_t i = 0; i < sizeof(bad_change) / sizeof(bad_change[0]); i++) {
        char line[128];
        snprintf(line, sizeof(line), "{\"op\":\"cluster_change\",\"change\":%s,\"node\":\"n2\"}", bad_change[i]);
        ASSERT_EQ(parse(line, &r), SLOT_E_INVALID_ARGUMENT);
        ASSERT_MSG_HAS("change");
    }
    const char *bad_node[] = {"\"\"", "\"a b\"", "\"n/2\"", "2"};
    for (size_t i = 0; i < sizeof(bad_node) / sizeof(bad_node[0]); i++) {
        char line[128];
        snprintf(line, sizeof(line), "{\"op\":\"cluster_change\",\"change\":\"add\",\"node\":%s}", bad_node[i]);
        ASSERT_EQ(parse(line, &r), SLOT_E_INVALID_ARGUMENT);
        ASSERT_MSG_HAS("node");
    }
    ASSERT_EQ(slot_req_cluster_change(&r, SLOT_CHANGE_NONE, "n2"), -EINVAL);
    char longname[80];
    memset(longname, 'a', 65);
    longname[65] = 0;
    ASSERT_EQ(slot_req_cluster_change(&r, SLOT_CHANGE_ADD, longname), -EINVAL);
}

TEST_IMPL(proto_hello_token)
{
    char line[1024];
    slot_req r;
    ASSERT_EQ(parse("{\"op\":\"hello\"}", &r), SLOT_E_OK);
    ASSERT_EQ(r.has & SLOT_HAS_TOKEN, 0);
    ASSERT_EQ(parse("{\"op\":\"hello\",\"token\":\"s3cr\\\"et\"}", &r), SLOT_E_OK);
    ASSERT_EQ(r.has & SLOT_HAS_TOKEN, SLOT_HAS_TOKEN);
    ASSERT_STR_EQ(r.token, "s3cr\"et");
    ASSERT_EQ(r.token_len, 7);
    snprintf(line, sizeof(line), "{\"op\":\"hello\",\"token\":\"%s\"}", rep('t', 256));
    ASSERT_EQ(parse(line, &r), SLOT_E_OK);
    ASSERT_EQ(r.token_len, 256);
    snprintf(line, sizeof(line), "{\"op\":\"hello\",\"token\":\"%s\"}", rep('t', 257));
    ASSERT_EQ(parse(line, &r), SLOT_E_INVALID_ARGUMENT);
    ASSERT_MSG_HAS("token");
    ASSERT_EQ(parse("{\"op\":\"hello\",\"token\":42}", &r), SLOT_E_INVALID_ARGUMENT);
    ASSERT_EQ(parse("{\"op\":\"hello\",\"token\":null}", &r), SLOT_E_INVALID_ARGUMENT);
}

TEST_IMPL(proto_hold_argument)
{
    char line[1024];
    slot_req r;
    /* The format is the allocator's business: anything of 1..128 bytes passes here. */
    ASSERT_EQ(parse("{\"op\":\"cancel\",\"event\":\"e\",\"hold\":\"not a hold id!\"}", &r), SLOT_E_OK);
    ASSERT_STR_EQ(r.hold, "not a hold id!");
    ASSERT_EQ(r.hold_len, 14);
    snprintf(line, sizeof(line), "{\"op\":\"cancel\",\"event\":\"e\",\"hold\":\"%s\"}", rep('h', 128));
    ASSERT_EQ(parse(line, &r), SLOT_E_OK);
    ASSERT_EQ(r.hold_len, 128);
    snprintf(line, sizeof(line), "{\"op\":\"cancel\",\"event\":\"e\",\"hold\":\"%s\"}", rep('h', 129));
    ASSERT_EQ(parse(line, &r), SLOT_E_INVALID_ARGUMENT);
    ASSERT_MSG_HAS("hold");
    ASSERT_EQ(parse("{\"op\":\"cancel\",\"event\":\"e\",\"hold\":\"\"}", &r), SLOT_E_INVALID_ARGUMENT);
    ASSERT_EQ(parse("{\"op\":\"cancel\",\"event\":\"e\",\"hold\":12}", &r), SLOT_E_INVALID_ARGUMENT);
}

TEST_IMPL(proto_check_optional_event)
{
    slot_req r;
    ASSERT_EQ(parse("{\"op\":\"check\"}", &r), SLOT_E_OK);
    ASSERT_EQ(r.has & SLOT_HAS_EVENT, 0);
    ASSERT_EQ(r.event_len, 0);
    ASSERT_EQ(parse("{\"op\":\"check\",\"event\":\"ev.1\"}", &r), SLOT_E_OK);
    ASSERT_EQ(r.has & SLOT_HAS_EVENT, SLOT_HAS_EVENT);
    ASSERT_STR_EQ(r.event, "ev.1");
    ASSERT_EQ(parse("{\"op\":\"check\",\"event\":\"bad key!\"}", &r), SLOT_E_INVALID_ARGUMENT);
    ASSERT_EQ(parse("{\"op\":\"check\",\"event\":null}", &r), SLOT_E_INVALID_ARGUMENT);
}

TEST_IMPL(proto_unknown_and_unused_fields_ignored)
{
    slot_req r;
    ASSERT_EQ(parse("{\"op\":\"event\",\"event\":\"e\",\"future\":{\"x\":[1,2.5,null]},\"qty\":\"x\",\"user\":7,"
                    "\"shards\":-1,\"status\":\"weird\",\"token\":false}",
                    &r),
              SLOT_E_OK);
    ASSERT_EQ(r.op, SLOT_OP_EVENT);
    ASSERT_EQ(r.qty, 0);
    ASSERT_EQ(r.user_len, 0);
    ASSERT_EQ(parse("{\"op\":\"stats\",\"event\":\"bad key!\",\"capacity\":1.5}", &r), SLOT_E_OK);
    ASSERT_EQ(parse("{\"op\":\"expire\",\"hold\":\"\"}", &r), SLOT_E_OK);
}

/* ------------------------------------------------------------------------ */
/* Names                                                                     */
/* ------------------------------------------------------------------------ */

TEST_IMPL(proto_event_and_request_names)
{
    char line[1024];
    slot_req r;
    snprintf(line, sizeof(line), "{\"op\":\"event\",\"event\":\"%s\"}", rep('e', 64));
    ASSERT_EQ(parse(line, &r), SLOT_E_OK);
    ASSERT_EQ(r.event_len, 64);
    snprintf(line, sizeof(line), "{\"op\":\"event\",\"event\":\"%s\"}", rep('e', 65));
    ASSERT_EQ(parse(line, &r), SLOT_E_INVALID_ARGUMENT);
    ASSERT_STR_EQ(last_msg, "event: must be 1..64 bytes of [A-Za-z0-9._:-]");
    ASSERT_EQ(parse("{\"op\":\"event\",\"event\":\"AZaz09._:-\"}", &r), SLOT_E_OK);
    const char *bad[] = {"\"\"",    "\"bad key!\"", "\"a b\"", "\"a/b\"", "\"caf\xc3\xa9\"", "\"a\\tb\"",
                         "\"a+b\"", "\"a@b\"",      "1",       "null",    "[\"e\"]"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        snprintf(line, sizeof(line), "{\"op\":\"event\",\"event\":%s}", bad[i]);
        if (parse(line, &r) != SLOT_E_INVALID_ARGUMENT)
            T_FAIL_("event %s accepted", bad[i]);
        ASSERT_MSG_HAS("event");
        snprintf(line, sizeof(line), "{\"op\":\"hold\",\"event\":\"e\",\"user\":\"u\",\"request\":%s,\"qty\":1}",
                 bad[i]);
        if (parse(line, &r) != SLOT_E_INVALID_ARGUMENT)
            T_FAIL_("request %s accepted", bad[i]);
        ASSERT_MSG_HAS("request");
    }
    snprintf(line, sizeof(line), "{\"op\":\"hold\",\"event\":\"e\",\"user\":\"u\",\"request\":\"%s\",\"qty\":1}",
             rep('r', 64));
    ASSERT_EQ(parse(line, &r), SLOT_E_OK);
    ASSERT_EQ(r.request_len, 64);
    snprintf(line, sizeof(line), "{\"op\":\"hold\",\"event\":\"e\",\"user\":\"u\",\"request\":\"%s\",\"qty\":1}",
             rep('r', 65));
    ASSERT_EQ(parse(line, &r), SLOT_E_INVALID_ARGUMENT);
}

static slot_err parse_user(const char *user_json, slot_req *r)
{
    char line[1024];
    snprintf(line, sizeof(line), "{\"op\":\"get_hold\",\"event\":\"e\",\"hold\":\"h\",\"user\":%s}", user_json);
    return parse(line, r);
}

TEST_IMPL(proto_user_names)
{
    char u[600];
    slot_req r;
    snprintf(u, sizeof(u), "\"%s\"", rep('u', 128));
    ASSERT_EQ(parse_user(u, &r), SLOT_E_OK);
    ASSERT_EQ(r.user_len, 128);
    snprintf(u, sizeof(u), "\"%s\"", rep('u', 129));
    ASSERT_EQ(parse_user(u, &r), SLOT_E_INVALID_ARGUMENT);
    ASSERT_MSG_HAS("user");
    /* Bytes, not characters: 64 x U+00E9 is 128 bytes. */
    strcpy(u, "\"");
    for (int i = 0; i < 64; i++)
        strcat(u, "\xc3\xa9");
    strcat(u, "\"");
    ASSERT_EQ(parse_user(u, &r), SLOT_E_OK);
    ASSERT_EQ(r.user_len, 128);
    strcpy(u + strlen(u) - 1, "x\"");
    ASSERT_EQ(parse_user(u, &r), SLOT_E_INVALID_ARGUMENT);
    /* Anything printable goes, quotes and spaces included; U+0080 is not in the banned set. */
    ASSERT_EQ(parse_user("\"Ann \\\"O'Neil\\\" \\\\ \\/ \xe2\x82\xac \\u0080\"", &r), SLOT_E_OK);
    ASSERT_STR_EQ(r.user, "Ann \"O'Neil\" \\ / \xe2\x82\xac \xc2\x80");
    const char *bad[] = {"\"\"", "\"a\\u0001\"", "\"a\\u001f\"", "\"a\\u007f\"", "\"a\x7f\"", "\"a\\tb\"", "\"a\\nb\"",
                         "1",    "null",         "true"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        if (parse_user(bad[i], &r) != SLOT_E_INVALID_ARGUMENT)
            T_FAIL_("user %s accepted", bad[i]);
        ASSERT_MSG_HAS("user");
    }
}

TEST_IMPL(proto_non_terminated_input)
{
    /* The line need not be NUL-terminated: only len bytes are read. */
    const char text[] = "{\"op\":\"event\",\"event\":\"e1\"}GARBAGE";
    slot_req r;
    ASSERT_EQ(parse_n(text, 27, &r), SLOT_E_OK);
    ASSERT_STR_EQ(r.event, "e1");
    ASSERT_EQ(parse_n(text, 28, &r), SLOT_E_BAD_JSON);
}

TEST_IMPL(proto_tiny_message_buffer)
{
    slot_req r;
    char m[4] = "zzz";
    ASSERT_EQ(slot_proto_parse("{\"op\":1}", 8, &r, m, sizeof(m)), SLOT_E_UNKNOWN_OP);
    ASSERT_EQ(strlen(m), 3);
    ASSERT_EQ(slot_proto_parse("{\"op\":1}", 8, &r, NULL, 0), SLOT_E_UNKNOWN_OP);
}

/* slot_proto_parse_at: "(byte N)" of bad_json and of an integer out of
 * range moved by byte_delta, never below 0; the error is the same. */
TEST_IMPL(proto_parse_at_moves_byte_positions)
{
    slot_req r;
    char m[256];
    ASSERT_EQ(slot_proto_parse("{\"op\":\"hold\",\"event\":", 21, &r, m, sizeof(m)), SLOT_E_BAD_JSON);
    ASSERT(strstr(m, "(byte 21)") != NULL);
    ASSERT_EQ(slot_proto_parse_at("{\"op\":\"hold\",\"event\":", 21, -12, &r, m, sizeof(m)), SLOT_E_BAD_JSON);
    ASSERT(strstr(m, "(byte 9)") != NULL);
    ASSERT_EQ(slot_proto_parse_at("{\"op\":\"hold\",\"event\":", 21, -100, &r, m, sizeof(m)), SLOT_E_BAD_JSON);
    ASSERT(strstr(m, "(byte 0)") != NULL);
    ASSERT_EQ(slot_proto_parse_at("{\"op\":\"hold\",\"qty\":99999999999999999999}", 40, 5, &r, m, sizeof(m)),
              SLOT_E_INVALID_ARGUMENT);
    ASSERT(strstr(m, "(byte 44)") != NULL);
}

/* ------------------------------------------------------------------------ */
/* v1.1: windows, extend, partial confirm, reacquire                         */
/* ------------------------------------------------------------------------ */

TEST_IMPL(proto_v11_windows_parse)
{
    slot_req r;
    ASSERT_EQ(parse("{\"op\":\"set_sale_window\",\"event\":\"e\",\"opens_at\":1000,\"closes_at\":2000}", &r),
              SLOT_E_OK);
    ASSERT_EQ(r.op, SLOT_OP_SET_SALE_WINDOW);
    ASSERT_EQ(r.opens_at_ms, 1000u);
    ASSERT_EQ(r.closes_at_ms, 2000u);
    ASSERT_EQ(parse("{\"op\":\"set_sale_window\",\"event\":\"e\",\"opens_at\":0,\"closes_at\":9007199254740992}", &r),
              SLOT_E_OK);
    ASSERT_EQ(r.closes_at_ms, UINT64_C(1) << 53);
    ASSERT_EQ(parse("{\"op\":\"set_sale_window\",\"event\":\"e\",\"opens_at\":5,\"closes_at\":0}", &r), SLOT_E_OK);
    /* Bad windows: closes_at <= opens_at, negative, floats, beyond 2^53, one field missing. */
    static const char *const bad[] = {
        "{\"op\":\"set_sale_window\",\"event\":\"e\",\"opens_at\":2000,\"closes_at\":2000}",
        "{\"op\":\"set_sale_window\",\"event\":\"e\",\"opens_at\":2000,\"closes_at\":1999}",
        "{\"op\":\"set_sale_window\",\"event\":\"e\",\"opens_at\":-1,\"closes_at\":0}",
        "{\"op\":\"set_sale_window\",\"event\":\"e\",\"opens_at\":0,\"closes_at\":1.0}",
        "{\"op\":\"set_sale_window\",\"event\":\"e\",\"opens_at\":1e3,\"closes_at\":0}",
        "{\"op\":\"set_sale_window\",\"event\":\"e\",\"opens_at\":0,\"closes_at\":9007199254740993}",
        "{\"op\":\"set_sale_window\",\"event\":\"e\",\"opens_at\":0}",
        "{\"op\":\"set_sale_window\",\"event\":\"e\",\"closes_at\":0}",
        "{\"op\":\"create_event\",\"event\":\"e\",\"capacity\":1,\"opens_at\":7,\"closes_at\":7}",
        "{\"op\":\"create_event\",\"event\":\"e\",\"capacity\":1,\"opens_at\":-5}",
        "{\"op\":\"create_event\",\"event\":\"e\",\"capacity\":1,\"closes_at\":\"9\"}",
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        if (parse(bad[i], &r) != SLOT_E_INVALID_ARGUMENT)
            T_FAIL_("%s was not invalid_argument", bad[i]);
}

TEST_IMPL(proto_v11_create_event_settings)
{
    slot_req r;
    ASSERT_EQ(parse("{\"op\":\"create_event\",\"event\":\"e\",\"capacity\":1}", &r), SLOT_E_OK);
    ASSERT_EQ(r.max_extensions, SLOT_MAX_EXTENSIONS_DEFAULT);
    ASSERT_EQ(r.max_hold_ms, 0u); /* the allocator fills in 2 x hold_ttl_ms */
    ASSERT_EQ(r.opens_at_ms, 0u);
    ASSERT_EQ(parse("{\"op\":\"create_event\",\"event\":\"e\",\"capacity\":1,\"max_extensions\":100,"
                    "\"max_hold_ms\":1099511627776,\"opens_at\":10,\"closes_at\":20}",
                    &r),
              SLOT_E_OK);
    ASSERT_EQ(r.max_extensions, 100u);
    ASSERT_EQ(r.max_hold_ms, UINT64_C(1) << 40);
    ASSERT_EQ(r.opens_at_ms, 10u);
    ASSERT_EQ(r.closes_at_ms, 20u);
    ASSERT(r.has & SLOT_HAS_MAX_EXTENSIONS);
    ASSERT(r.has & SLOT_HAS_MAX_HOLD_MS);
    ASSERT_EQ(
        parse("{\"op\":\"create_event\",\"event\":\"e\",\"capacity\":1,\"max_extensions\":0,\"max_hold_ms\":1000}", &r),
        SLOT_E_OK);
    ASSERT_EQ(parse("{\"op\":\"create_event\",\"event\":\"e\",\"capacity\":1,\"max_extensions\":101}", &r),
              SLOT_E_INVALID_ARGUMENT);
    ASSERT_STR_EQ(last_msg, "max_extensions: must be an integer in 0..100");
    ASSERT_EQ(parse("{\"op\":\"create_event\",\"event\":\"e\",\"capacity\":1,\"max_hold_ms\":999}", &r),
              SLOT_E_INVALID_ARGUMENT);
    ASSERT_EQ(parse("{\"op\":\"create_event\",\"event\":\"e\",\"capacity\":1,\"max_hold_ms\":1099511627777}", &r),
              SLOT_E_INVALID_ARGUMENT);
}

TEST_IMPL(proto_v11_confirm_qty_and_reacquire)
{
    slot_req r;
    ASSERT_EQ(parse("{\"op\":\"confirm\",\"event\":\"e\",\"hold\":\"h\",\"user\":\"u\"}", &r), SLOT_E_OK);
    ASSERT(!(r.has & SLOT_HAS_QTY));
    ASSERT(!(r.reacquire));
    ASSERT_EQ(parse("{\"op\":\"confirm\",\"event\":\"e\",\"hold\":\"h\",\"user\":\"u\",\"qty\":3,\"reacquire\":true}",
                    &r),
              SLOT_E_OK);
    ASSERT(r.has & SLOT_HAS_QTY);
    ASSERT_EQ(r.qty, 3u);
    ASSERT(r.reacquire);
    ASSERT_EQ(parse("{\"op\":\"confirm\",\"event\":\"e\",\"hold\":\"h\",\"user\":\"u\",\"reacquire\":false}", &r),
              SLOT_E_OK);
    ASSERT(!(r.reacquire));
    /* qty 0 is invalid_argument before anything looks at the hold (even a replay). */
    ASSERT_EQ(parse("{\"op\":\"confirm\",\"event\":\"e\",\"hold\":\"h\",\"user\":\"u\",\"qty\":0}", &r),
              SLOT_E_INVALID_ARGUMENT);
    ASSERT_STR_EQ(last_msg, "qty: must be an integer in 1..1000");
    ASSERT_EQ(parse("{\"op\":\"confirm\",\"event\":\"e\",\"hold\":\"h\",\"user\":\"u\",\"qty\":1.0}", &r),
              SLOT_E_INVALID_ARGUMENT);
    ASSERT_EQ(parse("{\"op\":\"confirm\",\"event\":\"e\",\"hold\":\"h\",\"user\":\"u\",\"reacquire\":1}", &r),
              SLOT_E_INVALID_ARGUMENT);
    ASSERT_STR_EQ(last_msg, "reacquire: must be true or false");
}

TEST_IMPL(proto_v11_extend_by_ms)
{
    slot_req r;
    ASSERT_EQ(parse("{\"op\":\"extend\",\"event\":\"e\",\"hold\":\"h\",\"user\":\"u\",\"by_ms\":1000}", &r), SLOT_E_OK);
    ASSERT_EQ(r.by_ms, 1000u);
    ASSERT_EQ(parse("{\"op\":\"extend\",\"event\":\"e\",\"hold\":\"h\",\"user\":\"u\",\"by_ms\":86400000}", &r),
              SLOT_E_OK);
    ASSERT_EQ(parse("{\"op\":\"extend\",\"event\":\"e\",\"hold\":\"h\",\"user\":\"u\",\"by_ms\":999}", &r),
              SLOT_E_INVALID_ARGUMENT);
    ASSERT_EQ(parse("{\"op\":\"extend\",\"event\":\"e\",\"hold\":\"h\",\"user\":\"u\",\"by_ms\":86400001}", &r),
              SLOT_E_INVALID_ARGUMENT);
    ASSERT_EQ(parse("{\"op\":\"extend\",\"event\":\"e\",\"hold\":\"h\",\"user\":\"u\"}", &r), SLOT_E_INVALID_ARGUMENT);
    ASSERT_STR_EQ(last_msg, "by_ms: missing; must be an integer in 1000..86400000");
}

/* backup's path: absolute, 1..SLOT_PATH_BYTES_MAX bytes, no NUL; the reply
 * carries seq, digest and the extra members (docs/protocol.md, "backup"). */
TEST_IMPL(proto_backup_path)
{
    slot_req r;
    ASSERT_EQ(parse("{\"op\":\"backup\",\"path\":\"/srv/backups/a b.bak\"}", &r), SLOT_E_OK);
    ASSERT_STR_EQ(r.path, "/srv/backups/a b.bak");
    ASSERT_EQ(r.path_len, 20);
    ASSERT_EQ(parse("{\"op\":\"backup\",\"path\":\"rel/a.bak\"}", &r), SLOT_E_INVALID_ARGUMENT);
    ASSERT_STR_EQ(last_msg, "path: must be an absolute path of 1..1023 bytes");
    ASSERT_EQ(parse("{\"op\":\"backup\",\"path\":\"\"}", &r), SLOT_E_INVALID_ARGUMENT);
    ASSERT_EQ(parse("{\"op\":\"backup\",\"path\":\"/a\\u0000b\"}", &r), SLOT_E_BAD_JSON); /* no NUL reaches a name */
    ASSERT_EQ(parse("{\"op\":\"backup\",\"path\":7}", &r), SLOT_E_INVALID_ARGUMENT);
    char line[SLOT_PATH_BYTES_MAX + 64];
    char path[SLOT_PATH_BYTES_MAX + 2];
    memset(path, 'a', sizeof(path) - 1);
    path[0] = '/';
    path[SLOT_PATH_BYTES_MAX] = 0; /* the longest */
    snprintf(line, sizeof(line), "{\"op\":\"backup\",\"path\":\"%s\"}", path);
    ASSERT_EQ(parse(line, &r), SLOT_E_OK);
    ASSERT_EQ(r.path_len, SLOT_PATH_BYTES_MAX);
    path[SLOT_PATH_BYTES_MAX] = 'a';
    path[SLOT_PATH_BYTES_MAX + 1] = 0; /* one byte more */
    snprintf(line, sizeof(line), "{\"op\":\"backup\",\"path\":\"%s\"}", path);
    ASSERT_EQ(parse(line, &r), SLOT_E_INVALID_ARGUMENT);

    slot_res res;
    memset(&res, 0, sizeof(res));
    ASSERT_EQ(parse("{\"id\":1,\"op\":\"backup\",\"path\":\"/b\"}", &r), SLOT_E_OK);
    res.seq = 42;
    memset(res.digest, 'c', SLOT_DIGEST_HEX_BYTES);
    res.backup_bytes = 4096; /* typed (was extra's {"bytes":4096,"ms":3}): same bytes on the wire */
    res.backup_ms = 3;
    char out[512];
    size_t n = slot_proto_encode(&r, &res, out, sizeof(out));
    ASSERT_LT(n, sizeof(out));
    char want[256];
    snprintf(want, sizeof(want), "{\"id\":1,\"ok\":true,\"seq\":42,\"digest\":\"%s\",\"bytes\":4096,\"ms\":3}\n",
             res.digest);
    ASSERT_STR_EQ(out, want);
    slot_res_clear(&res);
}
