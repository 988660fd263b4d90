/* tests/proto_util.c — see proto_util.h. */
#include "proto_util.h"

char last_msg[PROTO_MSG_BYTES];

/* Parse a NUL-terminated line (the NUL is not part of it). */
slot_err parse(const char *line, slot_req *r)
{
    return slot_proto_parse(line, strlen(line), r, last_msg, sizeof(last_msg));
}

/* Parse with an explicit length (lines holding raw NUL bytes). */
slot_err parse_n(const char *line, size_t len, slot_req *r)
{
    return slot_proto_parse(line, len, r, last_msg, sizeof(last_msg));
}

/* {"op":"hold",...,"qty":<v>}: one spot for every integer case of qty. */
slot_err parse_qty(const char *v, slot_req *r)
{
    char line[512];
    snprintf(line, sizeof(line),
             "{\"id\":7,\"op\":\"hold\",\"event\":\"e\",\"user\":\"u\",\"request\":\"r\",\"qty\":%s}", v);
    return parse(line, r);
}

/* A string of n copies of c (static buffer; one at a time). */
const char *rep(char c, size_t n)
{
    static char buf[272]; /* the longest name under test is 257 bytes */
    ASSERT(n < sizeof(buf));
    memset(buf, c, n);
    buf[n] = 0;
    return buf;
}

/* Nested arrays/objects: levels total, the top-level object included. */
void nested(char *out, size_t cap, int levels, bool objects)
{
    size_t n = 0;
    n += (size_t)snprintf(out + n, cap - n, "{\"op\":\"stats\",\"x\":");
    for (int i = 1; i < levels; i++)
        n += (size_t)snprintf(out + n, cap - n, "%s", objects ? "{\"k\":" : "[");
    n += (size_t)snprintf(out + n, cap - n, "1");
    for (int i = 1; i < levels; i++)
        n += (size_t)snprintf(out + n, cap - n, "%s", objects ? "}" : "]");
    n += (size_t)snprintf(out + n, cap - n, "}");
    ASSERT(n < cap);
}

/* Encode, check the framing (one line, ends "}\n", length = return), parse back. */
json_t *roundtrip(const slot_req *req, const slot_res *res, char *buf, size_t cap)
{
    size_t n = slot_proto_encode(req, res, buf, cap);
    ASSERT_LT(n, cap);
    ASSERT_EQ(strlen(buf), n);
    ASSERT_GE(n, 3);
    ASSERT(buf[n - 2] == '}' && buf[n - 1] == '\n');
    ASSERT(memchr(buf, '\n', n - 1) == NULL);
    json_error_t e;
    json_t *j = json_loadb(buf, n, JSON_REJECT_DUPLICATES, &e);
    if (!j)
        T_FAIL_("reply does not parse: %s: %s", e.text, buf);
    ASSERT(json_is_object(j));
    return j;
}

int64_t jint(const json_t *o, const char *key)
{
    json_t *v = json_object_get(o, key);
    if (!json_is_integer(v))
        T_FAIL_("%s: not an integer", key);
    return (int64_t)json_integer_value(v);
}

const char *jstr(const json_t *o, const char *key)
{
    json_t *v = json_object_get(o, key);
    if (!json_is_string(v))
        T_FAIL_("%s: not a string", key);
    return json_string_value(v);
}

bool jtrue(const json_t *o, const char *key)
{
    return json_is_true(json_object_get(o, key));
}
