/*
 * slotctl — slotd's admin tool. Every command is one or two requests of
 * docs/protocol.md sent through the client library (slot/client.h); slotctl never
 * touches a server's database itself. `restore` and `verify-backup` work
 * offline on backup files (slotctl_backup.c, slot/backup.h).
 *
 * With several addresses (--host H:P,H:P or $SLOTD_ADDR) every request goes
 * through slot_follow: it is sent to the primary of the replica set,
 * following not_primary, with the same request each time.
 *
 * Exit status: 0 done; 1 the server answered with an error (or `check` found
 * violations); 2 the server could not be reached or the connection failed;
 * 64 a usage error (unknown command or option, a bad number).
 *
 * This file holds the command table, the help texts, the global options and
 * main, and the helpers the commands share (slotctl.h): argument checks and
 * the connection. The commands themselves are in slotctl_cmds.c and the
 * modules it calls.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sys/time.h>

#include "ctl_time.h"
#include "slot/client.h"
#include "slot/limits.h"
#include "slot/proto.h"
#include "slot_config.h"
#include "slotctl.h"
#include "slotctl_backup.h"
#include "slotctl_feed.h"
#include "slotctl_metrics.h"
#include "slotctl_watch.h"

/* ---------------------------------------------------------------- arguments */

int ctl_usage_error(const ctl *x, const char *fmt, const char *arg)
{
    fprintf(stderr, "slotctl: %s%s", x->cmd ? x->cmd : "", x->cmd ? ": " : "");
    fprintf(stderr, fmt, arg);
    if (x->cmd)
        fprintf(stderr, " (see 'slotctl %s --help')\n", x->cmd);
    else
        fprintf(stderr, " (see 'slotctl --help')\n");
    return EXIT_USAGE;
}

/* A decimal number in [min, max], the whole string and nothing else (strtoull
 * alone would take "-1", " 5" or "5x"). Returns 0, or EXIT_USAGE after a message. */
int ctl_parse_num(const ctl *x, const char *what, const char *s, uint64_t min, uint64_t max, uint64_t *out)
{
    char *end = NULL;
    errno = 0;
    unsigned long long v = (s[0] >= '0' && s[0] <= '9') ? strtoull(s, &end, 10) : 0;
    if (end == NULL || *end != 0) {
        fprintf(stderr, "slotctl: %s%s%s: not a number: '%s'\n", x->cmd ? x->cmd : "", x->cmd ? ": " : "", what, s);
        return EXIT_USAGE;
    }
    if (errno == ERANGE || v < min || v > max) {
        fprintf(stderr, "slotctl: %s%s%s: %s is out of range %" PRIu64 "..%" PRIu64 "\n", x->cmd ? x->cmd : "",
                x->cmd ? ": " : "", what, s, min, max);
        return EXIT_USAGE;
    }
    *out = v;
    return 0;
}

static uint64_t wall_ms(void)
{
    struct timeval tv;
    gettimeofday(&tv, NULL);
    return (uint64_t)tv.tv_sec * 1000 + (uint64_t)tv.tv_usec / 1000;
}

/* A time option (--opens-at, --closes-at, --queue-opens-at): ISO 8601, +30s,
 * ms since the epoch, or 0. */
int ctl_parse_time(const ctl *x, const char *what, const char *arg, uint64_t *out)
{
    if (slot_ctl_time_parse(arg, wall_ms(), out) == 0)
        return 0;
    char msg[160];
    snprintf(msg, sizeof msg, "%s: not a time (ISO 8601, +30s, ms since the epoch, or 0): '%.64s'", what, arg);
    return ctl_usage_error(x, "%s", msg);
}

/* The n positional arguments `rest` left after getopt: between min and max of them. */
int ctl_want_args(const ctl *x, int n, char **rest, int min, int max)
{
    if (n < min)
        return ctl_usage_error(x, "%s", "missing argument");
    if (n > max)
        return ctl_usage_error(x, "unexpected argument '%s'", rest[max]);
    return 0;
}

/* A command's options: only --help unless `longopts` adds some. Returns the
 * option's value (as getopt_long), -1 at the end, or -2 after printing a usage
 * error or the help (then *rc is the exit status). */
int ctl_next_opt(ctl *x, int argc, char **argv, const struct option *longopts, int *rc)
{
    static const struct option help_only[] = {{"help", no_argument, NULL, 'h'}, {0}};
    int o = getopt_long(argc, argv, ":h", longopts ? longopts : help_only, NULL);
    if (o == 'h') {
        ctl_print_cmd_help(stdout, ctl_find_cmd(x->cmd));
        *rc = 0;
        return -2;
    }
    if (o == '?') {
        *rc = ctl_usage_error(x, "unknown option '%s'", argv[optind - 1]);
        return -2;
    }
    if (o == ':') {
        *rc = ctl_usage_error(x, "option '%s' needs a value", argv[optind - 1]);
        return -2;
    }
    return o;
}

/* ---------------------------------------------------------------- talking to slotd */

/* One entry of --host as "H:P" into out: a bare host gets x->port ("::1" becomes
 * "[::1]:P"). 0, or -1 when the entry cannot be an address. */
static int entry_addr(const ctl *x, const char *e, size_t n, char *out, size_t cap)
{
    char host[SLOT_CLIENT_ADDR_BYTES_MAX + 1];
    uint16_t port;
    size_t colons = 0;
    for (size_t i = 0; i < n; i++)
        colons += e[i] == ':';
    bool bare = colons == 0 || (colons > 1 && n > 0 && e[0] != '[');
    if (!bare) {
        if (n >= cap || slot_addr_split(e, n, host, sizeof(host), &port) < 0)
            return -1;
        snprintf(out, cap, "%.*s", (int)n, e);
        return 0;
    }
    if (n == 0 || n > SLOT_CTL_HOST_BYTES_MAX)
        return -1;
    snprintf(out, cap, colons ? "[%.*s]:%u" : "%.*s:%u", (int)n, e, (unsigned)x->port);
    return slot_addr_split(out, strlen(out), host, sizeof(host), &port) < 0 ? -1 : 0;
}

/* The follower of every address of --host (once), with the token. 0 or an exit status. */
int ctl_connect(ctl *x)
{
    if (x->follow)
        return 0;
    char list[CTL_HOSTS_BYTES_MAX + 64 * SLOT_FOLLOW_NODES_MAX] = "";
    uint32_t n = 0;
    for (const char *p = x->host;; n++) {
        const char *comma = strchr(p, ',');
        size_t len = comma ? (size_t)(comma - p) : strlen(p);
        char one[SLOT_CLIENT_ADDR_BYTES_MAX + 1];
        if (entry_addr(x, p, len, one, sizeof(one)) < 0) {
            fprintf(stderr, "slotctl: --host: expected HOST or HOST:PORT, not '%.*s'\n", (int)len, p);
            return EXIT_USAGE;
        }
        snprintf(list + strlen(list), sizeof(list) - strlen(list), "%s%s", n ? "," : "", one);
        if (!comma)
            break;
        p = comma + 1;
    }
    slot_follow_opts o;
    slot_follow_opts_default(&o);
    o.token = x->token;
    o.connect_timeout_ms = SLOT_CTL_CONNECT_TIMEOUT_MS;
    o.reply_timeout_ms = x->timeout_ms;
    uint32_t attempts = (n + 1) * CTL_ATTEMPTS_PER_NODE;
    o.attempts_max = attempts < 4 ? 4 : attempts > SLOT_FOLLOW_ATTEMPTS_MAX ? SLOT_FOLLOW_ATTEMPTS_MAX : attempts;
    int64_t deadline = (int64_t)x->timeout_ms + SLOT_FOLLOW_DEADLINE_MS_DEFAULT; /* one slow reply plus a failover */
    o.deadline_ms = deadline > SLOT_FOLLOW_DEADLINE_MS_MAX ? SLOT_FOLLOW_DEADLINE_MS_MAX : (int)deadline;
    if (x->token && strlen(x->token) > SLOT_TOKEN_BYTES_MAX) {
        fprintf(stderr, "slotctl: --token: longer than %d bytes\n", SLOT_TOKEN_BYTES_MAX);
        return EXIT_USAGE;
    }
    char err[300];
    if (slot_follow_new(list, &o, &x->follow, err, sizeof(err)) < 0) {
        fprintf(stderr, "slotctl: --host: %s\n", err);
        return EXIT_USAGE;
    }
    return 0;
}

/* The answer in r: 0 on "ok":true; otherwise the error is printed
 * ("slotctl: CMD: code: message") and the exit status returned. With --json
 * the reply line is printed as it came. */
int ctl_answer(ctl *x, int rc, slot_reply *r)
{
    if (rc < 0) {
        fprintf(stderr, "slotctl: %s: %s\n", x->cmd,
                rc == -EMSGSIZE ? "the request is too long" : slot_follow_error(x->follow));
        return EXIT_CONNECTION;
    }
    if (x->json)
        printf("%s\n", r->line);
    if (!r->ok) {
        fprintf(stderr, "slotctl: %s: %s: %s\n", x->cmd, r->error[0] ? r->error : "error",
                r->message[0] ? r->message : slot_err_message(r->err));
        return EXIT_SERVER_ERROR;
    }
    return 0;
}

/* Send req (to the primary, following it) and read its reply; see ctl_answer.
 * r is to be cleared by the caller. */
int ctl_call(ctl *x, const slot_req *req, slot_reply *r)
{
    memset(r, 0, sizeof(*r));
    int rc = ctl_connect(x);
    if (rc != 0)
        return rc;
    return ctl_answer(x, slot_follow_call(x->follow, req, r), r);
}

/* A request naming one event; a usage error when the name cannot be one. */
int ctl_event_req(const ctl *x, slot_req *req, slot_op op, const char *event)
{
    if (slot_req_event(req, op, event) < 0)
        return ctl_usage_error(x, "event name longer than 64 bytes: '%s'", event);
    return 0;
}

static int cmd_help(ctl *x, int argc, char **argv);

static const ctl_cmd commands[] = {
    {"create",
     "EVENT --capacity N [--shards N] [--hold-ttl-ms MS] [--max-per-user N] [--max-per-request N]\n"
     "       [--opens-at TIME] [--closes-at TIME] [--max-extensions N] [--max-hold-ms MS] [--waitlist-max N]\n"
     "       [--parent EVENT] [--max-active-per-client N] [--client-rate N] [--seats FILE]\n"
     "       [--admission MODE [--admit-per-s N] [--grant-ttl-ms MS] [--queue-opens-at TIME]]",
     "create an event (create_event)",
     "Creates EVENT with CAPACITY units spread evenly over its shards. Running it again with\n"
     "the same settings changes nothing (replay); other settings are refused (event_exists).\n"
     "  --capacity N          units to sell, 0..2^40 (required, unless --seats gives the seats)\n"
     "  --shards N            1..1024 (server default 16)\n"
     "  --hold-ttl-ms MS      how long a hold lasts, 1000..86400000 (default 600000)\n"
     "  --max-per-user N      held + confirmed units per user, 0..2^40, 0 = no limit (default 0)\n"
     "  --max-per-request N   units per hold, 1..1000 (default 10)\n"
     "  --opens-at TIME       no holds before this time (default none)\n"
     "  --closes-at TIME      no holds from this time on, after --opens-at (default none)\n"
     "  --max-extensions N    extends per hold, 0..100 (default 1)\n"
     "  --max-hold-ms MS      a hold never lasts past created + MS, 1000..2^40 (default 2 x hold-ttl-ms)\n"
     "  --waitlist-max N      entries the waitlist may hold, 0..10000000, 0 = no waitlist (default 0)\n"
     "Ticket types, client limits, seats (protocol v1.2):\n"
     "  --parent EVENT        a ticket type of EVENT: holds take units from it and from each of its\n"
     "                        ancestors; an existing event, at most 3 levels, 64 children\n"
     "                        each (default none: a root)\n"
     "  --max-active-per-client N\n"
     "                        units one client key may hold at once, 0..2^40, 0 = no limit (default 0)\n"
     "  --client-rate N       new holds per second per client key, 0..1000000, 0 = no limit (default 0)\n"
     "  --seats FILE          a seated event: FILE holds the seat map as JSON,\n"
     "                        {\"sections\":[{\"name\":\"A\",\"rows\":[{\"name\":\"1\",\"from\":1,\"to\":20}]}]};\n"
     "                        the capacity is its seat count (default none)\n"
     "Waiting room (protocol v1.2, \"Admission\"):\n"
     "  --admission MODE      none, queue or lottery (default none)\n"
     "  --admit-per-s N       admissions per second, 1..1000000 (default 100; needs a room)\n"
     "  --grant-ttl-ms MS     how long a grant lasts, 1000..86400000 (default 600000; needs a room)\n"
     "  --queue-opens-at TIME joins from this time on (default 0: at once; needs a room)\n"
     "TIME is ISO 8601 (2025-11-30T12:00:00Z, +01:00 offsets, no zone = UTC), +30s / +5m / +2h / +1d\n"
     "from now, ms since the Unix epoch, or 0 (none). Server errors exit 1: a --parent that is no\n"
     "event is unknown_event, a 4th level or a parent with 64 children invalid_argument.\n",
     cmd_create},
    {"window", "EVENT [--opens-at TIME] [--closes-at TIME]", "set an event's sale window (set_sale_window)",
     "Holds before --opens-at or from --closes-at on are answered not_on_sale; confirms, releases\n"
     "and replays go on. A time left out is none (0), so `slotctl window EVENT` removes the window.\n"
     "TIME as for create. set_status closed still closes the event whatever the window says.\n",
     cmd_window},
    {"show", "EVENT", "show an event's counters and the free units of each shard (event, shards)",
     "Prints the event view (capacity, available, held, confirmed, settings; allocated; for a\n"
     "ticket type its parent and effective_available, the least available over its chain; for\n"
     "a parent its children) and a table of the free units per shard. With --json, prints the\n"
     "two raw replies, one per line.\n",
     cmd_show},
    {"waitlist", "EVENT [--limit N]", "show an event's waitlist: length, units, first entries (waitlist_entries)",
     "Prints how many entries wait and for how many units, and the first entries in join order\n"
     "with their positions (1 = next).\n"
     "  --limit N             entries to show, 1..100 (default 10)\n",
     cmd_waitlist},
    {"reshard", "EVENT --shards N", "spread the free units over N shards (reshard)",
     "Moves the free units of EVENT onto N shards (1..1024), evenly, in one transaction.\n"
     "Held and confirmed units stay where they are.\n",
     cmd_reshard},
    {"capacity", "EVENT N", "set an event's capacity (set_capacity)",
     "Sets the capacity of EVENT to N (0..2^40); the difference is added to or taken from\n"
     "the free units. Refused (capacity_below_allocated) below held + confirmed.\n",
     cmd_capacity},
    {"allocate", "EVENT ALLOCATION N [--max-per-user M]", "set N free units aside in a block (allocate)",
     "Moves N free units of EVENT (and of each ancestor) into the block ALLOCATION, which holds\n"
     "with \"allocation\":\"ALLOCATION\" then take from; again adds units. --max-per-user is the\n"
     "block's own limit per user. Exits 1 (sold_out) when fewer than N are free.\n",
     cmd_allocate},
    {"deallocate", "EVENT ALLOCATION [N]", "give a block's unused units back (deallocate)",
     "Returns N unused units of the block to the free shards; without N the block is removed\n"
     "with all it has left (its holds' units then come back to the free shards).\n",
     cmd_deallocate},
    {"allocations", "EVENT", "show an event's blocks: qty, remaining, held, confirmed (event)",
     "Prints the event's allocated units and one line per block.\n", cmd_allocations},
    {"room", "EVENT", "show an event's waiting room: mode, rate, counts, next ranks (event)",
     "Prints the room's settings, joined/admitted/waiting/open grants, whether it admits now\n"
     "(the stop rule: not while open grants >= available) and the next admission ranks.\n",
     cmd_room},
    {"seats", "EVENT [--svg FILE]", "show a seated event's seats by row, or draw them as SVG (seat_map)",
     "Prints one line per row, each seat one character of its state (. free, h held,\n"
     "c confirmed, x in an allocation), then the counts per category. With --svg FILE it\n"
     "writes a picture instead: the sections and their rows, each seat a square coloured by\n"
     "state, a legend and the counts per category. An unseated event is invalid_argument.\n"
     "  --svg FILE            write the picture to FILE (replaced if it exists)\n",
     cmd_seats},
    {"status", "EVENT on_sale|closed", "open or close an event for sale (set_status)",
     "A closed event answers new holds with not_on_sale; confirms and releases go on.\n", cmd_status},
    {"cancel", "EVENT HOLD", "cancel a held or confirmed hold, returning its units (cancel)",
     "Prints whether the hold was cancelled; a hold already released, expired or cancelled\n"
     "is left as it is (that is not an error).\n",
     cmd_cancel},
    {"check", "[EVENT]", "verify the invariants of one event or all (check); exit 1 on violations",
     "A full scan of the server's invariants (docs/protocol.md, \"Invariants\"). Prints the counts and\n"
     "every violation found; exits 1 when there is any.\n",
     cmd_check},
    {"expire", "", "run the hold sweeper now (expire)", "Expires every hold whose time is up and prints how many.\n",
     cmd_expire},
    {"stats", "", "print the server's counters (stats)", "Prints the server's counters as indented JSON.\n", cmd_stats},
    {"metrics", "", "print the server's metrics in the Prometheus text format (metrics)", NULL, cmd_metrics},
    {"digest", "", "print the seq and SHA-256 digest of the server's state (digest)",
     "Prints the number of write batches the state has seen (seq) and a hash of every event,\n"
     "shard, hold and user record: two servers with the same seq and digest hold the same data.\n",
     cmd_digest},
    {"feed", "[--from N] [--consumer NAME] [--follow] | --consumers | --placement NAME --etcd URL [--state FILE] [--from SET=SEQ,...] [--follow]",
     "print the feed's entries, or the consumers' positions and lag", NULL, cmd_feed},
    {"cluster", "[add|remove|promote NODE]", "show the replica set, or change its members (cluster, cluster_change)",
     "Without arguments: asks any node (the first of --host that answers) for the replica set's\n"
     "configuration and prints a table of its members. A standalone server says so.\n"
     "With a change, the primary (followed through --host) changes the configuration by a\n"
     "compare-and-swap in etcd that raises the epoch, then prints the set:\n"
     "  add NODE       NODE (running with the set's flags) may join again; done once it caught\n"
     "                 up and is a member\n"
     "  remove NODE    a replica leaves and is not added back until `add`; the primary\n"
     "                 cannot be removed (promote another member first)\n"
     "  promote NODE   planned switchover: the primary holds new writes, drains what is in\n"
     "                 flight until NODE has every record, then NODE is primary in a new\n"
     "                 epoch; nothing is lost, writes pause briefly\n"
     "With --json, the raw reply.\n",
     cmd_cluster},
    {"placement", "[--event EVENT]", "show which replica set owns each event, and each set's primary (placement)",
     "Asks any member (the first of --host that answers; with --placement every set of the\n"
     "placement answers the same map) for the placement's map, from etcd, and prints two\n"
     "tables: each event's set, gen, state (serving or moving) and the set it moves to, and\n"
     "each set's primary and HTTP address as the set's primary published them.\n"
     "  --event EVENT         that event alone; an event the map does not hold is\n"
     "                        unknown_event (exit 1)\n"
     "A server without --placement answers with an error (exit 1). With --json, the raw reply.\n",
     cmd_placement},
    {"move", "EVENT --to SET", "move an event to another replica set of the placement (move_event)",
     "Sent to the primary of the set that owns EVENT (the first --host), which copies the event to\n"
     "SET's primary while it sells, hands it over, flips the placement map and answers; prints the\n"
     "new gen, the event's write pause and the move's total time. Sent once, never retried; waits\n"
     "for the answer up to 600 s. A move that fails part-way is undone (the event stays where it\n"
     "was) or finished by the server. wrong_set: the event is on another set, which is printed\n"
     "with its primary. moving: another move runs. With --json, the raw reply.\n"
     "  --to SET              the replica set to move to (required)\n",
     cmd_move},
    {"rebalance", "--placement NAME --etcd URL --dry-run|--apply [--by events|holds] [--max-moves N] [--interval-ms MS]",
     "plan moves that even out a placement's sets, and with --apply run them (move_event)",
     "Reads the placement's map from etcd, asks each set's primary for the view of its events\n"
     "(op event), and plans moves greedily: while the plan is shorter than --max-moves, the\n"
     "event of the most loaded set whose move to the least loaded set leaves the smallest\n"
     "spread (most minus least loaded) moves, if that spread is smaller than now. A set's load\n"
     "is its events (--by events) or its events' holds made per second between two samples of\n"
     "their holds_made --interval-ms apart (--by holds). Events moving now and the events of a\n"
     "family (a parent and its children) are left alone, and said so: a move takes one event,\n"
     "and a family stays on one set; so are, --by events, the events of a set whose primary\n"
     "does not answer (--by holds: exit 2). Prints one line per move (event, from, to, both sets' load\n"
     "before and after) and the spread before and after. --dry-run changes nothing; --apply\n"
     "sends each move as `slotctl move` does (to the primary of the set that owns the event, as\n"
     "the map names it) and stops at the first that fails, with its error. --host is not used.\n"
     "  --placement NAME      the placement (slotd --placement; required)\n"
     "  --etcd URL            its etcd: http://HOST:PORT[,...] (required)\n"
     "  --dry-run             print the plan only\n"
     "  --apply               print the plan, then run its moves\n"
     "  --by events|holds     what to even out (default events)\n"
     "  --max-moves N         moves planned at most, 1..1000 (default 10)\n"
     "  --interval-ms MS      --by holds: the samples' distance, 100..600000 (default 1000)\n"
     "An unknown placement, one without sets, neither or both of --dry-run and --apply, and a\n"
     "bad --by are usage errors (exit 64).\n",
     cmd_rebalance},
    {"watch", "[EVENT] [--once] [--interval MS]", "a live view: units left, holds/s, sold-out/s, latency, commits",
     NULL, cmd_watch},
    {"backup", "FILE", "write a hot backup of the server's store to FILE, on the server's machine (backup)", NULL,
     cmd_backup},
    {"restore", "FILE --data DIR [--force]", "offline: put a backup's store into the data folder DIR", NULL,
     cmd_restore},
    {"verify-backup", "FILE", "offline: check a backup file (checksums, seq, digest, check); exit 1 if bad", NULL,
     cmd_verify_backup},
    {"help", "[COMMAND]", "show help for slotctl or one command", "", cmd_help},
};

const ctl_cmd *ctl_find_cmd(const char *name)
{
    for (size_t i = 0; name && i < sizeof(commands) / sizeof(commands[0]); i++)
        if (strcmp(commands[i].name, name) == 0)
            return &commands[i];
    return NULL;
}

/* The help text of a command whose module keeps it. */
static const char *module_help_text(const ctl_cmd *c)
{
    if (strcmp(c->name, "metrics") == 0)
        return slotctl_metrics_help();
    if (strcmp(c->name, "watch") == 0)
        return slotctl_watch_help();
    if (strcmp(c->name, "backup") == 0)
        return slotctl_backup_help();
    if (strcmp(c->name, "restore") == 0)
        return slotctl_restore_help();
    if (strcmp(c->name, "verify-backup") == 0)
        return slotctl_verify_backup_help();
    return slotctl_feed_help();
}

void ctl_print_cmd_help(FILE *f, const ctl_cmd *c)
{
    fprintf(f, "usage: slotctl [GLOBAL OPTIONS] %s %s\n\n%s.\n\n%s", c->name, c->args, c->summary,
            c->help ? c->help : module_help_text(c));
    fprintf(f, "  -h, --help            this help\n");
}

static void print_help(FILE *f)
{
    fprintf(f,
            "usage: slotctl [--host H[,H...]] [--port P] [--token T] [--json] [--timeout S] COMMAND [ARGS...]\n\n"
            "The admin tool of slotd: runs admin ops of the slotd protocol.\n\n"
            "Global options:\n"
            "  -H, --host H[,H...]   server address (default %s, or $SLOTD_ADDR); each H is\n"
            "                        HOST or HOST:PORT; with a replica set's members, requests\n"
            "                        go to its primary (following not_primary)\n"
            "  -p, --port P          server port for a HOST without one, %d..%d (default %d,\n"
            "                        or the port of $SLOTD_ADDR=host:port)\n"
            "  -t, --token T         send hello with this token first (or $SLOTD_TOKEN)\n"
            "  -j, --json            print the server's raw reply lines instead of tables\n"
            "      --timeout S       seconds to wait for each reply, %d..%d (default %d)\n"
            "  -h, --help            this help\n"
            "  -V, --version         print the version\n\n"
            "Commands:\n",
            SLOT_HOST_DEFAULT, SLOT_PORT_MIN, SLOT_PORT_MAX, SLOT_PORT_DEFAULT, SLOT_CTL_TIMEOUT_S_MIN,
            SLOT_CTL_TIMEOUT_S_MAX, SLOT_CTL_TIMEOUT_S_DEFAULT);
    for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
        fprintf(f, "  %-14s %s\n", commands[i].name, commands[i].summary);
    fprintf(f, "\n'slotctl help COMMAND' or 'slotctl COMMAND --help' tells more.\n"
               "Exit status: 0 done; 1 the server refused (or check found violations);\n"
               "2 the server could not be reached; 64 a usage error.\n");
}

static int cmd_help(ctl *x, int argc, char **argv)
{
    int o, rc = 0;
    while ((o = ctl_next_opt(x, argc, argv, NULL, &rc)) >= 0) {
    }
    if (o == -2 || (rc = ctl_want_args(x, argc - optind, argv + optind, 0, 1)))
        return rc;
    if (argc == optind) {
        print_help(stdout);
        return 0;
    }
    const ctl_cmd *c = ctl_find_cmd(argv[optind]);
    if (!c) {
        x->cmd = NULL;
        return ctl_usage_error(x, "unknown command '%s'", argv[optind]);
    }
    ctl_print_cmd_help(stdout, c);
    return 0;
}

/* ---------------------------------------------------------------- main */

/* "host:port" or "[v6]:port" into x. 0 or EXIT_USAGE. */
static int parse_addr(ctl *x, const char *what, const char *s)
{
    const char *colon = strrchr(s, ':');
    const char *host = s, *host_end = colon;
    if (s[0] == '[') {
        host = s + 1;
        host_end = strchr(s, ']');
        if (!host_end || host_end + 1 != colon)
            colon = NULL;
    }
    uint64_t port = 0;
    if (!colon || host_end <= host || (size_t)(host_end - host) > SLOT_CTL_HOST_BYTES_MAX) {
        fprintf(stderr, "slotctl: %s: expected HOST:PORT, not '%s'\n", what, s);
        return EXIT_USAGE;
    }
    if (ctl_parse_num(x, what, colon + 1, SLOT_PORT_MIN, SLOT_PORT_MAX, &port))
        return EXIT_USAGE;
    memcpy(x->host, host, (size_t)(host_end - host));
    x->host[host_end - host] = 0;
    x->port = (uint16_t)port;
    return 0;
}

/* Global options, up to the command name. Returns -1 to go on, else an exit status. */
static int parse_global(ctl *x, int argc, char **argv)
{
    static const struct option opts[] = {
        {"host", required_argument, NULL, 'H'},    {"port", required_argument, NULL, 'p'},
        {"token", required_argument, NULL, 't'},   {"json", no_argument, NULL, 'j'},
        {"timeout", required_argument, NULL, 'T'}, {"help", no_argument, NULL, 'h'},
        {"version", no_argument, NULL, 'V'},       {0}};
    uint64_t v = 0;
    int o;
    while ((o = getopt_long(argc, argv, "+:H:p:t:jhV", opts, NULL)) != -1) {
        switch (o) {
        case 'H':
            if (strlen(optarg) == 0 || strlen(optarg) > CTL_HOSTS_BYTES_MAX)
                return ctl_usage_error(x, "bad --host '%s'", optarg);
            strcpy(x->host, optarg);
            break;
        case 'p':
            if (ctl_parse_num(x, "--port", optarg, SLOT_PORT_MIN, SLOT_PORT_MAX, &v))
                return EXIT_USAGE;
            x->port = (uint16_t)v;
            break;
        case 't':
            x->token = optarg;
            break;
        case 'j':
            x->json = true;
            break;
        case 'T':
            if (ctl_parse_num(x, "--timeout", optarg, SLOT_CTL_TIMEOUT_S_MIN, SLOT_CTL_TIMEOUT_S_MAX, &v))
                return EXIT_USAGE;
            x->timeout_ms = (int)v * 1000;
            break;
        case 'h':
            print_help(stdout);
            return 0;
        case 'V':
            printf("slotctl %s (protocol %d)\n", SLOT_VERSION, SLOT_PROTOCOL_VERSION);
            return 0;
        case ':':
            return ctl_usage_error(x, "option '%s' needs a value", argv[optind - 1]);
        default:
            return ctl_usage_error(x, "unknown option '%s'", argv[optind - 1]);
        }
    }
    return -1;
}

int main(int argc, char **argv)
{
    ctl x = {.port = SLOT_PORT_DEFAULT, .timeout_ms = SLOT_CTL_TIMEOUT_S_DEFAULT * 1000};
    strcpy(x.host, SLOT_HOST_DEFAULT);
    const char *env = getenv("SLOTD_ADDR");
    if (env && *env && strchr(env, ',')) { /* a replica set's members: each HOST:PORT */
        if (strlen(env) > CTL_HOSTS_BYTES_MAX) {
            fprintf(stderr, "slotctl: $SLOTD_ADDR: longer than %d bytes\n", CTL_HOSTS_BYTES_MAX);
            return EXIT_USAGE;
        }
        strcpy(x.host, env);
    } else if (env && *env && parse_addr(&x, "$SLOTD_ADDR", env)) {
        return EXIT_USAGE;
    }
    x.token = getenv("SLOTD_TOKEN");
    if (x.token && !*x.token)
        x.token = NULL;
    opterr = 0;
    int rc = parse_global(&x, argc, argv);
    if (rc >= 0)
        return rc;
    if (optind >= argc) {
        print_help(stderr);
        return EXIT_USAGE;
    }
    const ctl_cmd *c = ctl_find_cmd(argv[optind]);
    if (!c)
        return ctl_usage_error(&x, "unknown command '%s'", argv[optind]);
    x.cmd = c->name;
    int cargc = argc - optind;
    char **cargv = argv + optind;
    optind = 0; /* GNU getopt: start over on the command's own arguments */
    rc = c->run(&x, cargc, cargv);
    slot_follow_free(x.follow);
    return rc;
}
