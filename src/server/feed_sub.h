/*
 * feed_sub.h — feed consumers on connections (docs/protocol.md, "Feed"):
 * which connection is subscribed as which consumer, the entries pushed to
 * it as commits land, bounded by its window and by the connection's output
 * limit (--max-output), and the checks only the connection can make
 * (not_subscribed, an ack past what was delivered, other ops while
 * subscribed). At the level of conn.c: conn.c calls in, and the commit
 * hand-back reaches it only through s->conn_up.feed. Loop thread only.
 */
#ifndef SLOT_FEED_SUB_H
#define SLOT_FEED_SUB_H

#include <stdbool.h>

#include "server_int.h"

/* One subscription: c is subscribed as consumer; entries from next_seq on are
 * pushed while next_seq <= base + window. */
typedef struct slot__feed_sub {
    conn *c;
    struct slot__feed_sub *prev, *next; /* s->subs */
    uint8_t consumer_len;
    char consumer[SLOT_CONSUMER_BYTES_MAX + 1];
    uint64_t next_seq; /* the next entry to push */
    uint64_t base;     /* the window counts from here: the later of the last ack and from - 1 */
    uint32_t window;
} slot__feed_sub;

/*
 * slot__feed_admit — the feed's word on parsed, authorized request e of c,
 * before it is queued or run: on a subscribed connection only ack,
 * unsubscribe and hello pass (others: invalid_argument); an ack must come
 * from the connection subscribed as its consumer (not_subscribed) and name
 * a seq already pushed (invalid_argument); unsubscribe is answered when it
 * reaches the head (slot__feed_answered). Returns false when e was answered
 * here (e is DONE).
 */
bool slot__feed_admit(server *s, conn *c, entry *e);

/*
 * slot__feed_answered — e, at the head of c, is about to be encoded: a
 * subscribe that succeeded starts the subscription (ending the consumer's
 * other one: that connection is closed), unsubscribe ends it (or is
 * not_subscribed), an ack moves the window, a feed_forget ends the forgotten
 * consumer's subscription.
 */
void slot__feed_answered(conn *c, entry *e);

/* slot__feed_fill — append to c's output the entries its window and output
 * limit allow (after c's answers, before the write). No-op unless subscribed. */
void slot__feed_fill(conn *c);

/* slot__feed_conn_gone — c is closing: its subscription, if any, ends. */
void slot__feed_conn_gone(conn *c);

/* slot__feed_pump — after a batch: push new entries to every subscriber. */
void slot__feed_pump(server *s);

/*
 * slot__feed_end_all — every subscription ends and its connection is closed
 * (a replica-set primary that steps down: its feed may hold entries that the
 * new primary never had, and the consumers must resubscribe to the new
 * primary, docs/design.md, "Replica sets"). why: logged once with the count.
 * Returns how many connections were closed.
 */
size_t slot__feed_end_all(server *s, const char *why);

/* slot__feed_free — release the feed's read transaction (before the store closes). */
void slot__feed_free(server *s);

#endif
