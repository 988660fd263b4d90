/* bench/drv_redis.h — the Redis+Lua target (drv_redis.c), built only with hiredis (BENCH_HAVE_REDIS). */
#ifndef SLOT_BENCH_DRV_REDIS_H
#define SLOT_BENCH_DRV_REDIS_H

#include "driver.h"

#ifdef BENCH_HAVE_REDIS
extern const bench_driver bench_driver_redis;
#endif

#endif
