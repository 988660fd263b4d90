/*
 * slotctl_alloc.c — `slotctl allocate|deallocate|allocations`: blocks of an
 * event's capacity set aside for a presale or a partner (docs/protocol.md,
 * "Allocations"), through the admin ops allocate and deallocate and the event
 * view's "allocations". Part of slotctl (slotctl.h); the command table and
 * its help texts are in slotctl.c.
 */
#include <getopt.h>
#include <inttypes.h>
#include <jansson.h>
#include <stdio.h>
#include <string.h>

#include "slot/client.h"
#include "slot/limits.h"
#include "slotctl.h"

/* The request naming EVENT's block NAME; a usage error when a name cannot be one. */
static int block_req(const ctl *x, slot_req *req, slot_op op, const char *event, const char *name)
{
    int rc = ctl_event_req(x, req, op, event);
    if (rc != 0)
        return rc;
    size_t n = strlen(name);
    if (n < 1 || n > SLOT_EVENT_BYTES_MAX)
        return ctl_usage_error(x, "allocation name of 1..64 bytes expected: '%s'", name);
    memcpy(req->alloc, name, n + 1);
    req->alloc_len = (uint8_t)n;
    req->has |= SLOT_HAS_ALLOCATION;
    return 0;
}

/* An allocate or deallocate answer: the block's total and what it has left, or sold_out. */
static void print_block_answer(const slot_reply *r)
{
    json_t *j = json_loads(r->line, 0, NULL);
    if (strcmp(r->status, "sold_out") == 0)
        printf("sold_out: %" PRIu64 " units free\n", r->available);
    else
        printf("allocation %s: qty %" PRIu64 ", remaining %" PRIu64 "\n",
               json_string_value(json_object_get(j, "allocation")),
               (uint64_t)json_integer_value(json_object_get(j, "qty")),
               (uint64_t)json_integer_value(json_object_get(j, "remaining")));
    json_decref(j);
}

int cmd_allocate(ctl *x, int argc, char **argv)
{
    static const struct option opts[] = {{"max-per-user", required_argument, NULL, 'm'},
                                         {"help", no_argument, NULL, 'h'},
                                         {0}};
    uint64_t mpu = 0, n = 0;
    bool have_mpu = false;
    int o, rc = 0;
    while ((o = ctl_next_opt(x, argc, argv, opts, &rc)) >= 0) {
        if ((rc = ctl_parse_num(x, "--max-per-user", optarg, 0, SLOT_CAPACITY_MAX, &mpu)))
            return rc;
        have_mpu = true;
    }
    if (o == -2 || (rc = ctl_want_args(x, argc - optind, argv + optind, 3, 3)))
        return rc;
    if ((rc = ctl_parse_num(x, "N", argv[optind + 2], 1, SLOT_CAPACITY_MAX, &n)))
        return rc;
    slot_req req;
    if ((rc = block_req(x, &req, SLOT_OP_ALLOCATE, argv[optind], argv[optind + 1])))
        return rc;
    req.alloc_qty = n;
    req.has |= SLOT_HAS_ALLOC_QTY;
    if (have_mpu) {
        req.max_per_user = mpu;
        req.has |= SLOT_HAS_MAX_PER_USER;
    }
    slot_reply r;
    rc = ctl_call(x, &req, &r);
    if (rc == 0 && !x->json)
        print_block_answer(&r);
    if (rc == 0 && strcmp(r.status, "sold_out") == 0)
        rc = EXIT_SERVER_ERROR; /* nothing was set aside */
    slot_reply_clear(&r);
    return rc;
}

int cmd_deallocate(ctl *x, int argc, char **argv)
{
    int o, rc = 0;
    while ((o = ctl_next_opt(x, argc, argv, NULL, &rc)) >= 0) {
    }
    if (o == -2 || (rc = ctl_want_args(x, argc - optind, argv + optind, 2, 3)))
        return rc;
    slot_req req;
    if ((rc = block_req(x, &req, SLOT_OP_DEALLOCATE, argv[optind], argv[optind + 1])))
        return rc;
    if (argc - optind == 3) {
        if ((rc = ctl_parse_num(x, "N", argv[optind + 2], 1, SLOT_CAPACITY_MAX, &req.alloc_qty)))
            return rc;
        req.has |= SLOT_HAS_ALLOC_QTY;
    }
    slot_reply r;
    rc = ctl_call(x, &req, &r);
    if (rc == 0 && !x->json)
        print_block_answer(&r);
    slot_reply_clear(&r);
    return rc;
}

int cmd_allocations(ctl *x, int argc, char **argv)
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
        printf("%-16s %" PRIu64 "\n", "allocated", (uint64_t)json_integer_value(json_object_get(j, "allocated")));
        printf("%-16s %8s %10s %8s %10s\n", "allocation", "qty", "remaining", "held", "confirmed");
        const char *name;
        json_t *b;
        json_object_foreach(json_object_get(j, "allocations"), name, b)
        {
            printf("%-16s %8" PRIu64 " %10" PRIu64 " %8" PRIu64 " %10" PRIu64 "\n", name,
                   (uint64_t)json_integer_value(json_object_get(b, "qty")),
                   (uint64_t)json_integer_value(json_object_get(b, "remaining")),
                   (uint64_t)json_integer_value(json_object_get(b, "held")),
                   (uint64_t)json_integer_value(json_object_get(b, "confirmed")));
        }
        json_decref(j);
    }
    slot_reply_clear(&r);
    return rc;
}
