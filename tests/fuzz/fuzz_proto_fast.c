/*
 * fuzz_proto_fast.c — libFuzzer target for the request parser's fast path
 * (src/proto/proto_fast.c) against the jansson path, the differential rule
 * of docs/design.md, "The request parser's fast path": whenever the fast
 * path takes a line, the full parser succeeds on it and fills the same
 * request, byte for byte; and slot_proto_parse (fast path first) gives the
 * full parser's verdict, request and message on every line. Each input is
 * one request line. Built and run by tests/fuzz/run.sh; tests/test_proto_fast.c
 * checks the same rule on fixed lines and random mutations in every build.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proto/proto_int.h"
#include "slot/proto.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(cond)                                                                            \
    do {                                                                                       \
        if (!(cond)) {                                                                         \
            fprintf(stderr, "fuzz_proto_fast: check failed: %s (line %d)\n", #cond, __LINE__); \
            abort();                                                                           \
        }                                                                                      \
    } while (0)

static slot_req fast_req, full_req, pub_req;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *line = (const char *)data;
    char msg[256], msg2[256];
    memset(&fast_req, 0xa5, sizeof(fast_req));
    bool took = slot__proto_parse_fast(line, size, &fast_req);
    slot_err err = slot__proto_parse_full(line, size, 0, &full_req, msg, sizeof(msg));
    if (took) {
        CHECK(err == SLOT_E_OK);
        CHECK(memcmp(&fast_req, &full_req, sizeof(fast_req)) == 0);
    }
    slot_err err2 = slot_proto_parse(line, size, &pub_req, msg2, sizeof(msg2));
    CHECK(err2 == err);
    if (err == SLOT_E_OK)
        CHECK(memcmp(&pub_req, &full_req, sizeof(pub_req)) == 0);
    else
        CHECK(strcmp(msg, msg2) == 0);
    return 0;
}
