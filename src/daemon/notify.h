/*
 * notify.h — telling systemd how slotd is doing (sd_notify(3); the unit in
 * docs/systemd/slotd.service.in uses Type=notify): READY=1 once it listens,
 * STOPPING=1 when it begins to stop, WATCHDOG=1 pings while the unit sets
 * WatchdogSec=. Built with libsystemd when meson finds it (-Dsystemd);
 * without it, or when slotd does not run under systemd (no $NOTIFY_SOCKET),
 * nothing is sent. Internal to the daemon; every call on the loop thread.
 */
#ifndef SLOT_NOTIFY_H
#define SLOT_NOTIFY_H

#include <uv.h>

/*
 * slot__notify_ready — send "READY=1" with "STATUS=<status>" (e.g.
 * "listening on 127.0.0.1:7420"; copied), and, when the service manager asked
 * for a watchdog (sd_watchdog_enabled: $WATCHDOG_USEC, and $WATCHDOG_PID
 * unset or this process), send "WATCHDOG=1" now and then every half of
 * WATCHDOG_USEC (at least every SLOT_NOTIFY_WATCHDOG_MS_MIN ms) from a timer
 * on loop. The timer does not keep the loop alive and is closed with the
 * loop's other handles. Call once, after the listening socket is announced.
 * Errors sending are ignored: systemd's view is advisory for slotd.
 */
void slot__notify_ready(uv_loop_t *loop, const char *status);

/* slot__notify_stopping — send "STOPPING=1" and "STATUS=stopping" (at the
 * first SIGTERM/SIGINT); the watchdog pings go on until the loop closes. */
void slot__notify_stopping(void);

/* The shortest ping interval: a WATCHDOG_USEC under 2 ms is pinged this often. */
#define SLOT_NOTIFY_WATCHDOG_MS_MIN 1u

#endif
