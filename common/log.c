#include "common/log.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "common/buf.h"

static enum log_level log_level = LOG_INFO;
static int log_fd = STDERR_FILENO;
static char *log_path;
static pthread_mutex_t log_lock = PTHREAD_MUTEX_INITIALIZER;

static const char *const level_names[] = { "debug", "info", "warn", "error", "off" };

void
log_set_level(enum log_level level)
{
	log_level = level;
}

enum log_level
log_get_level(void)
{
	return log_level;
}

int
log_level_parse(const char *name, enum log_level *out)
{
	for (size_t i = 0; i < sizeof(level_names) / sizeof(level_names[0]); i++)
		if (!strcmp(name, level_names[i])) {
			*out = (enum log_level)i;
			return 0;
		}
	return -EINVAL;
}

/*
 * The log: a regular file, appended to, created if missing. Opened
 * without blocking, so a FIFO with no reader fails (ENXIO) instead of
 * hanging serve, and refused unless regular (a FIFO with a reader, a
 * device such as /dev/full), errno EINVAL: -1 as open(2).
 */
static int
open_log_file(const char *path)
{
	int fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC |
	    O_NONBLOCK | O_NOCTTY, 0640);
	struct stat st;
	int e;

	if (fd < 0)
		return -1;
	if (fstat(fd, &st) < 0)
		e = errno;
	else if (!S_ISREG(st.st_mode))
		e = EINVAL;
	else if (fcntl(fd, F_SETFL, O_APPEND) < 0)
		e = errno;
	else
		return fd;
	close(fd);
	errno = e;
	return -1;
}

int
log_open(const char *path)
{
	char *copy = NULL;
	int fd = STDERR_FILENO;

	if (path) {
		if (!(copy = strdup(path)))
			return -ENOMEM;
		if ((fd = open_log_file(path)) < 0) {
			int error = -errno;
			free(copy);
			return error;
		}
	}
	pthread_mutex_lock(&log_lock);
	if (log_fd != STDERR_FILENO)
		close(log_fd);
	log_fd = fd;
	free(log_path);
	log_path = copy;
	pthread_mutex_unlock(&log_lock);
	return 0;
}

int
log_reopen(void)
{
	int fd, error = 0;

	pthread_mutex_lock(&log_lock);
	if (log_path) {
		if ((fd = open_log_file(log_path)) < 0) {
			error = -errno;
		} else {
			close(log_fd);
			log_fd = fd;
		}
	}
	pthread_mutex_unlock(&log_lock);
	return error;
}

const char *
log_quote(char *dst, size_t len, const char *s)
{
	size_t o = 0;
	int needs = !*s;

	for (const char *p = s; *p && !needs; p++)
		needs = *p == ' ' || *p == '"' || *p == '=' || (unsigned char)*p < 0x20;
	if (!needs) {
		snprintf(dst, len, "%s", s);
		if (strlen(s) >= len && len > 4)
			memcpy(dst + len - 4, "...", 4);
		return dst;
	}
	if (len < 8) {
		snprintf(dst, len, "\"\"");
		return dst;
	}
	dst[o++] = '"';
	for (const char *p = s; *p; p++) {
		char esc[8];
		unsigned char c = (unsigned char)*p;
		size_t n;

		if (c == '"' || c == '\\')
			n = (size_t)snprintf(esc, sizeof(esc), "\\%c", c);
		else if (c == '\n')
			n = (size_t)snprintf(esc, sizeof(esc), "\\n");
		else if (c < 0x20)
			n = (size_t)snprintf(esc, sizeof(esc), "\\x%02x", c);
		else
			esc[0] = (char)c, n = 1;
		if (o + n + 5 > len) {
			memcpy(dst + o, "...", 3);
			o += 3;
			break;
		}
		memcpy(dst + o, esc, n);
		o += n;
	}
	dst[o++] = '"';
	dst[o] = '\0';
	return dst;
}

void
log_msg(enum log_level level, const char *msg, const char *fields, ...)
{
	struct buf line = BUF_INIT(BUF_MAX_SMALL);
	char ts[40], qmsg[1024];
	struct timespec now;
	struct tm tm;
	va_list ap;
	int saved = errno;

	if (level < log_level || level >= LOG_OFF)
		return;
	clock_gettime(CLOCK_REALTIME, &now);
	gmtime_r(&now.tv_sec, &tm);
	strftime(ts, sizeof(ts), "%Y-%m-%dT%H:%M:%S", &tm);
	buf_printf(&line, "ts=%s.%03ldZ level=%s msg=%s", ts,
	    now.tv_nsec / 1000000, level_names[level],
	    log_quote(qmsg, sizeof(qmsg), msg));
	if (fields && *fields) {
		buf_addch(&line, ' ');
		va_start(ap, fields);
		if (buf_vprintf(&line, fields, ap) < 0)
			buf_addstr(&line, "fields=truncated");
		va_end(ap);
	}
	buf_addch(&line, '\n');
	if (line.data) {
		pthread_mutex_lock(&log_lock);
		/* One write per line: lines from threads and processes never interleave. */
		(void)!write(log_fd, line.data, line.len);
		pthread_mutex_unlock(&log_lock);
	}
	buf_free(&line);
	errno = saved;
}
