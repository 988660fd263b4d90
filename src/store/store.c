/*
 * store.c — slotd's LMDB schema (see slot/store.h for the table of databases).
 *
 * Keys are built in caller stack buffers: a name is one length byte then its
 * bytes, integers are big-endian, so LMDB's memcmp order is number order.
 * Records are packed by hand, field by field, big-endian, after a version
 * byte, so the file does not depend on struct layout or the host's byte order.
 */
#include "slot/store.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "store_int.h"
#include "slot/failpoint.h"

const char *const slot__store_db_names[SLOT_STORE_DBS] = {
    "meta",  "events", "shards",    "holds",   "expiry",
    "users", "feed",   "consumers", "waitlist"}; /* feed, consumers: slot/feed.h */

/* ---- the folders' own entries (docs/design.md, "Durability and stopping") */

int slot_store_fsync_dir(const char *dir)
{
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0)
        return -errno;
    int rc = fsync(fd) == 0 ? 0 : -errno;
    close(fd);
    return rc;
}

int slot_store_mkdir(const char *dir)
{
    if (mkdir(dir, 0700) != 0 && errno != EEXIST)
        return -errno;
    char parent[PATH_MAX];
    size_t n = strlen(dir);
    if (n >= sizeof parent)
        return -ENAMETOOLONG;
    memcpy(parent, dir, n + 1);
    while (n > 1 && parent[n - 1] == '/') /* "a/b/" is "a/b" */
        parent[--n] = '\0';
    char *slash = strrchr(parent, '/');
    if (!slash)
        snprintf(parent, sizeof parent, ".");
    else if (slash == parent)
        slash[1] = '\0'; /* "/data": the root */
    else
        *slash = '\0';
    return slot_store_fsync_dir(parent);
}

/* ---- open, close, grow */

static int check_schema(slot_store *st, MDB_txn *txn, bool create, char *errbuf, size_t errlen)
{
    MDB_val k = {6, "schema"}, v;
    int rc = mdb_get(txn, st->dbi[DB_META], &k, &v);
    if (rc == MDB_NOTFOUND && create) {
        uint8_t raw[12];
        memcpy(raw, SLOT_SCHEMA_MAGIC, 8);
        buf b = {.p = raw + 8, .cap = 4};
        put_be(&b, SLOT_SCHEMA_VERSION, 4);
        return slot__store_meta_put(st, txn, "schema", raw, sizeof(raw));
    }
    if (rc != 0)
        return rc;
    if (v.mv_size != 12 || memcmp(v.mv_data, SLOT_SCHEMA_MAGIC, 8) != 0) {
        snprintf(errbuf, errlen, "not a slotd store (bad schema magic)");
        return EINVAL;
    }
    buf b = {.p = (uint8_t *)v.mv_data + 8, .cap = 4};
    uint32_t version = (uint32_t)get_be(&b, 4);
    if (version > SLOT_SCHEMA_VERSION) {
        snprintf(errbuf, errlen, "written by a newer slotd (schema %u); this one reads up to %u", version,
                 SLOT_SCHEMA_VERSION);
        return EINVAL;
    }
    return 0;
}

/* Opens the named databases and checks (or writes) the schema record. A
 * folder that has an LMDB file without our meta record is foreign. */
static int open_dbs(slot_store *st, bool read_only, char *errbuf, size_t errlen)
{
    MDB_txn *txn;
    int rc = mdb_txn_begin(st->env, NULL, read_only ? MDB_RDONLY : 0, &txn);
    if (rc != 0)
        return rc;
    MDB_dbi main_dbi;
    rc = mdb_dbi_open(txn, NULL, 0, &main_dbi);
    MDB_stat ms;
    bool fresh = rc == 0 && mdb_stat(txn, main_dbi, &ms) == 0 && ms.ms_entries == 0;
    for (int i = 0; rc == 0 && i < SLOT_STORE_DBS; i++) {
        rc = mdb_dbi_open(txn, slot__store_db_names[i], read_only ? 0 : MDB_CREATE, &st->dbi[i]);
        if (rc == MDB_NOTFOUND || rc == MDB_INCOMPATIBLE) {
            snprintf(errbuf, errlen, "not a slotd store (database \"%s\" %s)", slot__store_db_names[i],
                     rc == MDB_NOTFOUND ? "missing" : "of another kind");
            rc = EINVAL;
        }
    }
    if (rc == 0)
        rc = check_schema(st, txn, fresh && !read_only, errbuf, errlen);
    if (rc == MDB_NOTFOUND) {
        snprintf(errbuf, errlen, "not a slotd store (no schema record)");
        rc = EINVAL;
    }
    if (rc != 0) {
        mdb_txn_abort(txn);
        return rc;
    }
    return mdb_txn_commit(txn);
}

int slot_store_open(const slot_store_opts *opts, slot_store **out, char *errbuf, size_t errlen)
{
    *out = NULL;
    snprintf(errbuf, errlen, "%s", "");
    if (!opts->read_only) {
        /* nosync flushes nothing, so neither the folder's own entry. */
        int mk = 0;
        if (!opts->nosync)
            mk = slot_store_mkdir(opts->dir);
        else if (mkdir(opts->dir, 0700) != 0 && errno != EEXIST)
            mk = -errno;
        if (mk != 0) {
            snprintf(errbuf, errlen, "mkdir %s (or the fsync of its parent): %s", opts->dir, strerror(-mk));
            return mk;
        }
    }
    slot_store *st = calloc(1, sizeof(*st));
    if (!st)
        return -ENOMEM;
    st->map_bytes_max = opts->map_bytes_max ? opts->map_bytes_max : SLOT_MAP_BYTES_MAX_DEFAULT;
    int rc = mdb_env_create(&st->env);
    if (rc == 0)
        rc = mdb_env_set_maxdbs(st->env, SLOT_STORE_DBS);
    if (rc == 0)
        rc = mdb_env_set_maxreaders(st->env, SLOT_STORE_READERS);
    unsigned flags = MDB_NOTLS | MDB_NORDAHEAD;
    if (opts->nosync || SLOT_ARMED(NO_FLUSH)) /* the planted fault (slot/failpoint.h) */
        flags |= MDB_NOSYNC;
    if (opts->nometasync)
        flags |= MDB_NOMETASYNC;
    if (opts->read_only)
        flags |= MDB_RDONLY;
    if (rc == 0)
        rc = mdb_env_open(st->env, opts->dir, flags, 0600);
    if (rc != 0) {
        if (!errbuf[0])
            snprintf(errbuf, errlen, "open %s: %s", opts->dir, mdb_strerror(rc));
        goto fail;
    }
    /* The file may be bigger than our initial map (it grew in an earlier run). */
    MDB_envinfo info;
    mdb_env_info(st->env, &info);
    st->map_bytes = info.me_mapsize;
    if (st->map_bytes < SLOT_MAP_BYTES_INITIAL && !opts->read_only) {
        st->map_bytes = SLOT_MAP_BYTES_INITIAL < st->map_bytes_max ? SLOT_MAP_BYTES_INITIAL : st->map_bytes_max;
        rc = mdb_env_set_mapsize(st->env, st->map_bytes);
        if (rc != 0)
            goto fail;
    }
    int dead = 0;
    mdb_reader_check(st->env, &dead); /* readers left by killed processes */
    rc = open_dbs(st, opts->read_only, errbuf, errlen);
    if (rc != 0) {
        if (!errbuf[0])
            snprintf(errbuf, errlen, "open %s: %s", opts->dir, mdb_strerror(rc));
        goto fail;
    }
    /* mdb_env_open may have just created data.mdb and lock.mdb: their
     * entries are durable before the first commit that lives in them is
     * acknowledged (LMDB's own fdatasync flushes the file, not its name). */
    if (!opts->read_only && !opts->nosync && (rc = slot_store_fsync_dir(opts->dir)) != 0) {
        snprintf(errbuf, errlen, "fsync of the data folder %s: %s", opts->dir, strerror(-rc));
        goto fail;
    }
    *out = st;
    return 0;
fail:
    mdb_env_close(st->env);
    free(st);
    return rc;
}

int slot__store_open_copy(const char *file, slot_store **out, char *errbuf, size_t errlen)
{
    *out = NULL;
    snprintf(errbuf, errlen, "%s", "");
    slot_store *st = calloc(1, sizeof(*st));
    if (!st)
        return -ENOMEM;
    st->map_bytes_max = SLOT_MAP_BYTES_MAX_DEFAULT;
    int rc = mdb_env_create(&st->env);
    if (rc == 0)
        rc = mdb_env_set_maxdbs(st->env, SLOT_STORE_DBS);
    if (rc == 0) /* one file, read-only, no lock file: nobody else opens a scratch copy */
        rc = mdb_env_open(st->env, file, MDB_NOSUBDIR | MDB_RDONLY | MDB_NOLOCK | MDB_NOTLS | MDB_NORDAHEAD, 0600);
    if (rc != 0) {
        snprintf(errbuf, errlen, "open %s: %s", file, mdb_strerror(rc));
        goto fail;
    }
    MDB_envinfo info;
    mdb_env_info(st->env, &info);
    st->map_bytes = info.me_mapsize;
    rc = open_dbs(st, true, errbuf, errlen);
    if (rc != 0) {
        if (!errbuf[0])
            snprintf(errbuf, errlen, "open %s: %s", file, mdb_strerror(rc));
        goto fail;
    }
    *out = st;
    return 0;
fail:
    mdb_env_close(st->env);
    free(st);
    return rc;
}

void slot_store_close(slot_store *st)
{
    if (!st)
        return;
    mdb_env_close(st->env);
    free(st);
}

MDB_env *slot_store_env(slot_store *st)
{
    return st->env;
}

int slot_store_grow(slot_store *st)
{
    if (st->map_bytes >= st->map_bytes_max)
        return MDB_MAP_FULL;
    uint64_t next = st->map_bytes * 2;
    if (next > st->map_bytes_max)
        next = st->map_bytes_max;
    int rc = mdb_env_set_mapsize(st->env, next);
    if (rc == 0)
        st->map_bytes = next;
    return rc;
}

uint64_t slot_store_map_bytes(slot_store *st)
{
    return st->map_bytes;
}

uint64_t slot_store_used_bytes(slot_store *st)
{
    MDB_envinfo info;
    MDB_stat stat;
    if (mdb_env_info(st->env, &info) != 0 || mdb_env_stat(st->env, &stat) != 0)
        return 0;
    return ((uint64_t)info.me_last_pgno + 1) * stat.ms_psize;
}

int slot_store_sync(slot_store *st)
{
    return mdb_env_sync(st->env, 1);
}

/* ---- events */

#define EVENT_REC_V1_BYTES 58
#define EVENT_REC_V2_BYTES (EVENT_REC_V1_BYTES + 8 + 8 + 2 + 8) /* version 2: the window, max_extensions, max_hold_ms */
#define EVENT_REC_V3_BYTES (EVENT_REC_V2_BYTES + 4 + 8 * 4)     /* version 3: the waitlist's setting and counters */
#define EVENT_REC_BYTES_MAX \
    (EVENT_REC_V3_BYTES + 1 + SLOT_EVENT_BYTES_MAX + 4 + 8 + 8 + 8 + 8 + 4 + 82 + 1) /* version 4: parent, \
                  children, allocated, the family's join order and waiting; 5: the client limits; the seated byte */

int slot_store_event_get(slot_store *st, MDB_txn *txn, const char *ev, size_t ev_len, slot_event_rec *out)
{
    key k;
    key_event(&k, ev, ev_len);
    MDB_val kv = key_val(&k), v;
    int rc = mdb_get(txn, st->dbi[DB_EVENTS], &kv, &v);
    if (rc != 0)
        return rc;
    buf b = {.p = v.mv_data, .cap = v.mv_size};
    uint8_t version = get_u8(&b);
    if (version < 1 || version > SLOT_RECORD_VERSION)
        return MDB_CORRUPTED;
    out->status = get_u8(&b) ? SLOT_EVENT_CLOSED : SLOT_EVENT_ON_SALE;
    out->shards = (uint16_t)get_be(&b, 2);
    out->max_per_request = (uint16_t)get_be(&b, 2);
    out->hold_ttl_ms = (uint32_t)get_be(&b, 4);
    out->capacity = get_be(&b, 8);
    out->held = get_be(&b, 8);
    out->confirmed = get_be(&b, 8);
    out->max_per_user = get_be(&b, 8);
    out->next_seq = get_be(&b, 8);
    out->created_at_ms = get_be(&b, 8);
    if (version == 1) {
        out->opens_at_ms = out->closes_at_ms = 0;
        out->max_extensions = SLOT_MAX_EXTENSIONS_DEFAULT;
        out->max_hold_ms = 2ull * out->hold_ttl_ms;
    } else {
        out->opens_at_ms = get_be(&b, 8);
        out->closes_at_ms = get_be(&b, 8);
        out->max_extensions = (uint16_t)get_be(&b, 2);
        out->max_hold_ms = get_be(&b, 8);
    }
    out->waitlist_max = 0;
    out->waiting = out->waiting_qty = out->served = 0;
    out->next_join = 1;
    if (version >= 3) {
        out->waitlist_max = (uint32_t)get_be(&b, 4);
        out->waiting = get_be(&b, 8);
        out->waiting_qty = get_be(&b, 8);
        out->next_join = get_be(&b, 8);
        out->served = get_be(&b, 8);
    }
    out->parent_len = 0;
    out->parent[0] = 0;
    out->children = 0;
    out->allocated = 0;
    out->fam_next_join = 1;
    out->fam_waiting = out->waiting; /* an older record: a family of one, its entries in order 0 */
    if (version >= 4) {
        out->parent_len = (uint8_t)get_name(&b, out->parent, sizeof(out->parent));
        out->children = (uint32_t)get_be(&b, 4);
        out->allocated = get_be(&b, 8);
        out->fam_next_join = get_be(&b, 8);
        out->fam_waiting = get_be(&b, 8);
        if (out->parent_len > SLOT_EVENT_BYTES_MAX)
            return MDB_CORRUPTED;
    }
    out->max_active_per_client = 0;
    out->client_rate = 0;
    out->admission = SLOT_ADMISSION_NONE;
    out->admit_per_s = SLOT_ADMIT_PER_S_DEFAULT;
    out->grant_ttl_ms = SLOT_GRANT_TTL_MS_DEFAULT;
    out->queue_opens_at_ms = out->room_joined = out->room_admitted = out->room_open = out->room_exp_k = 0;
    out->admit_milli = out->admit_at_ms = out->lottery_key = out->lottery_n = 0;
    out->drawn = 0;
    if (version >= 5) {
        out->max_active_per_client = get_be(&b, 8);
        out->client_rate = (uint32_t)get_be(&b, 4);
        out->admission = get_u8(&b);
        out->admit_per_s = (uint32_t)get_be(&b, 4);
        out->grant_ttl_ms = (uint32_t)get_be(&b, 4);
        out->queue_opens_at_ms = get_be(&b, 8);
        out->room_joined = get_be(&b, 8);
        out->room_admitted = get_be(&b, 8);
        out->room_open = get_be(&b, 8);
        out->room_exp_k = get_be(&b, 8);
        out->admit_milli = get_be(&b, 8);
        out->admit_at_ms = get_be(&b, 8);
        out->drawn = get_u8(&b);
        out->lottery_key = get_be(&b, 8);
        out->lottery_n = get_be(&b, 8);
        if (out->admission > SLOT_ADMISSION_LOTTERY)
            return MDB_CORRUPTED;
    }
    out->seated = 0;
    if (version >= 5 && !b.bad && b.len + 1 == v.mv_size) /* the seated byte (slot/store.h) */
        out->seated = get_u8(&b);
    return b.bad || b.len != v.mv_size || out->seated > 1 ? MDB_CORRUPTED : 0;
}

int slot_store_event_put(slot_store *st, MDB_txn *txn, const char *ev, size_t ev_len, const slot_event_rec *rec)
{
    key k;
    key_event(&k, ev, ev_len);
    uint8_t raw[EVENT_REC_BYTES_MAX];
    buf b = {.p = raw, .cap = sizeof(raw)};
    SLOT_ASSERT(rec->parent_len <= SLOT_EVENT_BYTES_MAX);
    put_u8(&b, SLOT_RECORD_VERSION);
    put_u8(&b, rec->status == SLOT_EVENT_CLOSED);
    put_be(&b, rec->shards, 2);
    put_be(&b, rec->max_per_request, 2);
    put_be(&b, rec->hold_ttl_ms, 4);
    put_be(&b, rec->capacity, 8);
    put_be(&b, rec->held, 8);
    put_be(&b, rec->confirmed, 8);
    put_be(&b, rec->max_per_user, 8);
    put_be(&b, rec->next_seq, 8);
    put_be(&b, rec->created_at_ms, 8);
    put_be(&b, rec->opens_at_ms, 8);
    put_be(&b, rec->closes_at_ms, 8);
    put_be(&b, rec->max_extensions, 2);
    put_be(&b, rec->max_hold_ms, 8);
    put_be(&b, rec->waitlist_max, 4);
    put_be(&b, rec->waiting, 8);
    put_be(&b, rec->waiting_qty, 8);
    put_be(&b, rec->next_join, 8);
    put_be(&b, rec->served, 8);
    put_name(&b, rec->parent, rec->parent_len);
    put_be(&b, rec->children, 4);
    put_be(&b, rec->allocated, 8);
    put_be(&b, rec->fam_next_join, 8);
    put_be(&b, rec->fam_waiting, 8);
    put_be(&b, rec->max_active_per_client, 8);
    put_be(&b, rec->client_rate, 4);
    put_u8(&b, rec->admission);
    put_be(&b, rec->admit_per_s, 4);
    put_be(&b, rec->grant_ttl_ms, 4);
    put_be(&b, rec->queue_opens_at_ms, 8);
    put_be(&b, rec->room_joined, 8);
    put_be(&b, rec->room_admitted, 8);
    put_be(&b, rec->room_open, 8);
    put_be(&b, rec->room_exp_k, 8);
    put_be(&b, rec->admit_milli, 8);
    put_be(&b, rec->admit_at_ms, 8);
    put_u8(&b, rec->drawn);
    put_be(&b, rec->lottery_key, 8);
    put_be(&b, rec->lottery_n, 8);
    SLOT_ASSERT(!k.b.bad);
    SLOT_ASSERT(!b.bad);
    SLOT_ASSERT(b.len == EVENT_REC_V3_BYTES + 1u + rec->parent_len + 122u); /* the version-5 layout, whole */
    SLOT_ASSERT(rec->seated <= 1);
    if (rec->seated)
        put_u8(&b, 1); /* only then: an unseated event's record keeps its bytes */
    SLOT_ASSERT(!b.bad);
    MDB_val kv = key_val(&k), v = {b.len, raw};
    return store_put(st, txn, DB_EVENTS, &kv, &v, 0);
}

/* ---- shards */

static void shard_key(key *k, const char *ev, size_t ev_len, uint16_t shard)
{
    key_event(k, ev, ev_len);
    put_be(&k->b, shard, 2);
}

int slot_store_shard_get(slot_store *st, MDB_txn *txn, const char *ev, size_t ev_len, uint16_t shard,
                         uint64_t *free_units)
{
    key k;
    shard_key(&k, ev, ev_len, shard);
    MDB_val kv = key_val(&k), v;
    int rc = mdb_get(txn, st->dbi[DB_SHARDS], &kv, &v);
    if (rc != 0)
        return rc;
    if (v.mv_size != 8)
        return MDB_CORRUPTED;
    *free_units = load_be64(v.mv_data);
    return 0;
}

int slot_store_shard_put(slot_store *st, MDB_txn *txn, const char *ev, size_t ev_len, uint16_t shard,
                         uint64_t free_units)
{
    key k;
    shard_key(&k, ev, ev_len, shard);
    uint8_t raw[8];
    buf b = {.p = raw, .cap = 8};
    put_be(&b, free_units, 8);
    MDB_val kv = key_val(&k), v = {8, raw};
    SLOT_ASSERT(!k.b.bad);
    return store_put(st, txn, DB_SHARDS, &kv, &v, 0);
}

int slot_store_shard_del(slot_store *st, MDB_txn *txn, const char *ev, size_t ev_len, uint16_t shard)
{
    key k;
    shard_key(&k, ev, ev_len, shard);
    MDB_val kv = key_val(&k);
    return store_del(st, txn, DB_SHARDS, &kv);
}

/* ---- holds */

#define HOLD_REC_V2_BYTES (2 + 2 + 8 * 4) /* after the parts: extensions, returned, the two links */
#define HOLD_REC_V3_BYTES (1 + 8)         /* then: kind, origin */
#define HOLD_REC_V4_BYTES_MAX \
    (1 + SLOT_ANCESTORS_MAX * (2 + 4 * SLOT_PARTS_MAX) + 1 + SLOT_EVENT_BYTES_MAX) /* then: each ancestor's \
                                                                                      parts, the block */
#define HOLD_REC_BYTES_MAX                                                                               \
    (1 + 1 + 2 + 2 + 8 * 3 + 1 + SLOT_USER_BYTES_MAX + 1 + SLOT_REQUEST_BYTES_MAX + 4 * SLOT_PARTS_MAX + \
     HOLD_REC_V2_BYTES + HOLD_REC_V3_BYTES + HOLD_REC_V4_BYTES_MAX + 1 + SLOT_CLIENT_BYTES_MAX)

static void hold_key(key *k, const char *ev, size_t ev_len, uint64_t seq)
{
    key_event(k, ev, ev_len);
    put_be(&k->b, seq, 8);
}

int slot__store_hold_decode(const MDB_val *v, uint64_t seq, slot_hold_rec *out)
{
    buf b = {.p = v->mv_data, .cap = v->mv_size};
    uint8_t version = get_u8(&b);
    if (version < 1 || version > SLOT_RECORD_VERSION)
        return MDB_CORRUPTED;
    out->seq = seq;
    uint8_t status = get_u8(&b);
    out->status = status < SLOT_HOLD__COUNT ? (slot_hold_status)status : SLOT_HOLD__COUNT;
    out->qty = (uint16_t)get_be(&b, 2);
    out->nparts = (uint16_t)get_be(&b, 2);
    out->tag = get_be(&b, 8);
    out->created_at_ms = get_be(&b, 8);
    out->expires_at_ms = get_be(&b, 8);
    out->user_len = (uint8_t)get_name(&b, out->user, sizeof(out->user));
    out->request_len = (uint8_t)get_name(&b, out->request, sizeof(out->request));
    if (out->nparts > SLOT_PARTS_MAX || status >= SLOT_HOLD__COUNT)
        return MDB_CORRUPTED;
    for (uint16_t i = 0; i < out->nparts; i++) {
        out->parts[i].shard = (uint16_t)get_be(&b, 2);
        out->parts[i].qty = (uint16_t)get_be(&b, 2);
    }
    out->extensions = out->returned = 0;
    out->replaced_by_seq = out->replaced_by_tag = out->replaces_seq = out->replaces_tag = 0;
    if (version >= 2) {
        out->extensions = (uint16_t)get_be(&b, 2);
        out->returned = (uint16_t)get_be(&b, 2);
        out->replaced_by_seq = get_be(&b, 8);
        out->replaced_by_tag = get_be(&b, 8);
        out->replaces_seq = get_be(&b, 8);
        out->replaces_tag = get_be(&b, 8);
    }
    out->kind = SLOT_HOLD_KIND_PLAIN;
    out->origin = 0;
    if (version >= 3) {
        uint8_t kind = get_u8(&b);
        if (kind > SLOT_HOLD_KIND_WAITLIST)
            return MDB_CORRUPTED;
        out->kind = (slot_hold_kind)kind;
        out->origin = get_be(&b, 8);
    }
    out->nanc = 0;
    out->alloc_len = 0;
    out->alloc[0] = 0;
    if (version >= 4) {
        out->nanc = get_u8(&b);
        if (out->nanc > SLOT_ANCESTORS_MAX)
            return MDB_CORRUPTED;
        for (uint8_t a = 0; a < out->nanc; a++) {
            slot_hold_anc *an = &out->anc[a];
            an->nparts = (uint16_t)get_be(&b, 2);
            if (an->nparts > SLOT_PARTS_MAX)
                return MDB_CORRUPTED;
            for (uint16_t i = 0; i < an->nparts; i++) {
                an->parts[i].shard = (uint16_t)get_be(&b, 2);
                an->parts[i].qty = (uint16_t)get_be(&b, 2);
            }
        }
        out->alloc_len = (uint8_t)get_name(&b, out->alloc, sizeof(out->alloc));
        if (out->alloc_len > SLOT_EVENT_BYTES_MAX)
            return MDB_CORRUPTED;
    }
    out->client_len = 0;
    out->client[0] = 0;
    if (version >= 5) {
        out->client_len = (uint8_t)get_name(&b, out->client, sizeof(out->client));
        if (out->client_len > SLOT_CLIENT_BYTES_MAX)
            return MDB_CORRUPTED;
    }
    return b.bad || b.len != v->mv_size ? MDB_CORRUPTED : 0;
}

int slot_store_hold_get(slot_store *st, MDB_txn *txn, const char *ev, size_t ev_len, uint64_t seq, slot_hold_rec *out)
{
    key k;
    hold_key(&k, ev, ev_len, seq);
    MDB_val kv = key_val(&k), v;
    int rc = mdb_get(txn, st->dbi[DB_HOLDS], &kv, &v);
    if (rc != 0)
        return rc;
    return slot__store_hold_decode(&v, seq, out);
}

/* New records whose keys grow (hold sequence numbers, expiry times) go in with
 * MDB_APPEND, which fills pages instead of splitting them in half: fewer
 * pages to write and fsync per commit. A key that is not the database's last
 * (another event's, an earlier expiry) is refused with MDB_KEYEXIST and
 * goes in the ordinary way. */
static int put_maybe_append(slot_store *st, MDB_txn *txn, int db, MDB_val *k, MDB_val *v, bool append)
{
    if (append) {
        int rc = store_put(st, txn, db, k, v, MDB_APPEND);
        if (rc != MDB_KEYEXIST)
            return rc;
    }
    return store_put(st, txn, db, k, v, 0);
}

static int hold_write(slot_store *st, MDB_txn *txn, const char *ev, size_t ev_len, const slot_hold_rec *rec,
                      bool append)
{
    key k;
    hold_key(&k, ev, ev_len, rec->seq);
    uint8_t raw[HOLD_REC_BYTES_MAX];
    buf b = {.p = raw, .cap = sizeof(raw)};
    if (rec->nparts > SLOT_PARTS_MAX || rec->nanc > SLOT_ANCESTORS_MAX)
        return EINVAL; /* refused, never truncated */
    for (uint8_t a = 0; a < rec->nanc; a++)
        if (rec->anc[a].nparts > SLOT_PARTS_MAX)
            return EINVAL;
    SLOT_ASSERT(rec->alloc_len <= SLOT_EVENT_BYTES_MAX);
    SLOT_ASSERT(rec->user_len <= SLOT_USER_BYTES_MAX);
    SLOT_ASSERT(rec->request_len <= SLOT_REQUEST_BYTES_MAX);
    SLOT_ASSERT((unsigned)rec->status < SLOT_HOLD__COUNT);
    put_u8(&b, SLOT_RECORD_VERSION);
    put_u8(&b, (uint8_t)rec->status);
    put_be(&b, rec->qty, 2);
    put_be(&b, rec->nparts, 2);
    put_be(&b, rec->tag, 8);
    put_be(&b, rec->created_at_ms, 8);
    put_be(&b, rec->expires_at_ms, 8);
    put_name(&b, rec->user, rec->user_len);
    put_name(&b, rec->request, rec->request_len);
    for (uint16_t i = 0; i < rec->nparts; i++) {
        put_be(&b, rec->parts[i].shard, 2);
        put_be(&b, rec->parts[i].qty, 2);
    }
    put_be(&b, rec->extensions, 2);
    put_be(&b, rec->returned, 2);
    put_be(&b, rec->replaced_by_seq, 8);
    put_be(&b, rec->replaced_by_tag, 8);
    put_be(&b, rec->replaces_seq, 8);
    put_be(&b, rec->replaces_tag, 8);
    put_u8(&b, (uint8_t)rec->kind);
    put_be(&b, rec->origin, 8);
    put_u8(&b, rec->nanc);
    for (uint8_t a = 0; a < rec->nanc; a++) {
        put_be(&b, rec->anc[a].nparts, 2);
        for (uint16_t i = 0; i < rec->anc[a].nparts; i++) {
            put_be(&b, rec->anc[a].parts[i].shard, 2);
            put_be(&b, rec->anc[a].parts[i].qty, 2);
        }
    }
    put_name(&b, rec->alloc, rec->alloc_len);
    SLOT_ASSERT(rec->client_len <= SLOT_CLIENT_BYTES_MAX);
    put_name(&b, rec->client, rec->client_len);
    SLOT_ASSERT(!k.b.bad);
    SLOT_ASSERT(!b.bad); /* HOLD_REC_BYTES_MAX fits the largest version-5 record */
    MDB_val kv = key_val(&k), v = {b.len, raw};
    return put_maybe_append(st, txn, DB_HOLDS, &kv, &v, append);
}

int slot_store_hold_put(slot_store *st, MDB_txn *txn, const char *ev, size_t ev_len, const slot_hold_rec *rec)
{
    return hold_write(st, txn, ev, ev_len, rec, false);
}

int slot_store_hold_add(slot_store *st, MDB_txn *txn, const char *ev, size_t ev_len, const slot_hold_rec *rec)
{
    return hold_write(st, txn, ev, ev_len, rec, true);
}

/* ---- expiry index */

static void expiry_key(key *k, uint64_t expires_at_ms, const char *ev, size_t ev_len, uint64_t seq)
{
    key_init(k);
    put_be(&k->b, expires_at_ms, 8);
    put_name(&k->b, ev, ev_len);
    put_be(&k->b, seq, 8);
}

int slot_store_expiry_put(slot_store *st, MDB_txn *txn, uint64_t expires_at_ms, const char *ev, size_t ev_len,
                          uint64_t seq)
{
    key k;
    expiry_key(&k, expires_at_ms, ev, ev_len, seq);
    MDB_val kv = key_val(&k), v = {0, ""};
    SLOT_ASSERT(!k.b.bad);
    return put_maybe_append(st, txn, DB_EXPIRY, &kv, &v, true);
}

int slot_store_expiry_del(slot_store *st, MDB_txn *txn, uint64_t expires_at_ms, const char *ev, size_t ev_len,
                          uint64_t seq)
{
    key k;
    expiry_key(&k, expires_at_ms, ev, ev_len, seq);
    MDB_val kv = key_val(&k);
    return store_del(st, txn, DB_EXPIRY, &kv);
}

/* ---- users (per-user held + confirmed, for max_per_user) */

static void user_key(key *k, const char *ev, size_t ev_len, const char *user, size_t user_len)
{
    SLOT_ASSERT(user_len >= 1);
    SLOT_ASSERT(user_len <= SLOT_USER_BYTES_MAX);
    key_event(k, ev, ev_len);
    put_name(&k->b, user, user_len);
}

int slot_store_user_get(slot_store *st, MDB_txn *txn, const char *ev, size_t ev_len, const char *user, size_t user_len,
                        uint64_t *qty)
{
    key k;
    user_key(&k, ev, ev_len, user, user_len);
    MDB_val kv = key_val(&k), v;
    int rc = mdb_get(txn, st->dbi[DB_USERS], &kv, &v);
    if (rc == MDB_NOTFOUND) {
        *qty = 0;
        return 0;
    }
    if (rc != 0)
        return rc;
    if (v.mv_size != 8)
        return MDB_CORRUPTED;
    *qty = load_be64(v.mv_data);
    return 0;
}

int slot_store_user_put(slot_store *st, MDB_txn *txn, const char *ev, size_t ev_len, const char *user, size_t user_len,
                        uint64_t qty)
{
    key k;
    user_key(&k, ev, ev_len, user, user_len);
    SLOT_ASSERT(!k.b.bad);
    MDB_val kv = key_val(&k);
    if (qty == 0) {
        int rc = store_del(st, txn, DB_USERS, &kv);
        return rc == MDB_NOTFOUND ? 0 : rc;
    }
    uint8_t raw[8];
    buf b = {.p = raw, .cap = 8};
    put_be(&b, qty, 8);
    MDB_val v = {8, raw};
    return store_put(st, txn, DB_USERS, &kv, &v, 0);
}

int slot_store_expiry_has(slot_store *st, MDB_txn *txn, uint64_t expires_at_ms, const char *ev, size_t ev_len,
                          uint64_t seq)
{
    key k;
    expiry_key(&k, expires_at_ms, ev, ev_len, seq);
    MDB_val kv = key_val(&k), v;
    return mdb_get(txn, st->dbi[DB_EXPIRY], &kv, &v);
}
