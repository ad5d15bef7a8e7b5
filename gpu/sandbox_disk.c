/*
 * The scratch directory's disk quota: a size-limited tmpfs mounted over
 * the scratch for one run, in the caller's own mount namespace, so the
 * caller (the judge reading a worker's outputs while it runs) sees the
 * very files the sandboxed program writes. RLIMIT_FSIZE bounds one file;
 * this bounds them all (bytes and inodes), and a write past it fails with
 * ENOSPC.
 *
 * The scratch's top-level regular files are carried into the tmpfs before
 * the run (a build's source) and, up to SBX_DISK_KEEP_MAX each, back out
 * after it (a build's kernel.so, a tool's log), then the tmpfs is
 * unmounted. Only top-level files travel: directories are recreated empty.
 *
 * A janitor process (its own session, so a kill of the caller's process
 * group spares it) holds a pipe from us and unmounts the tmpfs when the
 * pipe ends: a launcher killed with SIGKILL leaves no mount behind.
 *
 * Needs root (CAP_SYS_ADMIN in the caller's mount namespace).
 */
#include "gpu/sandbox_int.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#define COPY_CHUNK (1u << 20)

/* Copy regular file name from directory fd from to directory fd to; 0 or -errno. */
static int
copy_file(int from, int to, const char *name, size_t max)
{
	struct stat st;
	char *buf = NULL;
	int in, out = -1, error = 0;
	off_t off = 0;

	/* The tmpfs side was written by the sandboxed program: follow nothing. */
	if ((in = openat(from, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC)) < 0)
		return -errno;
	if (fstat(in, &st) < 0) {
		error = -errno;
		goto out;
	}
	if (!S_ISREG(st.st_mode) || (size_t)st.st_size > max) {
		error = S_ISREG(st.st_mode) ? -EFBIG : -EINVAL;
		goto out;
	}
	unlinkat(to, name, 0);
	if ((out = openat(to, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
	    st.st_mode & 07777)) < 0 || !(buf = malloc(COPY_CHUNK))) {
		error = out < 0 ? -errno : -ENOMEM;
		goto out;
	}
	for (;;) {
		ssize_t n = pread(in, buf, COPY_CHUNK, off), w = 0;
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			error = n < 0 ? -errno : 0;
			break;
		}
		while (w < n) {
			ssize_t k = pwrite(out, buf + w, (size_t)(n - w), off + w);
			if (k < 0 && errno == EINTR)
				continue;
			if (k <= 0) {
				error = k < 0 ? -errno : -EIO;
				goto out;
			}
			w += k;
		}
		off += n;
	}
	if (fchown(out, st.st_uid, st.st_gid) < 0 && error == 0)
		error = -errno;
out:
	free(buf);
	if (out >= 0)
		close(out);
	close(in);
	return error;
}

/* Each top-level entry of from into to: regular files copied, directories made empty. */
static void
carry(int from, int to, size_t max, int dirs)
{
	int fd = dup(from);
	DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
	struct dirent *e;
	struct stat st;

	if (!d) {
		if (fd >= 0)
			close(fd);
		return;
	}
	while ((e = readdir(d))) {
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		if (fstatat(from, e->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0)
			continue;
		if (S_ISREG(st.st_mode))
			copy_file(from, to, e->d_name, max);
		else if (dirs && S_ISDIR(st.st_mode) && mkdirat(to, e->d_name, st.st_mode & 07777) == 0)
			fchownat(to, e->d_name, st.st_uid, st.st_gid, AT_SYMLINK_NOFOLLOW);
	}
	closedir(d);
}

/*
 * The janitor: reads the tmpfs's device number, waits for the pipe's end,
 * unmounts, exits. Only the tmpfs it was told of: never a mount another
 * run stacked on the same path. Fork-safe calls only.
 */
static void
janitor(int rfd, const char *path)
{
	struct stat st;
	dev_t dev;
	ssize_t n;
	char c;

	setsid();
	signal(SIGINT, SIG_IGN);
	signal(SIGTERM, SIG_IGN);
	signal(SIGHUP, SIG_IGN);
	if (chdir("/") < 0)
		_exit(1);
	if (dup2(rfd, 0) < 0)
		_exit(1);
	/* Nothing else of the caller's (its stdio pipes least of all) stays open. */
	syscall(SYS_close_range, 1U, ~0U, 0U);
	while ((n = read(0, &dev, sizeof(dev))) < 0 && errno == EINTR)
		;
	if (n != (ssize_t)sizeof(dev))
		_exit(0);	/* nothing was mounted */
	while (read(0, &c, 1) < 0 && errno == EINTR)
		;
	if (stat(path, &st) == 0 && st.st_dev == dev)
		umount2(path, MNT_DETACH);
	_exit(0);
}

int
sbx_disk_mount(struct sbx_disk *d, const char *scratch, size_t bytes, int noexec,
    char *why, size_t cap)
{
	char opts[128];
	struct stat st;
	int p[2] = { -1, -1 }, top, error = 0;
	unsigned long inodes = bytes / 16384 < 1024 ? 1024 : bytes / 16384;

	memset(d, 0, sizeof(*d));
	d->under_fd = d->janitor_fd = -1;
	if (snprintf(d->path, sizeof(d->path), "%s", scratch) >= (int)sizeof(d->path))
		return -ENAMETOOLONG;
	if ((d->under_fd = open(scratch, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) < 0 ||
	    fstat(d->under_fd, &st) < 0) {
		error = -errno;
		snprintf(why, cap, "opening %s: %s", scratch, strerror(-error));
		goto fail;
	}
	if (pipe2(p, O_CLOEXEC) < 0 || (d->janitor = fork()) < 0) {
		error = -errno;
		snprintf(why, cap, "starting the unmounting janitor: %s", strerror(-error));
		goto fail;
	}
	if (d->janitor == 0) {
		close(p[1]);
		janitor(p[0], d->path);
	}
	close(p[0]), p[0] = -1;
	d->janitor_fd = p[1], p[1] = -1;
	snprintf(opts, sizeof(opts), "size=%zu,nr_inodes=%lu,mode=%04o,uid=%u,gid=%u",
	    bytes, inodes, (unsigned)(st.st_mode & 07777), (unsigned)st.st_uid, (unsigned)st.st_gid);
	if (mount("kb-scratch", scratch, "tmpfs", MS_NOSUID | MS_NODEV |
	    (noexec ? MS_NOEXEC : 0), opts) < 0) {
		error = -errno;
		snprintf(why, cap, "mounting a %zu MiB tmpfs on %s: %s", bytes >> 20, scratch,
		    strerror(-error));
		goto fail;
	}
	d->mounted = 1;
	d->bytes = bytes;
	if ((top = open(scratch, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) < 0 ||
	    fstat(top, &st) < 0 ||
	    write(d->janitor_fd, &st.st_dev, sizeof(st.st_dev)) != (ssize_t)sizeof(st.st_dev)) {
		error = -errno;
		snprintf(why, cap, "telling the janitor of the tmpfs: %s", strerror(-error));
		if (top >= 0)
			close(top);
		goto fail;
	}
	d->dev = st.st_dev;
	carry(d->under_fd, top, bytes, 1);
	close(top);
	return 0;
fail:
	for (int i = 0; i < 2; i++)
		if (p[i] >= 0)
			close(p[i]);
	sbx_disk_release(d);
	return error;
}

int
sbx_disk_full(const struct sbx_disk *d, size_t *used)
{
	struct statvfs sv;

	*used = 0;
	if (!d->mounted || statvfs(d->path, &sv) < 0)
		return 0;
	*used = (size_t)(sv.f_blocks - sv.f_bfree) * sv.f_frsize;
	/* Full: less than a page left, or no inode. */
	return sv.f_bavail * sv.f_frsize < 4096 || sv.f_favail == 0;
}

void
sbx_disk_release(struct sbx_disk *d)
{
	struct stat st;
	int top;

	if (d->mounted) {
		/* Ours still on top (no other run stacked a mount here since)? */
		if ((top = open(d->path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) >= 0 &&
		    fstat(top, &st) == 0 && (!d->dev || st.st_dev == d->dev)) {
			carry(top, d->under_fd, SBX_DISK_KEEP_MAX, 0);
			umount2(d->path, MNT_DETACH);
		}
		if (top >= 0)
			close(top);
		d->mounted = 0;
	}
	if (d->janitor_fd >= 0)
		close(d->janitor_fd);
	d->janitor_fd = -1;
	/*
	 * Unmounted already: the janitor has nothing left to do. Not waited
	 * for by its pipe, whose write end other runs' sandbox processes
	 * (forked, never exec'd) may hold a while.
	 */
	if (d->janitor > 0) {
		kill(d->janitor, SIGKILL);
		while (waitpid(d->janitor, NULL, 0) < 0 && errno == EINTR)
			;
	}
	d->janitor = 0;
	if (d->under_fd >= 0)
		close(d->under_fd);
	d->under_fd = -1;
}
