/*
 * test_crash.c — a crash storm: a hot release from several pipelining
 * clients, and slotd killed with SIGKILL at random moments, again and again,
 * restarted on the same folder each time (docs/protocol.md invariant 6: a held or
 * confirmed answer is sent only after the commit that made it durable).
 *
 * After every restart: every hold a client was told is held or confirmed is
 * there with that status; requests whose answers were lost in the crash are
 * sent again and are answered as the idempotency rules say (the hold made
 * before the crash, or a new one — never two); `check` is clean; the event's
 * counters equal the sum over the holds the clients know of, and
 * available + held + confirmed = capacity; no LMDB reader slot of a killed
 * process is left behind; the shard count is the last reshard an admin,
 * resharding all along, was told of or the one in flight. Restart times
 * (exec to "listening on") are printed.
 */
#include <errno.h>
#include <lmdb.h>
#include <pthread.h>
#include <signal.h>
#include <time.h>
#include <unistd.h>

#include "harness.h"
#include "slot/client.h"

TEST_DECLARE(crash_storm)

TEST_LIST_START
TEST_ENTRY(crash_storm)
TEST_LIST_END

#define CRASHES 24            /* kill -9 this many times (at least 20) */
#define CLIENTS 4             /* client threads, one connection each */
#define DEPTH 16              /* requests in flight per client */
#define RUN_MS_MIN 40         /* a round sells this long at least before the kill */
#define RUN_MS_SPAN 360       /* ... plus up to this much more */
#define CONFIRM_PER_MILLE 300 /* share of acknowledged holds the buyer confirms */
#define PIPELINE 256          /* verification requests in flight */
#define TIMEOUT_MS 10000
#define EVENT "storm"
#define CAPACITY 100000000u /* never sells out: every hold sent must end held */
#define TTL_MS 86400000u    /* a day: no hold expires during the test */
#define USERS_PER_CLIENT 64
#define RESHARD_SHARDS_MAX 64 /* the admin reshards to 1..this */
#define RESHARD_PAUSE_US 3000 /* between reshards */

/* What a client knows of one request, by what it was told. */
typedef enum hstate { H_SENT, H_HELD, H_CONFIRM_SENT, H_CONFIRMED } hstate;

typedef struct rec {
    char id[SLOT_HOLD_ID_BYTES + 1];
    uint32_t key; /* request key "k<key>" of user "c<client>u<key % USERS_PER_CLIENT>" */
    uint16_t qty;
    uint8_t client, state;
} rec;

/* One client's requests across all rounds. Its thread owns it during a
 * round; the main thread between rounds. */
typedef struct client_log {
    int index;
    uint16_t port;
    rec *r;
    size_t n, cap;
    uint64_t seed;
    uint32_t confirm_q[DEPTH * 4]; /* held holds waiting to be confirmed (a ring) */
    uint32_t cq_head, cq_len;
} client_log;

static void rec_user(const rec *r, char out[32])
{
    snprintf(out, 32, "c%uu%u", (unsigned)r->client, (unsigned)(r->key % USERS_PER_CLIENT));
}

static void rec_key(const rec *r, char out[16])
{
    snprintf(out, 16, "k%u", (unsigned)r->key);
}

/* Hold ids are SLOT_HOLD_ID_BYTES long (slot/limits.h). */
static void rec_set_id(rec *r, const char *id)
{
    ASSERT_EQ(strlen(id), SLOT_HOLD_ID_BYTES);
    memcpy(r->id, id, SLOT_HOLD_ID_BYTES + 1);
}

static uint64_t rnd(uint64_t *s)
{
    uint64_t z = (*s += UINT64_C(0x9e3779b97f4a7c15));
    z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
    return z ^ (z >> 31);
}

static slot_req hold_req(const rec *r)
{
    char user[32], key[16];
    rec_user(r, user);
    rec_key(r, key);
    slot_req q;
    ASSERT_EQ(slot_req_hold(&q, EVENT, user, key, r->qty), 0);
    return q;
}

static slot_req on_req(slot_op op, const rec *r)
{
    char user[32];
    rec_user(r, user);
    slot_req q;
    ASSERT_EQ(slot_req_hold_op(&q, op, EVENT, r->id, user), 0);
    return q;
}

/* ---- the hot release: one client thread */

/* The next request: a confirm of a held hold when one waits, else a new hold. */
static slot_req next_request(client_log *L, uint32_t *ix)
{
    if (L->cq_len > 0) {
        *ix = L->confirm_q[L->cq_head];
        L->cq_head = (L->cq_head + 1) % (DEPTH * 4);
        L->cq_len--;
        L->r[*ix].state = H_CONFIRM_SENT;
        return on_req(SLOT_OP_CONFIRM, &L->r[*ix]);
    }
    if (L->n == L->cap) {
        L->cap = L->cap ? L->cap * 2 : 4096;
        L->r = realloc(L->r, L->cap * sizeof(rec));
        ASSERT(L->r != NULL);
    }
    *ix = (uint32_t)L->n;
    rec *r = &L->r[L->n++];
    memset(r, 0, sizeof *r);
    r->key = *ix;
    r->client = (uint8_t)L->index;
    r->qty = (uint16_t)(1 + rnd(&L->seed) % 3);
    r->state = H_SENT;
    return hold_req(r);
}

/* An answer from the live server: a new hold is held, a confirm confirmed. */
static void take_reply(client_log *L, uint32_t ix, const slot_reply *rep)
{
    rec *r = &L->r[ix];
    if (!rep->ok)
        T_FAIL_("client %d: %s", L->index, rep->line);
    if (r->state == H_SENT) {
        ASSERT_STR_EQ(rep->status, "held");
        ASSERT(!rep->replay);
        rec_set_id(r, rep->hold);
        r->state = H_HELD;
        if (rnd(&L->seed) % 1000 < CONFIRM_PER_MILLE && L->cq_len < DEPTH * 4) {
            L->confirm_q[(L->cq_head + L->cq_len) % (DEPTH * 4)] = ix;
            L->cq_len++;
        }
    } else {
        ASSERT_EQ(r->state, H_CONFIRM_SENT);
        ASSERT_STR_EQ(rep->status, "confirmed");
        r->state = H_CONFIRMED;
    }
}

/* Sells until the server dies under it: DEPTH requests in flight, replies in
 * request order. Requests whose answer never came stay H_SENT or
 * H_CONFIRM_SENT; the main thread settles them after the restart. */
static void *storm_client(void *p)
{
    client_log *L = p;
    slot_client *c = NULL;
    if (slot_client_connect("127.0.0.1", L->port, 2000, &c) != 0)
        return NULL;
    uint32_t inflight[DEPTH];
    unsigned head = 0, count = 0;
    for (;;) {
        while (count < DEPTH) {
            uint32_t ix;
            slot_req q = next_request(L, &ix);
            if (slot_client_send(c, &q) != 0)
                goto out;
            inflight[(head + count++) % DEPTH] = ix;
        }
        slot_reply rep;
        int rc = slot_client_recv(c, &rep, TIMEOUT_MS);
        if (rc != 0) {
            slot_reply_clear(&rep);
            if (rc == -ETIMEDOUT)
                T_FAIL_("client %d: no reply for %d ms from a live server", L->index, TIMEOUT_MS);
            goto out;
        }
        take_reply(L, inflight[head], &rep);
        slot_reply_clear(&rep);
        head = (head + 1) % DEPTH;
        count--;
    }
out:
    L->cq_len = 0; /* confirms queued but never sent: those holds stay held */
    slot_client_close(c);
    return NULL;
}

/* ---- an admin reshards the event while it sells, so kills land inside
 *      reshards too */

typedef struct resharder {
    uint16_t port;
    uint64_t seed;
    uint32_t acked, sent; /* shard counts: the last acknowledged, the last sent */
    uint64_t count;       /* reshards acknowledged, all rounds */
} resharder;

static void *reshard_loop(void *p)
{
    resharder *x = p;
    slot_client *c = NULL;
    if (slot_client_connect("127.0.0.1", x->port, 2000, &c) != 0)
        return NULL;
    for (;;) {
        slot_req q;
        slot_reply r;
        slot_req_event(&q, SLOT_OP_RESHARD, EVENT);
        q.shards = 1 + (uint32_t)(rnd(&x->seed) % RESHARD_SHARDS_MAX);
        x->sent = q.shards;
        if (slot_client_call(c, &q, &r, TIMEOUT_MS) != 0)
            break; /* the server is gone */
        if (!r.ok)
            T_FAIL_("reshard: %s", r.line);
        x->acked = q.shards;
        x->count++;
        slot_reply_clear(&r);
        usleep(RESHARD_PAUSE_US);
    }
    slot_client_close(c);
    return NULL;
}

/* ---- after a restart: what the clients were told against the store */

/* One request per record in `ix` (build), answers checked in order (take),
 * PIPELINE in flight. */
typedef struct pipe_job {
    client_log *logs;
    rec **v;
    size_t n;
    slot_req (*build)(const rec *r);
    void (*take)(rec *r, const slot_reply *rep);
} pipe_job;

static void pipe_run(slot_client *c, const pipe_job *j)
{
    size_t sent = 0, got = 0;
    while (got < j->n) {
        while (sent < j->n && sent - got < PIPELINE) {
            slot_req q = j->build(j->v[sent++]);
            ASSERT_EQ(slot_client_send(c, &q), 0);
        }
        slot_reply rep;
        ASSERT_EQ(slot_client_recv(c, &rep, TIMEOUT_MS), 0);
        j->take(j->v[got++], &rep);
        slot_reply_clear(&rep);
    }
}

static slot_req build_hold(const rec *r)
{
    return hold_req(r);
}

static slot_req build_confirm(const rec *r)
{
    return on_req(SLOT_OP_CONFIRM, r);
}

static slot_req build_get(const rec *r)
{
    return on_req(SLOT_OP_GET_HOLD, r);
}

/* A hold request whose answer was lost: sent again, it is the hold made
 * before the crash (replay) or, when that never committed, a new one. */
static void take_resent_hold(rec *r, const slot_reply *rep)
{
    if (!rep->ok || strcmp(rep->status, "held") != 0)
        T_FAIL_("hold k%u sent again after the restart: %s", (unsigned)r->key, rep->line);
    rec_set_id(r, rep->hold);
    r->state = H_HELD;
}

/* A confirm whose answer was lost: sent again it confirms (or replays). */
static void take_resent_confirm(rec *r, const slot_reply *rep)
{
    if (!rep->ok || strcmp(rep->status, "confirmed") != 0)
        T_FAIL_("confirm of %s sent again after the restart: %s", r->id, rep->line);
    r->state = H_CONFIRMED;
}

static void take_get(rec *r, const slot_reply *rep)
{
    const char *want = r->state == H_CONFIRMED ? "confirmed" : "held";
    if (!rep->ok || strcmp(rep->status, want) != 0)
        T_FAIL_("hold %s was acknowledged %s, after the restart: %s", r->id, want, rep->line);
    ASSERT_EQ(rep->qty, r->qty);
}

/* The records of every client in one of the given states. Heap; caller frees. */
static rec **select_recs(client_log *logs, int states, size_t *n)
{
    size_t total = 0;
    for (int i = 0; i < CLIENTS; i++)
        total += logs[i].n;
    rec **v = malloc((total + 1) * sizeof *v);
    ASSERT(v != NULL);
    *n = 0;
    for (int i = 0; i < CLIENTS; i++)
        for (size_t k = 0; k < logs[i].n; k++)
            if (states & (1 << logs[i].r[k].state))
                v[(*n)++] = &logs[i].r[k];
    return v;
}

static void pipe_states(slot_client *c, client_log *logs, int states, slot_req (*build)(const rec *),
                        void (*take)(rec *, const slot_reply *))
{
    pipe_job j = {.logs = logs, .build = build, .take = take};
    j.v = select_recs(logs, states, &j.n);
    pipe_run(c, &j);
    free(j.v);
}

/* check is clean, and the event's counters are the clients' holds exactly:
 * every hold in the store was made by a request a client sent, and every such
 * request has now been answered. */
static void expect_counters(slot_client *c, client_log *logs, resharder *x)
{
    slot_req q;
    slot_reply r;
    slot_req_event(&q, SLOT_OP_CHECK, NULL);
    ASSERT_EQ(slot_client_call(c, &q, &r, TIMEOUT_MS), 0);
    if (!r.ok || r.nviolations != 0)
        T_FAIL_("check after the restart: %s", r.line);
    slot_reply_clear(&r);
    uint64_t held = 0, confirmed = 0;
    for (int i = 0; i < CLIENTS; i++)
        for (size_t k = 0; k < logs[i].n; k++)
            *(logs[i].r[k].state == H_CONFIRMED ? &confirmed : &held) += logs[i].r[k].qty;
    slot_req_event(&q, SLOT_OP_EVENT, EVENT);
    ASSERT_EQ(slot_client_call(c, &q, &r, TIMEOUT_MS), 0);
    ASSERT(r.ok);
    ASSERT_EQ(r.capacity, CAPACITY);
    ASSERT_EQ(r.held, held);
    ASSERT_EQ(r.confirmed, confirmed);
    ASSERT_EQ(r.available + r.held + r.confirmed, r.capacity);
    if (r.shards != x->acked && r.shards != x->sent)
        T_FAIL_("%llu shards after the restart; the admin was told %u and had sent %u", (unsigned long long)r.shards,
                (unsigned)x->acked, (unsigned)x->sent);
    x->acked = x->sent = (uint32_t)r.shards; /* what the next round starts from */
    slot_reply_clear(&r);
}

/* LMDB keeps a reader slot per read transaction, with the owner's pid; a
 * killed slotd leaves its slots behind and the next start must clear them
 * (mdb_reader_check), or the table fills up after enough crashes. */
static int reader_line(const char *msg, void *ctx)
{
    int *dead = ctx;
    int pid = 0;
    if (sscanf(msg, " %d", &pid) == 1 && pid > 0 && kill(pid, 0) != 0 && errno == ESRCH)
        (*dead)++;
    return 0;
}

static void expect_no_stale_readers(const char *dir)
{
    MDB_env *env;
    ASSERT_EQ(mdb_env_create(&env), 0);
    ASSERT_EQ(mdb_env_set_maxdbs(env, 8), 0);
    ASSERT_EQ(mdb_env_open(env, dir, MDB_RDONLY | MDB_NOTLS, 0600), 0);
    int dead = 0;
    ASSERT(mdb_reader_list(env, reader_line, &dead) >= 0);
    mdb_env_close(env);
    if (dead != 0)
        T_FAIL_("%d LMDB reader slots of killed processes are still there after the restart", dead);
}

/* After a restart: settle the requests whose answers were lost, then every
 * acknowledged hold, the counters and the reader table. */
static void verify_after_restart(const slot_test_server *srv, client_log *logs, resharder *x)
{
    slot_client *c = NULL;
    ASSERT_EQ(slot_client_connect("127.0.0.1", srv->port, 5000, &c), 0);
    pipe_states(c, logs, 1 << H_SENT, build_hold, take_resent_hold);
    pipe_states(c, logs, 1 << H_CONFIRM_SENT, build_confirm, take_resent_confirm);
    pipe_states(c, logs, (1 << H_HELD) | (1 << H_CONFIRMED), build_get, take_get);
    expect_counters(c, logs, x);
    slot_client_close(c);
    expect_no_stale_readers(srv->dir);
}

static uint64_t now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* One round: the clients sell until slotd is killed at a random moment. */
static void storm_round(slot_test_server *srv, client_log *logs, resharder *x, uint64_t *seed)
{
    pthread_t th[CLIENTS + 1];
    for (int i = 0; i < CLIENTS; i++) {
        logs[i].port = srv->port;
        ASSERT_EQ(pthread_create(&th[i], NULL, storm_client, &logs[i]), 0);
    }
    x->port = srv->port;
    ASSERT_EQ(pthread_create(&th[CLIENTS], NULL, reshard_loop, x), 0);
    usleep((useconds_t)(RUN_MS_MIN + rnd(seed) % RUN_MS_SPAN) * 1000u);
    slot_test_server_kill9(srv);
    for (int i = 0; i <= CLIENTS; i++)
        pthread_join(th[i], NULL);
}

TEST_IMPL(crash_storm)
{
    uint64_t seed = (uint64_t)time(NULL) ^ ((uint64_t)getpid() << 20);
    printf("crash storm: seed %llu\n", (unsigned long long)seed);
    slot_test_server srv;
    memset(&srv, 0, sizeof srv);
    slot_test_server_start(&srv, NULL, NULL);
    slot_client *c = NULL;
    ASSERT_EQ(slot_client_connect("127.0.0.1", srv.port, 5000, &c), 0);
    slot_req q;
    slot_reply r;
    slot_req_event(&q, SLOT_OP_CREATE_EVENT, EVENT);
    q.capacity = CAPACITY;
    q.hold_ttl_ms = TTL_MS;
    q.has |= SLOT_HAS_HOLD_TTL;
    ASSERT_EQ(slot_client_call(c, &q, &r, TIMEOUT_MS), 0);
    ASSERT(r.ok);
    slot_reply_clear(&r);
    slot_client_close(c);

    client_log logs[CLIENTS];
    memset(logs, 0, sizeof logs);
    for (int i = 0; i < CLIENTS; i++) {
        logs[i].index = i;
        logs[i].seed = seed + (uint64_t)i;
    }
    resharder x = {.seed = seed ^ 0x5eed, .acked = SLOT_SHARDS_DEFAULT, .sent = SLOT_SHARDS_DEFAULT};
    uint64_t restart_us[CRASHES];
    for (int k = 0; k < CRASHES; k++) {
        storm_round(&srv, logs, &x, &seed);
        uint64_t t0 = now_us();
        slot_test_server_start(&srv, srv.dir, NULL); /* the same folder */
        restart_us[k] = now_us() - t0;
        verify_after_restart(&srv, logs, &x);
    }
    size_t total = 0, held = 0, confirmed = 0;
    for (int i = 0; i < CLIENTS; i++) {
        total += logs[i].n;
        for (size_t k = 0; k < logs[i].n; k++)
            *(logs[i].r[k].state == H_CONFIRMED ? &confirmed : &held) += 1;
        free(logs[i].r);
    }
    qsort(restart_us, CRASHES, sizeof restart_us[0], cmp_u64);
    printf("crash storm: %d kill -9 survived, %zu holds (%zu held, %zu confirmed) all found after each restart, "
           "%llu reshards meanwhile\n"
           "crash storm: restart to \"listening on\": min %.1f ms, median %.1f ms, max %.1f ms\n",
           CRASHES, total, held, confirmed, (unsigned long long)x.count, restart_us[0] / 1000.0,
           restart_us[CRASHES / 2] / 1000.0, restart_us[CRASHES - 1] / 1000.0);
    fflush(stdout);
    ASSERT_GT(confirmed, 0);
    ASSERT_GT(held, 0);
    ASSERT_GT(x.count, 0);
    ASSERT_EQ(slot_test_server_stop(&srv), 0);
    slot_test_server_free(&srv);
}
