/*
 * slot/proto.h — the wire format of docs/protocol.md: one JSON object per line in,
 * one per line out. Parsing is strict (jansson with duplicate keys rejected,
 * plus slotd's own depth, integer and name checks) and ends in a typed
 * struct slot_req; nothing past this module sees JSON.
 */
#ifndef SLOT_PROTO_H
#define SLOT_PROTO_H

#include <stddef.h>

#include "slot/alloc.h"
#include "slot/error.h"

#define SLOT_PROTOCOL_VERSION 1
/* The v1.1 sections this server implements, as hello's "features" lists them
 * (docs/protocol.md, "Version 1.1"): a JSON array, written as it stands;
 * _CLUSTER is the list of a replica-set member (slot_res.cluster). */
#define SLOT_PROTO_FEATURES                                                                                    \
    "[\"windows\",\"extend\",\"partial_confirm\",\"reacquire\",\"hold_many\",\"waitlist\",\"feed\",\"types\"," \
    "\"allocations\",\"admission\",\"client_limits\",\"seats\"]"
#define SLOT_PROTO_FEATURES_CLUSTER                                                                            \
    "[\"windows\",\"extend\",\"partial_confirm\",\"reacquire\",\"hold_many\",\"waitlist\",\"feed\",\"types\"," \
    "\"allocations\",\"admission\",\"client_limits\",\"seats\",\"cluster\"]"
#define SLOT_REPLY_BYTES_HINT 512 /* most replies fit; shards/check/stats may need more */

/*
 * slot_proto_parse — parse and validate one request line.
 *   line/len: the bytes of the line without its "\n" or "\r\n"; len >= 1.
 *             Need not be NUL-terminated; not kept after the call.
 *   req: out; zeroed and filled here. req->id is filled as soon as the id is
 *        known to be valid, so an error reply can echo it (docs/protocol.md: a line
 *        that could not be parsed, or whose id is invalid, gets no id).
 *   msg/msglen: out; a human message naming the field on error.
 * Returns SLOT_E_OK, or SLOT_E_BAD_JSON (not one valid JSON object: syntax,
 * duplicate key, invalid UTF-8, \u0000, lone surrogate, depth > 32, not an
 * object), SLOT_E_INVALID_ARGUMENT (a bad id, a field missing, of the wrong
 * type or out of range, an integer too large for int64 anywhere), or
 * SLOT_E_UNKNOWN_OP. Thread-safe (no shared state).
 */
slot_err slot_proto_parse(const char *line, size_t len, slot_req *req, char *msg, size_t msglen);

/*
 * slot_proto_parse_at — slot_proto_parse of a line made from another text
 * (an HTTP body: docs/protocol.md, "HTTP"), whose messages name byte
 * positions ("(byte N)" of bad_json and of an integer out of range) as that
 * text counts them.
 *   byte_delta: added to each position counted in line; a position that
 *               would fall below 0 (inside bytes the line added) is named 0.
 *               0 is slot_proto_parse.
 *   line/len, req, msg/msglen: as slot_proto_parse.
 * Returns what slot_proto_parse returns. Thread-safe (no shared state).
 */
slot_err slot_proto_parse_at(const char *line, size_t len, ptrdiff_t byte_delta, slot_req *req, char *msg,
                             size_t msglen);

/*
 * slot_proto_encode — encode the reply to `req` from its result `res`, as
 * one line ending in "\n".
 *   buf/cap: out. Returns the reply's length in bytes (with the "\n"); when
 *   that is >= cap the reply did not fit (nothing usable is in buf) and the
 *   caller retries with a buffer of at least the returned size + 1.
 * The id of req is echoed when req->id.kind != SLOT_ID_NONE.
 */
size_t slot_proto_encode(const slot_req *req, const slot_res *res, char *buf, size_t cap);

/*
 * slot_proto_encode_error — an error reply not tied to a parsed request
 * (bad_json, line_too_long, overloaded, ...).
 *   id: echoed when not NULL and id->kind != SLOT_ID_NONE.
 *   message: NULL for the default message of err.
 * Returns the length as slot_proto_encode does.
 */
size_t slot_proto_encode_error(const slot_id *id, slot_err err, const char *message, char *buf, size_t cap);

/*
 * slot_place_b64_encode — base64 (RFC 4648, padded) of src[0..n) into dst
 * (cap bytes, NUL-ended): the placement's records on the wire (place_export's
 * "data" and "cursor"; docs/design.md, "Moving an event").
 *   Returns the text's length without the NUL, or 0 when cap is short
 *   (cap >= (n + 2) / 3 * 4 + 1 suffices). Thread-safe.
 */
size_t slot_place_b64_encode(const uint8_t *src, size_t n, char *dst, size_t cap);

#endif
