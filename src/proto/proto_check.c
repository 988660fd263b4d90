/*
 * proto_check.c — what a successful parse hands on (proto_int.h,
 * slot__proto_check_parsed): asserted within slot/limits.h's bounds, beside
 * proto.c, whose parser fills the request.
 */
#include "proto_int.h"

#include "slot/assert.h"

/* A string field of len bytes in its buffer of cap bytes: within it and NUL-terminated. */
#define PARSED_STR(buf, len) SLOT_ASSERT((size_t)(len) < sizeof(buf) && (buf)[(len)] == 0)

/*
 * What a successful parse hands on is within slot/limits.h's bounds: every
 * string within its buffer and terminated, every number in its documented
 * range (0 where the field was absent). The server and the allocator rely on
 * that without checking again; a field outside is a parser bug.
 */
void slot__proto_check_parsed(const slot_req *r)
{
    SLOT_ASSERT(r->event_len <= SLOT_EVENT_BYTES_MAX && r->request_len <= SLOT_REQUEST_BYTES_MAX);
    SLOT_ASSERT(r->user_len <= SLOT_USER_BYTES_MAX && r->hold_len <= SLOT_HOLD_ARG_BYTES_MAX);
    SLOT_ASSERT(r->token_len <= SLOT_TOKEN_BYTES_MAX && r->consumer_len <= SLOT_CONSUMER_BYTES_MAX);
    SLOT_ASSERT(r->node_len <= SLOT_CLUSTER_NAME_BYTES_MAX);
    PARSED_STR(r->event, r->event_len);
    PARSED_STR(r->request, r->request_len);
    PARSED_STR(r->user, r->user_len);
    PARSED_STR(r->hold, r->hold_len);
    PARSED_STR(r->token, r->token_len);
    PARSED_STR(r->consumer, r->consumer_len);
    PARSED_STR(r->node, r->node_len);
    SLOT_ASSERT(r->parent_len <= SLOT_EVENT_BYTES_MAX && r->alloc_len <= SLOT_EVENT_BYTES_MAX);
    SLOT_ASSERT(r->client_len <= SLOT_CLIENT_BYTES_MAX);
    PARSED_STR(r->client, r->client_len);
    SLOT_ASSERT(r->max_active_per_client <= SLOT_CAPACITY_MAX && r->client_rate <= SLOT_CLIENT_RATE_MAX);
    PARSED_STR(r->alloc, r->alloc_len);
    SLOT_ASSERT(r->alloc_qty <= SLOT_CAPACITY_MAX);
    PARSED_STR(r->parent, r->parent_len);
    SLOT_ASSERT(r->qty <= SLOT_MAX_PER_REQUEST_MAX && r->max_per_request <= SLOT_MAX_PER_REQUEST_MAX);
    SLOT_ASSERT(r->capacity <= SLOT_CAPACITY_MAX && r->max_per_user <= SLOT_CAPACITY_MAX);
    SLOT_ASSERT(r->shards <= SLOT_SHARDS_MAX && r->hold_ttl_ms <= SLOT_HOLD_TTL_MS_MAX);
    SLOT_ASSERT(r->opens_at_ms <= SLOT_TIME_MS_MAX && r->closes_at_ms <= SLOT_TIME_MS_MAX);
    SLOT_ASSERT(r->max_extensions <= SLOT_MAX_EXTENSIONS_MAX && r->max_hold_ms <= SLOT_MAX_HOLD_MS_MAX);
    SLOT_ASSERT(r->by_ms <= SLOT_EXTEND_BY_MS_MAX && r->waitlist_max <= SLOT_WAITLIST_MAX_MAX);
    SLOT_ASSERT(r->limit <= SLOT_WAITLIST_SHOW_MAX && r->window <= SLOT_FEED_WINDOW_MAX);
    SLOT_ASSERT(r->nitems <= SLOT_CART_ITEMS_MAX);
    if (r->op == SLOT_OP_BACKUP) {
        SLOT_ASSERT(r->path_len >= 1 && r->path_len <= SLOT_PATH_BYTES_MAX && r->path[0] == '/');
        PARSED_STR(r->path, r->path_len);
    } else {
        SLOT_ASSERT(r->path_len == 0);
        for (size_t i = 0; i < r->nitems; i++) {
            SLOT_ASSERT(r->items[i].qty >= 1 && r->items[i].qty <= SLOT_MAX_PER_REQUEST_MAX);
            SLOT_ASSERT(r->items[i].event_len >= 1 && r->items[i].event_len <= SLOT_EVENT_BYTES_MAX);
            PARSED_STR(r->items[i].event, r->items[i].event_len);
        }
    }
}
