#include "gpu/sandbox.h"

#include <errno.h>
#include <sched.h>
#include <seccomp.h>
#include <stdio.h>
#include <string.h>
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

static int
try_seccomp(int unused)
{
	scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ALLOW);
	int rc;

	(void)unused;
	if (!ctx)
		return -1;
	rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(ptrace), 0);
	if (rc == 0)
		rc = seccomp_load(ctx);
	seccomp_release(ctx);
	return rc;
}

static int
writable_dir(const char *path)
{
	struct stat st;

	return stat(path, &st) == 0 && S_ISDIR(st.st_mode) && access(path, W_OK) == 0;
}

static void
probe_cgroup(struct sandbox_features *f)
{
	FILE *fp;
	char line[512];

	/* cgroup v2: the controllers file names memory. */
	if ((fp = fopen("/sys/fs/cgroup/cgroup.controllers", "re"))) {
		if (fgets(line, sizeof(line), fp) && strstr(line, "memory") &&
		    writable_dir("/sys/fs/cgroup")) {
			f->cgroup_memory = 1;
			snprintf(f->cgroup_path, sizeof(f->cgroup_path), "/sys/fs/cgroup");
		}
		fclose(fp);
		if (f->cgroup_memory)
			return;
	}
	if (writable_dir("/sys/fs/cgroup/memory")) {
		f->cgroup_memory = 1;
		snprintf(f->cgroup_path, sizeof(f->cgroup_path), "/sys/fs/cgroup/memory");
	}
}

void
sandbox_probe(struct sandbox_features *f)
{
	memset(f, 0, sizeof(*f));
	f->user_ns = in_child(try_unshare, 0);
	f->net_ns = in_child(try_unshare, CLONE_NEWNET);
	f->mount_ns = in_child(try_unshare, CLONE_NEWNS);
	f->pid_ns = in_child(try_unshare, CLONE_NEWPID);
	f->ipc_ns = in_child(try_unshare, CLONE_NEWIPC);
	f->seccomp = in_child(try_seccomp, 0);
	probe_cgroup(f);
}
