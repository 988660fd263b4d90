/*
 * notify.c — sd_notify for slotd (daemon_int.h).
 */
#include "daemon_int.h"

#include "slot_config.h"

#ifdef SLOT_HAVE_LIBSYSTEMD
#include <stdint.h>
#include <stdio.h>

#include <systemd/sd-daemon.h>

static uv_timer_t watchdog_timer;

static void on_watchdog(uv_timer_t *t)
{
    (void)t;
    sd_notify(0, "WATCHDOG=1");
}

void slot__notify_ready(uv_loop_t *loop, const char *status)
{
    char msg[256];
    snprintf(msg, sizeof msg, "READY=1\nSTATUS=%s", status);
    sd_notify(0, msg);
    uint64_t usec = 0;
    if (sd_watchdog_enabled(0, &usec) <= 0 || usec == 0)
        return;
    uint64_t every_ms = usec / 2000u; /* half the watchdog's time, as sd_watchdog_enabled(3) advises */
    if (every_ms < SLOT_NOTIFY_WATCHDOG_MS_MIN)
        every_ms = SLOT_NOTIFY_WATCHDOG_MS_MIN;
    sd_notify(0, "WATCHDOG=1");
    uv_timer_init(loop, &watchdog_timer);
    uv_timer_start(&watchdog_timer, on_watchdog, every_ms, every_ms);
    uv_unref((uv_handle_t *)&watchdog_timer);
}

void slot__notify_stopping(void)
{
    sd_notify(0, "STOPPING=1\nSTATUS=stopping");
}

#else /* built without libsystemd: slotd tells no service manager anything */

void slot__notify_ready(uv_loop_t *loop, const char *status)
{
    (void)loop;
    (void)status;
}

void slot__notify_stopping(void)
{
}

#endif
