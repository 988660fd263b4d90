/*
 * tests/harness.h — what every slotd test program shares: always-on asserts
 * that print both sides (in the manner of libuv's ASSERT_EQ), temporary data
 * folders, and a real slotd started on an ephemeral loopback port.
 */
#ifndef SLOT_TEST_HARNESS_H
#define SLOT_TEST_HARNESS_H

#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

#include "slot/client.h" /* slot_req, slot_reply, slot_client */

/* The case running now (its name), for failure messages; NULL in the runner. */
extern const char *slot_test_current;

/* Prints where and why a case failed, naming the case, and aborts it (the
 * runner then reports it FAIL). Never compiled out, whatever NDEBUG says. */
#define T_FAIL_(fmt, ...)                                                   \
    do {                                                                    \
        fprintf(stderr, "%s:%d: FAIL in %s: " fmt "\n", __FILE__, __LINE__, \
                slot_test_current ? slot_test_current : "?", __VA_ARGS__);  \
        abort();                                                            \
    } while (0)

#define ASSERT(cond)              \
    do {                          \
        if (!(cond))              \
            T_FAIL_("%s", #cond); \
    } while (0)

/* Signed comparisons print both values; the unsigned ones (ASSERT_U64_*)
 * suit values that may be above INT64_MAX. */
#define ASSERT_INT_(a, op, b)                                                      \
    do {                                                                           \
        int64_t a_ = (int64_t)(a), b_ = (int64_t)(b);                              \
        if (!(a_ op b_))                                                           \
            T_FAIL_("%s %s %s (%" PRId64 " vs %" PRId64 ")", #a, #op, #b, a_, b_); \
    } while (0)

#define ASSERT_U64_(a, op, b)                                                      \
    do {                                                                           \
        uint64_t a_ = (uint64_t)(a), b_ = (uint64_t)(b);                           \
        if (!(a_ op b_))                                                           \
            T_FAIL_("%s %s %s (%" PRIu64 " vs %" PRIu64 ")", #a, #op, #b, a_, b_); \
    } while (0)

#define ASSERT_EQ(a, b) ASSERT_INT_(a, ==, b)
#define ASSERT_NE(a, b) ASSERT_INT_(a, !=, b)
#define ASSERT_LT(a, b) ASSERT_INT_(a, <, b)
#define ASSERT_LE(a, b) ASSERT_INT_(a, <=, b)
#define ASSERT_GT(a, b) ASSERT_INT_(a, >, b)
#define ASSERT_GE(a, b) ASSERT_INT_(a, >=, b)
#define ASSERT_U64_EQ(a, b) ASSERT_U64_(a, ==, b)
#define ASSERT_U64_LE(a, b) ASSERT_U64_(a, <=, b)

#define ASSERT_STR_EQ(a, b)                                         \
    do {                                                            \
        const char *a_ = (a), *b_ = (b);                            \
        if (strcmp(a_, b_) != 0)                                    \
            T_FAIL_("%s == %s (\"%s\" vs \"%s\")", #a, #b, a_, b_); \
    } while (0)

#define ASSERT_NOT_NULL(p)             \
    do {                               \
        if ((p) == NULL)               \
            T_FAIL_("%s != NULL", #p); \
    } while (0)

/* ---- the test list (in the manner of libuv's test/test-list.h)
 *
 * Every test program lists its cases once, at the top of its file:
 *
 *     TEST_DECLARE(hist_empty_is_zero)
 *     ...
 *     TEST_LIST_START
 *         TEST_ENTRY(hist_empty_is_zero)
 *         ...
 *     TEST_LIST_END
 *
 * and defines each with TEST_IMPL(hist_empty_is_zero) { ... }. A declared
 * case that is not defined, or defined and not listed, does not compile
 * (-Werror). Case names: snake_case, subject first (the op, module or part
 * under test, then what is shown). The shared main (harness.c) runs the list. */
typedef struct slot_test_case {
    const char *name;
    void (*fn)(void);
} slot_test_case;

#define TEST_DECLARE(name) static void test_##name(void);
#define TEST_IMPL(name) static void test_##name(void)
#define TEST_LIST_START const slot_test_case slot_test_list[] = {
#define TEST_ENTRY(name) {#name, test_##name},
#define TEST_LIST_END \
    {                 \
        NULL, NULL    \
    }                 \
    }                 \
    ;

/* SLOT_TEST_SKIP(fmt, ...) — the case cannot run here (not root, a tool
 * missing): it says why and ends as skipped, which counts neither as passed
 * nor as failed. A program whose every case skipped exits 77 (meson: SKIP). */
#define SLOT_TEST_SKIPPED 77
#define SLOT_TEST_SKIP(...)                \
    do {                                   \
        printf("  skipped: " __VA_ARGS__); \
        printf("\n");                      \
        fflush(stdout);                    \
        _exit(SLOT_TEST_SKIPPED);          \
    } while (0)

/* The program's cases, ended by {NULL, NULL}; defined by TEST_LIST_START. */
extern const slot_test_case slot_test_list[];

/*
 * The shared main (harness.c): `prog` runs every case of slot_test_list;
 * `prog NAME...` runs only the cases so named (an unknown name fails the run
 * and lists the names). Each case runs in a forked child, so a crash fails
 * only that case; each prints "PASS name (N ms)" or "FAIL name ...", and the
 * run ends with the names of the failed cases and then the line
 * "N passed, M failed" alone (CI parses it). Exit status 0 when none failed.
 */

/* slot_test_tmpdir — a new empty folder under $TMPDIR (or /tmp); heap string, caller frees.
 * slot_test_rmdir — remove it and what it holds. */
char *slot_test_tmpdir(void);
void slot_test_rmdir(const char *dir);

/* slot_test_set_name — copy the string src into dst (cap bytes, NUL ended)
 * and its length into *len, as proto fills a request's names; aborts when it
 * does not fit. */
void slot_test_set_name(char *dst, uint8_t *len, size_t cap, const char *src);

/* slot_test_req — a zeroed request for op on event ev (NULL: none), filled
 * the way proto fills it (name, length, SLOT_HAS_EVENT). */
slot_req slot_test_req(slot_op op, const char *ev);

/* slot_test_now_ms — wall clock, ms since the epoch. */
uint64_t slot_test_now_ms(void);

/* A slotd started by a test. */
typedef struct slot_test_server {
    pid_t pid;
    uint16_t port; /* 0 until it listens; stored atomically (release), so another thread may __atomic_load_n it */
    char *dir; /* data folder (owned when own_dir) */
    bool own_dir;
} slot_test_server;

/*
 * slot_test_wrapper — NULL, or a NULL-terminated argv (a program's path and
 * its flags, at most 31 entries) that slot_test_server_start and
 * slot_test_run_refused run the daemon under: the wrapper's argv, then
 * $SLOTD and its arguments. The wrapper must run $SLOTD in the process it
 * was started as (`strace -D` does), so the PID the harness knows, stops
 * and waits for is slotd's. A case sets it before it starts a server (each
 * case runs in its own forked child, so it ends with the case).
 */
extern const char *const *slot_test_wrapper;
/* slot_test_start_soft — true: a server that does not announce its listener
 * is reaped and slot_test_server_start returns with port 0 and pid 0 instead
 * of failing the case (a test that must see a refused start: test_powercut). */
extern bool slot_test_start_soft;
/* $SLOT_TEST_DURABILITY (sync, nosync, pipelined): slot_test_server_start
 * passes --durability with it before the case's own flags (which win), so a
 * suite runs on either commit path (a replica set's node too; the cluster
 * tests' nodes take SLOT_TEST_SET_DURABILITY instead, tests/cluster_fixture.c). */

/*
 * slot_test_server_start — start $SLOTD (the built daemon) with
 * --listen 127.0.0.1:0 --data DIR plus `extra` (NULL-terminated argv, may be
 * NULL), and wait (up to 10 s) for its "listening on HOST:PORT" line.
 *   dir: the data folder, or NULL for a new temporary one (removed by stop).
 * Aborts the test on failure.
 */
void slot_test_server_start(slot_test_server *s, const char *dir, const char *const *extra);
/* slot_test_dial — a client connection to s on 127.0.0.1 (5 s connect
 * timeout); aborts the test when it cannot connect. Close with slot_client_close. */
slot_client *slot_test_dial(const slot_test_server *s);

/* slot_test_stat — one counter of s's `stats` reply ("name":N at any depth
 * of the line), asked over a new connection; aborts when it is missing. */
uint64_t slot_test_stat(const slot_test_server *s, const char *name);

/* slot_test_start — s zeroed, then started on a new temporary data folder
 * (removed by slot_test_stop) with `extra` flags (may be NULL). */
void slot_test_start(slot_test_server *s, const char *const *extra);
/* slot_test_stop — stop s (it must exit 0) and remove its folder. */
void slot_test_stop(slot_test_server *s);

/* slot_test_call — one request and its reply on c (10 s timeout); aborts the
 * case unless the call itself succeeded (the reply may still be an error).
 * The reply is rep's to clear (slot_reply_clear). */
void slot_test_call(slot_client *c, const slot_req *q, slot_reply *rep);

/* ---- requests the end-to-end tests share (one implementation each) */

/* slot_test_create_event — create_event of ev with capacity units and the
 * settings s (NULL: every default; slot_req_create_event) on c; fails the case,
 * printing the reply, unless it is ok (a replay is ok). out: NULL, or the
 * reply, then the caller's to clear (slot_reply_clear). */
void slot_test_create_event(slot_client *c, const char *ev, uint64_t capacity, const slot_event_settings *s,
                            slot_reply *out);

/* A digest op's answer: the store's seq and its SHA-256 in lowercase hex. */
typedef struct slot_test_digest {
    uint64_t seq;
    char hex[SLOT_DIGEST_HEX_BYTES + 1];
} slot_test_digest;

/* slot_test_digest_of — the digest op on c; fails the case unless it is ok
 * with 64 lowercase hex digits. */
slot_test_digest slot_test_digest_of(slot_client *c);
/* slot_test_digest_same — a and b name the same seq and digest, else the case fails. */
void slot_test_digest_same(const slot_test_digest *a, const slot_test_digest *b);

/* slot_test_check_clean — the check op on ev (NULL: the whole store) on c
 * must answer ok with no violation, else the case fails printing the reply;
 * returns the holds it checked (the reply's "holds"). */
uint64_t slot_test_check_clean(slot_client *c, const char *ev);
/* slot_test_view_checked — slot_test_check_clean of ev, then ev's event view,
 * which must be ok with available + held + confirmed = capacity; the reply is
 * the caller's to clear. */
slot_reply slot_test_view_checked(slot_client *c, const char *ev);

/* slot_test_server_stop — SIGTERM, wait (up to 10 s, then SIGKILL); returns the exit status (or 128+sig). */
int slot_test_server_stop(slot_test_server *s);
/* slot_test_server_kill9 — SIGKILL and reap; the data folder is kept. */
void slot_test_server_kill9(slot_test_server *s);
/* slot_test_server_free — remove the folder if owned. */
void slot_test_server_free(slot_test_server *s);

/* slot_test_run_refused — run $SLOTD with args (NULL-ended, at most 14), which
 * must exit without listening (a usage or start error): returns its exit
 * status, its stderr (NUL-terminated, truncated to errlen) in err. Fails the
 * case when it listens or neither exits nor listens within 10 s. */
int slot_test_run_refused(const char *const *args, char *err, size_t errlen);

#endif
