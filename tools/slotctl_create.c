/*
 * slotctl_create.c — `slotctl create`: the op create_event with every
 * setting it takes (docs/protocol.md, "create_event", "Version 1.1" and
 * "Version 1.2"): capacity and shards, the hold settings, the sale window,
 * the waitlist, a parent (ticket types), the client limits, the waiting room
 * and a seat map read from a JSON file. Each option's value is checked here
 * against the protocol's range before anything is sent (a usage error,
 * exit 64); what only the server can decide (an unknown parent, a family
 * too deep, a bad seat map) comes back as its error (exit 1).
 *
 * The request is slot_req_encode's line for the settings the client library
 * models (v1.1 and parent), with the v1.2 fields it does not model (client
 * limits, admission, seats) added to the JSON object here. Part of slotctl
 * (slotctl.h); the command table and its help text are in slotctl.c.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <jansson.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "slot/client.h"
#include "slot/limits.h"
#include "slot/proto.h"
#include "slotctl.h"

/* What create collects besides the request: the fields slot_req_encode does
 * not write, and which options were given. */
typedef struct create_args {
    slot_req req;
    bool have_capacity;
    const char *seats_path; /* --seats FILE; NULL: an unseated event */
    const char *admission;  /* --admission's value as given ("none", "queue", "lottery"); NULL: not given */
    bool have_admit_per_s, have_grant_ttl_ms, have_queue_opens_at;
    uint64_t admit_per_s, grant_ttl_ms, queue_opens_at_ms;
    bool have_max_active, have_client_rate;
    uint64_t max_active_per_client, client_rate;
} create_args;

/* The event-name rule (docs/protocol.md, "Names and numbers"): 1..64 bytes of [A-Za-z0-9._:-]. */
static bool is_event_name(const char *s)
{
    size_t n = strlen(s);
    if (n < 1 || n > SLOT_EVENT_BYTES_MAX)
        return false;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        bool ok = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '.' || c == '_' ||
                  c == ':' || c == '-';
        if (!ok)
            return false;
    }
    return true;
}

/* A number option into *v and its flag *have. 0 or EXIT_USAGE. */
static int num_opt(const ctl *x, const char *what, const char *arg, uint64_t min, uint64_t max, uint64_t *v, bool *have)
{
    if (ctl_parse_num(x, what, arg, min, max, v))
        return EXIT_USAGE;
    *have = true;
    return 0;
}

/* The options of v1.0 and v1.1 into the request. 0 or EXIT_USAGE. */
static int classic_opt(const ctl *x, int o, const char *arg, slot_req *req)
{
    uint64_t v = 0;
    switch (o) {
    case 'o':
    case 'e':
        if (ctl_parse_time(x, o == 'o' ? "--opens-at" : "--closes-at", arg, &v))
            return EXIT_USAGE;
        *(o == 'o' ? &req->opens_at_ms : &req->closes_at_ms) = v;
        req->has |= o == 'o' ? SLOT_HAS_OPENS_AT : SLOT_HAS_CLOSES_AT;
        return 0;
    case 'x':
        if (ctl_parse_num(x, "--max-extensions", arg, 0, SLOT_MAX_EXTENSIONS_MAX, &v))
            return EXIT_USAGE;
        req->max_extensions = (uint32_t)v;
        req->has |= SLOT_HAS_MAX_EXTENSIONS;
        return 0;
    case 'w':
        if (ctl_parse_num(x, "--waitlist-max", arg, 0, SLOT_WAITLIST_MAX_MAX, &v))
            return EXIT_USAGE;
        slot_req_set_waitlist_max(req, (uint32_t)v);
        return 0;
    case 'm':
        if (ctl_parse_num(x, "--max-hold-ms", arg, SLOT_MAX_HOLD_MS_MIN, SLOT_MAX_HOLD_MS_MAX, &v))
            return EXIT_USAGE;
        req->max_hold_ms = v;
        req->has |= SLOT_HAS_MAX_HOLD_MS;
        return 0;
    case 'c':
        if (ctl_parse_num(x, "--capacity", arg, 0, SLOT_CAPACITY_MAX, &v))
            return EXIT_USAGE;
        req->capacity = v;
        return 0;
    case 's':
        if (ctl_parse_num(x, "--shards", arg, 1, SLOT_SHARDS_MAX, &v))
            return EXIT_USAGE;
        req->shards = (uint32_t)v;
        req->has |= SLOT_HAS_SHARDS;
        return 0;
    case 't':
        if (ctl_parse_num(x, "--hold-ttl-ms", arg, SLOT_HOLD_TTL_MS_MIN, SLOT_HOLD_TTL_MS_MAX, &v))
            return EXIT_USAGE;
        req->hold_ttl_ms = (uint32_t)v;
        req->has |= SLOT_HAS_HOLD_TTL;
        return 0;
    case 'u':
        if (ctl_parse_num(x, "--max-per-user", arg, 0, SLOT_CAPACITY_MAX, &v))
            return EXIT_USAGE;
        req->max_per_user = v;
        req->has |= SLOT_HAS_MAX_PER_USER;
        return 0;
    default: /* 'r' */
        if (ctl_parse_num(x, "--max-per-request", arg, 1, SLOT_MAX_PER_REQUEST_MAX, &v))
            return EXIT_USAGE;
        req->max_per_request = (uint32_t)v;
        req->has |= SLOT_HAS_MAX_PER_REQUEST;
        return 0;
    }
}

/* One option of create into a. 0 or EXIT_USAGE. */
static int create_opt(const ctl *x, int o, const char *arg, create_args *a)
{
    switch (o) {
    case 'P': { /* --parent: ticket types */
        if (!is_event_name(arg))
            return ctl_usage_error(x,
                                   "--parent: an event name of 1..64 bytes of A-Z a-z 0-9 . _ : - expected, not '%s'",
                                   arg);
        size_t n = strlen(arg);
        memcpy(a->req.parent, arg, n + 1);
        a->req.parent_len = (uint8_t)n;
        a->req.has |= SLOT_HAS_PARENT;
        return 0;
    }
    case 'S':
        a->seats_path = arg;
        return 0;
    case 'A':
        if (strcmp(arg, "none") != 0 && strcmp(arg, "queue") != 0 && strcmp(arg, "lottery") != 0)
            return ctl_usage_error(x, "--admission: none, queue or lottery expected, not '%s'", arg);
        a->admission = arg;
        return 0;
    case 'a':
        return num_opt(x, "--admit-per-s", arg, SLOT_ADMIT_PER_S_MIN, SLOT_ADMIT_PER_S_MAX, &a->admit_per_s,
                       &a->have_admit_per_s);
    case 'g':
        return num_opt(x, "--grant-ttl-ms", arg, SLOT_GRANT_TTL_MS_MIN, SLOT_GRANT_TTL_MS_MAX, &a->grant_ttl_ms,
                       &a->have_grant_ttl_ms);
    case 'q':
        if (ctl_parse_time(x, "--queue-opens-at", arg, &a->queue_opens_at_ms))
            return EXIT_USAGE;
        a->have_queue_opens_at = true;
        return 0;
    case 'M':
        return num_opt(x, "--max-active-per-client", arg, 0, SLOT_CAPACITY_MAX, &a->max_active_per_client,
                       &a->have_max_active);
    case 'R':
        return num_opt(x, "--client-rate", arg, 0, SLOT_CLIENT_RATE_MAX, &a->client_rate, &a->have_client_rate);
    default:
        a->have_capacity |= o == 'c';
        return classic_opt(x, o, arg, &a->req);
    }
}

/* The seat map of --seats FILE: a JSON object (docs/protocol.md, "Seated
 * events") of at most SLOT_CLIENT_LINE_MAX bytes (one request carries it;
 * more is not read). Its contents (names, ranges, counts) are the server's
 * to check. Returns the object (owned by the caller), or NULL after a usage
 * error's message. */
static json_t *read_seats(const ctl *x, const char *path)
{
    char msg[700] = "";
    FILE *f = fopen(path, "rb");
    char *buf = f ? malloc(SLOT_CLIENT_LINE_MAX + 1) : NULL;
    size_t n = buf ? fread(buf, 1, SLOT_CLIENT_LINE_MAX + 1, f) : 0;
    json_t *map = NULL;
    json_error_t e;
    if (!f)
        snprintf(msg, sizeof msg, "--seats: cannot open '%.400s': %s", path, strerror(errno));
    else if (!buf || ferror(f))
        snprintf(msg, sizeof msg, "--seats: cannot read '%.400s'%s", path, buf ? "" : ": out of memory");
    else if (n > SLOT_CLIENT_LINE_MAX)
        snprintf(msg, sizeof msg, "--seats: '%.300s' is over %u bytes, more than one request may carry", path,
                 SLOT_CLIENT_LINE_MAX);
    else if (!(map = json_loadb(buf, n, JSON_REJECT_DUPLICATES, &e)))
        snprintf(msg, sizeof msg, "--seats: '%.300s' is not JSON: line %d: %.200s", path, e.line, e.text);
    else if (!json_is_object(map) || !json_is_array(json_object_get(map, "sections")))
        snprintf(msg, sizeof msg,
                 "--seats: '%.300s' must hold a seat map: {\"sections\":[{\"name\":\"A\",\"rows\":[{\"name\":\"1\","
                 "\"from\":1,\"to\":20}]}]}",
                 path);
    if (f)
        fclose(f);
    free(buf);
    if (map && json_is_object(map) && json_is_array(json_object_get(map, "sections")))
        return map;
    json_decref(map);
    ctl_usage_error(x, "%s", msg);
    return NULL;
}

/* The settings of one option group that go together: the room's. A usage
 * error when they are given without a room. */
static int check_room(const ctl *x, const create_args *a)
{
    bool room = a->admission && strcmp(a->admission, "none") != 0;
    if (!room && (a->have_admit_per_s || a->have_grant_ttl_ms || a->have_queue_opens_at))
        return ctl_usage_error(x, "%s",
                               "--admit-per-s, --grant-ttl-ms and --queue-opens-at need --admission queue or lottery");
    return 0;
}

/* The request line for a: slot_req_encode's, with the v1.2 fields added.
 * Heap (the caller frees), or NULL after a message (a usage error). */
static char *create_line(const ctl *x, create_args *a)
{
    char base[4096];
    long n = slot_req_encode(&a->req, base, sizeof base);
    if (n < 0 || (size_t)n >= sizeof base) {
        ctl_usage_error(x, "%s", "the request does not encode");
        return NULL;
    }
    json_t *o = json_loadb(base, (size_t)n, 0, NULL);
    if (!json_is_object(o)) {
        json_decref(o);
        ctl_usage_error(x, "%s", "the request does not encode");
        return NULL;
    }
    if (a->have_max_active)
        json_object_set_new(o, "max_active_per_client", json_integer((json_int_t)a->max_active_per_client));
    if (a->have_client_rate)
        json_object_set_new(o, "client_rate", json_integer((json_int_t)a->client_rate));
    if (a->admission)
        json_object_set_new(o, "admission", json_string(a->admission));
    if (a->have_admit_per_s)
        json_object_set_new(o, "admit_per_s", json_integer((json_int_t)a->admit_per_s));
    if (a->have_grant_ttl_ms)
        json_object_set_new(o, "grant_ttl_ms", json_integer((json_int_t)a->grant_ttl_ms));
    if (a->have_queue_opens_at)
        json_object_set_new(o, "queue_opens_at", json_integer((json_int_t)a->queue_opens_at_ms));
    if (a->seats_path) {
        json_t *map = read_seats(x, a->seats_path);
        if (!map) {
            json_decref(o);
            return NULL;
        }
        json_object_set_new(o, "seats", map);
        if (!a->have_capacity) /* a seated event's capacity is its seat count */
            json_object_del(o, "capacity");
    }
    char *s = json_dumps(o, JSON_COMPACT);
    json_decref(o);
    size_t len = s ? strlen(s) : 0;
    char *line = s ? realloc(s, len + 2) : NULL;
    if (!line) {
        free(s);
        fprintf(stderr, "slotctl: create: out of memory\n");
        return NULL;
    }
    memcpy(line + len, "\n", 2);
    return line;
}

int cmd_create(ctl *x, int argc, char **argv)
{
    static const struct option opts[] = {{"capacity", required_argument, NULL, 'c'},
                                         {"shards", required_argument, NULL, 's'},
                                         {"hold-ttl-ms", required_argument, NULL, 't'},
                                         {"max-per-user", required_argument, NULL, 'u'},
                                         {"max-per-request", required_argument, NULL, 'r'},
                                         {"opens-at", required_argument, NULL, 'o'},
                                         {"closes-at", required_argument, NULL, 'e'},
                                         {"max-extensions", required_argument, NULL, 'x'},
                                         {"max-hold-ms", required_argument, NULL, 'm'},
                                         {"waitlist-max", required_argument, NULL, 'w'},
                                         {"parent", required_argument, NULL, 'P'},
                                         {"max-active-per-client", required_argument, NULL, 'M'},
                                         {"client-rate", required_argument, NULL, 'R'},
                                         {"admission", required_argument, NULL, 'A'},
                                         {"admit-per-s", required_argument, NULL, 'a'},
                                         {"grant-ttl-ms", required_argument, NULL, 'g'},
                                         {"queue-opens-at", required_argument, NULL, 'q'},
                                         {"seats", required_argument, NULL, 'S'},
                                         {"help", no_argument, NULL, 'h'},
                                         {0}};
    create_args a = {0};
    slot_req_init(&a.req, SLOT_OP_CREATE_EVENT);
    int o, rc = 0;
    while ((o = ctl_next_opt(x, argc, argv, opts, &rc)) >= 0)
        if ((rc = create_opt(x, o, optarg, &a)))
            return rc;
    if (o == -2 || (rc = ctl_want_args(x, argc - optind, argv + optind, 1, 1)))
        return rc;
    if (!a.have_capacity && !a.seats_path)
        return ctl_usage_error(x, "%s", "--capacity is required (or --seats FILE: then it is the seat count)");
    if ((rc = check_room(x, &a)))
        return rc;
    if (slot_req_set_event(&a.req, argv[optind]) < 0)
        return ctl_usage_error(x, "event name longer than 64 bytes: '%s'", argv[optind]);
    char *line = create_line(x, &a);
    if (!line)
        return EXIT_USAGE;
    slot_reply r;
    memset(&r, 0, sizeof r);
    rc = ctl_connect(x);
    if (rc == 0) {
        rc = ctl_answer(x, slot_follow_call_line(x->follow, line, strlen(line), &r), &r);
        if (rc == 0 && !x->json)
            ctl_print_event_view(&r);
    }
    slot_reply_clear(&r);
    free(line);
    return rc;
}
