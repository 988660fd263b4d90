/* client_int.h — what the client library's files share (slot/client.h is the API). */
#ifndef SLOT_CLIENT_INT_H
#define SLOT_CLIENT_INT_H

#include "slot/limits.h"

/* The longest request line: every string field of slot_req escaped at 6 bytes
 * per byte (\u00XX), plus keys and numbers. */
#define SLOT__CLIENT_REQ_BYTES_MAX                                                                         \
    (6u * (SLOT_EVENT_BYTES_MAX + SLOT_REQUEST_BYTES_MAX + SLOT_USER_BYTES_MAX + SLOT_HOLD_ARG_BYTES_MAX + \
           SLOT_TOKEN_BYTES_MAX + SLOT_ID_BYTES_MAX) +                                                     \
     1024u)

#endif
