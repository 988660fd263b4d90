/*
 * reads.h — the read ops' answers, above the loop core: what a read op
 * becomes when it reaches the head of its connection. Loop thread only.
 */
#ifndef SLOT_READS_H
#define SLOT_READS_H

#include "server_int.h"

/* slot__run_read — run e's read-only op now (hello, stats, or an allocator
 * read on the loop's read transaction); e becomes DONE. */
void slot__run_read(server *s, entry *e);

#endif
