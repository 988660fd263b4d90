/*
 * slot/limits.h — every fixed limit of slotd, with its unit and its reason.
 *
 * Wire limits come from PROTOCOL.md ("Names and numbers", admin op table);
 * the rest are slotd's own bounds (every queue, buffer and loop has one).
 */
#ifndef SLOT_LIMITS_H
#define SLOT_LIMITS_H

#include <stdint.h>

/* Names (PROTOCOL.md, "Names and numbers"). */
#define SLOT_EVENT_BYTES_MAX 64   /* event id: 1..64 bytes of [A-Za-z0-9._:-] */
#define SLOT_REQUEST_BYTES_MAX 64 /* idempotency key: same alphabet and length */
#define SLOT_USER_BYTES_MAX 128   /* user: 1..128 bytes of UTF-8, no controls */
#define SLOT_ID_BYTES_MAX 64      /* a request's "id" when it is a string */
#define SLOT_TOKEN_BYTES_MAX 256  /* hello token; longer tokens are refused */
#define SLOT_HOLD_ID_BYTES 32     /* hold id: 16 hex digits of sequence + 16 of random tag */
#define SLOT_HOLD_ARG_BYTES_MAX 128 /* a "hold" argument longer than this is invalid_argument */

/* Numbers (PROTOCOL.md). */
#define SLOT_CAPACITY_MAX (UINT64_C(1) << 40)  /* capacity and max_per_user: 0..2^40 */
#define SLOT_SHARDS_MAX 1024                   /* shards: 1..1024 */
#define SLOT_SHARDS_DEFAULT 16
#define SLOT_HOLD_TTL_MS_MIN 1000              /* hold_ttl_ms: 1 s .. 1 day */
#define SLOT_HOLD_TTL_MS_MAX 86400000
#define SLOT_HOLD_TTL_MS_DEFAULT 600000        /* 10 minutes */
#define SLOT_MAX_PER_REQUEST_MAX 1000          /* max_per_request: 1..1000 */
#define SLOT_MAX_PER_REQUEST_DEFAULT 10
#define SLOT_JSON_DEPTH_MAX 32                 /* nesting; the top-level object is level 1 */

/* A hold takes at most qty units from at most min(qty, shards) shards. */
#define SLOT_PARTS_MAX SLOT_MAX_PER_REQUEST_MAX

/* Server defaults (flags override). */
#define SLOT_LINE_BYTES_DEFAULT 65536          /* --max-line, without the \n or \r\n */
#define SLOT_LINE_BYTES_MIN 1024               /* smaller lines cannot carry a full request */
#define SLOT_LINE_BYTES_MAX (16u << 20)        /* 16 MiB: a line is buffered whole in memory */
#define SLOT_QUEUE_REQUESTS_DEFAULT 100000     /* global bound on queued write requests (overloaded) */
#define SLOT_BATCH_REQUESTS_MAX 4096           /* one group commit runs at most this many */
#define SLOT_CONN_INFLIGHT_DEFAULT 1024        /* per connection: stop reading above this many unanswered */
#define SLOT_CONN_OUT_BYTES_DEFAULT (4u << 20) /* per connection: stop reading above this many unsent reply bytes */
#define SLOT_CONNS_DEFAULT 10000               /* open connections; accept pauses at the limit */
#define SLOT_IDLE_TIMEOUT_MS_DEFAULT 300000    /* 5 min without a byte from a client with nothing pending */
#define SLOT_LINE_TIMEOUT_MS_DEFAULT 30000     /* a started line must end within 30 s */
#define SLOT_WRITE_TIMEOUT_MS_DEFAULT 30000    /* replies must make progress within 30 s */
#define SLOT_SWEEP_INTERVAL_MS_DEFAULT 1000    /* PROTOCOL.md: units back within interval + 1 s */
#define SLOT_SWEEP_BATCH_MAX 1024              /* holds expired per sweeper batch, so sales never stall */
#define SLOT_EXPIRE_OP_MAX 1000000             /* the admin "expire" op expires at most this many */
#define SLOT_MAP_SIZE_INITIAL (64ull << 20)    /* 64 MiB; grows on MDB_MAP_FULL */
#define SLOT_MAP_SIZE_MAX_DEFAULT (64ull << 30) /* 64 GiB of address space, not of disk */
#define SLOT_LISTEN_DEFAULT "127.0.0.1:7420"
#define SLOT_PORT_DEFAULT 7420
#define SLOT_DATA_DEFAULT "./slotd-data"

_Static_assert(SLOT_LINE_BYTES_DEFAULT >= SLOT_LINE_BYTES_MIN, "default line limit below minimum");
_Static_assert(SLOT_LINE_BYTES_DEFAULT <= SLOT_LINE_BYTES_MAX, "default line limit above maximum");
_Static_assert(SLOT_PARTS_MAX <= 65535, "parts are counted in 16 bits");
_Static_assert(SLOT_SHARDS_MAX <= 65535, "shard numbers are 16-bit in keys");
_Static_assert(SLOT_QUEUE_REQUESTS_DEFAULT >= 100000, "PROTOCOL.md: queue bound at least 100,000");
_Static_assert(SLOT_SWEEP_BATCH_MAX <= SLOT_BATCH_REQUESTS_MAX, "a sweep fits one batch budget");

#endif
