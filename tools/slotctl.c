/*
 * slotctl — slotd's admin tool. Every command is one or two requests of
 * docs/protocol.md sent through the client library (slot/client.h); slotctl never
 * touches a server's database itself. `restore` and `verify-backup` work
 * offline on backup files (slotctl_backup.c, slot/backup.h).
 *
 * With several addresses (--host H:P,H:P or $SLOTD_ADDR) every request goes
 * through slot_follow: it is sent to the primary of the replica set,
 * following not_primary, with the same request each time.
 *
 * Exit status: 0 done; 1 the server answered with an error (or `check` found
 * violations); 2 the server could not be reached or the connection failed;
 * 64 a usage error (unknown command or option, a bad number).
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <jansson.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sys/time.h>

#include "ctl_time.h"
#include "slot/client.h"
#include "slot/limits.h"
#include "slot/proto.h"
#include "slot_config.h"
#include "slotctl_backup.h"
#include "slotctl_cluster.h"
#include "slotctl_feed.h"
#include "slotctl_metrics.h"
#include "slotctl_watch.h"

#define EXIT_SERVER_ERROR 1
#define EXIT_CONNECTION 2
#define EXIT_USAGE 64                  /* sysexits.h EX_USAGE */
/* --host: up to SLOT_FOLLOW_NODES_MAX entries of HOST[:PORT], commas between. */
#define CTL_HOSTS_BYTES_MAX (SLOT_FOLLOW_NODES_MAX * (SLOT_CLIENT_ADDR_BYTES_MAX + 1))
#define CTL_ATTEMPTS_PER_NODE 3u       /* sends of one request per node of the list (at least 4 in all) */

typedef struct ctl {
    char host[CTL_HOSTS_BYTES_MAX + 1]; /* as given: HOST or HOST:PORT entries, comma-separated */
    uint16_t port;                      /* for the entries without a port */
    const char *token;
    bool json;                         /* print the raw reply lines */
    int timeout_ms;                    /* for each reply */
    const char *cmd;                   /* the command's name, for messages */
    slot_follow *follow;               /* the connection, following the primary */
} ctl;

typedef struct ctl_cmd {
    const char *name;
    const char *args;                  /* synopsis after the name */
    const char *summary;               /* one line, for `slotctl --help` */
    const char *help;                  /* the rest of `slotctl help NAME` */
    int (*run)(ctl *x, int argc, char **argv);
} ctl_cmd;

static const ctl_cmd *find_cmd(const char *name);
static void print_cmd_help(FILE *f, const ctl_cmd *c);

/* ---------------------------------------------------------------- arguments */

static int usage_error(const ctl *x, const char *fmt, const char *arg)
{
    fprintf(stderr, "slotctl: %s%s", x->cmd ? x->cmd : "", x->cmd ? ": " : "");
    fprintf(stderr, fmt, arg);
    if (x->cmd)
        fprintf(stderr, " (see 'slotctl %s --help')\n", x->cmd);
    else
        fprintf(stderr, " (see 'slotctl --help')\n");
    return EXIT_USAGE;
}

/* A decimal number in [min, max], the whole string and nothing else (strtoull
 * alone would take "-1", " 5" or "5x"). Returns 0, or EXIT_USAGE after a message. */
static int parse_num(const ctl *x, const char *what, const char *s, uint64_t min, uint64_t max, uint64_t *out)
{
    char *end = NULL;
    errno = 0;
    unsigned long long v = (s[0] >= '0' && s[0] <= '9') ? strtoull(s, &end, 10) : 0;
    if (end == NULL || *end != 0) {
        fprintf(stderr, "slotctl: %s%s%s: not a number: '%s'\n", x->cmd ? x->cmd : "", x->cmd ? ": " : "", what, s);
        return EXIT_USAGE;
    }
    if (errno == ERANGE || v < min || v > max) {
        fprintf(stderr, "slotctl: %s%s%s: %s is out of range %" PRIu64 "..%" PRIu64 "\n", x->cmd ? x->cmd : "",
                x->cmd ? ": " : "", what, s, min, max);
        return EXIT_USAGE;
    }
    *out = v;
    return 0;
}

/* The n positional arguments `rest` left after getopt: between min and max of them. */
static int want_args(const ctl *x, int n, char **rest, int min, int max)
{
    if (n < min)
        return usage_error(x, "%s", "missing argument");
    if (n > max)
        return usage_error(x, "unexpected argument '%s'", rest[max]);
    return 0;
}

/* A command's options: only --help unless `longopts` adds some. Returns the
 * option's value (as getopt_long), -1 at the end, or -2 after printing a usage
 * error or the help (then *rc is the exit status). */
static int next_opt(ctl *x, int argc, char **argv, const struct option *longopts, int *rc)
{
    static const struct option help_only[] = {{"help", no_argument, NULL, 'h'}, {0}};
    int o = getopt_long(argc, argv, ":h", longopts ? longopts : help_only, NULL);
    if (o == 'h') {
        print_cmd_help(stdout, find_cmd(x->cmd));
        *rc = 0;
        return -2;
    }
    if (o == '?') {
        *rc = usage_error(x, "unknown option '%s'", argv[optind - 1]);
        return -2;
    }
    if (o == ':') {
        *rc = usage_error(x, "option '%s' needs a value", argv[optind - 1]);
        return -2;
    }
    return o;
}

/* ---------------------------------------------------------------- talking to slotd */

static int ctl_call(ctl *x, const slot_req *req, slot_reply *r);

/* One entry of --host as "H:P" into out: a bare host gets x->port ("::1" becomes
 * "[::1]:P"). 0, or -1 when the entry cannot be an address. */
static int entry_addr(const ctl *x, const char *e, size_t n, char *out, size_t cap)
{
    char host[SLOT_CLIENT_ADDR_BYTES_MAX + 1];
    uint16_t port;
    size_t colons = 0;
    for (size_t i = 0; i < n; i++)
        colons += e[i] == ':';
    bool bare = colons == 0 || (colons > 1 && n > 0 && e[0] != '[');
    if (!bare) {
        if (n >= cap || slot_addr_split(e, n, host, sizeof(host), &port) < 0)
            return -1;
        snprintf(out, cap, "%.*s", (int)n, e);
        return 0;
    }
    if (n == 0 || n > SLOT_CTL_HOST_BYTES_MAX)
        return -1;
    snprintf(out, cap, colons ? "[%.*s]:%u" : "%.*s:%u", (int)n, e, (unsigned)x->port);
    return slot_addr_split(out, strlen(out), host, sizeof(host), &port) < 0 ? -1 : 0;
}

/* The follower of every address of --host (once), with the token. 0 or an exit status. */
static int ctl_connect(ctl *x)
{
    if (x->follow)
        return 0;
    char list[CTL_HOSTS_BYTES_MAX + 64 * SLOT_FOLLOW_NODES_MAX] = "";
    uint32_t n = 0;
    for (const char *p = x->host;; n++) {
        const char *comma = strchr(p, ',');
        size_t len = comma ? (size_t)(comma - p) : strlen(p);
        char one[SLOT_CLIENT_ADDR_BYTES_MAX + 1];
        if (entry_addr(x, p, len, one, sizeof(one)) < 0) {
            fprintf(stderr, "slotctl: --host: expected HOST or HOST:PORT, not '%.*s'\n", (int)len, p);
            return EXIT_USAGE;
        }
        snprintf(list + strlen(list), sizeof(list) - strlen(list), "%s%s", n ? "," : "", one);
        if (!comma)
            break;
        p = comma + 1;
    }
    slot_follow_opts o;
    slot_follow_opts_default(&o);
    o.token = x->token;
    o.connect_timeout_ms = SLOT_CTL_CONNECT_TIMEOUT_MS;
    o.reply_timeout_ms = x->timeout_ms;
    uint32_t attempts = (n + 1) * CTL_ATTEMPTS_PER_NODE;
    o.attempts_max = attempts < 4 ? 4 : attempts > SLOT_FOLLOW_ATTEMPTS_MAX ? SLOT_FOLLOW_ATTEMPTS_MAX : attempts;
    int64_t deadline = (int64_t)x->timeout_ms + SLOT_FOLLOW_DEADLINE_MS_DEFAULT; /* one slow reply plus a failover */
    o.deadline_ms = deadline > SLOT_FOLLOW_DEADLINE_MS_MAX ? SLOT_FOLLOW_DEADLINE_MS_MAX : (int)deadline;
    if (x->token && strlen(x->token) > SLOT_TOKEN_BYTES_MAX) {
        fprintf(stderr, "slotctl: --token: longer than %d bytes\n", SLOT_TOKEN_BYTES_MAX);
        return EXIT_USAGE;
    }
    char err[300];
    if (slot_follow_new(list, &o, &x->follow, err, sizeof(err)) < 0) {
        fprintf(stderr, "slotctl: --host: %s\n", err);
        return EXIT_USAGE;
    }
    return 0;
}

/* The answer in r: 0 on "ok":true; otherwise the error is printed
 * ("slotctl: CMD: code: message") and the exit status returned. With --json
 * the reply line is printed as it came. */
static int ctl_answer(ctl *x, int rc, slot_reply *r)
{
    if (rc < 0) {
        fprintf(stderr, "slotctl: %s: %s\n", x->cmd,
                rc == -EMSGSIZE ? "the request is too long" : slot_follow_error(x->follow));
        return EXIT_CONNECTION;
    }
    if (x->json)
        printf("%s\n", r->line);
    if (!r->ok) {
        fprintf(stderr, "slotctl: %s: %s: %s\n", x->cmd, r->error[0] ? r->error : "error",
                r->message[0] ? r->message : slot_err_message(r->err));
        return EXIT_SERVER_ERROR;
    }
    return 0;
}

/* Send req (to the primary, following it) and read its reply; see ctl_answer.
 * r is to be cleared by the caller. */
static int ctl_call(ctl *x, const slot_req *req, slot_reply *r)
{
    memset(r, 0, sizeof(*r));
    int rc = ctl_connect(x);
    if (rc != 0)
        return rc;
    return ctl_answer(x, slot_follow_call(x->follow, req, r), r);
}

/* A request naming one event; a usage error when the name cannot be one. */
static int event_req(const ctl *x, slot_req *req, slot_op op, const char *event)
{
    if (slot_req_event(req, op, event) < 0)
        return usage_error(x, "event name longer than 64 bytes: '%s'", event);
    return 0;
}

/* ---------------------------------------------------------------- output */

static void print_event_view(const slot_reply *r)
{
    printf("%-16s %s\n", "event", r->event);
    printf("%-16s %s\n", "status", r->status);
    printf("%-16s %" PRIu64 "\n", "capacity", r->capacity);
    printf("%-16s %" PRIu64 "\n", "available", r->available);
    printf("%-16s %" PRIu64 "\n", "held", r->held);
    printf("%-16s %" PRIu64 "\n", "confirmed", r->confirmed);
    printf("%-16s %" PRIu64 "\n", "shards", r->shards);
    printf("%-16s %" PRIu64 "\n", "hold_ttl_ms", r->hold_ttl_ms);
    printf("%-16s %" PRIu64 "%s\n", "max_per_user", r->max_per_user, r->max_per_user ? "" : " (no limit)");
    printf("%-16s %" PRIu64 "\n", "max_per_request", r->max_per_request);
    char t[40];
    printf("%-16s %s\n", "opens_at", slot_ctl_time_format(r->opens_at_ms, t, sizeof t));
    printf("%-16s %s\n", "closes_at", slot_ctl_time_format(r->closes_at_ms, t, sizeof t));
    printf("%-16s %" PRIu64 "\n", "max_extensions", r->max_extensions);
    printf("%-16s %" PRIu64 "\n", "max_hold_ms", r->max_hold_ms);
    printf("%-16s %" PRIu64 "%s\n", "waitlist_max", r->waitlist_max, r->waitlist_max ? "" : " (no waitlist)");
    printf("%-16s %" PRIu64 " (%" PRIu64 " units)\n", "waiting", r->waiting, r->waiting_qty);
    if (r->replay)
        printf("%-16s %s\n", "replay", "yes (the event already had these settings)");
}

static void print_shards(const slot_reply *r)
{
    uint64_t total = 0, lo = UINT64_MAX, hi = 0;
    for (uint32_t i = 0; i < r->nshard_free; i++) {
        total += r->shard_free[i];
        lo = r->shard_free[i] < lo ? r->shard_free[i] : lo;
        hi = r->shard_free[i] > hi ? r->shard_free[i] : hi;
    }
    printf("\n%5s %20s %7s\n", "shard", "free", "share");
    for (uint32_t i = 0; i < r->nshard_free; i++) {
        double share = total ? 100.0 * (double)r->shard_free[i] / (double)total : 0.0;
        printf("%5u %20" PRIu64 " %6.1f%%\n", i, r->shard_free[i], share);
    }
    if (r->nshard_free)
        printf("%5s %20" PRIu64 "   (largest - smallest: %" PRIu64 ")\n", "total", total, hi - lo);
}

/* A reply whose shape slotctl does not model (stats, check's violations):
 * its members without "ok", indented. */
static void print_members(const slot_reply *r, const char *key)
{
    json_t *root = json_loads(r->line, 0, NULL);
    json_t *what = key ? json_object_get(root, key) : root;
    if (!key)
        json_object_del(root, "ok");
    char *s = what ? json_dumps(what, JSON_INDENT(2) | JSON_PRESERVE_ORDER | JSON_ENCODE_ANY) : NULL;
    if (s)
        printf("%s\n", s);
    free(s);
    json_decref(root);
}

/* ---------------------------------------------------------------- commands */

static uint64_t wall_ms(void)
{
    struct timeval tv;
    gettimeofday(&tv, NULL);
    return (uint64_t)tv.tv_sec * 1000 + (uint64_t)tv.tv_usec / 1000;
}

/* A time option (--opens-at, --closes-at): ISO 8601, +30s, ms since the epoch, or 0. */
static int parse_time(const ctl *x, const char *what, const char *arg, uint64_t *out)
{
    if (slot_ctl_time_parse(arg, wall_ms(), out) == 0)
        return 0;
    char msg[160];
    snprintf(msg, sizeof msg, "%s: not a time (ISO 8601, +30s, ms since the epoch, or 0): '%.64s'", what, arg);
    return usage_error(x, "%s", msg);
}

/* One option of create into req. 0 or EXIT_USAGE. */
static int create_opt(const ctl *x, int o, const char *arg, slot_req *req)
{
    uint64_t v = 0;
    switch (o) {
    case 'o':
    case 'e':
        if (parse_time(x, o == 'o' ? "--opens-at" : "--closes-at", arg, &v))
            return EXIT_USAGE;
        *(o == 'o' ? &req->opens_at_ms : &req->closes_at_ms) = v;
        req->has |= o == 'o' ? SLOT_HAS_OPENS_AT : SLOT_HAS_CLOSES_AT;
        return 0;
    case 'x':
        if (parse_num(x, "--max-extensions", arg, 0, SLOT_MAX_EXTENSIONS_MAX, &v))
            return EXIT_USAGE;
        req->max_extensions = (uint32_t)v;
        req->has |= SLOT_HAS_MAX_EXTENSIONS;
        return 0;
    case 'w':
        if (parse_num(x, "--waitlist-max", arg, 0, SLOT_WAITLIST_MAX_MAX, &v))
            return EXIT_USAGE;
        slot_req_set_waitlist_max(req, (uint32_t)v);
        return 0;
    case 'm':
        if (parse_num(x, "--max-hold-ms", arg, SLOT_MAX_HOLD_MS_MIN, SLOT_MAX_HOLD_MS_MAX, &v))
            return EXIT_USAGE;
        req->max_hold_ms = v;
        req->has |= SLOT_HAS_MAX_HOLD_MS;
        return 0;
    case 'c':
        if (parse_num(x, "--capacity", arg, 0, SLOT_CAPACITY_MAX, &v))
            return EXIT_USAGE;
        req->capacity = v;
        return 0;
    case 's':
        if (parse_num(x, "--shards", arg, 1, SLOT_SHARDS_MAX, &v))
            return EXIT_USAGE;
        req->shards = (uint32_t)v;
        req->has |= SLOT_HAS_SHARDS;
        return 0;
    case 't':
        if (parse_num(x, "--hold-ttl-ms", arg, SLOT_HOLD_TTL_MS_MIN, SLOT_HOLD_TTL_MS_MAX, &v))
            return EXIT_USAGE;
        req->hold_ttl_ms = (uint32_t)v;
        req->has |= SLOT_HAS_HOLD_TTL;
        return 0;
    case 'u':
        if (parse_num(x, "--max-per-user", arg, 0, SLOT_CAPACITY_MAX, &v))
            return EXIT_USAGE;
        req->max_per_user = v;
        req->has |= SLOT_HAS_MAX_PER_USER;
        return 0;
    default: /* 'r' */
        if (parse_num(x, "--max-per-request", arg, 1, SLOT_MAX_PER_REQUEST_MAX, &v))
            return EXIT_USAGE;
        req->max_per_request = (uint32_t)v;
        req->has |= SLOT_HAS_MAX_PER_REQUEST;
        return 0;
    }
}

/* Sends an op whose reply is the event view, and prints that view (the raw
 * line with --json). Returns the command's exit status. */
static int call_show_view(ctl *x, const slot_req *req)
{
    slot_reply r;
    int rc = ctl_call(x, req, &r);
    if (rc == 0 && !x->json)
        print_event_view(&r);
    slot_reply_clear(&r);
    return rc;
}

static int cmd_create(ctl *x, int argc, char **argv)
{
    static const struct option opts[] = {
        {"capacity", required_argument, NULL, 'c'},        {"shards", required_argument, NULL, 's'},
        {"hold-ttl-ms", required_argument, NULL, 't'},     {"max-per-user", required_argument, NULL, 'u'},
        {"max-per-request", required_argument, NULL, 'r'}, {"opens-at", required_argument, NULL, 'o'},
        {"closes-at", required_argument, NULL, 'e'},       {"max-extensions", required_argument, NULL, 'x'},
        {"max-hold-ms", required_argument, NULL, 'm'},     {"waitlist-max", required_argument, NULL, 'w'},
        {"help", no_argument, NULL, 'h'},                  {0}};
    slot_req req;
    slot_req_init(&req, SLOT_OP_CREATE_EVENT);
    bool have_capacity = false;
    int o, rc = 0;
    while ((o = next_opt(x, argc, argv, opts, &rc)) >= 0) {
        if ((rc = create_opt(x, o, optarg, &req)))
            return rc;
        have_capacity |= o == 'c';
    }
    if (o == -2 || (rc = want_args(x, argc - optind, argv + optind, 1, 1)))
        return rc;
    if (!have_capacity)
        return usage_error(x, "%s", "--capacity is required");
    if (slot_req_set_event(&req, argv[optind]) < 0)
        return usage_error(x, "event name longer than 64 bytes: '%s'", argv[optind]);
    return call_show_view(x, &req);
}

static int cmd_show(ctl *x, int argc, char **argv)
{
    int o, rc = 0;
    while ((o = next_opt(x, argc, argv, NULL, &rc)) >= 0) {
    }
    if (o == -2 || (rc = want_args(x, argc - optind, argv + optind, 1, 1)))
        return rc;
    slot_req req;
    if ((rc = event_req(x, &req, SLOT_OP_EVENT, argv[optind])))
        return rc;
    slot_reply r;
    rc = ctl_call(x, &req, &r);
    if (rc == 0 && !x->json)
        print_event_view(&r);
    slot_reply_clear(&r);
    if (rc)
        return rc;
    req.op = SLOT_OP_SHARDS;
    rc = ctl_call(x, &req, &r);
    if (rc == 0 && !x->json)
        print_shards(&r);
    slot_reply_clear(&r);
    return rc;
}

/* reshard, capacity: one number for one event, the event view back. */
static int cmd_event_number(ctl *x, int argc, char **argv, slot_op op)
{
    static const struct option opts[] = {{"shards", required_argument, NULL, 's'}, {"help", no_argument, NULL, 'h'}, {0}};
    uint64_t v = 0;
    bool have = false;
    int o, rc = 0;
    while ((o = next_opt(x, argc, argv, op == SLOT_OP_RESHARD ? opts : NULL, &rc)) >= 0) {
        if ((rc = parse_num(x, "--shards", optarg, 1, SLOT_SHARDS_MAX, &v)))
            return rc; /* only reshard has an option with a value: --shards */
        have = true;
    }
    int nargs = op == SLOT_OP_RESHARD ? 1 : 2;
    if (o == -2 || (rc = want_args(x, argc - optind, argv + optind, nargs, nargs)))
        return rc;
    if (op == SLOT_OP_RESHARD && !have)
        return usage_error(x, "%s", "--shards is required");
    if (op == SLOT_OP_SET_CAPACITY && (rc = parse_num(x, "N", argv[optind + 1], 0, SLOT_CAPACITY_MAX, &v)))
        return rc;
    slot_req req;
    if ((rc = event_req(x, &req, op, argv[optind])))
        return rc;
    if (op == SLOT_OP_RESHARD)
        req.shards = (uint32_t)v;
    else
        req.capacity = v;
    return call_show_view(x, &req);
}

static int cmd_reshard(ctl *x, int argc, char **argv)
{
    return cmd_event_number(x, argc, argv, SLOT_OP_RESHARD);
}

static int cmd_capacity(ctl *x, int argc, char **argv)
{
    return cmd_event_number(x, argc, argv, SLOT_OP_SET_CAPACITY);
}

static int cmd_status(ctl *x, int argc, char **argv)
{
    int o, rc = 0;
    while ((o = next_opt(x, argc, argv, NULL, &rc)) >= 0) {
    }
    if (o == -2 || (rc = want_args(x, argc - optind, argv + optind, 2, 2)))
        return rc;
    slot_req req;
    if ((rc = event_req(x, &req, SLOT_OP_SET_STATUS, argv[optind])))
        return rc;
    const char *st = argv[optind + 1];
    if (strcmp(st, "on_sale") == 0)
        req.status = SLOT_EVENT_ON_SALE;
    else if (strcmp(st, "closed") == 0)
        req.status = SLOT_EVENT_CLOSED;
    else
        return usage_error(x, "status must be on_sale or closed, not '%s'", st);
    return call_show_view(x, &req);
}

static int cmd_window(ctl *x, int argc, char **argv)
{
    static const struct option opts[] = {{"opens-at", required_argument, NULL, 'o'},
                                         {"closes-at", required_argument, NULL, 'e'},
                                         {"help", no_argument, NULL, 'h'},
                                         {0}};
    uint64_t t[2] = {0, 0};
    int o, rc = 0;
    while ((o = next_opt(x, argc, argv, opts, &rc)) >= 0)
        if (parse_time(x, o == 'o' ? "--opens-at" : "--closes-at", optarg, &t[o == 'e']))
            return EXIT_USAGE;
    if (o == -2 || (rc = want_args(x, argc - optind, argv + optind, 1, 1)))
        return rc;
    slot_req req;
    if ((rc = event_req(x, &req, SLOT_OP_SET_SALE_WINDOW, argv[optind])))
        return rc;
    req.opens_at_ms = t[0];
    req.closes_at_ms = t[1];
    return call_show_view(x, &req);
}

static int cmd_cancel(ctl *x, int argc, char **argv)
{
    int o, rc = 0;
    while ((o = next_opt(x, argc, argv, NULL, &rc)) >= 0) {
    }
    if (o == -2 || (rc = want_args(x, argc - optind, argv + optind, 2, 2)))
        return rc;
    slot_req req;
    if (slot_req_hold_op(&req, SLOT_OP_CANCEL, argv[optind], argv[optind + 1], NULL) < 0)
        return usage_error(x, "%s", "event (64 bytes) or hold (128 bytes) name too long");
    slot_reply r;
    rc = ctl_call(x, &req, &r);
    if (rc == 0 && !x->json && r.cancelled)
        printf("cancelled %s (its units are free again)\n", argv[optind + 1]);
    else if (rc == 0 && !x->json)
        printf("not cancelled: the hold is %s\n", r.status);
    slot_reply_clear(&r);
    return rc;
}

static int cmd_check(ctl *x, int argc, char **argv)
{
    int o, rc = 0;
    while ((o = next_opt(x, argc, argv, NULL, &rc)) >= 0) {
    }
    if (o == -2 || (rc = want_args(x, argc - optind, argv + optind, 0, 1)))
        return rc;
    slot_req req;
    if ((rc = event_req(x, &req, SLOT_OP_CHECK, argc > optind ? argv[optind] : NULL)))
        return rc;
    slot_reply r;
    rc = ctl_call(x, &req, &r);
    if (rc == 0 && !x->json) {
        printf("events %" PRIu64 ", holds %" PRIu64 ", violations %" PRIu32 "\n", r.events, r.holds, r.nviolations);
        if (r.nviolations)
            print_members(&r, "violations");
    }
    if (rc == 0 && r.nviolations) {
        fprintf(stderr, "slotctl: check: %" PRIu32 " invariant violation%s\n", r.nviolations,
                r.nviolations == 1 ? "" : "s");
        rc = EXIT_SERVER_ERROR;
    }
    slot_reply_clear(&r);
    return rc;
}

/* expire, stats, digest: no arguments. */
static int cmd_bare(ctl *x, int argc, char **argv, slot_op op)
{
    int o, rc = 0;
    while ((o = next_opt(x, argc, argv, NULL, &rc)) >= 0) {
    }
    if (o == -2 || (rc = want_args(x, argc - optind, argv + optind, 0, 0)))
        return rc;
    slot_req req;
    slot_req_init(&req, op);
    slot_reply r;
    rc = ctl_call(x, &req, &r);
    if (rc == 0 && !x->json && op == SLOT_OP_EXPIRE)
        printf("expired %" PRIu64 " hold%s\n", r.expired, r.expired == 1 ? "" : "s");
    else if (rc == 0 && !x->json && op == SLOT_OP_DIGEST)
        printf("seq %" PRIu64 " digest %s\n", r.seq, r.digest);
    else if (rc == 0 && !x->json)
        print_members(&r, NULL);
    slot_reply_clear(&r);
    return rc;
}

static int cmd_expire(ctl *x, int argc, char **argv)
{
    return cmd_bare(x, argc, argv, SLOT_OP_EXPIRE);
}

static int cmd_stats(ctl *x, int argc, char **argv)
{
    return cmd_bare(x, argc, argv, SLOT_OP_STATS);
}

static int cmd_digest(ctl *x, int argc, char **argv)
{
    return cmd_bare(x, argc, argv, SLOT_OP_DIGEST);
}

/* waitlist: the list's length and units, and its first entries (waitlist_entries). */
static int cmd_waitlist(ctl *x, int argc, char **argv)
{
    static const struct option opts[] = {{"limit", required_argument, NULL, 'l'}, {"help", no_argument, NULL, 'h'}, {0}};
    uint64_t limit = 10;
    int o, rc = 0;
    while ((o = next_opt(x, argc, argv, opts, &rc)) >= 0)
        if (o == 'l' && parse_num(x, "--limit", optarg, 1, SLOT_WAITLIST_SHOW_MAX, &limit))
            return EXIT_USAGE;
    if (o == -2 || (rc = want_args(x, argc - optind, argv + optind, 1, 1)))
        return rc;
    slot_req req;
    if ((rc = event_req(x, &req, SLOT_OP_WAITLIST_ENTRIES, argv[optind])))
        return rc;
    req.limit = (uint32_t)limit;
    slot_reply r;
    rc = ctl_call(x, &req, &r);
    if (rc == 0 && !x->json) {
        printf("%-16s %" PRIu64 "\n", "waiting", r.waiting);
        printf("%-16s %" PRIu64 "\n", "waiting_qty", r.waiting_qty);
        printf("%-16s %" PRIu64 "\n", "waitlist_max", r.waitlist_max);
        json_t *root = json_loads(r.line, 0, NULL);
        json_t *list = json_object_get(root, "entries");
        if (json_array_size(list) > 0)
            printf("\n%8s %5s %-24s %s\n", "position", "qty", "user", "request");
        size_t i;
        json_t *e;
        json_array_foreach(list, i, e) {
            printf("%8" JSON_INTEGER_FORMAT " %5" JSON_INTEGER_FORMAT " %-24s %s\n",
                   json_integer_value(json_object_get(e, "position")), json_integer_value(json_object_get(e, "qty")),
                   json_string_value(json_object_get(e, "user")), json_string_value(json_object_get(e, "request")));
        }
        json_decref(root);
    }
    slot_reply_clear(&r);
    return rc;
}

static int cmd_feed(ctl *x, int argc, char **argv)
{
    for (int i = optind; i < argc; i++)
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            print_cmd_help(stdout, find_cmd(x->cmd));
            return 0;
        }
    int rc = ctl_connect(x);
    return rc ? rc : slotctl_feed(x->follow, x->json, x->timeout_ms, argc, argv);
}

/* True (after printing the command's help) when argv asks for --help: the
 * commands whose options their own module parses. */
static bool module_help(ctl *x, int argc, char **argv)
{
    for (int i = 1; i < argc; i++)
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            print_cmd_help(stdout, find_cmd(x->cmd));
            return true;
        }
    return false;
}

static int cmd_backup(ctl *x, int argc, char **argv)
{
    int o, rc = 0;
    while ((o = next_opt(x, argc, argv, NULL, &rc)) >= 0) {
    }
    if (o == -2 || (rc = want_args(x, argc - optind, argv + optind, 1, 1)))
        return rc;
    if ((rc = ctl_connect(x)))
        return rc;
    return slotctl_backup(x->follow, x->json, argv[optind]);
}

static int cmd_restore(ctl *x, int argc, char **argv)
{
    return module_help(x, argc, argv) ? 0 : slotctl_restore(argc, argv);
}

static int cmd_verify_backup(ctl *x, int argc, char **argv)
{
    return module_help(x, argc, argv) ? 0 : slotctl_verify_backup(argc, argv, x->json);
}

static int cmd_watch(ctl *x, int argc, char **argv)
{
    if (module_help(x, argc, argv))
        return 0;
    int rc = ctl_connect(x);
    return rc ? rc : slotctl_watch(x->follow, argc, argv);
}

static int cmd_cluster(ctl *x, int argc, char **argv)
{
    int o, rc = 0;
    while ((o = next_opt(x, argc, argv, NULL, &rc)) >= 0) {
    }
    if (o == -2 || (rc = want_args(x, argc - optind, argv + optind, 0, 2)))
        return rc;
    if (argc - optind == 1)
        return strcmp(argv[optind], "add") == 0 || strcmp(argv[optind], "remove") == 0 ||
                       strcmp(argv[optind], "promote") == 0
                   ? usage_error(x, "%s", "a change needs a node: cluster add|remove|promote NODE")
                   : usage_error(x, "unknown change '%s': want add, remove or promote (then a node)", argv[optind]);
    if ((rc = ctl_connect(x)))
        return rc;
    if (argc - optind == 2)
        return slotctl_cluster_change(x->follow, x->json, argv[optind], argv[optind + 1]);
    slot_req req;
    slot_req_init(&req, SLOT_OP_CLUSTER);
    slot_reply r;
    int crc = slot_follow_call(x->follow, &req, &r);
    if (crc == 0 && r.err == SLOT_E_UNKNOWN_OP && !x->json) {
        /* A slotd from before replica sets: it can only be standalone. */
        printf("standalone server (%s does not know the cluster op: a slotd without replica sets)\n",
               slot_follow_node(x->follow));
        slot_reply_clear(&r);
        return 0;
    }
    rc = ctl_answer(x, crc, &r);
    if (rc == 0 && !x->json)
        slotctl_cluster_print(&r);
    slot_reply_clear(&r);
    return rc;
}

/* metrics: the Prometheus text (slotctl_metrics.c). */
static int cmd_metrics(ctl *x, int argc, char **argv)
{
    int o, rc = 0;
    while ((o = next_opt(x, argc, argv, NULL, &rc)) >= 0) {
    }
    if (o == -2 || (rc = want_args(x, argc - optind, argv + optind, 0, 0)))
        return rc;
    slot_req req;
    slot_req_init(&req, SLOT_OP_METRICS);
    slot_reply r;
    rc = ctl_call(x, &req, &r);
    if (rc == 0 && !x->json && slotctl_metrics_print(&r, stdout) != 0)
        rc = EXIT_SERVER_ERROR;
    slot_reply_clear(&r);
    return rc;
}

static int cmd_help(ctl *x, int argc, char **argv);

static const ctl_cmd commands[] = {
    {"create",
     "EVENT --capacity N [--shards N] [--hold-ttl-ms MS] [--max-per-user N] [--max-per-request N]\n"
     "       [--opens-at TIME] [--closes-at TIME] [--max-extensions N] [--max-hold-ms MS] [--waitlist-max N]",
     "create an event (create_event)",
     "Creates EVENT with CAPACITY units spread evenly over its shards. Running it again with\n"
     "the same settings changes nothing (replay); other settings are refused (event_exists).\n"
     "  --capacity N          units to sell, 0..2^40 (required)\n"
     "  --shards N            1..1024 (server default 16)\n"
     "  --hold-ttl-ms MS      how long a hold lasts, 1000..86400000 (default 600000)\n"
     "  --max-per-user N      held + confirmed units per user, 0..2^40, 0 = no limit (default 0)\n"
     "  --max-per-request N   units per hold, 1..1000 (default 10)\n"
     "  --opens-at TIME       no holds before this time (default none)\n"
     "  --closes-at TIME      no holds from this time on, after --opens-at (default none)\n"
     "  --max-extensions N    extends per hold, 0..100 (default 1)\n"
     "  --max-hold-ms MS      a hold never lasts past created + MS, 1000..2^40 (default 2 x hold-ttl-ms)\n"
     "  --waitlist-max N      entries the waitlist may hold, 0..10000000, 0 = no waitlist (default 0)\n"
     "TIME is ISO 8601 (2025-11-30T12:00:00Z, +01:00 offsets, no zone = UTC), +30s / +5m / +2h / +1d\n"
     "from now, ms since the Unix epoch, or 0 (none).\n",
     cmd_create},
    {"window", "EVENT [--opens-at TIME] [--closes-at TIME]", "set an event's sale window (set_sale_window)",
     "Holds before --opens-at or from --closes-at on are answered not_on_sale; confirms, releases\n"
     "and replays go on. A time left out is none (0), so `slotctl window EVENT` removes the window.\n"
     "TIME as for create. set_status closed still closes the event whatever the window says.\n",
     cmd_window},
    {"show", "EVENT", "show an event's counters and the free units of each shard (event, shards)",
     "Prints the event view (capacity, available, held, confirmed, settings) and a table of\n"
     "the free units per shard. With --json, prints the two raw replies, one per line.\n",
     cmd_show},
    {"waitlist", "EVENT [--limit N]", "show an event's waitlist: length, units, first entries (waitlist_entries)",
     "Prints how many entries wait and for how many units, and the first entries in join order\n"
     "with their positions (1 = next).\n"
     "  --limit N             entries to show, 1..100 (default 10)\n",
     cmd_waitlist},
    {"reshard", "EVENT --shards N", "spread the free units over N shards (reshard)",
     "Moves the free units of EVENT onto N shards (1..1024), evenly, in one transaction.\n"
     "Held and confirmed units stay where they are.\n",
     cmd_reshard},
    {"capacity", "EVENT N", "set an event's capacity (set_capacity)",
     "Sets the capacity of EVENT to N (0..2^40); the difference is added to or taken from\n"
     "the free units. Refused (capacity_below_allocated) below held + confirmed.\n",
     cmd_capacity},
    {"status", "EVENT on_sale|closed", "open or close an event for sale (set_status)",
     "A closed event answers new holds with not_on_sale; confirms and releases go on.\n", cmd_status},
    {"cancel", "EVENT HOLD", "cancel a held or confirmed hold, returning its units (cancel)",
     "Prints whether the hold was cancelled; a hold already released, expired or cancelled\n"
     "is left as it is (that is not an error).\n",
     cmd_cancel},
    {"check", "[EVENT]", "verify the invariants of one event or all (check); exit 1 on violations",
     "A full scan of the server's invariants (docs/protocol.md, \"Invariants\"). Prints the counts and\n"
     "every violation found; exits 1 when there is any.\n",
     cmd_check},
    {"expire", "", "run the hold sweeper now (expire)", "Expires every hold whose time is up and prints how many.\n",
     cmd_expire},
    {"stats", "", "print the server's counters (stats)", "Prints the server's counters as indented JSON.\n",
     cmd_stats},
    {"metrics", "", "print the server's metrics in the Prometheus text format (metrics)", NULL, cmd_metrics},
    {"digest", "", "print the seq and SHA-256 digest of the server's state (digest)",
     "Prints the number of write batches the state has seen (seq) and a hash of every event,\n"
     "shard, hold and user record: two servers with the same seq and digest hold the same data.\n",
     cmd_digest},
    {"feed", "[--from N] [--consumer NAME] [--follow] | --consumers",
     "print the feed's entries, or the consumers' positions and lag", NULL, cmd_feed},
    {"cluster", "[add|remove|promote NODE]",
     "show the replica set, or change its members (cluster, cluster_change)",
     "Without arguments: asks any node (the first of --host that answers) for the replica set's\n"
     "configuration and prints a table of its members. A standalone server says so.\n"
     "With a change, the primary (followed through --host) changes the configuration by a\n"
     "compare-and-swap in etcd that raises the epoch, then prints the set:\n"
     "  add NODE       NODE (running with the set's flags) may join again; done once it caught\n"
     "                 up and is a member\n"
     "  remove NODE    a replica leaves and is not added back until `add`; the primary\n"
     "                 cannot be removed (promote another member first)\n"
     "  promote NODE   planned switchover: the primary holds new writes, drains what is in\n"
     "                 flight until NODE has every record, then NODE is primary in a new\n"
     "                 epoch; nothing is lost, writes pause briefly\n"
     "With --json, the raw reply.\n",
     cmd_cluster},
    {"watch", "[EVENT] [--once] [--interval MS]", "a live view: units left, holds/s, sold-out/s, latency, commits",
     NULL, cmd_watch},
    {"backup", "FILE", "write a hot backup of the server's store to FILE, on the server's machine (backup)", NULL,
     cmd_backup},
    {"restore", "FILE --data DIR [--force]", "offline: put a backup's store into the data folder DIR", NULL,
     cmd_restore},
    {"verify-backup", "FILE", "offline: check a backup file (checksums, seq, digest, check); exit 1 if bad", NULL,
     cmd_verify_backup},
    {"help", "[COMMAND]", "show help for slotctl or one command", "", cmd_help},
};

static const ctl_cmd *find_cmd(const char *name)
{
    for (size_t i = 0; name && i < sizeof(commands) / sizeof(commands[0]); i++)
        if (strcmp(commands[i].name, name) == 0)
            return &commands[i];
    return NULL;
}

/* The help text of a command whose module keeps it. */
static const char *module_help_text(const ctl_cmd *c)
{
    if (strcmp(c->name, "metrics") == 0)
        return slotctl_metrics_help();
    if (strcmp(c->name, "watch") == 0)
        return slotctl_watch_help();
    if (strcmp(c->name, "backup") == 0)
        return slotctl_backup_help();
    if (strcmp(c->name, "restore") == 0)
        return slotctl_restore_help();
    if (strcmp(c->name, "verify-backup") == 0)
        return slotctl_verify_backup_help();
    return slotctl_feed_help();
}

static void print_cmd_help(FILE *f, const ctl_cmd *c)
{
    fprintf(f, "usage: slotctl [GLOBAL OPTIONS] %s %s\n\n%s.\n\n%s", c->name, c->args, c->summary,
            c->help ? c->help : module_help_text(c));
    fprintf(f, "  -h, --help            this help\n");
}

static void print_help(FILE *f)
{
    fprintf(f,
            "usage: slotctl [--host H[,H...]] [--port P] [--token T] [--json] [--timeout S] COMMAND [ARGS...]\n\n"
            "The admin tool of slotd: runs admin ops of the slotd protocol.\n\n"
            "Global options:\n"
            "  -H, --host H[,H...]   server address (default %s, or $SLOTD_ADDR); each H is\n"
            "                        HOST or HOST:PORT; with a replica set's members, requests\n"
            "                        go to its primary (following not_primary)\n"
            "  -p, --port P          server port for a HOST without one, %d..%d (default %d,\n"
            "                        or the port of $SLOTD_ADDR=host:port)\n"
            "  -t, --token T         send hello with this token first (or $SLOTD_TOKEN)\n"
            "  -j, --json            print the server's raw reply lines instead of tables\n"
            "      --timeout S       seconds to wait for each reply, %d..%d (default %d)\n"
            "  -h, --help            this help\n"
            "  -V, --version         print the version\n\n"
            "Commands:\n",
            SLOT_HOST_DEFAULT, SLOT_PORT_MIN, SLOT_PORT_MAX, SLOT_PORT_DEFAULT, SLOT_CTL_TIMEOUT_S_MIN,
            SLOT_CTL_TIMEOUT_S_MAX, SLOT_CTL_TIMEOUT_S_DEFAULT);
    for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
        fprintf(f, "  %-14s %s\n", commands[i].name, commands[i].summary);
    fprintf(f, "\n'slotctl help COMMAND' or 'slotctl COMMAND --help' tells more.\n"
               "Exit status: 0 done; 1 the server refused (or check found violations);\n"
               "2 the server could not be reached; 64 a usage error.\n");
}

static int cmd_help(ctl *x, int argc, char **argv)
{
    int o, rc = 0;
    while ((o = next_opt(x, argc, argv, NULL, &rc)) >= 0) {
    }
    if (o == -2 || (rc = want_args(x, argc - optind, argv + optind, 0, 1)))
        return rc;
    if (argc == optind) {
        print_help(stdout);
        return 0;
    }
    const ctl_cmd *c = find_cmd(argv[optind]);
    if (!c) {
        x->cmd = NULL;
        return usage_error(x, "unknown command '%s'", argv[optind]);
    }
    print_cmd_help(stdout, c);
    return 0;
}

/* ---------------------------------------------------------------- main */

/* "host:port" or "[v6]:port" into x. 0 or EXIT_USAGE. */
static int parse_addr(ctl *x, const char *what, const char *s)
{
    const char *colon = strrchr(s, ':');
    const char *host = s, *host_end = colon;
    if (s[0] == '[') {
        host = s + 1;
        host_end = strchr(s, ']');
        if (!host_end || host_end + 1 != colon)
            colon = NULL;
    }
    uint64_t port = 0;
    if (!colon || host_end <= host || (size_t)(host_end - host) > SLOT_CTL_HOST_BYTES_MAX) {
        fprintf(stderr, "slotctl: %s: expected HOST:PORT, not '%s'\n", what, s);
        return EXIT_USAGE;
    }
    if (parse_num(x, what, colon + 1, SLOT_PORT_MIN, SLOT_PORT_MAX, &port))
        return EXIT_USAGE;
    memcpy(x->host, host, (size_t)(host_end - host));
    x->host[host_end - host] = 0;
    x->port = (uint16_t)port;
    return 0;
}

/* Global options, up to the command name. Returns -1 to go on, else an exit status. */
static int parse_global(ctl *x, int argc, char **argv)
{
    static const struct option opts[] = {
        {"host", required_argument, NULL, 'H'}, {"port", required_argument, NULL, 'p'},
        {"token", required_argument, NULL, 't'}, {"json", no_argument, NULL, 'j'},
        {"timeout", required_argument, NULL, 'T'}, {"help", no_argument, NULL, 'h'},
        {"version", no_argument, NULL, 'V'},     {0}};
    uint64_t v = 0;
    int o;
    while ((o = getopt_long(argc, argv, "+:H:p:t:jhV", opts, NULL)) != -1) {
        switch (o) {
        case 'H':
            if (strlen(optarg) == 0 || strlen(optarg) > CTL_HOSTS_BYTES_MAX)
                return usage_error(x, "bad --host '%s'", optarg);
            strcpy(x->host, optarg);
            break;
        case 'p':
            if (parse_num(x, "--port", optarg, SLOT_PORT_MIN, SLOT_PORT_MAX, &v))
                return EXIT_USAGE;
            x->port = (uint16_t)v;
            break;
        case 't': x->token = optarg; break;
        case 'j': x->json = true; break;
        case 'T':
            if (parse_num(x, "--timeout", optarg, SLOT_CTL_TIMEOUT_S_MIN, SLOT_CTL_TIMEOUT_S_MAX, &v))
                return EXIT_USAGE;
            x->timeout_ms = (int)v * 1000;
            break;
        case 'h': print_help(stdout); return 0;
        case 'V': printf("slotctl %s (protocol %d)\n", SLOT_VERSION, SLOT_PROTOCOL_VERSION); return 0;
        case ':': return usage_error(x, "option '%s' needs a value", argv[optind - 1]);
        default: return usage_error(x, "unknown option '%s'", argv[optind - 1]);
        }
    }
    return -1;
}

int main(int argc, char **argv)
{
    ctl x = {.port = SLOT_PORT_DEFAULT, .timeout_ms = SLOT_CTL_TIMEOUT_S_DEFAULT * 1000};
    strcpy(x.host, SLOT_HOST_DEFAULT);
    const char *env = getenv("SLOTD_ADDR");
    if (env && *env && strchr(env, ',')) { /* a replica set's members: each HOST:PORT */
        if (strlen(env) > CTL_HOSTS_BYTES_MAX) {
            fprintf(stderr, "slotctl: $SLOTD_ADDR: longer than %d bytes\n", CTL_HOSTS_BYTES_MAX);
            return EXIT_USAGE;
        }
        strcpy(x.host, env);
    } else if (env && *env && parse_addr(&x, "$SLOTD_ADDR", env)) {
        return EXIT_USAGE;
    }
    x.token = getenv("SLOTD_TOKEN");
    if (x.token && !*x.token)
        x.token = NULL;
    opterr = 0;
    int rc = parse_global(&x, argc, argv);
    if (rc >= 0)
        return rc;
    if (optind >= argc) {
        print_help(stderr);
        return EXIT_USAGE;
    }
    const ctl_cmd *c = find_cmd(argv[optind]);
    if (!c)
        return usage_error(&x, "unknown command '%s'", argv[optind]);
    x.cmd = c->name;
    int cargc = argc - optind;
    char **cargv = argv + optind;
    optind = 0; /* GNU getopt: start over on the command's own arguments */
    rc = c->run(&x, cargc, cargv);
    slot_follow_free(x.follow);
    return rc;
}
