/* options_text.c — the paragraph --help prints under each scenario's usage line (options.h):
 * what the scenario does and what its verification checks. Kept apart from the option table
 * (options.c) for length only. */
#include "config.h"
#include "options.h"

const char *const bench_scenario_text[] = {
    [BENCH_HOT_RELEASE] =
        "K connections each keep D holds in flight on one new event until it is sold out and --tail\n"
        "more sold_out answers came back. Verified: held units = capacity (less a remainder below the\n"
        "smallest --qty), check clean, the event's counters, every hold by get_hold. A run that\n"
        "--duration or --requests stops before the sell-out is verified the same way for what it\n"
        "did (nothing oversold), without the sell-out. With --allocation N, N units go to the block\n"
        "\"presale\" first; the --presale-share of the connections hold from it, the rest hold public\n"
        "units, until both are sold out: public held = capacity - N and block held = N (each less a\n"
        "remainder below the smallest --qty), and the event shows the block's held and remaining.\n"
        "With --seated FILE the event is seated (its seat map from FILE) and buyers ask for --qty seats\n"
        "together (--adjacent) or by id (--named); verified besides: every hold's seats by get_hold,\n"
        "no seat in two holds, seat_map agreeing, every sold_out when no run of its qty was free; and\n"
        "reported: single free seats left, and (--adjacent) those an offline first-fit model without\n"
        "the orphan rule leaves for the same acknowledged requests (the server cannot turn it off).\n",
    [BENCH_OPEN_LOOP] =
        "Holds are sent on a fixed schedule of --rate per second, spread over the connections, whatever\n"
        "the replies do; latency is measured from each request's intended send time, so a stalled\n"
        "server shows as latency and not as a lower rate (no coordinated omission). A request due on a\n"
        "connection that already has --pipeline in flight waits in the bench and its wait counts.\n"
        "The schedule is served every 1 ms.\n",
    [BENCH_CHURN] = "Sessions (D per connection) hold, think, then confirm, release or abandon the hold (left to\n"
                    "expire after --hold-ttl-ms), and hold again: capacity recycles. Some buyers first extend the\n"
                    "hold (--extend), some confirm fewer units than held (--partial), some pay after the hold\n"
                    "expired and confirm with reacquire (--late). Runs for --duration; then verification waits\n"
                    "for the abandoned holds to expire and checks every hold by get_hold: status, qty, returned\n"
                    "units, extensions, expires_at and the replaces / replaced_by links.\n",
    [BENCH_SOLD_OUT] =
        "The event is first sold out (not measured; --duration and --requests bound only what follows);\n"
        "then K x D holds in flight measure how fast sold_out answers come. Verified: no hold granted, counters "
        "unchanged, check clean.\n",
    [BENCH_MULTI_EVENT] = "--events events of --capacity units each; every hold picks an event with Zipf(--zipf)\n"
                          "popularity (event 0 the most popular). Runs until all are sold out and --tail sold_out\n"
                          "answers came back (or --duration or --requests stops it); each event is verified as in\n"
                          "hot-release.\n",
    [BENCH_WAITLIST] =
        "An event of --capacity units with a waitlist of --waiters entries is sold out first (holds of one\n"
        "unit, not measured); then the K waiters join, in order, on one connection (the join order is\n"
        "the order of the answers, each position checked against it). Measured: a churn of releases and\n"
        "expiries (--release, --abandon and --confirm of the prefill's holds, after a think time) while\n"
        "each waiter polls its entry (--poll-ms); a waiter told of its offered hold releases, confirms or\n"
        "abandons it in turn, so units go round until every waiter was offered one. Verified: offers in\n"
        "join order (the waiters offered a hold are a prefix of the join order, their holds made in that\n"
        "order), check clean, the event's counters and list, every hold by get_hold. Reported: how long\n"
        "the first, median and last waiter waited (from the join's answer to the offer's commit), offers/s.\n",
    [BENCH_PING] = "K connections each keep D requests in flight, each the cheapest round trip of the target:\n"
                   "PING (redis://), or a hello (slotd has no ping op; a hello is answered on its loop thread\n"
                   "without the store), for --duration or --requests. The ceiling a hold rate is set against,\n"
                   "from the same client. Verified: every request answered, no error.\n",
    [BENCH_WAITING_ROOM] =
        "An event of --crowd units with a waiting room (docs/protocol.md, \"Admission\"): --crowd users join\n"
        "before the sale opens (K connections, D joins in flight each: joins/s); from the opening the\n"
        "server admits --admit-per-s; each buyer polls its admission (the next 0.25 s of admissions in\n"
        "admission order, each at most every 50 ms; a lottery's positions are learnt by one sweep after\n"
        "the draw), holds one unit with its grant when admitted, then confirms (--confirm-share) or\n"
        "releases. Positions count from views of the event taken just before and after them on the same\n"
        "connection (exact when both show the same admitted count). Reported: joins/s, admissions/s, the\n"
        "wait of the first, median and last admitted (from the opening; the client's view and the\n"
        "server's admitted_at). Verified: queue, admission order = join order (positions and admitted_at);\n"
        "lottery, every entry admitted once and a chi-square test (10 x 10 deciles of join rank against\n"
        "admission rank) not rejected at p = 0.001; holds without a valid grant are admission_required;\n"
        "room.open_grants <= available in every view; the event's counters; check clean.\n",
};
