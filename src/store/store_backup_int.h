/*
 * store_backup_int.h — what store_backup.c (taking, verifying, installing
 * and restoring backups) and store_backup_file.c (the backup file's header,
 * its bytes and the scratch files) share; not seen outside src/store/. The
 * format is slot/backup.h's: a SLOT_BACKUP_HEADER_BYTES header, then the
 * LMDB copy (docs/design.md, "Backups"). Any thread: nothing here keeps
 * state between calls.
 */
#ifndef SLOT_STORE_BACKUP_INT_H
#define SLOT_STORE_BACKUP_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "slot/backup.h"

#define SHA_BYTES 32    /* a SHA-256 */
#define PATH_BYTES 4096 /* a path the backup code builds (scratch files, the data folder's files) */

/* A backup file's header, as read or to be written. */
typedef struct backup_header {
    slot_backup_info info;       /* seq, epoch, data_bytes, created_at_ms, digest (file_bytes: when read) */
    uint8_t data_sha[SHA_BYTES]; /* the SHA-256 of the data after the header */
} backup_header;

/* slot__backup_write_all — writes n bytes of p to fd, again after EINTR. 0 or -errno. */
int slot__backup_write_all(int fd, const void *p, size_t n);

/* slot__backup_read_all — reads exactly n bytes from fd into p. 0, -EPIPE (the end came first) or -errno. */
int slot__backup_read_all(int fd, void *p, size_t n);

/* slot__backup_hex_of — n bytes of raw as 2n lowercase hex digits and a NUL into hex (room for 2n + 1). */
void slot__backup_hex_of(const uint8_t *raw, size_t n, char *hex);

/*
 * slot__backup_stream — copies n bytes from in (at its offset) to out (-1:
 * nowhere), hashing them into sha. A buffer of SLOT_BACKUP_IO_BYTES from
 * the heap. 0, -EPIPE (in ended early), -ENOMEM, -errno, or EIO (libcrypto
 * failed).
 */
int slot__backup_stream(int in, int out, uint64_t n, uint8_t sha[SHA_BYTES]);

/*
 * slot__backup_header_pack — h as the file's SLOT_BACKUP_HEADER_BYTES bytes
 * (big-endian fields, the CRC-32 last) into raw. h->info.digest must be 64
 * lowercase hex digits (slot_store_digest's); asserted.
 */
void slot__backup_header_pack(const backup_header *h, uint8_t raw[SLOT_BACKUP_HEADER_BYTES]);

/*
 * slot__backup_header_open — opens file and reads its header into h,
 * checking it (magic, version, CRC-32, fields, the file's length). Returns 0
 * with *fd_out at the data's first byte (the caller closes it); else -errno
 * or a SLOT_BACKUP_E_* code, *fd_out = -1, and err[errlen] says why.
 */
int slot__backup_header_open(const char *file, int *fd_out, backup_header *h, char *err, size_t errlen);

/*
 * slot__backup_scratch_open — a scratch file in dir (prefix names it,
 * "XXXXXX" is appended), open on *fd_out; name[cap] gets the path to open
 * it by. Where /proc/self/fd is there (Linux), the file is unlinked at once
 * and name is /proc/self/fd/N, so a killed slotd or slotctl leaves no
 * scratch file behind (*linked = false); elsewhere it keeps its name until
 * slot__backup_scratch_close (*linked = true). 0, or -errno with err set.
 */
int slot__backup_scratch_open(const char *dir, const char *prefix, int *fd_out, char *name, size_t cap, bool *linked,
                              char *err, size_t errlen);

/* slot__backup_scratch_close — closes fd (unless -1) and, when linked, removes the file name. */
void slot__backup_scratch_close(int fd, const char *name, bool linked);

#endif
