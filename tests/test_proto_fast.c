/*
 * test_proto_fast.c — the request parser's fast path (src/proto/proto_fast.c)
 * against the jansson path (docs/design.md, "The request parser's fast
 * path"). The rule: whenever the fast path takes a line, the full parser
 * succeeds on it and fills the very same request (memcmp of the whole
 * slot_req); a line the fast path leaves is the full parser's, errors and
 * messages included. Checked on fixed lines (the shapes the clients and the
 * bench send must take the fast path, or it would never run) and on
 * 300,000 random mutations of them (seed printed; SLOT_PROTO_FAST_SEED
 * repeats one). tests/fuzz/fuzz_proto_fast.c holds the same rule under
 * libFuzzer.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "harness.h"
#include "proto/proto_int.h" /* internal to libslot, tested directly */
#include "slot/client.h"
#include "slot/proto.h"

TEST_DECLARE(proto_fast_takes_the_hot_shapes)
TEST_DECLARE(proto_fast_leaves_the_rest)
TEST_DECLARE(proto_fast_matches_full_on_mutations)

TEST_LIST_START
TEST_ENTRY(proto_fast_takes_the_hot_shapes)
TEST_ENTRY(proto_fast_leaves_the_rest)
TEST_ENTRY(proto_fast_matches_full_on_mutations)
TEST_LIST_END

static slot_req fast_req, full_req;

/* The rule on one line; returns whether the fast path took it. */
static bool same(const char *line, size_t len)
{
    memset(&fast_req, 0xa5, sizeof(fast_req)); /* what the fast path leaves unset shows */
    bool took = slot__proto_parse_fast(line, len, &fast_req);
    char msg[256];
    slot_err err = slot__proto_parse_full(line, len, 0, &full_req, msg, sizeof(msg));
    if (took) {
        if (err != SLOT_E_OK)
            T_FAIL_("the fast path took a line the full parser refuses (%s: %s): %.*s", slot_err_name(err), msg,
                    (int)len, line);
        if (memcmp(&fast_req, &full_req, sizeof(fast_req)) != 0)
            T_FAIL_("the fast path filled another request than the full parser: %.*s", (int)len, line);
    }
    /* and through the public entry: the same verdict as the full parser */
    slot_req pub;
    char msg2[256];
    slot_err err2 = slot_proto_parse(line, len, &pub, msg2, sizeof(msg2));
    ASSERT_EQ(err2, err);
    if (err == SLOT_E_OK && memcmp(&pub, &full_req, sizeof(pub)) != 0)
        T_FAIL_("slot_proto_parse filled another request than the full parser: %.*s", (int)len, line);
    if (err != SLOT_E_OK && strcmp(msg, msg2) != 0)
        T_FAIL_("slot_proto_parse's message differs: \"%s\" / \"%s\"", msg2, msg);
    return took;
}

static bool same_s(const char *line)
{
    return same(line, strlen(line));
}

static const char *const hot[] = {
    "{\"op\":\"hold\",\"event\":\"hr-0123456789abcdef\",\"user\":\"u1234567\",\"request\":\"r12d687\",\"qty\":1}",
    "{\"id\":7,\"op\":\"hold\",\"event\":\"e\",\"user\":\"alice smith\",\"request\":\"k:1\",\"qty\":1000,"
    "\"client\":\"10.0.0.1\"}",
    " { \"op\" : \"hold\" ,\n\"event\":\"E.v_1\",\t\"user\":\"u\",\"request\":\"r\",\"qty\":2 } \r",
    "{\"id\":\"abc\",\"op\":\"confirm\",\"event\":\"e\",\"hold\":\"000000000012d687f00dfeedcafe1234\",\"user\":\"u\"}",
    "{\"id\":-9223372036854775,\"op\":\"confirm\",\"event\":\"e\",\"hold\":\"h\",\"user\":\"u\",\"qty\":3,"
    "\"reacquire\":true}",
    "{\"op\":\"confirm\",\"event\":\"e\",\"hold\":\"h\",\"user\":\"u\",\"reacquire\":false}",
    "{\"id\":\"\",\"op\":\"release\",\"event\":\"e\",\"hold\":\"h\",\"user\":\"u\"}",
    "{\"op\":\"extend\",\"event\":\"e\",\"hold\":\"h\",\"user\":\"u\",\"by_ms\":1000}",
    "{\"op\":\"extend\",\"event\":\"e\",\"hold\":\"h\",\"user\":\"u\",\"by_ms\":86400000}",
};

static const char *const other[] = {
    "",
    "{}",
    "{\"op\":\"hold\"}",
    "{\"op\":\"hold\",\"event\":\"e\",\"user\":\"u\",\"request\":\"r\",\"qty\":0}",
    "{\"op\":\"hold\",\"event\":\"e\",\"user\":\"u\",\"request\":\"r\",\"qty\":1001}",
    "{\"op\":\"hold\",\"event\":\"e\",\"user\":\"u\",\"request\":\"r\",\"qty\":1.0}",
    "{\"op\":\"hold\",\"event\":\"e\",\"user\":\"u\",\"request\":\"r\",\"qty\":1e0}",
    "{\"op\":\"hold\",\"event\":\"e\",\"user\":\"u\",\"request\":\"r\",\"qty\":01}",
    "{\"op\":\"hold\",\"event\":\"e\",\"user\":\"u\",\"request\":\"r\",\"qty\":1,\"qty\":1}",
    "{\"op\":\"hold\",\"event\":\"e\",\"user\":\"u\",\"request\":\"r\",\"qty\":1}x",
    "{\"op\":\"hold\",\"event\":\"e\",\"user\":\"u\",\"request\":\"r\",\"qty\":1,}",
    "{\"op\":\"hold\",\"event\":\"e e\",\"user\":\"u\",\"request\":\"r\",\"qty\":1}",
    "{\"op\":\"hold\",\"event\":\"e\",\"user\":\"\",\"request\":\"r\",\"qty\":1}",
    "{\"op\":\"hold\",\"event\":\"e\",\"user\":\"\\u00e9\",\"request\":\"r\",\"qty\":1}",
    "{\"op\":\"hold\",\"event\":\"e\",\"user\":\"\xc3\xa9\",\"request\":\"r\",\"qty\":1}",
    "{\"op\":\"hold\",\"event\":\"e\",\"user\":\"u\",\"request\":\"r\",\"qty\":1,\"grant\":\"g\"}",
    "{\"op\":\"hold\",\"event\":\"e\",\"user\":\"u\",\"request\":\"r\",\"qty\":1,\"allocation\":\"a\"}",
    "{\"op\":\"hold\",\"event\":\"e\",\"user\":\"u\",\"request\":\"r\",\"qty\":1,\"seats\":[\"A-1-1\"]}",
    "{\"op\":\"hold\",\"event\":\"e\",\"user\":\"u\",\"request\":\"r\",\"qty\":1,\"hold\":\"h\"}",
    "{\"op\":\"hold\",\"event\":\"e\",\"user\":\"u\",\"request\":\"r\",\"qty\":1,\"id\":null}",
    "{\"op\":\"hold\",\"event\":\"e\",\"user\":\"u\",\"request\":\"r\",\"qty\":1,\"id\":12345678901234567890}",
    "{\"op\":\"hold\",\"event\":\"e\",\"user\":\"u\",\"request\":\"r\",\"qty\":1,\"id\":{\"a\":1}}",
    "{\"op\":\"confirm\",\"event\":\"e\",\"hold\":\"h\",\"user\":\"u\",\"reacquire\":1}",
    "{\"op\":\"confirm\",\"event\":\"e\",\"hold\":\"h\",\"user\":\"u\",\"reacquire\":truex}",
    "{\"op\":\"extend\",\"event\":\"e\",\"hold\":\"h\",\"user\":\"u\",\"by_ms\":999}",
    "{\"op\":\"release\",\"event\":\"e\",\"hold\":\"\",\"user\":\"u\"}",
    "{\"op\":\"get_hold\",\"event\":\"e\",\"hold\":\"h\",\"user\":\"u\"}",
    "{\"op\":\"hold\\u0020\",\"event\":\"e\",\"user\":\"u\",\"request\":\"r\",\"qty\":1}",
    "[\"op\",\"hold\"]",
    "{\"op\":\"hold\",\"event\":\"e\",\"user\":\"u\",\"request\":\"r\",\"qty\":1",
};

TEST_IMPL(proto_fast_takes_the_hot_shapes)
{
    for (size_t i = 0; i < sizeof(hot) / sizeof(hot[0]); i++)
        if (!same_s(hot[i]))
            T_FAIL_("the fast path left a line of the hot shape: %s", hot[i]);
    /* what the C client library sends (slot-bench and slotctl use it) */
    slot_req req;
    char line[1024];
    ASSERT_EQ(slot_req_hold(&req, "hr-0123456789abcdef", "u42", "r-42", 3), 0);
    slot_req_set_id_int(&req, 99);
    long n = slot_req_encode(&req, line, sizeof(line));
    ASSERT(n > 1 && n < (long)sizeof(line));
    ASSERT(same(line, (size_t)n - 1));
    ASSERT_EQ(slot_req_hold_op(&req, SLOT_OP_CONFIRM, "e", "000000000012d687f00dfeedcafe1234", "u42"), 0);
    n = slot_req_encode(&req, line, sizeof(line));
    ASSERT(n > 1 && same(line, (size_t)n - 1));
    ASSERT_EQ(slot_req_hold_op(&req, SLOT_OP_RELEASE, "e", "000000000012d687f00dfeedcafe1234", "u42"), 0);
    n = slot_req_encode(&req, line, sizeof(line));
    ASSERT(n > 1 && same(line, (size_t)n - 1));
    ASSERT_EQ(slot_req_extend(&req, "e", "000000000012d687f00dfeedcafe1234", "u42", 60000), 0);
    n = slot_req_encode(&req, line, sizeof(line));
    ASSERT(n > 1 && same(line, (size_t)n - 1));
}

TEST_IMPL(proto_fast_leaves_the_rest)
{
    for (size_t i = 0; i < sizeof(other) / sizeof(other[0]); i++)
        if (same_s(other[i]))
            T_FAIL_("the fast path took a line outside its subset: %s", other[i]);
}

/* xorshift64*: the mutations' own generator, reproducible from the seed. */
static uint64_t rng_state;
static uint64_t rnd(void)
{
    rng_state ^= rng_state >> 12;
    rng_state ^= rng_state << 25;
    rng_state ^= rng_state >> 27;
    return rng_state * UINT64_C(2685821657736338717);
}

/* Bytes a mutation inserts: JSON's punctuation, digits, letters of the keys, edge bytes. */
static const char alphabet[] = "{}[]:,\"\\ \t\r\n-+.eE0123456789truefalsnopholdqtyidusrvcb_:\x7f\x01\xc3\xa9";
static const char *const snippets[] = {
    "\"qty\":", "\"id\":", "\"client\":\"c\"", "\"reacquire\":true", "\"by_ms\":", "1000", "0",
    "-1", "\"op\":\"hold\"", "\"op\":\"release\"", ",", "\"", "\\\"", "null", "9223372036854775807",
};

TEST_IMPL(proto_fast_matches_full_on_mutations)
{
    const char *env = getenv("SLOT_PROTO_FAST_SEED");
    uint64_t seed = env ? strtoull(env, NULL, 10) : (uint64_t)time(NULL) ^ ((uint64_t)getpid() << 32);
    if (seed == 0)
        seed = 1;
    fprintf(stderr, "proto_fast: SLOT_PROTO_FAST_SEED=%" PRIu64 "\n", seed);
    rng_state = seed;
    size_t nseeds = sizeof(hot) / sizeof(hot[0]);
    int took = 0, left = 0;
    for (int it = 0; it < 300000; it++) {
        char line[512];
        const char *base = hot[rnd() % nseeds];
        size_t n = strlen(base);
        memcpy(line, base, n);
        int edits = 1 + (int)(rnd() % 3);
        for (int e = 0; e < edits; e++) {
            size_t at = n ? (size_t)(rnd() % (n + 1)) : 0;
            switch (rnd() % 5) {
            case 0: /* replace a byte */
                if (at < n)
                    line[at] = alphabet[rnd() % (sizeof(alphabet) - 1)];
                break;
            case 1: /* insert a byte */
                if (n + 1 < sizeof(line)) {
                    memmove(line + at + 1, line + at, n - at);
                    line[at] = alphabet[rnd() % (sizeof(alphabet) - 1)];
                    n++;
                }
                break;
            case 2: /* delete a run */
                if (at < n) {
                    size_t k = 1 + (size_t)(rnd() % 8);
                    if (k > n - at)
                        k = n - at;
                    memmove(line + at, line + at + k, n - at - k);
                    n -= k;
                }
                break;
            case 3: { /* insert a snippet */
                const char *sn = snippets[rnd() % (sizeof(snippets) / sizeof(snippets[0]))];
                size_t k = strlen(sn);
                if (n + k < sizeof(line)) {
                    memmove(line + at + k, line + at, n - at);
                    memcpy(line + at, sn, k);
                    n += k;
                }
                break;
            }
            default: /* truncate */
                n = at;
                break;
            }
        }
        if (same(line, n))
            took++;
        else
            left++;
    }
    fprintf(stderr, "proto_fast: %d mutated lines taken by the fast path, %d left to the full parser\n", took,
            left);
    ASSERT(took > 1000 && left > 1000); /* both sides of the rule were exercised */
}
