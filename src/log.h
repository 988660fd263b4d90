/*
 * log.h — the daemon's log lines and its clock, which every module of the
 * server uses and which depend on nothing of it (docs/operations.md, "Logs").
 */
#ifndef SLOT_LOG_H
#define SLOT_LOG_H

#include <stdint.h>

/* slot__log — one line "slotd: ..." on stderr. Any thread (stdio locks). */
void slot__log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* slot__wall_ms — the server clock (CLOCK_REALTIME), ms since the Unix
 * epoch, as hold expiry uses it. Any thread. */
uint64_t slot__wall_ms(void);

#endif
