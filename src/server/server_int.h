/*
 * server_int.h — the structs that slotd's server modules share, and nothing
 * else: the server (one per process), its connections and its entries (one
 * request from arrival to reply). docs/design.md, "Threads", has the picture.
 *
 *   server.c  start and stop: listen, signals, the data folder's lock, the store
 *   conn.c    connections: libuv I/O, line framing, per-connection limits, replies
 *   conn_log.c a connection's peer and the "dropped a client" line
 *   admit.c   the request router: where a parsed request goes (TCP and HTTP)
 *   auth.c    the token file, hello, roles (a verdict; admit.c logs it)
 *   reads.c   the read ops' answers: hello, stats, metrics, backup, cluster
 *   park.c    the writes that wait for a cold event's keys
 *   loop.c    the loop core: entry pool, write queue, dispatch, read txn, counters
 *   commit.c  the commit thread: batches, map growth, the hand-back (uv_async)
 *   feed_sub.c feed consumers: subscriptions, pushes, the window (conn's level)
 *   http.c    the HTTP listener (--http): each request is an entry of a stand-in
 *             conn (conn.http set), answered through the same batches
 *
 * Each module's header includes this one and nothing of another module, so
 * the include graph has no cycle. Every field is the loop thread's unless
 * its comment says otherwise. Errors: slot/error.h, "Internal errors".
 */
#ifndef SLOT_SERVER_INT_H
#define SLOT_SERVER_INT_H

#include <lmdb.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <uv.h>

#include "base/log.h"
#include "server.h"
#include "server_opts.h"
#include "slot/alloc.h"
#include "slot/backup.h"
#include "slot/hist.h"
#include "slot/limits.h"
#include "slot/ops.h"
#include "slot/rlog.h"
#include "slot/wset.h"
#include "slot/store.h"

/* ---- entries: one request from arrival to reply */

typedef enum entry_state {
    ENTRY_QUEUED,    /* a write op waiting for, or in, a batch */
    ENTRY_PARKED,    /* a write op waiting in s->park for a cold event's keys (loop.c, "parking") */
    ENTRY_READ_WAIT, /* a read op waiting for the earlier entries of its connection */
    ENTRY_WORKING,   /* a backup, on a worker thread (server_backup.c); answered when it ends */
    ENTRY_DONE,      /* res is the answer; encode when it reaches the head */
} entry_state;

/* A reply's outcome, as the metrics count replies (slotd_replies_total). */
#define SLOT__OUTCOME_MAP(X) \
    X(OK, "ok")              \
    X(SOLD_OUT, "sold_out")  \
    X(ERROR, "error")
typedef enum slot__outcome {
#define SLOT__OC_ENUM(name, text) SLOT__OUTCOME_##name,
    SLOT__OUTCOME_MAP(SLOT__OC_ENUM)
#undef SLOT__OC_ENUM
        SLOT__OUTCOME_COUNT
} slot__outcome;

typedef struct conn conn;
typedef struct server server;

typedef struct entry {
    struct entry *next;  /* the connection's FIFO, or the free list */
    struct entry *qnext; /* the write queue */
    conn *conn;          /* NULL: the sweeper's, or its connection went away */
    entry_state state;
    bool parsed; /* false: an error for a line that is not a request (no id unless parsed) */
    bool sweep;
    bool cold_step;      /* the cold-event loader's entry: a slice of keys (slot_alloc_cold_step) */
    bool cold_park;      /* commit thread: not run, it waits for a cold event's keys (parked on hand-back) */
    uintptr_t owner;     /* its connection's address when admitted: an identity the commit thread
                            compares (never dereferences), so a connection's writes keep their order */
    uint64_t t0_ns;      /* uv_hrtime() at arrival */
    uint64_t change_tag; /* cluster_change: the change it started (0: none yet); the replica-set layer's */
    uint8_t place_step;  /* --placement: SLOT__PLACE_* (0: none), the replica-set layer's (placement.c) */
    uint64_t place_tag;  /* --placement: its etcd step's tag (0: none yet); the replica-set layer's */
    slot_req req;
    slot_res res;
} entry;

/* ---- connections */

/* open -> draining (replies written, FIN sent, unread input discarded until
 * EOF or SLOT_DRAIN_MS) -> closing; open -> closing. Closing a socket whose
 * input was not read sends RST, and the peer's kernel may then drop replies
 * it had received. Changed only by conn.c's checked conn_set_state. */
#define SLOT__CONN_STATE_MAP(X) \
    X(OPEN, "open")             \
    X(DRAINING, "draining")     \
    X(CLOSING, "closing")

typedef enum conn_state {
#define SLOT__CS_ENUM(name, text) CONN_##name,
    SLOT__CONN_STATE_MAP(SLOT__CS_ENUM)
#undef SLOT__CS_ENUM
        CONN__COUNT
} conn_state;

struct conn {
    uv_tcp_t tcp;
    server *srv;
    conn *prev, *next; /* all connections */
    conn *dirty_next;  /* has entries that became DONE this batch */
    bool dirty;
    conn_state state;
    bool reading;           /* uv_read_start in effect */
    bool close_after_flush; /* line_too_long, unauthenticated */
    bool writing;           /* a uv_write is in flight */
    uint64_t drain_deadline_ms;
    uint64_t last_read_ms;     /* loop time (uv_now) of the last bytes read */
    uint64_t partial_since_ms; /* when the unfinished line started */
    uint64_t write_since_ms;   /* when the uv_write in flight started */
    uv_shutdown_t sreq;
    slot_role role;
    entry *head, *tail;
    uint32_t pending; /* entries in the FIFO */
    uint32_t parked;  /* of them, ENTRY_PARKED: its later writes park behind them */
    uint32_t placing; /* of them, writes that wait at the head for the placement map (--placement) */
    char *partial;    /* bytes of a line not ended yet */
    size_t partial_len, partial_cap;
    char *out; /* replies being collected */
    size_t out_len, out_cap;
    char *wbuf; /* replies being written */
    size_t wbuf_cap;
    uv_write_t wreq;
    struct slot__feed_sub *sub; /* subscribed as a feed consumer (feed_sub.c), or NULL */
    /* Not NULL: this conn stands for one HTTP request (http.c) and has no
     * socket of its own: tcp, the reading and writing fields and the time
     * bounds are unused; it is never in s->conns but in s->http_conns, and
     * s->conn_up.flush sends it to http.c. */
    struct slot__hreq *http;
};

typedef struct token {
    slot_role role;
    size_t len;
    char value[SLOT_TOKEN_BYTES_MAX + 1];
} token;

/*
 * The calls that go up from the loop core and the commit hand-back to the
 * connections (conn.c), and from the connections to the feed's
 * subscriptions, set once by server.c before the loop runs. They are
 * pointers so that loop.c and commit.c do not depend on conn.c, nor conn.c
 * on feed_sub.c, each of which depends on the other: the call graph of
 * src/server stays a tree of layers (tools/wings.py).
 */
typedef struct slot__conn_upcalls {
    void (*flush)(conn *c);  /* slot__conn_flush: write what is answered, in request order */
    void (*pace)(conn *c);   /* slot__conn_pace: pause or resume reading by c's bounds */
    void (*reap)(server *s); /* slot__conns_reap: close connections past a time bound */
    void (*feed)(server *s); /* slot__feed_pump: push what the last batch added to the feed */
    /* From the connections (conn.c) and the router (admit.c) up to the feed's
     * subscriptions (feed_sub.c), which call conn.c: */
    bool (*feed_admit)(server *s, conn *c, entry *e); /* slot__feed_admit */
    void (*feed_answered)(conn *c, entry *e);         /* slot__feed_answered */
    void (*feed_fill)(conn *c);                       /* slot__feed_fill */
    void (*feed_gone)(conn *c);                       /* slot__feed_conn_gone */
} slot__conn_upcalls;

/* The replica-set layer's numbers for the metrics (metrics.c), as the
 * cluster op shows them: its hook fills one of these on the loop thread. */
typedef struct slot__clu_member_metrics {
    char node[SLOT_CLUSTER_NAME_BYTES_MAX + 1];
    uint64_t lag_records; /* the commit point minus what it acked */
    uint64_t silence_ms;  /* since it last acked or answered a heartbeat */
} slot__clu_member_metrics;

typedef struct slot__clu_metrics {
    const char *role; /* "joining", "replica" or "primary"; static */
    uint64_t epoch;
    uint64_t applied;    /* LMDB's seq: what this node applied */
    uint64_t commit_seq; /* the commit point this node knows */
    size_t nmembers;     /* primary: the other members (others: 0) */
    slot__clu_member_metrics members[SLOT_CLUSTER_MEMBERS_MAX];
} slot__clu_metrics;

/*
 * The calls into the replica-set layer (src/cluster*.c), set by server.c when
 * --cluster is given (s->clu non-NULL); never called otherwise. Pointers for
 * the same reason as slot__conn_upcalls: cluster.c sits above loop.c and
 * commit.c and calls down into them.
 */
/* What read_gate (below) says of a read op. */
typedef enum slot__read_gate {
    SLOT__READ_GO = 0,       /* run it now */
    SLOT__READ_WAIT = 1,     /* not committed yet: it stays READ_WAIT, s->reads_waiting is set */
    SLOT__READ_ANSWERED = 2, /* refused: res holds the error */
} slot__read_gate;

/* An entry's place_step (--placement; src/cluster/placement.c): where it is
 * in the steps that run before a write is queued. */
enum {
    SLOT__PLACE_NONE = 0,  /* not one of the placement's */
    SLOT__PLACE_DEFER = 1, /* READ_WAIT: runs its steps when it reaches its connection's head */
    SLOT__PLACE_FRESH = 2, /* queued create_event whose map entry it made: undone if the create is refused */
    SLOT__PLACE_DONE = 3,  /* queued (or answered); nothing more to do */
};

/* What place_run (below) says of a deferred entry. */
typedef enum slot__place_state {
    SLOT__PLACE_ANSWERED = 0, /* res is filled: answer it */
    SLOT__PLACE_RUNNING = 1,  /* waiting for etcd: it stays READ_WAIT and is asked again */
    SLOT__PLACE_QUEUE = 2,    /* run it: the caller queues it as a write */
} slot__place_state;

/* What change (below) says of a cluster_change entry. */
typedef enum slot__change_state {
    SLOT__CHANGE_ANSWERED = 0, /* res is filled: answer it */
    SLOT__CHANGE_RUNNING = 1,  /* still running: it stays READ_WAIT and is asked again */
} slot__change_state;

typedef struct slot__cluster_hooks {
    /* loop: whether writes are refused now (not_primary, unavailable); when
     * they are and res is not NULL, res gets the error. */
    bool (*write_gate)(server *s, slot_res *res);
    /* commit thread, in the batch's write txn after its ops: raise seq with
     * the tenure, seal the write set into the record, append it to the batch
     * log and sync. 0 or an error (the txn is then aborted). */
    int (*batch_record)(server *s, MDB_txn *txn);
    /* commit thread: the txn failed after batch_record: take the record back. */
    void (*batch_unrecord)(server *s);
    /* loop: a batch came back from the commit thread; true when the layer
     * keeps it until its acks are in (it calls slot__batch_finish then, or,
     * pipelined, holds it with slot__pipe_hold). */
    bool (*batch_hold)(server *s);
    /* loop, pipelined: the flusher's durable or LMDB's seq moved: the commit
     * point may rise (the layer answers through slot__pipe_release). */
    void (*pipe_moved)(server *s);
    /* loop: before a read op runs on rtxn: SLOT__READ_GO run it;
     * SLOT__READ_WAIT wait (it stays READ_WAIT; s->reads_waiting is set);
     * SLOT__READ_ANSWERED answered (res has an error). */
    slot__read_gate (*read_gate)(server *s, MDB_txn *rtxn, slot_res *res);
    /* commit thread: the layer's own job (apply records, promote). */
    void (*job_run)(server *s);
    /* loop: that job is done. */
    void (*job_done)(server *s);
    /* loop: the cluster op's body, heap, owned by the caller's res (freed by
     * slot_res_clear); NULL: out of memory. */
    slot_cluster_view *(*cluster_view)(server *s);
    /* loop: the node's role, epoch, positions and members' lag, for the metrics. */
    void (*metrics)(server *s, slot__clu_metrics *out);
    /* loop: a cluster_change entry (docs/protocol.md, "cluster_change"):
     * SLOT__CHANGE_ANSWERED (res filled) or SLOT__CHANGE_RUNNING (it stays
     * READ_WAIT and is asked again when s->reads_waiting is resumed). */
    slot__change_state (*change)(server *s, entry *e);
    /* loop: true while a planned switchover holds new batches back (the queue
     * keeps them; slot__dispatch hands nothing to the commit thread). */
    bool (*write_pause)(server *s);
    /* loop: whether this node is the primary now (GET /primary). */
    bool (*is_primary)(server *s);
    /* loop: the primary's HTTP address "HOST:PORT" as it published it, or ""
     * when not known (a 307's Location). Valid until the loop's next turn. */
    const char *(*primary_http)(server *s);
    /* loop, --placement (src/cluster/placement.c; NULL without it): a
     * parsed write of c being admitted; true when the layer took it (it is
     * then READ_WAIT with place_step SLOT__PLACE_DEFER). */
    bool (*place_admit)(server *s, conn *c, entry *e);
    /* loop: a deferred entry at its connection's head, or the placement op. */
    slot__place_state (*place_run)(server *s, entry *e);
    /* loop: an entry is being answered (every reply of a --placement node). */
    void (*place_answered)(server *s, entry *e);
    /* loop, --placement: whether internal op e (place_*) may run here: its
     * mac is the cluster secret's; false with e->res filled (forbidden). */
    bool (*place_auth)(server *s, entry *e);
} slot__cluster_hooks;

struct slot__cluster;

/* ---- the server's parts, each owned by one module; the thread that uses
 * each field is noted once per part (the loop thread unless it says so) */

/* The entry pool (loop.c). Loop thread. */
typedef struct slot__entry_pool {
    uint64_t live;   /* entries taken from the pool and not yet back */
    entry *free;     /* the free list (via next) */
    bool mem_paused; /* some connection stopped reading at SLOT_ENTRIES_MAX */
} slot__entry_pool;

/* The write queue the next batch is taken from (loop.c). Loop thread. */
typedef struct slot__write_queue {
    entry *head, *tail; /* via qnext */
    uint32_t len;
} slot__write_queue;

/* The writes that wait for cold events' keys, and the loader's state
 * (park.c; loop.h, "Parking"). Loop thread. */
typedef struct slot__park_list {
    entry *head, *tail;   /* in order, via qnext */
    uint32_t n;           /* at most SLOT_COLD_PARKED_MAX */
    bool step_pending;    /* the loader's entry is queued or in the batch */
    uint32_t loading;     /* the commit thread's slot_alloc_cold_loading at the last hand-back */
    uint64_t loaded_seen; /* its slot_alloc_cold_loaded then */
    bool unpark;          /* that number moved: the parked writes go back to the queue */
} slot__park_list;

/* The --http side (http.c). Loop thread. */
typedef struct slot__http_side {
    conn *conns;                 /* the stand-ins of HTTP requests in progress */
    struct slot__http *listener; /* the --http listener; NULL without --http */
    char addr[80];               /* its bound "HOST:PORT"; "" without --http */
} slot__http_side;

/* The batch hand-off between the loop and the commit thread (commit.c).
 * mu guards ready, done, stop, job_cluster and the batch itself (items, n)
 * while the commit thread may see them; busy is the loop's; the fields
 * marked "commit thread" are written there and read by the loop only after
 * the hand-back (uv_async), under mu. */
typedef struct slot__batch_hand {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    pthread_t thread;
    bool thread_started;
    entry *items[SLOT_BATCH_REQUESTS_MAX];
    size_t n;
    bool busy; /* loop: a batch is with the commit thread */
    bool ready, done, stop;
    bool job_cluster;                               /* the commit thread's work is clu_up.job_run, not a batch */
    uint64_t run_ns;                                /* commit thread: time of the last run (alloc + commit) */
    uint64_t sync_ns;                               /* commit thread: of that, in mdb_txn_commit (writes + fsync) */
    uint64_t failures;                              /* commit thread: failed attempts of the last run */
    uint32_t cold_loading;                          /* commit thread: slot_alloc_cold_loading after the last run */
    uint64_t cold_loaded;                           /* commit thread: slot_alloc_cold_loaded after the last run */
    uint64_t cold_walked;                           /* commit thread: holds the last run's slice walked */
    uintptr_t cold_conns[SLOT_COLD_CONN_SET_SLOTS]; /* commit thread: owners with a parked entry in
                                      the batch being run (open addressing, 0 = empty) */
    uint32_t cold_conns_n;
    uint64_t tag;      /* commit thread, under mu (pipelined): the seq the last batch's replies wait for */
    bool wrote;        /* commit thread: the last run changed state (beyond a set's seq and record) */
    bool tag_wrote;    /* commit thread, under mu (pipelined): wrote, handed back with tag */
    bool commit_asked; /* loop, under mu (pipelined): a read waits, commit the open state soon */
    slot_wset *wset;   /* commit thread: where each batch's write set is captured,
                                      for the replication layer to ship; NULL (standalone): no
                                      capture, seq still counts the batches that wrote */
} slot__batch_hand;

/*
 * --durability pipelined (commit.c; docs/design.md, "Pipelined group
 * commit"): the batch log, its flusher thread, the open LMDB transaction and
 * the batches whose replies wait for the log's flush. mu guards the log and
 * the counters marked "mu"; cv wakes the flusher (appended moved) and the
 * commit thread (durable moved).
 */
typedef struct slot__pipe_held {
    entry *items[SLOT_BATCH_REQUESTS_MAX];
    size_t n;
    uint64_t tag; /* released once durable >= tag */
} slot__pipe_held;

typedef struct slot__pipe {
    bool on;
    slot_rlog *rlog;
    slot_wset wset; /* the commit thread's capture (s->batch.wset points here) */
    pthread_mutex_t mu;
    pthread_cond_t cv;
    pthread_t flusher;
    bool flusher_started, stop; /* stop: mu */
    uint64_t appended;          /* mu: the log's last seq */
    uint64_t durable;           /* mu: every record up to this is flushed */
    uint64_t lmdb_seq;          /* mu: the seq of LMDB's last commit */
    uint64_t gen;               /* mu: raised by a take-back (a flush begun before it counts for nothing) */
    /* A replica set's primary (slot__pipe_attach_set; docs/design.md, "On a replica set's primary"):
     * the log is the cluster's (borrowed, not closed here), replies wait for the commit point. */
    bool set;
    pthread_mutex_t *rlog_mu; /* set: the cluster's lock on rlog; taken after mu, never before it */
    uint64_t point;           /* mu: set: the commit point the loop published (<= durable); LMDB commits only up
                                 to it; UINT64_MAX standalone */
    bool drop;                /* mu: set: the loop stepped down or stops: the open state is aborted, not committed */
    bool selling;             /* mu: set: between slot__pipe_reset and slot__pipe_drop: batches may run and the
                                 flusher flushes (a follower's log is the replica path's to flush) */
    bool commit_due;          /* commit thread, set: the open state is to be committed before the next batch */
    uv_async_t async;           /* flusher or commit thread -> loop: durable or lmdb_seq moved */
    bool async_open;
    /* commit thread only */
    MDB_txn *txn;          /* the open state, or NULL */
    uint32_t txn_batches;  /* batches in it */
    uint64_t txn_since_ms; /* when it was begun */
    uint64_t lmdb_prev;    /* the seq of the commit before lmdb_seq: durable in LMDB */
    /* loop thread only */
    slot__pipe_held held[SLOT_PIPE_DEPTH]; /* a ring of batches that ran, oldest first */
    size_t held_head, held_n;
    uint64_t released;  /* the highest tag whose replies went out */
    uint64_t lmdb_seen; /* lmdb_seq as the loop last read it */
    uint64_t ran;       /* the highest tag of a batch that ran */
    uint64_t ran_state; /* set: the highest tag of a batch that ran and changed state (a set's replays and
                           sold_out answers ship a record, raising ran, and change nothing the read path reads) */
    bool active;        /* set: this node sells as primary on the open state (slot__pipe_reset .. slot__pipe_drop) */
} slot__pipe;

/* The backup op (server_backup.c): one at a time, on a libuv worker. Loop
 * thread, but rc, info and err, which the worker writes and the loop reads
 * after it. */
typedef struct slot__backup_state {
    uv_work_t work;
    bool busy; /* a backup runs; entry is its request */
    entry *entry;
    int rc;                /* worker: slot_store_backup's */
    slot_backup_info info; /* worker */
    char err[512];         /* worker */
    uint64_t written;      /* backups written */
} slot__backup_state;

/* The --token-file's tokens (auth.c). Read by the loop thread; written
 * once by the main thread before the loop runs. */
typedef struct slot__auth_tokens {
    token tokens[SLOT_TOKENS_MAX];
    size_t ntokens;
} slot__auth_tokens;

/* The counters and histograms of stats and metrics (loop.c counts; reads.c
 * and metrics.c show them). Loop thread. */
typedef struct slot__server_stats {
    uint64_t conns_total, requests[SLOT_OP__COUNT], bad_lines, holds, sold_out, errors;
    uint64_t sold_out_fast;                 /* of sold_out, those answered by the read path (slot__hold_read) */
    uint64_t cold_parked;                   /* writes parked for a cold event's keys (each parking counted) */
    uint64_t cold_loaded;                   /* cold events whose keys were loaded in slices */
    uint64_t cold_walked;                   /* holds those slices walked */
    uint64_t cold_slices;                   /* batches that walked a slice */
    uint64_t errors_by_code[SLOT_E__COUNT]; /* errors split by code (slot__count_error); sums to errors */
    uint64_t replies[SLOT_OP__COUNT + 1][SLOT__OUTCOME_COUNT]; /* replies written, by op (the last
                                                             row: lines that did not parse) and outcome */
    uint64_t slow_logged_ms; /* loop time of the last slow-commit line (0: none yet) */
    uint64_t slow_unlogged;  /* slow commits since then not logged (at most one line a second) */
    uint64_t reads_paused, accepts_paused, conns_timed_out;
    uint64_t commits, commit_failures;
    uint64_t commit_busy_ns, commit_sync_ns; /* sums of batch.run_ns, batch.sync_ns */
    slot_hist *latency_us, *batch_sizes;
    slot_hist *commit_ns, *sync_ns; /* per batch: batch.run_ns and batch.sync_ns */
} slot__server_stats;

struct server {
    slot__server_opts opts;
    struct slot__cluster *clu;         /* the replica-set layer; NULL standalone */
    const slot__cluster_hooks *clu_up; /* set with clu: the replica-set layer's static table */
    bool reads_waiting;                /* a read waits for the commit point (read_gate said SLOT__READ_WAIT) */
    slot__conn_upcalls conn_up;        /* set by server.c; never NULL while the loop runs */
    slot__server_hooks hooks;          /* the daemon's (slot__server_run): the replica set, sd_notify */
    uv_loop_t *loop;
    uv_tcp_t listener;
    uv_signal_t sigint, sigterm;
    uv_check_t check;
    uv_async_t async;
    uv_timer_t sweep_timer, stop_timer;
    uv_timer_t room_timer; /* every SLOT_ROOM_TICK_MS: a sweep when a waiting room may admit */
    slot_store *store;
    slot_alloc read_alloc, write_alloc;
    MDB_txn *rtxn;             /* the loop's read transaction, reset between uses */
    bool rtxn_live;            /* rtxn is renewed: between read_begin and read_end */
    pthread_rwlock_t map_lock; /* read: a read txn is active; write: the map grows */

    slot__entry_pool pool;
    slot__write_queue queue;
    slot__park_list park;
    conn *conns;
    slot__http_side http;
    conn *dirty;
    uint32_t nconns;
    bool stopping, listener_open, sweep_pending, loop_done;
    bool accept_paused; /* a connection waits in libuv until one closes */
    int lock_fd;        /* flock on DATA/slotd.lock; -1 before data_lock */
    uint64_t stop_deadline_ms;

    slot__batch_hand batch;
    slot__pipe *pipe; /* --durability pipelined, else NULL */

    struct slot__feed_sub *subs; /* the subscribed connections (feed_sub.c) */
    MDB_txn *feed_rtxn;          /* feed_sub.c's read transaction, reset between uses */

    slot__backup_state backup;
    slot__auth_tokens auth;
    slot__server_stats stats;
    uint64_t start_ms; /* wall clock when the server started */
    char read_buf[SLOT_READ_BUF_BYTES];
};

#endif
