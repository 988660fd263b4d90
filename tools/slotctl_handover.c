/*
 * slotctl_handover.c — the hand-over rule of a placement's feed
 * (slotctl_handover.h; docs/design.md, "The feed of a placement"). An open
 * addressed table of events (FNV-1a of the name, linear probing), never
 * shrunk: a run keeps every event it saw.
 */
#include "slotctl_handover.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

_Static_assert((CTL_HO_SLOTS & (CTL_HO_SLOTS - 1)) == 0, "the event table's size is a power of two");

int ctl_handover_init(ctl_handover *h)
{
    h->n = 0;
    h->slots = calloc(CTL_HO_SLOTS, sizeof *h->slots);
    return h->slots ? 0 : -ENOMEM;
}

void ctl_handover_free(ctl_handover *h)
{
    free(h->slots);
    h->slots = NULL;
    h->n = 0;
}

ctl_ho_event *ctl_handover_get(ctl_handover *h, const char *event)
{
    if (strlen(event) > SLOT_EVENT_BYTES_MAX)
        return NULL;
    uint64_t x = 1469598103934665603ull;
    for (const char *q = event; *q; q++)
        x = (x ^ (uint8_t)*q) * 1099511628211ull;
    for (uint32_t i = 0; i < CTL_HO_SLOTS; i++) {
        ctl_ho_event *e = &h->slots[(x + i) & (CTL_HO_SLOTS - 1)];
        if (e->used && strcmp(e->name, event) == 0)
            return e;
        if (!e->used) {
            if (h->n == SLOT_CTL_FEED_EVENTS_MAX)
                return NULL;
            h->n++;
            e->used = true;
            snprintf(e->name, sizeof e->name, "%s", event);
            return e;
        }
    }
    return NULL; /* not reached: the table is never more than half full */
}

static void own(ctl_ho_event *e, const char *set)
{
    snprintf(e->owner, sizeof e->owner, "%s", set);
    e->open = true;
    e->to[0] = 0;
    e->to_gen = 0;
}

ctl_ho_verdict ctl_handover_judge(ctl_handover *h, const char *set, const char *type, const char *event,
                                  const char *peer, uint64_t gen, bool source_passed)
{
    ctl_ho_event *e = ctl_handover_get(h, event);
    if (!e)
        return CTL_HO_FULL;
    if (strcmp(type, "event.moved") == 0) {
        if (e->owner[0] && strcmp(e->owner, set) != 0)
            return CTL_HO_DROP; /* the end of an epoch of set that another set's entries continued */
        own(e, set);
        snprintf(e->to, sizeof e->to, "%s", peer);
        e->to_gen = gen;
        e->open = false;
        return CTL_HO_TAKE;
    }
    if (strcmp(type, "event.arrived") == 0) {
        if (e->gen && gen <= e->gen)
            return CTL_HO_DROP; /* an arrival this consumer has taken already */
        bool handed = e->owner[0] && !e->open && strcmp(e->to, set) == 0 && e->to_gen == gen;
        if (!handed && !source_passed)
            return CTL_HO_WAIT; /* the source's event.moved may be still to come */
        own(e, set);
        e->gen = gen;
        return CTL_HO_TAKE;
    }
    if (!e->owner[0]) { /* the first entry of an event seen: its set is the owner */
        own(e, set);
        if (strcmp(type, "event.created") == 0)
            e->gen = 1;
        return CTL_HO_TAKE;
    }
    if (strcmp(e->owner, set) != 0)
        return CTL_HO_DROP; /* an epoch of set that the owner's event.arrived has continued */
    if (!e->open)           /* set writes the event after its event.moved: the move was undone (reclaim) */
        own(e, set);
    return CTL_HO_TAKE;
}
