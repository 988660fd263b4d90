/* test_http_line.c — the HTTP listener's text side (src/server/http_line.h): the
 * status table of docs/protocol.md, "HTTP", and how a body becomes the
 * request line the TCP protocol would carry. */
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "server/http_line.h"

TEST_DECLARE(http_line_status_table)
TEST_DECLARE(http_line_bodies)
TEST_DECLARE(http_line_idempotency_key)
TEST_DECLARE(http_line_byte_delta_counts_from_the_body)
TEST_DECLARE(http_line_op_names)
TEST_DECLARE(http_line_event_body_escapes)
TEST_DECLARE(http_line_owner_addr_of_wrong_set)

TEST_LIST_START
TEST_ENTRY(http_line_status_table)
TEST_ENTRY(http_line_bodies)
TEST_ENTRY(http_line_idempotency_key)
TEST_ENTRY(http_line_byte_delta_counts_from_the_body)
TEST_ENTRY(http_line_op_names)
TEST_ENTRY(http_line_event_body_escapes)
TEST_ENTRY(http_line_owner_addr_of_wrong_set)
TEST_LIST_END

TEST_IMPL(http_line_status_table)
{
    static const struct {
        slot_err err;
        unsigned status;
    } want[] = {
        {SLOT_E_OK, 200},
        {SLOT_E_BAD_JSON, 400},
        {SLOT_E_INVALID_ARGUMENT, 400},
        {SLOT_E_UNKNOWN_OP, 400},
        {SLOT_E_UNAUTHENTICATED, 401},
        {SLOT_E_FORBIDDEN, 403},
        {SLOT_E_UNKNOWN_EVENT, 404},
        {SLOT_E_UNKNOWN_HOLD, 404},
        {SLOT_E_EVENT_EXISTS, 409},
        {SLOT_E_NOT_ON_SALE, 409},
        {SLOT_E_HOLD_NOT_ACTIVE, 409},
        {SLOT_E_IDEMPOTENCY_CONFLICT, 409},
        {SLOT_E_USER_LIMIT, 409},
        {SLOT_E_ADMISSION_REQUIRED, 403},
        {SLOT_E_RATE_LIMITED, 429},
        {SLOT_E_EXTEND_LIMIT, 409},
        {SLOT_E_CAPACITY_BELOW_ALLOCATED, 409},
        {SLOT_E_FEED_TRUNCATED, 409},
        {SLOT_E_NOT_SUBSCRIBED, 409},
        {SLOT_E_LINE_TOO_LONG, 413},
        {SLOT_E_OVERLOADED, 503},
        {SLOT_E_SHUTTING_DOWN, 503},
        {SLOT_E_UNAVAILABLE, 503},
        {SLOT_E_NOT_PRIMARY, 307},
        {SLOT_E_WRONG_SET, 307},
        {SLOT_E_CROSS_SET, 409},
        {SLOT_E_MOVING, 503},
        {SLOT_E_STORAGE_FULL, 507},
        {SLOT_E_INTERNAL, 500},
        {SLOT_E_BUSY, 409},
        {SLOT_E_BACKUP_FAILED, 500},
    };
    ASSERT_EQ(sizeof(want) / sizeof(want[0]), (size_t)SLOT_E__COUNT); /* every code has its row */
    for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++)
        ASSERT_EQ(slot__http_status(want[i].err), want[i].status);
    ASSERT_EQ(slot__http_status(SLOT_E__COUNT), 500u);
}

/* The line of body; want_delta: what moves a line position to the body's. */
static void line_at(const char *body, const char *key, const char *want, ptrdiff_t want_delta)
{
    char *buf = NULL;
    size_t cap = 0;
    ptrdiff_t delta = 12345;
    size_t n = slot__http_line(&buf, &cap, "hold", body, strlen(body), key, &delta);
    ASSERT_EQ(n, strlen(want));
    ASSERT(memcmp(buf, want, n) == 0);
    ASSERT_EQ((long long)delta, (long long)want_delta);
    free(buf);
}

static void line_is(const char *body, const char *key, const char *want)
{
    char *buf = NULL;
    size_t cap = 0;
    ptrdiff_t delta;
    size_t n = slot__http_line(&buf, &cap, "hold", body, strlen(body), key, &delta);
    ASSERT_EQ(n, strlen(want));
    ASSERT(memcmp(buf, want, n) == 0);
    free(buf);
}

TEST_IMPL(http_line_bodies)
{
    line_is("", NULL, "{\"op\":\"hold\"}");
    line_is("{}", NULL, "{\"op\":\"hold\"}");
    line_is(" { \n } ", NULL, "{\"op\":\"hold\"} ");
    line_is("{\"event\":\"e\"}", NULL, "{\"op\":\"hold\",\"event\":\"e\"}");
    line_is("\n{\n  \"qty\": 1\n}\n", NULL, "{\"op\":\"hold\",\"qty\": 1\n}\n");
    /* not an object: passed as it is, for the parser's bad_json */
    line_is("[1]", NULL, "[1]");
    line_is("   ", NULL, "   ");
    line_is("{\"op\":\"x\"}", NULL, "{\"op\":\"hold\",\"op\":\"x\"}"); /* a duplicate key: bad_json */
}

TEST_IMPL(http_line_idempotency_key)
{
    line_is("{\"qty\":1}", "k1", "{\"op\":\"hold\",\"request\":\"k1\",\"qty\":1}");
    line_is("", "k1", "{\"op\":\"hold\",\"request\":\"k1\"}");
    line_is("{}", "a\"b", "{\"op\":\"hold\",\"request\":\"a\\\"b\"}"); /* escaped; the parser refuses the name */
    ASSERT(slot__http_body_has_request("{\"request\":\"x\"}", 15));
    ASSERT(!slot__http_body_has_request("{\"qty\":1}", 9));
    ASSERT(!slot__http_body_has_request("{\"request\":", 11));
    ASSERT(!slot__http_body_has_request("", 0));
    /* a long key grows the buffer */
    char key[300];
    memset(key, 'k', sizeof(key) - 1);
    key[sizeof(key) - 1] = 0;
    char *buf = NULL;
    size_t cap = 0;
    ptrdiff_t delta;
    size_t n = slot__http_line(&buf, &cap, "hold", "{}", 2, key, &delta);
    ASSERT_EQ(n, strlen("{\"op\":\"hold\",\"request\":\"\"}") + strlen(key));
    free(buf);
}

/* A parser position p in the line is byte p + delta of the body: the body's
 * members after its '{' start at byte j of the body and byte j - delta of the line. */
TEST_IMPL(http_line_byte_delta_counts_from_the_body)
{
    /* {"op":"hold", is 13 bytes; the body's "event" starts at its byte 1 */
    line_at("{\"event\":", NULL, "{\"op\":\"hold\",\"event\":", 1 - 13);
    /* leading spaces and newlines move the body's members on, not the line's */
    line_at("  \n {\n  \"qty\":x}", NULL, "{\"op\":\"hold\",\"qty\":x}", 8 - 13);
    /* the Idempotency-Key's member is the line's, not the body's */
    line_at("{\"qty\":x}", "k1", "{\"op\":\"hold\",\"request\":\"k1\",\"qty\":x}", 1 - 28);
    /* passed as it is, or no body: the positions are the same */
    line_at("[1,", NULL, "[1,", 0);
    line_at("", NULL, "{\"op\":\"hold\"}", 0);
    line_at(" {} ", NULL, "{\"op\":\"hold\"} ", 2 - 12);
}

TEST_IMPL(http_line_op_names)
{
    ASSERT(slot__http_op_ok("hold"));
    ASSERT(slot__http_op_ok("set_sale_window"));
    ASSERT(slot__http_op_ok("nosuchop"));
    ASSERT(!slot__http_op_ok(""));
    ASSERT(!slot__http_op_ok("Hold"));
    ASSERT(!slot__http_op_ok("hold\""));
    ASSERT(!slot__http_op_ok("events/e1"));
    ASSERT(!slot__http_op_ok("aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa")); /* 33 bytes */
}

TEST_IMPL(http_line_event_body_escapes)
{
    char *buf = NULL;
    size_t cap = 0;
    size_t n = slot__http_event_body(&buf, &cap, "e\"1");
    ASSERT_EQ(n, strlen("{\"event\":\"e\\\"1\"}"));
    ASSERT(memcmp(buf, "{\"event\":\"e\\\"1\"}", n) == 0);
    free(buf);
}

/* A wrong_set reply's "http": the owner's HTTP address for the 307's Location. */
TEST_IMPL(http_line_owner_addr_of_wrong_set)
{
    char out[80];
    const char *l = "{\"ok\":false,\"error\":\"wrong_set\",\"message\":\"m\",\"event\":\"a\",\"set\":\"s1\","
                    "\"gen\":1,\"primary\":\"127.0.0.1:7001\",\"http\":\"127.0.0.1:8001\"}\n";
    ASSERT_EQ(slot__http_owner_addr(l, strlen(l), out, sizeof(out)), strlen("127.0.0.1:8001"));
    ASSERT_STR_EQ(out, "127.0.0.1:8001");
    const char *v6 = "{\"ok\":false,\"error\":\"wrong_set\",\"http\":\"[::1]:8001\"}";
    ASSERT_EQ(slot__http_owner_addr(v6, strlen(v6), out, sizeof(out)), strlen("[::1]:8001"));
    ASSERT_STR_EQ(out, "[::1]:8001");
    const char *none = "{\"ok\":false,\"error\":\"wrong_set\",\"set\":\"s1\",\"primary\":\"h:1\"}";
    ASSERT_EQ(slot__http_owner_addr(none, strlen(none), out, sizeof(out)), 0);
    const char *bad = "{\"ok\":false,\"error\":\"wrong_set\",\"http\":\"h:1/x?y\"}"; /* not an address */
    ASSERT_EQ(slot__http_owner_addr(bad, strlen(bad), out, sizeof(out)), 0);
    const char *cut = "{\"ok\":false,\"http\":\"h:1";
    ASSERT_EQ(slot__http_owner_addr(cut, strlen(cut), out, sizeof(out)), 0);
    ASSERT_EQ(slot__http_owner_addr(l, strlen(l), out, 5), 0); /* longer than out */
}
