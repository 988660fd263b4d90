/*
 * server.h — what slotd.c needs of the server: its options and the call
 * that runs it (docs/design.md, "Threads"; server_int.h maps the modules).
 * Internal to the daemon; slotd.c parses flags and calls slot__server_run.
 */
#ifndef SLOT_SERVER_H
#define SLOT_SERVER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "server_opts.h"

struct server;
typedef struct uv_loop_s uv_loop_t;

/*
 * What the composition root (src/daemon/slotd.c) hands the server, so that
 * the server wing calls nothing above it: the replica set's start, stop and
 * free (src/cluster/cluster.h) and systemd's READY/STOPPING (src/daemon/daemon_int.h).
 * All run on the loop thread. A NULL member is skipped.
 *
 *   cluster_start  after the store opened and before the commit thread
 *                  starts; 0, or -1 (logged) and the server does not start
 *   cluster_stop   at the stop (SIGINT/SIGTERM) and again in the teardown
 *                  (a second call does nothing)
 *   cluster_free   after the loop ended
 *   ready          once it listens, with "listening on HOST:PORT"
 *   stopping       when the stop begins
 */
typedef struct slot__server_hooks {
    int (*cluster_start)(struct server *s);
    void (*cluster_stop)(struct server *s);
    void (*cluster_free)(struct server *s);
    void (*ready)(uv_loop_t *loop, const char *status);
    void (*stopping)(void);
} slot__server_hooks;

/*
 * slot__server_run — open the store, listen, print "listening on HOST:PORT"
 * on stdout, and serve until SIGINT or SIGTERM; then stop accepting, finish
 * the batch in flight, answer what is queued with shutting_down, and close
 * the store. The caller has refused a non-loopback address without tokens
 * or --insecure (a usage error). hooks (the caller's, outliving the call)
 * names the layers above the server. Returns the process exit status (0 after a
 * clean stop, 1 when it could not start or failed).
 */
int slot__server_run(const slot__server_opts *opts, const slot__server_hooks *hooks);

#endif
