/*
 * place_cache.c — this node's copy of the placement map (docs/design.md,
 * "Many replica sets"): the events' entries and the sets' addresses under
 * the placement's prefix, read once and then kept by an etcd watch of the
 * prefix (re-armed from its last revision when it ends; read again whole
 * when etcd no longer has that revision). Used to answer, as a reply goes
 * out, an event that is not here with wrong_set naming its owner (instead of
 * unknown_event), and to add the owner's addresses to a wrong_set the fence
 * made. At most SLOT_PLACE_LIST_MAX events are kept. Loop thread only.
 */
#include "placement.h"

#include <inttypes.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <uthash.h>

#include "slot/assert.h"

typedef struct cache_ent {
    char name[SLOT_EVENT_BYTES_MAX + 1]; /* event or set name */
    char set[SLOT_CLUSTER_NAME_BYTES];   /* an event's: its set ("to" while moving) */
    char primary[SLOT_CLUSTER_ADDR_BYTES], http[SLOT_CLUSTER_ADDR_BYTES]; /* a set's */
    uint64_t gen;
    bool moving;
    UT_hash_handle hh;
} cache_ent;

struct slot__place_cache {
    slot__placement *p;
    slot_etcd *etcd;
    const char *prefix;
    cache_ent *events, *sets;
    size_t nevents;
    slot_etcd_watch *watch;
    int64_t next_rev; /* the watch's next revision; 0: read the whole prefix first */
    bool busy;        /* a read or a watch is in flight */
    bool stopping;
    uv_timer_t retry;
    bool retry_open;
};

static void ent_clear(cache_ent **head, size_t *n)
{
    cache_ent *e, *tmp;
    HASH_ITER(hh, *head, e, tmp)
    {
        HASH_DEL(*head, e);
        free(e);
    }
    if (n)
        *n = 0;
}

/* One key of the prefix put (value v) or deleted (v NULL). */
static void apply(slot__place_cache *pc, const char *key, size_t key_len, const uint8_t *v, size_t vlen)
{
    size_t plen = strlen(pc->prefix);
    if (key_len <= plen || memcmp(key, pc->prefix, plen) != 0)
        return;
    const char *rest = key + plen;
    bool is_event = strncmp(rest, "event/", 6) == 0, is_set = strncmp(rest, "set/", 4) == 0;
    const char *name = is_event ? rest + 6 : is_set ? rest + 4 : NULL;
    if (!name || !name[0] || strlen(name) > SLOT_EVENT_BYTES_MAX)
        return;
    cache_ent **head = is_event ? &pc->events : &pc->sets, *e = NULL;
    HASH_FIND_STR(*head, name, e);
    json_t *j = v ? json_loadb((const char *)v, vlen, 0, NULL) : NULL;
    if (!v || !json_is_object(j)) {
        if (e) {
            HASH_DEL(*head, e);
            free(e);
            if (is_event)
                pc->nevents--;
        }
        json_decref(j);
        return;
    }
    if (!e) {
        if (is_event && pc->nevents >= SLOT_PLACE_LIST_MAX) {
            json_decref(j);
            return; /* bounded: an event beyond is answered from etcd's view by its owner */
        }
        e = calloc(1, sizeof(*e));
        if (!e) {
            json_decref(j);
            return;
        }
        snprintf(e->name, sizeof e->name, "%s", name);
        HASH_ADD_STR(*head, name, e);
        if (is_event)
            pc->nevents++;
    }
    if (is_event) {
        const char *set = json_string_value(json_object_get(j, "set"));
        const char *state = json_string_value(json_object_get(j, "state"));
        snprintf(e->set, sizeof e->set, "%s", set ? set : "");
        e->gen = (uint64_t)json_integer_value(json_object_get(j, "gen"));
        e->moving = state && strcmp(state, "moving") == 0;
    } else {
        const char *pr = json_string_value(json_object_get(j, "primary"));
        const char *ht = json_string_value(json_object_get(j, "http"));
        snprintf(e->primary, sizeof e->primary, "%s", pr ? pr : "");
        snprintf(e->http, sizeof e->http, "%s", ht ? ht : "");
    }
    json_decref(j);
}

static void refresh(slot__place_cache *pc);

static void on_retry(uv_timer_t *t)
{
    refresh(t->data);
}

static void retry_later(slot__place_cache *pc)
{
    pc->busy = false;
    if (!pc->stopping && pc->retry_open)
        uv_timer_start(&pc->retry, on_retry, SLOT_PLACE_CACHE_RETRY_MS, 0);
}

static void on_event(slot_etcd_watch *w, const slot_etcd_event *ev, void *data)
{
    (void)w;
    slot__place_cache *pc = data;
    apply(pc, ev->kv.key, ev->kv.key_len, ev->type == SLOT_ETCD_EVENT_PUT ? ev->kv.value : NULL, ev->kv.value_len);
}

static void on_watch_end(slot_etcd_watch *w, int status, int64_t last_revision, void *data)
{
    (void)w;
    slot__place_cache *pc = data;
    pc->watch = NULL;
    pc->next_rev = status == SLOT_ETCD_ECOMPACTED ? 0 : last_revision + 1;
    retry_later(pc);
}

static void watch_from(slot__place_cache *pc, int64_t rev)
{
    pc->next_rev = rev;
    if (slot_etcd_watch_start(pc->etcd, pc->prefix, true, rev, on_event, on_watch_end, pc, &pc->watch) != 0) {
        pc->watch = NULL;
        retry_later(pc);
    }
}

static void on_read(slot_etcd *e, int status, const slot_etcd_range_result *r, void *data)
{
    (void)e;
    slot__place_cache *pc = data;
    if (pc->stopping)
        return;
    if (status != 0) {
        retry_later(pc);
        return;
    }
    ent_clear(&pc->events, &pc->nevents);
    ent_clear(&pc->sets, NULL);
    for (size_t i = 0; i < r->count; i++)
        apply(pc, r->kvs[i].key, r->kvs[i].key_len, r->kvs[i].value, r->kvs[i].value_len);
    watch_from(pc, r->revision + 1);
}

static void refresh(slot__place_cache *pc)
{
    if (pc->stopping)
        return;
    pc->busy = true;
    if (pc->next_rev > 0) {
        watch_from(pc, pc->next_rev);
        return;
    }
    if (slot_etcd_get_prefix(pc->etcd, pc->prefix, SLOT_PLACE_LIST_MAX, on_read, pc) != 0)
        retry_later(pc);
}

slot__place_cache *slot__place_cache_start(slot__placement *p, uv_loop_t *loop, slot_etcd *etcd, const char *prefix)
{
    slot__place_cache *pc = calloc(1, sizeof(*pc));
    if (!pc)
        return NULL;
    pc->p = p;
    pc->etcd = etcd;
    pc->prefix = prefix;
    uv_timer_init(loop, &pc->retry);
    pc->retry.data = pc;
    pc->retry_open = true;
    refresh(pc);
    return pc;
}

void slot__place_cache_stop(slot__place_cache *pc)
{
    if (!pc)
        return;
    pc->stopping = true;
    if (pc->watch)
        slot_etcd_watch_cancel(pc->watch);
    if (pc->retry_open) {
        uv_close((uv_handle_t *)&pc->retry, NULL);
        pc->retry_open = false;
    }
}

void slot__place_cache_free(slot__place_cache *pc)
{
    if (!pc)
        return;
    ent_clear(&pc->events, &pc->nevents);
    ent_clear(&pc->sets, NULL);
    free(pc);
}

bool slot__place_cache_event(const slot__place_cache *pc, const char *ev, char set[SLOT_CLUSTER_NAME_BYTES],
                             uint64_t *gen, bool *moving)
{
    cache_ent *e = NULL;
    if (pc)
        HASH_FIND_STR(pc->events, ev, e);
    if (!e)
        return false;
    memcpy(set, e->set, SLOT_CLUSTER_NAME_BYTES);
    *gen = e->gen;
    *moving = e->moving;
    return true;
}

bool slot__place_cache_set(const slot__place_cache *pc, const char *set, const char **primary, const char **http)
{
    cache_ent *e = NULL;
    if (pc)
        HASH_FIND_STR(pc->sets, set, e);
    *primary = e ? e->primary : "";
    *http = e ? e->http : "";
    return e != NULL;
}
