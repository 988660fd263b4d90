/*
 * tests/powercut_rebuild.c — the disk that forgets, the test's side of it
 * (tests/test_powercut.c says what the test does): the run's randomness and
 * planted fault, the environment that starts slotd under
 * tests/powercut_preload.c, and the rebuild of a folder from its copy when the
 * round began and the library's journal (tests/powercut_journal.h): a replay
 * keeping every write must give back the folder slotd left, then one keeping
 * what a flush covered and a random part of the rest is what a disk could
 * hold after the cut (cut_folder). Declarations: tests/powercut_int.h.
 */
#include <fcntl.h>
#include <inttypes.h>
#include <sys/stat.h>
#include <unistd.h>

#include "harness.h"
#include "powercut_int.h"
#include "powercut_journal.h"

#define PIECE 4096
#define IN_FLIGHT 8 /* the last writes of a journal: those a kill may have cut short */

/* ---- randomness: one seed for the run, printed */

static uint64_t rng_state;
uint64_t rnd(void)
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

void seed_once(void)
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

void sh(const char *fmt, const char *a, const char *b)
{
    char cmd[2 * PATHB + 64];
    int n = snprintf(cmd, sizeof cmd, fmt, a, b);
    ASSERT_GT(n, 0);
    ASSERT_LT((size_t)n, sizeof cmd); /* a cut command would run on another path */
    ASSERT_EQ(system(cmd), 0);
}

/* ---- the planted fault: a case sets it, the rebuild and preload_env read it */

bool planted;                   /* a planted case: the run must show a loss */
const char *plant = "no_flush"; /* the failpoint a planted case arms */

/* ---- the rebuild: a folder a disk could hold after the cut */

struct jent {
    uint32_t type, len;
    const uint8_t *p;
};

struct obj { /* one file (or folder) as the disk holds it */
    uint64_t ino;
    bool dir;
    uint8_t *data;
    size_t size, cap;
};

struct name_ent {
    char rel[PATHB];
    int obj; /* index into objs */
};

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

/* ---- slotd under the library, and its folder after the cut */

void preload_env(bool on, const char *dir, const char *journal)
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

/* The rebuild of one folder dir (its round copy base, its journal): keep-all
 * must equal what slotd left, then a chosen subset replaces dir. Returns
 * NULL or why not. */
const char *cut_folder(const char *dir, const char *base, const char *journal, replay *st)
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
