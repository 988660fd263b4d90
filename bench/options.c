/* options.c — slot-bench's command line: one table of options, each valid
 * for some scenarios, with defaults per scenario; --help is generated from
 * the same table so it cannot drift from what is parsed. This file holds the
 * table, the defaults, --help and the parsing loop; the value parsers and
 * the checks between options are in options_check.c (options.h), the
 * configuration as JSON in config_json.c. */
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>
#include <uv.h>

#include "config.h"
#include "exit.h"
#include "limits.h"
#include "options.h"
#include "util.h"
#include "slot/assert.h"
#include "slot/client.h"
#include "slot_config.h"

static const struct {
    const char *name, *prefix, *summary;
} scenario_info[] = {
    [BENCH_HOT_RELEASE] = {"hot-release", "hr", "everyone at once until sold out, then a tail of sold_out answers"},
    [BENCH_OPEN_LOOP] = {"open-loop", "ol", "holds on a fixed schedule (--rate); latency from the intended send time"},
    [BENCH_CHURN] = {"churn", "ch", "a steady sale: holds confirmed, released or abandoned after think times"},
    [BENCH_SOLD_OUT] = {"sold-out", "so", "an event already sold out: how fast refusals are answered"},
    [BENCH_MULTI_EVENT] = {"multi-event", "me", "E events at once with Zipf popularity, until all are sold out"},
    [BENCH_WAITLIST] = {"waitlist", "wl",
                        "K buyers wait for a sold-out event while units come back: offers in join order?"},
    [BENCH_PING] = {"ping", "pi", "the round-trip ceiling: Redis PING, or slotd's hello, through the same engine"},
    [BENCH_WAITING_ROOM] = {"waiting-room", "wr",
                            "a crowd joins a waiting room (queue or lottery), is admitted at a rate, holds with grants"},
};

const char *bench_scenario_name(bench_scenario s)
{
    return scenario_info[s].name;
}

const char *bench_scenario_summary(bench_scenario s)
{
    return scenario_info[s].summary;
}

bool bench_scenario_sells_out(bench_scenario s)
{
    return s == BENCH_HOT_RELEASE || s == BENCH_MULTI_EVENT;
}

/* ---------------------------------------------------------------- the option table */

enum {
    O_HOST = 256,
    O_PORT,
    O_TOKEN,
    O_TARGET,
    O_REMOTE,
    O_PLACEMENT,
    O_EVENT,
    O_CONNS,
    O_PIPELINE,
    O_QTY,
    O_CAPACITY,
    O_SHARDS,
    O_PER_USER,
    O_USERS,
    O_DURATION,
    O_REQUESTS,
    O_SEED,
    O_WARMUP,
    O_TAIL,
    O_OPENS_IN,
    O_RATE,
    O_CONFIRM,
    O_RELEASE,
    O_ABANDON,
    O_THINK,
    O_TTL,
    O_EVENTS,
    O_ZIPF,
    O_JSON,
    O_CSV,
    O_SVG,
    O_HELP,
    O_MEMBERS,
    O_EXTEND,
    O_PARTIAL,
    O_LATE,
    O_CART,
    O_TYPES,
    O_WAITERS,
    O_POLL,
    O_THREADS,
    O_PEER,
    O_ALLOCATION,
    O_PRESALE,
    O_CROWD,
    O_ADMIT,
    O_MODE,
    O_CONFIRM_SHARE,
    O_SEATED,
    O_ADJACENT,
    O_NAMED,
};

#define ONLY(s) (1u << (s))
#define ALL 0x3fu                                           /* the scenarios that hold (waitlist included) */
#define ROOM ONLY(BENCH_WAITING_ROOM)
#define ANY (ALL | ONLY(BENCH_PING) | ROOM)                 /* every scenario */
#define CHURN_WL (ONLY(BENCH_CHURN) | ONLY(BENCH_WAITLIST)) /* the options of holds that come back */
/* --threads: the closed-loop scenarios whose connections are independent (not churn's sessions,
 * nor open-loop's one schedule, nor the waitlist's ordered joins). */
#define THREADED (ONLY(BENCH_HOT_RELEASE) | ONLY(BENCH_SOLD_OUT) | ONLY(BENCH_MULTI_EVENT) | ONLY(BENCH_PING))

/* How an option's value is read: into the bench_config field at `off` for
 * the numeric kinds, by its own code (one_option / set_value) for the rest. */
typedef enum opt_kind {
    K_FLAG,    /* no value */
    K_TEXT,    /* a string */
    K_UINT,    /* a decimal integer in min..max, into a field of `size` bytes */
    K_SECONDS, /* seconds with up to 3 decimals, min..max in ms, into a uint32_t field of ms */
    K_REAL,    /* a decimal number in dmin..dmax, into a double field */
    K_OTHER,   /* a value with a grammar of its own (--qty, --think-ms, --target) */
} opt_kind;

static const struct opt_def {
    const char *name, *arg; /* arg NULL: a flag */
    int id;
    uint32_t scenarios; /* bit per bench_scenario */
    opt_kind kind;
    size_t off, size;  /* K_UINT, K_SECONDS, K_REAL: the field */
    uint64_t min, max; /* K_UINT; K_SECONDS: in ms */
    double dmin, dmax; /* K_REAL */
    const char *help;
} opt_defs[] = {
#define FIELD(f) offsetof(bench_config, f), sizeof(((bench_config *)0)->f)
#define OPT_UINT(name, arg, id, sc, f, lo, hi, help)            \
    {                                                           \
        name, arg, id, sc, K_UINT, FIELD(f), lo, hi, 0, 0, help \
    }
#define OPT_SECONDS(name, id, sc, f, lo_ms, hi_ms, help)                 \
    {                                                                    \
        name, "S", id, sc, K_SECONDS, FIELD(f), lo_ms, hi_ms, 0, 0, help \
    }
#define OPT_REAL(name, arg, id, sc, f, lo, hi, help)            \
    {                                                           \
        name, arg, id, sc, K_REAL, FIELD(f), 0, 0, lo, hi, help \
    }
#define OPT(name, arg, id, sc, kind, help)              \
    {                                                   \
        name, arg, id, sc, kind, 0, 0, 0, 0, 0, 0, help \
    }
    OPT("host", "H", O_HOST, ANY, K_TEXT,
        "server address: HOST or HOST:PORT; several (repeated or comma-separated) are a replica set's "
        "members, and the load follows the primary"),
    OPT("cluster-members", "H:P,...", O_MEMBERS, ANY & ~ROOM, K_TEXT, "a replica set's members (the same as --host)"),
    OPT_UINT("port", "P", O_PORT, ANY, port, 1, BENCH_PORT_MAX, "server port"),
    OPT("token", "T", O_TOKEN, ANY, K_TEXT, "send hello with this token on every connection (redis: AUTH)"),
    OPT("target", "URL", O_TARGET, ANY & ~ROOM, K_OTHER,
        "slotd://H:P, or redis://H:P to run the same scenario against Redis+Lua"),
    OPT("allow-remote", NULL, O_REMOTE, ANY, K_FLAG, "allow a host that is not loopback (refused otherwise)"),
    OPT("event", "NAME", O_EVENT, ALL | ROOM, K_TEXT, "event to create (multi-event: NAME-<i>); must be new"),
    OPT_UINT("connections", "K", O_CONNS, ANY, connections, 1, BENCH_CONNS_MAX, "concurrent connections"),
    OPT_UINT("pipeline", "D", O_PIPELINE, ANY, pipeline, 1, BENCH_PIPELINE_MAX,
             "requests in flight per connection (open-loop: at most)"),
    OPT("qty", "Q", O_QTY, ALL, K_OTHER, "units per hold: N, or a distribution like 1:70,2:20,4:10 (qty:weight)"),
    OPT_UINT("capacity", "N", O_CAPACITY, ALL, capacity, 0, SLOT_CAPACITY_MAX, "units of each event"),
    OPT_UINT("shards", "N", O_SHARDS, ALL, shards, 1, SLOT_SHARDS_MAX, "shards of each event"),
    OPT_UINT("max-per-user", "M", O_PER_USER, ALL, max_per_user, 0, SLOT_CAPACITY_MAX,
             "the events' max_per_user (0 = no limit)"),
    OPT_UINT("users", "N", O_USERS, ALL & ~ONLY(BENCH_WAITLIST), users, 0, BENCH_USERS_MAX,
             "user pool: each hold picks one of N users (0 = a new user each)"),
    OPT_SECONDS("duration", O_DURATION, ANY, duration_ms, BENCH_DURATION_MS_MIN, BENCH_DURATION_MS_MAX,
                "bound on the measured phase in seconds, fractions allowed"),
    OPT_UINT("requests", "N", O_REQUESTS, ANY & ~ROOM, requests, 1, BENCH_REQUESTS_MAX,
             "bound on the requests sent in the measured phase"),
    OPT_UINT("seed", "N", O_SEED, ANY, seed, 0, BENCH_SEED_MAX, "random seed: event name, users, quantities, shards"),
    OPT_SECONDS("warmup", O_WARMUP, ALL, warmup_ms, 0, BENCH_DURATION_MS_MAX,
                "seconds of the same load on a separate event first, not measured"),
    OPT_UINT("tail", "N", O_TAIL, ONLY(BENCH_HOT_RELEASE) | ONLY(BENCH_MULTI_EVENT), tail, 0, BENCH_TAIL_MAX,
             "sold_out answers to collect after the sell-out"),
    OPT_UINT("cart", "K", O_CART, ONLY(BENCH_HOT_RELEASE), cart, 1, SLOT_CART_ITEMS_MAX,
             "each buyer holds a cart of K events at once (one hold_many request; K events NAME-<i> of --capacity "
             "each, all or nothing); 1 = plain holds of one event"),
    OPT_UINT("types", "N", O_TYPES, ONLY(BENCH_HOT_RELEASE), types, 0, SLOT_CART_ITEMS_MAX,
             "a 3-level family: NAME of --capacity, NAME-area under it, N ticket types NAME-<i> under that whose "
             "capacities add up to twice --capacity; buyers spread over the types; 0 = one plain event"),
    OPT_UINT("allocation", "N", O_ALLOCATION, ONLY(BENCH_HOT_RELEASE), allocation, 0, SLOT_CAPACITY_MAX,
             "a presale beside the public sale: allocate N of the event's units to the block \"" BENCH_BLOCK_NAME
             "\"; the --presale-share of the connections hold from it, the rest from the public units; the run "
             "ends when both are sold out; 0..--capacity, 0 = no block"),
    OPT_UINT("presale-share", "PCT", O_PRESALE, ONLY(BENCH_HOT_RELEASE), presale_pct, BENCH_PRESALE_PCT_MIN,
             BENCH_PRESALE_PCT_MAX,
             "with --allocation: percent of the connections (rounded, at least one, and one left for the public "
             "sale) whose holds take from the block"),
    OPT("seated", "FILE", O_SEATED, ONLY(BENCH_HOT_RELEASE), K_TEXT, BENCH_SEATED_HELP),
    OPT("adjacent", NULL, O_ADJACENT, ONLY(BENCH_HOT_RELEASE), K_FLAG, BENCH_ADJACENT_HELP),
    OPT("named", NULL, O_NAMED, ONLY(BENCH_HOT_RELEASE), K_FLAG, BENCH_NAMED_HELP),
    OPT_SECONDS("opens-in", O_OPENS_IN, ONLY(BENCH_HOT_RELEASE) | ROOM, opens_in_ms, 0, BENCH_OPENS_IN_MS_MAX,
                "create the event with its sale opening S seconds ahead (opens_at), and send every "
                "connection's first hold at that instant; earlier answers count apart as not_on_sale (waiting-room: "
                "the opening, every join must be answered before it; 0 = 0.5 s after the last join, by "
                "set_sale_window)"),
    OPT_UINT("crowd", "N", O_CROWD, ROOM, crowd, BENCH_CROWD_MIN, BENCH_CROWD_MAX,
             "entries: users u0..u<N-1> join the room before the opening; the event has N units"),
    OPT_UINT("admit-per-s", "R", O_ADMIT, ROOM, admit_per_s, 1, BENCH_ADMIT_PER_S_MAX, "the room's admit_per_s"),
    OPT("mode", "queue|lottery", O_MODE, ROOM, K_OTHER, "the room's admission order"),
    OPT_UINT("confirm-share", "PCT", O_CONFIRM_SHARE, ROOM, confirm_pct, 0, BENCH_PCT_MAX,
             "percent of the admitted buyers who confirm their hold; the others release it"),
    OPT_REAL("rate", "R", O_RATE, ONLY(BENCH_OPEN_LOOP), rate_per_s, BENCH_RATE_PER_S_MIN, BENCH_RATE_PER_S_MAX,
             "requests per second, sent on schedule whatever the replies"),
    OPT_UINT("confirm", "PCT", O_CONFIRM, CHURN_WL, confirm_pct, 0, BENCH_PCT_MAX,
             "percent of holds confirmed after the think time (waitlist: of the prefill's and the offered holds)"),
    OPT_UINT("release", "PCT", O_RELEASE, CHURN_WL, release_pct, 0, BENCH_PCT_MAX,
             "percent of holds released after the think time"),
    OPT_UINT("abandon", "PCT", O_ABANDON, CHURN_WL, abandon_pct, 0, BENCH_PCT_MAX,
             "percent of holds left to expire (the three add up to 100)"),
    OPT_UINT("extend", "PCT", O_EXTEND, ONLY(BENCH_CHURN), extend_pct, 0, BENCH_PCT_MAX,
             "percent of the buyers who confirm on time or release that first extend the hold by --hold-ttl-ms; "
             "the same share of those asks again, past max_extensions 1 (extend_limit)"),
    OPT_UINT(
        "partial", "PCT", O_PARTIAL, ONLY(BENCH_CHURN), partial_pct, 0, BENCH_PCT_MAX,
        "percent of the confirms that confirm 1..qty-1 units and give the rest back (a one-unit hold confirms whole)"),
    OPT_UINT("late", "PCT", O_LATE, ONLY(BENCH_CHURN), late_pct, 0, BENCH_PCT_MAX,
             "percent of the confirms paid after the hold expired (--hold-ttl-ms + 100 ms + a think time), with "
             "reacquire:true; --partial + --late at most 100"),
    OPT("think-ms", "A[:B]", O_THINK, CHURN_WL, K_OTHER,
        "think time before confirm/release/next hold, uniform in A..B ms"),
    OPT_UINT("hold-ttl-ms", "MS", O_TTL, CHURN_WL, hold_ttl_ms, SLOT_HOLD_TTL_MS_MIN, BENCH_HOLD_TTL_MS_MAX,
             "the event's hold_ttl_ms (abandoned holds expire after it)"),
    OPT_UINT("waiters", "K", O_WAITERS, ONLY(BENCH_WAITLIST), waiters, 1, BENCH_WAITERS_MAX,
             "buyers who join the sold-out event's waitlist (created with waitlist_max K), each with a --qty"),
    OPT_UINT("poll-ms", "MS", O_POLL, ONLY(BENCH_WAITLIST), poll_ms, BENCH_POLL_MS_MIN, BENCH_POLL_MS_MAX,
             "a waiter asks for its entry's state every MS ms, at position p every MS x min(8, ceil(p / capacity))"),
    OPT_UINT("events", "E", O_EVENTS, ONLY(BENCH_MULTI_EVENT), events, 1, BENCH_EVENTS_MAX, "events at once"),
    OPT("placement", NULL, O_PLACEMENT, ONLY(BENCH_MULTI_EVENT), K_FLAG,
        "the --host members are of replica sets of one placement (--placement): read the map, create the "
        "events round-robin over the sets, and send each connection's holds to one set's primary (its events)"),
    OPT_REAL("zipf", "S", O_ZIPF, ONLY(BENCH_MULTI_EVENT), zipf_exponent, 0, BENCH_ZIPF_EXPONENT_MAX,
             "Zipf exponent of event popularity (0 = uniform)"),
    OPT_UINT("threads", "N", O_THREADS, THREADED, threads, 1, BENCH_THREADS_MAX,
             "event loops (threads) of the load; the connections are spread over them, the report merges them"),
    OPT("peer", "full|min", O_PEER, ALL, K_OTHER,
        "redis: the Lua script that answers holds: full (bench/peers/slot_hold.lua, slotd's rules) or min "
        "(slot_hold_min.lua, the hold a user would write; the full one does the rest)"),
    OPT("json", "FILE", O_JSON, ANY, K_TEXT, "write every number, the configuration and machine facts as JSON"),
    OPT("csv", "FILE", O_CSV, ANY & ~ROOM, K_TEXT, "write the time series (every 100 ms) as CSV"),
    OPT("svg", "FILE", O_SVG, ANY & ~ROOM, K_TEXT, "write the sell-out curve and latency curves as SVG"),
    OPT("help", NULL, O_HELP, ANY, K_FLAG, "this help"),
#undef OPT
#undef OPT_REAL
#undef OPT_SECONDS
#undef OPT_UINT
#undef FIELD
};

#define OPT_DEFS_N (sizeof(opt_defs) / sizeof(opt_defs[0]))

static void defaults(bench_config *c, bench_scenario s)
{
    memset(c, 0, sizeof(*c));
    c->scenario = s;
    c->name = scenario_info[s].name;
    c->target = BENCH_TARGET_SLOTD;
    strcpy(c->host, BENCH_HOST_DEFAULT);
    c->port = SLOT_PORT_DEFAULT;
    c->connections = BENCH_CONNS_DEFAULT;
    c->threads = 1;
    c->pipeline = s == BENCH_OPEN_LOOP ? BENCH_PIPELINE_OPEN_LOOP_DEFAULT : BENCH_PIPELINE_DEFAULT;
    c->capacity = s == BENCH_SOLD_OUT      ? BENCH_CAPACITY_SOLD_OUT_DEFAULT
                  : s == BENCH_WAITLIST    ? BENCH_CAPACITY_WAITLIST_DEFAULT
                  : s == BENCH_MULTI_EVENT ? BENCH_CAPACITY_MULTI_EVENT_DEFAULT
                  : s == BENCH_OPEN_LOOP   ? BENCH_CAPACITY_OPEN_LOOP_DEFAULT
                                           : BENCH_CAPACITY_DEFAULT;
    c->shards = SLOT_SHARDS_DEFAULT;
    /* The scenarios that end on their own (sold out; every waiter offered) get a long bound. */
    c->duration_ms = bench_scenario_sells_out(s) || s == BENCH_WAITLIST || s == BENCH_WAITING_ROOM ? BENCH_DURATION_SELL_MS_DEFAULT
                                                                        : BENCH_DURATION_MS_DEFAULT;
    c->requests = BENCH_REQUESTS_DEFAULT;
    c->tail = BENCH_TAIL_DEFAULT;
    c->rate_per_s = BENCH_RATE_PER_S_DEFAULT;
    c->confirm_pct = BENCH_CONFIRM_PCT_DEFAULT;
    c->release_pct = BENCH_RELEASE_PCT_DEFAULT;
    c->abandon_pct = BENCH_ABANDON_PCT_DEFAULT;
    c->extend_pct = BENCH_EXTEND_PCT_DEFAULT;
    c->partial_pct = BENCH_PARTIAL_PCT_DEFAULT;
    c->late_pct = BENCH_LATE_PCT_DEFAULT;
    c->think_min_ms = BENCH_THINK_MIN_MS_DEFAULT;
    c->think_max_ms = BENCH_THINK_MAX_MS_DEFAULT;
    c->hold_ttl_ms = s == BENCH_CHURN      ? BENCH_HOLD_TTL_MS_CHURN_DEFAULT
                     : s == BENCH_WAITLIST ? BENCH_HOLD_TTL_MS_WAITLIST_DEFAULT
                                           : 0;
    c->waiters = BENCH_WAITERS_DEFAULT;
    c->poll_ms = BENCH_POLL_MS_DEFAULT;
    c->crowd = BENCH_CROWD_DEFAULT;
    c->admit_per_s = BENCH_ADMIT_PER_S_DEFAULT;
    if (s == BENCH_WAITING_ROOM) {
        c->confirm_pct = BENCH_ROOM_CONFIRM_PCT_DEFAULT;
        c->connections = BENCH_ROOM_CONNS_DEFAULT;
        c->pipeline = BENCH_ROOM_PIPELINE_DEFAULT;
    }
    if (s == BENCH_WAITLIST) {
        c->confirm_pct = BENCH_CONFIRM_PCT_WAITLIST_DEFAULT;
        c->release_pct = BENCH_RELEASE_PCT_WAITLIST_DEFAULT;
        c->abandon_pct = BENCH_ABANDON_PCT_WAITLIST_DEFAULT;
        c->think_min_ms = 0;
        c->think_max_ms = BENCH_THINK_MAX_MS_WAITLIST_DEFAULT;
    }
    c->events = s == BENCH_MULTI_EVENT ? BENCH_EVENTS_DEFAULT : 1;
    c->cart = BENCH_CART_DEFAULT;
    c->presale_pct = BENCH_PRESALE_PCT_DEFAULT;
    c->zipf_exponent = BENCH_ZIPF_EXPONENT_DEFAULT;
    c->qty.n = 1;
    c->qty.qty[0] = c->qty.cum[0] = c->qty.min = c->qty.max = 1;
    strcpy(c->qty.text, "1");
    if (s == BENCH_CHURN) {
        bool parsed = bench_parse_qty(BENCH_QTY_CHURN_DEFAULT, &c->qty);
        SLOT_ASSERT(parsed);
    }
}

/* ---------------------------------------------------------------- --help: ranges and defaults */

/* An integer for --help: 2^k and 2^k-1 as such when large, else decimal. */
static void int_text(uint64_t v, char *buf, size_t n)
{
    for (unsigned k = 20; k < 64; k++) { /* below 2^20 decimal reads better */
        uint64_t p = UINT64_C(1) << k;
        if (v == p || v == p - 1) {
            snprintf(buf, n, "2^%u%s", k, v == p ? "" : "-1");
            return;
        }
    }
    snprintf(buf, n, "%" PRIu64, v);
}

/* Seconds from ms for --help: "0.001", "120". */
static void ms_text(uint64_t ms, char *buf, size_t n)
{
    if (ms % 1000 == 0)
        snprintf(buf, n, "%" PRIu64, ms / 1000);
    else
        snprintf(buf, n, "%.3f", (double)ms / 1000.0);
}

static uint64_t field_u64(const bench_config *c, const struct opt_def *o)
{
    const char *p = (const char *)c + o->off;
    uint16_t v16;
    uint32_t v32;
    uint64_t v64;
    switch (o->size) {
    case sizeof(uint16_t):
        memcpy(&v16, p, sizeof(v16));
        return v16;
    case sizeof(uint32_t):
        memcpy(&v32, p, sizeof(v32));
        return v32;
    default:
        memcpy(&v64, p, sizeof(v64));
        return v64;
    }
}

static void field_set_u64(bench_config *c, const struct opt_def *o, uint64_t v)
{
    char *p = (char *)c + o->off;
    uint16_t v16 = (uint16_t)v;
    uint32_t v32 = (uint32_t)v;
    switch (o->size) {
    case sizeof(uint16_t):
        memcpy(p, &v16, sizeof(v16));
        break;
    case sizeof(uint32_t):
        memcpy(p, &v32, sizeof(v32));
        break;
    default:
        memcpy(p, &v, sizeof(v));
        break;
    }
}

static double field_double(const bench_config *c, const struct opt_def *o)
{
    double v;
    memcpy(&v, (const char *)c + o->off, sizeof(v));
    return v;
}

/* What --help says after an option's text: its range and its default (d: the
 * scenario's defaults); false when it has neither (flags, files, --token). */
static bool range_text(const bench_config *d, const struct opt_def *o, char *buf, size_t n)
{
    char lo[32], hi[32], def[64];
    switch (o->kind) {
    case K_UINT:
        int_text(o->min, lo, sizeof(lo));
        int_text(o->max, hi, sizeof(hi));
        if (o->id == O_SEED)
            snprintf(def, sizeof(def), "from the kernel");
        else if (o->id == O_PORT)
            snprintf(def, sizeof(def), "%u; redis: %d", (unsigned)d->port, BENCH_REDIS_PORT_DEFAULT);
        else if (o->id == O_EXTEND || o->id == O_PARTIAL || o->id == O_LATE)
            snprintf(def, sizeof(def), "%u; redis: 0", (unsigned)field_u64(d, o));
        else
            int_text(field_u64(d, o), def, sizeof(def));
        snprintf(buf, n, "%s..%s, default %s", lo, hi, def);
        return true;
    case K_SECONDS:
        ms_text(o->min, lo, sizeof(lo));
        ms_text(o->max, hi, sizeof(hi));
        ms_text(field_u64(d, o), def, sizeof(def));
        snprintf(buf, n, "%s..%s s, default %s", lo, hi, def);
        return true;
    case K_REAL:
        snprintf(buf, n, "%.10g..%.10g, default %.10g", o->dmin, o->dmax, field_double(d, o));
        return true;
    case K_OTHER:
        if (o->id == O_QTY)
            snprintf(buf, n, "qty 1..%d, weight 1..%u, at most %d entries; default %s", SLOT_MAX_PER_REQUEST_MAX,
                     BENCH_QTY_WEIGHT_MAX, BENCH_QTY_CHOICES_MAX, d->qty.text);
        else if (o->id == O_PEER)
            snprintf(buf, n, "default full");
        else if (o->id == O_MODE)
            snprintf(buf, n, "default queue");
        else if (o->id == O_THINK)
            snprintf(buf, n, "0 <= A <= B <= %u; default %u:%u", BENCH_THINK_MS_MAX, d->think_min_ms, d->think_max_ms);
        else
            return false;
        return true;
    case K_TEXT:
        if (o->id == O_HOST)
            snprintf(buf, n, "at most %d hosts of %d bytes, default %s", BENCH_HOSTS_MAX, BENCH_HOST_BYTES_MAX,
                     d->host);
        else if (o->id == O_EVENT)
            snprintf(buf, n, "1..%d bytes of [A-Za-z0-9._:-], default %s-<random>", BENCH_EVENT_BYTES_MAX,
                     scenario_info[d->scenario].prefix);
        else
            return false;
        return true;
    default:
        return false;
    }
}

void bench_usage(FILE *f, bench_scenario s)
{
    bench_config d;
    defaults(&d, s);
    fprintf(f, "usage: slot-bench %s [OPTIONS]\n\n%s\n", scenario_info[s].name, bench_scenario_text[s]);
    for (size_t i = 0; i < OPT_DEFS_N; i++) {
        const struct opt_def *o = &opt_defs[i];
        if (!(o->scenarios & ONLY(s)))
            continue;
        char left[40], range[300];
        snprintf(left, sizeof(left), "--%s%s%s", o->name, o->arg ? " " : "", o->arg ? o->arg : "");
        if (range_text(&d, o, range, sizeof(range)))
            fprintf(f, "  %-22s %s (%s)\n", left, o->help, range);
        else
            fprintf(f, "  %-22s %s\n", left, o->help);
    }
    fprintf(f, "\nOnly loopback addresses are used unless --allow-remote is given. The live progress line\n"
               "goes to stderr when it is a terminal; the summary table to stdout.\n\n"
               "Exit status: 0 the run completed and its verification passed; 1 verification failed or\n"
               "the target refused the setup; 2 the target could not be reached or a connection broke;\n"
               "64 usage error.\n");
}

/* ---------------------------------------------------------------- parsing */

static const struct opt_def *opt_by_id(int id)
{
    for (size_t i = 0; i < OPT_DEFS_N; i++)
        if (opt_defs[i].id == id)
            return &opt_defs[i];
    return NULL;
}

/* --mode: "queue" or "lottery" into *lottery; false if neither. */
static bool parse_mode(const char *a, bool *lottery)
{
    if (strcmp(a, "queue") != 0 && strcmp(a, "lottery") != 0)
        return false;
    *lottery = a[0] == 'l';
    return true;
}

/* One numeric (or otherwise checked) option, read as its table entry says.
 * 0, or an exit status after a message that gives the range. */
static int set_value(bench_config *c, int id, const char *a, bool *port_given)
{
    const struct opt_def *o = opt_by_id(id);
    uint64_t v = 0;
    uint32_t ms = 0;
    double d = 0;
    bool ok;
    switch (o->kind) {
    case K_UINT:
        if ((ok = bench_parse_num(a, o->min, o->max, &v)))
            field_set_u64(c, o, v);
        *port_given |= ok && id == O_PORT;
        break;
    case K_SECONDS:
        if ((ok = bench_parse_seconds_ms(a, o->min, o->max, &ms)))
            field_set_u64(c, o, ms);
        break;
    case K_REAL:
        if ((ok = bench_parse_real(a, o->dmin, o->dmax, &d)))
            memcpy((char *)c + o->off, &d, sizeof(d));
        break;
    default:
        ok = id == O_QTY      ? bench_parse_qty(a, &c->qty)
             : id == O_THINK  ? bench_parse_think(a, &c->think_min_ms, &c->think_max_ms)
             : id == O_TARGET ? bench_parse_target(a, c, port_given)
             : id == O_PEER   ? bench_parse_peer(a, &c->peer)
             : id == O_MODE   ? parse_mode(a, &c->lottery)
                              : false;
    }
    if (ok)
        return 0;
    bench_config dflt;
    char range[300];
    defaults(&dflt, c->scenario);
    if (range_text(&dflt, o, range, sizeof(range)))
        return bench_usage_error(c, "--%s: bad value '%s' (%s)", o->name, a, range);
    return bench_usage_error(c, "--%s: bad value '%s'", o->name, a);
}

static bool event_name_ok(const char *s, size_t room)
{
    size_t n = strlen(s);
    if (n == 0 || n > room)
        return false;
    return strspn(s, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._:-") == n;
}

/* Entries of --host / --cluster-members (comma-separated) into c->hosts, as
 * given; hosts_normalize adds the port later. -1 to go on; else an exit status. */
static int add_hosts(bench_config *c, const char *what, const char *a)
{
    for (const char *p = a;; p++) {
        const char *comma = strchr(p, ',');
        size_t n = comma ? (size_t)(comma - p) : strlen(p);
        if (c->nhosts >= BENCH_HOSTS_MAX)
            return bench_usage_error(c, "%s: more than %d hosts", what, BENCH_HOSTS_MAX);
        if (n == 0 || n > BENCH_HOST_BYTES_MAX + 6)
            return bench_usage_error(c, "%s: bad value '%s'", what, a);
        memcpy(c->hosts[c->nhosts], p, n);
        c->hosts[c->nhosts++][n] = 0;
        if (!comma)
            return -1;
        p = comma;
    }
}

/* One option. -1 to go on; else an exit status. */
static int one_option(bench_config *c, int id, const char *a, bool *port_given)
{
    switch (id) {
    case O_HELP:
        bench_usage(stdout, c->scenario);
        return 0;
    case O_TOKEN:
        c->token = a;
        return -1;
    case O_REMOTE:
        c->allow_remote = true;
        return -1;
    case O_PLACEMENT:
        c->placement = true;
        return -1;
    case O_SEATED:
    case O_ADJACENT:
    case O_NAMED:
        return bench_seated_option(c,
                                   id == O_SEATED     ? 0
                                   : id == O_ADJACENT ? BENCH_SEAT_ADJACENT
                                                      : BENCH_SEAT_NAMED,
                                   a);
    case O_JSON:
        c->json_path = a;
        return -1;
    case O_CSV:
        c->csv_path = a;
        return -1;
    case O_SVG:
        c->svg_path = a;
        return -1;
    case O_HOST:
    case O_MEMBERS:
        return add_hosts(c, id == O_HOST ? "--host" : "--cluster-members", a);
    case O_EVENT:
        /* room for "-warmup" and multi-event's "-<i>" */
        if (!event_name_ok(a, BENCH_EVENT_BYTES_MAX))
            return bench_usage_error(c, "--event: 1..%d bytes of [A-Za-z0-9._:-], got '%s'", BENCH_EVENT_BYTES_MAX, a);
        strcpy(c->event, a);
        return -1;
    default:
        return set_value(c, id, a, port_given) ? BENCH_EXIT_USAGE : -1;
    }
}

static void fill_seed_and_event(bench_config *c, bool seeded)
{
    if (!seeded && getrandom(&c->seed, sizeof(c->seed), 0) != sizeof(c->seed))
        c->seed = (uint64_t)time(NULL) ^ ((uint64_t)uv_hrtime() << 16);
    if (!seeded)
        c->seed &= (uint64_t)INT64_MAX; /* reports carry it as a JSON integer */
    if (c->event[0] == 0) {
        uint64_t s = c->seed;
        snprintf(c->event, sizeof(c->event), "%s-%016" PRIx64, scenario_info[c->scenario].prefix, bench_rand(&s));
    }
}

int bench_config_parse(bench_config *c, bench_scenario scenario, int argc, char **argv)
{
    defaults(c, scenario);
    struct option longopts[OPT_DEFS_N + 1];
    memset(longopts, 0, sizeof(longopts));
    for (size_t i = 0; i < OPT_DEFS_N; i++)
        longopts[i] = (struct option){opt_defs[i].name, opt_defs[i].arg ? required_argument : no_argument, NULL,
                                      opt_defs[i].id};
    bool seeded = false, port_given = false, peer_given = false;
    uint32_t v11_given = 0; /* bits 0, 1, 2: --extend, --partial, --late were given */
    int id;
    optind = 0; /* GNU getopt: start over on this argv */
    opterr = 0;
    while ((id = getopt_long(argc, argv, ":h", longopts, NULL)) != -1) {
        if (id == 'h')
            id = O_HELP;
        if (id == '?' || id == ':')
            return bench_usage_error(c, "%s '%s'", id == ':' ? "option needs a value:" : "unknown option",
                                     argv[optind - 1]);
        if (!(opt_by_id(id)->scenarios & ONLY(scenario)))
            return bench_usage_error(c, "--%s does not apply to this scenario", opt_by_id(id)->name);
        int rc = one_option(c, id, optarg, &port_given);
        if (rc >= 0)
            return rc;
        seeded |= id == O_SEED;
        peer_given |= id == O_PEER;
        c->qty_given |= id == O_QTY;
        c->capacity_given |= id == O_CAPACITY;
        v11_given |= id == O_EXTEND ? 1u : id == O_PARTIAL ? 2u : id == O_LATE ? 4u : 0u;
    }
    if (optind < argc)
        return bench_usage_error(c, "unexpected argument '%s'", argv[optind]);
    if (c->target == BENCH_TARGET_REDIS && !port_given)
        c->port = BENCH_REDIS_PORT_DEFAULT;
    if (bench_hosts_normalize(c))
        return BENCH_EXIT_USAGE;
    fill_seed_and_event(c, seeded);
    return bench_cross_checks(c, v11_given, peer_given) ? BENCH_EXIT_USAGE : -1;
}
