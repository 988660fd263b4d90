/*
 * server_backup.c — the backup op (server_backup.h). The worker runs
 * slot_store_backup (slot/backup.h) with the server's map lock, so the map
 * does not grow under the copy's read transaction; the commit thread goes
 * on committing meanwhile (a grow waits for the copy to end).
 */
#include "server_backup.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "loop.h"
#include "slot/assert.h"
#include "slot/backup.h"

/* Worker thread: the copy. Reads only the entry's request and the store. */
static void backup_work(uv_work_t *w)
{
    server *s = w->data;
    s->backup.rc = slot_store_backup(s->store, s->backup.entry->req.path, &s->map_lock, &s->backup.info, s->backup.err,
                                     sizeof(s->backup.err));
}

/* Loop thread: answer the entry. */
static void backup_done(uv_work_t *w, int status)
{
    server *s = w->data;
    entry *e = s->backup.entry;
    SLOT_ASSERT(s->backup.busy);
    SLOT_ASSERT(e->state == ENTRY_WORKING);
    s->backup.busy = false;
    s->backup.entry = NULL;
    slot_res *res = &e->res;
    const slot_backup_info *bi = &s->backup.info;
    if (status != 0) { /* uv_cancel: not used, but the callback must answer */
        slot_res_error(res, SLOT_E_BACKUP_FAILED, "the backup did not run");
    } else if (s->backup.rc != 0) {
        slot__log(SLOT__LOG_WARN, "backup failed", SLOT__LF_S("path", e->req.path), SLOT__LF_S("error", s->backup.err));
        slot_res_error(res, SLOT_E_BACKUP_FAILED, "%s", s->backup.err);
    } else {
        s->backup.written++;
        res->seq = bi->seq;
        memcpy(res->digest, bi->digest, sizeof(res->digest));
        res->backup_bytes = bi->file_bytes;
        res->backup_ms = bi->total_ms;
        slot__log(SLOT__LOG_INFO, "backup written", SLOT__LF_S("path", e->req.path), SLOT__LF_U("seq", bi->seq),
                  SLOT__LF_U("bytes", bi->file_bytes), SLOT__LF_U("copy_ms", bi->copy_ms),
                  SLOT__LF_U("total_ms", bi->total_ms));
    }
    e->state = ENTRY_DONE;
    slot__count_result(s, e);
    if (!e->conn) { /* its connection went away meanwhile */
        slot__entry_put(s, e);
        return;
    }
    s->conn_up.flush(e->conn);
}

void slot__backup_start(server *s, entry *e)
{
    if (s->backup.busy) {
        e->state = ENTRY_DONE;
        slot_res_error(&e->res, SLOT_E_BUSY, "a backup (to %s) is running; retry when it ends",
                       s->backup.entry->req.path);
        slot__count_result(s, e);
        return;
    }
    if (s->stopping) {
        e->state = ENTRY_DONE;
        slot_res_error(&e->res, SLOT_E_SHUTTING_DOWN, NULL);
        slot__count_result(s, e);
        return;
    }
    s->backup.busy = true;
    s->backup.entry = e;
    s->backup.work.data = s;
    e->state = ENTRY_WORKING;
    int rc = uv_queue_work(s->loop, &s->backup.work, backup_work, backup_done);
    if (rc != 0) {
        s->backup.busy = false;
        s->backup.entry = NULL;
        e->state = ENTRY_DONE;
        slot_res_error(&e->res, SLOT_E_BACKUP_FAILED, "cannot start a worker: %s", uv_strerror(rc));
        slot__count_result(s, e);
    }
}
