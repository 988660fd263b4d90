/*
 * cluster_failover.c — a replica's failover (docs/design.md, "Failover",
 * "Partitions"): when the primary has been silent for --failover-timeout-ms,
 * prefer a more complete member, hold back with an empty log, run the
 * pre-vote (dial the other members; back off with jitter when too few
 * answer), then fence the primary and take over by CAS. cluster_int.h has
 * the map. Loop thread.
 */
#include <inttypes.h>
#include <string.h>
#include <sys/random.h>

#include "cluster_int.h"
#include "slot/assert.h"

/* Whether a live member other than us has a more complete log (tenure, seq, id). */
static bool better_member(clu *c)
{
    uint64_t t = 0, s = 0;
    slot__clu_log_last(c, &t, &s);
    for (size_t i = 0; i < c->nnodes; i++) {
        clu_node *n = &c->nodes[i];
        if (!n->live || !slot__clu_is_member(&c->cfg, n->id) || strcmp(n->id, c->cfg.primary) == 0)
            continue;
        if (n->tenure > t || (n->tenure == t && n->seq > s) ||
            (n->tenure == t && n->seq == s && strcmp(n->id, c->self) > 0))
            return true;
    }
    return false;
}

/* Ends the pre-vote's round: its dials still out are closed. */
static void probe_end(clu *c)
{
    SLOT_ASSERT(c->probe_since_ms != 0); /* a round is out */
    c->probe_since_ms = 0;
    for (size_t i = 0; i < c->nnodes; i++) {
        clu_node *n = &c->nodes[i];
        if (n->dialing || n->ready)
            slot_repl_disconnect(c->repl, n->id);
        n->dialing = n->ready = false;
    }
}

/* A live node outside the configuration that a new primary would dial, catch
 * up and add back (the same test as the primary's dial loop). */
static bool addable(const clu *c, const clu_node *n)
{
    return n->live && n->repl[0] && strcmp(n->id, c->self) != 0 && !slot__clu_is_member(&c->cfg, n->id) &&
           strcmp(n->role, "primary") != 0 && !slot__clu_is_removed(&c->cfg, n->id);
}

static uint64_t jitter(uint64_t max)
{
    uint64_t r = 0;
    if (max == 0 || getrandom(&r, sizeof(r), GRND_NONBLOCK) != (ssize_t)sizeof(r))
        return max / 2;
    return r % (max + 1);
}

/*
 * The pre-vote (docs/design.md, "Partitions"; Raft's pre-vote): before a
 * takeover CAS, dial every other member of the configuration; a member that
 * answers the handshake (a refusal counts: it is there and holds the secret's
 * protocol) is reachable. A new primary needs the acks of every member, or of
 * --min-replicas of them after dropping the rest, so it takes over only when
 * at least min(--min-replicas, other members) answered within a failover
 * timeout. Otherwise it waits (one timeout, doubling up to
 * SLOT_CLUSTER_PROBE_BACKOFF_MAX, plus jitter) and tries again: a member that
 * could never be acknowledged does not make epochs. From the second round on,
 * live nodes outside the configuration that a primary would add back count
 * too (docs/design.md, "Partitions": a staggered cut leaves two members that
 * cannot reach each other). True: take over now. Loop thread.
 */
static bool prevote(clu *c, uint64_t now)
{
    size_t others = 0;
    for (size_t i = 0; i < c->cfg.nmembers; i++)
        others += strcmp(c->cfg.members[i], c->self) != 0;
    size_t need = others < c->min_replicas ? others : c->min_replicas;
    SLOT_ASSERT(need <= others && others < SLOT_CLUSTER_MEMBERS_MAX);
    if (need == 0)
        return true;
    if (c->probe_since_ms == 0) {
        if (now < c->probe_next_ms)
            return false;
        c->probe_since_ms = now;
        for (size_t i = 0; i < c->cfg.nmembers; i++) {
            if (strcmp(c->cfg.members[i], c->self) == 0)
                continue;
            clu_node *n = slot__clu_node(c, c->cfg.members[i], true);
            char host[64];
            int port = 0;
            if (!n || !n->repl[0] || slot__clu_split_addr(n->repl, host, sizeof(host), &port) != 0)
                continue;
            n->dialing = slot_repl_connect(c->repl, n->id, host, port) == 0;
        }
        for (size_t i = 0; c->probe_misses > 0 && i < c->nnodes; i++) {
            clu_node *n = &c->nodes[i];
            char host[64];
            int port = 0;
            if (!addable(c, n) || slot__clu_split_addr(n->repl, host, sizeof(host), &port) != 0)
                continue;
            n->dialing = slot_repl_connect(c->repl, n->id, host, port) == 0;
        }
        return false;
    }
    size_t reached = 0, spare = 0;
    for (size_t i = 0; i < c->cfg.nmembers; i++) {
        clu_node *n = strcmp(c->cfg.members[i], c->self) == 0 ? NULL : slot__clu_node(c, c->cfg.members[i], false);
        reached += n && n->reach_ms >= c->probe_since_ms;
    }
    for (size_t i = 0; c->probe_misses > 0 && i < c->nnodes; i++)
        spare += addable(c, &c->nodes[i]) && c->nodes[i].reach_ms >= c->probe_since_ms;
    SLOT_ASSERT(reached <= others && spare <= c->nnodes);
    if (reached + spare >= need) {
        if (reached < need)
            SLOT__CLU_LOG(c, SLOT__LOG_WARN, "too few members answered, but nodes to add back did: taking over",
                          SLOT__LF_U("reached", reached), SLOT__LF_U("spare", spare), SLOT__LF_U("need", need));
        probe_end(c);
        c->probe_misses = 0;
        return true;
    }
    if (now - c->probe_since_ms < c->failover_ms)
        return false;
    probe_end(c);
    c->probes_failed++;
    if (c->probe_misses < SLOT_CLUSTER_PROBE_BACKOFF_MAX)
        c->probe_misses++;
    uint64_t wait = (uint64_t)c->failover_ms << (c->probe_misses - 1);
    if (wait > (uint64_t)c->failover_ms * SLOT_CLUSTER_PROBE_BACKOFF_MAX)
        wait = (uint64_t)c->failover_ms * SLOT_CLUSTER_PROBE_BACKOFF_MAX;
    SLOT_ASSERT(c->probe_misses >= 1 && c->probe_misses <= SLOT_CLUSTER_PROBE_BACKOFF_MAX);
    SLOT_ASSERT(wait >= c->failover_ms && wait <= (uint64_t)c->failover_ms * SLOT_CLUSTER_PROBE_BACKOFF_MAX);
    wait += jitter(wait); /* at most doubled */
    c->probe_next_ms = now + wait;
    SLOT__CLU_LOG(c, SLOT__LOG_WARN, "no word from the primary, but too few members answered: not taking over",
                  SLOT__LF_S("primary", c->cfg.primary), SLOT__LF_U("reached", reached), SLOT__LF_U("spare", spare),
                  SLOT__LF_U("need", need), SLOT__LF_U("retry_ms", wait));
    return false;
}

void slot__clu_failover_tick(clu *c)
{
    if (c->role != CLU_REPLICA || c->campaigning || c->cas_busy || !c->cfg.found)
        return;
    uint64_t now = uv_now(c->s->loop);
    if (slot_repl_silence_ms(c->repl) < c->failover_ms) {
        c->defer_until_ms = 0;
        c->probe_next_ms = 0;
        c->probe_misses = 0;
        if (c->probe_since_ms)
            probe_end(c);
        return;
    }
    if (!slot__clu_is_member(&c->cfg, c->self))
        return;
    if (c->snap_recv || c->need_snap)
        return; /* our state is being replaced by a snapshot: we may not take over with it */
    uint64_t last = 0;
    slot__clu_log_last(c, NULL, &last);
    for (size_t i = 0; last == 0 && i < c->nnodes; i++)
        if (c->nodes[i].seq > 0 && slot__clu_is_member(&c->cfg, c->nodes[i].id))
            return; /* an empty (wiped) log next to members that hold records: it waits for a snapshot */
    if (better_member(c)) {
        if (!c->defer_until_ms)
            c->defer_until_ms = now + c->failover_ms;
        if (now < c->defer_until_ms)
            return;
    }
    if (!prevote(c, now))
        return;
    c->defer_until_ms = 0;
    SLOT_ASSERT(c->role == CLU_REPLICA && c->cfg.found && !c->campaigning && slot__clu_is_member(&c->cfg, c->self));
    SLOT__CLU_LOG(c, SLOT__LOG_WARN, "no word from the primary: fencing it and taking over",
                  SLOT__LF_S("primary", c->cfg.primary), SLOT__LF_U("silence_ms", slot_repl_silence_ms(c->repl)));
    slot_repl_set_config(c->repl, c->cfg.epoch, c->cfg.tenure, ""); /* fence: its stream is refused from now */
    slot__clu_take_over(c);
}
