/* client_int.h — what the client library's files share (slot/client.h is the API). */
#ifndef SLOT_CLIENT_INT_H
#define SLOT_CLIENT_INT_H

#include <stddef.h>
#include <stdint.h>

#include "slot/limits.h"

/* The longest request line: every string field of slot_req escaped at 6 bytes
 * per byte (\u00XX), plus keys and numbers. */
#define SLOT__CLIENT_REQ_BYTES_MAX                                                                         \
    (6u * (SLOT_EVENT_BYTES_MAX + SLOT_REQUEST_BYTES_MAX + SLOT_USER_BYTES_MAX + SLOT_HOLD_ARG_BYTES_MAX + \
           SLOT_TOKEN_BYTES_MAX + SLOT_ID_BYTES_MAX) +                                                     \
     1024u)

/* slot__follow_call — slot_follow_call_line (slot/client.h) with flags:
 * SLOT__FOLLOW_STOP_WRONG_SET returns a wrong_set answer (rc 0) instead of
 * following its "primary", for slot_route, which picks the owner's own
 * follower. deadline_ms: a monotonic time (ms, CLOCK_MONOTONIC) the call also
 * stops at; 0 = only the follower's own deadline_ms. Caller's thread. */
#define SLOT__FOLLOW_STOP_WRONG_SET 1u
struct slot_follow;
struct slot_reply;
int slot__follow_call(struct slot_follow *f, const char *line, size_t len, struct slot_reply *out, unsigned flags,
                      int64_t deadline_ms);
/* slot__now_ms — CLOCK_MONOTONIC in ms. Any thread. */
int64_t slot__now_ms(void);

#endif
