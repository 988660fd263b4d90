/*
 * daemon_int.h — the daemon wing's one internal header: --config FILE
 * (config.c), the flag table (flags.c) and sd_notify (notify.c), for slotd.c,
 * the composition root.
 */
#ifndef SLOT_DAEMON_INT_H
#define SLOT_DAEMON_INT_H

#include <getopt.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <uv.h>

#include "slot/limits.h"
#include "server/server_opts.h"

/* ==== from config.h ========================================================== */
/*
 * config.h — slotd's --config FILE (docs/operations.md, "The config file"):
 * `name = value` lines, each handed to the daemon's own flag parser as the
 * flag --name=value, so a setting in the file means exactly what the flag
 * means and is checked by the same code. Internal to the daemon.
 */
/* Parses the argv {"slotd", "--name=value"} (argc 2) into the caller's
 * options; returns 0, or -1 after printing why on stderr. */
typedef int (*slot__config_apply_fn)(int argc, char **argv, void *ctx);

/*
 * slot__config_read — read the settings file at path and apply each line.
 *   A line is blank, a comment (first non-blank character '#'), or
 *   `name = value`: name is a long flag of opts without its dashes; value is
 *   the rest of the line, trimmed, up to a '#' that follows a blank (a
 *   comment), or a double-quoted string (the quotes removed; it may hold '#').
 *   A flag that takes no value (opts' no_argument) is written `name = true`
 *   or `name = false`; false leaves it off. Of several lines with one such
 *   name the last counts; a flag with a value is applied line by line, so the
 *   last value wins as on a command line.
 *   opts: the parser's long options, ended by a zero entry; refused: names
 *   (NULL-ended) that may not appear in a file (help, version, config).
 *   apply(argc, argv, ctx) is called once per applied line, in file order;
 *   the argv strings are heap copies that stay valid until the process exits
 *   (the parser may keep pointers to them, as it does to the real argv's;
 *   an atexit handler frees them).
 * Returns 0, or -1 after printing "slotd: PATH:LINE: why" (or "slotd:
 * --config PATH: why" when the file cannot be read or is over
 * SLOT_CONFIG_BYTES_MAX) on stderr: a usage error. Lines before the bad one
 * may have been applied already. Main thread, before the server starts.
 */
int slot__config_read(const char *path, const struct option *opts, const char *const *refused,
                      slot__config_apply_fn apply, void *ctx);

/* ==== from flags.h =========================================================== */
/*
 * flags.h — slotd's flags in one table (flags.c; docs/operations.md,
 * "Flags"): each flag's name, argument, default, range, unit, --help text,
 * man page text and the field of slot__server_opts it sets. getopt's long
 * options, `slotd --help`, the range checks, the defaults and the man page's
 * OPTIONS list (`slotd --help-man`, spliced into docs/man/slotd.8.scd at
 * build time) all come from it, so none of them can drift from another.
 * --config FILE (config.c) reads the same flags, by the same long options.
 * Main thread only, before the server starts.
 */
/* The flags' ids: getopt_long's values (above any short option's). */
enum slot__flag_id {
    OPT_DATA = 256,
    OPT_LISTEN,
    OPT_HTTP,
    OPT_DUR,
    OPT_LINE,
    OPT_MAP,
    OPT_SWEEP,
    OPT_QUEUE,
    OPT_INFLIGHT,
    OPT_CONNS,
    OPT_OUT,
    OPT_IDLE,
    OPT_LINE_TO,
    OPT_WRITE_TO,
    OPT_FEED_RET,
    OPT_LOG_FORMAT,
    OPT_LOG_LEVEL,
    OPT_SLOW_COMMIT,
    OPT_COLD_LOAD_KEYS,
    OPT_TOKENS,
    OPT_INSECURE,
    OPT_NO_READ_PATH,
    OPT_NO_COLD_PARK,
    OPT_RESTORE,
    OPT_CONFIG,
    OPT_CLUSTER,
    OPT_NODE,
    OPT_PLACEMENT,
    OPT_ETCD,
    OPT_SECRET,
    OPT_ADVERTISE,
    OPT_REPL_LISTEN,
    OPT_HEARTBEAT,
    OPT_FAILOVER,
    OPT_REPL_TO,
    OPT_MIN_REPLICAS,
    OPT_LOG_KEEP,
    OPT_LOG_SEG,
    OPT_HELP,
    OPT_VERSION,
    OPT_HELP_MAN, /* --help-man: hidden (not in the table), for the man page's build */
};

/* How a flag's value is read (slot__flag_apply). */
typedef enum slot__flag_kind {
    SLOT__FLAG_NUM,      /* a whole number, K/M/G suffix (x1024), in [min, max]: a uint32_t or uint64_t field */
    SLOT__FLAG_TEXT,     /* a string kept as given (a path, a list): a const char * field; min 1: not empty */
    SLOT__FLAG_NAME,     /* a cluster name or node id, [min, max] bytes of [A-Za-z0-9._:-]: a const char * field */
    SLOT__FLAG_SWITCH,   /* no value: sets a bool field */
    SLOT__FLAG_HOSTPORT, /* HOST:PORT or [V6]:PORT: a char[size] host field and a uint16_t port field */
    SLOT__FLAG_OWN,      /* read by slotd.c itself (slot__flag_apply returns 1): its own checks and messages */
} slot__flag_kind;

/* The flag groups, each under its own heading in --help. */
typedef enum slot__flag_group {
    SLOT__FLAG_SERVER,  /* "options:" */
    SLOT__FLAG_REPLICA, /* "replica sets ...:" */
    SLOT__FLAG_INFO,    /* -h, -V: last, under the replica sets (as they always were) */
} slot__flag_group;

/* One flag. */
typedef struct slot__flag {
    int id;           /* slotd.c's O_* value: getopt_long returns it */
    char short_name;  /* -h, -V; 0: none */
    const char *name; /* the long name without its dashes */
    const char *arg;  /* the value's name in --help and the man page; NULL: takes no value */
    slot__flag_kind kind;
    slot__flag_group group;
    bool needs_cluster;   /* refused without --cluster (check_cluster in slotd.c) */
    uint64_t def;         /* NUM: the default */
    uint64_t min, max;    /* NUM: the range; NAME: its length; TEXT: min 1 refuses an empty value */
    const char *unit;     /* NUM: "ms", "bytes" or NULL (a count); the man page says it */
    const char *def_text; /* the default of a flag without a number (TEXT, HOSTPORT: also set); NULL: none */
    const char *help;     /* --help, one paragraph: "@r" is replaced by MIN..MAX, "@d" by the default */
    const char *man;      /* the man page's paragraph (scdoc markup); a NUM's range and default are added */
    size_t off;           /* the field in slot__server_opts; SIZE_MAX: none */
    size_t size;          /* its size (HOSTPORT: the host's room) */
    size_t port_off;      /* HOSTPORT: the port field */
} slot__flag;

#define SLOT__FLAGS_MAX 64 /* the table's entries at most (getopt tables are sized by it) */

/* slot__flags — the table, in --help's order; slot__flags_n entries. Static, read-only. */
extern const slot__flag slot__flags[];
extern const size_t slot__flags_n;

/* slot__flag_by_id — the entry whose id is id; NULL when none. */
const slot__flag *slot__flag_by_id(int id);

/*
 * slot__flags_longopts — getopt_long's table from slot__flags: out[] gets
 * slot__flags_n + extra_n + 1 entries (the table's, then extra[] (hidden
 * flags, not in --help), then the zero entry); cap must be at least that
 * (SLOT__FLAGS_MAX + extra_n + 1 is; asserted).
 * Returns the short options string (static): "hV" with ':' first.
 */
const char *slot__flags_longopts(struct option *out, size_t cap, const struct option *extra, size_t extra_n);

/* slot__flags_defaults — every field the table has a default for (NUM, TEXT and HOSTPORT with def_text) into o. */
void slot__flags_defaults(slot__server_opts *o);

/*
 * slot__flag_apply — reads arg (NULL for a SWITCH) for flag f into o,
 * as f's kind says. Returns 0, -1 after printing why to stderr
 * ("slotd: --NAME: ..."), or 1 for a SLOT__FLAG_OWN flag (nothing done).
 */
int slot__flag_apply(const slot__flag *f, const char *arg, slot__server_opts *o);

/*
 * slot__flag_hostport — HOST:PORT or [V6]:PORT (PORT 0..65535) for the flag
 * named flag ("--listen"): the host into host[cap], the port into *port.
 * Returns 0, or -1 after printing why to stderr.
 */
int slot__flag_hostport(const char *flag, const char *text, char *host, size_t cap, uint16_t *port);

/* slot__flags_usage — `slotd --help`: the synopsis, then every flag of the table by group, then the notes. */
void slot__flags_usage(FILE *out);

/*
 * slot__flags_man — `slotd --help-man` (hidden): the OPTIONS list of
 * slotd(8) in scdoc, one item per flag of the table, each NUM's range and
 * default from the table. docs/man/meson.build splices it into slotd.8.scd.
 */
void slot__flags_man(FILE *out);

/* ==== from notify.h ========================================================== */
/*
 * notify.h — telling systemd how slotd is doing (sd_notify(3); the unit in
 * docs/systemd/slotd.service.in uses Type=notify): READY=1 once it listens,
 * STOPPING=1 when it begins to stop, WATCHDOG=1 pings while the unit sets
 * WatchdogSec=. Built with libsystemd when meson finds it (-Dsystemd);
 * without it, or when slotd does not run under systemd (no $NOTIFY_SOCKET),
 * nothing is sent. Internal to the daemon; every call on the loop thread.
 */
/*
 * slot__notify_ready — send "READY=1" with "STATUS=<status>" (e.g.
 * "listening on 127.0.0.1:7420"; copied), and, when the service manager asked
 * for a watchdog (sd_watchdog_enabled: $WATCHDOG_USEC, and $WATCHDOG_PID
 * unset or this process), send "WATCHDOG=1" now and then every half of
 * WATCHDOG_USEC (at least every SLOT_NOTIFY_WATCHDOG_MS_MIN ms) from a timer
 * on loop. The timer does not keep the loop alive and is closed with the
 * loop's other handles. Call once, after the listening socket is announced.
 * Errors sending are ignored: systemd's view is advisory for slotd.
 */
void slot__notify_ready(uv_loop_t *loop, const char *status);

/* slot__notify_stopping — send "STOPPING=1" and "STATUS=stopping" (at the
 * first SIGTERM/SIGINT); the watchdog pings go on until the loop closes. */
void slot__notify_stopping(void);

/* The shortest ping interval: a WATCHDOG_USEC under 2 ms is pinged this often. */
#define SLOT_NOTIFY_WATCHDOG_MS_MIN 1u

#endif
