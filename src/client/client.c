/* client.c — the C client of slotd's protocol: request codec, reply parser and
 * a blocking connection; see slot/client.h. */
#include "slot/client.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "client_int.h"
#include "base/jsonw.h"

/* ---------------------------------------------------------------- building */

void slot_req_init(slot_req *req, slot_op op)
{
    memset(req, 0, sizeof(*req));
    req->op = op;
}

/* Copy a NUL-terminated string into a fixed field; -EINVAL when it does not fit. */
static int set_field(char *dst, size_t max, const char *src, size_t *len_out)
{
    size_t n = strlen(src);
    if (n > max)
        return -EINVAL;
    memcpy(dst, src, n + 1);
    *len_out = n;
    return 0;
}

int slot_req_set_event(slot_req *req, const char *event)
{
    size_t n = 0;
    int rc = set_field(req->event, SLOT_EVENT_BYTES_MAX, event, &n);
    if (rc == 0) {
        req->event_len = (uint8_t)n;
        req->has |= SLOT_HAS_EVENT;
    }
    return rc;
}

int slot_req_set_user(slot_req *req, const char *user)
{
    size_t n = 0;
    int rc = set_field(req->user, SLOT_USER_BYTES_MAX, user, &n);
    if (rc == 0)
        req->user_len = (uint8_t)n;
    return rc;
}

int slot_req_set_request(slot_req *req, const char *request)
{
    size_t n = 0;
    int rc = set_field(req->request, SLOT_REQUEST_BYTES_MAX, request, &n);
    if (rc == 0)
        req->request_len = (uint8_t)n;
    return rc;
}

int slot_req_set_hold(slot_req *req, const char *hold)
{
    size_t n = 0;
    int rc = set_field(req->hold, SLOT_HOLD_ARG_BYTES_MAX, hold, &n);
    if (rc == 0)
        req->hold_len = (uint8_t)n;
    return rc;
}

int slot_req_set_token(slot_req *req, const char *token)
{
    size_t n = 0;
    int rc = set_field(req->token, SLOT_TOKEN_BYTES_MAX, token, &n);
    if (rc == 0) {
        req->token_len = (uint16_t)n;
        req->has |= SLOT_HAS_TOKEN;
    }
    return rc;
}

void slot_req_set_id_int(slot_req *req, int64_t id)
{
    req->id.kind = SLOT_ID_INT;
    req->id.i = id;
    req->id.len = 0;
    req->id.s[0] = 0;
}

int slot_req_set_id_str(slot_req *req, const char *id)
{
    size_t n = 0;
    int rc = set_field(req->id.s, SLOT_ID_BYTES_MAX, id, &n);
    if (rc == 0) {
        req->id.kind = SLOT_ID_STR;
        req->id.len = (uint8_t)n;
        req->id.i = 0;
    }
    return rc;
}

int slot_req_hold(slot_req *req, const char *event, const char *user, const char *request, uint32_t qty)
{
    slot_req_init(req, SLOT_OP_HOLD);
    req->qty = qty;
    if (slot_req_set_event(req, event) < 0 || slot_req_set_user(req, user) < 0 ||
        slot_req_set_request(req, request) < 0)
        return -EINVAL;
    return 0;
}

int slot_req_hold_many(slot_req *req, const char *user, const char *request)
{
    slot_req_init(req, SLOT_OP_HOLD_MANY);
    if (slot_req_set_user(req, user) < 0 || slot_req_set_request(req, request) < 0)
        return -EINVAL;
    return 0;
}

int slot_req_cart_add(slot_req *req, const char *event, uint32_t qty)
{
    size_t n = strlen(event);
    if (req->nitems >= SLOT_CART_ITEMS_MAX || n > SLOT_EVENT_BYTES_MAX)
        return -EINVAL;
    slot_item *it = &req->items[req->nitems++];
    memcpy(it->event, event, n + 1);
    it->event_len = (uint8_t)n;
    it->qty = (uint16_t)(qty > UINT16_MAX ? UINT16_MAX : qty);
    return 0;
}

int slot_req_waitlist(slot_req *req, slot_op op, const char *event, const char *user, const char *request,
                      uint32_t qty)
{
    if (op != SLOT_OP_WAITLIST_JOIN && op != SLOT_OP_WAITLIST_LEAVE && op != SLOT_OP_WAITLIST)
        return -EINVAL;
    slot_req_init(req, op);
    req->qty = qty;
    if (slot_req_set_event(req, event) < 0 || slot_req_set_user(req, user) < 0 ||
        slot_req_set_request(req, request) < 0)
        return -EINVAL;
    return 0;
}

void slot_req_set_waitlist_max(slot_req *req, uint32_t n)
{
    req->waitlist_max = n;
    req->has |= SLOT_HAS_WAITLIST_MAX;
}

int slot_req_cluster_change(slot_req *req, slot_cluster_change change, const char *node)
{
    slot_req_init(req, SLOT_OP_CLUSTER_CHANGE);
    size_t n = node ? strlen(node) : 0;
    if (change < SLOT_CHANGE_ADD || change > SLOT_CHANGE_PROMOTE || n > SLOT_CLUSTER_NAME_BYTES_MAX)
        return -EINVAL;
    req->change = change;
    memcpy(req->node, node ? node : "", n + 1);
    req->node_len = (uint8_t)n;
    return 0;
}

int slot_req_hold_op(slot_req *req, slot_op op, const char *event, const char *hold, const char *user)
{
    if (op != SLOT_OP_CONFIRM && op != SLOT_OP_RELEASE && op != SLOT_OP_GET_HOLD && op != SLOT_OP_CANCEL)
        return -EINVAL;
    slot_req_init(req, op);
    if (slot_req_set_event(req, event) < 0 || slot_req_set_hold(req, hold) < 0)
        return -EINVAL;
    if (user && slot_req_set_user(req, user) < 0)
        return -EINVAL;
    return 0;
}

int slot_req_extend(slot_req *req, const char *event, const char *hold, const char *user, uint32_t by_ms)
{
    slot_req_init(req, SLOT_OP_EXTEND);
    req->by_ms = by_ms;
    if (slot_req_set_event(req, event) < 0 || slot_req_set_hold(req, hold) < 0 || slot_req_set_user(req, user) < 0)
        return -EINVAL;
    return 0;
}

void slot_req_set_confirm_qty(slot_req *req, uint32_t qty)
{
    req->qty = qty;
    req->has |= SLOT_HAS_QTY;
}

void slot_req_set_reacquire(slot_req *req, bool reacquire)
{
    req->reacquire = reacquire;
}

int slot_req_sale_window(slot_req *req, const char *event, uint64_t opens_at_ms, uint64_t closes_at_ms)
{
    slot_req_init(req, SLOT_OP_SET_SALE_WINDOW);
    req->opens_at_ms = opens_at_ms;
    req->closes_at_ms = closes_at_ms;
    return slot_req_set_event(req, event) < 0 ? -EINVAL : 0;
}

void slot_req_set_window(slot_req *req, uint64_t opens_at_ms, uint64_t closes_at_ms)
{
    req->opens_at_ms = opens_at_ms;
    req->closes_at_ms = closes_at_ms;
    req->has |= SLOT_HAS_OPENS_AT | SLOT_HAS_CLOSES_AT;
}

int slot_req_event(slot_req *req, slot_op op, const char *event)
{
    if ((unsigned)op >= SLOT_OP__COUNT)
        return -EINVAL;
    slot_req_init(req, op);
    if (event && slot_req_set_event(req, event) < 0)
        return -EINVAL;
    return 0;
}

int slot_req_backup(slot_req *req, const char *path)
{
    slot_req_init(req, SLOT_OP_BACKUP);
    size_t n = strlen(path);
    if (n > SLOT_PATH_BYTES_MAX)
        return -EINVAL;
    memcpy(req->path, path, n + 1);
    req->path_len = (uint16_t)n;
    return 0;
}

/* ---------------------------------------------------------------- encoding */

/* The client's strings go out as the caller gave them: bytes >= 0x80 unchanged
 * (UTF-8 is the caller's; slotd answers bad_json to ill-formed UTF-8, where
 * U+FFFD would silently turn two different bad names into the same one), and
 * \b \t \n \f \r in their 2-byte short escapes, as the client always sent them. */
#define REQ_STR_FLAGS (SLOT__JW_STR_RAW_UTF8 | SLOT__JW_STR_SHORT_ESC)

static void w_str_field(slot__jw *w, const char *key, const char *s, size_t n)
{
    slot__jw_key_str(w, key, s, n, REQ_STR_FLAGS);
}

static void w_create_event(slot__jw *w, const slot_req *req)
{
    w_str_field(w, "event", req->event, req->event_len);
    slot__jw_key_u64(w, "capacity", req->capacity);
    if (req->has & SLOT_HAS_SHARDS)
        slot__jw_key_u64(w, "shards", req->shards);
    if (req->has & SLOT_HAS_HOLD_TTL)
        slot__jw_key_u64(w, "hold_ttl_ms", req->hold_ttl_ms);
    if (req->has & SLOT_HAS_MAX_PER_USER)
        slot__jw_key_u64(w, "max_per_user", req->max_per_user);
    if (req->has & SLOT_HAS_MAX_PER_REQUEST)
        slot__jw_key_u64(w, "max_per_request", req->max_per_request);
    if (req->has & SLOT_HAS_OPENS_AT)
        slot__jw_key_u64(w, "opens_at", req->opens_at_ms);
    if (req->has & SLOT_HAS_CLOSES_AT)
        slot__jw_key_u64(w, "closes_at", req->closes_at_ms);
    if (req->has & SLOT_HAS_MAX_EXTENSIONS)
        slot__jw_key_u64(w, "max_extensions", req->max_extensions);
    if (req->has & SLOT_HAS_MAX_HOLD_MS)
        slot__jw_key_u64(w, "max_hold_ms", req->max_hold_ms);
    if (req->has & SLOT_HAS_WAITLIST_MAX)
        slot__jw_key_u64(w, "waitlist_max", req->waitlist_max);
}

/* hold_many's items: [{"event":..,"qty":..},...] */
static void w_items(slot__jw *w, const slot_req *req)
{
    slot__jw_key(w, "items");
    SLOT__JW_LIT(w, "[");
    for (uint32_t i = 0; i < req->nitems && i < SLOT_CART_ITEMS_MAX; i++) {
        if (i > 0)
            SLOT__JW_LIT(w, ",");
        SLOT__JW_LIT(w, "{\"event\":");
        slot__jw_str(w, req->items[i].event, req->items[i].event_len, REQ_STR_FLAGS);
        slot__jw_key_u64(w, "qty", req->items[i].qty);
        SLOT__JW_LIT(w, "}");
    }
    SLOT__JW_LIT(w, "]");
}

/* event, hold, user: the fields every op on a buyer's hold names. */
static void w_hold_fields(slot__jw *w, const slot_req *req)
{
    w_str_field(w, "event", req->event, req->event_len);
    w_str_field(w, "hold", req->hold, req->hold_len);
    w_str_field(w, "user", req->user, req->user_len);
}

/* The fields of each op (docs/protocol.md, "Frontend ops" and "Admin ops"). */
static void w_op_fields(slot__jw *w, const slot_req *req)
{
    switch (req->op) {
    case SLOT_OP_HELLO:
        if (req->has & SLOT_HAS_TOKEN)
            w_str_field(w, "token", req->token, req->token_len);
        break;
    case SLOT_OP_HOLD:
    case SLOT_OP_WAITLIST_JOIN:
    case SLOT_OP_WAITLIST_LEAVE:
    case SLOT_OP_WAITLIST:
        w_str_field(w, "event", req->event, req->event_len);
        w_str_field(w, "user", req->user, req->user_len);
        w_str_field(w, "request", req->request, req->request_len);
        if (req->op == SLOT_OP_HOLD || req->op == SLOT_OP_WAITLIST_JOIN)
            slot__jw_key_u64(w, "qty", req->qty);
        break;
    case SLOT_OP_HOLD_MANY:
        w_str_field(w, "user", req->user, req->user_len);
        w_str_field(w, "request", req->request, req->request_len);
        w_items(w, req);
        break;
    case SLOT_OP_WAITLIST_ENTRIES:
        w_str_field(w, "event", req->event, req->event_len);
        if (req->limit)
            slot__jw_key_u64(w, "limit", req->limit);
        break;
    case SLOT_OP_CONFIRM:
        w_hold_fields(w, req);
        if (req->has & SLOT_HAS_QTY)
            slot__jw_key_u64(w, "qty", req->qty);
        if (req->reacquire)
            SLOT__JW_LIT(w, ",\"reacquire\":true");
        break;
    case SLOT_OP_EXTEND:
        w_hold_fields(w, req);
        slot__jw_key_u64(w, "by_ms", req->by_ms);
        break;
    case SLOT_OP_RELEASE:
        w_hold_fields(w, req);
        break;
    case SLOT_OP_GET_HOLD: /* no user (worker, admin: any user's hold): the field is left out, not "" */
        if (req->user_len > 0) {
            w_hold_fields(w, req);
        } else {
            w_str_field(w, "event", req->event, req->event_len);
            w_str_field(w, "hold", req->hold, req->hold_len);
        }
        break;
    case SLOT_OP_CANCEL:
        w_str_field(w, "event", req->event, req->event_len);
        w_str_field(w, "hold", req->hold, req->hold_len);
        break;
    case SLOT_OP_EVENT:
    case SLOT_OP_SHARDS:
        w_str_field(w, "event", req->event, req->event_len);
        break;
    case SLOT_OP_CHECK:
        if (req->has & SLOT_HAS_EVENT)
            w_str_field(w, "event", req->event, req->event_len);
        break;
    case SLOT_OP_CREATE_EVENT:
        w_create_event(w, req);
        break;
    case SLOT_OP_SET_CAPACITY:
        w_str_field(w, "event", req->event, req->event_len);
        slot__jw_key_u64(w, "capacity", req->capacity);
        break;
    case SLOT_OP_RESHARD:
        w_str_field(w, "event", req->event, req->event_len);
        slot__jw_key_u64(w, "shards", req->shards);
        break;
    case SLOT_OP_SET_SALE_WINDOW:
        w_str_field(w, "event", req->event, req->event_len);
        slot__jw_key_u64(w, "opens_at", req->opens_at_ms);
        slot__jw_key_u64(w, "closes_at", req->closes_at_ms);
        break;
    case SLOT_OP_SET_STATUS: {
        const char *st = slot_event_status_name(req->status);
        w_str_field(w, "event", req->event, req->event_len);
        w_str_field(w, "status", st, strlen(st));
        break;
    }
    case SLOT_OP_SUBSCRIBE: /* the feed ops (docs/protocol.md, "Feed") */
    case SLOT_OP_ACK:
    case SLOT_OP_FEED_FORGET:
        w_str_field(w, "consumer", req->consumer, req->consumer_len);
        if (req->op == SLOT_OP_ACK || (req->op == SLOT_OP_SUBSCRIBE && req->from == SLOT_FEED_FROM_SEQ))
            slot__jw_key_u64(w, req->op == SLOT_OP_ACK ? "seq" : "from", req->feed_seq);
        else if (req->op == SLOT_OP_SUBSCRIBE)
            w_str_field(w, "from", req->from == SLOT_FEED_FROM_START ? "start" : "acked", 5);
        if (req->op == SLOT_OP_SUBSCRIBE && req->window)
            slot__jw_key_u64(w, "window", req->window);
        break;
    case SLOT_OP_BACKUP:
        w_str_field(w, "path", req->path, req->path_len);
        break;
    case SLOT_OP_CLUSTER_CHANGE: {
        const char *ch = slot_cluster_change_name(req->change);
        w_str_field(w, "change", ch, strlen(ch));
        w_str_field(w, "node", req->node, req->node_len);
        break;
    }
    default: /* expire, stats, digest, and every op without fields */
        break;
    }
}

long slot_req_encode(const slot_req *req, char *buf, size_t cap)
{
    if ((unsigned)req->op >= SLOT_OP__COUNT)
        return -EINVAL;
    slot__jw w;
    slot__jw_init(&w, buf, cap);
    const char *op = slot_op_name(req->op);
    SLOT__JW_LIT(&w, "{\"op\":\"");
    slot__jw_mem(&w, op, strlen(op)); /* op names are plain ASCII: no escaping */
    SLOT__JW_LIT(&w, "\"");
    if (req->id.kind == SLOT_ID_INT) {
        slot__jw_key(&w, "id");
        slot__jw_i64(&w, req->id.i);
    } else if (req->id.kind == SLOT_ID_STR) {
        w_str_field(&w, "id", req->id.s, req->id.len);
    }
    w_op_fields(&w, req);
    SLOT__JW_LIT(&w, "}\n");
    return (long)slot__jw_finish(&w);
}

/* ---------------------------------------------------------------- connection */

#define CLIENT_BUF_BYTES_INITIAL (64u << 10) /* most replies are < 512 bytes: one read fills many */
#define CLIENT_BUF_BYTES_MAX (SLOT_CLIENT_LINE_MAX + 1u) /* a longest line plus its "\n" */

struct slot_client {
    int fd;
    char *buf;          /* received bytes: [start, end) not yet returned */
    size_t cap, start, end;
    size_t scan;        /* bytes before this offset are known to hold no "\n" */
    size_t pending;     /* length (with "\n") of the line last returned, consumed on the next call */
    int err;            /* sticky: -EMSGSIZE once a line was too long, -ECONNRESET after EOF */
};

static int64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Wait for `events` on fd until deadline_ms (monotonic; -1 = no deadline).
 * Signals restart the wait with the time left. 0, -ETIMEDOUT or -errno. */
static int wait_fd(int fd, short events, int64_t deadline_ms)
{
    for (;;) {
        int left = -1;
        if (deadline_ms >= 0) {
            int64_t d = deadline_ms - now_ms();
            left = d < 0 ? 0 : (d > 0x7fffffff ? 0x7fffffff : (int)d);
        }
        struct pollfd p = {.fd = fd, .events = events};
        int n = poll(&p, 1, left);
        if (n > 0)
            return 0; /* ready, or an error/hangup the next call will report */
        if (n == 0)
            return -ETIMEDOUT;
        if (errno != EINTR)
            return -errno;
    }
}

/* Connect one resolved address: nonblocking connect, then poll for the
 * outcome so the timeout is ours and not the kernel's ~2 minutes. */
static int connect_addr(const struct addrinfo *ai, int timeout_ms, int *fd_out)
{
    int fd = socket(ai->ai_family, ai->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, ai->ai_protocol);
    if (fd < 0)
        return -errno;
    int rc = 0;
    if (connect(fd, ai->ai_addr, ai->ai_addrlen) < 0) {
        if (errno != EINPROGRESS && errno != EINTR) {
            rc = -errno;
        } else {
            rc = wait_fd(fd, POLLOUT, timeout_ms > 0 ? now_ms() + timeout_ms : -1);
            int soerr = 0;
            socklen_t sl = sizeof(soerr);
            if (rc == 0 && getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &sl) < 0)
                rc = -errno;
            else if (rc == 0 && soerr != 0)
                rc = -soerr;
        }
    }
    int one = 1;
    if (rc == 0 && setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one)) < 0)
        rc = -errno;
    if (rc < 0) {
        close(fd);
        return rc;
    }
    *fd_out = fd;
    return 0;
}

/* Resolve host:port and try each address in turn; -errno of the last failure. */
static int connect_host(const char *host, uint16_t port, int timeout_ms, int *fd_out)
{
    char portstr[8];
    snprintf(portstr, sizeof(portstr), "%u", (unsigned)port);
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM, .ai_flags = AI_NUMERICSERV};
    struct addrinfo *res = NULL;
    int g = getaddrinfo(host, portstr, &hints, &res);
    if (g != 0)
        return g == EAI_SYSTEM ? -errno : g == EAI_MEMORY ? -ENOMEM : -ENXIO;
    int rc = -ENXIO;
    for (struct addrinfo *ai = res; ai; ai = ai->ai_next) {
        rc = connect_addr(ai, timeout_ms, fd_out);
        if (rc == 0)
            break;
    }
    freeaddrinfo(res);
    return rc;
}

int slot_client_connect(const char *host, uint16_t port, int timeout_ms, slot_client **out)
{
    *out = NULL;
    slot_client *c = calloc(1, sizeof(*c));
    if (!c)
        return -ENOMEM;
    c->cap = CLIENT_BUF_BYTES_INITIAL;
    c->buf = malloc(c->cap);
    if (!c->buf) {
        free(c);
        return -ENOMEM;
    }
    int rc = connect_host(host, port, timeout_ms, &c->fd);
    if (rc < 0) {
        free(c->buf);
        free(c);
        return rc;
    }
    *out = c;
    return 0;
}

void slot_client_close(slot_client *c)
{
    if (!c)
        return;
    close(c->fd);
    free(c->buf);
    free(c);
}

int slot_client_fd(const slot_client *c)
{
    return c->fd;
}

/* Make room after `end`: first by moving the unread bytes to the front, then
 * by doubling the buffer up to CLIENT_BUF_BYTES_MAX. */
static int make_room(slot_client *c)
{
    if (c->end < c->cap)
        return 0;
    if (c->start > 0) {
        memmove(c->buf, c->buf + c->start, c->end - c->start);
        c->end -= c->start;
        c->scan -= c->start;
        c->start = 0;
        return 0;
    }
    if (c->cap >= CLIENT_BUF_BYTES_MAX)
        return -EMSGSIZE;
    size_t ncap = c->cap * 2 > CLIENT_BUF_BYTES_MAX ? CLIENT_BUF_BYTES_MAX : c->cap * 2;
    char *nb = realloc(c->buf, ncap);
    if (!nb)
        return -ENOMEM;
    c->buf = nb;
    c->cap = ncap;
    return 0;
}

/* One nonblocking read into the buffer: 1 when bytes came, 0 when none were
 * waiting, -ECONNRESET at EOF, -EMSGSIZE when the buffer is full, or -errno. */
static int read_some(slot_client *c)
{
    int rc = make_room(c);
    if (rc < 0)
        return rc;
    for (;;) {
        ssize_t n = recv(c->fd, c->buf + c->end, c->cap - c->end, 0);
        if (n > 0) {
            c->end += (size_t)n;
            return 1;
        }
        if (n == 0)
            return -ECONNRESET;
        if (errno == EINTR)
            continue;
        return errno == EAGAIN || errno == EWOULDBLOCK ? 0 : -errno;
    }
}

/* Read at least one byte, waiting up to deadline_ms. 0 or a negative error. */
static int fill(slot_client *c, int64_t deadline_ms)
{
    for (;;) {
        int rc = read_some(c);
        if (rc != 0)
            return rc < 0 ? rc : 0;
        rc = wait_fd(c->fd, POLLIN, deadline_ms);
        if (rc < 0)
            return rc;
    }
}

/* Wait until the socket takes more bytes. Replies that arrive meanwhile are
 * read into the buffer (while it has room), so a client that pipelines more
 * than the socket buffers hold does not deadlock with a server that has
 * stopped reading until its replies are read. 0 or -errno. */
static int wait_writable(slot_client *c)
{
    for (;;) {
        bool can_read = c->err == 0 && c->end - c->start < CLIENT_BUF_BYTES_MAX;
        struct pollfd p = {.fd = c->fd, .events = (short)(POLLOUT | (can_read ? POLLIN : 0))};
        int n = poll(&p, 1, -1);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return -errno;
        if (p.revents & (POLLOUT | POLLERR | POLLHUP | POLLNVAL))
            return 0; /* writable, or an error the next send() reports */
        int rc = read_some(c);
        if (rc == -ECONNRESET || rc == -EMSGSIZE)
            c->err = rc; /* recv_line reports it after the lines before it */
        else if (rc < 0)
            return rc;
    }
}

int slot_client_send_raw(slot_client *c, const void *data, size_t len)
{
    const char *p = data;
    while (len > 0) {
        ssize_t n = send(c->fd, p, len, MSG_NOSIGNAL);
        if (n >= 0) {
            p += n;
            len -= (size_t)n;
            continue;
        }
        if (errno == EINTR)
            continue;
        if (errno != EAGAIN && errno != EWOULDBLOCK)
            return -errno;
        int rc = wait_writable(c);
        if (rc < 0)
            return rc;
    }
    return 0;
}

int slot_client_send(slot_client *c, const slot_req *req)
{
    char line[SLOT__CLIENT_REQ_BYTES_MAX];
    long n = slot_req_encode(req, line, sizeof(line));
    if (n < 0)
        return (int)n;
    if ((size_t)n >= sizeof(line))
        return -EMSGSIZE; /* cannot happen for a slot_req: the bound covers every field */
    return slot_client_send_raw(c, line, (size_t)n);
}

long slot_client_recv_line(slot_client *c, const char **line, int timeout_ms)
{
    c->start += c->pending;
    c->pending = 0;
    if (c->scan < c->start)
        c->scan = c->start;
    int64_t deadline_ms = timeout_ms < 0 ? -1 : now_ms() + timeout_ms;
    for (;;) {
        char *nl = memchr(c->buf + c->scan, '\n', c->end - c->scan);
        if (nl) {
            size_t len = (size_t)(nl - (c->buf + c->start));
            c->pending = len + 1;
            c->scan = c->start + len + 1;
            if (len > 0 && c->buf[c->start + len - 1] == '\r')
                len--;
            c->buf[c->start + len] = 0;
            *line = c->buf + c->start;
            return (long)len;
        }
        c->scan = c->end;
        if (c->err)
            return c->err;
        if (c->end - c->start > SLOT_CLIENT_LINE_MAX) {
            c->err = -EMSGSIZE;
            return c->err;
        }
        int rc = fill(c, deadline_ms);
        if (rc == -ECONNRESET || rc == -EMSGSIZE)
            c->err = rc;
        else if (rc < 0)
            return rc;
    }
}

int slot_client_recv(slot_client *c, slot_reply *out, int timeout_ms)
{
    const char *line = NULL;
    long n = slot_client_recv_line(c, &line, timeout_ms);
    if (n < 0) {
        memset(out, 0, sizeof(*out));
        return (int)n;
    }
    return slot_reply_parse(line, (size_t)n, out);
}

int slot_client_call(slot_client *c, const slot_req *req, slot_reply *out, int timeout_ms)
{
    int rc = slot_client_send(c, req);
    if (rc < 0) {
        memset(out, 0, sizeof(*out));
        return rc;
    }
    return slot_client_recv(c, out, timeout_ms);
}
