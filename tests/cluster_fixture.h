/*
 * tests/cluster_fixture.h — what the replica-set tests (tests/test_cluster.c,
 * tests/test_cluster_faults.c) share: a line client, three slotd nodes on a
 * private etcd (tests/etcd_fixture.c) with ephemeral ports and temporary
 * folders, stopped by PID; the waits (each bounded by count and time), the
 * invariants, and client threads that hold one unit at a time through the
 * primary, recording every acknowledged hold.
 *
 * Each case runs in its own forked child (harness.c), so the state is global.
 */
#ifndef SLOT_TEST_CLUSTER_FIXTURE_H
#define SLOT_TEST_CLUSTER_FIXTURE_H

#include <jansson.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "etcd_fixture.h"
#include "harness.h"

#define NODES 3
#define EVENT "sale"
#define WAIT_LONG_MS 30000

/* ---- a line client: one request, one reply, with a timeout */

typedef struct line_conn {
    int fd, node; /* node: index into nodes[] */
    char buf[65536];
    size_t len;
} line_conn;

/* lc_open — connect to node i's client address (its host, its port); 0 or -1. */
int lc_open(line_conn *c, int i);
void lc_close(line_conn *c);
/* lc_call — send line (nothing when it is ""), return the parsed reply
 * (NULL: the connection failed or timed out; it is closed then). */
json_t *lc_call(line_conn *c, const char *line, int timeout_ms);
/* call1 — one request to node i on a new connection (5 s). */
json_t *call1(int i, const char *line);
const char *jstr(json_t *j, const char *k); /* "" when absent */
bool jok(json_t *j);
uint64_t ju64(json_t *j, const char *k);
void sleep_ms(int ms);

/* ---- the set */

typedef struct node {
    char id[8];
    char dir[300];
    char host[32];        /* its client address's host; "127.0.0.1" unless a case sets it */
    const char *extra[8]; /* more flags for it (NULL-terminated; a case sets them) */
    int netns_fd;         /* > 0: started inside this network namespace */
    char log[320];        /* its stderr, when node_logs */
    slot_test_server srv;
    bool up, stopped;
} node;

extern etcd_srv etcd;
extern node nodes[NODES];
extern char secret_path[300], base_dir[256];
/* Each node's --failover-timeout-ms; a case may make one node never campaign. */
extern const char *failover_ms[NODES];
/* true: each node's stderr goes to base_dir/<id>.log (node_log_has reads it). */
extern bool node_logs;
/* The host of etcd's client URL the nodes are given. */
extern char etcd_host[32];

/* node_start — start (or restart, on its folder) node n with the set's flags and n->extra. */
void node_start(node *n);
/* node_log_has — node i's log has a line containing needle (and needle2, unless NULL). */
bool node_log_has(int i, const char *needle, const char *needle2);
/* set_start — etcd (unless a case started it), the secret, three nodes (n1 founds the set). */
void set_start(void);
/* set_end — kill -9 every node still up, end etcd, remove the folder. */
void set_end(void);
/* find_primary — the node whose cluster op says primary and that takes a write; -1 after max_ms. */
int find_primary(int max_ms);
/* wait_members — every live node shows want members and is primary or replica; false after max_ms. */
bool wait_members(int want, int max_ms);
/* wait_converged — every live node has the same seq and digest (into digest_out, 80 bytes, may be NULL). */
bool wait_converged(int max_ms, char *digest_out);
/* assert_invariants — check is clean and held + confirmed + available = capacity on node i. */
void assert_invariants(int i, uint64_t capacity);

/* ---- load */

#define HOLDS_MAX 200000
typedef struct acked {
    char hold[40];
    char user[24];
    uint64_t at_ms; /* slot_test_now_ms() when the answer came */
} acked;

extern acked acks[HOLDS_MAX];
extern atomic_int nacks;
extern atomic_int primary_node; /* the node the loaders send to */
extern atomic_bool load_stop;
extern atomic_int load_retries;
extern pthread_mutex_t acks_mu;
/* true: a loader that is told not_primary with an address moves to that node
 * on its own (a planned switchover); otherwise loaders go to primary_node. */
extern atomic_bool load_follow;
/* node_by_addr — the index of the node whose client address is "H:P" (-1: none). */
int node_by_addr(const char *addr);
/* ack_gap_ms — the longest time between two consecutive acknowledged holds
 * whose answers came in [from_ms, to_ms] (slot_test_now_ms()); 0 with fewer than two. */
uint64_t ack_gap_ms(uint64_t from_ms, uint64_t to_ms);

typedef struct loader {
    pthread_t t;
    int id, holds_max;
    int pause_ms; /* between holds */
} loader;

void *load_main(void *arg);
/* load_start — n threads, each up to holds_each holds (retrying each with the same request key). */
void load_start(loader *ls, int n, int holds_each, int pause_ms);
void load_join(loader *ls, int n);
/* assert_holds_on — every acknowledged hold is on node i, held. */
void assert_holds_on(int i);
/* create_event — EVENT with capacity on node p (8 shards, hour-long holds). */
void create_event(int p, uint64_t capacity);

#endif
