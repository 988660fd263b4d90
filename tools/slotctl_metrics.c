/* slotctl_metrics.c — `slotctl metrics` (slotctl_metrics.h). */
#include "slotctl_metrics.h"

#include <jansson.h>
#include <string.h>

const char *slotctl_metrics_help(void)
{
    return "Prints the server's metrics in the Prometheus text format (the metrics op), the same\n"
           "text an HTTP scrape of /metrics gets: counters, histograms, the store, the feed, the\n"
           "replica set and the events on sale (docs/operations.md, \"Metrics\"). Pipe it to\n"
           "`promtool check metrics` to lint it. With --json, the raw reply line instead.\n";
}

int slotctl_metrics_print(const slot_reply *r, FILE *out)
{
    json_error_t e;
    json_t *root = json_loads(r->line, 0, &e);
    json_t *text = root ? json_object_get(root, "text") : NULL;
    if (!json_is_string(text)) {
        fprintf(stderr, "slotctl: metrics: the reply has no \"text\" string: %.80s\n", r->line);
        json_decref(root);
        return -1;
    }
    size_t n = json_string_length(text);
    int rc = fwrite(json_string_value(text), 1, n, out) == n ? 0 : -1;
    if (rc != 0)
        fprintf(stderr, "slotctl: metrics: could not write the text\n");
    json_decref(root);
    return rc;
}
