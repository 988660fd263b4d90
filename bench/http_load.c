/*
 * http_load.c — a small keep-alive load generator for bench/http_vs_tcp.sh:
 * N connections, each with one hold in flight at a time, over HTTP/1.1
 * (POST /v1/hold, keep-alive) or over the TCP protocol (one NDJSON line),
 * so the two are compared with the same concurrency. One thread, epoll.
 *
 *   http_load --mode http|tcp --port P [--host 127.0.0.1] [--conns 256]
 *             [--seconds 5] [--event E] [--tag T]
 *
 * Every hold has a fresh request key (T-connection-counter) and its own
 * user, so each is a new hold. Prints one line:
 *   MODE conns N seconds S holds H errors E holds_per_s X p50_us A p99_us B
 * Exit status 0, 1 when a connection failed, 2 on a usage error.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define LOAD_CONNS_MAX 4096
#define LOAD_BUF_BYTES 8192
#define LOAD_SAMPLES_MAX (1u << 22) /* latencies kept for the percentiles */

typedef struct lconn {
    int fd;
    uint64_t n; /* holds sent */
    uint64_t t0_ns;
    char in[LOAD_BUF_BYTES];
    size_t in_len;
} lconn;

static bool http_mode;
static const char *event = "bench";
static const char *tag = "t";
static uint64_t holds, errors;
static uint32_t *samples;
static size_t nsamples;

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static int send_hold(lconn *c, int id)
{
    char body[256], msg[512];
    int bl = snprintf(body, sizeof(body), "{\"event\":\"%s\",\"user\":\"%s-%d\",\"qty\":1,\"request\":\"%s-%d-%llu\"%s",
                      event, tag, id, tag, id, (unsigned long long)c->n, http_mode ? "}" : ",\"op\":\"hold\"}\n");
    int n = http_mode ? snprintf(msg, sizeof(msg),
                                 "POST /v1/hold HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                                 "Content-Length: %d\r\n\r\n%s",
                                 bl, body)
                      : snprintf(msg, sizeof(msg), "%s", body);
    c->n++;
    c->t0_ns = now_ns();
    return send(c->fd, msg, (size_t)n, MSG_NOSIGNAL) == n ? 0 : -1;
}

/* Length of one complete answer at the start of c->in, or 0 when not all there. */
static size_t answer_len(const lconn *c)
{
    if (!http_mode) {
        const char *nl = memchr(c->in, '\n', c->in_len);
        return nl ? (size_t)(nl - c->in) + 1 : 0;
    }
    const char *end = memmem(c->in, c->in_len, "\r\n\r\n", 4);
    if (!end)
        return 0;
    const char *cl = memmem(c->in, (size_t)(end - c->in), "Content-Length: ", 16);
    size_t body = cl ? strtoul(cl + 16, NULL, 10) : 0;
    size_t total = (size_t)(end - c->in) + 4 + body;
    return total <= c->in_len ? total : 0;
}

static void answered(lconn *c, size_t len)
{
    bool ok = memmem(c->in, len, "\"status\":\"held\"", 15) != NULL;
    if (ok)
        holds++;
    else
        errors++;
    if (nsamples < LOAD_SAMPLES_MAX)
        samples[nsamples++] = (uint32_t)((now_ns() - c->t0_ns) / 1000u);
    memmove(c->in, c->in + len, c->in_len - len);
    c->in_len -= len;
}

static int cmp_u32(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
    const char *host = "127.0.0.1";
    int port = 0, nconns = 256;
    double seconds = 5;
    static const struct option opts[] = {
        {"mode", required_argument, NULL, 'm'},    {"host", required_argument, NULL, 'H'},
        {"port", required_argument, NULL, 'p'},    {"conns", required_argument, NULL, 'c'},
        {"seconds", required_argument, NULL, 's'}, {"event", required_argument, NULL, 'e'},
        {"tag", required_argument, NULL, 't'},     {NULL, 0, NULL, 0}};
    int ch;
    const char *mode = NULL;
    while ((ch = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        switch (ch) {
        case 'm':
            mode = optarg;
            break;
        case 'H':
            host = optarg;
            break;
        case 'p':
            port = atoi(optarg);
            break;
        case 'c':
            nconns = atoi(optarg);
            break;
        case 's':
            seconds = atof(optarg);
            break;
        case 'e':
            event = optarg;
            break;
        case 't':
            tag = optarg;
            break;
        default:
            return 2;
        }
    }
    if (!mode || (strcmp(mode, "http") != 0 && strcmp(mode, "tcp") != 0) || port <= 0 || port > 65535 || nconns < 1 ||
        nconns > LOAD_CONNS_MAX || seconds <= 0) {
        fprintf(stderr,
                "usage: http_load --mode http|tcp --port P [--host H] [--conns 1..%d] [--seconds S] "
                "[--event E] [--tag T]\n",
                LOAD_CONNS_MAX);
        return 2;
    }
    http_mode = strcmp(mode, "http") == 0;
    samples = malloc(sizeof(uint32_t) * LOAD_SAMPLES_MAX);
    lconn *cs = calloc((size_t)nconns, sizeof(*cs));
    int ep = epoll_create1(0);
    if (!samples || !cs || ep < 0)
        return 1;
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    if (inet_pton(AF_INET, host, &sa.sin_addr) != 1)
        return 2;
    for (int i = 0; i < nconns; i++) {
        cs[i].fd = socket(AF_INET, SOCK_STREAM, 0);
        int one = 1;
        setsockopt(cs[i].fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
        if (connect(cs[i].fd, (struct sockaddr *)&sa, sizeof(sa)) != 0) {
            fprintf(stderr, "http_load: connect %s:%d: %s\n", host, port, strerror(errno));
            return 1;
        }
        struct epoll_event ev = {.events = EPOLLIN, .data.u32 = (uint32_t)i};
        epoll_ctl(ep, EPOLL_CTL_ADD, cs[i].fd, &ev);
    }
    uint64_t start = now_ns(), stop = start + (uint64_t)(seconds * 1e9);
    for (int i = 0; i < nconns; i++)
        if (send_hold(&cs[i], i) != 0)
            return 1;
    struct epoll_event evs[256];
    while (now_ns() < stop) {
        int n = epoll_wait(ep, evs, 256, 100);
        for (int k = 0; k < n; k++) {
            int i = (int)evs[k].data.u32;
            lconn *c = &cs[i];
            ssize_t r = recv(c->fd, c->in + c->in_len, sizeof(c->in) - c->in_len, 0);
            if (r <= 0) {
                fprintf(stderr, "http_load: connection %d closed by the server\n", i);
                return 1;
            }
            c->in_len += (size_t)r;
            size_t len;
            while ((len = answer_len(c)) > 0) {
                answered(c, len);
                if (send_hold(c, i) != 0)
                    return 1;
            }
        }
    }
    double took = (double)(now_ns() - start) / 1e9;
    qsort(samples, nsamples, sizeof(uint32_t), cmp_u32);
    uint32_t p50 = nsamples ? samples[nsamples / 2] : 0, p99 = nsamples ? samples[nsamples * 99 / 100] : 0;
    printf("%s conns %d seconds %.1f holds %llu errors %llu holds_per_s %.0f p50_us %u p99_us %u\n", mode, nconns, took,
           (unsigned long long)holds, (unsigned long long)errors, (double)holds / took, p50, p99);
    return 0;
}
