/*
 * common/notify.c: sd_notify for serve and runner (see notify.h).
 */
#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <systemd/sd-daemon.h>

#include "common/notify.h"

#define NOTIFY_MAX 1024

static int
send_state(const char *state)
{
	int rc = sd_notify(0, state);

	return rc < 0 ? rc : 0;
}

int
notify_ready(const char *status)
{
	char msg[NOTIFY_MAX];

	if (!status)
		return send_state("READY=1");
	snprintf(msg, sizeof(msg), "READY=1\nSTATUS=%s", status);
	return send_state(msg);
}

int
notify_status(const char *fmt, ...)
{
	char msg[NOTIFY_MAX];
	va_list ap;
	int n = snprintf(msg, sizeof(msg), "STATUS=");

	va_start(ap, fmt);
	vsnprintf(msg + n, sizeof(msg) - (size_t)n, fmt, ap);
	va_end(ap);
	return send_state(msg);
}

int
notify_watchdog_ms(void)
{
	uint64_t usec = 0;
	uint64_t ms;

	if (sd_watchdog_enabled(0, &usec) <= 0 || usec == 0)
		return -1;
	ms = usec / 2000;
	if (ms < 1)
		ms = 1;
	return ms > 0x7fffffff ? 0x7fffffff : (int)ms;
}

int
notify_watchdog(void)
{
	return send_state("WATCHDOG=1");
}

int
notify_stopping(void)
{
	return send_state("STOPPING=1");
}
