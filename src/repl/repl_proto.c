/*
 * repl_proto.c — what the replication frames mean (slot/repl.h): the mutual
 * handshake, the replica's checks on every record (docs/design.md, "The
 * replica's rule"), acks and the primary's window, heartbeats.
 */
#include "repl_int.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static const char LABEL_PRIMARY[] = "slotd-repl-v1 primary"; /* the connecting side's MAC */
static const char LABEL_REPLICA[] = "slotd-repl-v1 replica"; /* the accepting side's MAC */

static uint64_t wall_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

size_t slot__repl_body_max(const slot__repl_conn *c)
{
    if (c->state == SLOT__REPL_READY)
        return (size_t)c->r->opts.record_bytes_max + 1;
    return SLOT_REPL_HELLO_BYTES_MAX + 1;
}

int slot__repl_send_hello(slot__repl_conn *c, uint8_t type)
{
    slot_repl *r = c->r;
    slot__repl_hello h;
    memset(&h, 0, sizeof(h));
    if (slot__repl_random(h.nonce, sizeof(h.nonce)) != 0)
        return UV_EIO;
    h.epoch = r->epoch;
    h.tenure = r->tenure;
    h.last_tenure = r->last_tenure;
    h.last_seq = r->last_seq;
    h.time_ms = wall_ms();
    snprintf(h.cluster, sizeof(h.cluster), "%s", r->cluster);
    snprintf(h.node, sizeof(h.node), "%s", r->node);
    c->my_hello_len = slot__repl_hello_encode(&h, c->my_hello);
    SLOT_ASSERT(c->my_hello_len >= SLOT_REPL_HELLO_FIXED_BYTES && c->my_hello_len <= SLOT_REPL_HELLO_BYTES_MAX);
    return slot__repl_write(c, type, c->my_hello, c->my_hello_len);
}

static void report_ready(slot__repl_conn *c)
{
    slot_repl *r = c->r;
    if (!r->opts.cbs.on_ready)
        return;
    slot_repl_peer p = {c->peer.node,        c->addr,          c->inbound,     c->peer.epoch, c->peer.tenure,
                        c->peer.last_tenure, c->peer.last_seq, c->peer.time_ms};
    r->opts.cbs.on_ready(r->opts.cbs.ctx, &p);
}

/* Parses the peer's HELLO or CHALLENGE into c; false when c was ended. */
static bool take_hello(slot__repl_conn *c, const uint8_t *p, size_t len)
{
    char err[128];
    if (slot__repl_hello_parse(p, len, &c->peer, err, sizeof(err)) != 0) {
        slot__repl_end(c, SLOT_REPL_R_PROTOCOL, true, false, "%s", err);
        return false;
    }
    if (strcmp(c->peer.cluster, c->r->cluster) != 0) {
        slot__repl_end(c, SLOT_REPL_R_WRONG_CLUSTER, true, false, "cluster \"%s\", this node's is \"%s\"",
                       c->peer.cluster, c->r->cluster);
        return false;
    }
    SLOT_ASSERT(len <= SLOT_REPL_HELLO_BYTES_MAX); /* slot__repl_body_max bounds a handshake frame */
    memcpy(c->peer_hello, p, len);
    c->peer_hello_len = len;
    return true;
}

/* The MAC that side `label` must send on c. */
static int expected_mac(slot__repl_conn *c, const char *label, uint8_t mac[SLOT_REPL_MAC_BYTES])
{
    const uint8_t *hello = c->inbound ? c->peer_hello : c->my_hello;
    size_t hello_len = c->inbound ? c->peer_hello_len : c->my_hello_len;
    const uint8_t *chal = c->inbound ? c->my_hello : c->peer_hello;
    size_t chal_len = c->inbound ? c->my_hello_len : c->peer_hello_len;
    return slot__repl_mac(c->r->secret, c->r->opts.secret_bytes, label, hello, hello_len, chal, chal_len, mac);
}

/* Replica side: is c's sender the primary of the configuration, with a
 * tenure not below its? Ends c and returns false when not. */
bool slot__repl_sender_ok(slot__repl_conn *c)
{
    slot_repl *r = c->r;
    if (r->primary[0] == 0 || strcmp(c->peer.node, r->primary) != 0) {
        slot__repl_end(c, SLOT_REPL_R_NOT_PRIMARY, true, false,
                       "the configuration this node knows (epoch %llu) names primary \"%s\"",
                       (unsigned long long)r->epoch, r->primary);
        return false;
    }
    if (c->peer.tenure < r->tenure) {
        slot__repl_end(c, SLOT_REPL_R_STALE_TENURE, true, false,
                       "tenure %llu, below the configuration's %llu (epoch %llu)", (unsigned long long)c->peer.tenure,
                       (unsigned long long)r->tenure, (unsigned long long)r->epoch);
        return false;
    }
    return true;
}

static void report_commit(slot_repl *r, uint64_t commit_seq)
{
    if (commit_seq <= r->seen_commit_seq)
        return;
    r->seen_commit_seq = commit_seq;
    if (r->opts.cbs.on_commit)
        r->opts.cbs.on_commit(r->opts.cbs.ctx, commit_seq);
}

/* ---- the handshake */

static void on_hello(slot__repl_conn *c, const uint8_t *p, size_t len)
{
    if (!take_hello(c, p, len))
        return;
    snprintf(c->node, sizeof(c->node), "%s", c->peer.node);
    int rc = slot__repl_send_hello(c, SLOT_REPL_F_CHALLENGE);
    if (rc < 0) {
        slot__repl_end(c, SLOT_REPL_R_CLOSED, false, false, "challenge: %s", uv_strerror(rc));
        return;
    }
    slot__repl_set_state(c, SLOT__REPL_CHALLENGED);
}

static void on_challenge(slot__repl_conn *c, const uint8_t *p, size_t len)
{
    if (!take_hello(c, p, len))
        return;
    if (strcmp(c->peer.node, c->node) != 0) {
        slot__repl_end(c, SLOT_REPL_R_WRONG_NODE, true, false, "the replica says it is \"%s\"", c->peer.node);
        return;
    }
    uint8_t mac[SLOT_REPL_MAC_BYTES];
    int rc = expected_mac(c, LABEL_PRIMARY, mac);
    if (rc == 0)
        rc = slot__repl_write(c, SLOT_REPL_F_AUTH, mac, sizeof(mac));
    if (rc < 0) {
        slot__repl_end(c, SLOT_REPL_R_CLOSED, false, false, "auth: %s", uv_strerror(rc));
        return;
    }
    slot__repl_set_state(c, SLOT__REPL_AUTH_SENT);
}

/* Checks the peer's AUTH against the MAC side `label` must send. */
static bool auth_ok(slot__repl_conn *c, const char *label, const uint8_t *p, size_t len)
{
    uint8_t mac[SLOT_REPL_MAC_BYTES];
    if (len != SLOT_REPL_MAC_BYTES) {
        slot__repl_end(c, SLOT_REPL_R_PROTOCOL, true, false, "an AUTH of %zu bytes", len);
        return false;
    }
    if (expected_mac(c, label, mac) != 0) {
        slot__repl_end(c, SLOT_REPL_R_CLOSED, false, false, "HMAC-SHA256 failed");
        return false;
    }
    if (!slot__repl_mac_equal(mac, p)) {
        slot__repl_end(c, SLOT_REPL_R_BAD_SECRET, true, false, "the %s's MAC does not match the cluster secret",
                       c->inbound ? "primary" : "replica");
        return false;
    }
    return true;
}

/* Replica side: the primary proved the secret; is it the one to follow? */
static void on_primary_auth(slot__repl_conn *c, const uint8_t *p, size_t len)
{
    slot_repl *r = c->r;
    if (!auth_ok(c, LABEL_PRIMARY, p, len) || !slot__repl_sender_ok(c))
        return;
    uint8_t mac[SLOT_REPL_MAC_BYTES];
    int rc = expected_mac(c, LABEL_REPLICA, mac);
    if (rc == 0)
        rc = slot__repl_write(c, SLOT_REPL_F_AUTH, mac, sizeof(mac));
    if (rc < 0) {
        slot__repl_end(c, SLOT_REPL_R_CLOSED, false, false, "auth: %s", uv_strerror(rc));
        return;
    }
    slot__repl_set_state(c, SLOT__REPL_READY);
    if (r->stream)
        slot__repl_end(r->stream, SLOT_REPL_R_SUPERSEDED, true, false, "a newer connection from %s", c->addr);
    if (c->state != SLOT__REPL_READY)
        return; /* ended by a callback of the old stream's close */
    SLOT_ASSERT(c->inbound && (r->stream == NULL || r->stream == c)); /* one stream: the old one ended above */
    r->stream = c;
    c->delivered_seq = r->last_seq;
    c->ack_floor = r->last_seq; /* durable before this stream: nothing to ack */
    c->acked_seq = 0;
    r->last_heard_ms = uv_now(r->loop);
    report_ready(c);
}

static void on_replica_auth(slot__repl_conn *c, const uint8_t *p, size_t len)
{
    if (!auth_ok(c, LABEL_REPLICA, p, len))
        return;
    slot__repl_set_state(c, SLOT__REPL_READY);
    report_ready(c);
}

/* ---- the replica's stream */

static void on_record(slot__repl_conn *c, const uint8_t *p, size_t len)
{
    slot_repl *r = c->r;
    if (!slot__repl_sender_ok(c))
        return;
    slot_wset_rec d;
    int rc = slot_wset_decode(p, len, &d);
    if (rc != 0 || d.record_bytes != len) {
        slot__repl_end(c, SLOT_REPL_R_CORRUPT, true, false, "%s", rc ? slot_strerror(rc) : "bytes after the record");
        return;
    }
    if (d.hdr.epoch > c->peer.tenure) {
        slot__repl_end(c, SLOT_REPL_R_CORRUPT, true, false, "record %llu of tenure %llu, above the sender's %llu",
                       (unsigned long long)d.hdr.seq, (unsigned long long)d.hdr.epoch,
                       (unsigned long long)c->peer.tenure);
        return;
    }
    if (d.hdr.seq != r->last_seq + 1) {
        slot__repl_end(c, SLOT_REPL_R_GAP, true, false, "record %llu, expected %llu", (unsigned long long)d.hdr.seq,
                       (unsigned long long)r->last_seq + 1);
        return;
    }
    if (d.hdr.prev_epoch != r->last_tenure) {
        slot__repl_end(c, SLOT_REPL_R_BAD_PREV, true, false,
                       "record %llu has prev_epoch %llu, record %llu has tenure %llu", (unsigned long long)d.hdr.seq,
                       (unsigned long long)d.hdr.prev_epoch, (unsigned long long)r->last_seq,
                       (unsigned long long)r->last_tenure);
        return;
    }
    SLOT_ASSERT(d.hdr.seq >= 1 && d.hdr.prev_epoch <= d.hdr.epoch && d.hdr.commit_seq <= d.hdr.seq);
    SLOT_ASSERT(c->delivered_seq <= r->last_seq && c->acked_seq <= c->delivered_seq);
    /* Counted before the callback, so the owner may ack it from inside. */
    uint64_t old_tenure = r->last_tenure, old_seq = r->last_seq, old_delivered = c->delivered_seq;
    r->last_tenure = d.hdr.epoch;
    r->last_seq = d.hdr.seq;
    c->delivered_seq = d.hdr.seq;
    rc = r->opts.cbs.on_record ? r->opts.cbs.on_record(r->opts.cbs.ctx, c->node, p, len, &d) : 0;
    if (r->freeing)
        return;
    if (rc != 0) {
        r->last_tenure = old_tenure;
        r->last_seq = old_seq;
        c->delivered_seq = old_delivered;
        slot__repl_end(c, SLOT_REPL_R_STORAGE, true, false, "record %llu not taken (%d)", (unsigned long long)d.hdr.seq,
                       rc);
        return;
    }
    if (c->state == SLOT__REPL_READY)
        report_commit(r, d.hdr.commit_seq);
}

static void on_heartbeat(slot__repl_conn *c, const uint8_t *p, size_t len)
{
    slot_repl *r = c->r;
    if (len != 32) {
        slot__repl_end(c, SLOT_REPL_R_PROTOCOL, true, false, "a HEARTBEAT of %zu bytes", len);
        return;
    }
    uint64_t tenure = slot__repl_get_u64(p);
    if (tenure != c->peer.tenure) {
        slot__repl_end(c, SLOT_REPL_R_PROTOCOL, true, false, "heartbeat tenure %llu, the hello said %llu",
                       (unsigned long long)tenure, (unsigned long long)c->peer.tenure);
        return;
    }
    if (!slot__repl_sender_ok(c))
        return;
    report_commit(r, slot__repl_get_u64(p + 16));
    if (c->state == SLOT__REPL_READY && uv_stream_get_write_queue_size((uv_stream_t *)&c->tcp) == 0) {
        uint8_t a[8];
        slot__repl_put_u64(a, c->acked_seq);
        int rc = slot__repl_write(c, SLOT_REPL_F_ACK, a, sizeof(a));
        if (rc < 0)
            slot__repl_end(c, SLOT_REPL_R_CLOSED, false, false, "ack: %s", uv_strerror(rc));
    }
}

int slot_repl_ack(slot_repl *r, uint64_t seq)
{
    slot__repl_conn *c = r->stream;
    if (!c || c->state != SLOT__REPL_READY)
        return -ENOTCONN;
    if (seq > c->delivered_seq || seq <= c->acked_seq || seq <= c->ack_floor)
        return -EINVAL;
    c->acked_seq = seq;
    SLOT_ASSERT(c->ack_floor < c->acked_seq && c->acked_seq <= c->delivered_seq);
    uint8_t a[8];
    slot__repl_put_u64(a, seq);
    int rc = slot__repl_write(c, SLOT_REPL_F_ACK, a, sizeof(a));
    if (rc < 0) {
        slot__repl_end(c, SLOT_REPL_R_CLOSED, false, false, "ack: %s", uv_strerror(rc));
        return rc;
    }
    return 0;
}

/* ---- the primary's side */

static void on_ack(slot__repl_conn *c, const uint8_t *p, size_t len)
{
    slot_repl *r = c->r;
    if (len != 8) {
        slot__repl_end(c, SLOT_REPL_R_PROTOCOL, true, false, "an ACK of %zu bytes", len);
        return;
    }
    uint64_t seq = slot__repl_get_u64(p);
    if (seq <= c->last_acked_seq)
        return; /* the answer to a heartbeat: alive, nothing new */
    if (seq > c->last_sent_seq) {
        slot__repl_end(c, SLOT_REPL_R_PROTOCOL, true, false, "ack of %llu, the last record sent is %llu",
                       (unsigned long long)seq, (unsigned long long)c->last_sent_seq);
        return;
    }
    uint32_t cap = r->opts.inflight_records_max;
    /* the window: last_acked_seq < seq <= last_sent_seq, the ring holds what is sent and not acked */
    SLOT_ASSERT(c->last_acked_seq < seq && seq <= c->last_sent_seq && c->ring_count <= cap);
    while (c->ring_count > 0 && c->ring[c->ring_head].seq <= seq) {
        SLOT_ASSERT(c->inflight_bytes >= c->ring[c->ring_head].bytes);
        c->inflight_bytes -= c->ring[c->ring_head].bytes;
        c->ring_head = (c->ring_head + 1) % cap;
        c->ring_count--;
    }
    SLOT_ASSERT(c->ring_count > 0 || c->inflight_bytes == 0);
    SLOT_ASSERT(c->ring_count == 0 || c->ring[c->ring_head].seq > seq);
    c->last_acked_seq = seq;
    if (r->opts.cbs.on_ack)
        r->opts.cbs.on_ack(r->opts.cbs.ctx, c->node, seq);
}

static bool window_has_room(const slot__repl_conn *c, size_t bytes)
{
    const slot_repl_opts *o = &c->r->opts;
    return c->ring_count < o->inflight_records_max &&
           (c->ring_count == 0 || c->inflight_bytes + bytes <= o->inflight_bytes_max);
}

static bool is_target(const slot__repl_conn *c, const char *node_id)
{
    return !c->inbound && c->state == SLOT__REPL_READY && (!node_id || strcmp(c->node, node_id) == 0);
}

/* slot_repl_send and slot_repl_send_to: node_id NULL for every ready replica. */
static int send_record(slot_repl *r, const char *node_id, const uint8_t *rec, size_t rec_bytes)
{
    size_t want = 0;
    if (!rec || slot_wset_peek(rec, rec_bytes, &want) != 0 || want != rec_bytes)
        return rec_bytes > r->opts.record_bytes_max ? -EMSGSIZE : -EINVAL;
    if (rec_bytes > r->opts.record_bytes_max)
        return -EMSGSIZE;
    uint64_t seq = slot__repl_get_u64(rec + 24);
    int n = 0;
    for (slot__repl_conn *c = r->conns; c; c = c->next) {
        if (!is_target(c, node_id))
            continue;
        if (seq <= c->last_sent_seq)
            return -EINVAL;
        if (!window_has_room(c, rec_bytes))
            return -EAGAIN;
        n++;
    }
    if (n == 0)
        return node_id ? -ENOTCONN : 0;
    SLOT_ASSERT(rec_bytes >= SLOT_REPL_RECORD_BYTES_MIN && rec_bytes + 1 <= SLOT_REPL_FRAME_BYTES_MAX);
    slot__repl_buf *b = malloc(sizeof(*b) + SLOT_REPL_FRAME_HEADER_BYTES + rec_bytes);
    if (!b)
        return -ENOMEM;
    b->refs = 1; /* ours, until every write took its own */
    b->len = SLOT_REPL_FRAME_HEADER_BYTES + rec_bytes;
    slot__repl_put_u32(b->bytes, (uint32_t)(rec_bytes + 1));
    b->bytes[4] = SLOT_REPL_F_RECORD;
    memcpy(b->bytes + SLOT_REPL_FRAME_HEADER_BYTES, rec, rec_bytes);
    uint32_t cap = r->opts.inflight_records_max;
    int sent = 0;
    for (slot__repl_conn *c = r->conns; c; c = c->next) {
        if (!is_target(c, node_id))
            continue;
        int rc = slot__repl_write_buf(c, b);
        if (rc < 0) {
            slot__repl_end(c, SLOT_REPL_R_CLOSED, false, false, "write: %s", uv_strerror(rc));
            continue;
        }
        SLOT_ASSERT(c->ring_count < cap && seq > c->last_sent_seq); /* window_has_room and the check above */
        c->ring[(c->ring_head + c->ring_count) % cap] = (slot__repl_sent){seq, rec_bytes};
        c->ring_count++;
        c->inflight_bytes += rec_bytes;
        c->last_sent_seq = seq;
        sent++;
    }
    slot__repl_buf_unref(b);
    return sent;
}

int slot_repl_send(slot_repl *r, const uint8_t *rec, size_t rec_bytes)
{
    return send_record(r, NULL, rec, rec_bytes);
}

int slot_repl_send_to(slot_repl *r, const char *node_id, const uint8_t *rec, size_t rec_bytes)
{
    if (!node_id)
        return -EINVAL;
    return send_record(r, node_id, rec, rec_bytes);
}

void slot__repl_heartbeat(slot_repl *r)
{
    uint8_t p[32];
    slot__repl_put_u64(p, r->tenure);
    slot__repl_put_u64(p + 8, r->epoch);
    slot__repl_put_u64(p + 16, r->commit_seq);
    slot__repl_put_u64(p + 24, wall_ms());
    for (slot__repl_conn *c = r->conns; c; c = c->next) {
        /* A queue that has not drained means the peer is not reading; the
         * records queued carry the commit point, and nothing piles up. */
        if (c->inbound || c->state != SLOT__REPL_READY || uv_stream_get_write_queue_size((uv_stream_t *)&c->tcp) != 0)
            continue;
        int rc = slot__repl_write(c, SLOT_REPL_F_HEARTBEAT, p, sizeof(p));
        if (rc < 0)
            slot__repl_end(c, SLOT_REPL_R_CLOSED, false, false, "heartbeat: %s", uv_strerror(rc));
    }
}

void slot__repl_recheck(slot_repl *r)
{
    if (r->stream)
        slot__repl_sender_ok(r->stream);
}

/* ---- dispatch */

static void on_refuse(slot__repl_conn *c, const uint8_t *p, size_t len)
{
    int reason = len ? p[0] : 0;
    if (strcmp(slot_repl_reason_name(reason), "unknown") == 0)
        reason = SLOT_REPL_R_PROTOCOL;
    size_t n = len > 1 ? len - 1 : 0;
    if (n > SLOT_REPL_TEXT_BYTES_MAX)
        n = SLOT_REPL_TEXT_BYTES_MAX;
    char text[SLOT_REPL_TEXT_BYTES_MAX + 1];
    SLOT_ASSERT(n <= SLOT_REPL_TEXT_BYTES_MAX);
    for (size_t i = 0; i < n; i++) /* the peer's text, made printable */
        text[i] = (p[1 + i] >= 0x20 && p[1 + i] < 0x7f) ? (char)p[1 + i] : '?';
    text[n] = 0;
    slot__repl_end(c, (slot_repl_reason)reason, false, true, "%s", text);
}

void slot__repl_frame(slot__repl_conn *c, uint8_t type, const uint8_t *p, size_t len)
{
    if (type == SLOT_REPL_F_REFUSE) {
        on_refuse(c, p, len);
        return;
    }
    if (c == c->r->stream)
        c->r->last_heard_ms = c->last_heard_ms; /* the silence detector: any frame of the stream */
    slot__repl_state s = c->state;
    SLOT_ASSERT(len <= slot__repl_body_max(c)); /* the reader refuses a longer body before it is buffered */
    if (s == SLOT__REPL_ACCEPTED && type == SLOT_REPL_F_HELLO)
        on_hello(c, p, len);
    else if (s == SLOT__REPL_CHALLENGED && type == SLOT_REPL_F_AUTH)
        on_primary_auth(c, p, len);
    else if (s == SLOT__REPL_HELLO_SENT && type == SLOT_REPL_F_CHALLENGE)
        on_challenge(c, p, len);
    else if (s == SLOT__REPL_AUTH_SENT && type == SLOT_REPL_F_AUTH)
        on_replica_auth(c, p, len);
    else if (s == SLOT__REPL_READY && c->inbound && type == SLOT_REPL_F_RECORD)
        on_record(c, p, len);
    else if (s == SLOT__REPL_READY && c->inbound && type == SLOT_REPL_F_SNAP && c->r->opts.cbs.on_snap)
        slot__repl_on_snap(c, p, len);
    else if (s == SLOT__REPL_READY && c->inbound && type == SLOT_REPL_F_HEARTBEAT)
        on_heartbeat(c, p, len);
    else if (s == SLOT__REPL_READY && !c->inbound && type == SLOT_REPL_F_ACK)
        on_ack(c, p, len);
    else
        slot__repl_end(c, SLOT_REPL_R_PROTOCOL, true, false, "frame type %u in state %s", type,
                       s == SLOT__REPL_READY ? "ready" : "handshake");
}
