/*
 * slot/limits.h — every fixed limit of slotd, with its unit and its reason.
 *
 * Wire limits come from docs/protocol.md ("Names and numbers", the admin ops);
 * the rest are slotd's own bounds (every queue, buffer and loop has one).
 */
#ifndef SLOT_LIMITS_H
#define SLOT_LIMITS_H

#include <stdint.h>

/* Names (docs/protocol.md, "Names and numbers"). */
#define SLOT_EVENT_BYTES_MAX 64     /* event id: 1..64 bytes of [A-Za-z0-9._:-] */
#define SLOT_REQUEST_BYTES_MAX 64   /* idempotency key: same alphabet and length */
#define SLOT_USER_BYTES_MAX 128     /* user: 1..128 bytes of UTF-8, no controls */
#define SLOT_ID_BYTES_MAX 64        /* a request's "id" when it is a string */
#define SLOT_TOKEN_BYTES_MAX 256    /* hello token; longer tokens are refused */
#define SLOT_HOLD_ID_BYTES 32       /* hold id: 16 hex digits of sequence + 16 of random tag */
#define SLOT_HOLD_ARG_BYTES_MAX 128 /* a "hold" argument longer than this is invalid_argument */
#define SLOT_DIGEST_HEX_BYTES 64    /* digest: SHA-256 as lowercase hex */
#define SLOT_PATH_BYTES_MAX 1023    /* backup: the server-side file's absolute path (kept in a request's cart space) */

/* Seated events (docs/protocol.md, "Seated events"; docs/design.md, "Seats"). */
#define SLOT_SEATS_MAX 1000000          /* seats of one event (its capacity) */
#define SLOT_SEAT_NAME_BYTES_MAX 16     /* a section's or a row's name: 1..16 bytes of [A-Za-z0-9] */
#define SLOT_SEAT_ID_BYTES_MAX 50       /* "SECTION-ROW-NUMBER": 16 + 1 + 16 + 1 + up to 16 digits */
#define SLOT_SEAT_NUMBER_MAX 65535      /* seat numbers: 1..65535 (from, to) */
#define SLOT_SEAT_ROW_SEATS_MAX 4096    /* seats of one row (to - from + 1): its record stays small */
#define SLOT_SEAT_ROWS_MAX 65536        /* rows of one event */
#define SLOT_SEAT_SECTIONS_MAX 4096     /* sections of one event */
#define SLOT_SEAT_CATEGORIES_MAX 64     /* distinct categories of one event (kept in its map header) */
#define SLOT_SEAT_CATEGORY_BYTES_MAX 64 /* a category's name: 1..64 bytes of the event-name rule */
#define SLOT_SEAT_IDS_BYTES_MAX 2048    /* a hold's "seats": the ids' bytes, each with a NUL, in the request */
/* A shard's row summary (src/alloc/seat_sum.c): one record per this many of
 * the shard's rows (7 bytes a row), so a record stays far under a placement
 * chunk (SLOT_PLACE_CHUNK_BYTES) and a write set's entry. */
#define SLOT_SEAT_SUM_ROWS_MAX 1024

/* Numbers (docs/protocol.md, "Names and numbers"). */
#define SLOT_CAPACITY_MAX (UINT64_C(1) << 40) /* capacity and max_per_user: 0..2^40 */
#define SLOT_SHARDS_MAX 1024                  /* shards: 1..1024 */
#define SLOT_SHARDS_DEFAULT 16
#define SLOT_HOLD_TTL_MS_MIN 1000 /* hold_ttl_ms: 1 s .. 1 day */
#define SLOT_HOLD_TTL_MS_MAX 86400000
#define SLOT_HOLD_TTL_MS_DEFAULT 600000 /* 10 minutes */
#define SLOT_MAX_PER_REQUEST_MAX 1000   /* max_per_request: 1..1000 */
/* A seated hold's feed entry lists its seat ids, comma-separated: at most this many bytes. */
#define SLOT_FEED_SEATS_BYTES_MAX (SLOT_MAX_PER_REQUEST_MAX * (SLOT_SEAT_ID_BYTES_MAX + 1))
#define SLOT_MAX_PER_REQUEST_DEFAULT 10
#define SLOT_JSON_DEPTH_MAX 32 /* nesting; the top-level object is level 1 */

/* v1.1 (docs/protocol.md, "Sale windows", "extend"). */
#define SLOT_TIME_MS_MAX \
    (UINT64_C(1) << 53)             /* opens_at, closes_at: 0 (none)..2^53 ms since the epoch (JSON-safe integers) */
#define SLOT_MAX_EXTENSIONS_MAX 100 /* max_extensions: 0..100 */
#define SLOT_MAX_EXTENSIONS_DEFAULT 1
#define SLOT_MAX_HOLD_MS_MIN 1000 /* max_hold_ms: 1 s..2^40 ms; default 2 x hold_ttl_ms */
#define SLOT_MAX_HOLD_MS_MAX (UINT64_C(1) << 40)
#define SLOT_EXTEND_BY_MS_MIN 1000 /* extend's by_ms: 1 s..1 day */
#define SLOT_EXTEND_BY_MS_MAX 86400000
_Static_assert(SLOT_MAX_HOLD_MS_MIN <= 2 * SLOT_HOLD_TTL_MS_MIN, "the default max_hold_ms is in range");
_Static_assert(2ull * SLOT_HOLD_TTL_MS_MAX <= SLOT_MAX_HOLD_MS_MAX, "the default max_hold_ms is in range");

/* v1.1 carts and waitlists (docs/protocol.md, "hold_many", "Waitlist"). */
#define SLOT_CART_ITEMS_MAX 16         /* hold_many: 1..16 items, distinct events */
#define SLOT_WAITLIST_MAX_MAX 10000000 /* waitlist_max: 0 (no waitlist, the default)..10,000,000 entries */
#define SLOT_JOIN_SEQ_BITS \
    40                             /* join sequence numbers of an event: 1..2^40-1 (the order-statistics
                                                  tree of leaves spans them; a join past that is waitlist_full) */
#define SLOT_WAITLIST_SHOW_MAX 100 /* the waitlist_entries op shows at most this many entries */

/* v1.2 admission (docs/protocol.md, "Admission"). */
#define SLOT_ADMIT_PER_S_MIN 1
#define SLOT_ADMIT_PER_S_MAX 1000000
#define SLOT_ADMIT_PER_S_DEFAULT 100
#define SLOT_GRANT_TTL_MS_MIN 1000
#define SLOT_GRANT_TTL_MS_MAX 86400000
#define SLOT_GRANT_TTL_MS_DEFAULT 600000
#define SLOT_ROOM_ENTRIES_MAX 10000000 /* a room holds up to 10,000,000 entries; a join past them is sold_out */
#define SLOT_ROOM_TICK_MS 20           /* the primary's admission timer */
#define SLOT_ROOMS_TICK_MAX 64         /* rooms admitted per tick (the rest wait for the next one) */
#define SLOT_ROOM_BATCH_MAX 4096       /* admissions (and grant expiries looked at) per room per tick */

/* v1.2 client limits (docs/protocol.md, "Client limits"). */
#define SLOT_CLIENT_BYTES_MAX 128    /* client: 1..128 bytes of UTF-8, no controls */
#define SLOT_CLIENT_RATE_MAX 1000000 /* client_rate: 0 (no limit)..1,000,000 holds per second per key */
#define SLOT_CLIENT_BUCKETS \
    65536                               /* rate buckets kept in memory (a power of two); a full table \
                                             forgets the least recently used bucket of a probe run */
#define SLOT_CLIENT_BUCKET_PROBES 8     /* slots a bucket may sit from its hash's home slot */
#define SLOT_CLIENT_RETRY_SCAN_MAX 1024 /* held holds of one client read to find the first to expire */

/* A hold takes at most qty units from at most min(qty, shards) shards. */
#define SLOT_PARTS_MAX SLOT_MAX_PER_REQUEST_MAX

/* v1.2 ticket types (docs/protocol.md, "Ticket types"): a family is at most
 * 3 levels deep (a venue, its areas, their ticket types), so a hold's chain
 * is its event and at most SLOT_ANCESTORS_MAX ancestors. */
#define SLOT_FAMILY_DEPTH_MAX 3
#define SLOT_ANCESTORS_MAX (SLOT_FAMILY_DEPTH_MAX - 1)
/* An event has at most SLOT_CHILDREN_MAX children (create_event refuses
 * more), so a family has at most SLOT_FAMILY_EVENTS_MAX events: the bound of
 * the family's waitlist hand-out, which visits them. */
#define SLOT_CHILDREN_MAX 64
/* v1.2 allocations: an event has at most this many blocks (allocate refuses more). */
#define SLOT_BLOCKS_MAX 16
#define SLOT_FAMILY_EVENTS_MAX (1 + SLOT_CHILDREN_MAX + SLOT_CHILDREN_MAX * SLOT_CHILDREN_MAX)

/*
 * slotd's flags: for each numeric flag its default, and the range the
 * command line accepts (inclusive); slotd --help prints both.
 */
#define SLOT_LINE_BYTES_DEFAULT 65536            /* --max-line, without the \n or \r\n */
#define SLOT_LINE_BYTES_MIN 1024                 /* smaller lines cannot carry a full request */
#define SLOT_LINE_BYTES_MAX (16u << 20)          /* 16 MiB: a line is buffered whole in memory */
#define SLOT_MAP_BYTES_MAX_DEFAULT (64ull << 30) /* --map-size-max: 64 GiB of address space, not of disk */
#define SLOT_MAP_BYTES_MAX_MIN (1ull << 20)      /* 1 MiB */
#define SLOT_MAP_BYTES_MAX_MAX (1ull << 44)      /* 16 TiB */
#define SLOT_SWEEP_INTERVAL_MS_DEFAULT \
    1000 /* --sweep-interval-ms; docs/protocol.md: units back within interval + 1 s */
#define SLOT_SWEEP_INTERVAL_MS_MIN 10
#define SLOT_SWEEP_INTERVAL_MS_MAX 60000   /* a minute: expired units must come back promptly */
#define SLOT_QUEUE_REQUESTS_DEFAULT 100000 /* --max-queue: queued write requests before overloaded */
#define SLOT_QUEUE_REQUESTS_MIN 1
#define SLOT_QUEUE_REQUESTS_MAX 10000000
#define SLOT_CONN_INFLIGHT_DEFAULT 1024 /* --max-inflight: per connection, reading stops above this many unanswered */
#define SLOT_CONN_INFLIGHT_MIN 1
#define SLOT_CONN_INFLIGHT_MAX 1000000
#define SLOT_CONNS_DEFAULT 10000 /* --max-connections; accept pauses at the limit */
#define SLOT_CONNS_MIN 1
#define SLOT_CONNS_MAX 1000000
#define SLOT_CONN_OUT_BYTES_DEFAULT \
    (4u << 20) /* --max-output: per connection, reading stops above this many unsent bytes */
#define SLOT_CONN_OUT_BYTES_MIN 4096
#define SLOT_CONN_OUT_BYTES_MAX (1u << 30)
#define SLOT_IDLE_TIMEOUT_MS_DEFAULT 300000 /* --idle-timeout-ms: 5 min without a byte, nothing pending; 0 never */
#define SLOT_IDLE_TIMEOUT_MS_MIN 0
#define SLOT_IDLE_TIMEOUT_MS_MAX 86400000  /* a day, as for the two below */
#define SLOT_LINE_TIMEOUT_MS_DEFAULT 30000 /* --line-timeout-ms: a started line must end within 30 s */
#define SLOT_LINE_TIMEOUT_MS_MIN 10
#define SLOT_LINE_TIMEOUT_MS_MAX 86400000
#define SLOT_WRITE_TIMEOUT_MS_DEFAULT 30000 /* --write-timeout-ms: replies must make progress within 30 s */
#define SLOT_WRITE_TIMEOUT_MS_MIN 10
#define SLOT_WRITE_TIMEOUT_MS_MAX 86400000
#define SLOT_SLOW_COMMIT_MS_DEFAULT 100 /* --slow-commit-ms: a group commit this slow is logged (warn) */
#define SLOT_SLOW_COMMIT_MS_MIN 0       /* 0: never */
#define SLOT_SLOW_COMMIT_MS_MAX 3600000
#define SLOT_HOST_DEFAULT "127.0.0.1" /* --listen's host, slotctl's --host */
#define SLOT_PORT_DEFAULT 7420
#define SLOT_PORT_MIN 1 /* slotctl --port (slotd --listen also takes 0: any free port) */
#define SLOT_PORT_MAX 65535
#define SLOT_CTL_TIMEOUT_S_DEFAULT 60 /* slotctl --timeout: check scans every hold, allow a big database */
#define SLOT_CTL_TIMEOUT_S_MIN 1
#define SLOT_CTL_TIMEOUT_S_MAX 86400
#define SLOT_CTL_CONNECT_TIMEOUT_MS 5000 /* slotctl's connect */
#define SLOT_CTL_MOVE_TIMEOUT_S 600       /* slotctl move: the longest wait for a move's answer */
#define SLOT_CTL_HOST_BYTES_MAX 255      /* slotctl --host */
/* slotctl feed --placement (tools/slotctl_pfeed.c; docs/design.md, "The feed of a placement") */
#define SLOT_CTL_FEED_SETS_MAX 64 /* replica sets followed at once: as a slot_route keeps */
/* events whose hand-over state is kept (name, owner, gen): a table of twice this many slots */
#define SLOT_CTL_FEED_EVENTS_MAX 65536
/* the longest an entry of the target waits for the source's event.moved, or for the source's
 * feed to pass its head of the probe, before the run stops (exit 1): a move's whole pause is
 * far shorter, so this is a source that cannot be read */
#define SLOT_CTL_FEED_HOLD_MS_MAX 30000
#define SLOT_CTL_FEED_RESUBSCRIBES_MAX 20 /* subscribes of one set in a row that fail (exit 2) */
#define SLOT_CTL_FEED_RESUBSCRIBE_PAUSE_MS 200 /* between two of them */
#define SLOT_CTL_FEED_TURN_LINES 256  /* lines taken from one set before the next set's turn */
#define SLOT_CTL_FEED_POLL_MS 100     /* the wait for any set's next line when nothing moved */
#define SLOT_CTL_FEED_STATE_EVERY 100 /* entries between two writes of --state (and at the end) */
#define SLOT_CTL_FEED_STATE_PATH_BYTES_MAX 4000 /* --state FILE's name (its temporary twin adds 4) */
/* slotctl rebalance (docs/design.md, "Evening out a placement"). */
#define SLOT_CTL_REBALANCE_MOVES_DEFAULT 10 /* --max-moves: moves one run plans, at most */
#define SLOT_CTL_REBALANCE_MOVES_MAX 1000   /* each applied move is a whole move_event: a run of hours at most */
#define SLOT_CTL_REBALANCE_INTERVAL_MS_DEFAULT 1000 /* --interval-ms: --by holds samples the counts this far apart */
#define SLOT_CTL_REBALANCE_INTERVAL_MS_MIN 100      /* shorter, a rate is mostly noise */
#define SLOT_CTL_REBALANCE_INTERVAL_MS_MAX 600000   /* 10 min */
#define SLOT_CTL_REBALANCE_ETCD_MS 10000 /* the map's read from etcd, all endpoints together, at most */
_Static_assert(SLOT_CTL_REBALANCE_MOVES_DEFAULT <= SLOT_CTL_REBALANCE_MOVES_MAX, "--max-moves default in range");
_Static_assert(SLOT_CTL_REBALANCE_INTERVAL_MS_MIN <= SLOT_CTL_REBALANCE_INTERVAL_MS_DEFAULT &&
                   SLOT_CTL_REBALANCE_INTERVAL_MS_DEFAULT <= SLOT_CTL_REBALANCE_INTERVAL_MS_MAX,
               "--interval-ms default in range");
#define SLOT__STR(x) #x
#define SLOT__XSTR(x) SLOT__STR(x)
#define SLOT_LISTEN_DEFAULT SLOT_HOST_DEFAULT ":" SLOT__XSTR(SLOT_PORT_DEFAULT)
#define SLOT_DATA_DEFAULT "./slotd-data"

/* slotd's fixed bounds (no flag). */
#define SLOT_BATCH_REQUESTS_MAX 4096 /* one group commit runs at most this many */
/* --durability pipelined (docs/design.md, "Pipelined group commit"). */
#define SLOT_PIPE_DEPTH 4                    /* batches run whose replies wait for the log's flush, at most */
#define SLOT_PIPE_COMMIT_MS 5                /* the open LMDB transaction is committed this often ... */
#define SLOT_PIPE_COMMIT_BATCHES 64          /* ... or after this many batches, whichever comes first */
#define SLOT_PIPE_WSET_BYTES (16u << 20)     /* one batch's record in the batch log, at most (storage_full past it) */
#define SLOT_SWEEP_BATCH_MAX 1024            /* holds expired per sweeper batch, so sales never stall */
#define SLOT_EXPIRE_CHUNK 256                /* due holds collected per expiry-index scan */
#define SLOT_EXPIRE_OP_MAX 1000000           /* the admin "expire" op expires at most this many */
#define SLOT_MAP_BYTES_INITIAL (64ull << 20) /* 64 MiB; grows on MDB_MAP_FULL */
#define SLOT_MAP_GROW_ATTEMPTS_MAX 64        /* map doublings one batch may try before storage_full */
#define SLOT_READ_BUF_BYTES (64u << 10)      /* one shared read buffer: the loop reads one socket at a time */
#define SLOT_ENTRIES_MAX (256u << 10)        /* requests alive at once (~1.3 KiB each): reading pauses above */
#define SLOT_TOKENS_MAX 64                   /* lines in --token-file */
#define SLOT_TOKEN_LINE_BYTES_MAX \
    (SLOT_TOKEN_BYTES_MAX + 63)     /* a --token-file line without its newline:
                                                  a role, blanks and a token; a longer line is refused */
#define SLOT_LISTEN_BACKLOG 1024    /* listen(2) backlog */
#define SLOT_DRAIN_MS 2000          /* how long a closing connection's unread input is discarded */
#define SLOT_SHUTDOWN_FLUSH_MS 5000 /* on stop, how long slow clients get to take their replies */
#define SLOT_STOP_POLL_MS 10        /* while stopping, how often the stop timer looks */
#define SLOT_DISK_FULL_BYTES \
    (256u << 10)                        /* EIO from a commit with less free than this is a full disk: LMDB
                                                  reports a short page write (64 pages at most) as EIO */
#define SLOT_PARTIAL_BYTES_INITIAL 1024 /* first buffer for an unfinished line (grows by doubling) */
#define SLOT_OUT_BYTES_INITIAL 4096     /* first reply buffer of a connection (grows by doubling) */
#define SLOT_HTTP_HEAD_BYTES_MAX \
    (32u << 10) /* --http: a request line and headers over this are answered 431
                                                  (JSON, line_too_long) and the connection closed */
#define SLOT_HTTP_CONN_MEMORY_BYTES \
    (64u << 10) /* --http: libmicrohttpd's memory per connection, its read buffer
                                                  included: a head must fit it whole before slotd sees it, and
                                                  one too big for it gets libmicrohttpd's own 431 page */

/*
 * The etcd client (slot/etcd.h). One request is tried once on each endpoint
 * of its list, so it takes at most SLOT_ETCD_ATTEMPTS_MAX attempts, each of
 * at most timeout_ms (slot_etcd_opts); a watch's stream has no timeout.
 */
#define SLOT_ETCD_ENDPOINTS_MAX 16 /* endpoints in one list: etcd advises clusters of 3 to 7 members */
#define SLOT_ETCD_ATTEMPTS_MAX SLOT_ETCD_ENDPOINTS_MAX /* attempts per request: one per endpoint, none twice */
#define SLOT_ETCD_ENDPOINT_BYTES_MAX 200               /* one "http://host:port", held in a fixed array */
#define SLOT_ETCD_URL_BYTES_MAX (SLOT_ETCD_ENDPOINT_BYTES_MAX + 32) /* an endpoint plus the longest gateway path */
#define SLOT_ETCD_KEY_BYTES_MAX 1024           /* slotd's keys are short paths (/slotd/<cluster>/node/<id>) */
#define SLOT_ETCD_VALUE_BYTES_MAX (256u << 10) /* base64 (x4/3) plus JSON stays below the default body bound */
#define SLOT_ETCD_RANGE_LIMIT_MAX 10000        /* keys in one get_prefix answer */
#define SLOT_ETCD_TTL_S_MAX 9000000000ll       /* lease TTL, s: etcd's own cap (lease.MaxLeaseTTL) */
#define SLOT_ETCD_TIMEOUT_MS_DEFAULT \
    2000u                                       /* one attempt, connect included: twice etcd's default election
                                                  timeout (1 s), so an attempt can outlast a leader change */
#define SLOT_ETCD_TIMEOUT_MS_MAX 600000u        /* 10 min: a longer wait is a hang, not a slow answer */
#define SLOT_ETCD_INFLIGHT_DEFAULT 64u          /* requests and watches in flight; slotd needs a few at a time */
#define SLOT_ETCD_INFLIGHT_MAX 4096u            /* each holds a curl handle, a socket and its buffers */
#define SLOT_ETCD_BODY_BYTES_DEFAULT (1u << 20) /* one answer, or a watch's undelivered stream, buffered whole */
#define SLOT_ETCD_BODY_BYTES_MIN (4u << 10)     /* below this not even a small key's answer fits */
#define SLOT_ETCD_BODY_BYTES_MAX (64u << 20)    /* 64 MiB: an answer is held in memory until delivered */
#define SLOT_ETCD_RESP_BYTES_INITIAL 1024       /* first buffer of an answer (grows by doubling, to the body bound) */
#define SLOT_ETCD_WATCH_KEEPIDLE_S 2            /* a watch's TCP keep-alive: the first probe after 2 s idle, */
#define SLOT_ETCD_WATCH_KEEPINTVL_S 1           /* then one a second, so a vanished etcd ends it (EDISCONNECT) */

/* The feed (slot/feed.h; docs/protocol.md, "Feed"). */
#define SLOT_CONSUMER_BYTES_MAX 64    /* consumer names follow the event rule: 1..64 of [A-Za-z0-9._:-] */
#define SLOT_FEED_WINDOW_DEFAULT 1000 /* subscribe's window: entries pushed past the last ack */
#define SLOT_FEED_WINDOW_MAX 10000
#define SLOT_FEED_RETENTION_MS_DEFAULT 604800000ull /* --feed-retention-ms: 7 days */
#define SLOT_FEED_RETENTION_MS_MIN 0ull             /* 0: trim as soon as every consumer acked */
#define SLOT_FEED_RETENTION_MS_MAX 31536000000ull   /* 365 days */
#define SLOT_FEED_TRIM_BATCH_MAX 1024               /* entries one sweep trims, so trimming never stalls a sale */
#define SLOT_FEED_PUSH_BYTES_HINT 512               /* most push lines fit; an event entry may need more */
#define SLOT_FEED_CONSUMERS_MAX 1024                /* known consumers feed_consumers lists and a trim considers */

/* The idempotency index (src/alloc/idem.c says why these sizes). */
#define SLOT_IDEM_BUCKETS_LOG2 12        /* 4096 buckets to start with; doubles incrementally */
#define SLOT_IDEM_MOVE_BUCKETS 8         /* buckets a call moves while the table doubles */
#define SLOT_IDEM_BLOCK_BYTES (1u << 20) /* arena block: ~10,000 entries */

/* Cold events (docs/design.md, "Cold events load in slices"): a closed,
 * settled event's keys are loaded into the index a slice per batch while the
 * requests that need them wait, parked, and everyone else's go on. */
#define SLOT_COLD_LOAD_KEYS_DEFAULT \
    1024u /* --cold-load-keys: holds walked per batch, ~1 ms of the commit
                                                  thread (1.0-1.6 us a key on the reference machine) */
#define SLOT_COLD_LOAD_KEYS_MIN 1u
#define SLOT_COLD_LOAD_KEYS_MAX 1000000u /* a slice this large is the one-off stall this exists to avoid */
#define SLOT_COLD_LOADS_MAX 64u          /* cold events queued for loading at once; the next is overloaded */
#define SLOT_COLD_PARKED_MAX 4096u       /* requests parked until their event's keys are in; then overloaded */
#define SLOT_COLD_CONN_SET_SLOTS \
    8192u /* the commit thread's set of a batch's parked connections: a
                                                  power of two, at least twice the batch, so probing ends */

_Static_assert(SLOT_LINE_BYTES_DEFAULT >= SLOT_LINE_BYTES_MIN, "default line limit below minimum");
_Static_assert(SLOT_LINE_BYTES_DEFAULT <= SLOT_LINE_BYTES_MAX, "default line limit above maximum");
_Static_assert(SLOT_PARTS_MAX <= 65535, "parts are counted in 16 bits");
_Static_assert(SLOT_SHARDS_MAX <= 65535, "shard numbers are 16-bit in keys");
_Static_assert(SLOT_QUEUE_REQUESTS_DEFAULT >= 100000, "docs/protocol.md: queue bound at least 100,000");
_Static_assert(SLOT_SWEEP_BATCH_MAX <= SLOT_BATCH_REQUESTS_MAX, "a sweep fits one batch budget");
_Static_assert(SLOT_HTTP_CONN_MEMORY_BYTES >= 2 * SLOT_HTTP_HEAD_BYTES_MAX,
               "a head over the limit still fits libmicrohttpd's memory, so slotd answers it");
_Static_assert(SLOT_EXPIRE_CHUNK <= SLOT_SWEEP_BATCH_MAX, "a chunk fits a sweep");
_Static_assert(SLOT_SWEEP_INTERVAL_MS_DEFAULT >= SLOT_SWEEP_INTERVAL_MS_MIN, "default sweep interval in range");
_Static_assert(SLOT_SWEEP_INTERVAL_MS_DEFAULT <= SLOT_SWEEP_INTERVAL_MS_MAX, "default sweep interval in range");
_Static_assert(SLOT_MAP_BYTES_INITIAL <= SLOT_MAP_BYTES_MAX_DEFAULT, "the map starts below its bound");
_Static_assert(SLOT_ETCD_VALUE_BYTES_MAX / 3 * 4 + 4 * SLOT_ETCD_KEY_BYTES_MAX < SLOT_ETCD_BODY_BYTES_DEFAULT,
               "a value of the largest size comes back in one default-sized body");
_Static_assert(SLOT_ETCD_BODY_BYTES_DEFAULT >= SLOT_ETCD_BODY_BYTES_MIN, "default etcd body bound in range");
_Static_assert(SLOT_ETCD_BODY_BYTES_DEFAULT <= SLOT_ETCD_BODY_BYTES_MAX, "default etcd body bound in range");
_Static_assert(SLOT_ETCD_RESP_BYTES_INITIAL <= SLOT_ETCD_BODY_BYTES_MIN, "the first answer buffer fits any body bound");
_Static_assert(SLOT_ETCD_INFLIGHT_DEFAULT <= SLOT_ETCD_INFLIGHT_MAX, "default etcd in-flight bound in range");
_Static_assert(SLOT_ETCD_TIMEOUT_MS_DEFAULT <= SLOT_ETCD_TIMEOUT_MS_MAX, "default etcd timeout in range");
_Static_assert(SLOT_FEED_RETENTION_MS_DEFAULT <= SLOT_FEED_RETENTION_MS_MAX, "default feed retention in range");
_Static_assert(SLOT_FEED_WINDOW_DEFAULT <= SLOT_FEED_WINDOW_MAX, "default window in range");
_Static_assert(SLOT_FEED_TRIM_BATCH_MAX <= SLOT_BATCH_REQUESTS_MAX, "a trim fits one batch budget");
_Static_assert(SLOT_CONSUMER_BYTES_MAX == SLOT_EVENT_BYTES_MAX, "consumer names follow the event rule");

/* Replica sets (docs/design.md, "Replica sets"; docs/operations.md, "Flags"). */
#define SLOT_FAILOVER_TIMEOUT_MS_DEFAULT \
    500 /* --failover-timeout-ms: a replica that hears nothing this long campaigns (failover median 0.88 s measured) */
#define SLOT_FAILOVER_TIMEOUT_MS_MIN 10
#define SLOT_FAILOVER_TIMEOUT_MS_MAX 600000
#define SLOT_REPL_TIMEOUT_MS_DEFAULT \
    300 /* --repl-timeout-ms: a batch's acks must come within this (well above a replica's fdatasync) */
#define SLOT_REPL_TIMEOUT_MS_MIN 10
#define SLOT_REPL_TIMEOUT_MS_MAX 600000
#define SLOT_LOG_KEEP_RECORDS_DEFAULT \
    1000000ull /* --log-keep-records: the batch log keeps at least this many records */
#define SLOT_LOG_KEEP_RECORDS_MIN 16ull
#define SLOT_LOG_KEEP_RECORDS_MAX (1ull << 40)
#define SLOT_LOG_SEGMENT_BYTES_DEFAULT \
    (64ull << 20) /* --log-segment-bytes: the batch log is trimmed a segment at a time */
#define SLOT_LOG_SEGMENT_BYTES_MIN 4096ull
#define SLOT_LOG_SEGMENT_BYTES_MAX (1ull << 30)
#define SLOT_MIN_REPLICAS_DEFAULT 1 /* --min-replicas: fewer replicas than this: writes unavailable */
#define SLOT_MIN_REPLICAS_MIN 0
#define SLOT_CLUSTER_MEMBERS_MAX 16 /* members of one configuration, and nodes a primary tracks */
#define SLOT_MIN_REPLICAS_MAX (SLOT_CLUSTER_MEMBERS_MAX - 1)
#define SLOT_CLUSTER_LEASE_TTL_S 2          /* a node key's lease: gone 2 s after its node stopped */
#define SLOT_CLUSTER_APPLY_RECORDS_MAX 1024 /* records one apply transaction of a replica takes */
#define SLOT_CLUSTER_NAME_BYTES_MAX 64      /* --cluster and --node: as the replication channel's names */
/* A replica about to take over first dials the other members (the pre-vote,
 * docs/design.md "Partitions"); one that reached too few of them within a
 * failover timeout waits before it tries again: one timeout after the first
 * miss, doubling up to this many, each with up to as much again of jitter. */
#define SLOT_CLUSTER_PROBE_BACKOFF_MAX 4

_Static_assert(SLOT_COLD_LOAD_KEYS_DEFAULT >= SLOT_COLD_LOAD_KEYS_MIN, "default slice in range");
_Static_assert(SLOT_COLD_LOAD_KEYS_DEFAULT <= SLOT_COLD_LOAD_KEYS_MAX, "default slice in range");
_Static_assert(SLOT_COLD_CONN_SET_SLOTS >= 2 * SLOT_BATCH_REQUESTS_MAX, "the set never fills");
_Static_assert((SLOT_COLD_CONN_SET_SLOTS & (SLOT_COLD_CONN_SET_SLOTS - 1)) == 0, "a power of two");

/*
 * The replica set's own timers and buffers (src/cluster/), in ms of the
 * loop's clock unless said otherwise.
 */
#define SLOT_CLUSTER_NAME_BYTES (SLOT_CLUSTER_NAME_BYTES_MAX + 1) /* a name's buffer, its NUL included */
#define SLOT_CLUSTER_ADDR_BYTES \
    80 /* an address's buffer "[v6-host]:port" and its NUL: a node key's
                                                  addresses are parsed into buffers of this size */
#define SLOT_CLUSTER_NODE_PUT_MS \
    500 /* the node key is rewritten this often (and on every change of
                                                  role): others see our log position within this */
#define SLOT_CLUSTER_LEASE_KEEPALIVE_MS \
    (SLOT_CLUSTER_LEASE_TTL_S * 1000u / 4u) /* four keepalives per TTL, not
                                                  one per tick (at --heartbeat-ms 50 that was 20 a second per
                                                  node, each a write etcd logs) */
#define SLOT_CLUSTER_POLL_WATCHED_MS \
    500 /* the configuration is polled this often while it is watched (a
                                                  watch can lag behind a silently dead etcd connection); every
                                                  tick while it is not */
#define SLOT_CLUSTER_ETCD_TIMEOUT_MS \
    1000u                            /* one etcd attempt of the replica set: half a lease TTL, so a
                                                  keepalive tried on two endpoints still lands within the TTL */
#define SLOT_CLUSTER_REDIAL_MS 200   /* a primary dials a member that is not connected this often */
#define SLOT_CLUSTER_CHANGE_MS 10000 /* cluster_change add and remove end (are answered) within this */
#define SLOT_CLUSTER_SWITCH_MIN_MS \
    1000                              /* cluster_change promote: the drain is given up after
                                                  max(this, 2 x --repl-timeout-ms) */
#define SLOT_CLUSTER_TRIM_MS 1000     /* the batch log is trimmed at most this often */
#define SLOT_CLUSTER_CAS_WHY_BYTES 48 /* a CAS's reason in its log lines: callers pass short phrases */
_Static_assert(SLOT_CLUSTER_LEASE_KEEPALIVE_MS * 2 <= SLOT_CLUSTER_LEASE_TTL_S * 1000u,
               "a lost keepalive is retried before the lease runs out");
_Static_assert(SLOT_CLUSTER_ETCD_TIMEOUT_MS * 2 <= SLOT_CLUSTER_LEASE_TTL_S * 1000u,
               "see SLOT_CLUSTER_ETCD_TIMEOUT_MS");

/*
 * The replication channel (slot/repl.h; its wire format stays there): slotd's
 * own bounds on its buffers, connections and timers.
 */
#define SLOT_REPL_SECRET_BYTES_MIN 16    /* --cluster-secret-file: a shorter shared secret is too easy to guess */
#define SLOT_REPL_SECRET_BYTES_MAX 4096  /* the file is read whole into a fixed buffer */
#define SLOT_REPL_READ_CHUNK_BYTES 65536 /* one read of a connection */
#define SLOT_REPL_KEEP_BYTES (1u << 20)  /* a frame body buffer up to this size is reused, a larger one freed */
#define SLOT_REPL_HANDSHAKES_MAX \
    16                                        /* inbound connections in their handshake at once (the rest wait in
                                                  the backlog): a flood of dials cannot take the memory */
#define SLOT_REPL_LINGER_MS 1000              /* after a REFUSE: wait this long for the peer's close */
#define SLOT_REPL_SNAP_QUEUE_BYTES (4u << 20) /* a SNAP is sent only while less than this waits to be written */
/* Options of slot_repl_new, each with its range (inclusive) and default (given as 0). */
#define SLOT_REPL_INFLIGHT_RECORDS_DEFAULT 64 /* per replica: records sent, not yet acked (the window) */
#define SLOT_REPL_INFLIGHT_RECORDS_MAX 65536
#define SLOT_REPL_INFLIGHT_BYTES_DEFAULT (64ull << 20) /* per replica: bytes of those records */
#define SLOT_REPL_INFLIGHT_BYTES_MIN 4096ull           /* one record always fits an empty window, whatever its size */
#define SLOT_REPL_INFLIGHT_BYTES_MAX (4ull << 30)
#define SLOT_REPL_HEARTBEAT_MS_DEFAULT \
    50 /* --heartbeat-ms: a tenth of the failover timeout, so a lost beat
                                                  or two is no failover */
#define SLOT_REPL_HEARTBEAT_MS_MIN 1
#define SLOT_REPL_HEARTBEAT_MS_MAX 60000
#define SLOT_REPL_HANDSHAKE_MS_DEFAULT 5000 /* a handshake not done within this is closed */
#define SLOT_REPL_HANDSHAKE_MS_MIN 10
#define SLOT_REPL_HANDSHAKE_MS_MAX 600000

/* The idempotency index's internals (src/alloc/idem.c). */
#define SLOT_IDEM_KEY_BYTES_MAX \
    (3 * 256) /* one lookup key: event, user and request id, each bounded by
                                                  the protocol's name limits (all well under 256 bytes) */
#define SLOT_IDEM_EMPTY_VISITS_PER_MOVE \
    10 /* empty buckets a doubling step may pass per bucket it may move,
                                                  so a step's time stays bounded over a sparse table */
#define SLOT_IDEM_RELEASE_BYTES \
    ((size_t)64 << 10) /* the old table's moved part is unmapped in pieces of this
                                                  while a doubling runs: a 64 MiB table in one munmap took 65 ms */
#define SLOT_IDEM_PENDING \
    8 /* a bulk load's queue of puts, their buckets prefetched: several
                                                  cache misses in flight instead of one */
_Static_assert(SLOT_EVENT_BYTES_MAX + SLOT_USER_BYTES_MAX + SLOT_REQUEST_BYTES_MAX + 3 <= SLOT_IDEM_KEY_BYTES_MAX,
               "a key of the longest names fits");

/* ---- the server's and the daemon's own bounds (src/server, src/daemon, src/base/log.c) */

/* HTTP request states kept for reuse (with their buffers), so that a request
 * costs no allocation of slotd's own once the pool is warm; more are freed. */
#define SLOT_HTTP_POOL_MAX 1024
/* At most this many events on sale, and feed consumers, get series of their
 * own in the metrics: the first ones in name (byte) order. Label cardinality
 * stays bounded whatever the store holds. */
#define SLOT_METRICS_EVENTS_MAX 64
#define SLOT_METRICS_CONSUMERS_MAX 64
/* Allocation blocks with series of their own: those of the events shown, at most this many. */
#define SLOT_METRICS_BLOCKS_MAX 256
/* Events with a waiting room that get series of their own (on_sale, any window: a room
 * fills before the sale opens): the first ones in name order. */
#define SLOT_METRICS_ROOMS_MAX 64
/* The metrics text's first buffer (bytes); it grows by doubling. A store with
 * a few events fits; SLOT_METRICS_*_MAX bound the growth. */
#define SLOT_METRICS_TEXT_INITIAL_BYTES 16384u
/* The largest --config file read, and its longest line (with the newline),
 * in bytes: a settings file is a few hundred bytes; anything near these is a
 * mistake. */
#define SLOT_CONFIG_BYTES_MAX (64u << 10)
#define SLOT_CONFIG_LINE_BYTES_MAX 4096u
/* A text log line is cut at this many bytes (JSON lines are jansson's). */
#define SLOT_LOG_LINE_BYTES_MAX 4096u

/* ---- placement (--placement; docs/design.md, "Many replica sets") */

/* etcd steps (a create's CAS, a placement op's listing) waiting at once; beyond: overloaded */
#define SLOT_PLACE_STEPS_MAX 256
/* a done step whose entry never came back for it (its connection went away) is reused after this */
#define SLOT_PLACE_STEP_KEEP_MS 10000
/* how often a primary checks that its addresses are published under the placement's set key */
#define SLOT_PLACE_TICK_MS 200
/* keys the placement op lists at most (events and sets); beyond, the reply says "truncated" */
#define SLOT_PLACE_LIST_MAX 10000
/* the placement's key prefix "/slotd/placement/NAME/", its NUL included */
#define SLOT_PLACE_PREFIX_BYTES (SLOT_CLUSTER_NAME_BYTES_MAX + 20)
/* an etcd key or value of the placement: the prefix, the kind, an event name or a set's addresses */
#define SLOT_PLACE_KEY_BYTES 512
/* the map's copy on each node: a failed read or an ended watch is tried again after this */
#define SLOT_PLACE_CACHE_RETRY_MS 500
/* a placement gen: 1 at create, +1 per move */
#define SLOT_PLACE_GEN_MAX (1ull << 53)
/* the internal ops' "mac": HMAC-SHA256 as lowercase hex */
#define SLOT_PLACE_MAC_HEX_BYTES 64
/* place_export's reply carries at most this many raw bytes of records (base64: 4/3 of it,
 * under the default --max-line of the target, which reads them as place_stage) */
#define SLOT_PLACE_CHUNK_BYTES (32u << 10)
/* place_stage's "data" decoded, at most (a chunk, or the tail's changes of one chunk) */
#define SLOT_PLACE_DATA_BYTES_MAX (2 * SLOT_PLACE_CHUNK_BYTES)
/* place_export's cursor: a database id and a key */
#define SLOT_PLACE_CURSOR_BYTES 520
/* keys one place_purge deletes at most (one batch's write set stays small) */
#define SLOT_PLACE_PURGE_KEYS 4096
/* "moving": when a client should retry a write of an event in its cut-over */
#define SLOT_PLACE_MOVING_RETRY_MS 100

/* ---- the mover (src/cluster/mover*.c; docs/design.md, "The mover") */

/* TTL of the etcd lease that holds the placement's move lock; a mover that
 * dies frees it this long after its last keep-alive (sent every third of it) */
#define SLOT_PLACE_LOCK_TTL_S 5
/* a mover trusts its lock this long after the send of the last keep-alive etcd answered
 * (two missed keep-alives): past it the lease may be gone in etcd, so the mover acts as if
 * it were (it stops before place_own and undoes), as a lease holder must by its own clock */
#define SLOT_PLACE_LOCK_TRUST_MS (SLOT_PLACE_LOCK_TTL_S * 1000 * 2 / 3)
/* how often a placement primary looks for a move a dead mover left (recovery) */
#define SLOT_PLACE_RECOVER_MS 5000
/* place_stage lines in flight at once on the mover's connection to the target */
#define SLOT_PLACE_PIPELINE 8
/* a reply of the source's or the target's primary to one mover line: beyond, the step failed */
#define SLOT_PLACE_IO_MS 10000
/* the connect to a set's primary */
#define SLOT_PLACE_CONNECT_MS 2000
/* records of one event the mover tracks (step 4's table); beyond, the move is refused and undone */
#define SLOT_PLACE_MOVE_RECORDS_MAX (16u << 20)
/* moving: the retry_after_ms of a move_event refused while another move runs (the lock held) */
#define SLOT_PLACE_BUSY_RETRY_MS 1000
/* a finishing step (map CAS, place_done) is tried this many times before recovery is left to it */
#define SLOT_PLACE_FINISH_TRIES 5
_Static_assert(SLOT_PLACE_LOCK_TTL_S * 1000 + 2 * SLOT_PLACE_RECOVER_MS <= 30000,
               "a dead mover's move is resolved within 30 s: its lock expires, then a recovery pass or two");
/* ---- clients that route by the placement (slot_route_*, slot/client.h, src/client/client_route.c) */

/* replica sets a slot_route keeps (name, primary, HTTP address, one follower each) */
#define SLOT_ROUTE_SETS_MAX 64
/* events a slot_route's map keeps; the placement op lists at most SLOT_PLACE_LIST_MAX keys. A map
 * that would grow past it is dropped and learned again (from the next placement reply or
 * wrong_set answers) */
#define SLOT_ROUTE_EVENTS_MAX 16384
/* wrong_set answers one slot_route call follows before it gives up (-EAGAIN): one per move
 * of the event since the map was read, and a stale map costs one */
#define SLOT_ROUTE_REDIRECTS_MAX 8

_Static_assert(SLOT_CTL_FEED_SETS_MAX <= SLOT_ROUTE_SETS_MAX, "slotctl feed --placement follows at most the sets a router keeps");

#endif
