/* wire.c — answers' status words and the bench's user and key names (wire.h). */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "wire.h"

void bench_result_clear(bench_result *r)
{
    memset(r, 0, offsetof(bench_result, hold));
    r->hold[0] = 0;
    r->text[0] = 0;
    r->primary[0] = 0;
    r->replaces[0] = 0;
    r->replaced_by[0] = 0;
    r->ncart = 0;
}

bool bench_result_status(const char *s, size_t n, bench_result *r)
{
    if (n == 8 && memcmp(s, "sold_out", 8) == 0) {
        r->sold_out = true;
        return true;
    }
    if (n == 5 && memcmp(s, "taken", 5) == 0) { /* a named hold of a seat not free ("Seated events") */
        r->taken = true;
        return true;
    }
    for (int st = 0; st < SLOT_HOLD__COUNT; st++) {
        const char *name = slot_hold_status_name((slot_hold_status)st);
        if (strlen(name) == n && memcmp(s, name, n) == 0) {
            r->has_status = true;
            r->status = (slot_hold_status)st;
            return true;
        }
    }
    return false;
}

size_t bench_user_name(uint64_t n, char *buf, size_t cap)
{
    int len = snprintf(buf, cap, "u%" PRIu64, n);
    return len > 0 && cap > 0 ? ((size_t)len < cap ? (size_t)len : cap - 1) : 0;
}

size_t bench_key_name(uint64_t n, char *buf, size_t cap)
{
    int len = snprintf(buf, cap, "r%" PRIx64, n);
    return len > 0 && cap > 0 ? ((size_t)len < cap ? (size_t)len : cap - 1) : 0;
}
