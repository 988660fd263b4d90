/*
 * slot/client.h — the C client of slotd's protocol (docs/protocol.md, v1 and the v1.1
 * sections slotd implements: windows, extend, partial confirm, reacquire).
 *
 * Three layers:
 *   1. Codec, no I/O: slot_req_* build typed requests, slot_req_encode turns
 *      one into a request line, slot_reply_parse turns a reply line into a
 *      typed struct slot_reply. Event-loop programs (slot-bench) use these
 *      with their own sockets.
 *   2. A blocking connection (slot_client_*): connect, send (pipelining is
 *      just several sends before the receives), receive in order, call.
 *   3. A follower of a replica set's primary (slot_follow_*): a blocking call
 *      that moves to the node that is primary and sends the same request again.
 *   4. A router over the replica sets of a placement (slot_route_*): one
 *      follower per set, each request sent to the set that owns its event.
 * Tests, slotctl and slot-bench all use this library. Not thread-safe per
 * object: use one slot_client per thread.
 */
#ifndef SLOT_CLIENT_H
#define SLOT_CLIENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "slot/error.h"
#include "slot/ops.h"

#define SLOT_CLIENT_LINE_MAX (4u << 20) /* a reply line longer than this is refused (-EMSGSIZE) */
/* "host:port" as slotd sends it in not_primary and cluster replies: a DNS name
 * (255 bytes) or a bracketed IPv6 address, ":" and up to 5 digits. */
#define SLOT_CLIENT_ADDR_BYTES_MAX 262
#define SLOT_CLUSTER_MEMBERS_MAX 16    /* members a cluster reply keeps; a replica set is usually 3 */
#define SLOT_CLUSTER_NAME_BYTES_MAX 64 /* cluster name and node id (as event names) */
/* The cluster op's request line (docs/protocol.md, "Clients following the primary"),
 * for slot_client_send_raw and slot_follow_call_line; it is what
 * slot_req_init(&req, SLOT_OP_CLUSTER) encodes to, less the id. */
#define SLOT_CLUSTER_REQ_LINE "{\"op\":\"cluster\"}\n"

/* ---- building requests (all copy their strings; return 0 or -EINVAL when a
 *      string is too long for its field — syntax is otherwise the server's to check) */
void slot_req_init(slot_req *req, slot_op op);
int slot_req_set_event(slot_req *req, const char *event);
int slot_req_set_user(slot_req *req, const char *user);
int slot_req_set_request(slot_req *req, const char *request);
int slot_req_set_hold(slot_req *req, const char *hold);
int slot_req_set_token(slot_req *req, const char *token);
void slot_req_set_id_int(slot_req *req, int64_t id);
int slot_req_set_id_str(slot_req *req, const char *id);
/* Shorthands for the common requests. */
int slot_req_hold(slot_req *req, const char *event, const char *user, const char *request, uint32_t qty);
int slot_req_hold_op(slot_req *req, slot_op op, const char *event, const char *hold,
                     const char *user); /* confirm, release, get_hold, cancel */
int slot_req_event(slot_req *req, slot_op op,
                   const char *event); /* event, shards, check (event may be NULL), set_status... */
/* v1.1 (docs/protocol.md, "extend", "Partial confirm", "Reacquire", "Sale windows"). */
/* slot_req_extend — extend hold by by_ms (1000..86400000 ms; the server checks the range). 0 or -EINVAL. */
int slot_req_extend(slot_req *req, const char *event, const char *hold, const char *user, uint32_t by_ms);
/* slot_req_set_confirm_qty — on a confirm: confirm only qty units (1..the hold's qty), or for a
 * reacquire take qty units (1..max_per_request); without it the hold's whole qty. */
void slot_req_set_confirm_qty(slot_req *req, uint32_t qty);
/* slot_req_set_reacquire — on a confirm: true asks for fresh units when the hold is expired or released. */
void slot_req_set_reacquire(slot_req *req, bool reacquire);
/* slot_req_sale_window — set_sale_window; times in ms since the epoch, 0 = none
 * (closes_at > opens_at when both are set, else the server answers invalid_argument). 0 or -EINVAL. */
int slot_req_sale_window(slot_req *req, const char *event, uint64_t opens_at_ms, uint64_t closes_at_ms);
/* slot_req_set_window — on a create_event: send opens_at and closes_at (ms since the epoch, 0 = none).
 * create_event's max_extensions and max_hold_ms are set like its other settings: the field
 * and its SLOT_HAS_MAX_EXTENSIONS / SLOT_HAS_MAX_HOLD_MS bit. */
void slot_req_set_window(slot_req *req, uint64_t opens_at_ms, uint64_t closes_at_ms);
/* v1.1 carts and waitlists (docs/protocol.md, "hold_many", "Waitlist"). */
/* slot_req_hold_many — an empty cart of (user, request); add its items with slot_req_cart_add. 0 or -EINVAL. */
int slot_req_hold_many(slot_req *req, const char *user, const char *request);
/* slot_req_cart_add — one more item (event, qty 1..1000) of a hold_many; -EINVAL past
 * SLOT_CART_ITEMS_MAX items or for a name too long (distinct events are the server's check). */
int slot_req_cart_add(slot_req *req, const char *event, uint32_t qty);
/* slot_req_waitlist — waitlist_join (qty 1..1000), waitlist_leave or waitlist (qty unused) of
 * (event, user, request). 0 or -EINVAL (another op, a name too long). */
int slot_req_waitlist(slot_req *req, slot_op op, const char *event, const char *user, const char *request,
                      uint32_t qty);
/* slot_req_backup — the admin op backup (docs/protocol.md, "backup"): the server writes a
 * backup of its store to path, a file on the server's machine; path must be absolute (the
 * server answers invalid_argument otherwise). 0 or -EINVAL past SLOT_PATH_BYTES_MAX bytes. */
int slot_req_backup(slot_req *req, const char *path);
/*
 * The optional settings of a create_event (docs/protocol.md, "create_event"; the
 * ranges are limits.h's, checked by the server, which answers invalid_argument
 * out of range). A field left 0 is not sent, so the server takes its default;
 * a zeroed struct is an event with every default.
 */
typedef struct slot_event_settings {
    uint32_t shards;          /* 1..SLOT_SHARDS_MAX; 0: SLOT_SHARDS_DEFAULT (16) */
    uint32_t hold_ttl_ms;     /* ms, SLOT_HOLD_TTL_MS_MIN..MAX; 0: SLOT_HOLD_TTL_MS_DEFAULT (10 min) */
    uint64_t max_per_user;    /* units a user may hold and own, 1..SLOT_CAPACITY_MAX; 0: no limit */
    uint32_t max_per_request; /* units of one hold, 1..SLOT_MAX_PER_REQUEST_MAX; 0: SLOT_MAX_PER_REQUEST_DEFAULT */
    uint64_t opens_at_ms;     /* ms since the epoch, up to SLOT_TIME_MS_MAX; 0: open now */
    uint64_t closes_at_ms;    /* ms since the epoch, > opens_at_ms when both are set; 0: never closes */
    bool has_max_extensions;  /* send max_extensions (its 0 means "no extend"); false: SLOT_MAX_EXTENSIONS_DEFAULT */
    uint32_t max_extensions;  /* 0..SLOT_MAX_EXTENSIONS_MAX, sent only with has_max_extensions */
    uint64_t max_hold_ms;     /* ms, SLOT_MAX_HOLD_MS_MIN..MAX; 0: 2 x hold_ttl_ms */
    uint32_t waitlist_max;    /* entries, 1..SLOT_WAITLIST_MAX_MAX; 0: no waitlist */
} slot_event_settings;
/* slot_req_create_event — an admin create_event of event (1..SLOT_EVENT_BYTES_MAX bytes; its
 * alphabet is the server's check) with capacity units (0..SLOT_CAPACITY_MAX) and the settings s
 * (NULL: every default), copied into req (s is not kept). 0, or -EINVAL for a name too long. */
int slot_req_create_event(slot_req *req, const char *event, uint64_t capacity, const slot_event_settings *s);
/* slot_req_set_waitlist_max — on a create_event: a waitlist of at most n entries (0..10,000,000). */
void slot_req_set_waitlist_max(slot_req *req, uint32_t n);
/* slot_req_cluster_change — a cluster_change (docs/protocol.md, "cluster_change") of node
 * (a member id, 1..SLOT_CLUSTER_NAME_BYTES_MAX bytes; its alphabet is the server's check).
 * 0, or -EINVAL for a change out of range or a name too long. */
int slot_req_cluster_change(slot_req *req, slot_cluster_change change, const char *node);

/*
 * slot_req_encode — one request line (JSON object + "\n") for req. Optional
 * fields are written when their SLOT_HAS_* bit is set; the fields an op uses
 * are always written. Returns the length (with "\n"), or a value >= cap when
 * it did not fit (like snprintf); -EINVAL for an op out of range.
 */
long slot_req_encode(const slot_req *req, char *buf, size_t cap);

/* One member of a replica set, as the cluster op lists it. */
typedef struct slot_member {
    char node[SLOT_CLUSTER_NAME_BYTES_MAX + 1];
    char addr[SLOT_CLIENT_ADDR_BYTES_MAX + 1]; /* "host:port" clients reach it at */
    char role[16];                             /* "primary", "replica", "joining" */
    uint64_t seq;                              /* last batch it applied */
    uint64_t lag_ms;                           /* how far it is behind the primary; 0 when not sent */
} slot_member;

/* A parsed reply. Fields the reply did not carry are zero / empty. */
typedef struct slot_reply {
    bool ok;
    slot_err err;   /* SLOT_E_OK when ok; SLOT_E__COUNT for an unknown code */
    char error[32]; /* the wire code as sent */
    char message[256];
    slot_id id;      /* kind SLOT_ID_NONE when absent */
    char status[16]; /* "held", "sold_out", "confirmed", "on_sale", ... */
    bool replay, released, cancelled;
    char hold[SLOT_HOLD_ARG_BYTES_MAX + 1];
    char user[SLOT_USER_BYTES_MAX + 1];
    char event[SLOT_EVENT_BYTES_MAX + 1];
    char role[16]; /* hello: the connection's role; cluster: the node's */
    char version[32];
    char primary[SLOT_CLIENT_ADDR_BYTES_MAX + 1];  /* not_primary, cluster: the primary's "host:port" ("" unknown) */
    char cluster[SLOT_CLUSTER_NAME_BYTES_MAX + 1]; /* cluster: the set's name ("" standalone) */
    char node[SLOT_CLUSTER_NAME_BYTES_MAX + 1];    /* cluster: this node's id */
    uint64_t epoch;                                /* cluster: the configuration's epoch */
    uint32_t nmembers;                             /* cluster: entries of members (at most SLOT_CLUSTER_MEMBERS_MAX) */
    uint32_t nmembers_total; /* cluster: members the server listed (more than nmembers when cut) */
    slot_member *members;    /* heap, owned; freed by slot_reply_clear */
    int64_t protocol;
    uint64_t qty, expires_at_ms, created_at_ms, available;
    uint64_t capacity, held, confirmed, shards, hold_ttl_ms, max_per_user, max_per_request;
    uint64_t events, holds, expired;               /* check, expire */
    uint64_t seq;                                  /* digest, cluster: the last batch applied */
    uint64_t opens_at_ms, closes_at_ms;            /* the event view; not_on_sale errors */
    uint64_t max_extensions, max_hold_ms;          /* the event view */
    uint64_t returned, extensions;                 /* confirm, get_hold; extend */
    char replaces[SLOT_HOLD_ARG_BYTES_MAX + 1];    /* confirm (reacquire), get_hold */
    char replaced_by[SLOT_HOLD_ARG_BYTES_MAX + 1]; /* get_hold */
    char features[160];                            /* hello: the "features" names joined by commas */
    uint64_t position;                             /* waitlist_join, waitlist: 1 = next */
    uint64_t retry_after_ms;                       /* moving, rate_limited: when to try again */
    uint64_t waitlist_max, waiting, waiting_qty;   /* the event view */
    bool left, waitlist_full, offered;             /* waitlist_leave; waitlist_join's sold_out; a join's offered hold */
    char hold_status[16];                          /* waitlist: the offered hold's own status */
    uint32_t nholds;                               /* hold_many: length of "holds" (each hold is in `line`) */
    char digest[SLOT_DIGEST_HEX_BYTES + 1];        /* digest: 64 hex digits */
    uint32_t nviolations;                          /* check: violations found: "violations_total" when the
                                          server sends it, else the length of "violations" */
    uint32_t nshard_free;                          /* shards: length of shard_free */
    uint64_t *shard_free;                          /* heap, owned; freed by slot_reply_clear */
    char *line;                                    /* heap copy of the whole reply line (NUL-terminated), owned */
} slot_reply;

/*
 * slot_reply_parse — parse one reply line (without "\n"; need not be
 * NUL-terminated). Clears `out` first (it need not be initialized, but a
 * reply already in it must have been cleared, or its heap parts leak).
 * Returns 0, or -EINVAL when the line is not a JSON object with a boolean
 * "ok", -ENOMEM. Known fields of an unexpected type are left zero; strings
 * longer than their field are cut at a UTF-8 character boundary. out must be
 * cleared with slot_reply_clear after use (also after an error: harmless).
 */
int slot_reply_parse(const char *line, size_t len, slot_reply *out);
void slot_reply_clear(slot_reply *r);

/* ---- the blocking connection */
typedef struct slot_client slot_client;

/*
 * slot_client_connect — TCP connect to host:port (host: a numeric IPv4/IPv6
 * address or a name resolved by getaddrinfo), TCP_NODELAY on.
 *   timeout_ms: for the connect (per resolved address); 0 = the system's.
 * Returns 0 and *out (owned; slot_client_close frees), or -errno of the last
 * address tried (-ECONNREFUSED, -ETIMEDOUT, ...); -ENXIO when the name does
 * not resolve.
 */
int slot_client_connect(const char *host, uint16_t port, int timeout_ms, slot_client **out);
/* slot_client_close — close the socket and free c; NULL is a no-op. */
void slot_client_close(slot_client *c);
/* slot_client_fd — the socket (nonblocking; owned by c), e.g. for getpeername or setsockopt. */
int slot_client_fd(const slot_client *c);

/* slot_client_send — encode and send req (blocking, without a time bound, until
 * the kernel has it; SIGPIPE is never raised: a closed peer is -EPIPE). While
 * it waits, replies that arrive are read into the receive buffer (up to
 * SLOT_CLIENT_LINE_MAX bytes), so pipelining more than the socket buffers hold
 * does not deadlock with a server that stops reading until its replies are
 * read. 0 or -errno. */
int slot_client_send(slot_client *c, const slot_req *req);
/* slot_client_send_raw — send bytes as they are (tests of bad input). 0 or -errno. */
int slot_client_send_raw(slot_client *c, const void *data, size_t len);
/*
 * slot_client_recv_line — the next reply line (without "\n"), NUL-terminated,
 * borrowed: valid until the next call on c.
 *   timeout_ms: > 0, or -1 to wait forever.
 * Returns its length, -ETIMEDOUT, -ECONNRESET when the server closed the
 * connection (EOF), -EMSGSIZE above SLOT_CLIENT_LINE_MAX, or -errno.
 */
long slot_client_recv_line(slot_client *c, const char **line, int timeout_ms);
/* slot_client_recv — the next reply, parsed. 0 or a negative error as above (-EINVAL: not a reply). */
int slot_client_recv(slot_client *c, slot_reply *out, int timeout_ms);
/* slot_client_call — send then receive one reply. */
int slot_client_call(slot_client *c, const slot_req *req, slot_reply *out, int timeout_ms);

/*
 * slot_addr_split — "host:port" or "[v6]:port" (len bytes, need not be
 * NUL-terminated) into host (host_cap bytes, NUL-terminated, brackets
 * removed) and *port (1..65535). Returns 0, or -EINVAL when it is not of that
 * shape, the host is empty or longer than host_cap - 1, or the port is not a
 * decimal number in range. Any thread.
 */
int slot_addr_split(const char *s, size_t len, char *host, size_t host_cap, uint16_t *port);

/* ---- following the primary of a replica set (src/client/client_follow.c)
 *
 * A slot_follow holds a list of node addresses and at most one connection,
 * and sends each request until a node gives a real answer (the rule every
 * client of slotd follows: clients/fixtures/README.md, whose cases
 * tests/test_client_fixtures.c runs through this follower):
 *   - not_primary or wrong_set with "primary":"H:P": it connects there at once
 *     (a learned address joins the list) and sends the SAME request again;
 *   - not_primary or wrong_set without an address, unavailable,
 *     shutting_down, a connect that fails, a connection closed or reset, or no
 *     reply within reply_timeout_ms: it closes the connection, pauses
 *     (backoff_ms, doubling up to backoff_max_ms, never past the deadline) and
 *     tries the next node of the list, in order, wrapping around;
 *   - moving: it waits retry_after_ms (at most SLOT_FOLLOW_MOVING_WAIT_MS_MAX;
 *     the backoff pause when absent), overloaded: the backoff pause; then the
 *     same request again to the same node, on the same connection.
 * Every other answer (ok:true, sold_out included, and every other error) is
 * the server's decision and is returned at once.
 * Every call is bounded by attempts_max sends and by deadline_ms in total.
 *
 * Why sending the same request again is safe (docs/protocol.md, "Clients
 * following the primary"): not_primary changes nothing; after unavailable, a
 * lost reply or a closed connection the outcome is unknown, and the request
 * is sent again byte for byte. A hold carries its request key, so a hold
 * that did commit is answered as a replay (same hold id, "replay":true),
 * never as a second hold; confirm, release and cancel name their hold and
 * answer a repeat as a replay or with the hold's status; create_event with
 * the same settings is a replay; set_capacity, reshard and set_status set a
 * value. So a failover shows as latency, never as a duplicate or a lost
 * hold — provided the caller also reuses the key when it gives up and tries
 * again later (a negative return means: outcome unknown).
 *
 * Not thread-safe: one slot_follow per thread.
 */
#define SLOT_FOLLOW_NODES_MAX 16         /* addresses in the list, learned ones included */
#define SLOT_FOLLOW_ATTEMPTS_DEFAULT 16u /* sends of one request */
#define SLOT_FOLLOW_ATTEMPTS_MAX 1024u
#define SLOT_FOLLOW_DEADLINE_MS_DEFAULT \
    10000                                    /* one call, every attempt and pause included: a failover
                                                 (kill to a new primary's first write) takes 1-3 s */
#define SLOT_FOLLOW_DEADLINE_MS_MAX 86400000 /* a day: beyond that a bound means nothing */
#define SLOT_FOLLOW_CONNECT_MS_DEFAULT 2000  /* one connect */
#define SLOT_FOLLOW_REPLY_MS_DEFAULT 5000    /* one reply: past it the node counts as gone */
#define SLOT_FOLLOW_BACKOFF_MS_DEFAULT 20    /* the first pause before another node */
#define SLOT_FOLLOW_BACKOFF_MAX_MS_DEFAULT 500
#define SLOT_FOLLOW_MOVING_WAIT_MS_MAX 5000 /* the longest wait a moving answer's retry_after_ms gets */

typedef struct slot_follow_opts {
    uint32_t attempts_max;          /* 1..SLOT_FOLLOW_ATTEMPTS_MAX */
    int deadline_ms;                /* 1..SLOT_FOLLOW_DEADLINE_MS_MAX */
    int connect_timeout_ms;         /* > 0; each connect also stops at the deadline */
    int reply_timeout_ms;           /* > 0; each reply also stops at the deadline */
    int backoff_ms, backoff_max_ms; /* 0..deadline_ms, backoff_ms <= backoff_max_ms */
    const char *token;              /* sent in hello after every connect; NULL: none. Copied. */
} slot_follow_opts;

/* What a slot_follow did, summed over its calls. */
typedef struct slot_follow_stats {
    uint64_t calls;           /* slot_follow_call* */
    uint64_t sends;           /* requests sent, first sends and resends */
    uint64_t retries;         /* resends: sends - first sends */
    uint64_t redirects;       /* not_primary answers with an address that was followed */
    uint64_t connects;        /* connections opened */
    uint64_t primary_changes; /* a call answered by another node than the call before */
} slot_follow_stats;

typedef struct slot_follow slot_follow;

/* slot_follow_opts_default — every field at its SLOT_FOLLOW_*_DEFAULT, no token. Any thread. */
void slot_follow_opts_default(slot_follow_opts *o);

/*
 * slot_follow_new — a follower of the nodes in `addrs`: "H:P[,H:P...]"
 * (NUL-terminated; spaces around the commas are not allowed), at most
 * SLOT_FOLLOW_NODES_MAX of them; the first is tried first.
 *   opts: NULL for the defaults; copied (the token too).
 * Connects nothing yet. Returns 0 and *out (owned; slot_follow_free frees),
 * -EINVAL for an empty or bad list (err, when not NULL, says which entry;
 * errlen bytes), an option out of range or a token over
 * SLOT_TOKEN_BYTES_MAX, or -ENOMEM.
 */
int slot_follow_new(const char *addrs, const slot_follow_opts *opts, slot_follow **out, char *err, size_t errlen);
/* slot_follow_free — close the connection and free f; NULL is a no-op. */
void slot_follow_free(slot_follow *f);

/*
 * slot_follow_call — send req and return the first answer that is not one
 * of those retried above (not_primary, wrong_set, unavailable, shutting_down,
 * moving, overloaded), following the primary as above.
 * slot_follow_call_line — the same for a request line as it is (len bytes,
 * ending in "\n"; e.g. SLOT_CLUSTER_REQ_LINE).
 * Returns 0 with the answer in out (ok, or any other error: those are the
 * server's decision, not retried), or, when the bound was reached first
 * (the outcome of a write is then unknown):
 *   -ETIMEDOUT  deadline_ms passed;
 *   -EAGAIN     attempts_max sends were made;
 *   -EMSGSIZE   the request line is over SLOT_CLIENT_LINE_MAX / req does not encode;
 * and slot_follow_error says what the last attempt met. After a negative
 * return out holds the last retried answer (not_primary, unavailable, ...),
 * or nothing.
 * out must be cleared with slot_reply_clear in every case.
 */
int slot_follow_call(slot_follow *f, const slot_req *req, slot_reply *out);
int slot_follow_call_line(slot_follow *f, const char *line, size_t len, slot_reply *out);

/* slot_follow_error — what the last failed attempt met, for people:
 * "gave up after N attempts in M ms; last: H:P: ..." after a negative return,
 * "" after a call that answered. Borrowed until the next call on f. */
const char *slot_follow_error(const slot_follow *f);
/* slot_follow_node — "H:P" of the node the last answer came from (or, before
 * any, the first of the list). Borrowed until the next call on f. */
const char *slot_follow_node(const slot_follow *f);
/* slot_follow_client — the open connection (owned by f; NULL when none),
 * e.g. for getpeername. Valid until the next call on f. */
slot_client *slot_follow_client(slot_follow *f);
/* slot_follow_stats_get — the counters so far into *out. */
void slot_follow_stats_get(const slot_follow *f, slot_follow_stats *out);

/* ---- routing by the placement: many replica sets (src/client/client_route.c)
 *
 * With --placement (docs/protocol.md, "Placement") each event lives on one
 * replica set, and a map says which. A slot_route is a caller of every set of
 * one placement: seeded with the addresses of any members (of any sets), it
 * reads the map with {"op":"placement"} (at its first call, and again when an
 * answer says the map it holds is stale) and keeps one slot_follow per set,
 * made on first use from the set's published primary. Each call:
 *   - a request that names an event (hold_many: its first item's event; the
 *     server answers cross_set for a cart over several sets) goes to the
 *     follower of the set the map places the event on; a request without an
 *     event, an event the map does not hold, a set whose primary is unknown,
 *     and the placement op itself go to the seed follower (the seed list);
 *   - inside a set the follower does what slot_follow does: it follows
 *     not_primary, waits on moving (retry_after_ms, at most
 *     SLOT_FOLLOW_MOVING_WAIT_MS_MAX a wait) and on overloaded, and moves on
 *     after a lost connection;
 *   - wrong_set: the answer's set, gen, primary and http are taken into the
 *     map (and the map is read again when the answer names no primary, or
 *     names the set just asked), and the same request line goes to the
 *     owner; at most SLOT_ROUTE_REDIRECTS_MAX wrong_set answers a call;
 *   - unknown_event for an event that the map did not place on the set that
 *     answered: the map is read once more (an event created since), and when it
 *     now places the event on another set, the request goes there.
 * The whole call (every set, wait and read of the map) stops at the opts'
 * deadline_ms. The request line is the same at every send, its request key
 * included, so a resend to the owner after a lost reply is a replay (as for
 * slot_follow); wrong_set and moving change nothing on the server.
 * A standalone server or a set without --placement answers the placement op
 * with an error: the route then sends everything to the seed follower, as a
 * slot_follow would.
 * Not thread-safe: one slot_route per thread.
 */
typedef struct slot_route slot_route;

/* What a slot_route did, summed over its calls. */
typedef struct slot_route_stats {
    uint64_t calls;            /* slot_route_call* */
    uint64_t wrong_set;        /* wrong_set answers taken (each sent the request to another set) */
    uint64_t map_reads;        /* placement ops sent (the first and every refresh) */
    uint64_t map_failures;     /* placement ops that did not give a map (an error answer or no answer) */
    uint64_t unknown_rerouted; /* unknown_event answers after which a fresh map named another set */
} slot_route_stats;

/*
 * slot_route_new — a router over the placement that the seed members belong
 * to: addrs as slot_follow_new's ("H:P[,H:P...]", members of any sets).
 *   opts: NULL for the defaults; copied (the token too); every follower it
 *   makes (the seed's and one per set) uses them, and deadline_ms bounds a
 *   whole slot_route_call.
 * Connects nothing yet. Returns 0 and *out (owned; slot_route_free frees),
 * or slot_follow_new's errors (-EINVAL with err, -ENOMEM).
 */
int slot_route_new(const char *addrs, const slot_follow_opts *opts, slot_route **out, char *err, size_t errlen);
/* slot_route_free — close every connection and free r; NULL is a no-op. */
void slot_route_free(slot_route *r);

/*
 * slot_route_refresh — read the map now ({"op":"placement"} through the seed
 * follower) and replace the one held. Returns 0; -EPROTO when the server
 * answered with an error (no --placement: the map stays empty and calls go
 * to the seed), or the follower's negative error (no answer). A map over
 * SLOT_ROUTE_EVENTS_MAX events keeps the first SLOT_ROUTE_EVENTS_MAX; a reply
 * with more than SLOT_ROUTE_SETS_MAX sets keeps the first of them (events of
 * the others go to the seed, and wrong_set sends them on).
 */
int slot_route_refresh(slot_route *r);

/*
 * slot_route_call — send req to the primary of the set that owns its event,
 * as above, and return the first answer that is not retried (ok, or the
 * server's error). slot_route_call_line — the same for a request line as it
 * is (len bytes ending in "\n"), routed by event (NULL or "": the seed).
 * Returns as slot_follow_call: 0 with the answer in out; -ETIMEDOUT at the
 * deadline, -EAGAIN after the attempts of a follower or
 * SLOT_ROUTE_REDIRECTS_MAX wrong_set answers (out then holds the last
 * wrong_set), -EMSGSIZE for a request that does not encode. After a negative
 * return the outcome of a write is unknown: send it again with the same key.
 * out must be cleared with slot_reply_clear in every case.
 */
int slot_route_call(slot_route *r, const slot_req *req, slot_reply *out);
int slot_route_call_line(slot_route *r, const char *event, const char *line, size_t len, slot_reply *out);

/* slot_route_error — what the last failed call met, for people ("" after one
 * that answered). Borrowed until the next call on r. */
const char *slot_route_error(const slot_route *r);
/* slot_route_node — "H:P" of the node the last answer came from ("" before any). Borrowed until the next call. */
const char *slot_route_node(const slot_route *r);
/*
 * slot_route_owner — the set the held map places event on, into set (cap
 * bytes) with its gen; *primary and *http (either may be NULL) borrow the
 * set's addresses ("" when unknown) until the next call on r. Returns 1 when
 * the map holds the event, 0 when not (nothing written).
 */
int slot_route_owner(const slot_route *r, const char *event, char *set, size_t cap, uint64_t *gen, const char **primary,
                     const char **http);
/* slot_route_nsets — sets the held map names; slot_route_set — the i-th (0..nsets-1):
 * its name, primary and http ("" when unknown), borrowed until the next call; NULL out of range. */
uint32_t slot_route_nsets(const slot_route *r);
const char *slot_route_set(const slot_route *r, uint32_t i, const char **primary, const char **http);
/* slot_route_stats_get — the counters so far into *out. */
void slot_route_stats_get(const slot_route *r, slot_route_stats *out);

#endif
