/*
 * micro_proto — the protocol layer alone: slot_proto_parse (request lines to
 * slot_req) and slot_proto_encode (slot_res to reply lines), requests/s on
 * one core; and the client library's codec beside it (slot_req_encode,
 * slot_reply_parse), which is what a load generator pays per request.
 * Each measurement is bounded by --seconds and --max-ops.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "micro.h"
#include "slot/client.h"
#include "slot/proto.h"

#define MICRO_CHECK_EVERY 1024          /* look at the clock once per this many ops */
#define MICRO_PROTO_SECONDS_DEFAULT 1.0 /* --seconds: per line */
#define MICRO_OPS_DEFAULT 50000000u     /* --max-ops: per line */
#define MICRO_OPS_MAX (UINT64_MAX / 2)

static const char *const request_lines[] = {
    "{\"op\":\"hold\",\"event\":\"hr-0123456789abcdef\",\"user\":\"u1234567\",\"request\":\"r12d687\",\"qty\":1}",
    "{\"op\":\"confirm\",\"event\":\"hr-0123456789abcdef\",\"hold\":\"000000000012d687f00dfeedcafe1234\",\"user\":"
    "\"u1234567\"}",
    "{\"op\":\"get_hold\",\"event\":\"hr-0123456789abcdef\",\"hold\":\"000000000012d687f00dfeedcafe1234\",\"user\":"
    "\"u1234567\"}",
    "{\"id\":42,\"op\":\"event\",\"event\":\"hr-0123456789abcdef\"}",
};
#define LINES_N (sizeof(request_lines) / sizeof(request_lines[0]))

typedef struct micro_ctx {
    slot_req req;
    slot_res held, sold_out, error;
    char buf[1024];
    size_t lens[LINES_N];
    char reply_line[256];
    size_t reply_len;
    uint64_t sink; /* keeps the compiler from dropping the work */
} micro_ctx;

static void op_parse(micro_ctx *c, uint64_t i)
{
    char msg[160];
    size_t k = i % LINES_N;
    c->sink += (uint64_t)slot_proto_parse(request_lines[k], c->lens[k], &c->req, msg, sizeof(msg));
}

static void op_parse_hold(micro_ctx *c, uint64_t i)
{
    (void)i;
    char msg[160];
    c->sink += (uint64_t)slot_proto_parse(request_lines[0], c->lens[0], &c->req, msg, sizeof(msg));
}

static void op_encode(micro_ctx *c, uint64_t i)
{
    const slot_res *r = i % 3 == 0 ? &c->held : i % 3 == 1 ? &c->sold_out : &c->error;
    c->sink += slot_proto_encode(&c->req, r, c->buf, sizeof(c->buf));
}

static void op_hold_roundtrip(micro_ctx *c, uint64_t i)
{
    (void)i;
    char msg[160];
    c->sink += (uint64_t)slot_proto_parse(request_lines[0], c->lens[0], &c->req, msg, sizeof(msg));
    c->sink += slot_proto_encode(&c->req, &c->held, c->buf, sizeof(c->buf));
}

static void op_client_encode(micro_ctx *c, uint64_t i)
{
    slot_req req;
    char user[24], key[24];
    snprintf(user, sizeof(user), "u%" PRIu64, i);
    snprintf(key, sizeof(key), "r%" PRIx64, i);
    slot_req_hold(&req, "hr-0123456789abcdef", user, key, 1);
    c->sink += (uint64_t)slot_req_encode(&req, c->buf, sizeof(c->buf));
}

static void op_client_parse(micro_ctx *c, uint64_t i)
{
    (void)i;
    slot_reply r;
    c->sink += (uint64_t)slot_reply_parse(c->reply_line, c->reply_len, &r);
    c->sink += r.qty;
    slot_reply_clear(&r);
}

static const struct {
    const char *name;
    void (*fn)(micro_ctx *c, uint64_t i);
} ops[] = {
    {"slot_proto_parse (hold)", op_parse_hold},
    {"slot_proto_parse (mix of 4 ops)", op_parse},
    {"slot_proto_encode (held/sold_out/error)", op_encode},
    {"parse + encode (a hold)", op_hold_roundtrip},
    {"client: slot_req_encode (hold)", op_client_encode},
    {"client: slot_reply_parse (held)", op_client_parse},
};

static void setup(micro_ctx *c)
{
    memset(c, 0, sizeof(*c));
    for (size_t i = 0; i < LINES_N; i++)
        c->lens[i] = strlen(request_lines[i]);
    char msg[160];
    slot_proto_parse(request_lines[0], c->lens[0], &c->req, msg, sizeof(msg));
    c->held.hold_status = SLOT_HOLD_HELD;
    memcpy(c->held.hold, "000000000012d687f00dfeedcafe1234", SLOT_HOLD_ID_BYTES);
    c->held.qty = 1;
    c->held.expires_at_ms = 1764500000000ull;
    c->sold_out.sold_out = true;
    slot_res_error(&c->error, SLOT_E_USER_LIMIT, "user has %d of max_per_user %d", 4, 4);
    c->reply_len = slot_proto_encode(&c->req, &c->held, c->reply_line, sizeof(c->reply_line)) - 1; /* without \n */
}

static void usage(FILE *f)
{
    fprintf(f,
            "usage: micro_proto [--seconds S] [--max-ops N]\n\n"
            "Operations per second of slotd's protocol layer on one core: request parsing\n"
            "(slot_proto_parse), reply encoding (slot_proto_encode), and the client codec.\n\n"
            "  --seconds S      each line runs at most S seconds (more than 0, at most %.0f;\n"
            "                   fractions allowed; default %.0f)\n"
            "  --max-ops N      ... and at most N operations (1..%llu, default %u)\n\n"
            "Exit status: 0 ok; 64 usage error.\n",
            MICRO_SECONDS_MAX, MICRO_PROTO_SECONDS_DEFAULT, (unsigned long long)MICRO_OPS_MAX, MICRO_OPS_DEFAULT);
}

int main(int argc, char **argv)
{
    micro_opts o = {.count_flag = "max-ops",
                    .seconds = MICRO_PROTO_SECONDS_DEFAULT,
                    .count = MICRO_OPS_DEFAULT,
                    .count_max = MICRO_OPS_MAX,
                    .usage = usage};
    int prc = micro_parse(argc, argv, &o);
    if (prc >= 0)
        return prc;
    double seconds = o.seconds;
    uint64_t max_ops = o.count;
    micro_ctx *c = malloc(sizeof(*c));
    if (!c)
        return 1;
    setup(c);
    printf("%-42s %12s %10s\n", "operation", "ops/s", "ns/op");
    for (size_t k = 0; k < sizeof(ops) / sizeof(ops[0]); k++) {
        uint64_t n = 0;
        double t0 = micro_now_s(), t = t0;
        while (t - t0 < seconds && n < max_ops) {
            for (int i = 0; i < MICRO_CHECK_EVERY; i++)
                ops[k].fn(c, n++);
            t = micro_now_s();
        }
        printf("%-42s %12.0f %10.1f\n", ops[k].name, (double)n / (t - t0), (t - t0) * 1e9 / (double)n);
        fflush(stdout);
    }
    slot_res_clear(&c->error);
    uint64_t sink = c->sink;
    free(c);
    printf("(checksum %" PRIu64 ")\n", sink); /* the work is used, so the compiler keeps it */
    return 0;
}
