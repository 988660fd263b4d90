/*
 * flags.c — the table of slotd's flags (daemon_int.h) and what comes from it:
 * getopt's long options, the defaults, reading one value (numbers with
 * their ranges, HOST:PORT, names), `slotd --help` and the man page's
 * OPTIONS list (`slotd --help-man`). The flags slotd.c reads itself (kind
 * SLOT__FLAG_OWN) are here too, for --help and the man page.
 */
#include "daemon_int.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "slot/assert.h"
#include "slot/limits.h"
#include "slot/repl.h"

#define FIELD(f) offsetof(slot__server_opts, f), sizeof(((slot__server_opts *)0)->f), 0
#define NO_FIELD SIZE_MAX, 0, 0
#define HOSTPORT(h, p) \
    offsetof(slot__server_opts, h), sizeof(((slot__server_opts *)0)->h), offsetof(slot__server_opts, p)
/* A number: id, name, arg, group, needs_cluster, SLOT_X (its _DEFAULT, _MIN, _MAX), unit, help, man, field. */
#define NUM(id, name, arg, group, cl, X, unit, help, man, f)                                                        \
    {                                                                                                               \
        id, 0, name, arg, SLOT__FLAG_NUM, group, cl, X##_DEFAULT, X##_MIN, X##_MAX, unit, NULL, help, man, FIELD(f) \
    }
/* Anything else: no number of its own (min, max as the kind says). */
#define ANY(id, sn, name, arg, kind, group, cl, min, max, def_text, help, man, field)     \
    {                                                                                     \
        id, sn, name, arg, kind, group, cl, 0, min, max, NULL, def_text, help, man, field \
    }

#define S SLOT__FLAG_SERVER
#define R SLOT__FLAG_REPLICA

const slot__flag slot__flags[] = {
    ANY(OPT_DATA, 0, "data", "DIR", SLOT__FLAG_TEXT, S, false, 1, 0, SLOT_DATA_DEFAULT,
        "data folder, created when missing (default @d)",
        "The data folder, created with mode 0700 (parents too) when missing. Any path, not empty. "
        "Default: *./slotd-data*.",
        FIELD(data_dir)),
    ANY(OPT_LISTEN, 0, "listen", "HOST:PORT", SLOT__FLAG_HOSTPORT, S, false, 0, 0, SLOT_LISTEN_DEFAULT,
        "address to listen on (default @d); port 0 picks a free port. The first line on stdout is "
        "\"listening on HOST:PORT\"",
        "The address to listen on. _HOST_ is a numeric IPv4 or IPv6 address (*[::1]:7420*); _PORT_ is "
        "0..65535, and 0 picks a free port. Default: *127.0.0.1:7420*. Without *--token-file*, an address "
        "other than loopback (127.0.0.0/8, ::1) is refused unless *--insecure* is given: a usage error "
        "(exit 64).",
        HOSTPORT(host, port)),
    ANY(OPT_HTTP, 0, "http", "HOST:PORT", SLOT__FLAG_OWN, S, false, 0, 0, NULL,
        "also serve HTTP/1.1 there (POST /v1/OP, GET /v1/events/E, /health, /primary, /metrics); port 0 picks a "
        "free port, printed as the second line \"http listening on HOST:PORT\"; off by default",
        "Also serve HTTP/1.1 there: *POST /v1/*_OP_ with the request object (without *op*) as the body, "
        "*GET /v1/events/*_E_, *GET /health*, *GET /primary* (200 on a primary or standalone server, 503 "
        "otherwise) and *GET /metrics*; the answer's body is the NDJSON reply, its status from the table "
        "in docs/protocol.md, \"HTTP\". Port 0 picks a free port, announced as the second line on "
        "standard output, *http listening on* _HOST:PORT_. A non-loopback _HOST_ needs *--token-file* or "
        "*--insecure*, as *--listen* does. Default: off.",
        HOSTPORT(http_host, http_port)),
    ANY(OPT_DUR, 0, "durability", "MODE", SLOT__FLAG_OWN, S, false, 0, 0, "sync",
        "sync: fsync every group commit (default); pipelined: the batch log's flush overlaps the next batch; "
        "nosync: leave flushing to the OS (a machine crash may lose commits)",
        "*sync* (the default): every group commit is flushed to disk (fsync) before its replies are sent. "
        "*pipelined*: each batch's write set is appended to the batch log (_DATA_/rlog) and "
        "its replies are sent once the log is flushed (on a replica set's primary: and acknowledged by every "
        "member, which receive the record at once), while the next batch already runs; LMDB is committed "
        "every few milliseconds (on a primary: only up to the commit point) and the log replayed into it at "
        "start; as durable as *sync*. "
        "*nosync*: flushing is left to the operating system; a machine crash may lose the last commits, a "
        "crash of slotd alone loses nothing.",
        FIELD(nosync)),
    NUM(OPT_LINE, "max-line", "BYTES", S, false, SLOT_LINE_BYTES, "bytes",
        "longest request line, without its newline, @r (default @d)",
        "The longest request line, without its newline; a longer line is answered *line_too_long* and the "
        "connection is closed.",
        line_bytes_max),
    NUM(OPT_MAP, "map-size-max", "BYTES", S, false, SLOT_MAP_BYTES_MAX, "bytes",
        "largest the LMDB map may grow to, @r (default @d); then writes are answered storage_full",
        "The largest the LMDB map may grow to; the map starts at 64 MiB (or the file's size) and doubles "
        "when full. At the bound, writes are answered *storage_full*.",
        map_bytes_max),
    NUM(OPT_SWEEP, "sweep-interval-ms", "MS", S, false, SLOT_SWEEP_INTERVAL_MS, "ms",
        "how often expired holds are swept, @r (default @d)",
        "How often the sweeper looks for expired holds; their units are back within this plus one second.",
        sweep_interval_ms),
    NUM(OPT_QUEUE, "max-queue", "N", S, false, SLOT_QUEUE_REQUESTS, "requests",
        "queued write requests before new ones are answered overloaded, @r (default @d)",
        "Write requests waiting for a batch before new ones are answered *overloaded*.", queue_max),
    NUM(OPT_INFLIGHT, "max-inflight", "N", S, false, SLOT_CONN_INFLIGHT, "requests",
        "unanswered requests per connection before reading from it pauses, @r (default @d)",
        "Unanswered requests per connection before slotd stops reading from it (it resumes at half).",
        conn_inflight_max),
    NUM(OPT_CONNS, "max-connections", "N", S, false, SLOT_CONNS, "connections",
        "open connections; accepting pauses at the limit, @r (default @d)",
        "Open connections; at the limit slotd stops accepting until one closes.", conns_max),
    NUM(OPT_OUT, "max-output", "BYTES", S, false, SLOT_CONN_OUT_BYTES, "bytes",
        "unsent reply bytes per connection before reading from it pauses, @r (default @d)",
        "Reply bytes a connection has not taken before slotd stops reading from it.", out_bytes_max),
    NUM(OPT_IDLE, "idle-timeout-ms", "MS", S, false, SLOT_IDLE_TIMEOUT_MS, "ms",
        "close a connection silent this long with nothing pending, @r; 0 never (default @d)",
        "Close a connection that sent nothing this long while nothing of it was pending; 0 never.", idle_timeout_ms),
    NUM(OPT_LINE_TO, "line-timeout-ms", "MS", S, false, SLOT_LINE_TIMEOUT_MS, "ms",
        "close a connection whose started line stays unfinished this long, @r (default @d)",
        "Close a connection whose started line stays unfinished this long.", line_timeout_ms),
    NUM(OPT_WRITE_TO, "write-timeout-ms", "MS", S, false, SLOT_WRITE_TIMEOUT_MS, "ms",
        "drop a client that takes none of its replies this long, @r (default @d)",
        "Close a connection that takes none of its replies this long.", write_timeout_ms),
    NUM(OPT_FEED_RET, "feed-retention-ms", "MS", S, false, SLOT_FEED_RETENTION_MS, "ms",
        "keep feed entries every consumer acked this long, @r (default @d, 7 days); then they are trimmed",
        "Keep feed entries (the outbox the payment, e-mail and fulfilment workers read) at least this "
        "long after every known consumer acked them; then the sweeper trims them in bounded batches. A "
        "consumer that asks for an entry no longer kept gets *feed_truncated*.",
        feed_retention_ms),
    ANY(OPT_LOG_FORMAT, 0, "log-format", "FORMAT", SLOT__FLAG_OWN, S, false, 0, 0, "text",
        "text: one line per event, \"TIME slotd LEVEL: MESSAGE key=value...\" (default); json: one JSON object "
        "per line (ts, level, msg, fields)",
        "*text*: one line per event on stderr, \"_TIME_ slotd _LEVEL_: _MESSAGE_ key=value ...\", TIME in "
        "UTC with milliseconds (RFC 3339). *json*: one JSON object per line with *ts*, *level*, *msg* and "
        "the event's fields. No line ever holds a token or the cluster secret. Default: text.",
        NO_FIELD),
    ANY(OPT_LOG_LEVEL, 0, "log-level", "LEVEL", SLOT__FLAG_OWN, S, false, 0, 0, "info",
        "error, warn, info (default) or debug: the least severe lines written",
        "The least severe lines written: *error*, *warn* (dropped clients, failed hellos, slow commits), "
        "*info* (start, listening, stop, storage growth) or *debug* (every accepted connection). Default: "
        "info.",
        NO_FIELD),
    NUM(OPT_SLOW_COMMIT, "slow-commit-ms", "MS", S, false, SLOT_SLOW_COMMIT_MS, "ms",
        "log a group commit that takes this long (warn, at most one line a second), @r; 0 never (default @d)",
        "Log a group commit (write transaction and fsync) that takes this long as a *warn* line \"slow "
        "commit\", at most one a second. 0 never.",
        slow_commit_ms),
    NUM(OPT_COLD_LOAD_KEYS, "cold-load-keys", "N", S, false, SLOT_COLD_LOAD_KEYS, "holds",
        "holds of a closed event one batch walks while its keys load (the requests that need them wait, the "
        "others go on), @r (default @d)",
        "While a closed, settled event's keys load into the idempotency index (the first *hold*, "
        "*hold_many* or *waitlist_join* that names it), each group commit walks this many of its holds; "
        "the requests that need the keys wait, every other request goes on (docs/design.md, \"Cold events "
        "load in slices\").",
        cold_load_keys),
    ANY(OPT_TOKENS, 0, "token-file", "FILE", SLOT__FLAG_TEXT, S, false, 0, 0, NULL,
        "lines \"frontend TOKEN\" / \"worker TOKEN\" / \"admin TOKEN\"; clients must send hello first. The file "
        "must be mode 600 or stricter",
        "Require every connection to send *hello* with a token from _FILE_ first. Lines are *frontend* "
        "_TOKEN_, *worker* _TOKEN_ (may subscribe to the feed, ack, and read any user's hold) or *admin* "
        "_TOKEN_ (a token is 1 to 256 bytes without blanks), lines starting with *#* and blank lines are "
        "skipped, at most 64 tokens. The file must not be readable or writable by group or others (mode "
        "600), or slotd does not start. Default: none, and every connection is admin (loopback only).",
        FIELD(token_file)),
    ANY(OPT_INSECURE, 0, "insecure", NULL, SLOT__FLAG_SWITCH, S, false, 0, 0, NULL,
        "allow a non-loopback --listen or --http without --token-file",
        "Allow a *--listen* or *--http* address other than loopback without *--token-file*. Default: off.",
        FIELD(insecure)),
    ANY(OPT_NO_READ_PATH, 0, "no-read-path", NULL, SLOT__FLAG_SWITCH, S, false, 0, 0, NULL,
        "answer every hold through a batch, also a certain sold_out (for tests comparing the two paths)",
        "Answer every *hold* through a group commit, also one that is certainly *sold_out* (which slotd "
        "otherwise answers from its read snapshot; see docs/design.md, \"The sold-out read path\"). The "
        "answers are the same; for tests that compare the two paths. Default: off.",
        FIELD(no_read_path)),
    ANY(OPT_NO_COLD_PARK, 0, "no-cold-park", NULL, SLOT__FLAG_SWITCH, S, false, 0, 0, NULL,
        "load a closed event's keys at once, in the batch of the first request that needs them (for tests "
        "comparing the two paths)",
        "Load a closed event's keys at once, in the group commit of the first request that needs them "
        "(every request of that batch waits for the load), instead of in slices while that request waits. "
        "The answers are the same; for tests that compare the two paths. Default: off.",
        FIELD(no_cold_park)),
    ANY(OPT_RESTORE, 0, "restore", "FILE", SLOT__FLAG_OWN, S, false, 0, 0, NULL,
        "first put the backup FILE into --data (which must be empty or missing; slotctl restore can replace a "
        "store), then serve it",
        "Before serving, put the backup _FILE_ (written by *slotctl backup*) into the *--data* folder, "
        "which must be missing or empty: its header, the SHA-256 of its data, its seq and digest are "
        "checked first, and slotd exits 1 with a message when any is wrong or the folder holds anything. "
        "Then slotd starts on the restored store as usual. Command line only (not in a *--config* file). "
        "To replace an existing store, use *slotctl restore* with its force flag, offline.",
        NO_FIELD),
    ANY(OPT_CONFIG, 0, "config", "FILE", SLOT__FLAG_OWN, S, false, 0, 0, NULL,
        "read flags from FILE: \"name = value\" lines, name the long flag without its dashes, true|false for "
        "flags without a value, # comments; flags on the command line win",
        "Read settings from _FILE_ before the command line, whose flags win (see *CONFIG FILE*). Default: "
        "none.",
        NO_FIELD),
    ANY(OPT_CLUSTER, 0, "cluster", "NAME", SLOT__FLAG_NAME, R, false, 1, SLOT_CLUSTER_NAME_BYTES_MAX, NULL,
        "join (or found) the replica set NAME ([A-Za-z0-9._:-], @r)",
        "Be a node of the replica set _NAME_ (1..64 letters, digits and the characters . \\_ : -): one "
        "primary answers writes and streams each batch to the replicas, which apply it; a replica that "
        "stops hearing from the primary takes over (see docs/design.md, \"Replica sets\"). Needs "
        "*--node*, *--etcd* and *--cluster-secret-file*; the other replica-set flags below are refused "
        "without it. Default: none (standalone).",
        FIELD(cluster)),
    ANY(OPT_NODE, 0, "node", "ID", SLOT__FLAG_NAME, R, true, 1, SLOT_CLUSTER_NAME_BYTES_MAX, NULL,
        "this node's id in the set (same characters); needed with --cluster",
        "This node's id in the set, the same characters as *--cluster*.", FIELD(node_id)),
    ANY(OPT_PLACEMENT, 0, "placement", "NAME", SLOT__FLAG_NAME, R, true, 1, SLOT_CLUSTER_NAME_BYTES_MAX, NULL,
        "share events with the other replica sets of placement NAME (same etcd; the set's name is --cluster)",
        "Be one of the replica sets of the placement _NAME_ (the same characters as *--cluster*), which "
        "share one etcd: each event is placed on one set, by a map in etcd (one key per event, changed "
        "only by compare-and-swap). *create_event* on this set's primary places the event here before it "
        "is answered; a name placed on another set is *wrong_set*; the *placement* op shows the map and "
        "each set's primary (see docs/design.md, \"Many replica sets\"). Default: none.",
        FIELD(placement)),
    ANY(OPT_ETCD, 0, "etcd", "URL[,URL]", SLOT__FLAG_TEXT, R, true, 0, 0, NULL,
        "etcd endpoints (http://H:P); needed with --cluster",
        "The etcd endpoints (*http://*_HOST:PORT_, 1..16 of them) that hold the set's configuration and "
        "the nodes' addresses.",
        FIELD(etcd)),
    ANY(OPT_SECRET, 0, "cluster-secret-file", "FILE", SLOT__FLAG_TEXT, R, true, 0, 0, NULL,
        "the secret the nodes share (" SLOT__XSTR(SLOT_REPL_SECRET_BYTES_MIN) ".." SLOT__XSTR(
            SLOT_REPL_SECRET_BYTES_MAX) " bytes); mode 600 or stricter, else slotd refuses to start; needed with "
                                        "--cluster",
        "The secret the nodes share (16..4096 bytes), which authenticates the replication channel. The "
        "file must be mode 600 or stricter, or slotd does not start.",
        FIELD(secret_file)),
    ANY(OPT_ADVERTISE, 0, "advertise", "HOST:PORT", SLOT__FLAG_OWN, R, true, 0, 0, NULL,
        "the client address other nodes and not_primary name (default: the bound --listen address)",
        "The client address published in etcd and named by *not_primary* replies (port 1..65535). "
        "Default: the bound *--listen* address.",
        HOSTPORT(adv_host, adv_port)),
    ANY(OPT_REPL_LISTEN, 0, "repl-listen", "HOST:PORT", SLOT__FLAG_HOSTPORT, R, true, 0, 0, NULL,
        "replication address (default: --listen's host, port 0; the bound address is published in etcd)",
        "The replication address; the bound address is published in etcd. Default: *--listen*'s host, "
        "port 0.",
        HOSTPORT(repl_host, repl_port)),
    NUM(OPT_HEARTBEAT, "heartbeat-ms", "MS", R, true, SLOT_REPL_HEARTBEAT_MS, "ms",
        "primary-to-replica heartbeat, @r (default @d)", "How often the primary sends a heartbeat to each replica.",
        heartbeat_ms),
    NUM(OPT_FAILOVER, "failover-timeout-ms", "MS", R, true, SLOT_FAILOVER_TIMEOUT_MS, "ms",
        "a replica that hears nothing from the primary this long takes over, @r (default @d)",
        "A replica that hears nothing from the primary this long takes over.", failover_timeout_ms),
    NUM(OPT_REPL_TO, "repl-timeout-ms", "MS", R, true, SLOT_REPL_TIMEOUT_MS, "ms",
        "a batch's acks must come within this, else silent replicas are dropped, @r (default @d)",
        "A batch's acknowledgements must come within this, else the silent replicas are dropped from the "
        "configuration; when that would leave fewer than *--min-replicas*, the batch is answered "
        "*unavailable* instead (its outcome unknown).",
        repl_timeout_ms),
    NUM(OPT_MIN_REPLICAS, "min-replicas", "N", R, true, SLOT_MIN_REPLICAS, "replicas",
        "writes are unavailable with fewer replicas, @r (default @d)",
        "Writes are answered *unavailable* while the configuration has fewer replicas than this.", min_replicas),
    NUM(OPT_LOG_KEEP, "log-keep-records", "N", R, true, SLOT_LOG_KEEP_RECORDS, "records",
        "the batch log keeps this many records at least (older ones go; a member that needs them joins by "
        "snapshot), @r (default @d)",
        "The batch log (_DATA_/rlog) keeps at least the last _N_ records; older ones are deleted a "
        "segment at a time once applied (and, on the primary, once every connected member has them). A "
        "member whose log ends before what the primary still keeps, or whose log is empty, joins by a "
        "snapshot instead.",
        log_keep_records),
    NUM(OPT_LOG_SEG, "log-segment-bytes", "B", R, true, SLOT_LOG_SEGMENT_BYTES, "bytes",
        "the batch log's segment size, trimmed a segment at a time, @r (default @d)",
        "Size of the batch log's segment files, the unit in which it is trimmed.", log_segment_bytes),
    ANY(OPT_HELP, 'h', "help", NULL, SLOT__FLAG_OWN, SLOT__FLAG_INFO, false, 0, 0, NULL, "this text",
        "Print the flags and exit 0.", NO_FIELD),
    ANY(OPT_VERSION, 'V', "version", NULL, SLOT__FLAG_OWN, SLOT__FLAG_INFO, false, 0, 0, NULL, "print the version",
        "Print *slotd* _VERSION_ and exit 0.", NO_FIELD),
};

const size_t slot__flags_n = sizeof(slot__flags) / sizeof(slot__flags[0]);
_Static_assert(sizeof(slot__flags) / sizeof(slot__flags[0]) <= SLOT__FLAGS_MAX, "raise SLOT__FLAGS_MAX");

#undef S
#undef R

const slot__flag *slot__flag_by_id(int id)
{
    for (size_t i = 0; i < slot__flags_n; i++)
        if (slot__flags[i].id == id)
            return &slot__flags[i];
    return NULL;
}

const char *slot__flags_longopts(struct option *out, size_t cap, const struct option *extra, size_t extra_n)
{
    SLOT_ASSERT(slot__flags_n + extra_n + 1 <= cap);
    size_t n = 0;
    for (size_t i = 0; i < slot__flags_n && n + 1 < cap; i++)
        out[n++] = (struct option){slot__flags[i].name, slot__flags[i].arg ? required_argument : no_argument, NULL,
                                   slot__flags[i].id};
    for (size_t i = 0; i < extra_n && n + 1 < cap; i++)
        out[n++] = extra[i];
    out[n] = (struct option){NULL, 0, NULL, 0};
    return ":hV";
}

/* ---------------------------------------------------------------- values */

/* Parses a whole decimal number with an optional K/M/G (x1024) suffix, within [lo, hi]. */
static int parse_num(const char *flag, const char *text, uint64_t lo, uint64_t hi, uint64_t *out)
{
    char *end = NULL;
    errno = 0;
    unsigned long long v = strtoull(text, &end, 10);
    uint64_t mul = 1;
    if (end && *end && end[1] == 0) {
        switch (*end) {
        case 'K':
        case 'k':
            mul = 1ull << 10;
            end++;
            break;
        case 'M':
        case 'm':
            mul = 1ull << 20;
            end++;
            break;
        case 'G':
        case 'g':
            mul = 1ull << 30;
            end++;
            break;
        default:
            break;
        }
    }
    if (errno || end == text || *end || text[0] == '-' || (mul > 1 && v > UINT64_MAX / mul) || v * mul < lo ||
        v * mul > hi) {
        fprintf(stderr, "slotd: %s: \"%s\" is not a number in %" PRIu64 "..%" PRIu64 "\n", flag, text, lo, hi);
        return -1;
    }
    *out = v * mul;
    return 0;
}

int slot__flag_hostport(const char *flag, const char *text, char *host_out, size_t cap, uint16_t *port_out)
{
    const char *colon = strrchr(text, ':');
    const char *host = text;
    size_t hlen = colon ? (size_t)(colon - text) : 0;
    if (colon && text[0] == '[' && hlen >= 2 && text[hlen - 1] == ']') {
        host++;
        hlen -= 2;
    }
    char *end = NULL;
    unsigned long port = colon ? strtoul(colon + 1, &end, 10) : 0;
    if (!colon || hlen == 0 || hlen >= cap || !colon[1] || *end || colon[1] == '-' || port > 65535) {
        fprintf(stderr, "slotd: %s: want HOST:PORT with PORT 0..65535 (e.g. 127.0.0.1:7420), got \"%s\"\n", flag, text);
        return -1;
    }
    memcpy(host_out, host, hlen);
    host_out[hlen] = 0;
    *port_out = (uint16_t)port;
    return 0;
}

/* A cluster name or node id: min..max bytes of [A-Za-z0-9._:-]. */
static int parse_name(const char *flag, const char *text, uint64_t min, uint64_t max)
{
    size_t n = strlen(text);
    bool ok = n >= min && n <= max &&
              strspn(text, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._:-") == n;
    if (!ok)
        fprintf(stderr, "slotd: %s: want %" PRIu64 "..%" PRIu64 " characters of [A-Za-z0-9._:-], got \"%s\"\n", flag,
                min, max, text);
    return ok ? 0 : -1;
}

int slot__flag_apply(const slot__flag *f, const char *arg, slot__server_opts *o)
{
    char flag[64];
    snprintf(flag, sizeof flag, "--%s", f->name);
    if (f->off == SIZE_MAX) /* NO_FIELD: a flag slotd.c handles itself */
        return 1;
    char *field = (char *)o + f->off;
    uint64_t v = 0;
    switch (f->kind) {
    case SLOT__FLAG_NUM:
        if (parse_num(flag, arg, f->min, f->max, &v) != 0)
            return -1;
        if (f->size == sizeof(uint32_t)) {
            uint32_t v32 = (uint32_t)v;
            memcpy(field, &v32, sizeof v32);
        } else {
            memcpy(field, &v, sizeof v);
        }
        return 0;
    case SLOT__FLAG_TEXT:
        memcpy(field, &arg, sizeof arg);
        if (f->min > 0 && !*arg) {
            fprintf(stderr, "slotd: %s: the %s is empty\n", flag, f->id == OPT_DATA ? "folder name" : "value");
            return -1;
        }
        return 0;
    case SLOT__FLAG_NAME:
        memcpy(field, &arg, sizeof arg);
        return parse_name(flag, arg, f->min, f->max);
    case SLOT__FLAG_SWITCH:
        *(bool *)field = true;
        return 0;
    case SLOT__FLAG_HOSTPORT:
        return slot__flag_hostport(flag, arg, field, f->size, (uint16_t *)((char *)o + f->port_off));
    case SLOT__FLAG_OWN:
        return 1;
    }
    return 1;
}

void slot__flags_defaults(slot__server_opts *o)
{
    for (size_t i = 0; i < slot__flags_n; i++) {
        const slot__flag *f = &slot__flags[i];
        if (f->off == SIZE_MAX)
            continue; /* NO_FIELD: no default to set (o + SIZE_MAX would overflow the pointer) */
        char *field = (char *)o + f->off;
        if (f->kind == SLOT__FLAG_NUM && f->size == sizeof(uint32_t)) {
            uint32_t v32 = (uint32_t)f->def;
            memcpy(field, &v32, sizeof v32);
        } else if (f->kind == SLOT__FLAG_NUM) {
            memcpy(field, &f->def, sizeof f->def);
        } else if (f->kind == SLOT__FLAG_TEXT && f->def_text) {
            memcpy(field, &f->def_text, sizeof f->def_text);
        } else if (f->kind == SLOT__FLAG_HOSTPORT && f->def_text) {
            int rc = slot__flag_hostport(f->name, f->def_text, field, f->size, (uint16_t *)((char *)o + f->port_off));
            (void)rc; /* SLOT_LISTEN_DEFAULT is a HOST:PORT */
        }
    }
}

/* ---------------------------------------------------------------- --help and the man page */

#define HELP_LEFT 26  /* --help: the column the flags' texts start in */
#define HELP_WIDTH 96 /* --help: the longest line */
#define MAN_WIDTH 72  /* the man page's source lines, after the tab */

/* f's text with "@r" as MIN..MAX and "@d" as the default, into buf[cap]. */
static void expand(const slot__flag *f, const char *text, char *buf, size_t cap)
{
    size_t n = 0;
    for (const char *p = text; *p && n + 1 < cap; p++) {
        int w = 0;
        if (p[0] == '@' && p[1] == 'r') {
            w = snprintf(buf + n, cap - n, "%" PRIu64 "..%" PRIu64, f->min, f->max);
            p++;
        } else if (p[0] == '@' && p[1] == 'd') {
            w = f->kind == SLOT__FLAG_NUM ? snprintf(buf + n, cap - n, "%" PRIu64, f->def)
                                          : snprintf(buf + n, cap - n, "%s", f->def_text ? f->def_text : "none");
            p++;
        } else {
            buf[n] = *p;
            w = 1;
        }
        n += w > 0 && (size_t)w < cap - n ? (size_t)w : 0;
    }
    buf[n < cap ? n : cap - 1] = 0;
}

/* text in lines of at most width columns (words are never split), the first
 * after `first` columns already written, the others after indent, which
 * takes indent_cols columns (a tab: 8). */
static void wrap(FILE *out, const char *text, size_t first, const char *indent, size_t indent_cols, size_t width)
{
    size_t col = first;
    bool line_start = true;
    for (const char *p = text; *p;) {
        while (*p == ' ')
            p++;
        size_t w = strcspn(p, " ");
        if (w == 0)
            break;
        if (!line_start && col + 1 + w > width) {
            fprintf(out, "\n%s", indent);
            col = indent_cols;
            line_start = true;
        }
        fprintf(out, "%s%.*s", line_start ? "" : " ", (int)w, p);
        col += (line_start ? 0 : 1) + w;
        line_start = false;
        p += w;
    }
    fputc('\n', out);
}

void slot__flags_usage(FILE *out)
{
    static const char *const headings[] = {
        [SLOT__FLAG_SERVER] = "options:",
        [SLOT__FLAG_REPLICA] = "\nreplica sets (without --cluster slotd runs standalone; docs/operations.md):",
        [SLOT__FLAG_INFO] = NULL,
    };
    fprintf(out, "usage: slotd [options]\n"
                 "\n"
                 "slotd sells the units of flash-sale events over TCP (newline-delimited JSON,\n"
                 "protocol v1), keeping them in an LMDB store. A held/confirmed/released answer\n"
                 "is sent only after the commit that made it durable.\n"
                 "\n");
    char indent[HELP_LEFT + 1];
    memset(indent, ' ', HELP_LEFT);
    indent[HELP_LEFT] = 0;
    for (int g = SLOT__FLAG_SERVER; g <= SLOT__FLAG_INFO; g++) {
        if (headings[g])
            fprintf(out, "%s\n", headings[g]);
        for (size_t i = 0; i < slot__flags_n; i++) {
            const slot__flag *f = &slot__flags[i];
            if ((int)f->group != g)
                continue;
            char left[96], text[1024];
            int n = f->short_name
                        ? snprintf(left, sizeof left, "  -%c, --%s", f->short_name, f->name)
                        : snprintf(left, sizeof left, "  --%s%s%s", f->name, f->arg ? " " : "", f->arg ? f->arg : "");
            expand(f, f->help, text, sizeof text);
            /* The text at HELP_LEFT, or two blanks after a longer flag. */
            size_t col = (size_t)n + 2 > HELP_LEFT ? (size_t)n + 2 : HELP_LEFT;
            fprintf(out, "%-*s", (int)col, left);
            wrap(out, text, col, indent, HELP_LEFT, HELP_WIDTH);
        }
    }
    fprintf(out, "\n"
                 "Numbers accept a K, M or G suffix (x1024).\n"
                 "SIGINT/SIGTERM stop the server cleanly: the batch in flight commits, queued\n"
                 "requests are answered shutting_down. One slotd per --data folder (locked).\n"
                 "Exit status: 0 after a clean stop; 1 the server could not start or failed;\n"
                 "64 a usage error.\n");
}

/* v, and for bytes a K/M/G form when it is a whole one ("16777216 (16M)"), into buf[cap]. */
static const char *man_num(uint64_t v, const char *unit, char *buf, size_t cap)
{
    static const char suffix[] = "KMG";
    int k = -1;
    if (unit && strcmp(unit, "bytes") == 0)
        for (int i = 2; i >= 0 && k < 0; i--)
            if (v >= (1ull << (10 * (i + 1))) && v % (1ull << (10 * (i + 1))) == 0)
                k = i;
    if (k < 0)
        snprintf(buf, cap, "%" PRIu64, v);
    else
        snprintf(buf, cap, "%" PRIu64 " (%" PRIu64 "%c)", v, v >> (10 * (k + 1)), suffix[k]);
    return buf;
}

void slot__flags_man(FILE *out)
{
    for (size_t i = 0; i < slot__flags_n; i++) {
        const slot__flag *f = &slot__flags[i];
        char text[2048], lo[48], hi[48], def[48];
        if (f->short_name)
            fprintf(out, "*-%c*, *--%s*\n\t", f->short_name, f->name);
        else
            fprintf(out, "*--%s*%s%s%s\n\t", f->name, f->arg ? " _" : "", f->arg ? f->arg : "", f->arg ? "_" : "");
        if (f->kind == SLOT__FLAG_NUM)
            snprintf(text, sizeof text, "%s Range %s..%s%s%s. Default: %s.", f->man,
                     man_num(f->min, f->unit, lo, sizeof lo), man_num(f->max, f->unit, hi, sizeof hi),
                     f->unit ? " " : "", f->unit ? f->unit : "", man_num(f->def, f->unit, def, sizeof def));
        else
            snprintf(text, sizeof text, "%s", f->man);
        wrap(out, text, 8, "\t", 8, MAN_WIDTH + 8);
        if (i + 1 < slot__flags_n)
            fputc('\n', out);
    }
}
