/*
 * conn_log.c — naming a connection's peer and logging its drop (conn.h):
 * what conn.c, admit.c and http.c's callers log about a client. Calls no
 * other module of the server. Loop thread only.
 */
#include "conn.h"

#include <stdio.h>

void slot__conn_peer(conn *c, char *buf, size_t cap)
{
    struct sockaddr_storage ss;
    int len = sizeof(ss);
    char name[48];
    snprintf(buf, cap, "?");
    if (c->http) /* an HTTP request's stand-in has no socket of its own (http.c logs its peer) */
        return;
    if (uv_tcp_getpeername(&c->tcp, (struct sockaddr *)&ss, &len) != 0 ||
        uv_ip_name((struct sockaddr *)&ss, name, sizeof(name)) != 0)
        return;
    bool v6 = ss.ss_family == AF_INET6;
    unsigned port = ntohs(v6 ? ((struct sockaddr_in6 *)&ss)->sin6_port : ((struct sockaddr_in *)&ss)->sin_port);
    snprintf(buf, cap, v6 ? "[%s]:%u" : "%s:%u", name, port);
}

void slot__conn_dropped(conn *c, const char *reason, const char *detail)
{
    if (!slot__log_on(SLOT__LOG_WARN))
        return;
    char peer[64];
    slot__conn_peer(c, peer, sizeof peer);
    slot__log(SLOT__LOG_WARN, "dropped a client", SLOT__LF_S("peer", peer), SLOT__LF_S("reason", reason),
              SLOT__LF_S("detail", detail));
}
