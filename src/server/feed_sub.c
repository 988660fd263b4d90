/*
 * feed_sub.c — feed consumers on connections (feed_sub.h). A subscription
 * is the loop thread's; what it pushes is read from the store, so pushes
 * carry only committed entries, in seq order, and a push is never lost to
 * a race with the commit thread: whatever was committed before a fill is
 * found by it.
 */
#include "feed_sub.h"

#include <stdlib.h>
#include <string.h>

#include "conn.h"
#include "slot/assert.h"
#include "slot/feed.h"

static void answer(entry *e, slot_err err, const char *msg)
{
    slot_res_error(&e->res, err, "%s", msg);
    e->state = ENTRY_DONE;
}

bool slot__feed_admit(server *s, conn *c, entry *e)
{
    (void)s;
    slot__feed_sub *sub = c->sub;
    slot_op op = e->req.op;
    if (op == SLOT_OP_UNSUBSCRIBE) {
        e->state = ENTRY_DONE; /* answered when it reaches the head */
        return false;
    }
    if (op == SLOT_OP_ACK) {
        if (!sub || sub->consumer_len != e->req.consumer_len ||
            memcmp(sub->consumer, e->req.consumer, sub->consumer_len) != 0) {
            answer(e, SLOT_E_NOT_SUBSCRIBED, "this connection is not subscribed as that consumer");
            return false;
        }
        if (e->req.feed_seq >= sub->next_seq) {
            answer(e, SLOT_E_INVALID_ARGUMENT, "seq: beyond what this subscription delivered");
            return false;
        }
        return true;
    }
    if (sub && op != SLOT_OP_HELLO) {
        answer(e, SLOT_E_INVALID_ARGUMENT, "op: only ack and unsubscribe on a subscribed connection");
        return false;
    }
    return true;
}

static void sub_end(slot__feed_sub *sub)
{
    server *s = sub->c->srv;
    if (sub->prev)
        sub->prev->next = sub->next;
    else
        s->subs = sub->next;
    if (sub->next)
        sub->next->prev = sub->prev;
    sub->c->sub = NULL;
    free(sub);
}

static slot__feed_sub *sub_find(server *s, const char *name, size_t len)
{
    for (slot__feed_sub *sub = s->subs; sub; sub = sub->next)
        if (sub->consumer_len == len && memcmp(sub->consumer, name, len) == 0)
            return sub;
    return NULL;
}

/* A consumer is subscribed on one connection at most: the older one ends, closed. */
static void sub_start(conn *c, entry *e)
{
    server *s = c->srv;
    const slot_req *req = &e->req;
    slot__feed_sub *old = sub_find(s, req->consumer, req->consumer_len);
    if (old && old->c != c) {
        conn *oc = old->c;
        sub_end(old);
        slot__log(SLOT__LOG_WARN, "feed consumer subscribed on another connection: closing the older one",
                  SLOT__LF_S("consumer", req->consumer));
        slot__conn_close(oc);
    }
    if (c->sub)
        sub_end(c->sub);
    slot__feed_sub *sub = calloc(1, sizeof(*sub));
    if (!sub) {
        slot_res_clear(&e->res);
        slot_res_error(&e->res, SLOT_E_INTERNAL, "out of memory");
        return;
    }
    sub->c = c;
    sub->consumer_len = req->consumer_len;
    memcpy(sub->consumer, req->consumer, req->consumer_len + 1u);
    sub->next_seq = e->res.feed_from;
    sub->base = e->res.feed_acked;
    sub->window = req->window ? req->window : SLOT_FEED_WINDOW_DEFAULT;
    sub->next = s->subs;
    if (s->subs)
        s->subs->prev = sub;
    s->subs = sub;
    c->sub = sub;
}

void slot__feed_answered(conn *c, entry *e)
{
    if (!e->parsed)
        return;
    slot_op op = e->req.op;
    if (op == SLOT_OP_UNSUBSCRIBE && e->res.err == SLOT_E_OK) {
        if (!c->sub) {
            slot_res_error(&e->res, SLOT_E_NOT_SUBSCRIBED, "this connection is not subscribed");
            return;
        }
        memcpy(e->res.user, c->sub->consumer, c->sub->consumer_len + 1u); /* the reply names it */
        sub_end(c->sub);
        return;
    }
    if (e->res.err != SLOT_E_OK)
        return;
    if (op == SLOT_OP_SUBSCRIBE) {
        sub_start(c, e);
    } else if (op == SLOT_OP_ACK && c->sub && e->res.feed_acked > c->sub->base) {
        c->sub->base = e->res.feed_acked;
    } else if (op == SLOT_OP_FEED_FORGET) {
        slot__feed_sub *sub = sub_find(c->srv, e->req.consumer, e->req.consumer_len);
        if (sub && sub->c != c) {
            conn *oc = sub->c;
            sub_end(sub);
            slot__conn_close(oc);
        }
    }
}

typedef struct fill_ctx {
    conn *c;
    uint32_t out_max;
    bool oom;
} fill_ctx;

static int fill_one(void *p, const slot_feed_entry *fe)
{
    fill_ctx *f = p;
    conn *c = f->c;
    SLOT_ASSERT(fe->seq == c->sub->next_seq); /* seqs have no gaps */
    for (int attempt = 0; attempt < 2; attempt++) {
        char *dst = c->out ? c->out + c->out_len : NULL;
        size_t room = c->out_cap - c->out_len;
        size_t n = slot_feed_encode(fe, dst, room);
        if (n < room) {
            c->out_len += n;
            c->sub->next_seq++;
            return c->out_len >= f->out_max ? 1 : 0; /* the output limit: the rest waits for the write */
        }
        if (!slot__conn_out_reserve(c, n + 1)) {
            f->oom = true;
            return 1;
        }
    }
    return 1;
}

void slot__feed_fill(conn *c)
{
    slot__feed_sub *sub = c->sub;
    server *s = c->srv;
    if (!sub || c->state != CONN_OPEN || c->out_len >= s->opts.out_bytes_max)
        return;
    uint64_t limit = sub->base + sub->window;
    if (sub->next_seq > limit)
        return; /* the window is full until the next ack */
    pthread_rwlock_rdlock(&s->map_lock);
    int rc = s->feed_rtxn ? mdb_txn_renew(s->feed_rtxn)
                          : mdb_txn_begin(slot_store_env(s->store), NULL, MDB_RDONLY, &s->feed_rtxn);
    fill_ctx f = {c, s->opts.out_bytes_max, false};
    if (rc == 0) {
        rc = slot_feed_scan(s->store, s->feed_rtxn, sub->next_seq, limit - sub->next_seq + 1, fill_one, &f);
        mdb_txn_reset(s->feed_rtxn);
    }
    pthread_rwlock_unlock(&s->map_lock);
    if (rc == 1)
        rc = 0;
    if (f.oom || rc != 0) {
        slot__log(SLOT__LOG_ERROR, "feed push failed: closing the consumer's connection",
                  SLOT__LF_S("consumer", sub->consumer),
                  SLOT__LF_S("error", f.oom ? "out of memory" : mdb_strerror(rc)));
        slot__conn_close(c);
    }
}

void slot__feed_conn_gone(conn *c)
{
    if (c->sub)
        sub_end(c->sub);
}

void slot__feed_pump(server *s)
{
    for (slot__feed_sub *sub = s->subs, *next; sub; sub = next) {
        next = sub->next; /* a flush may close the connection (and end sub) */
        slot__conn_flush(sub->c);
    }
}

size_t slot__feed_end_all(server *s, const char *why)
{
    size_t n = 0;
    while (s->subs) { /* sub_end unlinks the head; a subscription per connection */
        conn *c = s->subs->c;
        sub_end(s->subs);
        slot__conn_close(c);
        n++;
    }
    if (n > 0)
        slot__log(SLOT__LOG_INFO, "closed feed subscriptions", SLOT__LF_S("why", why), SLOT__LF_U("subscriptions", n));
    return n;
}

void slot__feed_free(server *s)
{
    if (s->feed_rtxn)
        mdb_txn_abort(s->feed_rtxn);
    s->feed_rtxn = NULL;
}
