/*
 * slotctl_place.c — `slotctl placement [--event E]` (docs/protocol.md,
 * "Placement"): the map of a placement's events to replica sets, and each
 * set's published addresses, asked of any member through the client library.
 */
#include <inttypes.h>
#include <jansson.h>
#include <stdio.h>
#include <string.h>

#include "slotctl.h"

/* The placement reply r as two tables: the events (set, gen, state, to) and the sets (primary, http). */
static void print_map(const slot_reply *r)
{
    json_t *j = json_loads(r->line, 0, NULL);
    json_t *events = json_object_get(j, "events"), *sets = json_object_get(j, "sets");
    const char *name;
    json_t *v;
    printf("events: %zu%s\n", json_object_size(events),
           json_is_true(json_object_get(j, "truncated")) ? " (the listing was cut: more are placed)" : "");
    if (json_object_size(events)) {
        printf("  %-24s %-16s %8s %-8s %s\n", "event", "set", "gen", "state", "to");
        json_object_foreach(events, name, v)
        {
            const char *to = json_string_value(json_object_get(v, "to"));
            const char *state = json_string_value(json_object_get(v, "state"));
            printf("  %-24s %-16s %8" PRIu64 " %-8s %s\n", name,
                   json_string_value(json_object_get(v, "set")) ? json_string_value(json_object_get(v, "set")) : "?",
                   (uint64_t)json_integer_value(json_object_get(v, "gen")), state ? state : "?", to ? to : "");
        }
    }
    printf("sets: %zu\n", json_object_size(sets));
    if (json_object_size(sets)) {
        printf("  %-16s %-28s %s\n", "set", "primary", "http");
        json_object_foreach(sets, name, v)
        {
            const char *pr = json_string_value(json_object_get(v, "primary"));
            const char *ht = json_string_value(json_object_get(v, "http"));
            printf("  %-16s %-28s %s\n", name, pr && pr[0] ? pr : "unknown", ht && ht[0] ? ht : "-");
        }
    }
    json_decref(j);
}

int cmd_placement(ctl *x, int argc, char **argv)
{
    static const struct option opts[] = {{"event", required_argument, NULL, 'e'},
                                         {"help", no_argument, NULL, 'h'},
                                         {0}};
    const char *event = NULL;
    int o, rc = 0;
    while ((o = ctl_next_opt(x, argc, argv, opts, &rc)) >= 0)
        if (o == 'e')
            event = optarg;
    if (o == -2 || (rc = ctl_want_args(x, argc - optind, argv + optind, 0, 0)))
        return rc;
    slot_req req;
    if (event && !event[0])
        return ctl_usage_error(x, "%s", "--event: an empty name");
    if (event) {
        if ((rc = ctl_event_req(x, &req, SLOT_OP_PLACEMENT, event)))
            return rc;
    } else {
        slot_req_init(&req, SLOT_OP_PLACEMENT);
    }
    slot_reply r;
    rc = ctl_call(x, &req, &r);
    if (rc == 0 && !x->json)
        print_map(&r);
    slot_reply_clear(&r);
    return rc;
}
