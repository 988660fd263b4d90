/* bench/drv_slotd.h — the slotd target (drv_slotd.c). */
#ifndef SLOT_BENCH_DRV_SLOTD_H
#define SLOT_BENCH_DRV_SLOTD_H

#include <stddef.h>

#include "driver.h"
#include "wire.h"

extern const bench_driver bench_driver_slotd;

/*
 * bench_parse_slotd_reply — one slotd reply line (len bytes, without "\n")
 * into r: a fast scan of flat replies, falling back to slot_reply_parse for
 * anything else. Returns 0, or -1 when the line is not a reply.
 */
int bench_parse_slotd_reply(const char *line, size_t len, bench_result *r);

#endif
