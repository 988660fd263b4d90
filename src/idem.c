/* idem.c — the in-memory idempotency index (see idem.h), on uthash. */
#include "idem.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "slot/limits.h"

/* uthash would exit() when it cannot grow its buckets; make that an error
 * the caller sees (the add is undone and put returns -ENOMEM). */
static int idem_oom;
#define HASH_NONFATAL_OOM 1
#define uthash_nonfatal_oom(obj) (idem_oom = 1)
#define HASH_FUNCTION HASH_SFH /* Paul Hsieh's SuperFastHash: quick on short keys */
/* A Bloom filter in front of each part's buckets, 2^18 bits (32 KiB; 2 MiB
 * over the parts): most lookups in a sale are for new request keys, and a
 * miss then costs one cache line instead of a walk along a bucket's chain
 * (micro_alloc: find 16% -> 7% of the allocator's time). */
#define HASH_BLOOM SLOT_IDEM_BLOOM_LOG2
#include <uthash.h>

/*
 * The index is IDEM_PARTS uthash tables, a key's part chosen by the top bits
 * of its hash (uthash picks buckets and Bloom bits from the low bits). uthash
 * doubles a table's buckets in one step, rehashing every entry of it: with
 * one table one add took 135-228 ms at 1.14M keys (measured, 2M adds of
 * hold-shaped keys), a stall of the commit thread in the middle of a sale.
 * More parts make each doubling smaller but every add dearer (cold part
 * headers): worst add / time of the 2M adds was 208 ms / 2.4 s with one
 * table, 12 ms / 2.6 s with 64 parts, 4 ms / 3.0 s with 256.
 */
#define IDEM_PARTS_LOG2 SLOT_IDEM_PARTS_LOG2
#define IDEM_PARTS (1u << IDEM_PARTS_LOG2)

/* Each part starts with 4096 buckets (64 KiB; 4 MiB over the parts, taken
 * when a part gets its first key) instead of uthash's 32: a doubling walks
 * every key of the part, one cache miss each, and from 32 buckets that was
 * 42% of an add's time. Now the first doubling comes at ~12k keys a part
 * (~800k in all). uthash reads these two macros where it makes a table. */
#undef HASH_INITIAL_NUM_BUCKETS
#undef HASH_INITIAL_NUM_BUCKETS_LOG2
#define HASH_INITIAL_NUM_BUCKETS (1u << SLOT_IDEM_BUCKETS_LOG2)
#define HASH_INITIAL_NUM_BUCKETS_LOG2 SLOT_IDEM_BUCKETS_LOG2

#define KEY_BYTES_MAX (3 * 256)

typedef struct entry {
    UT_hash_handle hh;
    uint64_t seq;
    uint16_t key_len;
    char key[]; /* ev_len, ev, user_len, user, req_len, req */
} entry;

typedef struct block {
    struct block *next;
    size_t used;
    char data[];
} block;

struct slot__idem {
    entry *parts[IDEM_PARTS];
    block *blocks;
    size_t count, bytes;
};

static size_t key_build(char *out, const char *ev, size_t ev_len, const char *user, size_t user_len,
                        const char *req, size_t req_len)
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
    return n;
}

/* Entries are carved from blocks and never freed one by one: a stale entry
 * (rare: an aborted batch) is unlinked and its bytes wait for idem_free. */
static entry *arena_alloc(slot__idem *ix, size_t bytes)
{
    bytes = (bytes + 7) & ~(size_t)7;
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

slot__idem *slot__idem_new(void)
{
    return calloc(1, sizeof(slot__idem));
}

void slot__idem_free(slot__idem *ix)
{
    if (!ix)
        return;
    for (unsigned i = 0; i < IDEM_PARTS; i++)
        HASH_CLEAR(hh, ix->parts[i]);
    while (ix->blocks) {
        block *b = ix->blocks;
        ix->blocks = b->next;
        free(b);
    }
    free(ix);
}

/* A built key with its hash and the part it lives in. */
typedef struct lookup {
    char key[KEY_BYTES_MAX];
    unsigned len, hashv;
    entry **part;
} lookup;

static void lookup_init(slot__idem *ix, lookup *l, const char *ev, size_t ev_len, const char *user, size_t user_len,
                        const char *req, size_t req_len)
{
    l->len = (unsigned)key_build(l->key, ev, ev_len, user, user_len, req, req_len);
    HASH_VALUE(l->key, l->len, l->hashv);
    l->part = &ix->parts[l->hashv >> (32 - IDEM_PARTS_LOG2)];
}

static entry *find(const lookup *l)
{
    entry *e = NULL;
    HASH_FIND_BYHASHVALUE(hh, *l->part, l->key, l->len, l->hashv, e);
    return e;
}

static int add(slot__idem *ix, const lookup *l, uint64_t seq)
{
    entry *e = arena_alloc(ix, sizeof(entry) + l->len);
    if (!e)
        return -ENOMEM;
    memset(&e->hh, 0, sizeof(e->hh));
    e->seq = seq;
    e->key_len = (uint16_t)l->len;
    memcpy(e->key, l->key, l->len);
    idem_oom = 0;
    HASH_ADD_BYHASHVALUE(hh, *l->part, key, l->len, l->hashv, e);
    if (idem_oom)
        return -ENOMEM; /* not linked; its arena bytes wait for idem_free */
    ix->count++;
    return 0;
}

int slot__idem_put(slot__idem *ix, const char *ev, size_t ev_len, const char *user, size_t user_len,
                   const char *req, size_t req_len, uint64_t seq)
{
    lookup l;
    lookup_init(ix, &l, ev, ev_len, user, user_len, req, req_len);
    entry *e = find(&l);
    if (e) {
        e->seq = seq;
        return 0;
    }
    return add(ix, &l, seq);
}

int slot__idem_add(slot__idem *ix, const char *ev, size_t ev_len, const char *user, size_t user_len,
                   const char *req, size_t req_len, uint64_t seq)
{
    lookup l;
    lookup_init(ix, &l, ev, ev_len, user, user_len, req, req_len);
    return add(ix, &l, seq);
}

int slot__idem_get(slot__idem *ix, const char *ev, size_t ev_len, const char *user, size_t user_len,
                   const char *req, size_t req_len, uint64_t *seq)
{
    lookup l;
    lookup_init(ix, &l, ev, ev_len, user, user_len, req, req_len);
    entry *e = find(&l);
    if (!e)
        return -1;
    *seq = e->seq;
    return 0;
}

void slot__idem_del(slot__idem *ix, const char *ev, size_t ev_len, const char *user, size_t user_len,
                    const char *req, size_t req_len)
{
    lookup l;
    lookup_init(ix, &l, ev, ev_len, user, user_len, req, req_len);
    entry *e = find(&l);
    if (e) {
        HASH_DEL(*l.part, e);
        ix->count--;
    }
}

size_t slot__idem_count(const slot__idem *ix)
{
    return ix->count;
}

size_t slot__idem_bytes(const slot__idem *ix)
{
    return ix->bytes;
}
