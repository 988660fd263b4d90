/*
 * slotctl_cmds.c — slotctl's commands (slotctl.h), one function each: the
 * event commands (window, show, waitlist, reshard, capacity, status, cancel;
 * create is slotctl_create.c), the server-wide ones (check, expire, stats,
 * digest, metrics, cluster, backup) and the front ends of the modules that
 * parse their own options (feed, watch, restore, verify-backup); and the
 * printing of an event view (with its v1.2 fields), its shards and the
 * replies slotctl does not model. The command
 * table and its help texts are in slotctl.c.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <jansson.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctl_time.h"
#include "slot/client.h"
#include "slot/limits.h"
#include "slot/proto.h"
#include "slotctl.h"
#include "slotctl_backup.h"
#include "slotctl_cluster.h"
#include "slotctl_feed.h"
#include "slotctl_metrics.h"
#include "slotctl_watch.h"

/* ---------------------------------------------------------------- output */

/* The event view's first column and a blank (as it has always been: scripts
 * and tests read these lines; the longer v1.2 names just push their value
 * out by a few columns). */
#define VIEW_COL "%-16s "

/* An unsigned integer member of o, or 0. */
static uint64_t member_u64(json_t *o, const char *key)
{
    json_t *v = json_object_get(o, key);
    return json_is_integer(v) && json_integer_value(v) > 0 ? (uint64_t)json_integer_value(v) : 0;
}

/* The v1.2 fields of an event view (docs/protocol.md, "Version 1.2"), which
 * slot_reply does not model: read from the reply's line; each printed only
 * when the view has it. */
static void print_view_v12(const slot_reply *r)
{
    json_t *j = r->line ? json_loads(r->line, 0, NULL) : NULL;
    if (!j)
        return;
    if (json_object_get(j, "allocated"))
        printf(VIEW_COL "%" PRIu64 "\n", "allocated", member_u64(j, "allocated"));
    json_t *parent = json_object_get(j, "parent");
    if (json_is_string(parent)) {
        printf(VIEW_COL "%s\n", "parent", json_string_value(parent));
        printf(VIEW_COL "%" PRIu64 " (the least available over the chain)\n", "effective_available",
               member_u64(j, "effective_available"));
    }
    if (json_object_get(j, "children"))
        printf(VIEW_COL "%" PRIu64 "\n", "children", member_u64(j, "children"));
    if (json_object_get(j, "max_active_per_client"))
        printf(VIEW_COL "%" PRIu64 " units\n", "max_active_per_client", member_u64(j, "max_active_per_client"));
    if (json_object_get(j, "client_rate"))
        printf(VIEW_COL "%" PRIu64 " holds/s\n", "client_rate", member_u64(j, "client_rate"));
    json_t *adm = json_object_get(j, "admission");
    if (json_is_string(adm)) {
        char t[40];
        printf(VIEW_COL "%s (admit_per_s %" PRIu64 ", grant_ttl_ms %" PRIu64 ", queue_opens_at %s)\n", "admission",
               json_string_value(adm), member_u64(j, "admit_per_s"), member_u64(j, "grant_ttl_ms"),
               slot_ctl_time_format(member_u64(j, "queue_opens_at"), t, sizeof t));
    }
    const char *cat;
    json_t *cv;
    json_object_foreach(json_object_get(j, "categories"), cat, cv) /* a seated event's */
    {
        printf(VIEW_COL "%s: capacity %" PRIu64 ", available %" PRIu64 ", held %" PRIu64 ", confirmed %" PRIu64 "\n",
               "category", cat, member_u64(cv, "capacity"), member_u64(cv, "available"), member_u64(cv, "held"),
               member_u64(cv, "confirmed"));
    }
    json_decref(j);
}

void ctl_print_event_view(const slot_reply *r)
{
    printf(VIEW_COL "%s\n", "event", r->event);
    printf(VIEW_COL "%s\n", "status", r->status);
    printf(VIEW_COL "%" PRIu64 "\n", "capacity", r->capacity);
    printf(VIEW_COL "%" PRIu64 "\n", "available", r->available);
    printf(VIEW_COL "%" PRIu64 "\n", "held", r->held);
    printf(VIEW_COL "%" PRIu64 "\n", "confirmed", r->confirmed);
    printf(VIEW_COL "%" PRIu64 "\n", "shards", r->shards);
    printf(VIEW_COL "%" PRIu64 "\n", "hold_ttl_ms", r->hold_ttl_ms);
    printf(VIEW_COL "%" PRIu64 "%s\n", "max_per_user", r->max_per_user, r->max_per_user ? "" : " (no limit)");
    printf(VIEW_COL "%" PRIu64 "\n", "max_per_request", r->max_per_request);
    char t[40];
    printf(VIEW_COL "%s\n", "opens_at", slot_ctl_time_format(r->opens_at_ms, t, sizeof t));
    printf(VIEW_COL "%s\n", "closes_at", slot_ctl_time_format(r->closes_at_ms, t, sizeof t));
    printf(VIEW_COL "%" PRIu64 "\n", "max_extensions", r->max_extensions);
    printf(VIEW_COL "%" PRIu64 "\n", "max_hold_ms", r->max_hold_ms);
    printf(VIEW_COL "%" PRIu64 "%s\n", "waitlist_max", r->waitlist_max, r->waitlist_max ? "" : " (no waitlist)");
    printf(VIEW_COL "%" PRIu64 " (%" PRIu64 " units)\n", "waiting", r->waiting, r->waiting_qty);
    print_view_v12(r);
    if (r->replay)
        printf(VIEW_COL "%s\n", "replay", "yes (the event already had these settings)");
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

int ctl_call_show_view(ctl *x, const slot_req *req)
{
    slot_reply r;
    int rc = ctl_call(x, req, &r);
    if (rc == 0 && !x->json)
        ctl_print_event_view(&r);
    slot_reply_clear(&r);
    return rc;
}

int cmd_show(ctl *x, int argc, char **argv)
{
    int o, rc = 0;
    while ((o = ctl_next_opt(x, argc, argv, NULL, &rc)) >= 0) {
    }
    if (o == -2 || (rc = ctl_want_args(x, argc - optind, argv + optind, 1, 1)))
        return rc;
    slot_req req;
    if ((rc = ctl_event_req(x, &req, SLOT_OP_EVENT, argv[optind])))
        return rc;
    slot_reply r;
    rc = ctl_call(x, &req, &r);
    if (rc == 0 && !x->json)
        ctl_print_event_view(&r);
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
    static const struct option opts[] = {{"shards", required_argument, NULL, 's'},
                                         {"help", no_argument, NULL, 'h'},
                                         {0}};
    uint64_t v = 0;
    bool have = false;
    int o, rc = 0;
    while ((o = ctl_next_opt(x, argc, argv, op == SLOT_OP_RESHARD ? opts : NULL, &rc)) >= 0) {
        if ((rc = ctl_parse_num(x, "--shards", optarg, 1, SLOT_SHARDS_MAX, &v)))
            return rc; /* only reshard has an option with a value: --shards */
        have = true;
    }
    int nargs = op == SLOT_OP_RESHARD ? 1 : 2;
    if (o == -2 || (rc = ctl_want_args(x, argc - optind, argv + optind, nargs, nargs)))
        return rc;
    if (op == SLOT_OP_RESHARD && !have)
        return ctl_usage_error(x, "%s", "--shards is required");
    if (op == SLOT_OP_SET_CAPACITY && (rc = ctl_parse_num(x, "N", argv[optind + 1], 0, SLOT_CAPACITY_MAX, &v)))
        return rc;
    slot_req req;
    if ((rc = ctl_event_req(x, &req, op, argv[optind])))
        return rc;
    if (op == SLOT_OP_RESHARD)
        req.shards = (uint32_t)v;
    else
        req.capacity = v;
    return ctl_call_show_view(x, &req);
}

int cmd_reshard(ctl *x, int argc, char **argv)
{
    return cmd_event_number(x, argc, argv, SLOT_OP_RESHARD);
}

int cmd_capacity(ctl *x, int argc, char **argv)
{
    return cmd_event_number(x, argc, argv, SLOT_OP_SET_CAPACITY);
}

int cmd_status(ctl *x, int argc, char **argv)
{
    int o, rc = 0;
    while ((o = ctl_next_opt(x, argc, argv, NULL, &rc)) >= 0) {
    }
    if (o == -2 || (rc = ctl_want_args(x, argc - optind, argv + optind, 2, 2)))
        return rc;
    slot_req req;
    if ((rc = ctl_event_req(x, &req, SLOT_OP_SET_STATUS, argv[optind])))
        return rc;
    const char *st = argv[optind + 1];
    if (strcmp(st, "on_sale") == 0)
        req.status = SLOT_EVENT_ON_SALE;
    else if (strcmp(st, "closed") == 0)
        req.status = SLOT_EVENT_CLOSED;
    else
        return ctl_usage_error(x, "status must be on_sale or closed, not '%s'", st);
    return ctl_call_show_view(x, &req);
}

int cmd_window(ctl *x, int argc, char **argv)
{
    static const struct option opts[] = {{"opens-at", required_argument, NULL, 'o'},
                                         {"closes-at", required_argument, NULL, 'e'},
                                         {"help", no_argument, NULL, 'h'},
                                         {0}};
    uint64_t t[2] = {0, 0};
    int o, rc = 0;
    while ((o = ctl_next_opt(x, argc, argv, opts, &rc)) >= 0)
        if (ctl_parse_time(x, o == 'o' ? "--opens-at" : "--closes-at", optarg, &t[o == 'e']))
            return EXIT_USAGE;
    if (o == -2 || (rc = ctl_want_args(x, argc - optind, argv + optind, 1, 1)))
        return rc;
    slot_req req;
    if ((rc = ctl_event_req(x, &req, SLOT_OP_SET_SALE_WINDOW, argv[optind])))
        return rc;
    req.opens_at_ms = t[0];
    req.closes_at_ms = t[1];
    return ctl_call_show_view(x, &req);
}

int cmd_cancel(ctl *x, int argc, char **argv)
{
    int o, rc = 0;
    while ((o = ctl_next_opt(x, argc, argv, NULL, &rc)) >= 0) {
    }
    if (o == -2 || (rc = ctl_want_args(x, argc - optind, argv + optind, 2, 2)))
        return rc;
    slot_req req;
    if (slot_req_hold_op(&req, SLOT_OP_CANCEL, argv[optind], argv[optind + 1], NULL) < 0)
        return ctl_usage_error(x, "%s", "event (64 bytes) or hold (128 bytes) name too long");
    slot_reply r;
    rc = ctl_call(x, &req, &r);
    if (rc == 0 && !x->json && r.cancelled)
        printf("cancelled %s (its units are free again)\n", argv[optind + 1]);
    else if (rc == 0 && !x->json)
        printf("not cancelled: the hold is %s\n", r.status);
    slot_reply_clear(&r);
    return rc;
}

int cmd_check(ctl *x, int argc, char **argv)
{
    int o, rc = 0;
    while ((o = ctl_next_opt(x, argc, argv, NULL, &rc)) >= 0) {
    }
    if (o == -2 || (rc = ctl_want_args(x, argc - optind, argv + optind, 0, 1)))
        return rc;
    slot_req req;
    if ((rc = ctl_event_req(x, &req, SLOT_OP_CHECK, argc > optind ? argv[optind] : NULL)))
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
    while ((o = ctl_next_opt(x, argc, argv, NULL, &rc)) >= 0) {
    }
    if (o == -2 || (rc = ctl_want_args(x, argc - optind, argv + optind, 0, 0)))
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

int cmd_expire(ctl *x, int argc, char **argv)
{
    return cmd_bare(x, argc, argv, SLOT_OP_EXPIRE);
}

int cmd_stats(ctl *x, int argc, char **argv)
{
    return cmd_bare(x, argc, argv, SLOT_OP_STATS);
}

int cmd_digest(ctl *x, int argc, char **argv)
{
    return cmd_bare(x, argc, argv, SLOT_OP_DIGEST);
}

/* waitlist: the list's length and units, and its first entries (waitlist_entries). */
int cmd_waitlist(ctl *x, int argc, char **argv)
{
    static const struct option opts[] = {{"limit", required_argument, NULL, 'l'},
                                         {"help", no_argument, NULL, 'h'},
                                         {0}};
    uint64_t limit = 10;
    int o, rc = 0;
    while ((o = ctl_next_opt(x, argc, argv, opts, &rc)) >= 0)
        if (o == 'l' && ctl_parse_num(x, "--limit", optarg, 1, SLOT_WAITLIST_SHOW_MAX, &limit))
            return EXIT_USAGE;
    if (o == -2 || (rc = ctl_want_args(x, argc - optind, argv + optind, 1, 1)))
        return rc;
    slot_req req;
    if ((rc = ctl_event_req(x, &req, SLOT_OP_WAITLIST_ENTRIES, argv[optind])))
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
        json_array_foreach(list, i, e)
        {
            printf("%8" JSON_INTEGER_FORMAT " %5" JSON_INTEGER_FORMAT " %-24s %s\n",
                   json_integer_value(json_object_get(e, "position")), json_integer_value(json_object_get(e, "qty")),
                   json_string_value(json_object_get(e, "user")), json_string_value(json_object_get(e, "request")));
        }
        json_decref(root);
    }
    slot_reply_clear(&r);
    return rc;
}

int cmd_feed(ctl *x, int argc, char **argv)
{
    for (int i = optind; i < argc; i++)
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            ctl_print_cmd_help(stdout, ctl_find_cmd(x->cmd));
            return 0;
        }
    int rc = ctl_connect(x);
    return rc ? rc : slotctl_feed(x->follow, x->token, x->json, x->timeout_ms, argc, argv);
}

/* True (after printing the command's help) when argv asks for --help: the
 * commands whose options their own module parses. */
static bool module_help(ctl *x, int argc, char **argv)
{
    for (int i = 1; i < argc; i++)
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            ctl_print_cmd_help(stdout, ctl_find_cmd(x->cmd));
            return true;
        }
    return false;
}

int cmd_backup(ctl *x, int argc, char **argv)
{
    int o, rc = 0;
    while ((o = ctl_next_opt(x, argc, argv, NULL, &rc)) >= 0) {
    }
    if (o == -2 || (rc = ctl_want_args(x, argc - optind, argv + optind, 1, 1)))
        return rc;
    if ((rc = ctl_connect(x)))
        return rc;
    return slotctl_backup(x->follow, x->json, argv[optind]);
}

int cmd_restore(ctl *x, int argc, char **argv)
{
    return module_help(x, argc, argv) ? 0 : slotctl_restore(argc, argv);
}

int cmd_verify_backup(ctl *x, int argc, char **argv)
{
    return module_help(x, argc, argv) ? 0 : slotctl_verify_backup(argc, argv, x->json);
}

int cmd_watch(ctl *x, int argc, char **argv)
{
    if (module_help(x, argc, argv))
        return 0;
    int rc = ctl_connect(x);
    return rc ? rc : slotctl_watch(x->follow, argc, argv);
}

int cmd_cluster(ctl *x, int argc, char **argv)
{
    int o, rc = 0;
    while ((o = ctl_next_opt(x, argc, argv, NULL, &rc)) >= 0) {
    }
    if (o == -2 || (rc = ctl_want_args(x, argc - optind, argv + optind, 0, 2)))
        return rc;
    if (argc - optind == 1)
        return strcmp(argv[optind], "add") == 0 || strcmp(argv[optind], "remove") == 0 ||
                       strcmp(argv[optind], "promote") == 0
                   ? ctl_usage_error(x, "%s", "a change needs a node: cluster add|remove|promote NODE")
                   : ctl_usage_error(x, "unknown change '%s': want add, remove or promote (then a node)", argv[optind]);
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
int cmd_metrics(ctl *x, int argc, char **argv)
{
    int o, rc = 0;
    while ((o = ctl_next_opt(x, argc, argv, NULL, &rc)) >= 0) {
    }
    if (o == -2 || (rc = ctl_want_args(x, argc - optind, argv + optind, 0, 0)))
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
