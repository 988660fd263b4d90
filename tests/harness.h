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

extern int slot_test_failures;

#define T_FAIL_(fmt, ...)                                                                  \
    do {                                                                                   \
        fprintf(stderr, "%s:%d: FAIL: " fmt "\n", __FILE__, __LINE__, __VA_ARGS__);         \
        abort();                                                                           \
    } while (0)

#define ASSERT(cond)                                                                       \
    do {                                                                                   \
        if (!(cond))                                                                       \
            T_FAIL_("%s", #cond);                                                          \
    } while (0)

#define ASSERT_INT_(a, op, b)                                                              \
    do {                                                                                   \
        int64_t a_ = (int64_t)(a), b_ = (int64_t)(b);                                      \
        if (!(a_ op b_))                                                                   \
            T_FAIL_("%s %s %s (%" PRId64 " vs %" PRId64 ")", #a, #op, #b, a_, b_);         \
    } while (0)

#define ASSERT_EQ(a, b) ASSERT_INT_(a, ==, b)
#define ASSERT_NE(a, b) ASSERT_INT_(a, !=, b)
#define ASSERT_LT(a, b) ASSERT_INT_(a, <, b)
#define ASSERT_LE(a, b) ASSERT_INT_(a, <=, b)
#define ASSERT_GT(a, b) ASSERT_INT_(a, >, b)
#define ASSERT_GE(a, b) ASSERT_INT_(a, >=, b)

#define ASSERT_STR_EQ(a, b)                                                                \
    do {                                                                                   \
        const char *a_ = (a), *b_ = (b);                                                   \
        if (strcmp(a_, b_) != 0)                                                           \
            T_FAIL_("%s == %s (\"%s\" vs \"%s\")", #a, #b, a_, b_);                        \
    } while (0)

/* A test case: a function registered in the program's table. */
typedef struct slot_test_case {
    const char *name;
    void (*fn)(void);
} slot_test_case;

/*
 * slot_test_main — run the cases (all, or those whose name contains argv[1]),
 * each in a forked child so a crash fails only that case. Prints one line per
 * case and ends with "N passed, N failed". Returns the exit status.
 */
int slot_test_main(int argc, char **argv, const slot_test_case *cases, size_t n);

/* slot_test_tmpdir — a new empty folder under $TMPDIR (or /tmp); heap string, caller frees.
 * slot_test_rmdir — remove it and what it holds. */
char *slot_test_tmpdir(void);
void slot_test_rmdir(const char *dir);

/* slot_test_now_ms — wall clock, ms since the epoch. */
uint64_t slot_test_now_ms(void);

/* A slotd started by a test. */
typedef struct slot_test_server {
    pid_t pid;
    uint16_t port;
    char *dir;        /* data folder (owned when own_dir) */
    bool own_dir;
} slot_test_server;

/*
 * slot_test_server_start — start $SLOTD (the built daemon) with
 * --listen 127.0.0.1:0 --data DIR plus `extra` (NULL-terminated argv, may be
 * NULL), and wait (up to 10 s) for its "listening on HOST:PORT" line.
 *   dir: the data folder, or NULL for a new temporary one (removed by stop).
 * Aborts the test on failure.
 */
void slot_test_server_start(slot_test_server *s, const char *dir, const char *const *extra);
struct slot_client;

/* slot_test_dial — a client connection to s on 127.0.0.1 (5 s connect
 * timeout); aborts the test when it cannot connect. Close with slot_client_close. */
struct slot_client *slot_test_dial(const slot_test_server *s);

/* slot_test_stat — one counter of s's `stats` reply ("name":N at any depth
 * of the line), asked over a new connection; aborts when it is missing. */
uint64_t slot_test_stat(const slot_test_server *s, const char *name);

/* slot_test_server_stop — SIGTERM, wait (up to 10 s, then SIGKILL); returns the exit status (or 128+sig). */
int slot_test_server_stop(slot_test_server *s);
/* slot_test_server_kill9 — SIGKILL and reap; the data folder is kept. */
void slot_test_server_kill9(slot_test_server *s);
/* slot_test_server_free — remove the folder if owned. */
void slot_test_server_free(slot_test_server *s);

#endif
