/*
 * placement.c — many replica sets sharing events through a map in etcd
 * (--placement NAME; docs/design.md, "Many replica sets", and
 * docs/protocol.md, "Placement"). Loop thread only.
 *
 * The keys, under the placement's prefix P = /slotd/placement/NAME/:
 *
 *   P event/E   {"set":"S","gen":G,"state":"serving"}   made by CAS (create if absent)
 *   P set/S     {"primary":"H:P","http":"H:P","repl":"H:P","node":"ID"}  put by S's primary
 *
 * What this file does:
 *   - create_event on the primary: before it is queued, the event's map
 *     entry is made by a CAS that succeeds only when the key is absent. A
 *     name already placed on this set goes on to the create (which answers
 *     as it would: a replay, or the event's own error); a name placed on
 *     another set is wrong_set (with that set, its gen, its primary and its
 *     HTTP address: a 307's Location over HTTP), and
 *     so is a child whose parent is placed on another set; a parent the map
 *     does not hold is unknown_event. A create that the commit refuses
 *     deletes the entry it made, when its answer goes out.
 *   - the primary publishes its addresses under P set/S, so that
 *     placement and wrong_set can name it.
 *   - the placement op reads the map from etcd and answers it.
 *
 * Order on a connection: the create waits at its connection's head (as a
 * read does) so its etcd steps run with nothing of its connection after it
 * queued; every write of the connection admitted while one waits waits
 * behind it the same way (conn.placing).
 *
 * Each etcd step is a slot in a bounded table (SLOT_PLACE_STEPS_MAX), named
 * by a tag the entry keeps: an entry whose connection went away leaves its
 * slot done, and a done slot is reused after SLOT_PLACE_STEP_KEEP_MS.
 */
#include "placement.h"

#include "mover.h"

#include <inttypes.h>
#include <jansson.h>
#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/params.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/loop.h"
#include "slot/assert.h"

enum { STEP_PARENT, STEP_CAS, STEP_OWNER, STEP_LIST };

typedef struct place_step {
    struct slot__placement *p;
    uint64_t tag;    /* 0: free */
    bool busy;       /* an etcd call is in flight */
    bool done;       /* err, msg and fields hold the outcome */
    uint8_t kind;    /* STEP_*: what the call in flight (or the last one) was */
    bool queue;      /* done: the entry goes on to the write queue */
    bool fresh;      /* done, queue: the CAS made the entry */
    uint64_t done_ms; /* loop time it became done */
    slot_err err;
    char msg[200];
    char *fields; /* heap, handed to the entry's res */
    size_t fields_len;
    char event[SLOT_EVENT_BYTES_MAX + 1];
    char filter[SLOT_EVENT_BYTES_MAX + 1]; /* placement op: the event asked for ("" all) */
    char owner[SLOT_CLUSTER_NAME_BYTES];   /* wrong_set: the set that holds the event */
    uint64_t owner_gen;
} place_step;

struct slot__placement {
    clu *c;
    char prefix[SLOT_PLACE_PREFIX_BYTES]; /* /slotd/placement/NAME/ */
    char set[SLOT_CLUSTER_NAME_BYTES]; /* this set's name: --cluster */
    uv_timer_t tick;
    bool tick_open;
    bool reg_busy;
    uint64_t reg_tenure; /* the tenure whose addresses we published (0: none yet) */
    uint64_t tags;
    slot__place_cache *cache; /* the map as this node sees it (place_cache.c) */
    place_step steps[SLOT_PLACE_STEPS_MAX];
};

static void key_event(const slot__placement *p, const char *ev, char *out, size_t n)
{
    snprintf(out, n, "%sevent/%s", p->prefix, ev);
}

static place_step *step_of(slot__placement *p, uint64_t tag)
{
    for (size_t i = 0; tag && i < SLOT_PLACE_STEPS_MAX; i++)
        if (p->steps[i].tag == tag)
            return &p->steps[i];
    return NULL;
}

static void step_free(place_step *st)
{
    free(st->fields);
    memset(st, 0, sizeof(*st));
}

/* A free slot, reusing done ones left past SLOT_PLACE_STEP_KEEP_MS; NULL: full. */
static place_step *step_new(slot__placement *p)
{
    uint64_t now = uv_now(p->c->s->loop);
    for (size_t i = 0; i < SLOT_PLACE_STEPS_MAX; i++) {
        place_step *st = &p->steps[i];
        if (st->tag && st->done && !st->busy && now - st->done_ms > SLOT_PLACE_STEP_KEEP_MS)
            step_free(st);
        if (!st->tag) {
            st->p = p;
            st->tag = ++p->tags;
            return st;
        }
    }
    return NULL;
}

static void step_finish(slot__placement *p, place_step *st, slot_err err, const char *msg)
{
    st->busy = false;
    st->done = true;
    st->err = err;
    snprintf(st->msg, sizeof(st->msg), "%.190s", msg ? msg : "");
    st->done_ms = uv_now(p->c->s->loop);
    slot__reads_resume(p->c->s);
}

/* ---- growing a fragment of reply fields */

typedef struct frag {
    char *b;
    size_t n, cap;
    bool oom;
} frag;

static void frag_add(frag *f, const char *s, size_t n)
{
    if (f->oom)
        return;
    if (f->n + n + 1 > f->cap) {
        size_t cap = f->cap ? f->cap * 2 : 256;
        while (cap < f->n + n + 1)
            cap *= 2;
        char *b = realloc(f->b, cap);
        if (!b) {
            f->oom = true;
            return;
        }
        f->b = b;
        f->cap = cap;
    }
    memcpy(f->b + f->n, s, n);
    f->n += n;
    f->b[f->n] = 0;
}

static void frag_cstr(frag *f, const char *s)
{
    frag_add(f, s, strlen(s));
}

/* A JSON string (names are [A-Za-z0-9._:-], addresses H:P: no escapes
 * needed, but the value is encoded by jansson all the same). */
static void frag_jstr(frag *f, const char *s)
{
    json_t *j = json_string(s);
    char *t = j ? json_dumps(j, JSON_ENCODE_ANY) : NULL;
    if (t)
        frag_cstr(f, t);
    else
        f->oom = true;
    free(t);
    json_decref(j);
}

/* ---- the map's values */

/* The set and gen of an event's value; false when it is not one. */
static bool parse_entry(const uint8_t *v, size_t n, char *set, size_t set_n, uint64_t *gen, json_t **out)
{
    json_t *j = json_loadb((const char *)v, n, 0, NULL);
    const char *s = j ? json_string_value(json_object_get(j, "set")) : NULL;
    json_t *g = j ? json_object_get(j, "gen") : NULL;
    if (!s || !json_is_integer(g) || json_integer_value(g) < 1) {
        json_decref(j);
        return false;
    }
    snprintf(set, set_n, "%s", s);
    *gen = (uint64_t)json_integer_value(g);
    if (out)
        *out = j;
    else
        json_decref(j);
    return true;
}

/* ---- wrong_set: the owner's primary, then the answer */

/* primary and http: the owner's addresses as it published them (NULL or "": not sent);
 * "http" is what the HTTP listener's 307 puts in Location (routing clients, design.md). */
static void wrong_set_answer(slot__placement *p, place_step *st, const char *primary, const char *http)
{
    frag f = {0};
    frag_cstr(&f, ",\"event\":");
    frag_jstr(&f, st->event);
    frag_cstr(&f, ",\"set\":");
    frag_jstr(&f, st->owner);
    char gen[32];
    snprintf(gen, sizeof gen, ",\"gen\":%" PRIu64, st->owner_gen);
    frag_cstr(&f, gen);
    if (primary && primary[0]) {
        frag_cstr(&f, ",\"primary\":");
        frag_jstr(&f, primary);
    }
    if (http && http[0]) {
        frag_cstr(&f, ",\"http\":");
        frag_jstr(&f, http);
    }
    if (f.oom) {
        free(f.b);
        step_finish(p, st, SLOT_E_INTERNAL, "out of memory");
        return;
    }
    st->fields = f.b;
    st->fields_len = f.n;
    char msg[sizeof(((place_step *)0)->msg)];
    snprintf(msg, sizeof msg, "event %.64s is placed on replica set %.64s", st->event, st->owner);
    step_finish(p, st, SLOT_E_WRONG_SET, msg);
}

static void on_owner(slot_etcd *e, int status, const slot_etcd_get_result *r, void *data)
{
    (void)e;
    place_step *st = data;
    slot__placement *p = st->p;
    const char *primary = NULL, *http = NULL;
    json_t *j = NULL;
    if (status == 0 && r->found) {
        j = json_loadb((const char *)r->kv.value, r->kv.value_len, 0, NULL);
        primary = j ? json_string_value(json_object_get(j, "primary")) : NULL;
        http = j ? json_string_value(json_object_get(j, "http")) : NULL;
    }
    wrong_set_answer(p, st, primary, http);
    json_decref(j);
}

/* wrong_set for st->event placed on st->owner: read the owner's primary first. */
static void owner_lookup(slot__placement *p, place_step *st)
{
    char key[SLOT_PLACE_KEY_BYTES];
    snprintf(key, sizeof key, "%sset/%s", p->prefix, st->owner);
    st->kind = STEP_OWNER;
    if (slot_etcd_get(p->c->etcd, key, on_owner, st) != 0)
        wrong_set_answer(p, st, NULL, NULL); /* the answer without its primary */
}

/* ---- create_event: the parent's set, then the CAS */

static int cas_start(slot__placement *p, place_step *st);

static void on_parent(slot_etcd *e, int status, const slot_etcd_get_result *r, void *data)
{
    (void)e;
    place_step *st = data;
    slot__placement *p = st->p;
    if (status != 0) {
        step_finish(p, st, SLOT_E_UNAVAILABLE, "the placement map could not be read; nothing was changed, retry");
        return;
    }
    char set[SLOT_CLUSTER_NAME_BYTES];
    uint64_t gen = 0;
    if (!r->found) {
        step_finish(p, st, SLOT_E_UNKNOWN_EVENT, "the parent is in no replica set of the placement");
        return;
    }
    if (!parse_entry(r->kv.value, r->kv.value_len, set, sizeof set, &gen, NULL)) {
        step_finish(p, st, SLOT_E_INTERNAL, "the parent's placement entry is not one slotd wrote");
        return;
    }
    if (strcmp(set, p->set) != 0) { /* a family is placed together (docs/protocol.md, "Placement") */
        snprintf(st->owner, sizeof st->owner, "%s", set);
        st->owner_gen = gen;
        owner_lookup(p, st);
        return;
    }
    if (cas_start(p, st) != 0)
        step_finish(p, st, SLOT_E_OVERLOADED, "too many etcd requests in flight; nothing was changed, retry");
}

static void on_cas(slot_etcd *e, int status, const slot_etcd_cas_result *r, void *data)
{
    (void)e;
    place_step *st = data;
    slot__placement *p = st->p;
    if (status != 0) {
        /* etcd may have applied it (a retried request): the create is not
         * run, so an entry it made names this set for an event that does
         * not exist here; a retry of the create finds it and goes on. */
        step_finish(p, st, SLOT_E_UNAVAILABLE, "the placement map could not be changed; nothing was created, retry");
        return;
    }
    if (r->succeeded) {
        st->queue = st->fresh = true;
        step_finish(p, st, SLOT_E_OK, NULL);
        return;
    }
    char set[SLOT_CLUSTER_NAME_BYTES];
    uint64_t gen = 0;
    if (!r->found || !parse_entry(r->current.value, r->current.value_len, set, sizeof set, &gen, NULL)) {
        step_finish(p, st, SLOT_E_UNAVAILABLE, "the placement entry changed meanwhile; nothing was created, retry");
        return;
    }
    if (strcmp(set, p->set) == 0) { /* placed here already: the create answers (a replay, or exists) */
        st->queue = true;
        step_finish(p, st, SLOT_E_OK, NULL);
        return;
    }
    snprintf(st->owner, sizeof st->owner, "%s", set);
    st->owner_gen = gen;
    owner_lookup(p, st);
}

/* The CAS that makes the event's entry when its key is absent; 0 or the etcd call's error. */
static int cas_start(slot__placement *p, place_step *st)
{
    char key[SLOT_PLACE_KEY_BYTES], val[SLOT_PLACE_KEY_BYTES];
    key_event(p, st->event, key, sizeof key);
    int n = snprintf(val, sizeof val, "{\"set\":\"%s\",\"gen\":1,\"state\":\"serving\"}", p->set);
    st->kind = STEP_CAS;
    return slot_etcd_cas(p->c->etcd, key, 0, val, (size_t)n, 0, on_cas, st);
}

/* ---- the placement op: the map and the sets, from etcd */

static void put_event(frag *f, bool *first, const char *name, json_t *v)
{
    frag_cstr(f, *first ? "" : ",");
    *first = false;
    frag_jstr(f, name);
    frag_cstr(f, ":");
    json_t *out = json_object();
    json_t *x;
    if (!out) {
        f->oom = true;
        return;
    }
    if ((x = json_object_get(v, "set")) && json_is_string(x))
        json_object_set(out, "set", x);
    if ((x = json_object_get(v, "gen")) && json_is_integer(x))
        json_object_set(out, "gen", x);
    if ((x = json_object_get(v, "state")) && json_is_string(x))
        json_object_set(out, "state", x);
    if ((x = json_object_get(v, "to")) && json_is_string(x))
        json_object_set(out, "to", x);
    char *t = json_dumps(out, JSON_COMPACT | JSON_PRESERVE_ORDER);
    if (t)
        frag_cstr(f, t);
    else
        f->oom = true;
    free(t);
    json_decref(out);
}

static void put_set(frag *f, bool *first, const char *name, json_t *v)
{
    frag_cstr(f, *first ? "" : ",");
    *first = false;
    frag_jstr(f, name);
    frag_cstr(f, ":{");
    const char *pr = json_string_value(json_object_get(v, "primary"));
    const char *ht = json_string_value(json_object_get(v, "http"));
    bool any = false;
    if (pr && pr[0]) {
        frag_cstr(f, "\"primary\":");
        frag_jstr(f, pr);
        any = true;
    }
    if (ht && ht[0]) {
        frag_cstr(f, any ? ",\"http\":" : "\"http\":");
        frag_jstr(f, ht);
    }
    frag_cstr(f, "}");
}

static void on_list(slot_etcd *e, int status, const slot_etcd_range_result *r, void *data)
{
    (void)e;
    place_step *st = data;
    slot__placement *p = st->p;
    if (status != 0) {
        step_finish(p, st, SLOT_E_UNAVAILABLE, "the placement map could not be read; retry");
        return;
    }
    size_t plen = strlen(p->prefix);
    frag ev = {0}, sets = {0};
    bool ev_first = true, set_first = true, found = false;
    for (size_t i = 0; i < r->count; i++) {
        const slot_etcd_kv *kv = &r->kvs[i];
        if (kv->key_len <= plen)
            continue;
        const char *rest = kv->key + plen;
        json_t *v = json_loadb((const char *)kv->value, kv->value_len, 0, NULL);
        if (!v || !json_is_object(v)) {
            json_decref(v);
            continue; /* not a value slotd wrote: left out */
        }
        if (strncmp(rest, "event/", 6) == 0 && rest[6]) {
            if (!st->filter[0] || strcmp(rest + 6, st->filter) == 0) {
                put_event(&ev, &ev_first, rest + 6, v);
                found = true;
            }
        } else if (strncmp(rest, "set/", 4) == 0 && rest[4]) {
            put_set(&sets, &set_first, rest + 4, v);
        }
        json_decref(v);
    }
    if (st->filter[0] && !found) {
        free(ev.b);
        free(sets.b);
        snprintf(st->event, sizeof st->event, "%s", st->filter);
        step_finish(p, st, SLOT_E_UNKNOWN_EVENT, "the placement map holds no such event");
        return;
    }
    frag f = {0};
    frag_cstr(&f, ",\"events\":{");
    if (ev.b)
        frag_add(&f, ev.b, ev.n);
    frag_cstr(&f, "},\"sets\":{");
    if (sets.b)
        frag_add(&f, sets.b, sets.n);
    frag_cstr(&f, "}");
    if (r->more)
        frag_cstr(&f, ",\"truncated\":true");
    bool oom = f.oom || ev.oom || sets.oom;
    free(ev.b);
    free(sets.b);
    if (oom) {
        free(f.b);
        step_finish(p, st, SLOT_E_INTERNAL, "out of memory");
        return;
    }
    st->fields = f.b;
    st->fields_len = f.n;
    step_finish(p, st, SLOT_E_OK, NULL);
}

/* ---- this set's primary, published under P set/S */

static void on_reg(slot_etcd *e, int status, const slot_etcd_write_result *r, void *data)
{
    (void)e, (void)r;
    slot__placement *p = data;
    p->reg_busy = false;
    if (status != 0)
        p->reg_tenure = 0; /* put again on the next tick */
}

static void on_tick(uv_timer_t *t)
{
    slot__placement *p = t->data;
    clu *c = p->c;
    if (c->stopping || !c->etcd || p->reg_busy || c->role != CLU_PRIMARY || p->reg_tenure == c->tenure)
        return;
    char key[SLOT_PLACE_KEY_BYTES], val[4 * SLOT_CLUSTER_ADDR_BYTES + 128];
    snprintf(key, sizeof key, "%sset/%s", p->prefix, p->set);
    int n = snprintf(val, sizeof val, "{\"primary\":\"%s\",\"http\":\"%s\",\"repl\":\"%s\",\"node\":\"%s\"}", c->adv,
                     c->http_addr, c->repl_addr, c->self);
    if (slot_etcd_put(c->etcd, key, val, (size_t)n, 0, on_reg, p) == 0) {
        p->reg_busy = true;
        p->reg_tenure = c->tenure;
    }
}

/* ---- the hooks (server_int.h, slot__cluster_hooks) */

bool slot__place_admit(server *s, conn *c, entry *e)
{
    if (!s->clu || !s->clu->place)
        return false;
    if (e->req.op != SLOT_OP_CREATE_EVENT && c->placing == 0)
        return false;
    e->state = ENTRY_READ_WAIT;
    e->place_step = SLOT__PLACE_DEFER;
    c->placing++;
    return true;
}

/* The deferred entry leaves its wait (queued or answered). */
static void undefer(entry *e, uint8_t step)
{
    SLOT_ASSERT(e->place_step == SLOT__PLACE_DEFER);
    if (e->conn) {
        SLOT_ASSERT(e->conn->placing > 0);
        e->conn->placing--;
    }
    e->place_step = step;
}

/* A step done: its outcome into e (moved, the slot freed). */
static slot__place_state collect(entry *e, place_step *st)
{
    bool queue = st->queue && st->err == SLOT_E_OK;
    bool fresh = st->fresh;
    if (e->place_step == SLOT__PLACE_DEFER)
        undefer(e, queue && fresh ? SLOT__PLACE_FRESH : SLOT__PLACE_DONE);
    if (!queue) {
        if (st->err != SLOT_E_OK)
            slot_res_error(&e->res, st->err, "%s", st->msg);
        e->res.fields = st->fields;
        e->res.fields_len = st->fields_len;
        st->fields = NULL;
    }
    step_free(st);
    return queue ? SLOT__PLACE_QUEUE : SLOT__PLACE_ANSWERED;
}

slot__place_state slot__place_run(server *s, entry *e)
{
    slot__placement *p = s->clu ? s->clu->place : NULL;
    if (!p) {
        slot_res_error(&e->res, SLOT_E_INVALID_ARGUMENT, "this server is not a member of a placement (--placement)");
        return SLOT__PLACE_ANSWERED;
    }
    if (e->req.op == SLOT_OP_MOVE_EVENT) /* the mover (mover_loop.c) */
        return slot__mover_run(s, e);
    if (e->place_tag) {
        place_step *st = step_of(p, e->place_tag);
        if (!st) {
            if (e->place_step == SLOT__PLACE_DEFER)
                undefer(e, SLOT__PLACE_DONE);
            slot_res_error(&e->res, SLOT_E_INTERNAL, "the placement step's state was lost");
            return SLOT__PLACE_ANSWERED;
        }
        if (!st->done)
            return SLOT__PLACE_RUNNING;
        return collect(e, st);
    }
    bool create = e->req.op == SLOT_OP_CREATE_EVENT;
    if (e->req.op != SLOT_OP_PLACEMENT && !create) { /* it waited behind a create of its connection */
        undefer(e, SLOT__PLACE_DONE);
        return SLOT__PLACE_QUEUE;
    }
    if (create && slot__clu_write_gate(s, &e->res)) { /* not_primary (with its address), or unavailable */
        undefer(e, SLOT__PLACE_DONE);
        return SLOT__PLACE_ANSWERED;
    }
    place_step *st = step_new(p);
    if (!st) {
        if (e->place_step == SLOT__PLACE_DEFER)
            undefer(e, SLOT__PLACE_DONE);
        slot_res_error(&e->res, SLOT_E_OVERLOADED, "%u placement steps wait for etcd; retry later",
                       (unsigned)SLOT_PLACE_STEPS_MAX);
        return SLOT__PLACE_ANSWERED;
    }
    e->place_tag = st->tag;
    st->busy = true;
    int rc = 0;
    if (create) {
        snprintf(st->event, sizeof st->event, "%s", e->req.event);
        if (e->req.parent_len > 0) {
            char key[SLOT_PLACE_KEY_BYTES];
            key_event(p, e->req.parent, key, sizeof key);
            st->kind = STEP_PARENT;
            rc = slot_etcd_get(p->c->etcd, key, on_parent, st);
        } else {
            rc = cas_start(p, st);
        }
    } else {
        snprintf(st->filter, sizeof st->filter, "%s", e->req.event_len ? e->req.event : "");
        st->kind = STEP_LIST;
        rc = slot_etcd_get_prefix(p->c->etcd, p->prefix, SLOT_PLACE_LIST_MAX, on_list, st);
    }
    if (rc != 0) {
        e->place_tag = 0;
        step_free(st);
        if (e->place_step == SLOT__PLACE_DEFER)
            undefer(e, SLOT__PLACE_DONE);
        slot_res_error(&e->res, SLOT_E_OVERLOADED, "too many etcd requests in flight; nothing was changed, retry");
        return SLOT__PLACE_ANSWERED;
    }
    return SLOT__PLACE_RUNNING;
}

static void on_undo(slot_etcd *e, int status, const slot_etcd_write_result *r, void *data)
{
    (void)e, (void)r;
    slot__placement *p = data;
    if (status != 0)
        SLOT__CLU_LOG(p->c, SLOT__LOG_WARN, "a refused create's placement entry could not be deleted",
                      SLOT__LF_S("error", slot_etcd_err_name(status)));
}

/* wrong_set's fields for event ev on set, with the set's addresses when known. */
static void redirect_fields(slot__placement *p, entry *e, const char *ev, const char *set, uint64_t gen)
{
    const char *primary = "", *http = "";
    slot__place_cache_set(p->cache, set, &primary, &http);
    frag f = {0};
    frag_cstr(&f, ",\"event\":");
    frag_jstr(&f, ev);
    frag_cstr(&f, ",\"set\":");
    frag_jstr(&f, set);
    char num[32];
    snprintf(num, sizeof num, ",\"gen\":%" PRIu64, gen);
    frag_cstr(&f, num);
    if (primary[0]) {
        frag_cstr(&f, ",\"primary\":");
        frag_jstr(&f, primary);
    }
    if (http[0]) {
        frag_cstr(&f, ",\"http\":");
        frag_jstr(&f, http);
    }
    if (f.oom) {
        free(f.b);
        return; /* the answer goes out as it was */
    }
    free(e->res.fields);
    e->res.fields = f.b;
    e->res.fields_len = f.n;
}

/* An answer about an event that is not served here: the map's owner. */
static void redirect(slot__placement *p, entry *e)
{
    slot_res *res = &e->res;
    const slot_req *r = &e->req;
    if (r->op == SLOT_OP_CREATE_EVENT || r->op == SLOT_OP_PLACEMENT || slot_op_internal(r->op))
        return;
    const char *ev = r->op == SLOT_OP_HOLD_MANY ? res->item_event : r->event;
    if (!ev[0])
        return;
    if (res->err == SLOT_E_UNKNOWN_EVENT) {
        char set[SLOT_CLUSTER_NAME_BYTES];
        uint64_t gen = 0;
        bool moving = false;
        if (!slot__place_cache_event(p->cache, ev, set, &gen, &moving) || moving || strcmp(set, p->set) == 0)
            return; /* the map holds no other owner (or the event is on its way here) */
        slot_res_error(res, SLOT_E_WRONG_SET, "event \"%s\" is placed on replica set \"%s\"", ev, set);
        redirect_fields(p, e, ev, set, gen);
        return;
    }
    if (res->err != SLOT_E_WRONG_SET || !res->fields || strstr(res->fields, "\"primary\""))
        return; /* the create's wrong_set names the primary itself */
    /* The fence's: ,"event":"E","set":"T","gen":G */
    char *obj = malloc(res->fields_len + 2);
    if (!obj)
        return;
    obj[0] = '{';
    memcpy(obj + 1, res->fields + 1, res->fields_len - 1);
    obj[res->fields_len] = '}';
    json_t *j = json_loadb(obj, res->fields_len + 1, 0, NULL);
    free(obj);
    const char *set = json_string_value(json_object_get(j, "set"));
    if (set)
        redirect_fields(p, e, ev, set, (uint64_t)json_integer_value(json_object_get(j, "gen")));
    json_decref(j);
}

void slot__place_answered(server *s, entry *e)
{
    slot__placement *p = s->clu ? s->clu->place : NULL;
    if (!p)
        return;
    if (e->res.err == SLOT_E_UNKNOWN_EVENT || e->res.err == SLOT_E_WRONG_SET)
        redirect(p, e);
    if (e->place_step != SLOT__PLACE_FRESH)
        return;
    e->place_step = SLOT__PLACE_DONE;
    if (e->res.err == SLOT_E_OK)
        return;
    /* The create that made the entry was refused: a refused create_event
     * leaves no map entry (docs/protocol.md, "Placement"). */
    char key[SLOT_PLACE_KEY_BYTES];
    key_event(p, e->req.event, key, sizeof key);
    if (slot_etcd_del(p->c->etcd, key, on_undo, p) != 0)
        SLOT__CLU_LOG(p->c, SLOT__LOG_WARN, "a refused create's placement entry could not be deleted",
                      SLOT__LF_S("event", e->req.event));
}

/* ---- the internal ops' mac */

int slot__place_mac(const clu *c, const char *op, const char *event, uint64_t gen, const char *set, const char *data,
                    size_t data_len, char out[SLOT_PLACE_MAC_HEX_BYTES + 1])
{
    char head[32 + SLOT_EVENT_BYTES_MAX + SLOT_CLUSTER_NAME_BYTES_MAX + 64];
    int n = snprintf(head, sizeof head, "slotd-place-1\n%s\n%s\n%" PRIu64 "\n%s\n", op, event, gen, set);
    out[0] = 0;
    if (n < 0 || (size_t)n >= sizeof head)
        return -1;
    unsigned char md[EVP_MAX_MD_SIZE];
    size_t mdlen = 0;
    EVP_MAC *mac = EVP_MAC_fetch(NULL, "HMAC", NULL);
    EVP_MAC_CTX *x = mac ? EVP_MAC_CTX_new(mac) : NULL;
    OSSL_PARAM params[] = {OSSL_PARAM_construct_utf8_string("digest", (char *)"SHA256", 0), OSSL_PARAM_construct_end()};
    int ok = x && EVP_MAC_init(x, c->place_secret.bytes, c->place_secret.len, params) == 1 &&
             EVP_MAC_update(x, (const unsigned char *)head, (size_t)n) == 1 &&
             (data_len == 0 || EVP_MAC_update(x, (const unsigned char *)data, data_len) == 1) &&
             EVP_MAC_final(x, md, &mdlen, sizeof md) == 1 && mdlen == 32;
    EVP_MAC_CTX_free(x);
    EVP_MAC_free(mac);
    if (!ok)
        return -1;
    for (size_t i = 0; i < 32; i++)
        snprintf(out + 2 * i, 3, "%02x", md[i]);
    return 0;
}

bool slot__place_auth(server *s, entry *e)
{
    const slot_req *r = &e->req;
    if (r->op == SLOT_OP_PLACE_STATE)
        return true; /* a read of one record's state: no secret needed */
    char want[SLOT_PLACE_MAC_HEX_BYTES + 1];
    const slot_place_args *p = r->place;
    bool ok = p && p->has_mac &&
              slot__place_mac(s->clu, slot_op_name(r->op), r->event, p->gen, p->set, p->data_b64 ? p->data_b64 : "",
                              p->data_b64 ? p->data_b64_len : 0, want) == 0 &&
              CRYPTO_memcmp(want, p->mac, SLOT_PLACE_MAC_HEX_BYTES) == 0;
    if (!ok)
        slot_res_error(&e->res, SLOT_E_FORBIDDEN, "op %s: its mac is not the cluster secret's", slot_op_name(r->op));
    return ok;
}

/* ---- start and stop */

int slot__place_start(clu *c)
{
    const slot__server_opts *o = &c->s->opts;
    if (!o->placement)
        return 0;
    slot__placement *p = calloc(1, sizeof(*p));
    if (!p) {
        slot__log(SLOT__LOG_ERROR, "out of memory");
        return -1;
    }
    p->c = c;
    snprintf(p->prefix, sizeof p->prefix, "/slotd/placement/%s/", o->placement);
    snprintf(p->set, sizeof p->set, "%s", o->cluster);
    uv_timer_init(c->s->loop, &p->tick);
    p->tick.data = p;
    p->tick_open = true;
    uv_timer_start(&p->tick, on_tick, 0, SLOT_PLACE_TICK_MS);
    p->cache = slot__place_cache_start(p, c->s->loop, c->etcd, p->prefix);
    if (!p->cache) {
        slot__log(SLOT__LOG_ERROR, "out of memory");
        uv_close((uv_handle_t *)&p->tick, NULL);
        return -1;
    }
    c->place = p;
    if (slot__mover_start(c) != 0)
        return -1; /* logged; slot__place_free frees p */
    SLOT__CLU_LOG(c, SLOT__LOG_INFO, "placement member", SLOT__LF_S("placement", o->placement),
                  SLOT__LF_S("set", p->set));
    return 0;
}

void slot__place_stop(clu *c)
{
    slot__placement *p = c->place;
    slot__mover_stop(c);
    if (!p || !p->tick_open)
        return;
    slot__place_cache_stop(p->cache);
    uv_close((uv_handle_t *)&p->tick, NULL);
    p->tick_open = false;
}

void slot__place_free(clu *c)
{
    slot__placement *p = c->place;
    slot__mover_free(c);
    if (!p)
        return;
    for (size_t i = 0; i < SLOT_PLACE_STEPS_MAX; i++)
        free(p->steps[i].fields);
    slot__place_cache_free(p->cache);
    free(p);
    c->place = NULL;
}
