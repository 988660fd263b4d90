/*
 * admit.c — the request router (admit.h): where a parsed request goes, for
 * TCP (conn.c) and HTTP (http.c) alike. Above the loop core (loop.c) and the
 * parking (park.c), which it calls; the feed's admission is reached through
 * s->conn_up (feed_sub.c sits above the connections). Loop thread only.
 */
#include "admit.h"

#include "auth.h"
#include "conn.h"
#include "loop.h"
#include "slot/assert.h"

/* Logs what auth.c refused (it logs nothing itself): a failed hello with its
 * peer and why (the token tried is never logged: it may be a real one
 * mistyped), a first request that was not a hello as a dropped client. */
static void auth_refused(conn *c, slot__auth_verdict verdict)
{
    if (verdict == SLOT__AUTH_UNKNOWN_TOKEN || verdict == SLOT__AUTH_NO_TOKEN) {
        char peer[64];
        slot__conn_peer(c, peer, sizeof peer);
        slot__log(SLOT__LOG_WARN, "failed hello (token not shown)", SLOT__LF_S("peer", peer),
                  SLOT__LF_S("reason", verdict == SLOT__AUTH_UNKNOWN_TOKEN ? "unknown_token" : "no_token"));
    } else if (verdict == SLOT__AUTH_NO_HELLO) {
        slot__conn_dropped(c, "unauthenticated", "its first request was not a hello");
    }
}

void slot__admit(server *s, conn *c, entry *e)
{
    SLOT_ASSERT(e->parsed);
    SLOT_ASSERT(e->state == ENTRY_DONE);
    s->stats.requests[e->req.op]++;
    slot__auth_verdict verdict = slot__authorize(s, c, e);
    if (verdict != SLOT__AUTH_OK) {
        auth_refused(c, verdict);
        slot__count_error(s, e->res.err);
        return;
    }
    if (slot_op_internal(e->req.op) && !(s->clu && s->clu_up->place_auth && s->clu_up->place_auth(s, e))) {
        if (e->res.err == SLOT_E_OK) /* no placement here */
            slot_res_error(&e->res, SLOT_E_INVALID_ARGUMENT, "op %s: this server is not a member of a placement (--placement)",
                           slot_op_name(e->req.op));
        slot__count_error(s, e->res.err);
        return;
    }
    bool feed_op = e->req.op == SLOT_OP_SUBSCRIBE || e->req.op == SLOT_OP_ACK || e->req.op == SLOT_OP_UNSUBSCRIBE;
    if (c->http && feed_op) { /* a feed consumer needs a connection that lasts (docs/protocol.md, "HTTP") */
        slot_res_error(&e->res, SLOT_E_INVALID_ARGUMENT, "op %s is not available over HTTP; use the TCP protocol",
                       slot_op_name(e->req.op));
        slot__count_error(s, SLOT_E_INVALID_ARGUMENT);
        return;
    }
    if (!c->http && !s->conn_up.feed_admit(s, c, e)) {
        if (e->res.err != SLOT_E_OK)
            slot__count_error(s, e->res.err);
        return;
    }
    if (!slot_op_writes(e->req.op)) {
        e->state = ENTRY_READ_WAIT;
        return;
    }
    if (s->clu && s->clu_up->place_admit && s->clu_up->place_admit(s, c, e))
        return; /* --placement: it waits at its connection's head for the map (src/cluster/placement.c) */
    if (s->stopping) {
        slot_res_error(&e->res, SLOT_E_SHUTTING_DOWN, NULL);
        slot__count_error(s, SLOT_E_SHUTTING_DOWN);
        return;
    }
    e->owner = (uintptr_t)c;
    if (slot__park_admit(s, c, e))
        return; /* behind this connection's writes that wait for a cold event's keys */
    if (slot__hold_read(s, e))
        return; /* sold out for certain: answered from the read snapshot */
    if (s->queue.len >= s->opts.queue_max) {
        slot_res_error(&e->res, SLOT_E_OVERLOADED, "server queue holds %u requests; retry later", s->queue.len);
        slot__count_error(s, SLOT_E_OVERLOADED);
        return;
    }
    slot__queue_push(s, e);
}
