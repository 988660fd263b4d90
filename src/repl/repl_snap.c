/*
 * repl_snap.c — the SNAP frames of the replication channel (slot/repl.h):
 * the primary sends a joiner the snapshot of a committed state in chunks,
 * under back-pressure from its write queue; the replica checks each chunk's
 * place and hands it to its owner, and once the owner installed the state,
 * acks its seq so that records follow from there (docs/design.md, "Joining
 * by snapshot").
 */
#include "repl_int.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define SNAP_HEADER_BYTES 32 /* wire format: a SNAP frame starts with seq, tenure, offset, total (u64 each) */

int slot_repl_send_snap(slot_repl *r, const char *node_id, uint64_t seq, uint64_t tenure, uint64_t offset,
                        uint64_t total, const uint8_t *data, size_t n)
{
    if (!node_id || seq == 0 || n > SLOT_REPL_SNAP_CHUNK_BYTES || total > SLOT_REPL_SNAP_BYTES_MAX || offset > total ||
        n > total - offset || (n && !data))
        return -EINVAL;
    slot__repl_conn *c = r->conns;
    while (c && (c->inbound || c->state != SLOT__REPL_READY || strcmp(c->node, node_id) != 0))
        c = c->next;
    if (!c)
        return -ENOTCONN;
    if (seq < c->last_sent_seq)
        return -EINVAL;
    if (uv_stream_get_write_queue_size((uv_stream_t *)&c->tcp) >= SLOT_REPL_SNAP_QUEUE_BYTES)
        return -EAGAIN;
    uint8_t *p = malloc(SNAP_HEADER_BYTES + n);
    if (!p)
        return -ENOMEM;
    slot__repl_put_u64(p, seq);
    slot__repl_put_u64(p + 8, tenure);
    slot__repl_put_u64(p + 16, offset);
    slot__repl_put_u64(p + 24, total);
    if (n)
        memcpy(p + SNAP_HEADER_BYTES, data, n);
    int rc = slot__repl_write(c, SLOT_REPL_F_SNAP, p, SNAP_HEADER_BYTES + n);
    free(p);
    if (rc < 0) {
        slot__repl_end(c, SLOT_REPL_R_CLOSED, false, false, "snapshot: %s", uv_strerror(rc));
        return rc;
    }
    if (offset + n == total)
        c->last_sent_seq = seq; /* its ACK of seq is expected now */
    return 0;
}

void slot__repl_on_snap(slot__repl_conn *c, const uint8_t *p, size_t len)
{
    slot_repl *r = c->r;
    if (!slot__repl_sender_ok(c))
        return;
    if (len < SNAP_HEADER_BYTES || len - SNAP_HEADER_BYTES > SLOT_REPL_SNAP_CHUNK_BYTES) {
        slot__repl_end(c, SLOT_REPL_R_PROTOCOL, true, false, "a SNAP of %zu bytes", len);
        return;
    }
    uint64_t seq = slot__repl_get_u64(p), tenure = slot__repl_get_u64(p + 8);
    uint64_t offset = slot__repl_get_u64(p + 16), total = slot__repl_get_u64(p + 24);
    size_t n = len - SNAP_HEADER_BYTES;
    if (seq == 0 || tenure > c->peer.tenure || total > SLOT_REPL_SNAP_BYTES_MAX || offset > total ||
        n > total - offset) {
        slot__repl_end(c, SLOT_REPL_R_PROTOCOL, true, false,
                       "SNAP of seq %llu tenure %llu, bytes %llu..+%zu of %llu (the sender's tenure %llu)",
                       (unsigned long long)seq, (unsigned long long)tenure, (unsigned long long)offset, n,
                       (unsigned long long)total, (unsigned long long)c->peer.tenure);
        return;
    }
    if (offset == 0) { /* a transfer (re)starts */
        c->snap_seq = seq;
        c->snap_tenure = tenure;
        c->snap_total = total;
        c->snap_next = 0;
        c->snap_whole = false;
    }
    if (c->snap_whole || offset != c->snap_next || seq != c->snap_seq || tenure != c->snap_tenure ||
        total != c->snap_total) {
        slot__repl_end(c, SLOT_REPL_R_GAP, true, false, "SNAP bytes at %llu, expected %llu of the snapshot of seq %llu",
                       (unsigned long long)offset, (unsigned long long)c->snap_next, (unsigned long long)c->snap_seq);
        return;
    }
    int rc = r->opts.cbs.on_snap(r->opts.cbs.ctx, c->node, seq, tenure, offset, total, p + SNAP_HEADER_BYTES, n);
    if (r->freeing || c->state != SLOT__REPL_READY)
        return;
    if (rc != 0) {
        slot__repl_end(c, SLOT_REPL_R_STORAGE, true, false, "snapshot bytes at %llu not taken (%d)",
                       (unsigned long long)offset, rc);
        return;
    }
    c->snap_next = offset + n;
    c->snap_whole = c->snap_next == total;
    SLOT_ASSERT(c->snap_next <= c->snap_total && c->snap_total <= SLOT_REPL_SNAP_BYTES_MAX);
}

int slot_repl_snap_done(slot_repl *r, uint64_t tenure, uint64_t seq)
{
    slot__repl_conn *c = r->stream;
    if (!c || c->state != SLOT__REPL_READY)
        return -ENOTCONN;
    if (!c->snap_whole || c->snap_seq != seq || c->snap_tenure != tenure)
        return -EINVAL;
    SLOT_ASSERT(c->inbound && seq >= 1 && c->snap_next == c->snap_total);
    r->last_tenure = tenure;
    r->last_seq = seq;
    c->delivered_seq = seq;
    c->ack_floor = seq;
    c->acked_seq = seq;
    c->snap_whole = false;
    uint8_t a[8];
    slot__repl_put_u64(a, seq);
    int rc = slot__repl_write(c, SLOT_REPL_F_ACK, a, sizeof(a));
    if (rc < 0) {
        slot__repl_end(c, SLOT_REPL_R_CLOSED, false, false, "ack: %s", uv_strerror(rc));
        return rc;
    }
    return 0;
}
