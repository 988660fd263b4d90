/*
 * store_wait.c — the waitlist database (slot/store.h, "The waitlist
 * database"; docs/design.md, "Waitlists"). Three kinds of row under each
 * event's name, told apart by one type byte after it:
 *
 *   ev + 'e' + u64 join             a waiting entry (deleted when offered or left)
 *   ev + 'k' + user + request       the key's entry, whatever its state (the key's use)
 *   ev + 'f' + u64 node             a Fenwick tree node: entries that left, by join seq
 *
 * Every write goes through the store's one put and one delete, so write
 * sets and the digest cover the waitlist as they cover the holds.
 */
#include "slot/store.h"

#include "store_int.h"

#define WAIT_REC_VERSION 1
/* A waiting entry's value: version 2 adds the family order (version 1 reads
 * as 0), version 3 the block it waits on (older versions read as none). */
#define WAIT_ENTRY_VERSION 3
#define WAIT_ENTRY 'e'
#define WAIT_KEY 'k'
#define WAIT_TREE 'f'
#define ENTRY_VAL_BYTES \
    (1 + 2 + 8 + 1 + SLOT_USER_BYTES_MAX + 1 + SLOT_REQUEST_BYTES_MAX + 8 + 1 + SLOT_EVENT_BYTES_MAX)
#define KEY_VAL_BYTES (1 + 1 + 8 + 2 + 8 + 8 + 8)
#define TREE_SIZE (UINT64_C(1) << SLOT_JOIN_SEQ_BITS) /* nodes 1..TREE_SIZE-1 */

_Static_assert(2 + SLOT_EVENT_BYTES_MAX + 2 + SLOT_USER_BYTES_MAX + SLOT_REQUEST_BYTES_MAX <= 511,
               "a waitlist key row fits LMDB's key size");

static void key_typed(key *k, const char *ev, size_t ev_len, char type)
{
    key_event(k, ev, ev_len);
    put_u8(&k->b, (uint8_t)type);
}

static void entry_key(key *k, const char *ev, size_t ev_len, uint64_t join)
{
    key_typed(k, ev, ev_len, WAIT_ENTRY);
    put_be(&k->b, join, 8);
}

static void name_key(key *k, const char *ev, size_t ev_len, const char *user, size_t user_len, const char *request,
                     size_t request_len)
{
    key_typed(k, ev, ev_len, WAIT_KEY);
    put_name(&k->b, user, user_len);
    put_name(&k->b, request, request_len);
    SLOT_ASSERT(!k->b.bad);
}

int slot_store_wait_key_get(slot_store *st, MDB_txn *txn, const char *ev, size_t ev_len, const char *user,
                            size_t user_len, const char *request, size_t request_len, slot_wait_rec *out)
{
    key k;
    name_key(&k, ev, ev_len, user, user_len, request, request_len);
    MDB_val kv = key_val(&k), v;
    int rc = mdb_get(txn, st->dbi[DB_WAITLIST], &kv, &v);
    if (rc != 0)
        return rc;
    buf b = {.p = v.mv_data, .cap = v.mv_size};
    uint8_t version = get_u8(&b);
    uint8_t state = get_u8(&b);
    out->join = get_be(&b, 8);
    out->qty = (uint16_t)get_be(&b, 2);
    out->joined_at_ms = get_be(&b, 8);
    out->hold_seq = get_be(&b, 8);
    out->hold_tag = get_be(&b, 8);
    out->order = 0; /* kept on the waiting entry only */
    if (b.bad || b.len != v.mv_size || version != WAIT_REC_VERSION || state < SLOT_WAIT_WAITING ||
        state > SLOT_WAIT_LEFT)
        return MDB_CORRUPTED;
    out->state = (slot_wait_state)state;
    memcpy(out->user, user, user_len);
    out->user[user_len] = 0;
    out->user_len = (uint8_t)user_len;
    memcpy(out->request, request, request_len);
    out->request[request_len] = 0;
    out->request_len = (uint8_t)request_len;
    return 0;
}

int slot_store_wait_key_put(slot_store *st, MDB_txn *txn, const char *ev, size_t ev_len, const slot_wait_rec *rec)
{
    key k;
    name_key(&k, ev, ev_len, rec->user, rec->user_len, rec->request, rec->request_len);
    uint8_t raw[KEY_VAL_BYTES];
    buf b = {.p = raw, .cap = sizeof(raw)};
    SLOT_ASSERT(rec->state >= SLOT_WAIT_WAITING && rec->state <= SLOT_WAIT_LEFT);
    put_u8(&b, WAIT_REC_VERSION);
    put_u8(&b, (uint8_t)rec->state);
    put_be(&b, rec->join, 8);
    put_be(&b, rec->qty, 2);
    put_be(&b, rec->joined_at_ms, 8);
    put_be(&b, rec->hold_seq, 8);
    put_be(&b, rec->hold_tag, 8);
    SLOT_ASSERT(!b.bad && b.len == KEY_VAL_BYTES);
    MDB_val kv = key_val(&k), v = {b.len, raw};
    return store_put(st, txn, DB_WAITLIST, &kv, &v, 0);
}

int slot_store_wait_put(slot_store *st, MDB_txn *txn, const char *ev, size_t ev_len, const slot_wait_rec *rec)
{
    key k;
    entry_key(&k, ev, ev_len, rec->join);
    uint8_t raw[ENTRY_VAL_BYTES];
    buf b = {.p = raw, .cap = sizeof(raw)};
    SLOT_ASSERT(rec->state == SLOT_WAIT_WAITING);
    put_u8(&b, WAIT_ENTRY_VERSION);
    put_be(&b, rec->qty, 2);
    put_be(&b, rec->joined_at_ms, 8);
    put_name(&b, rec->user, rec->user_len);
    put_name(&b, rec->request, rec->request_len);
    put_be(&b, rec->order, 8);
    put_name(&b, rec->alloc, rec->alloc_len);
    SLOT_ASSERT(!b.bad && !k.b.bad);
    MDB_val kv = key_val(&k), v = {b.len, raw};
    /* Join seqs grow: the entry is its event's last, and often the database's. */
    int rc = store_put(st, txn, DB_WAITLIST, &kv, &v, MDB_APPEND);
    return rc == MDB_KEYEXIST ? store_put(st, txn, DB_WAITLIST, &kv, &v, 0) : rc;
}

int slot_store_wait_del(slot_store *st, MDB_txn *txn, const char *ev, size_t ev_len, uint64_t join)
{
    key k;
    entry_key(&k, ev, ev_len, join);
    MDB_val kv = key_val(&k);
    return store_del(st, txn, DB_WAITLIST, &kv);
}

/* Decodes a waiting entry row (key k, value v) of an event whose prefix is plen bytes. */
static int entry_decode(const MDB_val *k, const MDB_val *v, size_t plen, slot_wait_rec *out)
{
    if (k->mv_size != plen + 8)
        return MDB_CORRUPTED;
    out->join = load_be64((const uint8_t *)k->mv_data + plen);
    buf b = {.p = v->mv_data, .cap = v->mv_size};
    uint8_t version = get_u8(&b);
    out->qty = (uint16_t)get_be(&b, 2);
    out->joined_at_ms = get_be(&b, 8);
    out->user_len = (uint8_t)get_name(&b, out->user, sizeof(out->user));
    out->request_len = (uint8_t)get_name(&b, out->request, sizeof(out->request));
    out->order = version >= 2 ? get_be(&b, 8) : 0;
    out->alloc_len = version >= 3 ? (uint8_t)get_name(&b, out->alloc, sizeof(out->alloc)) : 0;
    if (version < 3)
        out->alloc[0] = 0;
    out->state = SLOT_WAIT_WAITING;
    out->hold_seq = out->hold_tag = 0;
    return b.bad || b.len != v->mv_size || version < 1 || version > WAIT_ENTRY_VERSION ? MDB_CORRUPTED : 0;
}

int slot_store_wait_scan(slot_store *st, MDB_txn *txn, const char *ev, size_t ev_len, uint64_t from,
                         slot_store_wait_fn fn, void *ctx)
{
    key k;
    key_typed(&k, ev, ev_len, WAIT_ENTRY);
    size_t plen = k.b.len;
    put_be(&k.b, from, 8);
    MDB_cursor *cur;
    int rc = mdb_cursor_open(txn, st->dbi[DB_WAITLIST], &cur);
    if (rc != 0)
        return rc;
    MDB_val kv = key_val(&k), v;
    rc = mdb_cursor_get(cur, &kv, &v, MDB_SET_RANGE);
    while (rc == 0 && kv.mv_size >= plen && memcmp(kv.mv_data, k.raw, plen) == 0) {
        slot_wait_rec rec;
        rc = entry_decode(&kv, &v, plen, &rec);
        if (rc == 0)
            rc = fn(ctx, &rec);
        if (rc == 0)
            rc = mdb_cursor_get(cur, &kv, &v, MDB_NEXT);
    }
    mdb_cursor_close(cur);
    return rc == MDB_NOTFOUND ? 0 : rc;
}

static int take_first(void *p, const slot_wait_rec *rec)
{
    *(slot_wait_rec *)p = *rec;
    return 1; /* stop: one is enough */
}

int slot_store_wait_first(slot_store *st, MDB_txn *txn, const char *ev, size_t ev_len, slot_wait_rec *out)
{
    out->join = 0;
    int rc = slot_store_wait_scan(st, txn, ev, ev_len, 0, take_first, out);
    if (rc == 1)
        return 0;
    return rc == 0 ? MDB_NOTFOUND : rc;
}

int slot_store_wait_keys_scan(slot_store *st, MDB_txn *txn, const char *ev, size_t ev_len, slot_store_wait_fn fn,
                              void *ctx)
{
    key k;
    key_typed(&k, ev, ev_len, WAIT_KEY);
    size_t plen = k.b.len;
    MDB_cursor *cur;
    int rc = mdb_cursor_open(txn, st->dbi[DB_WAITLIST], &cur);
    if (rc != 0)
        return rc;
    MDB_val kv = key_val(&k), v;
    rc = mdb_cursor_get(cur, &kv, &v, MDB_SET_RANGE);
    while (rc == 0 && kv.mv_size > plen && memcmp(kv.mv_data, k.raw, plen) == 0) {
        buf b = {.p = (uint8_t *)kv.mv_data + plen, .cap = kv.mv_size - plen};
        slot_wait_rec rec;
        char user[SLOT_USER_BYTES_MAX + 1], request[SLOT_REQUEST_BYTES_MAX + 1];
        size_t ul = get_name(&b, user, sizeof(user));
        size_t rl = get_name(&b, request, sizeof(request));
        rc = b.bad || b.len != b.cap ? MDB_CORRUPTED
                                     : slot_store_wait_key_get(st, txn, ev, ev_len, user, ul, request, rl, &rec);
        if (rc == 0)
            rc = fn(ctx, &rec);
        if (rc == 0)
            rc = mdb_cursor_get(cur, &kv, &v, MDB_NEXT);
    }
    mdb_cursor_close(cur);
    return rc == MDB_NOTFOUND ? 0 : rc;
}

/* ---- the tree of left entries (a Fenwick tree: node i covers join seqs
 *      (i - lowbit(i), i]; a missing node is 0) */

static int tree_get(slot_store *st, MDB_txn *txn, const char *ev, size_t ev_len, uint64_t node, uint64_t *out)
{
    key k;
    key_typed(&k, ev, ev_len, WAIT_TREE);
    put_be(&k.b, node, 8);
    MDB_val kv = key_val(&k), v;
    int rc = mdb_get(txn, st->dbi[DB_WAITLIST], &kv, &v);
    *out = 0;
    if (rc == MDB_NOTFOUND)
        return 0;
    if (rc == 0 && v.mv_size != 8)
        return MDB_CORRUPTED;
    if (rc == 0)
        *out = load_be64(v.mv_data);
    return rc;
}

int slot_store_wait_left_add(slot_store *st, MDB_txn *txn, const char *ev, size_t ev_len, uint64_t join)
{
    SLOT_ASSERT(join >= 1 && join < TREE_SIZE);
    int rc = 0;
    for (uint64_t i = join; rc == 0 && i < TREE_SIZE; i += i & (~i + 1)) {
        uint64_t n;
        rc = tree_get(st, txn, ev, ev_len, i, &n);
        if (rc != 0)
            break;
        key k;
        key_typed(&k, ev, ev_len, WAIT_TREE);
        put_be(&k.b, i, 8);
        uint8_t raw[8];
        buf b = {.p = raw, .cap = 8};
        put_be(&b, n + 1, 8);
        MDB_val kv = key_val(&k), v = {8, raw};
        rc = store_put(st, txn, DB_WAITLIST, &kv, &v, 0);
    }
    return rc;
}

int slot_store_wait_left_count(slot_store *st, MDB_txn *txn, const char *ev, size_t ev_len, uint64_t upto,
                               uint64_t *count)
{
    *count = 0;
    if (upto >= TREE_SIZE)
        upto = TREE_SIZE - 1;
    for (uint64_t i = upto; i > 0; i -= i & (~i + 1)) {
        uint64_t n;
        int rc = tree_get(st, txn, ev, ev_len, i, &n);
        if (rc != 0)
            return rc;
        *count += n;
    }
    return 0;
}

/* ---- allocations (docs/protocol.md, "Allocations"): two more kinds of row
 * under the event's name, beside its waitlist's:
 *   ev + 'a' + name(block)                  the block: u8 version, u64 qty, remaining, held,
 *                                           confirmed, max_per_user
 *   ev + 'b' + name(block) + name(user)     u64: the user's units held or confirmed from the
 *                                           block (for every block: allocate may set a max_per_user later) */

#define BLOCK_REC_VERSION 1
#define WAIT_BLOCK 'a'
#define WAIT_BLOCK_USER 'b'
#define BLOCK_VAL_BYTES (1 + 8 * 5 + 1)

static void block_key(key *k, const char *ev, size_t ev_len, const char *name, size_t name_len)
{
    key_typed(k, ev, ev_len, WAIT_BLOCK);
    put_name(&k->b, name, name_len);
    SLOT_ASSERT(!k->b.bad);
}

static int block_decode(const MDB_val *v, slot_block_rec *out)
{
    buf b = {.p = v->mv_data, .cap = v->mv_size};
    uint8_t version = get_u8(&b);
    out->qty = get_be(&b, 8);
    out->remaining = get_be(&b, 8);
    out->held = get_be(&b, 8);
    out->confirmed = get_be(&b, 8);
    out->max_per_user = get_be(&b, 8);
    out->closed = get_u8(&b) != 0;
    return b.bad || b.len != v->mv_size || version != BLOCK_REC_VERSION ? MDB_CORRUPTED : 0;
}

int slot_store_block_get(slot_store *st, MDB_txn *txn, const char *ev, size_t ev_len, const char *name, size_t name_len,
                         slot_block_rec *out)
{
    key k;
    block_key(&k, ev, ev_len, name, name_len);
    MDB_val kv = key_val(&k), v;
    int rc = mdb_get(txn, st->dbi[DB_WAITLIST], &kv, &v);
    if (rc != 0)
        return rc;
    memcpy(out->name, name, name_len);
    out->name[name_len] = 0;
    out->name_len = (uint8_t)name_len;
    return block_decode(&v, out);
}

int slot_store_block_put(slot_store *st, MDB_txn *txn, const char *ev, size_t ev_len, const slot_block_rec *rec)
{
    key k;
    block_key(&k, ev, ev_len, rec->name, rec->name_len);
    uint8_t raw[BLOCK_VAL_BYTES];
    buf b = {.p = raw, .cap = sizeof(raw)};
    put_u8(&b, BLOCK_REC_VERSION);
    put_be(&b, rec->qty, 8);
    put_be(&b, rec->remaining, 8);
    put_be(&b, rec->held, 8);
    put_be(&b, rec->confirmed, 8);
    put_be(&b, rec->max_per_user, 8);
    put_u8(&b, rec->closed);
    SLOT_ASSERT(!b.bad && b.len == BLOCK_VAL_BYTES);
    MDB_val kv = key_val(&k), v = {b.len, raw};
    return store_put(st, txn, DB_WAITLIST, &kv, &v, 0);
}

int slot_store_block_del(slot_store *st, MDB_txn *txn, const char *ev, size_t ev_len, const char *name, size_t name_len)
{
    key k;
    block_key(&k, ev, ev_len, name, name_len);
    MDB_val kv = key_val(&k);
    return store_del(st, txn, DB_WAITLIST, &kv);
}

int slot_store_blocks_scan(slot_store *st, MDB_txn *txn, const char *ev, size_t ev_len, slot_store_block_fn fn,
                           void *ctx)
{
    key k;
    key_typed(&k, ev, ev_len, WAIT_BLOCK);
    size_t plen = k.b.len;
    MDB_cursor *cur;
    int rc = mdb_cursor_open(txn, st->dbi[DB_WAITLIST], &cur);
    if (rc != 0)
        return rc;
    MDB_val kv = key_val(&k), v;
    rc = mdb_cursor_get(cur, &kv, &v, MDB_SET_RANGE);
    while (rc == 0 && kv.mv_size > plen && memcmp(kv.mv_data, k.raw, plen) == 0) {
        buf b = {.p = (uint8_t *)kv.mv_data + plen, .cap = kv.mv_size - plen};
        slot_block_rec rec;
        rec.name_len = (uint8_t)get_name(&b, rec.name, sizeof(rec.name));
        rc = b.bad || b.len != b.cap ? MDB_CORRUPTED : block_decode(&v, &rec);
        if (rc == 0)
            rc = fn(ctx, &rec);
        if (rc == 0)
            rc = mdb_cursor_get(cur, &kv, &v, MDB_NEXT);
    }
    mdb_cursor_close(cur);
    return rc == MDB_NOTFOUND ? 0 : rc;
}

static void block_user_key(key *k, const char *ev, size_t ev_len, const char *block, size_t block_len, const char *user,
                           size_t user_len)
{
    key_typed(k, ev, ev_len, WAIT_BLOCK_USER);
    put_name(&k->b, block, block_len);
    put_name(&k->b, user, user_len);
    SLOT_ASSERT(!k->b.bad);
}

int slot_store_block_user_get(slot_store *st, MDB_txn *txn, const char *ev, size_t ev_len, const char *block,
                              size_t block_len, const char *user, size_t user_len, uint64_t *qty)
{
    key k;
    block_user_key(&k, ev, ev_len, block, block_len, user, user_len);
    MDB_val kv = key_val(&k), v;
    int rc = mdb_get(txn, st->dbi[DB_WAITLIST], &kv, &v);
    *qty = 0;
    if (rc == MDB_NOTFOUND)
        return 0;
    if (rc == 0 && v.mv_size != 8)
        return MDB_CORRUPTED;
    if (rc == 0)
        *qty = load_be64(v.mv_data);
    return rc;
}

int slot_store_block_user_put(slot_store *st, MDB_txn *txn, const char *ev, size_t ev_len, const char *block,
                              size_t block_len, const char *user, size_t user_len, uint64_t qty)
{
    key k;
    block_user_key(&k, ev, ev_len, block, block_len, user, user_len);
    MDB_val kv = key_val(&k);
    if (qty == 0) {
        int rc = store_del(st, txn, DB_WAITLIST, &kv);
        return rc == MDB_NOTFOUND ? 0 : rc;
    }
    uint8_t raw[8];
    buf b = {.p = raw, .cap = 8};
    put_be(&b, qty, 8);
    MDB_val v = {8, raw};
    return store_put(st, txn, DB_WAITLIST, &kv, &v, 0);
}

/* ---- client limits (docs/protocol.md, "Client limits"): two more kinds of row
 *   ev + 'c' + name(client)                 u64: the client key's units held
 *   ev + 'd' + name(client) + u64 seq       empty: a held hold of that key
 * kept only on an event with max_active_per_client. */

#define WAIT_CLIENT 'c'
#define WAIT_CLIENT_HOLD 'd'

static void client_key(key *k, const char *ev, size_t ev_len, char type, const char *client, size_t client_len)
{
    SLOT_ASSERT(client_len >= 1 && client_len <= SLOT_CLIENT_BYTES_MAX);
    key_typed(k, ev, ev_len, type);
    put_name(&k->b, client, client_len);
    SLOT_ASSERT(!k->b.bad);
}

int slot_store_client_get(slot_store *st, MDB_txn *txn, const char *ev, size_t ev_len, const char *client,
                          size_t client_len, uint64_t *qty)
{
    key k;
    client_key(&k, ev, ev_len, WAIT_CLIENT, client, client_len);
    MDB_val kv = key_val(&k), v;
    int rc = mdb_get(txn, st->dbi[DB_WAITLIST], &kv, &v);
    *qty = 0;
    if (rc == MDB_NOTFOUND)
        return 0;
    if (rc == 0 && v.mv_size != 8)
        return MDB_CORRUPTED;
    if (rc == 0)
        *qty = load_be64(v.mv_data);
    return rc;
}

int slot_store_client_put(slot_store *st, MDB_txn *txn, const char *ev, size_t ev_len, const char *client,
                          size_t client_len, uint64_t qty)
{
    key k;
    client_key(&k, ev, ev_len, WAIT_CLIENT, client, client_len);
    MDB_val kv = key_val(&k);
    if (qty == 0) {
        int rc = store_del(st, txn, DB_WAITLIST, &kv);
        return rc == MDB_NOTFOUND ? 0 : rc;
    }
    uint8_t raw[8];
    buf b = {.p = raw, .cap = 8};
    put_be(&b, qty, 8);
    MDB_val v = {8, raw};
    return store_put(st, txn, DB_WAITLIST, &kv, &v, 0);
}

int slot_store_client_hold_add(slot_store *st, MDB_txn *txn, const char *ev, size_t ev_len, const char *client,
                               size_t client_len, uint64_t seq)
{
    key k;
    client_key(&k, ev, ev_len, WAIT_CLIENT_HOLD, client, client_len);
    put_be(&k.b, seq, 8);
    SLOT_ASSERT(!k.b.bad);
    uint8_t one = 1; /* a value of one byte: the row's presence is what counts */
    MDB_val kv = key_val(&k), v = {1, &one};
    return store_put(st, txn, DB_WAITLIST, &kv, &v, 0);
}

int slot_store_client_hold_del(slot_store *st, MDB_txn *txn, const char *ev, size_t ev_len, const char *client,
                               size_t client_len, uint64_t seq)
{
    key k;
    client_key(&k, ev, ev_len, WAIT_CLIENT_HOLD, client, client_len);
    put_be(&k.b, seq, 8);
    SLOT_ASSERT(!k.b.bad);
    MDB_val kv = key_val(&k);
    return store_del(st, txn, DB_WAITLIST, &kv);
}

int slot_store_client_holds(slot_store *st, MDB_txn *txn, const char *ev, size_t ev_len, const char *client,
                            size_t client_len, uint64_t *seqs, uint32_t max, uint32_t *n)
{
    SLOT_ASSERT(max >= 1 && max <= SLOT_CLIENT_RETRY_SCAN_MAX);
    key k;
    client_key(&k, ev, ev_len, WAIT_CLIENT_HOLD, client, client_len);
    size_t plen = k.b.len;
    *n = 0;
    MDB_cursor *cur;
    int rc = mdb_cursor_open(txn, st->dbi[DB_WAITLIST], &cur);
    if (rc != 0)
        return rc;
    MDB_val kv = key_val(&k), v;
    rc = mdb_cursor_get(cur, &kv, &v, MDB_SET_RANGE);
    while (rc == 0 && *n < max && kv.mv_size == plen + 8 && memcmp(kv.mv_data, k.raw, plen) == 0) {
        seqs[(*n)++] = load_be64((const uint8_t *)kv.mv_data + plen);
        rc = mdb_cursor_get(cur, &kv, &v, MDB_NEXT);
    }
    mdb_cursor_close(cur);
    return rc == MDB_NOTFOUND ? 0 : rc;
}

/* ---- the waiting room (docs/protocol.md, "Admission"): three more kinds of row
 *   ev + 'r' + u64 seq        the entry: u8 version, tag, state, joined_at, admitted_at, rank, grant,
 *                             name(user), name(request)
 *   ev + 'u' + name(user)     u64: the user's entry
 *   ev + 'g' + u64 rank       u64: the entry admitted at that rank */

#define ROOM_REC_VERSION 1
#define WAIT_ROOM 'r'
#define WAIT_ROOM_USER 'u'
#define WAIT_ROOM_RANK 'g'
#define ROOM_VAL_BYTES_MAX (1 + 8 + 1 + 8 * 4 + 1 + SLOT_USER_BYTES_MAX + 1 + SLOT_REQUEST_BYTES_MAX)

static void room_key(key *k, const char *ev, size_t ev_len, char type, uint64_t n)
{
    key_typed(k, ev, ev_len, type);
    put_be(&k->b, n, 8);
    SLOT_ASSERT(!k->b.bad);
}

int slot_store_room_get(slot_store *st, MDB_txn *txn, const char *ev, size_t ev_len, uint64_t seq, slot_room_entry *out)
{
    key k;
    room_key(&k, ev, ev_len, WAIT_ROOM, seq);
    MDB_val kv = key_val(&k), v;
    int rc = mdb_get(txn, st->dbi[DB_WAITLIST], &kv, &v);
    if (rc != 0)
        return rc;
    buf b = {.p = v.mv_data, .cap = v.mv_size};
    if (get_u8(&b) != ROOM_REC_VERSION)
        return MDB_CORRUPTED;
    out->seq = seq;
    out->tag = get_be(&b, 8);
    out->state = get_u8(&b);
    out->joined_at_ms = get_be(&b, 8);
    out->admitted_at_ms = get_be(&b, 8);
    out->rank = get_be(&b, 8);
    out->grant = get_be(&b, 8);
    out->user_len = (uint8_t)get_name(&b, out->user, sizeof(out->user));
    out->request_len = (uint8_t)get_name(&b, out->request, sizeof(out->request));
    return b.bad || b.len != v.mv_size || out->state > 2 ? MDB_CORRUPTED : 0;
}

int slot_store_room_put(slot_store *st, MDB_txn *txn, const char *ev, size_t ev_len, const slot_room_entry *rec)
{
    key k;
    room_key(&k, ev, ev_len, WAIT_ROOM, rec->seq);
    uint8_t raw[ROOM_VAL_BYTES_MAX];
    buf b = {.p = raw, .cap = sizeof(raw)};
    SLOT_ASSERT(rec->state <= 2);
    put_u8(&b, ROOM_REC_VERSION);
    put_be(&b, rec->tag, 8);
    put_u8(&b, rec->state);
    put_be(&b, rec->joined_at_ms, 8);
    put_be(&b, rec->admitted_at_ms, 8);
    put_be(&b, rec->rank, 8);
    put_be(&b, rec->grant, 8);
    put_name(&b, rec->user, rec->user_len);
    put_name(&b, rec->request, rec->request_len);
    SLOT_ASSERT(!b.bad);
    MDB_val kv = key_val(&k), v = {b.len, raw};
    return store_put(st, txn, DB_WAITLIST, &kv, &v, 0);
}

static int u64_get(slot_store *st, MDB_txn *txn, key *k, uint64_t *out)
{
    MDB_val kv = key_val(k), v;
    int rc = mdb_get(txn, st->dbi[DB_WAITLIST], &kv, &v);
    if (rc == 0 && v.mv_size != 8)
        return MDB_CORRUPTED;
    if (rc == 0)
        *out = load_be64(v.mv_data);
    return rc;
}

static int u64_put(slot_store *st, MDB_txn *txn, key *k, uint64_t val)
{
    uint8_t raw[8];
    buf b = {.p = raw, .cap = 8};
    put_be(&b, val, 8);
    MDB_val kv = key_val(k), v = {8, raw};
    return store_put(st, txn, DB_WAITLIST, &kv, &v, 0);
}

static void room_user_key(key *k, const char *ev, size_t ev_len, const char *user, size_t user_len)
{
    key_typed(k, ev, ev_len, WAIT_ROOM_USER);
    put_name(&k->b, user, user_len);
    SLOT_ASSERT(!k->b.bad);
}

int slot_store_room_user_get(slot_store *st, MDB_txn *txn, const char *ev, size_t ev_len, const char *user,
                             size_t user_len, uint64_t *seq)
{
    key k;
    room_user_key(&k, ev, ev_len, user, user_len);
    return u64_get(st, txn, &k, seq);
}

int slot_store_room_user_put(slot_store *st, MDB_txn *txn, const char *ev, size_t ev_len, const char *user,
                             size_t user_len, uint64_t seq)
{
    key k;
    room_user_key(&k, ev, ev_len, user, user_len);
    return u64_put(st, txn, &k, seq);
}

int slot_store_room_rank_get(slot_store *st, MDB_txn *txn, const char *ev, size_t ev_len, uint64_t rank, uint64_t *seq)
{
    key k;
    room_key(&k, ev, ev_len, WAIT_ROOM_RANK, rank);
    return u64_get(st, txn, &k, seq);
}

int slot_store_room_rank_put(slot_store *st, MDB_txn *txn, const char *ev, size_t ev_len, uint64_t rank, uint64_t seq)
{
    key k;
    room_key(&k, ev, ev_len, WAIT_ROOM_RANK, rank);
    return u64_put(st, txn, &k, seq);
}
