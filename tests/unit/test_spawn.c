#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "common/spawn.h"
#include "t.h"

static const char *const env[] = { "PATH=/usr/bin:/bin", "ONLY=this", NULL };

static int
run_sh(const char *script, int timeout_ms, size_t out_max, struct spawn_result *r)
{
	const char *argv[] = { "/bin/sh", "-c", script, NULL };
	struct spawn_opts o = SPAWN_OPTS_INIT;

	o.argv = argv;
	o.envp = env;
	o.timeout_ms = timeout_ms;
	o.grace_ms = 300;
	o.out_max = out_max;
	memset(r, 0, sizeof(*r));
	return spawn_run(&o, r);
}

static int
setup_fails(void *arg)
{
	(void)arg;
	return EPERM;
}

/* Alive and not a zombie: a killed orphan may wait a while for its reaper. */
static int
pid_alive(pid_t pid)
{
	char path[64], stat[256];
	FILE *f;
	char *p;
	int alive = 0;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	if (!(f = fopen(path, "r")))
		return 0;
	if (fgets(stat, sizeof(stat), f) && (p = strrchr(stat, ')')))
		alive = p[1] == ' ' && p[2] != 'Z' && p[2] != 'X';
	fclose(f);
	return alive;
}

int
main(void)
{
	struct spawn_result r;
	struct spawn_opts o = SPAWN_OPTS_INIT;
	char *which = NULL;

	CHECK_INT("run a program", run_sh("echo out; echo err >&2; exit 3", 5000, 0, &r), 0);
	CHECK_INT("exit status", r.status, 3);
	CHECK_STR("stdout captured", buf_cstr(&r.out), "out\n");
	CHECK_STR("stderr captured", buf_cstr(&r.err), "err\n");
	CHECK_INT("not timed out", r.timed_out, 0);
	spawn_result_free(&r);

	{
		const char *argv[] = { "/usr/bin/env", NULL };
		o.argv = argv;
		o.envp = env;
		spawn_run(&o, &r);
		o = (struct spawn_opts)SPAWN_OPTS_INIT;
	}
	CHECK_STR("environment is exactly envp", buf_cstr(&r.out), "PATH=/usr/bin:/bin\nONLY=this\n");
	spawn_result_free(&r);

	run_sh("kill -SEGV $$", 5000, 0, &r);
	CHECK_INT("killed by a signal gives 128+signal", r.status, 128 + SIGSEGV);
	CHECK_INT("the signal is reported", r.term_signal, SIGSEGV);
	spawn_result_free(&r);

	run_sh("[ $(ps -o pgid= -p $$) -eq $$ ] && echo leader", 5000, 0, &r);
	CHECK_STR("the child leads its own process group", buf_cstr(&r.out), "leader\n");
	spawn_result_free(&r);

	struct timespec t0, t1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	run_sh("sleep 30", 300, 0, &r);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	CHECK_INT("deadline: timed out", r.timed_out, 1);
	CHECK_INT("deadline: SIGTERM ends it", r.status, 128 + SIGTERM);
	CHECK("deadline: returns promptly", (t1.tv_sec - t0.tv_sec) < 5);
	spawn_result_free(&r);

	run_sh("trap '' TERM; while :; do :; done", 200, 0, &r);
	CHECK_INT("a child ignoring SIGTERM is killed with SIGKILL", r.status, 128 + SIGKILL);
	CHECK_INT("and counts as timed out", r.timed_out, 1);
	spawn_result_free(&r);

	/* The grandchild writes its pid, then would sleep on after the call. */
	run_sh("sleep 60 & echo $!; exit 0", 5000, 0, &r);
	{
		pid_t gc = (pid_t)atoi(buf_cstr(&r.out));
		usleep(100000);
		CHECK("group kill: no descendant outlives the call", gc > 0 && !pid_alive(gc));
	}
	spawn_result_free(&r);

	run_sh("sleep 60 & echo $!; sleep 60", 300, 0, &r);
	{
		pid_t gc = (pid_t)atoi(buf_cstr(&r.out));
		usleep(100000);
		CHECK("group kill at the deadline reaches descendants", gc > 0 && !pid_alive(gc));
	}
	spawn_result_free(&r);

	run_sh("head -c 100000 /dev/zero | tr '\\0' x", 5000, 1000, &r);
	CHECK_INT("output cap: capture stops at the cap", r.out.len, 1000);
	CHECK_INT("output cap: the rest is counted", r.out_dropped, 99000);
	CHECK_INT("output cap: the child still finishes", r.status, 0);
	spawn_result_free(&r);

	{
		static char big[1 << 20];
		const char *argv[] = { "/usr/bin/wc", "-c", NULL };
		memset(big, 'k', sizeof(big));
		o.argv = argv;
		o.envp = env;
		o.input = big;
		o.input_len = sizeof(big);
		o.timeout_ms = 5000;
		CHECK_INT("stdin: a megabyte of input", spawn_run(&o, &r), 0);
		CHECK_INT("stdin: all of it arrives", atoi(buf_cstr(&r.out)), 1 << 20);
		spawn_result_free(&r);

		const char *argv2[] = { "/bin/true", NULL };
		o.argv = argv2;
		CHECK_INT("stdin: a child that never reads does not hang us", spawn_run(&o, &r), 0);
		spawn_result_free(&r);
		o = (struct spawn_opts)SPAWN_OPTS_INIT;
	}

	{
		const char *argv[] = { "/nonexistent/program", NULL };
		o.argv = argv;
		o.envp = env;
		CHECK_INT("exec failure is reported as -ENOENT", spawn_run(&o, &r), -ENOENT);
		spawn_result_free(&r);
		const char *argv2[] = { "/bin/true", NULL };
		o.argv = argv2;
		o.child_setup = setup_fails;
		CHECK_INT("child_setup failure is reported", spawn_run(&o, &r), -EPERM);
		spawn_result_free(&r);
		o = (struct spawn_opts)SPAWN_OPTS_INIT;
	}

	{
		const char *argv[] = { "sh", "-c", "echo found", NULL };
		o.argv = argv;
		o.envp = env;
		o.search_path = 1;
		CHECK_INT("PATH search with search_path", spawn_run(&o, &r), 0);
		CHECK_STR("PATH search ran the program", buf_cstr(&r.out), "found\n");
		spawn_result_free(&r);
		o = (struct spawn_opts)SPAWN_OPTS_INIT;
	}

	{
		int p[2];
		const char *argv[] = { "/bin/sh", "-c", "cat <&3", NULL };
		(void)!pipe(p);
		(void)!write(p[1], "via fd 3", 8);
		close(p[1]);
		o.argv = argv;
		o.envp = env;
		o.pass_fds = &p[0];
		o.n_pass_fds = 1;
		o.timeout_ms = 5000;
		CHECK_INT("pass an fd", spawn_run(&o, &r), 0);
		CHECK_STR("the child reads it as fd 3", buf_cstr(&r.out), "via fd 3");
		spawn_result_free(&r);
		close(p[0]);
		o = (struct spawn_opts)SPAWN_OPTS_INIT;
	}

	CHECK_INT("which finds sh", spawn_which("sh", "/nonexistent:/bin", &which), 0);
	CHECK_STR("which returns the full path", which, "/bin/sh");
	free(which);
	CHECK_INT("which reports a missing program", spawn_which("no-such-program-kb", "/bin", &which), -ENOENT);
	{
		/* Pass-through: the child writes to our own stdout, nothing is captured. */
		const char *argv[] = { "/bin/sh", "-c", "echo through; echo err-through >&2", NULL };
		char path[] = "/tmp/kb-spawn-XXXXXX", text[64] = "";
		int fd = mkstemp(path), saved = dup(1), saved2 = dup(2);
		ssize_t n;

		fflush(stdout);
		dup2(fd, 1);
		dup2(fd, 2);
		o = (struct spawn_opts)SPAWN_OPTS_INIT;
		o.argv = argv;
		o.envp = env;
		o.stdio_inherit = 1;
		o.timeout_ms = 5000;
		memset(&r, 0, sizeof(r));
		int rc = spawn_run(&o, &r);
		dup2(saved, 1);
		dup2(saved2, 2);
		close(saved);
		close(saved2);
		n = pread(fd, text, sizeof(text) - 1, 0);
		text[n > 0 ? n : 0] = '\0';
		close(fd);
		unlink(path);
		CHECK_INT("stdio_inherit runs", rc, 0);
		CHECK_STR("stdio_inherit writes to our fds", text, "through\nerr-through\n");
		CHECK_INT("stdio_inherit captures nothing", (long long)r.out.len + (long long)r.err.len, 0);
		spawn_result_free(&r);

		o.input = "x";
		o.input_len = 1;
		CHECK_INT("stdio_inherit with input is refused", spawn_run(&o, &r), -EINVAL);
		o = (struct spawn_opts)SPAWN_OPTS_INIT;
	}

	return t_done("test_spawn");
}
