/* test_handover.c — the hand-over rule of a placement's feed (tools/slotctl_handover.c;
 * docs/design.md, "The feed of a placement") on scripted entries: each case is what two
 * or three sets' feeds could hold, read in an order a consumer could read them. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../tools/slotctl_handover.h"
#include "harness.h"

TEST_DECLARE(handover_arrival_waits_for_the_source_moved)
TEST_DECLARE(handover_arrival_taken_when_the_source_passed)
TEST_DECLARE(handover_undone_move_reopens_the_source)
TEST_DECLARE(handover_there_and_back_drops_the_older_epoch)
TEST_DECLARE(handover_arrival_at_an_old_gen_is_dropped)
TEST_DECLARE(handover_state_kept_across_runs)
TEST_DECLARE(handover_table_full_is_said)

TEST_LIST_START
TEST_ENTRY(handover_arrival_waits_for_the_source_moved)
TEST_ENTRY(handover_arrival_taken_when_the_source_passed)
TEST_ENTRY(handover_undone_move_reopens_the_source)
TEST_ENTRY(handover_there_and_back_drops_the_older_epoch)
TEST_ENTRY(handover_arrival_at_an_old_gen_is_dropped)
TEST_ENTRY(handover_state_kept_across_runs)
TEST_ENTRY(handover_table_full_is_said)
TEST_LIST_END

static ctl_handover *fresh(void)
{
    ctl_handover *h = malloc(sizeof *h);
    ASSERT(h != NULL);
    ASSERT_EQ(ctl_handover_init(h), 0);
    return h;
}

static void gone(ctl_handover *h)
{
    ctl_handover_free(h);
    free(h);
}

static ctl_ho_verdict plain(ctl_handover *h, const char *set, const char *type, const char *ev)
{
    return ctl_handover_judge(h, set, type, ev, "", 0, false);
}

static ctl_ho_verdict moved(ctl_handover *h, const char *set, const char *ev, const char *to, uint64_t gen)
{
    return ctl_handover_judge(h, set, "event.moved", ev, to, gen, false);
}

static ctl_ho_verdict arrived(ctl_handover *h, const char *set, const char *ev, const char *from, uint64_t gen,
                              bool passed)
{
    return ctl_handover_judge(h, set, "event.arrived", ev, from, gen, passed);
}

/* s2's event.arrived read before s1's event.moved waits (and changes nothing), then is taken. */
TEST_IMPL(handover_arrival_waits_for_the_source_moved)
{
    ctl_handover *h = fresh();
    ASSERT_EQ(plain(h, "s1", "event.created", "hot"), CTL_HO_TAKE);
    ASSERT_EQ(plain(h, "s1", "hold.held", "hot"), CTL_HO_TAKE);
    ASSERT_EQ(arrived(h, "s2", "hot", "s1", 2, false), CTL_HO_WAIT);
    ASSERT_EQ(arrived(h, "s2", "hot", "s1", 2, false), CTL_HO_WAIT);
    ASSERT_EQ(plain(h, "s1", "hold.confirmed", "hot"), CTL_HO_TAKE); /* s1 goes on meanwhile */
    ASSERT_EQ(moved(h, "s1", "hot", "s2", 2), CTL_HO_TAKE);
    ASSERT_EQ(arrived(h, "s2", "hot", "s1", 2, false), CTL_HO_TAKE);
    ASSERT_EQ(plain(h, "s2", "hold.held", "hot"), CTL_HO_TAKE);
    ctl_ho_event *e = ctl_handover_get(h, "hot");
    ASSERT_STR_EQ(e->owner, "s2");
    ASSERT_U64_EQ(e->gen, 2);
    ASSERT(e->open);
    /* an event of the other set is not held up by any of it */
    ASSERT_EQ(plain(h, "s2", "event.created", "b"), CTL_HO_TAKE);
    gone(h);
}

/* A run that starts after the source's event.moved (an earlier run took it): the arrival is
 * taken once the caller says the source's feed passed its probed head. */
TEST_IMPL(handover_arrival_taken_when_the_source_passed)
{
    ctl_handover *h = fresh();
    ASSERT_EQ(arrived(h, "s2", "hot", "s1", 2, false), CTL_HO_WAIT);
    ASSERT_EQ(plain(h, "s1", "hold.held", "a"), CTL_HO_TAKE);
    ASSERT_EQ(arrived(h, "s2", "hot", "s1", 2, true), CTL_HO_TAKE);
    ASSERT_EQ(plain(h, "s2", "hold.released", "hot"), CTL_HO_TAKE);
    ASSERT_STR_EQ(ctl_handover_get(h, "hot")->owner, "s2");
    gone(h);
}

/* A move undone after the relinquish: s1's event.moved, then more of s1's entries (the
 * reclaim writes none), no arrival on s2; a later move goes through. */
TEST_IMPL(handover_undone_move_reopens_the_source)
{
    ctl_handover *h = fresh();
    ASSERT_EQ(plain(h, "s1", "event.created", "hot"), CTL_HO_TAKE);
    ASSERT_EQ(moved(h, "s1", "hot", "s2", 2), CTL_HO_TAKE);
    ASSERT_EQ(plain(h, "s1", "hold.held", "hot"), CTL_HO_TAKE);
    ctl_ho_event *e = ctl_handover_get(h, "hot");
    ASSERT(e->open);
    ASSERT_STR_EQ(e->owner, "s1");
    ASSERT_U64_EQ(e->gen, 1);
    ASSERT_EQ(arrived(h, "s2", "hot", "s1", 2, false), CTL_HO_WAIT); /* the second try's */
    ASSERT_EQ(moved(h, "s1", "hot", "s2", 2), CTL_HO_TAKE);
    ASSERT_EQ(arrived(h, "s2", "hot", "s1", 2, false), CTL_HO_TAKE);
    gone(h);
}

/* s1 -> s2 (gen 2) -> s1 (gen 3): read with s1's whole feed first, s1's arrival at gen 3
 * waits for s2's event.moved; entries of an epoch already continued are dropped. */
TEST_IMPL(handover_there_and_back_drops_the_older_epoch)
{
    ctl_handover *h = fresh();
    ASSERT_EQ(plain(h, "s1", "event.created", "hot"), CTL_HO_TAKE);
    ASSERT_EQ(moved(h, "s1", "hot", "s2", 2), CTL_HO_TAKE);
    ASSERT_EQ(arrived(h, "s1", "hot", "s2", 3, false), CTL_HO_WAIT);
    ASSERT_EQ(arrived(h, "s2", "hot", "s1", 2, false), CTL_HO_TAKE);
    ASSERT_EQ(plain(h, "s2", "hold.held", "hot"), CTL_HO_TAKE);
    ASSERT_EQ(arrived(h, "s1", "hot", "s2", 3, false), CTL_HO_WAIT);
    ASSERT_EQ(moved(h, "s2", "hot", "s1", 3), CTL_HO_TAKE);
    ASSERT_EQ(arrived(h, "s1", "hot", "s2", 3, false), CTL_HO_TAKE);
    ASSERT_EQ(plain(h, "s1", "hold.held", "hot"), CTL_HO_TAKE);
    /* s2's entries of its gen-2 epoch pushed again after a resubscribe from an old position */
    ASSERT_EQ(plain(h, "s2", "hold.held", "hot"), CTL_HO_DROP);
    ASSERT_EQ(moved(h, "s2", "hot", "s1", 3), CTL_HO_DROP);
    ASSERT_STR_EQ(ctl_handover_get(h, "hot")->owner, "s1");
    ASSERT_U64_EQ(ctl_handover_get(h, "hot")->gen, 3);
    gone(h);
}

/* An event.arrived at or below the gen taken is an arrival seen already. */
TEST_IMPL(handover_arrival_at_an_old_gen_is_dropped)
{
    ctl_handover *h = fresh();
    ASSERT_EQ(arrived(h, "s2", "hot", "s1", 2, true), CTL_HO_TAKE);
    ASSERT_EQ(arrived(h, "s2", "hot", "s1", 2, true), CTL_HO_DROP);
    ASSERT_EQ(arrived(h, "s3", "hot", "s1", 2, true), CTL_HO_DROP);
    ASSERT_EQ(arrived(h, "s3", "hot", "s2", 1, true), CTL_HO_DROP);
    ASSERT_STR_EQ(ctl_handover_get(h, "hot")->owner, "s2");
    gone(h);
}

/* What --state keeps (owner, gen, open, to, to_gen) is all the rule needs: a second
 * table filled from the first judges the rest of the feeds the same. */
TEST_IMPL(handover_state_kept_across_runs)
{
    ctl_handover *h = fresh();
    ASSERT_EQ(plain(h, "s1", "event.created", "hot"), CTL_HO_TAKE);
    ASSERT_EQ(moved(h, "s1", "hot", "s2", 2), CTL_HO_TAKE);
    ctl_handover *k = fresh();
    ctl_ho_event *a = ctl_handover_get(h, "hot"), *b = ctl_handover_get(k, "hot");
    memcpy(b->owner, a->owner, sizeof b->owner);
    memcpy(b->to, a->to, sizeof b->to);
    b->gen = a->gen;
    b->to_gen = a->to_gen;
    b->open = a->open;
    ASSERT_EQ(arrived(k, "s2", "hot", "s1", 2, false), CTL_HO_TAKE); /* no wait, no probe */
    ASSERT_EQ(plain(k, "s1", "hold.held", "hot"), CTL_HO_DROP);
    gone(h);
    gone(k);
}

TEST_IMPL(handover_table_full_is_said)
{
    ctl_handover *h = fresh();
    char name[32];
    for (int i = 0; i < SLOT_CTL_FEED_EVENTS_MAX; i++) {
        snprintf(name, sizeof name, "e%d", i);
        ASSERT_EQ(plain(h, "s1", "event.created", name), CTL_HO_TAKE);
    }
    ASSERT_EQ(plain(h, "s1", "event.created", "one-more"), CTL_HO_FULL);
    ASSERT_EQ(plain(h, "s1", "hold.held", "e7"), CTL_HO_TAKE); /* the events kept go on */
    char big[SLOT_EVENT_BYTES_MAX + 2];
    memset(big, 'x', sizeof big - 1);
    big[sizeof big - 1] = 0;
    ASSERT(ctl_handover_get(h, big) == NULL);
    gone(h);
}
