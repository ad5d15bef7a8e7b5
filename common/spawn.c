#include "common/spawn.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "common/clock.h"

#define DEFAULT_GRACE_MS 2000
#define PASS_FD_BASE 3
#define PASS_FD_MAX 64

/* What the child writes to the error pipe when it cannot exec. */
struct child_failure {
	int stage;	/* 1 setup, 2 exec, 3 fds */
	int err;
};


static void
child_fail(int fd, int stage, int err)
{
	struct child_failure f = { stage, err };

	(void)!write(fd, &f, sizeof(f));
	_exit(127);
}

/*
 * Between fork and exec: async-signal-safe calls only, since the parent may
 * be multithreaded and any lock could be held by a thread that is not here.
 */
static void
child_exec(const struct spawn_opts *o, int in_fd, int out_fd, int err_fd,
    int fail_fd)
{
	static const char *const empty_env[] = { NULL };
	int tmp[PASS_FD_MAX];
	sigset_t all;
	int i, error;

	setpgid(0, 0);
	sigemptyset(&all);
	sigprocmask(SIG_SETMASK, &all, NULL);
	for (i = 1; i < NSIG; i++)
		signal(i, SIG_DFL);

	/*
	 * Lift the extra fds above everything we are about to place, so a
	 * dup2 onto 3+i never clobbers one not yet moved.
	 */
	for (i = 0; i < o->n_pass_fds; i++)
		if ((tmp[i] = fcntl(o->pass_fds[i], F_DUPFD_CLOEXEC, 100)) < 0)
			child_fail(fail_fd, 3, errno);
	if (in_fd >= 0 &&
	    (dup2(in_fd, 0) < 0 || dup2(out_fd, 1) < 0 || dup2(err_fd, 2) < 0))
		child_fail(fail_fd, 3, errno);
	for (i = 0; i < o->n_pass_fds; i++)
		if (dup2(tmp[i], PASS_FD_BASE + i) < 0)
			child_fail(fail_fd, 3, errno);

	if (o->cwd && chdir(o->cwd) < 0)
		child_fail(fail_fd, 2, errno);
	if (o->child_setup && (error = o->child_setup(o->child_arg)) != 0)
		child_fail(fail_fd, 1, error > 0 ? error : EPERM);
	if (o->search_path)
		execvpe(o->argv[0], (char *const *)o->argv,
		    (char *const *)(o->envp ? o->envp : empty_env));
	else
		execve(o->argv[0], (char *const *)o->argv,
		    (char *const *)(o->envp ? o->envp : empty_env));
	child_fail(fail_fd, 2, errno);
}

static int
set_nonblock(int fd)
{
	int fl = fcntl(fd, F_GETFL);

	return fl < 0 || fcntl(fd, F_SETFL, fl | O_NONBLOCK) < 0 ? -errno : 0;
}

/* Drain what is readable from fd into b; 0 at EOF, 1 if still open. */
static int
drain(int fd, struct buf *b, size_t *dropped)
{
	char chunk[65536];
	ssize_t n;

	for (;;) {
		n = read(fd, chunk, sizeof(chunk));
		if (n > 0) {
			long lost = buf_add_capped(b, chunk, (size_t)n);
			*dropped += lost > 0 ? (size_t)lost : 0;
			continue;
		}
		if (n == 0)
			return 0;
		if (errno == EINTR)
			continue;
		return errno == EAGAIN ? 1 : 0;
	}
}

static int
pidfd_open_compat(pid_t pid)
{
#ifdef SYS_pidfd_open
	int fd = (int)syscall(SYS_pidfd_open, pid, 0);
	if (fd >= 0)
		fcntl(fd, F_SETFD, FD_CLOEXEC);
	return fd;
#else
	(void)pid;
	return -1;
#endif
}

/*
 * Our ends of the child's stdio and of its error pipe; -1 once closed.
 * One struct, so every step of spawn_run() closes the same set on error.
 */
struct child_fds {
	int in_sv[2], out_p[2], err_p[2], fail_p[2];
	int in_fd, pidfd;
	int out_open, err_open;	/* stdout, stderr not yet at EOF */
};

#define CHILD_FDS_INIT { { -1, -1 }, { -1, -1 }, { -1, -1 }, { -1, -1 }, -1, -1, 0, 0 }

/* Before the fork: what becomes the child's 0, 1 and 2, and the fail pipe. */
static int
open_child_fds(const struct spawn_opts *o, struct child_fds *f)
{
	if (o->stdio_inherit) {
		f->in_fd = -1;	/* the child keeps 0, 1 and 2 as they are */
	} else if (o->input) {
		/* A socket, so writes to a child that quit early can use MSG_NOSIGNAL. */
		if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, f->in_sv) < 0)
			return -errno;
		shutdown(f->in_sv[0], SHUT_RD);
		shutdown(f->in_sv[1], SHUT_WR);
		f->in_fd = f->in_sv[1];
	} else if ((f->in_fd = open("/dev/null", O_RDONLY | O_CLOEXEC)) < 0) {
		return -errno;
	}
	if ((!o->stdio_inherit && (pipe2(f->out_p, O_CLOEXEC) < 0 ||
	    pipe2(f->err_p, O_CLOEXEC) < 0)) || pipe2(f->fail_p, O_CLOEXEC) < 0)
		return -errno;
	return 0;
}

/* After the fork: the child's ends are its own now, so EOF can reach us. */
static void
close_child_ends(const struct spawn_opts *o, struct child_fds *f)
{
	if (f->out_p[1] >= 0)
		close(f->out_p[1]), f->out_p[1] = -1;
	if (f->err_p[1] >= 0)
		close(f->err_p[1]), f->err_p[1] = -1;
	close(f->fail_p[1]), f->fail_p[1] = -1;
	if (o->stdio_inherit) {
		;
	} else if (o->input) {
		close(f->in_sv[1]), f->in_sv[1] = -1;
		f->in_fd = -1;
		set_nonblock(f->in_sv[0]);
	} else {
		close(f->in_fd), f->in_fd = -1;
	}
}

/*
 * The fail pipe gives EOF at a successful exec, a record otherwise: then
 * reap the child, set *error and return 1.
 */
static int
exec_failed(int fail_fd, pid_t pid, int *error)
{
	struct child_failure cf;
	ssize_t n;

	do
		n = read(fail_fd, &cf, sizeof(cf));
	while (n < 0 && errno == EINTR);
	if (n != (ssize_t)sizeof(cf))
		return 0;
	while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
		;
	*error = -cf.err;
	return 1;
}

/*
 * Until the leader exits: feed its stdin, drain its stdout and stderr,
 * and kill the group at the deadline (SIGTERM, SIGKILL after the grace).
 * 0 with *status and *ru of the reaped leader; -errno when poll fails,
 * the group then killed and reaped.
 */
static int
wait_and_drain(const struct spawn_opts *o, pid_t pid, double deadline,
    struct child_fds *f, struct spawn_result *res, int *status, struct rusage *ru)
{
	const char *in_data = o->input;
	size_t in_off = 0;
	double kill_at = 0;
	int grace = o->grace_ms > 0 ? o->grace_ms : DEFAULT_GRACE_MS;
	int reaped = 0, termed = 0, error;
	ssize_t n;

	while (!reaped) {
		struct pollfd pf[4];
		int nf = 0, idx_in = -1, idx_out = -1, idx_err = -1, wait_ms = -1;
		double t = clock_mono_s();

		if (deadline && !termed && t >= deadline) {
			res->timed_out = 1;
			termed = 1;
			kill(-pid, SIGTERM);
			kill_at = t + grace / 1000.0;
		}
		if (termed && kill_at && t >= kill_at) {
			kill(-pid, SIGKILL);
			kill_at = 0;
		}
		if (termed && kill_at)
			wait_ms = (int)((kill_at - t) * 1000) + 1;
		else if (deadline && !termed)
			wait_ms = (int)((deadline - t) * 1000) + 1;

		if (f->in_sv[0] >= 0 && in_off < o->input_len) {
			idx_in = nf;
			pf[nf++] = (struct pollfd){ f->in_sv[0], POLLOUT, 0 };
		} else if (f->in_sv[0] >= 0) {
			close(f->in_sv[0]), f->in_sv[0] = -1;
		}
		if (f->out_open) {
			idx_out = nf;
			pf[nf++] = (struct pollfd){ f->out_p[0], POLLIN, 0 };
		}
		if (f->err_open) {
			idx_err = nf;
			pf[nf++] = (struct pollfd){ f->err_p[0], POLLIN, 0 };
		}
		if (f->pidfd >= 0)
			pf[nf++] = (struct pollfd){ f->pidfd, POLLIN, 0 };
		else if (wait_ms < 0 || wait_ms > 20)
			wait_ms = 20;	/* no pidfd: poll for the exit */

		if (poll(pf, (nfds_t)nf, wait_ms) < 0 && errno != EINTR) {
			error = -errno;
			kill(-pid, SIGKILL);
			while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
				;
			return error;
		}
		if (idx_in >= 0 && pf[idx_in].revents) {
			n = send(f->in_sv[0], in_data + in_off, o->input_len - in_off,
			    MSG_NOSIGNAL | MSG_DONTWAIT);
			if (n > 0)
				in_off += (size_t)n;
			else if (n < 0 && errno != EAGAIN && errno != EINTR)
				close(f->in_sv[0]), f->in_sv[0] = -1;	/* the child stopped reading */
		}
		if (idx_out >= 0 && pf[idx_out].revents)
			f->out_open = drain(f->out_p[0], &res->out, &res->out_dropped);
		if (idx_err >= 0 && pf[idx_err].revents)
			f->err_open = drain(f->err_p[0], &res->err, &res->err_dropped);

		n = wait4(pid, status, WNOHANG, ru);
		if (n == pid)
			reaped = 1;
	}
	return 0;
}

/* The reaped leader's status and usage, as struct spawn_result tells them. */
static void
record_exit(struct spawn_result *res, double start, int status,
    const struct rusage *ru)
{
	res->wall_s = clock_mono_s() - start;
	res->cpu_s = (double)ru->ru_utime.tv_sec + ru->ru_utime.tv_usec / 1e6 +
	    (double)ru->ru_stime.tv_sec + ru->ru_stime.tv_usec / 1e6;
	res->maxrss_kb = ru->ru_maxrss;
	if (WIFEXITED(status)) {
		res->status = WEXITSTATUS(status);
	} else if (WIFSIGNALED(status)) {
		res->term_signal = WTERMSIG(status);
		res->status = 128 + res->term_signal;
	}
}

/* Every way out of spawn_run() closes whatever is still open. */
static void
close_child_fds(struct child_fds *f)
{
	for (int i = 0; i < 2; i++) {
		if (f->in_sv[i] >= 0)
			close(f->in_sv[i]);
		if (f->out_p[i] >= 0)
			close(f->out_p[i]);
		if (f->err_p[i] >= 0)
			close(f->err_p[i]);
		if (f->fail_p[i] >= 0)
			close(f->fail_p[i]);
	}
	if (f->in_fd >= 0 && f->in_fd != f->in_sv[1])
		close(f->in_fd);
	if (f->pidfd >= 0)
		close(f->pidfd);
}

int
spawn_run(const struct spawn_opts *o, struct spawn_result *r)
{
	struct child_fds f = CHILD_FDS_INIT;
	struct spawn_result res = { 0 };
	double start, deadline;
	int status = 0, error = 0;
	struct rusage ru;
	pid_t pid;

	if (!o->argv || !o->argv[0] || o->n_pass_fds < 0 ||
	    o->n_pass_fds > PASS_FD_MAX)
		return -EINVAL;
	res.out = (struct buf)BUF_INIT(o->out_max ? o->out_max : BUF_MAX_DEFAULT);
	res.err = (struct buf)BUF_INIT(o->err_max ? o->err_max : BUF_MAX_SMALL);

	if (o->stdio_inherit && o->input)
		return -EINVAL;
	if ((error = open_child_fds(o, &f)) < 0)
		goto out;

	start = clock_mono_s();
	deadline = o->timeout_ms > 0 ? start + o->timeout_ms / 1000.0 : 0;
	if ((pid = fork()) < 0) {
		error = -errno;
		goto out;
	}
	if (pid == 0)
		child_exec(o, f.in_fd, f.out_p[1], f.err_p[1], f.fail_p[1]);

	/* Both sides set the group, so neither a kill nor the exec races it. */
	setpgid(pid, pid);
	if (o->on_start)
		o->on_start(pid, o->start_arg);
	close_child_ends(o, &f);
	if (exec_failed(f.fail_p[0], pid, &error))
		goto out;

	f.pidfd = pidfd_open_compat(pid);
	f.out_open = f.err_open = !o->stdio_inherit;
	if (f.out_open) {
		set_nonblock(f.out_p[0]);
		set_nonblock(f.err_p[0]);
	}
	if ((error = wait_and_drain(o, pid, deadline, &f, &res, &status, &ru)) < 0)
		goto out;

	/*
	 * The leader is gone. Whatever it left in its group dies now; then
	 * take the output still buffered in the pipes. A descendant that kept
	 * the pipes open is dead, so the reads below end.
	 */
	kill(-pid, SIGKILL);
	if (f.out_open)
		drain(f.out_p[0], &res.out, &res.out_dropped);
	if (f.err_open)
		drain(f.err_p[0], &res.err, &res.err_dropped);
	record_exit(&res, start, status, &ru);
	*r = res;
	res = (struct spawn_result){ 0 };
out:
	if (error < 0)
		spawn_result_free(&res);
	close_child_fds(&f);
	return error;
}

void
spawn_result_free(struct spawn_result *r)
{
	buf_free(&r->out);
	buf_free(&r->err);
}

int
spawn_which(const char *name, const char *path, char **out)
{
	const char *p, *end;
	char *full;
	size_t dl, nl = strlen(name);

	if (strchr(name, '/')) {
		if (access(name, X_OK) < 0)
			return -ENOENT;
		return (*out = strdup(name)) ? 0 : -ENOMEM;
	}
	if (!path && !(path = getenv("PATH")))
		path = "/usr/local/bin:/usr/bin:/bin";
	for (p = path; *p; p = *end ? end + 1 : end) {
		end = strchr(p, ':');
		if (!end)
			end = p + strlen(p);
		dl = (size_t)(end - p);
		if (!dl)
			continue;
		if (!(full = malloc(dl + nl + 2)))
			return -ENOMEM;
		memcpy(full, p, dl);
		full[dl] = '/';
		memcpy(full + dl + 1, name, nl + 1);
		if (access(full, X_OK) == 0) {
			*out = full;
			return 0;
		}
		free(full);
	}
	return -ENOENT;
}
