/*
 * test_idem.c — the allocator's in-memory idempotency index (src/idem.h) on
 * its own: put, get, delete and replace under enough keys that every part of
 * it grows several times.
 */
#include "harness.h"
#include "src/idem.h" /* internal to libslot, tested directly */

TEST_DECLARE(idem_index_many_keys)

TEST_LIST_START
    TEST_ENTRY(idem_index_many_keys)
TEST_LIST_END


/* The idempotency index on its own, with enough keys that every part of it
 * doubles its buckets several times: what was put is found with its latest
 * seq, deleted keys are gone, a key differing in any one name is another key. */
TEST_IMPL(idem_index_many_keys)
{
    enum { N = 200000 };
    slot__idem *ix = slot__idem_new();
    ASSERT(ix != NULL);
    char user[32], req[32];
    for (uint32_t i = 0; i < N; i++) {
        snprintf(user, sizeof(user), "u%u", i);
        snprintf(req, sizeof(req), "r%u", i % 7);
        const char *ev = i % 2 ? "ev-a" : "ev-b";
        ASSERT_EQ(slot__idem_add(ix, ev, 4, user, strlen(user), req, strlen(req), i), 0);
    }
    ASSERT_EQ(slot__idem_count(ix), N);
    ASSERT(slot__idem_bytes(ix) > 0);
    for (uint32_t i = 0; i < N; i += 2) { /* replace the even ones' seq, delete every 4th */
        snprintf(user, sizeof(user), "u%u", i);
        snprintf(req, sizeof(req), "r%u", i % 7);
        if (i % 4 == 0)
            slot__idem_del(ix, "ev-b", 4, user, strlen(user), req, strlen(req));
        else
            ASSERT_EQ(slot__idem_put(ix, "ev-b", 4, user, strlen(user), req, strlen(req), (uint64_t)i + N), 0);
    }
    ASSERT_EQ(slot__idem_count(ix), N - N / 4);
    for (uint32_t i = 0; i < N; i++) {
        snprintf(user, sizeof(user), "u%u", i);
        snprintf(req, sizeof(req), "r%u", i % 7);
        const char *ev = i % 2 ? "ev-a" : "ev-b";
        uint64_t seq = UINT64_MAX;
        int rc = slot__idem_get(ix, ev, 4, user, strlen(user), req, strlen(req), &seq);
        if (i % 4 == 0) {
            ASSERT_EQ(rc, -1);
            ASSERT(seq == UINT64_MAX);
        } else {
            ASSERT_EQ(rc, 0);
            ASSERT_EQ(seq, i % 2 ? i : (uint64_t)i + N);
        }
        /* the same names under the other event, or another request key: not there */
        ASSERT_EQ(slot__idem_get(ix, i % 2 ? "ev-c" : "ev-d", 4, user, strlen(user), req, strlen(req), &seq), -1);
        ASSERT_EQ(slot__idem_get(ix, ev, 4, user, strlen(user), "other", 5, &seq), -1);
    }
    ASSERT_EQ(slot__idem_add(ix, "ev-b", 4, "u0", 2, "r0", 2, 42), 0); /* a deleted key comes back */
    uint64_t seq = 0;
    ASSERT_EQ(slot__idem_get(ix, "ev-b", 4, "u0", 2, "r0", 2, &seq), 0);
    ASSERT_EQ(seq, 42);
    slot__idem_free(ix);
}

