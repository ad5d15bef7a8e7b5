#include "common/buf.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/magic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

int
buf_reserve(struct buf *b, size_t n)
{
	size_t want, cap;
	char *p;

	if (n > b->max || b->len > b->max - n)
		return -ENOBUFS;
	want = b->len + n;
	if (b->data && want <= b->cap)
		return 0;
	cap = b->cap ? b->cap : 64;
	while (cap < want)
		cap = cap > SIZE_MAX / 2 ? want : cap * 2;
	if (cap > b->max)
		cap = b->max;
	if (!(p = realloc(b->data, cap + 1)))
		return -ENOMEM;
	if (!b->data)
		p[0] = '\0';
	b->data = p;
	b->cap = cap;
	return 0;
}

int
buf_add(struct buf *b, const void *p, size_t n)
{
	int error;

	if ((error = buf_reserve(b, n)) < 0)
		return error;
	if (n)
		memcpy(b->data + b->len, p, n);
	b->len += n;
	b->data[b->len] = '\0';
	return 0;
}

int
buf_addstr(struct buf *b, const char *s)
{
	return buf_add(b, s, strlen(s));
}

int
buf_addch(struct buf *b, char c)
{
	return buf_add(b, &c, 1);
}

long
buf_add_capped(struct buf *b, const void *p, size_t n)
{
	size_t room = b->max - b->len, take = n < room ? n : room;

	if (buf_add(b, p, take) < 0)
		return -ENOMEM;
	return (long)(n - take);
}

int
buf_vprintf(struct buf *b, const char *fmt, va_list ap)
{
	va_list cp;
	int n, error;

	va_copy(cp, ap);
	n = vsnprintf(NULL, 0, fmt, cp);
	va_end(cp);
	if (n < 0)
		return -EINVAL;
	if ((error = buf_reserve(b, (size_t)n)) < 0)
		return error;
	vsnprintf(b->data + b->len, (size_t)n + 1, fmt, ap);
	b->len += (size_t)n;
	return 0;
}

int
buf_printf(struct buf *b, const char *fmt, ...)
{
	va_list ap;
	int error;

	va_start(ap, fmt);
	error = buf_vprintf(b, fmt, ap);
	va_end(ap);
	return error;
}

void
buf_reset(struct buf *b)
{
	buf_truncate(b, 0);
}

void
buf_truncate(struct buf *b, size_t len)
{
	if (len > b->len)
		return;
	b->len = len;
	if (b->data)
		b->data[len] = '\0';
}

char *
buf_detach(struct buf *b, size_t *len)
{
	char *p = b->data;

	if (!p && !(p = calloc(1, 1)))
		return NULL;
	if (len)
		*len = b->len;
	b->data = NULL;
	b->len = b->cap = 0;
	return p;
}

const char *
buf_cstr(const struct buf *b)
{
	return b->data ? b->data : "";
}

void
buf_free(struct buf *b)
{
	free(b->data);
	b->data = NULL;
	b->len = b->cap = 0;
}

/* Read fd to its end into b; b keeps what it had on error. */
static int
read_fd(struct buf *b, int fd)
{
	size_t before = b->len;
	char chunk[65536];
	int error = 0;
	ssize_t n;

	while ((n = read(fd, chunk, sizeof(chunk))) != 0) {
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			error = -errno;
			break;
		}
		if ((error = buf_add(b, chunk, (size_t)n)) < 0) {
			if (error == -ENOBUFS)
				error = -EFBIG;
			break;
		}
	}
	if (error < 0)
		buf_truncate(b, before);
	return error;
}

int
buf_read_file(struct buf *b, const char *path)
{
	int fd, error;

	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
		return -errno;
	error = read_fd(b, fd);
	close(fd);
	return error;
}

/* Whether fd is on a kernel file system: 1, 0, or -errno. */
static int
on_kernel_fs(int fd)
{
	static const unsigned long kinds[] = { PROC_SUPER_MAGIC, SYSFS_MAGIC,
		DEBUGFS_MAGIC, TRACEFS_MAGIC, SECURITYFS_MAGIC, CGROUP_SUPER_MAGIC,
		CGROUP2_SUPER_MAGIC };
	struct statfs sf;

	if (fstatfs(fd, &sf) < 0)
		return -errno;
	for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++)
		if ((unsigned long)sf.f_type == kinds[i])
			return 1;
	return 0;
}

static int
read_regular(struct buf *b, const char *path, int secret)
{
	struct stat st;
	int fd, error;

	if ((fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY)) < 0)
		return -errno;
	if (fstat(fd, &st) < 0)
		error = -errno;
	else if (S_ISDIR(st.st_mode))
		error = -EISDIR;
	else if (!S_ISREG(st.st_mode))
		error = -EINVAL;
	else if (secret && (error = on_kernel_fs(fd)) != 0)
		error = error > 0 ? -EPERM : error;
	else
		error = read_fd(b, fd);
	close(fd);
	return error;
}

int
buf_read_regular(struct buf *b, const char *path)
{
	return read_regular(b, path, 0);
}

int
buf_read_secret(struct buf *b, const char *path)
{
	return read_regular(b, path, 1);
}
