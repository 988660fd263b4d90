/*
 * proto_seat.c — the seated events' request fields (docs/protocol.md,
 * "Seated events" and the Seats clarification of v1.2): create_event's
 * "seats" map into a slot_seat_map (heap, slot_req_clear frees it), and a
 * hold's or a confirm's "seats", "adjacent", "category" and "section".
 * Syntax only: whether a seat exists is the allocator's question.
 */
#include <jansson.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proto_int.h"
#include "slot/assert.h"

__attribute__((format(printf, 3, 4))) static slot_err bad(char *msg, size_t msglen, const char *fmt, ...)
{
    if (msg && msglen > 0) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(msg, msglen, fmt, ap);
        va_end(ap);
    }
    return SLOT_E_INVALID_ARGUMENT;
}

#define TRY_SEAT(expr)              \
    do {                            \
        slot_err try_err_ = (expr); \
        if (try_err_ != SLOT_E_OK)  \
            return try_err_;        \
    } while (0)

static bool seat_name_ok(const char *s, size_t len)
{
    if (len < 1 || len > SLOT_SEAT_NAME_BYTES_MAX)
        return false;
    for (size_t i = 0; i < len; i++) {
        unsigned char ch = (unsigned char)s[i];
        if (!((ch >= 'A' && ch <= 'Z') || (ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9')))
            return false;
    }
    return true;
}

static bool cat_name_ok(const char *s, size_t len)
{
    if (len < 1 || len > SLOT_SEAT_CATEGORY_BYTES_MAX)
        return false;
    for (size_t i = 0; i < len; i++) {
        unsigned char ch = (unsigned char)s[i];
        if (!((ch >= 'A' && ch <= 'Z') || (ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') || ch == '.' ||
              ch == '_' || ch == ':' || ch == '-'))
            return false;
    }
    return true;
}

/* An integer member of o in lo..hi into *out; names the field in the message. */
static slot_err member_int(json_t *o, const char *key, const char *where, long long lo, long long hi, uint32_t *out,
                           char *msg, size_t msglen)
{
    json_t *v = json_object_get(o, key);
    if (!json_is_integer(v) || json_integer_value(v) < lo || json_integer_value(v) > hi)
        return bad(msg, msglen, "seats: %s: %s must be an integer in %lld..%lld", where, key, lo, hi);
    *out = (uint32_t)json_integer_value(v);
    return SLOT_E_OK;
}

static slot_err map_rows(json_t *secs, slot_seat_map *m, size_t cap, char *msg, size_t msglen)
{
    size_t si;
    json_t *sec;
    json_array_foreach(secs, si, sec)
    {
        json_t *name = json_object_get(sec, "name"), *rows = json_object_get(sec, "rows");
        if (!json_is_object(sec) || !json_is_string(name) ||
            !seat_name_ok(json_string_value(name), json_string_length(name)))
            return bad(msg, msglen, "seats: section %zu: name must be 1..%d bytes of [A-Za-z0-9]", si + 1,
                       SLOT_SEAT_NAME_BYTES_MAX);
        const char *sname = json_string_value(name);
        if (!json_is_array(rows) || json_array_size(rows) == 0)
            return bad(msg, msglen, "seats: section \"%s\": rows must be a non-empty array", sname);
        for (size_t k = 0; k < si; k++)
            if (strcmp(json_string_value(json_object_get(json_array_get(secs, k), "name")), sname) == 0)
                return bad(msg, msglen, "seats: section \"%s\" is given twice", sname);
        uint32_t first_row = m->nrows;
        size_t ri;
        json_t *row;
        json_array_foreach(rows, ri, row)
        {
            json_t *rn = json_object_get(row, "name"), *cat = json_object_get(row, "category");
            if (!json_is_object(row) || !json_is_string(rn) ||
                !seat_name_ok(json_string_value(rn), json_string_length(rn)))
                return bad(msg, msglen, "seats: section \"%s\" row %zu: name must be 1..%d bytes of [A-Za-z0-9]",
                           sname, ri + 1, SLOT_SEAT_NAME_BYTES_MAX);
            if (m->nrows == cap)
                return bad(msg, msglen, "seats: more than %d rows", SLOT_SEAT_ROWS_MAX);
            slot_seat_row_def *d = &m->rows[m->nrows];
            memset(d, 0, sizeof *d);
            d->section_len = (uint8_t)json_string_length(name);
            memcpy(d->section, sname, d->section_len);
            d->name_len = (uint8_t)json_string_length(rn);
            memcpy(d->name, json_string_value(rn), d->name_len);
            char where[64];
            snprintf(where, sizeof where, "row \"%s-%s\"", d->section, d->name);
            for (uint32_t k = first_row; k < m->nrows; k++)
                if (strcmp(m->rows[k].name, d->name) == 0)
                    return bad(msg, msglen, "seats: %s is given twice", where);
            TRY_SEAT(member_int(row, "from", where, 1, SLOT_SEAT_NUMBER_MAX, &d->from, msg, msglen));
            TRY_SEAT(member_int(row, "to", where, 1, SLOT_SEAT_NUMBER_MAX, &d->to, msg, msglen));
            if (d->from > d->to)
                return bad(msg, msglen, "seats: %s: from %u is after to %u", where, d->from, d->to);
            if (d->to - d->from + 1u > SLOT_SEAT_ROW_SEATS_MAX)
                return bad(msg, msglen, "seats: %s has %u seats; a row has at most %d", where, d->to - d->from + 1u,
                           SLOT_SEAT_ROW_SEATS_MAX);
            if (cat) {
                if (!json_is_string(cat) || !cat_name_ok(json_string_value(cat), json_string_length(cat)))
                    return bad(msg, msglen, "seats: %s: category must be 1..%d bytes of [A-Za-z0-9._:-]", where,
                               SLOT_SEAT_CATEGORY_BYTES_MAX);
                uint8_t k = 0;
                while (k < m->ncats && strcmp(m->cats[k], json_string_value(cat)) != 0)
                    k++;
                if (k == m->ncats) {
                    if (m->ncats == SLOT_SEAT_CATEGORIES_MAX)
                        return bad(msg, msglen, "seats: more than %d categories", SLOT_SEAT_CATEGORIES_MAX);
                    m->cat_len[k] = (uint8_t)json_string_length(cat);
                    memcpy(m->cats[k], json_string_value(cat), m->cat_len[k] + 1u);
                    m->ncats++;
                }
                d->category = (uint8_t)(k + 1);
            }
            uint32_t len = d->to - d->from + 1u;
            m->seats += len;
            if (len > m->row_max)
                m->row_max = len;
            if (m->seats > SLOT_SEATS_MAX)
                return bad(msg, msglen, "seats: more than %d seats", SLOT_SEATS_MAX);
            m->nrows++;
        }
        m->nsections++;
    }
    return SLOT_E_OK;
}

slot_err slot__proto_seat_map(json_t *root, slot_req *r, char *msg, size_t msglen)
{
    json_t *seats = json_object_get(root, "seats"), *secs = json_object_get(seats, "sections");
    if (!json_is_object(seats) || !json_is_array(secs) || json_array_size(secs) == 0)
        return bad(msg, msglen, "seats: must be an object with a non-empty array \"sections\"");
    if (json_array_size(secs) > SLOT_SEAT_SECTIONS_MAX)
        return bad(msg, msglen, "seats: more than %d sections", SLOT_SEAT_SECTIONS_MAX);
    size_t nrows = 0, si;
    json_t *sec;
    json_array_foreach(secs, si, sec)
    {
        json_t *rows = json_object_get(sec, "rows");
        nrows += json_is_array(rows) ? json_array_size(rows) : 0;
    }
    if (nrows > SLOT_SEAT_ROWS_MAX)
        return bad(msg, msglen, "seats: more than %d rows", SLOT_SEAT_ROWS_MAX);
    slot_seat_map *m = calloc(1, sizeof *m + (nrows ? nrows : 1) * sizeof m->rows[0]);
    if (!m)
        return bad(msg, msglen, "seats: no memory for %zu rows", nrows);
    slot_err err = map_rows(secs, m, nrows, msg, msglen);
    json_t *cap = json_object_get(root, "capacity");
    if (err == SLOT_E_OK && cap && (!json_is_integer(cap) || json_integer_value(cap) != (json_int_t)m->seats))
        err = bad(msg, msglen, "capacity: must be left out or equal the seat count %llu", (unsigned long long)m->seats);
    if (err != SLOT_E_OK) {
        free(m);
        return err;
    }
    r->seat_map = m;
    r->capacity = m->seats;
    return SLOT_E_OK;
}

/* The "seats" array: 1..max ids, each 1..SLOT_SEAT_ID_BYTES_MAX bytes, into r->seat_ids. */
static slot_err seat_ids(json_t *v, slot_req *r, char *msg, size_t msglen)
{
    if (!json_is_array(v) || json_array_size(v) == 0 || json_array_size(v) > SLOT_MAX_PER_REQUEST_MAX)
        return bad(msg, msglen, "seats: must be an array of 1..%d seat ids", SLOT_MAX_PER_REQUEST_MAX);
    size_t i, used = 0;
    json_t *id;
    json_array_foreach(v, i, id)
    {
        if (!json_is_string(id) || json_string_length(id) == 0 || json_string_length(id) > SLOT_SEAT_ID_BYTES_MAX ||
            strlen(json_string_value(id)) != json_string_length(id))
            return bad(msg, msglen, "seats: id %zu must be a string \"SECTION-ROW-NUMBER\" of 1..%d bytes", i + 1,
                       SLOT_SEAT_ID_BYTES_MAX);
        size_t n = json_string_length(id) + 1;
        if (used + n > SLOT_SEAT_IDS_BYTES_MAX)
            return bad(msg, msglen, "seats: the ids take more than %d bytes", SLOT_SEAT_IDS_BYTES_MAX);
        memcpy(r->seat_ids.ids + used, json_string_value(id), n);
        used += n;
    }
    r->seat_ids.n = (uint16_t)json_array_size(v);
    r->seat_ids.len = (uint16_t)used;
    r->has |= SLOT_HAS_SEATS;
    return SLOT_E_OK;
}

slot_err slot__proto_seat_hold(json_t *root, slot_req *r, bool *qty_done, char *msg, size_t msglen)
{
    *qty_done = false;
    json_t *seats = json_object_get(root, "seats"), *adj = json_object_get(root, "adjacent");
    json_t *cat = json_object_get(root, "category"), *sec = json_object_get(root, "section");
    if (adj && !json_is_boolean(adj))
        return bad(msg, msglen, "adjacent: must be true or false");
    if (json_is_true(adj))
        r->has |= SLOT_HAS_ADJACENT;
    if (cat) {
        if (!json_is_string(cat) || !cat_name_ok(json_string_value(cat), json_string_length(cat)))
            return bad(msg, msglen, "category: must be 1..%d bytes of [A-Za-z0-9._:-]", SLOT_SEAT_CATEGORY_BYTES_MAX);
        r->category_len = (uint8_t)json_string_length(cat);
        memcpy(r->category, json_string_value(cat), r->category_len + 1u);
        r->has |= SLOT_HAS_CATEGORY;
    }
    if (sec) {
        if (!json_is_string(sec) || !seat_name_ok(json_string_value(sec), json_string_length(sec)))
            return bad(msg, msglen, "section: must be 1..%d bytes of [A-Za-z0-9]", SLOT_SEAT_NAME_BYTES_MAX);
        r->section_len = (uint8_t)json_string_length(sec);
        memcpy(r->section, json_string_value(sec), r->section_len + 1u);
        r->has |= SLOT_HAS_SECTION;
    }
    if (!seats)
        return SLOT_E_OK;
    if (r->has & (SLOT_HAS_ADJACENT | SLOT_HAS_CATEGORY | SLOT_HAS_SECTION))
        return bad(msg, msglen, "seats: named seats cannot go with adjacent, category or section");
    if (r->has & SLOT_HAS_ALLOCATION)
        return bad(msg, msglen, "seats: holds of named seats from an allocation are not supported");
    slot_err err = seat_ids(seats, r, msg, msglen);
    if (err != SLOT_E_OK)
        return err;
    json_t *q = json_object_get(root, "qty");
    if (q && (!json_is_integer(q) || json_integer_value(q) != (json_int_t)r->seat_ids.n))
        return bad(msg, msglen, "qty: must be left out or equal the %u seats named", (unsigned)r->seat_ids.n);
    r->qty = r->seat_ids.n;
    *qty_done = true;
    return SLOT_E_OK;
}

slot_err slot__proto_seat_confirm(json_t *root, slot_req *r, char *msg, size_t msglen)
{
    json_t *seats = json_object_get(root, "seats");
    return seats ? seat_ids(seats, r, msg, msglen) : SLOT_E_OK;
}
