/*
 * proto_fast.c — a hand-written parser for the common shape of the hot ops
 * (hold, confirm, release, extend), beside the jansson path of proto.c
 * (docs/design.md, "The request parser's fast path").
 *
 * It recognises a subset of the lines the full parser accepts and, for each,
 * fills the request exactly as the full parser would. Anything outside the
 * subset is not judged here: the caller hands the line to the full parser,
 * which gives every error its message. The subset: one flat object; keys and
 * string values of printable ASCII without escapes; integers of at most 18
 * digits without fraction or exponent; true and false; JSON's four
 * whitespace characters; each key of the op's set at most once, no other key;
 * every field present and within its range as the full parser checks it.
 * tests/test_proto_fast.c and tests/fuzz/fuzz_proto_fast.c compare the two
 * paths on every input they make.
 */
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "proto_int.h"
#include "slot/assert.h"
#include "slot/limits.h"

/* The keys the fast path knows; bit i of a mask is key i. */
enum {
    K_OP,
    K_ID,
    K_EVENT,
    K_USER,
    K_REQUEST,
    K_QTY,
    K_CLIENT,
    K_HOLD,
    K_BY_MS,
    K_REACQUIRE,
    K__COUNT,
};

#define B(k) (1u << (k))

/* A value as scanned: a string (pointer into the line), an integer, or a boolean. */
typedef enum { V_NONE = 0, V_STR, V_INT, V_BOOL } vkind;

typedef struct fval {
    vkind kind;
    const char *s;
    size_t n;
    int64_t i;
    bool b;
} fval;

typedef struct scan {
    const char *p, *end;
    fval v[K__COUNT];
    unsigned seen;
} scan;

static bool ws(char ch)
{
    return ch == ' ' || ch == '\t' || ch == '\n' || ch == '\r';
}

static void skip_ws(scan *s)
{
    while (s->p < s->end && ws(*s->p))
        s->p++;
}

/* A string without escapes, of bytes 0x20..0x7e: *out/n point into the line. */
static bool scan_string(scan *s, const char **out, size_t *n)
{
    if (s->p >= s->end || *s->p != '"')
        return false;
    const char *b = ++s->p;
    while (s->p < s->end) {
        unsigned char ch = (unsigned char)*s->p;
        if (ch == '"') {
            *out = b;
            *n = (size_t)(s->p - b);
            s->p++;
            return true;
        }
        if (ch < 0x20 || ch > 0x7e || ch == '\\')
            return false; /* controls, escapes, UTF-8: the full parser's */
        s->p++;
    }
    return false;
}

/* An integer: -?(0|[1-9][0-9]{0,17}), followed by a delimiter. */
static bool scan_int(scan *s, int64_t *out)
{
    bool neg = false;
    if (s->p < s->end && *s->p == '-') {
        neg = true;
        s->p++;
    }
    const char *b = s->p;
    int64_t v = 0;
    while (s->p < s->end && *s->p >= '0' && *s->p <= '9' && s->p - b < 18)
        v = v * 10 + (*s->p++ - '0');
    size_t nd = (size_t)(s->p - b);
    if (nd == 0 || (nd > 1 && *b == '0'))
        return false;
    if (s->p < s->end && !ws(*s->p) && *s->p != ',' && *s->p != '}')
        return false; /* a 19th digit, a fraction, an exponent: the full parser's */
    *out = neg ? -v : v;
    return true;
}

static bool scan_lit(scan *s, const char *lit, size_t n)
{
    if ((size_t)(s->end - s->p) < n || memcmp(s->p, lit, n) != 0)
        return false;
    s->p += n;
    return s->p >= s->end || ws(*s->p) || *s->p == ',' || *s->p == '}';
}

static int key_of(const char *k, size_t n)
{
    static const struct {
        const char *name;
        size_t len;
    } keys[K__COUNT] = {
        [K_OP] = {"op", 2},         [K_ID] = {"id", 2},         [K_EVENT] = {"event", 5},
        [K_USER] = {"user", 4},     [K_REQUEST] = {"request", 7}, [K_QTY] = {"qty", 3},
        [K_CLIENT] = {"client", 6}, [K_HOLD] = {"hold", 4},     [K_BY_MS] = {"by_ms", 5},
        [K_REACQUIRE] = {"reacquire", 9},
    };
    for (int i = 0; i < K__COUNT; i++)
        if (keys[i].len == n && k[0] == keys[i].name[0] && memcmp(keys[i].name, k, n) == 0)
            return i;
    return -1;
}

static bool scan_value(scan *s, fval *v)
{
    if (s->p >= s->end)
        return false;
    char ch = *s->p;
    if (ch == '"') {
        v->kind = V_STR;
        return scan_string(s, &v->s, &v->n);
    }
    if (ch == '-' || (ch >= '0' && ch <= '9')) {
        v->kind = V_INT;
        return scan_int(s, &v->i);
    }
    v->kind = V_BOOL;
    if (ch == 't')
        return (v->b = true, scan_lit(s, "true", 4));
    if (ch == 'f')
        return (v->b = false, scan_lit(s, "false", 5));
    return false; /* null, arrays, objects: the full parser's */
}

/* The object's members into s->v; false when the line leaves the subset. */
static bool scan_object(scan *s)
{
    skip_ws(s);
    if (s->p >= s->end || *s->p != '{')
        return false;
    s->p++;
    skip_ws(s);
    if (s->p < s->end && *s->p == '}')
        return false; /* {}: no op */
    for (int m = 0; m < K__COUNT; m++) {
        const char *k = NULL;
        size_t kn = 0;
        if (!scan_string(s, &k, &kn))
            return false;
        int key = key_of(k, kn);
        if (key < 0 || (s->seen & B(key)))
            return false; /* another key, or a duplicate (bad_json): the full parser's */
        skip_ws(s);
        if (s->p >= s->end || *s->p != ':')
            return false;
        s->p++;
        skip_ws(s);
        if (!scan_value(s, &s->v[key]))
            return false;
        s->seen |= B(key);
        skip_ws(s);
        if (s->p < s->end && *s->p == ',') {
            s->p++;
            skip_ws(s);
            continue;
        }
        if (s->p >= s->end || *s->p != '}')
            return false;
        s->p++;
        skip_ws(s);
        return s->p == s->end; /* anything after the object: the full parser's */
    }
    return false; /* more members than known keys: some key repeats */
}

/* docs/protocol.md, "Names and numbers" (proto.c's name_char). */
static bool name_ok(const fval *v, size_t max)
{
    if (v->kind != V_STR || v->n < 1 || v->n > max)
        return false;
    for (size_t i = 0; i < v->n; i++) {
        char ch = v->s[i];
        if (!((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') || ch == '.' ||
              ch == '_' || ch == ':' || ch == '-'))
            return false;
    }
    return true;
}

/* A user or client key: in the subset every byte is printable ASCII, which
 * the full parser's rule (no controls, no DEL) accepts. */
static bool text_ok(const fval *v, size_t max)
{
    return v->kind == V_STR && v->n >= 1 && v->n <= max;
}

static bool int_ok(const fval *v, int64_t lo, int64_t hi)
{
    return v->kind == V_INT && v->i >= lo && v->i <= hi;
}

static void put(char *dst, const fval *v)
{
    memcpy(dst, v->s, v->n);
    dst[v->n] = 0;
}

bool slot__proto_parse_fast(const char *line, size_t len, slot_req *req)
{
    scan s = {.p = line, .end = line + len};
    if (!scan_object(&s) || !(s.seen & B(K_OP)) || s.v[K_OP].kind != V_STR)
        return false;
    slot_op op = slot_op_from_name(s.v[K_OP].s, s.v[K_OP].n);
    unsigned need = 0, may = B(K_OP) | B(K_ID);
    switch (op) {
    case SLOT_OP_HOLD:
        need = B(K_EVENT) | B(K_USER) | B(K_REQUEST) | B(K_QTY);
        may |= need | B(K_CLIENT);
        break;
    case SLOT_OP_CONFIRM:
        need = B(K_EVENT) | B(K_HOLD) | B(K_USER);
        may |= need | B(K_QTY) | B(K_REACQUIRE);
        break;
    case SLOT_OP_RELEASE:
        need = B(K_EVENT) | B(K_HOLD) | B(K_USER);
        may |= need;
        break;
    case SLOT_OP_EXTEND:
        need = B(K_EVENT) | B(K_HOLD) | B(K_USER) | B(K_BY_MS);
        may |= need;
        break;
    default:
        return false;
    }
    if ((s.seen & need) != need || (s.seen & ~may) != 0)
        return false;
    const fval *id = &s.v[K_ID];
    if ((s.seen & B(K_ID)) && !(id->kind == V_INT || (id->kind == V_STR && id->n <= SLOT_ID_BYTES_MAX)))
        return false;
    if (!name_ok(&s.v[K_EVENT], SLOT_EVENT_BYTES_MAX) || !text_ok(&s.v[K_USER], SLOT_USER_BYTES_MAX))
        return false;
    if ((s.seen & B(K_REQUEST)) && !name_ok(&s.v[K_REQUEST], SLOT_REQUEST_BYTES_MAX))
        return false;
    if ((s.seen & B(K_CLIENT)) && !text_ok(&s.v[K_CLIENT], SLOT_CLIENT_BYTES_MAX))
        return false;
    if ((s.seen & B(K_HOLD)) && !text_ok(&s.v[K_HOLD], SLOT_HOLD_ARG_BYTES_MAX))
        return false;
    if ((s.seen & B(K_QTY)) && !int_ok(&s.v[K_QTY], 1, SLOT_MAX_PER_REQUEST_MAX))
        return false;
    if ((s.seen & B(K_BY_MS)) && !int_ok(&s.v[K_BY_MS], SLOT_EXTEND_BY_MS_MIN, SLOT_EXTEND_BY_MS_MAX))
        return false;
    if ((s.seen & B(K_REACQUIRE)) && s.v[K_REACQUIRE].kind != V_BOOL)
        return false;

    /* In the subset: fill as proto.c's parse_id, get_* and parse_confirm/parse_extend do. */
    memset(req, 0, sizeof(*req));
    req->op = op;
    if (id->kind == V_INT) {
        req->id.kind = SLOT_ID_INT;
        req->id.i = id->i;
    } else if (id->kind == V_STR) {
        req->id.kind = SLOT_ID_STR;
        put(req->id.s, id);
        req->id.len = (uint8_t)id->n;
    }
    put(req->event, &s.v[K_EVENT]);
    req->event_len = (uint8_t)s.v[K_EVENT].n;
    req->has |= SLOT_HAS_EVENT;
    put(req->user, &s.v[K_USER]);
    req->user_len = (uint8_t)s.v[K_USER].n;
    if (s.seen & B(K_REQUEST)) {
        put(req->request, &s.v[K_REQUEST]);
        req->request_len = (uint8_t)s.v[K_REQUEST].n;
    }
    if (s.seen & B(K_CLIENT)) {
        put(req->client, &s.v[K_CLIENT]);
        req->client_len = (uint8_t)s.v[K_CLIENT].n;
    }
    if (s.seen & B(K_HOLD)) {
        put(req->hold, &s.v[K_HOLD]);
        req->hold_len = (uint8_t)s.v[K_HOLD].n;
    }
    if (s.seen & B(K_QTY)) {
        req->qty = (uint32_t)s.v[K_QTY].i;
        if (op == SLOT_OP_CONFIRM)
            req->has |= SLOT_HAS_QTY;
    }
    if (s.seen & B(K_BY_MS))
        req->by_ms = (uint32_t)s.v[K_BY_MS].i;
    req->reacquire = (s.seen & B(K_REACQUIRE)) && s.v[K_REACQUIRE].b;
    SLOT_ASSERT(req->event_len >= 1 && req->user_len >= 1);
    SLOT_ASSERT(op != SLOT_OP_HOLD || (req->qty >= 1 && req->request_len >= 1));
    return true;
}
