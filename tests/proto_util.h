/*
 * tests/proto_util.h — what the proto test programs (test_proto_parse.c,
 * test_proto_enc.c) share: parse helpers keeping the last message, the
 * EXPECT and ASSERT_MSG_HAS asserts, and jansson readers of encoded replies.
 * Every helper fails the running case (harness.h) on a broken rule.
 */
#ifndef SLOT_TEST_PROTO_UTIL_H
#define SLOT_TEST_PROTO_UTIL_H

#include <jansson.h>

#include "harness.h"
#include "slot/proto.h"

#define PROTO_MSG_BYTES 160

/* The message of the last parse or parse_n (NUL-terminated). */
extern char last_msg[PROTO_MSG_BYTES];

#define EXPECT(line, code)                                                                                     \
    do {                                                                                                       \
        slot_req r_;                                                                                           \
        slot_err e_ = parse((line), &r_);                                                                      \
        if (e_ != (code))                                                                                      \
            T_FAIL_("parse(%s) = %s, want %s (%s)", (line), slot_err_name(e_), slot_err_name(code), last_msg); \
    } while (0)

/* Assert the last message names `field` (docs/protocol.md: "the message names the field"). */
#define ASSERT_MSG_HAS(field)                                              \
    do {                                                                   \
        if (strstr(last_msg, (field)) == NULL)                             \
            T_FAIL_("message \"%s\" does not name %s", last_msg, (field)); \
    } while (0)

/* Parse a NUL-terminated line (the NUL is not part of it). */
slot_err parse(const char *line, slot_req *r);
/* Parse with an explicit length (lines holding raw NUL bytes). */
slot_err parse_n(const char *line, size_t len, slot_req *r);
/* {"op":"hold",...,"qty":<v>}: one spot for every integer case of qty. */
slot_err parse_qty(const char *v, slot_req *r);
/* Nested arrays/objects: levels total, the top-level object included. */
void nested(char *out, size_t cap, int levels, bool objects);
/* A string of n copies of c (a static buffer of up to 271 bytes; one at a time). */
const char *rep(char c, size_t n);
/* Encode, check the framing (one line, ends "}\n", length = return), parse back;
 * the object is the caller's to json_decref. buf: cap bytes, the reply line. */
json_t *roundtrip(const slot_req *req, const slot_res *res, char *buf, size_t cap);
/* o's member key: an integer, a string (o's), or true; a wrong type fails the case. */
int64_t jint(const json_t *o, const char *key);
const char *jstr(const json_t *o, const char *key);
bool jtrue(const json_t *o, const char *key);

#endif
