/*
 * slot/store.h — slotd's LMDB schema: one environment, six named databases
 * (docs/design.md, "Storage", less its "requests" database: the idempotency index
 * is rebuilt in memory from the holds, see src/alloc/idem.h), fixed-width
 * big-endian integers in keys so LMDB's
 * byte order is number and time order, and packed versioned records as values.
 *
 *   db        key                                           value
 *   meta      "schema"                                      magic "SLOTDB01" + u32 version
 *   meta      "seq"                                         u64 seq + u64 epoch (absent: both 0)
 *   events    ev                                            slot_event_rec (packed)
 *   shards    ev + u16 shard                                u64 free units
 *   holds     ev + u64 seq                                  slot_hold_rec (packed)
 *   expiry    u64 expires_at_ms + ev + u64 seq              empty (sweeper's index; held holds only)
 *   users     ev + user                                     u64 held + confirmed + waiting (max_per_user > 0 only)
 *   feed      u64 seq                                       packed feed entry (slot/feed.h)
 *   consumers name(consumer)                                u64 acked + u64 updated_at_ms (slot/feed.h)
 *   waitlist  ev + 'e' + u64 join                           waiting entry: qty, user, request, joined_at, family order
 *   waitlist  ev + 'k' + user + request                     the key's entry: state, join, qty, hold
 *   waitlist  ev + 'f' + u64 node                           u64: a node of the tree counting left entries
 *   waitlist  ev + 'a' + block                              an allocation block: qty, remaining, held, confirmed, max_per_user
 *   waitlist  ev + 'b' + block + user                       u64 the user's units held + confirmed from the block
 *   waitlist  ev + 'r' + u64 join seq                      a room entry (slot_room_entry)
 *   waitlist  ev + 'u' + user                               u64: the user's room entry (join seq)
 *   waitlist  ev + 'g' + u64 admission rank                 u64: the join seq admitted at that rank
 *   waitlist  ev + 'c' + client                             u64 the client key's units held (max_active_per_client)
 *   waitlist  ev + 'd' + client + u64 seq                   empty: a held hold of that client key
 *
 * where a name in a key ("ev", "user") is one length byte then the
 * bytes, so no name is a prefix of another. Integers are big-endian everywhere.
 *
 * Records read from LMDB are decoded into caller structs, so nothing returned
 * here points into the map after the call (LMDB: "an MDB_val from a read is
 * valid only until the txn ends" — we copy instead).
 */
#ifndef SLOT_STORE_H
#define SLOT_STORE_H

#include <lmdb.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "slot/limits.h"
#include "slot/ops.h"
#include "slot/wset.h"

#define SLOT_SCHEMA_MAGIC "SLOTDB01" /* 8 bytes at the start of meta["schema"] */
#define SLOT_SCHEMA_VERSION 1u       /* a newer file is refused at open */
#define SLOT_RECORD_VERSION \
    5u                         /* first byte of every packed record written; versions 1
                                          (before v1.1) and 2 (before carts and waitlists) are still read */
#define SLOT_STORE_DBS 9       /* the nine above (feed, consumers: slot/feed.h) */
#define SLOT_STORE_READERS 256 /* LMDB reader slots: the loop thread and tools use a few */

/* events[ev] */
typedef struct slot_event_rec {
    slot_event_status status;
    uint16_t shards;          /* 1..SLOT_SHARDS_MAX */
    uint16_t max_per_request; /* 1..SLOT_MAX_PER_REQUEST_MAX */
    uint32_t hold_ttl_ms;
    uint64_t capacity, held, confirmed; /* free = capacity - held - confirmed */
    uint64_t max_per_user;              /* 0 = no limit */
    uint64_t next_seq;                  /* next hold sequence number, from 1 */
    uint64_t created_at_ms;
    /* Record version 2 (a version-1 record reads as: no window, 1 extension,
     * max_hold_ms = 2 x hold_ttl_ms, the defaults of docs/protocol.md). */
    uint64_t opens_at_ms, closes_at_ms; /* the sale window; 0 = none */
    uint16_t max_extensions;            /* 0..SLOT_MAX_EXTENSIONS_MAX */
    uint64_t max_hold_ms;               /* expires_at never passes created_at + this */
    /* Record version 3 (an older record reads as: no waitlist, nobody waiting). */
    uint32_t waitlist_max;         /* 0..SLOT_WAITLIST_MAX_MAX entries; 0 = no waitlist */
    uint64_t waiting, waiting_qty; /* entries waiting and the units they want */
    uint64_t next_join;            /* the next join's sequence number, from 1 */
    uint64_t served;               /* entries offered a hold so far (all precede every waiting one) */
    /* Record version 4 (an older record reads as: no parent, no children,
     * nothing allocated): ticket types and allocations (docs/protocol.md,
     * "Ticket types", "Allocations"). held and confirmed above count the
     * units held in this event directly or through any descendant, so
     * free = capacity - held - confirmed - allocated for every event. */
    uint8_t parent_len; /* 0 = a root (no parent); set at create, never changed */
    char parent[SLOT_EVENT_BYTES_MAX + 1];
    uint32_t children;      /* events created with this one as parent */
    uint64_t allocated;     /* unused units of the blocks of this event and its descendants */
    uint64_t fam_next_join; /* a root's: the family's next join order (waitlists of a family share one order) */
    uint64_t fam_waiting;   /* a root's: entries waiting on any event of its family */
    /* Record version 5 (an older record reads as: no client limits):
     * docs/protocol.md, "Client limits". */
    uint64_t max_active_per_client; /* 0 = no limit; else units held by one client key at once */
    uint32_t client_rate;           /* 0 = no limit; else holds per second per client key */
    /* The waiting room (docs/protocol.md, "Admission"; docs/design.md, "Admission"). */
    uint8_t admission;     /* SLOT_ADMISSION_* */
    uint32_t admit_per_s;  /* 1..SLOT_ADMIT_PER_S_MAX */
    uint32_t grant_ttl_ms; /* SLOT_GRANT_TTL_MS_MIN..MAX */
    uint64_t queue_opens_at_ms;
    uint64_t room_joined;   /* entries so far: join seqs 1..room_joined */
    uint64_t room_admitted; /* admissions so far: admission ranks 0..room_admitted-1 */
    uint64_t room_open;     /* open grants: admitted, unused, not expired */
    uint64_t room_exp_k;    /* the first admission rank whose grant may still be open */
    uint64_t admit_milli;   /* the admit clock: tokens x 1000 at admit_at_ms */
    uint64_t admit_at_ms;
    uint8_t drawn;        /* the admit clock started (and, lottery, the draw made) */
    uint64_t lottery_key; /* the draw's random key */
    uint64_t lottery_n;   /* entries in the draw (joined before it) */
    /* Seated events (docs/protocol.md, "Seated events"): one byte after the
     * version-5 layout, written only when set (an unseated event's record is
     * unchanged, and a record without it reads as unseated). */
    uint8_t seated; /* 1: the event's units are the seats of its seat map (src/alloc/seat.c) */
} slot_event_rec;

/* How a hold was made: its request key's kind of use (docs/protocol.md,
 * "Clarifications of v1.1", Keys: one key space per (event, user)). */
typedef enum slot_hold_kind {
    SLOT_HOLD_KIND_PLAIN = 0,    /* hold (or a reacquire) */
    SLOT_HOLD_KIND_CART = 1,     /* an item of hold_many; origin = the cart's fingerprint */
    SLOT_HOLD_KIND_WAITLIST = 2, /* waitlist_join: origin = the entry's join seq (an offer), 0 = held at once */
} slot_hold_kind;

typedef struct slot_hold_part {
    uint16_t shard;
    uint16_t qty;
} slot_hold_part;

/* What a hold took from one ancestor's shards (record version 4): the
 * ancestor is the i-th of the chain (parent first), its parts add up to the
 * hold's qty (held), or to its confirmed part after a partial confirm. */
typedef struct slot_hold_anc {
    uint16_t nparts;
    slot_hold_part parts[SLOT_PARTS_MAX];
} slot_hold_anc;

/* holds[ev, seq] */
typedef struct slot_hold_rec {
    uint64_t seq; /* from the key */
    uint64_t tag; /* random; the hold id is hex(seq) + hex(tag) */
    slot_hold_status status;
    uint16_t qty;
    uint16_t nparts;
    uint8_t user_len, request_len;
    uint64_t created_at_ms, expires_at_ms;
    char user[SLOT_USER_BYTES_MAX + 1];
    char request[SLOT_REQUEST_BYTES_MAX + 1];
    slot_hold_part parts[SLOT_PARTS_MAX];
    /* Record version 2 (a version-1 record reads as zeros). */
    uint16_t extensions;                       /* extends taken */
    uint16_t returned;                         /* units a partial confirm gave back (qty is then the confirmed part) */
    uint64_t replaced_by_seq, replaced_by_tag; /* the hold a reacquire made for this one; seq 0 = none */
    uint64_t replaces_seq, replaces_tag;       /* the hold this one (made by a reacquire) replaced; seq 0 = none */
    /* Record version 3 (an older record reads as a plain hold). */
    slot_hold_kind kind;
    uint64_t origin; /* see slot_hold_kind */
    /* Record version 4 (an older record reads as: no ancestors, no block). */
    uint8_t nanc; /* ancestors the hold took units from: its event's depth, 0..SLOT_ANCESTORS_MAX */
    slot_hold_anc anc[SLOT_ANCESTORS_MAX];
    uint8_t alloc_len; /* 0 = from the free shards; else the block (of the hold's event) it took from */
    char alloc[SLOT_EVENT_BYTES_MAX + 1];
    /* Record version 5 (an older record reads as: no client key). Set only
     * on an event with max_active_per_client: the key's 'c'/'d' rows count
     * the hold while it is held. */
    uint8_t client_len;
    char client[SLOT_CLIENT_BYTES_MAX + 1];
} slot_hold_rec;

typedef struct slot_store slot_store;

typedef struct slot_store_opts {
    const char *dir;        /* data folder; created (0700) when missing */
    bool nosync;            /* true: MDB_NOSYNC (a crash of the machine may lose commits) */
    bool nometasync;        /* true: MDB_NOMETASYNC (the meta page flushed by the next commit; pipelined) */
    uint64_t map_bytes_max; /* bytes; growth stops here (storage_full) */
    bool read_only;         /* open for reading only (tools) */
} slot_store_opts;

/*
 * slot_store_open — open (creating when missing) the environment in opts->dir,
 * check the schema magic and version, and clear stale reader slots left by
 * killed processes (mdb_reader_check). Unless opts->nosync or read_only, the
 * folder is made with slot_store_mkdir and fsynced once the environment is
 * open (data.mdb and lock.mdb may have just been created in it), so a store
 * that opened can acknowledge writes: an error there fails the open.
 *   out: receives the store; owned by the caller, freed by slot_store_close().
 *   errbuf/errlen: a human message on failure ("... was written by a newer
 *   slotd (schema 3); this one reads 1").
 * Returns 0, or a negative errno / positive LMDB error. Thread: any, once.
 */
int slot_store_open(const slot_store_opts *opts, slot_store **out, char *errbuf, size_t errlen);

/*
 * slot_store_fsync_dir — fsync(2) the folder dir itself, so that the files
 * created, renamed or removed in it since its last fsync keep (or lose)
 * their names through a power cut. A file's own fsync or fdatasync flushes
 * its data, not necessarily the entry that names it: ext4 and XFS happen to
 * keep the entry with the file's flush, POSIX and other file systems or
 * mount options do not (SQLite and PostgreSQL fsync the folder for this
 * reason; docs/design.md, "Durability and stopping"). Every folder an
 * acknowledged write depends on is synced this way after such a change and
 * before the write is acknowledged: the data folder, DATA/rlog, the
 * snapshots' folders, a backup's folder.
 *   dir: the folder's path (absolute, or relative to the working folder).
 * Returns 0, or -errno of open(2) (ENOENT, EACCES, ENOTDIR) or fsync(2)
 * (EIO: the entries may be lost). A caller whose write depends on the
 * folder fails that write (or refuses to start) on an error.
 * Thread: any. It blocks for the flush (a journal commit: milliseconds on a
 * disk), so it runs at start, on the commit thread or on a worker, never
 * per request on the event loop.
 */
int slot_store_fsync_dir(const char *dir);

/*
 * slot_store_mkdir — create the folder dir (mode 0700) when it is missing,
 * then fsync its parent (slot_store_fsync_dir), so that the folder's own
 * entry is durable before anything in it is. The parent is synced also when
 * dir existed: a run that crashed between its mkdir and that fsync left an
 * entry that only the page cache may hold.
 *   dir: the folder's path; its parent must exist ("a/b/" is "a/b"; no
 *   slash: the parent is ".").
 * Returns 0, or -errno of mkdir(2) (not EEXIST), -ENAMETOOLONG (longer than
 * PATH_MAX), or an error of slot_store_fsync_dir on the parent.
 * Thread: any; it blocks as slot_store_fsync_dir does.
 */
int slot_store_mkdir(const char *dir);

/* slot_store_close — close the environment (no transaction may be open). NULL is fine. */
void slot_store_close(slot_store *st);

/* slot_store_env — the LMDB environment, for beginning transactions. Borrowed. */
MDB_env *slot_store_env(slot_store *st);

/*
 * slot_store_grow — double the map size (bounded by map_bytes_max), for a
 * writer that got MDB_MAP_FULL and aborted. No write transaction may be open;
 * read transactions of this process must not be active (the server holds its
 * read lock while it grows). Returns 0, or MDB_MAP_FULL at the bound.
 */
int slot_store_grow(slot_store *st);

/* slot_store_map_bytes — current map size in bytes; slot_store_used_bytes — pages in use x page size. */
uint64_t slot_store_map_bytes(slot_store *st);
uint64_t slot_store_used_bytes(slot_store *st);

/* slot_store_sync — flush to disk (after nosync commits). Returns 0 or an LMDB error. */
int slot_store_sync(slot_store *st);

/*
 * Record access. Every function runs on `txn` (read or write as its name
 * says), copies what it reads into caller memory, and returns 0, MDB_NOTFOUND
 * when the record is missing, or another LMDB error (which makes a write txn
 * unusable). Names are (pointer, length) and are not NUL-terminated here.
 */
int slot_store_event_get(slot_store *st, MDB_txn *txn, const char *ev, size_t ev_len, slot_event_rec *out);
int slot_store_event_put(slot_store *st, MDB_txn *txn, const char *ev, size_t ev_len, const slot_event_rec *rec);

int slot_store_shard_get(slot_store *st, MDB_txn *txn, const char *ev, size_t ev_len, uint16_t shard,
                         uint64_t *free_units);
int slot_store_shard_put(slot_store *st, MDB_txn *txn, const char *ev, size_t ev_len, uint16_t shard,
                         uint64_t free_units);
int slot_store_shard_del(slot_store *st, MDB_txn *txn, const char *ev, size_t ev_len, uint16_t shard);

int slot_store_hold_get(slot_store *st, MDB_txn *txn, const char *ev, size_t ev_len, uint64_t seq, slot_hold_rec *out);
int slot_store_hold_put(slot_store *st, MDB_txn *txn, const char *ev, size_t ev_len, const slot_hold_rec *rec);
/* slot_store_hold_add — hold_put for a new hold: appended when its key is the
 * database's last (MDB_APPEND fills pages), else put as usual. */
int slot_store_hold_add(slot_store *st, MDB_txn *txn, const char *ev, size_t ev_len, const slot_hold_rec *rec);

int slot_store_expiry_put(slot_store *st, MDB_txn *txn, uint64_t expires_at_ms, const char *ev, size_t ev_len,
                          uint64_t seq);
/*
 * slot_store_expiry_first — the earliest expires_at (ms since the epoch) of any
 * held hold, into *expires_at_ms. One cursor step (keys sort by time first).
 * Returns 0, MDB_NOTFOUND when no hold is held, or an LMDB error.
 */
int slot_store_expiry_first(slot_store *st, MDB_txn *txn, uint64_t *expires_at_ms);
/* slot_store_expiry_has — 0 when the entry exists, MDB_NOTFOUND when not. */
int slot_store_expiry_has(slot_store *st, MDB_txn *txn, uint64_t expires_at_ms, const char *ev, size_t ev_len,
                          uint64_t seq);
int slot_store_expiry_del(slot_store *st, MDB_txn *txn, uint64_t expires_at_ms, const char *ev, size_t ev_len,
                          uint64_t seq);

/* users[ev, user]: a missing record reads as 0; writing 0 deletes it. */
int slot_store_user_get(slot_store *st, MDB_txn *txn, const char *ev, size_t ev_len, const char *user, size_t user_len,
                        uint64_t *qty);
int slot_store_user_put(slot_store *st, MDB_txn *txn, const char *ev, size_t ev_len, const char *user, size_t user_len,
                        uint64_t qty);

/*
 * Scans. Each calls `fn` once per record in key order and stops early when
 * fn returns non-zero (that value is returned). ctx is passed through.
 */
typedef int (*slot_store_event_fn)(void *ctx, const char *ev, size_t ev_len, const slot_event_rec *rec);
typedef int (*slot_store_hold_fn)(void *ctx, const slot_hold_rec *rec);
typedef int (*slot_store_user_fn)(void *ctx, const char *user, size_t user_len, uint64_t qty);
typedef int (*slot_store_expiry_fn)(void *ctx, uint64_t expires_at_ms, const char *ev, size_t ev_len, uint64_t seq);

/* slot_store_events_scan: the events this set owns (placement: an event
 * whose record is not OWNED is left out; no record is owned). */
int slot_store_events_scan(slot_store *st, MDB_txn *txn, slot_store_event_fn fn, void *ctx);
int slot_store_holds_scan(slot_store *st, MDB_txn *txn, const char *ev, size_t ev_len, slot_store_hold_fn fn,
                          void *ctx);
/*
 * slot_store_holds_scan_from — a bounded piece of slot_store_holds_scan:
 * the holds of ev with seq >= from_seq (seqs start at 1), in seq order, at
 * most holds_max of them (1..UINT32_MAX), fn called on each as above.
 * *next_seq receives the seq of the first hold not visited, or 0 when the
 * event has no hold past the last one visited (the walk is complete); it is
 * set only when 0 is returned. Returns 0, fn's non-zero value, or an LMDB
 * error. Costs one cursor seek and holds_max steps; the idempotency index's
 * loading of a cold event walks its holds this way, a slice per batch
 * (docs/design.md, "Cold events load in slices"). Any thread, on its own txn.
 */
int slot_store_holds_scan_from(slot_store *st, MDB_txn *txn, const char *ev, size_t ev_len, uint64_t from_seq,
                               uint32_t holds_max, slot_store_hold_fn fn, void *ctx, uint64_t *next_seq);
int slot_store_users_scan(slot_store *st, MDB_txn *txn, const char *ev, size_t ev_len, slot_store_user_fn fn,
                          void *ctx);
/* Expiry entries with expires_at_ms <= until_ms, oldest first (all events). */
int slot_store_expiry_scan(slot_store *st, MDB_txn *txn, uint64_t until_ms, slot_store_expiry_fn fn, void *ctx);
/* Count of shards records of an event (check compares it with the event's shard count). */
int slot_store_shards_count(slot_store *st, MDB_txn *txn, const char *ev, size_t ev_len, uint32_t *count);

/*
 * ---- The waitlist database (src/store/store_wait.c; docs/design.md, "Waitlists").
 * Waiting entries by (event, join seq); each key's entry by (event, user,
 * request); and a Fenwick tree over join seqs counting the entries that
 * left, so a position is O(log) reads, never a scan.
 */
typedef struct slot_wait_rec {
    uint64_t join; /* the entry's join seq, 1..2^40-1 */
    slot_wait_state state;
    uint16_t qty;
    uint64_t joined_at_ms;
    uint64_t hold_seq, hold_tag; /* offered: the hold */
    uint64_t order;              /* a waiting entry's place in its family's one join order (the root's
                                    fam_next_join when it joined; 0: joined before v1.2) */
    uint8_t alloc_len;           /* a waiting entry's block (docs/protocol.md, "Allocations"); 0: none */
    char alloc[SLOT_EVENT_BYTES_MAX + 1];
    bool alloc_public; /* not stored: the hand-out found the block removed (hold_serve.c) */
    uint8_t user_len, request_len;
    char user[SLOT_USER_BYTES_MAX + 1];
    char request[SLOT_REQUEST_BYTES_MAX + 1];
} slot_wait_rec;

/* The key's entry (ev, user, request) into out; MDB_NOTFOUND when none. */
int slot_store_wait_key_get(slot_store *st, MDB_txn *txn, const char *ev, size_t ev_len, const char *user,
                            size_t user_len, const char *request, size_t request_len, slot_wait_rec *out);
/* Writes the key's entry (rec's user and request name it). */
int slot_store_wait_key_put(slot_store *st, MDB_txn *txn, const char *ev, size_t ev_len, const slot_wait_rec *rec);
/* The waiting list: rec (state waiting) at its join seq; appended when last. */
int slot_store_wait_put(slot_store *st, MDB_txn *txn, const char *ev, size_t ev_len, const slot_wait_rec *rec);
int slot_store_wait_del(slot_store *st, MDB_txn *txn, const char *ev, size_t ev_len, uint64_t join);
/* The first waiting entry of the event (lowest join seq) into out: one
 * cursor seek. MDB_NOTFOUND when nobody waits. */
int slot_store_wait_first(slot_store *st, MDB_txn *txn, const char *ev, size_t ev_len, slot_wait_rec *out);
/* Waiting entries of the event in join order, from join seq `from` on. */
typedef int (*slot_store_wait_fn)(void *ctx, const slot_wait_rec *rec);
int slot_store_wait_scan(slot_store *st, MDB_txn *txn, const char *ev, size_t ev_len, uint64_t from,
                         slot_store_wait_fn fn, void *ctx);
/* Every key entry of the event (check), in key order. */
int slot_store_wait_keys_scan(slot_store *st, MDB_txn *txn, const char *ev, size_t ev_len, slot_store_wait_fn fn,
                              void *ctx);
/* The tree of left entries: one more left at join seq `join` (<= 40 puts). */
int slot_store_wait_left_add(slot_store *st, MDB_txn *txn, const char *ev, size_t ev_len, uint64_t join);
/* Entries that left with join seq <= upto, into *count (<= 40 reads). */
int slot_store_wait_left_count(slot_store *st, MDB_txn *txn, const char *ev, size_t ev_len, uint64_t upto,
                               uint64_t *count);

/*
 * ---- Allocations (docs/protocol.md, "Allocations"; src/store/store_wait.c):
 * blocks of an event's capacity set aside, in the waitlist database under the
 * event's name ('a' rows), and the users' counts of blocks with a
 * max_per_user ('b' rows). Names are (pointer, length), 1..64 bytes.
 */
typedef struct slot_block_rec {
    uint8_t name_len;
    char name[SLOT_EVENT_BYTES_MAX + 1];
    uint64_t qty;             /* the block's total: units allocated to it, less those deallocated */
    uint64_t remaining;       /* unused units (counted in the event's and its ancestors' allocated) */
    uint64_t held, confirmed; /* units of the block's holds */
    uint64_t max_per_user;    /* 0 = none; else a user's held + confirmed from the block */
    bool closed;              /* deallocated while its holds were active: kept (remaining 0) until they end, so their
                    counts stay right; their units come back to the free shards; allocate opens it again */
} slot_block_rec;

/* The block into out (its name set); MDB_NOTFOUND when the event has none of that name. */
int slot_store_block_get(slot_store *st, MDB_txn *txn, const char *ev, size_t ev_len, const char *name, size_t name_len,
                         slot_block_rec *out);
int slot_store_block_put(slot_store *st, MDB_txn *txn, const char *ev, size_t ev_len, const slot_block_rec *rec);
int slot_store_block_del(slot_store *st, MDB_txn *txn, const char *ev, size_t ev_len, const char *name,
                         size_t name_len);
/* Every block of the event in name order (the key order: length byte first). */
typedef int (*slot_store_block_fn)(void *ctx, const slot_block_rec *rec);
int slot_store_blocks_scan(slot_store *st, MDB_txn *txn, const char *ev, size_t ev_len, slot_store_block_fn fn,
                           void *ctx);
/* The user's units of a block: a missing row reads 0; writing 0 deletes it. */
int slot_store_block_user_get(slot_store *st, MDB_txn *txn, const char *ev, size_t ev_len, const char *block,
                              size_t block_len, const char *user, size_t user_len, uint64_t *qty);
int slot_store_block_user_put(slot_store *st, MDB_txn *txn, const char *ev, size_t ev_len, const char *block,
                              size_t block_len, const char *user, size_t user_len, uint64_t qty);

/*
 * ---- The waiting room (docs/protocol.md, "Admission"; src/store/store_wait.c):
 * entries keyed by join seq (appended), the user's entry, and the admission
 * order (rank -> join seq, for the grants' expiry in admission order).
 */
typedef struct slot_room_entry {
    uint64_t seq;  /* from the key */
    uint64_t tag;  /* random: the ticket is hex(seq) + hex(tag) */
    uint8_t state; /* 0 waiting, 1 admitted (grant unused), 2 used (a hold was made with the grant) */
    uint64_t joined_at_ms, admitted_at_ms, rank, grant;
    uint8_t user_len, request_len;
    char user[SLOT_USER_BYTES_MAX + 1];
    char request[SLOT_REQUEST_BYTES_MAX + 1];
} slot_room_entry;

/* MDB_NOTFOUND when there is none; 0 or an LMDB error. */
int slot_store_room_get(slot_store *st, MDB_txn *txn, const char *ev, size_t ev_len, uint64_t seq,
                        slot_room_entry *out);
int slot_store_room_put(slot_store *st, MDB_txn *txn, const char *ev, size_t ev_len, const slot_room_entry *rec);
/* The user's entry's seq (MDB_NOTFOUND: none), and writing it. */
int slot_store_room_user_get(slot_store *st, MDB_txn *txn, const char *ev, size_t ev_len, const char *user,
                             size_t user_len, uint64_t *seq);
int slot_store_room_user_put(slot_store *st, MDB_txn *txn, const char *ev, size_t ev_len, const char *user,
                             size_t user_len, uint64_t seq);
/* The join seq admitted at rank (MDB_NOTFOUND: none), and writing it. */
int slot_store_room_rank_get(slot_store *st, MDB_txn *txn, const char *ev, size_t ev_len, uint64_t rank, uint64_t *seq);
int slot_store_room_rank_put(slot_store *st, MDB_txn *txn, const char *ev, size_t ev_len, uint64_t rank, uint64_t seq);

/*
 * ---- Client limits (docs/protocol.md, "Client limits"; src/store/store_wait.c):
 * a client key's units held ('c' rows: a missing row reads 0, writing 0
 * deletes it) and its held holds ('d' rows, in seq order), kept only on an
 * event with max_active_per_client. Keys are (pointer, length), 1..128 bytes.
 * 0 or an LMDB error; the caller's transaction.
 */
int slot_store_client_get(slot_store *st, MDB_txn *txn, const char *ev, size_t ev_len, const char *client,
                          size_t client_len, uint64_t *qty);
int slot_store_client_put(slot_store *st, MDB_txn *txn, const char *ev, size_t ev_len, const char *client,
                          size_t client_len, uint64_t qty);
/* add: the hold seq is the client's (held); del: no longer (MDB_NOTFOUND when it was not). */
int slot_store_client_hold_add(slot_store *st, MDB_txn *txn, const char *ev, size_t ev_len, const char *client,
                               size_t client_len, uint64_t seq);
int slot_store_client_hold_del(slot_store *st, MDB_txn *txn, const char *ev, size_t ev_len, const char *client,
                               size_t client_len, uint64_t seq);
/* The client's held holds' seqs, lowest first, at most max (1..SLOT_CLIENT_RETRY_SCAN_MAX)
 * into seqs; *n receives how many. */
int slot_store_client_holds(slot_store *st, MDB_txn *txn, const char *ev, size_t ev_len, const char *client,
                            size_t client_len, uint64_t *seqs, uint32_t max, uint32_t *n);

/*
 * ---- Seat maps (docs/design.md, "Seats"; src/store/store_seat.c): rows in
 * the waitlist database under the event's name, one type byte after it, so
 * write sets, the digest, backups and replication carry them as they carry
 * every row there. The store keeps the bytes; src/alloc/seat.c packs them.
 *   ev + 'M'                    the map's header (sizes, categories and their counts)
 *   ev + 'R' + u32 row          one row: names, numbers, category, free, longest run, a state byte a seat
 *   ev + 'N' + name             a row's index by "SECTION-ROW", or a section's marker by "SECTION"
 *   ev + 'S' + u64 hold seq     the hold's seats, in its order (row, number pairs)
 *   ev + 'P' + u16 shard + u16 block   a shard's row summary: each row's free, longest run,
 *                               category and section hash (src/alloc/seat_sum.c)
 * type: one of "MRNSP"; sub: the bytes after it (0..400). A read copies at
 * most cap bytes into out and sets *len to the value's size (a value over
 * cap is MDB_CORRUPTED: the caller's buffer is sized to the largest row).
 * 0, MDB_NOTFOUND or an LMDB error; the caller's transaction.
 * slot_store_seat_del deletes the key: 0, MDB_NOTFOUND (none) or an LMDB error.
 */
int slot_store_seat_get(slot_store *st, MDB_txn *txn, const char *ev, size_t ev_len, char type, const void *sub,
                        size_t sub_len, void *out, size_t cap, size_t *len);
int slot_store_seat_put(slot_store *st, MDB_txn *txn, const char *ev, size_t ev_len, char type, const void *sub,
                        size_t sub_len, const void *val, size_t val_len);
int slot_store_seat_del(slot_store *st, MDB_txn *txn, const char *ev, size_t ev_len, char type, const void *sub,
                        size_t sub_len);

/*
 * Placement (docs/design.md, "Moving an event"): an event's placement record
 * in this set's store, waitlist database key name(E) + 'p', value u8 version
 * (1), u8 state, u64 gen, name(peer). No record: owned at gen 1 (the event was
 * created here, or the store has no placement). The states (the fence is
 * src/alloc/place.c's):
 *   OWNED        served at gen
 *   STAGED       a move's copy arriving from peer (the source), to be owned at gen
 *   RELINQUISHED given up at gen to peer (the target): writes answered moving
 *   GONE         owned by peer at gen: answered wrong_set
 *   ABORTED      a move to here at gen was undone (peer: the source)
 */
enum { SLOT_PLACE_ABSENT = 0, SLOT_PLACE_OWNED, SLOT_PLACE_STAGED, SLOT_PLACE_RELINQUISHED, SLOT_PLACE_GONE,
       SLOT_PLACE_ABORTED };
typedef struct slot_place_rec {
    uint8_t state; /* SLOT_PLACE_OWNED..ABORTED (ABSENT only as "no record") */
    uint64_t gen;  /* 1..SLOT_PLACE_GEN_MAX */
    uint8_t peer_len;
    char peer[SLOT_CLUSTER_NAME_BYTES_MAX + 1];
} slot_place_rec;

/* slot_store_place_get — E's record into out (zeroed first). 0, MDB_NOTFOUND
 * (no record), MDB_CORRUPTED or an LMDB error. The caller's transaction. */
int slot_store_place_get(slot_store *st, MDB_txn *txn, const char *ev, size_t ev_len, slot_place_rec *out);
/* slot_store_place_put — E's record := rec. 0 or an LMDB error. Write txn. */
int slot_store_place_put(slot_store *st, MDB_txn *txn, const char *ev, size_t ev_len, const slot_place_rec *rec);
/*
 * slot_store_place_export — the next chunk of E's keys (events, shards,
 * holds, users, waitlist, in that order and key order; not the expiry index
 * or E's record) as records u8 db, u16 klen (BE), key, u32 vlen (BE), value
 * into out (cap bytes; *used bytes, *count records). cursor (cursor_len
 * bytes; 0: from the start) is an earlier call's next: u8 db then the last
 * key sent. *next_len := 0 when the walk is done, else next (at least
 * SLOT_PLACE_CURSOR_BYTES) holds the cursor to go on from.
 * 0, EINVAL (a bad cursor), ENOSPC (one record over cap), ENOMEM or an LMDB
 * error. Any transaction.
 */
int slot_store_place_export(slot_store *st, MDB_txn *txn, const char *ev, size_t ev_len, const uint8_t *cursor,
                            size_t cursor_len, uint8_t *out, size_t cap, size_t *used, uint32_t *count,
                            uint8_t *next, size_t *next_len);
/*
 * slot_store_place_apply — puts (and, for vlen 0xFFFFFFFF, deletes) each
 * record of data (export's format) into txn. Every record must be one of E's
 * keys of those databases (never its record): all are checked before the
 * first write, so EINVAL (a malformed record, a foreign key) changes
 * nothing. *count: records applied. 0, EINVAL or an LMDB error. Write txn.
 */
int slot_store_place_apply(slot_store *st, MDB_txn *txn, const char *ev, size_t ev_len, const uint8_t *data,
                           size_t len, uint32_t *count);
/* slot_store_place_any — *any := whether E has a key of the walk here. 0 or an LMDB error. */
int slot_store_place_any(slot_store *st, MDB_txn *txn, const char *ev, size_t ev_len, bool *any);
/* slot_store_place_purge — deletes up to max (<= SLOT_PLACE_PURGE_KEYS) of
 * E's keys of the walk (not its record); *deleted of them, *more when some
 * remain. 0, ENOMEM or an LMDB error. Write txn. */
int slot_store_place_purge(slot_store *st, MDB_txn *txn, const char *ev, size_t ev_len, uint32_t max,
                           uint32_t *deleted, bool *more);

/*
 * ---- Replication groundwork (src/store/store_repl.c; docs/design.md, "Storage",
 * "Write sets, seq and digest"). meta is node-local; the eight other
 * databases (events, shards, holds, expiry, users, feed, consumers,
 * waitlist: db ids 1..8, their index in the store's table) are the
 * replicated, logical state.
 */

/* Errors of slot_store_apply, besides slot/wset.h's, -errno and LMDB's: in the
 * registry of slot/error.h (SLOT_RC_MAP, the STORE range), where slot_strerror
 * finds their messages.
 *   SLOT_STORE_E_SEQ: the record's seq is not the store's seq + 1.
 *   SLOT_STORE_E_DB: an op names meta or a database this store does not have. */

/*
 * slot_store_capture_begin — from now on every put and delete of a data
 * database that succeeds (on any transaction of st: there is one write
 * transaction at a time) is also appended to ws, in the order made, until
 * slot_store_capture_end. The caller clears ws before a batch (the store
 * only appends). A write the set cannot take (SLOT_WSET_E_FULL at ws's
 * payload bound, -ENOMEM) makes that store call fail with that value, and
 * the caller must abort the transaction (nothing of it is kept). Writes to
 * meta (schema, seq) are never captured: seq travels in the record's header.
 *   ws: initialized (slot_wset_init); borrowed until capture_end.
 * No capture may be on already (SLOT_ASSERT). Thread: the one that runs the
 * write transaction. With no capture on, a write costs one branch more.
 */
void slot_store_capture_begin(slot_store *st, slot_wset *ws);
/* slot_store_capture_end — stop capturing (no-op when none is on). */
void slot_store_capture_end(slot_store *st);

/*
 * slot_store_writes — puts and deletes of data databases that succeeded since
 * the store was opened, counted whether or not a capture is on (also those of
 * transactions later aborted): the commit thread compares it before and after
 * a batch to tell whether the batch changed state. Thread: the write
 * transaction's.
 */
uint64_t slot_store_writes(const slot_store *st);

/*
 * slot_store_seq_get — the store's seq (committed write batches that changed
 * state; on a replica the last record applied) and the epoch of the record
 * that set it (0 on a standalone server), as txn sees them. A store without
 * the record (new, or written before seq existed) reads 0 and 0.
 *   epoch may be NULL. Returns 0, MDB_CORRUPTED for a record of the wrong
 *   length, or an LMDB error. Any transaction.
 */
int slot_store_seq_get(slot_store *st, MDB_txn *txn, uint64_t *seq, uint64_t *epoch);

/*
 * slot_store_seq_bump — seq := seq + 1 with the given epoch, in the write
 * transaction txn (not captured); *seq_out gets the new seq (may be NULL).
 * The commit thread calls it once per batch whose writes changed state, so
 * seq commits together with the batch. Returns 0 or an LMDB error.
 */
int slot_store_seq_bump(slot_store *st, MDB_txn *txn, uint64_t epoch, uint64_t *seq_out);

/*
 * slot_store_clear_data — empty every data database (ids 1..SLOT_STORE_DBS-1)
 * and set seq to 0, in the write transaction txn (not captured): a replica
 * whose store holds records its batch log no longer has (a deposed
 * primary's unacknowledged tail) starts over from seq 0 and applies its log
 * again (docs/design.md, "Failover"). meta's other records stay.
 * Returns 0 or an LMDB error (the caller aborts txn). Thread: the write
 * transaction's.
 */
int slot_store_clear_data(slot_store *st, MDB_txn *txn);

/*
 * slot_store_apply — what a replica runs: apply every op of a decoded record
 * (slot_wset_decode accepted it), in order, to txn (a write transaction),
 * then set seq to rec->hdr.seq and its epoch to rec->hdr.epoch, in the same
 * transaction. Puts overwrite; a delete must find its key.
 * Returns 0, or (nothing is to be kept: the caller aborts txn)
 *   SLOT_STORE_E_SEQ  rec->hdr.seq is not the store's seq + 1 (checked first,
 *                     before any write),
 *   SLOT_STORE_E_DB   an op names meta (0) or an id >= SLOT_STORE_DBS,
 *   MDB_NOTFOUND      a delete of a key this store does not have (it has
 *                     diverged from the record's sender),
 *   or an LMDB error (MDB_MAP_FULL: grow and apply again). Ops are checked
 *   as they are applied, so on an error some may have been written to txn.
 * Thread: the write transaction's.
 */
int slot_store_apply(slot_store *st, MDB_txn *txn, const slot_wset_rec *rec);

/*
 * slot_store_digest — SHA-256 of the logical state as txn (any transaction)
 * sees it: a version tag, seq, then every entry of events, shards, holds,
 * expiry, users, feed, consumers and waitlist, in that order and each in
 * key order, as db id u8, key length u32, key, value length u32, value
 * (big-endian lengths). meta is
 * not hashed, but seq is. Two stores with the same entries and seq give the
 * same digest, whatever their page layout or history.
 *   seq: receives the seq hashed. hex: 64 lowercase hex digits and a NUL.
 * Returns 0, an LMDB error, or ENOMEM / EIO when libcrypto fails.
 * O(entries). Any thread.
 */
int slot_store_digest(slot_store *st, MDB_txn *txn, uint64_t *seq, char hex[SLOT_DIGEST_HEX_BYTES + 1]);

#endif
