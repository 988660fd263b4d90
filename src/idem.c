/* idem.c — the in-memory idempotency index (see idem.h), on uthash. */
#include "idem.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* uthash would exit() when it cannot grow its buckets; make that an error
 * the caller sees (the add is undone and put returns -ENOMEM). */
static int idem_oom;
#define HASH_NONFATAL_OOM 1
#define uthash_nonfatal_oom(obj) (idem_oom = 1)
#define HASH_FUNCTION HASH_SFH /* Paul Hsieh's SuperFastHash: quick on short keys */
/* A Bloom filter of 2^24 bits (2 MiB) in front of the buckets: most lookups in
 * a sale are for new request keys, and a miss then costs one cache line
 * instead of a walk along a bucket's chain (micro_alloc: find 16% -> 7% of
 * the allocator's time). */
#define HASH_BLOOM 24
#include <uthash.h>

#define SLOT__IDEM_BLOCK_BYTES (1u << 20) /* arena block: ~10,000 entries */
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
    entry *table;
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
    if (!ix->blocks || ix->blocks->used + bytes > SLOT__IDEM_BLOCK_BYTES) {
        block *b = malloc(sizeof(block) + SLOT__IDEM_BLOCK_BYTES);
        if (!b)
            return NULL;
        b->next = ix->blocks;
        b->used = 0;
        ix->blocks = b;
        ix->bytes += sizeof(block) + SLOT__IDEM_BLOCK_BYTES;
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
    HASH_CLEAR(hh, ix->table);
    while (ix->blocks) {
        block *b = ix->blocks;
        ix->blocks = b->next;
        free(b);
    }
    free(ix);
}

static entry *find(slot__idem *ix, const char *key, size_t len)
{
    entry *e = NULL;
    HASH_FIND(hh, ix->table, key, (unsigned)len, e);
    return e;
}

static int add(slot__idem *ix, const char *key, size_t len, uint64_t seq)
{
    entry *e = arena_alloc(ix, sizeof(entry) + len);
    if (!e)
        return -ENOMEM;
    memset(&e->hh, 0, sizeof(e->hh));
    e->seq = seq;
    e->key_len = (uint16_t)len;
    memcpy(e->key, key, len);
    idem_oom = 0;
    HASH_ADD(hh, ix->table, key, (unsigned)len, e);
    if (idem_oom)
        return -ENOMEM; /* not linked; its arena bytes wait for idem_free */
    ix->count++;
    return 0;
}

int slot__idem_put(slot__idem *ix, const char *ev, size_t ev_len, const char *user, size_t user_len,
                   const char *req, size_t req_len, uint64_t seq)
{
    char key[KEY_BYTES_MAX];
    size_t len = key_build(key, ev, ev_len, user, user_len, req, req_len);
    entry *e = find(ix, key, len);
    if (e) {
        e->seq = seq;
        return 0;
    }
    return add(ix, key, len, seq);
}

int slot__idem_add(slot__idem *ix, const char *ev, size_t ev_len, const char *user, size_t user_len,
                   const char *req, size_t req_len, uint64_t seq)
{
    char key[KEY_BYTES_MAX];
    return add(ix, key, key_build(key, ev, ev_len, user, user_len, req, req_len), seq);
}

int slot__idem_get(slot__idem *ix, const char *ev, size_t ev_len, const char *user, size_t user_len,
                   const char *req, size_t req_len, uint64_t *seq)
{
    char key[KEY_BYTES_MAX];
    size_t len = key_build(key, ev, ev_len, user, user_len, req, req_len);
    entry *e = find(ix, key, len);
    if (!e)
        return -1;
    *seq = e->seq;
    return 0;
}

void slot__idem_del(slot__idem *ix, const char *ev, size_t ev_len, const char *user, size_t user_len,
                    const char *req, size_t req_len)
{
    char key[KEY_BYTES_MAX];
    size_t len = key_build(key, ev, ev_len, user, user_len, req, req_len);
    entry *e = find(ix, key, len);
    if (e) {
        HASH_DEL(ix->table, e);
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
