/*
 * cluster_snap.c — joining by snapshot, and trimming the batch log
 * (docs/design.md, "Joining by snapshot"). cluster_int.h has the map.
 *
 * Primary: a peer whose log we cannot continue (it is empty, or what it
 * needs is trimmed from ours) gets a snapshot: a backup file of our store
 * (slot/backup.h, slot_store_backup_fd, on the thread pool; it read-locks
 * map_lock for the LMDB copy) in DATA/snap-send.bak, sent in SNAP chunks
 * under the channel's back-pressure as soon as it is made (also beyond the
 * commit point), then records from seq + 1 once the peer ACKs seq. One snapshot at a time;
 * others wait their turn.
 *
 * Replica: the chunks go to DATA/snap.tmp/snap.bak; after the last one the
 * file is synced, its header read (slot_backup_read_header: CRC-32, length,
 * and the seq and epoch the frames named; a bad one is refused, the stream
 * ends and the next one sends a new snapshot), the folder synced and renamed
 * DATA/snap (atomic); then the commit thread installs it into LMDB in one
 * transaction (slot_backup_install: the data's SHA-256, seq, epoch and
 * digest checked before anything changes), resets the batch log to begin
 * after its seq, and removes DATA/snap; the loop then ACKs seq (a refused
 * file is removed and the stream ended: a new snapshot comes). A crash
 * before the rename leaves DATA/snap.tmp, which the next start removes (the
 * primary sends a new snapshot); after it, DATA/snap, which the next start
 * installs again (installing is idempotent: the same state, the same log
 * base), or removes when the file is refused.
 *
 * Both: the batch log keeps the last --log-keep-records records at least;
 * older segments go once applied (and, on the primary, once committed and
 * sent to every connected member).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cluster_int.h"
#include "server/commit.h"
#include "server/loop.h"
#include "slot/assert.h"
#include "slot/backup.h"

#define SNAP_TMP "snap.tmp"       /* a snapshot being received */
#define SNAP_DIR "snap"           /* a snapshot received whole, until installed */
#define SNAP_FILE "snap.bak"      /* in either: the backup file (slot/backup.h) */
#define SNAP_SEND "snap-send.bak" /* the primary's backup file being sent */

static bool is_primary(const clu *c)
{
    return c->role == CLU_PRIMARY || c->role == CLU_PROMOTING;
}

static void data_path(const clu *c, char *buf, size_t cap, const char *name)
{
    snprintf(buf, cap, "%s/%s", c->s->opts.data_dir, name);
}

/* Removes dir and the plain files in it (a snapshot folder has no others). */
static int rm_dir(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d)
        return errno == ENOENT ? 0 : -errno;
    struct dirent *e;
    char p[4300];
    while ((e = readdir(d)) != NULL) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
            continue;
        snprintf(p, sizeof(p), "%s/%s", dir, e->d_name);
        unlink(p);
    }
    closedir(d);
    return rmdir(dir) == 0 || errno == ENOENT ? 0 : -errno;
}

/* ---- the primary */

bool slot__clu_snap_wanted(clu *c, clu_node *n, const slot_repl_peer *peer)
{
    pthread_mutex_lock(&c->rlog_mu);
    uint64_t first = slot_rlog_first(c->rlog);
    pthread_mutex_unlock(&c->rlog_mu);
    bool want = peer->last_seq == 0 ? c->commit_seq > 0 : peer->last_seq + 1 < first;
    if (!want)
        return false;
    slot__clu_snap_set(n, CLU_SNAP_WANT);
    n->snap_seq = 0;
    SLOT__CLU_LOG(c, SLOT__LOG_INFO, "a node joins by snapshot", SLOT__LF_S("peer", n->id),
                  SLOT__LF_U("peer_seq", peer->last_seq), SLOT__LF_U("log_first", first),
                  SLOT__LF_S("why", peer->last_seq ? "the records it needs are trimmed" : "its log is empty"));
    return true;
}

static void send_close(clu *c)
{
    if (c->snap_fd >= 0)
        close(c->snap_fd);
    c->snap_fd = -1;
    free(c->snap_buf);
    c->snap_buf = NULL;
    unlink(c->snap_path);
}

bool slot__clu_snap_ok(uint8_t from, uint8_t to)
{
    switch (to) {
    case CLU_SNAP_NONE: /* dropped (the connection ended, a send failed), or acked */
        return from <= CLU_SNAP_ACK;
    case CLU_SNAP_WANT: /* a connection's on_ready wants one (a new connection starts over) */
        return from <= CLU_SNAP_ACK;
    case CLU_SNAP_SENDING: /* the copy is made and read back */
        return from == CLU_SNAP_WANT;
    case CLU_SNAP_ACK: /* every byte sent */
        return from == CLU_SNAP_SENDING;
    default:
        return false;
    }
}

void slot__clu_snap_set(clu_node *n, uint8_t to)
{
    SLOT_ASSERT(slot__clu_snap_ok(n->snap, to));
    n->snap = to;
}

void slot__clu_snap_drop(clu *c, clu_node *n)
{
    if (n->snap == CLU_SNAP_SENDING && c->snap_fd >= 0 && strcmp(c->snap_node, n->id) == 0)
        send_close(c);
    slot__clu_snap_set(n, CLU_SNAP_NONE);
}

bool slot__clu_snap_acked(clu *c, clu_node *n, uint64_t seq)
{
    if (n->snap != CLU_SNAP_ACK || seq < n->snap_seq)
        return false;
    SLOT__CLU_LOG(c, SLOT__LOG_INFO, "a node installed its snapshot: records follow", SLOT__LF_S("peer", n->id),
                  SLOT__LF_U("seq", n->snap_seq));
    slot__clu_snap_set(n, CLU_SNAP_NONE);
    n->next_send = seq + 1;
    SLOT_ASSERT(n->snap_seq <= c->applied); /* a copy of our own store (after_copy checked it) */
    return true;
}

static void work_copy(uv_work_t *w)
{
    clu *c = w->data;
    server *s = c->s;
    c->snap_err[0] = 0;
    int fd = open(c->snap_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0) {
        c->snap_rc = -errno;
        snprintf(c->snap_err, sizeof(c->snap_err), "cannot create " SNAP_SEND ": %s", strerror(-c->snap_rc));
        return;
    }
    /* The file is only read back by this process, so it is not synced; the
     * backup read-locks map_lock for its LMDB copy (no map growth under it). */
    slot_backup_info info;
    c->snap_rc = slot_store_backup_fd(s->store, s->opts.data_dir, fd, &s->map_lock, &info, c->snap_err,
                                      sizeof(c->snap_err));
    if (close(fd) != 0 && c->snap_rc == 0) {
        c->snap_rc = -errno;
        snprintf(c->snap_err, sizeof(c->snap_err), "close " SNAP_SEND ": %s", strerror(-c->snap_rc));
    }
    if (c->snap_rc == 0) {
        c->snap_seq = info.seq;
        c->snap_tenure = info.epoch;
        c->snap_bytes = info.file_bytes;
    }
}

static void send_more(clu *c);

static void after_copy(uv_work_t *w, int status)
{
    clu *c = w->data;
    c->snap_making = false;
    clu_node *n = slot__clu_node(c, c->snap_node, false);
    if (c->stopping || status != 0 || c->snap_rc != 0 || !n || n->snap != CLU_SNAP_WANT || !n->ready ||
        !is_primary(c)) {
        if (!c->stopping && (status != 0 || c->snap_rc != 0)) {
            SLOT__CLU_LOG(c, SLOT__LOG_WARN, "snapshot failed", SLOT__LF_S("peer", c->snap_node),
                          SLOT__LF_S("error", status ? uv_strerror(status) : c->snap_err));
            if (n)
                slot_repl_disconnect(c->repl, n->id); /* it is dialled again and asks again */
        }
        unlink(c->snap_path);
        return;
    }
    /* The copy must be a state of our log: record snap_seq there with the copy's tenure
     * (a store that held records our log cut would name another). Sent beyond the
     * commit point to a member, nothing else would catch it. */
    uint64_t logged = slot__clu_epoch_of(c, c->snap_seq); /* 0: trimmed from our log since */
    if (c->snap_seq > c->applied || (logged != 0 && logged != c->snap_tenure)) {
        SLOT__CLU_LOG(c, SLOT__LOG_WARN, "a snapshot's copy is not a state of our log: made again",
                      SLOT__LF_S("peer", n->id), SLOT__LF_U("tenure", c->snap_tenure), SLOT__LF_U("seq", c->snap_seq));
        unlink(c->snap_path);
        return; /* still CLU_SNAP_WANT: the next tick makes a new one */
    }
    c->snap_fd = open(c->snap_path, O_RDONLY | O_CLOEXEC);
    c->snap_buf = malloc(SLOT_REPL_SNAP_CHUNK_BYTES);
    if (c->snap_fd < 0 || !c->snap_buf) {
        SLOT__CLU_LOG(c, SLOT__LOG_WARN, "snapshot: cannot read it back", SLOT__LF_S("peer", n->id),
                      SLOT__LF_S("path", c->snap_path),
                      SLOT__LF_S("error", c->snap_buf ? strerror(errno) : "out of memory"));
        send_close(c);
        slot_repl_disconnect(c->repl, n->id);
        return;
    }
    c->snap_off = 0;
    SLOT_ASSERT(c->snap_seq <= c->applied && strcmp(c->snap_node, n->id) == 0);
    slot__clu_snap_set(n, CLU_SNAP_SENDING);
    n->snap_seq = c->snap_seq;
    SLOT__CLU_LOG(c, SLOT__LOG_INFO, "snapshot made", SLOT__LF_S("peer", n->id), SLOT__LF_U("seq", c->snap_seq),
                  SLOT__LF_U("tenure", c->snap_tenure), SLOT__LF_U("bytes", c->snap_bytes),
                  SLOT__LF_U("took_ms", uv_now(c->s->loop) - c->snap_since_ms));
    send_more(c);
}

static void send_more(clu *c)
{
    clu_node *n = slot__clu_node(c, c->snap_node, false);
    if (!n || n->snap != CLU_SNAP_SENDING || !n->ready) {
        send_close(c);
        return;
    }
    /* The copy goes out as soon as it is made, also when it holds records
     * beyond the commit point (the batch in flight; taking over, the records
     * below the tenure record). Waiting for the commit point to reach it
     * waits for the member's own ack when the member is one the pending
     * record needs (a wedge once seen after a partition: the tenure record
     * waited for the member, the member for its snapshot, the snapshot for
     * the tenure record), and a joiner's snapshot waiting so held the one
     * snapshot slot against a member's (another wedge, found by the flapping
     * test). Every record up to snap_seq is in our log, so installing the copy
     * is what receiving those records and applying them early would be; the
     * receiver answers reads only once the commit point it hears covers it
     * (docs/design.md, "Snapshots beyond the commit point"). */
    while (c->snap_off < c->snap_bytes) {
        uint64_t left = c->snap_bytes - c->snap_off;
        size_t len = left < SLOT_REPL_SNAP_CHUNK_BYTES ? (size_t)left : SLOT_REPL_SNAP_CHUNK_BYTES;
        ssize_t got = pread(c->snap_fd, c->snap_buf, len, (off_t)c->snap_off);
        if (got != (ssize_t)len) {
            SLOT__CLU_LOG(c, SLOT__LOG_WARN, "snapshot: read failed", SLOT__LF_S("peer", n->id),
                          SLOT__LF_U("offset", c->snap_off),
                          SLOT__LF_S("error", got < 0 ? strerror(errno) : "short read"));
            send_close(c);
            slot__clu_snap_set(n, CLU_SNAP_NONE);
            slot_repl_disconnect(c->repl, n->id);
            return;
        }
        int rc = slot_repl_send_snap(c->repl, n->id, c->snap_seq, c->snap_tenure, c->snap_off, c->snap_bytes,
                                     c->snap_buf, len);
        if (rc == -EAGAIN)
            return; /* its queue is full: the next loop turn or tick goes on */
        if (rc < 0) {
            SLOT__CLU_LOG(c, SLOT__LOG_WARN, "snapshot: send failed", SLOT__LF_S("peer", n->id),
                          SLOT__LF_S("error", uv_strerror(rc)));
            send_close(c);
            slot__clu_snap_set(n, CLU_SNAP_NONE);
            slot_repl_disconnect(c->repl, n->id);
            return;
        }
        c->snap_off += len;
        SLOT_ASSERT(c->snap_off <= c->snap_bytes);
    }
    SLOT_ASSERT(c->snap_off == c->snap_bytes);
    send_close(c);
    slot__clu_snap_set(n, CLU_SNAP_ACK);
    c->snaps_sent++;
    SLOT__CLU_LOG(c, SLOT__LOG_INFO, "snapshot sent", SLOT__LF_S("peer", n->id), SLOT__LF_U("seq", c->snap_seq),
                  SLOT__LF_U("bytes", c->snap_bytes), SLOT__LF_U("took_ms", uv_now(c->s->loop) - c->snap_since_ms));
}

static void primary_snap(clu *c)
{
    if (c->snap_making)
        return;
    if (c->role == CLU_PROMOTING && (c->promote_wanted || c->job == CLU_JOB_PROMOTE))
        return; /* until the promote job ran, the store may still hold what our log cut */
    if (c->snap_fd >= 0) {
        send_more(c);
        return;
    }
    /* Members (and joiners waited for) first: the pending record may need their acks. */
    clu_node *pick = NULL;
    for (size_t i = 0; i < c->nnodes; i++) {
        clu_node *n = &c->nodes[i];
        if (n->snap != CLU_SNAP_WANT || !n->ready)
            continue;
        if (!pick || (!(pick->counted || slot__clu_is_member(&c->cfg, pick->id)) &&
                      (n->counted || slot__clu_is_member(&c->cfg, n->id))))
            pick = n;
    }
    if (!pick)
        return;
    snprintf(c->snap_node, sizeof(c->snap_node), "%s", pick->id);
    data_path(c, c->snap_path, sizeof(c->snap_path), SNAP_SEND);
    c->snap_since_ms = uv_now(c->s->loop);
    c->snap_work.data = c;
    if (uv_queue_work(c->s->loop, &c->snap_work, work_copy, after_copy) == 0)
        c->snap_making = true;
}

/* ---- the replica */

static void recv_abort(clu *c)
{
    char tmp[4200];
    if (c->snap_in_fd >= 0)
        close(c->snap_in_fd);
    c->snap_in_fd = -1;
    data_path(c, tmp, sizeof(tmp), SNAP_TMP);
    rm_dir(tmp);
    c->snap_recv = c->snap_ready;
}

void slot__clu_snap_stream_end(clu *c)
{
    if (c->snap_in_fd >= 0)
        recv_abort(c); /* a half-received snapshot is useless: the next stream sends a new one */
}

int slot__clu_on_snap(void *ctx, const char *from, uint64_t seq, uint64_t tenure, uint64_t offset, uint64_t total,
                      const uint8_t *data, size_t n)
{
    clu *c = ctx;
    /* the channel checked the frame (repl_snap.c): a part of a bounded whole, in order */
    SLOT_ASSERT(seq >= 1 && total <= SLOT_REPL_SNAP_BYTES_MAX && offset <= total && n <= total - offset);
    if (is_primary(c) || c->stopping || c->snap_ready || c->job == CLU_JOB_SNAP)
        return -1;
    char tmp[4200], file[4300];
    data_path(c, tmp, sizeof(tmp), SNAP_TMP);
    snprintf(file, sizeof(file), "%s/%s", tmp, SNAP_FILE);
    if (offset == 0) {
        recv_abort(c);
        if (mkdir(tmp, 0700) != 0 || (c->snap_in_fd = open(file, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600)) < 0) {
            SLOT__CLU_LOG(c, SLOT__LOG_WARN, "cannot take a snapshot", SLOT__LF_S("peer", from),
                          SLOT__LF_S("path", tmp), SLOT__LF_S("error", strerror(errno)));
            recv_abort(c);
            return -1;
        }
        c->snap_recv = true;
        c->snap_in_seq = seq;
        c->snap_in_tenure = tenure;
        c->snap_in_since_ms = uv_now(c->s->loop);
        SLOT__CLU_LOG(c, SLOT__LOG_INFO, "receiving a snapshot", SLOT__LF_S("peer", from), SLOT__LF_U("seq", seq),
                      SLOT__LF_U("tenure", tenure), SLOT__LF_U("bytes", total));
    }
    if (c->snap_in_fd < 0 || seq != c->snap_in_seq)
        return -1;
    for (size_t done = 0; done < n;) {
        ssize_t w = pwrite(c->snap_in_fd, data + done, n - done, (off_t)(offset + done));
        if (w <= 0) {
            SLOT__CLU_LOG(c, SLOT__LOG_WARN, "snapshot write failed", SLOT__LF_S("peer", from), SLOT__LF_U("seq", seq),
                          SLOT__LF_S("error", w < 0 ? strerror(errno) : "no progress"));
            recv_abort(c);
            return -1;
        }
        done += (size_t)w;
    }
    if (offset + n < total)
        return 0;
    SLOT_ASSERT(offset + n == total && c->snap_recv);
    /* Whole: durable, then in place under its final name in one rename. */
    char dir[4200], datadir[4200];
    data_path(c, dir, sizeof(dir), SNAP_DIR);
    snprintf(datadir, sizeof(datadir), "%s", c->s->opts.data_dir);
    int rc = fsync(c->snap_in_fd) == 0 ? 0 : -errno;
    close(c->snap_in_fd);
    c->snap_in_fd = -1;
    if (rc == 0) { /* the header now (128 bytes); the data's checks come with the install */
        slot_backup_info hi;
        char why[600];
        int h = slot_backup_read_header(file, &hi, why, sizeof(why));
        if (h == 0 && (hi.seq != seq || hi.epoch != tenure)) {
            h = SLOT_BACKUP_E_HEADER;
            snprintf(why, sizeof(why),
                     "its header names seq %" PRIu64 " epoch %" PRIu64 ", the frames seq %" PRIu64 " tenure %" PRIu64,
                     hi.seq, hi.epoch, seq, tenure);
        }
        if (h != 0) {
            SLOT__CLU_LOG(c, SLOT__LOG_WARN, "refused the snapshot: a new one is asked for", SLOT__LF_S("peer", from),
                          SLOT__LF_U("seq", seq), SLOT__LF_S("why", why));
            recv_abort(c);
            return -1;
        }
    }
    if (rc == 0)
        rc = slot_store_fsync_dir(tmp);
    if (rc == 0)
        rc = rm_dir(dir); /* one left by a run that stopped before installing it: ours is newer */
    if (rc == 0 && rename(tmp, dir) != 0)
        rc = -errno;
    if (rc == 0)
        rc = slot_store_fsync_dir(datadir);
    if (rc != 0) {
        SLOT__CLU_LOG(c, SLOT__LOG_WARN, "cannot put the snapshot in place", SLOT__LF_S("peer", from),
                      SLOT__LF_U("seq", seq), SLOT__LF_S("error", strerror(-rc)));
        recv_abort(c);
        return -1;
    }
    c->snap_ready = true;
    slot__clu_job_start(c, CLU_JOB_SNAP); /* when the commit thread is busy, the tick tries again */
    return 0;
}

/* Installs DATA/snap into LMDB and gives the log its base; commit thread or start. */
static int install(clu *c, uint64_t *seq, uint64_t *tenure)
{
    server *s = c->s;
    char dir[4200], file[4300];
    data_path(c, dir, sizeof(dir), SNAP_DIR);
    snprintf(file, sizeof(file), "%s/%s", dir, SNAP_FILE);
    char err[1024] = "";
    slot_backup_info info = {0};
    int rc = MDB_MAP_FULL;
    for (int attempt = 0; attempt < SLOT_MAP_GROW_ATTEMPTS_MAX && rc == MDB_MAP_FULL; attempt++) {
        MDB_txn *txn = NULL;
        rc = mdb_txn_begin(slot_store_env(s->store), NULL, 0, &txn);
        if (rc == 0)
            rc = slot_backup_install(s->store, txn, file, s->opts.data_dir, &info, err, sizeof(err));
        else
            snprintf(err, sizeof(err), "%s", mdb_strerror(rc));
        if (rc == 0 && (rc = mdb_txn_commit(txn)) != 0)
            snprintf(err, sizeof(err), "commit: %s", mdb_strerror(rc));
        else if (rc != 0 && txn)
            mdb_txn_abort(txn);
        if (rc == MDB_MAP_FULL) {
            pthread_rwlock_wrlock(&s->map_lock);
            int g = slot_store_grow(s->store);
            pthread_rwlock_unlock(&s->map_lock);
            if (g != 0)
                break;
        }
    }
    if (rc != 0) {
        if (slot_backup_refused(rc))
            SLOT__CLU_TLOG(c, SLOT__LOG_WARN, "refused the snapshot", SLOT__LF_S("path", file), SLOT__LF_S("why", err));
        else
            SLOT__CLU_TLOG(c, SLOT__LOG_WARN, "cannot install the snapshot", SLOT__LF_S("path", file),
                           SLOT__LF_S("error", err));
        return rc;
    }
    *seq = info.seq;
    *tenure = info.epoch;
    pthread_mutex_lock(&c->rlog_mu);
    rc = slot_rlog_reset(c->rlog, *seq + 1, *tenure);
    pthread_mutex_unlock(&c->rlog_mu);
    if (rc != 0) {
        SLOT__CLU_TLOG(c, SLOT__LOG_WARN, "cannot reset the batch log after the snapshot", SLOT__LF_U("seq", *seq),
                       SLOT__LF_S("error", slot_strerror(rc)));
        return rc;
    }
    rm_dir(dir);
    slot_store_fsync_dir(s->opts.data_dir);
    return 0;
}

int slot__clu_job_snap(clu *c)
{
    uint64_t seq = 0, tenure = 0;
    int rc = install(c, &seq, &tenure);
    if (rc == 0) {
        c->job_applied = seq;
        c->snap_in_seq = seq;
        c->snap_in_tenure = tenure;
    }
    return rc;
}

void slot__clu_snap_done(clu *c)
{
    c->snap_ready = false;
    c->snap_recv = false;
    if (c->job_rc != 0) {
        char dir[4200];
        data_path(c, dir, sizeof(dir), SNAP_DIR);
        rm_dir(dir);
        if (c->stream_open)
            slot_repl_disconnect(c->repl, c->stream_from); /* the next stream sends a new one */
        return;
    }
    uint64_t seq = c->snap_in_seq, tenure = c->snap_in_tenure;
    /* The commit point stays what the primary told us: a member may be sent
     * a state beyond it (send_more), which it must not serve reads from or
     * trust at a restart until the commit point covers it. */
    c->applied = seq;
    c->verified = seq;
    c->rebuild = false;
    c->need_snap = false;
    c->snaps_installed++;
    SLOT__CLU_LOG(c, SLOT__LOG_INFO, "joined by snapshot", SLOT__LF_U("seq", seq), SLOT__LF_U("tenure", tenure),
                  SLOT__LF_U("took_ms", uv_now(c->s->loop) - c->snap_in_since_ms));
    if (slot_repl_snap_done(c->repl, tenure, seq) != 0)
        slot__clu_stream_reset(c); /* the stream went: the next one starts from the snapshot's seq */
    slot__clu_node_put(c);
    slot__reads_resume(c->s);
}

int slot__clu_snap_recover(clu *c)
{
    char tmp[4200], dir[4200], file[4300], send[4200];
    data_path(c, tmp, sizeof(tmp), SNAP_TMP);
    data_path(c, dir, sizeof(dir), SNAP_DIR);
    data_path(c, send, sizeof(send), SNAP_SEND);
    snprintf(file, sizeof(file), "%s/%s", dir, SNAP_FILE);
    if (rm_dir(tmp) != 0 || (unlink(send) != 0 && errno != ENOENT)) {
        SLOT__CLU_LOG(c, SLOT__LOG_WARN, "cannot remove what an earlier run left of a snapshot",
                      SLOT__LF_S("path", tmp), SLOT__LF_S("send_path", send), SLOT__LF_S("error", strerror(errno)));
        return -1;
    }
    struct stat sb;
    if (stat(file, &sb) != 0)
        return rm_dir(dir) == 0 ? 0 : -1; /* no file in it (or no folder): nothing to install */
    uint64_t seq = 0, tenure = 0;
    int rc = install(c, &seq, &tenure);
    if (rc != 0 && slot_backup_refused(rc) && rm_dir(dir) == 0) {
        /* As a crash before the rename: the store is as it was, the primary sends a new one. */
        SLOT__CLU_LOG(c, SLOT__LOG_WARN, "removed the snapshot that an earlier run received: it is damaged",
                      SLOT__LF_S("path", file));
        return 0;
    }
    if (rc != 0)
        return -1;
    SLOT__CLU_LOG(c, SLOT__LOG_INFO, "installed the snapshot that an earlier run received", SLOT__LF_U("seq", seq),
                  SLOT__LF_U("tenure", tenure));
    return 0;
}

void slot__clu_snap_stop(clu *c)
{
    if (c->snap_fd >= 0)
        send_close(c);
    if (c->snap_in_fd >= 0)
        recv_abort(c);
}

/* ---- trimming */

static void trim(clu *c)
{
    uint64_t now = uv_now(c->s->loop);
    if (now - c->trim_ms < SLOT_CLUSTER_TRIM_MS)
        return;
    c->trim_ms = now;
    pthread_mutex_lock(&c->rlog_mu);
    uint64_t last = 0, first = slot_rlog_first(c->rlog);
    slot_rlog_last(c->rlog, NULL, &last);
    pthread_mutex_unlock(&c->rlog_mu);
    if (last <= c->keep_records)
        return;
    uint64_t lo = last - c->keep_records + 1; /* records from lo on stay */
    uint64_t done = is_primary(c) ? (c->commit_seq < c->applied ? c->commit_seq : c->applied) : c->applied;
    if (c->s->pipe && c->s->pipe->active) { /* pipelined: a restart starts from LMDB's last commit, below applied */
        uint64_t lmdb = slot__pipe_lmdb(c->s);
        done = lmdb < done ? lmdb : done;
    }
    if (lo > done + 1)
        lo = done + 1;
    for (size_t i = 0; is_primary(c) && i < c->nnodes; i++) { /* what a connected member is still to be sent stays */
        const clu_node *n = &c->nodes[i];
        uint64_t need = n->snap == CLU_SNAP_NONE                                 ? n->next_send
                        : n->snap == CLU_SNAP_SENDING || n->snap == CLU_SNAP_ACK ? n->snap_seq + 1
                                                                                 : lo;
        if (n->ready && need < lo)
            lo = need;
    }
    if (lo <= first)
        return;
    pthread_mutex_lock(&c->rlog_mu);
    int rc = slot_rlog_trim_before(c->rlog, lo);
    uint64_t first2 = slot_rlog_first(c->rlog);
    pthread_mutex_unlock(&c->rlog_mu);
    if (rc != 0)
        SLOT__CLU_LOG(c, SLOT__LOG_WARN, "cannot trim the batch log", SLOT__LF_U("trim_before", lo),
                      SLOT__LF_S("error", slot_strerror(rc)));
    else if (first2 != first)
        SLOT__CLU_LOG(c, SLOT__LOG_INFO, "batch log trimmed", SLOT__LF_U("log_first", first2),
                      SLOT__LF_U("log_seq", last));
}

void slot__clu_snap_tick(clu *c)
{
    if (c->stopping)
        return;
    if (is_primary(c))
        primary_snap(c);
    else if (c->snap_ready && c->job == CLU_JOB_NONE)
        slot__clu_job_start(c, CLU_JOB_SNAP);
    trim(c);
}
