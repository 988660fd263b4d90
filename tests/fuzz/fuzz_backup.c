/*
 * fuzz_backup.c — libFuzzer target for the backup file reader
 * (slot/backup.h): slot_backup_read_header, slot_backup_verify,
 * slot_backup_install (a replica's snapshot join) and slot_backup_restore,
 * given a damaged or tampered file.
 *
 * At start a small store is made and backed up (the good file). Byte 0 of
 * the input says how the file under test is made from the rest: 0, the
 * bytes as they are; 1, the good file with (offset, byte) patches to its
 * header; 2, the same anywhere in the file; 3, the good file cut at a length
 * or with bytes appended; bit 2, the header's CRC-32 made right after the
 * patches (so that the checks behind it are reached). Whatever it holds,
 * nothing may crash, leak or trip a sanitizer, and:
 *   - every refusal is the file's fault (slot_backup_refused), never taken
 *     for a machine error; verify and install refuse what read_header
 *     refuses, with the same code;
 *   - a header that reads says the file's real size;
 *   - a file that verifies holds the good file's state: its seq, epoch and
 *     digest (its data's SHA-256 matched);
 *   - install into a live store leaves the store's state, as its own write
 *     transaction sees it, unchanged when it refuses (and the transaction
 *     is aborted here either way, after which nothing has changed);
 *   - restore with force into a data folder that holds the good state
 *     leaves the folder's files as they were when it refuses, and the same
 *     data when it accepts (the data is the good one, byte for byte).
 * The data behind a header is only ever the good file's or fails its
 * SHA-256: LMDB, which trusts its pages, never opens fuzzed pages here.
 * Built and run by tests/fuzz/run.sh (max_len 64 KiB: the good file is a
 * few LMDB pages after its header).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <lmdb.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "slot/backup.h"
#include "slot/check.h"
#include "slot/store.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(cond)                                                                        \
    do {                                                                                   \
        if (!(cond)) {                                                                     \
            fprintf(stderr, "fuzz_backup: check failed: %s (line %d)\n", #cond, __LINE__); \
            abort();                                                                       \
        }                                                                                  \
    } while (0)

#define FILE_BYTES_MAX (256u << 10)

static char base[256], file[300], scratch[300], target[300], target_db[320];
static uint8_t *good;
static size_t good_len;
static slot_backup_info good_info;
static slot_store *live;
static char live_digest[SLOT_DIGEST_HEX_BYTES + 1];
static uint8_t *target_bytes;
static size_t target_len;
static char target_names[512];

static uint8_t *read_all(const char *path, size_t *len)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    CHECK(fd >= 0);
    struct stat st;
    CHECK(fstat(fd, &st) == 0);
    uint8_t *b = malloc((size_t)st.st_size + 1);
    CHECK(b != NULL);
    CHECK(read(fd, b, (size_t)st.st_size) == (ssize_t)st.st_size);
    close(fd);
    *len = (size_t)st.st_size;
    return b;
}

static void write_all(const char *path, const uint8_t *p, size_t n)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    CHECK(fd >= 0);
    CHECK(write(fd, p, n) == (ssize_t)n);
    CHECK(close(fd) == 0);
}

/* The names in dir, sorted, as one string. */
static void names_of(const char *dir, char *out, size_t cap)
{
    struct dirent **list;
    int n = scandir(dir, &list, NULL, alphasort);
    CHECK(n >= 0);
    size_t o = 0;
    out[0] = 0;
    for (int i = 0; i < n; i++) {
        o += (size_t)snprintf(out + o, o < cap ? cap - o : 0, "%s/", list[i]->d_name);
        free(list[i]);
    }
    free(list);
    CHECK(o < cap);
}

static void digest_in(slot_store *st, MDB_txn *txn, char hex[SLOT_DIGEST_HEX_BYTES + 1])
{
    uint64_t seq;
    CHECK(slot_store_digest(st, txn, &seq, hex) == 0);
}

static void live_digest_now(char hex[SLOT_DIGEST_HEX_BYTES + 1])
{
    MDB_txn *t;
    CHECK(mdb_txn_begin(slot_store_env(live), NULL, MDB_RDONLY, &t) == 0);
    digest_in(live, t, hex);
    mdb_txn_abort(t);
}

/* A store at dir with one event and seq 1 of epoch, open. */
static slot_store *make_store(const char *dir, const char *event, uint64_t epoch)
{
    slot_store_opts o = {.dir = dir, .nosync = true};
    char err[256];
    slot_store *st = NULL;
    CHECK(slot_store_open(&o, &st, err, sizeof err) == 0);
    MDB_txn *t;
    CHECK(mdb_txn_begin(slot_store_env(st), NULL, 0, &t) == 0);
    slot_event_rec ev = {.status = SLOT_EVENT_ON_SALE,
                         .shards = 1,
                         .max_per_request = 4,
                         .hold_ttl_ms = 60000,
                         .capacity = 100,
                         .next_seq = 1,
                         .created_at_ms = 1700000000000,
                         .max_extensions = 1,
                         .max_hold_ms = 120000};
    CHECK(slot_store_event_put(st, t, event, strlen(event), &ev) == 0);
    CHECK(slot_store_shard_put(st, t, event, strlen(event), 0, 100) == 0);
    CHECK(slot_store_seq_bump(st, t, epoch, NULL) == 0);
    CHECK(mdb_txn_commit(t) == 0);
    return st;
}

/* At exit: the stores closed, the folder removed. */
static void remove_all(void)
{
    slot_store_close(live);
    live = NULL;
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", base);
    if (system(cmd) != 0)
        fprintf(stderr, "fuzz_backup: could not remove %s\n", base);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    struct stat st;
    const char *tmp = stat("/dev/shm", &st) == 0 && S_ISDIR(st.st_mode) ? "/dev/shm" : getenv("TMPDIR");
    snprintf(base, sizeof base, "%s/slot-fuzz-backup-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    CHECK(mkdtemp(base) != NULL);
    snprintf(file, sizeof file, "%s/in.bak", base);
    snprintf(scratch, sizeof scratch, "%s/scratch", base);
    snprintf(target, sizeof target, "%s/target", base);
    snprintf(target_db, sizeof target_db, "%s/data.mdb", target);
    CHECK(mkdir(scratch, 0700) == 0);
    char dir[320], good_path[320], err[1024];
    snprintf(dir, sizeof dir, "%s/src", base);
    snprintf(good_path, sizeof good_path, "%s/good.bak", base);
    slot_store *src = make_store(dir, "sale-1", 3);
    CHECK(slot_store_backup(src, good_path, NULL, &good_info, err, sizeof err) == 0);
    slot_store_close(src);
    good = read_all(good_path, &good_len);
    CHECK(good_len == good_info.file_bytes && good_len <= FILE_BYTES_MAX);
    snprintf(dir, sizeof dir, "%s/live", base);
    live = make_store(dir, "other", 5);
    live_digest_now(live_digest);
    CHECK(slot_backup_restore(good_path, target, SLOT_BACKUP_RESTORE_FORCE, NULL, err, sizeof err) == 0);
    target_bytes = read_all(target_db, &target_len);
    names_of(target, target_names, sizeof target_names);
    atexit(remove_all);
    return 0;
}

static void fix_header_crc(uint8_t *p, size_t n)
{
    if (n < SLOT_BACKUP_HEADER_BYTES)
        return;
    uint32_t c = (uint32_t)crc32(crc32(0L, Z_NULL, 0), p, 124);
    p[124] = (uint8_t)(c >> 24); /* big-endian, as the header's other integers */
    p[125] = (uint8_t)(c >> 16);
    p[126] = (uint8_t)(c >> 8);
    p[127] = (uint8_t)c;
}

/* The file under test, from the input (see the top). */
static uint8_t *make_file(const uint8_t *data, size_t size, size_t *len)
{
    uint8_t mode = data[0];
    const uint8_t *p = data + 1;
    size_t n = size - 1;
    uint8_t *f = malloc(good_len + n + 1);
    CHECK(f != NULL);
    switch (mode & 3) {
    case 0:
        memcpy(f, p, n);
        *len = n;
        break;
    case 1:
    case 2:
        memcpy(f, good, good_len);
        *len = good_len;
        if ((mode & 3) == 1) { /* (offset in the header, byte) pairs */
            for (size_t i = 0; i + 1 < n; i += 2)
                f[p[i] % SLOT_BACKUP_HEADER_BYTES] = p[i + 1];
        } else { /* (offset low, offset high, byte) triples */
            for (size_t i = 0; i + 2 < n; i += 3)
                f[((size_t)p[i] | (size_t)p[i + 1] << 8) % good_len] = p[i + 2];
        }
        break;
    default: {
        size_t cut = n >= 2 ? ((size_t)p[0] | (size_t)p[1] << 8) : good_len;
        if (cut > good_len)
            cut = good_len;
        memcpy(f, good, cut);
        size_t extra = n > 2 ? n - 2 : 0;
        memcpy(f + cut, p + 2, extra);
        *len = cut + extra;
        break;
    }
    }
    if (mode & 4)
        fix_header_crc(f, *len);
    return f;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size == 0)
        return 0;
    size_t len;
    uint8_t *f = make_file(data, size, &len);
    write_all(file, f, len);
    char err[1024];

    slot_backup_info hi;
    int h = slot_backup_read_header(file, &hi, err, sizeof err);
    if (h == 0)
        CHECK(hi.file_bytes == len && hi.data_bytes == len - SLOT_BACKUP_HEADER_BYTES);
    else
        CHECK(slot_backup_refused(h));

    slot_backup_info vi;
    slot_res check;
    memset(&check, 0, sizeof check);
    int v = slot_backup_verify(file, scratch, &vi, slot_check_backup_copy, &check, err, sizeof err);
    slot_res_clear(&check);
    if (v != 0) {
        if (!slot_backup_refused(v)) {
            fprintf(stderr, "fuzz_backup: verify failed for the machine's sake (%d %s): %s\n", v, slot_strerror(v),
                    err);
            abort();
        }
        if (h != 0)
            CHECK(v == h);
    } else {
        CHECK(h == 0);
        CHECK(vi.seq == good_info.seq && vi.epoch == good_info.epoch && strcmp(vi.digest, good_info.digest) == 0);
    }

    /* install into the live store: refused means its transaction is untouched */
    MDB_txn *t;
    CHECK(mdb_txn_begin(slot_store_env(live), NULL, 0, &t) == 0);
    int in = slot_backup_install(live, t, file, scratch, NULL, err, sizeof err);
    if (in != 0) {
        CHECK(slot_backup_refused(in));
        CHECK(v != 0 && in == v);
        char now[SLOT_DIGEST_HEX_BYTES + 1];
        digest_in(live, t, now);
        CHECK(strcmp(now, live_digest) == 0);
    } else {
        CHECK(v == 0);
    }
    mdb_txn_abort(t);
    char after[SLOT_DIGEST_HEX_BYTES + 1];
    live_digest_now(after);
    CHECK(strcmp(after, live_digest) == 0);

    /* restore into a folder holding the good state: its files stay as they are */
    int r = slot_backup_restore(file, target, SLOT_BACKUP_RESTORE_FORCE, NULL, err, sizeof err);
    if (r != 0) {
        CHECK(slot_backup_refused(r));
        CHECK(v != 0);
    } else {
        CHECK(v == 0);
    }
    size_t tl;
    uint8_t *tb = read_all(target_db, &tl);
    CHECK(tl == target_len && memcmp(tb, target_bytes, tl) == 0);
    free(tb);
    char names[512];
    names_of(target, names, sizeof names);
    CHECK(strcmp(names, target_names) == 0);
    free(f);
    return 0;
}
