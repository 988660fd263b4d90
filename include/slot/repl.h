/*
 * slot/repl.h — the node-to-node replication channel of a replica set: the
 * primary ships each batch's record (slot/wset.h) to every replica over TCP,
 * the replica checks it, hands it to its owner (who appends it to the batch
 * log, slot/rlog.h, and syncs) and acks it (docs/design.md, "Replica sets").
 *
 * One slot_repl per node. It listens on the node's replication address (the
 * replica side: it accepts the primary's stream) and connects out to the
 * replicas it is told to (the primary side). Which side a node plays is the
 * owner's decision; the module only enforces the rules of each side:
 *
 * - Primary side: slot_repl_connect to each replica, handshake, then
 *   slot_repl_send of each record to every ready replica. At most
 *   inflight_records_max records and inflight_bytes_max bytes are sent and
 *   not yet acked per replica; past that, send answers -EAGAIN and sends
 *   nothing (back-pressure: memory never grows with a slow replica). A
 *   replica that becomes ready later starts at its own log's last (on_ready
 *   says which): the owner catches it up with slot_repl_send_to. on_ack
 *   says (node, seq) each time a replica's durable point advances; a
 *   heartbeat goes to every ready replica each heartbeat_ms with the commit
 *   point (slot_repl_set_commit); on_close says when a replica's connection is
 *   lost or refused, with the reason. Reconnecting is the owner's decision
 *   (slot_repl_connect again).
 * - Replica side: every record is checked BEFORE the owner sees it: the
 *   sender is the primary of the configuration the owner set
 *   (slot_repl_set_config) and its tenure is not older than that
 *   configuration's; the frame is not above record_bytes_max; the record
 *   decodes (crc and every length, slot_wset_decode) and its epoch is not
 *   above the sender's tenure; its seq is the last seq + 1 and its
 *   prev_epoch the tenure of the last record (slot_repl_set_log_last, then
 *   kept by the module after each accepted record). Anything else is
 *   refused: a REFUSE frame with the reason, the connection closed, on_close
 *   and the log callback told, and nothing delivered. Heartbeats update the
 *   time the primary was last heard (slot_repl_silence_ms) and the commit
 *   point (on_commit).
 *
 * Wire format. Every integer little-endian, as records are. A frame is
 *
 *   u32 body_bytes   the type byte + payload, 1..SLOT_REPL_FRAME_BYTES_MAX
 *                    (and at most SLOT_REPL_HELLO_BYTES_MAX + 1 before the
 *                    handshake is done: anything larger is not this protocol)
 *   u8  type         SLOT_REPL_F_*
 *   payload
 *
 *   HELLO (1), sent by the connecting side (the primary), and CHALLENGE (2),
 *   the accepting side's answer, have one layout:
 *        0    4  magic        SLOT_REPL_MAGIC ("SLRP")
 *        4    2  version      SLOT_REPL_VERSION (1)
 *        6    2  flags        0
 *        8   32  nonce        random, new for every connection
 *       40    8  epoch        the configuration epoch the sender knows
 *       48    8  tenure       that configuration's tenure
 *       56    8  last_tenure  the tenure of the last record in the sender's log
 *       64    8  last_seq     its seq (0: empty log)
 *       72    8  time_ms      the sender's wall clock, informational
 *       80    1  cluster_len  1..SLOT_REPL_NAME_BYTES_MAX, then the cluster name
 *        .    1  node_len     1..SLOT_REPL_NAME_BYTES_MAX, then the sender's node id
 *   Names are bytes of [A-Za-z0-9._:-]; nothing follows the node id.
 *   AUTH (3): 32 bytes, HMAC-SHA256 with the shared secret over
 *     label || u32 len || HELLO payload || u32 len || CHALLENGE payload,
 *   label "slotd-repl-v1 primary" from the connecting side, then (only once
 *   that one checked out) "slotd-repl-v1 replica" from the accepting side.
 *   So both prove the secret over both nonces and every hello field, an
 *   unauthenticated peer never obtains a MAC, and a MAC cannot be replayed
 *   or reflected.
 *   RECORD (4): one record, SLOT_WSET_HEADER_BYTES..record_bytes_max bytes.
 *   ACK (5): u64 seq, every record up to seq is durable on the replica.
 *   HEARTBEAT (6): u64 tenure, u64 epoch, u64 commit_seq, u64 time_ms. The
 *     replica answers each with an ACK of its durable point (liveness).
 *   REFUSE (7): u8 reason (SLOT_REPL_R_*), then 0..SLOT_REPL_TEXT_BYTES_MAX
 *     bytes of text; the sender then closes.
 *   SNAP (8), primary to replica, instead of records the replica's log
 *     cannot take (it is empty, or what it needs is trimmed from the
 *     primary's): u64 seq, u64 tenure (the state's position: every record up
 *     to seq is in it, record seq has that tenure), u64 offset, u64 total
 *     bytes, then 0..SLOT_REPL_SNAP_CHUNK_BYTES bytes of the snapshot file
 *     (a backup file, slot/backup.h, slot_store_backup_fd) at offset. Its
 *     header names the same seq and epoch (= tenure); the replica checks
 *     them and the data's SHA-256 before it installs. Chunks come in order
 *     from offset 0; one with offset 0 starts the transfer over. After the
 *     last chunk the replica installs the state and ACKs seq
 *     (slot_repl_snap_done); the primary then sends records from seq + 1.
 *
 * Memory: per connection one read chunk (SLOT_REPL_READ_CHUNK_BYTES) and one
 * frame body (at most record_bytes_max + 1, freed after a frame above
 * SLOT_REPL_KEEP_BYTES); per outbound replica the window's bookkeeping (16
 * bytes a record) and the records in flight (each copied once, shared by
 * every replica, freed when the last write of it completes). At most
 * SLOT_REPL_HANDSHAKES_MAX inbound connections may be in their handshake at
 * once (more are closed on accept), each for at most handshake_timeout_ms.
 *
 * Errors: functions return 0 (or a count) or a negative errno value, as
 * libuv does: -EINVAL for bad arguments, -EAGAIN for a full window, -ENOTCONN
 * for no such ready peer, -EMSGSIZE for a record above the frame bound,
 * -ENOMEM, and libuv's values for socket calls.
 *
 * Threads: everything runs on the thread of the loop given to slot_repl_new;
 * every function must be called there, and every callback is called there.
 * Callbacks other than log may call any function of this module,
 * slot_repl_free included (after which the module calls nothing more); log
 * may call none.
 */
#ifndef SLOT_REPL_H
#define SLOT_REPL_H

#include <stddef.h>
#include <stdint.h>

#include <uv.h>

#include "slot/limits.h"
#include "slot/wset.h"

/* Wire format (docs/design.md, "The replication channel"): these fix the
 * frames' layout and bounds that both ends must agree on; slotd's own
 * limits and timeouts of the channel are in slot/limits.h. */
#define SLOT_REPL_MAGIC 0x50524c53u /* bytes "SLRP" */
#define SLOT_REPL_VERSION 1
#define SLOT_REPL_NONCE_BYTES 32
#define SLOT_REPL_MAC_BYTES 32         /* HMAC-SHA256 */
#define SLOT_REPL_NAME_BYTES_MAX 64    /* cluster name and node id, as event ids */
#define SLOT_REPL_HELLO_FIXED_BYTES 82 /* a HELLO without its two names */
#define SLOT_REPL_HELLO_BYTES_MAX (SLOT_REPL_HELLO_FIXED_BYTES + 2 * SLOT_REPL_NAME_BYTES_MAX)
#define SLOT_REPL_FRAME_HEADER_BYTES 5                              /* u32 body_bytes, u8 type */
#define SLOT_REPL_FRAME_BYTES_MAX (1u + SLOT_WSET_RECORD_BYTES_MAX) /* a RECORD frame's body */
#define SLOT_REPL_TEXT_BYTES_MAX 200                                /* a REFUSE's text; longer text is cut */
#define SLOT_REPL_SNAP_CHUNK_BYTES (1u << 20)                       /* data bytes of one SNAP frame, at most */
#define SLOT_REPL_SNAP_BYTES_MAX (1ull << 40) /* a snapshot's total size, at most (LMDB's map is far smaller) */
#define SLOT_REPL_RECORD_BYTES_MIN \
    (SLOT_WSET_HEADER_BYTES + SLOT_WSET_PAYLOAD_MIN_BYTES) /* a record's header and
                                                                                         its smallest payload */

_Static_assert(SLOT_REPL_HELLO_BYTES_MAX == 210, "hello layout above");
_Static_assert(SLOT_REPL_FRAME_BYTES_MAX <= UINT32_MAX, "body_bytes is 32-bit");
_Static_assert(SLOT_REPL_KEEP_BYTES >= SLOT_REPL_READ_CHUNK_BYTES, "small frames reuse their buffer");

/* Frame types. */
enum {
    SLOT_REPL_F_HELLO = 1,
    SLOT_REPL_F_CHALLENGE = 2,
    SLOT_REPL_F_AUTH = 3,
    SLOT_REPL_F_RECORD = 4,
    SLOT_REPL_F_ACK = 5,
    SLOT_REPL_F_HEARTBEAT = 6,
    SLOT_REPL_F_REFUSE = 7,
    SLOT_REPL_F_SNAP = 8,
};

/*
 * Why a connection ended: X(NAME, code, wire name, message). The code is the
 * REFUSE frame's reason byte; an unknown code read from a peer counts as
 * PROTOCOL.
 */
#define SLOT_REPL_REASON_MAP(X)                                                                 \
    X(CLOSED, 1, "closed", "the connection closed or could not be made")                        \
    X(BAD_SECRET, 2, "bad_secret", "the peer does not hold the cluster secret")                 \
    X(STALE_TENURE, 3, "stale_tenure", "the sender's tenure is older than the configuration's") \
    X(NOT_PRIMARY, 4, "not_primary", "the sender is not the primary of the configuration")      \
    X(GAP, 5, "gap", "the record's seq is not the last seq + 1")                                \
    X(BAD_PREV, 6, "bad_prev", "the record's prev_epoch is not the tenure of the last record")  \
    X(CORRUPT, 7, "corrupt", "the record does not decode (crc or a length)")                    \
    X(TOO_BIG, 8, "too_big", "a frame above the size bound")                                    \
    X(TRUNCATED, 9, "truncated", "the peer closed in the middle of a frame")                    \
    X(PROTOCOL, 10, "protocol", "not this protocol, or a frame out of order")                   \
    X(WRONG_CLUSTER, 11, "wrong_cluster", "the peer belongs to another cluster")                \
    X(WRONG_NODE, 12, "wrong_node", "the peer is not the node that was dialled")                \
    X(TIMEOUT, 13, "timeout", "no handshake within handshake_timeout_ms")                       \
    X(STORAGE, 14, "storage", "the owner could not take the record")                            \
    X(SUPERSEDED, 15, "superseded", "a newer connection of the same primary replaced it")       \
    X(BUSY, 16, "busy", "too many handshakes in progress")

typedef enum slot_repl_reason {
#define SLOT__REPL_REASON_ENUM(name, code, wire, msg) SLOT_REPL_R_##name = code,
    SLOT_REPL_REASON_MAP(SLOT__REPL_REASON_ENUM)
#undef SLOT__REPL_REASON_ENUM
} slot_repl_reason;

/* slot_repl_reason_name — the wire name ("bad_secret"); "unknown" for other
 * values. Static string. Any thread. */
const char *slot_repl_reason_name(int reason);

/* The shared secret of a cluster (--cluster-secret-file). */
typedef struct slot_repl_secret {
    uint8_t bytes[SLOT_REPL_SECRET_BYTES_MAX];
    size_t len;
} slot_repl_secret;

/*
 * slot_repl_secret_load — read the cluster secret from path: the whole file,
 * without trailing spaces, tabs, CR and LF, is the secret, as bytes.
 * The file must not be readable or writable by group or others (as
 * --token-file, docs/operations.md).
 *   path: NUL-terminated. out: filled on success; zeroed on error. The caller
 *     should clear it (slot_repl_secret_clear) once slot_repl_new copied it.
 *   err, err_bytes: a NUL-terminated message on error (may be NULL, 0).
 *   Returns 0; -EPERM for a file open to group or others; -EINVAL for a
 *   secret shorter than SLOT_REPL_SECRET_BYTES_MIN or longer than
 *   SLOT_REPL_SECRET_BYTES_MAX bytes; -errno from open/read. Any thread.
 */
int slot_repl_secret_load(const char *path, slot_repl_secret *out, char *err, size_t err_bytes);

/* slot_repl_secret_clear — wipe a secret (not optimized away). */
void slot_repl_secret_clear(slot_repl_secret *s);

/* A peer's hello, as on_ready shows it. Strings NUL-terminated; valid during the call. */
typedef struct slot_repl_peer {
    const char *node_id;
    const char *addr;               /* "H:P" of the peer */
    int inbound;                    /* 1: it connected to us (we are its replica); 0: we dialled it */
    uint64_t epoch, tenure;         /* the configuration it knows */
    uint64_t last_tenure, last_seq; /* the last record of its log */
    uint64_t time_ms;
} slot_repl_peer;

/* Why one connection ended, for on_close. Strings valid during the call. */
typedef struct slot_repl_close_info {
    const char *node_id; /* the peer's node id; "" when it never said */
    const char *addr;
    int inbound;
    slot_repl_reason reason;
    int by_peer;      /* 1: the peer sent REFUSE; 0: this node refused it or saw the close */
    const char *text; /* details, never NULL */
} slot_repl_close_info;

typedef struct slot_repl_cbs {
    void *ctx;
    /* A handshake completed (either side). */
    void (*on_ready)(void *ctx, const slot_repl_peer *peer);
    /* Replica side: a record that passed every check. rec/rec_bytes is the
     * whole record, dec its decoding (pointing into rec); both valid during
     * the call only. Return 0 when taken (appended, or queued to be): the
     * module then counts it as the log's last record. Any other value
     * refuses it (reason STORAGE) and closes the stream; the module's last
     * record stays as it was. Ack it later with slot_repl_ack. */
    int (*on_record)(void *ctx, const char *from_node, const uint8_t *rec, size_t rec_bytes, const slot_wset_rec *dec);
    /* Replica side: the primary's commit point rose (a record's or a
     * heartbeat's commit_seq). It may be above the log's last seq (a replica
     * behind): apply only up to min(commit_seq, last durable seq). */
    void (*on_commit)(void *ctx, uint64_t commit_seq);
    /* Primary side: replica node_id made every record up to seq durable;
     * called once per advance, seq increasing per connection. */
    void (*on_ack)(void *ctx, const char *node_id, uint64_t seq);
    /* A connection ended (refused either way, lost, timed out); called once
     * per connection, also for slot_repl_disconnect, never by slot_repl_free. */
    void (*on_close)(void *ctx, const slot_repl_close_info *info);
    /* Replica side: a SNAP chunk that passed the checks (the sender as for
     * records; offsets in order; total within SLOT_REPL_SNAP_BYTES_MAX):
     * n bytes at offset of a total-byte snapshot of state (tenure, seq); the
     * last when offset + n == total. Return 0 when taken; anything else
     * refuses it (reason STORAGE) and closes the stream. NULL: SNAP frames
     * are refused (PROTOCOL). */
    int (*on_snap)(void *ctx, const char *from_node, uint64_t seq, uint64_t tenure, uint64_t offset, uint64_t total,
                   const uint8_t *data, size_t n);
    /* A log line (refusals and losses, with the peer; the secret never). */
    void (*log)(void *ctx, const char *msg);
} slot_repl_cbs;

typedef struct slot_repl_opts {
    const char *cluster;   /* the cluster name; copied */
    const char *node_id;   /* this node's id; copied */
    const uint8_t *secret; /* secret_bytes bytes (SLOT_REPL_SECRET_BYTES_MIN..MAX); copied */
    size_t secret_bytes;
    uint32_t inflight_records_max; /* 1..SLOT_REPL_INFLIGHT_RECORDS_MAX; 0: the default */
    uint64_t inflight_bytes_max;   /* SLOT_REPL_INFLIGHT_BYTES_MIN..MAX; 0: the default */
    uint32_t record_bytes_max;     /* largest record frame accepted or sent:
                                      SLOT_REPL_RECORD_BYTES_MIN..SLOT_WSET_RECORD_BYTES_MAX; 0: the latter */
    uint32_t heartbeat_ms;         /* SLOT_REPL_HEARTBEAT_MS_MIN..MAX; 0: the default */
    uint32_t handshake_timeout_ms; /* SLOT_REPL_HANDSHAKE_MS_MIN..MAX; 0: the default */
    slot_repl_cbs cbs;
} slot_repl_opts;

typedef struct slot_repl slot_repl;

/*
 * slot_repl_new — a replication endpoint on loop; starts the heartbeat timer.
 *   opts: validated and copied (names checked as the wire wants them).
 *   *out: the endpoint, freed with slot_repl_free.
 *   Returns 0, -EINVAL (a bad option; nothing allocated), -ENOMEM, or a libuv error.
 */
int slot_repl_new(uv_loop_t *loop, const slot_repl_opts *opts, slot_repl **out);

/*
 * slot_repl_free — close every connection and the listener without calling
 * on_close, wipe the secret, and free the endpoint once libuv has closed its
 * handles: the caller must let the loop run (uv_run) after this for the
 * memory to be released. NULL-safe.
 */
void slot_repl_free(slot_repl *r);

/*
 * slot_repl_listen — accept replication connections on host:port.
 *   host: a numeric IPv4 or IPv6 address; port: 0..65535, 0 for any free one.
 *   *bound_port: the port bound (may be NULL).
 *   Returns 0, -EALREADY when already listening, or a libuv error.
 */
int slot_repl_listen(slot_repl *r, const char *host, int port, int *bound_port);

/*
 * slot_repl_connect — (primary side) dial replica node_id at host:port and
 * handshake; on_ready when done, on_close if it fails. A connection to the
 * same node that is still open is closed first (without on_close).
 *   node_id: the replica's id, which its CHALLENGE must name (WRONG_NODE
 *     otherwise); copied. host: numeric address; port 1..65535.
 *   Returns 0 (the outcome comes by callback), -EINVAL, -ENOMEM or a libuv error.
 */
int slot_repl_connect(slot_repl *r, const char *node_id, const char *host, int port);

/*
 * slot_repl_disconnect — close the connection to (or from) node_id; on_close
 * is called with reason CLOSED. Returns 0 or -ENOTCONN when there is none.
 */
int slot_repl_disconnect(slot_repl *r, const char *node_id);

/*
 * slot_repl_set_config — the latest configuration this node knows (from
 * etcd): its epoch, tenure and primary. The replica side refuses every
 * sender but that primary, and any tenure below that one; a stream already
 * open that no longer qualifies is refused and closed now (fencing). The
 * primary side puts epoch and tenure in its HELLO and heartbeats.
 *   primary_id: NUL-terminated node id (copied), or "" for none (refuse all).
 *   Returns 0, -EINVAL for a bad id.
 */
int slot_repl_set_config(slot_repl *r, uint64_t epoch, uint64_t tenure, const char *primary_id);

/*
 * slot_repl_set_log_last — the last record of this node's log (slot_rlog_last):
 * its tenure and seq (0, 0 for an empty log). The replica side expects the
 * next record to be seq + 1 with prev_epoch = tenure, and advances this
 * itself after each record its owner takes; call it again after the owner
 * changes the log (truncation, reset). Both sides send it in their hello.
 */
void slot_repl_set_log_last(slot_repl *r, uint64_t tenure, uint64_t seq);

/* slot_repl_set_commit — (primary side) the commit point that heartbeats carry. */
void slot_repl_set_commit(slot_repl *r, uint64_t commit_seq);

/*
 * slot_repl_send — (primary side) send one record to every ready replica.
 *   rec: rec_bytes bytes of one record (slot/wset.h); its header is checked
 *     (slot_wset_peek), the payload is not (the caller made it). It is
 *     copied once; the caller may reuse its buffer on return.
 *   Records to one replica must have increasing seqs on a connection.
 *   All or nothing: when any ready replica's window is full, nothing is sent.
 *   Returns the number of replicas it was sent to (0 when none is ready);
 *   -EAGAIN when a window is full (retry after an on_ack or on_close);
 *   -EMSGSIZE above record_bytes_max; -EINVAL for a header that does not
 *   peek, a length that disagrees with it, or a seq not above the last one
 *   sent to some replica; -ENOMEM.
 */
int slot_repl_send(slot_repl *r, const uint8_t *rec, size_t rec_bytes);

/*
 * slot_repl_send_to — as slot_repl_send, to the one ready replica node_id
 * (catching it up). Returns 1, -ENOTCONN when it is not ready, or the errors
 * of slot_repl_send.
 */
int slot_repl_send_to(slot_repl *r, const char *node_id, const uint8_t *rec, size_t rec_bytes);

/*
 * slot_repl_ack — (replica side) every record up to seq is durable (appended
 * and synced): ack it to the primary's stream.
 *   seq: above the last seq acked and at most the last seq delivered on the
 *     current stream.
 *   Returns 0; -ENOTCONN when no primary stream is open (it closed since
 *   the record came: the ack is moot, the new stream starts from the log's
 *   last); -EINVAL for a seq out of that range.
 */
int slot_repl_ack(slot_repl *r, uint64_t seq);

/*
 * slot_repl_silence_ms — (replica side) milliseconds since the primary was
 * last heard (any frame of its accepted stream), counted from the last
 * change of primary in slot_repl_set_config, or from slot_repl_new, when it
 * has not been heard since. Loop time (uv_now).
 */
uint64_t slot_repl_silence_ms(const slot_repl *r);

/*
 * slot_repl_send_snap — (primary side) send one SNAP chunk to the ready
 * replica node_id: n bytes (at most SLOT_REPL_SNAP_CHUNK_BYTES; copied) at
 * offset of a total-byte snapshot of state (tenure, seq). After the last
 * chunk (offset + n == total) the replica's ACK of seq is expected, and
 * records must start at seq + 1.
 * Returns 0; -EAGAIN while SLOT_REPL_SNAP_QUEUE_BYTES or more wait to be
 * written to it (back-pressure: try again later); -ENOTCONN; -EINVAL (n too
 * big, offset + n past total, total above SLOT_REPL_SNAP_BYTES_MAX, seq 0,
 * or seq below a record already sent on the connection); -ENOMEM.
 */
int slot_repl_send_snap(slot_repl *r, const char *node_id, uint64_t seq, uint64_t tenure, uint64_t offset,
                        uint64_t total, const uint8_t *data, size_t n);

/*
 * slot_repl_snap_done — (replica side) the snapshot of (tenure, seq) that
 * the current stream delivered is installed and durable (its store and its
 * log's base): the next record must be seq + 1 with prev_epoch tenure; ACK
 * seq to the primary now.
 * Returns 0; -ENOTCONN when the stream closed since (the next one starts
 * from the log's last, which the owner set); -EINVAL when the stream did not
 * deliver a whole snapshot of that seq.
 */
int slot_repl_snap_done(slot_repl *r, uint64_t tenure, uint64_t seq);

/* One outbound replica's state, for slotctl cluster and the owner's timeouts. */
typedef struct slot_repl_peer_info {
    char node_id[SLOT_REPL_NAME_BYTES_MAX + 1];
    int ready;                 /* handshake done */
    uint32_t inflight_records; /* sent, not yet acked */
    uint64_t inflight_bytes;
    uint64_t last_sent_seq, last_acked_seq;
    uint64_t silence_ms; /* since any frame from it (or since the connection began) */
} slot_repl_peer_info;

/*
 * slot_repl_peers — (primary side) the outbound connections that are open.
 *   out: room for max entries (may be NULL when max is 0).
 *   Returns how many there are (may exceed max; only max are filled).
 */
size_t slot_repl_peers(const slot_repl *r, slot_repl_peer_info *out, size_t max);

#endif
