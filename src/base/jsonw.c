/* jsonw.c — the bounded JSON writer (jsonw.h). */
#include "jsonw.h"

#include <stdbool.h>
#include <string.h>

#include "slot/assert.h"

#define U64_DIGITS_MAX 20 /* UINT64_MAX is 18446744073709551615 */

/* The flags slot__jw_str knows; any other bit is a caller's mistake. */
#define STR_FLAGS_ALL ((unsigned)(SLOT__JW_STR_RAW_UTF8 | SLOT__JW_STR_SHORT_ESC))

void slot__jw_init(slot__jw *jw, char *buf, size_t cap)
{
    jw->p = buf;
    jw->len = 0;
    jw->cap = buf ? cap : 0;
}

void slot__jw_u64(slot__jw *jw, uint64_t v)
{
    char tmp[U64_DIGITS_MAX];
    size_t i = sizeof(tmp);
    do {
        tmp[--i] = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    slot__jw_mem(jw, tmp + i, sizeof(tmp) - i);
}

void slot__jw_i64(slot__jw *jw, int64_t v)
{
    if (v < 0) {
        SLOT__JW_LIT(jw, "-");
        slot__jw_u64(jw, (uint64_t)0 - (uint64_t)v); /* INT64_MIN has no positive int64 */
        return;
    }
    slot__jw_u64(jw, (uint64_t)v);
}

/*
 * Length of the well-formed UTF-8 sequence at p (Unicode table 3-7: no
 * overlongs, no surrogates, nothing above U+10FFFF), or 0 when ill-formed.
 */
static size_t utf8_len(const unsigned char *p, size_t n)
{
    unsigned char lo = 0x80, hi = 0xbf; /* the range of the second byte */
    size_t len;
    if (p[0] < 0x80)
        return 1;
    if (p[0] >= 0xc2 && p[0] <= 0xdf) {
        len = 2;
    } else if (p[0] >= 0xe0 && p[0] <= 0xef) {
        len = 3;
        if (p[0] == 0xe0)
            lo = 0xa0; /* overlong below U+0800 */
        if (p[0] == 0xed)
            hi = 0x9f; /* surrogates U+D800..U+DFFF */
    } else if (p[0] >= 0xf0 && p[0] <= 0xf4) {
        len = 4;
        if (p[0] == 0xf0)
            lo = 0x90; /* overlong below U+10000 */
        if (p[0] == 0xf4)
            hi = 0x8f; /* above U+10FFFF */
    } else {
        return 0;
    }
    if (n < len || p[1] < lo || p[1] > hi)
        return 0;
    for (size_t i = 2; i < len; i++)
        if (p[i] < 0x80 || p[i] > 0xbf)
            return 0;
    return len;
}

/* RFC 8259's two-character escape letter of a control character, or 0. */
static char short_escape(unsigned char ch)
{
    switch (ch) {
    case '\b':
        return 'b';
    case '\t':
        return 't';
    case '\n':
        return 'n';
    case '\f':
        return 'f';
    case '\r':
        return 'r';
    default:
        return 0;
    }
}

/* The escape of ch, a byte that cannot pass as it is: a quote, a backslash,
 * a control character, or a byte of ill-formed UTF-8. */
static void put_escape(slot__jw *jw, unsigned char ch, unsigned flags)
{
    static const char hex[] = "0123456789abcdef";
    char letter = (flags & SLOT__JW_STR_SHORT_ESC) ? short_escape(ch) : 0;
    if (ch == '"' || ch == '\\') {
        char esc[2] = {'\\', (char)ch};
        slot__jw_mem(jw, esc, sizeof(esc));
    } else if (letter) {
        char esc[2] = {'\\', letter};
        slot__jw_mem(jw, esc, sizeof(esc));
    } else if (ch < 0x20) {
        char esc[6] = {'\\', 'u', '0', '0', hex[ch >> 4], hex[ch & 15]};
        slot__jw_mem(jw, esc, sizeof(esc));
    } else {
        SLOT__JW_LIT(jw, "\\ufffd"); /* one per ill-formed byte */
    }
}

/* Runs of bytes that need no escape are copied whole, not byte by byte. */
void slot__jw_str(slot__jw *jw, const char *s, size_t n, unsigned flags)
{
    SLOT_ASSERT((flags & ~STR_FLAGS_ALL) == 0);
    SLOT_ASSERT(s != NULL);
    const unsigned char *p = (const unsigned char *)s;
    size_t i = 0, run = 0;
    SLOT__JW_LIT(jw, "\"");
    bool raw_utf8 = (flags & SLOT__JW_STR_RAW_UTF8) != 0;
    while (i < n) {
        unsigned char ch = p[i];
        /* the common case first: a byte that passes as it is */
        if (ch >= 0x20 && ch != '"' && ch != '\\' && (ch < 0x80 || raw_utf8)) {
            i++;
            continue;
        }
        size_t k = ch >= 0x80 ? utf8_len(p + i, n - i) : 0; /* well-formed UTF-8 passes too */
        if (k > 0) {
            i += k;
            continue;
        }
        slot__jw_mem(jw, s + run, i - run);
        put_escape(jw, ch, flags);
        run = ++i;
    }
    slot__jw_mem(jw, s + run, n - run);
    SLOT__JW_LIT(jw, "\"");
}

size_t slot__jw_finish(slot__jw *jw)
{
    if (jw->len < jw->cap)
        jw->p[jw->len] = 0;
    return jw->len;
}
