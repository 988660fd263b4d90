/*
 * cluster_cfg.c — the JSON values of the replica set's etcd keys, and the
 * cluster op's answer (docs/protocol.md, "Clients following the primary"; docs/design.md, "Shape").
 */
#include <inttypes.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cluster_int.h"
#include "slot/assert.h"

const char *slot__clu_role_name(clu_role r)
{
    switch (r) {
#define CLU__ROLE_NAME(name, text) \
    case CLU_##name:               \
        return text;
        CLU_ROLE_MAP(CLU__ROLE_NAME)
#undef CLU__ROLE_NAME
    }
    return "joining";
}

/* A name of the wire's alphabet (as the replication channel checks them). */
static bool name_ok(const char *v)
{
    size_t n = strlen(v);
    return n >= 1 && n <= SLOT_CLUSTER_NAME_BYTES_MAX &&
           strspn(v, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._:-") == n;
}

static bool get_u64(json_t *o, const char *k, uint64_t *out)
{
    json_t *v = json_object_get(o, k);
    if (!json_is_integer(v) || json_integer_value(v) < 0)
        return false;
    *out = (uint64_t)json_integer_value(v);
    return true;
}

static bool get_str(json_t *o, const char *k, char *out, size_t cap)
{
    json_t *v = json_object_get(o, k);
    if (!json_is_string(v) || strlen(json_string_value(v)) >= cap)
        return false;
    snprintf(out, cap, "%s", json_string_value(v));
    return true;
}

int slot__clu_config_parse(const uint8_t *v, size_t n, clu_config *out)
{
    json_error_t err;
    json_t *o = json_loadb((const char *)v, n, 0, &err);
    int64_t rev = out->mod_rev;
    memset(out, 0, sizeof(*out));
    out->mod_rev = rev;
    bool ok = json_is_object(o) && get_u64(o, "epoch", &out->epoch) && get_u64(o, "tenure", &out->tenure) &&
              get_str(o, "primary", out->primary, sizeof(out->primary)) && out->epoch >= 1 && out->tenure >= 1 &&
              out->tenure <= out->epoch && name_ok(out->primary);
    json_t *m = ok ? json_object_get(o, "members") : NULL;
    ok = ok && json_is_array(m) && json_array_size(m) >= 1 && json_array_size(m) <= SLOT_CLUSTER_MEMBERS_MAX;
    for (size_t i = 0; ok && i < json_array_size(m); i++) {
        json_t *e = json_array_get(m, i);
        ok = json_is_string(e) && name_ok(json_string_value(e));
        if (ok)
            snprintf(out->members[out->nmembers++], SLOT_CLUSTER_NAME_BYTES, "%s", json_string_value(e));
    }
    json_t *rm = ok ? json_object_get(o, "removed") : NULL; /* optional: nodes removed on purpose */
    ok = ok && (!rm || (json_is_array(rm) && json_array_size(rm) <= SLOT_CLUSTER_MEMBERS_MAX));
    for (size_t i = 0; ok && rm && i < json_array_size(rm); i++) {
        json_t *e = json_array_get(rm, i);
        ok = json_is_string(e) && name_ok(json_string_value(e));
        if (ok)
            snprintf(out->removed[out->nremoved++], SLOT_CLUSTER_NAME_BYTES, "%s", json_string_value(e));
    }
    json_decref(o);
    out->found = ok;
    /* what the rest of the layer relies on in a configuration read */
    SLOT_ASSERT(!ok || (out->nmembers >= 1 && out->nmembers <= SLOT_CLUSTER_MEMBERS_MAX &&
                        out->nremoved <= SLOT_CLUSTER_MEMBERS_MAX && out->tenure >= 1 && out->tenure <= out->epoch));
    return ok ? 0 : -1;
}

size_t slot__clu_config_json(const clu_config *cfg, char *buf, size_t cap)
{
    SLOT_ASSERT(cfg->nmembers <= SLOT_CLUSTER_MEMBERS_MAX && cfg->nremoved <= SLOT_CLUSTER_MEMBERS_MAX);
    size_t n = (size_t)snprintf(buf, cap,
                                "{\"epoch\":%" PRIu64 ",\"tenure\":%" PRIu64 ",\"primary\":\"%s\",\"members\":[",
                                cfg->epoch, cfg->tenure, cfg->primary);
    for (size_t i = 0; i < cfg->nmembers && n < cap; i++)
        n += (size_t)snprintf(buf + n, cap - n, "%s\"%s\"", i ? "," : "", cfg->members[i]);
    if (n < cap)
        n += (size_t)snprintf(buf + n, cap - n, "]");
    for (size_t i = 0; i < cfg->nremoved && n < cap; i++)
        n += (size_t)snprintf(buf + n, cap - n, "%s\"%s\"", i ? "," : ",\"removed\":[", cfg->removed[i]);
    if (n < cap)
        n += (size_t)snprintf(buf + n, cap - n, "%s}", cfg->nremoved ? "]" : "");
    return n < cap ? n : 0;
}

int slot__clu_node_parse(const uint8_t *v, size_t len, clu_node *n)
{
    json_error_t err;
    json_t *o = json_loadb((const char *)v, len, 0, &err);
    bool ok = json_is_object(o) && get_str(o, "addr", n->addr, sizeof(n->addr)) &&
              get_str(o, "repl", n->repl, sizeof(n->repl)) && get_u64(o, "tenure", &n->tenure) &&
              get_u64(o, "seq", &n->seq) && get_str(o, "role", n->role, sizeof(n->role));
    if (ok && !get_u64(o, "applied", &n->applied))
        n->applied = 0;
    if (ok && !get_str(o, "http", n->http, sizeof(n->http)))
        n->http[0] = 0; /* a node without --http (or of an older version) */
    json_decref(o);
    return ok ? 0 : -1;
}

size_t slot__clu_node_json(clu *c, char *buf, size_t cap)
{
    uint64_t t = 0, s = 0;
    slot__clu_log_last(c, &t, &s);
    int n = snprintf(buf, cap,
                     "{\"addr\":\"%s\",\"repl\":\"%s\",\"tenure\":%" PRIu64 ",\"seq\":%" PRIu64 ",\"applied\":%" PRIu64
                     ",\"role\":\"%s\",\"http\":\"%s\"}",
                     c->adv, c->repl_addr, t, s, c->applied, slot__clu_role_name(c->role), c->http_addr);
    return n > 0 && (size_t)n < cap ? (size_t)n : 0;
}

int slot__clu_split_addr(const char *addr, char *host, size_t cap, int *port)
{
    const char *colon = strrchr(addr, ':');
    if (!colon)
        return -1;
    const char *h = addr;
    size_t hl = (size_t)(colon - addr);
    if (hl >= 2 && h[0] == '[' && h[hl - 1] == ']') {
        h++;
        hl -= 2;
    }
    char *end = NULL;
    long p = strtol(colon + 1, &end, 10);
    if (hl == 0 || hl >= cap || !end || *end || p < 1 || p > 65535)
        return -1;
    memcpy(host, h, hl);
    host[hl] = 0;
    *port = (int)p;
    return 0;
}

/* The client address of node id, from its key ("" when unknown). */
static const char *addr_of(clu *c, const char *id)
{
    if (strcmp(id, c->self) == 0)
        return c->adv;
    clu_node *n = slot__clu_node(c, id, false);
    return n && n->live ? n->addr : "";
}

bool slot__clu_is_primary(server *s)
{
    return s->clu->role == CLU_PRIMARY;
}

const char *slot__clu_primary_http(server *s)
{
    clu *c = s->clu;
    if (!c->cfg.found)
        return "";
    if (strcmp(c->cfg.primary, c->self) == 0)
        return c->http_addr;
    clu_node *n = slot__clu_node(c, c->cfg.primary, false);
    return n && n->live ? n->http : "";
}

slot_cluster_view *slot__clu_cluster_view(server *s)
{
    clu *c = s->clu;
    uint64_t now = uv_now(s->loop);
    slot_cluster_view *v = calloc(1, sizeof(*v));
    if (!v)
        return NULL;
    snprintf(v->cluster, sizeof v->cluster, "%s", s->opts.cluster ? s->opts.cluster : "");
    snprintf(v->node, sizeof v->node, "%s", c->self);
    v->role = slot__clu_role_name(c->role);
    v->epoch = c->cfg.epoch;
    snprintf(v->primary, sizeof v->primary, "%s", c->cfg.found ? addr_of(c, c->cfg.primary) : "");
    v->seq = c->applied;
    v->member = true;
    v->snapshots_installed = c->snaps_installed;
    v->snapshots_sent = c->snaps_sent;
    bool primary = c->role == CLU_PRIMARY || c->role == CLU_PROMOTING;
    SLOT_ASSERT(c->cfg.nmembers <= SLOT_CLUSTER_MEMBERS_MAX);
    for (size_t i = 0; i < c->cfg.nmembers; i++) {
        const char *id = c->cfg.members[i];
        slot_cluster_member *e = &v->members[v->nmembers++];
        bool me = strcmp(id, c->self) == 0;
        clu_node *n = slot__clu_node(c, id, false);
        const char *role = me ? slot__clu_role_name(c->role) : strcmp(id, c->cfg.primary) == 0 ? "primary" : "replica";
        /* As the primary sees a member: joining while it is not connected, waits for a
         * snapshot or has not acked up to the commit point (it catches up). */
        if (!me && primary && strcmp(id, c->cfg.primary) != 0 &&
            (!n || !n->ready || n->snap != CLU_SNAP_NONE || n->acked < c->commit_seq))
            role = "joining";
        uint64_t seq = me ? c->applied : n && n->live ? n->applied : 0;
        uint64_t lag = 0;
        if (!me && primary && n) {
            seq = n->acked < c->commit_seq ? n->acked : c->commit_seq;
            slot_repl_peer_info pi[SLOT_CLUSTER_MEMBERS_MAX];
            size_t np = slot_repl_peers(c->repl, pi, SLOT_CLUSTER_MEMBERS_MAX);
            lag = now - n->last_ack_ms; /* since it last acked: its heartbeat answers count (silence_ms) */
            for (size_t k = 0; k < np && k < SLOT_CLUSTER_MEMBERS_MAX; k++)
                if (strcmp(pi[k].node_id, id) == 0 && pi[k].ready)
                    lag = pi[k].silence_ms;
        }
        snprintf(e->node, sizeof e->node, "%s", id);
        snprintf(e->addr, sizeof e->addr, "%s", addr_of(c, id));
        e->role = role;
        e->seq = seq;
        e->lag_ms = lag;
    }
    return v;
}

void slot__clu_metrics_get(server *s, slot__clu_metrics *out)
{
    clu *c = s->clu;
    uint64_t now = uv_now(s->loop);
    out->role = slot__clu_role_name(c->role);
    out->epoch = c->cfg.epoch;
    out->applied = c->applied;
    out->commit_seq = c->commit_seq;
    out->nmembers = 0;
    SLOT_ASSERT(c->cfg.nmembers <= SLOT_CLUSTER_MEMBERS_MAX);
    if (c->role != CLU_PRIMARY && c->role != CLU_PROMOTING)
        return;
    slot_repl_peer_info pi[SLOT_CLUSTER_MEMBERS_MAX];
    size_t np = slot_repl_peers(c->repl, pi, SLOT_CLUSTER_MEMBERS_MAX);
    for (size_t i = 0; i < c->cfg.nmembers && out->nmembers < SLOT_CLUSTER_MEMBERS_MAX; i++) {
        const char *id = c->cfg.members[i];
        clu_node *n = slot__clu_node(c, id, false);
        if (strcmp(id, c->self) == 0 || !n)
            continue;
        slot__clu_member_metrics *m = &out->members[out->nmembers++];
        snprintf(m->node, sizeof m->node, "%s", id);
        m->lag_records = c->commit_seq > n->acked ? c->commit_seq - n->acked : 0;
        m->silence_ms = now - n->last_ack_ms; /* as the cluster op's lag_ms */
        for (size_t k = 0; k < np && k < SLOT_CLUSTER_MEMBERS_MAX; k++)
            if (strcmp(pi[k].node_id, id) == 0 && pi[k].ready)
                m->silence_ms = pi[k].silence_ms;
    }
}
