/*
 * slotctl_room.c — `slotctl room EVENT`: an event's waiting room
 * (docs/protocol.md, "Admission") from the event view: its mode, rate and
 * grant time, the room's counts, the stop rule's standing and the next
 * admission ranks. Part of slotctl (slotctl.h); the command table and its
 * help texts are in slotctl.c.
 */
#include <inttypes.h>
#include <jansson.h>
#include <stdio.h>
#include <string.h>

#include "slot/client.h"
#include "slotctl.h"

static uint64_t num(json_t *o, const char *k)
{
    return (uint64_t)json_integer_value(json_object_get(o, k));
}

int cmd_room(ctl *x, int argc, char **argv)
{
    int o, rc = 0;
    while ((o = ctl_next_opt(x, argc, argv, NULL, &rc)) >= 0) {
    }
    if (o == -2 || (rc = ctl_want_args(x, argc - optind, argv + optind, 1, 1)))
        return rc;
    slot_req req;
    if ((rc = ctl_event_req(x, &req, SLOT_OP_EVENT, argv[optind])))
        return rc;
    slot_reply r;
    rc = ctl_call(x, &req, &r);
    if (rc == 0 && !x->json) {
        json_t *j = json_loads(r.line, 0, NULL);
        json_t *room = json_object_get(j, "room");
        if (!room) {
            printf("admission none (no waiting room)\n");
        } else {
            uint64_t avail = json_object_get(j, "effective_available") ? num(j, "effective_available")
                                                                       : num(j, "available");
            uint64_t admitted = num(room, "admitted"), waiting = num(room, "waiting"), open = num(room, "open_grants");
            printf("%-16s %s\n", "admission", json_string_value(json_object_get(j, "admission")));
            printf("%-16s %" PRIu64 "\n", "admit_per_s", num(j, "admit_per_s"));
            printf("%-16s %" PRIu64 "\n", "grant_ttl_ms", num(j, "grant_ttl_ms"));
            printf("%-16s %" PRIu64 "\n", "queue_opens_at", num(j, "queue_opens_at"));
            printf("%-16s %" PRIu64 "\n", "opens_at", num(j, "opens_at"));
            printf("%-16s %" PRIu64 "\n", "joined", num(room, "joined"));
            printf("%-16s %" PRIu64 "\n", "admitted", admitted);
            printf("%-16s %" PRIu64 "\n", "waiting", waiting);
            printf("%-16s %" PRIu64 "\n", "open_grants", open);
            printf("%-16s %" PRIu64 "\n", "available", avail);
            printf("%-16s %s\n", "admitting",
                   waiting == 0    ? "nobody waits"
                   : open >= avail ? "stopped (open grants >= available)"
                                   : "yes");
            if (waiting > 0)
                printf("%-16s ranks %" PRIu64 "..%" PRIu64 " (position 1..%" PRIu64 ")\n", "next", admitted + 1,
                       admitted + (waiting < 5 ? waiting : 5), waiting < 5 ? waiting : 5);
        }
        json_decref(j);
    }
    slot_reply_clear(&r);
    return rc;
}
