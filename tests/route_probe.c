/*
 * route_probe.c — a test helper (tests/test_placement.py): a slot_route
 * (slot/client.h, "routing by the placement") seeded with argv[1]
 * ("H:P[,H:P...]"). Reads request lines from stdin, one at a time, sends each
 * through slot_route_call_line (routed by its "event", or a hold_many's first
 * item's) and prints one line per request:
 *   {"rc":RC,"node":"H:P","reply":REPLY}      (REPLY null after a negative rc)
 * and, for the line "stats", the route's counters:
 *   {"calls":N,"wrong_set":N,"map_reads":N,"map_failures":N,"unknown_rerouted":N}
 * Exit 0 at the end of stdin; 64 for a bad argument.
 */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "slot/client.h"

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: route_probe H:P[,H:P...] < requests\n");
        return 64;
    }
    slot_follow_opts o;
    slot_follow_opts_default(&o);
    slot_route *r = NULL;
    char err[300];
    if (slot_route_new(argv[1], &o, &r, err, sizeof(err)) < 0) {
        fprintf(stderr, "route_probe: %s\n", err);
        return 64;
    }
    static char line[1 << 16];
    while (fgets(line, sizeof(line), stdin)) {
        size_t n = strlen(line);
        if (strcmp(line, "stats\n") == 0) {
            slot_route_stats st;
            slot_route_stats_get(r, &st);
            printf("{\"calls\":%llu,\"wrong_set\":%llu,\"map_reads\":%llu,\"map_failures\":%llu,"
                   "\"unknown_rerouted\":%llu}\n",
                   (unsigned long long)st.calls, (unsigned long long)st.wrong_set, (unsigned long long)st.map_reads,
                   (unsigned long long)st.map_failures, (unsigned long long)st.unknown_rerouted);
            fflush(stdout);
            continue;
        }
        json_t *req = json_loads(line, 0, NULL);
        const char *event = json_string_value(json_object_get(req, "event"));
        const char *op = json_string_value(json_object_get(req, "op"));
        if (op && strcmp(op, "hold_many") == 0)
            event = json_string_value(json_object_get(json_array_get(json_object_get(req, "items"), 0), "event"));
        if (op && strcmp(op, "placement") == 0)
            event = NULL;
        slot_reply rep;
        int rc = slot_route_call_line(r, event, line, n, &rep);
        printf("{\"rc\":%d,\"node\":\"%s\",\"reply\":%s}\n", rc, slot_route_node(r),
               rc == 0 && rep.line ? rep.line : "null");
        fflush(stdout);
        slot_reply_clear(&rep);
        json_decref(req);
    }
    slot_route_free(r);
    return 0;
}
