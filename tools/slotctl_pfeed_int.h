/*
 * slotctl_pfeed_int.h — what slotctl_pfeed.c (the sets' subscriptions and
 * the run) and slotctl_pfeed_state.c (--state and --from) share: the run's
 * state and its per-set part. Single-threaded: slotctl's main thread.
 */
#ifndef SLOTCTL_PFEED_INT_H
#define SLOTCTL_PFEED_INT_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>
#include <uv.h>

#include "slot/client.h"
#include "slot/etcd.h"
#include "slot/limits.h"
#include "slotctl_handover.h"
#include "slotctl_pfeed.h"

#define NAME_CAP CTL_HO_NAME_CAP
#define ADDRS_CAP (SLOT_FOLLOW_NODES_MAX * (SLOT_CLIENT_ADDR_BYTES_MAX + 1))
#define FEED_WINDOW SLOT_FEED_WINDOW_DEFAULT /* entries pushed past the last ack; acked every half */

typedef struct pset {
    char name[NAME_CAP];
    char addrs[ADDRS_CAP]; /* primary first, then the members, comma-separated */
    slot_follow *f;        /* the subscription's connection */
    slot_follow *side;     /* feed_consumers and feed_forget */
    slot_client *c;        /* f's connection once subscribed; NULL: subscribe again */
    uint64_t next;         /* the first seq not judged yet (0: from the oldest kept) */
    uint64_t head0;        /* the head when first subscribed: where a run without --follow ends */
    uint64_t acked;        /* the last ack sent */
    bool subscribed_once;
    json_t *held; /* an entry that waits (its line in held_raw), or NULL */
    char *held_raw;
    uint64_t held_since_ms;
    int probe_set;       /* -1, or the source whose feed this set's held event.arrived waits on */
    uint64_t probe_head; /* ... until that set's next passes it */
    uint32_t fails;      /* subscribes in a row that failed */
    bool probe_warned;   /* a feed_consumers of this set failed once (said once) */
} pset;

typedef struct pfeed {
    const slotctl_pfeed_opts *o;
    char prefix[SLOT_PLACE_PREFIX_BYTES + 8];
    char me[64];
    uv_loop_t loop;
    slot_etcd *etcd;
    pset sets[SLOT_CTL_FEED_SETS_MAX];
    uint32_t nsets;
    ctl_handover ho;                               /* each event's hand-over state */
    uint64_t printed, dropped, waits, since_state; /* waits: entries held for a hand-over */
} pfeed;

enum { V_PRINT, V_DROP, V_HOLD, V_FAIL };

static inline const char *jstr(json_t *o, const char *k)
{
    const char *s = json_string_value(json_object_get(o, k));
    return s ? s : "";
}

static inline uint64_t jnum(json_t *o, const char *k)
{
    json_int_t v = json_integer_value(json_object_get(o, k));
    return v > 0 ? (uint64_t)v : 0;
}

/* pf_find_set — the index of the set named name in p->sets, or -1. */
int pf_find_set(const pfeed *p, const char *name);
/* pf_state_load — reads --state FILE (when given and present) into each set's
 * next and the events' hand-over states. 0, or -1 after a message on stderr. */
int pf_state_load(pfeed *p);
/* pf_from_load — applies --from SET=SEQ,... over the sets' positions. 0, or -1
 * after a message. */
int pf_from_load(pfeed *p);
/* pf_state_save — writes --state FILE (a temporary twin, fsync, rename), when
 * given. 0, or -1 after a message. */
int pf_state_save(pfeed *p);

#endif
