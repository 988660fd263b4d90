/*
 * server_backup.h — the backup op on a running server (docs/protocol.md,
 * "backup"): the copy runs on a libuv worker thread, off the loop and the
 * commit thread, one at a time. Loop thread only.
 */
#ifndef SLOT_SERVER_BACKUP_H
#define SLOT_SERVER_BACKUP_H

#include "server_int.h"

/*
 * slot__backup_start — run e's backup (e->req.path) on a worker thread: e
 * becomes ENTRY_WORKING and is answered (DONE, its connection flushed) when
 * the copy ends; if its connection closed meanwhile, the entry is freed
 * then. A second backup while one runs is answered busy at once (DONE).
 */
void slot__backup_start(server *s, entry *e);

#endif
