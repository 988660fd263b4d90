/*
 * slotctl_move.c — `slotctl move EVENT --to SET` (move_event; docs/protocol.md,
 * "Placement"; docs/design.md, "The mover").
 *
 * The move runs on the owning set's primary and answers when it is done, so
 * the command sends one line on one plain connection to the first --host
 * and waits up to SLOT_CTL_MOVE_TIMEOUT_S for the answer; it is never sent
 * twice (a move that failed part-way is undone or finished by the server,
 * and the operator decides whether to try again). A wrong_set answer is
 * printed with the set and primary that own the event. `slotctl rebalance
 * --apply` sends its moves through the same two functions (ctl_move_send,
 * ctl_move_report; slotctl.h).
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "slotctl.h"

/* The first entry of --host as host and port. 0 or EXIT_USAGE. */
static int first_host(const ctl *x, char *host, size_t n, uint16_t *port)
{
    const char *comma = strchr(x->host, ',');
    size_t len = comma ? (size_t)(comma - x->host) : strlen(x->host);
    *port = x->port;
    if (slot_addr_split(x->host, len, host, n, port) == 0)
        return 0;
    if (len < n && !memchr(x->host, ':', len)) { /* HOST alone: --port's */
        memcpy(host, x->host, len);
        host[len] = 0;
        return 0;
    }
    fprintf(stderr, "slotctl: --host: expected HOST or HOST:PORT, not '%.*s'\n", (int)len, x->host);
    return EXIT_USAGE;
}

int ctl_line_ask(const char *cmd, slot_client *k, const char *line, int timeout_ms, json_t **out)
{
    *out = NULL;
    int rc = slot_client_send_raw(k, line, strlen(line));
    const char *reply = NULL;
    long n = rc == 0 ? slot_client_recv_line(k, &reply, timeout_ms) : rc;
    if (n < 0) {
        fprintf(stderr, "slotctl: %s: %s%s\n", cmd, strerror((int)-n),
                n == -ETIMEDOUT ? " (the outcome is unknown: see `slotctl placement`)" : "");
        return EXIT_CONNECTION;
    }
    *out = json_loadb(reply, (size_t)n, 0, NULL);
    if (!json_is_object(*out)) {
        fprintf(stderr, "slotctl: %s: the server's answer is not JSON: %.200s\n", cmd, reply);
        json_decref(*out);
        *out = NULL;
        return EXIT_CONNECTION;
    }
    return 0;
}

static const char *str(json_t *o, const char *k)
{
    const char *s = json_string_value(json_object_get(o, k));
    return s ? s : "";
}

int ctl_line_open(ctl *x, const char *host, uint16_t port, slot_client **out)
{
    *out = NULL;
    slot_client *k = NULL;
    int rc = slot_client_connect(host, port, SLOT_CTL_CONNECT_TIMEOUT_MS, &k);
    if (rc != 0) {
        fprintf(stderr, "slotctl: %s: cannot connect to %s:%u: %s\n", x->cmd, host, (unsigned)port, strerror(-rc));
        return EXIT_CONNECTION;
    }
    int status = 0;
    if (x->token) {
        json_t *r = NULL;
        json_t *h = json_pack("{s:s,s:s}", "op", "hello", "token", x->token);
        char *t = h ? json_dumps(h, JSON_COMPACT) : NULL;
        json_decref(h);
        char line[SLOT_TOKEN_BYTES_MAX + 64];
        snprintf(line, sizeof line, "%s\n", t ? t : "");
        free(t);
        if ((status = ctl_line_ask(x->cmd, k, line, x->timeout_ms, &r)) == 0 &&
            !json_is_true(json_object_get(r, "ok"))) {
            fprintf(stderr, "slotctl: %s: hello: %s: %s\n", x->cmd, str(r, "error"), str(r, "message"));
            status = EXIT_SERVER_ERROR;
        }
        json_decref(r);
    }
    if (status != 0)
        slot_client_close(k);
    else
        *out = k;
    return status;
}

int ctl_move_send(ctl *x, const char *host, uint16_t port, const char *event, const char *to, json_t **out)
{
    *out = NULL;
    slot_client *k = NULL;
    int status = ctl_line_open(x, host, port, &k);
    if (status != 0)
        return status;
    json_t *req = json_pack("{s:s,s:s,s:s}", "op", "move_event", "event", event, "to", to);
    char *t = req ? json_dumps(req, JSON_COMPACT) : NULL;
    json_decref(req);
    char line[SLOT_EVENT_BYTES_MAX + SLOT_CLUSTER_NAME_BYTES_MAX + 128];
    snprintf(line, sizeof line, "%s\n", t ? t : "");
    free(t);
    status = ctl_line_ask(x->cmd, k, line, SLOT_CTL_MOVE_TIMEOUT_S * 1000, out);
    slot_client_close(k);
    return status;
}

int ctl_move_report(const ctl *x, const char *event, json_t *r)
{
    char *raw = x->json ? json_dumps(r, JSON_COMPACT | JSON_PRESERVE_ORDER) : NULL;
    if (raw)
        printf("%s\n", raw);
    free(raw);
    if (json_is_true(json_object_get(r, "ok"))) {
        if (!x->json)
            printf("moved %s to %s: gen %" PRId64 ", write pause %" PRId64 " ms, total %" PRId64 " ms, %" PRId64
                   " records\n",
                   event, str(r, "to"), (int64_t)json_integer_value(json_object_get(r, "gen")),
                   (int64_t)json_integer_value(json_object_get(r, "pause_ms")),
                   (int64_t)json_integer_value(json_object_get(r, "total_ms")),
                   (int64_t)json_integer_value(json_object_get(r, "records")));
        return 0;
    }
    if (strcmp(str(r, "error"), "wrong_set") == 0)
        fprintf(stderr,
                "slotctl: %s %s: the event is placed on set %s (gen %" PRId64 ")%s%s: send the move to"
                " that set's primary\n",
                x->cmd, event, str(r, "set"), (int64_t)json_integer_value(json_object_get(r, "gen")),
                str(r, "primary")[0] ? ", primary " : "", str(r, "primary"));
    else
        fprintf(stderr, "slotctl: %s %s: %s: %s\n", x->cmd, event, str(r, "error"), str(r, "message"));
    return EXIT_SERVER_ERROR;
}

int cmd_move(ctl *x, int argc, char **argv)
{
    static const struct option opts[] = {{"to", required_argument, NULL, 't'}, {"help", no_argument, NULL, 'h'}, {0}};
    const char *to = NULL;
    int o, rc = 0;
    while ((o = ctl_next_opt(x, argc, argv, opts, &rc)) >= 0)
        if (o == 't')
            to = optarg;
    if (o == -2 || (rc = ctl_want_args(x, argc - optind, argv + optind, 1, 1)))
        return rc;
    const char *event = argv[optind];
    if (!to || !to[0])
        return ctl_usage_error(x, "--to SET is required%s", "");
    if (strlen(event) > SLOT_EVENT_BYTES_MAX)
        return ctl_usage_error(x, "event name longer than 64 bytes: '%s'", event);
    if (strlen(to) > SLOT_CLUSTER_NAME_BYTES_MAX)
        return ctl_usage_error(x, "set name longer than 64 bytes: '%s'", to);
    char host[SLOT_CLIENT_ADDR_BYTES_MAX + 1];
    uint16_t port = 0;
    if ((rc = first_host(x, host, sizeof host, &port)) != 0)
        return rc;
    json_t *r = NULL;
    rc = ctl_move_send(x, host, port, event, to, &r);
    if (rc == 0)
        rc = ctl_move_report(x, event, r);
    json_decref(r);
    return rc;
}
