/*
 * config_json.c — the configuration of a run as JSON, for the --json
 * report (report.c): every option that applies to the run's scenario.
 * Single-threaded.
 */
#include <jansson.h>

#include "config.h"

json_t *bench_config_json(const bench_config *c)
{
    json_t *o = json_pack("{s:s, s:s, s:s, s:i, s:b, s:s, s:i, s:i, s:s, s:I, s:i, s:I, s:I, s:f, s:I, s:I, s:f}",
                          "scenario", c->name, "target", c->target == BENCH_TARGET_REDIS ? "redis" : "slotd", "host",
                          c->host, "port", (int)c->port, "token", c->token != NULL, "event", c->event, "connections",
                          (int)c->connections, "pipeline", (int)c->pipeline, "qty", c->qty.text, "capacity",
                          (json_int_t)c->capacity, "shards", (int)c->shards, "max_per_user",
                          (json_int_t)c->max_per_user, "users", (json_int_t)c->users, "duration_s",
                          c->duration_ms / 1000.0, "requests", (json_int_t)c->requests, "seed", (json_int_t)c->seed,
                          "warmup_s", c->warmup_ms / 1000.0);
    if (!o)
        return NULL;
    json_t *hosts = json_array();
    for (uint32_t i = 0; i < c->nhosts; i++)
        json_array_append_new(hosts, json_string(c->hosts[i]));
    json_object_set_new(o, "hosts", hosts);
    json_object_set_new(o, "threads", json_integer(c->threads));
    if (c->target == BENCH_TARGET_REDIS && c->scenario != BENCH_PING)
        json_object_set_new(o, "peer", json_string(c->peer == BENCH_PEER_MIN ? "min" : "full"));
    if (bench_scenario_sells_out(c->scenario))
        json_object_set_new(o, "tail", json_integer((json_int_t)c->tail));
    if (c->scenario == BENCH_HOT_RELEASE)
        json_object_set_new(o, "opens_in_s", json_real(c->opens_in_ms / 1e3));
    if (c->scenario == BENCH_HOT_RELEASE)
        json_object_set_new(o, "cart", json_integer(c->cart));
    if (c->scenario == BENCH_HOT_RELEASE)
        json_object_set_new(o, "types", json_integer(c->types));
    if (c->scenario == BENCH_HOT_RELEASE) {
        json_object_set_new(o, "allocation", json_integer((json_int_t)c->allocation));
        json_object_set_new(o, "presale_share_pct", json_integer(c->presale_pct));
        json_object_set_new(o, "presale_connections", json_integer(c->allocation ? c->presale_conns : 0));
    }
    if (c->scenario == BENCH_HOT_RELEASE && c->seated_path) {
        json_object_set_new(o, "seated", json_string(c->seated_path));
        json_object_set_new(o, "seat_mode", json_string(c->seat_mode == BENCH_SEAT_ADJACENT ? "adjacent" : "named"));
    }
    if (c->scenario == BENCH_OPEN_LOOP)
        json_object_set_new(o, "rate", json_real(c->rate_per_s));
    if (c->scenario == BENCH_CHURN) {
        json_object_set_new(o, "confirm_pct", json_integer(c->confirm_pct));
        json_object_set_new(o, "release_pct", json_integer(c->release_pct));
        json_object_set_new(o, "abandon_pct", json_integer(c->abandon_pct));
        json_object_set_new(o, "extend_pct", json_integer(c->extend_pct));
        json_object_set_new(o, "partial_pct", json_integer(c->partial_pct));
        json_object_set_new(o, "late_pct", json_integer(c->late_pct));
        json_object_set_new(o, "think_ms", json_pack("[i, i]", (int)c->think_min_ms, (int)c->think_max_ms));
        json_object_set_new(o, "hold_ttl_ms", json_integer(c->hold_ttl_ms));
    }
    if (c->scenario == BENCH_WAITLIST) {
        json_object_set_new(o, "waiters", json_integer(c->waiters));
        json_object_set_new(o, "poll_ms", json_integer(c->poll_ms));
        json_object_set_new(o, "confirm_pct", json_integer(c->confirm_pct));
        json_object_set_new(o, "release_pct", json_integer(c->release_pct));
        json_object_set_new(o, "abandon_pct", json_integer(c->abandon_pct));
        json_object_set_new(o, "think_ms", json_pack("[i, i]", (int)c->think_min_ms, (int)c->think_max_ms));
        json_object_set_new(o, "hold_ttl_ms", json_integer(c->hold_ttl_ms));
    }
    if (c->scenario == BENCH_MULTI_EVENT) {
        json_object_set_new(o, "events", json_integer(c->events));
        json_object_set_new(o, "zipf_s", json_real(c->zipf_exponent));
    }
    return o;
}
