/* ops.c — slot/ops.h: the name tables of ops, roles and statuses, the hold
 * state machine's edges, and the result helpers. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "slot/ops.h"

static const struct {
    const char *name;
    bool writes;
    bool admin;
} op_table[] = {
#define SLOT__OP_ROW(name, wire, writes, admin) {wire, writes, admin},
    SLOT_OP_MAP(SLOT__OP_ROW)
#undef SLOT__OP_ROW
};

_Static_assert(sizeof(op_table) / sizeof(op_table[0]) == SLOT_OP__COUNT, "one row per op");

const char *slot_op_name(slot_op op)
{
    return (unsigned)op < SLOT_OP__COUNT ? op_table[op].name : "?";
}

slot_op slot_op_from_name(const char *name, size_t len)
{
    for (unsigned i = 0; i < SLOT_OP__COUNT; i++)
        if (strlen(op_table[i].name) == len && memcmp(op_table[i].name, name, len) == 0)
            return (slot_op)i;
    return SLOT_OP__COUNT;
}

bool slot_op_writes(slot_op op)
{
    return (unsigned)op < SLOT_OP__COUNT && op_table[op].writes;
}

bool slot_op_admin(slot_op op)
{
    return (unsigned)op < SLOT_OP__COUNT && op_table[op].admin;
}

bool slot_op_internal(slot_op op)
{
    switch (op) {
    case SLOT_OP_PLACE_STATE:
    case SLOT_OP_PLACE_EXPORT:
    case SLOT_OP_PLACE_STAGE:
    case SLOT_OP_PLACE_RELINQUISH:
    case SLOT_OP_PLACE_OWN:
    case SLOT_OP_PLACE_DONE:
    case SLOT_OP_PLACE_ABORT:
    case SLOT_OP_PLACE_RECLAIM:
    case SLOT_OP_PLACE_PURGE:
        return true;
    default:
        return false;
    }
}

const char *slot_cluster_change_name(slot_cluster_change c)
{
    switch (c) {
    case SLOT_CHANGE_ADD:
        return "add";
    case SLOT_CHANGE_REMOVE:
        return "remove";
    case SLOT_CHANGE_PROMOTE:
        return "promote";
    case SLOT_CHANGE_NONE:
        break;
    }
    return "?";
}

const char *slot_role_name(slot_role role)
{
    switch (role) {
    case SLOT_ROLE_FRONTEND:
        return "frontend";
    case SLOT_ROLE_ADMIN:
        return "admin";
    case SLOT_ROLE_WORKER:
        return "worker";
    default:
        return "none";
    }
}

static const char *const hold_status_names[] = {
#define SLOT__HS_NAME(name, wire) wire,
    SLOT_HOLD_STATUS_MAP(SLOT__HS_NAME)
#undef SLOT__HS_NAME
};

const char *slot_hold_status_name(slot_hold_status s)
{
    return (unsigned)s < SLOT_HOLD__COUNT ? hold_status_names[s] : "?";
}

const char *slot_wait_state_name(slot_wait_state s)
{
    switch (s) {
    case SLOT_WAIT_WAITING:
        return "waiting";
    case SLOT_WAIT_OFFERED:
        return "offered";
    case SLOT_WAIT_LEFT:
        return "left";
    default:
        return "none";
    }
}

const char *slot_event_status_name(slot_event_status s)
{
    return s == SLOT_EVENT_CLOSED ? "closed" : "on_sale";
}

bool slot_hold_transition_ok(slot_hold_status from, slot_hold_status to)
{
    switch (from) {
    case SLOT_HOLD_HELD:
        return to == SLOT_HOLD_CONFIRMED || to == SLOT_HOLD_RELEASED || to == SLOT_HOLD_EXPIRED ||
               to == SLOT_HOLD_CANCELLED;
    case SLOT_HOLD_CONFIRMED:
        return to == SLOT_HOLD_CANCELLED;
    default:
        return false; /* released, expired and cancelled are final */
    }
}

void slot_res_clear(slot_res *res)
{
    free(res->shard_free);
    free(res->violations);
    free(res->cluster_view);
    free(res->fields);
    free(res->text);
    free(res->cart);
    free(res->entries);
    free(res->consumers);
    free(res->stats);
    free(res->extra);
    memset(res, 0, sizeof(*res));
}

void slot_req_clear(slot_req *req)
{
    free(req->seat_map);
    req->seat_map = NULL;
    if (req->place) {
        free(req->place->data_b64);
        free(req->place->data);
        free(req->place);
        req->place = NULL;
    }
}

void slot_res_error(slot_res *res, slot_err err, const char *fmt, ...)
{
    res->err = err;
    res->message[0] = 0;
    if (fmt) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(res->message, sizeof(res->message), fmt, ap);
        va_end(ap);
    }
}
