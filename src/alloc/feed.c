/*
 * feed.c — the feed's databases (slot/feed.h): entries packed by hand and
 * appended by seq, the consumers' positions and retention (the push line an
 * entry becomes on the wire is src/proto/proto_view.c's). Every write goes through the store's one
 * put and one delete (store_int.h), so the feed travels in write sets and
 * is part of the digest.
 */
#include "slot/feed.h"

#include <string.h>

#include "store/store_int.h"

static const char *const type_names[SLOT_FEED__COUNT] = {
#define SLOT__FT_NAME(name, wire) wire,
    SLOT_FEED_TYPE_MAP(SLOT__FT_NAME)
#undef SLOT__FT_NAME
};

const char *slot_feed_type_name(slot_feed_type t)
{
    return (unsigned)t < SLOT_FEED__COUNT ? type_names[t] : "?";
}

slot_feed_type slot_feed_type_of_status(slot_hold_status s)
{
    switch (s) {
    case SLOT_HOLD_CONFIRMED:
        return SLOT_FEED_HOLD_CONFIRMED;
    case SLOT_HOLD_RELEASED:
        return SLOT_FEED_HOLD_RELEASED;
    case SLOT_HOLD_EXPIRED:
        return SLOT_FEED_HOLD_EXPIRED;
    case SLOT_HOLD_CANCELLED:
        return SLOT_FEED_HOLD_CANCELLED;
    default:
        return SLOT_FEED_HOLD_HELD;
    }
}

static bool type_is_event(slot_feed_type t)
{
    return t == SLOT_FEED_EVENT_CREATED || t == SLOT_FEED_EVENT_CHANGED || t == SLOT_FEED_EVENT_MOVED ||
           t == SLOT_FEED_EVENT_ARRIVED;
}

static bool type_is_place(slot_feed_type t)
{
    return t == SLOT_FEED_EVENT_MOVED || t == SLOT_FEED_EVENT_ARRIVED;
}

/* ---- packing */

#define ENTRY_BYTES_MAX                                                                                              \
    (2 + 8 + 1 + SLOT_EVENT_BYTES_MAX + 16 + 1 + SLOT_USER_BYTES_MAX + 2 + 8 + 1 + SLOT_REQUEST_BYTES_MAX + 2 + 16 + \
     1 + (SLOT_ANCESTORS_MAX + 1) * (1 + SLOT_EVENT_BYTES_MAX) /* version 4: the chain and the block */ + 4 +        \
     SLOT_FEED_SEATS_BYTES_MAX /* version 6: the seats */ + 1 + SLOT_CLUSTER_NAME_BYTES_MAX + 8) /* version 7 */
/* The feed's record version: 6 adds a seated hold's seats (older entries read as none; 5 is
 * SLOT_RECORD_VERSION, which the feed wrote before); 7 adds, after the view of
 * event.moved and event.arrived (types no older entry has), the set and the gen. */
#define FEED_VERSION 7
_Static_assert(FEED_VERSION >= SLOT_RECORD_VERSION, "the feed's version follows the store's");
#define CONSUMER_REC_BYTES 16

static size_t entry_pack(const slot_feed_entry *e, uint8_t *raw, size_t cap)
{
    buf b = {.p = raw, .cap = cap};
    put_u8(&b, FEED_VERSION);
    put_u8(&b, (uint8_t)e->type);
    put_be(&b, e->at_ms, 8);
    put_name(&b, e->event, e->event_len);
    if (type_is_event(e->type)) {
        const slot_event_view *v = &e->view;
        put_u8(&b, v->status == SLOT_EVENT_CLOSED);
        put_be(&b, v->shards, 2);
        put_be(&b, v->max_per_request, 2);
        put_be(&b, v->hold_ttl_ms, 4);
        put_be(&b, v->capacity, 8);
        put_be(&b, v->available, 8);
        put_be(&b, v->held, 8);
        put_be(&b, v->confirmed, 8);
        put_be(&b, v->max_per_user, 8);
        put_be(&b, v->opens_at_ms, 8);
        put_be(&b, v->closes_at_ms, 8);
        put_be(&b, v->max_extensions, 2);
        put_be(&b, v->max_hold_ms, 8);
        put_be(&b, v->waitlist_max, 4); /* record version 3 */
        put_be(&b, v->waiting, 8);
        put_be(&b, v->waiting_qty, 8);
        if (type_is_place(e->type)) { /* version 7 */
            put_name(&b, e->place_set, e->place_set_len);
            put_be(&b, e->place_gen, 8);
        }
    } else {
        put_be(&b, e->hold_seq, 8);
        put_be(&b, e->hold_tag, 8);
        put_name(&b, e->user, e->user_len);
        put_be(&b, e->qty, 2);
        put_be(&b, e->expires_at_ms, 8);
        put_name(&b, e->request, e->request_len);
        put_be(&b, e->returned, 2);
        put_be(&b, e->replaces_seq, 8);
        put_be(&b, e->replaces_tag, 8);
        SLOT_ASSERT(e->nchain <= SLOT_ANCESTORS_MAX);
        put_u8(&b, e->nchain);
        for (uint8_t i = 0; i < e->nchain; i++)
            put_name(&b, e->chain[i], e->chain_len[i]);
        put_name(&b, e->alloc, e->alloc_len);
        SLOT_ASSERT(e->seats_len <= SLOT_FEED_SEATS_BYTES_MAX);
        put_be(&b, e->seats_len, 4);
        if (e->seats_len > 0 && !b.bad && b.len + e->seats_len <= b.cap) {
            memcpy(b.p + b.len, e->seats, e->seats_len);
            b.len += e->seats_len;
        }
    }
    SLOT_ASSERT(!b.bad); /* ENTRY_BYTES_MAX fits the largest entry */
    return b.len;
}

static int entry_unpack(const MDB_val *v, uint64_t seq, slot_feed_entry *e)
{
    buf b = {.p = v->mv_data, .cap = v->mv_size};
    memset(e, 0, offsetof(slot_feed_entry, seats)); /* seats: only its first seats_len bytes are read */
    e->seq = seq;
    uint8_t version = get_u8(&b);
    if (version < 2 || version > FEED_VERSION) /* the feed began at version 2 */
        return MDB_CORRUPTED;
    uint8_t type = get_u8(&b);
    if (type >= SLOT_FEED__COUNT)
        return MDB_CORRUPTED;
    e->type = (slot_feed_type)type;
    e->at_ms = get_be(&b, 8);
    e->event_len = (uint8_t)get_name(&b, e->event, sizeof(e->event));
    if (type_is_event(e->type)) {
        slot_event_view *w = &e->view;
        memcpy(w->event, e->event, e->event_len + 1u);
        w->status = get_u8(&b) ? SLOT_EVENT_CLOSED : SLOT_EVENT_ON_SALE;
        w->shards = (uint32_t)get_be(&b, 2);
        w->max_per_request = (uint32_t)get_be(&b, 2);
        w->hold_ttl_ms = (uint32_t)get_be(&b, 4);
        w->capacity = get_be(&b, 8);
        w->available = get_be(&b, 8);
        w->held = get_be(&b, 8);
        w->confirmed = get_be(&b, 8);
        w->max_per_user = get_be(&b, 8);
        w->opens_at_ms = get_be(&b, 8);
        w->closes_at_ms = get_be(&b, 8);
        w->max_extensions = (uint32_t)get_be(&b, 2);
        w->max_hold_ms = get_be(&b, 8);
        if (version >= 3) { /* version 2: no waitlist, nobody waiting */
            w->waitlist_max = (uint32_t)get_be(&b, 4);
            w->waiting = get_be(&b, 8);
            w->waiting_qty = get_be(&b, 8);
        }
        if (type_is_place(e->type)) { /* version 7: only entries of 7 have these types */
            if (version < 7)
                return MDB_CORRUPTED;
            e->place_set_len = (uint8_t)get_name(&b, e->place_set, sizeof e->place_set);
            e->place_gen = get_be(&b, 8);
        }
    } else {
        e->hold_seq = get_be(&b, 8);
        e->hold_tag = get_be(&b, 8);
        e->user_len = (uint8_t)get_name(&b, e->user, sizeof(e->user));
        e->qty = (uint32_t)get_be(&b, 2);
        e->expires_at_ms = get_be(&b, 8);
        e->request_len = (uint8_t)get_name(&b, e->request, sizeof(e->request));
        e->returned = (uint32_t)get_be(&b, 2);
        e->replaces_seq = get_be(&b, 8);
        e->replaces_tag = get_be(&b, 8);
        if (version >= 4) {
            e->nchain = get_u8(&b);
            if (e->nchain > SLOT_ANCESTORS_MAX)
                return MDB_CORRUPTED;
            for (uint8_t i = 0; i < e->nchain; i++)
                e->chain_len[i] = (uint8_t)get_name(&b, e->chain[i], sizeof(e->chain[i]));
            e->alloc_len = (uint8_t)get_name(&b, e->alloc, sizeof(e->alloc));
        }
        if (version >= 6) {
            uint64_t n = get_be(&b, 4);
            if (b.bad || n > SLOT_FEED_SEATS_BYTES_MAX || b.len + n > b.cap)
                return MDB_CORRUPTED;
            memcpy(e->seats, b.p + b.len, n);
            e->seats_len = (uint32_t)n;
            b.len += n;
        }
    }
    return b.bad || b.len != v->mv_size ? MDB_CORRUPTED : 0;
}

static void seq_key(uint8_t raw[8], uint64_t seq)
{
    buf b = {.p = raw, .cap = 8};
    put_be(&b, seq, 8);
}

/* ---- the feed */

/* The first (MDB_FIRST) or last (MDB_LAST) seq kept; 0 when the feed is empty. */
static int feed_edge(slot_store *st, MDB_txn *txn, MDB_cursor_op op, uint64_t *seq)
{
    MDB_cursor *cur;
    *seq = 0;
    int rc = mdb_cursor_open(txn, st->dbi[DB_FEED], &cur);
    if (rc != 0)
        return rc;
    MDB_val k, v;
    rc = mdb_cursor_get(cur, &k, &v, op);
    if (rc == 0 && k.mv_size != 8)
        rc = MDB_CORRUPTED;
    if (rc == 0)
        *seq = load_be64(k.mv_data);
    mdb_cursor_close(cur);
    return rc == MDB_NOTFOUND ? 0 : rc;
}

int slot_feed_bounds(slot_store *st, MDB_txn *txn, uint64_t *oldest, uint64_t *head)
{
    int rc = feed_edge(st, txn, MDB_FIRST, oldest);
    return rc == 0 ? feed_edge(st, txn, MDB_LAST, head) : rc;
}

int slot_feed_append(slot_store *st, MDB_txn *txn, slot_feed_entry *e)
{
    uint64_t head;
    int rc = feed_edge(st, txn, MDB_LAST, &head);
    if (rc != 0)
        return rc;
    SLOT_ASSERT(e->event_len >= 1);
    SLOT_ASSERT(e->event_len <= SLOT_EVENT_BYTES_MAX);
    SLOT_ASSERT((unsigned)e->type < SLOT_FEED__COUNT);
    e->seq = head + 1;
    uint8_t kraw[8], raw[ENTRY_BYTES_MAX];
    seq_key(kraw, e->seq);
    MDB_val k = {8, kraw}, v = {entry_pack(e, raw, sizeof(raw)), raw};
    return store_put(st, txn, DB_FEED, &k, &v, MDB_APPEND);
}

int slot_feed_get(slot_store *st, MDB_txn *txn, uint64_t seq, slot_feed_entry *out)
{
    uint8_t kraw[8];
    seq_key(kraw, seq);
    MDB_val k = {8, kraw}, v;
    int rc = mdb_get(txn, st->dbi[DB_FEED], &k, &v);
    return rc == 0 ? entry_unpack(&v, seq, out) : rc;
}

int slot_feed_scan(slot_store *st, MDB_txn *txn, uint64_t from, uint64_t limit, slot_feed_fn fn, void *ctx)
{
    MDB_cursor *cur;
    int rc = mdb_cursor_open(txn, st->dbi[DB_FEED], &cur);
    if (rc != 0)
        return rc;
    uint8_t kraw[8];
    seq_key(kraw, from);
    MDB_val k = {8, kraw}, v;
    slot_feed_entry e;
    uint64_t n = 0;
    rc = mdb_cursor_get(cur, &k, &v, MDB_SET_RANGE);
    while (rc == 0 && (limit == 0 || n < limit)) {
        rc = k.mv_size == 8 ? entry_unpack(&v, load_be64(k.mv_data), &e) : MDB_CORRUPTED;
        if (rc == 0)
            rc = fn(ctx, &e);
        n++;
        if (rc == 0)
            rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT);
    }
    mdb_cursor_close(cur);
    return rc == MDB_NOTFOUND ? 0 : rc;
}

/* ---- consumers */

static void consumer_key(key *k, const char *name, size_t len)
{
    SLOT_ASSERT(len >= 1);
    SLOT_ASSERT(len <= SLOT_CONSUMER_BYTES_MAX);
    key_init(k);
    put_name(&k->b, name, len);
}

int slot_feed_consumer_get(slot_store *st, MDB_txn *txn, const char *name, size_t len, uint64_t *acked)
{
    key k;
    consumer_key(&k, name, len);
    MDB_val kv = key_val(&k), v;
    int rc = mdb_get(txn, st->dbi[DB_CONSUMERS], &kv, &v);
    if (rc == 0 && v.mv_size != CONSUMER_REC_BYTES)
        rc = MDB_CORRUPTED;
    if (rc == 0)
        *acked = load_be64(v.mv_data);
    return rc;
}

int slot_feed_consumer_put(slot_store *st, MDB_txn *txn, const char *name, size_t len, uint64_t acked, uint64_t now_ms)
{
    key k;
    consumer_key(&k, name, len);
    uint8_t raw[CONSUMER_REC_BYTES];
    buf b = {.p = raw, .cap = sizeof(raw)};
    put_be(&b, acked, 8);
    put_be(&b, now_ms, 8);
    SLOT_ASSERT(!b.bad);
    MDB_val kv = key_val(&k), v = {sizeof(raw), raw};
    return store_put(st, txn, DB_CONSUMERS, &kv, &v, 0);
}

int slot_feed_consumer_del(slot_store *st, MDB_txn *txn, const char *name, size_t len)
{
    key k;
    consumer_key(&k, name, len);
    MDB_val kv = key_val(&k);
    return store_del(st, txn, DB_CONSUMERS, &kv);
}

int slot_feed_consumers_scan(slot_store *st, MDB_txn *txn, slot_feed_consumer_fn fn, void *ctx)
{
    MDB_cursor *cur;
    int rc = mdb_cursor_open(txn, st->dbi[DB_CONSUMERS], &cur);
    if (rc != 0)
        return rc;
    MDB_val k, v;
    rc = mdb_cursor_get(cur, &k, &v, MDB_FIRST);
    while (rc == 0) {
        const uint8_t *p = k.mv_data;
        if (k.mv_size < 2 || p[0] != k.mv_size - 1 || v.mv_size != CONSUMER_REC_BYTES) {
            rc = MDB_CORRUPTED;
            break;
        }
        rc = fn(ctx, (const char *)p + 1, p[0], load_be64(v.mv_data));
        if (rc == 0)
            rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT);
    }
    mdb_cursor_close(cur);
    return rc == MDB_NOTFOUND ? 0 : rc;
}

/* ---- retention */

static int min_acked(void *p, const char *name, size_t len, uint64_t acked)
{
    (void)name;
    (void)len;
    uint64_t *m = p;
    if (acked < *m)
        *m = acked;
    return 0;
}

/* The last seq trimming may remove now: every consumer acked it, it is not
 * the head. 0 when none may go. */
static int trim_bound(slot_store *st, MDB_txn *txn, uint64_t *bound)
{
    uint64_t oldest, head, acked = UINT64_MAX;
    int rc = slot_feed_bounds(st, txn, &oldest, &head);
    if (rc == 0)
        rc = slot_feed_consumers_scan(st, txn, min_acked, &acked);
    *bound = 0;
    if (rc == 0 && head > 0)
        *bound = acked < head - 1 ? acked : head - 1;
    return rc;
}

/* Whether entry seq (which exists) is old enough to go. */
static int trim_old_enough(slot_store *st, MDB_txn *txn, uint64_t seq, uint64_t now_ms, uint64_t retention_ms, bool *ok)
{
    slot_feed_entry e;
    int rc = slot_feed_get(st, txn, seq, &e);
    *ok = rc == 0 && e.at_ms + retention_ms <= now_ms;
    return rc;
}

bool slot_feed_trim_due(slot_store *st, MDB_txn *txn, uint64_t now_ms, uint64_t retention_ms)
{
    uint64_t oldest, head, bound;
    bool ok = false;
    if (slot_feed_bounds(st, txn, &oldest, &head) != 0 || oldest == 0 || trim_bound(st, txn, &bound) != 0)
        return false;
    if (oldest > bound)
        return false;
    return trim_old_enough(st, txn, oldest, now_ms, retention_ms, &ok) == 0 && ok;
}

int slot_feed_trim(slot_store *st, MDB_txn *txn, uint64_t now_ms, uint64_t retention_ms, uint64_t limit,
                   uint64_t *trimmed)
{
    SLOT_ASSERT(limit >= 1);
    SLOT_ASSERT(limit <= SLOT_FEED_TRIM_BATCH_MAX);
    uint64_t oldest, head, bound;
    *trimmed = 0;
    int rc = slot_feed_bounds(st, txn, &oldest, &head);
    if (rc == 0)
        rc = trim_bound(st, txn, &bound);
    /* Seqs have no gaps, so oldest, oldest + 1, ... are the keys kept, and
     * at_ms grows with seq: the first entry too young ends the trim. */
    for (uint64_t seq = oldest; rc == 0 && oldest > 0 && seq <= bound && *trimmed < limit; seq++) {
        bool ok = false;
        rc = trim_old_enough(st, txn, seq, now_ms, retention_ms, &ok);
        if (rc != 0 || !ok)
            break;
        uint8_t kraw[8];
        seq_key(kraw, seq);
        MDB_val k = {8, kraw};
        rc = store_del(st, txn, DB_FEED, &k);
        if (rc == 0)
            (*trimmed)++;
    }
    return rc;
}
