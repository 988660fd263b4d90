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


/*
 * slot__server_run — open the store, listen, print "listening on HOST:PORT"
 * on stdout, and serve until SIGINT or SIGTERM; then stop accepting, finish
 * the batch in flight, answer what is queued with shutting_down, and close
 * the store. The caller has refused a non-loopback address without tokens
 * or --insecure (a usage error). Returns the process exit status (0 after a
 * clean stop, 1 when it could not start or failed).
 */
int slot__server_run(const slot__server_opts *opts);

#endif
