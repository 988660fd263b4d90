/*
 * http_line.h — the text side of the HTTP listener (http.c): the status of
 * each answer, and an HTTP request made into the request line the TCP
 * protocol would carry (docs/protocol.md, "HTTP"). No I/O, no server state:
 * any thread.
 */
#ifndef SLOT_HTTP_LINE_H
#define SLOT_HTTP_LINE_H

#include <stdbool.h>
#include <stddef.h>

#include "slot/error.h"

/* Longest op name in a /v1/OP path (the longest op, "set_sale_window", has 15). */
#define SLOT_HTTP_OP_BYTES_MAX 32

/* slot__http_status — the HTTP status of an answer with error code err
 * (SLOT_E_OK: 200); 500 for internal and any code out of range. */
unsigned slot__http_status(slot_err err);

/* slot__http_op_ok — name (NUL-terminated) looks like an op: 1..SLOT_HTTP_OP_BYTES_MAX
 * bytes of [a-z_]. Whether the op exists is the parser's to say (unknown_op). */
bool slot__http_op_ok(const char *name);

/*
 * slot__http_line — the request line for op with the body's n bytes: {"op":OP
 * and the body's members, with "request":KEY first when key is not NULL (the
 * caller checked that the body has none: slot__http_body_has_request). An
 * empty body is {}. A body that is not an object (only spaces, an array,
 * garbage) is copied as it is, so the parser answers it as it would the same
 * line over TCP (bad_json); a body with its own "op" is a duplicate key.
 *   buf/cap: in and out; the line is written to *buf, grown (realloc) when
 *   short; the caller frees it.
 *   byte_delta: out; what to add to a byte position of the line to name the
 *   same byte of the body (the line's tail is the body's, moved by the
 *   bytes the line adds in front), for slot_proto_parse_at: a client is
 *   told where in its own body the parser stopped.
 * Returns the line's length in bytes, or 0 when out of memory (*buf is then
 * unchanged and still the caller's).
 */
size_t slot__http_line(char **buf, size_t *cap, const char *op, const char *body, size_t n, const char *key,
                       ptrdiff_t *byte_delta);

/* slot__http_body_has_request — the n bytes are one JSON object with a
 * "request" member. A body that does not parse says false. */
bool slot__http_body_has_request(const char *body, size_t n);

/* slot__http_event_body — {"event":NAME} with NAME (NUL-terminated) escaped,
 * into *buf as slot__http_line does (GET /v1/events/NAME is the event op);
 * its length, or 0 when out of memory. */
size_t slot__http_event_body(char **buf, size_t *cap, const char *name);

/*
 * slot__http_owner_addr — the "http" member of a wrong_set reply line (len
 * bytes; the server's own encoding: a member `"http":"H:P"` whose value has no
 * escapes), the owning set's HTTP address for a 307's Location
 * (docs/protocol.md, "Placement"), into out (cap bytes, NUL-terminated).
 * Only address bytes are taken ([A-Za-z0-9.:[]-], 1..cap-1 of them); any other
 * value is not an address. Returns its length, or 0 when the line has none.
 */
size_t slot__http_owner_addr(const char *line, size_t len, char *out, size_t cap);

#endif
