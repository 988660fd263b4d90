/*
 * tests/powercut_int.h — what the files of the power-cut test program share
 * (tests/test_powercut.c's head comment says what the test does and lists
 * the files): the bounds, the run's randomness and planted fault, the
 * rebuild of a folder a disk that forgets could hold after the cut
 * (tests/powercut_rebuild.c), the clients that record what they were told
 * and the check of it on a restarted node (tests/powercut_clients.c), and
 * the replica set's rounds (tests/powercut_set.c).
 *
 * Each case runs in its own forked child (harness.c), so the state is
 * global; a broken step aborts the case.
 */
#ifndef SLOT_TEST_POWERCUT_INT_H
#define SLOT_TEST_POWERCUT_INT_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define CLIENTS 4
#define RUN_MS_MIN 20
#define RUN_MS_SPAN 280
#define PATHB 600

/* ---- randomness and the planted fault (powercut_rebuild.c) */

/* rnd — the run's next random number (one seed for the run, seed_once). */
uint64_t rnd(void);
/* seed_once — seeds rnd from SLOT_POWERCUT_SEED, else the clock and the
 * PID, and prints the seed; skips the case in a sanitizer build (the
 * preloaded journal cannot see writes under AddressSanitizer). */
void seed_once(void);
/* sh — runs the shell command fmt with a and b put in (two %s); the
 * command must fit 2 * PATHB + 64 bytes and exit 0, else the case fails. */
void sh(const char *fmt, const char *a, const char *b);

/* true: a planted case, whose run must show a loss (its rebuilds forget
 * more, and preload_env arms plant). false until a case sets it. */
extern bool planted;
/* The failpoint a planted case arms (SLOT_FAILPOINTS): "no_flush" unless a
 * case sets another; a string the case owns (a literal). */
extern const char *plant;

/* ---- the rebuild: a folder a disk could hold after the cut (powercut_rebuild.c) */

typedef struct jent jent;         /* one journal entry */
typedef struct obj obj;           /* one file (or folder) as the disk holds it */
typedef struct name_ent name_ent; /* one name and the obj it names */

/* A replay of one journal; a caller reads only the piece counts (zero it,
 * {0}, and cut_folder adds to them; it owns nothing else a caller sees). */
typedef struct replay {
    jent *e;
    size_t n;
    uint8_t *buf;
    obj *objs;
    size_t nobjs;
    name_ent *names;
    size_t nnames;
    uint64_t lost_pieces, kept_pieces, durable_pieces;
} replay;

/* preload_env — on: sets the environment a slotd started next runs under
 * the disk that forgets with (LD_PRELOAD of $POWERCUT_PRELOAD, which must be
 * set, journaling folder dir into the file journal, made empty here; and
 * SLOT_FAILPOINTS=plant when planted); off (dir and journal NULL): unsets it
 * for what starts after. The strings are copied into the environment. */
void preload_env(bool on, const char *dir, const char *journal);
/* cut_folder — the rebuild of one folder dir from base (its copy when the
 * round began) and journal (what slotd did to it since): a replay keeping
 * every write must equal what slotd left in dir, then a chosen subset
 * replaces dir (dir.all and dir.cut are made on the way and removed or
 * renamed). st: NULL, or counts of the subset's pieces to add to (flushed,
 * kept, lost). Returns NULL, or why the journal cannot be judged (a static
 * string; dir is then as slotd left it). */
const char *cut_folder(const char *dir, const char *base, const char *journal, replay *st);

/* ---- what the clients were told, and its check (powercut_clients.c) */

typedef struct hrec hrec; /* one hold and what its client was told of it */

/* One client thread: its holds (r, n of cap; it owns them) and its node. */
typedef struct buyer {
    pthread_t t;
    int idx, node;
    hrec *r;
    size_t n, cap;
    uint64_t seq, seed;
    uint64_t told; /* answers that changed a hold, this round */
} buyer;

/* The clients; a case may point them at another node (.node) between rounds. */
extern buyer clients[CLIENTS];
/* The round now running (1 the first); the runs set it, the clients and
 * verify read it (request keys, the feed's consumer, this round's holds). */
extern int round_no;

/* clients_reset — frees every client's holds and starts them afresh on node
 * at (index into nodes[]), each seeded by rnd; forgets the feed's head. */
void clients_reset(int at);
/* load_round — starts the CLIENTS threads (each its own connection to its
 * node) and sleeps run_ms while they hold, confirm and release. */
void load_round(int run_ms);
/* load_end — stops the client threads and joins them. */
void load_end(void);
/* told_total — the answers that changed a hold since the last call, over
 * every client (each client's count is zeroed). */
uint64_t told_total(void);
/* verify — on node target (index into nodes[]): every hold of this round
 * (all: of every round; else a sample of the older ones) is as its client
 * was told (one sent but not answered may be either outcome, and is then
 * known), check is clean, and the feed has no gap from the last verify's
 * head to the head now (which becomes the head). quiet: at most 3 losses
 * printed and no summary line. Returns the failures found (0: none). */
int verify(int target, bool all, bool quiet);

/* ---- the replica set (powercut_set.c) */

/* set_run — cuts rounds of a set of three on a private etcd (skips the case
 * without /usr/bin/etcd), every member under the library and cut at once,
 * each restarted on its rebuilt folder and verified; a planted run stops at
 * the first round with a failure. Keeps the folder of a failed run with
 * SLOT_POWERCUT_KEEP=1, else removes it. Returns the failures found. */
int set_run(int cuts);

#endif
