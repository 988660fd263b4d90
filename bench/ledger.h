/*
 * bench/ledger.h — every hold the bench was told it has (ledger.c): its id,
 * user, event, quantity and the status the target should show for it now.
 * Bounded by BENCH_LEDGER_MAX holds. Single-threaded.
 */
#ifndef SLOT_BENCH_LEDGER_H
#define SLOT_BENCH_LEDGER_H

#include <stddef.h>
#include <stdint.h>

#include "wire.h"

/* A remembered hold. */
typedef struct bench_hold {
    uint64_t user;
    uint64_t expires_at_ms;
    uint32_t id_off;                /* into the ledger's id arena */
    uint16_t event, qty;
    uint8_t id_len;
    uint8_t expect;                 /* slot_hold_status the server should show */
    uint8_t seen;                   /* what get_hold said (SLOT_HOLD__COUNT: nothing yet / error) */
    uint8_t pad;
} bench_hold;

typedef struct bench_ledger {
    bench_hold *holds;
    size_t n, cap;
    char *ids;
    size_t ids_len, ids_cap;
    size_t cursor;                  /* verification: next hold to ask about */
    uint64_t checked, mismatches, errors;
    char first_mismatch[400];
} bench_ledger;

/* bench_ledger_add — remember the held answer r to t (copies the id); returns
 * its index, or -1 when full (BENCH_LEDGER_MAX), the id is empty or longer
 * than 255 bytes, or out of memory. A zeroed bench_ledger is an empty one. */
long bench_ledger_add(bench_ledger *l, const bench_ticket *t, const bench_result *r);
/* bench_ledger_id — the hold id of entry i (not NUL-terminated; length in the entry). Borrowed until the next add. */
const char *bench_ledger_id(const bench_ledger *l, size_t i);
/* bench_ledger_free — free its memory; l is empty afterwards. */
void bench_ledger_free(bench_ledger *l);

#endif
