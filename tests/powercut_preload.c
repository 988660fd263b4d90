/*
 * powercut_preload.c — the disk that forgets (issue 24), an LD_PRELOAD library
 * for tests/test_powercut.c only. Loaded into slotd with
 *
 *   POWERCUT_DIR=<the data folder, a real path>  POWERCUT_JOURNAL=<a file outside it>
 *
 * it passes every call through and appends to the journal what the calls did
 * to the files and names under POWERCUT_DIR: the bytes of every write (write,
 * pwrite, writev, pwritev, at the offset the call writes to; journaled
 * before the call, so a kill never leaves a write the journal misses; the
 * writes in flight at the kill are its last entries), every ftruncate,
 * every flush (fsync, fdatasync, sync_file_range, msync, and each write on a
 * file opened O_DSYNC or O_SYNC, which is its own flush), every create, mkdir,
 * rename, unlink and rmdir, and the fsyncs of folders. A flush is journaled
 * twice: when it starts (it covers the writes that returned before) and when
 * it returned 0 (only then is anything durable); a kill in between leaves the
 * start alone, which flushes nothing. The journal is one O_APPEND file, each
 * entry one write(2) of header and bytes, so it is whole up to a SIGKILL and
 * the test reads it after one (the page cache survives a killed process).
 * At start it lists what the folder holds (EXIST entries: the baseline).
 *
 * Without both variables it records nothing. lock.mdb is not recorded (LMDB
 * rebuilds its lock file after a crash; the test leaves it out of the copy).
 * A shared writable mapping of a recorded file is journaled as MMAPW: its
 * writes cannot be seen here, so the test refuses to judge such a run.
 *
 * Entry: u32 type, u32 bytes of the rest; then per type (host byte order;
 * written and read on one machine):
 *   EXIST   u64 ino, u8 is_dir, path          (relative to POWERCUT_DIR)
 *   WRITE   u64 ino, u64 offset, u64 id, u8 dsync, bytes   (before the call)
 *   SHORT   u64 id, u64 bytes written       (after a call that wrote less)
 *   TRUNC   u64 ino, u64 length
 *   FBEGIN  u64 ino, u64 id    FDONE u64 id  (a file's flush)
 *   DBEGIN  u64 id, path       DDONE u64 id  (a folder's fsync)
 *   CREATE  u64 ino, path      MKDIR path    UNLINK path    RMDIR path
 *   RENAME  u32 bytes of from, from, to
 *   MMAPW   u64 ino
 */
/* Each call and its *64 twin are defined here under their own names. */
#undef _FILE_OFFSET_BITS
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include "powercut_journal.h"

#define FD_CACHE 4096 /* fds below this have their resolution cached */
#define IOV_BATCH 64  /* a writev's iovs journaled per entry (IOV_MAX bounds it too) */

enum fd_state { FD_UNKNOWN = 0, FD_OTHER, FD_FILE, FD_DIR };
typedef struct fd_info {
    _Atomic int state;
    uint64_t ino;
    bool dsync;
    char rel[PATH_MAX]; /* FD_DIR: the folder's path under the root */
} fd_info;

static fd_info fds[FD_CACHE];
static char root[PATH_MAX];
static size_t root_len;
static int jfd = -1;
static _Atomic uint64_t flush_ids, write_ids;

static ssize_t (*r_write)(int, const void *, size_t);
static ssize_t (*r_pwrite)(int, const void *, size_t, off_t);
static ssize_t (*r_pwrite64)(int, const void *, size_t, off_t);
static ssize_t (*r_writev)(int, const struct iovec *, int);
static ssize_t (*r_pwritev)(int, const struct iovec *, int, off_t);
static ssize_t (*r_pwritev64)(int, const struct iovec *, int, off_t);
static int (*r_fsync)(int);
static int (*r_fdatasync)(int);
static int (*r_sync_file_range)(int, off_t, off_t, unsigned);
static int (*r_msync)(void *, size_t, int);
static int (*r_ftruncate)(int, off_t);
static int (*r_ftruncate64)(int, off_t);
static int (*r_close)(int);
static int (*r_open)(const char *, int, ...);
static int (*r_open64)(const char *, int, ...);
static int (*r_openat)(int, const char *, int, ...);
static int (*r_openat64)(int, const char *, int, ...);
static int (*r_open_2)(const char *, int);
static int (*r_open64_2)(const char *, int);
static int (*r_openat_2)(int, const char *, int);
static int (*r_openat64_2)(int, const char *, int);
static int (*r_creat)(const char *, mode_t);
static int (*r_mkdir)(const char *, mode_t);
static int (*r_mkdirat)(int, const char *, mode_t);
static int (*r_rename)(const char *, const char *);
static int (*r_renameat)(int, const char *, int, const char *);
static int (*r_renameat2)(int, const char *, int, const char *, unsigned);
static int (*r_unlink)(const char *);
static int (*r_unlinkat)(int, const char *, int);
static int (*r_rmdir)(const char *);
static void *(*r_mmap)(void *, size_t, int, int, int, off_t);
static void *(*r_mmap64)(void *, size_t, int, int, int, off_t);

#define NEXT(sym) dlsym(RTLD_NEXT, sym)

static pthread_once_t once = PTHREAD_ONCE_INIT;
static void scan(const char *rel);

static void init(void)
{
    r_write = NEXT("write");
    r_pwrite = NEXT("pwrite");
    r_pwrite64 = NEXT("pwrite64");
    r_writev = NEXT("writev");
    r_pwritev = NEXT("pwritev");
    r_pwritev64 = NEXT("pwritev64");
    r_fsync = NEXT("fsync");
    r_fdatasync = NEXT("fdatasync");
    r_sync_file_range = NEXT("sync_file_range");
    r_msync = NEXT("msync");
    r_ftruncate = NEXT("ftruncate");
    r_ftruncate64 = NEXT("ftruncate64");
    r_close = NEXT("close");
    r_open = NEXT("open");
    r_open64 = NEXT("open64");
    r_openat = NEXT("openat");
    r_openat64 = NEXT("openat64");
    r_open_2 = NEXT("__open_2");
    r_open64_2 = NEXT("__open64_2");
    r_openat_2 = NEXT("__openat_2");
    r_openat64_2 = NEXT("__openat64_2");
    r_creat = NEXT("creat");
    r_mkdir = NEXT("mkdir");
    r_mkdirat = NEXT("mkdirat");
    r_rename = NEXT("rename");
    r_renameat = NEXT("renameat");
    r_renameat2 = NEXT("renameat2");
    r_unlink = NEXT("unlink");
    r_unlinkat = NEXT("unlinkat");
    r_rmdir = NEXT("rmdir");
    r_mmap = NEXT("mmap");
    r_mmap64 = NEXT("mmap64");
    const char *d = getenv("POWERCUT_DIR"), *j = getenv("POWERCUT_JOURNAL");
    if (!d || !j || !realpath(d, root))
        return;
    root_len = strlen(root);
    jfd = r_open(j, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600);
    if (jfd < 0)
        return;
    scan("");
}

#define INIT() pthread_once(&once, init)

/* One journal entry: the header, the fixed part, then up to two byte runs
 * and iovs, in one writev. A failed journal write ends the process: a
 * journal with a hole would make the test judge a disk that never was. */
static void jput(uint32_t type, const void *fixed, size_t nfixed, const void *a, size_t na, const struct iovec *iov,
                 int niov, size_t niovbytes)
{
    struct iovec v[IOV_BATCH + 4];
    uint32_t hdr[2] = {type, (uint32_t)(nfixed + na + niovbytes)};
    int k = 0;
    v[k++] = (struct iovec){hdr, sizeof hdr};
    if (nfixed)
        v[k++] = (struct iovec){(void *)fixed, nfixed};
    if (na)
        v[k++] = (struct iovec){(void *)a, na};
    for (int i = 0; i < niov; i++)
        v[k++] = iov[i];
    size_t want = sizeof hdr + nfixed + na + niovbytes;
    ssize_t n = r_writev(jfd, v, k);
    if (n < 0 || (size_t)n != want) {
        static const char msg[] = "powercut_preload: the journal write failed\n";
        r_write(2, msg, sizeof msg - 1);
        _exit(99);
    }
}

/* path's place under the root: its relative part into rel ("" for the root
 * itself); false when it is not under the root or is lock.mdb. */
static bool under_root(const char *abs, char *rel, size_t cap)
{
    if (root_len == 0 || strncmp(abs, root, root_len) != 0 || (abs[root_len] != 0 && abs[root_len] != '/'))
        return false;
    const char *r = abs[root_len] == '/' ? abs + root_len + 1 : abs + root_len;
    if (strcmp(r, "lock.mdb") == 0)
        return false;
    snprintf(rel, cap, "%s", r);
    return true;
}

static void scan(const char *rel)
{
    char abs[2 * PATH_MAX + 2];
    snprintf(abs, sizeof abs, "%s%s%s", root, rel[0] ? "/" : "", rel);
    DIR *d = opendir(abs);
    if (!d)
        return;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0 ||
            (!rel[0] && strcmp(e->d_name, "lock.mdb") == 0))
            continue;
        char r[PATH_MAX + 260], p[2 * PATH_MAX + 262];
        snprintf(r, sizeof r, "%s%s%s", rel, rel[0] ? "/" : "", e->d_name);
        snprintf(p, sizeof p, "%s/%s", root, r);
        struct stat st;
        if (lstat(p, &st) != 0)
            continue;
        struct {
            uint64_t ino;
            uint8_t dir;
        } __attribute__((packed)) f = {st.st_ino, S_ISDIR(st.st_mode)};
        jput(PC_EXIST, &f, sizeof f, r, strlen(r), NULL, 0, 0);
        if (S_ISDIR(st.st_mode))
            scan(r);
    }
    closedir(d);
}

/* What fd is: a recorded file or folder (ino, dsync, rel filled), or other. */
static int fd_resolve(int fd, fd_info *out)
{
    if (fd >= 0 && fd < FD_CACHE && atomic_load(&fds[fd].state) != FD_UNKNOWN) {
        *out = fds[fd];
        return out->state;
    }
    memset(out, 0, sizeof *out);
    out->state = FD_OTHER;
    char link[64], abs[PATH_MAX];
    snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
    ssize_t n = readlink(link, abs, sizeof abs - 1);
    struct stat st;
    if (jfd >= 0 && n > 0) {
        abs[n] = 0;
        if (under_root(abs, out->rel, sizeof out->rel) && fstat(fd, &st) == 0) {
            out->ino = st.st_ino;
            int fl = fcntl(fd, F_GETFL);
            out->dsync = fl >= 0 && (fl & (O_DSYNC | O_SYNC)) != 0;
            out->state = S_ISDIR(st.st_mode) ? FD_DIR : S_ISREG(st.st_mode) ? FD_FILE : FD_OTHER;
        }
    }
    if (fd >= 0 && fd < FD_CACHE) {
        fds[fd].ino = out->ino;
        fds[fd].dsync = out->dsync;
        memcpy(fds[fd].rel, out->rel, sizeof out->rel);
        atomic_store(&fds[fd].state, out->state);
    }
    return out->state;
}

static void fd_forget(int fd)
{
    if (fd >= 0 && fd < FD_CACHE)
        atomic_store(&fds[fd].state, FD_UNKNOWN);
}

/* A path argument (relative to dirfd) as the absolute path of its folder
 * (resolved) and its last name; false when the folder does not resolve. */
static bool abs_of(int dirfd, const char *path, char *out, size_t cap)
{
    char full[PATH_MAX * 2], dir[PATH_MAX * 2], base[PATH_MAX];
    if (path[0] == '/')
        snprintf(full, sizeof full, "%s", path);
    else {
        char at[PATH_MAX];
        if (dirfd == AT_FDCWD) {
            if (!getcwd(at, sizeof at))
                return false;
        } else {
            char link[64];
            snprintf(link, sizeof link, "/proc/self/fd/%d", dirfd);
            ssize_t n = readlink(link, at, sizeof at - 1);
            if (n <= 0)
                return false;
            at[n] = 0;
        }
        snprintf(full, sizeof full, "%s/%s", at, path);
    }
    size_t L = strlen(full);
    while (L > 1 && full[L - 1] == '/')
        full[--L] = 0;
    char *slash = strrchr(full, '/');
    if (!slash)
        return false;
    snprintf(base, sizeof base, "%s", slash + 1);
    if (slash == full)
        snprintf(dir, sizeof dir, "/");
    else
        snprintf(dir, sizeof dir, "%.*s", (int)(slash - full), full);
    char real[PATH_MAX];
    if (!realpath(dir, real))
        return false;
    snprintf(out, cap, "%s/%s", strcmp(real, "/") == 0 ? "" : real, base);
    return true;
}

static bool rel_of(int dirfd, const char *path, char *rel, size_t cap)
{
    char abs[PATH_MAX * 2];
    return jfd >= 0 && path && abs_of(dirfd, path, abs, sizeof abs) && under_root(abs, rel, cap) && rel[0];
}

/* ---- writes */

/*
 * A write is journaled before it is made (its bytes as asked for, one entry
 * per IOV_BATCH iovs), so a kill can come only after its entry: the journal
 * misses no write that reached the file. One whose call then wrote less (or
 * failed) gets a SHORT entry with what it did write. Returns the write's id
 * (0: not a recorded file).
 */
static uint64_t write_intent(int fd, const struct iovec *iov, int niov, off_t at)
{
    fd_info f;
    if (fd_resolve(fd, &f) != FD_FILE)
        return 0;
    if (at < 0) { /* write, writev: at the fd's position, or the end with O_APPEND */
        int fl = fcntl(fd, F_GETFL);
        struct stat st;
        if (fl >= 0 && (fl & O_APPEND) && fstat(fd, &st) == 0)
            at = st.st_size;
        else
            at = lseek(fd, 0, SEEK_CUR);
        if (at < 0)
            return 0;
    }
    uint64_t id = atomic_fetch_add(&write_ids, 1) + 1;
    for (int i = 0; i < niov;) {
        struct iovec v[IOV_BATCH];
        int k = 0;
        size_t bytes = 0;
        for (; i < niov && k < IOV_BATCH; i++) {
            if (iov[i].iov_len == 0)
                continue;
            v[k++] = iov[i];
            bytes += iov[i].iov_len;
        }
        struct {
            uint64_t ino, off, id;
            uint8_t dsync;
        } __attribute__((packed)) w = {f.ino, (uint64_t)at, id, f.dsync};
        jput(PC_WRITE, &w, sizeof w, NULL, 0, v, k, bytes);
        at += (off_t)bytes;
    }
    return id;
}

static ssize_t write_done(uint64_t id, const struct iovec *iov, int niov, ssize_t r)
{
    size_t want = 0;
    for (int i = 0; i < niov; i++)
        want += iov[i].iov_len;
    if (id && (r < 0 || (size_t)r < want)) {
        uint64_t c[2] = {id, r < 0 ? 0 : (uint64_t)r};
        int e = errno;
        jput(PC_SHORT, c, sizeof c, NULL, 0, NULL, 0, 0);
        errno = e;
    }
    return r;
}

ssize_t write(int fd, const void *b, size_t n)
{
    INIT();
    struct iovec v = {(void *)b, n};
    uint64_t id = write_intent(fd, &v, 1, -1);
    return write_done(id, &v, 1, r_write(fd, b, n));
}

ssize_t pwrite(int fd, const void *b, size_t n, off_t off)
{
    INIT();
    struct iovec v = {(void *)b, n};
    uint64_t id = write_intent(fd, &v, 1, off);
    return write_done(id, &v, 1, r_pwrite(fd, b, n, off));
}

ssize_t pwrite64(int fd, const void *b, size_t n, off_t off)
{
    INIT();
    struct iovec v = {(void *)b, n};
    uint64_t id = write_intent(fd, &v, 1, off);
    return write_done(id, &v, 1, r_pwrite64(fd, b, n, off));
}

ssize_t writev(int fd, const struct iovec *iov, int n)
{
    INIT();
    uint64_t id = write_intent(fd, iov, n, -1);
    return write_done(id, iov, n, r_writev(fd, iov, n));
}

ssize_t pwritev(int fd, const struct iovec *iov, int n, off_t off)
{
    INIT();
    uint64_t id = write_intent(fd, iov, n, off);
    return write_done(id, iov, n, r_pwritev(fd, iov, n, off));
}

ssize_t pwritev64(int fd, const struct iovec *iov, int n, off_t off)
{
    INIT();
    uint64_t id = write_intent(fd, iov, n, off);
    return write_done(id, iov, n, r_pwritev64(fd, iov, n, off));
}

static int journal_trunc(int fd, off_t len, int r)
{
    fd_info f;
    if (r == 0 && fd_resolve(fd, &f) == FD_FILE) {
        uint64_t t[2] = {f.ino, (uint64_t)len};
        jput(PC_TRUNC, t, sizeof t, NULL, 0, NULL, 0, 0);
    }
    return r;
}

int ftruncate(int fd, off_t len)
{
    INIT();
    return journal_trunc(fd, len, r_ftruncate(fd, len));
}

int ftruncate64(int fd, off_t len)
{
    INIT();
    return journal_trunc(fd, len, r_ftruncate64(fd, len));
}

/* ---- flushes */

/* The flush's start; returns its id (0: not a recorded fd). */
static uint64_t flush_begin(int fd)
{
    fd_info f;
    int st = fd_resolve(fd, &f);
    if (st != FD_FILE && st != FD_DIR)
        return 0;
    uint64_t id = atomic_fetch_add(&flush_ids, 1) + 1;
    if (st == FD_FILE) {
        uint64_t b[2] = {f.ino, id};
        jput(PC_FBEGIN, b, sizeof b, NULL, 0, NULL, 0, 0);
    } else
        jput(PC_DBEGIN, &id, sizeof id, f.rel, strlen(f.rel), NULL, 0, 0);
    return id;
}

static int flush_done(int fd, uint64_t id, int r)
{
    if (id && r == 0) {
        fd_info f;
        jput(fd_resolve(fd, &f) == FD_DIR ? PC_DDONE : PC_FDONE, &id, sizeof id, NULL, 0, NULL, 0, 0);
    }
    return r;
}

int fsync(int fd)
{
    INIT();
    uint64_t id = flush_begin(fd);
    return flush_done(fd, id, r_fsync(fd));
}

int fdatasync(int fd)
{
    INIT();
    uint64_t id = flush_begin(fd);
    return flush_done(fd, id, r_fdatasync(fd));
}

int sync_file_range(int fd, off_t off, off_t n, unsigned flags)
{
    INIT();
    uint64_t id = flush_begin(fd);
    return flush_done(fd, id, r_sync_file_range(fd, off, n, flags));
}

/* A shared writable mapping's file: msync flushes it (and its writes were not
 * seen: MMAPW already told the test). At most 16 mappings are known. */
static struct {
    _Atomic uintptr_t addr;
    size_t len;
    int fd_dup;
} maps[16];

int msync(void *addr, size_t len, int flags)
{
    INIT();
    int fd = -1;
    for (int i = 0; i < 16; i++)
        if (atomic_load(&maps[i].addr) && (uintptr_t)addr >= maps[i].addr &&
            (uintptr_t)addr + len <= maps[i].addr + maps[i].len)
            fd = maps[i].fd_dup;
    uint64_t id = fd >= 0 ? flush_begin(fd) : 0;
    return flush_done(fd, id, r_msync(addr, len, flags));
}

static void *journal_mmap(void *p, size_t len, int prot, int flags, int fd)
{
    fd_info f;
    if (p != MAP_FAILED && (prot & PROT_WRITE) && (flags & MAP_SHARED) && fd >= 0 && fd_resolve(fd, &f) == FD_FILE) {
        jput(PC_MMAPW, &f.ino, sizeof f.ino, NULL, 0, NULL, 0, 0);
        for (int i = 0; i < 16; i++) {
            uintptr_t z = 0;
            if (atomic_compare_exchange_strong(&maps[i].addr, &z, (uintptr_t)p)) {
                maps[i].len = len;
                maps[i].fd_dup = fcntl(fd, F_DUPFD_CLOEXEC, FD_CACHE);
                break;
            }
        }
    }
    return p;
}

void *mmap(void *a, size_t len, int prot, int flags, int fd, off_t off)
{
    INIT();
    return journal_mmap(r_mmap(a, len, prot, flags, fd, off), len, prot, flags, fd);
}

void *mmap64(void *a, size_t len, int prot, int flags, int fd, off_t off)
{
    INIT();
    return journal_mmap(r_mmap64(a, len, prot, flags, fd, off), len, prot, flags, fd);
}

/* ---- names */

static void journal_path(uint32_t type, const char *rel)
{
    jput(type, NULL, 0, rel, strlen(rel), NULL, 0, 0);
}

/* Before an open: whether it may create a name under the root (rel set). */
static bool may_create(int dirfd, const char *path, int flags, char *rel, size_t cap)
{
    struct stat st;
    return (flags & O_CREAT) && rel_of(dirfd, path, rel, cap) && fstatat(dirfd, path, &st, 0) != 0 && errno == ENOENT;
}

static int opened(int fd, bool created, const char *rel)
{
    if (fd < 0)
        return fd;
    fd_forget(fd);
    struct stat st;
    if (created && fstat(fd, &st) == 0) {
        uint64_t ino = st.st_ino;
        jput(PC_CREATE, &ino, sizeof ino, rel, strlen(rel), NULL, 0, 0);
    }
    return fd;
}

#define MODE_ARG(flags, mode)              \
    mode_t mode = 0;                       \
    if ((flags) & (O_CREAT | O_TMPFILE)) { \
        va_list ap;                        \
        va_start(ap, flags);               \
        mode = (mode_t)va_arg(ap, int);    \
        va_end(ap);                        \
    }

int open(const char *path, int flags, ...)
{
    INIT();
    MODE_ARG(flags, mode);
    char rel[PATH_MAX];
    bool c = may_create(AT_FDCWD, path, flags, rel, sizeof rel);
    return opened(r_open(path, flags, mode), c, rel);
}

int open64(const char *path, int flags, ...)
{
    INIT();
    MODE_ARG(flags, mode);
    char rel[PATH_MAX];
    bool c = may_create(AT_FDCWD, path, flags, rel, sizeof rel);
    return opened(r_open64(path, flags, mode), c, rel);
}

int openat(int dirfd, const char *path, int flags, ...)
{
    INIT();
    MODE_ARG(flags, mode);
    char rel[PATH_MAX];
    bool c = may_create(dirfd, path, flags, rel, sizeof rel);
    return opened(r_openat(dirfd, path, flags, mode), c, rel);
}

int openat64(int dirfd, const char *path, int flags, ...)
{
    INIT();
    MODE_ARG(flags, mode);
    char rel[PATH_MAX];
    bool c = may_create(dirfd, path, flags, rel, sizeof rel);
    return opened(r_openat64(dirfd, path, flags, mode), c, rel);
}

/* glibc's fortified opens (no mode: they never create). */
int __open_2(const char *path, int flags);
int __open64_2(const char *path, int flags);
int __openat_2(int dirfd, const char *path, int flags);
int __openat64_2(int dirfd, const char *path, int flags);

int __open_2(const char *path, int flags)
{
    INIT();
    return opened(r_open_2(path, flags), false, "");
}

int __open64_2(const char *path, int flags)
{
    INIT();
    return opened(r_open64_2(path, flags), false, "");
}

int __openat_2(int dirfd, const char *path, int flags)
{
    INIT();
    return opened(r_openat_2(dirfd, path, flags), false, "");
}

int __openat64_2(int dirfd, const char *path, int flags)
{
    INIT();
    return opened(r_openat64_2(dirfd, path, flags), false, "");
}

int creat(const char *path, mode_t mode)
{
    INIT();
    char rel[PATH_MAX];
    bool c = may_create(AT_FDCWD, path, O_CREAT, rel, sizeof rel);
    return opened(r_creat(path, mode), c, rel);
}

int close(int fd)
{
    INIT();
    fd_forget(fd);
    return r_close(fd);
}

int mkdir(const char *path, mode_t mode)
{
    INIT();
    int r = r_mkdir(path, mode);
    char rel[PATH_MAX];
    if (r == 0 && rel_of(AT_FDCWD, path, rel, sizeof rel))
        journal_path(PC_MKDIR, rel);
    return r;
}

int mkdirat(int dirfd, const char *path, mode_t mode)
{
    INIT();
    int r = r_mkdirat(dirfd, path, mode);
    char rel[PATH_MAX];
    if (r == 0 && rel_of(dirfd, path, rel, sizeof rel))
        journal_path(PC_MKDIR, rel);
    return r;
}

static void journal_rename(int fa, const char *a, int fb, const char *b, bool a_ok, const char *ra, int r)
{
    char rb[PATH_MAX];
    if (r != 0)
        return;
    bool b_ok = rel_of(fb, b, rb, sizeof rb);
    if (a_ok && b_ok) {
        uint32_t n = (uint32_t)strlen(ra);
        jput(PC_RENAME, &n, sizeof n, ra, n, &(struct iovec){rb, strlen(rb)}, 1, strlen(rb));
    } else if (a_ok)
        journal_path(PC_UNLINK, ra);
    (void)fa;
    (void)a;
}

int rename(const char *a, const char *b)
{
    INIT();
    char ra[PATH_MAX];
    bool a_ok = rel_of(AT_FDCWD, a, ra, sizeof ra);
    int r = r_rename(a, b);
    journal_rename(AT_FDCWD, a, AT_FDCWD, b, a_ok, ra, r);
    return r;
}

int renameat(int fa, const char *a, int fb, const char *b)
{
    INIT();
    char ra[PATH_MAX];
    bool a_ok = rel_of(fa, a, ra, sizeof ra);
    int r = r_renameat(fa, a, fb, b);
    journal_rename(fa, a, fb, b, a_ok, ra, r);
    return r;
}

int renameat2(int fa, const char *a, int fb, const char *b, unsigned flags)
{
    INIT();
    char ra[PATH_MAX];
    bool a_ok = rel_of(fa, a, ra, sizeof ra);
    int r = r_renameat2(fa, a, fb, b, flags);
    journal_rename(fa, a, fb, b, a_ok, ra, r);
    return r;
}

int unlink(const char *path)
{
    INIT();
    char rel[PATH_MAX];
    bool ok = rel_of(AT_FDCWD, path, rel, sizeof rel);
    int r = r_unlink(path);
    if (r == 0 && ok)
        journal_path(PC_UNLINK, rel);
    return r;
}

int unlinkat(int dirfd, const char *path, int flags)
{
    INIT();
    char rel[PATH_MAX];
    bool ok = rel_of(dirfd, path, rel, sizeof rel);
    int r = r_unlinkat(dirfd, path, flags);
    if (r == 0 && ok)
        journal_path((flags & AT_REMOVEDIR) ? PC_RMDIR : PC_UNLINK, rel);
    return r;
}

int rmdir(const char *path)
{
    INIT();
    char rel[PATH_MAX];
    bool ok = rel_of(AT_FDCWD, path, rel, sizeof rel);
    int r = r_rmdir(path);
    if (r == 0 && ok)
        journal_path(PC_RMDIR, rel);
    return r;
}
