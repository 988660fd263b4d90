/* ledger.c — every hold the bench was told it has: its id, user, event,
 * quantity and the status the target should show for it now. Ids live in
 * one arena (no allocation per hold); both arrays grow by doubling, up to
 * BENCH_LEDGER_MAX holds. */
#include <stdlib.h>
#include <string.h>

#include "ledger.h"
#include "limits.h"
#include "util.h"

long bench_ledger_add_hold(bench_ledger *l, const char *id, size_t len, uint64_t user, uint16_t event, uint16_t qty,
                           uint8_t expect, uint64_t expires_at_ms)
{
    if (l->n >= BENCH_LEDGER_MAX || len == 0 || len > UINT8_MAX || l->ids_len + len > UINT32_MAX)
        return -1;
    if (!bench_grow((void **)&l->holds, &l->cap, l->n + 1, sizeof(bench_hold)) ||
        !bench_grow((void **)&l->ids, &l->ids_cap, l->ids_len + len, 1))
        return -1;
    bench_hold *h = &l->holds[l->n];
    memset(h, 0, sizeof(*h));
    h->user = user;
    h->expires_at_ms = expires_at_ms;
    h->id_off = (uint32_t)l->ids_len;
    h->id_len = (uint8_t)len;
    h->link = BENCH_LINK_NONE;
    h->event = event;
    h->qty = qty;
    h->expect = expect;
    h->seen = SLOT_HOLD__COUNT;
    memcpy(l->ids + l->ids_len, id, len);
    l->ids_len += len;
    return (long)l->n++;
}

long bench_ledger_add(bench_ledger *l, const bench_ticket *t, const bench_result *r)
{
    return bench_ledger_add_hold(l, r->hold, r->hold_len, t->user, t->event, t->qty, SLOT_HOLD_HELD, r->expires_at_ms);
}

const char *bench_ledger_id(const bench_ledger *l, size_t i)
{
    return l->ids + l->holds[i].id_off;
}

void bench_ledger_free(bench_ledger *l)
{
    free(l->holds);
    free(l->ids);
    memset(l, 0, sizeof(*l));
}

bool bench_ledger_id_is(const bench_ledger *l, size_t i, const char *id, size_t len)
{
    return l->holds[i].id_len == len && memcmp(bench_ledger_id(l, i), id, len) == 0;
}
