/*
 * admit.h — the one request router: TCP (conn.c) and HTTP (http.c) hand a
 * parsed request to the loop here. Loop thread only.
 */
#ifndef SLOT_ADMIT_H
#define SLOT_ADMIT_H

#include "server_int.h"

/*
 * slot__admit — where parsed request e of c goes: answered now (its
 * role may not run it, a feed op over HTTP, shutting_down, overloaded at
 * --max-queue), ENTRY_READ_WAIT (a read op: run when it reaches c's head),
 * or the write queue (ENTRY_QUEUED). Counts requests and errors.
 */
void slot__admit(server *s, conn *c, entry *e);

#endif
