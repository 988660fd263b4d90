/*
 * proto_feed.h — the wire format of the feed ops (docs/protocol.md, "Feed"):
 * their fields and their replies, for proto.c. Internal to libslot.
 */
#ifndef SLOT_PROTO_FEED_H
#define SLOT_PROTO_FEED_H

#include <jansson.h>
#include <stddef.h>

#include "base/jsonw.h"
#include "slot/ops.h"

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

/* slot__proto_feed_put — the op's own fields of a feed op's success reply
 * into w (nothing for other ops). */
void slot__proto_feed_put(slot__jw *w, const slot_req *req, const slot_res *res);

#endif
