/*
 * slotctl_feed.c — `slotctl feed` (slotctl_feed.h). It reads the feed as a
 * consumer of its own, "slotctl.PID", acking what it printed so the window
 * moves, and forgets that consumer when it ends (needs role admin; it says
 * so otherwise), so a look at the feed never holds back retention for long.
 * --consumer NAME only picks where to start: after NAME's stored ack.
 * --placement NAME --etcd URL reads every set of a placement (slotctl_pfeed.c).
 */
#include "slotctl_feed.h"

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "slot/limits.h"
#include "slotctl_pfeed.h"

#define FEED_WINDOW 1000 /* entries in flight to slotctl; it acks each batch it printed */

const char *slotctl_feed_help(void)
{
    return "Prints the feed's entries from --from N (default: the oldest kept, or just after\n"
           "--consumer NAME's last ack) up to the head, one human line each (or the raw lines\n"
           "with --json); --follow goes on printing new entries as they are committed, until\n"
           "interrupted. --consumers prints each known consumer's acked seq and lag instead.\n"
           "  --from N          the first seq to print (1..)\n"
           "  --consumer NAME   start after this consumer's stored ack (its position is not moved)\n"
           "  --follow          keep printing as changes commit\n"
           "  --consumers       list consumers: name, acked, lag behind the head\n"
           "With --placement NAME --etcd URL: every replica set of the placement at once (the sets\n"
           "and their members read from etcd; each set's primary followed through not_primary and\n"
           "failovers), each event's entries in order and once across its moves: the source's up\n"
           "to its event.moved, then the target's from its event.arrived (docs/design.md, \"The\n"
           "feed of a placement\"). Human lines start with the set; --json lines get \"set\".\n"
           "At the end, on stderr: entries printed and dropped, and each set's next seq.\n"
           "Needs role admin (feed_consumers for a hand-over's probe, feed_forget at the end).\n"
           "  --placement NAME  the placement (slotd --placement)\n"
           "  --etcd URL        its etcd, http://HOST:PORT[,...]\n"
           "  --from SET=SEQ[,SET=SEQ...]  with --placement: where to start on those sets (the\n"
           "                    \"next\" of an earlier run's end), over --state's positions; an\n"
           "                    exact resume across a move needs --state\n"
           "  --state FILE      resume: each set's position and each event's hand-over, read at\n"
           "                    start when FILE exists, written every 100 entries and at the end\n"
           "                    (SIGINT or SIGTERM ends a --follow run and writes it)\n";
}

/* One line of c as JSON, NULL after printing why (timeout, closed, not JSON). */
static json_t *recv_json(slot_client *c, int timeout_ms, const char **raw)
{
    long n = slot_client_recv_line(c, raw, timeout_ms);
    if (n < 0) {
        fprintf(stderr, "slotctl: feed: %s\n",
                n == -ECONNRESET ? "the server closed the connection" : strerror((int)-n));
        return NULL;
    }
    json_error_t e;
    json_t *v = json_loadb(*raw, (size_t)n, 0, &e);
    if (!v)
        fprintf(stderr, "slotctl: feed: not a JSON line: %.80s\n", *raw);
    return v;
}

/* The connection: the follower until the first answer (so that request
 * reaches the primary of a replica set), then the follower's own client, on
 * which the subscription's pushes and replies arrive in order. */
typedef struct feed_conn {
    slot_follow *f;
    slot_client *c; /* NULL before the first answer */
} feed_conn;

/* The first request, through the follower; its reply as JSON, NULL after a message. */
static json_t *first_call(feed_conn *fc, const char *line)
{
    slot_reply r;
    int rc = slot_follow_call_line(fc->f, line, strlen(line), &r);
    json_t *v = NULL;
    if (rc < 0)
        fprintf(stderr, "slotctl: feed: %s\n", rc == -EMSGSIZE ? "the request is too long" : slot_follow_error(fc->f));
    else if (!(v = json_loads(r.line ? r.line : "", 0, NULL)))
        fprintf(stderr, "slotctl: feed: not a JSON line\n");
    slot_reply_clear(&r);
    fc->c = v ? slot_follow_client(fc->f) : NULL;
    if (v && !fc->c) { /* answered, yet the follower holds no connection now */
        fprintf(stderr, "slotctl: feed: the connection failed\n");
        json_decref(v);
        v = NULL;
    }
    return v;
}

/* Sends line, reads lines up to the first reply (pushes before it are printed by show). */
static json_t *call(feed_conn *fc, const char *line, int timeout_ms, bool json,
                    void (*show)(json_t *, const char *, bool))
{
    if (!fc->c)
        return first_call(fc, line);
    slot_client *c = fc->c;
    if (slot_client_send_raw(c, line, strlen(line)) != 0) {
        fprintf(stderr, "slotctl: feed: the connection failed\n");
        return NULL;
    }
    for (;;) {
        const char *raw;
        json_t *v = recv_json(c, timeout_ms, &raw);
        if (!v || !json_object_get(v, "feed"))
            return v;
        if (show)
            show(v, raw, json);
        json_decref(v);
    }
}

static int server_error(json_t *r)
{
    fprintf(stderr, "slotctl: feed: %s: %s\n", json_string_value(json_object_get(r, "error")),
            json_string_value(json_object_get(r, "message")));
    return 1;
}

void slotctl_feed_show(json_t *v, const char *raw, bool json, const char *set)
{
    if (json && set) { /* {"set":S, then the line as it came without its "{" */
        printf("{\"set\":\"%s\",%s\n", set, raw[0] == '{' ? raw + 1 : raw);
        fflush(stdout);
        return;
    }
    if (json) {
        printf("%s\n", raw);
        return;
    }
    if (set)
        printf("%s  ", set);
    json_int_t at = json_integer_value(json_object_get(v, "at"));
    time_t secs = (time_t)(at / 1000);
    struct tm tm;
    char when[32] = "?";
    if (gmtime_r(&secs, &tm))
        strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%S", &tm);
    printf("%" JSON_INTEGER_FORMAT "  %s.%03dZ  %-14s  %s", json_integer_value(json_object_get(v, "feed")), when,
           (int)(at % 1000), json_string_value(json_object_get(v, "type")),
           json_string_value(json_object_get(v, "event")));
    const char *k;
    json_t *m;
    json_object_foreach(v, k, m)
    {
        if (!strcmp(k, "feed") || !strcmp(k, "at") || !strcmp(k, "type") || !strcmp(k, "event"))
            continue;
        if (json_is_string(m))
            printf(" %s=%s", k, json_string_value(m));
        else if (json_is_integer(m))
            printf(" %s=%" JSON_INTEGER_FORMAT, k, json_integer_value(m));
    }
    printf("\n");
    fflush(stdout);
}

/* SEQ  TIME(UTC)  TYPE  EVENT  key=value ... for the entry's other fields. */
static void show_entry(json_t *v, const char *raw, bool json)
{
    slotctl_feed_show(v, raw, json, NULL);
}

static int list_consumers(feed_conn *c, bool json, int timeout_ms)
{
    json_t *r = call(c, "{\"op\":\"feed_consumers\"}\n", timeout_ms, json, NULL);
    if (!r)
        return 2;
    int rc = json_is_true(json_object_get(r, "ok")) ? 0 : server_error(r);
    if (rc == 0 && json) {
        char *t = json_dumps(r, JSON_COMPACT);
        printf("%s\n", t);
        free(t);
    } else if (rc == 0) {
        printf("head %" JSON_INTEGER_FORMAT "\n%-32s %12s %12s\n", json_integer_value(json_object_get(r, "head")),
               "CONSUMER", "ACKED", "LAG");
        size_t i;
        json_t *e;
        json_array_foreach(json_object_get(r, "consumers"), i, e)
            printf("%-32s %12" JSON_INTEGER_FORMAT " %12" JSON_INTEGER_FORMAT "\n",
                   json_string_value(json_object_get(e, "consumer")), json_integer_value(json_object_get(e, "acked")),
                   json_integer_value(json_object_get(e, "lag")));
    }
    json_decref(r);
    return rc;
}

/* The seq after NAME's stored ack, from feed_consumers; 0 after a message. */
static uint64_t after_consumer(feed_conn *c, const char *name, int timeout_ms)
{
    json_t *r = call(c, "{\"op\":\"feed_consumers\"}\n", timeout_ms, false, NULL);
    uint64_t from = 0;
    size_t i;
    json_t *e;
    if (r && !json_is_true(json_object_get(r, "ok")))
        server_error(r);
    else if (r)
        json_array_foreach(json_object_get(r, "consumers"), i,
                           e) if (strcmp(json_string_value(json_object_get(e, "consumer")), name) == 0)
            from = (uint64_t)json_integer_value(json_object_get(e, "acked")) + 1;
    if (r && json_is_true(json_object_get(r, "ok")) && !from)
        fprintf(stderr, "slotctl: feed: --consumer: no consumer '%s' is known\n", name);
    json_decref(r);
    return from;
}

/* Prints entries until the head (or forever with follow), acking as it goes. */
static int read_entries(feed_conn *c, const char *me, uint64_t from, bool follow, bool json, int timeout_ms)
{
    char line[256];
    if (from)
        snprintf(line, sizeof line, "{\"op\":\"subscribe\",\"consumer\":\"%s\",\"from\":%" PRIu64 ",\"window\":%d}\n",
                 me, from, FEED_WINDOW);
    else
        snprintf(line, sizeof line, "{\"op\":\"subscribe\",\"consumer\":\"%s\",\"from\":\"start\",\"window\":%d}\n", me,
                 FEED_WINDOW);
    json_t *r = call(c, line, timeout_ms, json, show_entry);
    if (!r)
        return 2;
    if (!json_is_true(json_object_get(r, "ok"))) {
        int rc = server_error(r);
        json_decref(r);
        return rc;
    }
    uint64_t next = (uint64_t)json_integer_value(json_object_get(r, "from"));
    uint64_t head = (uint64_t)json_integer_value(json_object_get(r, "head"));
    json_decref(r);
    while (follow || next <= head) {
        const char *raw;
        json_t *v = recv_json(c->c, follow ? -1 : timeout_ms, &raw);
        if (!v)
            return 2;
        if (json_object_get(v, "feed")) {
            show_entry(v, raw, json);
            next = (uint64_t)json_integer_value(json_object_get(v, "feed")) + 1;
            if ((next - 1) % (FEED_WINDOW / 2) == 0) { /* ack so the window moves; the reply is read as it comes */
                snprintf(line, sizeof line, "{\"op\":\"ack\",\"consumer\":\"%s\",\"seq\":%" PRIu64 "}\n", me, next - 1);
                slot_client_send_raw(c->c, line, strlen(line));
            }
        } else if (!json_is_true(json_object_get(v, "ok"))) {
            int rc = server_error(v);
            json_decref(v);
            return rc;
        }
        json_decref(v);
    }
    r = call(c, "{\"op\":\"unsubscribe\"}\n", timeout_ms, json, NULL); /* pushes after the head: not asked for */
    json_decref(r);
    return r ? 0 : 2;
}

/* The checks of --placement's options and the run (slotctl_pfeed.h). */
static int placement_feed(slotctl_pfeed_opts *po, const char *consumer, bool consumers)
{
    if (!po->etcd || !po->etcd[0]) {
        fprintf(stderr, "slotctl: feed: --placement needs --etcd URL\n");
        return 64;
    }
    if (consumer || consumers) {
        fprintf(stderr, "slotctl: feed: --placement takes no %s (a run resumes from --state FILE)\n",
                consumer ? "--consumer" : "--consumers");
        return 64;
    }
    size_t n = strlen(po->placement);
    if (n == 0 || n > SLOT_CLUSTER_NAME_BYTES_MAX ||
        strspn(po->placement, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                              "0123456789._-") != n) {
        fprintf(stderr, "slotctl: feed: --placement: 1..%d bytes of [A-Za-z0-9._-], not '%s'\n",
                SLOT_CLUSTER_NAME_BYTES_MAX, po->placement);
        return 64;
    }
    if (po->state && (!po->state[0] || strlen(po->state) > SLOT_CTL_FEED_STATE_PATH_BYTES_MAX)) {
        fprintf(stderr, "slotctl: feed: --state: want a file name of 1..%d bytes\n",
                SLOT_CTL_FEED_STATE_PATH_BYTES_MAX);
        return 64;
    }
    return slotctl_pfeed(po);
}

int slotctl_feed(slot_follow *f, const char *token, bool json, int timeout_ms, int argc, char **argv)
{
    static const struct option longopts[] = {
        {"from", required_argument, NULL, 'f'},      {"consumer", required_argument, NULL, 'c'},
        {"follow", no_argument, NULL, 'F'},          {"consumers", no_argument, NULL, 'C'},
        {"placement", required_argument, NULL, 'p'}, {"etcd", required_argument, NULL, 'e'},
        {"state", required_argument, NULL, 's'},     {0}};
    slotctl_pfeed_opts po = {.token = token, .json = json, .timeout_ms = timeout_ms};
    feed_conn conn = {.f = f, .c = NULL}, *c = &conn;
    uint64_t from = 0;
    const char *consumer = NULL, *from_arg = NULL;
    bool follow = false, consumers = false;
    int o;
    while ((o = getopt_long(argc, argv, ":", longopts, NULL)) != -1) {
        switch (o) {
        case 'f':
            from_arg = optarg; /* a seq, or with --placement SET=SEQ,...: read after the loop */
            break;
        case 'c':
            consumer = optarg;
            break;
        case 'F':
            follow = true;
            break;
        case 'C':
            consumers = true;
            break;
        case 'p':
            po.placement = optarg;
            break;
        case 'e':
            po.etcd = optarg;
            break;
        case 's':
            po.state = optarg;
            break;
        default:
            fprintf(stderr, "slotctl: feed: bad option '%s' (see 'slotctl feed --help')\n", argv[optind - 1]);
            return 64;
        }
    }
    if (optind < argc) {
        fprintf(stderr, "slotctl: feed: unexpected argument '%s'\n", argv[optind]);
        return 64;
    }
    if (po.placement) {
        po.follow = follow;
        po.from = from_arg;
        return placement_feed(&po, consumer, consumers);
    }
    if (from_arg) {
        char *end = NULL;
        errno = 0;
        from = (from_arg[0] >= '0' && from_arg[0] <= '9') ? strtoull(from_arg, &end, 10) : 0;
        if (!end || *end || errno || from < 1 || from > INT64_MAX) {
            fprintf(stderr, "slotctl: feed: --from: want a seq 1..2^63-1, not '%s'\n", from_arg);
            return 64;
        }
    }
    if (po.etcd || po.state) {
        fprintf(stderr, "slotctl: feed: %s goes with --placement NAME\n", po.etcd ? "--etcd" : "--state");
        return 64;
    }
    if (consumers)
        return list_consumers(c, json, timeout_ms);
    if (consumer && strlen(consumer) > SLOT_CONSUMER_BYTES_MAX) {
        fprintf(stderr, "slotctl: feed: --consumer: longer than %d bytes\n", SLOT_CONSUMER_BYTES_MAX);
        return 64;
    }
    if (consumer && !from && !(from = after_consumer(c, consumer, timeout_ms)))
        return 1;
    char me[64];
    snprintf(me, sizeof me, "slotctl.%ld", (long)getpid());
    int rc = read_entries(c, me, from, follow, json, timeout_ms);
    char line[128];
    snprintf(line, sizeof line, "{\"op\":\"feed_forget\",\"consumer\":\"%s\"}\n", me);
    json_t *r = rc == 2 ? NULL : call(c, line, timeout_ms, json, NULL);
    if (r && !json_is_true(json_object_get(r, "ok")))
        fprintf(stderr, "slotctl: feed: could not forget consumer '%s' (%s): ask an admin to run feed_forget\n", me,
                json_string_value(json_object_get(r, "error")));
    json_decref(r);
    return rc;
}
