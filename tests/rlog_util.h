/*
 * tests/rlog_util.h — what the record codec's and the batch log's test
 * programs (test_wset.c, test_rlog.c) share: a seeded xorshift64 (SLOT_TEST_SEED,
 * a nonzero integer, or a fixed default; seeded on first use in each case's
 * process, so a case alone sees what it sees in the whole run), random and
 * fixed records, little-endian field writers and the layout's crc computed
 * independently of slot/wset.h's code. A broken step aborts the case.
 */
#ifndef SLOT_TEST_RLOG_UTIL_H
#define SLOT_TEST_RLOG_UTIL_H

#include <stddef.h>
#include <stdint.h>

/* A record in a malloc'd buffer (the caller frees b). */
typedef struct rec {
    uint8_t *b;
    size_t len;
} rec;

/* The next random number; below n (0 when n is 0); n random bytes into p. */
uint64_t rnd(void);
uint64_t rnd_below(uint64_t n);
void rnd_bytes(uint8_t *p, size_t n);

/* A random write set of up to max_ops ops, values up to max_val bytes, sealed. */
rec make_rec(uint64_t seq, uint64_t epoch, uint64_t prev_epoch, unsigned max_ops, size_t max_val);
/* A record of one put with a vlen-byte value: 69 + vlen bytes. */
rec make_fixed(uint64_t seq, uint64_t epoch, uint64_t prev_epoch, size_t vlen);

/* Little-endian fields of a record at p. */
uint32_t le32(const uint8_t *p);
void set_le16(uint8_t *p, uint16_t v);
void set_le32(uint8_t *p, uint32_t v);
void set_le64(uint8_t *p, uint64_t v);

/* The crc as the layout in slot/wset.h defines it, computed independently;
 * reseal writes it into the record's crc field (bytes 12..15). */
uint32_t layout_crc(const uint8_t *b, size_t len);
void reseal(uint8_t *b, size_t len);

#endif
