/*
 * repl_wire.c — the replication channel's encodings (slot/repl.h, "Wire
 * format"): integers, hellos, the HMAC, the reason names and the secret file.
 */
#include "repl_int.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>

const char *slot_repl_reason_name(int reason)
{
    switch (reason) {
#define SLOT__REPL_REASON_NAME(name, code, wire, msg) \
    case code:                                        \
        return wire;
        SLOT_REPL_REASON_MAP(SLOT__REPL_REASON_NAME)
#undef SLOT__REPL_REASON_NAME
    default:
        return "unknown";
    }
}

/* 1..SLOT_REPL_NAME_BYTES_MAX bytes of [A-Za-z0-9._:-], as event ids. */
bool slot__repl_name_ok(const char *s)
{
    size_t n = strlen(s);
    if (n == 0 || n > SLOT_REPL_NAME_BYTES_MAX)
        return false;
    for (size_t i = 0; i < n; i++) {
        unsigned char ch = (unsigned char)s[i];
        bool ok = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') || ch == '.' ||
                  ch == '_' || ch == ':' || ch == '-';
        if (!ok)
            return false;
    }
    return true;
}

void slot__repl_put_u32(uint8_t *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

void slot__repl_put_u64(uint8_t *p, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

uint32_t slot__repl_get_u32(const uint8_t *p)
{
    uint32_t v = 0;
    for (int i = 3; i >= 0; i--)
        v = (v << 8) | p[i];
    return v;
}

uint64_t slot__repl_get_u64(const uint8_t *p)
{
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--)
        v = (v << 8) | p[i];
    return v;
}

size_t slot__repl_hello_encode(const slot__repl_hello *h, uint8_t *out)
{
    size_t cl = strlen(h->cluster), nl = strlen(h->node);
    SLOT_ASSERT(cl >= 1 && cl <= SLOT_REPL_NAME_BYTES_MAX && nl >= 1 && nl <= SLOT_REPL_NAME_BYTES_MAX);
    slot__repl_put_u32(out, SLOT_REPL_MAGIC);
    out[4] = SLOT_REPL_VERSION & 0xff;
    out[5] = SLOT_REPL_VERSION >> 8;
    out[6] = out[7] = 0;
    memcpy(out + 8, h->nonce, SLOT_REPL_NONCE_BYTES);
    slot__repl_put_u64(out + 40, h->epoch);
    slot__repl_put_u64(out + 48, h->tenure);
    slot__repl_put_u64(out + 56, h->last_tenure);
    slot__repl_put_u64(out + 64, h->last_seq);
    slot__repl_put_u64(out + 72, h->time_ms);
    size_t o = 80;
    out[o++] = (uint8_t)cl;
    memcpy(out + o, h->cluster, cl);
    o += cl;
    out[o++] = (uint8_t)nl;
    memcpy(out + o, h->node, nl);
    return o + nl;
}

/* Reads one length-prefixed name at p[*o] into dst. */
static bool take_name(const uint8_t *p, size_t len, size_t *o, char *dst)
{
    if (*o >= len)
        return false;
    size_t n = p[(*o)++];
    if (n == 0 || n > SLOT_REPL_NAME_BYTES_MAX || n > len - *o)
        return false;
    memcpy(dst, p + *o, n);
    dst[n] = 0;
    *o += n;
    return strlen(dst) == n && slot__repl_name_ok(dst);
}

int slot__repl_hello_parse(const uint8_t *p, size_t len, slot__repl_hello *h, char *err, size_t err_bytes)
{
    memset(h, 0, sizeof(*h));
    if (len < SLOT_REPL_HELLO_FIXED_BYTES || slot__repl_get_u32(p) != SLOT_REPL_MAGIC) {
        snprintf(err, err_bytes, "not a replication hello");
        return -EPROTO;
    }
    unsigned version = p[4] | (unsigned)p[5] << 8, flags = p[6] | (unsigned)p[7] << 8;
    if (version != SLOT_REPL_VERSION || flags != 0) {
        snprintf(err, err_bytes, "hello version %u flags %u, want version %d flags 0", version, flags,
                 SLOT_REPL_VERSION);
        return -EPROTO;
    }
    memcpy(h->nonce, p + 8, SLOT_REPL_NONCE_BYTES);
    h->epoch = slot__repl_get_u64(p + 40);
    h->tenure = slot__repl_get_u64(p + 48);
    h->last_tenure = slot__repl_get_u64(p + 56);
    h->last_seq = slot__repl_get_u64(p + 64);
    h->time_ms = slot__repl_get_u64(p + 72);
    size_t o = 80;
    if (!take_name(p, len, &o, h->cluster) || !take_name(p, len, &o, h->node) || o != len) {
        snprintf(err, err_bytes, "hello names malformed");
        return -EPROTO;
    }
    return 0;
}

int slot__repl_mac(const uint8_t *key, size_t key_len, const char *label, const uint8_t *hello, size_t hello_len,
                   const uint8_t *chal, size_t chal_len, uint8_t out[SLOT_REPL_MAC_BYTES])
{
    uint8_t msg[64 + 8 + 2 * SLOT_REPL_HELLO_BYTES_MAX];
    size_t ll = strlen(label);
    SLOT_ASSERT(ll <= 64 && hello_len <= SLOT_REPL_HELLO_BYTES_MAX && chal_len <= SLOT_REPL_HELLO_BYTES_MAX);
    size_t o = 0;
    memcpy(msg, label, ll);
    o += ll;
    slot__repl_put_u32(msg + o, (uint32_t)hello_len);
    o += 4;
    memcpy(msg + o, hello, hello_len);
    o += hello_len;
    slot__repl_put_u32(msg + o, (uint32_t)chal_len);
    o += 4;
    memcpy(msg + o, chal, chal_len);
    o += chal_len;
    unsigned int outlen = 0;
    if (!HMAC(EVP_sha256(), key, (int)key_len, msg, o, out, &outlen) || outlen != SLOT_REPL_MAC_BYTES)
        return -EIO;
    return 0;
}

bool slot__repl_mac_equal(const uint8_t *a, const uint8_t *b)
{
    return CRYPTO_memcmp(a, b, SLOT_REPL_MAC_BYTES) == 0;
}

int slot__repl_random(uint8_t *out, size_t len)
{
    return RAND_bytes(out, (int)len) == 1 ? 0 : -EIO;
}

void slot_repl_secret_clear(slot_repl_secret *s)
{
    OPENSSL_cleanse(s, sizeof(*s));
}

int slot_repl_secret_load(const char *path, slot_repl_secret *out, char *err, size_t err_bytes)
{
    char dummy[1];
    if (!err) {
        err = dummy;
        err_bytes = sizeof(dummy);
    }
    slot_repl_secret_clear(out);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        int e = errno;
        snprintf(err, err_bytes, "--cluster-secret-file %s: %s", path, strerror(e));
        return -e;
    }
    struct stat st;
    if (fstat(fd, &st) != 0) {
        int e = errno;
        close(fd);
        snprintf(err, err_bytes, "--cluster-secret-file %s: %s", path, strerror(e));
        return -e;
    }
    if ((st.st_mode & 077) != 0) {
        close(fd);
        snprintf(err, err_bytes, "--cluster-secret-file %s: open to group or others (mode %03o); chmod 600 it", path,
                 (unsigned)(st.st_mode & 0777));
        return -EPERM;
    }
    /* Room for the longest secret plus trailing white space; a file that
     * fills it and still has more is too long. */
    uint8_t buf[SLOT_REPL_SECRET_BYTES_MAX + 256];
    size_t n = 0;
    bool more = false;
    for (;;) {
        ssize_t k = n < sizeof(buf) ? read(fd, buf + n, sizeof(buf) - n) : read(fd, &(char){0}, 1);
        if (k < 0 && errno == EINTR)
            continue;
        if (k < 0) {
            int e = errno;
            close(fd);
            OPENSSL_cleanse(buf, sizeof(buf));
            snprintf(err, err_bytes, "--cluster-secret-file %s: %s", path, strerror(e));
            return -e;
        }
        if (k == 0)
            break;
        if (n == sizeof(buf)) {
            more = true;
            break;
        }
        n += (size_t)k;
    }
    close(fd);
    while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == '\r' || buf[n - 1] == ' ' || buf[n - 1] == '\t'))
        n--;
    if (more || n < SLOT_REPL_SECRET_BYTES_MIN || n > SLOT_REPL_SECRET_BYTES_MAX) {
        OPENSSL_cleanse(buf, sizeof(buf));
        snprintf(err, err_bytes, "--cluster-secret-file %s: the secret must be %d..%d bytes", path,
                 SLOT_REPL_SECRET_BYTES_MIN, SLOT_REPL_SECRET_BYTES_MAX);
        return -EINVAL;
    }
    memcpy(out->bytes, buf, n);
    OPENSSL_cleanse(buf, sizeof(buf));
    out->len = n;
    return 0;
}
