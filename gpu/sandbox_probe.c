#include "gpu/sandbox.h"
#include "gpu/sandbox_int.h"

#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

/* Run fn in a child; true when it exits 0. The caller's state is untouched. */
static int
in_child(int (*fn)(int), int arg)
{
	pid_t pid = fork();
	int status;

	if (pid < 0)
		return 0;
	if (pid == 0)
		_exit(fn(arg) == 0 ? 0 : 1);
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR)
			return 0;
	return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

static int
try_unshare(int flags)
{
	/* Inside a new user namespace the other kinds need no privilege. */
	if (unshare(CLONE_NEWUSER | flags) == 0)
		return 0;
	return flags && geteuid() == 0 ? unshare(flags) : -1;
}

/*
 * Creating the namespace is not enough: Ubuntu's AppArmor lets an
 * unprivileged process create a user namespace and then denies it every
 * capability inside. A mount is what the sandbox needs, so try one.
 */
static int
try_mount_ns(int unused)
{
	(void)unused;
	if (try_unshare(CLONE_NEWNS) < 0)
		return -1;
	return mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL);
}

/*
 * Containers that mask parts of /proc make the kernel refuse a fresh proc
 * mount to an unprivileged namespace; the sandbox needs to know up front.
 */
static int
try_proc(int unused)
{
	int status;
	pid_t pid;

	(void)unused;
	if (try_unshare(CLONE_NEWNS | CLONE_NEWPID) < 0)
		return -1;
	if ((pid = fork()) < 0)
		return -1;
	if (pid == 0)
		_exit(mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) == 0 &&
		    mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL) == 0 ? 0 : 1);
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR)
			return -1;
	return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : -1;
}

static int
try_seccomp(int unused)
{
	(void)unused;
	return sbx_seccomp_try();
}

void
sandbox_probe(struct sandbox_features *f)
{
	memset(f, 0, sizeof(*f));
	f->user_ns = in_child(try_unshare, 0);
	f->net_ns = in_child(try_unshare, CLONE_NEWNET);
	f->mount_ns = in_child(try_mount_ns, 0);
	f->pid_ns = in_child(try_unshare, CLONE_NEWPID);
	f->ipc_ns = in_child(try_unshare, CLONE_NEWIPC);
	f->proc_mount = f->pid_ns && f->mount_ns && in_child(try_proc, 0);
	f->seccomp = in_child(try_seccomp, 0);
	f->cgroup_memory = sbx_cgroup_probe(f->cgroup_path, sizeof(f->cgroup_path),
	    f->cgroup_why, sizeof(f->cgroup_why));
	f->cgroup_shared = !f->cgroup_memory && strstr(f->cgroup_why, SBX_CGROUP_SHARED_HINT);
}
