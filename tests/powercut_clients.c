/*
 * tests/powercut_clients.c — what the clients of the power-cut test were
 * told, and its check (tests/test_powercut.c says what the test does): the
 * client threads that hold, confirm and release on one node and record
 * every answer, and verify, which holds a node restarted on a rebuilt folder
 * to what they were told, a clean `check` and a feed without a gap.
 * Declarations: tests/powercut_int.h.
 */
#include <inttypes.h>
#include <unistd.h>

#include "cluster_fixture.h"
#include "harness.h"
#include "powercut_int.h"

#define SAMPLE 256 /* older holds re-read each round (all of them in the last) */
#define CALL_MS 5000

/* ---- what the clients were told */

enum { ST_NONE, ST_HELD, ST_CONFIRMED, ST_RELEASED };
static const char *const st_name[] = {"none", "held", "confirmed", "released"};

struct hrec {
    char id[40];
    uint8_t state, pending; /* pending: a confirm or release sent, not answered */
    int round;              /* the last round that touched it */
};

buyer clients[CLIENTS];
static atomic_bool stop_load;
int round_no;
static uint64_t feed_head;

static void *client_main(void *arg)
{
    buyer *c = arg;
    line_conn lc;
    if (lc_open(&lc, c->node) != 0)
        return NULL;
    char line[512];
    while (!atomic_load(&stop_load)) {
        c->seed = c->seed * 6364136223846793005u + 1442695040888963407u;
        uint32_t x = (uint32_t)(c->seed >> 33);
        hrec *h = NULL;
        if (c->n > 0 && x % 10 < 4) {
            h = &c->r[(x / 10) % c->n];
            if (h->state != ST_HELD || h->pending)
                h = NULL;
        }
        json_t *j;
        if (h) {
            h->pending = x % 20 < 12 ? ST_CONFIRMED : ST_RELEASED;
            h->round = round_no;
            snprintf(line, sizeof line, "{\"op\":\"%s\",\"event\":\"" EVENT "\",\"hold\":\"%s\",\"user\":\"u%d\"}",
                     h->pending == ST_CONFIRMED ? "confirm" : "release", h->id, c->idx);
            j = lc_call(&lc, line, CALL_MS);
            if (j && jok(j) && strcmp(jstr(j, "status"), h->pending == ST_CONFIRMED ? "confirmed" : "released") == 0) {
                h->state = h->pending;
                h->pending = 0;
                c->told++;
            }
        } else {
            snprintf(line, sizeof line,
                     "{\"op\":\"hold\",\"event\":\"" EVENT "\",\"user\":\"u%d\",\"request\":\"r%d.%" PRIu64
                     "\",\"qty\":1}",
                     c->idx, round_no, c->seq++);
            j = lc_call(&lc, line, CALL_MS);
            if (j && jok(j) && strcmp(jstr(j, "status"), "held") == 0) {
                if (c->n == c->cap) {
                    c->cap = c->cap ? 2 * c->cap : 1024;
                    c->r = realloc(c->r, c->cap * sizeof(hrec));
                }
                hrec *nh = &c->r[c->n];
                memset(nh, 0, sizeof *nh);
                snprintf(nh->id, sizeof nh->id, "%s", jstr(j, "hold"));
                nh->state = ST_HELD;
                nh->round = round_no;
                c->n++;
                c->told++;
            }
        }
        bool gone = j == NULL;
        json_decref(j);
        if (gone)
            break;
    }
    lc_close(&lc);
    return NULL;
}

/* ---- verification against a started node; returns the failures found */

#define VERIFY_BATCH 64

int verify(int target, bool all, bool quiet)
{
    int bad = 0;
    line_conn lc;
    if (lc_open(&lc, target) != 0)
        return 1;
    /* the holds: those of this round, a sample of older ones (all: every one) */
    size_t cap = 1024, npick = 0;
    hrec **pick = malloc(cap * sizeof(hrec *));
    int *owner = malloc(cap * sizeof(int));
    for (int ci = 0; ci < CLIENTS; ci++) {
        buyer *c = &clients[ci];
        for (size_t i = 0; i < c->n; i++) {
            if (!(all || c->r[i].round == round_no || c->r[i].pending || rnd() % (c->n + 1) < SAMPLE / CLIENTS))
                continue;
            if (npick == cap) {
                cap *= 2;
                pick = realloc(pick, cap * sizeof(hrec *));
                owner = realloc(owner, cap * sizeof(int));
            }
            pick[npick] = &c->r[i];
            owner[npick++] = ci;
        }
    }
    for (size_t at = 0; at < npick; at += VERIFY_BATCH) {
        size_t k = npick - at < VERIFY_BATCH ? npick - at : VERIFY_BATCH;
        char out[VERIFY_BATCH * 160];
        size_t len = 0;
        for (size_t q = 0; q < k; q++)
            len += (size_t)snprintf(out + len, sizeof out - len,
                                    "{\"op\":\"get_hold\",\"event\":\"" EVENT "\",\"hold\":\"%s\",\"user\":\"u%d\"}\n",
                                    pick[at + q]->id, owner[at + q]);
        ASSERT_EQ(write(lc.fd, out, len), (ssize_t)len);
        for (size_t q = 0; q < k; q++) {
            json_t *j = lc_call(&lc, "", CALL_MS);
            hrec *h = pick[at + q];
            const char *s = j ? jstr(j, "status") : "(no answer)";
            int got = ST_NONE;
            for (int t = ST_HELD; t <= ST_RELEASED; t++)
                if (strcmp(s, st_name[t]) == 0)
                    got = t;
            if (got != ST_NONE && (got == h->state || got == h->pending)) {
                h->state = (uint8_t)got; /* a pending outcome is now known */
                h->pending = 0;
            } else {
                if (!quiet || bad < 3) {
                    char *dump = j ? json_dumps(j, JSON_COMPACT) : NULL;
                    printf("  LOST: hold %s of u%d was told %s%s%s, is %s\n", h->id, owner[at + q], st_name[h->state],
                           h->pending ? ", then sent " : "", h->pending ? st_name[h->pending] : "", dump ? dump : s);
                    free(dump);
                }
                bad++;
            }
            json_decref(j);
        }
    }
    uint64_t checked = npick;
    free(pick);
    free(owner);
    /* check */
    json_t *j = lc_call(&lc, "{\"op\":\"check\"}", 60000);
    if (!j || !jok(j) || ju64(j, "violations_total") != 0) {
        printf("  check is not clean: %s\n", j ? json_dumps(j, JSON_COMPACT) : "(no answer)");
        bad++;
    }
    json_decref(j);
    /* the feed: from the last round's head, each seq once, in order, up to the head */
    char line[256];
    if (feed_head)
        snprintf(line, sizeof line, "{\"op\":\"subscribe\",\"consumer\":\"v%d\",\"from\":%" PRIu64 ",\"window\":10000}",
                 round_no, feed_head);
    else
        snprintf(line, sizeof line, "{\"op\":\"subscribe\",\"consumer\":\"v%d\",\"from\":\"start\",\"window\":10000}",
                 round_no);
    j = lc_call(&lc, line, CALL_MS);
    uint64_t from = j && jok(j) ? ju64(j, "from") : 0, head = j && jok(j) ? ju64(j, "head") : 0, want = from;
    if (!j || !jok(j) || (feed_head && from != feed_head) || head < from) {
        printf("  feed: subscribe from %" PRIu64 ": %s\n", feed_head, j ? json_dumps(j, JSON_COMPACT) : "(none)");
        bad++;
        head = 0;
    }
    json_decref(j);
    while (head && want <= head) {
        j = lc_call(&lc, "", CALL_MS);
        if (!j || ju64(j, "feed") != want) {
            printf("  feed gap: wanted %" PRIu64 ", got %s\n", want, j ? json_dumps(j, JSON_COMPACT) : "(none)");
            json_decref(j);
            bad++;
            break;
        }
        json_decref(j);
        if (want % 4096 == 0 && want < head) {
            snprintf(line, sizeof line, "{\"op\":\"ack\",\"consumer\":\"v%d\",\"seq\":%" PRIu64 "}", round_no, want);
            ASSERT(write(lc.fd, line, strlen(line)) > 0 && write(lc.fd, "\n", 1) == 1);
            for (;;) { /* the ack's answer, between pushed entries */
                json_t *a = lc_call(&lc, "", CALL_MS);
                bool was_ack = a && json_object_get(a, "acked");
                bool entry = a && ju64(a, "feed") == want + 1;
                json_decref(a);
                if (was_ack || !a)
                    break;
                if (entry) { /* an entry before the ack's answer */
                    want++;
                    continue;
                }
            }
        }
        want++;
    }
    if (head)
        feed_head = head;
    lc_close(&lc);
    if (!quiet)
        printf("    %" PRIu64 " holds read, feed to %" PRIu64 ", %d failures\n", checked, feed_head, bad);
    return bad;
}

/* ---- the clients' rounds */

void load_round(int run_ms)
{
    atomic_store(&stop_load, false);
    for (int i = 0; i < CLIENTS; i++)
        ASSERT_EQ(pthread_create(&clients[i].t, NULL, client_main, &clients[i]), 0);
    sleep_ms(run_ms);
}

void load_end(void)
{
    atomic_store(&stop_load, true);
    for (int i = 0; i < CLIENTS; i++)
        pthread_join(clients[i].t, NULL);
}

void clients_reset(int at)
{
    for (int i = 0; i < CLIENTS; i++) {
        free(clients[i].r);
        memset(&clients[i], 0, sizeof clients[i]);
        clients[i].idx = i;
        clients[i].node = at;
        clients[i].seed = rnd();
    }
    feed_head = 0;
}

uint64_t told_total(void)
{
    uint64_t n = 0;
    for (int i = 0; i < CLIENTS; i++) {
        n += clients[i].told;
        clients[i].told = 0;
    }
    return n;
}
