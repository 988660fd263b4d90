/*
 * slotctl_rebalance.c — `slotctl rebalance --placement NAME --etcd URL
 * --dry-run|--apply [--by events|holds] [--max-moves N] [--interval-ms MS]`
 * (docs/design.md, "Evening out a placement"; docs/protocol.md, "Placement").
 *
 * Reads the placement's map from etcd (the keys `slotd/placement/NAME/event/E`
 * and `set/S`, as the servers' `placement` op does), asks each set's primary
 * for the view of each of its events (`event`: a family member is left alone,
 * and `holds_made` gives --by holds its rate), plans moves greedily and, with
 * --apply, sends each through the code of `slotctl move` (ctl_move_send,
 * ctl_move_report), stopping at the first that fails.
 *
 * The plan: a set's load is its events (--by events) or the sum of its
 * events' holds made per second over --interval-ms (--by holds). While the
 * plan has fewer than --max-moves moves, take the most loaded set H and the
 * least loaded L (the first by name on ties) and, of H's events that may move
 * (serving, not in a family, not planned already, with a load above 0), the
 * one whose move to L leaves the smallest spread (max - min over all sets;
 * the first by name on ties). Stop when that spread is not smaller than the
 * spread now. Each step is one pass over the events: at most
 * SLOT_CTL_REBALANCE_MOVES_MAX x SLOT_PLACE_LIST_MAX visits in all.
 *
 * Single-threaded, blocking: the etcd read runs a libuv loop of its own until
 * it is answered (bounded by SLOT_CTL_REBALANCE_ETCD_MS).
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <uv.h>

#include "slot/error.h"
#include "slot/etcd.h"
#include "slotctl.h"

typedef struct rb_set {
    char name[SLOT_CLUSTER_NAME_BYTES_MAX + 1];
    char host[SLOT_CLIENT_ADDR_BYTES_MAX + 1]; /* its primary, as its key in the map says; "" unknown */
    uint16_t port;
    double load;    /* the plan's, changed by each planned move */
    slot_client *k; /* to its primary, opened on first use */
    bool down;      /* no primary published, or it did not take a connection: asked once */
} rb_set;

typedef struct rb_event {
    char name[SLOT_EVENT_BYTES_MAX + 1];
    int set;                                       /* index into the sets; -1: a set the map has no key for */
    const char *why;                               /* NULL: may move; else why it is left alone (static text) */
    char detail[SLOT_EVENT_BYTES_MAX + 32];        /* the family's part of why, or the move's target */
    char setname[SLOT_CLUSTER_NAME_BYTES_MAX + 1]; /* as the map says */
    bool family;     /* a parent or a child: left alone, but its load counts where it is */
    double load;     /* 1 (events) or holds made per second (holds) */
    uint64_t holds0; /* holds_made at the first sample */
    bool planned;    /* a move of the plan takes it already */
} rb_event;

typedef struct rb_move {
    int ev, from, to;
    double from_before, from_after, to_before, to_after;
} rb_move;

typedef struct rb {
    ctl *x;
    const char *placement, *etcd;
    bool by_holds;
    rb_set sets[SLOT_ROUTE_SETS_MAX];
    int nsets;
    rb_event *evs;
    int nevs, ncold; /* events; those left alone */
    rb_move moves[SLOT_CTL_REBALANCE_MOVES_MAX];
    int nmoves;
    int lo_down; /* the plan stopped at this least loaded set, whose primary does not answer; -1: it did not */
} rb;

static const char *str(json_t *o, const char *k)
{
    const char *s = json_string_value(json_object_get(o, k));
    return s ? s : "";
}

/* ---------------------------------------------------------------- the map, from etcd */

typedef struct rb_read {
    bool done;
    int status;
    rb *b;
    size_t plen;
    int bad; /* keys of the placement whose value is not the JSON slotd writes */
    bool more;
    size_t keys;
} rb_read;

static int set_index(const rb *b, const char *name)
{
    for (int i = 0; i < b->nsets; i++)
        if (strcmp(b->sets[i].name, name) == 0)
            return i;
    return -1;
}

static void read_set(rb_read *w, const char *name, json_t *v)
{
    rb *b = w->b;
    if (b->nsets >= SLOT_ROUTE_SETS_MAX || strlen(name) > SLOT_CLUSTER_NAME_BYTES_MAX) {
        w->bad++;
        return;
    }
    rb_set *s = &b->sets[b->nsets++];
    memset(s, 0, sizeof *s);
    snprintf(s->name, sizeof s->name, "%s", name);
    const char *p = str(v, "primary");
    if (p[0] && slot_addr_split(p, strlen(p), s->host, sizeof s->host, &s->port) != 0)
        s->host[0] = 0;
}

static void read_event(rb_read *w, const char *name, json_t *v)
{
    rb *b = w->b;
    if (b->nevs >= SLOT_PLACE_LIST_MAX || strlen(name) > SLOT_EVENT_BYTES_MAX ||
        !json_is_string(json_object_get(v, "set"))) {
        w->bad++;
        return;
    }
    rb_event *e = &b->evs[b->nevs++];
    memset(e, 0, sizeof *e);
    snprintf(e->name, sizeof e->name, "%s", name);
    e->set = -1; /* resolved once the whole listing is read (read_map) */
    snprintf(e->setname, sizeof e->setname, "%.*s", SLOT_CLUSTER_NAME_BYTES_MAX, str(v, "set"));
    if (strcmp(str(v, "state"), "serving") != 0) {
        e->why = "moving";
        snprintf(e->detail, sizeof e->detail, "to %.*s", SLOT_CLUSTER_NAME_BYTES_MAX, str(v, "to"));
    }
}

static void on_list(slot_etcd *c, int status, const slot_etcd_range_result *r, void *data)
{
    (void)c;
    rb_read *w = data;
    w->done = true;
    w->status = status;
    if (status != 0)
        return;
    w->more = r->more;
    w->keys = r->count;
    for (size_t i = 0; i < r->count; i++) {
        const slot_etcd_kv *kv = &r->kvs[i];
        const char *rest = kv->key_len > w->plen ? kv->key + w->plen : "";
        json_t *v = json_loadb((const char *)kv->value, kv->value_len, 0, NULL);
        if (strncmp(rest, "set/", 4) == 0 && json_is_object(v))
            read_set(w, rest + 4, v);
        else if (strncmp(rest, "event/", 6) == 0 && json_is_object(v))
            read_event(w, rest + 6, v);
        else if (strncmp(rest, "set/", 4) == 0 || strncmp(rest, "event/", 6) == 0)
            w->bad++;
        json_decref(v);
    }
}

static uint64_t now_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000u + (uint64_t)t.tv_nsec / 1000000u;
}

/* Reads the map into b. 0, EXIT_CONNECTION (etcd) or EXIT_USAGE (no such placement, no sets). */
static int read_map(rb *b)
{
    uv_loop_t loop;
    if (uv_loop_init(&loop) != 0) {
        fprintf(stderr, "slotctl: rebalance: cannot make an event loop\n");
        return EXIT_CONNECTION;
    }
    uint32_t endpoints = 1; /* each is tried at most once per request: the whole read within the bound */
    for (const char *p = b->etcd; *p && endpoints < SLOT_ETCD_ENDPOINTS_MAX; p++)
        endpoints += *p == ',';
    slot_etcd_opts o = {.timeout_ms = SLOT_CTL_REBALANCE_ETCD_MS / endpoints,
                        .body_bytes_max = SLOT_ETCD_BODY_BYTES_MAX};
    slot_etcd *c = NULL;
    char prefix[SLOT_PLACE_PREFIX_BYTES + 1];
    snprintf(prefix, sizeof prefix, "/slotd/placement/%s/", b->placement);
    rb_read w = {.b = b, .plen = strlen(prefix)};
    int rc = slot_etcd_new(&loop, b->etcd, &o, &c);
    if (rc == 0)
        rc = slot_etcd_get_prefix(c, prefix, SLOT_PLACE_LIST_MAX, on_list, &w);
    uint64_t end = now_ms() + SLOT_CTL_REBALANCE_ETCD_MS + 1000;
    while (rc == 0 && !w.done && now_ms() < end) /* each attempt is bounded by o.timeout_ms */
        uv_run(&loop, UV_RUN_ONCE);
    if (rc == 0)
        rc = w.done ? w.status : SLOT_ETCD_ETIMEDOUT;
    if (c)
        slot_etcd_close(c);
    for (int i = 0; i < 1000 && uv_run(&loop, UV_RUN_NOWAIT) != 0; i++) /* the handles' close callbacks */
        ;
    uv_loop_close(&loop);
    if (rc == SLOT_ETCD_EINVAL && !w.done) {
        fprintf(stderr, "slotctl: rebalance: --etcd: not an endpoint list (http://HOST:PORT[,...]): '%s'\n", b->etcd);
        return EXIT_USAGE;
    }
    if (rc != 0) {
        fprintf(stderr, "slotctl: rebalance: cannot read the map from etcd at %s: %s\n", b->etcd, slot_strerror(rc));
        return EXIT_CONNECTION;
    }
    if (w.keys == 0) {
        fprintf(stderr, "slotctl: rebalance: no placement '%s': etcd at %s has no key under %s\n", b->placement,
                b->etcd, prefix);
        return EXIT_USAGE;
    }
    if (w.more || w.bad) {
        fprintf(stderr, "slotctl: rebalance: the map of '%s' is %s: nothing planned\n", b->placement,
                w.more ? "longer than one listing (10,000 keys)"
                       : "not all slotd's (a key that does not parse, or more than 64 sets)");
        return EXIT_SERVER_ERROR;
    }
    if (b->nsets == 0) {
        fprintf(stderr, "slotctl: rebalance: placement '%s' has no replica sets (no key %sset/...)\n", b->placement,
                prefix);
        return EXIT_USAGE;
    }
    for (int i = 0; i < b->nevs; i++) {
        rb_event *e = &b->evs[i];
        e->set = set_index(b, e->setname);
        if (e->set < 0 && !e->why) {
            e->why = "on a set the map has no key for";
            snprintf(e->detail, sizeof e->detail, "%s", e->setname);
        }
    }
    return 0;
}

/* ---------------------------------------------------------------- the sets' views */

/* ask_view's answer for a set whose primary cannot be asked (none published, or no connection). */
#define RB_DOWN (-1)

/* The view of e from its set's primary into *out. 0, RB_DOWN (said once per set, on stderr), or an exit
 * status after a message. */
static int ask_view(rb *b, rb_event *e, json_t **out)
{
    rb_set *s = &b->sets[e->set];
    *out = NULL;
    if (s->down)
        return RB_DOWN;
    int rc = s->host[0] && !s->k ? ctl_line_open(b->x, s->host, s->port, &s->k) : 0;
    if (!s->host[0] || rc == EXIT_CONNECTION) {
        s->down = true;
        fprintf(stderr, "slotctl: rebalance: set %s: %s\n", s->name,
                s->host[0] ? "its primary does not answer" : "it has published no primary");
        return RB_DOWN;
    }
    if (rc != 0)
        return rc;
    json_t *req = json_pack("{s:s,s:s}", "op", "event", "event", e->name);
    char *t = req ? json_dumps(req, JSON_COMPACT) : NULL;
    json_decref(req);
    char line[SLOT_EVENT_BYTES_MAX + 64];
    snprintf(line, sizeof line, "%s\n", t ? t : "");
    free(t);
    if ((rc = ctl_line_ask(b->x->cmd, s->k, line, b->x->timeout_ms, out)) != 0)
        return rc;
    if (!json_is_true(json_object_get(*out, "ok"))) {
        fprintf(stderr, "slotctl: rebalance: event %s on set %s (%s:%u): %s: %s\n", e->name, s->name, s->host,
                (unsigned)s->port, str(*out, "error"), str(*out, "message"));
        json_decref(*out);
        *out = NULL;
        return EXIT_SERVER_ERROR;
    }
    return 0;
}

/* One sample of every event the map lets move (serving, on a known set): the first finds the families
 * (left alone), and keeps holds_made; the second (second: true) makes each event's holds/s. */
static int sample(rb *b, bool second, double interval_s)
{
    for (int i = 0; i < b->nevs; i++) {
        rb_event *e = &b->evs[i];
        if (e->why && !e->family)
            continue;
        json_t *v = NULL;
        int rc = ask_view(b, e, &v);
        if (rc == RB_DOWN && !second && !b->by_holds) { /* it cannot be moved from there now; it weighs 1 */
            e->why = "its set's primary does not answer";
            continue;
        }
        if (rc == RB_DOWN) {
            fprintf(stderr, "slotctl: rebalance: --by holds needs every set's rate: nothing planned\n");
            return EXIT_CONNECTION;
        }
        if (rc != 0)
            return rc;
        const char *parent = str(v, "parent");
        json_int_t children = json_integer_value(json_object_get(v, "children"));
        uint64_t made = (uint64_t)json_integer_value(json_object_get(v, "holds_made"));
        if (!second && (parent[0] || children > 0)) {
            e->why = "in a family";
            e->family = true;
            if (parent[0])
                snprintf(e->detail, sizeof e->detail, "parent %s", parent);
            else
                snprintf(e->detail, sizeof e->detail, "%d child%s", (int)children, children == 1 ? "" : "ren");
        }
        if (!second)
            e->holds0 = made;
        else
            e->load = made >= e->holds0 ? (double)(made - e->holds0) / interval_s : 0;
        json_decref(v);
    }
    return 0;
}

/* The sets' loads: 1 per event (--by events), or each event's holds made per second over two samples
 * interval_ms apart (--by holds). An event left alone counts on its set (a moving one: on its source,
 * with no rate: its target answers moving). 0 or an exit status after a message. */
static int measure(rb *b, uint64_t interval_ms)
{
    int rc = sample(b, false, 0);
    if (rc == 0 && b->by_holds) {
        uint64_t t0 = now_ms();
        struct timespec d = {.tv_sec = (time_t)(interval_ms / 1000), .tv_nsec = (long)(interval_ms % 1000) * 1000000L};
        for (int i = 0; i < 100 && nanosleep(&d, &d) != 0 && errno == EINTR; i++)
            ;
        double s = (double)(now_ms() - t0) / 1000.0;
        rc = sample(b, true, s > 0 ? s : (double)interval_ms / 1000.0);
    }
    for (int i = 0; rc == 0 && i < b->nevs; i++) {
        rb_event *e = &b->evs[i];
        if (!b->by_holds)
            e->load = 1;
        if (e->set >= 0)
            b->sets[e->set].load += e->load;
        if (e->why)
            b->ncold++;
    }
    return rc;
}

/* ---------------------------------------------------------------- the plan */

static double spread(const rb *b)
{
    double lo = b->sets[0].load, hi = lo;
    for (int i = 1; i < b->nsets; i++) {
        lo = b->sets[i].load < lo ? b->sets[i].load : lo;
        hi = b->sets[i].load > hi ? b->sets[i].load : hi;
    }
    return hi - lo;
}

/* Adds the next move to b->moves; false when no move makes the spread smaller (or none is left). */
static bool plan_step(rb *b)
{
    int hi = 0, lo = 0;
    for (int i = 1; i < b->nsets; i++) {
        if (b->sets[i].load > b->sets[hi].load)
            hi = i;
        if (b->sets[i].load < b->sets[lo].load)
            lo = i;
    }
    if (b->sets[lo].down) { /* the least loaded set cannot take an event now: no move can help it */
        b->lo_down = lo;
        return false;
    }
    double now = b->sets[hi].load - b->sets[lo].load, omax = -1e300, omin = 1e300;
    for (int i = 0; i < b->nsets; i++)
        if (i != hi && i != lo) {
            omax = b->sets[i].load > omax ? b->sets[i].load : omax;
            omin = b->sets[i].load < omin ? b->sets[i].load : omin;
        }
    int best = -1;
    double best_spread = now;
    for (int i = 0; hi != lo && i < b->nevs; i++) {
        const rb_event *e = &b->evs[i];
        if (e->why || e->planned || e->set != hi || !(e->load > 0))
            continue;
        double h = b->sets[hi].load - e->load, l = b->sets[lo].load + e->load;
        double mx = h > l ? h : l, mn = h < l ? h : l;
        mx = omax > mx ? omax : mx;
        mn = omin < mn ? omin : mn;
        if (mx - mn < best_spread - 1e-9) { /* strictly smaller: a move that only shuffles the spread is none */
            best = i;
            best_spread = mx - mn;
        }
    }
    if (best < 0)
        return false;
    rb_event *e = &b->evs[best];
    rb_move *m = &b->moves[b->nmoves++];
    *m = (rb_move){.ev = best, .from = hi, .to = lo, .from_before = b->sets[hi].load, .to_before = b->sets[lo].load};
    b->sets[hi].load -= e->load;
    b->sets[lo].load += e->load;
    m->from_after = b->sets[hi].load;
    m->to_after = b->sets[lo].load;
    e->planned = true;
    return true;
}

static void print_load(const rb *b, double v)
{
    if (b->by_holds)
        printf("%.1f/s", v);
    else
        printf("%.0f", v);
}

static void print_plan(const rb *b, double before)
{
    printf("placement %s, by %s: %d sets, %d events (%d left alone)\n", b->placement,
           b->by_holds ? "holds made per second" : "events", b->nsets, b->nevs, b->ncold);
    bool family = false;
    for (int i = 0; i < b->nevs; i++)
        if (b->evs[i].why) {
            printf("  left alone: %s (%s%s%s)\n", b->evs[i].name, b->evs[i].why, b->evs[i].detail[0] ? ", " : "",
                   b->evs[i].detail);
            family = family || b->evs[i].family;
        }
    if (family)
        printf("  (a move takes one event and a family shares its parent's units: its events stay together)\n");
    for (int i = 0; i < b->nmoves; i++) {
        const rb_move *m = &b->moves[i];
        printf("move %s from %s to %s: %s ", b->evs[m->ev].name, b->sets[m->from].name, b->sets[m->to].name,
               b->sets[m->from].name);
        print_load(b, m->from_before);
        printf(" -> ");
        print_load(b, m->from_after);
        printf(", %s ", b->sets[m->to].name);
        print_load(b, m->to_before);
        printf(" -> ");
        print_load(b, m->to_after);
        printf("\n");
    }
    printf("sets after the plan:");
    for (int i = 0; i < b->nsets; i++) {
        printf(" %s ", b->sets[i].name);
        print_load(b, b->sets[i].load);
    }
    printf("\nplan: %d move%s, spread ", b->nmoves, b->nmoves == 1 ? "" : "s");
    print_load(b, before);
    printf(" -> ");
    print_load(b, spread(b));
    if (b->lo_down >= 0)
        printf(" (it stops at set %s, the least loaded, whose primary does not answer)\n", b->sets[b->lo_down].name);
    else
        printf("%s\n", b->nmoves ? "" : " (no move makes it smaller)");
}

/* Each planned move through slotctl move's code, in order; stops at the first that fails. */
static int apply(rb *b)
{
    for (int i = 0; i < b->nmoves; i++) {
        const rb_move *m = &b->moves[i];
        const rb_set *s = &b->sets[m->from];
        const char *ev = b->evs[m->ev].name;
        json_t *r = NULL;
        int rc = ctl_move_send(b->x, s->host, s->port, ev, b->sets[m->to].name, &r);
        if (rc == 0)
            rc = ctl_move_report(b->x, ev, r);
        json_decref(r);
        if (rc != 0) {
            fprintf(stderr, "slotctl: rebalance: stopped at move %d of %d (%s from %s to %s); %d done\n", i + 1,
                    b->nmoves, ev, s->name, b->sets[m->to].name, i);
            return rc;
        }
    }
    printf("applied: %d move%s\n", b->nmoves, b->nmoves == 1 ? "" : "s");
    return 0;
}

int cmd_rebalance(ctl *x, int argc, char **argv)
{
    static const struct option opts[] = {{"placement", required_argument, NULL, 'P'},
                                         {"etcd", required_argument, NULL, 'e'},
                                         {"dry-run", no_argument, NULL, 'n'},
                                         {"apply", no_argument, NULL, 'a'},
                                         {"by", required_argument, NULL, 'b'},
                                         {"max-moves", required_argument, NULL, 'm'},
                                         {"interval-ms", required_argument, NULL, 'i'},
                                         {"help", no_argument, NULL, 'h'},
                                         {0}};
    const char *placement = NULL, *etcd = NULL, *by = "events";
    int o, rc = 0, dry = 0, app = 0;
    uint64_t max_moves = SLOT_CTL_REBALANCE_MOVES_DEFAULT, interval_ms = SLOT_CTL_REBALANCE_INTERVAL_MS_DEFAULT;
    while ((o = ctl_next_opt(x, argc, argv, opts, &rc)) >= 0) {
        if (o == 'P')
            placement = optarg;
        else if (o == 'e')
            etcd = optarg;
        else if (o == 'n')
            dry = 1;
        else if (o == 'a')
            app = 1;
        else if (o == 'b')
            by = optarg;
        else if (o == 'm' &&
                 (rc = ctl_parse_num(x, "--max-moves", optarg, 1, SLOT_CTL_REBALANCE_MOVES_MAX, &max_moves)))
            return rc;
        else if (o == 'i' && (rc = ctl_parse_num(x, "--interval-ms", optarg, SLOT_CTL_REBALANCE_INTERVAL_MS_MIN,
                                                 SLOT_CTL_REBALANCE_INTERVAL_MS_MAX, &interval_ms)))
            return rc;
    }
    if (o == -2 || (rc = ctl_want_args(x, argc - optind, argv + optind, 0, 0)))
        return rc;
    if (!placement)
        return ctl_usage_error(x, "--placement NAME is required%s", "");
    size_t plen = strlen(placement); /* slotd's --placement: 1..64 characters of [A-Za-z0-9._:-] */
    if (plen == 0 || plen > SLOT_CLUSTER_NAME_BYTES_MAX ||
        strspn(placement, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._:-") != plen)
        return ctl_usage_error(x, "--placement NAME: 1..64 characters of [A-Za-z0-9._:-], not '%s'", placement);
    if (!etcd || !etcd[0])
        return ctl_usage_error(x, "--etcd URL is required (http://HOST:PORT[,...])%s", "");
    if (dry == app)
        return ctl_usage_error(x, "give one of --dry-run and --apply%s", dry ? ", not both" : "");
    if (strcmp(by, "events") != 0 && strcmp(by, "holds") != 0)
        return ctl_usage_error(x, "--by: 'events' or 'holds', not '%s'", by);
    rb *b = calloc(1, sizeof *b);
    rb_event *evs = calloc(SLOT_PLACE_LIST_MAX, sizeof *evs);
    if (!b || !evs) {
        free(b);
        free(evs);
        fprintf(stderr, "slotctl: rebalance: out of memory\n");
        return EXIT_CONNECTION;
    }
    *b = (rb){
        .x = x, .placement = placement, .etcd = etcd, .by_holds = strcmp(by, "holds") == 0, .evs = evs, .lo_down = -1};
    rc = read_map(b);
    if (rc == 0)
        rc = measure(b, interval_ms);
    if (rc == 0) {
        double before = spread(b);
        while (b->nmoves < (int)max_moves && plan_step(b))
            ;
        print_plan(b, before);
        if (app && b->nmoves > 0)
            rc = apply(b);
        else if (!app)
            printf("dry run: nothing changed\n");
    }
    for (int i = 0; i < b->nsets; i++)
        slot_client_close(b->sets[i].k);
    free(b->evs);
    free(b);
    return rc;
}
