/*
 * fuzz_repl.c — libFuzzer target for the replication channel's frames
 * (slot/repl.h), as a bad or malicious peer sends them.
 *
 * Two real endpoints run on a private libuv loop: R, a replica listening on
 * 127.0.0.1 (configuration: epoch 3, tenure 2, primary "p1"; its log's last
 * record tenure 1, seq 5 at the start of every input), and P, a primary
 * that dials out. This target is the peer, on a plain socket, driving the
 * loop between its own reads and writes. Byte 0 of the input picks the
 * case (bits 0-1) and options (bits 2-3: fix up the CRC-32 of the records in
 * RECORD frames, and give them the seq, prev_epoch and epoch the replica
 * expects, so that inputs reach the checks and the owner behind them);
 * byte 1 more options; the rest is sent as it is, then the write side is
 * shut, and the loop runs until the endpoint has closed the connection.
 *   0  to R before any handshake: no callback but on_close fires (no
 *      on_ready, record, snap or commit): nothing comes in without AUTH.
 *   1  to R after a real handshake (HELLO from "p1" or, by byte 1, a stale
 *      tenure or another node; R's CHALLENGE read, the AUTH computed here
 *      with HMAC-SHA256 from the test secret, R's own AUTH checked): on_ready
 *      only for the configuration's primary at its tenure or above; every
 *      record R hands over decodes (CRC included) to exactly the frame's
 *      bytes, has seq last + 1, prev_epoch the last record's tenure and an
 *      epoch not above the hello's tenure, with "last" kept here by the
 *      rules of slot/repl.h (a record the owner refuses does not count);
 *      every SNAP chunk comes in order from offset 0 within its total;
 *      commit points only rise.
 *   2  to R after a HELLO and an AUTH whose MAC is wrong (a bit flipped, by
 *      byte 1): on_close with bad_secret, and nothing else, whatever follows.
 *   3  to P, as the replica it dialled, after P's HELLO: the input as it is
 *      (no on_ready, no on_ack), or by byte 1 after a real CHALLENGE and,
 *      when P's AUTH checks out here, a real AUTH (then on_ready once; no
 *      on_ack, as P sent no record).
 * Nothing may crash, leak or trip a sanitizer; each case ends with no
 * connection left on either endpoint. Built and run by tests/fuzz/run.sh.
 */
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>

#include "repl/repl_int.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(cond)                                                                      \
    do {                                                                                 \
        if (!(cond)) {                                                                   \
            fprintf(stderr, "fuzz_repl: check failed: %s (line %d)\n", #cond, __LINE__); \
            abort();                                                                     \
        }                                                                                \
    } while (0)

#define WAIT_MS 5000 /* every step is loopback work of well under this */
#define CLUSTER "c1"
#define CONF_EPOCH 3
#define CONF_TENURE 2
#define LOG_TENURE 1
#define LOG_SEQ 5
#define FRAME_COPY_MAX 16384 /* the input is at most 8 KiB; its frames are copied to fix them up */

static const uint8_t secret[] = "fuzz-repl-test-secret-0123456789";
static const char LABEL_PRIMARY[] = "slotd-repl-v1 primary";
static const char LABEL_REPLICA[] = "slotd-repl-v1 replica";

static uv_loop_t loop;
static slot_repl *R, *P;
static int r_port, p_listen_fd, p_listen_port;

/* What the callbacks saw during one input. */
static struct {
    int ready, records, snaps, commits, acks, closes;
    slot_repl_reason close_reason;
    bool authed; /* case 1: the handshake completed with a real AUTH */
    uint64_t hello_tenure;
    uint64_t last_tenure, last_seq; /* the replica's log as slot/repl.h keeps it */
    uint64_t commit;
    bool snap_open;
    uint64_t snap_seq, snap_tenure, snap_total, snap_next;
    int refuse_record_at, refuse_snap_at; /* the owner says no to this one (1-based; 0: never) */
} seen;

static uint64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

/* ---- the endpoints' callbacks */

static void on_ready(void *ctx, const slot_repl_peer *peer)
{
    CHECK(peer && peer->node_id);
    if (ctx == (void *)&R) {
        /* only the configuration's primary, at its tenure or above, after a real AUTH */
        CHECK(seen.authed && strcmp(peer->node_id, "p1") == 0 && peer->tenure >= CONF_TENURE && peer->inbound);
    } else {
        CHECK(strcmp(peer->node_id, "r1") == 0 && !peer->inbound);
    }
    seen.ready++;
    CHECK(seen.ready == 1);
}

static int on_record(void *ctx, const char *from, const uint8_t *rec, size_t rec_bytes, const slot_wset_rec *dec)
{
    CHECK(ctx == (void *)&R && seen.authed && seen.ready == 1 && strcmp(from, "p1") == 0);
    slot_wset_rec again;
    CHECK(slot_wset_decode(rec, rec_bytes, &again) == 0 && again.record_bytes == rec_bytes);
    CHECK(dec->hdr.seq == again.hdr.seq && dec->record_bytes == rec_bytes);
    CHECK(again.hdr.seq == seen.last_seq + 1);
    CHECK(again.hdr.prev_epoch == seen.last_tenure);
    CHECK(again.hdr.epoch <= seen.hello_tenure);
    seen.records++;
    if (seen.records == seen.refuse_record_at)
        return -1; /* the owner could not take it: it must not count */
    seen.last_seq = again.hdr.seq;
    seen.last_tenure = again.hdr.epoch;
    return 0;
}

static void on_commit(void *ctx, uint64_t commit_seq)
{
    CHECK(ctx == (void *)&R && seen.authed && seen.ready == 1);
    CHECK(commit_seq > seen.commit);
    seen.commit = commit_seq;
    seen.commits++;
}

static void on_ack(void *ctx, const char *node_id, uint64_t seq)
{
    (void)ctx;
    (void)node_id;
    (void)seq;
    CHECK(!"an ack of a record never sent");
}

static void on_close(void *ctx, const slot_repl_close_info *info)
{
    (void)ctx;
    CHECK(info && info->text && info->node_id);
    seen.closes++;
    seen.close_reason = info->reason;
}

static int on_snap(void *ctx, const char *from, uint64_t seq, uint64_t tenure, uint64_t offset, uint64_t total,
                   const uint8_t *p, size_t n)
{
    CHECK(ctx == (void *)&R && seen.authed && seen.ready == 1 && strcmp(from, "p1") == 0);
    CHECK(seq >= 1 && tenure <= seen.hello_tenure && total <= SLOT_REPL_SNAP_BYTES_MAX);
    CHECK(n <= SLOT_REPL_SNAP_CHUNK_BYTES && offset <= total && n <= total - offset && (n == 0 || p != NULL));
    if (offset == 0) {
        seen.snap_open = true;
        seen.snap_seq = seq;
        seen.snap_tenure = tenure;
        seen.snap_total = total;
        seen.snap_next = 0;
    }
    CHECK(seen.snap_open && offset == seen.snap_next && seq == seen.snap_seq && tenure == seen.snap_tenure &&
          total == seen.snap_total);
    seen.snaps++;
    if (seen.snaps == seen.refuse_snap_at)
        return -1;
    seen.snap_next = offset + n;
    if (seen.snap_next == total)
        seen.snap_open = false; /* whole: another chunk must start over at 0 */
    return 0;
}

static void on_log(void *ctx, const char *msg)
{
    (void)ctx;
    CHECK(msg != NULL);
}

/* ---- driving the loop and the peer's socket */

/* Runs the loop until done() or WAIT_MS; fd (may be -1) wakes it too. */
static void pump(bool (*done)(int fd), int fd)
{
    uint64_t until = now_ms() + WAIT_MS;
    for (;;) {
        uv_run(&loop, UV_RUN_NOWAIT);
        if (done(fd))
            return;
        if (now_ms() > until) {
            fprintf(stderr, "fuzz_repl: the endpoint did not get there within %d ms\n", WAIT_MS);
            abort();
        }
        struct pollfd p[2] = {{.fd = uv_backend_fd(&loop), .events = POLLIN}, {.fd = fd, .events = POLLIN}};
        int t = uv_backend_timeout(&loop);
        poll(p, fd >= 0 ? 2 : 1, t < 0 || t > 5 ? 5 : t);
    }
}

static bool no_conns(int fd)
{
    (void)fd;
    return R->conns == NULL && P->conns == NULL;
}

static int closes_wanted;
static bool closed(int fd)
{
    (void)fd;
    return seen.closes >= closes_wanted;
}

static void set_nonblock(int fd)
{
    int fl = fcntl(fd, F_GETFL);
    CHECK(fl >= 0 && fcntl(fd, F_SETFL, fl | O_NONBLOCK) == 0);
}

static void socket_opts(int fd)
{
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    struct linger lg = {.l_onoff = 1, .l_linger = 0}; /* a reset: no TIME_WAIT per input */
    setsockopt(fd, SOL_SOCKET, SO_LINGER, &lg, sizeof lg);
}

/* Dials 127.0.0.1:port from 127.0.0.N, N taking 250 values in turn: the
 * connections this side closes first wait out TIME_WAIT, and hundreds of
 * inputs a second would use up one address's ephemeral ports within a
 * minute. Retries while no port is free (EADDRNOTAVAIL), up to WAIT_MS. */
static int dial(int port)
{
    static unsigned next;
    uint64_t until = now_ms() + WAIT_MS;
    for (;;) {
        int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        CHECK(fd >= 0);
        socket_opts(fd);
        struct sockaddr_in from = {.sin_family = AF_INET};
        from.sin_addr.s_addr = htonl(INADDR_LOOPBACK + 1 + next++ % 250);
        struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
        a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        if (bind(fd, (struct sockaddr *)&from, sizeof from) == 0 &&
            connect(fd, (struct sockaddr *)&a, sizeof a) == 0) { /* loopback: the kernel completes it */
            set_nonblock(fd);
            return fd;
        }
        int e = errno;
        close(fd);
        if ((e != EADDRNOTAVAIL && e != EADDRINUSE && e != EINTR) || now_ms() > until) {
            fprintf(stderr, "fuzz_repl: connect to 127.0.0.1:%d: %s\n", port, strerror(e));
            abort();
        }
        struct timespec ts = {0, 10 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
}

/* Writes all of it while the loop runs (the endpoint reads as it goes);
 * false when the endpoint has closed. */
static bool send_all(int fd, const void *buf, size_t len)
{
    const uint8_t *p = buf;
    uint64_t until = now_ms() + WAIT_MS;
    while (len > 0) {
        ssize_t n = send(fd, p, len, MSG_NOSIGNAL);
        if (n > 0) {
            p += n;
            len -= (size_t)n;
            continue;
        }
        if (n < 0 && errno != EAGAIN && errno != EINTR)
            return false;
        CHECK(now_ms() < until);
        uv_run(&loop, UV_RUN_NOWAIT);
        struct pollfd pf = {.fd = fd, .events = POLLOUT};
        poll(&pf, 1, 1);
    }
    return true;
}

static void send_frame(int fd, uint8_t type, const void *payload, size_t len)
{
    uint8_t h[SLOT_REPL_FRAME_HEADER_BYTES];
    slot__repl_put_u32(h, (uint32_t)(len + 1));
    h[4] = type;
    CHECK(send_all(fd, h, sizeof h));
    CHECK(len == 0 || send_all(fd, payload, len));
}

/* One frame from the endpoint (running the loop meanwhile): its type and
 * payload; false when the connection closed first. */
static uint8_t rbuf[SLOT_REPL_FRAME_HEADER_BYTES + SLOT_REPL_HELLO_BYTES_MAX + SLOT_REPL_TEXT_BYTES_MAX + 64];
static size_t rlen;
static bool frame_ready(int fd)
{
    for (;;) {
        if (rlen >= SLOT_REPL_FRAME_HEADER_BYTES) {
            uint32_t b = slot__repl_get_u32(rbuf);
            CHECK(b >= 1 && b <= sizeof rbuf - SLOT_REPL_FRAME_HEADER_BYTES + 1);
            if (rlen >= SLOT_REPL_FRAME_HEADER_BYTES - 1 + b)
                return true;
        }
        ssize_t n = recv(fd, rbuf + rlen, sizeof rbuf - rlen, 0);
        if (n > 0) {
            rlen += (size_t)n;
            continue;
        }
        if (n == 0 || (errno != EAGAIN && errno != EINTR))
            return true; /* closed: the caller sees no whole frame */
        return false;
    }
}

static bool read_frame(int fd, uint8_t *type, uint8_t *payload, size_t *len)
{
    pump(frame_ready, fd);
    if (rlen < SLOT_REPL_FRAME_HEADER_BYTES)
        return false;
    uint32_t b = slot__repl_get_u32(rbuf);
    size_t whole = SLOT_REPL_FRAME_HEADER_BYTES - 1 + b;
    if (rlen < whole)
        return false;
    *type = rbuf[4];
    *len = b - 1;
    memcpy(payload, rbuf + SLOT_REPL_FRAME_HEADER_BYTES, *len);
    memmove(rbuf, rbuf + whole, rlen - whole);
    rlen -= whole;
    return true;
}

/* HMAC-SHA256 over label || u32 len || hello || u32 len || challenge
 * (slot/repl.h, AUTH), made here with OpenSSL, not with the module's code. */
static void mac_of(const char *label, const uint8_t *hello, size_t hl, const uint8_t *chal, size_t cl,
                   uint8_t out[SLOT_REPL_MAC_BYTES])
{
    uint8_t msg[64 + 8 + 2 * SLOT_REPL_HELLO_BYTES_MAX];
    size_t o = strlen(label);
    memcpy(msg, label, o);
    slot__repl_put_u32(msg + o, (uint32_t)hl);
    memcpy(msg + o + 4, hello, hl);
    o += 4 + hl;
    slot__repl_put_u32(msg + o, (uint32_t)cl);
    memcpy(msg + o + 4, chal, cl);
    o += 4 + cl;
    unsigned int n = 0;
    CHECK(HMAC(EVP_sha256(), secret, (int)(sizeof secret - 1), msg, o, out, &n) && n == SLOT_REPL_MAC_BYTES);
}

static size_t make_hello(uint8_t *out, const char *node, uint64_t tenure, uint8_t nonce_byte)
{
    slot__repl_hello h;
    memset(&h, 0, sizeof h);
    memset(h.nonce, nonce_byte, sizeof h.nonce);
    h.epoch = CONF_EPOCH;
    h.tenure = tenure;
    h.last_tenure = LOG_TENURE;
    h.last_seq = LOG_SEQ;
    h.time_ms = 1700000000000;
    snprintf(h.cluster, sizeof h.cluster, "%s", CLUSTER);
    snprintf(h.node, sizeof h.node, "%s", node);
    return slot__repl_hello_encode(&h, out);
}

/* The input's frames, with the records in RECORD frames made to pass their
 * CRC (fix & 1) and to follow the replica's log (fix & 2). */
static void fix_records(uint8_t *p, size_t n, unsigned fix)
{
    uint64_t seq = seen.last_seq, tenure = seen.last_tenure;
    for (size_t off = 0; n - off >= SLOT_REPL_FRAME_HEADER_BYTES;) {
        uint32_t b = slot__repl_get_u32(p + off);
        if (b == 0 || b - 1 > n - off - SLOT_REPL_FRAME_HEADER_BYTES)
            return;
        uint8_t *rec = p + off + SLOT_REPL_FRAME_HEADER_BYTES;
        size_t rl = b - 1;
        if (p[off + 4] == SLOT_REPL_F_RECORD && rl >= SLOT_WSET_HEADER_BYTES) {
            if (fix & 2) {
                uint64_t epoch = slot__repl_get_u64(rec + 16);
                if (epoch < tenure || epoch > seen.hello_tenure)
                    epoch = tenure;
                slot__repl_put_u64(rec + 16, epoch);
                slot__repl_put_u64(rec + 24, ++seq);
                slot__repl_put_u64(rec + 32, tenure);
                if (slot__repl_get_u64(rec + 40) > seq)
                    slot__repl_put_u64(rec + 40, seq);
                tenure = epoch;
            }
            if (fix & 1) {
                uint64_t len = SLOT_WSET_HEADER_BYTES + (uint64_t)slot__repl_get_u32(rec + 8);
                if (len > rl)
                    len = rl;
                uLong c = crc32(crc32(0L, Z_NULL, 0), rec, 12);
                c = crc32(c, rec + 16, (uInt)(len - 16));
                slot__repl_put_u32(rec + 12, (uint32_t)c);
            }
        }
        off += SLOT_REPL_FRAME_HEADER_BYTES + rl;
    }
}

/* Sends the rest of the input (fixed up as asked), shuts the write side and
 * runs the loop until the endpoint has ended the connection and freed it. */
static void finish(int fd, const uint8_t *p, size_t n, unsigned fix)
{
    static uint8_t copy[FRAME_COPY_MAX];
    if (fix && n <= sizeof copy) {
        memcpy(copy, p, n);
        fix_records(copy, n, fix);
        p = copy;
    }
    if (send_all(fd, p, n))
        shutdown(fd, SHUT_WR);
    closes_wanted = 1;
    pump(closed, -1);
    close(fd); /* a reset ends the endpoint's linger */
    pump(no_conns, -1);
}

/* ---- the cases */

static void case_pre_handshake(const uint8_t *p, size_t n)
{
    int fd = dial(r_port);
    finish(fd, p, n, 0);
    CHECK(seen.ready == 0 && seen.records == 0 && seen.snaps == 0 && seen.commits == 0);
}

/* HELLO, CHALLENGE read; returns false when R ended the connection. */
static bool hello_challenge(int fd, const char *node, uint64_t tenure, uint8_t *hello, size_t *hl, uint8_t *chal,
                            size_t *cl)
{
    *hl = make_hello(hello, node, tenure, 0x5a);
    send_frame(fd, SLOT_REPL_F_HELLO, hello, *hl);
    uint8_t type;
    if (!read_frame(fd, &type, chal, cl))
        return false;
    CHECK(type == SLOT_REPL_F_CHALLENGE);
    slot__repl_hello h;
    char err[128];
    CHECK(slot__repl_hello_parse(chal, *cl, &h, err, sizeof err) == 0 && strcmp(h.node, "r1") == 0);
    return true;
}

static void case_after_auth(uint8_t opt, const uint8_t *p, size_t n, unsigned fix)
{
    static const struct {
        const char *node;
        uint64_t tenure;
    } who[4] = {{"p1", CONF_TENURE}, {"p1", CONF_TENURE + 1}, {"p1", CONF_TENURE - 1}, {"p2", CONF_TENURE}};
    unsigned w = opt & 3;
    seen.hello_tenure = who[w].tenure;
    seen.refuse_record_at = (opt >> 2) & 3; /* 0: never */
    seen.refuse_snap_at = (opt >> 4) & 3;
    int fd = dial(r_port);
    uint8_t hello[SLOT_REPL_HELLO_BYTES_MAX], chal[sizeof rbuf];
    size_t hl, cl;
    CHECK(hello_challenge(fd, who[w].node, who[w].tenure, hello, &hl, chal, &cl));
    uint8_t mac[SLOT_REPL_MAC_BYTES];
    mac_of(LABEL_PRIMARY, hello, hl, chal, cl, mac);
    seen.authed = true;
    send_frame(fd, SLOT_REPL_F_AUTH, mac, sizeof mac);
    uint8_t type, theirs[sizeof rbuf];
    size_t tl;
    bool ok = read_frame(fd, &type, theirs, &tl);
    if (w >= 2) { /* a stale tenure, another node: refused right after its AUTH */
        CHECK(!ok || type == SLOT_REPL_F_REFUSE);
        finish(fd, p, n, 0);
        CHECK(seen.ready == 0 && seen.records == 0 && seen.snaps == 0);
        CHECK(seen.close_reason == (w == 2 ? SLOT_REPL_R_STALE_TENURE : SLOT_REPL_R_NOT_PRIMARY));
        return;
    }
    CHECK(ok && type == SLOT_REPL_F_AUTH && tl == SLOT_REPL_MAC_BYTES);
    mac_of(LABEL_REPLICA, hello, hl, chal, cl, mac); /* R proves the secret too */
    CHECK(memcmp(theirs, mac, sizeof mac) == 0);
    CHECK(seen.ready == 1);
    finish(fd, p, n, fix);
}

static void case_bad_mac(uint8_t opt, const uint8_t *p, size_t n)
{
    int fd = dial(r_port);
    uint8_t hello[SLOT_REPL_HELLO_BYTES_MAX], chal[sizeof rbuf];
    size_t hl, cl;
    CHECK(hello_challenge(fd, "p1", CONF_TENURE, hello, &hl, chal, &cl));
    uint8_t mac[SLOT_REPL_MAC_BYTES];
    mac_of(LABEL_PRIMARY, hello, hl, chal, cl, mac);
    mac[(opt >> 3) % SLOT_REPL_MAC_BYTES] ^= (uint8_t)(1u << (opt & 7));
    send_frame(fd, SLOT_REPL_F_AUTH, mac, sizeof mac);
    finish(fd, p, n, 0);
    CHECK(seen.ready == 0 && seen.records == 0 && seen.snaps == 0 && seen.commits == 0);
    CHECK(seen.closes == 1 && seen.close_reason == SLOT_REPL_R_BAD_SECRET);
}

static int accepted_fd;
static bool accepted(int fd)
{
    int a = accept4(fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
    if (a >= 0) {
        socket_opts(a);
        accepted_fd = a;
        return true;
    }
    return seen.closes > 0; /* P gave up (it could not connect) */
}

static void case_as_replica(uint8_t opt, const uint8_t *p, size_t n)
{
    CHECK(slot_repl_connect(P, "r1", "127.0.0.1", p_listen_port) == 0);
    accepted_fd = -1;
    pump(accepted, p_listen_fd);
    CHECK(accepted_fd >= 0);
    int fd = accepted_fd;
    uint8_t type, hello[sizeof rbuf];
    size_t hl;
    CHECK(read_frame(fd, &type, hello, &hl) && type == SLOT_REPL_F_HELLO);
    if (opt & 1) { /* a real CHALLENGE from "r1" */
        uint8_t chal[SLOT_REPL_HELLO_BYTES_MAX];
        size_t cl = make_hello(chal, "r1", CONF_TENURE, 0xa5);
        send_frame(fd, SLOT_REPL_F_CHALLENGE, chal, cl);
        uint8_t theirs[sizeof rbuf], mac[SLOT_REPL_MAC_BYTES];
        size_t tl;
        CHECK(read_frame(fd, &type, theirs, &tl) && type == SLOT_REPL_F_AUTH && tl == SLOT_REPL_MAC_BYTES);
        mac_of(LABEL_PRIMARY, hello, hl, chal, cl, mac); /* P proves the secret */
        CHECK(memcmp(theirs, mac, sizeof mac) == 0);
        if (opt & 2) {
            mac_of(LABEL_REPLICA, hello, hl, chal, cl, mac);
            send_frame(fd, SLOT_REPL_F_AUTH, mac, sizeof mac); /* then on_ready, checked below */
        }
    }
    finish(fd, p, n, 0);
    CHECK(seen.acks == 0);
    CHECK(seen.ready == ((opt & 3) == 3 ? 1 : 0));
}

/* ---- set-up */

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    signal(SIGPIPE, SIG_IGN);
    CHECK(uv_loop_init(&loop) == 0);
    slot_repl_opts o = {.cluster = CLUSTER,
                        .node_id = "r1",
                        .secret = secret,
                        .secret_bytes = sizeof secret - 1,
                        .cbs = {.ctx = &R,
                                .on_ready = on_ready,
                                .on_record = on_record,
                                .on_commit = on_commit,
                                .on_ack = on_ack,
                                .on_close = on_close,
                                .on_snap = on_snap,
                                .log = on_log}};
    CHECK(slot_repl_new(&loop, &o, &R) == 0);
    CHECK(slot_repl_listen(R, "127.0.0.1", 0, &r_port) == 0);
    o.node_id = "p1";
    o.cbs.ctx = &P;
    CHECK(slot_repl_new(&loop, &o, &P) == 0);
    CHECK(slot_repl_set_config(P, CONF_EPOCH, CONF_TENURE, "p1") == 0);
    p_listen_fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    CHECK(p_listen_fd >= 0);
    struct sockaddr_in a = {.sin_family = AF_INET};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    CHECK(bind(p_listen_fd, (struct sockaddr *)&a, sizeof a) == 0 && listen(p_listen_fd, 16) == 0);
    socklen_t al = sizeof a;
    CHECK(getsockname(p_listen_fd, (struct sockaddr *)&a, &al) == 0);
    p_listen_port = ntohs(a.sin_port);
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 2)
        return 0;
    memset(&seen, 0, sizeof seen);
    seen.last_tenure = LOG_TENURE;
    seen.last_seq = LOG_SEQ;
    rlen = 0;
    CHECK(slot_repl_set_config(R, CONF_EPOCH, CONF_TENURE, "p1") == 0);
    slot_repl_set_log_last(R, LOG_TENURE, LOG_SEQ);
    R->seen_commit_seq = 0; /* the highest commit point R reported, as a fresh endpoint's: inputs stay alike */
    const uint8_t *p = data + 2;
    size_t n = size - 2;
    switch (data[0] & 3) {
    case 0:
        case_pre_handshake(p, n);
        break;
    case 1:
        case_after_auth(data[1], p, n, (data[0] >> 2) & 3);
        break;
    case 2:
        case_bad_mac(data[1], p, n);
        break;
    default:
        case_as_replica(data[1], p, n);
        break;
    }
    CHECK(R->conns == NULL && P->conns == NULL && R->stream == NULL);
    if (getenv("FUZZ_REPL_VERBOSE")) /* what an input reached, for writing seeds */
        fprintf(stderr, "fuzz_repl: case %d: ready %d records %d snaps %d commits %d closes %d (%s)\n", data[0] & 3,
                seen.ready, seen.records, seen.snaps, seen.commits, seen.closes,
                slot_repl_reason_name(seen.close_reason));
    return 0;
}
