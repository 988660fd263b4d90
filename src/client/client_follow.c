/* client_follow.c — following a replica set's primary (slot/client.h,
 * "following the primary"): a node list, one connection, and a bounded
 * loop that sends the same request until a node gives a real answer. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "client_int.h"
#include "slot/client.h"

#define ADDR_CAP (SLOT_CLIENT_ADDR_BYTES_MAX + 1)

struct slot_follow {
    char nodes[SLOT_FOLLOW_NODES_MAX][ADDR_CAP];
    uint32_t nnodes, ngiven; /* [0, ngiven) from the caller's list; then learned ones */
    uint32_t cur;            /* the node connected now, or to try next */
    slot_client *c;
    slot_follow_opts o;
    char token[SLOT_TOKEN_BYTES_MAX + 1];
    slot_follow_stats st;
    char answered[ADDR_CAP]; /* the node of the last answer; "" before any */
    char err[600];
};

int slot_addr_split(const char *s, size_t len, char *host, size_t host_cap, uint16_t *port)
{
    const char *end = s + len, *colon = NULL;
    for (const char *p = s; p < end; p++)
        if (*p == ':')
            colon = p;
    const char *h = s, *h_end = colon;
    if (len > 0 && s[0] == '[') {
        h = s + 1;
        h_end = memchr(s, ']', len);
        if (!h_end || h_end + 1 != colon)
            return -EINVAL;
    }
    if (!colon || h_end <= h || (size_t)(h_end - h) >= host_cap || colon + 1 == end || end - colon > 6)
        return -EINVAL;
    for (const char *p = h; p < h_end; p++)
        if ((unsigned char)*p <= ' ' || *p == ',')
            return -EINVAL; /* no host name has a space, a control byte or a comma */
    unsigned long v = 0;
    for (const char *p = colon + 1; p < end; p++) {
        if (*p < '0' || *p > '9')
            return -EINVAL;
        v = v * 10 + (unsigned long)(*p - '0');
    }
    if (v < 1 || v > 65535)
        return -EINVAL;
    memcpy(host, h, (size_t)(h_end - h));
    host[h_end - h] = 0;
    *port = (uint16_t)v;
    return 0;
}

void slot_follow_opts_default(slot_follow_opts *o)
{
    *o = (slot_follow_opts){
        .attempts_max = SLOT_FOLLOW_ATTEMPTS_DEFAULT,
        .deadline_ms = SLOT_FOLLOW_DEADLINE_MS_DEFAULT,
        .connect_timeout_ms = SLOT_FOLLOW_CONNECT_MS_DEFAULT,
        .reply_timeout_ms = SLOT_FOLLOW_REPLY_MS_DEFAULT,
        .backoff_ms = SLOT_FOLLOW_BACKOFF_MS_DEFAULT,
        .backoff_max_ms = SLOT_FOLLOW_BACKOFF_MAX_MS_DEFAULT,
    };
}

static bool opts_ok(const slot_follow_opts *o)
{
    return o->attempts_max >= 1 && o->attempts_max <= SLOT_FOLLOW_ATTEMPTS_MAX && o->deadline_ms >= 1 &&
           o->deadline_ms <= SLOT_FOLLOW_DEADLINE_MS_MAX && o->connect_timeout_ms > 0 && o->reply_timeout_ms > 0 &&
           o->backoff_ms >= 0 && o->backoff_ms <= o->backoff_max_ms && o->backoff_max_ms <= o->deadline_ms &&
           (!o->token || strlen(o->token) <= SLOT_TOKEN_BYTES_MAX);
}

/* Index of addr (n bytes) in f's list; a new one is added (learned) while
 * there is room, else it takes the last learned place. -1: not an address. */
static int node_index(slot_follow *f, const char *addr, size_t n)
{
    char host[ADDR_CAP];
    uint16_t port;
    if (n >= ADDR_CAP || slot_addr_split(addr, n, host, sizeof(host), &port) < 0)
        return -1;
    for (uint32_t i = 0; i < f->nnodes; i++)
        if (strlen(f->nodes[i]) == n && memcmp(f->nodes[i], addr, n) == 0)
            return (int)i;
    uint32_t i = f->nnodes < SLOT_FOLLOW_NODES_MAX ? f->nnodes++ : SLOT_FOLLOW_NODES_MAX - 1;
    if (i < f->ngiven)
        return -1; /* the list is full of the caller's own nodes: keep them */
    memcpy(f->nodes[i], addr, n);
    f->nodes[i][n] = 0;
    return (int)i;
}

int slot_follow_new(const char *addrs, const slot_follow_opts *opts, slot_follow **out, char *err, size_t errlen)
{
    *out = NULL;
    if (err && errlen)
        err[0] = 0;
    slot_follow *f = calloc(1, sizeof(*f));
    if (!f)
        return -ENOMEM;
    if (opts)
        f->o = *opts;
    else
        slot_follow_opts_default(&f->o);
    if (!opts_ok(&f->o)) {
        if (err)
            snprintf(err, errlen, "an option is out of range");
        free(f);
        return -EINVAL;
    }
    if (f->o.token) {
        strcpy(f->token, f->o.token);
        f->o.token = f->token;
    }
    for (const char *p = addrs;; p++) {
        const char *comma = strchr(p, ',');
        size_t n = comma ? (size_t)(comma - p) : strlen(p);
        if (f->nnodes >= SLOT_FOLLOW_NODES_MAX || node_index(f, p, n) < 0) {
            if (err)
                snprintf(err, errlen,
                         f->nnodes >= SLOT_FOLLOW_NODES_MAX ? "more than %d addresses"
                                                            : "expected HOST:PORT, not '%.*s'",
                         f->nnodes >= SLOT_FOLLOW_NODES_MAX ? SLOT_FOLLOW_NODES_MAX : (int)n, p);
            free(f);
            return -EINVAL;
        }
        f->ngiven = f->nnodes; /* a repeated address is kept once */
        if (!comma)
            break;
        p = comma;
    }
    *out = f;
    return 0;
}

void slot_follow_free(slot_follow *f)
{
    if (!f)
        return;
    slot_client_close(f->c);
    free(f);
}

int64_t slot__now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

#define now_ms slot__now_ms

static int left_ms(int64_t deadline_ms, int cap_ms)
{
    int64_t d = deadline_ms - now_ms();
    return d <= 0 ? 0 : d < cap_ms ? (int)d : cap_ms;
}

static void pause_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    while (ms > 0 && nanosleep(&ts, &ts) < 0 && errno == EINTR) {
    }
}

static const char *why(int rc)
{
    return rc == -ECONNRESET  ? "the connection was closed"
           : rc == -ENXIO     ? "host name not found"
           : rc == -EINVAL    ? "the reply is not a slotd reply"
           : rc == -ETIMEDOUT ? "no answer in time"
                              : strerror(-rc);
}

/* Connect to the current node and, with a token, say hello. 0; 1 when hello
 * was refused (its reply is in out: the caller's answer); or -errno. */
static int open_cur(slot_follow *f, int64_t deadline_ms, slot_reply *out)
{
    char host[ADDR_CAP];
    uint16_t port;
    const char *a = f->nodes[f->cur];
    if (slot_addr_split(a, strlen(a), host, sizeof(host), &port) < 0)
        return -EINVAL;
    int t = left_ms(deadline_ms, f->o.connect_timeout_ms);
    if (t == 0)
        return -ETIMEDOUT;
    int rc = slot_client_connect(host, port, t, &f->c);
    if (rc < 0)
        return rc;
    f->st.connects++;
    if (!f->o.token)
        return 0;
    slot_req hello;
    slot_req_init(&hello, SLOT_OP_HELLO);
    slot_req_set_token(&hello, f->o.token);
    rc = slot_client_call(f->c, &hello, out, left_ms(deadline_ms, f->o.reply_timeout_ms));
    if (rc == 0 && out->ok) {
        slot_reply_clear(out);
        return 0;
    }
    if (rc == 0)
        return 1;
    slot_reply_clear(out);
    return rc;
}

/* One send of line to the current node (connecting first). 0 with the reply
 * in out; 1: a refused hello's reply in out; or -errno (connection lost). */
static int attempt(slot_follow *f, const char *line, size_t len, int64_t deadline_ms, slot_reply *out)
{
    int rc = f->c ? 0 : open_cur(f, deadline_ms, out);
    if (rc != 0)
        return rc;
    f->st.sends++;
    rc = slot_client_send_raw(f->c, line, len);
    if (rc == 0) {
        int t = left_ms(deadline_ms, f->o.reply_timeout_ms);
        rc = t > 0 ? slot_client_recv(f->c, out, t) : -ETIMEDOUT;
    }
    if (rc < 0)
        slot_reply_clear(out);
    return rc;
}

static void drop_conn(slot_follow *f)
{
    slot_client_close(f->c);
    f->c = NULL;
}

/* The answer came from the current node: note it (a new node is a primary change). */
static void answered(slot_follow *f)
{
    if (f->answered[0] && strcmp(f->answered, f->nodes[f->cur]) != 0)
        f->st.primary_changes++;
    strcpy(f->answered, f->nodes[f->cur]);
    f->err[0] = 0;
}

/* What an answer asks of the follower (slot/client.h, "following the primary"). */
typedef enum follow_step {
    STEP_ANSWER, /* the server's decision: returned */
    STEP_OTHER,  /* another node: the one named in "primary", else the next of the list */
    STEP_SAME,   /* the same node again, after a wait */
} follow_step;

static follow_step step_of(int rc, const slot_reply *r, unsigned flags)
{
    if (rc < 0)
        return STEP_OTHER;
    if (r->err == SLOT_E_WRONG_SET && (flags & SLOT__FOLLOW_STOP_WRONG_SET))
        return STEP_ANSWER; /* slot_route goes to the owner's follower */
    if (r->err == SLOT_E_NOT_PRIMARY || r->err == SLOT_E_UNAVAILABLE || r->err == SLOT_E_SHUTTING_DOWN ||
        r->err == SLOT_E_WRONG_SET)
        return STEP_OTHER;
    if (rc == 0 &&
        (r->err == SLOT_E_OVERLOADED || r->err == SLOT_E_MOVING))
        return STEP_SAME;
    return STEP_ANSWER;
}

/* A redirecting answer: not_primary or wrong_set, whose "primary" may name where to go. */
static bool redirects(const slot_reply *r)
{
    return r->err == SLOT_E_NOT_PRIMARY || r->err == SLOT_E_WRONG_SET;
}

int slot__follow_call(slot_follow *f, const char *line, size_t len, slot_reply *out, unsigned flags,
                      int64_t deadline_cap_ms)
{
    memset(out, 0, sizeof(*out));
    f->st.calls++;
    if (len == 0 || len > SLOT_CLIENT_LINE_MAX || line[len - 1] != '\n')
        return -EMSGSIZE;
    int64_t t0 = now_ms(), deadline_ms = t0 + f->o.deadline_ms;
    if (deadline_cap_ms > 0 && deadline_cap_ms < deadline_ms)
        deadline_ms = deadline_cap_ms;
    int backoff = f->o.backoff_ms;
    bool followed = false; /* the last step was a redirect: the next one pauses */
    uint32_t n = 0;
    while (n < f->o.attempts_max && now_ms() < deadline_ms) {
        slot_reply_clear(out);
        if (n++ > 0)
            f->st.retries++;
        const char *node = f->nodes[f->cur];
        int rc = attempt(f, line, len, deadline_ms, out);
        /* A hello refused with not_primary (rc 1) is followed like the request's own answer. */
        follow_step step = step_of(rc, out, flags);
        if (step == STEP_ANSWER) {
            answered(f);
            return 0;
        }
        if (rc < 0)
            snprintf(f->err, sizeof(f->err), "%s: %s", node, why(rc));
        else
            snprintf(f->err, sizeof(f->err), "%s: %s: %.300s", node, out->error, out->message);
        if (step == STEP_SAME) { /* moving or overloaded: nothing changed; the connection stays */
            bool told = out->err == SLOT_E_MOVING && out->retry_after_ms > 0;
            int wait = told ? (out->retry_after_ms < SLOT_FOLLOW_MOVING_WAIT_MS_MAX ? (int)out->retry_after_ms
                                                                                    : SLOT_FOLLOW_MOVING_WAIT_MS_MAX)
                            : backoff;
            if (!told)
                backoff = backoff * 2 > f->o.backoff_max_ms ? f->o.backoff_max_ms : backoff * 2;
            if (n < f->o.attempts_max)
                pause_ms(left_ms(deadline_ms, wait));
            followed = false;
            continue;
        }
        drop_conn(f);
        int to = rc >= 0 && redirects(out) && out->primary[0] && strcmp(out->primary, node) != 0
                     ? node_index(f, out->primary, strlen(out->primary))
                     : -1;
        if (to >= 0 && !followed) {
            f->st.redirects++;
            f->cur = (uint32_t)to;
            followed = true;
            continue; /* straight to the primary it named */
        }
        if (to >= 0)
            f->st.redirects++;
        f->cur = to >= 0 ? (uint32_t)to : (f->cur + 1) % f->nnodes;
        followed = false;
        if (n < f->o.attempts_max) /* no pause after the last attempt */
            pause_ms(left_ms(deadline_ms, backoff));
        backoff = backoff * 2 > f->o.backoff_max_ms ? f->o.backoff_max_ms : backoff * 2;
    }
    bool timed_out = now_ms() >= deadline_ms;
    char what[sizeof(f->err)];
    snprintf(what, sizeof(what), "%s", f->err[0] ? f->err : "nothing was tried");
    snprintf(f->err, sizeof(f->err), "gave up after %u attempt%s in %lld ms (%s); last: %.500s", n, n == 1 ? "" : "s",
             (long long)(now_ms() - t0), timed_out ? "deadline" : "attempt bound", what);
    return timed_out ? -ETIMEDOUT : -EAGAIN;
}

int slot_follow_call_line(slot_follow *f, const char *line, size_t len, slot_reply *out)
{
    return slot__follow_call(f, line, len, out, 0, 0);
}

int slot_follow_call(slot_follow *f, const slot_req *req, slot_reply *out)
{
    char line[SLOT__CLIENT_REQ_BYTES_MAX];
    long n = slot_req_encode(req, line, sizeof(line));
    if (n < 0 || (size_t)n >= sizeof(line)) {
        memset(out, 0, sizeof(*out));
        f->st.calls++;
        return -EMSGSIZE;
    }
    return slot_follow_call_line(f, line, (size_t)n, out);
}

const char *slot_follow_error(const slot_follow *f)
{
    return f->err;
}

const char *slot_follow_node(const slot_follow *f)
{
    return f->answered[0] ? f->answered : f->nodes[f->cur];
}

slot_client *slot_follow_client(slot_follow *f)
{
    return f->c;
}

void slot_follow_stats_get(const slot_follow *f, slot_follow_stats *out)
{
    *out = f->st;
}
