/*
 * INTERIM: the worker's own seccomp filter, used only while
 * sandbox_lockdown() (the sandbox branch) is not linked in. The worker
 * reports which one ran, and the judge fails its "lockdown" check unless
 * it was the sandbox's.
 */
#include "gpu/worker.h"

#include <errno.h>
#include <sched.h>
#include <seccomp.h>
#include <unistd.h>

int
worker_lockdown_local(void)
{
	static const int denied[] = {
		SCMP_SYS(socket), SCMP_SYS(socketpair), SCMP_SYS(connect),
		SCMP_SYS(execve), SCMP_SYS(execveat), SCMP_SYS(fork), SCMP_SYS(vfork),
		SCMP_SYS(ptrace), SCMP_SYS(process_vm_writev), SCMP_SYS(process_vm_readv),
	};
	scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ALLOW);
	pid_t self = getpid();
	int rc = 0;

	if (!ctx)
		return -ENOMEM;
	for (size_t i = 0; i < sizeof(denied) / sizeof(denied[0]) && rc == 0; i++)
		rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), denied[i], 0);
	/* clone is fine for threads only; clone3 hides its flags, so glibc is
	 * told it does not exist and falls back to clone. */
	if (rc == 0)
		rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(clone), 1,
		    SCMP_A0(SCMP_CMP_MASKED_EQ, CLONE_THREAD, 0));
	if (rc == 0)
		rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(ENOSYS), SCMP_SYS(clone3), 0);
	/* Signals only to ourselves: no killing the judge. */
	if (rc == 0)
		rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(kill), 1,
		    SCMP_A0(SCMP_CMP_NE, (scmp_datum_t)self));
	if (rc == 0)
		rc = seccomp_load(ctx);
	seccomp_release(ctx);
	return rc < 0 ? rc : 0;
}
