/*
 * proto_view.c — the event view on the wire, written once for the replies
 * that show an event (proto_enc.c: event, create_event, set_capacity,
 * reshard, set_status, set_sale_window) and for the feed's event.created /
 * event.changed entries, and the feed's push line (slot_feed_encode,
 * slot/feed.h; docs/protocol.md, "Feed"). Calls only base. Any thread.
 */
#include "proto_int.h"

#include <string.h>

#include "slot/feed.h"

/* The wire type of a feed entry, from slot/feed.h's one map of them (the
 * allocator's slot_feed_type_name reads the same map; proto does not call
 * into the allocator). */
static const char *type_name(slot_feed_type t)
{
    static const char *const names[SLOT_FEED__COUNT] = {
#define SLOT__FT_WIRE(name, wire) wire,
        SLOT_FEED_TYPE_MAP(SLOT__FT_WIRE)
#undef SLOT__FT_WIRE
    };
    return (unsigned)t < SLOT_FEED__COUNT ? names[t] : "?";
}

static void hold_id(slot__jw *w, const char *name, uint64_t seq, uint64_t tag)
{
    static const char hex[] = "0123456789abcdef";
    char id[SLOT_HOLD_ID_BYTES];
    for (int i = 0; i < 16; i++) {
        id[i] = hex[(seq >> (60 - 4 * i)) & 0xf];
        id[16 + i] = hex[(tag >> (60 - 4 * i)) & 0xf];
    }
    slot__jw_key_str(w, name, id, sizeof(id), SLOT__JW_STR_STRICT);
}

void slot__proto_put_view(slot__jw *w, const slot_event_view *v)
{
    const char *status = slot_event_status_name(v->status);
    slot__jw_key_str(w, "status", status, strlen(status), SLOT__JW_STR_STRICT);
    slot__jw_key_u64(w, "capacity", v->capacity);
    slot__jw_key_u64(w, "available", v->available);
    slot__jw_key_u64(w, "held", v->held);
    slot__jw_key_u64(w, "confirmed", v->confirmed);
    slot__jw_key_u64(w, "shards", v->shards);
    slot__jw_key_u64(w, "hold_ttl_ms", v->hold_ttl_ms);
    slot__jw_key_u64(w, "max_per_user", v->max_per_user);
    slot__jw_key_u64(w, "max_per_request", v->max_per_request);
    slot__jw_key_u64(w, "opens_at", v->opens_at_ms);
    slot__jw_key_u64(w, "closes_at", v->closes_at_ms);
    slot__jw_key_u64(w, "max_extensions", v->max_extensions);
    slot__jw_key_u64(w, "max_hold_ms", v->max_hold_ms);
    slot__jw_key_u64(w, "waitlist_max", v->waitlist_max);
    slot__jw_key_u64(w, "waiting", v->waiting);
    slot__jw_key_u64(w, "waiting_qty", v->waiting_qty);
    /* v1.2 (docs/protocol.md, "Ticket types", "Allocations") */
    slot__jw_key_u64(w, "allocated", v->allocated);
    if (v->parent[0]) {
        slot__jw_key_str(w, "parent", v->parent, strnlen(v->parent, sizeof(v->parent)), SLOT__JW_STR_STRICT);
        slot__jw_key_u64(w, "effective_available", v->effective_available);
    }
    if (v->children > 0)
        slot__jw_key_u64(w, "children", v->children);
    /* v1.2 "Admission": a room's settings and counts */
    if (v->admission != SLOT_ADMISSION_NONE) {
        SLOT__JW_LIT(w, ",\"admission\":");
        if (v->admission == SLOT_ADMISSION_QUEUE)
            SLOT__JW_LIT(w, "\"queue\"");
        else
            SLOT__JW_LIT(w, "\"lottery\"");
        slot__jw_key_u64(w, "admit_per_s", v->admit_per_s);
        slot__jw_key_u64(w, "grant_ttl_ms", v->grant_ttl_ms);
        slot__jw_key_u64(w, "queue_opens_at", v->queue_opens_at_ms);
        SLOT__JW_LIT(w, ",\"room\":{\"joined\":");
        slot__jw_u64(w, v->room_joined);
        slot__jw_key_u64(w, "admitted", v->room_admitted);
        slot__jw_key_u64(w, "waiting", v->room_waiting);
        slot__jw_key_u64(w, "open_grants", v->room_open);
        SLOT__JW_LIT(w, "}");
    }
    /* v1.2 "Client limits": shown when set */
    if (v->max_active_per_client > 0)
        slot__jw_key_u64(w, "max_active_per_client", v->max_active_per_client);
    if (v->client_rate > 0)
        slot__jw_key_u64(w, "client_rate", v->client_rate);
    if (v->nblocks > 0) { /* {"A":{"qty":Q,"remaining":R,"held":H,"confirmed":C}} */
        slot__jw_key(w, "allocations");
        SLOT__JW_LIT(w, "{");
        for (uint32_t i = 0; i < v->nblocks && i < SLOT_BLOCKS_MAX; i++) {
            if (i > 0)
                SLOT__JW_LIT(w, ",");
            slot__jw_str(w, v->blocks[i].name, strnlen(v->blocks[i].name, sizeof(v->blocks[i].name)),
                         SLOT__JW_STR_STRICT);
            SLOT__JW_LIT(w, ":{\"qty\":");
            slot__jw_u64(w, v->blocks[i].qty);
            slot__jw_key_u64(w, "remaining", v->blocks[i].remaining);
            slot__jw_key_u64(w, "held", v->blocks[i].held);
            slot__jw_key_u64(w, "confirmed", v->blocks[i].confirmed);
            SLOT__JW_LIT(w, "}");
        }
        SLOT__JW_LIT(w, "}");
    }
}

size_t slot_feed_encode(const slot_feed_entry *e, char *out, size_t cap)
{
    slot__jw w;
    slot__jw_init(&w, out, cap);
    SLOT__JW_LIT(&w, "{\"feed\":");
    slot__jw_u64(&w, e->seq);
    const char *type = type_name(e->type);
    slot__jw_key_str(&w, "type", type, strlen(type), SLOT__JW_STR_STRICT);
    slot__jw_key_u64(&w, "at", e->at_ms);
    slot__jw_key_str(&w, "event", e->event, e->event_len, SLOT__JW_STR_STRICT);
    if (e->type == SLOT_FEED_EVENT_MOVED) { /* docs/protocol.md, "Placement": the last entry of E here */
        slot__jw_key_str(&w, "to", e->place_set, e->place_set_len, SLOT__JW_STR_STRICT);
        slot__jw_key_u64(&w, "gen", e->place_gen);
    } else if (e->type == SLOT_FEED_EVENT_ARRIVED) { /* the first entry of E here: its state */
        slot__jw_key_str(&w, "from", e->place_set, e->place_set_len, SLOT__JW_STR_STRICT);
        slot__jw_key_u64(&w, "gen", e->place_gen);
        slot__proto_put_view(&w, &e->view);
    } else if (e->type == SLOT_FEED_EVENT_CREATED || e->type == SLOT_FEED_EVENT_CHANGED) {
        slot__proto_put_view(&w, &e->view);
    } else {
        hold_id(&w, "hold", e->hold_seq, e->hold_tag);
        slot__jw_key_str(&w, "user", e->user, e->user_len, SLOT__JW_STR_STRICT);
        if (e->type != SLOT_FEED_HOLD_EXTENDED)
            slot__jw_key_u64(&w, "qty", e->qty);
        if (e->type == SLOT_FEED_HOLD_HELD || e->type == SLOT_FEED_HOLD_OFFERED || e->type == SLOT_FEED_HOLD_EXTENDED)
            slot__jw_key_u64(&w, "expires_at", e->expires_at_ms);
        if (e->type == SLOT_FEED_HOLD_HELD || e->type == SLOT_FEED_HOLD_OFFERED)
            slot__jw_key_str(&w, "request", e->request, e->request_len, SLOT__JW_STR_STRICT);
        if (e->nchain > 0) { /* docs/protocol.md, "Ticket types": absent for an event with no parent */
            slot__jw_key(&w, "chain");
            SLOT__JW_LIT(&w, "[");
            slot__jw_str(&w, e->event, e->event_len, SLOT__JW_STR_STRICT);
            for (uint8_t i = 0; i < e->nchain && i < SLOT_ANCESTORS_MAX; i++) {
                SLOT__JW_LIT(&w, ",");
                slot__jw_str(&w, e->chain[i], e->chain_len[i], SLOT__JW_STR_STRICT);
            }
            SLOT__JW_LIT(&w, "]");
        }
        if (e->alloc_len > 0)
            slot__jw_key_str(&w, "allocation", e->alloc, e->alloc_len, SLOT__JW_STR_STRICT);
        if (e->seats_len > 0) { /* docs/protocol.md, "Seated events": the hold's seats */
            slot__jw_key(&w, "seats");
            SLOT__JW_LIT(&w, "[");
            for (uint32_t at = 0; at < e->seats_len && at <= SLOT_FEED_SEATS_BYTES_MAX;) {
                const char *p = e->seats + at, *comma = memchr(p, ',', e->seats_len - at);
                size_t n = comma ? (size_t)(comma - p) : e->seats_len - at;
                if (at > 0)
                    SLOT__JW_LIT(&w, ",");
                slot__jw_str(&w, p, n, SLOT__JW_STR_STRICT);
                at += (uint32_t)n + 1u;
            }
            SLOT__JW_LIT(&w, "]");
        }
        if (e->type == SLOT_FEED_HOLD_CONFIRMED) {
            slot__jw_key_u64(&w, "returned", e->returned);
            if (e->replaces_seq)
                hold_id(&w, "replaces", e->replaces_seq, e->replaces_tag);
        }
    }
    SLOT__JW_LIT(&w, "}\n");
    return slot__jw_finish(&w);
}
