/*
 * slotd.c — the daemon's command line (docs/operations.md, "Flags").
 * Everything else starts in server.c.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <stdbool.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cluster/cluster.h"
#include "config.h"
#include "notify.h"
#include "base/log.h"
#include "server/server.h"
#include "slot/backup.h"
#include "slot/limits.h"
#include "slot/repl.h"
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
            "  --http HOST:PORT        also serve HTTP/1.1 there (POST /v1/OP, GET /v1/events/E,\n"
            "                          /health, /primary, /metrics); port 0 picks a free port, printed\n"
            "                          as the second line \"http listening on HOST:PORT\"; off by default\n"
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
            "  --log-format FORMAT     text: one line per event, \"TIME slotd LEVEL: MESSAGE key=value...\"\n"
            "                          (default); json: one JSON object per line (ts, level, msg, fields)\n"
            "  --log-level LEVEL       error, warn, info (default) or debug: the least severe lines written\n"
            "  --slow-commit-ms MS     log a group commit that takes this long (warn, at most one line a\n"
            "                          second), %u..%u; 0 never (default %u)\n"
            "  --cold-load-keys N      holds of a closed event one batch walks while its keys load\n"
            "                          (the requests that need them wait, the others go on), %u..%u\n"
            "                          (default %u)\n"
            "  --token-file FILE       lines \"frontend TOKEN\" / \"worker TOKEN\" / \"admin TOKEN\";\n"
            "                          clients must send hello first. The file must be mode 600 or stricter\n"
            "  --insecure              allow a non-loopback --listen or --http without --token-file\n"
            "  --no-read-path          answer every hold through a batch, also a certain sold_out\n"
            "                          (for tests comparing the two paths)\n"
            "  --no-cold-park          load a closed event's keys at once, in the batch of the first\n"
            "                          request that needs them (for tests comparing the two paths)\n"
            "  --restore FILE          first put the backup FILE into --data (which must be empty\n"
            "                          or missing; slotctl restore can replace a store), then serve it\n"
            "  --config FILE           read flags from FILE: \"name = value\" lines, name the long\n"
            "                          flag without its dashes, true|false for flags without a\n"
            "                          value, # comments; flags on the command line win\n"
            "\n"
            "replica sets (without --cluster slotd runs standalone; docs/operations.md):\n"
            "  --cluster NAME          join (or found) the replica set NAME ([A-Za-z0-9._:-], 1..%u)\n"
            "  --node ID               this node's id in the set (same characters); needed with --cluster\n"
            "  --etcd URL[,URL]        etcd endpoints (http://H:P); needed with --cluster\n"
            "  --cluster-secret-file FILE  the secret the nodes share (%u..%u bytes); mode 600 or\n"
            "                          stricter, else slotd refuses to start; needed with --cluster\n"
            "  --advertise HOST:PORT   the client address other nodes and not_primary name\n"
            "                          (default: the bound --listen address)\n"
            "  --repl-listen HOST:PORT replication address (default: --listen's host, port 0; the\n"
            "                          bound address is published in etcd)\n"
            "  --heartbeat-ms MS       primary-to-replica heartbeat, %u..%u (default %u)\n"
            "  --failover-timeout-ms MS  a replica that hears nothing from the primary this long\n"
            "                          takes over, %u..%u (default %u)\n"
            "  --repl-timeout-ms MS    a batch's acks must come within this, else silent replicas\n"
            "                          are dropped, %u..%u (default %u)\n"
            "  --min-replicas N        writes are unavailable with fewer replicas, %u..%u (default %u)\n"
            "  --log-keep-records N    the batch log keeps this many records at least (older ones\n"
            "                          go; a member that needs them joins by snapshot), %llu..%llu\n"
            "                          (default %llu)\n"
            "  --log-segment-bytes B   the batch log's segment size, trimmed a segment at a time,\n"
            "                          %llu..%llu (default %llu)\n"
            "  -h, --help              this text\n"
            "  -V, --version           print the version\n"
            "\n"
            "Numbers accept a K, M or G suffix (x1024).\n"
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
            (unsigned long long)SLOT_FEED_RETENTION_MS_DEFAULT,
            SLOT_SLOW_COMMIT_MS_MIN, SLOT_SLOW_COMMIT_MS_MAX, SLOT_SLOW_COMMIT_MS_DEFAULT,
            SLOT_COLD_LOAD_KEYS_MIN, SLOT_COLD_LOAD_KEYS_MAX, SLOT_COLD_LOAD_KEYS_DEFAULT,
            SLOT_CLUSTER_NAME_BYTES_MAX, SLOT_REPL_SECRET_BYTES_MIN, SLOT_REPL_SECRET_BYTES_MAX,
            SLOT_REPL_HEARTBEAT_MS_MIN, SLOT_REPL_HEARTBEAT_MS_MAX, SLOT_REPL_HEARTBEAT_MS_DEFAULT,
            SLOT_FAILOVER_TIMEOUT_MS_MIN, SLOT_FAILOVER_TIMEOUT_MS_MAX, SLOT_FAILOVER_TIMEOUT_MS_DEFAULT,
            SLOT_REPL_TIMEOUT_MS_MIN, SLOT_REPL_TIMEOUT_MS_MAX, SLOT_REPL_TIMEOUT_MS_DEFAULT,
            SLOT_MIN_REPLICAS_MIN, SLOT_MIN_REPLICAS_MAX, SLOT_MIN_REPLICAS_DEFAULT,
            (unsigned long long)SLOT_LOG_KEEP_RECORDS_MIN, (unsigned long long)SLOT_LOG_KEEP_RECORDS_MAX,
            (unsigned long long)SLOT_LOG_KEEP_RECORDS_DEFAULT, (unsigned long long)SLOT_LOG_SEGMENT_BYTES_MIN,
            (unsigned long long)SLOT_LOG_SEGMENT_BYTES_MAX, (unsigned long long)SLOT_LOG_SEGMENT_BYTES_DEFAULT);
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

/* HOST:PORT, [IPv6]:PORT, for flag; host into host[cap]. */
static int parse_hostport(const char *flag, const char *text, char *host_out, size_t cap, uint16_t *port_out)
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
    if (!colon || hlen == 0 || hlen >= cap || !colon[1] || *end || colon[1] == '-' || port > 65535) {
        fprintf(stderr, "slotd: %s: want HOST:PORT with PORT 0..65535 (e.g. 127.0.0.1:7420), got \"%s\"\n", flag,
                text);
        return -1;
    }
    memcpy(host_out, host, hlen);
    host_out[hlen] = 0;
    *port_out = (uint16_t)port;
    return 0;
}

static int parse_listen(const char *text, slot__server_opts *o)
{
    return parse_hostport("--listen", text, o->host, sizeof(o->host), &o->port);
}

/* A cluster name or node id: 1..SLOT_CLUSTER_NAME_BYTES_MAX of [A-Za-z0-9._:-]. */
static int parse_name(const char *flag, const char *text)
{
    size_t n = strlen(text);
    bool ok = n >= 1 && n <= SLOT_CLUSTER_NAME_BYTES_MAX && strspn(text,
        "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._:-") == n;
    if (!ok)
        fprintf(stderr, "slotd: %s: want 1..%u characters of [A-Za-z0-9._:-], got \"%s\"\n", flag,
                SLOT_CLUSTER_NAME_BYTES_MAX, text);
    return ok ? 0 : -1;
}

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
static int check_exposure(const slot__server_opts *o)
{
    if (o->token_file || o->insecure)
        return 0;
    bool listen_bad = !host_is_loopback(o->host);
    if (!listen_bad && !(o->http && !host_is_loopback(o->http_host)))
        return 0;
    const char *host = listen_bad ? o->host : o->http_host;
    bool v6 = strchr(host, ':') != NULL;
    fprintf(stderr, "slotd: %s %s%s%s:%u: refusing a non-loopback address without --token-file FILE (or pass --insecure)\n",
            listen_bad ? "--listen" : "--http", v6 ? "[" : "", host, v6 ? "]" : "",
            (unsigned)(listen_bad ? o->port : o->http_port));
    return -1;
}

enum { O_DATA = 256, O_LISTEN, O_DUR, O_LINE, O_MAP, O_SWEEP, O_QUEUE, O_INFLIGHT, O_CONNS, O_OUT, O_IDLE, O_LINE_TO, O_WRITE_TO, O_FEED_RET, O_TOKENS, O_INSECURE, O_HELP, O_VERSION, O_HTTP,
       O_CLUSTER, O_NODE, O_ETCD, O_SECRET, O_ADVERTISE, O_REPL_LISTEN, O_HEARTBEAT, O_FAILOVER, O_REPL_TO, O_MIN_REPLICAS,
       O_LOG_FORMAT, O_LOG_LEVEL, O_SLOW_COMMIT, O_LOG_KEEP, O_LOG_SEG, O_NO_READ_PATH,
       O_NO_COLD_PARK, O_COLD_LOAD_KEYS };

/* --log-format and --log-level, set up (log.h) once the flags are read. */
static slot__log_format log_format = SLOT__LOG_TEXT;
static slot__log_level log_level = SLOT__LOG_INFO;

/* --config FILE (config.h): read after the command line, which is then
 * parsed again so that its flags win. */
enum { O_CONFIG = 1000, O_RESTORE };
static const char *config_path;
static const char *restore_path; /* --restore FILE: command line only */
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
        {"feed-retention-ms", required_argument, NULL, O_FEED_RET},
        {"insecure", no_argument, NULL, O_INSECURE}, {"no-read-path", no_argument, NULL, O_NO_READ_PATH}, {"help", no_argument, NULL, O_HELP},
        {"version", no_argument, NULL, O_VERSION}, {"cluster", required_argument, NULL, O_CLUSTER},
        {"node", required_argument, NULL, O_NODE}, {"etcd", required_argument, NULL, O_ETCD},
        {"cluster-secret-file", required_argument, NULL, O_SECRET}, {"advertise", required_argument, NULL, O_ADVERTISE},
        {"repl-listen", required_argument, NULL, O_REPL_LISTEN}, {"heartbeat-ms", required_argument, NULL, O_HEARTBEAT},
        {"failover-timeout-ms", required_argument, NULL, O_FAILOVER}, {"repl-timeout-ms", required_argument, NULL, O_REPL_TO},
        {"min-replicas", required_argument, NULL, O_MIN_REPLICAS}, {"config", required_argument, NULL, O_CONFIG},
        {"log-keep-records", required_argument, NULL, O_LOG_KEEP}, {"log-segment-bytes", required_argument, NULL, O_LOG_SEG},
        {"log-format", required_argument, NULL, O_LOG_FORMAT}, {"log-level", required_argument, NULL, O_LOG_LEVEL},
        {"slow-commit-ms", required_argument, NULL, O_SLOW_COMMIT},
        {"no-cold-park", no_argument, NULL, O_NO_COLD_PARK}, {"cold-load-keys", required_argument, NULL, O_COLD_LOAD_KEYS},
        {"restore", required_argument, NULL, O_RESTORE}, {"http", required_argument, NULL, O_HTTP},
        {NULL, 0, NULL, 0}};
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
        case O_HTTP:
            rc = parse_hostport("--http", optarg, o->http_host, sizeof(o->http_host), &o->http_port);
            o->http = rc == 0;
            break;
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
        case O_NO_READ_PATH: o->no_read_path = true; break;
        case O_NO_COLD_PARK: o->no_cold_park = true; break;
        case O_COLD_LOAD_KEYS: rc = parse_num("--cold-load-keys", optarg, SLOT_COLD_LOAD_KEYS_MIN, SLOT_COLD_LOAD_KEYS_MAX, &v); o->cold_load_keys = (uint32_t)v; break;
        case O_CLUSTER: o->cluster = optarg; rc = parse_name("--cluster", optarg); break;
        case O_NODE: o->node_id = optarg; rc = parse_name("--node", optarg); cluster_flags = true; break;
        case O_ETCD: o->etcd = optarg; cluster_flags = true; break;
        case O_SECRET: o->secret_file = optarg; cluster_flags = true; break;
        case O_ADVERTISE:
            rc = parse_hostport("--advertise", optarg, o->adv_host, sizeof(o->adv_host), &o->adv_port);
            if (rc == 0 && o->adv_port == 0) {
                fprintf(stderr, "slotd: --advertise: the port must be 1..65535\n");
                rc = -1;
            }
            cluster_flags = true;
            break;
        case O_REPL_LISTEN:
            rc = parse_hostport("--repl-listen", optarg, o->repl_host, sizeof(o->repl_host), &o->repl_port);
            cluster_flags = true;
            break;
        case O_HEARTBEAT: rc = parse_num("--heartbeat-ms", optarg, SLOT_REPL_HEARTBEAT_MS_MIN, SLOT_REPL_HEARTBEAT_MS_MAX, &v); o->heartbeat_ms = (uint32_t)v; cluster_flags = true; break;
        case O_FAILOVER: rc = parse_num("--failover-timeout-ms", optarg, SLOT_FAILOVER_TIMEOUT_MS_MIN, SLOT_FAILOVER_TIMEOUT_MS_MAX, &v); o->failover_timeout_ms = (uint32_t)v; cluster_flags = true; break;
        case O_REPL_TO: rc = parse_num("--repl-timeout-ms", optarg, SLOT_REPL_TIMEOUT_MS_MIN, SLOT_REPL_TIMEOUT_MS_MAX, &v); o->repl_timeout_ms = (uint32_t)v; cluster_flags = true; break;
        case O_MIN_REPLICAS: rc = parse_num("--min-replicas", optarg, SLOT_MIN_REPLICAS_MIN, SLOT_MIN_REPLICAS_MAX, &v); o->min_replicas = (uint32_t)v; cluster_flags = true; break;
        case O_LOG_KEEP: rc = parse_num("--log-keep-records", optarg, SLOT_LOG_KEEP_RECORDS_MIN, SLOT_LOG_KEEP_RECORDS_MAX, &v); o->log_keep_records = v; cluster_flags = true; break;
        case O_LOG_SEG: rc = parse_num("--log-segment-bytes", optarg, SLOT_LOG_SEGMENT_BYTES_MIN, SLOT_LOG_SEGMENT_BYTES_MAX, &v); o->log_segment_bytes = v; cluster_flags = true; break;
        case O_CONFIG: config_path = optarg; break;
        case O_LOG_FORMAT:
            if ((rc = slot__log_format_parse(optarg, &log_format)) != 0)
                fprintf(stderr, "slotd: --log-format: want text or json, got \"%s\"\n", optarg);
            break;
        case O_LOG_LEVEL:
            if ((rc = slot__log_level_parse(optarg, &log_level)) != 0)
                fprintf(stderr, "slotd: --log-level: want error, warn, info or debug, got \"%s\"\n", optarg);
            break;
        case O_SLOW_COMMIT: rc = parse_num("--slow-commit-ms", optarg, SLOT_SLOW_COMMIT_MS_MIN, SLOT_SLOW_COMMIT_MS_MAX, &v); o->slow_commit_ms = (uint32_t)v; break;
        case O_RESTORE: restore_path = optarg; break;
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
        .slow_commit_ms = SLOT_SLOW_COMMIT_MS_DEFAULT,
        .cold_load_keys = SLOT_COLD_LOAD_KEYS_DEFAULT,
        .heartbeat_ms = SLOT_REPL_HEARTBEAT_MS_DEFAULT,
        .failover_timeout_ms = SLOT_FAILOVER_TIMEOUT_MS_DEFAULT,
        .repl_timeout_ms = SLOT_REPL_TIMEOUT_MS_DEFAULT,
        .min_replicas = SLOT_MIN_REPLICAS_DEFAULT,
        .log_keep_records = SLOT_LOG_KEEP_RECORDS_DEFAULT,
        .log_segment_bytes = SLOT_LOG_SEGMENT_BYTES_DEFAULT,
    };
    snprintf(o.host, sizeof(o.host), "%s", SLOT_HOST_DEFAULT);
    if (parse_args(argc, argv, &o) != 0)
        return 64; /* EX_USAGE, as slotctl and slot-bench */
    if (config_path) {
        static const char *const refused[] = {"config", "restore", "help", "version", NULL};
        if (slot__config_read(config_path, known_opts, refused, apply_config_line, &o) != 0)
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
