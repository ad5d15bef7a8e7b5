/*
 * The sandbox against the exploit classes of the issue. Every attack runs
 * twice where that is harmless: once bare through the spawner (the control:
 * it must succeed, or the test proves nothing) and once through
 * sandbox_run (it must be refused).
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cli/cli.h"
#include "common/spawn.h"
#include "gpu/sandbox.h"
#include "t.h"

#define REFUSED 3

static char helper[1100], helper_dir[1024], tmp[256], scratch[300], secret[300],
    ro_dir[300], ro_file[320];

static double
now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void
sleep_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	nanosleep(&ts, NULL);
}

/* Run the helper in a sandbox; returns its exit status, or -1000 + error. */
static int
boxed_opts(struct sandbox_opts *so, int timeout_ms, json_t **checks,
    struct spawn_result *r, const char *a1, const char *a2, const char *a3)
{
	const char *argv[] = { helper, a1, a2, a3, NULL };
	struct spawn_opts o = SPAWN_OPTS_INIT;
	int rc;

	o.argv = argv;
	o.timeout_ms = timeout_ms ? timeout_ms : 20000;
	o.grace_ms = 200;
	memset(r, 0, sizeof(*r));
	rc = sandbox_run(so, &o, r, checks);
	if (rc < 0)
		return -1000 + rc;
	return r->status;
}

/* Whether a mount point is dir (a tmpfs of the quota left behind). */
static int
mounted(const char *dir)
{
	char line[4096];
	FILE *f = fopen("/proc/self/mounts", "re");
	int found = 0;

	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f)) {
		char *sp = strchr(line, ' ');
		if (sp && !strncmp(sp + 1, dir, strlen(dir)) && sp[1 + strlen(dir)] == ' ')
			found = 1;
	}
	fclose(f);
	return found;
}

static int
boxed_profile(enum sandbox_profile profile, const char *a1, const char *a2, const char *a3)
{
	struct sandbox_opts so = SANDBOX_OPTS_INIT;
	const char *ro[] = { helper_dir, ro_dir, NULL };
	struct spawn_result r;
	int st;

	so.profile = profile;
	so.scratch = scratch;
	so.ro_paths = ro;
	st = boxed_opts(&so, 0, NULL, &r, a1, a2, a3);
	if (st != 0 && st != REFUSED)
		printf("     boxed %s %s: status %d, out: %s, err: %s\n", a1, a2 ? a2 : "",
		    st, buf_cstr(&r.out), buf_cstr(&r.err));
	spawn_result_free(&r);
	return st;
}

static int
boxed(const char *a1, const char *a2, const char *a3)
{
	return boxed_profile(SANDBOX_COMPILER, a1, a2, a3);
}

/* The control: the same attempt with only the spawner, and our environment. */
static int
bare(const char *a1, const char *a2, const char *a3)
{
	extern char **environ;
	const char *argv[] = { helper, a1, a2, a3, NULL };
	struct spawn_opts o = SPAWN_OPTS_INIT;
	struct spawn_result r = { 0 };
	int rc;

	o.argv = argv;
	o.envp = (const char *const *)environ;
	o.timeout_ms = 20000;
	rc = spawn_run(&o, &r);
	if (rc == 0)
		rc = r.status;
	spawn_result_free(&r);
	return rc;
}

static int
listener(int *port)
{
	struct sockaddr_in sa = { 0 };
	socklen_t len = sizeof(sa);
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	sa.sin_family = AF_INET;
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (fd < 0 || bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 ||
	    listen(fd, 8) < 0 || getsockname(fd, (struct sockaddr *)&sa, &len) < 0)
		return -1;
	*port = ntohs(sa.sin_port);
	return fd;
}

static int
pending(int fd)
{
	struct pollfd pf = { fd, POLLIN, 0 };

	return poll(&pf, 1, 0) > 0;
}

static const json_t *
find_check(const json_t *checks, const char *name)
{
	const json_t *c;
	size_t i;

	json_array_foreach(checks, i, c)
		if (!strcmp(json_string_value(json_object_get(c, "name")), name))
			return c;
	return NULL;
}

static int
exists(const char *path)
{
	struct stat st;

	return stat(path, &st) == 0;
}

static void
setup(void)
{
	const char *b = getenv("KB_BUILD");
	FILE *f;

	snprintf(helper_dir, sizeof(helper_dir), "%s/tests/helpers", b ? b : "build/default");
	{
		char real[PATH_MAX];
		if (realpath(helper_dir, real) && strlen(real) < sizeof(helper_dir))
			memcpy(helper_dir, real, strlen(real) + 1);
	}
	snprintf(helper, sizeof(helper), "%s/sbx_exploit", helper_dir);
	snprintf(tmp, sizeof(tmp), "/tmp/kb-test-sandbox-XXXXXX");
	if (!mkdtemp(tmp))
		exit(1);
	snprintf(scratch, sizeof(scratch), "%s/scratch", tmp);
	snprintf(secret, sizeof(secret), "%s/secret", tmp);
	snprintf(ro_dir, sizeof(ro_dir), "%s/inputs", tmp);
	snprintf(ro_file, sizeof(ro_file), "%s/data.txt", ro_dir);
	mkdir(scratch, 0700);
	mkdir(ro_dir, 0755);
	if ((f = fopen(secret, "w"))) {
		fputs("TOPSECRET\n", f);
		fclose(f);
	}
	chmod(secret, 0600);
	if ((f = fopen(ro_file, "w"))) {
		fputs("input\n", f);
		fclose(f);
	}
}

static void
teardown(void)
{
	char cmd[600];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmp);
	if (system(cmd) != 0)
		printf("could not remove %s\n", tmp);
}

int
main(void)
{
	struct sandbox_opts so = SANDBOX_OPTS_INIT;
	struct spawn_result r;
	json_t *checks = NULL;
	char path[700], port_s[16];
	int port = 0, lfd, st;
	double t0;

	cli_where_load();	/* the settings tests/run.sh gives in the environment */
	{
		/* On a host without these, every check below would fail for one reason: say it once. */
		struct sandbox_features f;
		sandbox_probe(&f);
		if (!CHECK("this host can sandbox (user, mount, pid, net, ipc namespaces, seccomp)",
		    f.user_ns && f.mount_ns && f.pid_ns && f.net_ns && f.ipc_ns && f.seccomp)) {
			printf("     user %d mount %d pid %d net %d ipc %d seccomp %d: see kernelbot doctor\n",
			    f.user_ns, f.mount_ns, f.pid_ns, f.net_ns, f.ipc_ns, f.seccomp);
			return t_done("test_sandbox");
		}
	}
	setup();

	/* A plain run: status, capture, checks. */
	{
		const char *ro[] = { helper_dir, NULL };
		so.scratch = scratch;
		so.ro_paths = ro;
		st = boxed_opts(&so, 0, &checks, &r, "echo", "hello", NULL);
		CHECK_INT("a sandboxed program runs", st, 0);
		CHECK_STR("its stdout is captured", buf_cstr(&r.out), "hello\n");
		spawn_result_free(&r);
		CHECK("checks are reported", json_array_size(checks) >= 10);
		for (size_t i = 0; i < json_array_size(checks); i++) {
			const json_t *c = json_array_get(checks, i);
			if (!json_is_true(json_object_get(c, "passed")))
				printf("     check %s failed: %s\n",
				    json_string_value(json_object_get(c, "name")),
				    json_string_value(json_object_get(c, "detail")));
		}
		CHECK("every check passed on this host", find_check(checks, "seccomp") &&
		    json_is_true(json_object_get(find_check(checks, "seccomp"), "passed")) &&
		    json_is_true(json_object_get(find_check(checks, "memory_limit"), "passed")) &&
		    json_is_true(json_object_get(find_check(checks, "read_only_root"), "passed")));
		json_decref(checks);
		checks = NULL;
	}

	/* Network: a listener on the host's loopback must see nothing. */
	lfd = listener(&port);
	CHECK("test listener", lfd >= 0);
	snprintf(port_s, sizeof(port_s), "%d", port);
	CHECK_INT("control: connect works bare", bare("connect", port_s, NULL), 0);
	CHECK("control: the listener saw it", pending(lfd));
	close(lfd);
	lfd = listener(&port);
	snprintf(port_s, sizeof(port_s), "%d", port);
	CHECK_INT("sandbox: connect to 127.0.0.1 refused", boxed("connect", port_s, NULL), REFUSED);
	CHECK("sandbox: the listener saw nothing", !pending(lfd));
	close(lfd);

	/* Files outside scratch. */
	CHECK_INT("control: the secret is readable bare", bare("read", secret, NULL), 0);
	CHECK_INT("sandbox: the secret file is invisible", boxed("read", secret, NULL), REFUSED);
	CHECK_INT("sandbox: /root is invisible", boxed("read", "/root", NULL), REFUSED);
	CHECK_INT("sandbox: /etc/shadow is invisible", boxed("read", "/etc/shadow", NULL), REFUSED);
	CHECK_INT("sandbox: an ro path is readable", boxed("read", ro_file, NULL), 0);
	/* pid 1 is our reaper, a copy of the caller's memory: its environment stays closed. */
	CHECK_INT("sandbox: /proc/1/environ refused", boxed("read", "/proc/1/environ", NULL), REFUSED);
	CHECK_INT("sandbox: /proc/1/mem refused", boxed("read", "/proc/1/mem", NULL), REFUSED);
	snprintf(path, sizeof(path), "%s/pwned", tmp);
	CHECK_INT("sandbox: writing beside scratch refused", boxed("write", path, NULL), REFUSED);
	CHECK("sandbox: nothing was written there", !exists(path));
	snprintf(path, sizeof(path), "%s/pwned", ro_dir);
	CHECK_INT("sandbox: writing into an ro path refused", boxed("write", path, NULL), REFUSED);
	CHECK_INT("sandbox: writing into /usr refused", boxed("write", "/usr/pwned", NULL), REFUSED);
	snprintf(path, sizeof(path), "%s/out.bin", scratch);
	CHECK_INT("sandbox: writing into scratch works", boxed("write", path, NULL), 0);
	CHECK("sandbox: the scratch file is there", exists(path));

	/* Environment. */
	setenv("KB_TEST_SECRET", "hunter2", 1);
	CHECK_INT("control: the variable is inherited bare", bare("env", "KB_TEST_SECRET", NULL), 0);
	CHECK_INT("sandbox: the environment holds no secret", boxed("env", "KB_TEST_SECRET", NULL), REFUSED);
	CHECK_INT("sandbox: HOME is set", boxed("env", "HOME", NULL), 0);

	/* A descendant that leaves the process group must still die with the call. */
	snprintf(path, sizeof(path), "%s/outlived-bare", tmp);
	CHECK_INT("control: bare, the daemon is started", bare("outlive", path, "300"), 0);
	snprintf(path, sizeof(path), "%s/outlived", scratch);
	CHECK_INT("sandbox: the daemon is started", boxed("outlive", path, "300"), 0);
	snprintf(path, sizeof(path), "%s/outlived-bare", tmp);
	for (int i = 0; i < 60 && !exists(path); i++)	/* up to 3 s on a loaded host */
		sleep_ms(50);
	sleep_ms(200);
	CHECK("control: bare, it outlived the call", exists(path));
	snprintf(path, sizeof(path), "%s/outlived", scratch);
	CHECK("sandbox: it died with the call", !exists(path));

	/* Lockdown: no new processes, no exec, no sockets; threads still work. */
	CHECK_INT("control: fork works in the sandbox before lockdown", boxed("fork", NULL, NULL), 0);
	CHECK_INT("lockdown inside the sandbox", boxed("lockdown", NULL, NULL), 0);
	CHECK_INT("lockdown without the sandbox", bare("lockdown", NULL, NULL), 0);

	/* Disk quota: the scratch holds at most disk_bytes, whatever the program writes. */
	if (geteuid() != 0) {
		printf("skip disk quota (a tmpfs over the scratch needs root)\n");
	} else {
		const char *ro[] = { helper_dir, NULL };
		char fill_dir[400];
		json_t *dq;
		size_t i;
		long long used = 0;

		snprintf(fill_dir, sizeof(fill_dir), "%s/fill-bare", tmp);
		mkdir(fill_dir, 0700);
		CHECK_INT("control: bare, 16 MiB are written", bare("fill", fill_dir, NULL), 0);
		so = (struct sandbox_opts)SANDBOX_OPTS_INIT;
		so.profile = SANDBOX_CANDIDATE;
		so.scratch = scratch;
		so.ro_paths = ro;
		so.disk_bytes = 8u << 20;
		st = boxed_opts(&so, 0, &checks, &r, "fill", scratch, NULL);
		CHECK_INT("sandbox: writing past an 8 MiB quota fails with ENOSPC", st, REFUSED);
		dq = NULL;
		json_array_foreach(checks, i, dq)
			if (!strcmp(json_string_value(json_object_get(dq, "name")), "disk_quota"))
				break;
		CHECK("the disk_quota check says the quota was hit", dq && i < json_array_size(checks) &&
		    json_is_true(json_object_get(dq, "passed")) &&
		    strstr(json_string_value(json_object_get(dq, "detail")), "quota was hit"));
		json_decref(checks);
		checks = NULL;
		spawn_result_free(&r);
		for (int k = 0; k < 16; k++) {
			struct stat fst;
			snprintf(path, sizeof(path), "%s/fill%d", scratch, k);
			if (stat(path, &fst) == 0)
				used += (long long)fst.st_size;
			unlink(path);
		}
		CHECK("the host scratch holds no more than the quota", used <= (8ll << 20));
		CHECK("no tmpfs is left mounted over the scratch", !mounted(scratch));
		/* Where no quota can be had, the run is refused unless degraded runs are allowed. */
		setenv("KERNELBOT_SANDBOX_PRETEND_MISSING", "disk", 1);
		cli_where_load();
		so.disk_bytes = 0;
		st = boxed_opts(&so, 0, &checks, &r, "echo", "hi", NULL);
		CHECK_INT("no disk quota: refused", st, -1000 - ENOTSUP);
		json_decref(checks);
		checks = NULL;
		spawn_result_free(&r);
		so.allow_degraded = 1;
		st = boxed_opts(&so, 0, &checks, &r, "echo", "hi", NULL);
		CHECK_INT("no disk quota, allow_degraded: runs", st, 0);
		json_decref(checks);
		checks = NULL;
		spawn_result_free(&r);
		unsetenv("KERNELBOT_SANDBOX_PRETEND_MISSING");
		cli_where_load();
	}

	/* W^X (a CPU candidate's lockdown): each way of making code works bare, not after it. */
	{
		static const char *const ways[] = { "rwx", "anonx", "mprotect", "memfd", "rie" };
		char label[128], file[400];

		snprintf(file, sizeof(file), "%s/code.bin", tmp);
		for (size_t i = 0; i < sizeof(ways) / sizeof(ways[0]); i++) {
			snprintf(label, sizeof(label), "control: exec %s works bare", ways[i]);
			CHECK_INT(label, bare("exec", ways[i], NULL), 0);
			snprintf(label, sizeof(label), "W^X: exec %s refused", ways[i]);
			CHECK_INT(label, bare("wx", ways[i], NULL), REFUSED);
			snprintf(label, sizeof(label), "W^X in the candidate sandbox: exec %s refused", ways[i]);
			CHECK_INT(label, boxed_profile(SANDBOX_CANDIDATE, "wx", ways[i], NULL), REFUSED);
		}
		CHECK_INT("W^X: a memfd with MFD_NOEXEC_SEAL is still allowed", bare("wx", "sealed", NULL), 0);
		CHECK_INT("W^X: threads start and files still map r-x (dlopen)", bare("wx", "thread", file), 0);
		/* noexec scratch: a file the candidate wrote never maps executable. */
		snprintf(file, sizeof(file), "%s/code.bin", scratch);
		CHECK_INT("control: the compiler profile's scratch maps r-x",
		    boxed_profile(SANDBOX_COMPILER, "exec", "file", file), 0);
		CHECK_INT("candidate profile: scratch is noexec",
		    boxed_profile(SANDBOX_CANDIDATE, "exec", "file", file), REFUSED);
		CHECK_INT("candidate profile: /dev/shm is noexec",
		    boxed_profile(SANDBOX_CANDIDATE, "exec", "file", "/dev/shm/code.bin"), REFUSED);
		unlink(file);
	}

	/* Deadline: a hung program costs its deadline, nothing more. */
	{
		const char *ro[] = { helper_dir, NULL };
		so = (struct sandbox_opts)SANDBOX_OPTS_INIT;
		so.scratch = scratch;
		so.ro_paths = ro;
		t0 = now_s();
		st = boxed_opts(&so, 300, &checks, &r, "spin", NULL, NULL);
		CHECK("spin: timed out", r.timed_out);
		CHECK("spin: killed by a signal", r.term_signal == SIGTERM || r.term_signal == SIGKILL);
		CHECK("spin: returned promptly", now_s() - t0 < 3.0);
		CHECK("spin: the deadline check says so", strstr(json_string_value(json_object_get(
		    find_check(checks, "deadline"), "detail")), "passed") != NULL);
		spawn_result_free(&r);
		json_decref(checks);
		checks = NULL;
		CHECK_INT("after a timeout the next run works", boxed("echo", "x", NULL), 0);
	}

	/* Memory and processes. */
	{
		const char *ro[] = { helper_dir, NULL };
		so = (struct sandbox_opts)SANDBOX_OPTS_INIT;
		so.scratch = scratch;
		so.ro_paths = ro;
		so.mem_bytes = 128u << 20;
		st = boxed_opts(&so, 0, NULL, &r, "alloc", "48", NULL);
		CHECK_INT("48 MiB under a 128 MiB limit works", st, 0);
		spawn_result_free(&r);
		st = boxed_opts(&so, 0, &checks, &r, "alloc", "512", NULL);
		CHECK("512 MiB under a 128 MiB limit fails", st == REFUSED || st == 128 + SIGKILL);
		{
			const char *d = json_string_value(json_object_get(find_check(checks, "memory_limit"), "detail"));
			if (d && !strncmp(d, "cgroup", 6) && st == 128 + SIGKILL)
				CHECK("the memory check reports the OOM kill", strstr(d, "limit was hit"));
		}
		spawn_result_free(&r);
		json_decref(checks);
		checks = NULL;

		so.mem_bytes = 0;
		so.nproc = 48;
		t0 = now_s();
		st = boxed_opts(&so, 10000, NULL, &r, "forkbomb", "100000", NULL);
		CHECK_INT("fork bomb: stopped by the process limit", st, REFUSED);
		CHECK("fork bomb: returned promptly", now_s() - t0 < 5.0);
		spawn_result_free(&r);
	}

	/* ptrace, namespaces, mounts. */
	CHECK_INT("control: ptrace works bare", bare("ptrace", NULL, NULL), 0);
	CHECK_INT("sandbox: ptrace refused", boxed("ptrace", NULL, NULL), REFUSED);
	CHECK_INT("control: unshare works bare", bare("unshare", NULL, NULL), 0);
	CHECK_INT("sandbox: unshare refused", boxed("unshare", NULL, NULL), REFUSED);
	CHECK_INT("sandbox: mount refused", boxed("mount", NULL, NULL), REFUSED);

	/* The program's own death is reported faithfully. */
	CHECK_INT("a crash gives 128+SIGSEGV", boxed("crash", NULL, NULL), 128 + SIGSEGV);

	/* Failure paths: clear errors, nothing run. */
	{
		const char *ro_root[] = { "/", NULL }, *ro_secret[] = { secret, NULL };
		const char *argv[] = { "/no/such/program", NULL };
		struct spawn_opts o = SPAWN_OPTS_INIT;

		so = (struct sandbox_opts)SANDBOX_OPTS_INIT;
		so.scratch = "relative/scratch";
		CHECK_INT("a relative scratch is refused", boxed_opts(&so, 0, NULL, &r, "echo", "x", NULL), -1000 - EINVAL);
		spawn_result_free(&r);
		so.scratch = scratch;
		so.ro_paths = ro_root;
		CHECK_INT("ro path / is refused", boxed_opts(&so, 0, NULL, &r, "echo", "x", NULL), -1000 - EINVAL);
		spawn_result_free(&r);
		if (geteuid() == 0) {
			so.ro_paths = ro_secret;
			CHECK_INT("an ro path the sandbox uid cannot read is refused",
			    boxed_opts(&so, 0, &checks, &r, "echo", "x", NULL), -1000 - EACCES);
			spawn_result_free(&r);
			CHECK("... and the checks say which", find_check(checks, "read_only_paths") &&
			    json_is_false(json_object_get(find_check(checks, "read_only_paths"), "passed")));
			json_decref(checks);
			checks = NULL;
		}
		so.ro_paths = NULL;
		o.argv = argv;
		memset(&r, 0, sizeof(r));
		CHECK_INT("a missing program is -ENOENT", sandbox_run(&so, &o, &r, NULL), -ENOENT);
		spawn_result_free(&r);

		so.gpu = 0;
		st = boxed_opts(&so, 0, &checks, &r, "echo", "x", NULL);
		spawn_result_free(&r);
		if (access("/dev/nvidia0", F_OK) != 0)
			CHECK("a GPU this host lacks is reported", find_check(checks, "gpu") &&
			    json_is_false(json_object_get(find_check(checks, "gpu"), "passed")) &&
			    strstr(json_string_value(json_object_get(find_check(checks, "gpu"), "detail")),
			    "/dev/nvidia0"));
		json_decref(checks);
		checks = NULL;
	}

	/*
	 * A host without a feature: refused by default, run and reported with
	 * allow_degraded, and the report is honest (the attack then works).
	 */
	{
		const char *ro[] = { helper_dir, NULL };
		const json_t *c;

		so = (struct sandbox_opts)SANDBOX_OPTS_INIT;
		so.scratch = scratch;
		so.ro_paths = ro;
		setenv("KERNELBOT_SANDBOX_PRETEND_MISSING", "seccomp", 1);
		cli_where_load();
		CHECK_INT("no seccomp: refused", boxed_opts(&so, 0, &checks, &r, "ptrace", NULL, NULL),
		    -1000 - ENOTSUP);
		spawn_result_free(&r);
		c = find_check(checks, "seccomp");
		CHECK("no seccomp: the checks say why", c && json_is_false(json_object_get(c, "passed")));
		json_decref(checks);
		so.allow_degraded = 1;
		CHECK_INT("no seccomp, degraded: runs, and ptrace is not stopped",
		    boxed_opts(&so, 0, &checks, &r, "ptrace", NULL, NULL), 0);
		spawn_result_free(&r);
		c = find_check(checks, "seccomp");
		CHECK("no seccomp, degraded: reported", c && json_is_false(json_object_get(c, "passed")));
		json_decref(checks);
		checks = NULL;
		if (geteuid() == 0) {
			setenv("KERNELBOT_SANDBOX_PRETEND_MISSING", "user_ns", 1);
			cli_where_load();
			CHECK_INT("no user namespace, degraded (root): still no secret",
			    boxed_opts(&so, 0, &checks, &r, "read", secret, NULL), REFUSED);
			spawn_result_free(&r);
			c = find_check(checks, "user_namespace");
			CHECK("no user namespace: reported", c && json_is_false(json_object_get(c, "passed")));
			json_decref(checks);
			checks = NULL;
		}
		setenv("KERNELBOT_SANDBOX_PRETEND_MISSING", "proc_mount", 1);
		cli_where_load();
		so.allow_degraded = 0;
		CHECK_INT("no fresh /proc: refused", boxed_opts(&so, 0, &checks, &r, "echo", "x", NULL),
		    -1000 - ENOTSUP);
		spawn_result_free(&r);
		c = find_check(checks, "proc");
		CHECK("no fresh /proc: reported", c && json_is_false(json_object_get(c, "passed")));
		json_decref(checks);
		so.allow_degraded = 1;
		CHECK_INT("no fresh /proc, degraded: the host's /proc is read-only",
		    boxed_opts(&so, 0, &checks, &r, "write", "/proc/pwned", NULL), REFUSED);
		spawn_result_free(&r);
		json_decref(checks);
		checks = NULL;
		setenv("KERNELBOT_SANDBOX_PRETEND_MISSING", "cgroup", 1);
		cli_where_load();
		so.allow_degraded = 0;
		so.mem_bytes = 256u << 20;
		st = boxed_opts(&so, 0, &checks, &r, "alloc", "2048", NULL);
#ifndef __SANITIZE_ADDRESS__
		/* (An ASan helper cannot even start under RLIMIT_AS: its shadow is terabytes.) */
		CHECK("no cgroup: RLIMIT_AS still stops a huge allocation", st == REFUSED);
#endif
		spawn_result_free(&r);
		c = find_check(checks, "memory_limit");
		CHECK("no cgroup: the memory check names RLIMIT_AS", c &&
		    strstr(json_string_value(json_object_get(c, "detail")), "RLIMIT_AS"));
		json_decref(checks);
		so.gpu = 0;
		st = boxed_opts(&so, 0, &checks, &r, "alloc", "2048", NULL);
#ifndef __SANITIZE_ADDRESS__
		CHECK_INT("no cgroup, GPU process: RLIMIT_DATA stops a huge allocation", st, REFUSED);
#endif
		spawn_result_free(&r);
		c = find_check(checks, "memory_limit");
		CHECK("no cgroup, GPU process: the memory check names RLIMIT_DATA", c &&
		    strstr(json_string_value(json_object_get(c, "detail")), "RLIMIT_DATA"));
		json_decref(checks);
		checks = NULL;
		st = boxed_opts(&so, 0, NULL, &r, "reserve", "64", NULL);
		spawn_result_free(&r);
#ifndef __SANITIZE_ADDRESS__
		CHECK_INT("no cgroup, GPU process: CUDA-style address reservations still work", st, 0);
		so.gpu = -1;
		st = boxed_opts(&so, 0, NULL, &r, "reserve", "64", NULL);
		spawn_result_free(&r);
		CHECK_INT("control: RLIMIT_AS (non-GPU) refuses them", st, REFUSED);
#endif
		json_decref(checks);
		checks = NULL;
		unsetenv("KERNELBOT_SANDBOX_PRETEND_MISSING");
		cli_where_load();
	}

	/* The harness named by KERNELBOT_HARNESS is shown without being asked for. */
	{
		char hdir[400], hfile[450];
		FILE *f;

		snprintf(hdir, sizeof(hdir), "%s/harness", tmp);
		snprintf(hfile, sizeof(hfile), "%s/harness.py", hdir);
		mkdir(hdir, 0755);
		if ((f = fopen(hfile, "w"))) {
			fputs("# harness\n", f);
			fclose(f);
		}
		CHECK_INT("harness: not visible by default", boxed("read", hfile, NULL), REFUSED);
		setenv("KERNELBOT_HARNESS", hfile, 1);
		cli_where_load();
		CHECK_INT("harness: visible with KERNELBOT_HARNESS", boxed("read", hfile, NULL), 0);
		snprintf(path, sizeof(path), "%s/pwned", hdir);
		CHECK_INT("harness: read-only", boxed("write", path, NULL), REFUSED);
		unsetenv("KERNELBOT_HARNESS");
		cli_where_load();
	}

	/* The environment builder. */
	{
		const char *extra[] = { "CUDA_VISIBLE_DEVICES=0", "LANG=C", NULL }, *bad[] = { "NOEQUALS", NULL };
		char **env = NULL;
		int n = 0, lang_c = 0;

		CHECK_INT("env: builds", sandbox_env_build("/s", extra, &env), 0);
		for (char **e = env; e && *e; e++, n++)
			lang_c += !strcmp(*e, "LANG=C");
#ifdef __SANITIZE_ADDRESS__
		n--;	/* ASAN_OPTIONS, in sanitizer builds only */
#endif
		CHECK_INT("env: base + one new variable", n, 5);
		CHECK_INT("env: a pair replaces the base value", lang_c, 1);
		sandbox_env_free(env);
		CHECK_INT("env: an entry without '=' is refused", sandbox_env_build("/s", bad, &env), -EINVAL);
	}

	teardown();
	return t_done("test_sandbox");
}
