/*
 * workload_check.c — verification's phase: get_hold for every ledger entry
 * (the holds the answers said the bench has); status, qty, returned units,
 * extensions, expires_at and the reacquire links must be the ones the
 * answers said. A difference is counted and the first one named. Runs on
 * the run's own loop (bench_phase.one_loop). Single-threaded.
 */
#include <inttypes.h>
#include <string.h>

#include "engine.h"
#include "ledger.h"
#include "limits.h"
#include "seated.h"
#include "wire.h"
#include "workload.h"

/* --placement: the next ledger entry of connection c's set (each connection asks the set it is
 * connected to); its index, or l->n when none is left. */
static size_t next_of_set(bench_run *run, const bench_conn *c)
{
    bench_ledger *l = &run->ledger;
    uint32_t set = c->index % run->nsets;
    size_t *cur = &run->set_cursor[set];
    while (*cur < l->n && run->events[l->holds[*cur].event].set != set)
        (*cur)++;
    return *cur < l->n ? (*cur)++ : l->n;
}

static bool verify_next(bench_run *run, bench_conn *c, bench_ticket *t)
{
    bench_ledger *l = &run->ledger;
    size_t i = run->nsets > 1 ? next_of_set(run, c) : l->cursor;
    if (i >= l->n)
        return false;
    if (run->nsets <= 1)
        l->cursor++;
    const bench_hold *h = &l->holds[i];
    memset(t, 0, sizeof(*t));
    t->op = BENCH_OP_GET_HOLD;
    t->key = i;
    t->user = h->user;
    t->event = h->event;
    t->qty = h->qty;
    t->session = UINT32_MAX;
    return true;
}

/* Does get_hold's link (id, "" for none) name the ledger entry h links to with flag? */
static bool link_matches(const bench_ledger *l, const bench_hold *h, uint8_t flag, const char *id)
{
    if (!(h->flags & flag))
        return id[0] == 0;
    return bench_ledger_id_is(l, h->link, id, strlen(id));
}

/* What get_hold's answer r says differently from ledger entry i, into why ("" when nothing). */
static void hold_differs(const bench_ledger *l, size_t i, const bench_result *r, char *why, size_t n)
{
    const bench_hold *h = &l->holds[i];
    bool ext_known = !(h->flags & BENCH_HOLD_EXT_UNKNOWN);
    why[0] = 0;
    if (!r->ok)
        snprintf(why, n, "%s: %.60s", slot_err_name(r->err), r->text);
    else if (h->seen != h->expect)
        snprintf(why, n, "status %s", r->has_status ? slot_hold_status_name(r->status) : "(none)");
    else if (r->qty != h->qty)
        snprintf(why, n, "qty %u", r->qty);
    else if (r->returned != h->returned)
        snprintf(why, n, "returned %" PRIu64 " (a partial confirm gave back %u)", r->returned, h->returned);
    else if (ext_known && r->extensions != h->extensions)
        snprintf(why, n, "extensions %" PRIu64 " (extended %u times)", r->extensions, h->extensions);
    else if (ext_known && h->expires_at_ms && r->expires_at_ms != h->expires_at_ms)
        snprintf(why, n, "expires_at %" PRIu64 " (the answers said %" PRIu64 ")", r->expires_at_ms, h->expires_at_ms);
    else if (!link_matches(l, h, BENCH_HOLD_REPLACES, r->replaces))
        snprintf(why, n, "replaces \"%.40s\"", r->replaces);
    else if (!link_matches(l, h, BENCH_HOLD_REPLACED, r->replaced_by))
        snprintf(why, n, "replaced_by \"%.40s\"", r->replaced_by);
}

static void verify_on_result(bench_run *run, bench_conn *c, const bench_ticket *t, const bench_result *r,
                             uint64_t now_ns)
{
    (void)c;
    (void)now_ns;
    bench_ledger *l = &run->ledger;
    bench_hold *h = &l->holds[t->key];
    l->checked++;
    h->seen = r->ok && r->has_status ? (uint8_t)r->status : (uint8_t)SLOT_HOLD__COUNT;
    char why[160];
    hold_differs(l, t->key, r, why, sizeof(why));
    if (run->seated) /* --seated: its seats must be its held answer's */
        bench_seated_got(run, t->key, r);
    if (why[0] == 0)
        return;
    l->mismatches++;
    if (!r->ok)
        l->errors++;
    if (l->first_mismatch[0] == 0)
        snprintf(l->first_mismatch, sizeof(l->first_mismatch),
                 "hold %.*s of u%" PRIu64 " on %s: expected %s x%u, get_hold said %s", (int)h->id_len,
                 bench_ledger_id(l, t->key), h->user, run->events[h->event].name,
                 slot_hold_status_name((slot_hold_status)h->expect), h->qty, why);
}

bench_phase bench_verify_phase(const bench_run *run)
{
    uint32_t conns = run->nconns < BENCH_VERIFY_CONNS ? run->nconns : BENCH_VERIFY_CONNS;
    return (bench_phase){
        .name = "ledger check",
        .conns = conns,
        .pipeline = BENCH_VERIFY_PIPELINE,
        .one_loop = true,
        .requests_max = run->ledger.n > 0 ? run->ledger.n : 1, /* one get_hold per hold */
        .duration_ms = BENCH_DURATION_MS_MAX,
        .tail = UINT64_MAX,
        .next = verify_next,
        .on_result = verify_on_result,
    };
}
