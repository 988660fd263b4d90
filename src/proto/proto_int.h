/*
 * proto_int.h — the proto wing's one internal header: what its files share
 * (the feed ops' fields, the one event-view writer). The public face is
 * slot/proto.h and slot/feed.h.
 */
#ifndef SLOT_PROTO_INT_H
#define SLOT_PROTO_INT_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "base/jsonw.h"
#include "slot/ops.h"

/* ==== from proto_feed.h ====================================================== */
/*
 * proto_feed.h — the wire format of the feed ops (docs/protocol.md, "Feed"):
 * their fields and their replies, for proto.c. Internal to libslot.
 */
/*
 * slot__proto_feed_parse — the fields of r->op (subscribe, ack, unsubscribe,
 * feed_consumers, feed_forget) from root into r. consumer: 1..64 bytes of
 * [A-Za-z0-9._:-]; subscribe's from: "acked" (default), "start" or an
 * integer 1..2^63-1, window 1..SLOT_FEED_WINDOW_MAX (default
 * SLOT_FEED_WINDOW_DEFAULT); ack's seq 0..2^63-1. Anything else is
 * SLOT_E_INVALID_ARGUMENT with msg naming the field; another op is
 * SLOT_E_UNKNOWN_OP. Thread-safe.
 */
slot_err slot__proto_feed_parse(json_t *root, slot_req *r, char *msg, size_t msglen);

/*
 * slot__proto_check_parsed — asserts what a successful parse hands on is
 * within slot/limits.h's bounds: every string within its buffer and
 * terminated, every number in its documented range (0 where the field was
 * absent). A field outside is a parser bug (SLOT_ASSERT). Any thread.
 */
void slot__proto_check_parsed(const slot_req *r);

/* ==== the request parser's two paths (proto.c, proto_fast.c) ================ */
/*
 * slot__proto_parse_fast — the hand-written parser of the hot ops' common
 * shape (hold, confirm, release, extend; proto_fast.c's header lists the
 * subset). line/len as slot_proto_parse. True: *req is filled exactly as
 * slot__proto_parse_full would fill it, and that parse would succeed. False:
 * the line is outside the subset (valid or not); *req is untouched or partly
 * written, and the caller parses with slot__proto_parse_full. No heap use.
 * Thread-safe. tests/test_proto_fast.c and fuzz_proto_fast hold it to that.
 */
bool slot__proto_parse_fast(const char *line, size_t len, slot_req *req);

/*
 * slot__proto_parse_full — the jansson path: slot_proto_parse_at's contract
 * (arguments, errors, messages) for every line. slot_proto_parse_at tries
 * the fast path first. Thread-safe.
 */
slot_err slot__proto_parse_full(const char *line, size_t len, ptrdiff_t byte_delta, slot_req *req, char *msg,
                                size_t msglen);

/* proto_seat.c (docs/protocol.md, "Seated events"). Each returns SLOT_E_OK or
 * invalid_argument with a message naming the field.
 * slot__proto_seat_map — create_event's "seats" into r->seat_map (heap;
 *   r owns it) and r->capacity; "capacity", when given, must equal the count.
 * slot__proto_seat_hold — a hold's "seats" (then *qty_done: r->qty is their
 *   number, "qty" when given must agree), "adjacent", "category", "section";
 *   seats with any of the three others is refused.
 * slot__proto_seat_confirm — a partial confirm's "seats". */
slot_err slot__proto_seat_map(json_t *root, slot_req *r, char *msg, size_t msglen);
slot_err slot__proto_seat_hold(json_t *root, slot_req *r, bool *qty_done, char *msg, size_t msglen);
slot_err slot__proto_seat_confirm(json_t *root, slot_req *r, char *msg, size_t msglen);

/* slot__proto_place_parse — move_event's "to" and the internal ops' fields
 * (set, gen, mac, first, data, cursor) into r->place (heap; r owns it, also
 * on an error), after proto.c parsed the event (proto_place.c). SLOT_E_OK or
 * invalid_argument with msg naming the field. */
slot_err slot__proto_place_parse(json_t *root, slot_req *r, char *msg, size_t msglen);

/* slot__proto_feed_put — the op's own fields of a feed op's success reply
 * into w (nothing for other ops). */
void slot__proto_feed_put(slot__jw *w, const slot_req *req, const slot_res *res);

/* ==== from proto_view.h ====================================================== */
/*
 * proto_view.h — the one writer of an event view's JSON members, shared by
 * the replies (proto_enc.c) and the feed's push line (proto_view.c).
 * Internal to libslot.
 */
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
