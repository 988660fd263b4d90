/*
 * jsonw.h — the bounded JSON writer shared by the reply encoder (proto.c) and
 * the client's request encoder (client.c).
 *
 * A slot__jw appends into a caller's buffer and keeps counting past its end,
 * so after the last append `len` is the length the whole output needs, as
 * snprintf's return value is: the output fit when len < cap. Each append is
 * written whole or not at all, and only while it leaves one byte free, so a
 * NUL always fits after what was written and nothing is ever written at or
 * past cap. Once an append did not fit, no later one is written either: the
 * buffer then holds a prefix of the output, and callers treat it as unusable.
 *
 * No heap use, no global state: one slot__jw per output, used by one thread.
 * Internal to libslot.
 */
#ifndef SLOT_JSONW_H
#define SLOT_JSONW_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "slot/assert.h"

typedef struct slot__jw {
    char *p;    /* the caller's buffer, borrowed: never freed here; NULL when only counting */
    size_t len; /* bytes appended so far, counted past cap */
    size_t cap; /* size of p in bytes; 0 when p is NULL */
} slot__jw;

/* Flags of slot__jw_str and slot__jw_key_str; combine with |. */
enum {
    /* RFC 8259 with no choices left open: '"' and '\\' escaped, every other
     * control character as \u00XX, well-formed UTF-8 as it is, and each byte
     * of ill-formed UTF-8 as \ufffd, so the output always parses. */
    SLOT__JW_STR_STRICT = 0,
    /* Bytes >= 0x80 pass as they are, well-formed or not: the caller's text
     * reaches the reader unchanged, and a reader that checks UTF-8 refuses it
     * rather than seeing a silently different string. */
    SLOT__JW_STR_RAW_UTF8 = 1u << 0,
    /* \b \t \n \f \r as their two-character escapes instead of \u00XX. */
    SLOT__JW_STR_SHORT_ESC = 1u << 1,
};

/*
 * slot__jw_init — start an empty output in buf.
 *   buf: the caller's buffer, borrowed for as long as jw is used; may be NULL,
 *        in which case cap is taken as 0 and the writer only counts.
 *   cap: size of buf in bytes.
 */
void slot__jw_init(slot__jw *jw, char *buf, size_t cap);

/*
 * slot__jw_mem — append n raw bytes from s, unescaped (the caller vouches
 * that they are valid JSON where they land). s: not NULL, only read during
 * the call. len grows by n whether or not they fit. Inline because most
 * appends are short literals: with n known, memcpy becomes a few moves.
 */
static inline void slot__jw_mem(slot__jw *jw, const char *s, size_t n)
{
    SLOT_ASSERT(s != NULL);
    /* strictly less than, so what was written always leaves room for its NUL */
    if (jw->len < jw->cap && n < jw->cap - jw->len)
        memcpy(jw->p + jw->len, s, n);
    jw->len += n;
}

/* SLOT__JW_LIT — append a string literal as raw bytes. The "" lit "" pasting
 * refuses anything but a literal at compile time, so sizeof is its length. */
#define SLOT__JW_LIT(jw, lit) slot__jw_mem((jw), "" lit "", sizeof(lit) - 1)

/* slot__jw_u64 — append v in decimal (1..20 bytes). */
void slot__jw_u64(slot__jw *jw, uint64_t v);

/* slot__jw_i64 — append v in decimal, with a '-' when negative (1..20 bytes;
 * INT64_MIN included). */
void slot__jw_i64(slot__jw *jw, int64_t v);

/*
 * slot__jw_str — append s[0..n) as a quoted JSON string.
 *   s: n bytes, not necessarily NUL-terminated (a NUL byte is written as
 *      \u0000); not NULL, only read during the call.
 *   flags: SLOT__JW_STR_STRICT, or SLOT__JW_STR_RAW_UTF8 and/or
 *          SLOT__JW_STR_SHORT_ESC (see their comments).
 * Appends at most 2 + 6 * n bytes: an escape is never longer than 6 bytes.
 */
void slot__jw_str(slot__jw *jw, const char *s, size_t n, unsigned flags);

/*
 * slot__jw_key — append ,"key": (every member but an object's first starts
 * with its comma). key: NUL-terminated and appended unescaped, so it must be
 * a name that needs no escaping (in practice a literal of the caller's).
 * Inline, like the two below, so strlen of a literal key is a constant.
 */
static inline void slot__jw_key(slot__jw *jw, const char *key)
{
    SLOT__JW_LIT(jw, ",\"");
    slot__jw_mem(jw, key, strlen(key));
    SLOT__JW_LIT(jw, "\":");
}

/* slot__jw_key_u64 — ,"key":v; key as for slot__jw_key. */
static inline void slot__jw_key_u64(slot__jw *jw, const char *key, uint64_t v)
{
    slot__jw_key(jw, key);
    slot__jw_u64(jw, v);
}

/* slot__jw_key_str — ,"key":"s..."; key as for slot__jw_key, s, n and flags
 * as for slot__jw_str. */
static inline void slot__jw_key_str(slot__jw *jw, const char *key, const char *s, size_t n, unsigned flags)
{
    slot__jw_key(jw, key);
    slot__jw_str(jw, s, n, flags);
}

/*
 * slot__jw_finish — NUL-terminate the output when it fit (len < cap); the NUL
 * is not counted. Returns len: the output's length without the NUL, >= cap
 * when it did not fit (the caller then retries with at least len + 1 bytes).
 * jw may be appended to afterwards; the NUL is then overwritten.
 */
size_t slot__jw_finish(slot__jw *jw);

#endif
