/*
 * store_backup_file.c — the backup file's format and its bytes
 * (store_int.h, slot/backup.h; docs/design.md, "Backups"): the
 * 128-byte header (magic, version, seq, epoch, data length, time, digest,
 * the data's SHA-256, a CRC-32), packed and read back with every check;
 * streaming the data through SHA-256; the scratch files a copy is written
 * to and extracted into. Taking a backup, verifying, installing and
 * restoring one are in store_backup.c.
 */
#include "slot/backup.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "store_int.h"

#define HDR_CRC_AT 124 /* the CRC-32 covers bytes 0..123 */
_Static_assert(SLOT_BACKUP_HEADER_BYTES == HDR_CRC_AT + 4, "the CRC-32 ends the header");
_Static_assert(SLOT_DIGEST_HEX_BYTES == 2 * SHA_BYTES, "the digest is a SHA-256");

/* ---- bytes */

int slot__backup_write_all(int fd, const void *p, size_t n)
{
    const uint8_t *b = p;
    while (n > 0) {
        ssize_t w = write(fd, b, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w < 0)
            return -errno;
        b += w;
        n -= (size_t)w;
    }
    return 0;
}

/* Reads exactly n bytes; SLOT_BACKUP_E_SHORT when the file ends first, or -errno. */
int slot__backup_read_all(int fd, void *p, size_t n)
{
    uint8_t *b = p;
    while (n > 0) {
        ssize_t r = read(fd, b, n);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0)
            return -errno;
        if (r == 0)
            return SLOT_BACKUP_E_SHORT;
        b += r;
        n -= (size_t)r;
    }
    return 0;
}

void slot__backup_hex_of(const uint8_t *raw, size_t n, char *hex)
{
    static const char digits[] = "0123456789abcdef";
    for (size_t i = 0; i < n; i++) {
        hex[2 * i] = digits[raw[i] >> 4];
        hex[2 * i + 1] = digits[raw[i] & 15];
    }
    hex[2 * n] = 0;
}

static int nibble(char c)
{
    return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

/* 64 lowercase hex digits into 32 bytes; false when it is not that. */
static bool raw_of(const char *hex, uint8_t *raw)
{
    for (size_t i = 0; i < SHA_BYTES; i++) {
        int hi = nibble(hex[2 * i]), lo = hi < 0 ? -1 : nibble(hex[2 * i + 1]);
        if (hi < 0 || lo < 0)
            return false;
        raw[i] = (uint8_t)(hi << 4 | lo);
    }
    return hex[2 * SHA_BYTES] == 0;
}

/*
 * Copies n bytes from in (at its offset) to out (-1: nowhere), hashing them
 * into sha. A buffer of SLOT_BACKUP_IO_BYTES from the heap. 0, SLOT_BACKUP_E_SHORT
 * (in ended early), -ENOMEM, -errno, or EIO (libcrypto failed).
 */
int slot__backup_stream(int in, int out, uint64_t n, uint8_t sha[SHA_BYTES])
{
    uint8_t *b = malloc(SLOT_BACKUP_IO_BYTES);
    EVP_MD_CTX *md = EVP_MD_CTX_new();
    int rc = b && md ? 0 : -ENOMEM;
    if (rc == 0 && !EVP_DigestInit_ex(md, EVP_sha256(), NULL))
        rc = EIO;
    while (rc == 0 && n > 0) {
        size_t chunk = n < SLOT_BACKUP_IO_BYTES ? (size_t)n : SLOT_BACKUP_IO_BYTES;
        rc = slot__backup_read_all(in, b, chunk);
        if (rc == 0 && !EVP_DigestUpdate(md, b, chunk))
            rc = EIO;
        if (rc == 0 && out >= 0)
            rc = slot__backup_write_all(out, b, chunk);
        n -= chunk;
    }
    unsigned int len = 0;
    if (rc == 0 && (!EVP_DigestFinal_ex(md, sha, &len) || len != SHA_BYTES))
        rc = EIO;
    EVP_MD_CTX_free(md);
    free(b);
    return rc;
}

/* ---- the header */

static void put32(uint8_t *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (uint8_t)(v >> (24 - 8 * i));
}

static void put64(uint8_t *p, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        p[i] = (uint8_t)(v >> (56 - 8 * i));
}

static uint32_t get32(const uint8_t *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static uint32_t crc_of(const uint8_t *p, size_t n)
{
    return (uint32_t)crc32(crc32(0L, Z_NULL, 0), p, (uInt)n);
}

void slot__backup_header_pack(const backup_header *h, uint8_t raw[SLOT_BACKUP_HEADER_BYTES])
{
    memset(raw, 0, SLOT_BACKUP_HEADER_BYTES);
    memcpy(raw, SLOT_BACKUP_MAGIC, 8);
    put32(raw + 8, SLOT_BACKUP_VERSION);
    put32(raw + 12, SLOT_BACKUP_HEADER_BYTES);
    put64(raw + 16, h->info.seq);
    put64(raw + 24, h->info.epoch);
    put64(raw + 32, h->info.data_bytes);
    put64(raw + 40, h->info.created_at_ms);
    bool ok = raw_of(h->info.digest, raw + 48);
    SLOT_ASSERT(ok); /* slot_store_digest wrote it */
    memcpy(raw + 80, h->data_sha, SHA_BYTES);
    put32(raw + HDR_CRC_AT, crc_of(raw, HDR_CRC_AT));
}

/*
 * Opens file and reads its header into h, checking it (magic, version,
 * CRC-32, fields, the file's length). *fd_out is left at the data's first
 * byte (the caller closes it); -1 on an error.
 */
int slot__backup_header_open(const char *file, int *fd_out, backup_header *h, char *err, size_t errlen)
{
    *fd_out = -1;
    memset(h, 0, sizeof(*h));
    int fd = open(file, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        int e = errno;
        snprintf(err, errlen, "cannot open %s: %s", file, strerror(e));
        return -e;
    }
    struct stat sb;
    uint8_t raw[SLOT_BACKUP_HEADER_BYTES];
    int rc = fstat(fd, &sb) != 0 ? -errno : 0;
    if (rc == 0 && (uint64_t)sb.st_size < SLOT_BACKUP_HEADER_BYTES) {
        rc = (uint64_t)sb.st_size >= 8 && slot__backup_read_all(fd, raw, 8) == 0 &&
                     memcmp(raw, SLOT_BACKUP_MAGIC, 8) == 0
                 ? SLOT_BACKUP_E_LENGTH
                 : SLOT_BACKUP_E_MAGIC;
        snprintf(err, errlen, "%s: %s (%jd bytes, shorter than a header)", file, slot_strerror(rc),
                 (intmax_t)sb.st_size);
    } else if (rc == 0 && (rc = slot__backup_read_all(fd, raw, sizeof raw)) != 0) {
        snprintf(err, errlen, "cannot read %s: %s", file, slot_strerror(rc));
    } else if (rc == 0 && memcmp(raw, SLOT_BACKUP_MAGIC, 8) != 0) {
        rc = SLOT_BACKUP_E_MAGIC;
        snprintf(err, errlen, "%s: %s (bad magic)", file, slot_strerror(rc));
    } else if (rc == 0 && get32(raw + 8) > SLOT_BACKUP_VERSION) {
        rc = SLOT_BACKUP_E_VERSION;
        snprintf(err, errlen, "%s: written by a newer slotd (backup format %" PRIu32 "); this one reads up to %u", file,
                 get32(raw + 8), SLOT_BACKUP_VERSION);
    } else if (rc == 0 && get32(raw + HDR_CRC_AT) != crc_of(raw, HDR_CRC_AT)) {
        rc = SLOT_BACKUP_E_HEADER;
        snprintf(err, errlen, "%s: %s (its CRC-32 does not match)", file, slot_strerror(rc));
    } else if (rc == 0 && (get32(raw + 8) == 0 || get32(raw + 12) != SLOT_BACKUP_HEADER_BYTES)) {
        rc = SLOT_BACKUP_E_HEADER;
        snprintf(err, errlen, "%s: %s (version %" PRIu32 ", header bytes %" PRIu32 ")", file, slot_strerror(rc),
                 get32(raw + 8), get32(raw + 12));
    } else if (rc != 0) {
        snprintf(err, errlen, "cannot stat %s: %s", file, strerror(-rc));
    }
    if (rc == 0) {
        h->info.seq = load_be64(raw + 16);
        h->info.epoch = load_be64(raw + 24);
        h->info.data_bytes = load_be64(raw + 32);
        h->info.created_at_ms = load_be64(raw + 40);
        slot__backup_hex_of(raw + 48, SHA_BYTES, h->info.digest);
        memcpy(h->data_sha, raw + 80, SHA_BYTES);
        h->info.file_bytes = (uint64_t)sb.st_size;
        if (h->info.data_bytes != (uint64_t)sb.st_size - SLOT_BACKUP_HEADER_BYTES) {
            rc = SLOT_BACKUP_E_LENGTH;
            snprintf(err, errlen, "%s: %s (%jd bytes; the header says %" PRIu64 " + %u)", file, slot_strerror(rc),
                     (intmax_t)sb.st_size, h->info.data_bytes, SLOT_BACKUP_HEADER_BYTES);
        }
    }
    if (rc != 0) {
        close(fd);
        return rc;
    }
    *fd_out = fd;
    return 0;
}

int slot_backup_read_header(const char *file, slot_backup_info *out, char *err, size_t errlen)
{
    backup_header h;
    int fd;
    int rc = slot__backup_header_open(file, &fd, &h, err, errlen);
    if (fd >= 0)
        close(fd);
    if (out)
        *out = h.info;
    return rc;
}

/*
 * A scratch file in dir (prefix names it, "XXXXXX" is appended), open on
 * *fd_out; name gets the path to open it by. Where /proc/self/fd is there
 * (Linux), the file is unlinked at once and name is /proc/self/fd/N, so a
 * killed slotd or slotctl leaves no scratch file behind; elsewhere it keeps
 * its name until slot__backup_scratch_close.
 */
int slot__backup_scratch_open(const char *dir, const char *prefix, int *fd_out, char *name, size_t cap, bool *linked,
                              char *err, size_t errlen)
{
    *fd_out = -1;
    *linked = false;
    if ((size_t)snprintf(name, cap, "%s/%sXXXXXX", dir, prefix) >= cap) {
        snprintf(err, errlen, "scratch folder name too long");
        return -ENAMETOOLONG;
    }
    int fd = mkostemp(name, O_CLOEXEC);
    if (fd < 0) {
        int e = errno;
        snprintf(err, errlen, "cannot create a scratch file in %s: %s", dir, strerror(e));
        return -e;
    }
    char proc[64];
    snprintf(proc, sizeof proc, "/proc/self/fd/%d", fd);
    if (access(proc, R_OK) == 0 && unlink(name) == 0)
        snprintf(name, cap, "%s", proc);
    else
        *linked = true;
    *fd_out = fd;
    return 0;
}

void slot__backup_scratch_close(int fd, const char *name, bool linked)
{
    if (fd >= 0)
        close(fd);
    if (linked)
        unlink(name);
}
