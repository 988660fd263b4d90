/*
 * idem.c — the in-memory idempotency index (see alloc_int.h): a chained hash
 * table that grows by incremental rehash, entries from an arena.
 *
 * Growth without a stall. A table that doubles in one step rehashes every
 * key at once: uthash did that, and one add took 135-228 ms at 1.14M keys
 * with one table (12 ms with the 64 tables this file had next), a stall of
 * the commit thread in the middle of a sale. Here, as in Redis's dict, a
 * growing index has two tables: the old one (t[0]) and one twice as large
 * (t[1]). New keys go to t[1]; every put, add, get and del first moves up to
 * SLOT_IDEM_MOVE_BUCKETS buckets of t[0] into t[1] (visiting at most ten
 * times as many empty buckets), and a lookup reads t[0] for a bucket not
 * yet moved, then t[1]. When t[0] is empty it is freed and t[1] becomes
 * t[0]. A doubling starts when the keys outnumber t[0]'s buckets (n keys,
 * n buckets) and has moved t[0]'s n buckets after n / SLOT_IDEM_MOVE_BUCKETS
 * ops, long before t[1] (2n buckets) is full. So no single op costs more
 * than a bounded number of bucket moves. The kernel's part is bounded too:
 * a new table is an anonymous mapping (zero pages, faulted in as touched)
 * and the old one is unmapped SLOT_IDEM_RELEASE_BYTES at a time behind the move
 * (bench/micro_idem.c measures the worst call).
 *
 * Besides the keys, the index keeps a set of "cold" events: events whose
 * keys the caller chose not to load (slot_alloc_load leaves out events that
 * are closed and settled), so that it loads them before it asks about them.
 */
#include "alloc_int.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "slot/assert.h"
#include "slot/limits.h"

/* Its sizes are in slot/limits.h, "The idempotency index's internals". */

typedef struct entry {
    struct entry *next;
    uint64_t seq;
    uint32_t hash;
    uint16_t key_len;
    char key[]; /* ev_len, ev, user_len, user, req_len, req */
} entry;

typedef struct block {
    struct block *next;
    size_t used;
    char data[];
} block;

typedef struct table {
    entry **b;       /* NULL: no table; else an anonymous mapping (page-aligned) */
    size_t mask;     /* buckets - 1 */
    size_t released; /* bytes at the start of b already unmapped (a multiple of SLOT_IDEM_RELEASE_BYTES) */
} table;

/* One chained hash map of built keys; rehashing while t[1].b is set. */
typedef struct map {
    table t[2];
    size_t moved; /* while rehashing: t[0]'s buckets below this are empty (moved) */
    size_t count;
    size_t count1; /* while rehashing: of count, the entries in t[1] (added there or moved); else 0 */
} map;

/* The bulk load's queue (slot__idem_put_deferred): puts wait here, their
 * buckets prefetched, so that a load has several cache misses in flight
 * instead of one (the load's time was mostly map_find's miss on a random
 * bucket). Applied in order, so the result is that of plain puts. */

typedef struct lookup {
    char key[SLOT_IDEM_KEY_BYTES_MAX];
    unsigned len;
    uint32_t hash;
} lookup;

struct slot__idem {
    map keys;
    map cold; /* event names only: (ev, "", "") */
    lookup pending[SLOT_IDEM_PENDING];
    uint64_t pending_seq[SLOT_IDEM_PENDING];
    unsigned pending_head, pending_n;
    int pending_err; /* the first failed deferred put's -ENOMEM, until flush */
    block *blocks;
    size_t bytes;       /* arena blocks */
    size_t table_bytes; /* bucket arrays */
    size_t doublings;
};

/* ---- keys and their hash */

static size_t key_build(char *out, const char *ev, size_t ev_len, const char *user, size_t user_len, const char *req,
                        size_t req_len)
{
    size_t n = 0;
    const char *parts[3] = {ev, user, req};
    size_t lens[3] = {ev_len, user_len, req_len};
    for (int i = 0; i < 3; i++) {
        size_t l = lens[i] > 255 ? 255 : lens[i];
        out[n++] = (char)l;
        memcpy(out + n, parts[i], l);
        n += l;
    }
    SLOT_ASSERT(n <= SLOT_IDEM_KEY_BYTES_MAX);
    return n;
}

/* 8 bytes at a time, multiply and rotate, then murmur3's 64-bit finalizer. */
static uint32_t key_hash(const char *k, size_t len)
{
    uint64_t h = UINT64_C(0x9e3779b97f4a7c15) ^ ((uint64_t)len * UINT64_C(0xff51afd7ed558ccd));
    size_t i = 0;
    for (; i + 8 <= len; i += 8) {
        uint64_t w;
        memcpy(&w, k + i, 8);
        h = (h ^ w) * UINT64_C(0x87c37b91114253d5);
        h = (h << 31) | (h >> 33);
    }
    uint64_t w = 0;
    for (size_t j = 0; i + j < len; j++)
        w |= (uint64_t)(unsigned char)k[i + j] << (8 * j);
    h = (h ^ w) * UINT64_C(0x87c37b91114253d5);
    h ^= h >> 33;
    h *= UINT64_C(0xff51afd7ed558ccd);
    h ^= h >> 33;
    h *= UINT64_C(0xc4ceb9fe1a85ec53);
    h ^= h >> 33;
    return (uint32_t)h;
}

static void lookup_init(lookup *l, const char *ev, size_t ev_len, const char *user, size_t user_len, const char *req,
                        size_t req_len)
{
    l->len = (unsigned)key_build(l->key, ev, ev_len, user, user_len, req, req_len);
    l->hash = key_hash(l->key, l->len);
}

/* ---- the arena: entries are carved from blocks and never freed one by one
 *      (a deleted entry — rare: an aborted batch — waits for idem_free). */

static entry *arena_alloc(slot__idem *ix, size_t bytes)
{
    bytes = (bytes + 7) & ~(size_t)7;
    SLOT_ASSERT(bytes <= SLOT_IDEM_BLOCK_BYTES); /* an entry is at most a key of SLOT_IDEM_KEY_BYTES_MAX */
    if (!ix->blocks || ix->blocks->used + bytes > SLOT_IDEM_BLOCK_BYTES) {
        block *b = malloc(sizeof(block) + SLOT_IDEM_BLOCK_BYTES);
        if (!b)
            return NULL;
        b->next = ix->blocks;
        b->used = 0;
        ix->blocks = b;
        ix->bytes += sizeof(block) + SLOT_IDEM_BLOCK_BYTES;
    }
    entry *e = (entry *)(void *)(ix->blocks->data + ix->blocks->used);
    ix->blocks->used += bytes;
    return e;
}

/* ---- the map */

/* Tables are anonymous mappings: zero pages until touched, and a moved
 * part can be unmapped while the rest is in use. */
static bool table_new(slot__idem *ix, table *t, size_t buckets)
{
    SLOT_ASSERT(buckets >= 1 && (buckets & (buckets - 1)) == 0); /* masks, not modulo */
    size_t bytes = buckets * sizeof(entry *);
    void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED)
        return false;
    t->b = p;
    t->mask = buckets - 1;
    t->released = 0;
    ix->table_bytes += bytes;
    return true;
}

static void table_free(slot__idem *ix, table *t)
{
    if (t->b) {
        size_t bytes = (t->mask + 1) * sizeof(entry *);
        munmap((char *)t->b + t->released, bytes - t->released);
        ix->table_bytes -= bytes - t->released;
    }
    *t = (table){0};
}

/* Unmaps whole SLOT_IDEM_RELEASE_BYTES pieces of t below bucket `below` (all empty). */
static void table_release(slot__idem *ix, table *t, size_t below)
{
    size_t upto = below * sizeof(entry *) / SLOT_IDEM_RELEASE_BYTES * SLOT_IDEM_RELEASE_BYTES;
    if (upto <= t->released)
        return;
    SLOT_ASSERT(upto <= (t->mask + 1) * sizeof(entry *) && t->released % SLOT_IDEM_RELEASE_BYTES == 0);
    munmap((char *)t->b + t->released, upto - t->released);
    ix->table_bytes -= upto - t->released;
    t->released = upto;
}

static bool rehashing(const map *m)
{
    return m->t[1].b != NULL;
}

/* Moves up to SLOT_IDEM_MOVE_BUCKETS buckets of t[0] into t[1] (passing at
 * most SLOT_IDEM_EMPTY_VISITS_PER_MOVE times as many empty ones); ends the rehash
 * when t[0] is empty. Each moved entry keeps its hash: no key is rehashed. */
static void map_step(slot__idem *ix, map *m)
{
    if (!rehashing(m))
        return;
    size_t size0 = m->t[0].mask + 1;
    SLOT_ASSERT(m->t[1].mask + 1 == 2 * size0 && m->moved <= size0); /* a doubling */
    unsigned buckets = SLOT_IDEM_MOVE_BUCKETS, empty = SLOT_IDEM_MOVE_BUCKETS * SLOT_IDEM_EMPTY_VISITS_PER_MOVE;
    while (buckets > 0 && m->moved < size0) {
        entry *e = m->t[0].b[m->moved];
        if (!e) {
            m->moved++;
            if (--empty == 0)
                break;
            continue;
        }
        while (e) {
            entry *next = e->next;
            entry **head = &m->t[1].b[e->hash & m->t[1].mask];
            e->next = *head;
            *head = e;
            e = next;
            m->count1++;
        }
        m->t[0].b[m->moved++] = NULL;
        buckets--;
    }
    SLOT_ASSERT(m->count1 <= m->count);
    if (m->moved < size0) {
        table_release(ix, &m->t[0], m->moved);
    } else {
        /* every bucket of t[0] moved: every entry is in t[1], none lost nor doubled */
        SLOT_ASSERT(m->count1 == m->count);
        m->count1 = 0;
        table_free(ix, &m->t[0]);
        m->t[0] = m->t[1];
        m->t[1] = (table){0};
        m->moved = 0;
    }
}

/* Starts a doubling when the keys outnumber the buckets. When the larger
 * table cannot be had, chains just grow longer (the next add tries again). */
static void map_maybe_grow(slot__idem *ix, map *m)
{
    if (rehashing(m))
        return;
    if (!m->t[0].b) {
        table_new(ix, &m->t[0], (size_t)1 << SLOT_IDEM_BUCKETS_LOG2);
        return;
    }
    size_t size0 = m->t[0].mask + 1;
    if (m->count < size0 || size0 > SIZE_MAX / 2 / sizeof(entry *))
        return;
    /* load factor: a doubling starts at >= 1 key per bucket, so the new table starts at >= 1/2 */
    SLOT_ASSERT(m->count1 == 0 && m->count >= size0);
    if (table_new(ix, &m->t[1], size0 * 2)) {
        m->moved = 0;
        ix->doublings++;
    }
}

/* The link that points at l's entry, or NULL when it is not there; *which
 * (may be NULL) gets the table it is in. */
static entry **map_find_in(map *m, const lookup *l, int *which)
{
    for (int i = 0; i < 2; i++) {
        table *t = &m->t[i];
        if (!t->b)
            continue;
        size_t idx = l->hash & t->mask;
        if (i == 0 && rehashing(m) && idx < m->moved)
            continue; /* this bucket was moved to t[1] */
        for (entry **p = &t->b[idx]; *p; p = &(*p)->next) {
            entry *e = *p;
            if (e->hash == l->hash && e->key_len == l->len && memcmp(e->key, l->key, l->len) == 0) {
                if (which)
                    *which = i;
                return p;
            }
        }
    }
    return NULL;
}

static entry **map_find(map *m, const lookup *l)
{
    return map_find_in(m, l, NULL);
}

/* Unlinks l's entry (its arena bytes wait for idem_free); true when it was there. */
static bool map_del(map *m, const lookup *l)
{
    int which = 0;
    entry **p = map_find_in(m, l, &which);
    if (!p)
        return false;
    *p = (*p)->next;
    SLOT_ASSERT(m->count > 0);
    m->count--;
    if (which == 1) {
        SLOT_ASSERT(rehashing(m) && m->count1 > 0);
        m->count1--;
    }
    return true;
}

static int map_add(slot__idem *ix, map *m, const lookup *l, uint64_t seq)
{
    map_maybe_grow(ix, m);
    table *t = rehashing(m) ? &m->t[1] : &m->t[0];
    if (!t->b)
        return -ENOMEM; /* not even the first table */
    entry *e = arena_alloc(ix, sizeof(entry) + l->len);
    if (!e)
        return -ENOMEM;
    e->seq = seq;
    e->hash = l->hash;
    e->key_len = (uint16_t)l->len;
    memcpy(e->key, l->key, l->len);
    entry **head = &t->b[l->hash & t->mask];
    e->next = *head;
    *head = e;
    m->count++;
    if (t == &m->t[1])
        m->count1++;
    SLOT_ASSERT(m->count1 <= m->count);
    return 0;
}

static void map_free(slot__idem *ix, map *m)
{
    table_free(ix, &m->t[0]);
    table_free(ix, &m->t[1]);
}

/* ---- the index */

slot__idem *slot__idem_new(void)
{
    return calloc(1, sizeof(slot__idem));
}

void slot__idem_free(slot__idem *ix)
{
    if (!ix)
        return;
    map_free(ix, &ix->keys);
    map_free(ix, &ix->cold);
    while (ix->blocks) {
        block *b = ix->blocks;
        ix->blocks = b->next;
        free(b);
    }
    free(ix);
}

static int put_one(slot__idem *ix, const lookup *l, uint64_t seq)
{
    map_step(ix, &ix->keys);
    entry **p = map_find(&ix->keys, l);
    if (p) {
        (*p)->seq = seq;
        return 0;
    }
    return map_add(ix, &ix->keys, l, seq);
}

/* Applies the oldest deferred put. */
static void pending_apply_one(slot__idem *ix)
{
    int rc = put_one(ix, &ix->pending[ix->pending_head], ix->pending_seq[ix->pending_head]);
    if (rc != 0 && ix->pending_err == 0)
        ix->pending_err = rc;
    ix->pending_head = (ix->pending_head + 1) % SLOT_IDEM_PENDING;
    ix->pending_n--;
}

/* Every other call applies what waits first, so it sees every put made. */
static void pending_apply(slot__idem *ix)
{
    while (ix->pending_n > 0)
        pending_apply_one(ix);
}

int slot__idem_put_deferred(slot__idem *ix, const char *ev, size_t ev_len, const char *user, size_t user_len,
                            const char *req, size_t req_len, uint64_t seq)
{
    if (ix->pending_n == SLOT_IDEM_PENDING)
        pending_apply_one(ix);
    unsigned at = (ix->pending_head + ix->pending_n) % SLOT_IDEM_PENDING;
    lookup *l = &ix->pending[at];
    lookup_init(l, ev, ev_len, user, user_len, req, req_len);
    ix->pending_seq[at] = seq;
    ix->pending_n++;
    for (int i = 0; i < 2; i++) {
        const table *t = &ix->keys.t[i];
        if (t->b)
            __builtin_prefetch(&t->b[l->hash & t->mask]);
    }
    return ix->pending_err;
}

int slot__idem_flush(slot__idem *ix)
{
    pending_apply(ix);
    int rc = ix->pending_err;
    ix->pending_err = 0;
    return rc;
}

int slot__idem_put(slot__idem *ix, const char *ev, size_t ev_len, const char *user, size_t user_len, const char *req,
                   size_t req_len, uint64_t seq)
{
    pending_apply(ix);
    lookup l;
    lookup_init(&l, ev, ev_len, user, user_len, req, req_len);
    return put_one(ix, &l, seq);
}

int slot__idem_add(slot__idem *ix, const char *ev, size_t ev_len, const char *user, size_t user_len, const char *req,
                   size_t req_len, uint64_t seq)
{
    pending_apply(ix);
    lookup l;
    lookup_init(&l, ev, ev_len, user, user_len, req, req_len);
    map_step(ix, &ix->keys);
    return map_add(ix, &ix->keys, &l, seq);
}

int slot__idem_get(slot__idem *ix, const char *ev, size_t ev_len, const char *user, size_t user_len, const char *req,
                   size_t req_len, uint64_t *seq)
{
    pending_apply(ix);
    lookup l;
    lookup_init(&l, ev, ev_len, user, user_len, req, req_len);
    map_step(ix, &ix->keys);
    entry **p = map_find(&ix->keys, &l);
    if (!p)
        return -1;
    *seq = (*p)->seq;
    return 0;
}

/* map_find without the link: for slot__idem_peek, which must not change m. */
static bool map_has(const map *m, const lookup *l)
{
    for (int i = 0; i < 2; i++) {
        const table *t = &m->t[i];
        if (!t->b)
            continue;
        size_t idx = l->hash & t->mask;
        if (i == 0 && rehashing(m) && idx < m->moved)
            continue; /* this bucket was moved to t[1] */
        for (const entry *e = t->b[idx]; e; e = e->next)
            if (e->hash == l->hash && e->key_len == l->len && memcmp(e->key, l->key, l->len) == 0)
                return true;
    }
    return false;
}

int slot__idem_peek(const slot__idem *ix, const char *ev, size_t ev_len, const char *user, size_t user_len,
                    const char *req, size_t req_len)
{
    if (ix->pending_n > 0)
        return 1;
    lookup l;
    if (ix->cold.count > 0) {
        lookup_init(&l, ev, ev_len, "", 0, "", 0);
        if (map_has(&ix->cold, &l))
            return 1;
    }
    lookup_init(&l, ev, ev_len, user, user_len, req, req_len);
    return map_has(&ix->keys, &l) ? 0 : -1;
}

void slot__idem_del(slot__idem *ix, const char *ev, size_t ev_len, const char *user, size_t user_len, const char *req,
                    size_t req_len)
{
    pending_apply(ix);
    lookup l;
    lookup_init(&l, ev, ev_len, user, user_len, req, req_len);
    map_step(ix, &ix->keys);
    map_del(&ix->keys, &l);
}

size_t slot__idem_count(const slot__idem *ix)
{
    return ix->keys.count;
}

size_t slot__idem_bytes(const slot__idem *ix)
{
    return ix->bytes + ix->table_bytes;
}

size_t slot__idem_doublings(const slot__idem *ix)
{
    return ix->doublings;
}

bool slot__idem_rehashing(const slot__idem *ix)
{
    return rehashing(&ix->keys);
}

int slot__idem_reserve(slot__idem *ix, size_t keys)
{
    map *m = &ix->keys;
    if (m->t[0].b || keys > ((size_t)1 << 32))
        return 0; /* in use already (growing stays incremental), or beyond any sane store */
    size_t buckets = (size_t)1 << SLOT_IDEM_BUCKETS_LOG2;
    while (buckets < keys)
        buckets *= 2;
    return table_new(ix, &m->t[0], buckets) ? 0 : -ENOMEM;
}

/* ---- cold events */

int slot__idem_cold_add(slot__idem *ix, const char *ev, size_t ev_len)
{
    lookup l;
    lookup_init(&l, ev, ev_len, "", 0, "", 0);
    map_step(ix, &ix->cold);
    if (map_find(&ix->cold, &l))
        return 0;
    return map_add(ix, &ix->cold, &l, 0);
}

bool slot__idem_cold(slot__idem *ix, const char *ev, size_t ev_len)
{
    if (ix->cold.count == 0)
        return false; /* the usual case: one compare per request */
    lookup l;
    lookup_init(&l, ev, ev_len, "", 0, "", 0);
    map_step(ix, &ix->cold);
    return map_find(&ix->cold, &l) != NULL;
}

void slot__idem_cold_del(slot__idem *ix, const char *ev, size_t ev_len)
{
    lookup l;
    lookup_init(&l, ev, ev_len, "", 0, "", 0);
    map_step(ix, &ix->cold);
    map_del(&ix->cold, &l);
}

size_t slot__idem_cold_count(const slot__idem *ix)
{
    return ix->cold.count;
}
