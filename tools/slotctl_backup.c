/*
 * slotctl_backup.c — `slotctl backup`, `restore`, `verify-backup`
 * (slotctl_backup.h; docs/operations.md, "Backups").
 */
#include "slotctl_backup.h"

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "slot/backup.h"
#include "slot/check.h"
#include "slot/limits.h"

#define EXIT_FAIL 1
#define EXIT_CONNECTION 2
#define EXIT_USAGE 64

const char *slotctl_backup_help(void)
{
    return "Asks the server for a hot backup of its store while it goes on selling: one LMDB read\n"
           "transaction, compacted, with a header naming the seq and digest it was taken at.\n"
           "The server writes FILE on its own machine, with its own permissions; a relative FILE is\n"
           "made absolute against slotctl's current folder. FILE.tmp is written first and renamed.\n"
           "One backup at a time: another one meanwhile is answered busy.\n";
}

const char *slotctl_restore_help(void)
{
    return "Offline: checks FILE (header, SHA-256 of the data, seq and digest) and puts its store in\n"
           "DIR as data.mdb, for a slotd started on DIR afterwards. Never talks to a server.\n"
           "  --data DIR            the data folder (required); created when missing; refused while a\n"
           "                        slotd has it, or when it holds anything, unless --force\n"
           "  --force               replace the store in a non-empty DIR (not one a slotd has)\n";
}

const char *slotctl_verify_backup_help(void)
{
    return "Offline: checks FILE's header and the SHA-256 of its data, opens a copy of the data (in\n"
           "$TMPDIR, else /tmp) and compares its seq and digest with the header's, then runs check on\n"
           "it. Prints what it found; exits 0 when the backup is intact and check finds no violation,\n"
           "1 otherwise.\n";
}

static void iso_time(uint64_t ms, char *buf, size_t cap)
{
    time_t t = (time_t)(ms / 1000u);
    struct tm tm;
    gmtime_r(&t, &tm);
    strftime(buf, cap, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

int slotctl_backup(slot_follow *f, bool json, const char *file)
{
    char abs[SLOT_PATH_BYTES_MAX + 2];
    if (file[0] == '/') {
        snprintf(abs, sizeof abs, "%s", file);
    } else {
        char cwd[SLOT_PATH_BYTES_MAX + 1];
        if (!getcwd(cwd, sizeof cwd)) {
            fprintf(stderr, "slotctl: backup: cannot name the current folder: %s\n", strerror(errno));
            return EXIT_FAIL;
        }
        snprintf(abs, sizeof abs, "%s/%s", strcmp(cwd, "/") == 0 ? "" : cwd, file);
    }
    slot_req req;
    if (strlen(abs) > SLOT_PATH_BYTES_MAX || slot_req_backup(&req, abs) < 0) {
        fprintf(stderr, "slotctl: backup: the path is longer than %d bytes\n", SLOT_PATH_BYTES_MAX);
        return EXIT_USAGE;
    }
    slot_reply r;
    int rc = slot_follow_call(f, &req, &r);
    if (rc < 0) {
        fprintf(stderr, "slotctl: backup: %s\n", slot_follow_error(f));
        return EXIT_CONNECTION;
    }
    if (json)
        printf("%s\n", r.line);
    if (!r.ok) {
        fprintf(stderr, "slotctl: backup: %s: %s\n", r.error[0] ? r.error : "error",
                r.message[0] ? r.message : slot_err_message(r.err));
        slot_reply_clear(&r);
        return EXIT_FAIL;
    }
    if (!json) {
        uint64_t bytes = 0, ms = 0;
        const char *b = strstr(r.line, "\"bytes\":"), *m = strstr(r.line, "\"ms\":");
        if (b)
            bytes = strtoull(b + 8, NULL, 10);
        if (m)
            ms = strtoull(m + 5, NULL, 10);
        printf("%-10s %s\n%-10s %" PRIu64 "\n%-10s %s\n%-10s %" PRIu64 "\n%-10s %" PRIu64 "\n", "file", abs, "seq",
               r.seq, "digest", r.digest, "bytes", bytes, "ms", ms);
    }
    slot_reply_clear(&r);
    return 0;
}

static void print_info(const char *file, const slot_backup_info *bi)
{
    char when[32];
    iso_time(bi->created_at_ms, when, sizeof when);
    printf("%-10s %s\n%-10s %" PRIu64 "\n%-10s %" PRIu64 "\n%-10s %s\n%-10s %" PRIu64 "\n%-10s %s\n", "file", file,
           "seq", bi->seq, "epoch", bi->epoch, "digest", bi->digest, "bytes", bi->file_bytes, "created", when);
}

/* Options and one FILE; 0 to go on, else an exit status (after the message). */
static int parse(const char *cmd, int argc, char **argv, const struct option *opts, const char **data, bool *force)
{
    int o;
    while ((o = getopt_long(argc, argv, ":", opts, NULL)) != -1) {
        if (o == 'd')
            *data = optarg;
        else if (o == 'f')
            *force = true;
        else {
            fprintf(stderr, "slotctl: %s: %s '%s' (see 'slotctl %s --help')\n", cmd,
                    o == ':' ? "option needs a value:" : "unknown option", argv[optind - 1], cmd);
            return EXIT_USAGE;
        }
    }
    if (argc - optind != 1) {
        fprintf(stderr, "slotctl: %s: %s (see 'slotctl %s --help')\n", cmd,
                argc - optind < 1 ? "missing argument FILE" : "unexpected argument", cmd);
        return EXIT_USAGE;
    }
    return 0;
}

int slotctl_restore(int argc, char **argv)
{
    static const struct option opts[] = {{"data", required_argument, NULL, 'd'},
                                         {"force", no_argument, NULL, 'f'},
                                         {0}};
    const char *data = NULL;
    bool force = false;
    int rc = parse("restore", argc, argv, opts, &data, &force);
    if (rc)
        return rc;
    if (!data || !*data) {
        fprintf(stderr, "slotctl: restore: --data DIR is required (see 'slotctl restore --help')\n");
        return EXIT_USAGE;
    }
    const char *file = argv[optind];
    slot_backup_info bi;
    char err[1024];
    rc = slot_backup_restore(file, data, force ? SLOT_BACKUP_RESTORE_FORCE : 0, &bi, err, sizeof err);
    if (rc != 0) {
        fprintf(stderr, "slotctl: restore: %s\n", err);
        return EXIT_FAIL;
    }
    print_info(file, &bi);
    printf("%-10s %s (data.mdb; start slotd --data %s)\n", "restored", data, data);
    return 0;
}

int slotctl_verify_backup(int argc, char **argv, bool json)
{
    static const struct option opts[] = {{0}};
    const char *unused = NULL;
    bool force = false;
    int rc = parse("verify-backup", argc, argv, opts, &unused, &force);
    if (rc)
        return rc;
    const char *file = argv[optind];
    const char *tmp = getenv("TMPDIR");
    slot_backup_info bi;
    slot_res check;
    memset(&check, 0, sizeof check);
    char err[1024];
    rc = slot_backup_verify(file, tmp && *tmp ? tmp : "/tmp", &bi, slot_check_backup_copy, &check, err, sizeof err);
    if (rc != 0) {
        fprintf(stderr, "slotctl: verify-backup: %s\n", err);
        slot_res_clear(&check);
        return EXIT_FAIL;
    }
    if (json) {
        printf("{\"ok\":true,\"seq\":%" PRIu64 ",\"epoch\":%" PRIu64 ",\"digest\":\"%s\",\"bytes\":%" PRIu64
               ",\"created_at\":%" PRIu64 ",\"events_checked\":%" PRIu64 ",\"holds_checked\":%" PRIu64
               ",\"violations\":%" PRIu32 "}\n",
               bi.seq, bi.epoch, bi.digest, bi.file_bytes, bi.created_at_ms, check.events_checked, check.holds_checked,
               check.nviolations);
    } else {
        print_info(file, &bi);
        printf("%-10s intact (SHA-256, seq and digest match the header)\n", "data");
        printf("%-10s %" PRIu64 " events, %" PRIu64 " holds, %" PRIu32 " violation%s\n", "check", check.events_checked,
               check.holds_checked, check.nviolations, check.nviolations == 1 ? "" : "s");
        uint32_t shown = check.nviolations < SLOT_CHECK_VIOLATIONS_MAX ? check.nviolations : SLOT_CHECK_VIOLATIONS_MAX;
        for (uint32_t i = 0; check.violations && i < shown; i++)
            printf("  invariant %d, event %s: %s\n", check.violations[i].invariant, check.violations[i].event,
                   check.violations[i].detail);
    }
    rc = check.nviolations ? EXIT_FAIL : 0;
    slot_res_clear(&check);
    return rc;
}
