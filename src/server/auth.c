/*
 * auth.c — tokens, hello and roles (auth.h).
 */
#include "auth.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

/* Constant-time comparison: the time taken does not depend on where the
 * first difference is, only on the lengths. */
static bool token_equal(const char *a, size_t alen, const char *b, size_t blen)
{
    unsigned char diff = (unsigned char)(alen != blen);
    size_t n = alen < blen ? alen : blen;
    for (size_t i = 0; i < n; i++)
        diff |= (unsigned char)(a[i] ^ b[i]);
    return diff == 0;
}

slot_role slot__token_role(server *s, const char *value, size_t len)
{
    slot_role role = SLOT_ROLE_NONE;
    for (size_t i = 0; i < s->auth.ntokens; i++) /* every token compared: the time does not tell which matched */
        if (token_equal(s->auth.tokens[i].value, s->auth.tokens[i].len, value, len))
            role = s->auth.tokens[i].role;
    return role;
}

/* Which ops a role may run (docs/protocol.md, "Admin ops" and "Feed"):
 * admin all; worker hello, the feed's subscribe/ack/unsubscribe, get_hold of
 * any user, event and digest; frontend every op that is not admin's but the
 * feed's (forbidden: a frontend may not subscribe). */
static bool role_may(slot_role role, slot_op op)
{
    bool feed = op == SLOT_OP_SUBSCRIBE || op == SLOT_OP_ACK || op == SLOT_OP_UNSUBSCRIBE;
    switch (role) {
    case SLOT_ROLE_ADMIN:
        return true;
    case SLOT_ROLE_WORKER:
        return feed || op == SLOT_OP_HELLO || op == SLOT_OP_GET_HOLD || op == SLOT_OP_EVENT || op == SLOT_OP_DIGEST;
    case SLOT_ROLE_FRONTEND:
        return !feed && !slot_op_admin(op);
    default:
        return false;
    }
}

/* Decides what a parsed request may do on this connection; the verdict
 * names why when it refuses, and the caller (admit.c) logs it. */
slot__auth_verdict slot__authorize(server *s, conn *c, entry *e)
{
    if (s->auth.ntokens == 0)
        return SLOT__AUTH_OK; /* development mode: loopback only, every connection admin */
    if (e->req.op == SLOT_OP_HELLO) {
        slot_role role = (e->req.has & SLOT_HAS_TOKEN) ? slot__token_role(s, e->req.token, e->req.token_len)
                                                       : SLOT_ROLE_NONE;
        if (role == SLOT_ROLE_NONE) {
            c->role = SLOT_ROLE_NONE;
            slot_res_error(&e->res, SLOT_E_UNAUTHENTICATED, "invalid token");
            c->close_after_flush = true;
            return (e->req.has & SLOT_HAS_TOKEN) ? SLOT__AUTH_UNKNOWN_TOKEN : SLOT__AUTH_NO_TOKEN;
        }
        c->role = role;
        e->res.role = role; /* this hello's answer: a later hello may change c->role before it is encoded */
        return SLOT__AUTH_OK;
    }
    if (slot_op_internal(e->req.op))
        return SLOT__AUTH_OK; /* one set's primary to another's: its mac authenticates it (admit.c) */
    if (c->role == SLOT_ROLE_NONE) {
        slot_res_error(&e->res, SLOT_E_UNAUTHENTICATED, "send hello with a valid token first");
        c->close_after_flush = true;
        return SLOT__AUTH_NO_HELLO;
    }
    if (!role_may(c->role, e->req.op)) {
        slot_res_error(&e->res, SLOT_E_FORBIDDEN, "op %s is not for role %s", slot_op_name(e->req.op),
                       slot_role_name(c->role));
        return SLOT__AUTH_REFUSED;
    }
    if (e->req.op == SLOT_OP_GET_HOLD && e->req.user_len == 0 && c->role == SLOT_ROLE_FRONTEND) {
        slot_res_error(&e->res, SLOT_E_INVALID_ARGUMENT, "user: missing; only worker and admin may leave it out");
        return SLOT__AUTH_REFUSED;
    }
    return SLOT__AUTH_OK;
}

/* One line of f into buf (cap bytes), without its newline: its length, or
 * -1 at the end of the file, or -2 for a line longer than cap - 1 bytes or
 * one that holds a NUL byte (read to its end either way, so the next call
 * starts at the next line). fgets alone would hand the rest of a long line
 * over as a line of its own, and hide what follows a NUL. */
static long read_line(FILE *f, char *buf, size_t cap)
{
    size_t n = 0;
    bool bad = false;
    int ch;
    while ((ch = getc(f)) != EOF && ch != '\n') {
        if (ch == 0 || n + 1 >= cap)
            bad = true;
        else
            buf[n++] = (char)ch;
    }
    if (ch == EOF && n == 0 && !bad)
        return -1;
    buf[n] = 0;
    return bad ? -2 : (long)n;
}

/* Reads --token-file: lines "ROLE TOKEN" (frontend, worker or admin), # comments.
 * The file must not be readable or writable by group or others. A line with
 * more than those two words is refused: "admin my pass phrase" must not
 * quietly become the token "my". */
int slot__tokens_load(server *s, const char *path)
{
    FILE *f = fopen(path, "r");
    if (!f) {
        slot__log(SLOT__LOG_ERROR, "--token-file cannot be read", SLOT__LF_S("path", path),
                  SLOT__LF_S("error", strerror(errno)));
        return -1;
    }
    struct stat st;
    if (fstat(fileno(f), &st) != 0 || (st.st_mode & 077) != 0) {
        char mode[8];
        snprintf(mode, sizeof mode, "%03o", (unsigned)(st.st_mode & 0777));
        slot__log(SLOT__LOG_ERROR, "--token-file is readable by group or others; chmod 600 it",
                  SLOT__LF_S("path", path), SLOT__LF_S("mode", mode));
        fclose(f);
        return -1;
    }
    char line[SLOT_TOKEN_LINE_BYTES_MAX + 1];
    int lineno = 0, rc = 0;
    long len;
    while (rc == 0 && (len = read_line(f, line, sizeof(line))) != -1) {
        lineno++;
        char role[32], value[SLOT_TOKEN_BYTES_MAX + 2];
        char *p = line + strspn(line, " \t");
        if (len >= 0 && (*p == '#' || *p == 0))
            continue;
        int end = -1;
        if (len < 0 || sscanf(p, "%31s %257s %n", role, value, &end) != 2 || end < 0 || p[end] != 0 ||
            strlen(value) > SLOT_TOKEN_BYTES_MAX ||
            (strcmp(role, "frontend") != 0 && strcmp(role, "admin") != 0 && strcmp(role, "worker") != 0) ||
            s->auth.ntokens == SLOT_TOKENS_MAX) {
            /* the line itself is not shown: it may hold a token */
            slot__log(SLOT__LOG_ERROR,
                      "--token-file: want \"frontend TOKEN\", \"worker TOKEN\" or \"admin TOKEN\" lines",
                      SLOT__LF_S("path", path), SLOT__LF_I("line", lineno),
                      SLOT__LF_U("token_bytes_max", SLOT_TOKEN_BYTES_MAX),
                      SLOT__LF_U("line_bytes_max", SLOT_TOKEN_LINE_BYTES_MAX),
                      SLOT__LF_U("lines_max", SLOT_TOKENS_MAX));
            rc = -1;
            break;
        }
        token *t = &s->auth.tokens[s->auth.ntokens++];
        t->role = strcmp(role, "admin") == 0    ? SLOT_ROLE_ADMIN
                  : strcmp(role, "worker") == 0 ? SLOT_ROLE_WORKER
                                                : SLOT_ROLE_FRONTEND;
        t->len = strlen(value);
        memcpy(t->value, value, t->len + 1);
    }
    fclose(f);
    if (rc == 0 && s->auth.ntokens == 0) {
        slot__log(SLOT__LOG_ERROR, "--token-file has no tokens in it", SLOT__LF_S("path", path));
        rc = -1;
    }
    return rc;
}
