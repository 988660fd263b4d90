/*
 * slotctl_cluster.c — `slotctl cluster` and its changes (slotctl_cluster.h).
 */
#include "slotctl_cluster.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#define EXIT_SERVER_ERROR 1
#define EXIT_CONNECTION 2
#define EXIT_USAGE 64

void slotctl_cluster_print(const slot_reply *r)
{
    if (strcmp(r->role, "standalone") == 0 || (!r->cluster[0] && !r->nmembers)) {
        printf("standalone server (not a replica set member); seq %" PRIu64 "\n", r->seq);
        return;
    }
    printf("cluster %s: node %s is %s, epoch %" PRIu64 ", seq %" PRIu64 ", primary %s\n\n", r->cluster,
           r->node[0] ? r->node : "?", r->role[0] ? r->role : "?", r->epoch, r->seq,
           r->primary[0] ? r->primary : "unknown");
    printf("%-16s %-24s %-8s %12s %10s\n", "node", "addr", "role", "seq", "lag_ms");
    for (uint32_t i = 0; i < r->nmembers; i++) {
        const slot_member *m = &r->members[i];
        printf("%-16s %-24s %-8s %12" PRIu64 " %10" PRIu64 "\n", m->node, m->addr, m->role, m->seq, m->lag_ms);
    }
    if (r->nmembers_total > r->nmembers)
        printf("(%" PRIu32 " more members not shown)\n", r->nmembers_total - r->nmembers);
}

int slotctl_cluster_change(slot_follow *f, bool json, const char *change, const char *node)
{
    slot_cluster_change ch = SLOT_CHANGE_NONE;
    for (int k = SLOT_CHANGE_ADD; k <= SLOT_CHANGE_PROMOTE; k++)
        if (strcmp(change, slot_cluster_change_name((slot_cluster_change)k)) == 0)
            ch = (slot_cluster_change)k;
    if (ch == SLOT_CHANGE_NONE) {
        fprintf(stderr, "slotctl: cluster: unknown change '%s' (add, remove or promote)\n", change);
        return EXIT_USAGE;
    }
    slot_req req;
    if (!node[0] || slot_req_cluster_change(&req, ch, node) != 0) {
        fprintf(stderr, "slotctl: cluster %s: '%s' is not a node id (1..%d bytes)\n", change, node,
                SLOT_CLUSTER_NAME_BYTES_MAX);
        return EXIT_USAGE;
    }
    slot_reply r;
    memset(&r, 0, sizeof(r));
    int rc = slot_follow_call(f, &req, &r);
    int status = 0;
    if (rc < 0) {
        fprintf(stderr, "slotctl: cluster %s: %s\n", change,
                rc == -EMSGSIZE ? "the request is too long" : slot_follow_error(f));
        status = EXIT_CONNECTION;
    } else {
        if (json)
            printf("%s\n", r.line);
        if (!r.ok) {
            fprintf(stderr, "slotctl: cluster %s %s: %s: %s\n", change, node, r.error[0] ? r.error : "error",
                    r.message[0] ? r.message : slot_err_message(r.err));
            status = EXIT_SERVER_ERROR;
        } else if (!json) {
            printf("%s %s: done\n", change, node);
            slotctl_cluster_print(&r);
        }
    }
    slot_reply_clear(&r);
    return status;
}
