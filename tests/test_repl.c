/*
 * test_repl.c — the replication channel (slot/repl.h): a primary and a
 * replica on one libuv loop over 127.0.0.1:0, records built with the codec
 * (slot/wset.h) and appended by the replica's owner to a real batch log
 * (slot/rlog.h), and raw sockets playing the bad peers.
 *
 * Every wait runs the loop until a condition holds; a 20 s watchdog fails
 * a case that would hang (never a timing assertion).
 */
#include "harness.h"
#include "slot/repl.h"
#include "slot/rlog.h"
#include "slot/wset.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <sys/stat.h>
#include <unistd.h>

#include <uv.h>

TEST_DECLARE(repl_streams_1000_records_acked_in_order)
TEST_DECLARE(repl_backpressure_bounds_records_in_flight)
TEST_DECLARE(repl_backpressure_bounds_bytes_in_flight)
TEST_DECLARE(repl_wrong_secret_of_the_primary_is_refused)
TEST_DECLARE(repl_wrong_secret_of_the_replica_is_refused)
TEST_DECLARE(repl_stale_tenure_is_refused)
TEST_DECLARE(repl_sender_not_primary_is_refused)
TEST_DECLARE(repl_new_config_fences_the_open_stream)
TEST_DECLARE(repl_seq_gap_is_refused)
TEST_DECLARE(repl_wrong_prev_epoch_is_refused)
TEST_DECLARE(repl_flipped_byte_is_refused)
TEST_DECLARE(repl_record_above_its_tenure_is_refused)
TEST_DECLARE(repl_oversized_frame_is_refused)
TEST_DECLARE(repl_truncated_frame_is_logged)
TEST_DECLARE(repl_garbage_instead_of_hello_is_refused)
TEST_DECLARE(repl_silent_peer_times_out)
TEST_DECLARE(repl_wrong_cluster_is_refused)
TEST_DECLARE(repl_heartbeats_carry_commit_seq)
TEST_DECLARE(repl_secret_file_rules)
TEST_DECLARE(repl_bad_options_are_refused)

TEST_LIST_START
TEST_ENTRY(repl_streams_1000_records_acked_in_order)
TEST_ENTRY(repl_backpressure_bounds_records_in_flight)
TEST_ENTRY(repl_backpressure_bounds_bytes_in_flight)
TEST_ENTRY(repl_wrong_secret_of_the_primary_is_refused)
TEST_ENTRY(repl_wrong_secret_of_the_replica_is_refused)
TEST_ENTRY(repl_stale_tenure_is_refused)
TEST_ENTRY(repl_sender_not_primary_is_refused)
TEST_ENTRY(repl_new_config_fences_the_open_stream)
TEST_ENTRY(repl_seq_gap_is_refused)
TEST_ENTRY(repl_wrong_prev_epoch_is_refused)
TEST_ENTRY(repl_flipped_byte_is_refused)
TEST_ENTRY(repl_record_above_its_tenure_is_refused)
TEST_ENTRY(repl_oversized_frame_is_refused)
TEST_ENTRY(repl_truncated_frame_is_logged)
TEST_ENTRY(repl_garbage_instead_of_hello_is_refused)
TEST_ENTRY(repl_silent_peer_times_out)
TEST_ENTRY(repl_wrong_cluster_is_refused)
TEST_ENTRY(repl_heartbeats_carry_commit_seq)
TEST_ENTRY(repl_secret_file_rules)
TEST_ENTRY(repl_bad_options_are_refused)
TEST_LIST_END

static const char SECRET[] = "0123456789abcdef-the-cluster-secret";
static const char WRONG[] = "0123456789abcdef-not-the-secret!!!";

static uv_loop_t loop;
static uv_timer_t watchdog;

/* ---- a node: a slot_repl and what its callbacks saw */

typedef struct node {
    slot_repl *r;
    const char *id;
    int port; /* listening port, when it listens */
    /* replica side */
    slot_rlog *log;
    char *dir;
    bool delay_acks; /* acks wait for ack_upto() */
    uint64_t delivered, acked, max_unacked;
    int records; /* on_record calls */
    uint64_t commit;
    /* primary side */
    uint64_t last_ack;
    int acks;
    /* both */
    int readies, closes, logs;
    slot_repl_reason reason;
    int by_peer;
    char text[256], last_log[512];
} node;

static void cb_ready(void *ctx, const slot_repl_peer *p)
{
    (void)p;
    ((node *)ctx)->readies++;
}

static int cb_record(void *ctx, const char *from, const uint8_t *rec, size_t len, const slot_wset_rec *d)
{
    node *n = ctx;
    (void)from;
    ASSERT_U64_EQ(d->hdr.seq, n->delivered + 1);
    int rc = slot_rlog_append(n->log, rec, len);
    if (rc == 0)
        rc = slot_rlog_sync(n->log);
    if (rc != 0)
        return rc;
    n->records++;
    n->delivered = d->hdr.seq;
    if (n->delivered - n->acked > n->max_unacked)
        n->max_unacked = n->delivered - n->acked;
    if (!n->delay_acks) {
        ASSERT_EQ(slot_repl_ack(n->r, d->hdr.seq), 0);
        n->acked = d->hdr.seq;
    }
    return 0;
}

static void cb_commit(void *ctx, uint64_t commit_seq)
{
    node *n = ctx;
    ASSERT(commit_seq > n->commit);
    n->commit = commit_seq;
}

static void cb_ack(void *ctx, const char *node_id, uint64_t seq)
{
    node *n = ctx;
    (void)node_id;
    ASSERT(seq > n->last_ack); /* in order, each once */
    n->last_ack = seq;
    n->acks++;
}

static void cb_close(void *ctx, const slot_repl_close_info *info)
{
    node *n = ctx;
    n->closes++;
    n->reason = info->reason;
    n->by_peer = info->by_peer;
    snprintf(n->text, sizeof(n->text), "%s", info->text);
}

static void cb_log(void *ctx, const char *msg)
{
    node *n = ctx;
    n->logs++;
    snprintf(n->last_log, sizeof(n->last_log), "%s", msg);
}

typedef struct node_cfg {
    const char *secret;
    const char *cluster;
    uint32_t inflight_records_max;
    uint64_t inflight_bytes_max;
    uint32_t record_bytes_max;
    uint32_t heartbeat_ms;
    uint32_t handshake_timeout_ms;
} node_cfg;

static void node_start(node *n, const char *id, const node_cfg *cfg)
{
    memset(n, 0, sizeof(*n));
    n->id = id;
    node_cfg d = {0};
    if (!cfg)
        cfg = &d;
    const char *secret = cfg->secret ? cfg->secret : SECRET;
    slot_repl_opts o = {
        .cluster = cfg->cluster ? cfg->cluster : "c1",
        .node_id = id,
        .secret = (const uint8_t *)secret,
        .secret_bytes = strlen(secret),
        .inflight_records_max = cfg->inflight_records_max,
        .inflight_bytes_max = cfg->inflight_bytes_max,
        .record_bytes_max = cfg->record_bytes_max,
        .heartbeat_ms = cfg->heartbeat_ms ? cfg->heartbeat_ms : 1000,
        .handshake_timeout_ms = cfg->handshake_timeout_ms,
        .cbs = {.ctx = n,
                .on_ready = cb_ready,
                .on_record = cb_record,
                .on_commit = cb_commit,
                .on_ack = cb_ack,
                .on_close = cb_close,
                .log = cb_log},
    };
    ASSERT_EQ(slot_repl_new(&loop, &o, &n->r), 0);
}

/* A replica: listens on 127.0.0.1:0, logs to a new rlog, knows config (epoch, tenure, primary). */
static void replica_start(node *n, const char *id, const node_cfg *cfg, uint64_t tenure, const char *primary)
{
    node_start(n, id, cfg);
    n->dir = slot_test_tmpdir();
    ASSERT_EQ(slot_rlog_open(n->dir, NULL, &n->log, NULL), 0);
    uint64_t t, s;
    slot_rlog_last(n->log, &t, &s);
    slot_repl_set_log_last(n->r, t, s);
    ASSERT_EQ(slot_repl_set_config(n->r, tenure, tenure, primary), 0);
    ASSERT_EQ(slot_repl_listen(n->r, "127.0.0.1", 0, &n->port), 0);
    ASSERT(n->port > 0);
}

static void node_stop(node *n)
{
    slot_repl_free(n->r);
    n->r = NULL;
    if (n->log)
        slot_rlog_close(n->log);
    if (n->dir) {
        slot_test_rmdir(n->dir);
        free(n->dir);
    }
}

static void watchdog_cb(uv_timer_t *t)
{
    (void)t;
    T_FAIL_("%s", "no progress within 20 s");
}

typedef bool (*pred_fn)(void *arg);

static void run_until(pred_fn pred, void *arg)
{
    uv_timer_start(&watchdog, watchdog_cb, 20000, 0);
    while (!pred(arg))
        uv_run(&loop, UV_RUN_ONCE);
    uv_timer_stop(&watchdog);
}

static bool is_ready(void *arg)
{
    return ((node *)arg)->readies > 0;
}
static bool is_closed(void *arg)
{
    return ((node *)arg)->closes > 0;
}

static void setup(void)
{
    ASSERT_EQ(uv_loop_init(&loop), 0);
    ASSERT_EQ(uv_timer_init(&loop, &watchdog), 0);
}

/* Every handle closed: the endpoints freed everything they opened. */
static void teardown(void)
{
    uv_close((uv_handle_t *)&watchdog, NULL);
    uv_run(&loop, UV_RUN_DEFAULT);
    ASSERT_EQ(uv_loop_close(&loop), 0);
}

/* ---- records */

typedef struct rec {
    uint8_t *b;
    size_t len;
} rec;

/* A record of one put (key "k<seq>", vlen bytes of value). */
static rec make_rec(uint64_t tenure, uint64_t seq, uint64_t prev, size_t vlen)
{
    slot_wset ws;
    rec out;
    char key[32];
    int klen = snprintf(key, sizeof(key), "k%llu", (unsigned long long)seq);
    uint8_t *v = malloc(vlen + 1);
    for (size_t i = 0; i < vlen; i++)
        v[i] = (uint8_t)(seq * 31 + i);
    slot_wset_hdr h = {
        .epoch = tenure, .seq = seq, .prev_epoch = prev, .commit_seq = seq - 1, .timestamp_ms = 1700000000000ull + seq};
    const uint8_t *p;
    ASSERT_EQ(slot_wset_init(&ws, 0), 0);
    ASSERT_EQ(slot_wset_put(&ws, 1, key, (size_t)klen, v, vlen), 0);
    ASSERT_EQ(slot_wset_finish(&ws, &h, &p, &out.len), 0);
    out.b = malloc(out.len);
    memcpy(out.b, p, out.len);
    slot_wset_free(&ws);
    free(v);
    return out;
}

/* A primary "p"-like node id of tenure `tenure`, connected and ready to replica R. */
static void primary_start(node *p, const char *id, const node_cfg *cfg, uint64_t tenure, const node *R)
{
    node_start(p, id, cfg);
    ASSERT_EQ(slot_repl_set_config(p->r, tenure, tenure, id), 0);
    ASSERT_EQ(slot_repl_connect(p->r, R->id, "127.0.0.1", R->port), 0);
}

typedef struct acked_arg {
    node *p;
    uint64_t seq;
} acked_arg;
static bool acked_to(void *arg)
{
    acked_arg *a = arg;
    return a->p->last_ack >= a->seq;
}

/* A good primary of tenure `tenure` streams k more records to R after R's
 * log's last, all acked and in R's log: R still serves. */
static void good_primary_streams(node *R, uint64_t tenure, int k)
{
    node p;
    primary_start(&p, "p", NULL, tenure, R);
    run_until(is_ready, &p);
    uint64_t t, s;
    slot_rlog_last(R->log, &t, &s);
    for (int i = 0; i < k; i++) {
        rec x = make_rec(tenure, s + 1, t, 10);
        ASSERT_EQ(slot_repl_send(p.r, x.b, x.len), 1);
        free(x.b);
        s++;
        t = tenure;
    }
    acked_arg a = {&p, s};
    run_until(acked_to, &a);
    ASSERT_U64_EQ(slot_rlog_count(R->log), s);
    node_stop(&p);
}

/* R refused with `reason`, logged it, and delivered nothing more than before. */
static void assert_refused(const node *R, slot_repl_reason reason, int records_before)
{
    ASSERT_EQ(R->closes, 1);
    ASSERT_STR_EQ(slot_repl_reason_name(R->reason), slot_repl_reason_name(reason));
    ASSERT_EQ(R->by_peer, 0);
    ASSERT(R->logs >= 1);
    ASSERT(strstr(R->last_log, slot_repl_reason_name(reason)) != NULL);
    ASSERT_EQ(R->records, records_before);
}

/* ---- the cases */

TEST_IMPL(repl_streams_1000_records_acked_in_order)
{
    setup();
    node R, P;
    replica_start(&R, "r1", NULL, 1, "p");
    primary_start(&P, "p", &(node_cfg){.inflight_records_max = 16}, 1, &R);
    run_until(is_ready, &P);
    ASSERT_EQ(R.readies, 1);
    rec *sent = calloc(1000, sizeof(*sent));
    for (uint64_t seq = 1; seq <= 1000; seq++) {
        sent[seq - 1] = make_rec(1, seq, seq == 1 ? 0 : 1, (size_t)(seq % 300));
        int rc;
        while ((rc = slot_repl_send(P.r, sent[seq - 1].b, sent[seq - 1].len)) == -EAGAIN)
            uv_run(&loop, UV_RUN_ONCE); /* the window is full: wait for an ack */
        ASSERT_EQ(rc, 1);
    }
    acked_arg a = {&P, 1000};
    run_until(acked_to, &a);
    ASSERT_EQ(R.records, 1000);
    ASSERT_U64_EQ(slot_rlog_count(R.log), 1000);
    for (uint64_t seq = 1; seq <= 1000; seq++) {
        const uint8_t *b;
        size_t len;
        ASSERT_EQ(slot_rlog_read(R.log, seq, &b, &len), 0);
        ASSERT_EQ(len, sent[seq - 1].len);
        ASSERT(memcmp(b, sent[seq - 1].b, len) == 0);
        free(sent[seq - 1].b);
    }
    free(sent);
    ASSERT_EQ(R.closes, 0);
    ASSERT_EQ(P.closes, 0);
    node_stop(&P);
    node_stop(&R);
    teardown();
}

static bool delivered_to(void *arg)
{
    acked_arg *a = arg;
    return a->p->delivered >= a->seq;
}

static void ack_upto(node *R, uint64_t seq)
{
    ASSERT_EQ(slot_repl_ack(R->r, seq), 0);
    R->acked = seq;
}

TEST_IMPL(repl_backpressure_bounds_records_in_flight)
{
    setup();
    node R, P;
    replica_start(&R, "r1", NULL, 1, "p");
    R.delay_acks = true;
    primary_start(&P, "p", &(node_cfg){.inflight_records_max = 8}, 1, &R);
    run_until(is_ready, &P);
    uint64_t seq = 0;
    int rc;
    for (;;) {
        rec x = make_rec(1, seq + 1, seq ? 1 : 0, 50);
        rc = slot_repl_send(P.r, x.b, x.len);
        free(x.b);
        if (rc != 1)
            break;
        seq++;
    }
    ASSERT_EQ(rc, -EAGAIN);
    ASSERT_U64_EQ(seq, 8);
    acked_arg d = {&R, 8};
    run_until(delivered_to, &d);
    slot_repl_peer_info info;
    ASSERT_EQ(slot_repl_peers(P.r, &info, 1), 1);
    ASSERT_EQ(info.inflight_records, 8);
    ASSERT_U64_EQ(info.last_sent_seq, 8);
    /* acks of 3 open room for exactly 3 more */
    ack_upto(&R, 3);
    acked_arg a = {&P, 3};
    run_until(acked_to, &a);
    for (int i = 0; i < 3; i++) {
        rec x = make_rec(1, seq + 1, 1, 50);
        ASSERT_EQ(slot_repl_send(P.r, x.b, x.len), 1);
        free(x.b);
        seq++;
    }
    rec x = make_rec(1, seq + 1, 1, 50);
    ASSERT_EQ(slot_repl_send(P.r, x.b, x.len), -EAGAIN);
    acked_arg d2 = {&R, 11};
    run_until(delivered_to, &d2);
    ack_upto(&R, 11);
    acked_arg a2 = {&P, 11};
    run_until(acked_to, &a2);
    ASSERT_EQ(slot_repl_send(P.r, x.b, x.len), 1);
    free(x.b);
    ASSERT_U64_EQ(R.max_unacked, 8);
    ASSERT_EQ(slot_repl_ack(R.r, 11), -EINVAL);  /* not above the last ack */
    ASSERT_EQ(slot_repl_ack(R.r, 100), -EINVAL); /* never delivered */
    node_stop(&P);
    node_stop(&R);
    teardown();
}

TEST_IMPL(repl_backpressure_bounds_bytes_in_flight)
{
    setup();
    node R, P;
    replica_start(&R, "r1", NULL, 1, "p");
    R.delay_acks = true;
    primary_start(&P, "p", &(node_cfg){.inflight_bytes_max = 4096}, 1, &R);
    run_until(is_ready, &P);
    rec a = make_rec(1, 1, 0, 1500), b = make_rec(1, 2, 1, 1500), c = make_rec(1, 3, 1, 1500);
    ASSERT_EQ(slot_repl_send(P.r, a.b, a.len), 1);
    ASSERT_EQ(slot_repl_send(P.r, b.b, b.len), 1);
    ASSERT_EQ(slot_repl_send(P.r, c.b, c.len), -EAGAIN); /* 3 x ~1.5 KiB > 4 KiB */
    acked_arg d = {&R, 2};
    run_until(delivered_to, &d);
    ack_upto(&R, 2);
    acked_arg k = {&P, 2};
    run_until(acked_to, &k);
    /* an empty window takes one record larger than the whole bound */
    rec big = make_rec(1, 3, 1, 10000);
    ASSERT_EQ(slot_repl_send(P.r, big.b, big.len), 1);
    ASSERT_EQ(slot_repl_send(P.r, a.b, a.len), -EINVAL); /* seq 1 again: not increasing */
    rec next = make_rec(1, 4, 1, 10);
    ASSERT_EQ(slot_repl_send(P.r, next.b, next.len), -EAGAIN);
    free(a.b), free(b.b), free(c.b), free(big.b), free(next.b);
    node_stop(&P);
    node_stop(&R);
    teardown();
}

TEST_IMPL(repl_wrong_secret_of_the_primary_is_refused)
{
    setup();
    node R, P;
    replica_start(&R, "r1", NULL, 1, "p");
    primary_start(&P, "p", &(node_cfg){.secret = WRONG}, 1, &R);
    run_until(is_closed, &P);
    run_until(is_closed, &R);
    assert_refused(&R, SLOT_REPL_R_BAD_SECRET, 0);
    ASSERT_EQ(P.reason, SLOT_REPL_R_BAD_SECRET);
    ASSERT_EQ(P.by_peer, 1);
    ASSERT_EQ(P.readies, 0);
    ASSERT_EQ(R.readies, 0);
    rec x = make_rec(1, 1, 0, 10);
    ASSERT_EQ(slot_repl_send(P.r, x.b, x.len), 0); /* no ready replica */
    free(x.b);
    node_stop(&P);
    good_primary_streams(&R, 1, 5);
    node_stop(&R);
    teardown();
}

/* ---- raw sockets: a fake replica, and bad primaries */

typedef struct raw {
    uv_tcp_t tcp;
    uv_connect_t creq;
    uint8_t in[65536];
    size_t in_len;
    int want_frames; /* raw_wait_frames */
    int writes;      /* not yet completed */
    bool connected, eof, closed;
} raw;

static void raw_alloc(uv_handle_t *h, size_t sz, uv_buf_t *b)
{
    (void)sz;
    raw *w = h->data;
    *b = uv_buf_init((char *)w->in + w->in_len, (unsigned)(sizeof(w->in) - w->in_len));
}

static void raw_read(uv_stream_t *s, ssize_t n, const uv_buf_t *b)
{
    (void)b;
    raw *w = s->data;
    if (n < 0)
        w->eof = true;
    else
        w->in_len += (size_t)n;
    ASSERT(w->in_len < sizeof(w->in));
}

static void raw_connected(uv_connect_t *req, int status)
{
    raw *w = req->data;
    ASSERT_EQ(status, 0);
    w->connected = true;
    ASSERT_EQ(uv_read_start((uv_stream_t *)&w->tcp, raw_alloc, raw_read), 0);
}

static void raw_dial(raw *w, int port)
{
    memset(w, 0, sizeof(*w));
    struct sockaddr_in sa;
    uv_ip4_addr("127.0.0.1", port, &sa);
    uv_tcp_init(&loop, &w->tcp);
    w->tcp.data = w;
    w->creq.data = w;
    ASSERT_EQ(uv_tcp_connect(&w->creq, &w->tcp, (struct sockaddr *)&sa, raw_connected), 0);
}

static void raw_write_cb(uv_write_t *req, int status)
{
    (void)status;
    ((raw *)req->data)->writes--;
    free(req);
}

static bool raw_flushed(void *arg)
{
    raw *w = arg;
    return w->connected && w->writes == 0;
}

/* Sends p and waits until it is written (so a close after it loses nothing). */
static void raw_send(raw *w, const void *p, size_t len)
{
    uv_write_t *req = malloc(sizeof(*req) + len);
    memcpy(req + 1, p, len);
    req->data = w;
    uv_buf_t b = uv_buf_init((char *)(req + 1), (unsigned)len);
    ASSERT_EQ(uv_write(req, (uv_stream_t *)&w->tcp, &b, 1, raw_write_cb), 0);
    w->writes++;
    run_until(raw_flushed, w);
}

static void raw_frame(raw *w, uint8_t type, const void *p, size_t len)
{
    uint8_t h[5] = {(uint8_t)(len + 1), (uint8_t)((len + 1) >> 8), (uint8_t)((len + 1) >> 16),
                    (uint8_t)((len + 1) >> 24), type};
    raw_send(w, h, 5);
    if (len)
        raw_send(w, p, len);
}

static void raw_closed(uv_handle_t *h)
{
    ((raw *)h->data)->closed = true;
}

static void raw_close(raw *w)
{
    uv_close((uv_handle_t *)&w->tcp, raw_closed);
}

/* Bytes in w->in of whole frames: the type of frame i (0-based), or -1. */
static int raw_frame_type(const raw *w, int i, const uint8_t **payload, size_t *len)
{
    size_t o = 0;
    for (int k = 0;; k++) {
        if (w->in_len - o < 5)
            return -1;
        size_t blen = w->in[o] | (size_t)w->in[o + 1] << 8 | (size_t)w->in[o + 2] << 16 | (size_t)w->in[o + 3] << 24;
        if (w->in_len - o - 4 < blen)
            return -1;
        if (k == i) {
            if (payload)
                *payload = w->in + o + 5;
            if (len)
                *len = blen - 1;
            return w->in[o + 4];
        }
        o += 4 + blen;
    }
}

static bool raw_has_frames(void *arg)
{
    raw *w = arg;
    return raw_frame_type(w, w->want_frames - 1, NULL, NULL) >= 0;
}

static void raw_wait_frames(raw *w, int n)
{
    w->want_frames = n;
    run_until(raw_has_frames, w);
}

static bool raw_eof(void *arg)
{
    return ((raw *)arg)->eof;
}

/* A HELLO/CHALLENGE payload as slot/repl.h lays it out. */
static size_t hello_payload(uint8_t *out, const char *cluster, const char *id)
{
    memset(out, 0, 80);
    memcpy(out, "SLRP", 4);
    out[4] = 1;
    for (int i = 0; i < 32; i++)
        out[8 + i] = (uint8_t)(i * 7 + 1);
    out[48] = 1; /* tenure 1 */
    size_t o = 80, cl = strlen(cluster), nl = strlen(id);
    out[o++] = (uint8_t)cl;
    memcpy(out + o, cluster, cl);
    o += cl;
    out[o++] = (uint8_t)nl;
    memcpy(out + o, id, nl);
    return o + nl;
}

/* The fake replica: answers HELLO with a CHALLENGE and AUTH with a MAC it
 * cannot know. */
typedef struct fake {
    uv_tcp_t listener;
    raw conn;
    bool accepted;
} fake;

static void fake_accept(uv_stream_t *s, int status)
{
    fake *f = s->data;
    ASSERT_EQ(status, 0);
    uv_tcp_init(&loop, &f->conn.tcp); /* f->conn was zeroed with f */
    f->conn.tcp.data = &f->conn;
    f->conn.connected = true;
    ASSERT_EQ(uv_accept(s, (uv_stream_t *)&f->conn.tcp), 0);
    ASSERT_EQ(uv_read_start((uv_stream_t *)&f->conn.tcp, raw_alloc, raw_read), 0);
    f->accepted = true;
}

TEST_IMPL(repl_wrong_secret_of_the_replica_is_refused)
{
    setup();
    fake f;
    memset(&f, 0, sizeof(f));
    struct sockaddr_in sa;
    uv_ip4_addr("127.0.0.1", 0, &sa);
    uv_tcp_init(&loop, &f.listener);
    f.listener.data = &f;
    ASSERT_EQ(uv_tcp_bind(&f.listener, (struct sockaddr *)&sa, 0), 0);
    ASSERT_EQ(uv_listen((uv_stream_t *)&f.listener, 8, fake_accept), 0);
    struct sockaddr_storage ss;
    int len = sizeof(ss);
    uv_tcp_getsockname(&f.listener, (struct sockaddr *)&ss, &len);
    node P, R = {.id = "r1", .port = ntohs(((struct sockaddr_in *)&ss)->sin_port)};
    primary_start(&P, "p", NULL, 1, &R);
    raw_wait_frames(&f.conn, 1);
    ASSERT_EQ(raw_frame_type(&f.conn, 0, NULL, NULL), SLOT_REPL_F_HELLO);
    uint8_t chal[256];
    raw_frame(&f.conn, SLOT_REPL_F_CHALLENGE, chal, hello_payload(chal, "c1", "r1"));
    raw_wait_frames(&f.conn, 2);
    const uint8_t *pl;
    size_t plen;
    ASSERT_EQ(raw_frame_type(&f.conn, 1, &pl, &plen), SLOT_REPL_F_AUTH);
    ASSERT_EQ(plen, SLOT_REPL_MAC_BYTES);
    uint8_t mac[SLOT_REPL_MAC_BYTES];
    memset(mac, 0x5a, sizeof(mac));
    raw_frame(&f.conn, SLOT_REPL_F_AUTH, mac, sizeof(mac));
    run_until(is_closed, &P);
    ASSERT_EQ(P.reason, SLOT_REPL_R_BAD_SECRET);
    ASSERT_EQ(P.by_peer, 0);
    ASSERT_EQ(P.readies, 0);
    ASSERT(strstr(P.last_log, "bad_secret") != NULL);
    raw_wait_frames(&f.conn, 3);
    ASSERT_EQ(raw_frame_type(&f.conn, 2, &pl, &plen), SLOT_REPL_F_REFUSE);
    ASSERT_EQ(pl[0], SLOT_REPL_R_BAD_SECRET);
    rec x = make_rec(1, 1, 0, 10);
    ASSERT_EQ(slot_repl_send(P.r, x.b, x.len), 0); /* nothing goes to it */
    free(x.b);
    run_until(raw_eof, &f.conn);
    ASSERT_EQ(raw_frame_type(&f.conn, 3, NULL, NULL), -1);
    raw_close(&f.conn);
    uv_close((uv_handle_t *)&f.listener, NULL);
    node_stop(&P);
    teardown();
}

TEST_IMPL(repl_stale_tenure_is_refused)
{
    setup();
    node R, P;
    replica_start(&R, "r1", NULL, 5, "p");
    primary_start(&P, "p", NULL, 3, &R);
    run_until(is_closed, &P);
    run_until(is_closed, &R);
    assert_refused(&R, SLOT_REPL_R_STALE_TENURE, 0);
    ASSERT_EQ(P.reason, SLOT_REPL_R_STALE_TENURE);
    ASSERT_EQ(P.by_peer, 1);
    ASSERT_EQ(P.readies, 0);
    node_stop(&P);
    good_primary_streams(&R, 5, 3);
    node_stop(&R);
    teardown();
}

TEST_IMPL(repl_sender_not_primary_is_refused)
{
    setup();
    node R, P;
    replica_start(&R, "r1", NULL, 1, "p");
    primary_start(&P, "q", NULL, 1, &R);
    run_until(is_closed, &P);
    run_until(is_closed, &R);
    assert_refused(&R, SLOT_REPL_R_NOT_PRIMARY, 0);
    ASSERT_EQ(P.reason, SLOT_REPL_R_NOT_PRIMARY);
    node_stop(&P);
    good_primary_streams(&R, 1, 3);
    node_stop(&R);
    teardown();
}

TEST_IMPL(repl_new_config_fences_the_open_stream)
{
    setup();
    node R, P;
    replica_start(&R, "r1", NULL, 1, "p");
    primary_start(&P, "p", NULL, 1, &R);
    run_until(is_ready, &P);
    rec x = make_rec(1, 1, 0, 10);
    ASSERT_EQ(slot_repl_send(P.r, x.b, x.len), 1);
    free(x.b);
    acked_arg a = {&P, 1};
    run_until(acked_to, &a);
    ASSERT_EQ(slot_repl_set_config(R.r, 2, 2, "q"), 0); /* q took over */
    assert_refused(&R, SLOT_REPL_R_NOT_PRIMARY, 1);
    run_until(is_closed, &P);
    ASSERT_EQ(P.reason, SLOT_REPL_R_NOT_PRIMARY);
    ASSERT_EQ(slot_repl_ack(R.r, 1), -ENOTCONN);
    node_stop(&P);
    ASSERT_EQ(slot_repl_set_config(R.r, 2, 2, "p"), 0);
    good_primary_streams(&R, 2, 2);
    node_stop(&R);
    teardown();
}

/* A good primary sends `bad` after `good` good records; R refuses it with reason. */
static void refuse_record_case(uint64_t tenure, int good, rec (*bad)(uint64_t tenure, uint64_t seq),
                               slot_repl_reason reason, const node_cfg *rcfg)
{
    setup();
    node R, P;
    replica_start(&R, "r1", rcfg, tenure, "p");
    primary_start(&P, "p", NULL, tenure, &R);
    run_until(is_ready, &P);
    for (int i = 1; i <= good; i++) {
        rec x = make_rec(tenure, (uint64_t)i, i == 1 ? 0 : tenure, 10);
        ASSERT_EQ(slot_repl_send(P.r, x.b, x.len), 1);
        free(x.b);
    }
    acked_arg a = {&P, (uint64_t)good};
    run_until(acked_to, &a);
    rec x = bad(tenure, (uint64_t)good + 1);
    ASSERT_EQ(slot_repl_send(P.r, x.b, x.len), 1);
    free(x.b);
    run_until(is_closed, &R);
    assert_refused(&R, reason, good);
    run_until(is_closed, &P);
    ASSERT_STR_EQ(slot_repl_reason_name(P.reason), slot_repl_reason_name(reason));
    ASSERT_EQ(P.by_peer, 1);
    ASSERT_U64_EQ(slot_rlog_count(R.log), (uint64_t)good);
    /* reconnecting is the primary's call; the new stream resumes from R's log */
    ASSERT_EQ(slot_repl_connect(P.r, "r1", "127.0.0.1", R.port), 0);
    P.readies = 0;
    run_until(is_ready, &P);
    rec y = make_rec(tenure, (uint64_t)good + 1, tenure, 10);
    ASSERT_EQ(slot_repl_send(P.r, y.b, y.len), 1);
    free(y.b);
    acked_arg b = {&P, (uint64_t)good + 1};
    run_until(acked_to, &b);
    ASSERT_EQ(R.records, good + 1);
    node_stop(&P);
    good_primary_streams(&R, tenure, 3);
    node_stop(&R);
    teardown();
}

static rec bad_gap(uint64_t t, uint64_t seq)
{
    return make_rec(t, seq + 1, t, 10);
}
static rec bad_prev(uint64_t t, uint64_t seq)
{
    return make_rec(t, seq, t - 1, 10);
}
static rec bad_tenure(uint64_t t, uint64_t seq)
{
    return make_rec(t + 1, seq, t, 10);
}
static rec bad_big(uint64_t t, uint64_t seq)
{
    return make_rec(t, seq, t, 5000);
}
static rec bad_flip(uint64_t t, uint64_t seq)
{
    rec x = make_rec(t, seq, t, 40);
    x.b[x.len - 7] ^= 0x01; /* a byte of the value: only the crc can tell */
    return x;
}

TEST_IMPL(repl_seq_gap_is_refused)
{
    refuse_record_case(2, 4, bad_gap, SLOT_REPL_R_GAP, NULL);
}
TEST_IMPL(repl_wrong_prev_epoch_is_refused)
{
    refuse_record_case(2, 4, bad_prev, SLOT_REPL_R_BAD_PREV, NULL);
}
TEST_IMPL(repl_flipped_byte_is_refused)
{
    refuse_record_case(2, 4, bad_flip, SLOT_REPL_R_CORRUPT, NULL);
}
TEST_IMPL(repl_record_above_its_tenure_is_refused)
{
    refuse_record_case(2, 4, bad_tenure, SLOT_REPL_R_CORRUPT, NULL);
}
TEST_IMPL(repl_oversized_frame_is_refused)
{
    refuse_record_case(2, 4, bad_big, SLOT_REPL_R_TOO_BIG, &(node_cfg){.record_bytes_max = 4096});
}

TEST_IMPL(repl_truncated_frame_is_logged)
{
    setup();
    node R;
    replica_start(&R, "r1", NULL, 1, "p");
    raw w;
    raw_dial(&w, R.port);
    uint8_t junk[55] = {100, 0, 0, 0, SLOT_REPL_F_HELLO, 'S', 'L', 'R', 'P'};
    raw_send(&w, junk, sizeof(junk)); /* 50 of a 100-byte frame's body */
    raw_close(&w);
    run_until(is_closed, &R);
    assert_refused(&R, SLOT_REPL_R_TRUNCATED, 0);
    good_primary_streams(&R, 1, 3);
    node_stop(&R);
    teardown();
}

TEST_IMPL(repl_garbage_instead_of_hello_is_refused)
{
    setup();
    node R;
    replica_start(&R, "r1", NULL, 1, "p");
    raw w;
    raw_dial(&w, R.port);
    static const char get[] = "GET / HTTP/1.1\r\nHost: localhost\r\n\r\n";
    raw_send(&w, get, sizeof(get) - 1);
    run_until(is_closed, &R);
    assert_refused(&R, SLOT_REPL_R_PROTOCOL, 0);
    run_until(raw_eof, &w); /* REFUSE, then the close */
    const uint8_t *pl;
    ASSERT_EQ(raw_frame_type(&w, 0, &pl, NULL), SLOT_REPL_F_REFUSE);
    ASSERT_EQ(pl[0], SLOT_REPL_R_PROTOCOL);
    raw_close(&w);
    /* a small garbage frame of the right size is no hello either */
    R.closes = 0;
    raw w2;
    raw_dial(&w2, R.port);
    char text[90];
    memset(text, 'x', sizeof(text));
    raw_frame(&w2, SLOT_REPL_F_HELLO, text, sizeof(text));
    run_until(is_closed, &R);
    assert_refused(&R, SLOT_REPL_R_PROTOCOL, 0);
    raw_close(&w2);
    good_primary_streams(&R, 1, 3);
    node_stop(&R);
    teardown();
}

TEST_IMPL(repl_silent_peer_times_out)
{
    setup();
    node R;
    replica_start(&R, "r1", &(node_cfg){.handshake_timeout_ms = 50}, 1, "p");
    raw w;
    raw_dial(&w, R.port);
    run_until(is_closed, &R);
    assert_refused(&R, SLOT_REPL_R_TIMEOUT, 0);
    run_until(raw_eof, &w);
    ASSERT_EQ(raw_frame_type(&w, 0, NULL, NULL), SLOT_REPL_F_REFUSE);
    raw_close(&w);
    good_primary_streams(&R, 1, 3);
    node_stop(&R);
    teardown();
}

TEST_IMPL(repl_wrong_cluster_is_refused)
{
    setup();
    node R, P;
    replica_start(&R, "r1", NULL, 1, "p");
    primary_start(&P, "p", &(node_cfg){.cluster = "other"}, 1, &R);
    run_until(is_closed, &P);
    run_until(is_closed, &R);
    assert_refused(&R, SLOT_REPL_R_WRONG_CLUSTER, 0);
    ASSERT_EQ(P.reason, SLOT_REPL_R_WRONG_CLUSTER);
    node_stop(&P);
    good_primary_streams(&R, 1, 1);
    node_stop(&R);
    teardown();
}

static bool commit_at(void *arg)
{
    acked_arg *a = arg;
    return a->p->commit >= a->seq;
}

static void pause_cb(uv_timer_t *t)
{
    t->data = t;
}
static bool pause_over(void *arg)
{
    return ((uv_timer_t *)arg)->data != NULL;
}

TEST_IMPL(repl_heartbeats_carry_commit_seq)
{
    setup();
    node R, P;
    replica_start(&R, "r1", NULL, 1, "p");
    primary_start(&P, "p", &(node_cfg){.heartbeat_ms = 5}, 1, &R);
    run_until(is_ready, &P);
    for (uint64_t seq = 1; seq <= 10; seq++) {
        rec x = make_rec(1, seq, seq == 1 ? 0 : 1, 10); /* commit_seq = seq - 1 */
        ASSERT_EQ(slot_repl_send(P.r, x.b, x.len), 1);
        free(x.b);
    }
    acked_arg a = {&P, 10};
    run_until(acked_to, &a);
    ASSERT_U64_EQ(R.commit, 9); /* from the records */
    slot_repl_set_commit(P.r, 10);
    acked_arg c = {&R, 10};
    run_until(commit_at, &c); /* only a heartbeat can carry it now */
    ASSERT_U64_EQ(R.commit, 10);
    ASSERT_EQ(R.records, 10);
    /* the primary goes quiet: the silence grows at least as the loop's clock */
    node_stop(&P);
    run_until(is_closed, &R); /* R read everything P sent, then its close */
    uint64_t t0 = uv_now(&loop);
    uv_timer_t pause;
    uv_timer_init(&loop, &pause);
    pause.data = NULL;
    uv_timer_start(&pause, pause_cb, 30, 0);
    run_until(pause_over, &pause);
    uv_close((uv_handle_t *)&pause, NULL);
    ASSERT(uv_now(&loop) >= t0 + 30);
    ASSERT(slot_repl_silence_ms(R.r) >= 30);
    node_stop(&R);
    teardown();
}

static void write_file(const char *path, const char *text, mode_t mode)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    ASSERT(fd >= 0);
    ASSERT_EQ(write(fd, text, strlen(text)), (ssize_t)strlen(text));
    close(fd);
    ASSERT_EQ(chmod(path, mode), 0);
}

TEST_IMPL(repl_secret_file_rules)
{
    char *dir = slot_test_tmpdir();
    char path[512], err[256];
    snprintf(path, sizeof(path), "%s/secret", dir);
    slot_repl_secret s;
    write_file(path, "0123456789abcdef-secret\n", 0644);
    ASSERT_EQ(slot_repl_secret_load(path, &s, err, sizeof(err)), -EPERM);
    ASSERT(strstr(err, "chmod 600") != NULL);
    ASSERT_EQ(s.len, 0);
    write_file(path, "0123456789abcdef-secret\n", 0640);
    ASSERT_EQ(slot_repl_secret_load(path, &s, err, sizeof(err)), -EPERM);
    write_file(path, "0123456789abcdef-secret\r\n", 0600);
    ASSERT_EQ(slot_repl_secret_load(path, &s, err, sizeof(err)), 0);
    ASSERT_EQ(s.len, 23);
    ASSERT(memcmp(s.bytes, "0123456789abcdef-secret", 23) == 0);
    slot_repl_secret_clear(&s);
    ASSERT_EQ(s.len, 0);
    write_file(path, "short\n", 0600);
    ASSERT_EQ(slot_repl_secret_load(path, &s, err, sizeof(err)), -EINVAL);
    char *big = malloc(SLOT_REPL_SECRET_BYTES_MAX + 2);
    memset(big, 'x', SLOT_REPL_SECRET_BYTES_MAX + 1);
    big[SLOT_REPL_SECRET_BYTES_MAX + 1] = 0;
    write_file(path, big, 0600);
    ASSERT_EQ(slot_repl_secret_load(path, &s, NULL, 0), -EINVAL);
    big[SLOT_REPL_SECRET_BYTES_MAX] = 0;
    write_file(path, big, 0400);
    ASSERT_EQ(slot_repl_secret_load(path, &s, NULL, 0), 0);
    ASSERT_EQ(s.len, SLOT_REPL_SECRET_BYTES_MAX);
    free(big);
    snprintf(path, sizeof(path), "%s/missing", dir);
    ASSERT_EQ(slot_repl_secret_load(path, &s, err, sizeof(err)), -ENOENT);
    slot_test_rmdir(dir);
    free(dir);
}

TEST_IMPL(repl_bad_options_are_refused)
{
    setup();
    slot_repl *r = NULL;
    slot_repl_opts o = {.cluster = "c1",
                        .node_id = "n1",
                        .secret = (const uint8_t *)SECRET,
                        .secret_bytes = strlen(SECRET)};
    slot_repl_opts b = o;
    b.node_id = "bad id";
    ASSERT_EQ(slot_repl_new(&loop, &b, &r), -EINVAL);
    b = o;
    b.secret_bytes = 8;
    ASSERT_EQ(slot_repl_new(&loop, &b, &r), -EINVAL);
    b = o;
    b.record_bytes_max = 10;
    ASSERT_EQ(slot_repl_new(&loop, &b, &r), -EINVAL);
    b = o;
    b.heartbeat_ms = SLOT_REPL_HEARTBEAT_MS_MAX + 1;
    ASSERT_EQ(slot_repl_new(&loop, &b, &r), -EINVAL);
    ASSERT(r == NULL);
    ASSERT_EQ(slot_repl_new(&loop, &o, &r), 0);
    ASSERT_EQ(slot_repl_set_config(r, 1, 1, "no spaces"), -EINVAL);
    ASSERT_EQ(slot_repl_connect(r, "r1", "not-an-ip", 1), -EINVAL);
    ASSERT_EQ(slot_repl_connect(r, "r1", "127.0.0.1", 0), -EINVAL);
    ASSERT_EQ(slot_repl_disconnect(r, "r1"), -ENOTCONN);
    ASSERT_EQ(slot_repl_ack(r, 1), -ENOTCONN);
    uint8_t junk[64] = {0};
    ASSERT_EQ(slot_repl_send(r, junk, sizeof(junk)), -EINVAL);
    ASSERT_EQ(slot_repl_send_to(r, "r1", junk, sizeof(junk)), -EINVAL);
    rec x = make_rec(1, 1, 0, 10);
    ASSERT_EQ(slot_repl_send_to(r, "r1", x.b, x.len), -ENOTCONN);
    ASSERT_EQ(slot_repl_send(r, x.b, x.len - 1), -EINVAL);
    free(x.b);
    slot_repl_free(r);
    teardown();
}
