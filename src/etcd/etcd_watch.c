/*
 * etcd_watch.c — the etcd client's watches (etcd_int.h): a watch is a
 * request whose answer never ends (POST /v3/watch streams one JSON message
 * per change); the stream is split into messages as bytes arrive, and each
 * message's events go to the caller, in revision order.
 */
#include <stdlib.h>
#include <string.h>

#include "etcd_int.h"
#include "slot/assert.h"

/* ---- ending ---- */

void slot__etcd_watch_end(slot__etcd_req *r, int status)
{
    SLOT_ASSERT(r->kind == SLOT__ETCD_WATCH);
    SLOT_ASSERT(!r->ending);
    r->ending = true;
    slot__etcd_req_detach(r);
    slot__etcd_req_unlink(r);
    ((slot_etcd_watch_end_cb)r->cb)((slot_etcd_watch *)r, status, r->last_rev, r->data);
    slot__etcd_req_free(r);
}

/* ---- watches: split the stream into JSON messages, deliver events ---- */

/* Deliver the events of one watch message. Returns 0 to go on, or the
 * status the watch ends with. */
static int watch_message(slot__etcd_req *r, const char *msg, size_t len)
{
    json_error_t jerr;
    json_t *root = json_loadb(msg, len, 0, &jerr);
    if (!root || !json_is_object(root)) {
        json_decref(root);
        return SLOT_ETCD_EPROTO;
    }
    json_t *res = json_object_get(root, "result");
    int rc = 0;
    int64_t hdr_rev = 0, compact = 0;
    if (!json_is_object(res)) {
        /* {"error": {"grpc_code": 14, "message": "transport is closing"}} when
         * etcd stops: UNAVAILABLE (14) and CANCELED (1) are a lost stream */
        json_t *e = json_object_get(root, "error");
        json_int_t code = json_integer_value(json_object_get(e, "grpc_code"));
        rc = !json_is_object(e)        ? SLOT_ETCD_EPROTO
             : code == 14 || code == 1 ? SLOT_ETCD_EDISCONNECT
                                       : SLOT_ETCD_ESERVER;
    }
    if (rc == 0)
        rc = slot__etcd_header_revision(res, &hdr_rev);
    if (rc == 0)
        rc = slot__etcd_json_i64(res, "compact_revision", &compact);
    if (rc == 0 && json_is_true(json_object_get(res, "canceled")))
        rc = compact > 0 ? SLOT_ETCD_ECOMPACTED : SLOT_ETCD_ESERVER;
    json_t *evs = rc == 0 ? json_object_get(res, "events") : NULL;
    if (rc == 0 && evs && !json_is_array(evs))
        rc = SLOT_ETCD_EPROTO;
    size_t n = evs ? json_array_size(evs) : 0;
    slot_etcd_event *ev = n ? calloc(n, sizeof *ev) : NULL;
    if (rc == 0 && n && !ev)
        rc = SLOT_ETCD_ENOMEM;
    size_t parsed = 0;
    /* Parse the whole message first, so an error never splits a revision. */
    for (; rc == 0 && parsed < n; parsed++) {
        json_t *e = json_array_get(evs, parsed);
        json_t *type = json_object_get(e, "type");
        if (!json_is_object(e) || (type && !json_is_string(type))) {
            rc = SLOT_ETCD_EPROTO;
            break;
        }
        const char *t = type ? json_string_value(type) : "PUT"; /* PUT is 0, left out */
        if (strcmp(t, "PUT") == 0)
            ev[parsed].type = SLOT_ETCD_EVENT_PUT;
        else if (strcmp(t, "DELETE") == 0)
            ev[parsed].type = SLOT_ETCD_EVENT_DELETE;
        else
            rc = SLOT_ETCD_EPROTO;
        if (rc == 0)
            rc = slot__etcd_kv_parse(json_object_get(e, "kv"), &ev[parsed].kv);
        if (rc != 0)
            break;
    }
    bool created = rc == 0 && json_is_true(json_object_get(res, "created"));
    /* Events in revision order, none below what the watch has passed
     * (slot/etcd.h): a store that sends one out of order ends the watch
     * rather than move the caller's revision back. */
    int64_t at = created && r->from_now && hdr_rev > r->last_rev ? hdr_rev : r->last_rev;
    for (size_t i = 0; rc == 0 && i < n; i++) {
        if (ev[i].kv.mod_revision < at)
            rc = SLOT_ETCD_EPROTO;
        at = ev[i].kv.mod_revision;
    }
    if (rc == 0) {
        if (created && r->from_now && hdr_rev > r->last_rev)
            r->last_rev = hdr_rev; /* events come after the revision it started at */
        else if (!created && n == 0 && hdr_rev > r->last_rev)
            r->last_rev = hdr_rev; /* a progress notice: everything up to it was sent */
        for (size_t i = 0; i < n && !r->cancel_asked && !r->c->closing; i++) {
            if (ev[i].kv.mod_revision > r->last_rev)
                r->last_rev = ev[i].kv.mod_revision;
            r->ev_cb((slot_etcd_watch *)r, &ev[i], r->data);
        }
    }
    for (size_t i = 0; i < parsed && ev; i++)
        slot__etcd_kv_free(&ev[i].kv);
    free(ev);
    json_decref(root);
    return rc;
}

/* Find the next whole JSON object in the buffer; the scanner's state
 * survives between calls so each byte is looked at once. Returns 1 with
 * [*start, *end) set, 0 when more bytes are needed, EPROTO on junk between
 * messages. */
static int watch_next(slot__etcd_req *r, size_t *start, size_t *end)
{
    for (; r->scan_pos < r->resp_len; r->scan_pos++) {
        char ch = r->resp[r->scan_pos];
        if (r->depth == 0) {
            if (ch == ' ' || ch == '\n' || ch == '\r' || ch == '\t') {
                r->msg_start = r->scan_pos + 1;
                continue;
            }
            if (ch != '{')
                return SLOT_ETCD_EPROTO;
            r->msg_start = r->scan_pos;
            r->depth = 1;
            continue;
        }
        if (r->in_str) {
            if (r->esc)
                r->esc = false;
            else if (ch == '\\')
                r->esc = true;
            else if (ch == '"')
                r->in_str = false;
            continue;
        }
        if (ch == '"')
            r->in_str = true;
        else if (ch == '{' || ch == '[')
            r->depth++;
        else if ((ch == '}' || ch == ']') && --r->depth == 0) {
            *start = r->msg_start;
            *end = ++r->scan_pos;
            r->msg_start = r->scan_pos;
            return 1;
        }
    }
    return 0;
}

static void watch_dispatch(slot__etcd_req *r)
{
    r->dirty = false;
    r->dispatching = true;
    int rc = 0;
    size_t start, end;
    while (rc == 0 && !r->cancel_asked && !r->c->closing) {
        int got = watch_next(r, &start, &end);
        if (got <= 0) {
            rc = got;
            break;
        }
        rc = watch_message(r, r->resp + start, end - start);
    }
    r->dispatching = false;
    size_t consumed = r->msg_start; /* everything before it is delivered or blank */
    if (rc == 0 && consumed > 0) {
        /* keep only the message in progress */
        memmove(r->resp, r->resp + consumed, r->resp_len - consumed);
        r->resp_len -= consumed;
        r->scan_pos -= consumed;
        r->msg_start -= consumed;
    }
    if (rc != 0)
        slot__etcd_watch_end(r, rc);
    else if (r->cancel_asked)
        slot__etcd_watch_end(r, SLOT_ETCD_ECANCELLED);
}

void slot__etcd_dispatch_watches(slot_etcd *c)
{
    /* A callback may end any request, the next one in the list included:
     * then start again from the head. Each watch is dispatched at most once
     * (dispatch clears dirty), so this ends; it costs O(requests) per pass. */
    slot__etcd_req *r = c->reqs;
    while (r && !c->closing) {
        if (!(r->kind == SLOT__ETCD_WATCH && r->dirty)) {
            r = r->next;
            continue;
        }
        uint64_t ended = c->ended;
        slot__etcd_req *next = r->next;
        watch_dispatch(r);
        r = c->ended == ended ? next : c->reqs;
    }
}

/* ---- starting and cancelling ---- */

int slot_etcd_watch_start(slot_etcd *c, const char *key, bool prefix, int64_t start_revision, slot_etcd_event_cb ev_cb,
                          slot_etcd_watch_end_cb end_cb, void *data, slot_etcd_watch **out)
{
    if (!c || !ev_cb || !end_cb || !out || !slot__etcd_key_ok(key) || start_revision < 0)
        return SLOT_ETCD_EINVAL;
    json_t *cr = slot__etcd_key_body(key);
    if (cr && prefix && json_object_set_new(cr, "range_end", slot__etcd_prefix_end_json(key)) != 0) {
        json_decref(cr);
        cr = NULL;
    }
    if (cr && start_revision > 0 &&
        json_object_set_new(cr, "start_revision", slot__etcd_json_i64_str(start_revision)) != 0) {
        json_decref(cr);
        cr = NULL;
    }
    json_t *b = cr ? json_pack("{s:o}", "create_request", cr) : NULL;
    slot__etcd_req *r = NULL;
    int rc = slot__etcd_req_start(c, SLOT__ETCD_WATCH, b, (void *)end_cb, data, &r);
    if (rc != 0)
        return rc;
    r->ev_cb = ev_cb;
    r->from_now = start_revision == 0;
    r->last_rev = start_revision > 0 ? start_revision - 1 : 0;
    *out = (slot_etcd_watch *)r;
    return 0;
}

void slot_etcd_watch_cancel(slot_etcd_watch *w)
{
    if (!w)
        return;
    slot__etcd_req *r = &w->r;
    SLOT_ASSERT(r->kind == SLOT__ETCD_WATCH);
    if (r->ending)
        return;
    if (r->dispatching) {
        r->cancel_asked = true;
        return;
    }
    slot__etcd_watch_end(r, SLOT_ETCD_ECANCELLED);
}
