/*
 * slotctl_pfeed.c — `slotctl feed --placement NAME --etcd URL` (slotctl_pfeed.h).
 *
 * The sets and their addresses come from etcd: P set/S (P is
 * /slotd/placement/NAME/) gives each set's primary, /slotd/S/node/ its
 * members, so a set's follower can follow not_primary and a failover. Each
 * set is subscribed to as the consumer "slotctl.PID" from its position (the
 * oldest entry kept, or the --state file's), on its own connection; the sets
 * are read in turns of at most SLOT_CTL_FEED_TURN_LINES lines, with a poll of
 * their sockets when no set had anything.
 *
 * Each entry is judged by the rule of docs/design.md, "The feed of a
 * placement" (judge, below): printed, dropped (a push seen again, or an entry
 * of an event's epoch that an other set's entries already continued), or
 * held: the entry waits, and its set is not read further, until the source's
 * event.moved that it follows has been printed. An event.arrived whose
 * source's event.moved this run has not seen asks the source's primary for
 * its feed's head (feed_consumers) and waits until the source's feed is read
 * past that head: the event.moved, committed before the event.arrived, is at
 * or below it, so when it has not come by then it was before this run's
 * position (printed by an earlier run).
 */
#include "slotctl_pfeed.h"

#include <errno.h>
#include <inttypes.h>
#include <jansson.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <uv.h>

#include "slot/client.h"
#include "slot/etcd.h"
#include "slot/limits.h"
#include "slotctl_feed.h"
#include "slotctl_handover.h"

#include "slotctl_pfeed_int.h"

static volatile sig_atomic_t stop_asked;
static void on_stop(int sig)
{
    (void)sig;
    stop_asked = 1;
}

static uint64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

/* ---- etcd: blocking reads on a loop of our own */

typedef struct range_wait {
    bool done;
    int status;
    json_t *vals; /* [[key, value-as-JSON-or-null], ...] */
} range_wait;

static void range_cb(slot_etcd *c, int status, const slot_etcd_range_result *r, void *data)
{
    (void)c;
    range_wait *w = data;
    w->done = true;
    w->status = status;
    for (size_t i = 0; status == 0 && i < r->count; i++) {
        json_t *v = json_loadb((const char *)r->kvs[i].value, r->kvs[i].value_len, 0, NULL);
        json_array_append_new(w->vals, json_pack("[s,o?]", r->kvs[i].key, v));
    }
}

/* The keys under prefix as a new [[key, value], ...] array into *out; 0 or an etcd code. */
static int etcd_list(pfeed *p, const char *prefix, uint32_t limit, json_t **out)
{
    range_wait w = {.vals = json_array()};
    int rc = w.vals ? slot_etcd_get_prefix(p->etcd, prefix, limit, range_cb, &w) : SLOT_ETCD_ENOMEM;
    while (rc == 0 && !w.done)
        uv_run(&p->loop, UV_RUN_ONCE);
    if (rc == 0)
        rc = w.status;
    if (rc != 0) {
        json_decref(w.vals);
        return rc;
    }
    *out = w.vals;
    return 0;
}

/* Appends addr to list (comma-separated) unless it is there or the list is full. */
static void addr_add(char *list, const char *addr)
{
    if (!addr[0] || strlen(addr) > SLOT_CLIENT_ADDR_BYTES_MAX)
        return;
    uint32_t n = list[0] ? 1 : 0;
    for (const char *q = list; (q = strchr(q, ',')); q++)
        n++;
    size_t len = strlen(addr);
    for (const char *q = list; *q;) {
        const char *comma = strchr(q, ',');
        size_t l = comma ? (size_t)(comma - q) : strlen(q);
        if (l == len && memcmp(q, addr, len) == 0)
            return;
        q += l + (comma ? 1 : 0);
    }
    if (n < SLOT_FOLLOW_NODES_MAX)
        snprintf(list + strlen(list), ADDRS_CAP - strlen(list), "%s%s", list[0] ? "," : "", addr);
}

/* Set s's addresses from etcd now: the published primary, then every member. 0 or an etcd code. */
static int set_addrs(pfeed *p, pset *s, json_t *setval)
{
    char key[SLOT_PLACE_PREFIX_BYTES + NAME_CAP + 16];
    json_t *own = NULL, *nodes = NULL;
    int rc = 0;
    if (!setval) {
        snprintf(key, sizeof key, "%sset/%s", p->prefix, s->name);
        if ((rc = etcd_list(p, key, 1, &own)) != 0)
            return rc;
        json_t *kv = json_array_get(own, 0);
        if (strcmp(json_string_value(json_array_get(kv, 0)) ? json_string_value(json_array_get(kv, 0)) : "", key) == 0)
            setval = json_array_get(kv, 1); /* not P set/S2 for S */
    }
    char list[ADDRS_CAP] = "";
    addr_add(list, jstr(setval, "primary"));
    snprintf(key, sizeof key, "/slotd/%s/node/", s->name);
    if ((rc = etcd_list(p, key, SLOT_FOLLOW_NODES_MAX, &nodes)) == 0) {
        size_t i;
        json_t *kv;
        json_array_foreach(nodes, i, kv) addr_add(list, jstr(json_array_get(kv, 1), "addr"));
    }
    json_decref(nodes);
    json_decref(own);
    if (list[0])
        memcpy(s->addrs, list, sizeof list);
    return rc;
}

/* The placement's sets from P set/. 0, or 2 after a message. */
static int read_sets(pfeed *p)
{
    json_t *kvs = NULL;
    char key[sizeof p->prefix + 8];
    snprintf(key, sizeof key, "%sset/", p->prefix);
    int rc = etcd_list(p, key, SLOT_CTL_FEED_SETS_MAX, &kvs);
    if (rc != 0) {
        fprintf(stderr, "slotctl: feed: etcd %s: %s\n", p->o->etcd, slot_strerror(rc));
        return 2;
    }
    size_t i;
    json_t *kv;
    json_array_foreach(kvs, i, kv)
    {
        const char *name = json_string_value(json_array_get(kv, 0)) + strlen(key);
        if (!name[0] || strlen(name) > SLOT_CLUSTER_NAME_BYTES_MAX || p->nsets == SLOT_CTL_FEED_SETS_MAX)
            continue;
        pset *s = &p->sets[p->nsets++];
        memset(s, 0, sizeof *s);
        s->probe_set = -1;
        snprintf(s->name, sizeof s->name, "%s", name);
        if ((rc = set_addrs(p, s, json_array_get(kv, 1))) != 0 || !s->addrs[0]) {
            fprintf(stderr, "slotctl: feed: set %s: %s\n", name,
                    rc ? slot_strerror(rc) : "no primary published and no member known");
            json_decref(kvs);
            return 2;
        }
    }
    json_decref(kvs);
    if (p->nsets == 0) {
        fprintf(stderr, "slotctl: feed: placement %s: no set is published in etcd under %sset/\n", p->o->placement,
                p->prefix);
        return 2;
    }
    return 0;
}

int pf_find_set(const pfeed *p, const char *name)
{
    for (uint32_t i = 0; i < p->nsets; i++)
        if (strcmp(p->sets[i].name, name) == 0)
            return (int)i;
    return -1;
}

/* A follower of s's addresses into *out (the one there freed first). 0, or -1 after a message. */
static int follower(const pfeed *p, const pset *s, slot_follow **out)
{
    slot_follow_opts fo;
    slot_follow_opts_default(&fo);
    fo.token = p->o->token;
    fo.connect_timeout_ms = SLOT_CTL_CONNECT_TIMEOUT_MS;
    fo.reply_timeout_ms = p->o->timeout_ms;
    char err[300];
    slot_follow_free(*out);
    *out = NULL;
    if (slot_follow_new(s->addrs, &fo, out, err, sizeof err) < 0) {
        fprintf(stderr, "slotctl: feed: set %s: %s\n", s->name, err);
        return -1;
    }
    return 0;
}

/* The probe of an event.arrived on set x from the set `from` (docs/design.md): the source's
 * head now, asked of its primary. 0, or -1 after a message (tried again next turn). */
static int probe(pfeed *p, pset *x, int from)
{
    pset *s = &p->sets[from];
    slot_reply r;
    static const char line[] = "{\"op\":\"feed_consumers\"}\n";
    int rc = slot_follow_call_line(s->side, line, sizeof line - 1, &r);
    json_t *v = rc == 0 ? json_loads(r.line ? r.line : "", 0, NULL) : NULL;
    slot_reply_clear(&r);
    if (!json_is_true(json_object_get(v, "ok"))) {
        if (!s->probe_warned) /* once: it is asked again each turn, bounded by SLOT_CTL_FEED_HOLD_MS_MAX */
            fprintf(stderr, "slotctl: feed: set %s: feed_consumers: %s\n", s->name,
                    v ? jstr(v, "error") : slot_follow_error(s->side));
        s->probe_warned = true;
        json_decref(v);
        if (!v && set_addrs(p, s, NULL) == 0) /* no answer: its primary may have moved */
            follower(p, s, &s->side);
        return -1;
    }
    x->probe_set = from;
    x->probe_head = jnum(v, "head");
    json_decref(v);
    return 0;
}

/*
 * judge — ctl_handover_judge for entry v read from set xi, with the probe of
 * an event.arrived whose source's event.moved was not taken (the header
 * comment): V_PRINT, V_DROP, V_HOLD (judge it again later), or V_FAIL after
 * a message.
 */
static int judge(pfeed *p, int xi, json_t *v)
{
    pset *x = &p->sets[xi];
    const char *type = jstr(v, "type"), *name = jstr(v, "event");
    bool arrived = strcmp(type, "event.arrived") == 0;
    const char *peer = arrived ? jstr(v, "from") : jstr(v, "to");
    int from = arrived ? pf_find_set(p, peer) : -1;
    bool passed = from < 0 || from == xi || (x->probe_set == from && p->sets[from].next > x->probe_head);
    ctl_ho_verdict h = ctl_handover_judge(&p->ho, x->name, type, name, peer, jnum(v, "gen"), passed);
    if (h == CTL_HO_WAIT && x->probe_set != from && probe(p, x, from) == 0 && p->sets[from].next > x->probe_head)
        h = ctl_handover_judge(&p->ho, x->name, type, name, peer, jnum(v, "gen"), true);
    if (h == CTL_HO_FULL) {
        fprintf(stderr, "slotctl: feed: more than %d events: the hand-over state of event %s cannot be kept\n",
                SLOT_CTL_FEED_EVENTS_MAX, name);
        return V_FAIL;
    }
    if (h == CTL_HO_WAIT)
        return V_HOLD;
    if (arrived)
        x->probe_set = -1;
    return h == CTL_HO_TAKE ? V_PRINT : V_DROP;
}

/* ---- the sets' connections */

/* (Re)subscribes s from s->next (or its oldest entry). 0; 1 a refusal; -1 no answer (try again). */
static int subscribe(pfeed *p, pset *s)
{
    s->c = NULL;
    if (follower(p, s, &s->f) != 0)
        return 1;
    char line[256];
    if (s->next)
        snprintf(line, sizeof line, "{\"op\":\"subscribe\",\"consumer\":\"%s\",\"from\":%" PRIu64 ",\"window\":%d}\n",
                 p->me, s->next, FEED_WINDOW);
    else
        snprintf(line, sizeof line, "{\"op\":\"subscribe\",\"consumer\":\"%s\",\"from\":\"start\",\"window\":%d}\n",
                 p->me, FEED_WINDOW);
    slot_reply r;
    int rc = slot_follow_call_line(s->f, line, strlen(line), &r);
    json_t *v = rc == 0 ? json_loads(r.line ? r.line : "", 0, NULL) : NULL;
    slot_reply_clear(&r);
    if (!v) {
        fprintf(stderr, "slotctl: feed: set %s: subscribe: %s\n", s->name, slot_follow_error(s->f));
        return -1;
    }
    if (!json_is_true(json_object_get(v, "ok"))) {
        fprintf(stderr, "slotctl: feed: set %s: subscribe: %s: %s\n", s->name, jstr(v, "error"), jstr(v, "message"));
        json_decref(v);
        return 1;
    }
    if (!s->next)
        s->next = jnum(v, "from");
    if (!s->subscribed_once)
        s->head0 = jnum(v, "head");
    s->subscribed_once = true;
    s->acked = 0;
    s->fails = 0;
    json_decref(v);
    s->c = slot_follow_client(s->f);
    return s->c ? 0 : -1;
}

/* After a lost connection: the addresses again from etcd, then subscribe, bounded. 0, 1 or 2. */
static int resubscribe(pfeed *p, pset *s)
{
    for (;;) {
        if (stop_asked)
            return 0;
        set_addrs(p, s, NULL); /* an etcd that does not answer keeps the addresses known */
        if (follower(p, s, &s->side) != 0)
            return 1;
        int rc = subscribe(p, s);
        if (rc >= 0)
            return rc;
        if (++s->fails >= SLOT_CTL_FEED_RESUBSCRIBES_MAX) {
            fprintf(stderr, "slotctl: feed: set %s: %d subscribes in a row failed\n", s->name,
                    SLOT_CTL_FEED_RESUBSCRIBES_MAX);
            return 2;
        }
        usleep(SLOT_CTL_FEED_RESUBSCRIBE_PAUSE_MS * 1000);
    }
}

static void ack(pfeed *p, pset *s, bool now)
{
    uint64_t done = s->next - 1;
    if (!s->c || done <= s->acked || (!now && done - s->acked < FEED_WINDOW / 2))
        return;
    char line[160];
    snprintf(line, sizeof line, "{\"op\":\"ack\",\"consumer\":\"%s\",\"seq\":%" PRIu64 "}\n", p->me, done);
    if (slot_client_send_raw(s->c, line, strlen(line)) == 0)
        s->acked = done; /* the reply is read among the pushes */
}

/* Acts on the verdict for s's entry v (raw its line). 0, or an exit status. */
static int act(pfeed *p, pset *s, json_t *v, const char *raw, int verdict)
{
    if (verdict == V_FAIL)
        return 1;
    if (verdict == V_PRINT) {
        slotctl_feed_show(v, raw, p->o->json, s->name);
        p->printed++;
    } else {
        p->dropped++;
    }
    s->next = jnum(v, "feed") + 1;
    ack(p, s, false);
    if (++p->since_state >= SLOT_CTL_FEED_STATE_EVERY)
        return pf_state_save(p);
    return 0;
}

/* The held entry of s judged again. 0 (still held, or done), or an exit status. */
static int retry_held(pfeed *p, int i, bool *moved)
{
    pset *s = &p->sets[i];
    int verdict = judge(p, i, s->held);
    if (verdict == V_HOLD) {
        if (now_ms() - s->held_since_ms <= SLOT_CTL_FEED_HOLD_MS_MAX)
            return 0;
        fprintf(stderr,
                "slotctl: feed: set %s: entry %" PRIu64 " (%s of %s) waited %d ms for its hand-over from set %s;"
                " is that set's feed readable?\n",
                s->name, jnum(s->held, "feed"), jstr(s->held, "type"), jstr(s->held, "event"),
                SLOT_CTL_FEED_HOLD_MS_MAX, jstr(s->held, "from"));
        return 1;
    }
    int rc = act(p, s, s->held, s->held_raw, verdict);
    json_decref(s->held);
    free(s->held_raw);
    s->held = NULL;
    s->held_raw = NULL;
    *moved = true;
    return rc;
}

/* One turn of set i: its held entry, then up to SLOT_CTL_FEED_TURN_LINES lines. 0 or an exit status. */
static int turn(pfeed *p, int i, bool *moved)
{
    pset *s = &p->sets[i];
    int rc = 0;
    if (s->held && ((rc = retry_held(p, i, moved)) != 0 || s->held))
        return rc;
    if (!s->c && (rc = resubscribe(p, s)) != 0)
        return rc;
    for (int n = 0; n < SLOT_CTL_FEED_TURN_LINES && s->c && !s->held; n++) {
        const char *raw;
        long len = slot_client_recv_line(s->c, &raw, 1);
        if (len == -ETIMEDOUT)
            break;
        if (len < 0) { /* lost: subscribe again from next (a failover, a restart) */
            fprintf(stderr, "slotctl: feed: set %s: %s; subscribing again from %" PRIu64 "\n", s->name,
                    len == -ECONNRESET ? "the server closed the connection" : strerror((int)-len), s->next);
            s->c = NULL;
            return resubscribe(p, s);
        }
        json_t *v = json_loadb(raw, (size_t)len, 0, NULL);
        if (!v) {
            fprintf(stderr, "slotctl: feed: set %s: not a JSON line: %.80s\n", s->name, raw);
            return 1;
        }
        *moved = true;
        uint64_t seq = jnum(v, "feed");
        if (!json_object_get(v, "feed")) {
            if (!json_is_true(json_object_get(v, "ok"))) { /* an ack refused */
                fprintf(stderr, "slotctl: feed: set %s: %s: %s\n", s->name, jstr(v, "error"), jstr(v, "message"));
                rc = 1;
            }
        } else if (seq < s->next) {
            p->dropped++; /* pushed again */
        } else {
            int verdict = judge(p, i, v);
            if (verdict == V_HOLD) {
                s->held = json_incref(v);
                s->held_raw = strdup(raw);
                s->held_since_ms = now_ms();
                p->waits++;
                if (!s->held_raw)
                    rc = 1;
            } else {
                rc = act(p, s, v, raw, verdict);
            }
        }
        json_decref(v);
        if (rc)
            return rc;
    }
    return 0;
}

/* Waits up to SLOT_CTL_FEED_POLL_MS for a line on any set that is not held. */
static void wait_any(pfeed *p)
{
    struct pollfd fds[SLOT_CTL_FEED_SETS_MAX];
    nfds_t n = 0;
    for (uint32_t i = 0; i < p->nsets; i++)
        if (p->sets[i].c && !p->sets[i].held)
            fds[n++] = (struct pollfd){.fd = slot_client_fd(p->sets[i].c), .events = POLLIN};
    if (n)
        poll(fds, n, SLOT_CTL_FEED_POLL_MS);
    else
        usleep(SLOT_CTL_FEED_POLL_MS * 1000 / 10);
}

static bool all_done(const pfeed *p)
{
    for (uint32_t i = 0; i < p->nsets; i++)
        if (p->sets[i].held || p->sets[i].next <= p->sets[i].head0)
            return false;
    return true;
}

static int run(pfeed *p)
{
    int rc = 0;
    for (uint32_t i = 0; i < p->nsets && rc == 0; i++)
        if ((rc = subscribe(p, &p->sets[i])) < 0)
            rc = resubscribe(p, &p->sets[i]);
    while (rc == 0 && !stop_asked && (p->o->follow || !all_done(p))) {
        bool moved = false;
        for (uint32_t i = 0; i < p->nsets && rc == 0; i++)
            rc = turn(p, (int)i, &moved);
        if (rc == 0 && !moved)
            wait_any(p);
    }
    return rc;
}

static void finish(pfeed *p)
{
    char line[128];
    snprintf(line, sizeof line, "{\"op\":\"feed_forget\",\"consumer\":\"%s\"}\n", p->me);
    fprintf(stderr,
            "slotctl: feed: %" PRIu64 " entries printed, %" PRIu64 " dropped, %" PRIu64
            " waited for a hand-over; next:",
            p->printed, p->dropped, p->waits);
    for (uint32_t i = 0; i < p->nsets; i++) {
        pset *s = &p->sets[i];
        fprintf(stderr, " %s=%" PRIu64, s->name, s->next);
        if (!s->subscribed_once || !s->side)
            continue;
        slot_reply r;
        int rc = slot_follow_call_line(s->side, line, strlen(line), &r);
        json_t *v = rc == 0 ? json_loads(r.line ? r.line : "", 0, NULL) : NULL;
        if (!json_is_true(json_object_get(v, "ok")))
            fprintf(stderr,
                    "\nslotctl: feed: set %s: could not forget consumer '%s' (%s): ask an admin to run"
                    " feed_forget\n",
                    s->name, p->me, v ? jstr(v, "error") : slot_follow_error(s->side));
        json_decref(v);
        slot_reply_clear(&r);
    }
    fprintf(stderr, "\n");
}

static void close_all(pfeed *p)
{
    for (uint32_t i = 0; i < p->nsets; i++) {
        slot_follow_free(p->sets[i].f);
        slot_follow_free(p->sets[i].side);
        json_decref(p->sets[i].held);
        free(p->sets[i].held_raw);
    }
    if (p->etcd) {
        slot_etcd_close(p->etcd);
        uv_run(&p->loop, UV_RUN_DEFAULT);
    }
    uv_loop_close(&p->loop);
    ctl_handover_free(&p->ho);
}

int slotctl_pfeed(const slotctl_pfeed_opts *o)
{
    static pfeed pf; /* about 0.5 MiB of sets: not on the stack; one run per process */
    pfeed *p = &pf;
    memset(p, 0, sizeof *p);
    p->o = o;
    snprintf(p->prefix, sizeof p->prefix, "/slotd/placement/%s/", o->placement);
    snprintf(p->me, sizeof p->me, "slotctl.%ld", (long)getpid());
    if (uv_loop_init(&p->loop) != 0 || ctl_handover_init(&p->ho) != 0) {
        fprintf(stderr, "slotctl: feed: out of memory\n");
        return 1;
    }
    int rc = slot_etcd_new(&p->loop, o->etcd, NULL, &p->etcd);
    if (rc != 0) {
        fprintf(stderr, "slotctl: feed: --etcd %s: %s\n", o->etcd, slot_strerror(rc));
        p->etcd = NULL;
        close_all(p);
        return 64;
    }
    if ((rc = read_sets(p)) == 0 && (!o->state || (rc = pf_state_load(p)) == 0) && (rc = pf_from_load(p)) == 0) {
        for (uint32_t i = 0; i < p->nsets && rc == 0; i++)
            if (follower(p, &p->sets[i], &p->sets[i].side) != 0)
                rc = 64;
        struct sigaction sa = {.sa_handler = on_stop};
        sigemptyset(&sa.sa_mask);
        sigaction(SIGINT, &sa, NULL);
        sigaction(SIGTERM, &sa, NULL);
        if (rc == 0)
            rc = run(p);
        for (uint32_t i = 0; i < p->nsets; i++)
            ack(p, &p->sets[i], true);
        if (pf_state_save(p) != 0 && rc == 0)
            rc = 1;
        finish(p);
    }
    close_all(p);
    return rc;
}
