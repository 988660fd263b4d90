/*
 * slotctl_pfeed_state.c — `slotctl feed --placement`'s --state FILE and
 * --from SET=SEQ,... (slotctl_pfeed_int.h; docs/design.md, "The feed of a
 * placement"). Single-threaded: slotctl's main thread.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "slotctl_pfeed_int.h"

/* ---- --state: {"placement":P,"sets":{S:{"next":N}},"events":{E:{"owner","gen","open","to","to_gen"}}} */

int pf_state_load(pfeed *p)
{
    json_error_t err;
    FILE *fp = fopen(p->o->state, "r");
    if (!fp && errno == ENOENT)
        return 0;
    json_t *j = fp ? json_loadf(fp, 0, &err) : NULL;
    if (fp)
        fclose(fp);
    if (!json_is_object(j) || strcmp(jstr(j, "placement"), p->o->placement) != 0) {
        fprintf(stderr, "slotctl: feed: --state %s: %s\n", p->o->state,
                !fp  ? strerror(errno)
                : !j ? err.text
                     : "not the state of this placement");
        json_decref(j);
        return 1;
    }
    const char *k;
    json_t *v;
    json_object_foreach(json_object_get(j, "sets"), k, v)
    {
        int i = pf_find_set(p, k);
        if (i >= 0)
            p->sets[i].next = jnum(v, "next");
    }
    json_object_foreach(json_object_get(j, "events"), k, v)
    {
        ctl_ho_event *e = ctl_handover_get(&p->ho, k);
        if (!e) {
            fprintf(stderr, "slotctl: feed: --state %s: event '%.70s' does not fit\n", p->o->state, k);
            json_decref(j);
            return 1;
        }
        snprintf(e->owner, sizeof e->owner, "%s", jstr(v, "owner"));
        snprintf(e->to, sizeof e->to, "%s", jstr(v, "to"));
        e->gen = jnum(v, "gen");
        e->to_gen = jnum(v, "to_gen");
        e->open = json_is_true(json_object_get(v, "open"));
    }
    json_decref(j);
    return 0;
}

/* --from SET=SEQ[,SET=SEQ...] over the positions. 0, or 64 after a message. */
int pf_from_load(pfeed *p)
{
    for (const char *q = p->o->from; q && *q;) {
        const char *comma = strchr(q, ','), *eq = strchr(q, '=');
        size_t len = comma ? (size_t)(comma - q) : strlen(q);
        char name[NAME_CAP];
        char *end = NULL;
        int i = -1;
        unsigned long long seq = 0;
        if (eq && eq < q + len && (size_t)(eq - q) < sizeof name) {
            memcpy(name, q, (size_t)(eq - q));
            name[eq - q] = 0;
            i = pf_find_set(p, name);
            errno = 0;
            seq = eq[1] >= '0' && eq[1] <= '9' ? strtoull(eq + 1, &end, 10) : 0;
        }
        if (i < 0 || !end || end != q + len || errno || seq < 1 || seq > INT64_MAX) {
            fprintf(stderr,
                    "slotctl: feed: --from: want SET=SEQ of a set of placement %s and a seq 1..2^63-1,"
                    " not '%.*s'\n",
                    p->o->placement, (int)len, q);
            return 64;
        }
        p->sets[i].next = seq;
        q += len + (comma ? 1 : 0);
    }
    return 0;
}

/* Writes the state (a temporary file, fsync, rename). 0, or 1 after a message. */
int pf_state_save(pfeed *p)
{
    p->since_state = 0;
    if (!p->o->state)
        return 0;
    json_t *sets = json_object(), *evs = json_object();
    for (uint32_t i = 0; i < p->nsets; i++)
        json_object_set_new(sets, p->sets[i].name, json_pack("{s:I}", "next", (json_int_t)p->sets[i].next));
    for (uint32_t i = 0; i < CTL_HO_SLOTS; i++) {
        const ctl_ho_event *e = &p->ho.slots[i];
        if (e->used && e->owner[0])
            json_object_set_new(evs, e->name,
                                json_pack("{s:s,s:I,s:b,s:s,s:I}", "owner", e->owner, "gen", (json_int_t)e->gen, "open",
                                          e->open, "to", e->to, "to_gen", (json_int_t)e->to_gen));
    }
    json_t *j = json_pack("{s:s,s:o,s:o}", "placement", p->o->placement, "sets", sets, "events", evs);
    char tmp[SLOT_CTL_FEED_STATE_PATH_BYTES_MAX + 8];
    snprintf(tmp, sizeof tmp, "%s.tmp", p->o->state);
    FILE *fp = fopen(tmp, "w");
    int bad = !j || !fp || json_dumpf(j, fp, JSON_COMPACT | JSON_SORT_KEYS) != 0 || fputc('\n', fp) == EOF ||
              fflush(fp) != 0 || fsync(fileno(fp)) != 0;
    if (fp && fclose(fp) != 0)
        bad = 1;
    if (!bad && rename(tmp, p->o->state) != 0)
        bad = 1;
    json_decref(j);
    if (bad)
        fprintf(stderr, "slotctl: feed: --state %s: %s\n", p->o->state, strerror(errno));
    return bad;
}
