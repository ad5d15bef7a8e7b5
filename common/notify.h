/*
 * notify: the systemd service manager protocol (sd_notify), for the
 * long-running commands (serve, runner) under Type=notify with a watchdog.
 * Without NOTIFY_SOCKET in the environment (not under systemd) every call
 * is a no-op that returns 0, so callers need no special case.
 *
 * The protocol: READY=1 once the process does its job (serve: listening;
 * runner: registered), WATCHDOG=1 at least every watchdog interval (call
 * notify_watchdog() every notify_watchdog_ms() from the loop that proves
 * the process is alive, not from a thread of its own), STOPPING=1 when a
 * stop begins. libsystemd is included here only.
 */
#ifndef KB_COMMON_NOTIFY_H
#define KB_COMMON_NOTIFY_H

/* READY=1 with a STATUS= line (status may be NULL). 0 or -errno. */
int notify_ready(const char *status);

/* STATUS=... (shown by `systemctl status`). 0 or -errno. */
int notify_status(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/*
 * Half of the watchdog interval (WatchdogSec=) in milliseconds, at least 1;
 * -1 when no watchdog is set for this process (a poll timeout of -1 then
 * waits forever, which is what a loop without a watchdog wants).
 */
int notify_watchdog_ms(void);

/* WATCHDOG=1. 0 or -errno. */
int notify_watchdog(void);

/* STOPPING=1. 0 or -errno. */
int notify_stopping(void);

#endif
