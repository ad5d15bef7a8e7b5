#include "common/fsx.h"

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* mkdir each prefix of path ending at a '/', and path too when whole. */
static int
mkdir_prefixes(const char *path, mode_t mode, int whole)
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
		if (mkdir(tmp, mode) < 0 && errno != EEXIST)
			return -errno;
		*p = '/';
	}
	if (whole && mkdir(tmp, mode) < 0 && errno != EEXIST)
		return -errno;
	return 0;
}

int
fsx_mkdir_p(const char *path, mode_t mode)
{
	return mkdir_prefixes(path, mode, 1);
}

int
fsx_mkdir_parents(const char *path, mode_t mode)
{
	return mkdir_prefixes(path, mode, 0);
}

int
fsx_write_file(const char *path, const void *data, size_t len)
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

static int
rm_one(const char *path, const struct stat *sb, int type, struct FTW *ftw)
{
	(void)sb;
	(void)ftw;
	return (type == FTW_DP ? rmdir(path) : unlink(path)) < 0 ? -1 : 0;
}

int
fsx_rmtree(const char *path)
{
	struct stat sb;

	if (lstat(path, &sb) < 0)
		return errno == ENOENT ? 0 : -errno;
	return nftw(path, rm_one, 16, FTW_DEPTH | FTW_PHYS) < 0 ? -errno : 0;
}
