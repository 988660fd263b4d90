/*
 * auth.h — roles (docs/protocol.md, "hello"): the --token-file, the hello
 * that gives a connection its role, and which ops a role may run. Without a
 * token file every connection is admin (loopback development mode).
 */
#ifndef SLOT_AUTH_H
#define SLOT_AUTH_H

#include <stdbool.h>

#include "server_int.h"

/* slot__tokens_load — read path: lines "ROLE TOKEN" (frontend, worker or admin) and
 * # comments, at most SLOT_TOKENS_MAX, into s->auth.tokens. The file must not be
 * readable or writable by group or others. A line with anything after the
 * token, a line longer than SLOT_TOKEN_LINE_BYTES_MAX bytes and a NUL byte
 * anywhere are refused. Returns 0, or -1 after logging why (s->auth.tokens may
 * then hold the lines before the bad one; the caller does not start).
 * Main thread, before the server starts. */
int slot__tokens_load(server *s, const char *path);

/* slot__token_role — the role of the token value[0..len) (not NUL-terminated),
 * compared in constant time with every configured token; SLOT_ROLE_NONE when
 * it matches none. hello's token and HTTP's "Authorization: Bearer" both. */
slot_role slot__token_role(server *s, const char *value, size_t len);

/* What slot__authorize decided. Every verdict but OK has put the error
 * answer into e->res; the unauthenticated ones also set c->close_after_flush.
 * auth.c logs nothing about a connection: the caller does, by the verdict. */
typedef enum slot__auth_verdict {
    SLOT__AUTH_OK,            /* e may run */
    SLOT__AUTH_UNKNOWN_TOKEN, /* a hello whose token matches none: unauthenticated */
    SLOT__AUTH_NO_TOKEN,      /* a hello without a token: unauthenticated */
    SLOT__AUTH_NO_HELLO,      /* c has no role and e is not a hello: unauthenticated */
    SLOT__AUTH_REFUSED,       /* forbidden (an op the role may not run), or invalid_argument
                                 (a frontend's get_hold without user) */
} slot__auth_verdict;

/* slot__authorize — decide what parsed request e may do on c (hello sets
 * c's role; a failed hello sets SLOT_ROLE_NONE). Returns the verdict above;
 * it never closes or logs c. Loop thread. */
slot__auth_verdict slot__authorize(server *s, conn *c, entry *e);

#endif
