/*
 * http.h — the HTTP listener (--http HOST:PORT; docs/protocol.md, "HTTP"):
 * libmicrohttpd driven from the libuv loop. Each request becomes an entry
 * of a stand-in conn (conn.http) and goes through the same parse, roles,
 * batches and group commit as a TCP line (conn.h); its answer is the same
 * NDJSON reply, with an HTTP status from the table in docs/protocol.md.
 * Loop thread only.
 */
#ifndef SLOT_HTTP_H
#define SLOT_HTTP_H

#include <stdbool.h>
#include <sys/socket.h>

#include "server_int.h"

/*
 * slot__http_start — listen for HTTP on sa (the parsed --http address, port
 * 0: any free port) and drive the daemon from s->loop (a uv_poll on its
 * epoll descriptor and a uv_timer from its timeout). Sets s->http.listener and
 * s->http.addr (the bound "HOST:PORT"). Returns 0, or -1 after logging why
 * (the address is taken, out of memory). Before the loop runs; once.
 */
int slot__http_start(server *s, const struct sockaddr *sa);

/*
 * slot__http_flush — s->conn_up.flush for a stand-in conn (c->http set):
 * run its request when it is a read that reached its turn, and when it is
 * answered, encode the reply and let libmicrohttpd send it (the connection
 * was suspended while its request waited for a batch).
 */
void slot__http_flush(conn *c);

/* slot__http_quiesce — stop accepting HTTP connections (the server stops);
 * requests in progress are still answered. Idempotent; s->http.listener may be NULL. */
void slot__http_quiesce(server *s);

/* slot__http_busy — true while some HTTP request has not been answered and
 * sent yet (the stop waits for them, as for TCP connections). */
bool slot__http_busy(const server *s);

/* slot__http_free — stop the daemon (closing its connections) and free it;
 * after the loop's handles are closed and before the entry pool is freed.
 * s->http.listener may be NULL. */
void slot__http_free(server *s);

#endif
