/* options_check.c — slot-bench's option values and the checks between
 * options (options.h): the parsers of one value each (numbers, seconds,
 * --qty, --think, --target, --peer), the --host list's normal form, and the
 * relations checked once every option is read (cross_checks: scenario
 * against target, sums of shares, loopback-only hosts, writable reports).
 * The option table, the defaults, --help and the parsing loop are in
 * options.c. */
#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "config.h"
#include "exit.h"
#include "limits.h"
#include "options.h"
#include "slot/client.h"
#include "slot/limits.h"

int bench_usage_error(const bench_config *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

int bench_usage_error(const bench_config *c, const char *fmt, ...)
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
bool bench_parse_num(const char *s, uint64_t min, uint64_t max, uint64_t *out)
{
    char *end = NULL;
    errno = 0;
    unsigned long long v = (s[0] >= '0' && s[0] <= '9') ? strtoull(s, &end, 10) : 0;
    if (end == NULL || *end != 0 || errno == ERANGE || v < min || v > max)
        return false;
    *out = v;
    return true;
}

/* A decimal number in [min, max], the whole string. */
bool bench_parse_real(const char *s, double min, double max, double *out)
{
    char *end = NULL;
    errno = 0;
    double v = (s[0] >= '0' && s[0] <= '9') ? strtod(s, &end) : -1;
    if (end == NULL || *end != 0 || errno == ERANGE || !(v >= min) || !(v <= max))
        return false;
    *out = v;
    return true;
}

/* Seconds with up to 3 decimals ("2", "0.5") into ms, in [min_ms, max_ms]. */
bool bench_parse_seconds_ms(const char *s, uint64_t min_ms, uint64_t max_ms, uint32_t *out)
{
    double v;
    if (!bench_parse_real(s, 0, (double)max_ms / 1000.0, &v))
        return false;
    uint64_t ms = (uint64_t)llround(v * 1000.0);
    if (ms < min_ms || ms > max_ms)
        return false;
    *out = (uint32_t)ms;
    return true;
}

/* --qty: "N" or "q:w,q:w,...". */
bool bench_parse_qty(const char *s, bench_qty *q)
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
        if (!bench_parse_num(tok, 1, SLOT_MAX_PER_REQUEST_MAX, &qv) ||
            (colon && !bench_parse_num(colon + 1, 1, BENCH_QTY_WEIGHT_MAX, &w)))
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
bool bench_parse_think(const char *s, uint32_t *lo, uint32_t *hi)
{
    char buf[64];
    if (strlen(s) >= sizeof(buf))
        return false;
    strcpy(buf, s);
    char *colon = strchr(buf, ':');
    if (colon)
        *colon = 0;
    uint64_t a = 0, b = 0;
    if (!bench_parse_num(buf, 0, BENCH_THINK_MS_MAX, &a) ||
        (colon && !bench_parse_num(colon + 1, 0, BENCH_THINK_MS_MAX, &b)))
        return false;
    *lo = (uint32_t)a;
    *hi = colon ? (uint32_t)b : (uint32_t)a;
    return *lo <= *hi;
}

/* "redis://H:P", "slotd://H:P" (":P" optional; H may be [v6]). */
bool bench_parse_target(const char *s, bench_config *c, bool *port_given)
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
    if (hlen == 0 || hlen > BENCH_HOST_BYTES_MAX || (colon && !bench_parse_num(colon + 1, 1, BENCH_PORT_MAX, &p)))
        return false;
    memcpy(c->host, host, hlen);
    c->host[hlen] = 0;
    if (colon) {
        c->port = (uint16_t)p;
        *port_given = true;
    }
    return true;
}

bool bench_parse_peer(const char *s, bench_peer *p)
{
    if (strcmp(s, "full") == 0)
        *p = BENCH_PEER_FULL;
    else if (strcmp(s, "min") == 0)
        *p = BENCH_PEER_MIN;
    else
        return false;
    return true;
}

/* Each entry as "H:P" ("[v6]:P"), with --port where it has none; the first
 * one's host and port into c->host, c->port. No --host: c->host alone. 0 or
 * an exit status. */
int bench_hosts_normalize(bench_config *c)
{
    if (c->nhosts == 0) {
        snprintf(c->hosts[0], sizeof(c->hosts[0]), strchr(c->host, ':') ? "[%s]:%u" : "%s:%u", c->host,
                 (unsigned)c->port);
        c->nhosts = 1;
        return 0;
    }
    for (uint32_t i = 0; i < c->nhosts; i++) {
        char *e = c->hosts[i], host[BENCH_HOST_BYTES_MAX + 9];
        size_t colons = 0;
        for (const char *q = e; *q; q++)
            colons += *q == ':';
        uint16_t port = c->port;
        bool bare = colons == 0 || (colons > 1 && e[0] != '[');
        if (bare ? strlen(e) > BENCH_HOST_BYTES_MAX
                 : slot_addr_split(e, strlen(e), host, sizeof(host), &port) < 0 || strlen(host) > BENCH_HOST_BYTES_MAX)
            return bench_usage_error(c, "--host: expected HOST or HOST:PORT, not '%s'", e);
        if (bare)
            snprintf(host, sizeof(host), "%s", e);
        snprintf(e, sizeof(c->hosts[0]), strchr(host, ':') ? "[%s]:%u" : "%s:%u", host, (unsigned)port);
        if (i == 0) {
            snprintf(c->host, sizeof(c->host), "%s", host);
            c->port = port;
        }
    }
    return 0;
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

/* A report file can be written where it is asked for: its folder exists and
 * is writable (checked before the run, so a long run does not end in a
 * failure to save it). The file itself is written after the run. */
static bool report_path_writable(const char *path)
{
    char dir[4096];
    snprintf(dir, sizeof(dir), "%s", path);
    char *slash = strrchr(dir, '/');
    if (!slash)
        snprintf(dir, sizeof(dir), ".");
    else if (slash == dir)
        dir[1] = '\0';
    else
        *slash = '\0';
    return access(dir, W_OK | X_OK) == 0;
}

/* hot-release --allocation (docs/protocol.md, "Allocations"): a block of N units beside the
 * public sale, on slotd, plain holds on one thread. Two measured events in the run: 0 the public
 * units (capacity - N), 1 the block (N), both the one event on the target. The first
 * presale_conns connections hold from the block: --presale-share of them, rounded, at least one
 * while the block can sell a hold, and one left for the public units while they can.
 * 0 or BENCH_EXIT_USAGE. */
static int allocation_checks(bench_config *c)
{
    if (c->allocation == 0 && c->presale_pct != BENCH_PRESALE_PCT_DEFAULT)
        return bench_usage_error(c, "%s", "--presale-share is the block's share: give --allocation N");
    if (c->allocation == 0)
        return 0;
    if (c->allocation > c->capacity)
        return bench_usage_error(c, "--allocation %" PRIu64 " is above --capacity %" PRIu64, c->allocation,
                                 c->capacity);
    if (c->cart > 1 || c->types || c->threads > 1 || c->target == BENCH_TARGET_REDIS)
        return bench_usage_error(c, "%s",
                                 "--allocation takes plain holds on slotd, on one thread (no --cart, --types, redis, "
                                 "--threads)");
    c->events = 2;
    bool block_sells = c->allocation >= c->qty.min, public_sells = c->capacity - c->allocation >= c->qty.min;
    uint32_t k = c->connections, p = (uint32_t)(((uint64_t)k * c->presale_pct + 50) / 100);
    if (block_sells && public_sells && k < 2)
        return bench_usage_error(c, "%s", "--allocation needs 2 connections or more: one for each sale");
    if (block_sells && p < 1)
        p = 1;
    if (public_sells && p > k - 1)
        p = k - 1;
    c->presale_conns = !block_sells ? 0 : !public_sells ? k : p;
    return 0;
}

/* Relations between options, once all are read. 0 or BENCH_EXIT_USAGE. */
int bench_cross_checks(bench_config *c, uint32_t v11_given, bool peer_given)
{
    if (c->scenario == BENCH_HOT_RELEASE)
        c->events = c->types ? c->types : c->cart; /* one event per cart item, or per ticket type */
    if (c->types && (c->cart > 1 || c->target == BENCH_TARGET_REDIS || c->threads > 1))
        return bench_usage_error(c, "%s",
                                 "--types takes plain holds on slotd, on one thread (no --cart, redis, --threads)");
    if (c->placement && (c->cart > 1 || c->target == BENCH_TARGET_REDIS || c->threads > 1 || c->warmup_ms > 0))
        return bench_usage_error(c, "%s",
                                 "--placement takes plain holds on slotd, on one thread (no --cart, redis, --threads, "
                                 "--warmup)");
    int rc = allocation_checks(c);
    if (rc || (rc = bench_seated_checks(c)))
        return rc;
    bool waitlist = c->scenario == BENCH_WAITLIST;
    if (waitlist && c->target == BENCH_TARGET_REDIS)
        return bench_usage_error(c, "%s", "the waitlist scenario needs slotd's waitlist; the redis target has none");
    if (waitlist && (c->capacity < 1 || c->capacity > BENCH_WAITLIST_CAPACITY_MAX))
        return bench_usage_error(c,
                                 "--capacity %" PRIu64
                                 ": the waitlist scenario takes 1..%u (one prefill hold per unit)",
                                 c->capacity, BENCH_WAITLIST_CAPACITY_MAX);
    if (waitlist && c->qty.max > c->capacity)
        return bench_usage_error(c,
                                 "--qty up to %u is above --capacity %" PRIu64 ": such a waiter could never be served",
                                 c->qty.max, c->capacity);
    if (waitlist && c->confirm_pct + c->release_pct + c->abandon_pct != BENCH_PCT_MAX)
        return bench_usage_error(c, "--confirm %u + --release %u + --abandon %u must add up to 100", c->confirm_pct,
                                 c->release_pct, c->abandon_pct);
    if (c->scenario == BENCH_PING)
        c->events = 0; /* no event is made */
    if (c->peer == BENCH_PEER_MIN && c->max_per_user > 0)
        return bench_usage_error(c, "--peer min has no max_per_user (the minimal script keeps no per-user counts)");
    if (peer_given && c->target != BENCH_TARGET_REDIS)
        return bench_usage_error(c, "--peer chooses the redis target's Lua script: give --target redis://H:P");
    if (c->threads > 1 && c->cart > 1)
        return bench_usage_error(
            c, "--threads with --cart: a cart's sell-out is seen only from every loop's tallies together");
    if (c->threads > c->connections)
        return bench_usage_error(c, "--threads %u is above --connections %u: every loop needs a connection", c->threads,
                                 c->connections);
    if (c->scenario == BENCH_CHURN && c->confirm_pct + c->release_pct + c->abandon_pct != BENCH_PCT_MAX)
        return bench_usage_error(c, "--confirm %u + --release %u + --abandon %u must add up to 100", c->confirm_pct,
                                 c->release_pct, c->abandon_pct);
    if (c->scenario == BENCH_CHURN && c->partial_pct + c->late_pct > BENCH_PCT_MAX)
        return bench_usage_error(c, "--partial %u + --late %u is above 100: both are shares of the confirms",
                                 c->partial_pct, c->late_pct);
    if (c->scenario == BENCH_CHURN && c->target == BENCH_TARGET_REDIS) {
        /* The Lua peer (bench/peers/slot_hold.lua) has no extend, partial confirm or reacquire:
         * given, they are refused; not given, their defaults do not apply there. */
        const char *const names[] = {"--extend", "--partial", "--late"};
        const uint32_t pcts[] = {c->extend_pct, c->partial_pct, c->late_pct};
        for (size_t i = 0; i < 3; i++)
            if ((v11_given & (1u << i)) && pcts[i] > 0)
                return bench_usage_error(c,
                                         "%s needs slotd's v1.1 ops (extend, partial confirm, reacquire); the redis "
                                         "target's Lua peer has none",
                                         names[i]);
        c->extend_pct = c->partial_pct = c->late_pct = 0;
    }
    if (c->max_per_user > 0 && c->qty.max > c->max_per_user)
        return bench_usage_error(c, "--qty up to %u is above --max-per-user %" PRIu64, c->qty.max, c->max_per_user);
    bool sells_out = bench_scenario_sells_out(c->scenario);
    uint64_t units = c->capacity * c->events; /* <= 2^40 * BENCH_EVENTS_MAX: no overflow */
    if (sells_out && c->users > 0 && c->max_per_user > 0 && c->users < (units + c->max_per_user - 1) / c->max_per_user)
        return bench_usage_error(c,
                                 "%" PRIu64 " users x max %" PRIu64 " each cannot buy %" PRIu64
                                 " units: it would never sell out",
                                 c->users, c->max_per_user, units);
    if (c->target == BENCH_TARGET_REDIS && c->cart > 1)
        return bench_usage_error(c, "--cart needs slotd's hold_many; the redis target has none");
    if (c->target == BENCH_TARGET_REDIS && c->opens_in_ms > 0)
        return bench_usage_error(c, "--opens-in needs slotd's sale windows; the redis target has none");
    if (c->target == BENCH_TARGET_REDIS) {
#ifndef BENCH_HAVE_REDIS
        return bench_usage_error(
            c, "--target redis://: this slot-bench was built without hiredis (install libhiredis-dev, rebuild)");
#endif
    }
    if (c->target == BENCH_TARGET_REDIS && c->nhosts > 1)
        return bench_usage_error(c, "%s", "--target redis:// takes one host: replica sets are slotd's");
    for (uint32_t i = 0; i < c->nhosts; i++) {
        char host[BENCH_HOST_BYTES_MAX + 9];
        uint16_t port;
        if (slot_addr_split(c->hosts[i], strlen(c->hosts[i]), host, sizeof(host), &port) == 0 && !c->allow_remote &&
            !host_is_loopback(host))
            return bench_usage_error(c, "%s is not a loopback address; give --allow-remote to load another machine",
                                     host);
    }
    const char *const reports[][2] = {{"--json", c->json_path}, {"--csv", c->csv_path}, {"--svg", c->svg_path}};
    for (size_t i = 0; i < sizeof reports / sizeof reports[0]; i++)
        if (reports[i][1] && !report_path_writable(reports[i][1]))
            return bench_usage_error(c, "%s %s: cannot write there: %s", reports[i][0], reports[i][1], strerror(errno));
    return bench_seated_load(c); /* last: nothing after it fails, so the map it loads is the run's */
}
