/*
 * http_line.c — statuses and request lines of the HTTP listener (http_line.h).
 */
#include "http_line.h"

#include <jansson.h>
#include <microhttpd.h>
#include <stdlib.h>
#include <string.h>

#include "base/jsonw.h"
#include "slot/assert.h"

/* The line's own bytes beyond the body and the key: {"op":"...","request":"..."} */
#define SLOT_HTTP_LINE_EXTRA_BYTES (64 + SLOT_HTTP_OP_BYTES_MAX)

/* docs/protocol.md, "HTTP"; every code not named here (internal) is 500. */
static const unsigned short status_of[SLOT_E__COUNT] = {
    [SLOT_E_OK] = MHD_HTTP_OK,
    [SLOT_E_BAD_JSON] = MHD_HTTP_BAD_REQUEST,
    [SLOT_E_INVALID_ARGUMENT] = MHD_HTTP_BAD_REQUEST,
    [SLOT_E_UNKNOWN_OP] = MHD_HTTP_BAD_REQUEST,
    [SLOT_E_UNAUTHENTICATED] = MHD_HTTP_UNAUTHORIZED,
    [SLOT_E_FORBIDDEN] = MHD_HTTP_FORBIDDEN,
    [SLOT_E_UNKNOWN_EVENT] = MHD_HTTP_NOT_FOUND,
    [SLOT_E_UNKNOWN_HOLD] = MHD_HTTP_NOT_FOUND,
    [SLOT_E_EVENT_EXISTS] = MHD_HTTP_CONFLICT,
    [SLOT_E_NOT_ON_SALE] = MHD_HTTP_CONFLICT,
    [SLOT_E_HOLD_NOT_ACTIVE] = MHD_HTTP_CONFLICT,
    [SLOT_E_IDEMPOTENCY_CONFLICT] = MHD_HTTP_CONFLICT,
    [SLOT_E_USER_LIMIT] = MHD_HTTP_CONFLICT,
    [SLOT_E_ADMISSION_REQUIRED] = MHD_HTTP_FORBIDDEN,
    [SLOT_E_RATE_LIMITED] = MHD_HTTP_TOO_MANY_REQUESTS,
    [SLOT_E_EXTEND_LIMIT] = MHD_HTTP_CONFLICT,
    [SLOT_E_CAPACITY_BELOW_ALLOCATED] = MHD_HTTP_CONFLICT,
    [SLOT_E_FEED_TRUNCATED] = MHD_HTTP_CONFLICT,
    [SLOT_E_NOT_SUBSCRIBED] = MHD_HTTP_CONFLICT,
    [SLOT_E_BUSY] = MHD_HTTP_CONFLICT,
    [SLOT_E_BACKUP_FAILED] = MHD_HTTP_INTERNAL_SERVER_ERROR,
    [SLOT_E_LINE_TOO_LONG] = MHD_HTTP_CONTENT_TOO_LARGE,
    [SLOT_E_OVERLOADED] = MHD_HTTP_SERVICE_UNAVAILABLE,
    [SLOT_E_SHUTTING_DOWN] = MHD_HTTP_SERVICE_UNAVAILABLE,
    [SLOT_E_UNAVAILABLE] = MHD_HTTP_SERVICE_UNAVAILABLE,
    [SLOT_E_NOT_PRIMARY] = MHD_HTTP_TEMPORARY_REDIRECT,
    [SLOT_E_WRONG_SET] = MHD_HTTP_TEMPORARY_REDIRECT, /* docs/protocol.md, "Placement" */
    [SLOT_E_CROSS_SET] = MHD_HTTP_CONFLICT,
    [SLOT_E_MOVING] = MHD_HTTP_SERVICE_UNAVAILABLE, /* a move's cut-over: retry after retry_after_ms */
    [SLOT_E_STORAGE_FULL] = MHD_HTTP_INSUFFICIENT_STORAGE,
};

unsigned slot__http_status(slot_err err)
{
    unsigned st = (unsigned)err < SLOT_E__COUNT ? status_of[err] : 0;
    return st ? st : MHD_HTTP_INTERNAL_SERVER_ERROR;
}

bool slot__http_op_ok(const char *name)
{
    size_t n = strlen(name);
    return n >= 1 && n <= SLOT_HTTP_OP_BYTES_MAX && strspn(name, "abcdefghijklmnopqrstuvwxyz_") == n;
}

/* Room for need bytes in *buf (doubling); false when out of memory. */
static bool reserve(char **buf, size_t *cap, size_t need)
{
    if (*buf && *cap >= need)
        return true;
    size_t c = *cap ? *cap : 1024;
    while (c < need)
        c *= 2;
    char *p = realloc(*buf, c);
    if (!p)
        return false;
    *buf = p;
    *cap = c;
    return true;
}

static bool json_ws(char ch)
{
    return ch == ' ' || ch == '\t' || ch == '\r' || ch == '\n';
}

size_t slot__http_line(char **buf, size_t *cap, const char *op, const char *body, size_t n, const char *key,
                       ptrdiff_t *byte_delta)
{
    SLOT_ASSERT(slot__http_op_ok(op));
    *byte_delta = 0; /* the body as it is, or none at all */
    size_t i = 0;
    while (i < n && json_ws(body[i]))
        i++;
    size_t need = n + SLOT_HTTP_LINE_EXTRA_BYTES + (key ? 6 * strlen(key) : 0); /* \u00XX at worst */
    if (!reserve(buf, cap, need))
        return 0;
    if (n > 0 && (i == n || body[i] != '{')) { /* only spaces, or not an object */
        memcpy(*buf, body, n);
        return n;
    }
    slot__jw w;
    slot__jw_init(&w, *buf, *cap);
    SLOT__JW_LIT(&w, "{\"op\":");
    slot__jw_str(&w, op, strlen(op), SLOT__JW_STR_STRICT);
    if (key) {
        SLOT__JW_LIT(&w, ",\"request\":");
        slot__jw_str(&w, key, strlen(key), SLOT__JW_STR_STRICT);
    }
    if (n == 0) {
        SLOT__JW_LIT(&w, "}");
    } else {
        size_t j = i + 1;
        while (j < n && json_ws(body[j]))
            j++;
        if (j < n && body[j] != '}')
            SLOT__JW_LIT(&w, ",");
        *byte_delta = (ptrdiff_t)j - (ptrdiff_t)w.len; /* body[j] is the line's byte w.len */
        slot__jw_mem(&w, body + j, n - j);
    }
    size_t len = slot__jw_finish(&w);
    SLOT_ASSERT(len < *cap); /* the op is checked short; the key's room is counted */
    return len;
}

bool slot__http_body_has_request(const char *body, size_t n)
{
    if (n == 0)
        return false;
    json_error_t err;
    json_t *o = json_loadb(body, n, JSON_REJECT_DUPLICATES, &err);
    bool has = json_is_object(o) && json_object_get(o, "request") != NULL;
    json_decref(o);
    return has;
}

size_t slot__http_event_body(char **buf, size_t *cap, const char *name)
{
    size_t n = strlen(name);
    if (!reserve(buf, cap, 16 + 6 * n))
        return 0;
    slot__jw w;
    slot__jw_init(&w, *buf, *cap);
    SLOT__JW_LIT(&w, "{\"event\":");
    slot__jw_str(&w, name, n, SLOT__JW_STR_STRICT);
    SLOT__JW_LIT(&w, "}");
    size_t len = slot__jw_finish(&w);
    SLOT_ASSERT(len < *cap);
    return len;
}

size_t slot__http_owner_addr(const char *line, size_t len, char *out, size_t cap)
{
    static const char key[] = ",\"http\":\"";
    const size_t klen = sizeof(key) - 1;
    for (size_t i = 0; cap > 1 && i + klen <= len; i++) {
        if (memcmp(line + i, key, klen) != 0)
            continue;
        size_t j = i + klen, n = 0;
        while (j + n < len && line[j + n] != '"' && n < cap - 1) {
            char ch = line[j + n];
            bool addr = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') || ch == '.' ||
                        ch == ':' || ch == '[' || ch == ']' || ch == '-';
            if (!addr)
                return 0;
            n++;
        }
        if (n == 0 || j + n >= len || line[j + n] != '"')
            return 0; /* empty, cut or too long */
        memcpy(out, line + j, n);
        out[n] = 0;
        return n;
    }
    return 0;
}
