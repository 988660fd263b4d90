/*
 * drv_slotd_admin.c — the slotd target's administration: blocking calls
 * (hello, create_event, event, check, expire, stats) through slot_follow, so
 * they reach the replica set's primary whichever --host is tried first, and
 * a call interrupted by a failover is sent again with the same request.
 *
 * With --placement the admin also reads the placement's map (slot_route) and
 * keeps one follower per replica set: events are created round-robin over
 * the sets, and each event's own calls (event, check) go to its set; expire
 * runs on every set.
 */
#include <errno.h>
#include <inttypes.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

#include "drv_slotd.h"
#include "exit.h"
#include "limits.h"
#include "slot/client.h"

struct bench_admin {
    slot_follow *f;
    /* --placement */
    uint32_t nsets;
    slot_follow *sets[BENCH_SETS_MAX];
    char set_primary[BENCH_SETS_MAX][SLOT_CLIENT_ADDR_BYTES_MAX + 1];
    uint32_t ncreated;
    struct {
        char name[SLOT_EVENT_BYTES_MAX + 1];
        uint8_t set;
    } created[BENCH_EVENTS_MAX + 4];
    const bench_config *cfg;
    json_t *hello;
    struct sockaddr_storage peer; /* the address the first answer came from */
};

const struct sockaddr_storage *bench_slotd_admin_peer(const bench_admin *a)
{
    return &a->peer;
}

const char *bench_slotd_admin_node(const bench_admin *a)
{
    return slot_follow_node(a->f);
}

/* One call; 0 on an ok reply, else an exit status and err. r must be cleared by the caller.
 * slotd closes connections idle past its --idle-timeout-ms, as the admin connection is
 * through the load: slot_follow opens it again and sends the request again. */
static int call_on(bench_admin *a, slot_follow *f, const char *what, const slot_req *req, slot_reply *r, char *err,
                   size_t errlen)
{
    int rc = slot_follow_call(f, req, r);
    if (rc < 0) {
        snprintf(err, errlen, "%s: %s", what, slot_follow_error(f));
        return BENCH_EXIT_CONNECTION;
    }
    if (!r->ok) {
        snprintf(err, errlen, "%s: %s: %s", what, r->error, r->message);
        return BENCH_EXIT_FAILED;
    }
    (void)a;
    return 0;
}

/* call_on for a request line written here (len bytes, with its "\n"). */
static int line_on(slot_follow *f, const char *what, const char *line, size_t len, slot_reply *r, char *err,
                   size_t errlen)
{
    int rc = slot_follow_call_line(f, line, len, r);
    if (rc < 0) {
        snprintf(err, errlen, "%s: %s", what, slot_follow_error(f));
        return BENCH_EXIT_CONNECTION;
    }
    if (!r->ok) {
        snprintf(err, errlen, "%s: %s: %s", what, r->error, r->message);
        return BENCH_EXIT_FAILED;
    }
    return 0;
}

static int call(bench_admin *a, const char *what, const slot_req *req, slot_reply *r, char *err, size_t errlen)
{
    return call_on(a, a->f, what, req, r, err, errlen);
}

int bench_slotd_admin_event_set(const bench_admin *a, const char *event)
{
    for (uint32_t i = 0; i < a->ncreated; i++)
        if (strcmp(a->created[i].name, event) == 0)
            return a->created[i].set;
    return -1;
}

uint32_t bench_slotd_admin_sets(const bench_admin *a)
{
    return a->nsets;
}

const char *bench_slotd_admin_set_primary(const bench_admin *a, uint32_t i)
{
    return i < a->nsets ? a->set_primary[i] : NULL;
}

/* The follower of event's set (--placement), else the admin's own. */
static slot_follow *follower_of(bench_admin *a, const char *event)
{
    int s = a->nsets ? bench_slotd_admin_event_set(a, event) : -1;
    return s >= 0 ? a->sets[s] : a->f;
}

void bench_slotd_admin_close(bench_admin *a)
{
    if (!a)
        return;
    slot_follow_free(a->f);
    for (uint32_t i = 0; i < a->nsets; i++)
        slot_follow_free(a->sets[i]);
    json_decref(a->hello);
    free(a);
}

/* The follower of every --host, with the token; `first` ("H:P", or NULL) is
 * put before them, and left out of them. 0 or an exit status. */
static int admin_follow(bench_admin *a, const char *first, char *err, size_t errlen)
{
    const bench_config *cfg = a->cfg;
    char list[(BENCH_HOSTS_MAX + 1) * sizeof(cfg->hosts[0])] = "";
    if (first)
        snprintf(list, sizeof(list), "%s", first);
    for (uint32_t i = 0; i < cfg->nhosts; i++)
        if (!first || strcmp(first, cfg->hosts[i]) != 0)
            snprintf(list + strlen(list), sizeof(list) - strlen(list), "%s%s", list[0] ? "," : "", cfg->hosts[i]);
    slot_follow_opts o;
    slot_follow_opts_default(&o);
    o.token = cfg->token;
    o.connect_timeout_ms = BENCH_CONNECT_TIMEOUT_MS;
    o.reply_timeout_ms = BENCH_CALL_TIMEOUT_MS;
    o.deadline_ms = BENCH_CALL_TIMEOUT_MS + BENCH_FOLLOW_DEADLINE_MS;
    o.attempts_max = BENCH_FOLLOW_ADMIN_SENDS_PER_HOST * cfg->nhosts; /* one host down: the pauses add up to 0.6 s */
    if (cfg->token && strlen(cfg->token) > SLOT_TOKEN_BYTES_MAX) {
        snprintf(err, errlen, "--token: longer than %d bytes", SLOT_TOKEN_BYTES_MAX);
        return BENCH_EXIT_USAGE;
    }
    char why[200];
    if (slot_follow_new(list, &o, &a->f, why, sizeof(why)) < 0) {
        snprintf(err, errlen, "--host: %s", why);
        return BENCH_EXIT_USAGE;
    }
    return 0;
}

/* --placement: the map, read through every --host (slot_route), and a follower of each
 * set's published primary. 0 or an exit status with err. */
static int admin_placement(bench_admin *a, char *err, size_t errlen)
{
    const bench_config *cfg = a->cfg;
    char list[(BENCH_HOSTS_MAX + 1) * sizeof(cfg->hosts[0])] = "";
    for (uint32_t i = 0; i < cfg->nhosts; i++)
        snprintf(list + strlen(list), sizeof(list) - strlen(list), "%s%s", i ? "," : "", cfg->hosts[i]);
    slot_follow_opts o;
    slot_follow_opts_default(&o);
    o.token = cfg->token;
    o.connect_timeout_ms = BENCH_CONNECT_TIMEOUT_MS;
    o.reply_timeout_ms = BENCH_CALL_TIMEOUT_MS;
    o.deadline_ms = BENCH_CALL_TIMEOUT_MS + BENCH_FOLLOW_DEADLINE_MS;
    slot_route *rt = NULL;
    char why[300];
    if (slot_route_new(list, &o, &rt, why, sizeof(why)) < 0) {
        snprintf(err, errlen, "--host: %s", why);
        return BENCH_EXIT_USAGE;
    }
    int rc = slot_route_refresh(rt);
    if (rc < 0) {
        snprintf(err, errlen, "--placement: %s", slot_route_error(rt));
        slot_route_free(rt);
        return rc == -EPROTO ? BENCH_EXIT_FAILED : BENCH_EXIT_CONNECTION;
    }
    uint32_t n = slot_route_nsets(rt);
    rc = 0;
    if (n == 0 || n > BENCH_SETS_MAX) {
        snprintf(err, errlen, "--placement: the map names %u replica sets (1..%d)", n, BENCH_SETS_MAX);
        rc = BENCH_EXIT_FAILED;
    }
    for (uint32_t i = 0; rc == 0 && i < n; i++) {
        const char *primary = NULL;
        const char *name = slot_route_set(rt, i, &primary, NULL);
        if (!primary || !primary[0]) {
            snprintf(err, errlen, "--placement: replica set %s has no primary published", name);
            rc = BENCH_EXIT_CONNECTION;
        } else if (slot_follow_new(primary, &o, &a->sets[i], why, sizeof(why)) < 0) {
            snprintf(err, errlen, "--placement: set %s: %s", name, why);
            rc = BENCH_EXIT_FAILED;
        } else {
            snprintf(a->set_primary[i], sizeof(a->set_primary[i]), "%s", primary);
            a->nsets = i + 1;
        }
    }
    slot_route_free(rt);
    return rc;
}

/* Connect (to the primary, following it) and say hello; keeps hello's reply
 * and where it came from, which is where the load goes. */
int bench_slotd_admin_open(const bench_config *cfg, bench_admin **out, char *err, size_t errlen)
{
    bench_admin *a = calloc(1, sizeof(*a));
    if (!a) {
        snprintf(err, errlen, "out of memory");
        return BENCH_EXIT_FAILED;
    }
    a->cfg = cfg;
    int rc = admin_follow(a, NULL, err, errlen);
    slot_req req;
    slot_reply r;
    memset(&r, 0, sizeof(r));
    slot_req_init(&req, SLOT_OP_HELLO);
    if (cfg->token)
        slot_req_set_token(&req, cfg->token);
    if (rc == 0 && (rc = call(a, "hello", &req, &r, err, errlen)) == BENCH_EXIT_CONNECTION)
        snprintf(err, errlen, "cannot reach slotd at %s: %s", cfg->nhosts > 1 ? "any --host" : cfg->hosts[0],
                 slot_follow_error(a->f));
    if (rc == 0) {
        a->hello = json_loads(r.line, 0, NULL);
        json_object_del(a->hello, "ok");
        socklen_t plen = sizeof(a->peer);
        slot_client *c = slot_follow_client(a->f);
        if (!c || getpeername(slot_client_fd(c), (struct sockaddr *)&a->peer, &plen) < 0) {
            snprintf(err, errlen, "getpeername: %s", c ? strerror(errno) : "no connection");
            rc = BENCH_EXIT_CONNECTION;
        }
    }
    slot_reply_clear(&r);
    if (rc == 0 && cfg->placement)
        rc = admin_placement(a, err, errlen);
    if (rc) {
        bench_slotd_admin_close(a);
        return rc;
    }
    *out = a;
    return 0;
}

static void sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) < 0 && errno == EINTR) {
    }
}

/* A replica answers reads (event, check, stats) from its applied state, and
 * slot_follow stays on whichever node last answered: after a failover, or
 * after a reconnect that tried the next --host, that may be a replica. With
 * several --host values, ask `cluster` (docs/protocol.md, "Clients following
 * the primary") and move to the primary it names, until a node says it is
 * the primary, for at most BENCH_ADMIN_PRIMARY_WAIT_MS (a new primary may
 * still be taking over). One --host: nothing is asked. 0 or an exit status. */
int bench_slotd_admin_to_primary(bench_admin *a, char *err, size_t errlen)
{
    if (a->nsets)
        return 0; /* --placement: each set's follower follows its own primary */
    if (a->cfg->nhosts <= 1)
        return 0;
    char last[400] = "nothing was asked";
    for (int waited_ms = 0;; waited_ms += BENCH_ADMIN_PRIMARY_PAUSE_MS) {
        slot_reply r;
        int rc = slot_follow_call_line(a->f, SLOT_CLUSTER_REQ_LINE, strlen(SLOT_CLUSTER_REQ_LINE), &r);
        const char *node = slot_follow_node(a->f);
        if (rc < 0) {
            snprintf(last, sizeof(last), "%s", slot_follow_error(a->f));
        } else if (r.ok && (strcmp(r.role, "primary") == 0 || strcmp(r.role, "standalone") == 0)) {
            slot_reply_clear(&r);
            return 0;
        } else if (!r.ok && r.err == SLOT_E_UNKNOWN_OP) {
            slot_reply_clear(&r); /* a slotd without replica sets: a standalone server */
            return 0;
        } else if (r.ok && r.primary[0] && strcmp(r.primary, node) != 0) {
            char primary[sizeof(r.primary)];
            snprintf(primary, sizeof(primary), "%s", r.primary);
            slot_follow *old = a->f;
            if (admin_follow(a, primary, err, errlen) != 0) {
                a->f = old; /* a primary's address slot_follow does not take: stay */
                snprintf(last, sizeof(last), "%s names the primary %s: %s", node, primary, err);
            } else {
                slot_follow_free(old);
                slot_reply_clear(&r);
                continue; /* ask the primary at once */
            }
        } else if (r.ok) {
            snprintf(last, sizeof(last), "%s is %s%s%s", node, r.role,
                     r.primary[0] ? ", primary " : ", no primary known", r.primary);
        } else {
            snprintf(last, sizeof(last), "%s: cluster: %s: %s", node, r.error, r.message);
        }
        slot_reply_clear(&r);
        if (waited_ms >= BENCH_ADMIN_PRIMARY_WAIT_MS) {
            snprintf(err, errlen, "no primary after %d ms; last: %s", waited_ms, last);
            return BENCH_EXIT_CONNECTION;
        }
        sleep_ms(BENCH_ADMIN_PRIMARY_PAUSE_MS);
    }
}

int bench_slotd_server_info(bench_admin *a, json_t **info, char *err, size_t errlen)
{
    (void)err;
    (void)errlen;
    *info = a->hello ? json_deep_copy(a->hello) : json_object();
    return 0;
}

/* docs/protocol.md, "Allocations": the view's "allocated" and its block BENCH_BLOCK_NAME of
 * "allocations" ({"qty","remaining","held","confirmed"}) into v; absent: 0 and no block. A
 * reply that is not JSON (it was parsed as a reply already) leaves them so. */
static void view_blocks(const char *line, bench_view *v)
{
    json_t *o = json_loads(line, 0, NULL);
    json_t *b = json_object_get(json_object_get(o, "allocations"), BENCH_BLOCK_NAME);
    v->allocated = (uint64_t)json_integer_value(json_object_get(o, "allocated"));
    v->has_block = json_is_object(b);
    v->block_qty = (uint64_t)json_integer_value(json_object_get(b, "qty"));
    v->block_remaining = (uint64_t)json_integer_value(json_object_get(b, "remaining"));
    v->block_held = (uint64_t)json_integer_value(json_object_get(b, "held"));
    v->block_confirmed = (uint64_t)json_integer_value(json_object_get(b, "confirmed"));
    json_decref(o);
}

/* A call whose reply is an event's view (create_event, event): into v. 0 or an exit status.
 * line (len bytes) not NULL: that request line instead of req (a seated create_event). */
static int view_call_line(bench_admin *a, slot_follow *f, const char *what, const slot_req *req, const char *line,
                          size_t len, bench_view *v, char *err, size_t errlen)
{
    slot_reply r;
    int rc = line ? line_on(f, what, line, len, &r, err, errlen) : call_on(a, f, what, req, &r, err, errlen);
    if (rc == 0) {
        view_blocks(r.line, v);
        v->capacity = r.capacity;
        v->available = r.available;
        v->held = r.held;
        v->confirmed = r.confirmed;
        v->opens_at_ms = r.opens_at_ms;
        v->waitlist_max = r.waitlist_max;
        v->waiting = r.waiting;
        v->waiting_qty = r.waiting_qty;
        snprintf(v->status, sizeof(v->status), "%s", r.status);
    }
    slot_reply_clear(&r);
    return rc;
}

static int view_call(bench_admin *a, slot_follow *f, const char *what, const slot_req *req, bench_view *v, char *err,
                     size_t errlen)
{
    return view_call_line(a, f, what, req, NULL, 0, v, err, errlen);
}

/* create_event of a seated event (hot-release --seated; docs/protocol.md, "Seated events"): the
 * line written with jansson, "seats" the map file's object as it is (the client codec has no
 * seat map to send). 0 or an exit status with err. */
static int create_seated(bench_admin *a, const bench_event_spec *s, bench_view *v, char *err, size_t errlen)
{
    json_t *o = json_pack("{s:s, s:s, s:I, s:i, s:i, s:I, s:i, s:O}", "op", "create_event", "event", s->name,
                          "capacity", (json_int_t)s->capacity, "shards", (int)s->shards, "hold_ttl_ms",
                          (int)s->hold_ttl_ms, "max_per_user", (json_int_t)s->max_per_user, "max_per_request",
                          (int)s->max_per_request, "seats", s->seats);
    if (o && s->opens_at_ms)
        json_object_set_new(o, "opens_at", json_integer((json_int_t)s->opens_at_ms));
    char *text = o ? json_dumps(o, JSON_COMPACT) : NULL;
    json_decref(o);
    size_t n = text ? strlen(text) : 0;
    char *line = text ? realloc(text, n + 2) : NULL;
    if (!line) {
        free(text);
        snprintf(err, errlen, "create_event %s: out of memory for the seat map's line", s->name);
        return BENCH_EXIT_FAILED;
    }
    memcpy(line + n, "\n", 2);
    int rc = view_call_line(a, a->f, "create_event (seated)", NULL, line, n + 1, v, err, errlen);
    free(line);
    return rc;
}

int bench_slotd_seat_map(bench_admin *a, const char *event, json_t **rows, size_t *bytes, char *err, size_t errlen)
{
    char line[SLOT_EVENT_BYTES_MAX + 48];
    int n = snprintf(line, sizeof(line), "{\"op\":\"seat_map\",\"event\":\"%s\"}\n", event);
    *rows = NULL;
    if (n < 0 || (size_t)n >= sizeof(line)) {
        snprintf(err, errlen, "seat_map: event name too long");
        return BENCH_EXIT_USAGE;
    }
    slot_reply r;
    int rc = line_on(follower_of(a, event), "seat_map", line, (size_t)n, &r, err, errlen);
    json_t *o = rc == 0 && r.line ? json_loads(r.line, 0, NULL) : NULL;
    if (rc == 0 && !json_is_object(json_object_get(o, "rows"))) {
        snprintf(err, errlen, "seat_map %s: the reply has no \"rows\" object", event);
        rc = BENCH_EXIT_FAILED;
    }
    if (rc == 0) {
        *rows = json_incref(json_object_get(o, "rows"));
        if (bytes)
            *bytes = strlen(r.line);
    }
    json_decref(o);
    slot_reply_clear(&r);
    return rc;
}

int bench_slotd_create_event(bench_admin *a, const bench_event_spec *s, bench_view *v, char *err, size_t errlen)
{
    if (s->seats && !a->nsets)
        return create_seated(a, s, v, err, errlen);
    slot_req req;
    slot_req_event(&req, SLOT_OP_CREATE_EVENT, s->name);
    req.capacity = s->capacity;
    req.shards = s->shards;
    req.hold_ttl_ms = s->hold_ttl_ms;
    req.max_per_user = s->max_per_user;
    req.max_per_request = s->max_per_request;
    req.has |= SLOT_HAS_SHARDS | SLOT_HAS_HOLD_TTL | SLOT_HAS_MAX_PER_USER | SLOT_HAS_MAX_PER_REQUEST;
    if (s->opens_at_ms)
        slot_req_set_window(&req, s->opens_at_ms, 0);
    if (s->waitlist_max)
        slot_req_set_waitlist_max(&req, s->waitlist_max);
    if (s->parent) {
        size_t n = strlen(s->parent);
        memcpy(req.parent, s->parent, n + 1);
        req.parent_len = (uint8_t)n;
        req.has |= SLOT_HAS_PARENT;
    }
    if (!a->nsets)
        return view_call(a, a->f, "create_event", &req, v, err, errlen);
    if (a->ncreated >= sizeof(a->created) / sizeof(a->created[0])) {
        snprintf(err, errlen, "create_event: more events than --placement keeps");
        return BENCH_EXIT_FAILED;
    }
    uint32_t set = a->ncreated % a->nsets; /* round-robin: event i on set i % sets */
    int rc = view_call(a, a->sets[set], "create_event", &req, v, err, errlen);
    if (rc == 0) {
        snprintf(a->created[a->ncreated].name, sizeof(a->created[0].name), "%s", s->name);
        a->created[a->ncreated++].set = (uint8_t)set;
    }
    return rc;
}

int bench_slotd_event(bench_admin *a, const char *event, bench_view *v, char *err, size_t errlen)
{
    slot_req req;
    slot_req_event(&req, SLOT_OP_EVENT, event);
    return view_call(a, follower_of(a, event), "event", &req, v, err, errlen);
}

/* allocate (docs/protocol.md, "Allocations"): the request line is written here (the client
 * codec has no allocate); event and block are names of [A-Za-z0-9._:-], so nothing to escape.
 * slot_follow sends it again with the same line after a failover: allocate adds units, so a
 * second send whose first committed shows as a block of 2 x qty (setup_block refuses that). */
int bench_slotd_allocate(bench_admin *a, const char *event, const char *block, uint64_t qty, uint64_t *total,
                         uint64_t *remaining, char *err, size_t errlen)
{
    char line[2 * SLOT_EVENT_BYTES_MAX + 96];
    int n = snprintf(line, sizeof(line),
                     "{\"op\":\"allocate\",\"event\":\"%s\",\"allocation\":\"%s\",\"qty\":%" PRIu64 "}\n", event, block,
                     qty);
    if (n < 0 || (size_t)n >= sizeof(line)) {
        snprintf(err, errlen, "allocate: names too long");
        return BENCH_EXIT_USAGE;
    }
    slot_reply r;
    int rc = slot_follow_call_line(a->f, line, (size_t)n, &r);
    if (rc < 0) {
        snprintf(err, errlen, "allocate: %s", slot_follow_error(a->f));
        slot_reply_clear(&r);
        return BENCH_EXIT_CONNECTION;
    }
    rc = 0;
    if (!r.ok) {
        snprintf(err, errlen, "allocate %" PRIu64 " of %s: %s: %s", qty, event, r.error, r.message);
        rc = BENCH_EXIT_FAILED;
    } else if (strcmp(r.status, "sold_out") == 0) {
        snprintf(err, errlen, "allocate %" PRIu64 " of %s: sold_out (%" PRIu64 " free)", qty, event, r.available);
        rc = BENCH_EXIT_FAILED;
    } else {
        json_t *o = json_loads(r.line, 0, NULL);
        *total = (uint64_t)json_integer_value(json_object_get(o, "qty"));
        *remaining = (uint64_t)json_integer_value(json_object_get(o, "remaining"));
        json_decref(o);
    }
    slot_reply_clear(&r);
    return rc;
}

int bench_slotd_check(bench_admin *a, const char *event, uint32_t *violations, char *detail, size_t detlen)
{
    slot_req req;
    slot_req_event(&req, SLOT_OP_CHECK, event);
    slot_reply r;
    int rc = call_on(a, follower_of(a, event), "check", &req, &r, detail, detlen);
    if (rc == 0) {
        *violations = r.nviolations;
        snprintf(detail, detlen, "%s", r.nviolations ? r.line : "");
    }
    slot_reply_clear(&r);
    return rc;
}

int bench_slotd_expire(bench_admin *a, const char *event, uint64_t *expired, char *err, size_t errlen)
{
    (void)event; /* slotd's expire runs the sweeper over every event */
    slot_req req;
    slot_req_init(&req, SLOT_OP_EXPIRE);
    *expired = 0;
    int rc = 0;
    for (uint32_t i = 0; rc == 0 && i < (a->nsets ? a->nsets : 1); i++) { /* --placement: every set */
        slot_reply r;
        rc = call_on(a, a->nsets ? a->sets[i] : a->f, "expire", &req, &r, err, errlen);
        if (rc == 0)
            *expired += r.expired;
        slot_reply_clear(&r);
    }
    return rc;
}

int bench_slotd_stats(bench_admin *a, json_t **stats, char *err, size_t errlen)
{
    slot_req req;
    slot_req_init(&req, SLOT_OP_STATS);
    slot_reply r;
    int rc = call(a, "stats", &req, &r, err, errlen);
    *stats = NULL;
    if (rc == 0 && !(*stats = json_loads(r.line, 0, NULL))) {
        snprintf(err, errlen, "stats: the reply is not JSON");
        rc = BENCH_EXIT_FAILED;
    }
    json_object_del(*stats, "ok");
    slot_reply_clear(&r);
    return rc;
}
