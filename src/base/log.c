/* log.c — see log.h. */
#include "log.h"

#include <inttypes.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "slot/limits.h"

static slot__log_format log_format = SLOT__LOG_TEXT;
static slot__log_level log_level = SLOT__LOG_INFO;

static const char *const level_names[] = {
#define SLOT__LL_TEXT(name, text) text,
    SLOT__LOG_LEVEL_MAP(SLOT__LL_TEXT)
#undef SLOT__LL_TEXT
};

uint64_t slot__wall_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

void slot__log_setup(slot__log_format format, slot__log_level level)
{
    log_format = format;
    log_level = level;
}

int slot__log_level_parse(const char *name, slot__log_level *out)
{
    for (int i = 0; i < SLOT__LOG__COUNT; i++)
        if (strcmp(name, level_names[i]) == 0) {
            *out = (slot__log_level)i;
            return 0;
        }
    return -1;
}

int slot__log_format_parse(const char *name, slot__log_format *out)
{
    if (strcmp(name, "text") == 0 || strcmp(name, "json") == 0) {
        *out = name[0] == 't' ? SLOT__LOG_TEXT : SLOT__LOG_JSON;
        return 0;
    }
    return -1;
}

bool slot__log_on(slot__log_level level)
{
    return level <= log_level;
}

/* RFC 3339 UTC with milliseconds: 2026-12-01T12:00:00.123Z (25 bytes with the NUL). */
static void timestamp(char out[32])
{
    uint64_t ms = slot__wall_ms();
    time_t secs = (time_t)(ms / 1000u);
    struct tm tm;
    gmtime_r(&secs, &tm);
    size_t n = strftime(out, 32, "%Y-%m-%dT%H:%M:%S", &tm);
    snprintf(out + n, 32 - n, ".%03uZ", (unsigned)(ms % 1000u));
}

/* ---- text: TS slotd LEVEL: MSG key=value ... */

typedef struct tbuf {
    char b[SLOT_LOG_LINE_BYTES_MAX];
    size_t n;
} tbuf;

static void t_put(tbuf *t, const char *s, size_t len)
{
    size_t room = sizeof(t->b) - 2 - t->n; /* keeps room for "\n" and the NUL */
    if (len > room)
        len = room;
    memcpy(t->b + t->n, s, len);
    t->n += len;
}

static void t_str(tbuf *t, const char *s)
{
    t_put(t, s, strlen(s));
}

/* A field's value: bare when it is a plain word, else in double quotes with
 * \" \\ and control characters escaped. */
static void t_value(tbuf *t, const char *v)
{
    bool plain = *v != 0;
    for (const char *p = v; *p && plain; p++)
        plain = (unsigned char)*p > ' ' && *p != '"' && *p != '=' && *p != '\\' && (unsigned char)*p != 0x7f;
    if (plain) {
        t_str(t, v);
        return;
    }
    t_put(t, "\"", 1);
    for (const char *p = v; *p; p++) {
        unsigned char c = (unsigned char)*p;
        char esc[8];
        if (c == '"' || c == '\\') {
            esc[0] = '\\';
            esc[1] = (char)c;
            t_put(t, esc, 2);
        } else if (c < ' ' || c == 0x7f) {
            snprintf(esc, sizeof esc, "\\x%02x", c);
            t_put(t, esc, 4);
        } else {
            t_put(t, p, 1);
        }
    }
    t_put(t, "\"", 1);
}

static void emit_text(const char *ts, slot__log_level level, const char *msg, const slot__log_field *f, size_t n)
{
    tbuf t;
    t.n = 0;
    t_str(&t, ts);
    t_str(&t, " slotd ");
    t_str(&t, level_names[level]);
    t_str(&t, ": ");
    for (const char *p = msg; *p; p++) /* the message on one line */
        t_put(&t, (unsigned char)*p < ' ' ? " " : p, 1);
    for (size_t i = 0; i < n; i++) {
        char num[32];
        t_put(&t, " ", 1);
        t_str(&t, f[i].key);
        t_put(&t, "=", 1);
        switch (f[i].kind) {
        case SLOT__LF_STR:
            t_value(&t, f[i].s ? f[i].s : "");
            break;
        case SLOT__LF_U64:
            snprintf(num, sizeof num, "%" PRIu64, f[i].u);
            t_str(&t, num);
            break;
        case SLOT__LF_I64:
            snprintf(num, sizeof num, "%" PRId64, f[i].i);
            t_str(&t, num);
            break;
        }
    }
    t.b[t.n++] = '\n';
    fwrite(t.b, 1, t.n, stderr);
}

/* ---- json: one object, ts, level and msg first */

/* A JSON string of s; text that is not UTF-8 (bytes a peer sent) is shown
 * as a marker instead, so the line stays valid JSON. */
static json_t *utf8_string(const char *s)
{
    json_t *v = json_string(s);
    return v ? v : json_string("(not UTF-8)");
}

static void emit_json(const char *ts, slot__log_level level, const char *msg, const slot__log_field *f, size_t n)
{
    json_t *o = json_object();
    bool ok = o && json_object_set_new(o, "ts", json_string(ts)) == 0 &&
              json_object_set_new(o, "level", json_string(level_names[level])) == 0 &&
              json_object_set_new(o, "msg", utf8_string(msg)) == 0;
    for (size_t i = 0; ok && i < n; i++) {
        json_t *v = f[i].kind == SLOT__LF_STR   ? utf8_string(f[i].s ? f[i].s : "")
                    : f[i].kind == SLOT__LF_U64 ? json_integer((json_int_t)f[i].u)
                                                : json_integer((json_int_t)f[i].i);
        ok = json_object_set_new(o, f[i].key, v) == 0;
    }
    char *text = ok ? json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER) : NULL;
    json_decref(o);
    if (!text) {
        fprintf(stderr, "{\"ts\":\"%s\",\"level\":\"error\",\"msg\":\"out of memory for a log line\"}\n", ts);
        return;
    }
    size_t len = strlen(text);
    text[len] = '\n'; /* over the NUL: written by length */
    fwrite(text, 1, len + 1, stderr);
    free(text);
}

void slot__log_emit(slot__log_level level, const char *msg, const slot__log_field *fields, size_t n)
{
    if (!slot__log_on(level) || (unsigned)level >= SLOT__LOG__COUNT)
        return;
    char ts[32];
    timestamp(ts);
    if (log_format == SLOT__LOG_JSON)
        emit_json(ts, level, msg, fields, n);
    else
        emit_text(ts, level, msg, fields, n);
}
