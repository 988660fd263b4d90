/*
 * slot-bench — load generator for slotd over TCP (PROTOCOL.md).
 *
 * Scenarios are subcommands, listed in one table (`scenarios` below); each
 * parses its own options and returns the exit status:
 *   0 the run completed and its verification passed; 1 the verification
 *   failed (or the server answered with errors); 2 the server could not be
 *   reached or a connection broke; 64 a usage error.
 *
 * hot-release: one event, a crowd of K connections each keeping D holds of
 * one unit in flight, until the event is sold out and --tail sold_out answers
 * came back (or --duration-max passed). Requests are encoded with
 * slot_req_encode and replies parsed with slot_reply_parse; latency is
 * measured per request (send to reply, ns) into a slot_hist. Afterwards the
 * outcome is checked over a blocking slot_client: exactly `capacity` held
 * answers, `check` clean, the event showing available 0 and held == capacity.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <jansson.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <time.h>
#include <uv.h>

#include "slot/client.h"
#include "slot/hist.h"
#include "slot/limits.h"
#include "slot_config.h"

#define EXIT_FAILED 1
#define EXIT_CONNECTION 2
#define EXIT_USAGE 64                      /* sysexits.h EX_USAGE */
#define BENCH_CONNECT_TIMEOUT_MS 5000
#define BENCH_CALL_TIMEOUT_MS 60000        /* admin calls: check scans every hold */
#define BENCH_CONNS_MAX 10000              /* each is a file descriptor */
#define BENCH_PIPELINE_MAX SLOT_CONN_INFLIGHT_DEFAULT /* the server stops reading above this */
#define BENCH_DURATION_S_MAX 3600
#define BENCH_DRAIN_MS 10000               /* after the last send: wait this long for replies */
#define BENCH_SELLOUT_GRACE_MS 2000        /* sold_out answers yet held < capacity: give up after this */
#define BENCH_HOLD_REQ_BYTES 256           /* a hold line: event <= 64 plain bytes, short user/key */
#define BENCH_IN_BYTES (16u << 10)         /* per connection; a hold reply line is ~100 bytes */
#define BENCH_HOST_BYTES_MAX 255

static uint64_t splitmix64(uint64_t *s)
{
    uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

/* ---------------------------------------------------------------- options shared by scenarios */

/* A decimal number in [min, max], the whole string. 0, or EXIT_USAGE after a message. */
static int parse_num(const char *cmd, const char *what, const char *s, uint64_t min, uint64_t max, uint64_t *out)
{
    char *end = NULL;
    errno = 0;
    unsigned long long v = (s[0] >= '0' && s[0] <= '9') ? strtoull(s, &end, 10) : 0;
    if (end == NULL || *end != 0) {
        fprintf(stderr, "slot-bench: %s: %s: not a number: '%s'\n", cmd, what, s);
        return EXIT_USAGE;
    }
    if (errno == ERANGE || v < min || v > max) {
        fprintf(stderr, "slot-bench: %s: %s: %s is out of range %" PRIu64 "..%" PRIu64 "\n", cmd, what, s, min, max);
        return EXIT_USAGE;
    }
    *out = v;
    return 0;
}

/* An event name as PROTOCOL.md allows: 1..64 bytes of [A-Za-z0-9._:-]. */
static bool event_name_ok(const char *s)
{
    size_t n = strlen(s);
    if (n == 0 || n > SLOT_EVENT_BYTES_MAX)
        return false;
    return strspn(s, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._:-") == n;
}

/* Connect a blocking client and say hello when there is a token. 0 or an exit status. */
static int admin_connect(const char *host, uint16_t port, const char *token, slot_client **out)
{
    int rc = slot_client_connect(host, port, BENCH_CONNECT_TIMEOUT_MS, out);
    if (rc < 0) {
        fprintf(stderr, "slot-bench: cannot connect to %s:%u: %s\n", host, (unsigned)port,
                rc == -ENXIO ? "host name not found" : strerror(-rc));
        return EXIT_CONNECTION;
    }
    if (!token)
        return 0;
    slot_req req;
    slot_req_init(&req, SLOT_OP_HELLO);
    slot_reply r;
    memset(&r, 0, sizeof(r));
    if (slot_req_set_token(&req, token) < 0 || slot_client_call(*out, &req, &r, BENCH_CALL_TIMEOUT_MS) < 0 || !r.ok) {
        fprintf(stderr, "slot-bench: hello: %s: %s\n", r.error[0] ? r.error : "failed", r.message);
        slot_reply_clear(&r);
        slot_client_close(*out);
        *out = NULL;
        return EXIT_FAILED;
    }
    slot_reply_clear(&r);
    return 0;
}

/* One admin call. 0 on an ok reply; else a message naming `what` and an exit status. */
static int admin_call(slot_client *c, const char *what, const slot_req *req, slot_reply *r)
{
    int rc = slot_client_call(c, req, r, BENCH_CALL_TIMEOUT_MS);
    fflush(stdout); /* the report so far comes before any message about this call */
    if (rc < 0) {
        fprintf(stderr, "slot-bench: %s: %s\n", what,
                rc == -ECONNRESET ? "the server closed the connection" : strerror(-rc));
        return EXIT_CONNECTION;
    }
    if (!r->ok) {
        fprintf(stderr, "slot-bench: %s: %s: %s\n", what, r->error, r->message);
        return EXIT_FAILED;
    }
    return 0;
}

/* ---------------------------------------------------------------- hot-release: settings */

typedef struct hr_opts {
    char host[BENCH_HOST_BYTES_MAX + 1];
    uint16_t port;
    const char *token;
    char event[SLOT_EVENT_BYTES_MAX + 1];
    uint64_t capacity;
    uint32_t shards, connections, pipeline, duration_max_s;
    uint64_t tail, seed;
    const char *json_path;
} hr_opts;

static void hr_usage(FILE *f)
{
    fprintf(f,
            "usage: slot-bench hot-release [OPTIONS]\n\n"
            "A hot release: K connections each keep D holds of one unit in flight until the event\n"
            "is sold out and --tail more sold_out answers came back, then the result is verified.\n\n"
            "  --host H             server address (default 127.0.0.1)\n"
            "  --port P             server port (default %d)\n"
            "  --token T            send hello with this token on every connection\n"
            "  --event NAME         event to create (default hr-<random>); must be new or unused\n"
            "  --capacity N         units to sell (default 100000)\n"
            "  --shards N           shards of the event, 1..%d (default 16)\n"
            "  --connections K      concurrent connections, 1..%d (default 256)\n"
            "  --pipeline D         holds in flight per connection, 1..%d (default 1)\n"
            "  --tail N             sold_out answers to collect after the sell-out (default 10000)\n"
            "  --duration-max S     hard bound on the run in seconds, 1..%d (default 120)\n"
            "  --seed N             seed of the random event name (default: from the kernel)\n"
            "  --json FILE          also write the report as JSON to FILE\n"
            "  -h, --help           this help\n\n"
            "Exit status: 0 verification passed; 1 it failed; 2 connection error; 64 usage error.\n",
            SLOT_PORT_DEFAULT, SLOT_SHARDS_MAX, BENCH_CONNS_MAX, BENCH_PIPELINE_MAX, BENCH_DURATION_S_MAX);
}

/* One numeric option of hot-release into o. 0 or EXIT_USAGE. */
static int hr_num_opt(hr_opts *o, int opt, const char *arg)
{
    uint64_t v = 0;
    int rc = 0;
    switch (opt) {
    case 'p': rc = parse_num("hot-release", "--port", arg, 1, 65535, &v); o->port = (uint16_t)v; break;
    case 'c': rc = parse_num("hot-release", "--capacity", arg, 1, SLOT_CAPACITY_MAX, &v); o->capacity = v; break;
    case 's': rc = parse_num("hot-release", "--shards", arg, 1, SLOT_SHARDS_MAX, &v); o->shards = (uint32_t)v; break;
    case 'k':
        rc = parse_num("hot-release", "--connections", arg, 1, BENCH_CONNS_MAX, &v);
        o->connections = (uint32_t)v;
        break;
    case 'd':
        rc = parse_num("hot-release", "--pipeline", arg, 1, BENCH_PIPELINE_MAX, &v);
        o->pipeline = (uint32_t)v;
        break;
    case 'T': rc = parse_num("hot-release", "--tail", arg, 0, UINT32_MAX, &v); o->tail = v; break;
    case 'D':
        rc = parse_num("hot-release", "--duration-max", arg, 1, BENCH_DURATION_S_MAX, &v);
        o->duration_max_s = (uint32_t)v;
        break;
    case 'S': rc = parse_num("hot-release", "--seed", arg, 0, UINT64_MAX, &v); o->seed = v; break;
    }
    return rc;
}

/* Parse hot-release's options. -1 to run, else an exit status (help: 0). */
static int hr_parse(hr_opts *o, int argc, char **argv)
{
    static const struct option opts[] = {
        {"host", required_argument, NULL, 'H'},        {"port", required_argument, NULL, 'p'},
        {"token", required_argument, NULL, 't'},       {"event", required_argument, NULL, 'e'},
        {"capacity", required_argument, NULL, 'c'},    {"shards", required_argument, NULL, 's'},
        {"connections", required_argument, NULL, 'k'}, {"pipeline", required_argument, NULL, 'd'},
        {"tail", required_argument, NULL, 'T'},        {"duration-max", required_argument, NULL, 'D'},
        {"seed", required_argument, NULL, 'S'},        {"json", required_argument, NULL, 'j'},
        {"help", no_argument, NULL, 'h'},              {0}};
    bool seeded = false;
    int opt;
    while ((opt = getopt_long(argc, argv, ":h", opts, NULL)) != -1) {
        if (opt == 'h') {
            hr_usage(stdout);
            return 0;
        } else if (opt == 'H' && strlen(optarg) > 0 && strlen(optarg) <= BENCH_HOST_BYTES_MAX) {
            strcpy(o->host, optarg);
        } else if (opt == 't') {
            o->token = optarg;
        } else if (opt == 'e' && event_name_ok(optarg)) {
            strcpy(o->event, optarg);
        } else if (opt == 'j') {
            o->json_path = optarg;
        } else if (opt == 'e' || opt == 'H') {
            fprintf(stderr, "slot-bench: hot-release: bad %s '%s'\n", opt == 'e' ? "--event" : "--host", optarg);
            return EXIT_USAGE;
        } else if (opt == '?' || opt == ':') {
            fprintf(stderr, "slot-bench: hot-release: %s '%s' (see 'slot-bench hot-release --help')\n",
                    opt == ':' ? "option needs a value:" : "unknown option", argv[optind - 1]);
            return EXIT_USAGE;
        } else if (hr_num_opt(o, opt, optarg)) {
            return EXIT_USAGE;
        }
        seeded |= opt == 'S';
    }
    if (optind < argc) {
        fprintf(stderr, "slot-bench: hot-release: unexpected argument '%s'\n", argv[optind]);
        return EXIT_USAGE;
    }
    if (!seeded && getrandom(&o->seed, sizeof(o->seed), 0) != sizeof(o->seed))
        o->seed = (uint64_t)time(NULL) ^ ((uint64_t)uv_hrtime() << 16);
    if (o->event[0] == 0) {
        uint64_t s = o->seed;
        snprintf(o->event, sizeof(o->event), "hr-%016" PRIx64, splitmix64(&s));
    }
    return -1;
}

/* ---------------------------------------------------------------- hot-release: the run */

typedef struct hr_run hr_run;

typedef struct hr_conn {
    uv_tcp_t tcp;
    uv_connect_t connect_req;
    uv_write_t write_req;
    hr_run *run;
    uint32_t index;
    bool writing;                      /* write_req is in use, for wbuf */
    bool hello_pending;                /* the next reply answers our hello */
    uint64_t next_n;                   /* holds made on this connection */
    uint32_t inflight;                 /* sent, not answered yet (hello included) */
    uint32_t ring_head, ring_size;     /* sent_ns: oldest in-flight entry; pipeline + 1 entries */
    uint64_t *sent_ns;                 /* send times in request order (replies come in that order) */
    char *out, *wbuf;                  /* requests queued / being written; swapped on each write */
    size_t out_len, wbuf_len, out_cap;
    char in[BENCH_IN_BYTES];           /* received bytes; a partial line is carried to the next read */
    size_t in_len;
} hr_conn;

struct hr_run {
    const hr_opts *o;
    uv_loop_t loop;
    struct sockaddr_storage addr;      /* where the admin client got through */
    hr_conn *conns;
    uint32_t connected;
    uv_timer_t duration_timer, drain_timer;
    bool stop_sending, closing;
    const char *stop_reason;
    char fatal[256];                   /* set when the run broke off; fatal_exit says how */
    int fatal_exit;
    uint64_t sent, answered, held, sold_out, unexpected, inflight_total;
    uint64_t errors[SLOT_E__COUNT + 1]; /* by code; the last counts codes this build does not know */
    uint64_t first_send_ns, last_reply_ns, sellout_ns, first_sold_out_ns;
    slot_hist *lat_ns;
};

/* Close every handle; uv_run returns once they are closed. Pending connects
 * and writes then complete with UV_ECANCELED, which the callbacks ignore. */
static void hr_close_all(hr_run *run)
{
    if (run->closing)
        return;
    run->closing = true;
    run->stop_sending = true;
    uv_close((uv_handle_t *)&run->duration_timer, NULL);
    uv_close((uv_handle_t *)&run->drain_timer, NULL);
    for (uint32_t i = 0; i < run->o->connections; i++)
        uv_close((uv_handle_t *)&run->conns[i].tcp, NULL);
}

static void hr_fail(hr_run *run, int exit_code, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* The run cannot go on (a broken connection, a line that is not a reply): end it now. */
static void hr_fail(hr_run *run, int exit_code, const char *fmt, ...)
{
    if (run->fatal[0] == 0) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(run->fatal, sizeof(run->fatal), fmt, ap);
        va_end(ap);
        run->fatal_exit = exit_code;
    }
    hr_close_all(run);
}

static void hr_drain_cb(uv_timer_t *t)
{
    hr_close_all(t->data);
}

/* Send no more; the run ends when every reply is in, or BENCH_DRAIN_MS later. */
static void hr_stop(hr_run *run, const char *reason)
{
    if (run->closing)
        return;
    if (!run->stop_sending) {
        run->stop_sending = true;
        run->stop_reason = reason;
        uv_timer_stop(&run->duration_timer);
        uv_timer_start(&run->drain_timer, hr_drain_cb, BENCH_DRAIN_MS, 0);
    }
    if (run->inflight_total == 0)
        hr_close_all(run);
}

static void hr_duration_cb(uv_timer_t *t)
{
    hr_stop(t->data, "--duration-max reached");
}

static void hr_write_cb(uv_write_t *req, int status);

/* Hand the queued requests to libuv, unless a write is still in progress
 * (then hr_write_cb comes back here). */
static void hr_flush(hr_conn *c)
{
    if (c->writing || c->out_len == 0 || c->run->closing)
        return;
    char *tmp = c->wbuf;
    c->wbuf = c->out;
    c->wbuf_len = c->out_len;
    c->out = tmp;
    c->out_len = 0;
    uv_buf_t b = uv_buf_init(c->wbuf, (unsigned)c->wbuf_len);
    int rc = uv_write(&c->write_req, (uv_stream_t *)&c->tcp, &b, 1, hr_write_cb);
    if (rc < 0) {
        hr_fail(c->run, EXIT_CONNECTION, "connection %u: write: %s", c->index, uv_strerror(rc));
        return;
    }
    c->writing = true;
}

static void hr_write_cb(uv_write_t *req, int status)
{
    hr_conn *c = req->data;
    c->writing = false;
    if (c->run->closing)
        return;
    if (status < 0) {
        hr_fail(c->run, EXIT_CONNECTION, "connection %u: write: %s", c->index, uv_strerror(status));
        return;
    }
    hr_flush(c);
}

/* Queue one encoded request and remember when it left. false: it did not fit. */
static bool hr_queue(hr_conn *c, const slot_req *req, uint64_t now_ns)
{
    size_t room = c->out_cap - c->out_len;
    long n = slot_req_encode(req, c->out + c->out_len, room);
    if (n < 0 || (size_t)n >= room)
        return false;
    c->out_len += (size_t)n;
    c->sent_ns[(c->ring_head + c->inflight) % c->ring_size] = now_ns;
    c->inflight++;
    c->run->inflight_total++;
    return true;
}

/* Top the connection up to --pipeline holds in flight, each of one unit for a
 * new user and request key. */
static void hr_fill(hr_conn *c)
{
    hr_run *run = c->run;
    uint64_t now_ns = uv_hrtime();
    while (!run->stop_sending && c->inflight < run->o->pipeline) {
        char user[48], key[48];
        snprintf(user, sizeof(user), "u%" PRIu32 "-%" PRIu64, c->index, c->next_n);
        snprintf(key, sizeof(key), "r%" PRIu32 "-%" PRIu64, c->index, c->next_n);
        slot_req req;
        if (slot_req_hold(&req, run->o->event, user, key, 1) < 0 || !hr_queue(c, &req, now_ns)) {
            hr_fail(run, EXIT_FAILED, "connection %u: a hold request did not fit its buffer", c->index);
            return;
        }
        c->next_n++;
        run->sent++;
        if (run->first_send_ns == 0)
            run->first_send_ns = now_ns;
    }
    hr_flush(c);
}

/* Count one reply line, the answer to the oldest request in flight on c. */
static void hr_on_reply(hr_conn *c, const char *line, size_t len, uint64_t now_ns)
{
    hr_run *run = c->run;
    if (c->inflight == 0) {
        hr_fail(run, EXIT_FAILED, "connection %u: a reply to no request: %.80s", c->index, line);
        return;
    }
    uint64_t sent_ns = c->sent_ns[c->ring_head];
    c->ring_head = (c->ring_head + 1) % c->ring_size;
    c->inflight--;
    run->inflight_total--;
    slot_reply r;
    if (slot_reply_parse(line, len, &r) < 0) {
        hr_fail(run, EXIT_FAILED, "connection %u: not a reply: %.*s", c->index, (int)(len > 80 ? 80 : len), line);
        return;
    }
    if (c->hello_pending) {
        c->hello_pending = false;
        if (!r.ok)
            hr_fail(run, EXIT_FAILED, "hello: %s: %s", r.error, r.message);
        slot_reply_clear(&r);
        return;
    }
    run->answered++;
    run->last_reply_ns = now_ns;
    slot_hist_record(run->lat_ns, now_ns - sent_ns);
    if (!r.ok) {
        run->errors[(unsigned)r.err <= SLOT_E__COUNT ? r.err : SLOT_E__COUNT]++;
        if (r.err != SLOT_E_OVERLOADED) /* overloaded changed nothing: the unit stays for others */
            hr_stop(run, "an error reply (see errors)");
    } else if (strcmp(r.status, "held") == 0 && !r.replay) {
        if (++run->held == run->o->capacity)
            run->sellout_ns = now_ns;
    } else if (strcmp(r.status, "sold_out") == 0) {
        if (run->sold_out++ == 0)
            run->first_sold_out_ns = now_ns;
    } else {
        run->unexpected++; /* a replay or another status: no new key should get one */
    }
    slot_reply_clear(&r);
}

/* Sold out and --tail sold_out answers seen: stop. sold_out answers while
 * fewer than capacity were held: give it BENCH_SELLOUT_GRACE_MS for held
 * answers still on their way, then stop (verification will say what is wrong). */
static void hr_check_stop(hr_run *run, uint64_t now_ns)
{
    const hr_opts *o = run->o;
    if (run->held >= o->capacity && run->sold_out >= o->tail)
        hr_stop(run, "sold out, and --tail sold_out answers came back");
    else if (run->sold_out > 0 && run->sold_out >= o->tail &&
             now_ns - run->first_sold_out_ns > BENCH_SELLOUT_GRACE_MS * 1000000ull)
        hr_stop(run, "sold_out answers while fewer than capacity units were held");
}

static void hr_alloc_cb(uv_handle_t *h, size_t suggested, uv_buf_t *buf)
{
    (void)suggested;
    hr_conn *c = h->data;
    *buf = uv_buf_init(c->in + c->in_len, (unsigned)(sizeof(c->in) - c->in_len));
}

static void hr_read_cb(uv_stream_t *s, ssize_t nread, const uv_buf_t *buf)
{
    (void)buf;
    hr_conn *c = s->data;
    hr_run *run = c->run;
    if (run->closing || nread == 0)
        return;
    if (nread < 0) {
        hr_fail(run, EXIT_CONNECTION, "connection %u: %s", c->index,
                nread == UV_EOF      ? "the server closed the connection"
                : nread == UV_ENOBUFS ? "a reply line longer than the read buffer"
                                      : uv_strerror((int)nread));
        return;
    }
    c->in_len += (size_t)nread;
    uint64_t now_ns = uv_hrtime();
    size_t pos = 0;
    char *nl;
    while (!run->closing && (nl = memchr(c->in + pos, '\n', c->in_len - pos)) != NULL) {
        size_t len = (size_t)(nl - (c->in + pos));
        hr_on_reply(c, c->in + pos, len > 0 && nl[-1] == '\r' ? len - 1 : len, now_ns);
        pos += len + 1;
    }
    if (run->closing)
        return;
    memmove(c->in, c->in + pos, c->in_len - pos);
    c->in_len -= pos;
    if (run->stop_sending) {
        hr_stop(run, NULL);
        return;
    }
    hr_check_stop(run, now_ns);
    hr_fill(c);
}

static void hr_connect_cb(uv_connect_t *req, int status)
{
    hr_conn *c = req->data;
    hr_run *run = c->run;
    if (run->closing)
        return;
    if (status < 0) {
        hr_fail(run, EXIT_CONNECTION, "connection %u: cannot connect: %s", c->index, uv_strerror(status));
        return;
    }
    uv_tcp_nodelay(&c->tcp, 1);
    int rc = uv_read_start((uv_stream_t *)&c->tcp, hr_alloc_cb, hr_read_cb);
    if (rc < 0) {
        hr_fail(run, EXIT_CONNECTION, "connection %u: read: %s", c->index, uv_strerror(rc));
        return;
    }
    if (run->o->token) {
        slot_req hello;
        slot_req_init(&hello, SLOT_OP_HELLO);
        if (slot_req_set_token(&hello, run->o->token) < 0 || !hr_queue(c, &hello, uv_hrtime())) {
            hr_fail(run, EXIT_FAILED, "--token: longer than %d bytes", SLOT_TOKEN_BYTES_MAX);
            return;
        }
        c->hello_pending = true;
    }
    /* Every connection starts sending once all are up, so the crowd arrives at once. */
    if (++run->connected < run->o->connections) {
        hr_flush(c);
        return;
    }
    for (uint32_t i = 0; i < run->o->connections && !run->closing; i++)
        hr_fill(&run->conns[i]);
}

/* Handles (all of them first, so hr_close_all may close every one) and buffers. 0 or -ENOMEM. */
static int hr_setup(hr_run *run)
{
    const hr_opts *o = run->o;
    run->conns = calloc(o->connections, sizeof(hr_conn));
    if (!run->conns)
        return -ENOMEM;
    for (uint32_t i = 0; i < o->connections; i++) {
        hr_conn *c = &run->conns[i];
        uv_tcp_init(&run->loop, &c->tcp);
        c->tcp.data = c;
        c->connect_req.data = c;
        c->write_req.data = c;
        c->run = run;
        c->index = i;
    }
    for (uint32_t i = 0; i < o->connections; i++) {
        hr_conn *c = &run->conns[i];
        c->ring_size = o->pipeline + 1;
        c->out_cap = (size_t)o->pipeline * BENCH_HOLD_REQ_BYTES + 2048; /* + a hello with its token */
        c->sent_ns = calloc(c->ring_size, sizeof(uint64_t));
        c->out = malloc(c->out_cap);
        c->wbuf = malloc(c->out_cap);
        if (!c->sent_ns || !c->out || !c->wbuf)
            return -ENOMEM;
    }
    return 0;
}

static void hr_teardown(hr_run *run)
{
    for (uint32_t i = 0; run->conns && i < run->o->connections; i++) {
        free(run->conns[i].sent_ns);
        free(run->conns[i].out);
        free(run->conns[i].wbuf);
    }
    free(run->conns);
    run->conns = NULL;
}

/* The load itself: one libuv loop, bounded by --duration-max plus BENCH_DRAIN_MS. */
static void hr_load(hr_run *run)
{
    uv_loop_init(&run->loop);
    uv_timer_init(&run->loop, &run->duration_timer);
    uv_timer_init(&run->loop, &run->drain_timer);
    run->duration_timer.data = run;
    run->drain_timer.data = run;
    if (hr_setup(run) < 0) {
        if (!run->conns) {
            snprintf(run->fatal, sizeof(run->fatal), "out of memory for %u connections", run->o->connections);
            run->fatal_exit = EXIT_FAILED;
            uv_close((uv_handle_t *)&run->duration_timer, NULL);
            uv_close((uv_handle_t *)&run->drain_timer, NULL);
        } else {
            hr_fail(run, EXIT_FAILED, "out of memory for %u connections", run->o->connections);
        }
    } else {
        uv_timer_start(&run->duration_timer, hr_duration_cb, (uint64_t)run->o->duration_max_s * 1000, 0);
        for (uint32_t i = 0; i < run->o->connections && !run->closing; i++) {
            hr_conn *c = &run->conns[i];
            int rc = uv_tcp_connect(&c->connect_req, &c->tcp, (struct sockaddr *)&run->addr, hr_connect_cb);
            if (rc < 0)
                hr_fail(run, EXIT_CONNECTION, "connection %u: cannot connect: %s", i, uv_strerror(rc));
        }
    }
    uv_run(&run->loop, UV_RUN_DEFAULT);
    uv_loop_close(&run->loop);
    hr_teardown(run);
}

/* ---------------------------------------------------------------- hot-release: before and after */

/* Create the event (a replay of the same settings is fine when nothing was
 * sold from it yet). 0 or an exit status. */
static int hr_create_event(const hr_opts *o, slot_client *c)
{
    slot_req req;
    slot_req_event(&req, SLOT_OP_CREATE_EVENT, o->event);
    req.capacity = o->capacity;
    req.shards = o->shards;
    req.has |= SLOT_HAS_SHARDS;
    /* No hold may expire before the verification has counted it. */
    uint64_t ttl_ms = (uint64_t)o->duration_max_s * 1000 + BENCH_DRAIN_MS + 60000;
    if (ttl_ms > SLOT_HOLD_TTL_MS_DEFAULT) {
        req.hold_ttl_ms = (uint32_t)(ttl_ms < SLOT_HOLD_TTL_MS_MAX ? ttl_ms : SLOT_HOLD_TTL_MS_MAX);
        req.has |= SLOT_HAS_HOLD_TTL;
    }
    slot_reply r;
    int rc = admin_call(c, "create_event", &req, &r);
    if (rc == 0 && (r.held != 0 || r.confirmed != 0 || r.available != o->capacity)) {
        fprintf(stderr, "slot-bench: event %s exists and already sold %" PRIu64 " units: use a new --event\n", o->event,
                r.held + r.confirmed);
        rc = EXIT_FAILED;
    } else if (rc == 0 && strcmp(r.status, "on_sale") != 0) {
        fprintf(stderr, "slot-bench: event %s is %s, not on_sale\n", o->event, r.status);
        rc = EXIT_FAILED;
    }
    slot_reply_clear(&r);
    return rc;
}

/* Append "; what" to the list of differences. */
static void differ(char *why, size_t cap, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

static void differ(char *why, size_t cap, const char *fmt, ...)
{
    size_t n = strlen(why);
    if (n > 0 && n + 2 < cap) {
        strcpy(why + n, "; ");
        n += 2;
    }
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why + n, cap - n, fmt, ap);
    va_end(ap);
}

/* What the run saw and what the server says now must agree. Fills why (empty
 * = passed). 0, or EXIT_CONNECTION when the server could not be asked. */
static int hr_verify(const hr_run *run, slot_client *c, char *why, size_t cap)
{
    const hr_opts *o = run->o;
    why[0] = 0;
    if (run->held != o->capacity)
        differ(why, cap, "%" PRIu64 " held answers for capacity %" PRIu64, run->held, o->capacity);
    uint64_t errors = 0;
    for (unsigned e = 0; e <= SLOT_E__COUNT; e++)
        errors += e == SLOT_E_OVERLOADED ? 0 : run->errors[e];
    if (errors)
        differ(why, cap, "%" PRIu64 " error replies", errors);
    if (run->unexpected)
        differ(why, cap, "%" PRIu64 " replies neither held, sold_out nor an error", run->unexpected);
    if (run->inflight_total)
        differ(why, cap, "%" PRIu64 " requests never answered", run->inflight_total);
    slot_req req;
    slot_reply r;
    slot_req_event(&req, SLOT_OP_CHECK, o->event);
    int rc = admin_call(c, "check", &req, &r);
    if (rc == EXIT_CONNECTION)
        return rc;
    if (rc != 0)
        differ(why, cap, "check: %s", r.error);
    else if (r.nviolations)
        differ(why, cap, "check: %" PRIu32 " violations: %.300s", r.nviolations, r.line);
    slot_reply_clear(&r);
    slot_req_event(&req, SLOT_OP_EVENT, o->event);
    if ((rc = admin_call(c, "event", &req, &r)) == EXIT_CONNECTION)
        return rc;
    if (rc != 0)
        differ(why, cap, "event: %s", r.error);
    else if (r.available != 0 || r.held != o->capacity || r.confirmed != 0)
        differ(why, cap, "event shows available %" PRIu64 ", held %" PRIu64 ", confirmed %" PRIu64, r.available,
               r.held, r.confirmed);
    slot_reply_clear(&r);
    return 0;
}

static double ns_to_s(uint64_t ns)
{
    return (double)ns / 1e9;
}

static double ns_to_ms(uint64_t ns)
{
    return (double)ns / 1e6;
}

/* The numbers of a run, in the report's units. */
typedef struct hr_numbers {
    double run_s;                      /* first send to last reply */
    double sellout_s;                  /* first send to the capacity-th held reply; 0 when not sold out */
    double requests_per_s, holds_per_s;
    double p50_ms, p99_ms, p999_ms, max_ms, mean_ms;
} hr_numbers;

static hr_numbers hr_numbers_of(const hr_run *run)
{
    hr_numbers n = {0};
    const slot_hist *h = run->lat_ns;
    if (run->last_reply_ns > run->first_send_ns)
        n.run_s = ns_to_s(run->last_reply_ns - run->first_send_ns);
    if (run->sellout_ns)
        n.sellout_s = ns_to_s(run->sellout_ns - run->first_send_ns);
    n.requests_per_s = n.run_s > 0 ? (double)run->answered / n.run_s : 0;
    n.holds_per_s = n.sellout_s > 0 ? (double)run->held / n.sellout_s : 0;
    n.p50_ms = ns_to_ms(slot_hist_percentile(h, 50));
    n.p99_ms = ns_to_ms(slot_hist_percentile(h, 99));
    n.p999_ms = ns_to_ms(slot_hist_percentile(h, 99.9));
    n.max_ms = ns_to_ms(h->count ? h->max : 0);
    n.mean_ms = slot_hist_mean(h) / 1e6;
    return n;
}

static void hr_print_report(const hr_run *run, const hr_numbers *n)
{
    const hr_opts *o = run->o;
    printf("slot-bench hot-release %s: event %s, capacity %" PRIu64 ", %u shards, %u connections x pipeline %u, "
           "seed %" PRIu64 "\n",
           SLOT_VERSION, o->event, o->capacity, o->shards, o->connections, o->pipeline, o->seed);
    printf("  stopped         %s\n", run->fatal[0] ? run->fatal : run->stop_reason ? run->stop_reason : "-");
    printf("  requests        %" PRIu64 " answered of %" PRIu64 " sent in %.3f s: %.0f requests/s\n", run->answered,
           run->sent, n->run_s, n->requests_per_s);
    if (run->sellout_ns)
        printf("  held            %" PRIu64 " (sold out in %.3f s: %.0f holds/s)\n", run->held, n->sellout_s,
               n->holds_per_s);
    else
        printf("  held            %" PRIu64 " (not sold out)\n", run->held);
    printf("  sold_out        %" PRIu64 "\n", run->sold_out);
    printf("  errors         ");
    bool any = false;
    for (unsigned e = 0; e <= SLOT_E__COUNT; e++)
        if (run->errors[e]) {
            printf(" %s %" PRIu64, e < SLOT_E__COUNT ? slot_err_name((slot_err)e) : "(unknown code)", run->errors[e]);
            any = true;
        }
    printf("%s\n", any ? "" : " none");
    if (run->unexpected)
        printf("  unexpected      %" PRIu64 " (replay or unknown status)\n", run->unexpected);
    printf("  latency ms      p50 %.3f  p99 %.3f  p99.9 %.3f  max %.3f  (mean %.3f, %" PRIu64 " samples)\n",
           n->p50_ms, n->p99_ms, n->p999_ms, n->max_ms, n->mean_ms, run->lat_ns->count);
    if (run->sellout_ns)
        printf("  time to sell out %.3f s\n", n->sellout_s);
}

/* The report as JSON into path. 0, or EXIT_FAILED when the file cannot be written. */
static int hr_write_json(const hr_run *run, const hr_numbers *n, const char *verification, const char *path)
{
    const hr_opts *o = run->o;
    json_t *errors = json_object();
    for (unsigned e = 0; e <= SLOT_E__COUNT; e++)
        if (run->errors[e])
            json_object_set_new(errors, e < SLOT_E__COUNT ? slot_err_name((slot_err)e) : "unknown",
                                json_integer((json_int_t)run->errors[e]));
    json_t *root = json_pack(
        "{s:s, s:s, s:s, s:I, s:i, s:i, s:i, s:I, s:I, s:s, s:I, s:I, s:f, s:I, s:I, s:I, s:o, s:f, s:f, s:f,"
        " s:{s:f, s:f, s:f, s:f, s:f}, s:s}",
        "scenario", "hot-release", "version", SLOT_VERSION, "event", o->event, "capacity", (json_int_t)o->capacity,
        "shards", (int)o->shards, "connections", (int)o->connections, "pipeline", (int)o->pipeline,
        "tail", (json_int_t)o->tail, "seed", (json_int_t)o->seed,
        "stopped", run->fatal[0] ? run->fatal : run->stop_reason ? run->stop_reason : "",
        "requests_sent", (json_int_t)run->sent, "requests", (json_int_t)run->answered, "run_s", n->run_s,
        "held", (json_int_t)run->held, "sold_out", (json_int_t)run->sold_out, "unexpected", (json_int_t)run->unexpected,
        "errors", errors, "requests_per_s", n->requests_per_s, "holds_per_s", n->holds_per_s, "sellout_s", n->sellout_s,
        "latency_ms", "p50", n->p50_ms, "p99", n->p99_ms, "p99_9", n->p999_ms, "max", n->max_ms, "mean", n->mean_ms,
        "verification", verification);
    int rc = root && json_dump_file(root, path, JSON_INDENT(2) | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(6)) == 0 ? 0 : EXIT_FAILED;
    if (rc)
        fprintf(stderr, "slot-bench: --json %s: %s\n", path, root ? strerror(errno) : "cannot build the report");
    json_decref(root);
    return rc;
}

/* Create the event, run the load, report, verify. */
static int hr_main(int argc, char **argv)
{
    hr_opts o = {.port = SLOT_PORT_DEFAULT, .capacity = 100000, .shards = 16, .connections = 256,
                 .pipeline = 1, .tail = 10000, .duration_max_s = 120};
    strcpy(o.host, "127.0.0.1");
    int rc = hr_parse(&o, argc, argv);
    if (rc >= 0)
        return rc;
    slot_client *admin = NULL;
    if ((rc = admin_connect(o.host, o.port, o.token, &admin)) || (rc = hr_create_event(&o, admin))) {
        slot_client_close(admin);
        return rc;
    }
    hr_run *run = calloc(1, sizeof(*run));
    slot_hist *lat = malloc(sizeof(*lat));
    socklen_t alen = sizeof(struct sockaddr_storage);
    if (!run || !lat || getpeername(slot_client_fd(admin), (struct sockaddr *)&run->addr, &alen) < 0) {
        fprintf(stderr, "slot-bench: %s\n", run && lat ? strerror(errno) : "out of memory");
        free(run);
        free(lat);
        slot_client_close(admin);
        return EXIT_FAILED;
    }
    slot_hist_reset(lat);
    run->o = &o;
    run->lat_ns = lat;
    hr_load(run);
    hr_numbers n = hr_numbers_of(run);
    hr_print_report(run, &n);
    char why[1024] = "";
    if (run->fatal[0]) {
        rc = run->fatal_exit;
        snprintf(why, sizeof(why), "not run: %s", run->fatal);
        printf("verification: %s\n", why);
    } else if ((rc = hr_verify(run, admin, why, sizeof(why))) == 0) {
        rc = why[0] ? EXIT_FAILED : 0;
        printf("verification: %s%s\n", why[0] ? "FAILED: " : "passed", why);
    } else {
        snprintf(why, sizeof(why), "not run: the server could not be asked");
        printf("verification: %s\n", why);
    }
    if (o.json_path && hr_write_json(run, &n, why[0] ? why : "passed", o.json_path) && rc == 0)
        rc = EXIT_FAILED;
    slot_client_close(admin);
    free(lat);
    free(run);
    return rc;
}

/* ---------------------------------------------------------------- scenarios */

typedef struct bench_scenario {
    const char *name;
    const char *summary;
    int (*main)(int argc, char **argv);  /* argv[0] is the scenario's name */
    void (*usage)(FILE *f);
} bench_scenario;

static const bench_scenario scenarios[] = {
    {"hot-release", "K connections race for one event's units until it is sold out; then verify", hr_main, hr_usage},
};

#define SCENARIOS_N (sizeof(scenarios) / sizeof(scenarios[0]))

static void usage(FILE *f)
{
    fprintf(f, "usage: slot-bench SCENARIO [OPTIONS]   (slot-bench SCENARIO --help for its options)\n"
               "       slot-bench --help | --version\n\n"
               "Load generator for slotd (127.0.0.1:%d unless told otherwise). Scenarios:\n",
            SLOT_PORT_DEFAULT);
    for (size_t i = 0; i < SCENARIOS_N; i++)
        fprintf(f, "  %-14s %s\n", scenarios[i].name, scenarios[i].summary);
    fprintf(f, "\nExit status: 0 verification passed; 1 it failed; 2 connection error; 64 usage error.\n");
}

int main(int argc, char **argv)
{
    signal(SIGPIPE, SIG_IGN); /* libuv writes with write(2): a closed peer must be an error, not a death */
    opterr = 0;
    if (argc < 2) {
        usage(stderr);
        return EXIT_USAGE;
    }
    const char *name = argv[1];
    if (strcmp(name, "--help") == 0 || strcmp(name, "-h") == 0 || strcmp(name, "help") == 0) {
        for (size_t i = 0; argc > 2 && i < SCENARIOS_N; i++)
            if (strcmp(argv[2], scenarios[i].name) == 0) {
                scenarios[i].usage(stdout);
                return 0;
            }
        usage(stdout);
        return 0;
    }
    if (strcmp(name, "--version") == 0 || strcmp(name, "-V") == 0) {
        printf("slot-bench %s\n", SLOT_VERSION);
        return 0;
    }
    for (size_t i = 0; i < SCENARIOS_N; i++)
        if (strcmp(name, scenarios[i].name) == 0) {
            optind = 0; /* GNU getopt: start over on the scenario's arguments */
            return scenarios[i].main(argc - 1, argv + 1);
        }
    fprintf(stderr, "slot-bench: unknown scenario '%s' (see 'slot-bench --help')\n", name);
    return EXIT_USAGE;
}
