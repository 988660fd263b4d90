/*
 * proto_enc.c — reply encoding of the wire format of docs/protocol.md
 * (proto.h; parsing is in proto.c). Replies are written straight into the
 * caller's buffer by the bounded writer of jsonw.h, which counts what it
 * could not write, so the return value is the needed length, as snprintf's
 * is. Strings are escaped strictly: ill-formed UTF-8 becomes U+FFFD, so a
 * reply always parses. No heap use.
 */
#include "slot/proto.h"

#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "base/jsonw.h"
#include "proto_int.h"
#include "slot/assert.h"

/* ------------------------------------------------------------------------ */
/* Encoding                                                                  */
/* ------------------------------------------------------------------------ */

/* A NUL-terminated field of a fixed-size array; strnlen guards a missing NUL. */
#define PUT_FIXED(w, arr) slot__jw_str((w), (arr), strnlen((arr), sizeof(arr)), SLOT__JW_STR_STRICT)

static void kv_cstr(slot__jw *w, const char *key, const char *s)
{
    slot__jw_key_str(w, key, s, strlen(s), SLOT__JW_STR_STRICT);
}

static void kv_bool(slot__jw *w, const char *key, bool v)
{
    slot__jw_key(w, key);
    if (v)
        SLOT__JW_LIT(w, "true");
    else
        SLOT__JW_LIT(w, "false");
}

/* {"id":...,"ok":true|false — the id first, as docs/protocol.md shows it. */
static void put_head(slot__jw *w, const slot_id *id, bool ok)
{
    SLOT__JW_LIT(w, "{");
    if (id && id->kind == SLOT_ID_INT) {
        SLOT__JW_LIT(w, "\"id\":");
        slot__jw_i64(w, id->i);
        SLOT__JW_LIT(w, ",");
    } else if (id && id->kind == SLOT_ID_STR) {
        SLOT__JW_LIT(w, "\"id\":");
        slot__jw_str(w, id->s, id->len <= SLOT_ID_BYTES_MAX ? id->len : SLOT_ID_BYTES_MAX, SLOT__JW_STR_STRICT);
        SLOT__JW_LIT(w, ",");
    }
    if (ok)
        SLOT__JW_LIT(w, "\"ok\":true");
    else
        SLOT__JW_LIT(w, "\"ok\":false");
}

/* "error" and "message"; message/len is the caller's text, or NULL for the default of err. */
static void put_error_body(slot__jw *w, slot_err err, const char *message, size_t len)
{
    kv_cstr(w, "error", slot_err_name(err));
    if (message)
        slot__jw_key_str(w, "message", message, len, SLOT__JW_STR_STRICT);
    else
        kv_cstr(w, "message", slot_err_message(err));
}

/* A NUL-terminated string member of the cluster view: well-formed UTF-8 as it
 * is, \b \t \n \f \r short (as jansson's JSON_COMPACT wrote them before). */
static void kv_view_str(slot__jw *w, const char *key, const char *s, size_t cap)
{
    slot__jw_key_str(w, key, s, strnlen(s, cap), SLOT__JW_STR_SHORT_ESC);
}

/*
 * The cluster op's members after ours (docs/protocol.md, "Clients following
 * the primary"), in the order and number format the jansson object it
 * replaces had: cluster, node, role, epoch, primary, seq, snapshots_installed
 * and snapshots_sent (a member only), then members [{node, addr, role, seq,
 * lag_ms}...].
 */
static void put_cluster_view(slot__jw *w, const slot_cluster_view *v)
{
    kv_view_str(w, "cluster", v->cluster, sizeof v->cluster);
    kv_view_str(w, "node", v->node, sizeof v->node);
    kv_cstr(w, "role", v->role ? v->role : "");
    slot__jw_key_u64(w, "epoch", v->epoch);
    kv_view_str(w, "primary", v->primary, sizeof v->primary);
    slot__jw_key_u64(w, "seq", v->seq);
    if (v->member) {
        slot__jw_key_u64(w, "snapshots_installed", v->snapshots_installed);
        slot__jw_key_u64(w, "snapshots_sent", v->snapshots_sent);
    }
    slot__jw_key(w, "members");
    SLOT__JW_LIT(w, "[");
    uint32_t n = v->nmembers < SLOT_CLUSTER_MEMBERS_MAX ? v->nmembers : SLOT_CLUSTER_MEMBERS_MAX;
    for (uint32_t i = 0; i < n; i++) {
        const slot_cluster_member *m = &v->members[i];
        if (i)
            SLOT__JW_LIT(w, ",");
        SLOT__JW_LIT(w, "{\"node\":");
        slot__jw_str(w, m->node, strnlen(m->node, sizeof m->node), SLOT__JW_STR_SHORT_ESC);
        kv_view_str(w, "addr", m->addr, sizeof m->addr);
        kv_cstr(w, "role", m->role ? m->role : "");
        slot__jw_key_u64(w, "seq", m->seq);
        slot__jw_key_u64(w, "lag_ms", m->lag_ms);
        SLOT__JW_LIT(w, "}");
    }
    SLOT__JW_LIT(w, "]");
}

/* A real number as jansson's JSON_COMPACT writes one (the stats reply
 * was encoded by jansson before; its text stays the same): "%.17g", with
 * ".0" added when that reads as an integer. */
static void jw_real(slot__jw *w, double v)
{
    char num[32];
    int n = snprintf(num, sizeof(num), "%.17g", v);
    SLOT_ASSERT(n > 0);
    SLOT_ASSERT((size_t)n < sizeof(num));
    slot__jw_mem(w, num, (size_t)n);
    if (!strpbrk(num, ".eE"))
        SLOT__JW_LIT(w, ".0");
}

/* The stats object's members (docs/protocol.md, "stats"), in their order. */
static void put_stats(slot__jw *w, const slot_stats *o)
{
    slot__jw_key_u64(w, "connections", o->connections);
    slot__jw_key_u64(w, "connections_total", o->connections_total);
    slot__jw_key(w, "requests");
    for (int op = 0; op < SLOT_OP__COUNT; op++) {
        const char *name = slot_op_name((slot_op)op);
        slot__jw_mem(w, op == 0 ? "{" : ",", 1);
        slot__jw_str(w, name, strlen(name), SLOT__JW_STR_STRICT);
        SLOT__JW_LIT(w, ":");
        slot__jw_u64(w, o->requests[op]);
    }
    SLOT__JW_LIT(w, "}");
    slot__jw_key_u64(w, "bad_lines", o->bad_lines);
    slot__jw_key_u64(w, "holds", o->holds);
    slot__jw_key_u64(w, "sold_out", o->sold_out);
    slot__jw_key_u64(w, "sold_out_fast", o->sold_out_fast);
    slot__jw_key_u64(w, "cold_parked", o->cold_parked);
    slot__jw_key_u64(w, "cold_waiting", o->cold_waiting);
    slot__jw_key_u64(w, "cold_loading", o->cold_loading);
    slot__jw_key_u64(w, "cold_loaded", o->cold_loaded);
    slot__jw_key_u64(w, "cold_walked", o->cold_walked);
    slot__jw_key_u64(w, "cold_slices", o->cold_slices);
    slot__jw_key_u64(w, "errors", o->errors);
    slot__jw_key_u64(w, "commits", o->commits);
    slot__jw_key_u64(w, "commit_failures", o->commit_failures);
    SLOT__JW_LIT(w, ",\"batch_size\":{\"count\":");
    slot__jw_u64(w, o->batch_count);
    slot__jw_key(w, "mean");
    jw_real(w, o->batch_mean);
    slot__jw_key_u64(w, "p50", o->batch_p50);
    slot__jw_key_u64(w, "p99", o->batch_p99);
    slot__jw_key_u64(w, "max", o->batch_max);
    SLOT__JW_LIT(w, "},\"latency_us\":{\"count\":");
    slot__jw_u64(w, o->latency_count);
    slot__jw_key_u64(w, "p50", o->latency_p50);
    slot__jw_key_u64(w, "p99", o->latency_p99);
    slot__jw_key_u64(w, "p999", o->latency_p999);
    slot__jw_key_u64(w, "max", o->latency_max);
    SLOT__JW_LIT(w, "}");
    slot__jw_key_u64(w, "queue", o->queue);
    slot__jw_key_u64(w, "db_bytes", o->db_bytes);
    slot__jw_key_u64(w, "map_bytes", o->map_bytes);
    slot__jw_key(w, "durability");
    if (o->nosync)
        SLOT__JW_LIT(w, "\"nosync\"");
    else if (o->pipelined)
        SLOT__JW_LIT(w, "\"pipelined\"");
    else
        SLOT__JW_LIT(w, "\"sync\"");
    slot__jw_key_u64(w, "reads_paused", o->reads_paused);
    slot__jw_key_u64(w, "accepts_paused", o->accepts_paused);
    slot__jw_key_u64(w, "connections_timed_out", o->connections_timed_out);
    slot__jw_key_u64(w, "commit_busy_us", o->commit_busy_us);
    slot__jw_key_u64(w, "commit_sync_us", o->commit_sync_us);
    slot__jw_key_u64(w, "backups", o->backups);
    slot__jw_key_u64(w, "backups_running", o->backups_running);
}

/* The typed answers the server fills for its own ops, after the op's
 * fields: hello's version, backup's size and time, stats, metrics' text (one JSON
 * string; only '\n', '"' and '\\' need escapes in it). */
static void put_server_facts(slot__jw *w, const slot_req *req, const slot_res *res)
{
    if (req->op == SLOT_OP_HELLO && res->version)
        kv_cstr(w, "version", res->version);
    if (req->op == SLOT_OP_BACKUP) {
        slot__jw_key_u64(w, "bytes", res->backup_bytes);
        slot__jw_key_u64(w, "ms", res->backup_ms);
    }
    if (req->op == SLOT_OP_STATS && res->stats)
        put_stats(w, res->stats);
    if (req->op == SLOT_OP_METRICS && res->text) {
        slot__jw_key(w, "text");
        slot__jw_str(w, res->text, res->text_len, SLOT__JW_STR_SHORT_ESC);
    }
}

/* A sold_out over a family's chain names the nearest event that lacked
 * (docs/protocol.md, "Ticket types"). */
static void put_short(slot__jw *w, const slot_res *res)
{
    if (res->short_event[0])
        kv_view_str(w, "short", res->short_event, sizeof res->short_event);
}

/* The event view shared by event, create_event, set_capacity, reshard and
 * set_status: the name, then the one view writer (proto_view.c). */
static void put_event_view(slot__jw *w, const slot_event_view *v)
{
    slot__jw_key(w, "event");
    PUT_FIXED(w, v->event);
    slot__proto_put_view(w, v);
}

/* hold_many: every hold of the cart, or sold_out naming the item. */
static void put_cart(slot__jw *w, const slot_res *res)
{
    if (res->sold_out) {
        kv_cstr(w, "status", "sold_out");
        slot__jw_key(w, "event");
        PUT_FIXED(w, res->item_event);
        slot__jw_key_u64(w, "available", res->available);
        put_short(w, res);
        if (res->block) /* the item short is from a block: what it has left ("Allocations") */
            slot__jw_key_u64(w, "remaining", res->block_remaining);
        return;
    }
    kv_cstr(w, "status", "held");
    slot__jw_key(w, "holds");
    SLOT__JW_LIT(w, "[");
    for (uint32_t i = 0; res->cart && i < res->ncart; i++) {
        const slot_cart_hold *h = &res->cart[i];
        if (i > 0)
            SLOT__JW_LIT(w, ",");
        SLOT__JW_LIT(w, "{");
        SLOT__JW_LIT(w, "\"event\":");
        PUT_FIXED(w, h->event);
        slot__jw_key(w, "hold");
        PUT_FIXED(w, h->hold);
        kv_cstr(w, "status", slot_hold_status_name(h->status));
        slot__jw_key_u64(w, "qty", h->qty);
        slot__jw_key_u64(w, "expires_at", h->expires_at_ms);
        SLOT__JW_LIT(w, "}");
    }
    SLOT__JW_LIT(w, "]");
}

/* waitlist_join and waitlist: waiting with its position, left, none, or the
 * hold (offered, or held at once), or sold_out (with waitlist_full). */
static void put_wait(slot__jw *w, slot_op op, const slot_res *res)
{
    if (res->sold_out) {
        kv_cstr(w, "status", "sold_out");
        slot__jw_key_u64(w, "available", res->available);
        put_short(w, res);
        if (res->waitlist_full)
            kv_bool(w, "waitlist_full", true);
        return;
    }
    if (res->wait_state == SLOT_WAIT_WAITING) {
        kv_cstr(w, "status", "waiting");
        slot__jw_key_u64(w, "position", res->position);
        slot__jw_key_u64(w, "qty", res->qty);
        return;
    }
    if (res->wait_state == SLOT_WAIT_LEFT || (res->wait_state == SLOT_WAIT_NONE && op == SLOT_OP_WAITLIST)) {
        kv_cstr(w, "status", slot_wait_state_name(res->wait_state));
        return;
    }
    /* a hold: the waitlist op says "offered" and the hold's own status beside it */
    if (op == SLOT_OP_WAITLIST) {
        kv_cstr(w, "status", "offered");
        kv_cstr(w, "hold_status", slot_hold_status_name(res->hold_status));
    } else {
        kv_cstr(w, "status", slot_hold_status_name(res->hold_status));
        if (res->wait_state == SLOT_WAIT_OFFERED)
            kv_bool(w, "offered", true);
    }
    slot__jw_key(w, "hold");
    PUT_FIXED(w, res->hold);
    slot__jw_key_u64(w, "qty", res->qty);
    slot__jw_key_u64(w, "expires_at", res->expires_at_ms);
}

/* waitlist_entries: the list's size and its first entries. */
static void put_entries(slot__jw *w, const slot_res *res)
{
    slot__jw_key_u64(w, "waiting", res->view.waiting);
    slot__jw_key_u64(w, "waiting_qty", res->view.waiting_qty);
    slot__jw_key_u64(w, "waitlist_max", res->view.waitlist_max);
    slot__jw_key(w, "entries");
    SLOT__JW_LIT(w, "[");
    for (uint32_t i = 0; res->entries && i < res->nentries; i++) {
        const slot_wait_entry *e = &res->entries[i];
        if (i > 0)
            SLOT__JW_LIT(w, ",");
        SLOT__JW_LIT(w, "{");
        SLOT__JW_LIT(w, "\"position\":");
        slot__jw_u64(w, e->position);
        slot__jw_key(w, "user");
        PUT_FIXED(w, e->user);
        slot__jw_key(w, "request");
        PUT_FIXED(w, e->request);
        slot__jw_key_u64(w, "qty", e->qty);
        slot__jw_key_u64(w, "joined_at", e->joined_at_ms);
        SLOT__JW_LIT(w, "}");
    }
    SLOT__JW_LIT(w, "]");
}

/* A hold's links to the hold it replaced and the one that replaced it, when set. */
static void put_links(slot__jw *w, const slot_res *res)
{
    if (res->replaces[0]) {
        slot__jw_key(w, "replaces");
        PUT_FIXED(w, res->replaces);
    }
    if (res->replaced_by[0]) {
        slot__jw_key(w, "replaced_by");
        PUT_FIXED(w, res->replaced_by);
    }
}

/* confirm: the hold confirmed (or, for a repeated reacquire, the new hold's
 * current status), qty confirmed and returned; a reacquire that found too
 * few units is sold_out as a hold is. */
static void put_confirm(slot__jw *w, const slot_res *res)
{
    if (res->sold_out) {
        kv_cstr(w, "status", "sold_out");
        slot__jw_key_u64(w, "available", res->available);
        put_short(w, res);
        return;
    }
    kv_cstr(w, "status", slot_hold_status_name(res->hold_status));
    slot__jw_key(w, "hold");
    PUT_FIXED(w, res->hold);
    slot__jw_key_u64(w, "qty", res->qty);
    slot__jw_key_u64(w, "returned", res->returned);
    if (res->replaces[0]) {
        slot__jw_key(w, "replaces");
        PUT_FIXED(w, res->replaces);
    }
}

static void put_hold_reply(slot__jw *w, const slot_res *res)
{
    if (res->taken) { /* named seats not free (docs/protocol.md, "Seated events"): extra carries "taken" */
        kv_cstr(w, "status", "taken");
        return;
    }
    if (res->sold_out) {
        kv_cstr(w, "status", "sold_out");
        slot__jw_key_u64(w, "available", res->available);
        if (res->seated) /* a seated event's: the longest free run of the filter */
            slot__jw_key_u64(w, "max_adjacent", res->max_adjacent);
        put_short(w, res);
        if (res->block) /* a block's hold: what the block has left (docs/protocol.md, "Allocations") */
            slot__jw_key_u64(w, "remaining", res->block_remaining);
        return;
    }
    kv_cstr(w, "status", slot_hold_status_name(res->hold_status));
    slot__jw_key(w, "hold");
    PUT_FIXED(w, res->hold);
    slot__jw_key_u64(w, "qty", res->qty);
    slot__jw_key_u64(w, "expires_at", res->expires_at_ms);
}

static void put_get_hold(slot__jw *w, const slot_res *res)
{
    slot__jw_key(w, "hold");
    PUT_FIXED(w, res->hold);
    slot__jw_key(w, "user");
    PUT_FIXED(w, res->user);
    kv_cstr(w, "status", slot_hold_status_name(res->hold_status));
    slot__jw_key_u64(w, "qty", res->qty);
    slot__jw_key_u64(w, "expires_at", res->expires_at_ms);
    slot__jw_key_u64(w, "created_at", res->created_at_ms);
    slot__jw_key_u64(w, "returned", res->returned);
    slot__jw_key_u64(w, "extensions", res->extensions);
    put_links(w, res);
}

static void put_shards(slot__jw *w, const slot_res *res)
{
    slot__jw_key(w, "shards");
    SLOT__JW_LIT(w, "[");
    for (uint32_t i = 0; res->shard_free && i < res->nshards; i++) {
        if (i > 0)
            SLOT__JW_LIT(w, ",");
        SLOT__JW_LIT(w, "{\"shard\":");
        slot__jw_u64(w, i);
        SLOT__JW_LIT(w, ",\"free\":");
        slot__jw_u64(w, res->shard_free[i]);
        SLOT__JW_LIT(w, "}");
    }
    SLOT__JW_LIT(w, "]");
}

static void put_check(slot__jw *w, const slot_res *res)
{
    uint32_t n = res->nviolations < SLOT_CHECK_VIOLATIONS_MAX ? res->nviolations : SLOT_CHECK_VIOLATIONS_MAX;
    slot__jw_key_u64(w, "events", res->events_checked);
    slot__jw_key_u64(w, "holds", res->holds_checked);
    slot__jw_key(w, "violations");
    SLOT__JW_LIT(w, "[");
    for (uint32_t i = 0; res->violations && i < n; i++) {
        const slot_violation *v = &res->violations[i];
        if (i > 0)
            SLOT__JW_LIT(w, ",");
        SLOT__JW_LIT(w, "{\"invariant\":");
        slot__jw_i64(w, v->invariant);
        slot__jw_key(w, "event");
        PUT_FIXED(w, v->event);
        slot__jw_key(w, "detail");
        PUT_FIXED(w, v->detail);
        SLOT__JW_LIT(w, "}");
    }
    SLOT__JW_LIT(w, "]");
    slot__jw_key_u64(w, "violations_total", res->nviolations);
}

/* join and admission (docs/protocol.md, "Admission"): the entry's state. */
static void put_room_reply(slot__jw *w, const slot_res *res)
{
    static const char *const names[] = {"?", "waiting", "admitted", "sold_out", "expired"};
    kv_cstr(w, "status", res->room_status <= SLOT_ROOM_EXPIRED ? names[res->room_status] : "?");
    if (res->room_status == SLOT_ROOM_SOLD_OUT && !res->ticket[0])
        return; /* a join into a sold-out room made no entry */
    slot__jw_key(w, "ticket");
    PUT_FIXED(w, res->ticket);
    if (res->room_status == SLOT_ROOM_WAITING) {
        if (res->position_null) {
            SLOT__JW_LIT(w, ",\"position\":null");
            slot__jw_key_u64(w, "draw_at", res->draw_at_ms);
        } else {
            slot__jw_key_u64(w, "position", res->position);
        }
    } else if (res->room_status == SLOT_ROOM_ADMITTED) {
        slot__jw_key(w, "grant");
        PUT_FIXED(w, res->grant);
        slot__jw_key_u64(w, "expires_at", res->expires_at_ms);
    } else if (res->room_status == SLOT_ROOM_EXPIRED) {
        slot__jw_key_u64(w, "expires_at", res->expires_at_ms);
    }
}

/* The op's own fields of a success reply (docs/protocol.md, one section per op). */
static void put_op_fields(slot__jw *w, const slot_req *req, const slot_res *res)
{
    slot_op op = req->op;
    switch (op) {
    case SLOT_OP_HELLO:
        kv_cstr(w, "server", "slotd");
        slot__jw_key_u64(w, "protocol", SLOT_PROTOCOL_VERSION);
        kv_cstr(w, "role", slot_role_name(res->role));
        /* SLOT_PROTO_FEATURES without its "]", then what this server adds */
        SLOT__JW_LIT(w, ",\"features\":");
        slot__jw_mem(w, SLOT_PROTO_FEATURES, sizeof(SLOT_PROTO_FEATURES) - 2);
        if (res->cluster)
            SLOT__JW_LIT(w, ",\"cluster\"");
        if (res->http)
            SLOT__JW_LIT(w, ",\"http\"");
        if (res->placement) /* docs/protocol.md, "Placement" */
            SLOT__JW_LIT(w, ",\"placement\"");
        SLOT__JW_LIT(w, "]");
        break;
    case SLOT_OP_HOLD:
        put_hold_reply(w, res);
        break;
    case SLOT_OP_ALLOCATE:
    case SLOT_OP_DEALLOCATE: /* docs/protocol.md, "Allocations"; allocate's sold_out as a hold's */
        if (res->sold_out) {
            kv_cstr(w, "status", "sold_out");
            slot__jw_key_u64(w, "available", res->available);
            break;
        }
        kv_view_str(w, "allocation", res->block_name, sizeof res->block_name);
        slot__jw_key_u64(w, "qty", res->block_qty);
        slot__jw_key_u64(w, "remaining", res->block_remaining);
        break;
    case SLOT_OP_CONFIRM:
        put_confirm(w, res);
        break;
    case SLOT_OP_EXTEND:
        kv_cstr(w, "status", slot_hold_status_name(res->hold_status));
        slot__jw_key(w, "hold");
        PUT_FIXED(w, res->hold);
        slot__jw_key_u64(w, "expires_at", res->expires_at_ms);
        slot__jw_key_u64(w, "extensions", res->extensions);
        break;
    case SLOT_OP_RELEASE:
    case SLOT_OP_CANCEL:
        kv_bool(w, op == SLOT_OP_RELEASE ? "released" : "cancelled", res->done);
        kv_cstr(w, "status", slot_hold_status_name(res->hold_status));
        break;
    case SLOT_OP_GET_HOLD:
        put_get_hold(w, res);
        break;
    case SLOT_OP_EVENT: /* the view, then the count that slotctl rebalance --by holds samples */
        put_event_view(w, &res->view);
        slot__jw_key_u64(w, "holds_made", res->view.holds_made);
        break;
    case SLOT_OP_CREATE_EVENT:
    case SLOT_OP_SET_CAPACITY:
    case SLOT_OP_RESHARD:
    case SLOT_OP_SET_STATUS:
    case SLOT_OP_SET_SALE_WINDOW:
    case SLOT_OP_SET_ADMISSION:
        put_event_view(w, &res->view);
        break;
    case SLOT_OP_JOIN:
    case SLOT_OP_ADMISSION:
        put_room_reply(w, res);
        break;
    case SLOT_OP_SHARDS:
        put_shards(w, res);
        break;
    case SLOT_OP_CHECK:
        put_check(w, res);
        break;
    case SLOT_OP_EXPIRE:
        slot__jw_key_u64(w, "expired", res->expired);
        break;
    case SLOT_OP_DIGEST:
    case SLOT_OP_BACKUP: /* backup: put_server_facts adds "bytes" and "ms" */
        slot__jw_key_u64(w, "seq", res->seq);
        kv_cstr(w, "digest", res->digest);
        break;
    case SLOT_OP_HOLD_MANY:
        put_cart(w, res);
        break;
    case SLOT_OP_WAITLIST_JOIN:
    case SLOT_OP_WAITLIST:
        put_wait(w, op, res);
        break;
    case SLOT_OP_WAITLIST_LEAVE:
        kv_bool(w, "left", res->done);
        break;
    case SLOT_OP_WAITLIST_ENTRIES:
        put_entries(w, res);
        break;
    default: /* the feed ops (proto_feed.c); stats; cluster and cluster_change: put_cluster_view, last */
        slot__proto_feed_put(w, req, res);
        break;
    }
}

/* "}\n", the NUL when it fits, and the needed length. */
static size_t finish(slot__jw *w)
{
    SLOT__JW_LIT(w, "}\n");
    return slot__jw_finish(w);
}

size_t slot_proto_encode(const slot_req *req, const slot_res *res, char *buf, size_t cap)
{
    slot__jw w;
    slot__jw_init(&w, buf, cap);
    if (res->err != SLOT_E_OK) {
        /* Error replies have the fixed shape of docs/protocol.md; not_primary adds "primary" when known. */
        put_head(&w, &req->id, false);
        size_t mlen = strnlen(res->message, sizeof(res->message));
        put_error_body(&w, res->err, mlen ? res->message : NULL, mlen);
        if (res->err == SLOT_E_HOLD_NOT_ACTIVE)
            kv_cstr(&w, "status", slot_hold_status_name(res->hold_status));
        if (res->err == SLOT_E_NOT_ON_SALE) { /* docs/protocol.md, "Sale windows": both times, always */
            slot__jw_key_u64(&w, "opens_at", res->opens_at_ms);
            slot__jw_key_u64(&w, "closes_at", res->closes_at_ms);
            /* an ancestor's (docs/protocol.md, "Clarifications of v1.2"); a cart names its item instead */
            if (req->op == SLOT_OP_JOIN) /* "Clarifications of v1.2", Admission */
                slot__jw_key_u64(&w, "queue_opens_at", res->draw_at_ms);
            if (res->sale_event[0] && req->op != SLOT_OP_HOLD_MANY)
                kv_view_str(&w, "event", res->sale_event, sizeof res->sale_event);
        }
        if (req->op == SLOT_OP_HOLD_MANY && res->item_event[0]) { /* the item the error is about */
            slot__jw_key(&w, "event");
            PUT_FIXED(&w, res->item_event);
        }
        if (res->err == SLOT_E_FEED_TRUNCATED)
            slot__jw_key_u64(&w, "oldest", res->feed_from);
        if (res->err == SLOT_E_RATE_LIMITED) { /* docs/protocol.md, "Client limits" */
            const char *lim = res->limit ? res->limit : "client_rate";
            kv_cstr(&w, "limit", lim);
            slot__jw_key_u64(&w, "retry_after_ms", res->retry_after_ms);
        }
        if (res->err == SLOT_E_MOVING) /* docs/protocol.md, "Placement" */
            slot__jw_key_u64(&w, "retry_after_ms", res->retry_after_ms);
        if (res->err == SLOT_E_NOT_PRIMARY && res->primary[0]) /* docs/protocol.md, "Clients following the primary" */
            kv_view_str(&w, "primary", res->primary, sizeof res->primary);
        if (res->fields) /* wrong_set's event, set, gen and primary (docs/protocol.md, "Placement") */
            slot__jw_mem(&w, res->fields, res->fields_len);
        return finish(&w);
    }
    put_head(&w, &req->id, true);
    put_op_fields(&w, req, res);
    if (res->extra && res->extra_len > 0) { /* members the allocator wrote: seats, taken, rows, categories */
        SLOT__JW_LIT(&w, ",");
        slot__jw_mem(&w, res->extra, res->extra_len);
    }
    if (res->replay)
        kv_bool(&w, "replay", true);
    put_server_facts(&w, req, res);
    if (res->cluster_view)
        put_cluster_view(&w, res->cluster_view);
    if (res->fields) /* placement's events and sets */
        slot__jw_mem(&w, res->fields, res->fields_len);
    return finish(&w);
}

size_t slot_proto_encode_error(const slot_id *id, slot_err err, const char *message, char *buf, size_t cap)
{
    slot__jw w;
    slot__jw_init(&w, buf, cap);
    if (err == SLOT_E_OK || (unsigned)err >= SLOT_E__COUNT)
        err = SLOT_E_INTERNAL; /* "ok" is no wire error code; keep the closed set */
    put_head(&w, id, false);
    put_error_body(&w, err, message, message ? strlen(message) : 0);
    return finish(&w);
}
