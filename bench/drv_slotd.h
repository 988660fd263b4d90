/* bench/drv_slotd.h — the slotd target (drv_slotd.c). */
#ifndef SLOT_BENCH_DRV_SLOTD_H
#define SLOT_BENCH_DRV_SLOTD_H

#include <stddef.h>
#include <sys/socket.h>

#include "driver.h"
#include "wire.h"

extern const bench_driver bench_driver_slotd;

/*
 * bench_parse_slotd_reply — one slotd reply line (len bytes, without "\n")
 * into r: a fast scan of flat replies, falling back to slot_reply_parse for
 * anything else. Returns 0, or -1 when the line is not a reply.
 */
int bench_parse_slotd_reply(const char *line, size_t len, bench_result *r);

/*
 * drv_slotd_encode.c — the hold lines the load writes directly (no escaping needed: event
 * names are [A-Za-z0-9._:-], user and key names the bench's, seat ids [A-Za-z0-9-]).
 * bench_slotd_encode_hold — a hold of t->qty on t's event into buf: a block's with its
 * "allocation"; a seated event's (hot-release --seated) with "adjacent":true
 * (BENCH_TICKET_ADJACENT) or "seats" naming the t->qty seats from t->seat on
 * (BENCH_TICKET_NAMED). bench_slotd_encode_cart — a hold_many of t->cart items (events
 * t->event.., t->qty each). buf has bench_slotd_req_bytes(cfg, t) bytes at least; each returns
 * the line's length, its "\n" included (no NUL).
 * bench_slotd_req_bytes — the most bytes ticket t's line can take (t NULL: any ticket of the
 * run cfg describes). Run on the loop's thread.
 */
size_t bench_slotd_encode_hold(const bench_run *run, const bench_ticket *t, char *buf);
size_t bench_slotd_encode_cart(const bench_run *run, const bench_ticket *t, char *buf);
size_t bench_slotd_req_bytes(const bench_config *cfg, const bench_ticket *t);

/* The administration side (drv_slotd_admin.c): bench_driver's admin_* calls
 * for slotd, each through slot_follow (the replica set's primary). */
int bench_slotd_admin_open(const bench_config *cfg, bench_admin **out, char *err, size_t errlen);
void bench_slotd_admin_close(bench_admin *a);
int bench_slotd_server_info(bench_admin *a, json_t **info, char *err, size_t errlen);
int bench_slotd_create_event(bench_admin *a, const bench_event_spec *spec, bench_view *v, char *err, size_t errlen);
int bench_slotd_event(bench_admin *a, const char *event, bench_view *v, char *err, size_t errlen);
int bench_slotd_check(bench_admin *a, const char *event, uint32_t *violations, char *detail, size_t detlen);
int bench_slotd_expire(bench_admin *a, const char *event, uint64_t *expired, char *err, size_t errlen);
int bench_slotd_stats(bench_admin *a, json_t **stats, char *err, size_t errlen);
/* bench_slotd_seat_map — seat_map of a seated event (docs/protocol.md, "Seated events"): its
 * "rows" object into *rows (a new reference, the caller's) and the reply's length in *bytes
 * (NULL: not wanted). 0, or an exit status with err. */
int bench_slotd_seat_map(bench_admin *a, const char *event, json_t **rows, size_t *bytes, char *err, size_t errlen);
/* bench_slotd_allocate — allocate qty units of event to block (docs/protocol.md, "Allocations");
 * the block's total and remaining from the reply. 0, or an exit status with err (sold_out too). */
int bench_slotd_allocate(bench_admin *a, const char *event, const char *block, uint64_t qty, uint64_t *total,
                         uint64_t *remaining, char *err, size_t errlen);
/* bench_slotd_admin_to_primary — with several --host values, move the admin
 * connection to the node that says (cluster op) it is the primary, waiting up to
 * BENCH_ADMIN_PRIMARY_WAIT_MS; one --host: nothing. 0 or an exit status with err. */
int bench_slotd_admin_to_primary(bench_admin *a, char *err, size_t errlen);
/* bench_slotd_admin_peer — the socket address hello's answer came from: where the load starts. */
const struct sockaddr_storage *bench_slotd_admin_peer(const bench_admin *a);
/* --placement (drv_slotd_admin.c): the replica sets of the map (0 without --placement), the
 * i-th set's primary "H:P" (NULL out of range; borrowed), and the set an event was created on
 * (-1: not created by this admin). */
uint32_t bench_slotd_admin_sets(const bench_admin *a);
const char *bench_slotd_admin_set_primary(const bench_admin *a, uint32_t i);
int bench_slotd_admin_event_set(const bench_admin *a, const char *event);
/* bench_slotd_admin_node — that node as "H:P" (borrowed until the next admin call). */
const char *bench_slotd_admin_node(const bench_admin *a);

#endif
