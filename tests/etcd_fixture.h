/*
 * tests/etcd_fixture.h — what tests/test_etcd.c's cases share: the case's
 * libuv loop, a real etcd started on ephemeral loopback ports and stopped by
 * PID, synchronous wrappers around the client's calls (what a callback saw,
 * copied), a watch's events captured, and a fake HTTP server on the loop
 * that answers every request with one canned reply.
 *
 * Each case runs in its own forked child (harness.c), so the fixture's
 * state is global: one loop, one etcd folder per case.
 */
#ifndef SLOT_TEST_ETCD_FIXTURE_H
#define SLOT_TEST_ETCD_FIXTURE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "harness.h"
#include "slot/etcd.h"

#define ETCD_BIN "/usr/bin/etcd"
#define WAIT_MS 30000 /* the bound on any one wait; a pass never comes near it */

/* A status check that names the codes (slot_etcd_err_name, slot_strerror). */
#define ASSERT_ETCD_ST(got, want)                                                              \
    do {                                                                                       \
        int g_ = (got), w_ = (want);                                                           \
        if (g_ != w_)                                                                          \
            T_FAIL_("%s is %s (%s), want %s", #got, slot_etcd_err_name(g_), slot_strerror(g_), \
                    slot_etcd_err_name(w_));                                                   \
    } while (0)

/* ---- the loop */

extern uv_loop_t test_loop;

/* loop_open — initialise test_loop (and libcurl, for the fixture's own probes). */
void loop_open(void);
/* run_until — run the loop until *flag or max_ms (loop time); returns *flag. */
bool run_until(const bool *flag, uint64_t max_ms);
/* run_for — run the loop for ms. */
void run_for(uint64_t ms);
/* loop_finish — close the fixture's handles and check the loop has none
 * left (the client freed its own). */
void loop_finish(void);

/* ---- etcd, started and stopped by PID */

typedef struct etcd_srv {
    pid_t pid;
    int cport, pport;
    char dir[256]; /* the case's folder: etcd's data and log */
    char data[300], log[300], url[64];
} etcd_srv;

/* The host etcd listens on and its URLs name: a numeric IPv4 address of the
 * caller's network namespace; NULL (the default) is 127.0.0.1. */
extern const char *etcd_fixture_host;

/* free_port — a loopback port that was free a moment ago. */
int free_port(void);
/* blackhole — a listening socket that accepts (the kernel's backlog) and
 * never answers; its port in *port. Close the fd when done. */
int blackhole(int *port);
/*
 * etcd_start — a new etcd on a new temporary folder and two free loopback
 * ports (client, peer); returns once its /health says so (new ports on a
 * clash, 5 tries). Skips the case (SLOT_TEST_SKIP) when ETCD_BIN is missing;
 * fails it when etcd does not start. A failing case afterwards prints the
 * tail of etcd's log and keeps the folder.
 */
void etcd_start(etcd_srv *s);
/* etcd_restart — start it again on the same ports and data folder. */
void etcd_restart(etcd_srv *s);
/* etcd_stop — SIGTERM, wait (up to 10 s, then SIGKILL); the folder is kept. */
void etcd_stop(etcd_srv *s);
/* etcd_end — etcd_stop, then remove the case's folder. */
void etcd_end(etcd_srv *s);

/* ---- synchronous wrappers: what a callback saw, copied */

typedef struct res {
    bool done;
    int calls, status;
    bool found, succeeded, more;
    int64_t revision, mod_rev, create_rev, version, lease, id, ttl, deleted;
    uint8_t value[512];
    size_t value_len, count;
    char keys[8][64];
} res;

/* The callbacks fill the res that `data` points to (calls counts them). */
void on_get(slot_etcd *c, int status, const slot_etcd_get_result *g, void *data);
void on_range(slot_etcd *c, int status, const slot_etcd_range_result *g, void *data);
void on_cas(slot_etcd *c, int status, const slot_etcd_cas_result *g, void *data);
void on_write(slot_etcd *c, int status, const slot_etcd_write_result *g, void *data);
void on_lease(slot_etcd *c, int status, const slot_etcd_lease_result *g, void *data);

/* One call, the loop run until its callback (WAIT_MS at most), its result. */
res get_sync(slot_etcd *c, const char *key);
res put_sync(slot_etcd *c, const char *key, const void *v, size_t n, int64_t lease);
res cas_sync(slot_etcd *c, const char *key, int64_t expect, const char *v, int64_t lease);
res del_sync(slot_etcd *c, const char *key);
/* op: 0 grant (arg: TTL s), 1 keep-alive (arg: lease id), 2 revoke (arg: lease id). */
res lease_sync(slot_etcd *c, int op, int64_t arg);

/* client — a client on test_loop; 0 takes the default. */
slot_etcd *client(const char *endpoints, uint32_t timeout_ms, uint32_t inflight_max);
/* client_close — close it, then loop_finish. */
void client_close(slot_etcd *c);

/* ---- watch capture */

#define EVENTS_MAX 64
typedef struct watch_log {
    slot_etcd_watch *w;
    int n;
    slot_etcd_event_type type[EVENTS_MAX];
    int64_t rev[EVENTS_MAX];
    char key[EVENTS_MAX][64];
    char value[EVENTS_MAX][64];
    bool ended;
    int end_calls, end_status;
    int64_t last_rev;
    int cancel_after; /* cancel from the event callback after this many events (0 = never) */
} watch_log;

void on_event(slot_etcd_watch *w, const slot_etcd_event *ev, void *data);
void on_watch_end(slot_etcd_watch *w, int status, int64_t last_rev, void *data);
/* watch — start a watch into l (zeroed first, its cancel_after kept). */
void watch(slot_etcd *c, watch_log *l, const char *key, bool prefix, int64_t from);
/* wait_events — run the loop until l has n events, or it ended, or WAIT_MS;
 * true when it has n. */
bool wait_events(watch_log *l, int n);

/* ---- a fake etcd that answers badly */

typedef struct fake {
    uv_tcp_t server;
    int port;
    const char *reply; /* the whole HTTP response, sent once the request is in */
    size_t reply_len;
} fake;

/* fake_start — listen on 127.0.0.1:0 on test_loop (f->port); close
 * f->server with uv_close when done. */
void fake_start(fake *f);

#define HTTP_OK "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nConnection: close\r\n\r\n"

#endif
