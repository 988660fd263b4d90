/* client_route.c — routing by the placement (slot/client.h, "routing by the
 * placement"): the map of events to replica sets read with the placement op,
 * one slot_follow per set, and a bounded loop that sends a request to the
 * set that owns its event, following wrong_set. */
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client_int.h"
#include "slot/assert.h"
#include "slot/client.h"

#define ADDR_CAP (SLOT_CLIENT_ADDR_BYTES_MAX + 1)
#define NAME_CAP (SLOT_CLUSTER_NAME_BYTES_MAX + 1)
/* The event table: open addressing, at most half full. */
#define EV_SLOTS (2u * SLOT_ROUTE_EVENTS_MAX)
#define PLACEMENT_LINE "{\"op\":\"placement\"}\n"

typedef struct route_set {
    char name[NAME_CAP];
    char primary[ADDR_CAP]; /* "" unknown */
    char http[ADDR_CAP];
    slot_follow *f; /* made on first use from primary; NULL until then */
} route_set;

typedef struct route_ev {
    char name[SLOT_EVENT_BYTES_MAX + 1]; /* "" a free slot */
    uint8_t set;                         /* index into sets */
    uint64_t gen;
} route_ev;

struct slot_route {
    slot_follow *seed;
    slot_follow_opts o;
    char token[SLOT_TOKEN_BYTES_MAX + 1];
    route_set sets[SLOT_ROUTE_SETS_MAX];
    uint32_t nsets;
    route_ev *ev; /* EV_SLOTS entries, allocated on the first insert */
    uint32_t nev;
    bool tried; /* the map was asked for at least once */
    slot_route_stats st;
    char node[ADDR_CAP];
    char err[800];
};

_Static_assert(SLOT_ROUTE_SETS_MAX <= 255, "route_ev.set is a uint8_t");

int slot_route_new(const char *addrs, const slot_follow_opts *opts, slot_route **out, char *err, size_t errlen)
{
    *out = NULL;
    slot_route *r = calloc(1, sizeof(*r));
    if (!r)
        return -ENOMEM;
    int rc = slot_follow_new(addrs, opts, &r->seed, err, errlen);
    if (rc < 0) {
        free(r);
        return rc;
    }
    if (opts)
        r->o = *opts;
    else
        slot_follow_opts_default(&r->o);
    if (r->o.token) { /* checked by slot_follow_new: at most SLOT_TOKEN_BYTES_MAX */
        snprintf(r->token, sizeof(r->token), "%s", r->o.token);
        r->o.token = r->token;
    }
    *out = r;
    return 0;
}

void slot_route_free(slot_route *r)
{
    if (!r)
        return;
    for (uint32_t i = 0; i < r->nsets; i++)
        slot_follow_free(r->sets[i].f);
    slot_follow_free(r->seed);
    free(r->ev);
    free(r);
}

/* ---- the map */

static uint32_t hash_of(const char *s)
{
    uint32_t h = 2166136261u; /* FNV-1a */
    for (; *s; s++)
        h = (h ^ (uint8_t)*s) * 16777619u;
    return h;
}

/* The slot of event: its entry, or the free slot where it would go. NULL without a table. */
static route_ev *ev_slot(const slot_route *r, const char *event)
{
    if (!r->ev)
        return NULL;
    for (uint32_t i = hash_of(event) & (EV_SLOTS - 1);; i = (i + 1) & (EV_SLOTS - 1))
        if (!r->ev[i].name[0] || strcmp(r->ev[i].name, event) == 0)
            return &r->ev[i]; /* ends: the table is at most half full */
}

static const route_ev *ev_find(const slot_route *r, const char *event)
{
    const route_ev *e = event && event[0] ? ev_slot(r, event) : NULL;
    return e && e->name[0] ? e : NULL;
}

static void ev_clear(slot_route *r)
{
    if (r->ev)
        memset(r->ev, 0, sizeof(route_ev) * EV_SLOTS);
    r->nev = 0;
}

/* The set named name (made when new and there is room); -1: none. */
static int set_index(slot_route *r, const char *name)
{
    if (!name || !name[0] || strlen(name) >= NAME_CAP)
        return -1;
    for (uint32_t i = 0; i < r->nsets; i++)
        if (strcmp(r->sets[i].name, name) == 0)
            return (int)i;
    if (r->nsets >= SLOT_ROUTE_SETS_MAX)
        return -1;
    route_set *s = &r->sets[r->nsets];
    memset(s, 0, sizeof(*s));
    snprintf(s->name, sizeof(s->name), "%s", name);
    return (int)r->nsets++;
}

/* A set's addresses as the server published them; a new primary drops the set's follower. */
static void set_addrs(slot_route *r, int si, const char *primary, const char *http)
{
    route_set *s = &r->sets[si];
    if (primary && primary[0] && strlen(primary) < ADDR_CAP && strcmp(primary, s->primary) != 0) {
        snprintf(s->primary, sizeof(s->primary), "%s", primary);
        slot_follow_free(s->f);
        s->f = NULL;
    }
    if (http && http[0] && strlen(http) < ADDR_CAP)
        snprintf(s->http, sizeof(s->http), "%s", http);
}

/* event is placed on set si at gen: noted unless the map knows a newer gen. */
static void ev_put(slot_route *r, const char *event, int si, uint64_t gen)
{
    if (!event || !event[0] || strlen(event) > SLOT_EVENT_BYTES_MAX || si < 0)
        return;
    if (!r->ev && !(r->ev = calloc(EV_SLOTS, sizeof(route_ev))))
        return; /* out of memory: routing falls back to the seed and wrong_set */
    route_ev *e = ev_slot(r, event);
    if (e->name[0]) {
        if (e->gen > gen)
            return; /* a stale answer: the map already says newer */
    } else {
        if (r->nev >= SLOT_ROUTE_EVENTS_MAX) {
            ev_clear(r); /* full: start over (learned again from answers and the next map) */
            e = ev_slot(r, event);
        }
        snprintf(e->name, sizeof(e->name), "%s", event);
        r->nev++;
    }
    e->set = (uint8_t)si;
    e->gen = gen;
}

static uint64_t json_u64(json_t *v)
{
    return json_is_integer(v) && json_integer_value(v) >= 0 ? (uint64_t)json_integer_value(v) : 0;
}

/* A placement reply's events and sets into r (the old map is dropped). */
static void map_take(slot_route *r, json_t *root)
{
    json_t *sets = json_object_get(root, "sets"), *events = json_object_get(root, "events");
    const char *k;
    json_t *v;
    json_object_foreach(sets, k, v)
    {
        int si = set_index(r, k);
        if (si >= 0)
            set_addrs(r, si, json_string_value(json_object_get(v, "primary")),
                      json_string_value(json_object_get(v, "http")));
    }
    ev_clear(r);
    json_object_foreach(events, k, v)
    {
        if (r->nev >= SLOT_ROUTE_EVENTS_MAX)
            break;
        ev_put(r, k, set_index(r, json_string_value(json_object_get(v, "set"))), json_u64(json_object_get(v, "gen")));
    }
}

/* Read the map through the seed, stopping at deadline (monotonic ms; 0: the seed's own bound). */
static int map_read(slot_route *r, int64_t deadline)
{
    r->tried = true;
    r->st.map_reads++;
    slot_reply rep;
    int rc = slot__follow_call(r->seed, PLACEMENT_LINE, strlen(PLACEMENT_LINE), &rep, 0, deadline);
    if (rc == 0 && !rep.ok)
        rc = -EPROTO;
    json_t *root = rc == 0 ? json_loads(rep.line, 0, NULL) : NULL;
    if (rc == 0 && !root)
        rc = -ENOMEM; /* parsed once already by slot_reply_parse: only memory fails here */
    if (root)
        map_take(r, root);
    if (rc < 0) {
        r->st.map_failures++;
        snprintf(r->err, sizeof(r->err), "placement: %.700s",
                 rc == -EPROTO   ? rep.message
                 : rc == -ENOMEM ? "out of memory"
                                 : slot_follow_error(r->seed));
    }
    json_decref(root);
    slot_reply_clear(&rep);
    return rc;
}

int slot_route_refresh(slot_route *r)
{
    return map_read(r, 0);
}

/* ---- a call */

/* The follower for event and the set it belongs to (*si; -1 for the seed). */
static slot_follow *follower_for(slot_route *r, const char *event, int *si)
{
    *si = -1;
    const route_ev *e = ev_find(r, event);
    if (!e)
        return r->seed;
    route_set *s = &r->sets[e->set];
    if (!s->f && s->primary[0]) {
        char why[300];
        if (slot_follow_new(s->primary, &r->o, &s->f, why, sizeof(why)) < 0)
            s->f = NULL; /* an address slot_follow refuses: the seed goes on */
    }
    if (!s->f)
        return r->seed;
    *si = e->set;
    return s->f;
}

/* A wrong_set answer's owner into the map (its set, gen, primary, http).
 * Returns the owner's set index, or -1 when the answer named no set. */
static int learn_owner(slot_route *r, const char *event, const slot_reply *rep)
{
    json_t *root = rep->line ? json_loads(rep->line, 0, NULL) : NULL;
    int si = root ? set_index(r, json_string_value(json_object_get(root, "set"))) : -1;
    if (si >= 0) {
        set_addrs(r, si, json_string_value(json_object_get(root, "primary")),
                  json_string_value(json_object_get(root, "http")));
        ev_put(r, event, si, json_u64(json_object_get(root, "gen")));
    }
    json_decref(root);
    return si;
}

/* The set whose primary is the node that answered through the seed; -1: none known. */
static int set_of_node(const slot_route *r, const char *node)
{
    for (uint32_t i = 0; i < r->nsets; i++)
        if (r->sets[i].primary[0] && strcmp(r->sets[i].primary, node) == 0)
            return (int)i;
    return -1;
}

int slot_route_call_line(slot_route *r, const char *event, const char *line, size_t len, slot_reply *out)
{
    memset(out, 0, sizeof(*out));
    r->st.calls++;
    r->err[0] = 0;
    if (len == 0 || len > SLOT_CLIENT_LINE_MAX || line[len - 1] != '\n')
        return -EMSGSIZE;
    int64_t deadline = slot__now_ms() + r->o.deadline_ms;
    if (!r->tried)
        (void)map_read(r, deadline); /* no map (standalone, no answer): the seed takes everything */
    bool reread_unknown = false, reread_failed = false;
    char learned[SLOT_EVENT_BYTES_MAX + 1];
    uint32_t wrong = 0;
    for (;;) {
        slot_reply_clear(out);
        int si;
        slot_follow *f = follower_for(r, event, &si);
        int rc = slot__follow_call(f, line, len, out, SLOT__FOLLOW_STOP_WRONG_SET, deadline);
        const char *node = slot_follow_node(f);
        if (rc < 0) {
            if (!r->err[0] || slot__now_ms() < deadline) /* else: the map read took the time, and says why */
                snprintf(r->err, sizeof(r->err), "%.780s", slot_follow_error(f));
            /* The set's primary may have moved on (a failover the follower could not see, its
             * list being that one address): a fresh map names the new one. Once a call. */
            if (si >= 0 && !reread_failed && rc != -EMSGSIZE && slot__now_ms() < deadline) {
                reread_failed = true;
                char before[ADDR_CAP];
                snprintf(before, sizeof(before), "%s", r->sets[si].primary);
                if (map_read(r, deadline) == 0 && strcmp(before, r->sets[si].primary) != 0)
                    continue;
                snprintf(r->err, sizeof(r->err), "%.780s", slot_follow_error(f));
            }
            return rc;
        }
        snprintf(r->node, sizeof(r->node), "%s", node);
        if (out->err == SLOT_E_WRONG_SET) {
            r->st.wrong_set++;
            if (++wrong > SLOT_ROUTE_REDIRECTS_MAX || slot__now_ms() >= deadline) {
                snprintf(r->err, sizeof(r->err), "gave up after %u wrong_set answers; last: %s: %.300s", wrong - 1,
                         node, out->message);
                return wrong > SLOT_ROUTE_REDIRECTS_MAX ? -EAGAIN : -ETIMEDOUT;
            }
            int asked = si >= 0 ? si : set_of_node(r, node);
            if ((!event || !event[0]) && out->event[0]) { /* a line routed without its event: now by the answer's */
                snprintf(learned, sizeof(learned), "%s", out->event);
                event = learned;
            }
            int owner = learn_owner(r, event, out);
            if (owner < 0 || owner == asked || !r->sets[owner].primary[0])
                (void)map_read(r, deadline); /* the answer alone does not say where: read the map */
            continue;
        }
        if (out->err == SLOT_E_UNKNOWN_EVENT && event && event[0] && !reread_unknown && slot__now_ms() < deadline) {
            /* An event made after the map was read, or asked of the seed: read it once more. */
            reread_unknown = true;
            int asked = si >= 0 ? si : set_of_node(r, node);
            if (map_read(r, deadline) == 0) {
                const route_ev *e = ev_find(r, event);
                if (e && (int)e->set != asked && r->sets[e->set].primary[0]) {
                    r->st.unknown_rerouted++;
                    continue;
                }
            }
        }
        r->err[0] = 0; /* answered: a map read that failed on the way is not the call's error */
        return 0;
    }
}

/* The event a request is routed by: its own, or a cart's first item's. NULL: none. */
static const char *event_of(const slot_req *req)
{
    if (req->op == SLOT_OP_PLACEMENT)
        return NULL; /* any set answers the map */
    if (req->op == SLOT_OP_HOLD_MANY)
        return req->nitems > 0 ? req->items[0].event : NULL;
    return req->event[0] ? req->event : NULL;
}

int slot_route_call(slot_route *r, const slot_req *req, slot_reply *out)
{
    char line[SLOT__CLIENT_REQ_BYTES_MAX];
    long n = slot_req_encode(req, line, sizeof(line));
    if (n < 0 || (size_t)n >= sizeof(line)) {
        memset(out, 0, sizeof(*out));
        r->st.calls++;
        return -EMSGSIZE;
    }
    return slot_route_call_line(r, event_of(req), line, (size_t)n, out);
}

const char *slot_route_error(const slot_route *r)
{
    return r->err;
}

const char *slot_route_node(const slot_route *r)
{
    return r->node;
}

int slot_route_owner(const slot_route *r, const char *event, char *set, size_t cap, uint64_t *gen, const char **primary,
                     const char **http)
{
    const route_ev *e = ev_find(r, event);
    if (!e)
        return 0;
    SLOT_ASSERT(e->set < r->nsets);
    const route_set *s = &r->sets[e->set];
    if (set && cap)
        snprintf(set, cap, "%s", s->name);
    if (gen)
        *gen = e->gen;
    if (primary)
        *primary = s->primary;
    if (http)
        *http = s->http;
    return 1;
}

uint32_t slot_route_nsets(const slot_route *r)
{
    return r->nsets;
}

const char *slot_route_set(const slot_route *r, uint32_t i, const char **primary, const char **http)
{
    if (i >= r->nsets)
        return NULL;
    if (primary)
        *primary = r->sets[i].primary;
    if (http)
        *http = r->sets[i].http;
    return r->sets[i].name;
}

void slot_route_stats_get(const slot_route *r, slot_route_stats *out)
{
    *out = r->st;
}
