/*
 * slotctl.h — what the files of slotctl share (not installed, not a library):
 * the run's state (ctl), the command table's row (ctl_cmd), the exit statuses,
 * and the helpers of slotctl.c that the commands use: argument checks
 * (usage errors, numbers, getopt), and the connection to slotd, which
 * follows the primary of a replica set. The commands are in slotctl_cmds.c
 * (event and server commands) and in their own modules (slotctl_create.c,
 * slotctl_alloc.c, slotctl_room.c, slotctl_feed.c, slotctl_backup.c,
 * slotctl_watch.c, slotctl_cluster.c, slotctl_metrics.c, slotctl_place.c,
 * slotctl_move.c).
 * Single-threaded: slotctl runs one command and exits.
 */
#ifndef SLOTCTL_H
#define SLOTCTL_H

#include <getopt.h>
#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "slot/client.h"
#include "slot/limits.h"

#define EXIT_SERVER_ERROR 1
#define EXIT_CONNECTION 2
#define EXIT_USAGE 64 /* sysexits.h EX_USAGE */
/* --host: up to SLOT_FOLLOW_NODES_MAX entries of HOST[:PORT], commas between. */
#define CTL_HOSTS_BYTES_MAX (SLOT_FOLLOW_NODES_MAX * (SLOT_CLIENT_ADDR_BYTES_MAX + 1))
#define CTL_ATTEMPTS_PER_NODE 3u /* sends of one request per node of the list (at least 4 in all) */

typedef struct ctl {
    char host[CTL_HOSTS_BYTES_MAX + 1]; /* as given: HOST or HOST:PORT entries, comma-separated */
    uint16_t port;                      /* for the entries without a port */
    const char *token;
    bool json;           /* print the raw reply lines */
    int timeout_ms;      /* for each reply */
    const char *cmd;     /* the command's name, for messages */
    slot_follow *follow; /* the connection, following the primary */
} ctl;

typedef struct ctl_cmd {
    const char *name;
    const char *args;    /* synopsis after the name */
    const char *summary; /* one line, for `slotctl --help` */
    const char *help;    /* the rest of `slotctl help NAME` */
    int (*run)(ctl *x, int argc, char **argv);
} ctl_cmd;

/* ---------------------------------------------------------------- slotctl.c */

/*
 * ctl_usage_error — prints "slotctl: CMD: " then fmt with arg (one %s), then
 * where the help is, to stderr. Returns EXIT_USAGE.
 */
int ctl_usage_error(const ctl *x, const char *fmt, const char *arg);

/*
 * ctl_parse_num — s as a decimal number in [min, max] into *out: the whole
 * string, digits only (no sign, no blank, no suffix). what names the option
 * in the message. Returns 0, or EXIT_USAGE after a message on stderr.
 */
int ctl_parse_num(const ctl *x, const char *what, const char *s, uint64_t min, uint64_t max, uint64_t *out);

/*
 * ctl_parse_time — a time option's argument into ms since the Unix epoch
 * (slot_ctl_time_parse: ISO 8601, +30s / +5m / +2h / +1d from now, ms since
 * the epoch, or 0 for none). what names the option in the message. Returns
 * 0, or EXIT_USAGE after a message on stderr.
 */
int ctl_parse_time(const ctl *x, const char *what, const char *arg, uint64_t *out);

/*
 * ctl_want_args — the n positional arguments rest[] left after getopt are
 * between min and max of them. Returns 0, or EXIT_USAGE after a message.
 */
int ctl_want_args(const ctl *x, int n, char **rest, int min, int max);

/*
 * ctl_next_opt — the command's next option (getopt_long over longopts, or
 * only --help when longopts is NULL; longopts must map "help" to 'h').
 * Returns the option's value, -1 at the end of the options, or -2 after
 * printing the command's help (*rc = 0) or a usage error (*rc = EXIT_USAGE).
 */
int ctl_next_opt(ctl *x, int argc, char **argv, const struct option *longopts, int *rc);

/*
 * ctl_connect — makes x->follow (once) from --host, --port, --token and
 * --timeout: a follower of every address, sending to the primary. Returns 0,
 * or EXIT_USAGE after a message (a bad address, a token too long). Nothing
 * is connected yet: the first call connects.
 */
int ctl_connect(ctl *x);

/*
 * ctl_answer — the answer of a call that returned rc with the reply r: 0 on
 * "ok":true; EXIT_CONNECTION when rc < 0, EXIT_SERVER_ERROR when the server
 * refused, after printing "slotctl: CMD: code: message". With --json the
 * reply line is printed as it came. r stays the caller's to clear.
 */
int ctl_answer(ctl *x, int rc, slot_reply *r);

/*
 * ctl_call — ctl_connect, then sends req (to the primary, following it) and
 * reads its reply into r; returns as ctl_answer (or ctl_connect's status).
 * r is zeroed first and is to be cleared by the caller (slot_reply_clear).
 */
int ctl_call(ctl *x, const slot_req *req, slot_reply *r);

/*
 * ctl_event_req — initialises req as op on event. Returns 0, or EXIT_USAGE
 * after a message when the name is longer than the protocol's 64 bytes.
 */
int ctl_event_req(const ctl *x, slot_req *req, slot_op op, const char *event);

/* ctl_find_cmd — the row of the command table named name; NULL when none (or name is NULL). */
const ctl_cmd *ctl_find_cmd(const char *name);

/* ctl_print_cmd_help — the help of the command c (`slotctl help NAME`) into f. */
void ctl_print_cmd_help(FILE *f, const ctl_cmd *c);

/* ---------------------------------------------------------------- slotctl_move.c */

/*
 * ctl_line_open — a plain connection (no following) to host:port, then a
 * hello with x->token when one is set (answered within x->timeout_ms).
 * Returns 0 with *out the connection (the caller's: slot_client_close), or
 * EXIT_CONNECTION / EXIT_SERVER_ERROR (hello refused) after a message on
 * stderr naming x->cmd, with *out NULL. Blocking; slotctl's one thread.
 */
int ctl_line_open(ctl *x, const char *host, uint16_t port, slot_client **out);

/*
 * ctl_line_ask — sends line (one request, ending in a newline) on k and
 * parses the next reply line, waiting up to timeout_ms (> 0), into *out (a
 * JSON object, the caller's: json_decref). Returns 0, or EXIT_CONNECTION
 * after a message on stderr naming cmd (a send or receive error, a timeout,
 * a reply that is no JSON object), *out NULL. Blocking; one thread.
 */
int ctl_line_ask(const char *cmd, slot_client *k, const char *line, int timeout_ms, json_t **out);

/*
 * ctl_move_send — one move_event of event to the set to, sent once to the
 * server at host:port (which must be the primary of the set that owns event;
 * docs/protocol.md, "Placement"), after a hello with x->token when one is
 * set. Waits up to x->timeout_ms for the hello's answer and up to
 * SLOT_CTL_MOVE_TIMEOUT_S for the move's. event: 1..SLOT_EVENT_BYTES_MAX
 * bytes; to: 1..SLOT_CLUSTER_NAME_BYTES_MAX bytes; host: a NUL-terminated
 * host name or address. Returns 0 with *out the move's answer (ok or an
 * error; the caller's, json_decref), or EXIT_CONNECTION (no connection, no
 * answer, an answer that is no JSON) or EXIT_SERVER_ERROR (hello refused)
 * after a message on stderr naming x->cmd, with *out NULL. Never retries: a
 * move without an answer may have run. Blocking; slotctl's one thread.
 */
int ctl_move_send(ctl *x, const char *host, uint16_t port, const char *event, const char *to, json_t **out);

/*
 * ctl_move_report — prints the move answer r of event: "moved E to T: gen
 * ..." on stdout when ok (the raw line instead with --json), else the error
 * on stderr (a wrong_set with the owner's set, gen and primary). Returns 0
 * (ok) or EXIT_SERVER_ERROR. r stays the caller's. Slotctl's one thread.
 */
int ctl_move_report(const ctl *x, const char *event, json_t *r);

/* ---------------------------------------------------------------- slotctl_cmds.c */

/*
 * ctl_print_event_view — the event view of r (the reply of event,
 * create_event, set_status, ...) as a two-column table on stdout: the
 * counters and settings, then the v1.2 fields the view has (allocated; a
 * child's parent and effective_available; a parent's children; the client
 * limits and the waiting room when set; a seated event's categories), read
 * from r->line.
 */
void ctl_print_event_view(const slot_reply *r);

/*
 * ctl_call_show_view — sends req, an op whose reply is the event view, and
 * prints the view (the raw line with --json). Returns the exit status as
 * ctl_call.
 */
int ctl_call_show_view(ctl *x, const slot_req *req);

/*
 * The commands of slotctl's table, one per name (cmd_verify_backup:
 * verify-backup). Each runs with x's global options set and x->cmd its
 * name; argv[0] is the command's name and getopt is reset (optind = 0).
 * Each returns slotctl's exit status: 0, EXIT_SERVER_ERROR, EXIT_CONNECTION
 * or EXIT_USAGE.
 */
/* create (slotctl_create.c; docs/protocol.md, "create_event" and "Version 1.2"). */
int cmd_create(ctl *x, int argc, char **argv);
int cmd_show(ctl *x, int argc, char **argv);
int cmd_reshard(ctl *x, int argc, char **argv);
int cmd_capacity(ctl *x, int argc, char **argv);
/* allocate, deallocate, allocations (slotctl_alloc.c; docs/protocol.md, "Allocations"). */
int cmd_allocate(ctl *x, int argc, char **argv);
int cmd_deallocate(ctl *x, int argc, char **argv);
int cmd_allocations(ctl *x, int argc, char **argv);
/* room (slotctl_room.c; docs/protocol.md, "Admission"). */
int cmd_room(ctl *x, int argc, char **argv);
/* seats (slotctl_seats.c; docs/protocol.md, "Seated events"). */
int cmd_seats(ctl *x, int argc, char **argv);
/* move (slotctl_move.c; docs/protocol.md, "Placement"). */
int cmd_move(ctl *x, int argc, char **argv);
/* rebalance (slotctl_rebalance.c; docs/design.md, "Evening out a placement"). */
int cmd_rebalance(ctl *x, int argc, char **argv);
int cmd_status(ctl *x, int argc, char **argv);
int cmd_window(ctl *x, int argc, char **argv);
int cmd_cancel(ctl *x, int argc, char **argv);
int cmd_check(ctl *x, int argc, char **argv);
int cmd_expire(ctl *x, int argc, char **argv);
int cmd_stats(ctl *x, int argc, char **argv);
int cmd_digest(ctl *x, int argc, char **argv);
int cmd_waitlist(ctl *x, int argc, char **argv);
int cmd_feed(ctl *x, int argc, char **argv);
int cmd_backup(ctl *x, int argc, char **argv);
int cmd_restore(ctl *x, int argc, char **argv);
int cmd_verify_backup(ctl *x, int argc, char **argv);
int cmd_watch(ctl *x, int argc, char **argv);
int cmd_cluster(ctl *x, int argc, char **argv);
int cmd_metrics(ctl *x, int argc, char **argv);
/* placement (slotctl_place.c; docs/protocol.md, "Placement"). */
int cmd_placement(ctl *x, int argc, char **argv);

#endif
