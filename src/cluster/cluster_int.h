/*
 * cluster_int.h — what the replica-set layer's files share (cluster.h is
 * what the server sees): the node's role, the configuration it knows from
 * etcd, the members it tracks, the batch log and the replication channel.
 *
 *   cluster.c          start and stop, etcd (lease, node key, polls, the watch), the jobs
 *   cluster_role.c     the roles' transition table, the configuration's CAS, following
 *   cluster_failover.c a replica's failover: the pre-vote and the takeover
 *   cluster_cfg.c      the JSON of etcd's values, the cluster op
 *   cluster_primary.c  the primary's data path: records, acks, commit point, drops and joins
 *   cluster_replica.c  the replica's data path: records in, acks, apply, read and write gates
 *   cluster_change.c   planned changes on the primary (the cluster_change op): add, remove, promote
 *
 * Threads: every field is the loop thread's, except those marked "commit
 * thread", which the commit thread uses while it runs a batch or a job (the
 * loop leaves them alone then: one batch or job in flight, handed over under
 * s->batch.mu), and the batch log, which both use under rlog_mu.
 * docs/design.md, "Replica sets", is the design these files follow.
 */
#ifndef SLOT_CLUSTER_INT_H
#define SLOT_CLUSTER_INT_H

#include <pthread.h>

#include "cluster.h"
#include "slot/etcd.h"
#include "slot/repl.h"
#include "slot/rlog.h"
#include "slot/wset.h"

/* The node's role. PROMOTING: won the configuration, bringing the members to
 * its log and waiting for the acks of its tenure's first record. It changes
 * only in slot__clu_set_role, by the table of slot__clu_role_ok:
 *
 *   INIT, JOINING, REPLICA -> JOINING, REPLICA, PROMOTING
 *   PROMOTING              -> PRIMARY, REPLICA
 *   PRIMARY                -> REPLICA
 *
 * Nothing goes back to INIT; a primary steps down through REPLICA. */
#define CLU_ROLE_MAP(X)     \
    X(INIT, "joining")      \
    X(JOINING, "joining")   \
    X(REPLICA, "replica")   \
    X(PROMOTING, "primary") \
    X(PRIMARY, "primary")
typedef enum clu_role {
#define CLU__ROLE_ENUM(name, text) CLU_##name,
    CLU_ROLE_MAP(CLU__ROLE_ENUM)
#undef CLU__ROLE_ENUM
} clu_role;

/* The configuration key's value (docs/design.md, "Shape"). */
typedef struct clu_config {
    bool found;
    int64_t mod_rev;
    uint64_t epoch, tenure;
    char primary[SLOT_CLUSTER_NAME_BYTES];
    size_t nmembers;
    char members[SLOT_CLUSTER_MEMBERS_MAX][SLOT_CLUSTER_NAME_BYTES];
    /* nodes removed on purpose (cluster_change remove): never dialled nor
     * added back until a cluster_change add names them */
    size_t nremoved;
    char removed[SLOT_CLUSTER_MEMBERS_MAX][SLOT_CLUSTER_NAME_BYTES];
} clu_config;

/* A node as its key in etcd shows it, and what this node knows of it as primary. */
typedef struct clu_node {
    char id[SLOT_CLUSTER_NAME_BYTES];
    char addr[SLOT_CLUSTER_ADDR_BYTES]; /* client address (--advertise) */
    char repl[SLOT_CLUSTER_ADDR_BYTES]; /* replication address */
    char http[SLOT_CLUSTER_ADDR_BYTES]; /* HTTP address (--http), "" when it has none */
    uint64_t tenure, seq;               /* its log's last record, as it published it */
    uint64_t applied;                   /* its applied seq, as published */
    char role[16];
    bool live; /* its key was in the last listing */
    /* primary side */
    bool dialing, ready;  /* slot_repl_connect in progress / handshake done */
    bool counted;         /* its acks are waited for (member, or a joiner caught up) */
    uint64_t next_send;   /* the next seq to send it */
    uint64_t acked;       /* every record up to this is durable on it */
    uint64_t last_ack_ms; /* loop time of its last ack (or of ready) */
    uint64_t last_dial_ms;
    /* primary side: joining by snapshot (cluster_snap.c) */
    uint8_t snap;      /* CLU_SNAP_*: NONE, WANT (made next), SENDING, ACK (waiting for its ACK) */
    uint64_t snap_seq; /* the snapshot's seq, once SENDING */
    /* a replica's pre-vote (cluster.c, failover): the loop time at which a
     * dial of ours last reached it (it answered the handshake: a refusal
     * counts), 0 never */
    uint64_t reach_ms;
} clu_node;

/* A node's snapshot, primary side: NONE -> WANT -> SENDING -> ACK -> NONE;
 * any state may go to NONE (dropped) or WANT (a new connection starts
 * over); slot__clu_snap_set asserts the edges. */
enum { CLU_SNAP_NONE, CLU_SNAP_WANT, CLU_SNAP_SENDING, CLU_SNAP_ACK };

/* The commit thread's job (s->batch.job_cluster). */
typedef enum clu_job { CLU_JOB_NONE, CLU_JOB_APPLY, CLU_JOB_PROMOTE, CLU_JOB_SNAP } clu_job;

struct slot__placement;
struct slot__mover;

typedef struct slot__cluster {
    server *s;
    struct slot__placement *place; /* --placement (placement.c); NULL without it */
    slot_repl_secret place_secret; /* the cluster secret: the internal ops' mac (placement.c); wiped at free */
    struct slot__mover *mover;     /* --placement: the mover's loop side (mover_loop.c); NULL without it */
    clu_role role;
    char self[SLOT_CLUSTER_NAME_BYTES];
    char adv[SLOT_CLUSTER_ADDR_BYTES];       /* our client address */
    char repl_addr[SLOT_CLUSTER_ADDR_BYTES]; /* our bound replication address */
    char http_addr[SLOT_CLUSTER_ADDR_BYTES]; /* our HTTP address, "" without --http */
    uint32_t hb_ms, failover_ms, repl_to_ms, min_replicas;

    slot_etcd *etcd;
    slot_repl *repl;
    uv_timer_t tick;
    uv_check_t sync_check; /* replica: sync the log and ack once per loop turn */
    bool stopping, tick_open, check_open;
    char key_config[128], key_node_prefix[128], key_node[200];

    /* etcd state */
    int64_t lease; /* 0: none yet */
    bool lease_busy, node_put_busy, poll_cfg_busy, poll_nodes_busy, cas_busy;
    uint64_t node_put_ms;   /* loop time of the last node key put */
    uint64_t lease_ms;      /* loop time of the last lease grant or keepalive sent */
    slot_etcd_watch *watch; /* the configuration key's watch (NULL: none now) */
    int64_t watch_rev;      /* re-arm from here (0: from now on) */
    uint64_t poll_cfg_ms;   /* loop time of the last configuration poll */
    clu_config cfg;         /* the latest configuration known */
    size_t nnodes;
    clu_node nodes[SLOT_CLUSTER_MEMBERS_MAX];

    /* the batch log, shared with the commit thread */
    pthread_mutex_t rlog_mu;
    slot_rlog *rlog;
    slot_wset wset;

    /* positions */
    uint64_t tenure;     /* primary: ours; commit thread reads it in a batch */
    uint64_t commit_seq; /* the commit point known */
    uint64_t applied;    /* LMDB's seq (what apply reached) */
    uint64_t verified;   /* replica: our log agrees with the stream's primary up to here */
    bool rebuild;        /* replica: LMDB holds records cut from the log: rebuild it */

    /* primary: the batch (or tenure record) waiting for its acks */
    uint64_t pending_seq; /* 0: none */
    uint64_t pending_since_ms;
    bool batch_held;            /* a batch's answers wait for pending_seq */
    bool unavailable;           /* a record timed out: writes unavailable until it is acked */
    uint64_t batch_seq;         /* commit thread: the record the running batch appended (0: none) */
    uint64_t batch_prev_tenure; /* commit thread: for undoing it */

    /* replica: what the stream delivered and is not yet synced and acked */
    uint64_t unsynced_seq;
    bool stream_open;
    char stream_from[SLOT_CLUSTER_NAME_BYTES];

    /* failover */
    bool campaigning;
    bool promote_wanted; /* the promote job has not run yet */
    bool cas_drop;       /* the CAS in flight drops silent members */
    /* primary: a CAS that adds members is in doubt from its send until a
     * definite answer, or until the key is seen past the revision it
     * compared: etcd may have applied it although its answer timed out. Till
     * then the members it adds are waited for as if they were members
     * (docs/design.md, "A CAS in doubt"); the union of such CASes on one
     * revision. */
    bool doubt;
    int64_t doubt_rev;       /* the revision those CASes compared */
    clu_config doubt_cfg;    /* nmembers, members: the members they add */
    uint64_t defer_until_ms; /* waiting for a more complete member until then */
    uint64_t probe_since_ms; /* the pre-vote's dials went out then (0: none out) */
    uint64_t probe_next_ms;  /* after a pre-vote that reached too few: none before then */
    uint32_t probe_misses;   /* pre-votes in a row that reached too few members */
    uint64_t probes_failed;  /* pre-votes that reached too few members, since start */

    /* a planned change (cluster_change.c): one at a time */
    slot_cluster_change chg; /* the change running (SLOT_CHANGE_NONE: none) */
    char chg_node[SLOT_CLUSTER_NAME_BYTES];
    uint64_t chg_tag, chg_tags; /* the running or last change's tag; tags handed out */
    uint64_t chg_deadline_ms;   /* loop time: given up then */
    bool chg_done;              /* the change of chg_tag ended: chg_err, chg_msg */
    slot_err chg_err;
    char chg_msg[160];
    bool chg_cas;   /* the CAS in flight is the change's */
    bool switching; /* promote: new batches wait while what is in flight drains */
    uint64_t switch_since_ms;

    /* snapshots (cluster_snap.c) */
    uint64_t keep_records; /* --log-keep-records */
    uint64_t trim_ms;      /* loop time of the last trim */
    /* primary: the one snapshot being made or sent */
    bool snap_making; /* the copy runs on the thread pool */
    uv_work_t snap_work;
    char snap_node[SLOT_CLUSTER_NAME_BYTES]; /* for whom */
    char snap_path[4200];                    /* DATA/snap-send.bak */
    int snap_rc;                             /* the backup's result (pool thread, then loop) */
    char snap_err[1024];                     /* its message when snap_rc != 0 */
    uint64_t snap_seq, snap_tenure, snap_bytes, snap_off;
    int snap_fd; /* -1: none being sent */
    uint64_t snap_since_ms;
    uint8_t *snap_buf; /* SLOT_REPL_SNAP_CHUNK_BYTES, while sending */
    uint64_t snaps_sent;
    /* replica: the one being received */
    bool snap_recv;  /* chunks are coming: no apply job meanwhile */
    bool snap_ready; /* DATA/snap is whole: the install job is wanted */
    int snap_in_fd;
    uint64_t snap_in_seq, snap_in_tenure, snap_in_since_ms;
    bool need_snap; /* our log cannot bring LMDB back: ask for a snapshot */
    uint64_t snaps_installed;

    /* the commit thread's job */
    clu_job job;          /* the job in flight */
    int job_rc;           /* commit thread: its result */
    uint64_t job_applied; /* commit thread: LMDB's seq after it */
    uint64_t job_target;  /* apply up to here */
    bool job_rebuild;
} slot__cluster;

typedef slot__cluster clu;

/* ---- cluster.c */
/* one structured log line of the replica-set layer at level (every line of
 * it comes through here): the constant message msg, the fields node, role
 * and epoch (this node, its role, the configuration's epoch it knows), then
 * the caller's fields (at least one, SLOT__LF_S/U/I: another node as "peer",
 * positions as "seq", "tenure", a file as "path", a failure as "error"...).
 * What varies goes in fields, so JSON logs can be searched by them. Never
 * the cluster secret. The loop thread, or the commit thread in its jobs
 * (cluster_snap.c's install); a line is one write (log.h). */
#define SLOT__CLU_LOG(c, level, msg, ...)                                                                        \
    slot__log((level), (msg), SLOT__LF_S("node", (c)->self), SLOT__LF_S("role", slot__clu_role_name((c)->role)), \
              SLOT__LF_U("epoch", (c)->cfg.epoch), __VA_ARGS__)
/* SLOT__CLU_LOG for a thread other than the loop (the commit thread, the
 * flusher): the node only, set before the threads start; the role and the
 * epoch are the loop's, which it may be changing meanwhile. */
#define SLOT__CLU_TLOG(c, level, msg, ...) slot__log((level), (msg), SLOT__LF_S("node", (c)->self), __VA_ARGS__)
/* the node entry for id; add: make one when missing (NULL when full). */
clu_node *slot__clu_node(clu *c, const char *id, bool add);
bool slot__clu_is_member(const clu_config *cfg, const char *id);
/* publish our node key now (role, log position). */
void slot__clu_node_put(clu *c);
/* the log's last (tenure, seq), under rlog_mu. */
void slot__clu_log_last(clu *c, uint64_t *tenure, uint64_t *seq);
/* the tenure of record seq in our log (0 when unknown), under rlog_mu. */
uint64_t slot__clu_epoch_of(clu *c, uint64_t seq);
/* a commit-thread job, when the thread is idle. */
void slot__clu_job_start(clu *c, clu_job job);

/* ---- cluster_role.c */
/* whether role from may move to role to (the table above); any thread. */
bool slot__clu_role_ok(clu_role from, clu_role to);
/* the one place c->role changes: asserts the edge is in the table (a
 * programmer error aborts, SLOT_ASSERT). Loop thread. */
void slot__clu_set_role(clu *c, clu_role to);
/* a configuration read from etcd (a poll, the watch, a CAS's answer). */
void slot__clu_config_seen(clu *c, const clu_config *cfg);
/* become a follower of cfg's primary (from any role). */
void slot__clu_follow(clu *c);
/* CAS the configuration (c->cfg's revision) to next; one at a time (cas_busy);
 * what: a short phrase for the log lines (copied). */
void slot__clu_cas(clu *c, const clu_config *next, const char *what);
/* bootstrap: no configuration yet: CAS one with us alone (epoch 1, tenure 1). */
void slot__clu_bootstrap(clu *c);
/* take over: CAS {epoch+1, tenure=epoch+1, primary self, same members}. */
void slot__clu_take_over(clu *c);

/* ---- cluster_failover.c */
/* a replica's tick: fence the silent primary and take over, after the pre-vote. */
void slot__clu_failover_tick(clu *c);

/* ---- cluster_change.c */
/* the cluster_change op (s->clu_up->change): SLOT__CHANGE_ANSWERED or SLOT__CHANGE_RUNNING. */
slot__change_state slot__clu_change(server *s, entry *e);
/* s->clu_up->write_pause. */
bool slot__clu_write_pause(server *s);
/* move the running change on (tick, CAS answer, acks). */
void slot__clu_change_step(clu *c);
bool slot__clu_is_removed(const clu_config *cfg, const char *id);

/* ---- cluster_snap.c */
/* primary: on_ready of a peer whose log we cannot continue: true when it gets a snapshot. */
bool slot__clu_snap_wanted(clu *c, clu_node *n, const slot_repl_peer *peer);
/* both roles: make, send, install, trim; from the tick and once per loop turn. */
void slot__clu_snap_tick(clu *c);
/* primary: node n acked seq; true when that ended its snapshot (records follow). */
bool slot__clu_snap_acked(clu *c, clu_node *n, uint64_t seq);
/* whether a node's snapshot state may move from to to (the table above). */
bool slot__clu_snap_ok(uint8_t from, uint8_t to);
/* the one place clu_node.snap changes: asserts the edge (SLOT_ASSERT). Loop thread. */
void slot__clu_snap_set(clu_node *n, uint8_t to);
/* primary: a node's connection ended, or we stepped down: drop its snapshot. */
void slot__clu_snap_drop(clu *c, clu_node *n);
/* replica: the channel's on_snap. */
int slot__clu_on_snap(void *ctx, const char *from, uint64_t seq, uint64_t tenure, uint64_t offset, uint64_t total,
                      const uint8_t *data, size_t n);
/* replica: the primary's stream ended: a snapshot half received is dropped. */
void slot__clu_snap_stream_end(clu *c);
/* commit thread: CLU_JOB_SNAP; loop: its end. */
int slot__clu_job_snap(clu *c);
void slot__clu_snap_done(clu *c);
/* start: a snapshot whole on disk (DATA/snap) from a run that stopped is installed, DATA/snap.tmp removed.
 * Before the commit thread starts, after the log opened. 0 or -1 (logged). */
int slot__clu_snap_recover(clu *c);
/* stop: close what is open, remove the file being sent. */
void slot__clu_snap_stop(clu *c);

/* ---- cluster_cfg.c */
/* parse the config key's value; 0 or -1. */
int slot__clu_config_parse(const uint8_t *v, size_t n, clu_config *out);
/* the config's JSON into buf; its length, or 0 when it does not fit. */
size_t slot__clu_config_json(const clu_config *cfg, char *buf, size_t cap);
/* parse a node key's value into n (id kept); 0 or -1. */
int slot__clu_node_parse(const uint8_t *v, size_t len, clu_node *n);
/* our node key's value into buf; its length (0: does not fit). */
size_t slot__clu_node_json(clu *c, char *buf, size_t cap);
/* the cluster op's body (s->clu_up->cluster_view): loop thread; heap, the
 * caller's (slot_res_clear frees it as res->cluster_view); NULL: out of memory. */
slot_cluster_view *slot__clu_cluster_view(server *s);
/* the metrics' numbers (s->clu_up->metrics): role, epoch, positions, members' lag. */
void slot__clu_metrics_get(server *s, slot__clu_metrics *out);
/* slot__clu_is_primary — this node is the primary now (GET /primary's 200). */
bool slot__clu_is_primary(server *s);
/* slot__clu_primary_http — the primary's HTTP address as its node key
 * published it ("" unknown, or without --http); borrowed until the next
 * listing of the node keys. */
const char *slot__clu_primary_http(server *s);
/* split "H:P" into host and port; 0 or -1. */
int slot__clu_split_addr(const char *addr, char *host, size_t cap, int *port);
const char *slot__clu_role_name(clu_role r);

/* ---- cluster_primary.c */
int slot__clu_batch_record(server *s, MDB_txn *txn);
void slot__clu_batch_unrecord(server *s);
bool slot__clu_batch_hold(server *s);
/* became primary (the CAS won): promote job, then the tenure record. */
void slot__clu_promote(clu *c);
/* step down: answer what is held unavailable, disconnect the replicas. */
void slot__clu_step_down(clu *c);
/* primary tick: dial, time out acks, add joiners. */
void slot__clu_primary_tick(clu *c);
/* the commit point may have risen (an ack, a drop). */
void slot__clu_commit_check(clu *c);
void slot__clu_pump(clu *c, clu_node *n);
/* the pending record timed out and no drop is possible: answer unavailable. */
void slot__clu_unavailable(clu *c);
/* the commit-thread side of CLU_JOB_PROMOTE. */
int slot__clu_job_promote(clu *c);

/* ---- cluster_pipe.c: --durability pipelined on a primary (docs/design.md,
 * "On a replica set's primary"). Loop thread, each.
 * slot__clu_pipe_hold — a batch ran in the open state: its record goes to
 *   every member and its replies are held (slot__pipe_hold) with its seq as
 *   tag; answered unavailable at once when this node does not sell. True.
 * slot__clu_pipe_commit_check — the commit point rises to the largest seq
 *   that is flushed here and acked by every node whose acks count; the held
 *   batches up to it are answered.
 * slot__clu_pipe_moved — the flusher's durable or LMDB's seq moved. */
bool slot__clu_pipe_hold(server *s);
void slot__clu_pipe_commit_check(clu *c);
void slot__clu_pipe_moved(server *s);
/* the loop side of the promote job's end. */
void slot__clu_promote_done(clu *c);
void slot__clu_on_ready_primary(clu *c, const slot_repl_peer *peer);
void slot__clu_on_ack(void *ctx, const char *node_id, uint64_t seq);

/* ---- cluster_replica.c */
int slot__clu_on_record(void *ctx, const char *from, const uint8_t *rec, size_t rec_bytes, const slot_wset_rec *dec);
void slot__clu_on_commit(void *ctx, uint64_t commit_seq);
void slot__clu_on_sync_check(uv_check_t *h);
/* the replica's stream position: set the channel's log last to what is trusted. */
void slot__clu_stream_reset(clu *c);
/* apply committed records when the commit thread is idle. */
void slot__clu_apply_kick(clu *c);
int slot__clu_job_apply(clu *c);
bool slot__clu_write_gate(server *s, slot_res *res);
/* s->clu_up->read_gate: SLOT__READ_GO, SLOT__READ_WAIT or SLOT__READ_ANSWERED (res has the error). */
slot__read_gate slot__clu_read_gate(server *s, MDB_txn *rtxn, slot_res *res);
/* apply records (from, to] of our log on txn; 0 or an error. Commit thread. */
int slot__clu_apply_range(clu *c, MDB_txn *txn, uint64_t to, uint64_t *applied);

#endif
