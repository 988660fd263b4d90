/*
 * bench/wire.h — what goes over the wire, whichever the target: a request
 * in flight (a ticket), an answer (a result), and the names the bench gives
 * users and request keys. Single-threaded: the loop's thread.
 */
#ifndef SLOT_BENCH_WIRE_H
#define SLOT_BENCH_WIRE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "limits.h"
#include "slot/client.h"
#include "slot/error.h"
#include "slot/limits.h"
#include "slot/store.h"

/* BENCH_OP_EXTEND and the waitlist ops are slotd's alone (v1.1); the redis target never sends them
 * (options.c refuses --extend and the waitlist scenario there). WAIT_JOIN, WAIT_STATUS and WAIT_LEAVE are
 * waitlist_join, waitlist and waitlist_leave of (user, request key) = ("u<user>", "r<hex key>").
 * BENCH_OP_PING (the ping scenario): Redis PING, or slotd's cheapest round trip, a hello (slotd has no
 * ping op). */
typedef enum bench_op {
    BENCH_OP_HOLD,
    BENCH_OP_CONFIRM,
    BENCH_OP_RELEASE,
    BENCH_OP_GET_HOLD,
    BENCH_OP_EXTEND,
    BENCH_OP_WAIT_JOIN,
    BENCH_OP_WAIT_STATUS,
    BENCH_OP_WAIT_LEAVE,
    BENCH_OP_PING,
} bench_op;

/* bench_op_is_read — get_hold, the waitlist op and ping change nothing (no acknowledged write). */
static inline bool bench_op_is_read(uint8_t op)
{
    return op == BENCH_OP_GET_HOLD || op == BENCH_OP_WAIT_STATUS || op == BENCH_OP_PING;
}

/* bench_ticket.flags of a confirm (v1.1, docs/protocol.md "Partial confirm", "Reacquire"). */
enum {
    BENCH_TICKET_PARTIAL = 1u << 0,   /* send qty: confirm only the ticket's qty units (below the hold's) */
    BENCH_TICKET_REACQUIRE = 1u << 1, /* send reacquire:true: a late payment */
};
/* bench_ticket.flags of a hold on a seated event (hot-release --seated; docs/protocol.md, "Seated events"). */
enum {
    BENCH_TICKET_ADJACENT = 1u << 2, /* send adjacent:true with qty: the server picks qty seats together */
    BENCH_TICKET_NAMED = 1u << 3,    /* send "seats": the qty seats from `seat` on, in one row of the map */
};

/* One request in flight (or, open loop, due but not sent yet). */
typedef struct bench_ticket {
    uint64_t t_ns;    /* when it was due: the send time, or (open loop) the intended send time */
    uint64_t user;    /* user number: the name is "u<user>" */
    uint64_t key;     /* hold, waitlist ops: request key number ("r<key>"); other ops: ledger index */
    uint32_t session; /* churn, waitlist: the session it belongs to; else UINT32_MAX */
    uint32_t seat;    /* a named hold (BENCH_TICKET_NAMED): its first seat, an index of the run's seat map */
    uint16_t event;   /* index into run->events */
    uint16_t qty;
    uint8_t op;    /* bench_op */
    uint8_t tries; /* sends after the first (following the primary; capped at 255): a replay is then expected */
    uint8_t flags; /* confirm, seated hold: BENCH_TICKET_* */
    uint8_t
        cart; /* hold: 0 or 1 a plain hold; 2..SLOT_CART_ITEMS_MAX a hold_many of events event..event+cart-1, qty each */
} bench_ticket;

/* One hold of a hold_many answer ("holds", in request order). */
typedef struct bench_cart_item {
    char hold[SLOT_HOLD_ARG_BYTES_MAX + 1];
    uint32_t hold_len, qty;
    uint64_t expires_at_ms;
    bool held; /* its status is "held" */
} bench_cart_item;

/* An answer, whichever target gave it. */
typedef struct bench_result {
    bool ok;
    slot_err err; /* !ok: the code (SLOT_E__COUNT: a code this build does not know) */
    bool sold_out, replay, released;
    bool has_status;
    slot_hold_status status; /* held/confirmed/...: hold, confirm, release, get_hold, hold_not_active */
    uint32_t qty;
    uint64_t available, expires_at_ms;
    bool has_remaining; /* a block hold's sold_out: "remaining", the block's unused units ("Allocations") */
    uint64_t remaining;
    uint64_t returned,
        extensions; /* confirm, get_hold: units given back by a partial confirm; extend, get_hold: extensions */
    /* waitlist_join, waitlist, waitlist_leave (docs/protocol.md, "Waitlist"): the entry's state
     * (has_wait: the answer named one: "waiting", "offered", "left", "none"; an offered entry's hold
     * status is in has_status/status, from "hold_status"), its position, waitlist_full (a join
     * answered sold_out), left (a leave), offered (a join's replay of an offered hold). */
    bool has_wait, waitlist_full, left, offered;
    slot_wait_state wait;
    uint64_t position;
    /* seated events (docs/protocol.md, "Seated events"): a hold answered "taken" (seats lists the
     * taken ones); a sold_out's max_adjacent; the answer's "seats" (held, get_hold) or "taken", as
     * nseats ids in seat_text at seat_off[i] (NUL-ended; too many: seats_cut) */
    bool taken, has_max_adjacent, seats_cut;
    uint64_t max_adjacent;
    uint32_t nseats;
    char hold[SLOT_HOLD_ARG_BYTES_MAX + 1];
    uint32_t hold_len;
    char replaces[SLOT_HOLD_ARG_BYTES_MAX + 1];    /* a reacquire's confirm, get_hold: the hold it replaces ("" none) */
    char replaced_by[SLOT_HOLD_ARG_BYTES_MAX + 1]; /* get_hold: the hold a reacquire made in its place ("" none) */
    char text[160];                                /* !ok: the server's message (for reports) */
    char primary[SLOT_CLIENT_ADDR_BYTES_MAX + 1];  /* not_primary: the primary's "H:P" ("" unknown) */
    uint16_t seat_off[BENCH_SEAT_QTY_MAX];
    char seat_text[BENCH_SEAT_QTY_MAX * (SLOT_SEAT_ID_BYTES_MAX + 1)];
    uint32_t ncart;                                /* hold_many held: entries of cart (0 otherwise) */
    bench_cart_item cart[SLOT_CART_ITEMS_MAX];
} bench_result;

/* bench_result_clear — r as an answer that says nothing yet (every flag false, empty strings). */
void bench_result_clear(bench_result *r);

/*
 * bench_result_status — a status word of an answer (n bytes, not
 * NUL-terminated) into r: "sold_out" sets r->sold_out, "taken" (a seated
 * event's named hold) r->taken, a hold status name
 * ("held", ...: slot_hold_status_name) sets r->has_status and r->status.
 * Returns false for any other word (on_sale, ...), r unchanged.
 */
bool bench_result_status(const char *s, size_t n, bench_result *r);

/* bench_user_name / bench_key_name — "u<n>", "r<hex n>" into buf (cap bytes,
 * NUL-terminated); returns the length without the NUL (0 when cap is 0). */
size_t bench_user_name(uint64_t n, char *buf, size_t cap);
size_t bench_key_name(uint64_t n, char *buf, size_t cap);

#endif
