/* client.c — the C client's blocking connection (slot_client_*): connect with
 * a timeout, send, receive reply lines in order; see slot/client.h. The request
 * builders and encoder are in client_req.c, the reply parser in client_reply.c. */
#include "slot/client.h"

#include <errno.h>
#include <fcntl.h>
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

/* ---------------------------------------------------------------- connection */

#define CLIENT_BUF_BYTES_INITIAL (64u << 10)             /* most replies are < 512 bytes: one read fills many */
#define CLIENT_BUF_BYTES_MAX (SLOT_CLIENT_LINE_MAX + 1u) /* a longest line plus its "\n" */

struct slot_client {
    int fd;
    char *buf; /* received bytes: [start, end) not yet returned */
    size_t cap, start, end;
    size_t scan;    /* bytes before this offset are known to hold no "\n" */
    size_t pending; /* length (with "\n") of the line last returned, consumed on the next call */
    int err;        /* sticky: -EMSGSIZE once a line was too long, -ECONNRESET after EOF */
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
