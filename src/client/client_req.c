/* client_req.c — the request half of the C client's codec: the slot_req_*
 * builders and slot_req_encode, which writes one request line; no I/O (see
 * slot/client.h). The connection is in client.c, the reply parser in client_reply.c. */
#include "slot/client.h"

#include <errno.h>
#include <string.h>

#include "base/jsonw.h"

/* ---------------------------------------------------------------- building */

void slot_req_init(slot_req *req, slot_op op)
{
    memset(req, 0, sizeof(*req));
    req->op = op;
}

/* Copy a NUL-terminated string into a fixed field; -EINVAL when it does not fit. */
static int set_field(char *dst, size_t max, const char *src, size_t *len_out)
{
    size_t n = strlen(src);
    if (n > max)
        return -EINVAL;
    memcpy(dst, src, n + 1);
    *len_out = n;
    return 0;
}

int slot_req_set_event(slot_req *req, const char *event)
{
    size_t n = 0;
    int rc = set_field(req->event, SLOT_EVENT_BYTES_MAX, event, &n);
    if (rc == 0) {
        req->event_len = (uint8_t)n;
        req->has |= SLOT_HAS_EVENT;
    }
    return rc;
}

int slot_req_set_user(slot_req *req, const char *user)
{
    size_t n = 0;
    int rc = set_field(req->user, SLOT_USER_BYTES_MAX, user, &n);
    if (rc == 0)
        req->user_len = (uint8_t)n;
    return rc;
}

int slot_req_set_request(slot_req *req, const char *request)
{
    size_t n = 0;
    int rc = set_field(req->request, SLOT_REQUEST_BYTES_MAX, request, &n);
    if (rc == 0)
        req->request_len = (uint8_t)n;
    return rc;
}

int slot_req_set_hold(slot_req *req, const char *hold)
{
    size_t n = 0;
    int rc = set_field(req->hold, SLOT_HOLD_ARG_BYTES_MAX, hold, &n);
    if (rc == 0)
        req->hold_len = (uint8_t)n;
    return rc;
}

int slot_req_set_token(slot_req *req, const char *token)
{
    size_t n = 0;
    int rc = set_field(req->token, SLOT_TOKEN_BYTES_MAX, token, &n);
    if (rc == 0) {
        req->token_len = (uint16_t)n;
        req->has |= SLOT_HAS_TOKEN;
    }
    return rc;
}

void slot_req_set_id_int(slot_req *req, int64_t id)
{
    req->id.kind = SLOT_ID_INT;
    req->id.i = id;
    req->id.len = 0;
    req->id.s[0] = 0;
}

int slot_req_set_id_str(slot_req *req, const char *id)
{
    size_t n = 0;
    int rc = set_field(req->id.s, SLOT_ID_BYTES_MAX, id, &n);
    if (rc == 0) {
        req->id.kind = SLOT_ID_STR;
        req->id.len = (uint8_t)n;
        req->id.i = 0;
    }
    return rc;
}

int slot_req_hold(slot_req *req, const char *event, const char *user, const char *request, uint32_t qty)
{
    slot_req_init(req, SLOT_OP_HOLD);
    req->qty = qty;
    if (slot_req_set_event(req, event) < 0 || slot_req_set_user(req, user) < 0 ||
        slot_req_set_request(req, request) < 0)
        return -EINVAL;
    return 0;
}

int slot_req_hold_many(slot_req *req, const char *user, const char *request)
{
    slot_req_init(req, SLOT_OP_HOLD_MANY);
    if (slot_req_set_user(req, user) < 0 || slot_req_set_request(req, request) < 0)
        return -EINVAL;
    return 0;
}

int slot_req_cart_add(slot_req *req, const char *event, uint32_t qty)
{
    size_t n = strlen(event);
    if (req->nitems >= SLOT_CART_ITEMS_MAX || n > SLOT_EVENT_BYTES_MAX)
        return -EINVAL;
    slot_item *it = &req->items[req->nitems++];
    memcpy(it->event, event, n + 1);
    it->event_len = (uint8_t)n;
    it->qty = (uint16_t)(qty > UINT16_MAX ? UINT16_MAX : qty);
    return 0;
}

int slot_req_waitlist(slot_req *req, slot_op op, const char *event, const char *user, const char *request, uint32_t qty)
{
    if (op != SLOT_OP_WAITLIST_JOIN && op != SLOT_OP_WAITLIST_LEAVE && op != SLOT_OP_WAITLIST)
        return -EINVAL;
    slot_req_init(req, op);
    req->qty = qty;
    if (slot_req_set_event(req, event) < 0 || slot_req_set_user(req, user) < 0 ||
        slot_req_set_request(req, request) < 0)
        return -EINVAL;
    return 0;
}

void slot_req_set_waitlist_max(slot_req *req, uint32_t n)
{
    req->waitlist_max = n;
    req->has |= SLOT_HAS_WAITLIST_MAX;
}

int slot_req_cluster_change(slot_req *req, slot_cluster_change change, const char *node)
{
    slot_req_init(req, SLOT_OP_CLUSTER_CHANGE);
    size_t n = node ? strlen(node) : 0;
    if (change < SLOT_CHANGE_ADD || change > SLOT_CHANGE_PROMOTE || n > SLOT_CLUSTER_NAME_BYTES_MAX)
        return -EINVAL;
    req->change = change;
    memcpy(req->node, node ? node : "", n + 1);
    req->node_len = (uint8_t)n;
    return 0;
}

int slot_req_hold_op(slot_req *req, slot_op op, const char *event, const char *hold, const char *user)
{
    if (op != SLOT_OP_CONFIRM && op != SLOT_OP_RELEASE && op != SLOT_OP_GET_HOLD && op != SLOT_OP_CANCEL)
        return -EINVAL;
    slot_req_init(req, op);
    if (slot_req_set_event(req, event) < 0 || slot_req_set_hold(req, hold) < 0)
        return -EINVAL;
    if (user && slot_req_set_user(req, user) < 0)
        return -EINVAL;
    return 0;
}

int slot_req_extend(slot_req *req, const char *event, const char *hold, const char *user, uint32_t by_ms)
{
    slot_req_init(req, SLOT_OP_EXTEND);
    req->by_ms = by_ms;
    if (slot_req_set_event(req, event) < 0 || slot_req_set_hold(req, hold) < 0 || slot_req_set_user(req, user) < 0)
        return -EINVAL;
    return 0;
}

void slot_req_set_confirm_qty(slot_req *req, uint32_t qty)
{
    req->qty = qty;
    req->has |= SLOT_HAS_QTY;
}

void slot_req_set_reacquire(slot_req *req, bool reacquire)
{
    req->reacquire = reacquire;
}

int slot_req_sale_window(slot_req *req, const char *event, uint64_t opens_at_ms, uint64_t closes_at_ms)
{
    slot_req_init(req, SLOT_OP_SET_SALE_WINDOW);
    req->opens_at_ms = opens_at_ms;
    req->closes_at_ms = closes_at_ms;
    return slot_req_set_event(req, event) < 0 ? -EINVAL : 0;
}

void slot_req_set_window(slot_req *req, uint64_t opens_at_ms, uint64_t closes_at_ms)
{
    req->opens_at_ms = opens_at_ms;
    req->closes_at_ms = closes_at_ms;
    req->has |= SLOT_HAS_OPENS_AT | SLOT_HAS_CLOSES_AT;
}

int slot_req_event(slot_req *req, slot_op op, const char *event)
{
    if ((unsigned)op >= SLOT_OP__COUNT)
        return -EINVAL;
    slot_req_init(req, op);
    if (event && slot_req_set_event(req, event) < 0)
        return -EINVAL;
    return 0;
}

int slot_req_create_event(slot_req *req, const char *event, uint64_t capacity, const slot_event_settings *s)
{
    slot_req_init(req, SLOT_OP_CREATE_EVENT);
    req->capacity = capacity;
    if (slot_req_set_event(req, event) < 0)
        return -EINVAL;
    if (!s)
        return 0;
    /* Each setting sent is the field and its bit, as proto sets them on a parse. */
    if (s->shards) {
        req->shards = s->shards;
        req->has |= SLOT_HAS_SHARDS;
    }
    if (s->hold_ttl_ms) {
        req->hold_ttl_ms = s->hold_ttl_ms;
        req->has |= SLOT_HAS_HOLD_TTL;
    }
    if (s->max_per_user) {
        req->max_per_user = s->max_per_user;
        req->has |= SLOT_HAS_MAX_PER_USER;
    }
    if (s->max_per_request) {
        req->max_per_request = s->max_per_request;
        req->has |= SLOT_HAS_MAX_PER_REQUEST;
    }
    if (s->opens_at_ms) {
        req->opens_at_ms = s->opens_at_ms;
        req->has |= SLOT_HAS_OPENS_AT;
    }
    if (s->closes_at_ms) {
        req->closes_at_ms = s->closes_at_ms;
        req->has |= SLOT_HAS_CLOSES_AT;
    }
    if (s->has_max_extensions) {
        req->max_extensions = s->max_extensions;
        req->has |= SLOT_HAS_MAX_EXTENSIONS;
    }
    if (s->max_hold_ms) {
        req->max_hold_ms = s->max_hold_ms;
        req->has |= SLOT_HAS_MAX_HOLD_MS;
    }
    if (s->waitlist_max)
        slot_req_set_waitlist_max(req, s->waitlist_max);
    return 0;
}

int slot_req_backup(slot_req *req, const char *path)
{
    slot_req_init(req, SLOT_OP_BACKUP);
    size_t n = strlen(path);
    if (n > SLOT_PATH_BYTES_MAX)
        return -EINVAL;
    memcpy(req->path, path, n + 1);
    req->path_len = (uint16_t)n;
    return 0;
}

/* ---------------------------------------------------------------- encoding */

/* The client's strings go out as the caller gave them: bytes >= 0x80 unchanged
 * (UTF-8 is the caller's; slotd answers bad_json to ill-formed UTF-8, where
 * U+FFFD would silently turn two different bad names into the same one), and
 * \b \t \n \f \r in their 2-byte short escapes, as the client always sent them. */
#define REQ_STR_FLAGS (SLOT__JW_STR_RAW_UTF8 | SLOT__JW_STR_SHORT_ESC)

static void w_str_field(slot__jw *w, const char *key, const char *s, size_t n)
{
    slot__jw_key_str(w, key, s, n, REQ_STR_FLAGS);
}

static void w_create_event(slot__jw *w, const slot_req *req)
{
    w_str_field(w, "event", req->event, req->event_len);
    slot__jw_key_u64(w, "capacity", req->capacity);
    if (req->has & SLOT_HAS_SHARDS)
        slot__jw_key_u64(w, "shards", req->shards);
    if (req->has & SLOT_HAS_HOLD_TTL)
        slot__jw_key_u64(w, "hold_ttl_ms", req->hold_ttl_ms);
    if (req->has & SLOT_HAS_MAX_PER_USER)
        slot__jw_key_u64(w, "max_per_user", req->max_per_user);
    if (req->has & SLOT_HAS_MAX_PER_REQUEST)
        slot__jw_key_u64(w, "max_per_request", req->max_per_request);
    if (req->has & SLOT_HAS_OPENS_AT)
        slot__jw_key_u64(w, "opens_at", req->opens_at_ms);
    if (req->has & SLOT_HAS_CLOSES_AT)
        slot__jw_key_u64(w, "closes_at", req->closes_at_ms);
    if (req->has & SLOT_HAS_MAX_EXTENSIONS)
        slot__jw_key_u64(w, "max_extensions", req->max_extensions);
    if (req->has & SLOT_HAS_MAX_HOLD_MS)
        slot__jw_key_u64(w, "max_hold_ms", req->max_hold_ms);
    if (req->has & SLOT_HAS_WAITLIST_MAX)
        slot__jw_key_u64(w, "waitlist_max", req->waitlist_max);
    if (req->has & SLOT_HAS_PARENT) /* v1.2 ticket types */
        w_str_field(w, "parent", req->parent, req->parent_len);
}

/* hold_many's items: [{"event":..,"qty":..},...] */
static void w_items(slot__jw *w, const slot_req *req)
{
    slot__jw_key(w, "items");
    SLOT__JW_LIT(w, "[");
    for (uint32_t i = 0; i < req->nitems && i < SLOT_CART_ITEMS_MAX; i++) {
        if (i > 0)
            SLOT__JW_LIT(w, ",");
        SLOT__JW_LIT(w, "{\"event\":");
        slot__jw_str(w, req->items[i].event, req->items[i].event_len, REQ_STR_FLAGS);
        slot__jw_key_u64(w, "qty", req->items[i].qty);
        SLOT__JW_LIT(w, "}");
    }
    SLOT__JW_LIT(w, "]");
}

/* event, hold, user: the fields every op on a buyer's hold names. */
static void w_hold_fields(slot__jw *w, const slot_req *req)
{
    w_str_field(w, "event", req->event, req->event_len);
    w_str_field(w, "hold", req->hold, req->hold_len);
    w_str_field(w, "user", req->user, req->user_len);
}

/* The fields of each op (docs/protocol.md, "Frontend ops" and "Admin ops"). */
static void w_op_fields(slot__jw *w, const slot_req *req)
{
    switch (req->op) {
    case SLOT_OP_HELLO:
        if (req->has & SLOT_HAS_TOKEN)
            w_str_field(w, "token", req->token, req->token_len);
        break;
    case SLOT_OP_HOLD:
    case SLOT_OP_WAITLIST_JOIN:
    case SLOT_OP_WAITLIST_LEAVE:
    case SLOT_OP_WAITLIST:
        w_str_field(w, "event", req->event, req->event_len);
        w_str_field(w, "user", req->user, req->user_len);
        w_str_field(w, "request", req->request, req->request_len);
        if (req->op == SLOT_OP_HOLD || req->op == SLOT_OP_WAITLIST_JOIN)
            slot__jw_key_u64(w, "qty", req->qty);
        if (req->op == SLOT_OP_HOLD && (req->has & SLOT_HAS_ALLOCATION)) /* v1.2: from a block */
            w_str_field(w, "allocation", req->alloc, req->alloc_len);
        break;
    case SLOT_OP_ALLOCATE: /* docs/protocol.md, "Allocations" */
    case SLOT_OP_DEALLOCATE:
        w_str_field(w, "event", req->event, req->event_len);
        w_str_field(w, "allocation", req->alloc, req->alloc_len);
        if (req->op == SLOT_OP_ALLOCATE || (req->has & SLOT_HAS_ALLOC_QTY))
            slot__jw_key_u64(w, "qty", req->alloc_qty);
        if (req->op == SLOT_OP_ALLOCATE && (req->has & SLOT_HAS_MAX_PER_USER))
            slot__jw_key_u64(w, "max_per_user", req->max_per_user);
        break;
    case SLOT_OP_HOLD_MANY:
        w_str_field(w, "user", req->user, req->user_len);
        w_str_field(w, "request", req->request, req->request_len);
        w_items(w, req);
        break;
    case SLOT_OP_WAITLIST_ENTRIES:
        w_str_field(w, "event", req->event, req->event_len);
        if (req->limit)
            slot__jw_key_u64(w, "limit", req->limit);
        break;
    case SLOT_OP_CONFIRM:
        w_hold_fields(w, req);
        if (req->has & SLOT_HAS_QTY)
            slot__jw_key_u64(w, "qty", req->qty);
        if (req->reacquire)
            SLOT__JW_LIT(w, ",\"reacquire\":true");
        break;
    case SLOT_OP_EXTEND:
        w_hold_fields(w, req);
        slot__jw_key_u64(w, "by_ms", req->by_ms);
        break;
    case SLOT_OP_RELEASE:
        w_hold_fields(w, req);
        break;
    case SLOT_OP_GET_HOLD: /* no user (worker, admin: any user's hold): the field is left out, not "" */
        if (req->user_len > 0) {
            w_hold_fields(w, req);
        } else {
            w_str_field(w, "event", req->event, req->event_len);
            w_str_field(w, "hold", req->hold, req->hold_len);
        }
        break;
    case SLOT_OP_CANCEL:
        w_str_field(w, "event", req->event, req->event_len);
        w_str_field(w, "hold", req->hold, req->hold_len);
        break;
    case SLOT_OP_EVENT:
    case SLOT_OP_SHARDS:
    case SLOT_OP_SEAT_MAP: /* docs/protocol.md, "Seated events" */
        w_str_field(w, "event", req->event, req->event_len);
        break;
    case SLOT_OP_CHECK:
    case SLOT_OP_PLACEMENT: /* docs/protocol.md, "Placement": one event, or the whole map */
        if (req->has & SLOT_HAS_EVENT)
            w_str_field(w, "event", req->event, req->event_len);
        break;
    case SLOT_OP_JOIN: /* docs/protocol.md, "Admission" */
        w_str_field(w, "event", req->event, req->event_len);
        w_str_field(w, "user", req->user, req->user_len);
        w_str_field(w, "request", req->request, req->request_len);
        break;
    case SLOT_OP_ADMISSION:
        w_str_field(w, "event", req->event, req->event_len);
        w_str_field(w, "ticket", req->ticket, strlen(req->ticket));
        break;
    case SLOT_OP_CREATE_EVENT:
        w_create_event(w, req);
        break;
    case SLOT_OP_SET_CAPACITY:
        w_str_field(w, "event", req->event, req->event_len);
        slot__jw_key_u64(w, "capacity", req->capacity);
        break;
    case SLOT_OP_RESHARD:
        w_str_field(w, "event", req->event, req->event_len);
        slot__jw_key_u64(w, "shards", req->shards);
        break;
    case SLOT_OP_SET_SALE_WINDOW:
        w_str_field(w, "event", req->event, req->event_len);
        slot__jw_key_u64(w, "opens_at", req->opens_at_ms);
        slot__jw_key_u64(w, "closes_at", req->closes_at_ms);
        break;
    case SLOT_OP_SET_STATUS: {
        const char *st = slot_event_status_name(req->status);
        w_str_field(w, "event", req->event, req->event_len);
        w_str_field(w, "status", st, strlen(st));
        break;
    }
    case SLOT_OP_SUBSCRIBE: /* the feed ops (docs/protocol.md, "Feed") */
    case SLOT_OP_ACK:
    case SLOT_OP_FEED_FORGET:
        w_str_field(w, "consumer", req->consumer, req->consumer_len);
        if (req->op == SLOT_OP_ACK || (req->op == SLOT_OP_SUBSCRIBE && req->from == SLOT_FEED_FROM_SEQ))
            slot__jw_key_u64(w, req->op == SLOT_OP_ACK ? "seq" : "from", req->feed_seq);
        else if (req->op == SLOT_OP_SUBSCRIBE)
            w_str_field(w, "from", req->from == SLOT_FEED_FROM_START ? "start" : "acked", 5);
        if (req->op == SLOT_OP_SUBSCRIBE && req->window)
            slot__jw_key_u64(w, "window", req->window);
        break;
    case SLOT_OP_BACKUP:
        w_str_field(w, "path", req->path, req->path_len);
        break;
    case SLOT_OP_CLUSTER_CHANGE: {
        const char *ch = slot_cluster_change_name(req->change);
        w_str_field(w, "change", ch, strlen(ch));
        w_str_field(w, "node", req->node, req->node_len);
        break;
    }
    default: /* expire, stats, digest, and every op without fields */
        break;
    }
}

long slot_req_encode(const slot_req *req, char *buf, size_t cap)
{
    if ((unsigned)req->op >= SLOT_OP__COUNT)
        return -EINVAL;
    slot__jw w;
    slot__jw_init(&w, buf, cap);
    const char *op = slot_op_name(req->op);
    SLOT__JW_LIT(&w, "{\"op\":\"");
    slot__jw_mem(&w, op, strlen(op)); /* op names are plain ASCII: no escaping */
    SLOT__JW_LIT(&w, "\"");
    if (req->id.kind == SLOT_ID_INT) {
        slot__jw_key(&w, "id");
        slot__jw_i64(&w, req->id.i);
    } else if (req->id.kind == SLOT_ID_STR) {
        w_str_field(&w, "id", req->id.s, req->id.len);
    }
    w_op_fields(&w, req);
    SLOT__JW_LIT(&w, "}\n");
    return (long)slot__jw_finish(&w);
}
