/*
 * sandbox_run(): plan the confinement in the parent (paths, maps, limits,
 * the seccomp program, the cgroup), report it as checks, then hand the
 * plan to the spawner's child_setup hook (sandbox_child.c) and run.
 */
#include "gpu/sandbox.h"
#include "gpu/sandbox_int.h"

#include <dirent.h>
#include <stddef.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/buf.h"
#include "common/where.h"

#define DIAG_FD_MIN 128		/* above where the spawner places passed fds */

static const char *const system_dirs[] = {
	"/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/opt", NULL,
};
/* The /etc a compiler, the dynamic linker and Python need; no secrets. */
static const char *const etc_files[] = {
	"/etc/ld.so.cache", "/etc/ld.so.conf", "/etc/ld.so.conf.d",
	"/etc/alternatives", "/etc/passwd", "/etc/group", "/etc/nsswitch.conf",
	"/etc/localtime", "/etc/os-release", "/etc/mime.types", NULL,
};

static pthread_once_t init_once = PTHREAD_ONCE_INIT;
static struct sandbox_features feats;
static struct sock_fprog baseline_prog;
static int baseline_err;

static void
init_once_fn(void)
{
	sandbox_probe(&feats);
	baseline_err = sbx_seccomp_build(SBX_FILTER_BASELINE, &baseline_prog);
}

/*
 * KERNELBOT_SANDBOX_PRETEND_MISSING=user_ns,seccomp,...: act as on a host
 * without those features, to test (and show) the refusal and degraded
 * paths. It can only take confinement away, and every run reports it.
 */
static void
pretend_missing(struct sandbox_features *f, int *no_cgroup, int *no_disk)
{
	const char *env = where()->sandbox_pretend_missing;
	static const struct { const char *name; size_t off; } names[] = {
		{ "user_ns", offsetof(struct sandbox_features, user_ns) },
		{ "mount_ns", offsetof(struct sandbox_features, mount_ns) },
		{ "pid_ns", offsetof(struct sandbox_features, pid_ns) },
		{ "net_ns", offsetof(struct sandbox_features, net_ns) },
		{ "ipc_ns", offsetof(struct sandbox_features, ipc_ns) },
		{ "seccomp", offsetof(struct sandbox_features, seccomp) },
		{ "proc_mount", offsetof(struct sandbox_features, proc_mount) },
	};

	*no_cgroup = *no_disk = 0;
	if (!env)
		return;
	*no_disk = strstr(env, "disk") != NULL;
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (strstr(env, names[i].name))
			*(int *)(void *)((char *)f + names[i].off) = 0;
	*no_cgroup = strstr(env, "cgroup") != NULL;
}

void
sbx_check(json_t *arr, const char *name, int passed, const char *fmt, ...)
{
	char detail[2048];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(detail, sizeof(detail), fmt, ap);
	va_end(ap);
	json_array_append_new(arr, json_pack("{s:s, s:b, s:s}", "name", name,
	    "passed", passed, "detail", detail));
}

static void
add_limit(struct sbx_plan *p, int res, rlim_t soft, rlim_t hard)
{
	if (p->n_limits < SBX_LIMITS_MAX) {
		p->limit_res[p->n_limits] = res;
		p->limit_val[p->n_limits] = (struct rlimit){ soft, hard };
		p->n_limits++;
	}
}

static int
prepare_scratch(const char *scratch, int chown_to_sandbox)
{
	char tmp[PATH_MAX];

	if (snprintf(tmp, sizeof(tmp), "%s/tmp", scratch) >= (int)sizeof(tmp))
		return -ENAMETOOLONG;
	if (mkdir(tmp, 0700) < 0 && errno != EEXIST)
		return -errno;
	if (chown_to_sandbox &&
	    (lchown(scratch, SANDBOX_ROOT_UID, SANDBOX_ROOT_UID) < 0 ||
	    lchown(tmp, SANDBOX_ROOT_UID, SANDBOX_ROOT_UID) < 0))
		return -errno;
	return 0;
}

static long
default_nproc(void)
{
	long cpus = sysconf(_SC_NPROCESSORS_ONLN), n = 4 * cpus + 64;

	return n > SANDBOX_DEFAULT_NPROC ? n : SANDBOX_DEFAULT_NPROC;
}

/* Read the first set-up failure the sandbox's processes reported. */
static void
read_diag(int fd, json_t *ck)
{
	struct sbx_diag d;

	fcntl(fd, F_SETFL, O_NONBLOCK);
	if (read(fd, &d, sizeof(d)) == (ssize_t)sizeof(d)) {
		d.what[sizeof(d.what) - 1] = '\0';
		sbx_check(ck, "setup", 0, "%s: %s", d.what, strerror(d.err));
	}
}

static int
apparmor_restricts(void)
{
	char c = '0';
	int fd = open("/proc/sys/kernel/apparmor_restrict_unprivileged_userns", O_RDONLY | O_CLOEXEC);

	if (fd >= 0) {
		if (read(fd, &c, 1) != 1)
			c = '0';
		close(fd);
	}
	return c == '1';
}

/* Namespaces and ids; returns how many required ones are missing. */
static int
plan_namespaces(struct sbx_plan *p, const struct sandbox_features *feat, int root, json_t *ck)
{
	static const struct { int flag; const char *name, *what; } ns[] = {
		{ CLONE_NEWNS, "mount_namespace", "private mount tree" },
		{ CLONE_NEWPID, "pid_namespace", "sees only its own processes; the tree dies with it" },
		{ CLONE_NEWNET, "network_namespace", "no network: only a loopback that is down" },
		{ CLONE_NEWIPC, "ipc_namespace", "no shared System V IPC or POSIX queues" },
	};
	int missing = 0;

	/* Without a user namespace only root can make the others. */
	if (feat->user_ns)
		p->clone_flags |= CLONE_NEWUSER | CLONE_NEWCGROUP;
	if (feat->user_ns || root)
		p->clone_flags |= (feat->mount_ns ? CLONE_NEWNS | CLONE_NEWUTS : 0) |
		    (feat->pid_ns ? CLONE_NEWPID : 0) | (feat->net_ns ? CLONE_NEWNET : 0) |
		    (feat->ipc_ns ? CLONE_NEWIPC : 0);
	p->uid = root ? SANDBOX_ROOT_UID : geteuid();
	p->gid = root ? SANDBOX_ROOT_UID : getegid();
	p->map_ids = !!(p->clone_flags & CLONE_NEWUSER);
	p->switch_ids = root;
	p->deny_setgroups = !root && p->map_ids;
	snprintf(p->uid_map, sizeof(p->uid_map), "%u %u 1\n", (unsigned)p->uid, (unsigned)p->uid);
	snprintf(p->gid_map, sizeof(p->gid_map), "%u %u 1\n", (unsigned)p->gid, (unsigned)p->gid);
	sbx_check(ck, "user_namespace", p->map_ids, p->map_ids ?
	    "runs as host uid %u in its own user namespace, no capabilities" :
	    "no user namespaces on this host (host uid %u)", (unsigned)p->uid);
	missing += !p->map_ids;
	for (size_t i = 0; i < sizeof(ns) / sizeof(ns[0]); i++) {
		int have = !!(p->clone_flags & ns[i].flag);
		sbx_check(ck, ns[i].name, have, "%s%s", have ? ns[i].what : "not available on this host",
		    !have && !root && apparmor_restricts() ? " (AppArmor restricts unprivileged "
		    "user namespaces here: kernel.apparmor_restrict_unprivileged_userns=1; "
		    "allow kernelbot in an AppArmor profile with `userns,`, or run it as root)" : "");
		missing += !have;
	}
	return missing;
}

/* The new root; *missing counts what the host could not give. */
static int
plan_root(struct sbx_plan *p, const struct sandbox_opts *so, const struct sandbox_features *feat,
    const char *scratch, int root, json_t *ck, int *missing)
{
	struct buf shown = BUF_INIT(16384);
	/* A candidate never runs code from a file it wrote (W^X, with the lockdown). */
	unsigned long noexec = so->profile == SANDBOX_CANDIDATE ? MS_NOEXEC : 0;
	int error = 0;

	if (!(p->clone_flags & CLONE_NEWNS)) {
		sbx_check(ck, "read_only_root", 0, "no mount namespace: the whole host "
		    "file system is visible with the sandbox uid's rights");
		sbx_check(ck, "gpu", so->gpu < 0, "no mount namespace: every device node is visible");
		++*missing;
		return 0;
	}
	p->new_root = 1;
	for (int i = 0; system_dirs[i] && !error; i++)
		error = sbx_add_ro(p, system_dirs[i], &shown);
	for (int i = 0; etc_files[i] && !error; i++)
		error = sbx_add_ro(p, etc_files[i], NULL);
	if (!error)
		error = sbx_plan_dev(p, so->gpu, noexec, ck);
	if (!error && (p->clone_flags & CLONE_NEWPID) && feat->proc_mount) {
		error = sbx_add_mount(p, SBX_PROC, 1, NULL, "/proc");
		/*
		 * Read-only: /proc/self/mem writes past a mapping's protection
		 * (sandbox_seccomp.c, the worker's image). Not with a GPU: the
		 * CUDA driver's cuInit fails on a read-only /proc (304, an
		 * operating system call, on an H100 host).
		 */
		if (!error && so->gpu < 0)
			p->mounts[p->n_mounts - 1].flags = MS_RDONLY;
		sbx_check(ck, "proc", 1, so->gpu < 0 ? "a fresh /proc, read-only: only the "
		    "sandbox's own processes" : "a fresh /proc: only the sandbox's own processes");
	} else if (!error) {
		/* The host's, read-only: processes outside are visible. */
		error = sbx_add_ro(p, "/proc", NULL);
		sbx_check(ck, "proc", 0, "this host refuses a fresh /proc (a container "
		    "masking parts of it?): the host's /proc is shown read-only, "
		    "with the processes outside the sandbox");
		++*missing;
	}
	if (!error && so->gpu >= 0 && (p->clone_flags & CLONE_NEWNET))
		error = sbx_add_mount(p, SBX_SYSFS, 1, NULL, "/sys");
	if (!error)
		error = sbx_add_mount(p, SBX_TMPFS, 1, "mode=0755,size=1m", "/tmp");
	if (!error)
		error = sbx_plan_paths(p, so, scratch, root, ck, &shown);
	/* /tmp only holds mount points: TMPDIR is in scratch. */
	if (!error)
		error = sbx_add_mount(p, SBX_SEAL_RO, 1, NULL, "/tmp");
	if (!error)
		error = sbx_add_mount(p, SBX_SEAL_RO, 1, NULL, "/");
	if (!error)
		sbx_check(ck, "read_only_root", 1, "a new root on tmpfs, read-only: %s, "
		    "the needed /etc files; minimal /dev, read-only /tmp (TMPDIR is in "
		    "scratch), a private 64 MiB /dev/shm%s", buf_cstr(&shown),
		    noexec ? "; scratch and /dev/shm noexec" : "");
	buf_free(&shown);
	return error;
}

static void
plan_rlimits(struct sbx_plan *p, const struct sandbox_opts *so, size_t mem, long nproc,
    json_t *ck)
{
	rlim_t cpu = so->cpu_s > 0 ? (rlim_t)so->cpu_s : SANDBOX_DEFAULT_CPU_S;
	rlim_t fsize = so->fsize_bytes ? so->fsize_bytes : mem;
	rlim_t nofile = so->nofile > 0 ? (rlim_t)so->nofile : SANDBOX_DEFAULT_NOFILE;

	add_limit(p, RLIMIT_CPU, cpu, cpu + 1);
	add_limit(p, RLIMIT_FSIZE, fsize, fsize);
	add_limit(p, RLIMIT_NOFILE, nofile, nofile);
	add_limit(p, RLIMIT_NPROC, (rlim_t)nproc, (rlim_t)nproc);
	add_limit(p, RLIMIT_CORE, 0, 0);
	sbx_check(ck, "rlimits", 1, "cpu %lu s, file size %lu MiB, open files %lu, "
	    "processes+threads %ld, core 0", (unsigned long)cpu,
	    (unsigned long)(fsize >> 20), (unsigned long)nofile, nproc);
}

/* A memory limit: the run's cgroup, else an rlimit. detail gets what was chosen. */
static int
plan_memory(struct sbx_plan *p, struct sbx_cgroup *cg, int no_cgroup, size_t mem,
    long nproc, int gpu, json_t *ck, struct buf *detail)
{
	int error;

	if (no_cgroup)
		snprintf(cg->why, sizeof(cg->why), "KERNELBOT_SANDBOX_PRETEND_MISSING says so");
	else if ((error = sbx_cgroup_create(cg, mem, nproc)) < 0) {
		sbx_check(ck, "memory_limit", 0, "%s", cg->why);
		return error;
	}
	if (cg->version) {
		const char *dirs[SBX_CGROUPS_MAX] = { cg->mem_dir, cg->pids_dir };
		for (int i = 0; i < SBX_CGROUPS_MAX && dirs[i][0]; i++)
			if (snprintf(p->cgroup_procs[p->n_cgroups++], SBX_PATH_MAX,
			    "%s/cgroup.procs", dirs[i]) >= SBX_PATH_MAX)
				return -ENAMETOOLONG;
		buf_printf(detail, "cgroup v%d %s: %zu MiB, no swap", cg->version, cg->mem_dir, mem >> 20);
		sbx_check(ck, "pids_limit", 1, "%s pids.max %ld", cg->version == 2 || cg->pids_dir[0] ?
		    "cgroup" : "RLIMIT_NPROC only, no", nproc);
		return 0;
	}
	if (gpu < 0) {
		add_limit(p, RLIMIT_AS, mem, mem);
		buf_printf(detail, "RLIMIT_AS %zu MiB (no usable memory cgroup: %s)", mem >> 20, cg->why);
	} else {
		/*
		 * RLIMIT_AS cannot hold a CUDA process (the driver reserves address
		 * space far beyond any limit), but those reservations are PROT_NONE
		 * or shared device mappings, which RLIMIT_DATA does not count.
		 */
		add_limit(p, RLIMIT_DATA, mem, mem);
		buf_printf(detail, "RLIMIT_DATA %zu MiB: heap and private writable "
		    "mappings, not shared memory (no usable memory cgroup: %s; "
		    "RLIMIT_AS cannot hold a CUDA process)", mem >> 20, cg->why);
	}
	sbx_check(ck, "pids_limit", 1, "RLIMIT_NPROC %ld (no pids cgroup)", nproc);
	return 0;
}

/* seccomp, capabilities, environment and deadline; returns missing count. */
static int
plan_rest(struct sbx_plan *p, const struct sandbox_opts *so, const struct sandbox_features *feat,
    const struct spawn_opts *run, json_t *ck)
{
	struct buf names = BUF_INIT(4096);
	int nenv = 0, missing = 0;

	if (feat->seccomp && baseline_err == 0) {
		p->filter = baseline_prog;
		sbx_check(ck, "seccomp", 1, "%s%s", sbx_seccomp_describe(SBX_FILTER_BASELINE),
		    so->profile == SANDBOX_CANDIDATE ? "; the worker adds its lockdown "
		    "before loading the candidate" : "");
	} else {
		sbx_check(ck, "seccomp", 0, feat->seccomp ? "building the filter failed: %s" :
		    "seccomp filters cannot be loaded on this host%s",
		    feat->seccomp ? strerror(-baseline_err) : "");
		missing++;
	}
	sbx_check(ck, "capabilities", 1, "none: empty bounding set, no ambient "
	    "capabilities, no_new_privs");
	for (const char *const *e = run->envp; *e; e++, nenv++)
		buf_printf(&names, "%s%.*s", nenv ? ", " : "",
		    (int)(strchr(*e, '=') ? strchr(*e, '=') - *e : (long)strlen(*e)), *e);
	sbx_check(ck, "environment", 1, "built from nothing, %d variables: %s",
	    nenv, buf_cstr(&names));
	buf_free(&names);
	sbx_check(ck, "deadline", 1, "%.3g s wall clock, then the whole process tree is killed",
	    run->timeout_ms / 1000.0);
	return missing;
}

/*
 * The pipe the child's setup reports through (struct sbx_diag): its write
 * end above where the spawner places passed descriptors. 0 or -errno;
 * p[] stays -1 where not open.
 */
static int
diag_pipe(int p[2])
{
	int hi;

	if (pipe2(p, O_CLOEXEC) < 0)
		return -errno;
	if ((hi = fcntl(p[1], F_DUPFD_CLOEXEC, DIAG_FD_MIN)) < 0)
		return -errno;
	close(p[1]);
	p[1] = hi;
	return 0;
}

int
sandbox_run(const struct sandbox_opts *so, const struct spawn_opts *o,
    struct spawn_result *r, json_t **checks)
{
	struct sbx_plan *p = NULL;
	struct sbx_cgroup cg = { 0 };
	struct sandbox_features feat;
	struct spawn_opts run;
	struct buf detail = BUF_INIT(4096);
	char scratch[PATH_MAX];
	char **env = NULL;
	json_t *ck = json_array(), *mem_check = NULL, *deadline_check;
	int diag_p[2] = { -1, -1 }, error = 0, missing = 0, root = geteuid() == 0, no_cgroup, no_disk;
	size_t mem = so->mem_bytes ? so->mem_bytes : SANDBOX_DEFAULT_MEM;
	size_t disk = so->disk_bytes ? so->disk_bytes : so->profile == SANDBOX_CANDIDATE ?
	    SANDBOX_DEFAULT_DISK_CANDIDATE : SANDBOX_DEFAULT_DISK_COMPILER, used;
	struct sbx_disk dq = { .under_fd = -1, .janitor_fd = -1 };
	json_t *disk_check = NULL;
	char why[512];
	long nproc = so->nproc > 0 ? so->nproc : default_nproc();
	struct stat st;

	if (!ck)
		return -ENOMEM;
	if (!o->argv || !o->argv[0] || o->child_setup || !so->scratch ||
	    so->scratch[0] != '/' || !realpath(so->scratch, scratch) ||
	    stat(scratch, &st) < 0 || !S_ISDIR(st.st_mode) ||
	    (o->cwd && o->cwd[0] != '/')) {
		sbx_check(ck, "scratch", 0, "bad options: the scratch directory must be "
		    "an existing absolute path, cwd absolute, no child_setup");
		error = -EINVAL;
		goto out;
	}
	pthread_once(&init_once, init_once_fn);
	feat = feats;
	pretend_missing(&feat, &no_cgroup, &no_disk);
	if (!(p = calloc(1, sizeof(*p)))) {
		error = -ENOMEM;
		goto out;
	}
	missing += plan_namespaces(p, &feat, root, ck);
	if ((error = plan_root(p, so, &feat, scratch, root, ck, &missing)) < 0)
		goto out;
	if (snprintf(p->cwd, sizeof(p->cwd), "%s", o->cwd ? o->cwd : scratch) >=
	    (int)sizeof(p->cwd)) {
		error = -ENAMETOOLONG;
		goto out;
	}
	plan_rlimits(p, so, mem, nproc, ck);
	run = *o;
	if (!run.envp) {
		if ((error = sandbox_env_build(scratch, NULL, &env)) < 0)
			goto out;
		run.envp = (const char *const *)env;
	}
	if (!run.timeout_ms)
		run.timeout_ms = SANDBOX_DEFAULT_TIMEOUT_MS;
	missing += plan_rest(p, so, &feat, &run, ck);
	deadline_check = json_array_get(ck, json_array_size(ck) - 1);
	/*
	 * Without root there is no mount in the caller's namespace, so no
	 * quota: reported, but not a reason to refuse, or an unprivileged
	 * daemon (the shipped systemd unit) could sandbox nothing.
	 * RLIMIT_FSIZE still bounds each file.
	 */
	if (no_disk) {
		sbx_check(ck, "disk_quota", 0, "no quota on the scratch: "
		    "KERNELBOT_SANDBOX_PRETEND_MISSING says so");
		missing++;
	} else if (!root) {
		sbx_check(ck, "disk_quota", 0, "no quota on the scratch: mounting a size-limited "
		    "tmpfs over it needs root (each file is still limited by RLIMIT_FSIZE)");
	}
	/* Refuse before touching anything: no cgroup made, scratch untouched. */
	if (missing && !so->allow_degraded) {
		error = -ENOTSUP;
		goto out;
	}
	if ((error = plan_memory(p, &cg, no_cgroup, mem, nproc, so->gpu, ck, &detail)) < 0)
		goto out;
	mem_check = json_pack("{s:s, s:b, s:s}", "name", "memory_limit", "passed", 1,
	    "detail", buf_cstr(&detail));
	json_array_append_new(ck, mem_check);
	if (root && !no_disk) {
		int noexec = so->profile == SANDBOX_CANDIDATE;
		if ((error = sbx_disk_mount(&dq, scratch, disk, noexec, why, sizeof(why))) < 0) {
			sbx_check(ck, "disk_quota", 0, "no quota on the scratch: %s", why);
			if (!so->allow_degraded) {
				error = -ENOTSUP;
				goto out;
			}
			error = 0;
		} else {
			disk_check = json_pack("{s:s, s:b}", "name", "disk_quota", "passed", 1);
			json_object_set_new(disk_check, "detail", json_sprintf("%zu MiB and %zu files "
			    "in all (a tmpfs over the scratch): writes past it fail with ENOSPC",
			    disk >> 20, disk / 16384 < 1024 ? (size_t)1024 : disk / 16384));
			json_array_append_new(ck, disk_check);
		}
	}
	if ((error = prepare_scratch(scratch, root)) < 0) {
		sbx_check(ck, "scratch", 0, "preparing %s: %s", scratch, strerror(-error));
		goto out;
	}
	sbx_check(ck, "scratch", 1, "%s is the only writable host directory%s", scratch,
	    root ? " (handed to the sandbox uid)" : "");

	if ((error = diag_pipe(diag_p)) < 0)
		goto out;
	p->diag_fd = diag_p[1];
	p->parent = getpid();
	run.cwd = NULL;
	run.child_setup = sbx_child_setup;
	run.child_arg = p;
	error = spawn_run(&run, r);
	close(diag_p[1]), diag_p[1] = -1;
	read_diag(diag_p[0], ck);
	if (error == 0 && r->timed_out)
		json_object_set_new(deadline_check, "detail", json_sprintf("%.3g s wall "
		    "clock: it passed, and the whole process tree was killed",
		    run.timeout_ms / 1000.0));
	if (disk_check && sbx_disk_full(&dq, &used))
		json_object_set_new(disk_check, "detail", json_sprintf("the quota was hit: "
		    "%zu MiB used of %zu MiB (a tmpfs over the scratch); writes past it "
		    "failed with ENOSPC", used >> 20, disk >> 20));
	if (cg.version) {
		sbx_cgroup_report(&cg, &detail);
		json_object_set_new(mem_check, "detail", json_string(buf_cstr(&detail)));
	}
out:
	sbx_disk_release(&dq);
	sbx_cgroup_destroy(&cg);
	for (int i = 0; i < 2; i++)
		if (diag_p[i] >= 0)
			close(diag_p[i]);
	sandbox_env_free(env);
	buf_free(&detail);
	free(p);
	if (checks)
		*checks = ck;
	else
		json_decref(ck);
	return error;
}
