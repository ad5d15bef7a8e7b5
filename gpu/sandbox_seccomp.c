/*
 * The sandbox's seccomp filters; the only file that includes libseccomp.
 *
 * Baseline (every sandboxed process, loaded just before exec): the calls a
 * compiler or a kernel never needs and an escape would: ptrace, mounts,
 * namespaces, keyrings, bpf, perf, kexec, modules, io_uring (its
 * operations bypass seccomp), and sockets other than AF_UNIX. clone3 says
 * ENOSYS, so libc falls back to clone, whose flags a filter can read.
 *
 * Lockdown (a candidate worker, after its own set-up): the baseline plus
 * no new processes (fork, vfork, clone without CLONE_THREAD), no exec, no
 * sockets of any family.
 *
 * Lockdown W^X (a CPU candidate worker): the lockdown plus no memory that
 * is both writable and executable, and no way to make code at run time:
 * mmap/mprotect/pkey_mprotect never with PROT_WRITE|PROT_EXEC, mprotect
 * never adding PROT_EXEC, no anonymous PROT_EXEC mapping, no shmat with
 * SHM_EXEC, no personality(READ_IMPLIES_EXEC) (the kernel would add
 * PROT_EXEC to every later PROT_READ mapping, behind the filter's back), no
 * memfd_create without MFD_NOEXEC_SEAL (with it, the memfd can
 * never be mapped executable). Executable mappings of files stay allowed:
 * that is how dlopen loads the candidate and its libraries, and every
 * file system the candidate can write is mounted noexec. A CUDA worker
 * keeps the plain lockdown: the driver maps executable memory of its own.
 *
 * Denials return EPERM (ENOSYS for clone3 and io_uring), so untrusted code
 * sees a failed call and the worker can report it, instead of a kill.
 */
#include "gpu/sandbox.h"
#include "gpu/sandbox_int.h"

#include <errno.h>
#include <sched.h>
#include <seccomp.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/personality.h>
#include <sys/shm.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#define BPF_MAX_BYTES (256u << 10)	/* a filter is a few hundred instructions */

/* Denied outright; names, so a syscall this architecture lacks is skipped. */
static const char *const baseline_deny[] = {
	"ptrace", "process_vm_readv", "process_vm_writev",
	"mount", "umount", "umount2", "pivot_root", "chroot", "move_mount",
	"open_tree", "fsopen", "fsmount", "fsconfig", "fspick", "mount_setattr",
	"unshare", "setns",
	"keyctl", "add_key", "request_key",
	"bpf", "perf_event_open", "userfaultfd",
	"kexec_load", "kexec_file_load", "init_module", "finit_module",
	"delete_module", "reboot", "swapon", "swapoff", "acct",
	"open_by_handle_at", "name_to_handle_at", "lookup_dcookie",
	"quotactl", "syslog", "settimeofday", "clock_settime", "adjtimex",
	"clock_adjtime", "iopl", "ioperm", "vhangup",
	NULL,
};

static const char *const lockdown_deny[] = {
	"fork", "vfork", "execve", "execveat", "socket", "socketpair",
	/*
	 * A candidate's work after its call returned, on the worker's own
	 * thread: its output pages made PROT_NONE, the worker's snapshot copy
	 * faulted into its handler, which burned time there (an outside
	 * attack, through raw system calls placed in .text as bytes, so no
	 * source check saw a name). rt_sigaction: add_rules; the old signal
	 * calls where an architecture has them; userfaultfd, the way without
	 * a signal, is in baseline_deny.
	 */
	"sigaction", "signal",
	NULL,
};

/* The memfd flag that makes a memfd never executable (Linux 6.3). */
#ifndef MFD_NOEXEC_SEAL
#define MFD_NOEXEC_SEAL 0x0008U
#endif
#ifndef SHM_EXEC
#define SHM_EXEC 0100000
#endif

static const char *const enosys[] = {
	"clone3", "io_uring_setup", "io_uring_enter", "io_uring_register",
	NULL,
};

static const int ns_flags[] = {
	CLONE_NEWNS, CLONE_NEWUSER, CLONE_NEWPID, CLONE_NEWNET, CLONE_NEWIPC,
	CLONE_NEWUTS, CLONE_NEWCGROUP,
};

static int
deny_names(scmp_filter_ctx ctx, const char *const *names, int err)
{
	int nr, rc;

	for (; *names; names++) {
		if ((nr = seccomp_syscall_resolve_name(*names)) == __NR_SCMP_ERROR)
			continue;	/* not on this architecture */
		if ((rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(err), nr, 0)) < 0 &&
		    rc != -EDOM)
			return rc;
	}
	return 0;
}

/*
 * The worker's own image, this executable up to _end (its GOT among it,
 * read-only once loaded: linked -z relro -z now): no call may change a
 * mapping that starts at or below its end. An outside attack rewrote the
 * worker's writable .got.plt (lazy binding) from the candidate, hooking
 * write() to hold back the mark before the call and clock_gettime() to
 * move the call's end, and passed at 1.6 to 4.2x its honest twin; with
 * the GOT read-only, mprotect() making it writable again, mmap(MAP_FIXED)
 * or munmap() and a new mapping over it, or mremap() moving it are the
 * ways back. Everything the worker and a kernel map lies above the image
 * (the heap after it, mmap() from the top down); shmat is refused
 * whole. /proc is mounted read-only (sandbox_child.c), so
 * /proc/self/mem cannot write past the protections either.
 */
static int
add_image_rules(scmp_filter_ctx ctx)
{
	extern char _end[];
	scmp_datum_t pg = (scmp_datum_t)sysconf(_SC_PAGESIZE);
	scmp_datum_t end = ((scmp_datum_t)(uintptr_t)_end + pg - 1) / pg * pg;
	const int calls[] = { SCMP_SYS(mprotect), SCMP_SYS(pkey_mprotect), SCMP_SYS(munmap),
		SCMP_SYS(mremap) };
	int rc;

	for (size_t i = 0; i < sizeof(calls) / sizeof(calls[0]); i++)
		if ((rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), calls[i], 1,
		    SCMP_A0(SCMP_CMP_LT, end))) < 0 && rc != -EDOM)
			return rc;
	if ((rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(mmap), 2,
	    SCMP_A3(SCMP_CMP_MASKED_EQ, (scmp_datum_t)MAP_FIXED, (scmp_datum_t)MAP_FIXED),
	    SCMP_A0(SCMP_CMP_LT, end))) < 0 ||
	    (rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(mremap), 2,
	    SCMP_A3(SCMP_CMP_MASKED_EQ, (scmp_datum_t)MREMAP_FIXED, (scmp_datum_t)MREMAP_FIXED),
	    SCMP_A4(SCMP_CMP_LT, end))) < 0)
		return rc;
	if ((rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(shmat), 0)) < 0 &&
	    rc != -EDOM && rc != -EEXIST)
		return rc;
	return 0;
}

/* W^X: see the top of the file. A rule's conditions all hold (AND). */
static int
add_wx_rules(scmp_filter_ctx ctx)
{
	const scmp_datum_t wx = PROT_WRITE | PROT_EXEC, x = PROT_EXEC;
	const int prot_calls[] = { SCMP_SYS(mmap), SCMP_SYS(mprotect), SCMP_SYS(pkey_mprotect) };
	int rc;

	for (size_t i = 0; i < sizeof(prot_calls) / sizeof(prot_calls[0]); i++) {
		/* prot is the third argument of all three. */
		if ((rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), prot_calls[i], 1,
		    SCMP_A2(SCMP_CMP_MASKED_EQ, wx, wx))) < 0 && rc != -EDOM)
			return rc;
	}
	/*
	 * mprotect cannot tell what it adds, so it may never ask for
	 * PROT_EXEC: code already mapped keeps its protection from mmap.
	 */
	if ((rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(mprotect), 1,
	    SCMP_A2(SCMP_CMP_MASKED_EQ, x, x))) < 0 ||
	    ((rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(pkey_mprotect), 1,
	    SCMP_A2(SCMP_CMP_MASKED_EQ, x, x))) < 0 && rc != -EDOM))
		return rc;
	/* Anonymous executable memory is only ever for code made at run time. */
	if ((rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(mmap), 2,
	    SCMP_A2(SCMP_CMP_MASKED_EQ, x, x),
	    SCMP_A3(SCMP_CMP_MASKED_EQ, (scmp_datum_t)MAP_ANONYMOUS,
	    (scmp_datum_t)MAP_ANONYMOUS))) < 0)
		return rc;
	if ((rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(shmat), 1,
	    SCMP_A2(SCMP_CMP_MASKED_EQ, (scmp_datum_t)SHM_EXEC, (scmp_datum_t)SHM_EXEC))) < 0 &&
	    rc != -EDOM)
		return rc;
	/*
	 * READ_IMPLIES_EXEC: every later readable mapping executable. The
	 * query personality(0xffffffff) has the bit too and is refused with
	 * it: any other value with the bit set would set it.
	 */
	if ((rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(personality), 1,
	    SCMP_A0(SCMP_CMP_MASKED_EQ, (scmp_datum_t)READ_IMPLIES_EXEC,
	    (scmp_datum_t)READ_IMPLIES_EXEC))) < 0)
		return rc;
	/* A memfd is a writable file that no noexec mount covers: sealed only. */
	if ((rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(memfd_create), 1,
	    SCMP_A1(SCMP_CMP_MASKED_EQ, (scmp_datum_t)MFD_NOEXEC_SEAL, 0))) < 0 && rc != -EDOM)
		return rc;
	return add_image_rules(ctx);
}

static int
add_rules(scmp_filter_ctx ctx, enum sbx_filter which)
{
	int rc;

	if ((rc = deny_names(ctx, baseline_deny, EPERM)) < 0 ||
	    (rc = deny_names(ctx, enosys, ENOSYS)) < 0)
		return rc;
	/* clone: no new namespaces (one rule per flag: a masked test is "== value"). */
	for (size_t i = 0; i < sizeof(ns_flags) / sizeof(ns_flags[0]); i++)
		if ((rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(clone), 1,
		    SCMP_A0(SCMP_CMP_MASKED_EQ, (scmp_datum_t)ns_flags[i],
		    (scmp_datum_t)ns_flags[i]))) < 0)
			return rc;
	if (which == SBX_FILTER_LOCKDOWN || which == SBX_FILTER_LOCKDOWN_WX) {
		if ((rc = deny_names(ctx, lockdown_deny, EPERM)) < 0)
			return rc;
		/* Threads only: a clone without CLONE_THREAD is a new process. */
		if ((rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(clone), 1,
		    SCMP_A0(SCMP_CMP_MASKED_EQ, (scmp_datum_t)CLONE_THREAD, 0))) < 0)
			return rc;
		/* No signal handler installed (see lockdown_deny); asking is fine. */
		if ((rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(rt_sigaction), 1,
		    SCMP_A1(SCMP_CMP_NE, 0))) < 0)
			return rc;
		if (which == SBX_FILTER_LOCKDOWN_WX)
			return add_wx_rules(ctx);
		return 0;
	}
	/* Baseline: local sockets only (the network namespace has no route anyway). */
	if ((rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(socket), 1,
	    SCMP_A0(SCMP_CMP_NE, AF_UNIX))) < 0)
		return rc;
	return 0;
}

static int
make_ctx(enum sbx_filter which, scmp_filter_ctx *out)
{
	scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ALLOW);
	int rc;

	if (!ctx)
		return -ENOMEM;
	/* no_new_privs is set by the sandbox child itself, before the load. */
	if ((rc = seccomp_attr_set(ctx, SCMP_FLTATR_CTL_NNP, 0)) < 0 ||
	    (rc = add_rules(ctx, which)) < 0) {
		seccomp_release(ctx);
		return rc;
	}
	*out = ctx;
	return 0;
}

int
sbx_seccomp_build(enum sbx_filter which, struct sock_fprog *out)
{
	scmp_filter_ctx ctx = NULL;
	struct stat st;
	void *prog = NULL;
	int fd = -1, rc;
	ssize_t n;

	if ((rc = make_ctx(which, &ctx)) < 0)
		return rc;
	/* libseccomp exports to an fd only: take the program back through a memfd. */
	if ((fd = memfd_create("kb-seccomp", MFD_CLOEXEC)) < 0) {
		rc = -errno;
		goto out;
	}
	if ((rc = seccomp_export_bpf(ctx, fd)) < 0)
		goto out;
	if (fstat(fd, &st) < 0) {
		rc = -errno;
		goto out;
	}
	if (st.st_size <= 0 || st.st_size > (off_t)BPF_MAX_BYTES ||
	    st.st_size % (off_t)sizeof(struct sock_filter)) {
		rc = -EPROTO;
		goto out;
	}
	if (!(prog = malloc((size_t)st.st_size))) {
		rc = -ENOMEM;
		goto out;
	}
	n = pread(fd, prog, (size_t)st.st_size, 0);
	if (n != st.st_size) {
		rc = n < 0 ? -errno : -EIO;
		goto out;
	}
	out->len = (unsigned short)(st.st_size / (off_t)sizeof(struct sock_filter));
	out->filter = prog;
	prog = NULL;
	rc = 0;
out:
	free(prog);
	if (fd >= 0)
		close(fd);
	seccomp_release(ctx);
	return rc;
}

int
sbx_seccomp_load(enum sbx_filter which)
{
	scmp_filter_ctx ctx = NULL;
	int rc;

	if ((rc = make_ctx(which, &ctx)) < 0)
		return rc;
	/* The CUDA driver has threads of its own by now: filter them too. */
	if ((rc = seccomp_attr_set(ctx, SCMP_FLTATR_CTL_NNP, 1)) == 0 &&
	    (rc = seccomp_attr_set(ctx, SCMP_FLTATR_CTL_TSYNC, 1)) == 0)
		rc = seccomp_load(ctx);
	seccomp_release(ctx);
	return rc > 0 ? -ECANCELED : rc;	/* TSYNC failure gives a thread id */
}

int
sbx_seccomp_try(void)
{
	scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ALLOW);
	int rc;

	if (!ctx)
		return -ENOMEM;
	rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(ptrace), 0);
	if (rc == 0)
		rc = seccomp_load(ctx);
	seccomp_release(ctx);
	return rc;
}

const char *
sbx_seccomp_describe(enum sbx_filter which)
{
	if (which == SBX_FILTER_LOCKDOWN_WX)
		return "no fork/vfork/clone of processes (threads only), no "
		    "execve/execveat, no sockets, no ptrace, no mounts or "
		    "namespaces, no bpf/perf/keyctl/kexec/modules/io_uring, no "
		    "signal handlers; W^X: "
		    "no writable+executable, anonymous executable or mprotect(PROT_EXEC) "
		    "memory, no memfd without MFD_NOEXEC_SEAL, no shmat(SHM_EXEC), no "
		    "personality(READ_IMPLIES_EXEC)";
	if (which == SBX_FILTER_LOCKDOWN)
		return "no fork/vfork/clone of processes (threads only), no "
		    "execve/execveat, no sockets, no ptrace, no mounts or "
		    "namespaces, no bpf/perf/keyctl/kexec/modules/io_uring, no "
		    "signal handlers";
	return "no ptrace, no mount/umount/pivot_root, no unshare/setns or "
	    "clone into new namespaces, no bpf/perf/keyctl/kexec/modules/"
	    "io_uring, sockets AF_UNIX only; clone3 -> ENOSYS";
}

int
sandbox_lockdown(void)
{
	return sbx_seccomp_load(SBX_FILTER_LOCKDOWN);
}

int
sandbox_lockdown_wx(void)
{
	return sbx_seccomp_load(SBX_FILTER_LOCKDOWN_WX);
}
