/*
 * slot/wset.h — a batch's write set and the replication record that carries it.
 *
 * The primary runs each group-commit batch in one LMDB write transaction and
 * ships what that transaction did as ONE record: the ordered list of LMDB
 * operations (put or delete, in which named database, key bytes, value bytes),
 * numbered `seq` and tagged with the `epoch` (docs/design.md, "Beyond one
 * machine"). A replica applies exactly those operations, in order, without
 * re-running the allocator.
 *
 * Record layout, every integer little-endian (x86-64 and arm64, where slotd
 * runs, are little-endian, so the fields are plain loads there; the code
 * still assembles them byte by byte, so it is correct on any host):
 *
 *   offset size  field
 *        0    4  magic         SLOT_WSET_MAGIC ("SLWS" read as bytes)
 *        4    2  version       SLOT_WSET_VERSION (1)
 *        6    2  flags         0 in version 1; any other bit is refused
 *        8    4  payload_bytes bytes after the header, 4..SLOT_WSET_BYTES_MAX
 *       12    4  crc           CRC-32 (zlib's, ISO-HDLC polynomial) over
 *                              bytes 0..11, then 16..end: every byte of the
 *                              record except the crc field itself
 *       16    8  epoch         the primary's tenure that made the record, >= prev_epoch
 *       24    8  seq           the record's number, >= 1; one batch, one seq
 *       32    8  prev_epoch    epoch of record seq-1 (Raft's prevLogTerm); 0 when none
 *       40    8  commit_seq    the sender's commit point when it encoded the record, <= seq
 *       48    8  timestamp_ms  the sender's wall clock (ms since the Unix epoch); informational
 *       56       payload:
 *                  op_count u32
 *                  op_count times: type u8 (1 put, 2 delete), db u8 (< SLOT_WSET_DBS_MAX),
 *                                  klen u16 (1..SLOT_WSET_KEY_BYTES_MAX),
 *                                  vlen u32 (0 for a delete),
 *                                  key[klen], value[vlen]
 *                  and nothing after the last op.
 *
 * The crc is checked before anything in the payload is parsed, and every
 * length is checked against the bytes that remain, so a decoder never reads
 * outside the buffer whatever the input.
 *
 * Threads: a slot_wset belongs to one thread at a time; decoding and
 * iterating touch only the caller's memory and may run on any thread.
 */
#ifndef SLOT_WSET_H
#define SLOT_WSET_H

#include <stddef.h>
#include <stdint.h>

#include "slot/error.h"

#define SLOT_WSET_MAGIC 0x53574c53u /* bytes "SLWS" */
#define SLOT_WSET_VERSION 1
#define SLOT_WSET_HEADER_BYTES 56     /* fixed header above */
#define SLOT_WSET_OP_HEADER_BYTES 8   /* type, db, klen, vlen */
#define SLOT_WSET_PAYLOAD_MIN_BYTES 4 /* op_count alone: an empty write set */
#define SLOT_WSET_BYTES_MAX \
    (64u << 20) /* 64 MiB of payload: a record is held whole in memory
                                                on both sides; a batch that writes more fails */
#define SLOT_WSET_RECORD_BYTES_MAX (SLOT_WSET_HEADER_BYTES + SLOT_WSET_BYTES_MAX)
#define SLOT_WSET_KEY_BYTES_MAX 511 /* LMDB's default MDB_MAXKEYSIZE */
#define SLOT_WSET_DBS_MAX \
    16 /* named databases a record may name: db ids 0..15
                                                (slotd's store has SLOT_STORE_DBS of them) */

_Static_assert(SLOT_WSET_BYTES_MAX <= UINT32_MAX - SLOT_WSET_HEADER_BYTES, "payload_bytes is 32-bit");
_Static_assert(SLOT_WSET_KEY_BYTES_MAX <= UINT16_MAX, "klen is 16-bit");
_Static_assert(SLOT_WSET_DBS_MAX <= 256, "db ids are 8-bit");

/* Operation types (the op's first byte). */
enum { SLOT_WSET_PUT = 1, SLOT_WSET_DEL = 2 };

/*
 * Codec errors: SLOT_WSET_E_* (TRUNCATED_HEADER, MAGIC, VERSION, FLAGS,
 * TOO_BIG, TRUNCATED_PAYLOAD, CRC, SEQ, EPOCH, OP_TRUNCATED, OP_TYPE, DB_ID,
 * KEY_LEN, VAL_LEN, TRAILING, FULL), defined with their messages in the
 * registry of slot/error.h (SLOT_RC_MAP, the WSET range); slot_strerror names
 * them.
 */

/* A write set being built. The record is built in place: buf holds the
 * header (filled by slot_wset_finish) followed by the payload, so finishing
 * copies nothing. Fields are private; use the functions below. */
typedef struct slot_wset {
    uint8_t *buf;
    size_t len; /* header + payload so far */
    size_t cap;
    size_t payload_max; /* bound on the payload, bytes */
    uint32_t ops;
} slot_wset;

/*
 * slot_wset_init — prepare an empty write set; allocates nothing yet.
 *   payload_max_bytes: the largest payload it may grow to, in bytes,
 *     SLOT_WSET_PAYLOAD_MIN_BYTES..SLOT_WSET_BYTES_MAX (0 means SLOT_WSET_BYTES_MAX).
 *   Returns 0, or -EINVAL for a bound out of range (the set is then unusable).
 *   The caller owns ws and frees it with slot_wset_free. Any thread.
 */
int slot_wset_init(slot_wset *ws, size_t payload_max_bytes);

/*
 * slot_wset_free — release the buffer; ws may be initialized again. NULL-safe
 * on ws->buf (an initialized, never-used set frees nothing).
 */
void slot_wset_free(slot_wset *ws);

/*
 * slot_wset_clear — empty the set, keeping its buffer (one set per batch,
 * reused: no allocation per batch once it has grown). Invalidates any record
 * returned by slot_wset_finish.
 */
void slot_wset_clear(slot_wset *ws);

/*
 * slot_wset_put — append "put key = val in database db_id".
 *   db_id: 0..SLOT_WSET_DBS_MAX-1. key: klen bytes, 1..SLOT_WSET_KEY_BYTES_MAX.
 *   val: vlen bytes, 0..the bound (NULL allowed when vlen is 0). Both are copied.
 *   Returns 0; SLOT_WSET_E_DB_ID or SLOT_WSET_E_KEY_LEN for bad arguments;
 *   SLOT_WSET_E_FULL when the payload would pass payload_max_bytes (the caller
 *   fails the batch); -EINVAL for val NULL with vlen > 0; -ENOMEM. On any
 *   error the set is unchanged.
 *   Invalidates any record returned by slot_wset_finish.
 */
int slot_wset_put(slot_wset *ws, uint8_t db_id, const void *key, size_t klen, const void *val, size_t vlen);

/*
 * slot_wset_del — append "delete key from database db_id". Arguments, errors
 * and lifetime as slot_wset_put (without the value).
 */
int slot_wset_del(slot_wset *ws, uint8_t db_id, const void *key, size_t klen);

/* slot_wset_ops — operations in the set so far. */
uint32_t slot_wset_ops(const slot_wset *ws);

/* The header fields the caller chooses (see the layout above). */
typedef struct slot_wset_hdr {
    uint64_t epoch;
    uint64_t seq;        /* >= 1 */
    uint64_t prev_epoch; /* <= epoch */
    uint64_t commit_seq; /* <= seq */
    uint64_t timestamp_ms;
} slot_wset_hdr;

/*
 * slot_wset_finish — seal the set into one record: fill in the header and the crc.
 *   hdr: the header fields; seq >= 1, commit_seq <= seq, prev_epoch <= epoch.
 *   *rec, *rec_bytes: the record (header + payload), owned by ws, valid until
 *     the next put, del, clear, finish or free. The set may be finished again
 *     (with other header fields, or after more ops).
 *   Returns 0; SLOT_WSET_E_SEQ or SLOT_WSET_E_EPOCH for inconsistent fields;
 *   -ENOMEM.
 */
int slot_wset_finish(slot_wset *ws, const slot_wset_hdr *hdr, const uint8_t **rec, size_t *rec_bytes);

/* A decoded record: pointers into the caller's buffer, nothing copied. */
typedef struct slot_wset_rec {
    slot_wset_hdr hdr;
    uint16_t version;
    uint16_t flags;
    uint32_t op_count;
    const uint8_t *ops;  /* first op (after op_count) */
    size_t ops_bytes;    /* bytes of ops */
    size_t record_bytes; /* header + payload: where the next record would start */
} slot_wset_rec;

/*
 * slot_wset_peek — check the fixed header of the record at buf and say how
 * long the record is, without the payload (a log scanner reads the header
 * first). Checks magic, version, flags and the payload_bytes range only.
 *   buf: len bytes (may be more than one record).
 *   *record_bytes: header + payload_bytes, when 0 is returned.
 *   Returns 0, SLOT_WSET_E_TRUNCATED_HEADER, _MAGIC, _VERSION, _FLAGS or _TOO_BIG.
 */
int slot_wset_peek(const void *buf, size_t len, size_t *record_bytes);

/*
 * slot_wset_decode — validate the record at the start of buf completely and
 * describe it. Checks, in this order: header length, magic, version, flags,
 * payload_bytes range, buffer length, crc, seq/commit_seq, epochs, then every
 * op (type, db id, key length, value length, each against what remains),
 * the op count and trailing bytes.
 *   buf: len bytes; bytes past the record (out->record_bytes) are not looked at.
 *   out: filled on success; its pointers point into buf and live as long as buf.
 *   Returns 0 or exactly one SLOT_WSET_E_* (never FULL). Any thread.
 */
int slot_wset_decode(const void *buf, size_t len, slot_wset_rec *out);

/* One operation, pointing into the record's buffer. */
typedef struct slot_wset_op {
    uint8_t type; /* SLOT_WSET_PUT or SLOT_WSET_DEL */
    uint8_t db_id;
    uint16_t klen;
    uint32_t vlen; /* 0 for a delete */
    const uint8_t *key;
    const uint8_t *val; /* vlen bytes; not NULL */
} slot_wset_op;

typedef struct slot_wset_iter {
    const uint8_t *p, *end;
    uint32_t left;
} slot_wset_iter;

/*
 * slot_wset_iter_init — iterate a record that slot_wset_decode accepted.
 *   rec: stays valid (and its buffer unchanged) while iterating.
 */
void slot_wset_iter_init(slot_wset_iter *it, const slot_wset_rec *rec);

/*
 * slot_wset_next — the next operation, in the order they were added.
 *   op: filled when 1 is returned; points into the record's buffer.
 *   Returns 1 for an op, 0 at the end. The record was validated, so this
 *   cannot fail; a changed buffer trips SLOT_ASSERT rather than reading past it.
 */
int slot_wset_next(slot_wset_iter *it, slot_wset_op *op);

#endif
