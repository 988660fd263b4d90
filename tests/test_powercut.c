/*
 * test_powercut.c — power cuts against a disk that forgets (issue 24).
 *
 * slotd runs under tests/powercut_preload.c, which journals every write,
 * flush and name change in its data folder. Clients hold, confirm and
 * release and record what they were told; at a random moment slotd is killed
 * (SIGKILL). The test then builds what a disk could hold after a power cut at
 * that moment: the folder as it was when the round began, then the journal
 * replayed in order, where every write a flush covered (a file's fsync or
 * fdatasync that returned, a write on an O_DSYNC file) is kept and every
 * other write is kept or lost in 4 KiB pieces at random (a disk may write any
 * of the dirty pages, in any order), and every name change a folder fsync
 * covered is kept and of the others a random prefix. slotd is started on
 * that folder and must show every acknowledged hold, confirm and release
 * (held, confirmed, released; one sent but not answered may be either
 * outcome), a clean `check`, and a feed without a gap. Then the next round
 * goes on from that folder.
 *
 * The same replay keeping everything must give back the folder slotd left,
 * byte for byte: the journal saw every change (else the round fails as
 * "the journal does not model the folder").
 *
 * A planted fault proves the test can see: slotd-failpoints with no_flush
 * (LMDB MDB_NOSYNC, the batch log's syncs skipped) must lose an acknowledged
 * write, fail `check` or not start within PLANT_CUTS_MAX cuts.
 *
 * Cases: a standalone server; a replica set of three (every member under the
 * library, one cut of all of them at once, the set restarted on the rebuilt
 * folders; skipped without /usr/bin/etcd). Each with its planted variant.
 *
 * SLOT_POWERCUT_CUTS=N: N cuts per case (default CUTS_CI standalone and
 * SET_CUTS_CI for the set). SLOT_POWERCUT_SEED=S repeats the choices of the
 * rebuilds (the moment of each kill is the scheduler's). SLOT_POWERCUT_KEEP=1
 * keeps the folders of a failed case. The seed is printed first.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cluster_fixture.h"
#include "harness.h"
#include "powercut_journal.h"

TEST_DECLARE(powercut_standalone)
TEST_DECLARE(powercut_standalone_planted_fault_is_caught)
TEST_DECLARE(powercut_pipelined_early_reply_is_caught)
TEST_DECLARE(powercut_set)
TEST_DECLARE(powercut_set_planted_fault_is_caught)
TEST_DECLARE(powercut_set_pipelined_early_reply_is_caught)

TEST_LIST_START
TEST_ENTRY(powercut_standalone)
TEST_ENTRY(powercut_standalone_planted_fault_is_caught)
TEST_ENTRY(powercut_pipelined_early_reply_is_caught)
TEST_ENTRY(powercut_set)
TEST_ENTRY(powercut_set_planted_fault_is_caught)
TEST_ENTRY(powercut_set_pipelined_early_reply_is_caught)
TEST_LIST_END

#define CUTS_CI 6         /* standalone cuts in CI */
#define SET_CUTS_CI 2     /* replica-set cuts in CI */
#define PLANT_CUTS_MAX 8  /* the planted fault must be caught within this many */
#define EARLY_CUTS_MAX 30 /* early_reply loses only what the flush had not reached: more tries */
#define SET_EARLY_CUTS_MAX 60 /* on a set, only what no member had flushed either (caught at cuts 1, 22, 26) */
#define CLIENTS 4
#define RUN_MS_MIN 20
#define RUN_MS_SPAN 280
#define PIECE 4096
#define SAMPLE 256 /* older holds re-read each round (all of them in the last) */
#define CAPACITY 100000000u
#define CALL_MS 5000
#define PATHB 600
#define IN_FLIGHT 8 /* the last writes of a journal: those a kill may have cut short */

/* ---- randomness: one seed for the run, printed */

static uint64_t rng_state;
static uint64_t rnd(void)
{
    uint64_t z = (rng_state += UINT64_C(0x9e3779b97f4a7c15));
    z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
    return z ^ (z >> 31);
}

#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define POWERCUT_UNDER_ASAN 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__)
#define POWERCUT_UNDER_ASAN 1
#endif

static void seed_once(void)
{
#ifdef POWERCUT_UNDER_ASAN
    /* AddressSanitizer's own interceptors of write, pwrite and fsync answer slotd's calls
     * before the preloaded journal does, so the journal misses writes and the folder it
     * rebuilds is not slotd's: the cuts run in the plain build only (.ci/run runs both). */
    SLOT_TEST_SKIP("a sanitizer build: the preloaded journal cannot see writes under AddressSanitizer\n");
#endif
    const char *s = getenv("SLOT_POWERCUT_SEED");
    uint64_t seed = s && *s ? strtoull(s, NULL, 10) : (uint64_t)slot_test_now_ms() ^ ((uint64_t)getpid() << 32);
    rng_state = seed;
    printf("  seed %" PRIu64 " (SLOT_POWERCUT_SEED=%" PRIu64 " repeats the rebuilds' choices)\n", seed, seed);
}

static int cuts_of(int dflt)
{
    const char *s = getenv("SLOT_POWERCUT_CUTS");
    return s && atoi(s) > 0 ? atoi(s) : dflt;
}

static void sh(const char *fmt, const char *a, const char *b)
{
    char cmd[2 * PATHB + 64];
    int n = snprintf(cmd, sizeof cmd, fmt, a, b);
    ASSERT_GT(n, 0);
    ASSERT_LT((size_t)n, sizeof cmd); /* a cut command would run on another path */
    ASSERT_EQ(system(cmd), 0);
}

static bool planted; /* a planted case: the run must show a loss */

/* ---- the rebuild: a folder a disk could hold after the cut */

typedef struct jent {
    uint32_t type, len;
    const uint8_t *p;
} jent;

typedef struct obj { /* one file (or folder) as the disk holds it */
    uint64_t ino;
    bool dir;
    uint8_t *data;
    size_t size, cap;
} obj;

typedef struct name_ent {
    char rel[PATHB];
    int obj; /* index into objs */
} name_ent;

typedef struct replay {
    jent *e;
    size_t n;
    uint8_t *buf;
    obj *objs;
    size_t nobjs;
    name_ent *names;
    size_t nnames;
    uint64_t lost_pieces, kept_pieces, durable_pieces;
} replay;

static uint64_t u64at(const uint8_t *p)
{
    uint64_t v;
    memcpy(&v, p, 8);
    return v;
}

/* The journal, entry by entry; a torn last entry (the kill) is left out. */
static void journal_read(replay *r, const char *path)
{
    FILE *f = fopen(path, "rb");
    ASSERT_NOT_NULL(f);
    fseek(f, 0, SEEK_END);
    long sz = ftell(f);
    fseek(f, 0, SEEK_SET);
    r->buf = malloc((size_t)sz + 1);
    ASSERT_NOT_NULL(r->buf);
    ASSERT_EQ(fread(r->buf, 1, (size_t)sz, f), (size_t)sz);
    fclose(f);
    size_t cap = 1024, at = 0;
    r->e = malloc(cap * sizeof(jent));
    while (at + 8 <= (size_t)sz) {
        uint32_t h[2];
        memcpy(h, r->buf + at, 8);
        if (at + 8 + h[1] > (size_t)sz)
            break;
        if (r->n == cap)
            r->e = realloc(r->e, (cap *= 2) * sizeof(jent));
        r->e[r->n++] = (jent){h[0], h[1], r->buf + at + 8};
        at += 8 + h[1];
    }
}

static int name_find(const replay *r, const char *rel)
{
    for (size_t i = 0; i < r->nnames; i++)
        if (strcmp(r->names[i].rel, rel) == 0)
            return (int)i;
    return -1;
}

static void name_set(replay *r, const char *rel, int o)
{
    int i = name_find(r, rel);
    if (i < 0) {
        r->names = realloc(r->names, (r->nnames + 1) * sizeof(name_ent));
        i = (int)r->nnames++;
        snprintf(r->names[i].rel, PATHB, "%s", rel);
    }
    r->names[i].obj = o;
}

static void name_del(replay *r, const char *rel)
{
    int i = name_find(r, rel);
    if (i >= 0)
        r->names[i] = r->names[--r->nnames];
}

static int obj_new(replay *r, uint64_t ino, bool dir)
{
    r->objs = realloc(r->objs, (r->nobjs + 1) * sizeof(obj));
    r->objs[r->nobjs] = (obj){.ino = ino, .dir = dir};
    return (int)r->nobjs++;
}

/* The newest object with ino (the file a write to ino reaches); -1 none. */
static int obj_of(const replay *r, uint64_t ino)
{
    for (size_t i = r->nobjs; i-- > 0;)
        if (r->objs[i].ino == ino)
            return (int)i;
    return -1;
}

static void obj_put(obj *o, uint64_t off, const uint8_t *b, size_t n)
{
    if (off + n > o->cap) {
        size_t c = o->cap ? o->cap : 65536;
        while (c < off + n)
            c *= 2;
        o->data = realloc(o->data, c);
        ASSERT_NOT_NULL(o->data);
        memset(o->data + o->cap, 0, c - o->cap);
        o->cap = c;
    }
    memcpy(o->data + off, b, n);
    if (off + n > o->size)
        o->size = off + n;
}

static void obj_trunc(obj *o, uint64_t len)
{
    if (len > o->size) {
        uint8_t z = 0;
        if (len > 0)
            obj_put(o, len - 1, &z, 1);
    } else {
        if (o->cap > len)
            memset(o->data + len, 0, o->cap - len);
        o->size = len;
    }
}

static void parent_of(const char *rel, char *out)
{
    snprintf(out, PATHB, "%s", rel);
    char *s = strrchr(out, '/');
    if (s)
        *s = 0;
    else
        out[0] = 0;
}

/* A flush's extent: which file (ino) or folder (rel) and up to which entry. */
typedef struct flushed {
    uint64_t ino;
    char rel[PATHB];
    bool dir;
    size_t before; /* entries before this index are covered */
} flushed;

/* Up to which entry a flush that returned covers ino's writes (0: none). */
static size_t covered(const flushed *f, size_t nf, uint64_t ino, const char *dir_rel)
{
    size_t b = 0;
    for (size_t i = 0; i < nf; i++)
        if ((dir_rel ? f[i].dir && strcmp(f[i].rel, dir_rel) == 0 : !f[i].dir && f[i].ino == ino) && f[i].before > b)
            b = f[i].before;
    return b;
}

/*
 * Builds into out the folder a disk could hold: base (the folder when the
 * round began) plus the journal's entries, each write piece and name change
 * kept when a flush covered it, else (keep_all aside) by chance. Returns NULL
 * or why the journal cannot be judged.
 */
static const char *rebuild(const char *journal, const char *base, const char *out, const char *real, replay *st)
{
    bool keep_all = real != NULL;
    replay r = {0};
    journal_read(&r, journal);
    /* the writes a call made short, and each write's start (by its id) */
    uint64_t *short_id = calloc(r.n + 1, sizeof(uint64_t)), *short_n = calloc(r.n + 1, sizeof(uint64_t));
    size_t nshort = 0;
    for (size_t i = 0; i < r.n; i++)
        if (r.e[i].type == PC_SHORT) {
            short_id[nshort] = u64at(r.e[i].p);
            short_n[nshort++] = u64at(r.e[i].p + 8);
        }
    /* the last IN_FLIGHT writes: the calls a kill may have cut (see real) */
    size_t flight[IN_FLIGHT], nflight = 0;
    for (size_t i = r.n; i-- > 0 && nflight < IN_FLIGHT;)
        if (r.e[i].type == PC_WRITE)
            flight[nflight++] = i;
    /* pass 1: the flushes that returned, by their start */
    size_t *begin_at = calloc(r.n + 2, sizeof(size_t));
    flushed *fl = calloc(r.n + 1, sizeof(flushed));
    size_t nfl = 0;
    for (size_t i = 0; i < r.n; i++) {
        const jent *e = &r.e[i];
        if (e->type == PC_FBEGIN || e->type == PC_DBEGIN) {
            uint64_t id = u64at(e->p + (e->type == PC_FBEGIN ? 8 : 0));
            if (id <= r.n)
                begin_at[id] = i + 1;
        } else if (e->type == PC_FDONE || e->type == PC_DDONE) {
            uint64_t id = u64at(e->p);
            if (id > r.n || !begin_at[id])
                continue;
            const jent *b = &r.e[begin_at[id] - 1];
            flushed *f = &fl[nfl++];
            f->before = begin_at[id] - 1;
            f->dir = b->type == PC_DBEGIN;
            if (f->dir)
                snprintf(f->rel, PATHB, "%.*s", (int)(b->len - 8), (const char *)b->p + 8);
            else
                f->ino = u64at(b->p);
        }
    }
    /* this cut's share of kept pieces, in %; a planted case's cut forgets
     * every unflushed piece half the time (a disk may), to see sooner */
    uint64_t p_keep = planted && rnd() % 2 ? 0 : rnd() % 101;
    size_t pending_names = 0, name_prefix = (size_t)(rnd() % 64);
    const char *bad = NULL;
    char rel[PATHB], rel2[PATHB], dir[PATHB], path[2 * PATHB];
    for (size_t i = 0; i < r.n && !bad; i++) {
        const jent *e = &r.e[i];
        switch (e->type) {
        case PC_EXIST: {
            uint64_t ino = u64at(e->p);
            bool isdir = e->p[8];
            snprintf(rel, PATHB, "%.*s", (int)(e->len - 9), (const char *)e->p + 9);
            int o = obj_new(&r, ino, isdir);
            name_set(&r, rel, o);
            if (!isdir) {
                snprintf(path, sizeof path, "%s/%s", base, rel);
                FILE *f = fopen(path, "rb");
                if (!f) {
                    bad = "a file of the journal's start is not in the round's first copy";
                    break;
                }
                uint8_t chunk[65536];
                size_t n, at = 0;
                while ((n = fread(chunk, 1, sizeof chunk, f)) > 0) {
                    obj_put(&r.objs[o], at, chunk, n);
                    at += n;
                }
                fclose(f);
            }
            break;
        }
        case PC_WRITE: {
            uint64_t ino = u64at(e->p), off = u64at(e->p + 8), wid = u64at(e->p + 16);
            bool dsync = e->p[24];
            const uint8_t *b = e->p + 25;
            size_t n = e->len - 25;
            for (size_t q = 0; q < nshort; q++) { /* the call wrote only its first short_n bytes */
                if (short_id[q] != wid)
                    continue;
                uint64_t start = off; /* its first entry's offset */
                for (size_t b0 = 0; b0 < i; b0++)
                    if (r.e[b0].type == PC_WRITE && u64at(r.e[b0].p + 16) == wid) {
                        start = u64at(r.e[b0].p + 8);
                        break;
                    }
                uint64_t lim = start + short_n[q];
                n = lim <= off ? 0 : lim - off < n ? (size_t)(lim - off) : n;
            }
            int o = obj_of(&r, ino);
            if (o < 0)
                o = obj_new(&r, ino, false); /* a file opened before it was named here: no name */
            bool durable = dsync || covered(fl, nfl, ino, NULL) > i;
            for (size_t at = 0; at < n;) {
                uint64_t pos = off + at, end = (pos / PIECE + 1) * PIECE;
                size_t k = end - pos < n - at ? (size_t)(end - pos) : n - at;
                bool keep = durable || keep_all || rnd() % 100 < p_keep;
                if (keep)
                    obj_put(&r.objs[o], pos, b + at, k);
                if (st)
                    (*(durable ? &st->durable_pieces : keep ? &st->kept_pieces : &st->lost_pieces))++;
                at += k;
            }
            break;
        }
        case PC_TRUNC: {
            int o = obj_of(&r, u64at(e->p));
            if (o >= 0 && (keep_all || covered(fl, nfl, u64at(e->p), NULL) > i || rnd() % 100 < p_keep))
                obj_trunc(&r.objs[o], u64at(e->p + 8));
            break;
        }
        case PC_CREATE:
        case PC_MKDIR:
        case PC_UNLINK:
        case PC_RMDIR:
        case PC_RENAME: {
            size_t off = e->type == PC_CREATE ? 8 : 0;
            int o = -1;
            if (e->type == PC_CREATE)
                o = obj_new(&r, u64at(e->p), false);
            if (e->type == PC_RENAME) {
                uint32_t na;
                memcpy(&na, e->p, 4);
                snprintf(rel, PATHB, "%.*s", (int)na, (const char *)e->p + 4);
                snprintf(rel2, PATHB, "%.*s", (int)(e->len - 4 - na), (const char *)e->p + 4 + na);
                parent_of(rel2, dir);
            } else {
                snprintf(rel, PATHB, "%.*s", (int)(e->len - off), (const char *)e->p + off);
                parent_of(rel, dir);
            }
            bool keep = keep_all || covered(fl, nfl, 0, dir) > i || pending_names++ < name_prefix;
            if (!keep)
                break;
            if (e->type == PC_CREATE)
                name_set(&r, rel, o);
            else if (e->type == PC_MKDIR)
                name_set(&r, rel, obj_new(&r, 0, true));
            else if (e->type == PC_UNLINK || e->type == PC_RMDIR)
                name_del(&r, rel);
            else {
                size_t la = strlen(rel);
                for (size_t k = 0; k < r.nnames; k++) { /* a folder's names move with it */
                    if (strncmp(r.names[k].rel, rel, la) == 0 && r.names[k].rel[la] == '/') {
                        char moved[PATHB];
                        if (snprintf(moved, sizeof moved, "%s%s", rel2, r.names[k].rel + la) < PATHB)
                            memcpy(r.names[k].rel, moved, PATHB);
                    }
                }
                int a = name_find(&r, rel);
                if (a >= 0) {
                    int oa = r.names[a].obj;
                    name_del(&r, rel);
                    name_set(&r, rel2, oa);
                }
            }
            break;
        }
        case PC_MMAPW:
            bad = "slotd mapped a file of its folder writable (its writes cannot be seen)";
            break;
        default:
            break;
        }
    }
    /* keep-all against the folder slotd left: equal but where a call in flight
     * at the kill may not have written yet (the journal has it, the file not) */
    for (size_t k = 0; real && !bad && k < r.nnames; k++) {
        const obj *o = &r.objs[r.names[k].obj];
        if (o->dir)
            continue;
        snprintf(path, sizeof path, "%s/%s", real, r.names[k].rel);
        FILE *f = fopen(path, "rb");
        if (!f) {
            bad = "a file the journal names is not in the folder";
            break;
        }
        uint8_t chunk[65536];
        size_t n, at = 0;
        while (!bad && ((n = fread(chunk, 1, sizeof chunk, f)) > 0 || at < o->size)) {
            for (size_t q = 0; q < (n ? n : 1) && !bad; q++) {
                uint64_t pos = at + q;
                bool same = n ? pos < o->size && o->data[pos] == chunk[q] : false;
                if (same)
                    continue;
                bool maybe = false;
                for (size_t w = 0; w < nflight && !maybe; w++) {
                    const jent *we = &r.e[flight[w]];
                    uint64_t woff = u64at(we->p + 8);
                    maybe = u64at(we->p) == o->ino && pos >= woff && pos < woff + (we->len - 25);
                }
                if (!maybe) {
                    printf("  %s differs at byte %" PRIu64 " (file %s, model %" PRIu64 " bytes)\n", r.names[k].rel, pos,
                           n ? "has it" : "ends", (uint64_t)o->size);
                    bad = "the journal does not model the folder (a replay keeping every write differs from it)";
                }
                if (!n)
                    at = o->size; /* the model is longer: only an in-flight write may explain it */
            }
            at += n;
        }
        fclose(f);
    }
    if (!bad) {
        ASSERT_EQ(mkdir(out, 0700), 0);
        /* folders first (shorter paths), then the files whose folders exist */
        for (int pass = 0; pass < 2; pass++)
            for (size_t len = 1; len < PATHB; len++)
                for (size_t k = 0; k < r.nnames; k++) {
                    const name_ent *ne = &r.names[k];
                    const obj *o = &r.objs[ne->obj];
                    if (strlen(ne->rel) != len || o->dir != (pass == 0))
                        continue;
                    snprintf(path, sizeof path, "%s/%s", out, ne->rel);
                    if (o->dir) {
                        mkdir(path, 0700);
                        continue;
                    }
                    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
                    if (fd < 0)
                        continue; /* its folder's name was lost: so is the file */
                    ASSERT(o->size == 0 || write(fd, o->data, o->size) == (ssize_t)o->size);
                    close(fd);
                }
    }
    for (size_t k = 0; k < r.nobjs; k++)
        free(r.objs[k].data);
    free(r.objs);
    free(r.names);
    free(r.e);
    free(r.buf);
    free(begin_at);
    free(fl);
    free(short_id);
    free(short_n);
    return bad;
}

/* ---- what the clients were told */

enum { ST_NONE, ST_HELD, ST_CONFIRMED, ST_RELEASED };
static const char *const st_name[] = {"none", "held", "confirmed", "released"};

typedef struct hrec {
    char id[40];
    uint8_t state, pending; /* pending: a confirm or release sent, not answered */
    int round;              /* the last round that touched it */
} hrec;

typedef struct buyer {
    pthread_t t;
    int idx, node;
    hrec *r;
    size_t n, cap;
    uint64_t seq, seed;
    uint64_t told; /* answers that changed a hold, this round */
} buyer;

static buyer clients[CLIENTS];
static atomic_bool stop_load;
static int round_no;
static uint64_t feed_head;

static void *client_main(void *arg)
{
    buyer *c = arg;
    line_conn lc;
    if (lc_open(&lc, c->node) != 0)
        return NULL;
    char line[512];
    while (!atomic_load(&stop_load)) {
        c->seed = c->seed * 6364136223846793005u + 1442695040888963407u;
        uint32_t x = (uint32_t)(c->seed >> 33);
        hrec *h = NULL;
        if (c->n > 0 && x % 10 < 4) {
            h = &c->r[(x / 10) % c->n];
            if (h->state != ST_HELD || h->pending)
                h = NULL;
        }
        json_t *j;
        if (h) {
            h->pending = x % 20 < 12 ? ST_CONFIRMED : ST_RELEASED;
            h->round = round_no;
            snprintf(line, sizeof line, "{\"op\":\"%s\",\"event\":\"" EVENT "\",\"hold\":\"%s\",\"user\":\"u%d\"}",
                     h->pending == ST_CONFIRMED ? "confirm" : "release", h->id, c->idx);
            j = lc_call(&lc, line, CALL_MS);
            if (j && jok(j) && strcmp(jstr(j, "status"), h->pending == ST_CONFIRMED ? "confirmed" : "released") == 0) {
                h->state = h->pending;
                h->pending = 0;
                c->told++;
            }
        } else {
            snprintf(line, sizeof line,
                     "{\"op\":\"hold\",\"event\":\"" EVENT "\",\"user\":\"u%d\",\"request\":\"r%d.%" PRIu64
                     "\",\"qty\":1}",
                     c->idx, round_no, c->seq++);
            j = lc_call(&lc, line, CALL_MS);
            if (j && jok(j) && strcmp(jstr(j, "status"), "held") == 0) {
                if (c->n == c->cap) {
                    c->cap = c->cap ? 2 * c->cap : 1024;
                    c->r = realloc(c->r, c->cap * sizeof(hrec));
                }
                hrec *nh = &c->r[c->n];
                memset(nh, 0, sizeof *nh);
                snprintf(nh->id, sizeof nh->id, "%s", jstr(j, "hold"));
                nh->state = ST_HELD;
                nh->round = round_no;
                c->n++;
                c->told++;
            }
        }
        bool gone = j == NULL;
        json_decref(j);
        if (gone)
            break;
    }
    lc_close(&lc);
    return NULL;
}

/* ---- verification against a started node; returns the failures found */

#define VERIFY_BATCH 64

static int verify(int target, bool all, bool quiet)
{
    int bad = 0;
    line_conn lc;
    if (lc_open(&lc, target) != 0)
        return 1;
    /* the holds: those of this round, a sample of older ones (all: every one) */
    size_t cap = 1024, npick = 0;
    hrec **pick = malloc(cap * sizeof(hrec *));
    int *owner = malloc(cap * sizeof(int));
    for (int ci = 0; ci < CLIENTS; ci++) {
        buyer *c = &clients[ci];
        for (size_t i = 0; i < c->n; i++) {
            if (!(all || c->r[i].round == round_no || c->r[i].pending || rnd() % (c->n + 1) < SAMPLE / CLIENTS))
                continue;
            if (npick == cap) {
                cap *= 2;
                pick = realloc(pick, cap * sizeof(hrec *));
                owner = realloc(owner, cap * sizeof(int));
            }
            pick[npick] = &c->r[i];
            owner[npick++] = ci;
        }
    }
    for (size_t at = 0; at < npick; at += VERIFY_BATCH) {
        size_t k = npick - at < VERIFY_BATCH ? npick - at : VERIFY_BATCH;
        char out[VERIFY_BATCH * 160];
        size_t len = 0;
        for (size_t q = 0; q < k; q++)
            len += (size_t)snprintf(out + len, sizeof out - len,
                                    "{\"op\":\"get_hold\",\"event\":\"" EVENT "\",\"hold\":\"%s\",\"user\":\"u%d\"}\n",
                                    pick[at + q]->id, owner[at + q]);
        ASSERT_EQ(write(lc.fd, out, len), (ssize_t)len);
        for (size_t q = 0; q < k; q++) {
            json_t *j = lc_call(&lc, "", CALL_MS);
            hrec *h = pick[at + q];
            const char *s = j ? jstr(j, "status") : "(no answer)";
            int got = ST_NONE;
            for (int t = ST_HELD; t <= ST_RELEASED; t++)
                if (strcmp(s, st_name[t]) == 0)
                    got = t;
            if (got != ST_NONE && (got == h->state || got == h->pending)) {
                h->state = (uint8_t)got; /* a pending outcome is now known */
                h->pending = 0;
            } else {
                if (!quiet || bad < 3) {
                    char *dump = j ? json_dumps(j, JSON_COMPACT) : NULL;
                    printf("  LOST: hold %s of u%d was told %s%s%s, is %s\n", h->id, owner[at + q], st_name[h->state],
                           h->pending ? ", then sent " : "", h->pending ? st_name[h->pending] : "", dump ? dump : s);
                    free(dump);
                }
                bad++;
            }
            json_decref(j);
        }
    }
    uint64_t checked = npick;
    free(pick);
    free(owner);
    /* check */
    json_t *j = lc_call(&lc, "{\"op\":\"check\"}", 60000);
    if (!j || !jok(j) || ju64(j, "violations_total") != 0) {
        printf("  check is not clean: %s\n", j ? json_dumps(j, JSON_COMPACT) : "(no answer)");
        bad++;
    }
    json_decref(j);
    /* the feed: from the last round's head, each seq once, in order, up to the head */
    char line[256];
    if (feed_head)
        snprintf(line, sizeof line, "{\"op\":\"subscribe\",\"consumer\":\"v%d\",\"from\":%" PRIu64 ",\"window\":10000}",
                 round_no, feed_head);
    else
        snprintf(line, sizeof line, "{\"op\":\"subscribe\",\"consumer\":\"v%d\",\"from\":\"start\",\"window\":10000}",
                 round_no);
    j = lc_call(&lc, line, CALL_MS);
    uint64_t from = j && jok(j) ? ju64(j, "from") : 0, head = j && jok(j) ? ju64(j, "head") : 0, want = from;
    if (!j || !jok(j) || (feed_head && from != feed_head) || head < from) {
        printf("  feed: subscribe from %" PRIu64 ": %s\n", feed_head, j ? json_dumps(j, JSON_COMPACT) : "(none)");
        bad++;
        head = 0;
    }
    json_decref(j);
    while (head && want <= head) {
        j = lc_call(&lc, "", CALL_MS);
        if (!j || ju64(j, "feed") != want) {
            printf("  feed gap: wanted %" PRIu64 ", got %s\n", want, j ? json_dumps(j, JSON_COMPACT) : "(none)");
            json_decref(j);
            bad++;
            break;
        }
        json_decref(j);
        if (want % 4096 == 0 && want < head) {
            snprintf(line, sizeof line, "{\"op\":\"ack\",\"consumer\":\"v%d\",\"seq\":%" PRIu64 "}", round_no, want);
            ASSERT(write(lc.fd, line, strlen(line)) > 0 && write(lc.fd, "\n", 1) == 1);
            for (;;) { /* the ack's answer, between pushed entries */
                json_t *a = lc_call(&lc, "", CALL_MS);
                bool was_ack = a && json_object_get(a, "acked");
                bool entry = a && ju64(a, "feed") == want + 1;
                json_decref(a);
                if (was_ack || !a)
                    break;
                if (entry) { /* an entry before the ack's answer */
                    want++;
                    continue;
                }
            }
        }
        want++;
    }
    if (head)
        feed_head = head;
    lc_close(&lc);
    if (!quiet)
        printf("    %" PRIu64 " holds read, feed to %" PRIu64 ", %d failures\n", checked, feed_head, bad);
    return bad;
}

/* ---- one server or one set, under the library */

static char work[PATHB], journal_dir[PATHB];
static const char *plant = "no_flush"; /* the failpoint a planted case arms */

/* A case on a path of its own: SLOT_TEST_DURABILITY set to d, and put back
 * as it was (unset, or the run's own) for the cases after it. */
static char durability_saved[32];
static bool durability_was_set;

static void durability_push(const char *d)
{
    const char *was = getenv("SLOT_TEST_DURABILITY");
    durability_was_set = was != NULL;
    snprintf(durability_saved, sizeof durability_saved, "%s", was ? was : "");
    setenv("SLOT_TEST_DURABILITY", d, 1);
}

static void durability_pop(void)
{
    if (durability_was_set)
        setenv("SLOT_TEST_DURABILITY", durability_saved, 1);
    else
        unsetenv("SLOT_TEST_DURABILITY");
}

static void preload_env(bool on, const char *dir, const char *journal)
{
    if (!on) {
        unsetenv("LD_PRELOAD");
        unsetenv("POWERCUT_DIR");
        unsetenv("POWERCUT_JOURNAL");
        unsetenv("SLOT_FAILPOINTS");
        return;
    }
    const char *lib = getenv("POWERCUT_PRELOAD");
    ASSERT_NOT_NULL(lib);
    setenv("LD_PRELOAD", lib, 1);
    setenv("POWERCUT_DIR", dir, 1);
    setenv("POWERCUT_JOURNAL", journal, 1);
    /* a sanitizer build: libasan comes after the library (it is its dependency) */
    setenv("ASAN_OPTIONS", "verify_asan_link_order=0:detect_leaks=0", 1);
    if (planted)
        setenv("SLOT_FAILPOINTS", plant, 1);
    int fd = open(journal, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    ASSERT(fd >= 0);
    close(fd);
}

static void load_round(int run_ms)
{
    atomic_store(&stop_load, false);
    for (int i = 0; i < CLIENTS; i++)
        ASSERT_EQ(pthread_create(&clients[i].t, NULL, client_main, &clients[i]), 0);
    sleep_ms(run_ms);
}

static void load_end(void)
{
    atomic_store(&stop_load, true);
    for (int i = 0; i < CLIENTS; i++)
        pthread_join(clients[i].t, NULL);
}

/* The rebuild of one folder dir (its round copy base, its journal): keep-all
 * must equal what slotd left, then a chosen subset replaces dir. Returns
 * NULL or why not. */
static const char *cut_folder(const char *dir, const char *base, const char *journal, replay *st)
{
    char all[PATHB + 8], cut[PATHB + 8];
    snprintf(all, sizeof all, "%s.all", dir);
    snprintf(cut, sizeof cut, "%s.cut", dir);
    const char *why = rebuild(journal, base, all, dir, NULL);
    if (why)
        return why;
    char cmd[3 * PATHB];
    snprintf(cmd, sizeof cmd, "diff -rq --exclude=lock.mdb %s %s | grep -q '^Only in'", dir, all);
    if (system(cmd) == 0)
        return "the journal does not model the folder's names (diff -r shows a name only on one side)";
    sh("rm -rf %s %s", all, "");
    why = rebuild(journal, base, cut, NULL, st);
    if (why)
        return why;
    sh("rm -rf %s %s", dir, "");
    ASSERT_EQ(rename(cut, dir), 0);
    return NULL;
}

static void clients_reset(int at)
{
    for (int i = 0; i < CLIENTS; i++) {
        free(clients[i].r);
        memset(&clients[i], 0, sizeof clients[i]);
        clients[i].idx = i;
        clients[i].node = at;
        clients[i].seed = rnd();
    }
    feed_head = 0;
}

static uint64_t told_total(void)
{
    uint64_t n = 0;
    for (int i = 0; i < CLIENTS; i++) {
        n += clients[i].told;
        clients[i].told = 0;
    }
    return n;
}

/* Standalone rounds; returns the failures (planted: stops at the first cut
 * that shows one). */
static int standalone_run(int cuts)
{
    char *base = slot_test_tmpdir();
    char *real = realpath(base, NULL);
    free(base);
    snprintf(work, sizeof work, "%s/data", real);
    snprintf(journal_dir, sizeof journal_dir, "%s", real);
    char copy[PATHB + 8], journal[PATHB + 16];
    snprintf(copy, sizeof copy, "%s/round", real);
    snprintf(journal, sizeof journal, "%s/journal", real);
    const char *dur = getenv("SLOT_TEST_DURABILITY");
    const char *flags[] = {"--durability", dur && *dur ? dur : "sync", NULL};
    printf("  --durability %s\n", flags[1]);
    snprintf(nodes[0].host, sizeof nodes[0].host, "127.0.0.1");
    slot_test_server_start(&nodes[0].srv, work, flags);
    json_t *j = call1(0, "{\"op\":\"create_event\",\"event\":\"" EVENT
                         "\",\"capacity\":100000000,\"shards\":8,\"hold_ttl_ms\":3600000}");
    ASSERT(j && jok(j));
    json_decref(j);
    ASSERT_EQ(slot_test_server_stop(&nodes[0].srv), 0);
    clients_reset(0);
    int bad = 0;
    for (round_no = 1; round_no <= cuts && !(planted && bad); round_no++) {
        sh("rm -rf %s %s", copy, "");
        sh("cp -a %s %s", work, copy);
        preload_env(true, work, journal);
        slot_test_server_start(&nodes[0].srv, work, flags);
        preload_env(false, NULL, NULL);
        int run_ms = RUN_MS_MIN + (int)(rnd() % RUN_MS_SPAN);
        load_round(run_ms);
        slot_test_server_kill9(&nodes[0].srv);
        load_end();
        uint64_t told = told_total();
        replay st = {0};
        const char *why = cut_folder(work, copy, journal, &st);
        if (why)
            T_FAIL_("cut %d: %s", round_no, why);
        printf("  cut %d after %d ms: %" PRIu64 " answers; pieces: %" PRIu64 " flushed, %" PRIu64 " kept, %" PRIu64
               " lost\n",
               round_no, run_ms, told, st.durable_pieces, st.kept_pieces, st.lost_pieces);
        fflush(stdout);
        slot_test_server *s = &nodes[0].srv;
        memset(s, 0, sizeof *s);
        slot_test_start_soft = true; /* a folder slotd refuses is a loss too (the planted fault corrupts LMDB) */
        slot_test_server_start(s, work, flags);
        slot_test_start_soft = false;
        if (s->port == 0) {
            printf("  cut %d: slotd does not start on the rebuilt folder\n", round_no);
            bad++;
            round_no++;
            break;
        }
        bad += verify(0, round_no == cuts, planted);
        ASSERT_EQ(slot_test_server_stop(s), 0);
    }
    const char *keep = getenv("SLOT_POWERCUT_KEEP");
    if (bad && keep && *keep)
        printf("  kept %s\n", real);
    else
        slot_test_rmdir(real);
    free(real);
    return bad;
}

TEST_IMPL(powercut_standalone)
{
    signal(SIGPIPE, SIG_IGN);
    seed_once();
    int cuts = cuts_of(CUTS_CI);
    int bad = standalone_run(cuts);
    if (bad)
        T_FAIL_("%d acknowledged writes (or checks) lost over %d cuts", bad, cuts);
    printf("  %d cuts, every acknowledged hold, confirm and release kept, check clean, no feed gap\n", cuts);
}

TEST_IMPL(powercut_standalone_planted_fault_is_caught)
{
    signal(SIGPIPE, SIG_IGN);
    seed_once();
    const char *fp = getenv("SLOTD_FP");
    ASSERT_NOT_NULL(fp);
    setenv("SLOTD", fp, 1);
    planted = true;
    int bad = standalone_run(PLANT_CUTS_MAX);
    if (!bad)
        T_FAIL_("no_flush (no flush at all) lost nothing in %d cuts: the test cannot see a lost write", PLANT_CUTS_MAX);
    printf("  the planted fault was caught at cut %d (%d failures)\n", round_no - 1, bad);
}

TEST_IMPL(powercut_pipelined_early_reply_is_caught)
{
    signal(SIGPIPE, SIG_IGN);
    seed_once();
    const char *fp = getenv("SLOTD_FP");
    ASSERT_NOT_NULL(fp);
    setenv("SLOTD", fp, 1);
    durability_push("pipelined");
    planted = true;
    plant = "early_reply"; /* answers when the batch ran, before its record is flushed */
    int bad = standalone_run(EARLY_CUTS_MAX);
    durability_pop(); /* the cases after it run on their own path (sync by default) */
    if (!bad)
        T_FAIL_("early_reply lost nothing in %d cuts: the test cannot see answers sent before the flush",
                EARLY_CUTS_MAX);
    printf("  the planted fault was caught at cut %d (%d failures)\n", round_no - 1, bad);
}

/* ---- the replica set */

static void set_stop_all(void)
{
    for (int i = 0; i < NODES; i++)
        if (nodes[i].up) {
            ASSERT_EQ(slot_test_server_stop(&nodes[i].srv), 0);
            nodes[i].up = false;
        }
}

static int set_run(int cuts)
{
    etcd_start(&etcd); /* skips without /usr/bin/etcd */
    char *d = slot_test_tmpdir();
    char *real = realpath(d, NULL);
    free(d);
    snprintf(base_dir, sizeof base_dir, "%s", real);
    free(real);
    snprintf(secret_path, sizeof secret_path, "%s/secret", base_dir);
    FILE *f = fopen(secret_path, "w");
    ASSERT_NOT_NULL(f);
    fputs("a-cluster-secret-of-some-length\n", f);
    fclose(f);
    ASSERT_EQ(chmod(secret_path, 0600), 0);
    for (int i = 0; i < NODES; i++) {
        snprintf(nodes[i].id, sizeof nodes[i].id, "n%d", i + 1);
        snprintf(nodes[i].dir, sizeof nodes[i].dir, "%s/%s", base_dir, nodes[i].id);
        snprintf(nodes[i].host, sizeof nodes[i].host, "127.0.0.1");
        nodes[i].extra[0] = "--durability"; /* after the fixture's nosync: the later one wins */
        const char *dur = getenv("SLOT_TEST_DURABILITY");
        nodes[i].extra[1] = dur && *dur ? dur : "sync";
        nodes[i].extra[2] = NULL;
        node_start(&nodes[i]);
        nodes[i].up = true;
        if (i == 0)
            sleep_ms(300);
    }
    printf("  --durability %s\n", nodes[0].extra[1]);
    int p = find_primary(WAIT_LONG_MS);
    ASSERT_GE(p, 0);
    ASSERT(wait_members(3, WAIT_LONG_MS));
    create_event(p, CAPACITY);
    ASSERT(wait_converged(WAIT_LONG_MS, NULL));
    set_stop_all();
    clients_reset(0);
    int bad = 0;
    for (round_no = 1; round_no <= cuts && !(planted && bad); round_no++) {
        char copy[NODES][PATHB + 8], journal[NODES][PATHB + 16];
        for (int i = 0; i < NODES; i++) {
            snprintf(copy[i], sizeof copy[i], "%s.round", nodes[i].dir);
            snprintf(journal[i], sizeof journal[i], "%s.journal", nodes[i].dir);
            sh("rm -rf %s %s", copy[i], "");
            sh("cp -a %s %s", nodes[i].dir, copy[i]);
            preload_env(true, nodes[i].dir, journal[i]);
            node_start(&nodes[i]);
            nodes[i].up = true;
            preload_env(false, NULL, NULL);
        }
        p = find_primary(WAIT_LONG_MS);
        ASSERT_GE(p, 0);
        ASSERT(wait_members(3, WAIT_LONG_MS));
        for (int i = 0; i < CLIENTS; i++)
            clients[i].node = p;
        int run_ms = RUN_MS_MIN + (int)(rnd() % RUN_MS_SPAN);
        load_round(run_ms);
        for (int i = 0; i < NODES; i++) /* one cut, all at once */
            kill(nodes[i].srv.pid, SIGKILL);
        for (int i = 0; i < NODES; i++) {
            slot_test_server_kill9(&nodes[i].srv);
            nodes[i].up = false;
        }
        load_end();
        uint64_t told = told_total();
        replay st = {0};
        for (int i = 0; i < NODES; i++) {
            const char *why = cut_folder(nodes[i].dir, copy[i], journal[i], &st);
            if (why)
                T_FAIL_("cut %d, %s: %s", round_no, nodes[i].id, why);
        }
        printf("  cut %d after %d ms (primary n%d): %" PRIu64 " answers; pieces: %" PRIu64 " flushed, %" PRIu64
               " kept, %" PRIu64 " lost\n",
               round_no, run_ms, p + 1, told, st.durable_pieces, st.kept_pieces, st.lost_pieces);
        fflush(stdout);
        int refused = 0;
        slot_test_start_soft = true;
        for (int i = 0; i < NODES; i++) {
            node_start(&nodes[i]);
            nodes[i].up = nodes[i].srv.port != 0;
            if (!nodes[i].up)
                printf("  cut %d: %s does not start on its rebuilt folder\n", round_no, nodes[i].id), refused++;
        }
        slot_test_start_soft = false;
        p = refused ? -1 : find_primary(WAIT_LONG_MS);
        if (p < 0 || !wait_converged(WAIT_LONG_MS, NULL)) {
            printf("  cut %d: the set did not come back (primary %d)\n", round_no, p);
            bad++;
            round_no++;
            break;
        }
        bad += verify(p, round_no == cuts, planted);
        set_stop_all();
    }
    for (int i = 0; i < NODES; i++)
        nodes[i].up = nodes[i].up && nodes[i].srv.pid > 0;
    const char *keep = getenv("SLOT_POWERCUT_KEEP");
    if (bad && keep && *keep) {
        printf("  kept %s\n", base_dir);
        base_dir[0] = 0;
    }
    if (base_dir[0])
        set_end();
    else
        etcd_end(&etcd);
    return bad;
}

TEST_IMPL(powercut_set)
{
    signal(SIGPIPE, SIG_IGN);
    seed_once();
    int cuts = cuts_of(SET_CUTS_CI);
    int bad = set_run(cuts);
    if (bad)
        T_FAIL_("%d acknowledged writes (or checks) lost over %d cuts of the set", bad, cuts);
    printf("  %d cuts of every member at once, every acknowledged write kept, check clean, no feed gap\n", cuts);
}

TEST_IMPL(powercut_set_planted_fault_is_caught)
{
    signal(SIGPIPE, SIG_IGN);
    seed_once();
    const char *fp = getenv("SLOTD_FP");
    ASSERT_NOT_NULL(fp);
    setenv("SLOTD", fp, 1);
    planted = true;
    int bad = set_run(PLANT_CUTS_MAX);
    if (!bad)
        T_FAIL_("no_flush lost nothing in %d cuts of the set: the test cannot see a lost write", PLANT_CUTS_MAX);
    printf("  the planted fault was caught at cut %d (%d failures)\n", round_no - 1, bad);
}

/* The pipelined path on a set: early_reply answers a batch when it ran,
 * before its record is flushed here and acked by the members; a cut of all
 * of them at once must then lose an acknowledged write. */
TEST_IMPL(powercut_set_pipelined_early_reply_is_caught)
{
    signal(SIGPIPE, SIG_IGN);
    seed_once();
    const char *fp = getenv("SLOTD_FP");
    ASSERT_NOT_NULL(fp);
    setenv("SLOTD", fp, 1);
    durability_push("pipelined");
    planted = true;
    plant = "early_reply";
    int bad = set_run(SET_EARLY_CUTS_MAX);
    durability_pop();
    if (!bad)
        T_FAIL_("early_reply lost nothing in %d cuts of the set: the test cannot see answers sent before the "
                "flush and the acks",
                SET_EARLY_CUTS_MAX);
    printf("  the planted fault was caught at cut %d (%d failures)\n", round_no - 1, bad);
}
