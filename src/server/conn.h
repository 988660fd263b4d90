/*
 * conn.h — slotd's connections: accepting, reading and framing lines,
 * per-connection limits (--max-line, --max-inflight, --max-output, the
 * timeouts), and writing replies in request order. Loop thread only.
 */
#ifndef SLOT_CONN_H
#define SLOT_CONN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "server_int.h"

/* slot__conn_state_name — "open", "draining", "closing"; "?" out of range. Static string. */
const char *slot__conn_state_name(conn_state st);

/* slot__conn_state_ok — true when from -> to is an edge of the connection
 * state machine (open -> draining | closing, draining -> closing). */
bool slot__conn_state_ok(conn_state from, conn_state to);

/* slot__on_connection — the listener's uv_connection_cb: accepts, or pauses
 * accepting at --max-connections (resumed when a connection closes). */
void slot__on_connection(uv_stream_t *listener, int status);

/*
 * slot__conn_flush — answer c's entries in request order as far as they are
 * answered (a read runs when it reaches the head; a queued write stops the
 * walk), write what was encoded, then drain or pace the connection. c may be
 * closed by the call (out of memory, a write error); it is never freed here.
 */
void slot__conn_flush(conn *c);

/* slot__conn_undirty — take c off the server's list of connections with new
 * answers (before it closes or is freed). O(that list). */
void slot__conn_undirty(conn *c);

/* slot__conn_close — close now (idempotent); queued entries outlive it. */
void slot__conn_close(conn *c);

/* slot__conn_drain — end politely: replies written, FIN, unread input
 * discarded until EOF or SLOT_DRAIN_MS. Only from open; else nothing. */
void slot__conn_drain(conn *c);

/* slot__conn_pace — pause or resume reading from c by its bounds (unanswered
 * requests, unsent reply bytes) and the server's entry budget. */
void slot__conn_pace(conn *c);

/* slot__conn_out_reserve — room for need more bytes in c's output buffer
 * (grown by doubling); false when out of memory. */
bool slot__conn_out_reserve(conn *c, size_t need);

/* slot__conn_peer (conn_log.c) — c's peer as "ADDR:PORT" ("[ADDR]:PORT" for IPv6), or
 * "?" when the socket cannot say, into buf[cap] (64 bytes are enough). */
void slot__conn_peer(conn *c, char *buf, size_t cap);

/* slot__conn_dropped (conn_log.c) — log that c is being dropped: a warn line "dropped a
 * client" with its peer, reason (a short code: idle_timeout, line_timeout,
 * write_timeout, drain_timeout, line_too_long, unauthenticated, out_of_memory)
 * and detail (a sentence naming the flag when one decides it). */
void slot__conn_dropped(conn *c, const char *reason, const char *detail);
/*
 * slot__conn_parse — parse one request line (len >= 1 bytes, no newline)
 * into e, which is c's and ENTRY_DONE. Returns true when it parsed (e->parsed);
 * false when e now holds the answer: the parser's error, or unauthenticated
 * (c then closes after it) when tokens are configured and c has no role yet.
 * Counts bad lines and errors. Shared by the TCP framing here and http.c.
 * byte_delta: as slot_proto_parse_at's (0 for a TCP line; http.c's made
 * line counts the positions of its messages from the client's body).
 */
bool slot__conn_parse(server *s, conn *c, entry *e, const char *line, size_t len, ptrdiff_t byte_delta);

/* slot__conn_encode — append e's reply line (with its "\n") to c->out; false
 * when out of memory (nothing appended). */
bool slot__conn_encode(conn *c, const entry *e);

/* slot__conns_reap — close every connection past one of its time bounds.
 * O(connections); from the sweeper's timer and while stopping. */
void slot__conns_reap(server *s);

#endif
