/*
 * error.c — names and messages of slot_err, generated from SLOT_ERR_MAP, and
 * slot_strerror for internal errors (slot/error.h), with the compile-time
 * checks of SLOT_RC_MAP's ranges.
 */
#include "slot/error.h"

#include <stdio.h>
#include <string.h>

static const char *const err_names[] = {
#define SLOT__ERR_NAME(name, code, msg) code,
    SLOT_ERR_MAP(SLOT__ERR_NAME)
#undef SLOT__ERR_NAME
};

static const char *const err_messages[] = {
#define SLOT__ERR_MSG(name, code, msg) msg,
    SLOT_ERR_MAP(SLOT__ERR_MSG)
#undef SLOT__ERR_MSG
};

_Static_assert(sizeof(err_names) / sizeof(err_names[0]) == SLOT_E__COUNT, "one name per code");

const char *slot_err_name(slot_err err)
{
    if ((unsigned)err >= SLOT_E__COUNT)
        return "internal";
    return err_names[err];
}

const char *slot_err_message(slot_err err)
{
    if ((unsigned)err >= SLOT_E__COUNT)
        return err_messages[SLOT_E_INTERNAL];
    return err_messages[err];
}

slot_err slot_err_from_name(const char *name)
{
    for (unsigned i = 0; i < SLOT_E__COUNT; i++)
        if (strcmp(err_names[i], name) == 0)
            return (slot_err)i;
    return SLOT_E__COUNT;
}

/* ---- internal errors: the registry, errno values and LMDB's codes */

/* Every code in its wing's range, and every range inside the registry's span. */
#define SLOT__RC_IN_WING(wing, name, value, msg)                                     \
    _Static_assert((value) <= SLOT_RC_##wing##_HI && (value) >= SLOT_RC_##wing##_LO, \
                   #name " is outside the " #wing " range of SLOT_RC_WING_MAP");
SLOT_RC_MAP(SLOT__RC_IN_WING)
#undef SLOT__RC_IN_WING
#define SLOT__RC_WING_SPAN(wing, hi, lo, who)                                \
    _Static_assert((hi) >= (lo) && (hi) <= SLOT_RC_HI && (lo) >= SLOT_RC_LO, \
                   "the " #wing " range is empty or outside SLOT_RC_HI..SLOT_RC_LO");
SLOT_RC_WING_MAP(SLOT__RC_WING_SPAN)
#undef SLOT__RC_WING_SPAN

/*
 * The ranges are disjoint: SLOT_RC_WING_MAP lists them from the top down and
 * each starts below the one before. The enum checks that chain: an
 * enumerator without a value is the one before it plus 1, so <WING>_BELOW is
 * (the previous wing's -lo) + 1, and -hi >= it says hi < the previous lo.
 */
enum {
    SLOT__RC_CHAIN_TOP = -SLOT_RC_HI - 1,
#define SLOT__RC_CHAIN(wing, hi, lo, who) SLOT__RC_##wing##_BELOW, SLOT__RC_##wing##_NEG_LO = -(lo),
    SLOT_RC_WING_MAP(SLOT__RC_CHAIN)
#undef SLOT__RC_CHAIN
};
#define SLOT__RC_ORDERED(wing, hi, lo, who) \
    _Static_assert(-(hi) >= SLOT__RC_##wing##_BELOW, "the " #wing " range overlaps the range before it");
SLOT_RC_WING_MAP(SLOT__RC_ORDERED)
#undef SLOT__RC_ORDERED

#define SLOT__ERRNO_MAX 4095 /* errno values are 1..4095 (Linux's MAX_ERRNO; libuv's -errno use the same span) */

/*
 * LMDB's codes with mdb_strerror's texts (LMDB 0.9's lmdb.h and mdb.c,
 * mdb_errstr), X(NAME, value, text): copied, so that base, and with it
 * libslot-client, neither links liblmdb nor needs <lmdb.h> (slot.pc names no
 * LMDB). tests/test_errors.c compares every value and text with the linked
 * LMDB's, MDB_KEYEXIST..MDB_LAST_ERRCODE.
 */
#define SLOT__MDB_ERR_MAP(X)                                                                                \
    X(KEYEXIST, -30799, "MDB_KEYEXIST: Key/data pair already exists")                                       \
    X(NOTFOUND, -30798, "MDB_NOTFOUND: No matching key/data pair found")                                    \
    X(PAGE_NOTFOUND, -30797, "MDB_PAGE_NOTFOUND: Requested page not found")                                 \
    X(CORRUPTED, -30796, "MDB_CORRUPTED: Located page was wrong type")                                      \
    X(PANIC, -30795, "MDB_PANIC: Update of meta page failed or environment had fatal error")                \
    X(VERSION_MISMATCH, -30794, "MDB_VERSION_MISMATCH: Database environment version mismatch")              \
    X(INVALID, -30793, "MDB_INVALID: File is not an LMDB file")                                             \
    X(MAP_FULL, -30792, "MDB_MAP_FULL: Environment mapsize limit reached")                                  \
    X(DBS_FULL, -30791, "MDB_DBS_FULL: Environment maxdbs limit reached")                                   \
    X(READERS_FULL, -30790, "MDB_READERS_FULL: Environment maxreaders limit reached")                       \
    X(TLS_FULL, -30789, "MDB_TLS_FULL: Thread-local storage keys full - too many environments open")        \
    X(TXN_FULL, -30788, "MDB_TXN_FULL: Transaction has too many dirty pages - transaction too big")         \
    X(CURSOR_FULL, -30787, "MDB_CURSOR_FULL: Internal error - cursor stack limit reached")                  \
    X(PAGE_FULL, -30786, "MDB_PAGE_FULL: Internal error - page has no more space")                          \
    X(MAP_RESIZED, -30785, "MDB_MAP_RESIZED: Database contents grew beyond environment mapsize")            \
    X(INCOMPATIBLE, -30784, "MDB_INCOMPATIBLE: Operation and DB incompatible, or DB flags changed")         \
    X(BAD_RSLOT, -30783, "MDB_BAD_RSLOT: Invalid reuse of reader locktable slot")                           \
    X(BAD_TXN, -30782, "MDB_BAD_TXN: Transaction must abort, has a child, or is invalid")                   \
    X(BAD_VALSIZE, -30781, "MDB_BAD_VALSIZE: Unsupported size of key/DB name/data, or wrong DUPFIXED size") \
    X(BAD_DBI, -30780, "MDB_BAD_DBI: The specified DBI handle was closed/changed unexpectedly")

#define SLOT__MDB_FIRST (-30799) /* MDB_KEYEXIST */

static const char *const mdb_texts[] = {
#define SLOT__MDB_TEXT(name, value, text) text,
    SLOT__MDB_ERR_MAP(SLOT__MDB_TEXT)
#undef SLOT__MDB_TEXT
};

/* The copy has no gaps: entry i is MDB_KEYEXIST + i, as in LMDB. */
enum {
#define SLOT__MDB_INDEX(name, value, text) SLOT__MDB_AT_##name,
    SLOT__MDB_ERR_MAP(SLOT__MDB_INDEX)
#undef SLOT__MDB_INDEX
        SLOT__MDB_COUNT
};
#define SLOT__MDB_IN_ORDER(name, value, text) \
    _Static_assert((value) == SLOT__MDB_FIRST + SLOT__MDB_AT_##name, "MDB_" #name " out of LMDB's order");
SLOT__MDB_ERR_MAP(SLOT__MDB_IN_ORDER)
#undef SLOT__MDB_IN_ORDER

_Static_assert(SLOT_RC_HI < -SLOT__ERRNO_MAX, "the registry is apart from -errno");
_Static_assert(SLOT_RC_LO > SLOT__MDB_FIRST + SLOT__MDB_COUNT - 1 && SLOT__MDB_FIRST < -SLOT__ERRNO_MAX,
               "the registry, -errno and LMDB's codes are apart");

const char *slot_strerror(int rc)
{
    if (rc == 0)
        return "success";
    switch (rc) {
#define SLOT__RC_MSG(wing, name, value, msg) \
    case value:                              \
        return msg;
        SLOT_RC_MAP(SLOT__RC_MSG)
#undef SLOT__RC_MSG
    default:
        break;
    }
    if (rc >= -SLOT__ERRNO_MAX && rc <= SLOT__ERRNO_MAX)
        return strerror(rc < 0 ? -rc : rc);
    if (rc >= SLOT__MDB_FIRST && rc < SLOT__MDB_FIRST + SLOT__MDB_COUNT)
        return mdb_texts[rc - SLOT__MDB_FIRST];
    static _Thread_local char unknown[32];
    snprintf(unknown, sizeof(unknown), "unknown error %d", rc);
    return unknown;
}
