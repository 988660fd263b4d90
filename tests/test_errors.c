/*
 * test_errors.c — the registry of internal error codes (slot/error.h,
 * SLOT_RC_MAP and SLOT_RC_WING_MAP) and slot_strerror.
 *
 * src/base/error.c checks at compile time that every code lies in its wing's
 * range and that the ranges are disjoint (and its switch refuses a number
 * used twice); these cases check the same from the tables as the program
 * sees them, that the checker itself catches a planted duplicate, and what
 * slot_strerror says for each kind of number.
 */
#include <errno.h>
#include <limits.h>
#include <lmdb.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "harness.h"
#include "slot/error.h"

TEST_DECLARE(errors_every_code_in_its_wing_range)
TEST_DECLARE(errors_wing_ranges_are_disjoint)
TEST_DECLARE(errors_codes_and_messages_are_unique)
TEST_DECLARE(errors_uniqueness_check_catches_a_planted_duplicate)
TEST_DECLARE(errors_strerror_names_every_kind)
TEST_DECLARE(errors_strerror_matches_lmdb_for_every_mdb_code)

TEST_LIST_START
TEST_ENTRY(errors_every_code_in_its_wing_range)
TEST_ENTRY(errors_wing_ranges_are_disjoint)
TEST_ENTRY(errors_codes_and_messages_are_unique)
TEST_ENTRY(errors_uniqueness_check_catches_a_planted_duplicate)
TEST_ENTRY(errors_strerror_names_every_kind)
TEST_ENTRY(errors_strerror_matches_lmdb_for_every_mdb_code)
TEST_LIST_END

/* One registry entry, with its wing's bounds. */
typedef struct code {
    const char *wing, *name, *msg;
    int value, hi, lo;
} code;

static const code codes[] = {
#define SLOT__CODE(wing, name, value, msg) {#wing, #name, msg, (value), SLOT_RC_##wing##_HI, SLOT_RC_##wing##_LO},
    SLOT_RC_MAP(SLOT__CODE)
#undef SLOT__CODE
};
#define CODES (sizeof(codes) / sizeof(codes[0]))

typedef struct wing {
    const char *name;
    int hi, lo;
} wing;

static const wing wings[] = {
#define SLOT__WING(w, hi, lo, who) {#w, (hi), (lo)},
    SLOT_RC_WING_MAP(SLOT__WING)
#undef SLOT__WING
};
#define WINGS (sizeof(wings) / sizeof(wings[0]))

/*
 * The first two entries of list[0..n) that share a number, into *a and *b;
 * false when every number is used once. O(n^2): the registry is small.
 */
static bool find_duplicate(const code *list, size_t n, size_t *a, size_t *b)
{
    for (size_t i = 0; i < n; i++)
        for (size_t j = i + 1; j < n; j++)
            if (list[i].value == list[j].value) {
                *a = i;
                *b = j;
                return true;
            }
    return false;
}

TEST_IMPL(errors_every_code_in_its_wing_range)
{
    ASSERT_GT(CODES, 0);
    for (size_t i = 0; i < CODES; i++) {
        const code *c = &codes[i];
        if (c->value > c->hi || c->value < c->lo)
            T_FAIL_("%s (%d) is outside the %s range %d..%d", c->name, c->value, c->wing, c->hi, c->lo);
        /* apart from errno values of either sign and from LMDB's codes */
        ASSERT(c->value <= SLOT_RC_HI && c->value >= SLOT_RC_LO);
        ASSERT(c->value < -4095);
        ASSERT(c->value > MDB_LAST_ERRCODE || c->value < MDB_KEYEXIST);
    }
}

TEST_IMPL(errors_wing_ranges_are_disjoint)
{
    for (size_t i = 0; i < WINGS; i++) {
        ASSERT(wings[i].hi >= wings[i].lo);
        ASSERT(wings[i].hi <= SLOT_RC_HI && wings[i].lo >= SLOT_RC_LO);
        for (size_t j = i + 1; j < WINGS; j++)
            if (!(wings[i].lo > wings[j].hi || wings[j].lo > wings[i].hi))
                T_FAIL_("the %s range %d..%d overlaps the %s range %d..%d", wings[i].name, wings[i].hi, wings[i].lo,
                        wings[j].name, wings[j].hi, wings[j].lo);
    }
}

TEST_IMPL(errors_codes_and_messages_are_unique)
{
    size_t a = 0, b = 0;
    if (find_duplicate(codes, CODES, &a, &b))
        T_FAIL_("%s and %s are both %d", codes[a].name, codes[b].name, codes[a].value);
    for (size_t i = 0; i < CODES; i++) {
        ASSERT(codes[i].msg[0] != '\0');
        ASSERT_STR_EQ(slot_strerror(codes[i].value), codes[i].msg);
        for (size_t j = i + 1; j < CODES; j++)
            if (strcmp(codes[i].msg, codes[j].msg) == 0)
                T_FAIL_("%s and %s share the message \"%s\"", codes[i].name, codes[j].name, codes[i].msg);
    }
}

/* The check above is only as good as find_duplicate: plant a duplicate in a
 * copy of the registry (the last entry takes the first one's number). */
TEST_IMPL(errors_uniqueness_check_catches_a_planted_duplicate)
{
    static code copy[CODES];
    memcpy(copy, codes, sizeof(copy));
    ASSERT_GT(CODES, 1);
    copy[CODES - 1].value = copy[0].value;
    size_t a = 99, b = 99;
    ASSERT(find_duplicate(copy, CODES, &a, &b));
    ASSERT_EQ((int)a, 0);
    ASSERT_EQ((int)b, (int)(CODES - 1));
}

TEST_IMPL(errors_strerror_names_every_kind)
{
    ASSERT_STR_EQ(slot_strerror(0), "success");
    /* the registry: the batch log's and the store's SEQ once shared -20101 */
    ASSERT_STR_EQ(slot_strerror(SLOT_RLOG_E_SEQ), "the record's seq is not the log's last seq + 1");
    ASSERT_STR_EQ(slot_strerror(SLOT_STORE_E_SEQ), "record seq is not the store's seq + 1");
    ASSERT_STR_EQ(slot_strerror(SLOT_BACKUP_E_MAGIC), "not a slotd backup");
    ASSERT_STR_EQ(slot_strerror(SLOT_ETCD_ETIMEDOUT), "etcd did not answer within the request timeout");
    /* errno values, either sign */
    ASSERT_STR_EQ(slot_strerror(ENOENT), strerror(ENOENT));
    ASSERT_STR_EQ(slot_strerror(-ENOENT), strerror(ENOENT));
    ASSERT_STR_EQ(slot_strerror(-ENOSPC), strerror(ENOSPC));
    /* LMDB's codes, in LMDB's words */
    ASSERT_STR_EQ(slot_strerror(MDB_NOTFOUND), "MDB_NOTFOUND: No matching key/data pair found");
    ASSERT_STR_EQ(slot_strerror(MDB_MAP_FULL), "MDB_MAP_FULL: Environment mapsize limit reached");
    /* anything else: the number, plainly */
    static const struct {
        int rc;
        const char *text;
    } unknown[] = {
        {12345678, "unknown error 12345678"},
        {-12345678, "unknown error -12345678"},
        {-4096, "unknown error -4096"},
        {SLOT_RC_LO, "unknown error -29999"},
        {MDB_KEYEXIST - 1, "unknown error -30800"},
        {INT_MIN, "unknown error -2147483648"},
    };
    for (size_t i = 0; i < sizeof(unknown) / sizeof(unknown[0]); i++)
        ASSERT_STR_EQ(slot_strerror(unknown[i].rc), unknown[i].text);
}

/* The copy of LMDB's texts in src/base/error.c is the linked LMDB's. */
TEST_IMPL(errors_strerror_matches_lmdb_for_every_mdb_code)
{
    for (int rc = MDB_KEYEXIST; rc <= MDB_LAST_ERRCODE; rc++)
        ASSERT_STR_EQ(slot_strerror(rc), mdb_strerror(rc));
    ASSERT_STR_EQ(slot_strerror(EIO), mdb_strerror(EIO)); /* LMDB passes errno values through */
}
