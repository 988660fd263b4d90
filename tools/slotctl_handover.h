/*
 * slotctl_handover.h — the rule by which a consumer of every set of a
 * placement takes each event's feed entries in order and once across its
 * moves (docs/design.md, "The feed of a placement"): per event, the set whose
 * entries are taken and the gen of its epoch; event.moved and event.arrived
 * hand it over. Pure: no I/O. Used by slotctl feed --placement
 * (slotctl_pfeed.c) and tests/test_handover.c. Single-threaded.
 */
#ifndef SLOTCTL_HANDOVER_H
#define SLOTCTL_HANDOVER_H

#include <stdbool.h>
#include <stdint.h>

#include "slot/limits.h"

#define CTL_HO_NAME_CAP (SLOT_CLUSTER_NAME_BYTES_MAX + 1) /* a set's name and its NUL */
#define CTL_HO_EVENT_CAP (SLOT_EVENT_BYTES_MAX + 1)       /* an event's name and its NUL */
#define CTL_HO_SLOTS (2u * SLOT_CTL_FEED_EVENTS_MAX)      /* a power of two: the table is at most half full */

/* One event's state. owner "" and gen 0: not known yet. */
typedef struct ctl_ho_event {
    bool used;
    bool open; /* the owner's epoch goes on: no event.moved of it taken since */
    char name[CTL_HO_EVENT_CAP];
    char owner[CTL_HO_NAME_CAP]; /* the set whose entries are taken */
    char to[CTL_HO_NAME_CAP];    /* after the owner's event.moved: its target ... */
    uint64_t gen, to_gen;        /* ... and the gen there; gen: the owner's epoch */
} ctl_ho_event;

typedef struct ctl_handover {
    ctl_ho_event *slots; /* CTL_HO_SLOTS, open addressing */
    uint32_t n;          /* events kept, at most SLOT_CTL_FEED_EVENTS_MAX */
} ctl_handover;

typedef enum ctl_ho_verdict {
    CTL_HO_TAKE, /* print it: the event's state has taken it */
    CTL_HO_DROP, /* of an epoch another set continued, or an arrival taken already */
    CTL_HO_WAIT, /* an event.arrived before its hand-over: judge it again later (nothing changed) */
    CTL_HO_FULL  /* SLOT_CTL_FEED_EVENTS_MAX events are kept: no room for this one */
} ctl_ho_verdict;

/* ctl_handover_init — an empty table: a calloc of CTL_HO_SLOTS slots (about 28 MiB of address
 * space, its pages touched as events come). 0 or -ENOMEM. */
int ctl_handover_init(ctl_handover *h);
/* ctl_handover_free — frees the slots; h may be zeroed or freed already. */
void ctl_handover_free(ctl_handover *h);

/*
 * ctl_handover_get — the state of event (NUL-terminated, 1..SLOT_EVENT_BYTES_MAX
 * bytes), made (not known) when new. Borrowed until ctl_handover_free. NULL
 * when the event is new and SLOT_CTL_FEED_EVENTS_MAX are kept, or the name is
 * too long.
 */
ctl_ho_event *ctl_handover_get(ctl_handover *h, const char *event);

/*
 * ctl_handover_judge — the verdict for one entry, read in seq order from its
 * set's feed, and the state changed by it (nothing changed on WAIT, DROP and
 * FULL, except that an event seen first is kept, not known).
 *   set: the set it was read from; type: its wire type ("hold.held", ...,
 *   "event.moved", "event.arrived"); event: its event; peer: "to" of an
 *   event.moved, "from" of an event.arrived ("" otherwise); gen: their "gen"
 *   (0 otherwise). Every string NUL-terminated, borrowed for the call.
 *   source_passed: for an event.arrived whose hand-over (the owner's
 *   event.moved to set at gen) was not taken: true when the caller knows the
 *   source's event.moved can no longer come (the source's feed was read past
 *   its head as asked after this entry was read, or the source is not
 *   followed); then the arrival is taken, else CTL_HO_WAIT.
 */
ctl_ho_verdict ctl_handover_judge(ctl_handover *h, const char *set, const char *type, const char *event,
                                  const char *peer, uint64_t gen, bool source_passed);

#endif
