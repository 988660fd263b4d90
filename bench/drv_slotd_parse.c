/*
 * drv_slotd_parse.c — slotd's replies for the load (drv_slotd.h): a small
 * parser for flat objects, the shape of every frontend reply (and a seated
 * answer's "seats" or "taken", an array of plain ids); anything else
 * (escapes, nesting, spaces) goes to the client library's slot_reply_parse.
 */
#include <jansson.h>
#include <stdio.h>
#include <string.h>

#include "drv_slotd.h"
#include "wire.h"
#include "slot/client.h"

/* ---------------------------------------------------------------- replies */

static bool key_is(const char *k, size_t n, const char *lit)
{
    return strlen(lit) == n && memcmp(k, lit, n) == 0;
}

enum { V_STR, V_NUM, V_TRUE, V_FALSE, V_NULL };

/* A waitlist entry's state word ("waiting", "offered", "left", "none": docs/protocol.md,
 * "Waitlist") into r->wait; any other word leaves r as it is. */
static void wait_status(const char *s, size_t n, bench_result *r)
{
    static const slot_wait_state states[] = {SLOT_WAIT_NONE, SLOT_WAIT_WAITING, SLOT_WAIT_OFFERED, SLOT_WAIT_LEFT};
    for (size_t i = 0; i < sizeof(states) / sizeof(states[0]); i++) {
        const char *name = slot_wait_state_name(states[i]);
        if (strlen(name) == n && memcmp(s, name, n) == 0) {
            r->has_wait = true;
            r->wait = states[i];
            return;
        }
    }
}

/* One member of a flat reply into r. false: a value the fast path does not take. */
static bool apply(const char *k, size_t kn, int kind, const char *v, size_t vn, bench_result *r, bool *saw_ok)
{
    if (key_is(k, kn, "ok")) {
        *saw_ok = kind == V_TRUE || kind == V_FALSE;
        r->ok = kind == V_TRUE;
    } else if (key_is(k, kn, "status") && kind == V_STR) {
        if (!bench_result_status(v, vn, r))
            wait_status(v, vn, r);
    } else if (key_is(k, kn, "hold_status") && kind == V_STR) {
        bench_result_status(v, vn, r); /* the waitlist op: an offered entry's hold */
    } else if (key_is(k, kn, "position") && kind == V_NUM) {
        uint64_t x = 0;
        for (size_t i = 0; i < vn; i++) {
            if (v[i] < '0' || v[i] > '9' || x > UINT64_MAX / 10 - 1)
                return false;
            x = x * 10 + (uint64_t)(v[i] - '0');
        }
        r->position = x;
    } else if (key_is(k, kn, "waitlist_full") || key_is(k, kn, "left") || key_is(k, kn, "offered")) {
        bool *b = k[0] == 'w' ? &r->waitlist_full : k[0] == 'l' ? &r->left : &r->offered;
        *b = kind == V_TRUE;
    } else if (key_is(k, kn, "hold") && kind == V_STR) {
        if (vn > SLOT_HOLD_ARG_BYTES_MAX)
            return false;
        memcpy(r->hold, v, vn);
        r->hold[vn] = 0;
        r->hold_len = (uint32_t)vn;
    } else if ((key_is(k, kn, "replaces") || key_is(k, kn, "replaced_by")) && kind == V_STR) {
        char *dst = kn == 8 ? r->replaces : r->replaced_by;
        if (vn > SLOT_HOLD_ARG_BYTES_MAX)
            return false;
        memcpy(dst, v, vn);
        dst[vn] = 0;
    } else if (kind == V_NUM && key_is(k, kn, "max_adjacent")) { /* a seated event's sold_out */
        uint64_t x = 0;
        for (size_t i = 0; i < vn; i++) {
            if (v[i] < '0' || v[i] > '9' || x > UINT64_MAX / 10 - 1)
                return false;
            x = x * 10 + (uint64_t)(v[i] - '0');
        }
        r->max_adjacent = x;
        r->has_max_adjacent = true;
    } else if (kind == V_NUM && key_is(k, kn, "remaining")) {
        uint64_t x = 0;
        for (size_t i = 0; i < vn; i++) {
            if (v[i] < '0' || v[i] > '9' || x > UINT64_MAX / 10 - 1)
                return false;
            x = x * 10 + (uint64_t)(v[i] - '0');
        }
        r->remaining = x;
        r->has_remaining = true;
    } else if (kind == V_NUM && (key_is(k, kn, "qty") || key_is(k, kn, "expires_at") || key_is(k, kn, "available") ||
                                 key_is(k, kn, "returned") || key_is(k, kn, "extensions"))) {
        uint64_t x = 0;
        for (size_t i = 0; i < vn; i++) {
            if (v[i] < '0' || v[i] > '9' || x > UINT64_MAX / 10 - 1)
                return false;
            x = x * 10 + (uint64_t)(v[i] - '0');
        }
        if (k[0] == 'q')
            r->qty = x > UINT32_MAX ? UINT32_MAX : (uint32_t)x;
        else if (key_is(k, kn, "expires_at"))
            r->expires_at_ms = x;
        else if (k[0] == 'e')
            r->extensions = x;
        else if (k[0] == 'r')
            r->returned = x;
        else
            r->available = x;
    } else if (key_is(k, kn, "error") && kind == V_STR) {
        char code[32];
        size_t m = vn < sizeof(code) - 1 ? vn : sizeof(code) - 1;
        memcpy(code, v, m);
        code[m] = 0;
        r->err = slot_err_from_name(code);
    } else if (key_is(k, kn, "primary") && kind == V_STR) {
        if (vn >= sizeof(r->primary))
            return false;
        memcpy(r->primary, v, vn);
        r->primary[vn] = 0;
    } else if (key_is(k, kn, "message") && kind == V_STR) {
        size_t m = vn < sizeof(r->text) - 1 ? vn : sizeof(r->text) - 1;
        memcpy(r->text, v, m);
        r->text[m] = 0;
    } else if (key_is(k, kn, "replay") || key_is(k, kn, "released")) {
        bool *b = k[2] == 'p' ? &r->replay : &r->released;
        *b = kind == V_TRUE;
    }
    return true;
}

/* A value at *pp: its kind, start and length. false: not a flat value. */
static bool scan_value(const char **pp, const char *end, int *kind, const char **v, size_t *vn)
{
    const char *p = *pp;
    *v = p;
    if (*p == '"') {
        *v = ++p;
        while (p < end && *p != '"' && *p != '\\')
            p++;
        if (p >= end || *p != '"')
            return false;
        *vn = (size_t)(p - *v);
        *kind = V_STR;
        p++;
    } else if ((*p >= '0' && *p <= '9') || *p == '-') {
        while (p < end && ((*p >= '0' && *p <= '9') || *p == '-'))
            p++;
        *vn = (size_t)(p - *v);
        *kind = V_NUM;
    } else if (end - p >= 4 && memcmp(p, "true", 4) == 0) {
        p += 4, *kind = V_TRUE, *vn = 0;
    } else if (end - p >= 5 && memcmp(p, "false", 5) == 0) {
        p += 5, *kind = V_FALSE, *vn = 0;
    } else if (end - p >= 4 && memcmp(p, "null", 4) == 0) {
        p += 4, *kind = V_NULL, *vn = 0;
    } else {
        return false;
    }
    *pp = p;
    return true;
}

/* The fast path: {"k":v,...} with flat values, no spaces, no escapes. 0 or -1. */
/* A seated answer's "seats" or "taken" on the fast path: ["S-R-N",...] of plain ids (no escape),
 * each 1..SLOT_SEAT_ID_BYTES_MAX bytes, into r->seat_text as seat_members does (more than
 * BENCH_SEAT_QTY_MAX: seats_cut). *pp is at the '['; after the ']' on success. false: another
 * shape (the slow path reads it). */
static bool scan_ids(const char **pp, const char *end, bench_result *r)
{
    const char *p = *pp + 1;
    size_t off = 0;
    if (p < end && *p == ']') {
        *pp = p + 1;
        return true;
    }
    while (p < end && *p == '"') {
        const char *id = ++p;
        while (p < end && *p != '"' && *p != '\\')
            p++;
        size_t n = (size_t)(p - id);
        if (p >= end || *p != '"' || n == 0 || n > SLOT_SEAT_ID_BYTES_MAX)
            return false;
        if (r->nseats >= BENCH_SEAT_QTY_MAX) {
            r->seats_cut = true;
        } else {
            memcpy(r->seat_text + off, id, n);
            r->seat_text[off + n] = 0;
            r->seat_off[r->nseats++] = (uint16_t)off;
            off += n + 1;
        }
        p++;
        if (p < end && *p == ']') {
            *pp = p + 1;
            return true;
        }
        if (p >= end || *p != ',')
            return false;
        p++;
    }
    return false;
}

static int fast_scan(const char *p, size_t n, bench_result *r)
{
    if (n < 2 || p[0] != '{' || p[n - 1] != '}')
        return -1;
    const char *end = p + n - 1;
    bool saw_ok = false;
    p++;
    while (p < end) {
        if (*p != '"')
            return -1;
        const char *k = ++p;
        while (p < end && *p != '"' && *p != '\\')
            p++;
        if (p + 1 >= end || *p != '"' || p[1] != ':')
            return -1;
        size_t kn = (size_t)(p - k);
        p += 2;
        int kind;
        const char *v;
        size_t vn;
        bool ids = p < end && *p == '[' && (key_is(k, kn, "seats") || key_is(k, kn, "taken"));
        if (ids ? (r->nseats > 0 || !scan_ids(&p, end, r))
                : (p >= end || !scan_value(&p, end, &kind, &v, &vn) || !apply(k, kn, kind, v, vn, r, &saw_ok)))
            return -1;
        if (p < end && (*p != ',' || ++p >= end))
            return -1;
    }
    return saw_ok ? 0 : -1;
}

/* A hold_many's "holds" (docs/protocol.md, "hold_many") into r->cart. false: not of that shape. */
static bool cart_holds(const char *line, bench_result *r)
{
    json_t *root = json_loads(line, 0, NULL);
    json_t *holds = root ? json_object_get(root, "holds") : NULL;
    bool good = json_is_array(holds) && json_array_size(holds) >= 1 && json_array_size(holds) <= SLOT_CART_ITEMS_MAX;
    for (size_t i = 0; good && i < json_array_size(holds); i++) {
        json_t *h = json_array_get(holds, i);
        const char *id = json_string_value(json_object_get(h, "hold"));
        const char *st = json_string_value(json_object_get(h, "status"));
        json_t *qty = json_object_get(h, "qty"), *exp = json_object_get(h, "expires_at");
        size_t n = id ? strlen(id) : 0;
        if (!st || n == 0 || n > SLOT_HOLD_ARG_BYTES_MAX || !json_is_integer(qty) || json_integer_value(qty) < 0) {
            good = false;
            break;
        }
        bench_cart_item *it = &r->cart[i];
        memcpy(it->hold, id, n + 1);
        it->hold_len = (uint32_t)n;
        it->qty = json_integer_value(qty) > UINT32_MAX ? UINT32_MAX : (uint32_t)json_integer_value(qty);
        it->expires_at_ms = json_is_integer(exp) && json_integer_value(exp) > 0 ? (uint64_t)json_integer_value(exp) : 0;
        it->held = strcmp(st, "held") == 0;
        r->ncart = (uint32_t)i + 1;
    }
    json_decref(root);
    if (!good)
        r->ncart = 0;
    return good;
}

/* A seated event's members (docs/protocol.md, "Seated events"): "seats" (a hold's, get_hold's)
 * or "taken" (the named seats not free), ids of at most SLOT_SEAT_ID_BYTES_MAX bytes, into
 * r->seat_text (more than BENCH_SEAT_QTY_MAX: the first ones, and seats_cut); "max_adjacent".
 * false: the line is not JSON or a member has another shape. */
static bool seat_members(const char *line, size_t len, bench_result *r)
{
    json_t *root = json_loadb(line, len, 0, NULL);
    json_t *ids = json_object_get(root, "seats"), *taken = json_object_get(root, "taken");
    json_t *adj = json_object_get(root, "max_adjacent");
    bool good = root != NULL && (!ids || json_is_array(ids)) && (!taken || json_is_array(taken));
    if (good && json_is_integer(adj) && json_integer_value(adj) >= 0) {
        r->has_max_adjacent = true;
        r->max_adjacent = (uint64_t)json_integer_value(adj);
    }
    json_t *list = ids ? ids : taken;
    size_t off = 0;
    for (size_t i = 0; good && list && i < json_array_size(list); i++) {
        const char *id = json_string_value(json_array_get(list, i));
        size_t n = id ? strlen(id) : 0;
        if (n == 0 || n > SLOT_SEAT_ID_BYTES_MAX) {
            good = false;
        } else if (r->nseats >= BENCH_SEAT_QTY_MAX) {
            r->seats_cut = true;
        } else {
            memcpy(r->seat_text + off, id, n + 1);
            r->seat_off[r->nseats++] = (uint16_t)off;
            off += n + 1;
        }
    }
    json_decref(root);
    return good;
}

/* The slow path: the client library's parser. */
static int slow_parse(const char *line, size_t len, bench_result *r)
{
    slot_reply rep;
    if (slot_reply_parse(line, len, &rep) < 0) {
        slot_reply_clear(&rep);
        return -1;
    }
    r->ok = rep.ok;
    r->err = rep.ok ? SLOT_E_OK : rep.err;
    snprintf(r->text, sizeof(r->text), "%.150s", rep.message);
    if (!bench_result_status(rep.status, strlen(rep.status), r))
        wait_status(rep.status, strlen(rep.status), r);
    if (rep.hold_status[0])
        bench_result_status(rep.hold_status, strlen(rep.hold_status), r);
    r->position = rep.position;
    r->waitlist_full = rep.waitlist_full;
    r->left = rep.left;
    r->offered = rep.offered;
    r->replay = rep.replay;
    r->released = rep.released;
    r->qty = rep.qty > UINT32_MAX ? UINT32_MAX : (uint32_t)rep.qty;
    r->expires_at_ms = rep.expires_at_ms;
    r->available = rep.available;
    r->returned = rep.returned;
    r->extensions = rep.extensions;
    snprintf(r->replaces, sizeof(r->replaces), "%s", rep.replaces);
    snprintf(r->replaced_by, sizeof(r->replaced_by), "%s", rep.replaced_by);
    r->hold_len = (uint32_t)strlen(rep.hold);
    memcpy(r->hold, rep.hold, r->hold_len + 1);
    snprintf(r->primary, sizeof(r->primary), "%s", rep.primary);
    if (r->sold_out && rep.line) { /* a block hold's sold_out names what the block has left */
        json_t *o = json_loads(rep.line, 0, NULL);
        json_t *rem = json_object_get(o, "remaining");
        r->has_remaining = json_is_integer(rem);
        r->remaining = r->has_remaining ? (uint64_t)json_integer_value(rem) : 0;
        json_decref(o);
    }
    bool cart_ok = rep.nholds == 0 || (rep.line && cart_holds(rep.line, r));
    slot_reply_clear(&rep);
    bool seated = memmem(line, len, "\"seats\":", 8) || memmem(line, len, "\"taken\":", 8) ||
                  memmem(line, len, "\"max_adjacent\":", 15);
    bool seats_ok = !seated || seat_members(line, len, r);
    return cart_ok && seats_ok ? 0 : -1;
}

int bench_parse_slotd_reply(const char *line, size_t len, bench_result *r)
{
    bench_result_clear(r);
    if (fast_scan(line, len, r) == 0) {
        if (r->ok)
            r->err = SLOT_E_OK;
        else if (r->err == SLOT_E_OK)
            r->err = SLOT_E__COUNT; /* ok:false without a code we know */
        return 0;
    }
    bench_result_clear(r);
    return slow_parse(line, len, r);
}
