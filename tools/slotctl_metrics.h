/*
 * slotctl_metrics.h — `slotctl metrics`: print the server's Prometheus text
 * (the metrics op; docs/protocol.md, "metrics"). Part of slotctl; uses only
 * client.h and jansson.
 */
#ifndef SLOTCTL_METRICS_H
#define SLOTCTL_METRICS_H

#include <stdio.h>

#include "slot/client.h"

/*
 * slotctl_metrics_print — write the "text" member of the metrics op's
 * reply r (an "ok":true reply) to out, as it is (Prometheus text format
 * 0.0.4, each line "\n" ended). Returns 0, or -1 after printing to stderr
 * why (the reply is not JSON or has no text string).
 */
int slotctl_metrics_print(const slot_reply *r, FILE *out);

/* slotctl_metrics_help — the command's help text (static). */
const char *slotctl_metrics_help(void);

#endif
