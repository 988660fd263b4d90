/*
 * cluster_change.c — planned changes of a replica set, run by its primary
 * (the cluster_change op, docs/protocol.md, "cluster_change"; docs/design.md,
 * "Planned changes"). Like every other change of the configuration each one
 * is a CAS on the configuration key's revision that raises the epoch:
 *
 *   add NODE      takes NODE off the configuration's "removed" list; NODE,
 *                 running with the set's flags, is then dialled, caught up,
 *                 and added by the same CAS that adds any joiner caught up
 *                 to the commit point. Answered once NODE is a member.
 *   remove NODE   a replica leaves: members without it, "removed" with it,
 *                 so it is neither waited for nor added back. Refused for the
 *                 primary (promote another member first) and when fewer
 *                 than --min-replicas replicas would remain.
 *   promote NODE  a switchover: new batches wait in the queue, the batch in
 *                 flight finishes and is acknowledged by every member; once
 *                 NODE has acked the log's last record, a CAS names NODE
 *                 primary in a new tenure (epoch + 1). This node steps down;
 *                 NODE sees the configuration and takes office in that
 *                 tenure (cluster.c, slot__clu_config_seen), and the queued
 *                 writes are answered not_primary with NODE's address.
 *
 * The op's entry waits (READ_WAIT) until the change ends; the answer is
 * the cluster op's body as this node sees the set then, or an error. One
 * change at a time; each is bounded in time. Loop thread only.
 */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cluster_int.h"
#include "server/loop.h"
#include "slot/assert.h"

bool slot__clu_is_removed(const clu_config *cfg, const char *id)
{
    for (size_t i = 0; i < cfg->nremoved; i++)
        if (strcmp(cfg->removed[i], id) == 0)
            return true;
    return false;
}

bool slot__clu_write_pause(server *s)
{
    clu *c = s->clu;
    return c->switching && c->role == CLU_PRIMARY;
}

/* Ends the running change with err (SLOT_E_OK: done) and fmt's text. */
static void finish(clu *c, slot_err err, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void finish(clu *c, slot_err err, const char *fmt, ...)
{
    SLOT_ASSERT(c->chg != SLOT_CHANGE_NONE && !c->chg_done); /* one change at a time, ended once */
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(c->chg_msg, sizeof(c->chg_msg), fmt, ap);
    va_end(ap);
    bool was_switching = c->switching;
    if (was_switching)
        SLOT__CLU_LOG(c, SLOT__LOG_INFO, "switchover ended", SLOT__LF_S("peer", c->chg_node),
                      SLOT__LF_S("outcome", err == SLOT_E_OK ? "done" : c->chg_msg),
                      SLOT__LF_U("took_ms", uv_now(c->s->loop) - c->switch_since_ms));
    else
        SLOT__CLU_LOG(c, SLOT__LOG_INFO, "cluster_change ended", SLOT__LF_S("change", slot_cluster_change_name(c->chg)),
                      SLOT__LF_S("peer", c->chg_node), SLOT__LF_S("outcome", err == SLOT_E_OK ? "done" : c->chg_msg));
    c->chg_err = err;
    c->chg_done = true;
    c->chg = SLOT_CHANGE_NONE;
    c->switching = false;
    slot__reads_resume(c->s);
    if (was_switching)
        slot__dispatch(c->s); /* the writes that waited: run here, or not_primary after a handover */
}

/* The configuration with `id` removed from list (n entries); whether it was there. */
static bool list_drop(char (*list)[SLOT_CLUSTER_NAME_BYTES], size_t *n, const char *id)
{
    SLOT_ASSERT(*n <= SLOT_CLUSTER_MEMBERS_MAX);
    for (size_t i = 0; i < *n; i++) {
        if (strcmp(list[i], id) != 0)
            continue;
        memmove(list[i], list[i + 1], (*n - i - 1) * SLOT_CLUSTER_NAME_BYTES);
        (*n)--;
        return true;
    }
    return false;
}

static void step_add(clu *c)
{
    SLOT_ASSERT(c->role == CLU_PRIMARY && c->chg == SLOT_CHANGE_ADD);
    if (slot__clu_is_member(&c->cfg, c->chg_node)) {
        finish(c, SLOT_E_OK, "%s is a member", c->chg_node);
        return;
    }
    if (slot__clu_is_removed(&c->cfg, c->chg_node) && !c->cas_busy) {
        clu_config next = c->cfg;
        list_drop(next.removed, &next.nremoved, c->chg_node);
        next.epoch = c->cfg.epoch + 1;
        c->chg_cas = true;
        slot__clu_cas(c, &next, "cluster_change add");
        c->chg_cas = c->cas_busy;
    }
    /* Otherwise slot__clu_primary_tick dials it and adds it once it is caught up. */
}

static void step_remove(clu *c)
{
    SLOT_ASSERT(c->role == CLU_PRIMARY && c->chg == SLOT_CHANGE_REMOVE);
    SLOT_ASSERT(strcmp(c->chg_node, c->self) != 0); /* admit refuses removing the primary itself */
    bool member = slot__clu_is_member(&c->cfg, c->chg_node);
    if (!member && slot__clu_is_removed(&c->cfg, c->chg_node)) {
        finish(c, SLOT_E_OK, "%s is removed", c->chg_node);
        return;
    }
    size_t replicas = c->cfg.nmembers ? c->cfg.nmembers - 1 : 0;
    if (member && replicas - 1 < c->min_replicas) {
        finish(c, SLOT_E_INVALID_ARGUMENT, "removing %s would leave %zu replicas, fewer than --min-replicas %" PRIu32,
               c->chg_node, replicas - 1, c->min_replicas);
        return;
    }
    if (c->cas_busy)
        return;
    clu_config next = c->cfg;
    list_drop(next.members, &next.nmembers, c->chg_node);
    SLOT_ASSERT(next.nmembers + member == c->cfg.nmembers && !slot__clu_is_member(&next, c->chg_node));
    if (!slot__clu_is_removed(&next, c->chg_node)) {
        if (next.nremoved == SLOT_CLUSTER_MEMBERS_MAX)
            list_drop(next.removed, &next.nremoved, next.removed[0]); /* the oldest removal is forgotten */
        snprintf(next.removed[next.nremoved++], SLOT_CLUSTER_NAME_BYTES, "%s", c->chg_node);
    }
    SLOT_ASSERT(next.nremoved <= SLOT_CLUSTER_MEMBERS_MAX && slot__clu_is_removed(&next, c->chg_node));
    next.epoch = c->cfg.epoch + 1;
    c->chg_cas = true;
    slot__clu_cas(c, &next, "cluster_change remove");
    c->chg_cas = c->cas_busy;
}

static void step_promote(clu *c)
{
    server *s = c->s;
    clu_node *n = slot__clu_node(c, c->chg_node, false);
    if (!n || !slot__clu_is_member(&c->cfg, c->chg_node)) {
        finish(c, SLOT_E_INVALID_ARGUMENT, "%s is no longer a member", c->chg_node);
        return;
    }
    /* Drained: no batch running, none waiting for acks, the target has the whole log. */
    if (c->chg_cas || c->cas_busy || s->batch.busy || c->pending_seq || c->job != CLU_JOB_NONE || !n->ready ||
        n->acked < c->applied)
        return;
    /* drained: the target acked all we hold (acked < next_send <= applied + 1) */
    SLOT_ASSERT(n->acked == c->applied && c->commit_seq <= c->applied && strcmp(c->chg_node, c->self) != 0);
    clu_config next = c->cfg;
    next.epoch = c->cfg.epoch + 1;
    next.tenure = next.epoch;
    snprintf(next.primary, sizeof(next.primary), "%s", c->chg_node);
    c->chg_cas = true;
    SLOT__CLU_LOG(c, SLOT__LOG_INFO, "switchover: drained", SLOT__LF_S("peer", c->chg_node),
                  SLOT__LF_U("seq", c->applied), SLOT__LF_U("took_ms", uv_now(s->loop) - c->switch_since_ms));
    slot__clu_cas(c, &next, "cluster_change promote");
    c->chg_cas = c->cas_busy;
}

void slot__clu_change_step(clu *c)
{
    if (c->chg == SLOT_CHANGE_NONE || c->stopping)
        return;
    if (c->chg == SLOT_CHANGE_PROMOTE && strcmp(c->cfg.primary, c->chg_node) == 0 && c->cfg.tenure != c->tenure) {
        finish(c, SLOT_E_OK, "%s is primary", c->chg_node);
        return;
    }
    if (c->role != CLU_PRIMARY) {
        finish(c, SLOT_E_UNAVAILABLE, "this node stopped being primary during the change; see the cluster op");
        return;
    }
    SLOT_ASSERT(c->chg == SLOT_CHANGE_ADD || c->chg == SLOT_CHANGE_REMOVE || c->chg == SLOT_CHANGE_PROMOTE);
    if (c->chg_cas)
        return; /* the CAS's answer moves it on */
    if (uv_now(c->s->loop) >= c->chg_deadline_ms) {
        if (c->chg == SLOT_CHANGE_PROMOTE)
            finish(c, SLOT_E_UNAVAILABLE, "%s did not acknowledge every record in time; the primary is unchanged",
                   c->chg_node);
        else if (c->chg == SLOT_CHANGE_ADD)
            finish(c, SLOT_E_UNAVAILABLE,
                   "%s may join but is not a member yet (is it running? it becomes one once caught up)", c->chg_node);
        else
            finish(c, SLOT_E_UNAVAILABLE, "the configuration could not be changed in time (etcd?); nothing changed");
        return;
    }
    if (c->chg == SLOT_CHANGE_ADD)
        step_add(c);
    else if (c->chg == SLOT_CHANGE_REMOVE)
        step_remove(c);
    else
        step_promote(c);
}

/* The answer of a change that ended: its error, or the cluster op's body. */
static void answer(server *s, entry *e)
{
    clu *c = s->clu;
    if (c->chg_err != SLOT_E_OK) {
        slot_res_error(&e->res, c->chg_err, "%s", c->chg_msg);
        return;
    }
    e->res.cluster_view = slot__clu_cluster_view(s);
    if (!e->res.cluster_view)
        slot_res_error(&e->res, SLOT_E_INTERNAL, "out of memory");
}

/* Checks a new change against the configuration: true when it must run,
 * false when it is answered already (done, or refused). */
static bool admit(server *s, entry *e)
{
    clu *c = s->clu;
    const slot_req *r = &e->req;
    slot_res *res = &e->res;
    bool self = strcmp(r->node, c->self) == 0;
    bool member = slot__clu_is_member(&c->cfg, r->node);
    switch (r->change) {
    case SLOT_CHANGE_ADD:
        if (member || self)
            break; /* nothing to do */
        return true;
    case SLOT_CHANGE_REMOVE:
        if (self) {
            slot_res_error(res, SLOT_E_INVALID_ARGUMENT, "%s is the primary: promote another member first", r->node);
            return false;
        }
        if (!member && slot__clu_is_removed(&c->cfg, r->node))
            break;
        return true;
    case SLOT_CHANGE_PROMOTE: {
        if (self)
            break;
        clu_node *n = slot__clu_node(c, r->node, false);
        if (!member) {
            slot_res_error(res, SLOT_E_INVALID_ARGUMENT, "%s is not a member of the configuration (epoch %" PRIu64 ")",
                           r->node, c->cfg.epoch);
            return false;
        }
        if (!n || !n->ready) {
            slot_res_error(res, SLOT_E_UNAVAILABLE, "%s is not connected to the primary now; retry", r->node);
            return false;
        }
        return true;
    }
    case SLOT_CHANGE_NONE:
        slot_res_error(res, SLOT_E_INVALID_ARGUMENT, "change: \"add\", \"remove\" or \"promote\"");
        return false;
    }
    e->res.cluster_view = slot__clu_cluster_view(s);
    if (!e->res.cluster_view)
        slot_res_error(res, SLOT_E_INTERNAL, "out of memory");
    return false;
}

slot__change_state slot__clu_change(server *s, entry *e)
{
    clu *c = s->clu;
    if (e->change_tag) {
        if (e->change_tag != c->chg_tag) {
            slot_res_error(&e->res, SLOT_E_INTERNAL, "the change's state was lost");
            return SLOT__CHANGE_ANSWERED;
        }
        if (!c->chg_done)
            return SLOT__CHANGE_RUNNING;
        answer(s, e);
        return SLOT__CHANGE_ANSWERED;
    }
    if (c->role != CLU_PRIMARY) {
        slot__clu_write_gate(s, &e->res); /* not_primary with the primary's address, or unavailable */
        return SLOT__CHANGE_ANSWERED;
    }
    if (c->chg != SLOT_CHANGE_NONE) {
        slot_res_error(&e->res, SLOT_E_UNAVAILABLE, "another cluster_change (%s %s) is running; retry",
                       slot_cluster_change_name(c->chg), c->chg_node);
        return SLOT__CHANGE_ANSWERED;
    }
    if (!admit(s, e))
        return SLOT__CHANGE_ANSWERED;
    uint64_t now = uv_now(s->loop);
    c->chg = e->req.change;
    SLOT_ASSERT(c->chg != SLOT_CHANGE_NONE); /* admit refused it */
    snprintf(c->chg_node, sizeof(c->chg_node), "%s", e->req.node);
    c->chg_tag = ++c->chg_tags;
    c->chg_done = false;
    c->chg_err = SLOT_E_OK;
    c->chg_msg[0] = 0;
    c->chg_cas = false;
    e->change_tag = c->chg_tag;
    if (c->chg == SLOT_CHANGE_PROMOTE) {
        uint64_t drain_ms = 2u * c->repl_to_ms > SLOT_CLUSTER_SWITCH_MIN_MS ? 2u * c->repl_to_ms
                                                                            : SLOT_CLUSTER_SWITCH_MIN_MS;
        c->chg_deadline_ms = now + drain_ms;
        c->switching = true;
        c->switch_since_ms = now;
        SLOT__CLU_LOG(c, SLOT__LOG_INFO, "switchover: holding new writes, draining", SLOT__LF_S("peer", c->chg_node),
                      SLOT__LF_U("seq", c->applied));
    } else {
        c->chg_deadline_ms = now + SLOT_CLUSTER_CHANGE_MS;
        SLOT__CLU_LOG(c, SLOT__LOG_INFO, "cluster_change started",
                      SLOT__LF_S("change", slot_cluster_change_name(c->chg)), SLOT__LF_S("peer", c->chg_node));
    }
    slot__clu_change_step(c);
    if (c->chg_done) {
        answer(s, e);
        return SLOT__CHANGE_ANSWERED;
    }
    return SLOT__CHANGE_RUNNING;
}
