/*
 * ctl_time.h — the times slotctl and slot-bench take on the command line
 * (docs/protocol.md, "Sale windows": ms since the Unix epoch, 0 = none).
 */
#ifndef SLOT_CTL_TIME_H
#define SLOT_CTL_TIME_H

#include <stdint.h>

/*
 * slot_ctl_time_parse — one time argument into ms since the Unix epoch:
 *   "0" or "none"                      0 (no time set)
 *   "+30s", "+1500ms", "+5m", "+2h", "+1d"   that long from now_ms
 *   "1764500000000"                    ms since the epoch, as they stand
 *   "2025-11-30T12:00:00Z", "2025-11-30T12:00:00.250+01:00", "2025-11-30 12:00"
 *                                      ISO 8601 (no zone: UTC)
 *   now_ms: the clock "+" counts from (ms since the epoch).
 * Returns 0 and *out, or -1 when s is none of these or lies beyond 2^53 ms.
 * Any thread.
 */
int slot_ctl_time_parse(const char *s, uint64_t now_ms, uint64_t *out);

/* slot_ctl_time_format — ms since the epoch as "2025-11-30T12:00:00.000Z"
 * into out (at least 32 bytes); 0 is "none". Returns out. */
char *slot_ctl_time_format(uint64_t ms, char *out, unsigned long cap);

#endif
