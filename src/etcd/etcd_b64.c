/*
 * etcd_b64.c — base64 (RFC 4648, section 4: the standard alphabet, with
 * padding), as etcd's JSON gateway carries keys and values (slot/etcd.h).
 * Any thread.
 */
#include <limits.h>

#include "slot/assert.h"
#include "slot/etcd.h"

static const char b64_alphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

long slot_etcd_b64_encode(const void *src, size_t n, char *dst, size_t cap)
{
    const uint8_t *s = src;
    if (n > ((size_t)LONG_MAX / 4) * 3 - 3)
        return SLOT_ETCD_EINVAL;
    size_t out = (n + 2) / 3 * 4;
    if (out + 1 > cap)
        return SLOT_ETCD_EINVAL;
    size_t o = 0;
    for (size_t i = 0; i < n; i += 3) {
        uint32_t v = (uint32_t)s[i] << 16;
        if (i + 1 < n)
            v |= (uint32_t)s[i + 1] << 8;
        if (i + 2 < n)
            v |= s[i + 2];
        dst[o++] = b64_alphabet[(v >> 18) & 63];
        dst[o++] = b64_alphabet[(v >> 12) & 63];
        dst[o++] = i + 1 < n ? b64_alphabet[(v >> 6) & 63] : '=';
        dst[o++] = i + 2 < n ? b64_alphabet[v & 63] : '=';
    }
    SLOT_ASSERT(o == out);
    dst[o] = '\0';
    return (long)o;
}

static int b64_value(char ch)
{
    if (ch >= 'A' && ch <= 'Z')
        return ch - 'A';
    if (ch >= 'a' && ch <= 'z')
        return ch - 'a' + 26;
    if (ch >= '0' && ch <= '9')
        return ch - '0' + 52;
    if (ch == '+')
        return 62;
    if (ch == '/')
        return 63;
    return -1;
}

long slot_etcd_b64_decode(const char *src, size_t n, uint8_t *dst, size_t cap)
{
    if (n % 4 != 0 || n > (size_t)LONG_MAX)
        return SLOT_ETCD_EPROTO;
    size_t pad = 0;
    if (n >= 4 && src[n - 1] == '=')
        pad = src[n - 2] == '=' ? 2 : 1;
    size_t out = n / 4 * 3 - pad;
    if (out + 1 > cap)
        return SLOT_ETCD_EINVAL;
    size_t o = 0;
    for (size_t i = 0; i < n; i += 4) {
        bool last = i + 4 == n;
        int v[4];
        for (size_t j = 0; j < 4; j++) {
            bool is_pad = last && j >= 4 - pad;
            v[j] = is_pad ? 0 : b64_value(src[i + j]);
            if (v[j] < 0)
                return SLOT_ETCD_EPROTO;
        }
        uint32_t w = (uint32_t)v[0] << 18 | (uint32_t)v[1] << 12 | (uint32_t)v[2] << 6 | (uint32_t)v[3];
        if (last && pad == 2 && (w & 0xffff) != 0)
            return SLOT_ETCD_EPROTO; /* bits past the last byte must be zero */
        if (last && pad == 1 && (w & 0xff) != 0)
            return SLOT_ETCD_EPROTO;
        dst[o++] = (uint8_t)(w >> 16);
        if (!(last && pad == 2))
            dst[o++] = (uint8_t)(w >> 8);
        if (!(last && pad >= 1))
            dst[o++] = (uint8_t)w;
    }
    SLOT_ASSERT(o == out);
    dst[o] = '\0';
    return (long)o;
}
