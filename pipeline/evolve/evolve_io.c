#include "pipeline/evolve/evolve_int.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/buf.h"
#include "common/jsonx.h"

int
evo_join(char *out, size_t outlen, const char *dir, const char *name)
{
	int n = snprintf(out, outlen, "%s/%s", dir, name);

	return n < 0 || (size_t)n >= outlen ? -ENAMETOOLONG : 0;
}

int
evo_mkdir_p(const char *path)
{
	char tmp[PATH_MAX];
	size_t n = strlen(path);

	if (n == 0 || n >= sizeof(tmp))
		return -ENAMETOOLONG;
	memcpy(tmp, path, n + 1);
	for (char *p = tmp + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		if (mkdir(tmp, 0755) < 0 && errno != EEXIST)
			return -errno;
		*p = '/';
	}
	if (mkdir(tmp, 0755) < 0 && errno != EEXIST)
		return -errno;
	return 0;
}

int
evo_write_file(const char *path, const void *data, size_t len)
{
	char tmp[PATH_MAX];
	const char *p = data;
	int fd, error = 0;

	if (snprintf(tmp, sizeof(tmp), "%s.tmp.%ld", path, (long)getpid()) >= (int)sizeof(tmp))
		return -ENAMETOOLONG;
	if ((fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644)) < 0)
		return -errno;
	while (len > 0) {
		ssize_t w = write(fd, p, len);
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0) {
			error = -errno;
			break;
		}
		p += w;
		len -= (size_t)w;
	}
	if (!error && fsync(fd) < 0)
		error = -errno;
	if (close(fd) < 0 && !error)
		error = -errno;
	if (!error && rename(tmp, path) < 0)
		error = -errno;
	if (error)
		unlink(tmp);
	return error;
}

int
evo_write_json(const char *path, const json_t *v)
{
	struct buf b = BUF_INIT(BUF_MAX_DEFAULT * 4);
	int error;

	if ((error = jsonx_dump(v, JSON_INDENT(2) | JSON_REAL_PRECISION(6), &b)) < 0 ||
	    (error = buf_addch(&b, '\n')) < 0)
		goto out;
	error = evo_write_file(path, b.data ? b.data : "", b.len);
out:
	buf_free(&b);
	return error;
}
