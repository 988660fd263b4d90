/*
 * slotd.c — the daemon's command line (docs/operations.md, "Flags"): the
 * flags come from the table in flags.c (daemon_int.h), which also writes --help
 * and the man page's list; this file reads them (the ones of kind
 * SLOT__FLAG_OWN itself), the --config file after them, checks the flags
 * that go together, and starts the server. Everything else starts in
 * server.c.
 */
#include <arpa/inet.h>
#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cluster/cluster.h"
#include "daemon_int.h"
#include "base/log.h"
#include "slot/assert.h"
#include "server/server.h"
#include "slot/backup.h"
#include "slot_config.h"

/* A cluster flag other than --cluster was given, on the command line or in
 * the config file; check_cluster refuses it without --cluster. */
static bool cluster_flags;

/* The cluster flags go together: --cluster needs --node, --etcd and the
 * secret; they are refused without --cluster. */
static int check_cluster(const slot__server_opts *o)
{
    if (!o->cluster) {
        if (cluster_flags)
            fprintf(stderr, "slotd: --node, --etcd, --advertise, --repl-listen, --cluster-secret-file and the\n"
                            "replication timings need --cluster\n");
        return cluster_flags ? -1 : 0;
    }
    if (!o->node_id || !o->etcd || !o->secret_file) {
        fprintf(stderr, "slotd: --cluster needs --node, --etcd and --cluster-secret-file\n");
        return -1;
    }
    return 0;
}

/* host is a numeric loopback address (127.0.0.0/8, ::1); a name, or not an
 * address at all, is not (the server then says "not a numeric address"). */
static bool host_is_loopback(const char *host)
{
    struct in_addr a4;
    struct in6_addr a6;
    if (inet_pton(AF_INET, host, &a4) == 1)
        return (ntohl(a4.s_addr) >> 24) == 127;
    return inet_pton(AF_INET6, host, &a6) == 1 && IN6_IS_ADDR_LOOPBACK(&a6);
}

/* Without --token-file every connection is admin: a non-loopback --listen
 * or --http then needs --insecure (docs/operations.md, "Tokens"). A usage
 * error, found before anything starts. */
static bool host_is_numeric(const char *host)
{
    struct in_addr a4;
    struct in6_addr a6;
    return inet_pton(AF_INET, host, &a4) == 1 || inet_pton(AF_INET6, host, &a6) == 1;
}

static int check_exposure(const slot__server_opts *o)
{
    /* HOST is an address, not a name (no resolver runs at start): a usage
     * error, said as such before the loopback rule would call it exposed. */
    const char *name = !host_is_numeric(o->host)                   ? o->host
                       : o->http && !host_is_numeric(o->http_host) ? o->http_host
                                                                   : NULL;
    if (name) {
        fprintf(stderr,
                "slotd: %s %s: HOST must be a numeric IPv4 or IPv6 address (e.g. 127.0.0.1, [::1]), not a name\n",
                name == o->host ? "--listen" : "--http", name);
        return -1;
    }
    if (o->token_file || o->insecure)
        return 0;
    bool listen_bad = !host_is_loopback(o->host);
    if (!listen_bad && !(o->http && !host_is_loopback(o->http_host)))
        return 0;
    const char *host = listen_bad ? o->host : o->http_host;
    bool v6 = strchr(host, ':') != NULL;
    fprintf(stderr,
            "slotd: %s %s%s%s:%u: refusing a non-loopback address without --token-file FILE (or pass --insecure)\n",
            listen_bad ? "--listen" : "--http", v6 ? "[" : "", host, v6 ? "]" : "",
            (unsigned)(listen_bad ? o->port : o->http_port));
    return -1;
}

/* --log-format and --log-level, set up (log.h) once the flags are read. */
static slot__log_format log_format = SLOT__LOG_TEXT;
static slot__log_level log_level = SLOT__LOG_INFO;

/* --config FILE (config.h): read after the command line, which is then
 * parsed again so that its flags win. */
static const char *config_path;
static const char *restore_path; /* --restore FILE: command line only */
/* getopt_long's tables, from the flag table (daemon_int.h): the command line's
 * (with the hidden --help-man) and the config file's (the table's flags
 * only: config.c checks a file's names against it). */
static struct option cmdline_opts[SLOT__FLAGS_MAX + 2], config_opts[SLOT__FLAGS_MAX + 1];

/* A flag the table leaves to slotd.c (SLOT__FLAG_OWN). 0, or -1 after a message. */
static int own_flag(const slot__flag *f, const char *arg, slot__server_opts *o)
{
    int rc = 0;
    switch (f->id) {
    case OPT_HTTP:
        rc = slot__flag_hostport("--http", arg, o->http_host, sizeof(o->http_host), &o->http_port);
        o->http = rc == 0;
        break;
    case OPT_DUR:
        if (!arg || (strcmp(arg, "sync") != 0 && strcmp(arg, "nosync") != 0 && strcmp(arg, "pipelined") != 0)) {
            fprintf(stderr, "slotd: --durability: want sync, nosync or pipelined, got \"%s\"\n", arg ? arg : "");
            rc = -1;
            break;
        }
        o->nosync = strcmp(arg, "nosync") == 0;
        o->pipelined = strcmp(arg, "pipelined") == 0;
        break;
    case OPT_ADVERTISE:
        rc = slot__flag_hostport("--advertise", arg, o->adv_host, sizeof(o->adv_host), &o->adv_port);
        if (rc == 0 && o->adv_port == 0) {
            fprintf(stderr, "slotd: --advertise: the port must be 1..65535\n");
            rc = -1;
        }
        break;
    case OPT_CONFIG:
        config_path = arg;
        break;
    case OPT_RESTORE:
        restore_path = arg;
        break;
    case OPT_LOG_FORMAT:
        if ((rc = slot__log_format_parse(arg, &log_format)) != 0)
            fprintf(stderr, "slotd: --log-format: want text or json, got \"%s\"\n", arg ? arg : "");
        break;
    case OPT_LOG_LEVEL:
        if ((rc = slot__log_level_parse(arg, &log_level)) != 0)
            fprintf(stderr, "slotd: --log-level: want error, warn, info or debug, got \"%s\"\n", arg ? arg : "");
        break;
    case OPT_HELP:
        slot__flags_usage(stdout);
        exit(0);
    case OPT_VERSION:
        printf("slotd %s\n", SLOT_VERSION);
        exit(0);
    default:
        SLOT_ASSERT(!"own_flag: a flag of kind SLOT__FLAG_OWN without its case");
    }
    return rc;
}

static int parse_args(int argc, char **argv, slot__server_opts *o)
{
    static const struct option hidden[] = {{"help-man", no_argument, NULL, OPT_HELP_MAN}};
    const char *shortopts = slot__flags_longopts(cmdline_opts, sizeof cmdline_opts / sizeof cmdline_opts[0], hidden, 1);
    int ch;
    opterr = 0;
    while ((ch = getopt_long(argc, argv, shortopts, cmdline_opts, NULL)) != -1) {
        if (ch == 'h')
            ch = OPT_HELP;
        if (ch == 'V')
            ch = OPT_VERSION;
        if (ch == OPT_HELP_MAN) {
            slot__flags_man(stdout);
            exit(0);
        }
        const slot__flag *f = ch == ':' || ch == '?' ? NULL : slot__flag_by_id(ch);
        if (ch == ':') {
            fprintf(stderr, "slotd: option \"%s\" needs a value (see slotd --help)\n", argv[optind - 1]);
            return -1;
        }
        if (!f) {
            fprintf(stderr, "slotd: unknown option \"%s\" (see slotd --help)\n", argv[optind - 1]);
            return -1;
        }
        int rc = slot__flag_apply(f, optarg, o);
        if (rc > 0)
            rc = own_flag(f, optarg, o);
        cluster_flags |= f->needs_cluster;
        if (rc != 0)
            return -1;
    }
    if (optind < argc) {
        fprintf(stderr, "slotd: unexpected argument \"%s\" (see slotd --help)\n", argv[optind]);
        return -1;
    }
    return 0;
}

/* One line of the config file, as the argv {"slotd", "--name=value"}. */
static int apply_config_line(int argc, char **argv, void *ctx)
{
    optind = 0; /* glibc: start getopt afresh for each argv */
    return parse_args(argc, argv, ctx);
}

int main(int argc, char **argv)
{
    slot__server_opts o = {0};
    slot__flags_defaults(&o);
    if (parse_args(argc, argv, &o) != 0)
        return 64; /* EX_USAGE, as slotctl and slot-bench */
    if (config_path) {
        static const char *const refused[] = {"config", "restore", "help", "version", NULL};
        slot__flags_longopts(config_opts, sizeof config_opts / sizeof config_opts[0], NULL, 0);
        if (slot__config_read(config_path, config_opts, refused, apply_config_line, &o) != 0)
            return 64;
        optind = 0;
        if (parse_args(argc, argv, &o) != 0) /* the command line wins */
            return 64;
    }
    if (check_cluster(&o) != 0 || check_exposure(&o) != 0) /* after the file too: its lines come one at a time */
        return 64;
    slot__log_setup(log_format, log_level);
    if (restore_path) { /* docs/operations.md, "Backups": restore, then serve the folder */
        slot_backup_info bi;
        char err[1024];
        if (slot_backup_restore(restore_path, o.data_dir, 0, &bi, err, sizeof err) != 0) {
            slot__log(SLOT__LOG_ERROR, "restore failed", SLOT__LF_S("file", restore_path), SLOT__LF_S("error", err));
            return 1;
        }
        slot__log(SLOT__LOG_INFO, "restored a backup", SLOT__LF_S("file", restore_path), SLOT__LF_S("data", o.data_dir),
                  SLOT__LF_U("seq", bi.seq), SLOT__LF_S("digest", bi.digest));
    }
    static const slot__server_hooks hooks = {
        .cluster_start = slot__cluster_start,
        .cluster_stop = slot__cluster_stop,
        .cluster_free = slot__cluster_free,
        .ready = slot__notify_ready,
        .stopping = slot__notify_stopping,
    };
    return slot__server_run(&o, &hooks);
}
