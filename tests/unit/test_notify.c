/*
 * test_notify: what common/notify.h sends to a NOTIFY_SOCKET (a datagram
 * socket made here, standing for systemd) and the watchdog interval it
 * reads from WATCHDOG_USEC / WATCHDOG_PID; no-ops without systemd.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "common/notify.h"
#include "t.h"

static int
recv_msg(int fd, char *buf, size_t len)
{
	ssize_t n = recv(fd, buf, len - 1, MSG_DONTWAIT);

	if (n < 0)
		return -1;
	buf[n] = '\0';
	return 0;
}

int
main(void)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	char dir[] = "/tmp/kbnotifyXXXXXX", msg[1100], pid[32];
	int fd;

	unsetenv("NOTIFY_SOCKET");
	unsetenv("WATCHDOG_USEC");
	CHECK_INT("no systemd: ready is a no-op", notify_ready("x"), 0);
	CHECK_INT("no systemd: no watchdog", notify_watchdog_ms(), -1);

	if (!mkdtemp(dir))
		return 2;
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s/notify", dir);
	fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0 || bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		perror("socket");
		return 2;
	}
	setenv("NOTIFY_SOCKET", sa.sun_path, 1);
	CHECK_INT("ready sent", notify_ready("accepting webhooks"), 0);
	CHECK("READY=1 with its status", recv_msg(fd, msg, sizeof(msg)) == 0 &&
	    !strcmp(msg, "READY=1\nSTATUS=accepting webhooks"));
	CHECK_INT("status sent", notify_status("%d tasks", 3), 0);
	CHECK("STATUS line formatted", recv_msg(fd, msg, sizeof(msg)) == 0 && !strcmp(msg, "STATUS=3 tasks"));
	CHECK_INT("watchdog sent", notify_watchdog(), 0);
	CHECK("WATCHDOG=1", recv_msg(fd, msg, sizeof(msg)) == 0 && !strcmp(msg, "WATCHDOG=1"));
	CHECK_INT("stopping sent", notify_stopping(), 0);
	CHECK("STOPPING=1", recv_msg(fd, msg, sizeof(msg)) == 0 && !strcmp(msg, "STOPPING=1"));

	setenv("WATCHDOG_USEC", "30000000", 1);
	snprintf(pid, sizeof(pid), "%d", (int)getpid());
	setenv("WATCHDOG_PID", pid, 1);
	CHECK_INT("half of WatchdogSec=30", notify_watchdog_ms(), 15000);
	setenv("WATCHDOG_PID", "1", 1);
	CHECK_INT("a watchdog meant for another process is not ours", notify_watchdog_ms(), -1);

	close(fd);
	unlink(sa.sun_path);
	rmdir(dir);
	return t_done("test_notify");
}
