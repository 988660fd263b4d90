/*
 * drv_slotd_encode.c — the hold lines of slot-bench's slotd load (drv_slotd.h),
 * written directly rather than through the client codec: every string in
 * them is plain (event names [A-Za-z0-9._:-], the bench's user and key names,
 * seat ids SECTION-ROW-NUMBER of [A-Za-z0-9-]), and this is the load's hot
 * path. A seated event's holds (hot-release --seated; docs/protocol.md,
 * "Seated events") add "adjacent":true or the "seats" they name.
 * Single-threaded: the loop's thread.
 */
#include <stdio.h>
#include <string.h>

#include "drv_slotd.h"
#include "engine.h"
#include "limits.h"
#include "seated.h"
#include "seats.h"
#include "wire.h"

static char *put(char *p, const char *s, size_t n)
{
    memcpy(p, s, n);
    return p + n;
}

#define PUT_LIT(p, lit) put((p), (lit), sizeof(lit) - 1)

/* ,"seats":["S-R-N",...]: the t->qty seats from t->seat on (one row: bench_seats_pick). */
static char *put_seats(const bench_run *run, const bench_ticket *t, char *p)
{
    const bench_seats *m = run->seated->map;
    p = PUT_LIT(p, ",\"seats\":[");
    for (uint32_t i = 0; i < t->qty; i++) {
        if (i)
            *p++ = ',';
        *p++ = '"';
        p += bench_seats_id(m, t->seat + i, p, SLOT_SEAT_ID_BYTES_MAX + 1);
        *p++ = '"';
    }
    *p++ = ']';
    return p;
}

/* A hold line, written directly: every string in it is plain. */
size_t bench_slotd_encode_hold(const bench_run *run, const bench_ticket *t, char *buf)
{
    const char *ev = run->events[t->event].name;
    char *p = buf;
    p = PUT_LIT(p, "{\"op\":\"hold\",\"event\":\"");
    p = put(p, ev, strlen(ev));
    p = PUT_LIT(p, "\",\"user\":\"");
    p += bench_user_name(t->user, p, 32);
    p = PUT_LIT(p, "\",\"request\":\"");
    p += bench_key_name(t->key, p, 32);
    p = PUT_LIT(p, "\",\"qty\":");
    p += snprintf(p, 16, "%u", (unsigned)t->qty);
    const char *block = run->events[t->event].allocation;
    if (block[0]) { /* a hold from a block (docs/protocol.md, "Allocations") */
        p = PUT_LIT(p, ",\"allocation\":\"");
        p = put(p, block, strlen(block));
        *p++ = '"';
    }
    if (t->flags & BENCH_TICKET_ADJACENT) /* a seated event: qty seats together, the server's choice */
        p = PUT_LIT(p, ",\"adjacent\":true");
    if ((t->flags & BENCH_TICKET_NAMED) && run->seated) /* a seated event: these seats, all or nothing */
        p = put_seats(run, t, p);
    p = PUT_LIT(p, "}\n");
    return (size_t)(p - buf);
}

/* A hold_many line (a cart of t->cart items: events t->event.. in order, t->qty each), written
 * directly like encode_hold: the names are plain. At most 16 x (event + 24) + 96 bytes. */
size_t bench_slotd_encode_cart(const bench_run *run, const bench_ticket *t, char *buf)
{
    char *p = buf;
    p = PUT_LIT(p, "{\"op\":\"hold_many\",\"user\":\"");
    p += bench_user_name(t->user, p, 32);
    p = PUT_LIT(p, "\",\"request\":\"");
    p += bench_key_name(t->key, p, 32);
    p = PUT_LIT(p, "\",\"items\":[");
    for (uint32_t i = 0; i < t->cart; i++) {
        const char *ev = run->events[t->event + i].name;
        if (i)
            *p++ = ',';
        p = PUT_LIT(p, "{\"event\":\"");
        p = put(p, ev, strlen(ev));
        p = PUT_LIT(p, "\",\"qty\":");
        p += snprintf(p, 16, "%u}", (unsigned)t->qty);
    }
    p = PUT_LIT(p, "]}\n");
    return (size_t)(p - buf);
}

size_t bench_slotd_req_bytes(const bench_config *cfg, const bench_ticket *t)
{
    if (t ? t->cart > 1 : cfg->cart > 1)
        return BENCH_CART_REQ_BYTES;
    if (t ? (t->flags & BENCH_TICKET_NAMED) != 0 : cfg->seat_mode == BENCH_SEAT_NAMED)
        return BENCH_SEAT_REQ_BYTES;
    return BENCH_REQ_BYTES;
}
