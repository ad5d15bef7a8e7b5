#include "gpu/judgesrv.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "common/buf.h"
#include "common/clock.h"
#include "common/crypto.h"
#include "common/fsx.h"
#include "common/jsonx.h"
#include "common/where.h"
#include "gpu/compile.h"
#include "gpu/harness.h"

#define REPLY_MAX (256u << 20)	/* as gpu/harness.c */
#define POLL_MS 50

int
judgesrv_dir(char *dir, size_t len, char *err, size_t errlen)
{
	const char *env = where()->judge_dir;
	char *cache = NULL;
	struct stat st;
	int error;

	if (env && *env) {
		if (snprintf(dir, len, "%s", env) >= (int)len)
			return -ENAMETOOLONG;
	} else {
		if ((error = compile_default_cache_dir(&cache)) < 0) {
			snprintf(err, errlen, "no cache directory for the judge server (no HOME)");
			return error;
		}
		error = snprintf(dir, len, "%s/judge", cache) >= (int)len ? -ENAMETOOLONG : 0;
		free(cache);
		if (error < 0)
			return error;
	}
	if ((error = fsx_mkdir_parents(dir, 0700)) < 0 ||
	    (mkdir(dir, 0700) < 0 && errno != EEXIST && (error = -errno))) {
		snprintf(err, errlen, "cannot create %s: %s", dir, strerror(-error));
		return error;
	}
	if (lstat(dir, &st) < 0) {
		error = -errno;
		snprintf(err, errlen, "%s: %s", dir, strerror(errno));
		return error;
	}
	/* Anyone else who could enter it could plant a socket we would trust. */
	if (!S_ISDIR(st.st_mode) || st.st_uid != geteuid() || (st.st_mode & 077)) {
		snprintf(err, errlen, "refusing the judge directory %s: %s (it must be a "
		    "directory owned by uid %u with mode 0700)", dir, !S_ISDIR(st.st_mode) ?
		    "not a directory" : st.st_uid != geteuid() ? "owned by another user" :
		    "open to other users", (unsigned)geteuid());
		return -EPERM;
	}
	return 0;
}

/* The identity: what the harness says, plus this binary (size and mtime). */
static int
identity_key(const char *backend, int device, char key[17], char *err, size_t errlen)
{
	char hex[CRYPTO_SHA256_HEX], *id = NULL;
	struct buf b = BUF_INIT(1u << 20);
	struct stat st;
	int error;

	if ((error = harness_identity(&id, err, errlen)) < 0)
		return error;
	if (stat("/proc/self/exe", &st) < 0)
		memset(&st, 0, sizeof(st));
	if ((error = buf_printf(&b, "%suid=%u\nbackend=%s\ndevice=%d\nexe=%lld:%lld.%09ld\n",
	    id, (unsigned)geteuid(), backend, device, (long long)st.st_size,
	    (long long)st.st_mtim.tv_sec, st.st_mtim.tv_nsec)) == 0) {
		crypto_sha256_hex(b.data, b.len, hex);
		memcpy(key, hex, 16);
		key[16] = '\0';
	}
	free(id);
	buf_free(&b);
	return error;
}

int
judgesrv_open(struct judgesrv *s, const char *backend, int device, char *err,
    size_t errlen)
{
	char key[17];
	struct {
		char *dst;
		const char *ext;
	} f[] = { { s->sock, "sock" }, { s->meta, "json" }, { s->log, "log" },
		{ s->lock, "lock" }, { s->busy, "busy" }, { s->running, "run" } };
	int error;

	memset(s, 0, sizeof(*s));
	if ((error = judgesrv_dir(s->dir, sizeof(s->dir), err, errlen)) < 0 ||
	    (error = identity_key(backend, device, key, err, errlen)) < 0)
		return error;
	s->backend = backend;
	s->device = device;
	snprintf(s->name, sizeof(s->name), "%.8s%d-%s", backend, device, key);
	for (size_t i = 0; i < sizeof(f) / sizeof(f[0]); i++)
		if (snprintf(f[i].dst, PATH_MAX, "%s/%s.%s", s->dir, s->name, f[i].ext) >= PATH_MAX)
			return -ENAMETOOLONG;
	if (strlen(s->sock) >= sizeof(((struct sockaddr_un *)0)->sun_path)) {
		snprintf(err, errlen, "the socket path %s is too long for a Unix socket "
		    "(set KERNELBOT_JUDGE_DIR to a shorter directory)", s->sock);
		return -ENAMETOOLONG;
	}
	return 0;
}

/* A connected, non-blocking socket to the server; -errno (ENOENT, ECONNREFUSED: none). */
static int
connect_sock(const struct judgesrv *s, int *fd_out)
{
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0), error;

	if (fd < 0)
		return -errno;
	memcpy(a.sun_path, s->sock, strlen(s->sock) + 1);
	if (connect(fd, (struct sockaddr *)&a, sizeof(a)) < 0) {
		error = -errno;
		close(fd);
		return error;
	}
	*fd_out = fd;
	return 0;
}

/* flock fd's file within wait_ms (0: try once). 0 or -EBUSY. */
static int
lock_within(int fd, long wait_ms)
{
	double end = clock_mono_s() + wait_ms / 1000.0;

	for (;;) {
		if (flock(fd, LOCK_EX | LOCK_NB) == 0)
			return 0;
		if (errno != EWOULDBLOCK && errno != EINTR)
			return -errno;
		if (clock_mono_s() >= end)
			return -EBUSY;
		usleep(POLL_MS * 1000);
	}
}

static int
open_lock(const char *path)
{
	int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);

	return fd < 0 ? -errno : fd;
}

static int
spawn_server(const struct judgesrv *s, char *err, size_t errlen)
{
	char dev[16], idle[24];
	const char *args[] = { "judge-server", "--sock", s->sock, "--meta", s->meta,
		"--log", s->log, "--running", s->running, "--backend", s->backend, "--device", dev, "--idle", idle, NULL };

	snprintf(dev, sizeof(dev), "%d", s->device);
	snprintf(idle, sizeof(idle), "%ld", where()->judge_idle_s > 0 ? where()->judge_idle_s :
	    JUDGESRV_IDLE_S);
	return harness_launch(args, JUDGESRV_SPAWN_MS, err, errlen);
}

int
judgesrv_ensure(struct judgesrv *s, int *spawned, char *err, size_t errlen)
{
	int fd = -1, lfd, error;

	if (connect_sock(s, &fd) == 0) {
		close(fd);	/* a probe: the server reads nothing and moves on */
		*spawned = 0;
		return 0;
	}
	if ((lfd = open_lock(s->lock)) < 0) {
		snprintf(err, errlen, "%s: %s", s->lock, strerror(-lfd));
		return lfd;
	}
	if ((error = lock_within(lfd, JUDGESRV_SPAWN_MS * 2)) < 0) {
		snprintf(err, errlen, "another caller has held %s for too long", s->lock);
		goto out;
	}
	/* It may have come up while we waited for the lock. */
	if ((error = connect_sock(s, &fd)) == 0) {
		close(fd);
		*spawned = 0;
		goto out;
	}
	if (error != -ENOENT && error != -ECONNREFUSED) {
		snprintf(err, errlen, "cannot connect to %s: %s", s->sock, strerror(-error));
		goto out;
	}
	/* A socket file nobody listens on: its server died. */
	if (error == -ECONNREFUSED && unlink(s->sock) < 0 && errno != ENOENT) {
		error = -errno;
		snprintf(err, errlen, "cannot remove the stale socket %s: %s", s->sock,
		    strerror(errno));
		goto out;
	}
	if ((error = spawn_server(s, err, errlen)) < 0)
		goto out;
	*spawned = 1;
out:
	close(lfd);
	return error;
}

static int
send_all(int fd, const char *p, size_t n, double end)
{
	while (n > 0) {
		struct pollfd pfd = { .fd = fd, .events = POLLOUT };
		ssize_t w;
		int ms = (int)((end - clock_mono_s()) * 1000);

		if (ms <= 0)
			return -ETIMEDOUT;
		if (poll(&pfd, 1, ms > POLL_MS * 20 ? POLL_MS * 20 : ms) < 0 && errno != EINTR)
			return -errno;
		if ((w = send(fd, p, n, MSG_NOSIGNAL)) < 0) {
			if (errno == EAGAIN || errno == EINTR)
				continue;
			return -errno;
		}
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

static int
recv_all(int fd, struct buf *out, double end)
{
	char tmp[65536];

	for (;;) {
		struct pollfd pfd = { .fd = fd, .events = POLLIN };
		ssize_t r;
		int ms = (int)((end - clock_mono_s()) * 1000), error;

		if (ms <= 0)
			return -ETIMEDOUT;
		if (poll(&pfd, 1, ms > 1000 ? 1000 : ms) < 0 && errno != EINTR)
			return -errno;
		if ((r = recv(fd, tmp, sizeof(tmp), 0)) < 0) {
			if (errno == EAGAIN || errno == EINTR)
				continue;
			return -errno;
		}
		if (r == 0)
			return 0;
		if ((error = buf_add(out, tmp, (size_t)r)) < 0)
			return error;
	}
}

int
judgesrv_call(struct judgesrv *s, const json_t *req, int timeout_ms, json_t **reply,
    char *err, size_t errlen)
{
	struct buf q = BUF_INIT(REPLY_MAX), r = BUF_INIT(REPLY_MAX);
	struct ucred cred;
	socklen_t clen = sizeof(cred);
	long wait_s = where()->judge_wait_s >= 0 ? where()->judge_wait_s : JUDGESRV_WAIT_S;
	int bfd, rfd = -1, fd = -1, error;
	double end, t0 = clock_mono_s();
	json_t *v = NULL;

	if ((bfd = open_lock(s->busy)) < 0) {
		snprintf(err, errlen, "%s: %s", s->busy, strerror(-bfd));
		return bfd;
	}
	if ((error = lock_within(bfd, wait_s * 1000)) < 0) {
		snprintf(err, errlen, "the judge server was busy with another request for %ld s "
		    "(KERNELBOT_JUDGE_WAIT_S)", wait_s);
		goto out;
	}
	/* A request of a caller that has gone may still run: the same wait. */
	if ((rfd = open_lock(s->running)) < 0 ||
	    (error = lock_within(rfd, (long)((wait_s - (clock_mono_s() - t0)) * 1000))) < 0) {
		error = rfd < 0 ? rfd : error;
		snprintf(err, errlen, "the judge server was busy with an earlier request for %ld s "
		    "(KERNELBOT_JUDGE_WAIT_S)", wait_s);
		goto out;
	}
	close(rfd);	/* free: ours is next, as we hold NAME.busy */
	rfd = -1;
	if ((error = connect_sock(s, &fd)) < 0) {
		snprintf(err, errlen, "cannot connect to %s: %s", s->sock, strerror(-error));
		goto out;
	}
	/* The directory is ours alone; this only confirms it. */
	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &clen) < 0 || cred.uid != geteuid()) {
		snprintf(err, errlen, "the process on %s is not ours", s->sock);
		error = -EPERM;
		goto out;
	}
	s->pid = cred.pid;
	end = clock_mono_s() + (timeout_ms > 0 ? timeout_ms / 1000.0 : 1e9);
	if ((error = jsonx_dump(req, JSON_COMPACT, &q)) < 0 ||
	    (error = send_all(fd, q.data, q.len, end)) < 0 ||
	    (shutdown(fd, SHUT_WR) < 0 && (error = -errno)) ||
	    (error = recv_all(fd, &r, end)) < 0) {
		if (error == -ETIMEDOUT) {
			/* Wedged: it must not wedge the next caller too. */
			kill(-cred.pid, SIGKILL);
			kill(cred.pid, SIGKILL);
			snprintf(err, errlen, "the judge server (pid %d) did not answer within %d ms; "
			    "killed it", (int)cred.pid, timeout_ms);
		} else {
			snprintf(err, errlen, "talking to the judge server (pid %d): %s",
			    (int)cred.pid, strerror(-error));
		}
		goto out;
	}
	if (r.len == 0) {
		snprintf(err, errlen, "the judge server (pid %d) closed without a reply; see %s",
		    (int)cred.pid, s->log);
		error = -EPIPE;
		goto out;
	}
	if (jsonx_parse(buf_cstr(&r), r.len, &v, NULL, 0) < 0 || !json_is_object(v)) {
		snprintf(err, errlen, "the judge server (pid %d) replied with no JSON object",
		    (int)cred.pid);
		json_decref(v);
		error = -EPROTO;
		goto out;
	}
	*reply = v;
out:
	if (fd >= 0)
		close(fd);
	if (rfd >= 0)
		close(rfd);
	close(bfd);	/* releases the busy lock */
	buf_free(&q);
	buf_free(&r);
	return error;
}

/* Is pid a judge server (not a recycled pid)? */
static int
is_server(pid_t pid)
{
	char path[64], cmd[4096];
	ssize_t n;
	int fd;

	if (pid <= 0 || kill(pid, 0) < 0)
		return 0;
	snprintf(path, sizeof(path), "/proc/%d/cmdline", (int)pid);
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
		return 0;
	n = read(fd, cmd, sizeof(cmd) - 1);
	close(fd);
	if (n <= 0)
		return 0;
	for (ssize_t i = 0; i < n; i++)
		if (!cmd[i])
			cmd[i] = ' ';
	cmd[n] = '\0';
	return strstr(cmd, "harness.py judge-server ") != NULL;
}

int
judgesrv_list(json_t **out, char *err, size_t errlen)
{
	char dir[PATH_MAX];
	json_t *list;
	DIR *d;
	struct dirent *e;
	int error;

	if ((error = judgesrv_dir(dir, sizeof(dir), err, errlen)) < 0)
		return error;
	if (!(d = opendir(dir))) {
		error = -errno;
		snprintf(err, errlen, "%s: %s", dir, strerror(errno));
		return error;
	}
	list = json_array();
	while ((e = readdir(d))) {
		size_t n = strlen(e->d_name);
		char path[PATH_MAX + 512], name[256];
		json_t *m;
		pid_t pid;

		if (n < 6 || strcmp(e->d_name + n - 5, ".json"))
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
		if (!(m = json_load_file(path, 0, NULL)) || !json_is_object(m)) {
			json_decref(m);
			continue;
		}
		snprintf(name, sizeof(name), "%.*s", (int)(n - 5), e->d_name);
		snprintf(path, sizeof(path), "%s/%.255s.log", dir, name);
		pid = (pid_t)jsonx_int(m, "pid", 0);
		json_array_append_new(list, json_pack("{s:s, s:i, s:s, s:I, s:I, s:f, s:f, s:b, s:s, s:s}",
		    "name", name, "pid", (int)pid, "backend", jsonx_str(m, "backend", "?"),
		    "device", (json_int_t)jsonx_int(m, "device", 0),
		    "requests", (json_int_t)jsonx_int(m, "requests", 0),
		    "idle_s", (double)time(NULL) - jsonx_num(m, "last_used", 0),
		    "idle_limit_s", jsonx_num(m, "idle_s", 0), "alive", is_server(pid),
		    "socket", jsonx_str(m, "socket", ""), "log", path));
		json_decref(m);
	}
	closedir(d);
	*out = list;
	return 0;
}

int
judgesrv_stop_all(const json_t *list)
{
	size_t i;
	json_t *v;
	int n = 0;

	json_array_foreach(list, i, v) {
		pid_t pid = (pid_t)jsonx_int(v, "pid", 0);

		if (is_server(pid) && kill(pid, SIGTERM) == 0)
			n++;
	}
	/*
	 * Stopped means gone: a server closes its prestarted reference
	 * process on the way out (its sandbox's tmpfs unmounted), and a
	 * caller removing the directory next must not race that.
	 */
	for (int t = 0; t < JUDGESRV_STOP_MS / 20; t++) {
		int alive = 0;

		json_array_foreach(list, i, v)
			alive |= is_server((pid_t)jsonx_int(v, "pid", 0));
		if (!alive)
			break;
		poll(NULL, 0, 20);
	}
	return n;
}
