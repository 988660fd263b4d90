/* options.c — slot-bench's command line: one table of options, each valid
 * for some scenarios, with defaults per scenario; --help is generated from
 * the same table so it cannot drift from what is parsed. */
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
#include <uv.h>

#include "config.h"
#include "exit.h"
#include "limits.h"
#include "util.h"
#include "slot_config.h"

static const struct {
    const char *name, *prefix, *summary;
} scenario_info[] = {
    [BENCH_HOT_RELEASE] = {"hot-release", "hr", "everyone at once until sold out, then a tail of sold_out answers"},
    [BENCH_OPEN_LOOP] = {"open-loop", "ol", "holds on a fixed schedule (--rate); latency from the intended send time"},
    [BENCH_CHURN] = {"churn", "ch", "a steady sale: holds confirmed, released or abandoned after think times"},
    [BENCH_SOLD_OUT] = {"sold-out", "so", "an event already sold out: how fast refusals are answered"},
    [BENCH_MULTI_EVENT] = {"multi-event", "me", "E events at once with Zipf popularity, until all are sold out"},
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
    O_HOST = 256, O_PORT, O_TOKEN, O_TARGET, O_REMOTE, O_EVENT, O_CONNS, O_PIPELINE, O_QTY, O_CAPACITY,
    O_SHARDS, O_PER_USER, O_USERS, O_DURATION, O_REQUESTS, O_SEED, O_WARMUP, O_TAIL, O_RATE, O_CONFIRM,
    O_RELEASE, O_ABANDON, O_THINK, O_TTL, O_EVENTS, O_ZIPF, O_JSON, O_CSV, O_SVG, O_HELP,
};

#define ALL 0x1fu
#define ONLY(s) (1u << (s))

static const struct opt_def {
    const char *name, *arg;         /* arg NULL: a flag */
    int id;
    uint32_t scenarios;             /* bit per bench_scenario */
    const char *help;
} opt_defs[] = {
    {"host", "H", O_HOST, ALL, "server address"},
    {"port", "P", O_PORT, ALL, "server port"},
    {"token", "T", O_TOKEN, ALL, "send hello with this token on every connection (redis: AUTH)"},
    {"target", "URL", O_TARGET, ALL, "slotd://H:P, or redis://H:P to run the same scenario against Redis+Lua"},
    {"allow-remote", NULL, O_REMOTE, ALL, "allow a host that is not loopback (refused otherwise)"},
    {"event", "NAME", O_EVENT, ALL, "event to create (multi-event: NAME-<i>); must be new"},
    {"connections", "K", O_CONNS, ALL, "concurrent connections"},
    {"pipeline", "D", O_PIPELINE, ALL, "requests in flight per connection (open-loop: at most)"},
    {"qty", "Q", O_QTY, ALL, "units per hold: N, or a distribution like 1:70,2:20,4:10"},
    {"capacity", "N", O_CAPACITY, ALL, "units of each event"},
    {"shards", "N", O_SHARDS, ALL, "shards of each event"},
    {"max-per-user", "M", O_PER_USER, ALL, "the events' max_per_user (0 = no limit)"},
    {"users", "N", O_USERS, ALL, "user pool: each hold picks one of N users (0 = a new user each)"},
    {"duration", "S", O_DURATION, ALL, "bound on the measured phase, seconds (fractions allowed)"},
    {"requests", "N", O_REQUESTS, ALL, "bound on the requests sent in the measured phase"},
    {"seed", "N", O_SEED, ALL, "random seed (0..2^63-1): event name, users, quantities, shards (default: from the kernel)"},
    {"warmup", "S", O_WARMUP, ALL, "seconds of the same load on a separate event first, not measured"},
    {"tail", "N", O_TAIL, ONLY(BENCH_HOT_RELEASE) | ONLY(BENCH_MULTI_EVENT), "sold_out answers to collect after the sell-out"},
    {"rate", "R", O_RATE, ONLY(BENCH_OPEN_LOOP), "requests per second, sent on schedule whatever the replies"},
    {"confirm", "PCT", O_CONFIRM, ONLY(BENCH_CHURN), "percent of holds confirmed after the think time"},
    {"release", "PCT", O_RELEASE, ONLY(BENCH_CHURN), "percent of holds released after the think time"},
    {"abandon", "PCT", O_ABANDON, ONLY(BENCH_CHURN), "percent of holds left to expire (the three add up to 100)"},
    {"think-ms", "A[:B]", O_THINK, ONLY(BENCH_CHURN), "think time before confirm/release/next hold, uniform in A..B ms"},
    {"hold-ttl-ms", "MS", O_TTL, ONLY(BENCH_CHURN), "the event's hold_ttl_ms (abandoned holds expire after it)"},
    {"events", "E", O_EVENTS, ONLY(BENCH_MULTI_EVENT), "events at once"},
    {"zipf", "S", O_ZIPF, ONLY(BENCH_MULTI_EVENT), "Zipf exponent of event popularity (0 = uniform)"},
    {"json", "FILE", O_JSON, ALL, "write every number, the configuration and machine facts as JSON"},
    {"csv", "FILE", O_CSV, ALL, "write the time series (every 100 ms) as CSV"},
    {"svg", "FILE", O_SVG, ALL, "write the sell-out curve and latency curves as SVG"},
    {"help", NULL, O_HELP, ALL, "this help"},
};

#define OPT_DEFS_N (sizeof(opt_defs) / sizeof(opt_defs[0]))

static void defaults(bench_config *c, bench_scenario s)
{
    memset(c, 0, sizeof(*c));
    c->scenario = s;
    c->name = scenario_info[s].name;
    c->target = BENCH_TARGET_SLOTD;
    strcpy(c->host, "127.0.0.1");
    c->port = SLOT_PORT_DEFAULT;
    c->connections = 256;
    c->pipeline = s == BENCH_OPEN_LOOP ? 64 : 1;
    c->capacity = s == BENCH_SOLD_OUT ? 1000 : s == BENCH_MULTI_EVENT ? 10000 : s == BENCH_OPEN_LOOP ? 1000000 : 100000;
    c->shards = SLOT_SHARDS_DEFAULT;
    c->duration_ms = (s == BENCH_HOT_RELEASE || s == BENCH_MULTI_EVENT) ? 120000 : 10000;
    c->requests = BENCH_REQUESTS_DEFAULT;
    c->tail = 10000;
    c->rate_per_s = 10000;
    c->confirm_pct = 20;
    c->release_pct = 40;
    c->abandon_pct = 40;
    c->think_min_ms = 10;
    c->think_max_ms = 100;
    c->hold_ttl_ms = s == BENCH_CHURN ? 2000 : 0;
    c->events = s == BENCH_MULTI_EVENT ? 16 : 1;
    c->zipf_exponent = 1.0;
    c->qty.n = 1;
    c->qty.qty[0] = c->qty.cum[0] = c->qty.min = c->qty.max = 1;
    strcpy(c->qty.text, "1");
}

/* The default of an option as --help shows it; false when it has none worth showing. */
static bool default_text(const bench_config *d, int id, char *buf, size_t n)
{
    switch (id) {
    case O_HOST: snprintf(buf, n, "%s", d->host); return true;
    case O_PORT: snprintf(buf, n, "%u; redis: %d", (unsigned)d->port, BENCH_REDIS_PORT_DEFAULT); return true;
    case O_EVENT: snprintf(buf, n, "%s-<random>", scenario_info[d->scenario].prefix); return true;
    case O_CONNS: snprintf(buf, n, "%u, at most %d", d->connections, BENCH_CONNS_MAX); return true;
    case O_PIPELINE: snprintf(buf, n, "%u, at most %d", d->pipeline, BENCH_PIPELINE_MAX); return true;
    case O_QTY: snprintf(buf, n, "%s", d->qty.text); return true;
    case O_CAPACITY: snprintf(buf, n, "%" PRIu64, d->capacity); return true;
    case O_SHARDS: snprintf(buf, n, "%u, at most %d", d->shards, SLOT_SHARDS_MAX); return true;
    case O_PER_USER: snprintf(buf, n, "0"); return true;
    case O_USERS: snprintf(buf, n, "0"); return true;
    case O_DURATION: snprintf(buf, n, "%u, at most %u", d->duration_ms / 1000, BENCH_DURATION_MS_MAX / 1000); return true;
    case O_REQUESTS: snprintf(buf, n, "%" PRIu64, d->requests); return true;
    case O_WARMUP: snprintf(buf, n, "0"); return true;
    case O_TAIL: snprintf(buf, n, "%" PRIu64, d->tail); return true;
    case O_RATE: snprintf(buf, n, "%.0f", d->rate_per_s); return true;
    case O_CONFIRM: snprintf(buf, n, "%u", d->confirm_pct); return true;
    case O_RELEASE: snprintf(buf, n, "%u", d->release_pct); return true;
    case O_ABANDON: snprintf(buf, n, "%u", d->abandon_pct); return true;
    case O_THINK: snprintf(buf, n, "%u:%u", d->think_min_ms, d->think_max_ms); return true;
    case O_TTL: snprintf(buf, n, "%u", d->hold_ttl_ms); return true;
    case O_EVENTS: snprintf(buf, n, "%u, at most %d", d->events, BENCH_EVENTS_MAX); return true;
    case O_ZIPF: snprintf(buf, n, "%.1f", d->zipf_exponent); return true;
    default: return false;
    }
}

static const char *const scenario_text[] = {
    [BENCH_HOT_RELEASE] =
        "K connections each keep D holds in flight on one new event until it is sold out and --tail\n"
        "more sold_out answers came back. Verified: held units = capacity (less a remainder below the\n"
        "smallest --qty), check clean, the event's counters, every hold by get_hold. A run that\n"
        "--duration or --requests stops before the sell-out is verified the same way for what it\n"
        "did (nothing oversold), without the sell-out.\n",
    [BENCH_OPEN_LOOP] =
        "Holds are sent on a fixed schedule of --rate per second, spread over the connections, whatever\n"
        "the replies do; latency is measured from each request's intended send time, so a stalled\n"
        "server shows as latency and not as a lower rate (no coordinated omission). A request due on a\n"
        "connection that already has --pipeline in flight waits in the bench and its wait counts.\n"
        "The schedule is served every 1 ms.\n",
    [BENCH_CHURN] =
        "Sessions (D per connection) hold, think, then confirm, release or abandon the hold (left to\n"
        "expire after --hold-ttl-ms), and hold again: capacity recycles. Runs for --duration; then\n"
        "verification waits for the abandoned holds to expire and checks every hold's status.\n",
    [BENCH_SOLD_OUT] =
        "The event is first sold out (not measured; --duration and --requests bound only what follows);\n"
        "then K x D holds in flight measure how fast sold_out answers come. Verified: no hold granted, counters unchanged, check clean.\n",
    [BENCH_MULTI_EVENT] =
        "--events events of --capacity units each; every hold picks an event with Zipf(--zipf)\n"
        "popularity (event 0 the most popular). Runs until all are sold out and --tail sold_out\n"
        "answers came back (or --duration or --requests stops it); each event is verified as in\n"
        "hot-release.\n",
};

void bench_usage(FILE *f, bench_scenario s)
{
    bench_config d;
    defaults(&d, s);
    fprintf(f, "usage: slot-bench %s [OPTIONS]\n\n%s\n", scenario_info[s].name, scenario_text[s]);
    for (size_t i = 0; i < OPT_DEFS_N; i++) {
        const struct opt_def *o = &opt_defs[i];
        if (!(o->scenarios & ONLY(s)))
            continue;
        char left[40], def[300];
        snprintf(left, sizeof(left), "--%s%s%s", o->name, o->arg ? " " : "", o->arg ? o->arg : "");
        if (default_text(&d, o->id, def, sizeof(def)))
            fprintf(f, "  %-22s %s (default %s)\n", left, o->help, def);
        else
            fprintf(f, "  %-22s %s\n", left, o->help);
    }
    fprintf(f, "\nOnly loopback addresses are used unless --allow-remote is given. The live progress line\n"
               "goes to stderr when it is a terminal; the summary table to stdout.\n\n"
               "Exit status: 0 the run completed and its verification passed; 1 verification failed or\n"
               "the target refused the setup; 2 the target could not be reached or a connection broke;\n"
               "64 usage error.\n");
}

/* ---------------------------------------------------------------- value parsers */

static int usage_error(const bench_config *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static int usage_error(const bench_config *c, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "slot-bench: %s: ", c->name);
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, " (see 'slot-bench %s --help')\n", c->name);
    va_end(ap);
    return BENCH_EXIT_USAGE;
}

/* A decimal integer in [min, max], the whole string. */
static bool num(const char *s, uint64_t min, uint64_t max, uint64_t *out)
{
    char *end = NULL;
    errno = 0;
    unsigned long long v = (s[0] >= '0' && s[0] <= '9') ? strtoull(s, &end, 10) : 0;
    if (end == NULL || *end != 0 || errno == ERANGE || v < min || v > max)
        return false;
    *out = v;
    return true;
}

/* Seconds with up to 3 decimals ("2", "0.5") into ms, in [min_ms, max_ms]. */
static bool seconds_ms(const char *s, uint64_t min_ms, uint64_t max_ms, uint32_t *out)
{
    char *end = NULL;
    errno = 0;
    double v = (s[0] >= '0' && s[0] <= '9') ? strtod(s, &end) : -1;
    if (end == NULL || *end != 0 || errno == ERANGE || !(v >= 0) || v * 1000.0 > (double)max_ms)
        return false;
    uint64_t ms = (uint64_t)llround(v * 1000.0);
    if (ms < min_ms || ms > max_ms)
        return false;
    *out = (uint32_t)ms;
    return true;
}

static bool real(const char *s, double min, double max, double *out)
{
    char *end = NULL;
    errno = 0;
    double v = (s[0] >= '0' && s[0] <= '9') ? strtod(s, &end) : -1;
    if (end == NULL || *end != 0 || errno == ERANGE || !(v >= min) || !(v <= max))
        return false;
    *out = v;
    return true;
}

/* --qty: "N" or "q:w,q:w,...". */
static bool parse_qty(const char *s, bench_qty *q)
{
    if (strlen(s) >= sizeof(q->text))
        return false;
    bench_qty r = {.min = UINT32_MAX};
    strcpy(r.text, s);
    char buf[sizeof(r.text)];
    strcpy(buf, s);
    uint32_t total = 0;
    for (char *save = NULL, *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        if (r.n == BENCH_QTY_CHOICES_MAX)
            return false;
        char *colon = strchr(tok, ':');
        uint64_t qv = 0, w = 1;
        if (colon)
            *colon = 0;
        if (!num(tok, 1, SLOT_MAX_PER_REQUEST_MAX, &qv) || (colon && !num(colon + 1, 1, 1000000, &w)))
            return false;
        if (!colon && strchr(s, ','))
            return false; /* a distribution gives every weight */
        total += (uint32_t)w;
        r.qty[r.n] = (uint32_t)qv;
        r.cum[r.n] = total;
        r.min = r.qty[r.n] < r.min ? r.qty[r.n] : r.min;
        r.max = r.qty[r.n] > r.max ? r.qty[r.n] : r.max;
        r.n++;
    }
    if (r.n == 0)
        return false;
    *q = r;
    return true;
}

uint32_t bench_qty_pick(const bench_qty *q, uint64_t r)
{
    if (q->n == 1)
        return q->qty[0];
    uint32_t x = (uint32_t)(r % q->cum[q->n - 1]);
    for (uint32_t i = 0; i < q->n; i++)
        if (x < q->cum[i])
            return q->qty[i];
    return q->qty[q->n - 1];
}

/* "A" or "A:B" milliseconds. */
static bool parse_think(const char *s, uint32_t *lo, uint32_t *hi)
{
    char buf[64];
    if (strlen(s) >= sizeof(buf))
        return false;
    strcpy(buf, s);
    char *colon = strchr(buf, ':');
    if (colon)
        *colon = 0;
    uint64_t a = 0, b = 0;
    if (!num(buf, 0, BENCH_THINK_MS_MAX, &a) || (colon && !num(colon + 1, 0, BENCH_THINK_MS_MAX, &b)))
        return false;
    *lo = (uint32_t)a;
    *hi = colon ? (uint32_t)b : (uint32_t)a;
    return *lo <= *hi;
}

/* "redis://H:P", "slotd://H:P" (":P" optional; H may be [v6]). */
static bool parse_target(const char *s, bench_config *c, bool *port_given)
{
    const char *rest;
    if (strncmp(s, "redis://", 8) == 0) {
        c->target = BENCH_TARGET_REDIS;
        rest = s + 8;
    } else if (strncmp(s, "slotd://", 8) == 0) {
        c->target = BENCH_TARGET_SLOTD;
        rest = s + 8;
    } else {
        return false;
    }
    const char *host = rest, *colon;
    size_t hlen;
    if (*rest == '[') {
        const char *close = strchr(rest, ']');
        if (!close)
            return false;
        host = rest + 1;
        hlen = (size_t)(close - host);
        colon = close[1] == ':' ? close + 1 : (close[1] == 0 ? NULL : close);
        if (colon && *colon != ':')
            return false;
    } else {
        colon = strrchr(rest, ':');
        hlen = colon ? (size_t)(colon - rest) : strlen(rest);
    }
    uint64_t p = 0;
    if (hlen == 0 || hlen > BENCH_HOST_BYTES_MAX || (colon && !num(colon + 1, 1, 65535, &p)))
        return false;
    memcpy(c->host, host, hlen);
    c->host[hlen] = 0;
    if (colon) {
        c->port = (uint16_t)p;
        *port_given = true;
    }
    return true;
}

/* ---------------------------------------------------------------- parsing */

static const struct opt_def *opt_by_id(int id)
{
    for (size_t i = 0; i < OPT_DEFS_N; i++)
        if (opt_defs[i].id == id)
            return &opt_defs[i];
    return NULL;
}

/* One numeric (or otherwise checked) option. 0, or an exit status. */
static int set_value(bench_config *c, int id, const char *a, bool *port_given)
{
    uint64_t v = 0;
    bool ok = true;
    switch (id) {
    case O_PORT: ok = num(a, 1, 65535, &v); c->port = (uint16_t)v; *port_given = true; break;
    case O_CONNS: ok = num(a, 1, BENCH_CONNS_MAX, &v); c->connections = (uint32_t)v; break;
    case O_PIPELINE: ok = num(a, 1, BENCH_PIPELINE_MAX, &v); c->pipeline = (uint32_t)v; break;
    case O_CAPACITY: ok = num(a, 0, SLOT_CAPACITY_MAX, &c->capacity); break;
    case O_SHARDS: ok = num(a, 1, SLOT_SHARDS_MAX, &v); c->shards = (uint32_t)v; break;
    case O_PER_USER: ok = num(a, 0, SLOT_CAPACITY_MAX, &c->max_per_user); break;
    case O_USERS: ok = num(a, 0, BENCH_USERS_MAX, &c->users); break;
    case O_DURATION: ok = seconds_ms(a, 1, BENCH_DURATION_MS_MAX, &c->duration_ms); break;
    case O_REQUESTS: ok = num(a, 1, UINT64_MAX / 2, &c->requests); break;
    case O_SEED: ok = num(a, 0, INT64_MAX, &c->seed); break;
    case O_WARMUP: ok = seconds_ms(a, 0, BENCH_DURATION_MS_MAX, &c->warmup_ms); break;
    case O_TAIL: ok = num(a, 0, UINT32_MAX, &c->tail); break;
    case O_RATE: ok = real(a, 1, BENCH_RATE_PER_S_MAX, &c->rate_per_s); break;
    case O_CONFIRM: ok = num(a, 0, 100, &v); c->confirm_pct = (uint32_t)v; break;
    case O_RELEASE: ok = num(a, 0, 100, &v); c->release_pct = (uint32_t)v; break;
    case O_ABANDON: ok = num(a, 0, 100, &v); c->abandon_pct = (uint32_t)v; break;
    case O_THINK: ok = parse_think(a, &c->think_min_ms, &c->think_max_ms); break;
    case O_TTL: ok = num(a, SLOT_HOLD_TTL_MS_MIN, BENCH_EXPIRE_WAIT_MS_MAX - 10000, &v); c->hold_ttl_ms = (uint32_t)v; break;
    case O_EVENTS: ok = num(a, 1, BENCH_EVENTS_MAX, &v); c->events = (uint32_t)v; break;
    case O_ZIPF: ok = real(a, 0, 10, &c->zipf_exponent); break;
    case O_QTY: ok = parse_qty(a, &c->qty); break;
    case O_TARGET: ok = parse_target(a, c, port_given); break;
    default: ok = false;
    }
    return ok ? 0 : usage_error(c, "--%s: bad value '%s'", opt_by_id(id)->name, a);
}

static bool event_name_ok(const char *s, size_t room)
{
    size_t n = strlen(s);
    if (n == 0 || n > room)
        return false;
    return strspn(s, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._:-") == n;
}

/* One option. -1 to go on; else an exit status. */
static int one_option(bench_config *c, int id, const char *a, bool *port_given)
{
    switch (id) {
    case O_HELP: bench_usage(stdout, c->scenario); return 0;
    case O_TOKEN: c->token = a; return -1;
    case O_REMOTE: c->allow_remote = true; return -1;
    case O_JSON: c->json_path = a; return -1;
    case O_CSV: c->csv_path = a; return -1;
    case O_SVG: c->svg_path = a; return -1;
    case O_HOST:
        if (strlen(a) == 0 || strlen(a) > BENCH_HOST_BYTES_MAX)
            return usage_error(c, "--host: bad value '%s'", a);
        strcpy(c->host, a);
        return -1;
    case O_EVENT:
        /* room for "-warmup" and multi-event's "-<i>" */
        if (!event_name_ok(a, SLOT_EVENT_BYTES_MAX - 7))
            return usage_error(c, "--event: 1..%d bytes of [A-Za-z0-9._:-], got '%s'", SLOT_EVENT_BYTES_MAX - 7, a);
        strcpy(c->event, a);
        return -1;
    default: return set_value(c, id, a, port_given) ? BENCH_EXIT_USAGE : -1;
    }
}

/* Is every address of host a loopback one? */
static bool host_is_loopback(const char *host)
{
    struct addrinfo hints = {.ai_socktype = SOCK_STREAM}, *res = NULL;
    if (getaddrinfo(host, NULL, &hints, &res) != 0)
        return true; /* unresolvable: the connect will say so */
    bool all = true;
    for (struct addrinfo *ai = res; ai; ai = ai->ai_next) {
        if (ai->ai_family == AF_INET)
            all &= (ntohl(((struct sockaddr_in *)ai->ai_addr)->sin_addr.s_addr) >> 24) == 127;
        else if (ai->ai_family == AF_INET6)
            all &= IN6_IS_ADDR_LOOPBACK(&((struct sockaddr_in6 *)ai->ai_addr)->sin6_addr);
    }
    freeaddrinfo(res);
    return all;
}

/* Relations between options, once all are read. 0 or BENCH_EXIT_USAGE. */
static int cross_checks(bench_config *c)
{
    if (c->scenario == BENCH_CHURN && c->confirm_pct + c->release_pct + c->abandon_pct != 100)
        return usage_error(c, "--confirm %u + --release %u + --abandon %u must add up to 100", c->confirm_pct,
                           c->release_pct, c->abandon_pct);
    if (c->max_per_user > 0 && c->qty.max > c->max_per_user)
        return usage_error(c, "--qty up to %u is above --max-per-user %" PRIu64, c->qty.max, c->max_per_user);
    bool sells_out = bench_scenario_sells_out(c->scenario);
    uint64_t units = c->capacity * c->events; /* <= 2^40 * BENCH_EVENTS_MAX: no overflow */
    if (sells_out && c->users > 0 && c->max_per_user > 0 && c->users < (units + c->max_per_user - 1) / c->max_per_user)
        return usage_error(c, "%" PRIu64 " users x max %" PRIu64 " each cannot buy %" PRIu64 " units: it would never sell out",
                           c->users, c->max_per_user, units);
    if (c->target == BENCH_TARGET_REDIS) {
#ifndef BENCH_HAVE_REDIS
        return usage_error(c, "--target redis://: this slot-bench was built without hiredis (install libhiredis-dev, rebuild)");
#endif
    }
    if (!c->allow_remote && !host_is_loopback(c->host))
        return usage_error(c, "%s is not a loopback address; give --allow-remote to load another machine", c->host);
    return 0;
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
        longopts[i] = (struct option){opt_defs[i].name, opt_defs[i].arg ? required_argument : no_argument, NULL, opt_defs[i].id};
    bool seeded = false, port_given = false;
    int id;
    optind = 0; /* GNU getopt: start over on this argv */
    opterr = 0;
    while ((id = getopt_long(argc, argv, ":h", longopts, NULL)) != -1) {
        if (id == 'h')
            id = O_HELP;
        if (id == '?' || id == ':')
            return usage_error(c, "%s '%s'", id == ':' ? "option needs a value:" : "unknown option", argv[optind - 1]);
        if (!(opt_by_id(id)->scenarios & ONLY(scenario)))
            return usage_error(c, "--%s does not apply to this scenario", opt_by_id(id)->name);
        int rc = one_option(c, id, optarg, &port_given);
        if (rc >= 0)
            return rc;
        seeded |= id == O_SEED;
    }
    if (optind < argc)
        return usage_error(c, "unexpected argument '%s'", argv[optind]);
    if (c->target == BENCH_TARGET_REDIS && !port_given)
        c->port = BENCH_REDIS_PORT_DEFAULT;
    fill_seed_and_event(c, seeded);
    return cross_checks(c) ? BENCH_EXIT_USAGE : -1;
}

json_t *bench_config_json(const bench_config *c)
{
    json_t *o = json_pack("{s:s, s:s, s:s, s:i, s:b, s:s, s:i, s:i, s:s, s:I, s:i, s:I, s:I, s:f, s:I, s:I, s:f}",
                          "scenario", c->name, "target", c->target == BENCH_TARGET_REDIS ? "redis" : "slotd", "host",
                          c->host, "port", (int)c->port, "token", c->token != NULL, "event", c->event, "connections",
                          (int)c->connections, "pipeline", (int)c->pipeline, "qty", c->qty.text, "capacity",
                          (json_int_t)c->capacity, "shards", (int)c->shards, "max_per_user", (json_int_t)c->max_per_user,
                          "users", (json_int_t)c->users, "duration_s", c->duration_ms / 1000.0, "requests",
                          (json_int_t)c->requests, "seed", (json_int_t)c->seed, "warmup_s", c->warmup_ms / 1000.0);
    if (!o)
        return NULL;
    if (bench_scenario_sells_out(c->scenario))
        json_object_set_new(o, "tail", json_integer((json_int_t)c->tail));
    if (c->scenario == BENCH_OPEN_LOOP)
        json_object_set_new(o, "rate", json_real(c->rate_per_s));
    if (c->scenario == BENCH_CHURN) {
        json_object_set_new(o, "confirm_pct", json_integer(c->confirm_pct));
        json_object_set_new(o, "release_pct", json_integer(c->release_pct));
        json_object_set_new(o, "abandon_pct", json_integer(c->abandon_pct));
        json_object_set_new(o, "think_ms", json_pack("[i, i]", (int)c->think_min_ms, (int)c->think_max_ms));
        json_object_set_new(o, "hold_ttl_ms", json_integer(c->hold_ttl_ms));
    }
    if (c->scenario == BENCH_MULTI_EVENT) {
        json_object_set_new(o, "events", json_integer(c->events));
        json_object_set_new(o, "zipf_s", json_real(c->zipf_exponent));
    }
    return o;
}
