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
#ifndef SLOT_DAEMON_FLAGS_H
#define SLOT_DAEMON_FLAGS_H

#include <getopt.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "server/server_opts.h"

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

#endif
