/*
 * fuzz_http_line.c — libFuzzer target for the HTTP listener's request
 * mapping (src/server/http_line.h): an op from the path, an Idempotency-Key header
 * and a body made into the request line the TCP protocol would carry.
 *
 * Input: byte 0 picks the op (one of slot/ops.h's, or a name that only looks
 * like one) and whether a key is given; with a key, the bytes up to the
 * first NUL are the key (a header value is NUL-terminated); the rest is the
 * body. Whatever it holds, nothing may crash, leak or trip a sanitizer, and:
 *   - the line is within its bound (body + the line's own bytes + 6 per key
 *     byte) and NUL-terminated in its buffer;
 *   - a body that is empty, or whose first non-blank byte is '{', gives a
 *     line that starts {"op":"OP"; the bytes the mapping adds hold no raw
 *     newline (only the body's own bytes may, as JSON white space);
 *   - any other body is copied as it is (the parser answers bad_json);
 *   - the line is one JSON object exactly when the body is one without an
 *     "op" member (and without "request" when a key is given), and then it
 *     is the body's members plus "op" (and "request": the key, when that is
 *     well-formed UTF-8);
 *   - when the protocol parser takes the line, its op is the path's op and
 *     the request key it reads (if the op reads one) is the header's;
 *   - slot__http_event_body(NAME) is {"event": NAME} as JSON;
 *   - slot__http_status is one of the table's statuses for any code.
 * Built and run by tests/fuzz/run.sh.
 */
#include <jansson.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/http_line.h"
#include "slot/ops.h"
#include "slot/proto.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(cond)                                                                           \
    do {                                                                                      \
        if (!(cond)) {                                                                        \
            fprintf(stderr, "fuzz_http_line: check failed: %s (line %d)\n", #cond, __LINE__); \
            abort();                                                                          \
        }                                                                                     \
    } while (0)

#define KEY_BYTES_MAX 300 /* longer than any key the parser takes, so both ends are reached */

/* Names that pass slot__http_op_ok but are no op, beside every real op. */
static const char *const fake_ops[] = {"a", "_", "zzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzz", "hold_", "op"};

static const char *pick_op(uint8_t b)
{
    unsigned n = (unsigned)SLOT_OP__COUNT + sizeof fake_ops / sizeof fake_ops[0];
    unsigned i = b % n;
    return i < (unsigned)SLOT_OP__COUNT ? slot_op_name((slot_op)i) : fake_ops[i - SLOT_OP__COUNT];
}

static size_t count_nl(const char *p, size_t n)
{
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        k += p[i] == '\n';
    return k;
}

static int is_ws(char c)
{
    return c == ' ' || c == '\t' || c == '\r' || c == '\n';
}

/* The line as JSON against the body as JSON. */
static void check_json(const char *line, size_t len, const char *op, const char *body, size_t n, const char *key)
{
    json_error_t e;
    json_t *b = n ? json_loadb(body, n, JSON_REJECT_DUPLICATES, &e) : json_object();
    json_t *l = json_loadb(line, len, JSON_REJECT_DUPLICATES, &e);
    int body_ok = json_is_object(b) && !json_object_get(b, "op") && !(key && json_object_get(b, "request"));
    if (body_ok != json_is_object(l)) {
        fprintf(stderr, "fuzz_http_line: body %s an object for the line, line %s one:\n%.*s\n",
                body_ok ? "is" : "is not", json_is_object(l) ? "is" : "is not", (int)len, line);
        abort();
    }
    if (body_ok) {
        json_t *want = json_deep_copy(b);
        CHECK(want != NULL);
        CHECK(json_object_set_new(want, "op", json_string(op)) == 0);
        json_t *req = json_object_get(l, "request");
        if (key) {
            json_t *k = json_string(key); /* NULL when the key is not UTF-8: \ufffd in the line */
            CHECK(json_is_string(req));
            if (k)
                CHECK(json_equal(req, k));
            CHECK(json_object_set_new(want, "request", k ? k : json_deep_copy(req)) == 0);
        }
        if (!json_equal(want, l)) {
            fprintf(stderr, "fuzz_http_line: the line is not the body's members and op:\n%.*s\n", (int)len, line);
            abort();
        }
        json_decref(want);
    }
    json_decref(b);
    json_decref(l);
}

/* The protocol parser sees the path's op and the header's key. */
static void check_parse(const char *line, size_t len, const char *op, const char *key, size_t key_len)
{
    slot_req q;
    char msg[256];
    if (len == 0 || slot_proto_parse(line, len, &q, msg, sizeof msg) != SLOT_E_OK)
        return;
    slot_req_clear(&q); /* only its fixed fields are read below */
    if (strcmp(slot_op_name(q.op), op) != 0) {
        fprintf(stderr, "fuzz_http_line: the path's op is %s, the parser read %s from:\n%.*s\n", op, slot_op_name(q.op),
                (int)len, line);
        abort();
    }
    /* A request key the parser read (ops that write read one) is the
     * header's, when the key is one the line could carry as it is. */
    json_t *k = key ? json_string(key) : NULL;
    if (k && q.request_len > 0)
        CHECK(q.request_len == key_len && memcmp(q.request, key, key_len) == 0);
    json_decref(k);
}

static void check_event_body(const char *name)
{
    char *buf = NULL;
    size_t cap = 0;
    size_t len = slot__http_event_body(&buf, &cap, name);
    CHECK(len > 0 && len < cap && buf[len] == 0 && strlen(buf) == len);
    CHECK(memchr(buf, '\n', len) == NULL);
    json_error_t e;
    json_t *o = json_loadb(buf, len, JSON_REJECT_DUPLICATES, &e);
    CHECK(json_is_object(o) && json_object_size(o) == 1);
    json_t *ev = json_object_get(o, "event");
    CHECK(json_is_string(ev));
    json_t *want = json_string(name);
    if (want)
        CHECK(json_equal(ev, want));
    json_decref(want);
    json_decref(o);
    free(buf);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size == 0)
        return 0;
    const char *op = pick_op(data[0] >> 1);
    CHECK(slot__http_op_ok(op));
    const uint8_t *p = data + 1;
    size_t n = size - 1;
    char key[KEY_BYTES_MAX + 1];
    const char *keyp = NULL;
    size_t key_len = 0;
    if (data[0] & 1) {
        const uint8_t *nul = memchr(p, 0, n);
        key_len = nul ? (size_t)(nul - p) : n;
        if (key_len > KEY_BYTES_MAX)
            key_len = KEY_BYTES_MAX;
        memcpy(key, p, key_len);
        key[key_len] = 0;
        keyp = key;
        p += nul && (size_t)(nul - p) == key_len ? key_len + 1 : key_len;
        n = size - (size_t)(p - data);
    }
    /* The body in a buffer of its own size, so a read past it is seen. */
    char *body = malloc(n ? n : 1);
    CHECK(body != NULL);
    memcpy(body, p, n);

    char *line = NULL;
    size_t cap = 0;
    ptrdiff_t delta = 0;
    size_t len = slot__http_line(&line, &cap, op, body, n, keyp, &delta);
    CHECK(len > 0);
    /* a byte of the line's tail names the body's byte q + delta: never outside the body */
    CHECK(delta <= (ptrdiff_t)n && delta >= -(ptrdiff_t)len);
    CHECK(len < cap);
    CHECK(len <= n + 96 + 6 * key_len);
    size_t i = 0;
    while (i < n && is_ws(body[i]))
        i++;
    if (n > 0 && (i == n || body[i] != '{')) {
        CHECK(len == n && memcmp(line, body, n) == 0); /* copied as it is */
        CHECK(delta == 0);
    } else {
        char head[64];
        int hl = snprintf(head, sizeof head, "{\"op\":\"%s\"", op);
        CHECK(len >= (size_t)hl && memcmp(line, head, (size_t)hl) == 0);
        CHECK(line[len] == 0);
        size_t j = i + 1; /* the blanks after the body's '{' are left out */
        while (j < n && is_ws(body[j]))
            j++;
        CHECK(count_nl(line, len) == (j < n ? count_nl(body + j, n - j) : 0)); /* only the body's own newlines */
        check_json(line, len, op, body, n, keyp);
    }
    check_parse(line, len, op, keyp, key_len);

    /* The event name of GET /v1/events/NAME: the body's bytes up to a NUL. */
    char name[256];
    size_t nl = strnlen(body, n < sizeof name - 1 ? n : sizeof name - 1);
    memcpy(name, body, nl);
    name[nl] = 0;
    check_event_body(name);

    unsigned st = slot__http_status((slot_err)(data[0] % (SLOT_E__COUNT + 2)));
    CHECK(st >= 200 && st <= 599);
    free(line);
    free(body);
    return 0;
}
