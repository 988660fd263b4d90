/*
 * slotd.c — the daemon's command line (docs/operations.md, "Flags").
 * Everything else starts in server.c.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "server.h"
#include "slot/limits.h"
#include "slot_config.h"

static void usage(FILE *out)
{
    fprintf(out,
            "usage: slotd [options]\n"
            "\n"
            "slotd sells the units of flash-sale events over TCP (newline-delimited JSON,\n"
            "protocol v1), keeping them in an LMDB store. A held/confirmed/released answer\n"
            "is sent only after the commit that made it durable.\n"
            "\n"
            "options:\n"
            "  --data DIR              data folder, created when missing (default %s)\n"
            "  --listen HOST:PORT      address to listen on (default %s); port 0 picks a free\n"
            "                          port. The first line on stdout is \"listening on HOST:PORT\"\n"
            "  --durability MODE       sync: fsync every group commit (default); nosync: leave\n"
            "                          flushing to the OS (a machine crash may lose commits)\n"
            "  --max-line BYTES        longest request line, without its newline, %u..%u\n"
            "                          (default %u)\n"
            "  --map-size-max BYTES    largest the LMDB map may grow to, %llu..%llu\n"
            "                          (default %llu); then writes are answered storage_full\n"
            "  --sweep-interval-ms MS  how often expired holds are swept, %u..%u (default %u)\n"
            "  --max-queue N           queued write requests before new ones are answered\n"
            "                          overloaded, %u..%u (default %u)\n"
            "  --max-inflight N        unanswered requests per connection before reading from\n"
            "                          it pauses, %u..%u (default %u)\n"
            "  --max-connections N     open connections; accepting pauses at the limit, %u..%u\n"
            "                          (default %u)\n"
            "  --max-output BYTES      unsent reply bytes per connection before reading from it\n"
            "                          pauses, %u..%u (default %u)\n"
            "  --idle-timeout-ms MS    close a connection silent this long with nothing pending,\n"
            "                          %u..%u; 0 never (default %u)\n"
            "  --line-timeout-ms MS    close a connection whose started line stays unfinished this\n"
            "                          long, %u..%u (default %u)\n"
            "  --write-timeout-ms MS   drop a client that takes none of its replies this long,\n"
            "                          %u..%u (default %u)\n"
            "  --feed-retention-ms MS  keep feed entries every consumer acked this long, %llu..%llu\n"
            "                          (default %llu, 7 days); then they are trimmed\n"
            "                          Numbers accept a K, M or G suffix (x1024).\n"
            "  --token-file FILE       lines \"frontend TOKEN\" / \"worker TOKEN\" / \"admin TOKEN\";\n"
            "                          clients must send hello first. The file must be mode 600 or stricter\n"
            "  --insecure              allow a non-loopback --listen without --token-file\n"
            "  --config FILE           read flags from FILE: \"name = value\" lines, name the long\n"
            "                          flag without its dashes, true|false for flags without a\n"
            "                          value, # comments; flags on the command line win\n"
            "  -h, --help              this text\n"
            "  -V, --version           print the version\n"
            "\n"
            "SIGINT/SIGTERM stop the server cleanly: the batch in flight commits, queued\n"
            "requests are answered shutting_down. One slotd per --data folder (locked).\n"
            "Exit status: 0 after a clean stop; 1 the server could not start or failed;\n"
            "64 a usage error.\n",
            SLOT_DATA_DEFAULT, SLOT_LISTEN_DEFAULT,
            SLOT_LINE_BYTES_MIN, SLOT_LINE_BYTES_MAX, SLOT_LINE_BYTES_DEFAULT,
            (unsigned long long)SLOT_MAP_BYTES_MAX_MIN, (unsigned long long)SLOT_MAP_BYTES_MAX_MAX,
            (unsigned long long)SLOT_MAP_BYTES_MAX_DEFAULT,
            SLOT_SWEEP_INTERVAL_MS_MIN, SLOT_SWEEP_INTERVAL_MS_MAX, SLOT_SWEEP_INTERVAL_MS_DEFAULT,
            SLOT_QUEUE_REQUESTS_MIN, SLOT_QUEUE_REQUESTS_MAX, SLOT_QUEUE_REQUESTS_DEFAULT,
            SLOT_CONN_INFLIGHT_MIN, SLOT_CONN_INFLIGHT_MAX, SLOT_CONN_INFLIGHT_DEFAULT,
            SLOT_CONNS_MIN, SLOT_CONNS_MAX, SLOT_CONNS_DEFAULT,
            SLOT_CONN_OUT_BYTES_MIN, SLOT_CONN_OUT_BYTES_MAX, SLOT_CONN_OUT_BYTES_DEFAULT,
            SLOT_IDLE_TIMEOUT_MS_MIN, SLOT_IDLE_TIMEOUT_MS_MAX, SLOT_IDLE_TIMEOUT_MS_DEFAULT,
            SLOT_LINE_TIMEOUT_MS_MIN, SLOT_LINE_TIMEOUT_MS_MAX, SLOT_LINE_TIMEOUT_MS_DEFAULT,
            SLOT_WRITE_TIMEOUT_MS_MIN, SLOT_WRITE_TIMEOUT_MS_MAX, SLOT_WRITE_TIMEOUT_MS_DEFAULT,
            (unsigned long long)SLOT_FEED_RETENTION_MS_MIN, (unsigned long long)SLOT_FEED_RETENTION_MS_MAX,
            (unsigned long long)SLOT_FEED_RETENTION_MS_DEFAULT);
}

/* Parses a whole decimal number with an optional K/M/G (x1024) suffix, within [lo, hi]. */
static int parse_num(const char *flag, const char *text, uint64_t lo, uint64_t hi, uint64_t *out)
{
    char *end = NULL;
    errno = 0;
    unsigned long long v = strtoull(text, &end, 10);
    uint64_t mul = 1;
    if (end && *end && end[1] == 0) {
        switch (*end) {
        case 'K': case 'k': mul = 1ull << 10; end++; break;
        case 'M': case 'm': mul = 1ull << 20; end++; break;
        case 'G': case 'g': mul = 1ull << 30; end++; break;
        default: break;
        }
    }
    if (errno || end == text || *end || text[0] == '-' || (mul > 1 && v > UINT64_MAX / mul) || v * mul < lo ||
        v * mul > hi) {
        fprintf(stderr, "slotd: %s: \"%s\" is not a number in %" PRIu64 "..%" PRIu64 "\n", flag, text, lo, hi);
        return -1;
    }
    *out = v * mul;
    return 0;
}

/* HOST:PORT, [IPv6]:PORT. */
static int parse_listen(const char *text, slot__server_opts *o)
{
    const char *colon = strrchr(text, ':');
    const char *host = text;
    size_t hlen = colon ? (size_t)(colon - text) : 0;
    if (colon && text[0] == '[' && hlen >= 2 && text[hlen - 1] == ']') {
        host++;
        hlen -= 2;
    }
    char *end = NULL;
    unsigned long port = colon ? strtoul(colon + 1, &end, 10) : 0;
    if (!colon || hlen == 0 || hlen >= sizeof(o->host) || !colon[1] || *end || colon[1] == '-' || port > 65535) {
        fprintf(stderr, "slotd: --listen: want HOST:PORT with PORT 0..65535 (e.g. 127.0.0.1:7420), got \"%s\"\n", text);
        return -1;
    }
    memcpy(o->host, host, hlen);
    o->host[hlen] = 0;
    o->port = (uint16_t)port;
    return 0;
}

enum { O_DATA = 256, O_LISTEN, O_DUR, O_LINE, O_MAP, O_SWEEP, O_QUEUE, O_INFLIGHT, O_CONNS, O_OUT, O_IDLE, O_LINE_TO, O_WRITE_TO, O_FEED_RET, O_TOKENS, O_INSECURE, O_HELP, O_VERSION };

/* --config FILE (config.h): read after the command line, which is then
 * parsed again so that its flags win. */
enum { O_CONFIG = 1000 };
static const char *config_path;
static const struct option *known_opts; /* parse_args' table, for the config reader */

static int parse_args(int argc, char **argv, slot__server_opts *o)
{
    static const struct option longopts[] = {
        {"data", required_argument, NULL, O_DATA}, {"listen", required_argument, NULL, O_LISTEN},
        {"durability", required_argument, NULL, O_DUR}, {"max-line", required_argument, NULL, O_LINE},
        {"map-size-max", required_argument, NULL, O_MAP}, {"sweep-interval-ms", required_argument, NULL, O_SWEEP},
        {"max-queue", required_argument, NULL, O_QUEUE}, {"max-inflight", required_argument, NULL, O_INFLIGHT},
        {"max-connections", required_argument, NULL, O_CONNS}, {"token-file", required_argument, NULL, O_TOKENS},
        {"max-output", required_argument, NULL, O_OUT}, {"idle-timeout-ms", required_argument, NULL, O_IDLE},
        {"line-timeout-ms", required_argument, NULL, O_LINE_TO}, {"write-timeout-ms", required_argument, NULL, O_WRITE_TO},
        {"feed-retention-ms", required_argument, NULL, O_FEED_RET}, {"insecure", no_argument, NULL, O_INSECURE},
        {"help", no_argument, NULL, O_HELP}, {"version", no_argument, NULL, O_VERSION},
        {"config", required_argument, NULL, O_CONFIG}, {NULL, 0, NULL, 0}};
    known_opts = longopts;
    int ch;
    uint64_t v;
    opterr = 0;
    while ((ch = getopt_long(argc, argv, ":hV", longopts, NULL)) != -1) {
        int rc = 0;
        switch (ch) {
        case O_DATA:
            o->data_dir = optarg;
            if (!*optarg) {
                fprintf(stderr, "slotd: --data: the folder name is empty\n");
                rc = -1;
            }
            break;
        case O_LISTEN: rc = parse_listen(optarg, o); break;
        case O_DUR:
            if (strcmp(optarg, "sync") != 0 && strcmp(optarg, "nosync") != 0) {
                fprintf(stderr, "slotd: --durability: want sync or nosync, got \"%s\"\n", optarg);
                rc = -1;
            }
            o->nosync = strcmp(optarg, "nosync") == 0;
            break;
        case O_LINE: rc = parse_num("--max-line", optarg, SLOT_LINE_BYTES_MIN, SLOT_LINE_BYTES_MAX, &v); o->line_bytes_max = (uint32_t)v; break;
        case O_MAP: rc = parse_num("--map-size-max", optarg, SLOT_MAP_BYTES_MAX_MIN, SLOT_MAP_BYTES_MAX_MAX, &v); o->map_bytes_max = v; break;
        case O_SWEEP: rc = parse_num("--sweep-interval-ms", optarg, SLOT_SWEEP_INTERVAL_MS_MIN, SLOT_SWEEP_INTERVAL_MS_MAX, &v); o->sweep_interval_ms = (uint32_t)v; break;
        case O_QUEUE: rc = parse_num("--max-queue", optarg, SLOT_QUEUE_REQUESTS_MIN, SLOT_QUEUE_REQUESTS_MAX, &v); o->queue_max = (uint32_t)v; break;
        case O_INFLIGHT: rc = parse_num("--max-inflight", optarg, SLOT_CONN_INFLIGHT_MIN, SLOT_CONN_INFLIGHT_MAX, &v); o->conn_inflight_max = (uint32_t)v; break;
        case O_CONNS: rc = parse_num("--max-connections", optarg, SLOT_CONNS_MIN, SLOT_CONNS_MAX, &v); o->conns_max = (uint32_t)v; break;
        case O_OUT: rc = parse_num("--max-output", optarg, SLOT_CONN_OUT_BYTES_MIN, SLOT_CONN_OUT_BYTES_MAX, &v); o->out_bytes_max = (uint32_t)v; break;
        case O_IDLE: rc = parse_num("--idle-timeout-ms", optarg, SLOT_IDLE_TIMEOUT_MS_MIN, SLOT_IDLE_TIMEOUT_MS_MAX, &v); o->idle_timeout_ms = (uint32_t)v; break;
        case O_LINE_TO: rc = parse_num("--line-timeout-ms", optarg, SLOT_LINE_TIMEOUT_MS_MIN, SLOT_LINE_TIMEOUT_MS_MAX, &v); o->line_timeout_ms = (uint32_t)v; break;
        case O_WRITE_TO: rc = parse_num("--write-timeout-ms", optarg, SLOT_WRITE_TIMEOUT_MS_MIN, SLOT_WRITE_TIMEOUT_MS_MAX, &v); o->write_timeout_ms = (uint32_t)v; break;
        case O_FEED_RET: rc = parse_num("--feed-retention-ms", optarg, SLOT_FEED_RETENTION_MS_MIN, SLOT_FEED_RETENTION_MS_MAX, &v); o->feed_retention_ms = v; break;
        case O_TOKENS: o->token_file = optarg; break;
        case O_INSECURE: o->insecure = true; break;
        case O_CONFIG: config_path = optarg; break;
        case 'h':
        case O_HELP: usage(stdout); exit(0);
        case 'V':
        case O_VERSION: printf("slotd %s\n", SLOT_VERSION); exit(0);
        case ':':
            fprintf(stderr, "slotd: option \"%s\" needs a value (see slotd --help)\n", argv[optind - 1]);
            return -1;
        default:
            fprintf(stderr, "slotd: unknown option \"%s\" (see slotd --help)\n", argv[optind - 1]);
            return -1;
        }
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
    slot__server_opts o = {
        .data_dir = SLOT_DATA_DEFAULT,
        .port = SLOT_PORT_DEFAULT,
        .line_bytes_max = SLOT_LINE_BYTES_DEFAULT,
        .map_bytes_max = SLOT_MAP_BYTES_MAX_DEFAULT,
        .sweep_interval_ms = SLOT_SWEEP_INTERVAL_MS_DEFAULT,
        .queue_max = SLOT_QUEUE_REQUESTS_DEFAULT,
        .conn_inflight_max = SLOT_CONN_INFLIGHT_DEFAULT,
        .conns_max = SLOT_CONNS_DEFAULT,
        .out_bytes_max = SLOT_CONN_OUT_BYTES_DEFAULT,
        .idle_timeout_ms = SLOT_IDLE_TIMEOUT_MS_DEFAULT,
        .line_timeout_ms = SLOT_LINE_TIMEOUT_MS_DEFAULT,
        .write_timeout_ms = SLOT_WRITE_TIMEOUT_MS_DEFAULT,
        .feed_retention_ms = SLOT_FEED_RETENTION_MS_DEFAULT,
    };
    snprintf(o.host, sizeof(o.host), "%s", SLOT_HOST_DEFAULT);
    if (parse_args(argc, argv, &o) != 0)
        return 64; /* EX_USAGE, as slotctl and slot-bench */
    if (config_path) {
        static const char *const refused[] = {"config", "help", "version", NULL};
        if (slot__config_read(config_path, known_opts, refused, apply_config_line, &o) != 0)
            return 64;
        optind = 0;
        if (parse_args(argc, argv, &o) != 0) /* the command line wins */
            return 64;
    }
    return slot__server_run(&o);
}
