/*
 * repl_int.h — what the files of the replication channel share (slot/repl.h):
 * repl_wire.c (frames, hellos, MACs, the secret file), repl.c (the endpoint,
 * connections, reading, writing, closing) and repl_proto.c (the handshake and
 * the frames of each side).
 */
#ifndef SLOT_REPL_INT_H
#define SLOT_REPL_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "slot/assert.h"
#include "slot/repl.h"

/* Connection states. Outbound: CONNECTING -> HELLO_SENT -> AUTH_SENT -> READY;
 * inbound: ACCEPTED -> CHALLENGED -> READY; any -> CLOSING (once). */
#define SLOT_REPL_STATE_MAP(X)  \
    X(CONNECTING, "connecting") \
    X(HELLO_SENT, "hello_sent") \
    X(AUTH_SENT, "auth_sent")   \
    X(ACCEPTED, "accepted")     \
    X(CHALLENGED, "challenged") \
    X(READY, "ready")           \
    X(CLOSING, "closing")

typedef enum {
#define SLOT__REPL_STATE_ENUM(name, str) SLOT__REPL_##name,
    SLOT_REPL_STATE_MAP(SLOT__REPL_STATE_ENUM)
#undef SLOT__REPL_STATE_ENUM
} slot__repl_state;

/* A parsed HELLO or CHALLENGE. */
typedef struct slot__repl_hello {
    uint8_t nonce[SLOT_REPL_NONCE_BYTES];
    uint64_t epoch, tenure, last_tenure, last_seq, time_ms;
    char cluster[SLOT_REPL_NAME_BYTES_MAX + 1];
    char node[SLOT_REPL_NAME_BYTES_MAX + 1];
} slot__repl_hello;

/* A record frame shared by every connection it is written to. */
typedef struct slot__repl_buf {
    uint32_t refs;
    size_t len;
    uint8_t bytes[]; /* frame header + record */
} slot__repl_buf;

/* One record in an outbound window. */
typedef struct slot__repl_sent {
    uint64_t seq;
    uint64_t bytes;
} slot__repl_sent;

typedef struct slot__repl_conn slot__repl_conn;
struct slot__repl_conn {
    uv_tcp_t tcp;
    uv_timer_t timer; /* handshake timeout, then the linger after a refusal */
    uv_connect_t creq;
    uv_shutdown_t sreq;
    slot_repl *r;
    slot__repl_conn *prev, *next;
    int handles; /* handles not yet closed; freed at 0 */
    bool inbound;
    bool tcp_open; /* tcp initialized (and must be closed) */
    bool reported; /* on_close called (or suppressed) */
    bool reading;
    slot__repl_state state;
    char node[SLOT_REPL_NAME_BYTES_MAX + 1]; /* dialled id (outbound); the hello's (inbound) */
    char addr[64];
    uint8_t my_hello[SLOT_REPL_HELLO_BYTES_MAX];
    size_t my_hello_len;
    uint8_t peer_hello[SLOT_REPL_HELLO_BYTES_MAX];
    size_t peer_hello_len;
    slot__repl_hello peer;
    /* reading */
    uint8_t hdr[SLOT_REPL_FRAME_HEADER_BYTES];
    size_t hdr_len;
    uint8_t *body; /* the current frame's body (type + payload) */
    size_t body_len, body_need, body_cap;
    uint8_t *chunk;         /* SLOT_REPL_READ_CHUNK_BYTES */
    uint64_t last_heard_ms; /* loop time of the last frame from the peer */
    /* outbound: the window */
    slot__repl_sent *ring; /* inflight_records_max entries */
    uint32_t ring_head, ring_count;
    uint64_t inflight_bytes;
    uint64_t last_sent_seq, last_acked_seq;
    /* inbound: the primary's stream */
    uint64_t delivered_seq; /* the last record the owner took on this stream */
    uint64_t ack_floor;     /* the log's last when the stream began */
    uint64_t acked_seq;     /* the last ACK sent on this stream (0: none) */
    /* inbound: a snapshot being received (repl_snap.c) */
    uint64_t snap_seq, snap_tenure, snap_total, snap_next; /* snap_next: the next offset expected */
    bool snap_whole;                                       /* every byte of snap_total came */
};

struct slot_repl {
    uv_loop_t *loop;
    uv_tcp_t listener;
    uv_timer_t heartbeat;
    bool listening;
    bool freeing;
    int handles;         /* the endpoint's own open handles */
    slot_repl_opts opts; /* names and secret point into the fields below */
    char cluster[SLOT_REPL_NAME_BYTES_MAX + 1];
    char node[SLOT_REPL_NAME_BYTES_MAX + 1];
    uint8_t secret[SLOT_REPL_SECRET_BYTES_MAX];
    slot__repl_conn *conns;
    uint32_t handshakes; /* inbound connections before READY */
    /* the configuration and the log, as the owner set them */
    uint64_t epoch, tenure;
    char primary[SLOT_REPL_NAME_BYTES_MAX + 1];
    uint64_t last_tenure, last_seq;
    uint64_t commit_seq;      /* primary side: what heartbeats carry */
    uint64_t seen_commit_seq; /* replica side: the highest commit point reported */
    uint64_t last_heard_ms;   /* replica side: silence detector */
    slot__repl_conn *stream;  /* replica side: the accepted primary stream, or NULL */
};

/* ---- repl_wire.c */
bool slot__repl_name_ok(const char *s);
void slot__repl_put_u32(uint8_t *p, uint32_t v);
void slot__repl_put_u64(uint8_t *p, uint64_t v);
uint32_t slot__repl_get_u32(const uint8_t *p);
uint64_t slot__repl_get_u64(const uint8_t *p);
/* Encodes h (nonce, numbers, names) as a HELLO/CHALLENGE payload into out
 * (SLOT_REPL_HELLO_BYTES_MAX); returns its length. */
size_t slot__repl_hello_encode(const slot__repl_hello *h, uint8_t *out);
/* Parses a payload; returns 0 or -EPROTO (text in err, err_bytes). */
int slot__repl_hello_parse(const uint8_t *p, size_t len, slot__repl_hello *h, char *err, size_t err_bytes);
/* HMAC-SHA256 over label and the two hello payloads (slot/repl.h, AUTH). */
int slot__repl_mac(const uint8_t *key, size_t key_len, const char *label, const uint8_t *hello, size_t hello_len,
                   const uint8_t *chal, size_t chal_len, uint8_t out[SLOT_REPL_MAC_BYTES]);
bool slot__repl_mac_equal(const uint8_t *a, const uint8_t *b);
int slot__repl_random(uint8_t *out, size_t len);

/* ---- repl.c */
/* Writes one frame (type + payload, copied) to c. Returns 0 or a libuv error. */
int slot__repl_write(slot__repl_conn *c, uint8_t type, const void *payload, size_t len);
/* Writes a shared record frame to c (takes a reference). */
int slot__repl_write_buf(slot__repl_conn *c, slot__repl_buf *b);
void slot__repl_buf_unref(slot__repl_buf *b);
/* Ends c for reason: log it, tell on_close (unless told already), send
 * REFUSE when refuse is true, then shut down, linger and close. Safe to call
 * again (later calls do nothing). */
void slot__repl_end(slot__repl_conn *c, slot_repl_reason reason, bool refuse, bool by_peer, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
void slot__repl_log(slot_repl *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void slot__repl_set_state(slot__repl_conn *c, slot__repl_state to);

/* ---- repl_proto.c */
/* One whole frame from the peer (type, payload). */
void slot__repl_frame(slot__repl_conn *c, uint8_t type, const uint8_t *p, size_t len);
/* Builds and sends this node's HELLO (outbound) or CHALLENGE (inbound). */
int slot__repl_send_hello(slot__repl_conn *c, uint8_t type);
/* The largest frame body c accepts in its state. */
size_t slot__repl_body_max(const slot__repl_conn *c);
/* Heartbeat to every ready outbound connection. */
void slot__repl_heartbeat(slot_repl *r);
/* Re-checks the accepted stream against the configuration (fencing). */
void slot__repl_recheck(slot_repl *r);
/* Replica side: the replica's sender check (the configuration's primary, its tenure). */
bool slot__repl_sender_ok(slot__repl_conn *c);

/* ---- repl_snap.c */
/* A SNAP frame on the replica's stream. */
void slot__repl_on_snap(slot__repl_conn *c, const uint8_t *p, size_t len);

#endif
