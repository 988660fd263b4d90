/*
 * slot/ops.h — the protocol's shared types: the op table, the typed request
 * (slot_req) and result (slot_res), connection roles, and the hold and event
 * statuses with their wire names (docs/protocol.md). Used by the parser
 * (proto), the allocator (alloc), the client library and the server alike;
 * implemented by src/base/ops.c. No storage and no I/O here: including this
 * header does not pull in LMDB.
 */
#ifndef SLOT_OPS_H
#define SLOT_OPS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "slot/error.h"
#include "slot/limits.h"

typedef enum slot_event_status { SLOT_EVENT_ON_SALE = 0, SLOT_EVENT_CLOSED = 1 } slot_event_status;

/* Hold states (docs/design.md, "Code conventions": explicit state machines). held -> confirmed | released | expired | cancelled;
 * confirmed -> cancelled. Every other transition is refused by slot_hold_transition_ok(). */
#define SLOT_HOLD_STATUS_MAP(X) \
    X(HELD, "held")             \
    X(CONFIRMED, "confirmed")   \
    X(RELEASED, "released")     \
    X(EXPIRED, "expired")       \
    X(CANCELLED, "cancelled")

typedef enum slot_hold_status {
#define SLOT__HS_ENUM(name, wire) SLOT_HOLD_##name,
    SLOT_HOLD_STATUS_MAP(SLOT__HS_ENUM)
#undef SLOT__HS_ENUM
        SLOT_HOLD__COUNT
} slot_hold_status;

/* slot_hold_status_name — wire name ("held", ...); static; "?" when out of range. */
const char *slot_hold_status_name(slot_hold_status s);
/* slot_event_status_name — "on_sale" or "closed"; static. */
const char *slot_event_status_name(slot_event_status s);
/* slot_hold_transition_ok — true when from -> to is an edge of the hold state machine. */
bool slot_hold_transition_ok(slot_hold_status from, slot_hold_status to);

/* The ops of docs/protocol.md, in one list: X(NAME, wire name, writes?, admin?) */
#define SLOT_OP_MAP(X)                                   \
    X(HELLO, "hello", false, false)                      \
    X(HOLD, "hold", true, false)                         \
    X(CONFIRM, "confirm", true, false)                   \
    X(EXTEND, "extend", true, false)                     \
    X(RELEASE, "release", true, false)                   \
    X(GET_HOLD, "get_hold", false, false)                \
    X(EVENT, "event", false, false)                      \
    X(CREATE_EVENT, "create_event", true, true)          \
    X(SET_CAPACITY, "set_capacity", true, true)          \
    X(RESHARD, "reshard", true, true)                    \
    X(SET_STATUS, "set_status", true, true)              \
    X(SET_SALE_WINDOW, "set_sale_window", true, true)    \
    X(CANCEL, "cancel", true, true)                      \
    X(SHARDS, "shards", false, true)                     \
    X(CHECK, "check", false, true)                       \
    X(EXPIRE, "expire", true, true)                      \
    X(STATS, "stats", false, true)                       \
    X(DIGEST, "digest", false, true)                     \
    X(HOLD_MANY, "hold_many", true, false)               \
    X(WAITLIST_JOIN, "waitlist_join", true, false)       \
    X(WAITLIST_LEAVE, "waitlist_leave", true, false)     \
    X(WAITLIST, "waitlist", false, false)                \
    X(WAITLIST_ENTRIES, "waitlist_entries", false, true) \
    X(SUBSCRIBE, "subscribe", true, false)               \
    X(ACK, "ack", true, false)                           \
    X(UNSUBSCRIBE, "unsubscribe", false, false)          \
    X(FEED_CONSUMERS, "feed_consumers", false, true)     \
    X(FEED_FORGET, "feed_forget", true, true)            \
    X(CLUSTER, "cluster", false, false)                  \
    X(METRICS, "metrics", false, true)                   \
    X(BACKUP, "backup", false, true)                     \
    X(CLUSTER_CHANGE, "cluster_change", false, true)     \
    X(ALLOCATE, "allocate", true, true)                  \
    X(DEALLOCATE, "deallocate", true, true)              \
    X(JOIN, "join", true, false)                         \
    X(ADMISSION, "admission", false, false)              \
    X(SET_ADMISSION, "set_admission", true, true)        \
    X(PLACEMENT, "placement", false, false)              \
    X(SEAT_MAP, "seat_map", false, false)                \
    X(MOVE_EVENT, "move_event", false, true)             \
    X(PLACE_STATE, "place_state", false, false)          \
    X(PLACE_EXPORT, "place_export", false, false)        \
    X(PLACE_STAGE, "place_stage", true, false)           \
    X(PLACE_RELINQUISH, "place_relinquish", true, false) \
    X(PLACE_OWN, "place_own", true, false)               \
    X(PLACE_DONE, "place_done", true, false)             \
    X(PLACE_ABORT, "place_abort", true, false)           \
    X(PLACE_RECLAIM, "place_reclaim", true, false)       \
    X(PLACE_PURGE, "place_purge", true, false)

typedef enum slot_op {
#define SLOT__OP_ENUM(name, wire, writes, admin) SLOT_OP_##name,
    SLOT_OP_MAP(SLOT__OP_ENUM)
#undef SLOT__OP_ENUM
        SLOT_OP__COUNT
} slot_op;

/* slot_op_name — wire name of an op; static string ("?" when out of range). */
const char *slot_op_name(slot_op op);
/* slot_op_from_name — op by wire name (len bytes, not NUL-terminated);
 * SLOT_OP__COUNT when unknown. */
slot_op slot_op_from_name(const char *name, size_t len);
/* slot_op_writes — true when the op needs the write transaction (commit thread). */
bool slot_op_writes(slot_op op);
/* slot_op_admin — true when the op needs role admin (docs/protocol.md, "Admin ops"). */
bool slot_op_admin(slot_op op);
/* slot_op_internal — true for the placement's internal ops (place_*: one
 * set's primary to another's during a move; docs/design.md, "Moving an
 * event"). They are authenticated by their "mac" (the cluster secret), not
 * by a role. Any thread. */
bool slot_op_internal(slot_op op);

/* The placement's internal ops' fields (place_*; move_event's "to" is set):
 * heap, owned by the request (slot_req.place), freed by slot_req_clear. */
typedef struct slot_place_args {
    uint64_t gen;                                  /* 1..SLOT_PLACE_GEN_MAX (place_state: 0) */
    uint8_t set_len;                               /* "set" (move_event: "to"); 0 = absent */
    char set[SLOT_CLUSTER_NAME_BYTES_MAX + 1];     /* a set's name (the cluster name rule) */
    bool first;                                    /* place_stage: the first chunk */
    bool has_mac;                                  /* "mac" given, 64 lowercase hex digits */
    char mac[SLOT_PLACE_MAC_HEX_BYTES + 1];
    size_t data_b64_len;                           /* the "data" text as sent (the mac covers it) */
    char *data_b64;                                /* heap, NUL-ended; NULL = absent */
    uint8_t *data;                                 /* "data" decoded: records (slot/store.h, place); heap or NULL */
    size_t data_len;
    uint16_t cursor_len;                           /* place_export: the cursor decoded; 0 = from the start */
    uint8_t cursor[SLOT_PLACE_CURSOR_BYTES];
} slot_place_args;

/*
 * Request: what a client asked, already checked for syntax (names, ranges).
 * Fields an op does not use are left zero. Strings are NUL-terminated and
 * their lengths are kept beside them. Owned by whoever filled it; the
 * allocator only reads it.
 */
typedef enum slot_id_kind { SLOT_ID_NONE = 0, SLOT_ID_INT, SLOT_ID_STR } slot_id_kind;

typedef struct slot_id {
    slot_id_kind kind;
    int64_t i;
    uint8_t len; /* bytes of s without the NUL */
    char s[SLOT_ID_BYTES_MAX + 1];
} slot_id;

/* Optional fields present in the request (bits of slot_req.has). */
enum {
    SLOT_HAS_SHARDS = 1u << 0,
    SLOT_HAS_HOLD_TTL = 1u << 1,
    SLOT_HAS_MAX_PER_USER = 1u << 2,
    SLOT_HAS_MAX_PER_REQUEST = 1u << 3,
    SLOT_HAS_EVENT = 1u << 4,
    SLOT_HAS_TOKEN = 1u << 5,
    SLOT_HAS_OPENS_AT = 1u << 6,       /* create_event */
    SLOT_HAS_CLOSES_AT = 1u << 7,      /* create_event */
    SLOT_HAS_MAX_EXTENSIONS = 1u << 8, /* create_event */
    SLOT_HAS_MAX_HOLD_MS = 1u << 9,    /* create_event */
    SLOT_HAS_QTY = 1u << 10,           /* confirm: a partial confirm (or a reacquire's qty) */
    SLOT_HAS_WAITLIST_MAX = 1u << 11,  /* create_event */
    SLOT_HAS_PARENT = 1u << 12,        /* create_event: parent given */
    SLOT_HAS_ALLOCATION = 1u << 13,    /* hold: from a block; allocate, deallocate: the block */
    SLOT_HAS_ALLOC_QTY = 1u << 14,     /* allocate, deallocate: qty given */
    SLOT_HAS_CLIENT_LIMITS = 1u << 15, /* create_event: max_active_per_client or client_rate given */
    SLOT_HAS_GRANT = 1u << 16,         /* hold, hold_many, waitlist_join: grant given */
    SLOT_HAS_SEATS = 1u << 17,         /* hold, confirm: "seats" given (seat_ids) */
    SLOT_HAS_ADJACENT = 1u << 18,      /* hold: "adjacent":true */
    SLOT_HAS_CATEGORY = 1u << 19,      /* hold: "category" given */
    SLOT_HAS_SECTION = 1u << 20,       /* hold: "section" given */
};

/* One item of a cart (hold_many): an event and the units wanted of it. */
typedef struct slot_item {
    uint8_t event_len;
    uint16_t qty; /* 1..SLOT_MAX_PER_REQUEST_MAX */
    char event[SLOT_EVENT_BYTES_MAX + 1];
    char grant[SLOT_HOLD_ID_BYTES + 1]; /* the item's grant ("" = the cart's, "Admission") */
    uint8_t alloc_len;                  /* 0: from the free shards; else the item's block ("allocation") */
    char alloc[SLOT_EVENT_BYTES_MAX + 1];
} slot_item;

/* A seat map as create_event's "seats" gave it (docs/protocol.md, "Seated
 * events"), checked by the parser (src/proto/proto_seat.c): names, ranges,
 * no duplicate section or row, at most SLOT_SEATS_MAX seats. Heap, owned by
 * the request that carries it (slot_req.seat_map), freed by slot_req_clear. */
typedef struct slot_seat_row_def {
    uint8_t section_len, name_len;
    uint8_t category; /* 0: none; else 1 + its index in the map's cats */
    char section[SLOT_SEAT_NAME_BYTES_MAX + 1];
    char name[SLOT_SEAT_NAME_BYTES_MAX + 1];
    uint32_t from, to; /* 1..SLOT_SEAT_NUMBER_MAX, from <= to */
} slot_seat_row_def;

typedef struct slot_seat_map {
    uint32_t nrows, nsections; /* rows in map order: section by section, as given */
    uint8_t ncats;             /* distinct categories, in order of first use */
    uint64_t seats;            /* sum of the rows' lengths, 1..SLOT_SEATS_MAX */
    uint32_t row_max;          /* the longest row's seats */
    uint8_t cat_len[SLOT_SEAT_CATEGORIES_MAX];
    char cats[SLOT_SEAT_CATEGORIES_MAX][SLOT_SEAT_CATEGORY_BYTES_MAX + 1];
    slot_seat_row_def rows[]; /* nrows */
} slot_seat_map;

/* subscribe's "from" (docs/protocol.md, "Feed"). */
typedef enum slot_feed_from { SLOT_FEED_FROM_ACKED = 0, SLOT_FEED_FROM_START, SLOT_FEED_FROM_SEQ } slot_feed_from;

/* cluster_change's "change" (docs/protocol.md, "cluster_change"). */
typedef enum slot_cluster_change {
    SLOT_CHANGE_NONE = 0,
    SLOT_CHANGE_ADD,     /* "add": the node may join (again) and becomes a member */
    SLOT_CHANGE_REMOVE,  /* "remove": a replica leaves the configuration */
    SLOT_CHANGE_PROMOTE, /* "promote": a planned switchover to that member */
} slot_cluster_change;

/* slot_cluster_change_name — "add", "remove", "promote" or "?"; static. */
const char *slot_cluster_change_name(slot_cluster_change c);

typedef struct slot_req {
    slot_op op;
    uint32_t has; /* SLOT_HAS_* bits */
    slot_id id;   /* echoed in the reply */
    uint8_t event_len, request_len, user_len, hold_len;
    uint16_t token_len;
    char event[SLOT_EVENT_BYTES_MAX + 1];
    char request[SLOT_REQUEST_BYTES_MAX + 1];
    char user[SLOT_USER_BYTES_MAX + 1]; /* get_hold: user_len 0 = any user's (worker, admin) */
    char hold[SLOT_HOLD_ARG_BYTES_MAX + 1];
    char token[SLOT_TOKEN_BYTES_MAX + 1];
    uint8_t parent_len;                       /* create_event: 0 = none */
    uint8_t alloc_len;                        /* hold, allocate, deallocate: the block; 0 = none */
    char alloc[SLOT_EVENT_BYTES_MAX + 1];     /* the block's name (the event rule) */
    uint64_t alloc_qty;                       /* allocate, deallocate: 1..SLOT_CAPACITY_MAX units */
    char parent[SLOT_EVENT_BYTES_MAX + 1];    /* create_event: the parent event (docs/protocol.md, "Ticket types") */
    uint32_t qty;                             /* hold: 1..SLOT_MAX_PER_REQUEST_MAX */
    uint64_t capacity;                        /* 0..SLOT_CAPACITY_MAX */
    uint32_t shards;                          /* 1..SLOT_SHARDS_MAX */
    uint32_t hold_ttl_ms;                     /* SLOT_HOLD_TTL_MS_MIN..MAX */
    uint64_t max_per_user;                    /* 0 (no limit)..SLOT_CAPACITY_MAX */
    uint32_t max_per_request;                 /* 1..SLOT_MAX_PER_REQUEST_MAX */
    slot_event_status status;                 /* set_status */
    uint64_t opens_at_ms, closes_at_ms;       /* create_event, set_sale_window: 0 (none)..SLOT_TIME_MS_MAX */
    uint32_t max_extensions;                  /* create_event: 0..SLOT_MAX_EXTENSIONS_MAX */
    uint64_t max_hold_ms;                     /* create_event: SLOT_MAX_HOLD_MS_MIN..MAX; 0 = 2 x hold_ttl_ms */
    uint32_t by_ms;                           /* extend: SLOT_EXTEND_BY_MS_MIN..MAX */
    bool reacquire;                           /* confirm: take fresh units for an expired or released hold */
    uint32_t waitlist_max;                    /* create_event: 0 (no waitlist)..SLOT_WAITLIST_MAX_MAX */
    uint32_t limit;                           /* waitlist_entries: 1..SLOT_WAITLIST_SHOW_MAX */
    uint8_t nitems;                           /* hold_many: 1..SLOT_CART_ITEMS_MAX, distinct events */
    uint16_t path_len;                        /* backup: bytes of path without the NUL */
    union {                                   /* one op uses one of them: no entry pays for both */
        slot_item items[SLOT_CART_ITEMS_MAX]; /* hold_many */
        char path[SLOT_PATH_BYTES_MAX + 1];   /* backup: the file the server writes, absolute */
        struct {                              /* hold, confirm: "seats", each id NUL-ended, in request order */
            uint16_t n;                       /* 1..max_per_request ids */
            uint16_t len;                     /* bytes used of ids */
            char ids[SLOT_SEAT_IDS_BYTES_MAX];
        } seat_ids;
    };
    /* seated events (docs/protocol.md, "Seated events") */
    uint8_t category_len, section_len;                   /* hold: the filters; 0 = none */
    char category[SLOT_SEAT_CATEGORY_BYTES_MAX + 1];     /* hold: "category" */
    char section[SLOT_SEAT_NAME_BYTES_MAX + 1];          /* hold: "section" */
    slot_seat_map *seat_map;                             /* create_event: "seats", heap (slot_req_clear); or NULL */
    slot_place_args *place;                              /* move_event, place_*: heap (slot_req_clear); or NULL */
    /* v1.2 admission (docs/protocol.md, "Admission") */
    uint8_t admission;                   /* create_event, set_admission: SLOT_ADMISSION_* */
    uint32_t admit_per_s;                /* SLOT_ADMIT_PER_S_MIN..MAX */
    uint32_t grant_ttl_ms;               /* SLOT_GRANT_TTL_MS_MIN..MAX */
    uint64_t queue_opens_at_ms;          /* 0 = joins at once */
    char ticket[SLOT_HOLD_ID_BYTES + 1]; /* admission: the entry's ticket ("" when malformed) */
    char grant[SLOT_HOLD_ID_BYTES + 1];  /* hold, hold_many, waitlist_join: the grant ("" = none or malformed) */
    /* v1.2 client limits (docs/protocol.md, "Client limits") */
    uint8_t client_len;                     /* 0 = no client key (not limited) */
    char client[SLOT_CLIENT_BYTES_MAX + 1]; /* hold, hold_many: the client key */
    uint64_t max_active_per_client;         /* create_event: 0 (no limit)..SLOT_CAPACITY_MAX units */
    uint32_t client_rate;                   /* create_event: 0 (no limit)..SLOT_CLIENT_RATE_MAX holds/s */
    /* feed ops (docs/protocol.md, "Feed") */
    uint8_t consumer_len;
    char consumer[SLOT_CONSUMER_BYTES_MAX + 1]; /* subscribe, ack, feed_forget */
    slot_feed_from from;                        /* subscribe */
    uint64_t feed_seq;                          /* subscribe from SEQ (1..), ack seq (0..) */
    uint32_t window;                            /* subscribe: 1..SLOT_FEED_WINDOW_MAX */
    /* cluster_change (docs/protocol.md, "cluster_change") */
    slot_cluster_change change;
    uint8_t node_len;
    char node[SLOT_CLUSTER_NAME_BYTES_MAX + 1]; /* the member it names */
} slot_req;

/* slot_req_clear — free a request's heap parts (seat_map, place) and set them NULL;
 * the rest is left. Whoever parsed into req calls it before reusing or
 * dropping req. NULL-safe on the field. Thread: the request's owner. */
void slot_req_clear(slot_req *req);

/* The waiting room (docs/protocol.md, "Admission"): the event's mode and an entry's state on the wire. */
enum { SLOT_ADMISSION_NONE = 0, SLOT_ADMISSION_QUEUE = 1, SLOT_ADMISSION_LOTTERY = 2 };
enum { SLOT_ROOM_NONE = 0, SLOT_ROOM_WAITING, SLOT_ROOM_ADMITTED, SLOT_ROOM_SOLD_OUT, SLOT_ROOM_EXPIRED };

/* Connection roles (docs/protocol.md, "hello"). */
typedef enum slot_role { SLOT_ROLE_NONE = 0, SLOT_ROLE_FRONTEND, SLOT_ROLE_ADMIN, SLOT_ROLE_WORKER } slot_role;

/* slot_role_name — "frontend", "admin", "worker" or "none"; static. */
const char *slot_role_name(slot_role role);

/* The view of an event, as the "event" op shows it. */
typedef struct slot_event_view {
    char event[SLOT_EVENT_BYTES_MAX + 1];
    slot_event_status status;
    uint64_t capacity, available, held, confirmed;
    uint32_t shards, hold_ttl_ms, max_per_request;
    uint64_t max_per_user;
    uint64_t opens_at_ms, closes_at_ms; /* the sale window; 0 = none */
    uint32_t max_extensions;
    uint64_t max_hold_ms;
    uint32_t waitlist_max;         /* 0 = no waitlist */
    uint64_t waiting, waiting_qty; /* entries waiting, and the units they want */
    /* v1.2 (docs/protocol.md, "Ticket types", "Allocations") */
    char parent[SLOT_EVENT_BYTES_MAX + 1]; /* "" = a root: no "parent" or "effective_available" on the wire */
    uint32_t children;                     /* events whose parent this is */
    uint64_t effective_available;          /* the least available over the chain (a child's) */
    uint64_t allocated;                    /* unused units of blocks of this event and its descendants */
    uint64_t holds_made; /* holds this event has made so far (its next hold seq - 1; every kind: plain, cart
                            item, waitlist offer, reacquire), on the wire only in the event op's reply */
    uint8_t admission;                     /* SLOT_ADMISSION_*; the rest of the room on the wire when not none */
    uint32_t admit_per_s, grant_ttl_ms;
    uint64_t queue_opens_at_ms;
    uint64_t room_joined, room_admitted, room_waiting, room_open;
    uint64_t max_active_per_client; /* 0 = no limit ("Client limits"; on the wire when not 0) */
    uint32_t client_rate;           /* 0 = no limit (on the wire when not 0) */
    uint32_t nblocks;               /* the event's own blocks ("allocations"), name order */
    struct {
        char name[SLOT_EVENT_BYTES_MAX + 1];
        uint64_t qty, remaining, held, confirmed;
    } blocks[SLOT_BLOCKS_MAX];
} slot_event_view;

/* A waitlist entry's state (docs/protocol.md, "Waitlist"): the waitlist op's "status". */
typedef enum slot_wait_state {
    SLOT_WAIT_NONE = 0, /* no entry for the key */
    SLOT_WAIT_WAITING = 1,
    SLOT_WAIT_OFFERED = 2, /* given a held hold, in join order */
    SLOT_WAIT_LEFT = 3,    /* left: the key is spent */
} slot_wait_state;

/* slot_wait_state_name — "none", "waiting", "offered" or "left"; static. */
const char *slot_wait_state_name(slot_wait_state s);

/* One hold of a cart's answer (hold_many), in request order. */
typedef struct slot_cart_hold {
    char event[SLOT_EVENT_BYTES_MAX + 1];
    char hold[SLOT_HOLD_ID_BYTES + 1];
    slot_hold_status status;
    uint32_t qty;
    uint64_t expires_at_ms;
} slot_cart_hold;

/* The stats op's numbers (docs/protocol.md, "stats"), filled by the server
 * and written by proto in this order. Counters since start unless noted. */
typedef struct slot_stats {
    uint64_t connections; /* open now */
    uint64_t connections_total, requests[SLOT_OP__COUNT], bad_lines, holds, sold_out, sold_out_fast;
    uint64_t cold_parked, cold_waiting, cold_loading, cold_loaded, cold_walked, cold_slices;
    uint64_t errors, commits, commit_failures;
    uint64_t batch_count, batch_p50, batch_p99, batch_max; /* requests per batch */
    double batch_mean;
    uint64_t latency_count, latency_p50, latency_p99, latency_p999, latency_max; /* microseconds */
    uint64_t queue, db_bytes, map_bytes;
    bool nosync;    /* "durability": "nosync" when true */
    bool pipelined; /* "durability": "pipelined" when true (and not nosync); else "sync" */
    uint64_t reads_paused, accepts_paused, connections_timed_out;
    uint64_t commit_busy_us, commit_sync_us, backups, backups_running;
} slot_stats;

/* One member of a replica set as the cluster op shows it (docs/protocol.md,
 * "Clients following the primary"), in the configuration's order. */
typedef struct slot_cluster_member {
    char node[SLOT_CLUSTER_NAME_BYTES]; /* its id, NUL-terminated */
    char addr[SLOT_CLUSTER_ADDR_BYTES]; /* its client address "H:P"; "" when unknown */
    const char *role;                   /* static text: "primary", "replica", "joining", ... */
    uint64_t seq;                       /* the last seq it applied (the primary: acked, at most the commit point) */
    uint64_t lag_ms;                    /* the primary's view: ms since it last heard from it; else 0 */
} slot_cluster_member;

/*
 * The cluster op's body, and cluster_change's when it succeeds, filled by the
 * server (standalone) or src/cluster and written by proto in this order:
 * cluster, node, role, epoch, primary, seq, then (a replica-set member only)
 * snapshots_installed and snapshots_sent, then members.
 */
typedef struct slot_cluster_view {
    char cluster[SLOT_CLUSTER_NAME_BYTES]; /* --cluster; "" standalone */
    char node[SLOT_CLUSTER_NAME_BYTES];    /* --node; "" standalone */
    const char *role;                      /* static text: "standalone", "primary", "replica", ... */
    uint64_t epoch;                        /* the configuration's epoch; 0 standalone */
    char primary[SLOT_CLUSTER_ADDR_BYTES]; /* the primary's client address; "" when unknown or standalone */
    uint64_t seq;                          /* the last seq this node applied (standalone: the store's) */
    bool member;                           /* a replica-set member: snapshots_* are written */
    uint64_t snapshots_installed, snapshots_sent;
    uint32_t nmembers; /* entries of members, at most SLOT_CLUSTER_MEMBERS_MAX; 0 standalone */
    slot_cluster_member members[SLOT_CLUSTER_MEMBERS_MAX];
} slot_cluster_view;

/* One known feed consumer, as feed_consumers shows it (in name order). */
typedef struct slot_consumer_pos {
    char name[SLOT_CONSUMER_BYTES_MAX + 1]; /* NUL-terminated */
    uint64_t acked;                         /* the last seq it acknowledged */
} slot_consumer_pos;

/* One waiting entry, as waitlist_entries shows it (in join order). */
typedef struct slot_wait_entry {
    uint64_t position; /* 1 = next */
    uint64_t joined_at_ms;
    uint32_t qty;
    char user[SLOT_USER_BYTES_MAX + 1];
    char request[SLOT_REQUEST_BYTES_MAX + 1];
} slot_wait_entry;

/* One invariant violation found by check (docs/protocol.md, "Invariants"). */
typedef struct slot_violation {
    int invariant; /* 1..7 */
    char event[SLOT_EVENT_BYTES_MAX + 1];
    char detail[160];
} slot_violation;

#define SLOT_CHECK_VIOLATIONS_MAX 100 /* check reports at most this many; the count is exact */

/*
 * Result of one op. `err` is SLOT_E_OK for every "ok":true answer (sold out
 * included). Which other fields mean something depends on the op; the proto
 * encoder knows. Heap parts (shard_free, violations) are owned by the result
 * and freed by slot_res_clear().
 */
typedef struct slot_res {
    slot_err err;
    char message[160];            /* human text for errors; empty = default */
    bool replay;                  /* "replay":true */
    bool sold_out;                /* hold: status sold_out */
    bool done;                    /* release "released" / cancel "cancelled" */
    slot_hold_status hold_status; /* hold, confirm, release, cancel, get_hold, hold_not_active */
    char hold[SLOT_HOLD_ID_BYTES + 1];
    char user[SLOT_USER_BYTES_MAX + 1];
    uint32_t qty;
    uint64_t available; /* sold_out: units free across all shards */
    uint64_t expires_at_ms, created_at_ms;
    uint32_t returned;                        /* confirm, get_hold: units a partial confirm gave back */
    uint32_t extensions;                      /* extend, get_hold: extensions taken */
    char replaces[SLOT_HOLD_ID_BYTES + 1];    /* confirm (reacquire), get_hold: the hold this one replaced; "" = none */
    char replaced_by[SLOT_HOLD_ID_BYTES + 1]; /* get_hold: the hold a reacquire made for this one; "" = none */
    uint64_t opens_at_ms, closes_at_ms;       /* not_on_sale: the event's window */
    char
        sale_event[SLOT_EVENT_BYTES_MAX + 1]; /* not_on_sale of an ancestor: its name ("event"); "" = the event's own */
    bool block; /* allocate, deallocate: the block's reply; hold: sold_out with remaining */
    char block_name[SLOT_EVENT_BYTES_MAX + 1]; /* allocate, deallocate: "allocation" */
    uint64_t block_qty, block_remaining;       /* allocate, deallocate: qty (the block's total), remaining */
    char short_event[SLOT_EVENT_BYTES_MAX +
                     1];  /* sold_out over a chain: the nearest event that lacked ("short"); "" = none */
    slot_event_view view; /* create_event, set_capacity, reshard, set_status, event */
    uint32_t nshards;     /* shards op */
    uint64_t *shard_free; /* shards op: nshards values, heap */
    uint64_t events_checked, holds_checked, expired; /* check, expire */
    uint32_t nviolations;                            /* check: total found */
    uint64_t seq;                                    /* digest: the store's seq (slot/store.h) */
    char digest[SLOT_DIGEST_HEX_BYTES + 1];          /* digest: SHA-256, lowercase hex */
    slot_violation *violations;                      /* check: min(nviolations, MAX), heap */
    slot_role role;                                  /* hello */
    uint64_t feed_from, feed_head;    /* subscribe: first seq it sends, the head; feed_truncated: oldest in feed_from */
    uint64_t feed_acked;              /* subscribe: the window's base; ack: the stored position */
    uint64_t feed_trimmed;            /* the sweeper's: feed entries trimmed */
    bool cluster;                     /* hello: a replica-set member; "features" then lists "cluster" too */
    bool http;                        /* hello: the server has --http; "features" then lists "http" too */
    bool placement;                   /* hello: the server has --placement; "features" then lists "placement" */
    const char *version;              /* hello: the server's version (static text), or NULL */
    uint64_t backup_bytes, backup_ms; /* backup: the file's size in bytes, the whole backup's time in ms */
    char *text;                       /* metrics: the Prometheus text, heap, text_len bytes; or NULL */
    size_t text_len;
    slot_stats *stats;                     /* stats: the numbers, heap; or NULL */
    slot_consumer_pos *consumers;          /* feed_consumers: nconsumers known consumers, heap (feed_head: the head) */
    uint32_t nconsumers;                   /* at most SLOT_FEED_CONSUMERS_MAX */
    slot_cluster_view *cluster_view;       /* cluster, cluster_change: the set as this node sees it, heap; or NULL */
    char *fields; /* placement, wrong_set: more reply fields, a JSON fragment that begins with ','
                     (fields_len bytes, heap; the replica-set layer's src/cluster/placement*.c); or NULL */
    size_t fields_len;
    char primary[SLOT_CLUSTER_ADDR_BYTES]; /* not_primary: the primary's client address "H:P"; "" = unknown */
    char item_event[SLOT_EVENT_BYTES_MAX + 1]; /* hold_many: the item a sold_out or an error is about; "" = none */
    bool waitlist_full;                        /* waitlist_join: sold_out with "waitlist_full":true */
    slot_wait_state wait_state;                /* waitlist_join, waitlist: the entry's state (NONE: a hold answer) */
    uint64_t position;                         /* waiting: 1 = next */
    uint32_t ncart;                            /* hold_many: holds in cart */
    slot_cart_hold *cart;                      /* hold_many: ncart holds, request order, heap */
    uint32_t nentries;                         /* waitlist_entries: entries in `entries` */
    slot_wait_entry *entries;                  /* waitlist_entries: heap */
    uint8_t room_status;                       /* join, admission: SLOT_ROOM_* (0: not a room answer) */
    bool position_null;                        /* join, admission: lottery before the draw ("position":null) */
    uint64_t draw_at_ms;                       /* with position_null: the draw's time */
    char ticket[SLOT_HOLD_ID_BYTES + 1];       /* join, admission */
    char grant[SLOT_HOLD_ID_BYTES + 1];        /* admitted: the grant */
    const char *limit;                         /* rate_limited: "client_rate" or "max_active_per_client" (static) */
    uint64_t retry_after_ms;                   /* rate_limited: when a retry may pass */
    /* seated events (docs/protocol.md, "Seated events") */
    bool taken;           /* hold: status "taken" (extra carries "taken":[...]) */
    bool seated;          /* sold_out of a seated event: "max_adjacent" is written */
    uint64_t max_adjacent; /* sold_out of a seated event: the longest free run asked about */
    char *extra;          /* JSON members ("k":v,...) written after the op's fields of an ok reply, heap; or NULL */
    size_t extra_len;
} slot_res;

/* slot_res_clear — free a result's heap parts and zero it. `res` may be zeroed already. */
void slot_res_clear(slot_res *res);

/* Set res to an error with a message (printf-style; NULL fmt = default message). */
void slot_res_error(slot_res *res, slot_err err, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

#endif
