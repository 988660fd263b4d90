/*
 * etcd.c — the etcd v3 client (slot/etcd.h): errors, the endpoint list,
 * making and closing a client. etcd_int.h has the map of the other files
 * (the transport, the KV and lease requests, watches, base64).
 */
#include <stdlib.h>
#include <string.h>

#include "etcd_int.h"

/* ---- errors ---- */

const char *slot_etcd_err_name(int err)
{
    static const char prefix[] = "SLOT_ETCD_";
    if (err == 0)
        return "OK";
    if (err > SLOT_RC_ETCD_HI || err < SLOT_RC_ETCD_LO)
        return "UNKNOWN";
    const char *name = NULL;
    switch (err) {
#define SLOT__ETCD_ERR_NAME(wing, code, value, msg) \
    case value:                                     \
        name = #code;                               \
        break;
        SLOT_RC_MAP(SLOT__ETCD_ERR_NAME)
#undef SLOT__ETCD_ERR_NAME
    default:
        break;
    }
    return name && strncmp(name, prefix, sizeof(prefix) - 1) == 0 ? name + sizeof(prefix) - 1 : "UNKNOWN";
}

/* ---- the client ---- */

/* Copy the comma-separated endpoints into c->eps, each without its
 * trailing slashes. 0 or SLOT_ETCD_EINVAL. */
static int parse_endpoints(slot_etcd *c, const char *list)
{
    if (!list)
        return SLOT_ETCD_EINVAL;
    const char *p = list;
    for (;;) {
        const char *comma = strchr(p, ',');
        size_t n = comma ? (size_t)(comma - p) : strlen(p);
        while (n > 0 && p[n - 1] == '/')
            n--;
        bool scheme = (n > 7 && strncmp(p, "http://", 7) == 0) || (n > 8 && strncmp(p, "https://", 8) == 0);
        if (!scheme || n > SLOT_ETCD_ENDPOINT_BYTES_MAX || c->neps == SLOT_ETCD_ENDPOINTS_MAX)
            return SLOT_ETCD_EINVAL;
        for (size_t i = 0; i < n; i++)
            if ((unsigned char)p[i] <= ' ' || p[i] == 0x7f)
                return SLOT_ETCD_EINVAL;
        memcpy(c->eps[c->neps], p, n);
        c->eps[c->neps][n] = '\0';
        c->neps++;
        if (!comma)
            return 0;
        p = comma + 1;
    }
}

int slot_etcd_new(uv_loop_t *loop, const char *endpoints, const slot_etcd_opts *opts, slot_etcd **out)
{
    slot_etcd_opts o = opts ? *opts : (slot_etcd_opts){0};
    if (!loop || !out)
        return SLOT_ETCD_EINVAL;
    if (o.timeout_ms == 0)
        o.timeout_ms = SLOT_ETCD_TIMEOUT_MS_DEFAULT;
    if (o.inflight_max == 0)
        o.inflight_max = SLOT_ETCD_INFLIGHT_DEFAULT;
    if (o.body_bytes_max == 0)
        o.body_bytes_max = SLOT_ETCD_BODY_BYTES_DEFAULT;
    if (o.timeout_ms > SLOT_ETCD_TIMEOUT_MS_MAX || o.inflight_max > SLOT_ETCD_INFLIGHT_MAX ||
        o.body_bytes_max < SLOT_ETCD_BODY_BYTES_MIN || o.body_bytes_max > SLOT_ETCD_BODY_BYTES_MAX)
        return SLOT_ETCD_EINVAL;
    if (slot__etcd_curl_init() != 0)
        return SLOT_ETCD_ENOMEM;
    slot_etcd *c = calloc(1, sizeof *c);
    if (!c)
        return SLOT_ETCD_ENOMEM;
    int rc = parse_endpoints(c, endpoints);
    if (rc != 0) {
        free(c);
        return rc;
    }
    c->loop = loop;
    c->timeout_ms = o.timeout_ms;
    c->inflight_max = o.inflight_max;
    c->body_max = o.body_bytes_max;
    rc = slot__etcd_http_open(c);
    if (rc != 0) {
        free(c);
        return rc;
    }
    *out = c;
    return 0;
}

void slot_etcd_close(slot_etcd *c)
{
    if (!c || c->closing)
        return;
    c->closing = true;
    if (c->busy == 0)
        slot__etcd_teardown(c);
}
