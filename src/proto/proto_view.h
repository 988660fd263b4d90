/*
 * proto_view.h — the one writer of an event view's JSON members, shared by
 * the replies (proto_enc.c) and the feed's push line (proto_view.c).
 * Internal to libslot.
 */
#ifndef SLOT_PROTO_VIEW_H
#define SLOT_PROTO_VIEW_H

#include "base/jsonw.h"
#include "slot/ops.h"

/*
 * slot__proto_put_view — v's members after the event's name, each with its
 * leading comma: "status", "capacity", "available", "held", "confirmed",
 * "shards", "hold_ttl_ms", "max_per_user", "max_per_request", "opens_at",
 * "closes_at", "max_extensions", "max_hold_ms", "waitlist_max", "waiting",
 * "waiting_qty" (docs/protocol.md, "event"). The caller writes "event"
 * (a reply from v->event, a feed entry from its own name). Any thread.
 */
void slot__proto_put_view(slot__jw *w, const slot_event_view *v);

#endif
