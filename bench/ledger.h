/*
 * bench/ledger.h — every hold the bench was told it has (ledger.c): its id,
 * user, event, quantity and the status the target should show for it now;
 * with churn's v1.1 buyers also its expires_at after an extend, the units a
 * partial confirm gave back, and a reacquire's links (replaces / replaced_by).
 * Bounded by BENCH_LEDGER_MAX holds. Single-threaded.
 */
#ifndef SLOT_BENCH_LEDGER_H
#define SLOT_BENCH_LEDGER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "wire.h"

#define BENCH_LINK_NONE UINT32_MAX

/* bench_hold.flags (churn, v1.1). */
enum {
    BENCH_HOLD_REPLACES = 1u << 0,    /* made by a reacquire: link is the hold it replaces */
    BENCH_HOLD_REPLACED = 1u << 1,    /* a reacquire replaced it: link is the new hold */
    BENCH_HOLD_EXT_UNKNOWN = 1u << 2, /* an extend sent again met extend_limit: whether the first send
                                           committed is unknown, so expires_at and extensions are not checked */
};

/* A remembered hold: what the target acknowledged, which get_hold must show at the end. */
typedef struct bench_hold {
    uint64_t user;
    uint64_t expires_at_ms; /* 0: unknown (a reacquire's new hold: its answer does not carry it) */
    uint32_t id_off;        /* into the ledger's id arena */
    uint32_t link;          /* ledger index named by flags (replaces / replaced_by); BENCH_LINK_NONE */
    uint16_t event, qty;    /* qty: held, then (a partial confirm) the confirmed quantity */
    uint16_t returned;      /* units a partial confirm gave back */
    uint8_t id_len;
    uint8_t expect;     /* slot_hold_status the server should show */
    uint8_t seen;       /* what get_hold said (SLOT_HOLD__COUNT: nothing yet / error) */
    uint8_t extensions; /* extend answers that extended it */
    uint8_t flags;      /* BENCH_HOLD_* */
} bench_hold;

typedef struct bench_ledger {
    bench_hold *holds;
    size_t n, cap;
    char *ids;
    size_t ids_len, ids_cap;
    size_t cursor; /* verification: next hold to ask about */
    uint64_t checked, mismatches, errors;
    char first_mismatch[400];
} bench_ledger;

/* bench_ledger_add — remember the held answer r to t (copies the id); returns
 * its index, or -1 when full (BENCH_LEDGER_MAX), the id is empty or longer
 * than 255 bytes, or out of memory. A zeroed bench_ledger is an empty one. */
long bench_ledger_add(bench_ledger *l, const bench_ticket *t, const bench_result *r);
/* bench_ledger_add_hold — remember a hold the target made without a held answer (a
 * reacquire's new hold): id (len bytes, 1..255), user, event, qty, status expect,
 * expires_at_ms (0 unknown). Returns its index, or -1 as bench_ledger_add. Indices
 * stay valid; pointers into l->holds do not survive an add. */
long bench_ledger_add_hold(bench_ledger *l, const char *id, size_t len, uint64_t user, uint16_t event, uint16_t qty,
                           uint8_t expect, uint64_t expires_at_ms);
/* bench_ledger_id — the hold id of entry i (not NUL-terminated; length in the entry). Borrowed until the next add. */
const char *bench_ledger_id(const bench_ledger *l, size_t i);
/* bench_ledger_id_is — entry i's hold id is id (len bytes). */
bool bench_ledger_id_is(const bench_ledger *l, size_t i, const char *id, size_t len);
/* bench_ledger_free — free its memory; l is empty afterwards. */
void bench_ledger_free(bench_ledger *l);

#endif
