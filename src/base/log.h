/*
 * log.h — the daemon's log lines and its clock, which every module of the
 * server uses and which depend on nothing of it (docs/operations.md, "Logs").
 *
 * A line is an event with a level, a short fixed message and fields:
 *
 *     slot__log(SLOT__LOG_WARN, "dropped a client", SLOT__LF_S("peer", peer),
 *               SLOT__LF_S("reason", "idle_timeout"));
 *
 * --log-format text (the default) writes
 *     2026-12-01T12:00:00.123Z slotd warn: dropped a client peer=127.0.0.1:5000 reason=idle_timeout
 * and --log-format json one JSON object per line (built with jansson):
 *     {"ts":"2026-12-01T12:00:00.123Z","level":"warn","msg":"dropped a client","peer":"...",...}
 * Lines below --log-level are not written (nor built). A field is never a
 * secret: no token and no cluster secret is ever passed here.
 */
#ifndef SLOT_LOG_H
#define SLOT_LOG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Levels, most severe first: X(NAME, the --log-level and "level" text). */
#define SLOT__LOG_LEVEL_MAP(X) \
    X(ERROR, "error")          \
    X(WARN, "warn")            \
    X(INFO, "info")            \
    X(DEBUG, "debug")

typedef enum slot__log_level {
#define SLOT__LL_ENUM(name, text) SLOT__LOG_##name,
    SLOT__LOG_LEVEL_MAP(SLOT__LL_ENUM)
#undef SLOT__LL_ENUM
        SLOT__LOG__COUNT
} slot__log_level;

typedef enum slot__log_format { SLOT__LOG_TEXT = 0, SLOT__LOG_JSON } slot__log_format;

typedef enum slot__log_kind { SLOT__LF_STR, SLOT__LF_U64, SLOT__LF_I64 } slot__log_kind;

/* One field: key (a static name of [a-z0-9_], not "ts", "level" or "msg")
 * and a string (NULL reads as ""), unsigned or signed value. */
typedef struct slot__log_field {
    const char *key;
    slot__log_kind kind;
    const char *s;
    uint64_t u;
    int64_t i;
} slot__log_field;

#define SLOT__LF_S(k, v) ((slot__log_field){.key = (k), .kind = SLOT__LF_STR, .s = (v)})
#define SLOT__LF_U(k, v) ((slot__log_field){.key = (k), .kind = SLOT__LF_U64, .u = (uint64_t)(v)})
#define SLOT__LF_I(k, v) ((slot__log_field){.key = (k), .kind = SLOT__LF_I64, .i = (int64_t)(v)})

/* slot__log_setup — the format and the least severe level written. Main
 * thread, before any other thread starts (the defaults: text, info). */
void slot__log_setup(slot__log_format format, slot__log_level level);

/* slot__log_level_parse / slot__log_format_parse — "error".."debug" /
 * "text", "json" into *out; 0, or -1 when the name is not one. */
int slot__log_level_parse(const char *name, slot__log_level *out);
int slot__log_format_parse(const char *name, slot__log_format *out);

/* slot__log_on — whether lines of this level are written. Any thread. */
bool slot__log_on(slot__log_level level);

/*
 * slot__log_emit — write one line: the time (UTC, ms), level, msg and the n
 * fields in order. msg: NUL-ended, any text (escaped as needed). Written
 * with one write of the whole line, so lines of several threads never mix.
 * Any thread. Out of memory for the line: a short fixed line instead.
 */
void slot__log_emit(slot__log_level level, const char *msg, const slot__log_field *fields, size_t n);

/* slot__log — slot__log_emit with the fields listed after msg (none or more). */
#define slot__log(level, msg, ...)                                                  \
    slot__log_emit((level), (msg), (const slot__log_field[]){{0}, __VA_ARGS__} + 1, \
                   sizeof((const slot__log_field[]){{0}, __VA_ARGS__}) / sizeof(slot__log_field) - 1)

/* slot__wall_ms — the server clock (CLOCK_REALTIME), ms since the Unix
 * epoch, as hold expiry uses it. Any thread. */
uint64_t slot__wall_ms(void);

#endif
