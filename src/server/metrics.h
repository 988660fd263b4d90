/*
 * metrics.h — the server's numbers in the Prometheus text exposition format
 * 0.0.4 (docs/operations.md, "Metrics"): what the metrics op answers and
 * what an HTTP GET /metrics serves. Loop thread only.
 */
#ifndef SLOT_METRICS_H
#define SLOT_METRICS_H

#include <stddef.h>

#include "server_int.h"
#include "slot/limits.h"

/*
 * slot__metrics_text — every metric of the server now, as Prometheus text
 * (format 0.0.4: "# HELP", "# TYPE", one sample per line, "\n" ended).
 *   s: the running server; its counters are the loop thread's (the commit
 *   thread's times reach them through the batch hand-back under s->batch.mu), so
 *   they equal what the stats op reports at the same moment.
 *   len_out: the text's length in bytes (without the NUL); may be NULL.
 * Reads the store on the loop's read transaction (events on sale, the feed,
 * the seq): O(events scanned until SLOT_METRICS_EVENTS_MAX on sale + feed
 * consumers + histogram slots). Returns a heap NUL-ended string the caller
 * frees, or NULL when out of memory. A storage error on the read is not
 * fatal: the store's series are left out and slotd_metrics_store_up says 0.
 * Loop thread.
 */
char *slot__metrics_text(server *s, size_t *len_out);

#endif
