/*
 * cluster_role.c — the node's role and the configuration: the roles'
 * transition table (the one place c->role changes), the configuration's
 * CAS and its outcome, bootstrap, take-over, following, and what a
 * configuration read from etcd means for this node (docs/design.md,
 * "Replica sets", "Failover"). cluster_int.h has the map.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "cluster_int.h"
#include "slot/assert.h"

bool slot__clu_role_ok(clu_role from, clu_role to)
{
    switch (from) {
    case CLU_INIT:    /* the first configuration read: follow it, or found one (bootstrap) */
    case CLU_JOINING: /* added by the primary, or a bootstrap after a lost one */
    case CLU_REPLICA: /* removed, took over, or was handed the primary (a switchover) */
        return to == CLU_JOINING || to == CLU_REPLICA || to == CLU_PROMOTING;
    case CLU_PROMOTING: /* the tenure record acked; or stepped down (a newer configuration, the job failed) */
        return to == CLU_PRIMARY || to == CLU_REPLICA;
    case CLU_PRIMARY: /* stepping down always goes through replica (slot__clu_step_down) */
        return to == CLU_REPLICA;
    }
    return false;
}

void slot__clu_set_role(clu *c, clu_role to)
{
    if (!slot__clu_role_ok(c->role, to)) {
        fprintf(stderr, "slotd: replica-set role %s -> %s\n", slot__clu_role_name(c->role), slot__clu_role_name(to));
        SLOT_ASSERT(slot__clu_role_ok(c->role, to));
    }
    /* a primary's role is always backed by a configuration naming it */
    SLOT_ASSERT(to != CLU_PROMOTING || (c->cfg.found && strcmp(c->cfg.primary, c->self) == 0));
    SLOT_ASSERT(to != CLU_PRIMARY || (c->tenure != 0 && c->pending_seq == 0));
    c->role = to;
}

static void on_cas(slot_etcd *e, int status, const slot_etcd_cas_result *r, void *data);

/* The CAS in flight: the configuration it asks for and why (its log lines
 * name the reason, from the send to the outcome). */
typedef struct clu_cas_want {
    clu *c; /* the node that sent it: one per process */
    clu_config cfg;
    char what[SLOT_CLUSTER_CAS_WHY_BYTES]; /* "add caught-up nodes" */
    int64_t base_rev;                      /* the revision it compares */
} clu_cas_want;

/* A primary's CAS that adds members goes in doubt at its send (clu.doubt). */
static void doubt_add(clu *c, const clu_config *next, int64_t base_rev)
{
    if (c->role != CLU_PRIMARY && c->role != CLU_PROMOTING)
        return;
    if (!c->doubt || c->doubt_rev != base_rev) {
        c->doubt = true;
        c->doubt_rev = base_rev;
        c->doubt_cfg.nmembers = 0;
    }
    for (size_t i = 0; i < next->nmembers; i++) {
        if (slot__clu_is_member(&c->cfg, next->members[i]) || slot__clu_is_member(&c->doubt_cfg, next->members[i]))
            continue;
        SLOT_ASSERT(c->doubt_cfg.nmembers < SLOT_CLUSTER_MEMBERS_MAX);
        memcpy(c->doubt_cfg.members[c->doubt_cfg.nmembers++], next->members[i], SLOT_CLUSTER_NAME_BYTES);
    }
    if (c->doubt_cfg.nmembers == 0)
        c->doubt = false; /* it adds nobody: nothing to wait for */
}

void slot__clu_cas(clu *c, const clu_config *next, const char *what)
{
    static clu_cas_want want; /* one CAS at a time (cas_busy) */
    char v[4608];             /* 2 x 16 names of 64 bytes, quoted, and the numbers */
    size_t n = slot__clu_config_json(next, v, sizeof(v));
    if (!n || c->cas_busy)
        return;
    /* what cluster_cfg.c would parse back: 1 <= tenure <= epoch, 1..16 members; and a newer epoch */
    SLOT_ASSERT(next->tenure >= 1 && next->tenure <= next->epoch && next->primary[0]);
    SLOT_ASSERT(next->nmembers <= SLOT_CLUSTER_MEMBERS_MAX && next->nremoved <= SLOT_CLUSTER_MEMBERS_MAX);
    SLOT_ASSERT(!c->cfg.found || next->epoch > c->cfg.epoch);
    want.c = c;
    want.cfg = *next;
    snprintf(want.what, sizeof(want.what), "%s", what);
    want.base_rev = c->cfg.found ? c->cfg.mod_rev : 0;
    int rc = slot_etcd_cas(c->etcd, c->key_config, want.base_rev, v, n, 0, on_cas, &want);
    if (rc != 0) { /* not sent: an outcome too */
        SLOT__CLU_LOG(c, SLOT__LOG_WARN, "CAS configuration lost: not sent", SLOT__LF_S("what", what),
                      SLOT__LF_S("error", slot_strerror(rc)));
        return;
    }
    c->cas_busy = true;
    doubt_add(c, next, want.base_rev);
    SLOT__CLU_LOG(c, SLOT__LOG_INFO, "CAS configuration sent", SLOT__LF_S("what", what),
                  SLOT__LF_U("cas_epoch", next->epoch), SLOT__LF_U("cas_tenure", next->tenure),
                  SLOT__LF_S("cas_primary", next->primary), SLOT__LF_U("members", next->nmembers));
}

static void on_cas(slot_etcd *e, int status, const slot_etcd_cas_result *r, void *data)
{
    (void)e;
    const clu_cas_want *w = data;
    clu *c = w->c;
    const clu_config *want = &w->cfg;
    SLOT_ASSERT(c == w->c && want->epoch >= 1);
    c->cas_busy = false;
    bool won = status == 0 && r->succeeded;
    /* every CAS's outcome is logged, a stopping node's too */
    if (won)
        SLOT__CLU_LOG(c, SLOT__LOG_INFO, "CAS configuration won", SLOT__LF_S("what", w->what),
                      SLOT__LF_U("cas_epoch", want->epoch));
    else if (status != 0)
        SLOT__CLU_LOG(c, SLOT__LOG_WARN, "CAS configuration lost", SLOT__LF_S("what", w->what),
                      SLOT__LF_U("cas_epoch", want->epoch), SLOT__LF_S("error", slot_strerror(status)));
    else
        SLOT__CLU_LOG(c, SLOT__LOG_WARN, "CAS configuration lost: the configuration changed",
                      SLOT__LF_S("what", w->what), SLOT__LF_U("cas_epoch", want->epoch));
    if (status == 0 && c->doubt && c->doubt_rev == w->base_rev)
        c->doubt = false; /* a definite answer on that revision: the key has moved past it */
    if (c->stopping)
        return;
    clu_config got = {0};
    if (won) {
        got = *want;
        got.found = true;
        got.mod_rev = r->revision;
    } else if (status == 0 && r->found) {
        got.mod_rev = r->current.mod_revision;
        if (slot__clu_config_parse(r->current.value, r->current.value_len, &got) != 0)
            got.found = false;
    }
    bool was_campaign = c->campaigning, was_drop = c->cas_drop;
    c->cas_drop = false;
    c->campaigning = false;
    c->chg_cas = false;
    if (got.found) {
        if (won && strcmp(got.primary, c->self) == 0 && got.tenure != c->tenure && c->role != CLU_PRIMARY &&
            c->role != CLU_PROMOTING) {
            c->cfg = got;
            slot__clu_promote(c);
            slot__clu_change_step(c);
            return;
        }
        slot__clu_config_seen(c, &got);
    } else if (was_campaign) {
        slot__clu_follow(c);
    }
    if (c->role == CLU_PRIMARY || c->role == CLU_PROMOTING) {
        slot__clu_commit_check(c); /* a drop that won commits the pending record */
        if (was_drop && !won)
            slot__clu_unavailable(c); /* one that lost: the outcome is unknown */
    }
    slot__clu_change_step(c);
}

void slot__clu_bootstrap(clu *c)
{
    clu_config next = {.found = true, .epoch = 1, .tenure = 1, .nmembers = 1};
    snprintf(next.primary, sizeof(next.primary), "%s", c->self);
    snprintf(next.members[0], sizeof(next.members[0]), "%s", c->self);
    c->cfg.found = false;
    c->campaigning = true;
    slot__clu_cas(c, &next, "bootstrap");
}

/* Take over: {epoch+1, tenure=epoch+1, primary self, same members}. */
void slot__clu_take_over(clu *c)
{
    SLOT_ASSERT(c->role != CLU_PRIMARY && c->role != CLU_PROMOTING && c->cfg.found);
    clu_config next = c->cfg;
    next.epoch = c->cfg.epoch + 1;
    next.tenure = next.epoch;
    snprintf(next.primary, sizeof(next.primary), "%s", c->self);
    c->campaigning = true;
    slot__clu_cas(c, &next, "take over");
}

void slot__clu_follow(clu *c)
{
    bool was_primary = c->role == CLU_PRIMARY || c->role == CLU_PROMOTING;
    if (was_primary)
        slot__clu_step_down(c);
    SLOT_ASSERT(!c->batch_held && c->pending_seq == 0); /* a follower holds no batch */
    c->doubt = false;                                   /* only a primary commits */
    clu_role next = slot__clu_is_member(&c->cfg, c->self) ? CLU_REPLICA : CLU_JOINING;
    bool changed = next != c->role;
    slot__clu_set_role(c, next);
    slot_repl_set_config(c->repl, c->cfg.epoch, c->cfg.tenure, c->cfg.primary);
    if (changed)
        slot__clu_node_put(c);
}

void slot__clu_config_seen(clu *c, const clu_config *cfg)
{
    if (!cfg->found)
        return;
    if (c->doubt && cfg->mod_rev > c->doubt_rev)
        c->doubt = false; /* the key moved past the revision the CASes in doubt compared */
    if (c->cfg.found && cfg->epoch < c->cfg.epoch)
        return; /* an older answer than what we know */
    SLOT_ASSERT(cfg->tenure >= 1 && cfg->tenure <= cfg->epoch && cfg->nmembers <= SLOT_CLUSTER_MEMBERS_MAX);
    bool primary = c->role == CLU_PRIMARY || c->role == CLU_PROMOTING;
    uint64_t epoch0 = c->cfg.found ? c->cfg.epoch : 0;
    c->cfg = *cfg;
    SLOT_ASSERT(c->cfg.epoch >= epoch0); /* the epoch this node knows never goes back here */
    if (primary) {
        if (strcmp(cfg->primary, c->self) != 0 || cfg->tenure != c->tenure) {
            SLOT__CLU_LOG(c, SLOT__LOG_WARN, "the configuration names another primary: stepping down",
                          SLOT__LF_S("primary", cfg->primary), SLOT__LF_U("cfg_tenure", cfg->tenure),
                          SLOT__LF_U("tenure", c->tenure));
            slot__clu_follow(c);
            return;
        }
        for (size_t i = 0; i < c->nnodes; i++) /* members are waited for; others only once caught up */
            c->nodes[i].counted = slot__clu_is_member(cfg, c->nodes[i].id) || c->nodes[i].counted;
        for (size_t i = 0; i < c->nnodes; i++)
            if (!slot__clu_is_member(cfg, c->nodes[i].id) && c->nodes[i].counted && !c->nodes[i].ready)
                c->nodes[i].counted = false;
        for (size_t i = 0; i < c->nnodes; i++) { /* removed on purpose: neither waited for nor fed */
            clu_node *n = &c->nodes[i];
            if (!slot__clu_is_removed(cfg, n->id))
                continue;
            n->counted = false;
            if (n->ready || n->dialing)
                slot_repl_disconnect(c->repl, n->id);
        }
        slot_repl_set_config(c->repl, cfg->epoch, cfg->tenure, c->self);
        slot__clu_commit_check(c); /* a member removed may be the last one a record waited for */
        return;
    }
    if (c->campaigning)
        return; /* the CAS's answer decides */
    if (strcmp(cfg->primary, c->self) == 0) {
        uint64_t last_t = 0;
        slot__clu_log_last(c, &last_t, NULL);
        if (slot__clu_is_member(cfg, c->self) && cfg->tenure > last_t && cfg->tenure > c->tenure) {
            /* A planned switchover named us in a tenure nobody made a record of
             * (cluster_change.c): the old primary drained, we hold every
             * acknowledged record; take office in that tenure. */
            SLOT__CLU_LOG(c, SLOT__LOG_INFO, "the configuration hands the primary over to us",
                          SLOT__LF_U("cfg_tenure", cfg->tenure));
            slot__clu_promote(c);
            return;
        }
        /* We were primary before a restart (or a pause): take over in a new tenure. */
        if (slot__clu_is_member(cfg, c->self)) {
            slot_repl_set_config(c->repl, cfg->epoch, cfg->tenure, "");
            slot__clu_take_over(c);
            return;
        }
    }
    slot__clu_follow(c);
}
