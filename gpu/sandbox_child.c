/*
 * The child side of the sandbox: three processes between the spawner's
 * fork and the exec.
 *
 *   C1  the spawner's child, in the host's namespaces and in the run's
 *       cgroup: clones C2 into new namespaces, writes C2's uid/gid maps
 *       (only a process outside the new user namespace may map another
 *       uid), then waits and ends exactly as the program did: same exit
 *       code, or the same signal raised on itself.
 *   C2  pid 1 of the new pid namespace: builds the new root, drops to the
 *       sandbox uid, clones C3 and reaps everything until C3 ends, then
 *       hands C3's wait status to C1. As pid 1 it could not die of the
 *       program's signal itself, which is why C1 re-raises it.
 *   C3  sets rlimits, no_new_privs, an empty capability bounding set and
 *       the seccomp filter, and returns to the spawner, which execs.
 *
 * When C1 dies (the spawner's group kill at the deadline), C2 gets SIGKILL
 * (parent-death signal) and the kernel kills everything in the namespace.
 *
 * Everything here may run in the fork of a multithreaded process: system
 * calls and the string helpers below only, no malloc, no stdio.
 */
#include "gpu/sandbox_int.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <linux/seccomp.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#define CAP_MAX_PROBE 64	/* above any CAP_LAST_CAP; PR_CAPBSET_DROP says EINVAL past the last */

static void
s_cat(char *dst, size_t cap, const char *s)
{
	size_t n = strlen(dst);

	while (*s && n + 1 < cap)
		dst[n++] = *s++;
	dst[n] = '\0';
}

static void
s_num(char *dst, size_t cap, long v)
{
	char tmp[24];
	int i = (int)sizeof(tmp) - 1;
	int neg = v < 0;
	unsigned long u = neg ? (unsigned long)-v : (unsigned long)v;

	tmp[i] = '\0';
	do
		tmp[--i] = (char)('0' + u % 10);
	while ((u /= 10) && i > 1);
	if (neg)
		tmp[--i] = '-';
	s_cat(dst, cap, tmp + i);
}

/* Paths in messages are shown as the host or the sandbox sees them. */
static const char *
shown(const char *path)
{
	if (!strncmp(path, SBX_OLDROOT "/", sizeof(SBX_OLDROOT)))
		return path + sizeof(SBX_OLDROOT) - 1;
	if (!strncmp(path, SBX_NEWROOT "/", sizeof(SBX_NEWROOT)))
		return path + sizeof(SBX_NEWROOT) - 1;
	return path;
}

/* Tell the parent what failed (first record wins there); returns err. */
static int
diag(const struct sbx_plan *p, const char *what, const char *path, int err)
{
	struct sbx_diag d;

	memset(&d, 0, sizeof(d));
	d.err = err ? err : EPERM;
	s_cat(d.what, sizeof(d.what), what);
	if (path) {
		s_cat(d.what, sizeof(d.what), " ");
		s_cat(d.what, sizeof(d.what), shown(path));
	}
	/* Under PIPE_BUF: one atomic write even with three writers. */
	(void)!write(p->diag_fd, &d, sizeof(d));
	return d.err;
}

static pid_t
raw_clone(unsigned long flags)
{
	/*
	 * The raw system call, not fork(): it takes the namespace flags, and
	 * runs no atfork handlers. With a NULL stack it behaves as fork.
	 */
	return (pid_t)syscall(SYS_clone, flags | SIGCHLD, NULL, NULL, NULL, NULL);
}

int
sbx_write_file(const char *path, const char *s)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC);
	ssize_t n;
	int err;

	if (fd < 0)
		return errno;
	n = write(fd, s, strlen(s));
	err = n == (ssize_t)strlen(s) ? 0 : n < 0 ? errno : EIO;
	close(fd);
	return err;
}

/* Close every fd from 3 up except keep1 and keep2. */
static void
close_except(int keep1, int keep2)
{
	int lo = keep1 < keep2 ? keep1 : keep2, hi = keep1 < keep2 ? keep2 : keep1;
	unsigned int from = 3;
	int ranges[3][2] = { { 3, lo - 1 }, { lo + 1, hi - 1 }, { hi + 1, -1 } };

	for (int i = 0; i < 3; i++) {
		unsigned int a = (unsigned int)ranges[i][0];
		unsigned int b = ranges[i][1] < 0 ? ~0U : (unsigned int)ranges[i][1];
		if (ranges[i][1] >= 0 && ranges[i][1] < ranges[i][0])
			continue;
		if (syscall(SYS_close_range, a, b, 0) == 0)
			continue;
		/* Before Linux 5.9: the slow way, up to a sane ceiling. */
		for (from = a; from <= b && from < 65536; from++)
			close((int)from);
	}
}

static int
mkdir_p(char *path, int is_dir)
{
	struct stat st;
	char *s;
	int fd;

	for (s = path + 1; *s; s++) {
		if (*s != '/')
			continue;
		*s = '\0';
		if (mkdir(path, 0755) < 0 && errno != EEXIST &&
		    (stat(path, &st) < 0 || !S_ISDIR(st.st_mode))) {
			*s = '/';
			return errno;
		}
		*s = '/';
	}
	if (is_dir) {
		if (mkdir(path, 0755) < 0 && errno != EEXIST &&
		    (stat(path, &st) < 0 || !S_ISDIR(st.st_mode)))
			return errno;
		return 0;
	}
	/* O_RDONLY: an existing file on a read-only bind is fine as it is. */
	if ((fd = open(path, O_RDONLY | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0644)) < 0)
		return errno;
	close(fd);
	return 0;
}

/*
 * A bind inherits the source's flags; in a user namespace the kernel
 * refuses a remount that would clear the locked ones (noexec, atime
 * modes), so carry them over and only add rdonly, nosuid, nodev.
 */
static int
remount(const char *path, unsigned long add)
{
	struct statfs sf;
	unsigned long fl = MS_BIND | MS_REMOUNT | MS_NOSUID | MS_NODEV | add;

	if (statfs(path, &sf) < 0)
		return errno;
	if (sf.f_flags & ST_NOEXEC)
		fl |= MS_NOEXEC;
	if (sf.f_flags & ST_NOATIME)
		fl |= MS_NOATIME;
	if (sf.f_flags & ST_NODIRATIME)
		fl |= MS_NODIRATIME;
	if (sf.f_flags & ST_RELATIME)
		fl |= MS_RELATIME;
	if (sf.f_flags & ST_RDONLY)
		fl |= MS_RDONLY;
	return mount(NULL, path, NULL, fl, NULL) < 0 ? errno : 0;
}

/* A bind's source: the O_PATH fd opened before the uid change, by its magic link. */
static void
fd_path(char *dst, size_t cap, int fd)
{
	dst[0] = '\0';
	s_cat(dst, cap, SBX_OLDROOT "/proc/self/fd/");
	s_num(dst, cap, fd);
}

static int
apply_mount(const struct sbx_plan *p, struct sbx_mount *m, int src_fd)
{
	char src[64];
	int err = 0;

	if (m->kind != SBX_REMOUNT_RO && m->kind != SBX_SEAL_RO &&
	    m->kind != SBX_SYMLINK && (err = mkdir_p(m->dst, m->is_dir)))
		return diag(p, "creating the mount point", m->dst, err);
	fd_path(src, sizeof(src), src_fd);
	switch (m->kind) {
	case SBX_BIND_RO:
		if (mount(src, m->dst, NULL, MS_BIND | MS_REC, NULL) < 0)
			return diag(p, "bind-mounting", m->src, errno);
		if ((err = remount(m->dst, MS_RDONLY)))
			return diag(p, "making read-only", m->dst, err);
		break;
	case SBX_BIND_RW:
		if (mount(src, m->dst, NULL, MS_BIND, NULL) < 0)
			return diag(p, "bind-mounting", m->src, errno);
		if ((err = remount(m->dst, m->flags)))
			return diag(p, "remounting nosuid,nodev", m->dst, err);
		break;
	case SBX_BIND_DEV:
		if (mount(src, m->dst, NULL, MS_BIND, NULL) < 0)
			return diag(p, "bind-mounting device", m->src, errno);
		break;
	case SBX_TMPFS:
		if (mount("tmpfs", m->dst, "tmpfs", MS_NOSUID | MS_NODEV | m->flags, m->src) < 0)
			return diag(p, "mounting tmpfs on", m->dst, errno);
		break;
	case SBX_PROC:
		/* flags: MS_RDONLY where the plan says (sandbox.c). */
		if (mount("proc", m->dst, "proc", m->flags | MS_NOSUID | MS_NODEV | MS_NOEXEC,
		    NULL) < 0)
			return diag(p, "mounting a fresh /proc on", m->dst, errno);
		break;
	case SBX_SYSFS:
		/* Only widens the view (the CUDA driver reads PCI topology): optional. */
		mount("sysfs", m->dst, "sysfs", MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL);
		break;
	case SBX_SYMLINK:
		if (symlink(m->src, m->dst) < 0 && errno != EEXIST)
			return diag(p, "creating the symlink", m->dst, errno);
		break;
	case SBX_REMOUNT_RO:
		/* A submount that cannot be made read-only is taken away instead. */
		if (remount(m->dst, MS_RDONLY) && umount2(m->dst, MNT_DETACH) < 0)
			return diag(p, "making the submount read-only", m->dst, errno);
		break;
	case SBX_SEAL_RO:
		if ((err = remount(m->dst, MS_RDONLY)))
			return diag(p, "sealing read-only", m->dst, err);
		break;
	}
	return 0;
}

static int
is_bind(int kind)
{
	return kind == SBX_BIND_RO || kind == SBX_BIND_RW || kind == SBX_BIND_DEV;
}

static int
switch_ids(const struct sbx_plan *p)
{
	if (!p->deny_setgroups && setgroups(0, NULL) < 0)
		return diag(p, "dropping supplementary groups", NULL, errno);
	if (setresgid(p->gid, p->gid, p->gid) < 0)
		return diag(p, "setresgid", NULL, errno);
	if (setresuid(p->uid, p->uid, p->uid) < 0)
		return diag(p, "setresuid", NULL, errno);
	return 0;
}

/*
 * The sources are opened first, with the rights the caller had (root may
 * traverse its own 0700 directories); then, in a user namespace, the ids
 * switch to the sandbox's before anything is created, because a new
 * inode needs an owner the namespace maps. The user namespace keeps our
 * capabilities across that switch: its uid 0 maps to no one.
 */
static int
build_root(const struct sbx_plan *p, int *fds)
{
	int err;

	/* Nothing done below may propagate back to the host. */
	if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0)
		return diag(p, "making the mount tree private", NULL, errno);
	for (int i = 0; i < p->n_mounts; i++)
		if (is_bind(p->mounts[i].kind) &&
		    (fds[i] = open(p->mounts[i].src, O_PATH | O_CLOEXEC)) < 0)
			return diag(p, "opening", p->mounts[i].src, errno);
	if (p->switch_ids && p->map_ids && (err = switch_ids(p)))
		return err;
	/*
	 * Pivot first onto a small tmpfs that keeps the host's tree at
	 * /oldroot: the binds then read their sources from there even when
	 * they sit under /tmp, where that tmpfs was mounted.
	 */
	if (mount("tmpfs", "/tmp", "tmpfs", MS_NOSUID | MS_NODEV, "mode=0755,size=64k") < 0)
		return diag(p, "mounting the staging tmpfs on", "/tmp", errno);
	if (mkdir("/tmp" SBX_OLDROOT, 0755) < 0 || mkdir("/tmp" SBX_NEWROOT, 0755) < 0)
		return diag(p, "creating the staging directories", NULL, errno);
	if (syscall(SYS_pivot_root, "/tmp", "/tmp" SBX_OLDROOT) < 0)
		return diag(p, "pivot_root to the staging tmpfs", NULL, errno);
	if (chdir("/") < 0)
		return diag(p, "chdir", "/", errno);
	if (mount("tmpfs", SBX_NEWROOT, "tmpfs", MS_NOSUID | MS_NODEV, "mode=0755,size=16m") < 0)
		return diag(p, "mounting the root tmpfs", NULL, errno);
	for (int i = 0; i < p->n_mounts; i++)
		if ((err = apply_mount(p, (struct sbx_mount *)&p->mounts[i], fds[i])))
			return err;
	for (int i = 0; i < p->n_mounts; i++)
		if (fds[i] >= 0)
			close(fds[i]), fds[i] = -1;
	/* Stack the old root on the new one and detach it: the host is gone. */
	if (chdir(SBX_NEWROOT) < 0)
		return diag(p, "chdir", SBX_NEWROOT, errno);
	if (syscall(SYS_pivot_root, ".", ".") < 0)
		return diag(p, "pivot_root into the new root", NULL, errno);
	if (umount2(".", MNT_DETACH) < 0)
		return diag(p, "detaching the host's root", NULL, errno);
	if (chdir("/") < 0)
		return diag(p, "chdir", "/", errno);
	return 0;
}

/* C3: the last steps in the process that execs. */
static int
c3_setup(const struct sbx_plan *p)
{
	for (int i = 0; i < p->n_limits; i++)
		if (setrlimit(p->limit_res[i], &p->limit_val[i]) < 0)
			return diag(p, "setrlimit", NULL, errno);
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
		return diag(p, "PR_SET_NO_NEW_PRIVS", NULL, errno);
	/*
	 * With an empty bounding set nothing executed can gain a capability,
	 * whatever its uid inside the namespace or its file capabilities.
	 */
	for (int c = 0; c < CAP_MAX_PROBE; c++)
		if (prctl(PR_CAPBSET_DROP, c, 0, 0, 0) < 0 && errno == EINVAL)
			break;
	prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0);
	if (p->filter.len &&
	    prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &p->filter, 0, 0) < 0)
		return diag(p, "loading the seccomp filter", NULL, errno);
	return 0;
}

/* C2: returns only in C3 (0: exec now) or on a set-up error (errno). */
static int
c2_main(const struct sbx_plan *p, int sync_rd, int status_wr)
{
	struct pollfd pf = { sync_rd, POLLIN, 0 };
	int err, st = 0, fds[SBX_MOUNTS_MAX];
	pid_t pid, w;
	char b;

	if (read(sync_rd, &b, 1) != 1)
		_exit(127);	/* C1 failed and said why */
	for (int i = 0; i < SBX_MOUNTS_MAX; i++)
		fds[i] = -1;
	if (p->new_root && (err = build_root(p, fds)))
		return err;
	if (p->clone_flags & CLONE_NEWUTS)
		sethostname("sandbox", 7);
	/* Without a user namespace, root switches last: it loses the capabilities. */
	if (p->switch_ids && !(p->new_root && p->map_ids) && (err = switch_ids(p)))
		return err;
	if (p->cwd[0] && chdir(p->cwd) < 0)
		return diag(p, "chdir", p->cwd, errno);
	/* After the uid change, which clears it. Then make sure C1 still lives. */
	prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
	if (poll(&pf, 1, 0) > 0 && (pf.revents & (POLLHUP | POLLERR)))
		_exit(127);

	/*
	 * C2 is a copy of the caller's memory (a daemon's tokens included):
	 * not dumpable, so the program cannot read it through /proc/1. Set
	 * before C3 exists; C3's exec makes C3 dumpable again.
	 */
	prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
	if ((pid = raw_clone(0)) < 0)
		return diag(p, "fork of the program's process", NULL, errno);
	if (pid == 0) {
		close(sync_rd);
		close(status_wr);
		return c3_setup(p);
	}
	close_except(sync_rd, status_wr);
	for (;;) {
		w = waitpid(-1, &st, 0);
		if (w == pid)
			break;
		if (w < 0 && errno != EINTR) {
			st = 127 << 8;
			break;
		}
	}
	(void)!write(status_wr, &st, sizeof(st));
	_exit(0);
}

static void
proc_path(char *dst, size_t cap, pid_t pid, const char *name)
{
	dst[0] = '\0';
	s_cat(dst, cap, "/proc/");
	s_num(dst, cap, pid);
	s_cat(dst, cap, name);
}

static int
write_maps(const struct sbx_plan *p, pid_t pid)
{
	char path[64];
	int err;

	proc_path(path, sizeof(path), pid, "/setgroups");
	if (p->deny_setgroups && (err = sbx_write_file(path, "deny")))
		return diag(p, "writing", path, err);
	proc_path(path, sizeof(path), pid, "/uid_map");
	if ((err = sbx_write_file(path, p->uid_map)))
		return diag(p, "writing the uid map", path, err);
	proc_path(path, sizeof(path), pid, "/gid_map");
	if ((err = sbx_write_file(path, p->gid_map)))
		return diag(p, "writing the gid map", path, err);
	return 0;
}

static void
end_like(int st)
{
	struct rlimit zero = { 0, 0 };
	sigset_t set;
	int sig;

	if (WIFEXITED(st))
		_exit(WEXITSTATUS(st));
	if (!WIFSIGNALED(st))
		_exit(127);
	sig = WTERMSIG(st);
	setrlimit(RLIMIT_CORE, &zero);	/* the program's crash, not a core of ours */
	signal(sig, SIG_DFL);
	sigemptyset(&set);
	sigaddset(&set, sig);
	sigprocmask(SIG_UNBLOCK, &set, NULL);
	kill(getpid(), sig);
	_exit(128 + sig);	/* a signal whose default is not to terminate */
}

int
sbx_child_setup(void *arg)
{
	const struct sbx_plan *p = arg;
	int sync_p[2], stat_p[2], err, st = 0, cst;
	pid_t pid;

	/*
	 * If the process that spawned us dies (a judge killing its launcher),
	 * we die, and C2's parent-death signal takes the namespace with us.
	 * The spawner's thread blocks until we are reaped, so it outlives us.
	 */
	prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
	if (getppid() != p->parent)
		_exit(127);
	/* Join the run's cgroups first: everything below is created inside. */
	for (int i = 0; i < p->n_cgroups; i++)
		if ((err = sbx_write_file(p->cgroup_procs[i], "0")))
			return diag(p, "joining the cgroup", p->cgroup_procs[i], err);
	if (pipe2(sync_p, O_CLOEXEC) < 0 || pipe2(stat_p, O_CLOEXEC) < 0)
		return diag(p, "pipe", NULL, errno);
	if ((pid = raw_clone((unsigned long)p->clone_flags)) < 0)
		return diag(p, "clone into new namespaces", NULL, errno);
	if (pid == 0) {
		close(sync_p[1]);
		close(stat_p[0]);
		return c2_main(p, sync_p[0], stat_p[1]);
	}
	close(sync_p[0]);
	close(stat_p[1]);
	if (p->map_ids && (err = write_maps(p, pid))) {
		kill(pid, SIGKILL);
		while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
			;
		return err;
	}
	if (write(sync_p[1], "1", 1) != 1)
		return diag(p, "pipe", NULL, errno);
	/* The spawner's exec-failure pipe must see EOF when C3 execs. */
	close_except(sync_p[1], stat_p[0]);
	while (waitpid(pid, &st, 0) < 0)
		if (errno != EINTR)
			_exit(127);
	if (read(stat_p[0], &cst, sizeof(cst)) == (ssize_t)sizeof(cst))
		st = cst;
	end_like(st);
	return 0;
}
