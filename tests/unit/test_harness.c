/* harness: the failed-check summary behind the sandboxed call's errors, the
 * sandboxed call's refusals (which start no Python), and the equivalence
 * check's call as stage 1 makes it, with the attack fixtures of
 * tests/fixtures/untrusted/ as the rewrite (kernelbot trace's are
 * tests/e2e/t0101). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli/cli.h"
#include "common/buf.h"
#include "common/fsx.h"
#include "gpu/harness.h"
#include "tests/unit/t.h"

static void
test_failed_checks(void)
{
	json_t *ck = json_pack("[{s:s, s:b, s:s}, {s:s, s:b, s:s}, {s:s, s:b}, s, {s:s, s:b, s:s}]",
	    "name", "user_namespace", "passed", 1, "detail", "own uid",
	    "name", "network_namespace", "passed", 0, "detail", "not available",
	    "name", "seccomp", "passed", 0,
	    "not an object",
	    "name", "deadline", "passed", 1, "detail", "600 s");
	json_t *none = json_pack("[{s:s, s:b, s:s}]", "name", "proc", "passed", 1, "detail", "fresh");
	char out[256], small[12];

	CHECK_INT("two failed", harness_failed_checks(ck, out, sizeof(out)), 2);
	CHECK_STR("each named with its detail, passed ones left out", out,
	    "network_namespace (not available); seccomp (no detail)");
	CHECK_INT("a short buffer still counts both", harness_failed_checks(ck, small, sizeof(small)), 2);
	CHECK_STR("and is cut, terminated", small, "network_nam");
	CHECK_INT("nothing failed", harness_failed_checks(none, out, sizeof(out)), 0);
	CHECK_STR("says nothing", out, "");
	CHECK_INT("no checks at all (a set-up that failed before any)", harness_failed_checks(NULL, out,
	    sizeof(out)), 0);
	CHECK_STR("empty too", out, "");
	json_decref(ck);
	json_decref(none);
}

static int
dir_empty(const char *dir)
{
	char cmd[4200];

	snprintf(cmd, sizeof(cmd), "test -z \"$(ls -A '%s')\"", dir);
	return system(cmd) == 0;
}

/* Refusals: no interpreter starts, no scratch folder stays behind. */
static void
test_refusals(void)
{
	char tmp[] = "/tmp/test_harness.XXXXXX", secret[4200], err[2048];
	const char *python, *script;
	struct harness_opts ho = HARNESS_OPTS_INIT;
	const char *ro[2] = { NULL, NULL };
	json_t *req = json_pack("{s:s, s:s}", "verb", "trace", "problem", "/nonexistent.py");
	json_t *reply = NULL;
	int fd, rc;

	if (!getenv("KERNELBOT_HARNESS"))	/* run from the source tree, as tests/run.sh does */
		setenv("KERNELBOT_HARNESS", "gpu/harness/harness.py", 1);
	cli_where_load();
	if (harness_locate(&python, &script, err, sizeof(err)) < 0) {
		printf("skip: %s\n", err);
		json_decref(req);
		return;
	}
	if (!CHECK("mkdtemp", mkdtemp(tmp))) {
		json_decref(req);
		return;
	}
	ho.tmp_dir = "/nonexistent/kernelbot-test";
	rc = harness_call_sandboxed(req, 5000, &ho, &reply, err, sizeof(err));
	CHECK("no scratch folder: an error", rc < 0 && !reply);
	CHECK("it names the stage and the folder",
	    strstr(err, "trace: cannot make a scratch folder in /nonexistent/kernelbot-test") != NULL);

	ho.tmp_dir = tmp;
	setenv("KERNELBOT_SANDBOX_PRETEND_MISSING", "seccomp", 1);
	unsetenv("KERNELBOT_EVAL_UNSANDBOXED");
	unsetenv("KERNELBOT_SANDBOX_ALLOW_DEGRADED");
	cli_where_load();
	ho.stage = "equivalence check";
	rc = harness_call_sandboxed(req, 5000, &ho, &reply, err, sizeof(err));
	CHECK_INT("a host without seccomp: refused", rc, -ENOTSUP);
	CHECK("the refusal names the stage, the feature and the way out",
	    strstr(err, "equivalence check: this host cannot sandbox") &&
	    strstr(err, "seccomp (") && strstr(err, "KERNELBOT_EVAL_UNSANDBOXED=1"));
	CHECK("its scratch folder is gone", dir_empty(tmp));
	unsetenv("KERNELBOT_SANDBOX_PRETEND_MISSING");
	cli_where_load();

	/* Under root the sandbox is uid 65534: a 0600 file cannot be shown. */
	snprintf(secret, sizeof(secret), "%s/private.py", tmp);
	if (geteuid() == 0 && (fd = open(secret, O_CREAT | O_WRONLY, 0600)) >= 0) {
		close(fd);
		ro[0] = secret;
		ho.ro_paths = ro;
		ho.stage = NULL;
		rc = harness_call_sandboxed(req, 5000, &ho, &reply, err, sizeof(err));
		CHECK_INT("a file the sandbox's uid cannot read: -EACCES", rc, -EACCES);
		CHECK("the error names the verb and the file", !strncmp(err, "trace: ", 7) &&
		    strstr(err, secret) && strstr(err, "not readable"));
		unlink(secret);
		CHECK("no scratch folder stays", dir_empty(tmp));
	}
	json_decref(reply);
	json_decref(req);
	fsx_rmtree(tmp);
}

/* A fixture with each "@KEY@" of subst (KEY, VALUE pairs) replaced, written 0644 to out. */
static int
instantiate(const char *fixture, const char *const *subst, const char *out)
{
	struct buf src = BUF_INIT(1u << 20), dst = BUF_INIT(1u << 20);
	const char *p;
	int error;

	if ((error = buf_read_file(&src, fixture)) < 0)
		goto done;
	for (p = buf_cstr(&src); *p;) {
		int hit = 0;

		for (const char *const *s = subst; s[0] && !hit; s += 2) {
			size_t n = strlen(s[0]);
			if (p[0] == '@' && !strncmp(p + 1, s[0], n) && p[1 + n] == '@') {
				buf_printf(&dst, "%s", s[1]);
				p += n + 2;
				hit = 1;
			}
		}
		if (!hit)
			buf_printf(&dst, "%c", *p++);
	}
	if ((error = fsx_write_file(out, dst.data, dst.len)) == 0)
		error = chmod(out, 0644) < 0 ? -errno : 0;
done:
	buf_free(&src);
	buf_free(&dst);
	return error;
}

static int
no_scratch_left(const char *dir)
{
	char cmd[4200];

	snprintf(cmd, sizeof(cmd), "test -z \"$(ls -A '%s' | grep '^kernelbot-harness-')\"", dir);
	return system(cmd) == 0;
}

/*
 * The equivalence check, as stage 1 calls it, on a rewrite that attacks at
 * import: its copy of a world-readable secret fails, its spin ends at the
 * deadline with everything it started, and each call's scratch folder goes.
 */
static void
test_equivalent_untrusted(void)
{
	char tmp[] = "/tmp/test_harness_eq.XXXXXX", secret[128], drop[128], leak[256],
	    mod[128], loop[128], mark[32], err[2048], cmd[1024];
	const char *python, *script;
	struct harness_opts ho = HARNESS_OPTS_INIT;
	const char *ro[3] = { NULL, NULL, NULL };
	json_t *req, *reply = NULL;
	int rc, left = 1;

	if (harness_locate(&python, &script, err, sizeof(err)) < 0 ||
	    access("tests/fixtures/untrusted/loop_at_import.py", R_OK) < 0) {
		printf("skip: no harness or no fixtures (run from the source tree)\n");
		return;
	}
	if (!CHECK("mkdtemp", mkdtemp(tmp)))
		return;
	/* file modes are no defense: under root the sandbox is nobody */
	chmod(tmp, 0755);
	snprintf(secret, sizeof(secret), "%s/secret", tmp);
	snprintf(drop, sizeof(drop), "%s/drop", tmp);
	snprintf(leak, sizeof(leak), "%s/leak", drop);
	snprintf(mod, sizeof(mod), "%s/rewrite_leak.py", tmp);
	snprintf(loop, sizeof(loop), "%s/rewrite_loop.py", tmp);
	snprintf(mark, sizeof(mark), "kbuh%d", (int)getpid());
	mkdir(drop, 0777);
	chmod(drop, 01777);
	fsx_write_file(secret, "whsec-test-harness\n", 19);
	chmod(secret, 0644);
	{
		const char *s1[] = { "SECRET", secret, "LEAK", leak, NULL, NULL };
		const char *s2[] = { "MARK", mark, NULL, NULL };
		CHECK_INT("leak fixture", instantiate("tests/fixtures/untrusted/leak_at_import.py", s1, mod), 0);
		CHECK_INT("loop fixture", instantiate("tests/fixtures/untrusted/loop_at_import.py", s2, loop), 0);
	}

	ho.tmp_dir = tmp;
	ho.stage = "equivalence check";
	ho.ro_paths = ro;
	ro[0] = ro[1] = mod;	/* the rewrite against itself: equivalent */
	req = json_pack("{s:s, s:s, s:s, s:i}", "verb", "equivalent", "problem", mod,
	    "rewrite", mod, "seeds", 1);
	rc = harness_call_sandboxed(req, 300000, &ho, &reply, err, sizeof(err));
	CHECK_INT("a rewrite that copies a secret at import: the check runs", rc, 0);
	CHECK("and answers cleanly", rc == 0 && json_is_true(json_object_get(reply, "ok")) &&
	    json_is_true(json_object_get(reply, "equivalent")));
	if (rc < 0)
		printf("     %s\n", err);
	snprintf(cmd, sizeof(cmd), "test -s '%s' || test -s '%s.sh'", leak, leak);
	CHECK("nothing copied", system(cmd) != 0);
	CHECK("its scratch folder is gone", no_scratch_left(tmp));
	json_decref(req);
	json_decref(reply);
	reply = NULL;

	ro[0] = mod;
	ro[1] = loop;
	req = json_pack("{s:s, s:s, s:s, s:i}", "verb", "equivalent", "problem", mod,
	    "rewrite", loop, "seeds", 1);
	rc = harness_call_sandboxed(req, 5000, &ho, &reply, err, sizeof(err));
	CHECK_INT("a rewrite that spins at import: the deadline", rc, -ETIMEDOUT);
	CHECK("the error names the stage and the deadline",
	    !strncmp(err, "equivalence check: timed out after 5 s", 38));
	/* The kill is synchronous; the kernel may take a moment to tear the namespace down. */
	/* "[k]buh..." matches the mark but not this shell's own command line */
	snprintf(cmd, sizeof(cmd), "pgrep -x '[%c]%s' >/dev/null || pgrep -f '[%c]%s' >/dev/null",
	    mark[0], mark + 1, mark[0], mark + 1);
	for (int i = 0; i < 10 && (left = system(cmd) == 0); i++)
		sleep(1);
	CHECK("nothing it started is left (the spinning harness, the helper in its own session)", !left);
	if (left) {
		snprintf(cmd, sizeof(cmd), "pkill -9 -x '[%c]%s'; pkill -9 -f '[%c]%s'", mark[0],
		    mark + 1, mark[0], mark + 1);
		if (system(cmd) < 0)
			perror("pkill");
	}
	CHECK("its scratch folder is gone", no_scratch_left(tmp));
	json_decref(req);
	json_decref(reply);
	fsx_rmtree(tmp);
}

int
main(void)
{
	cli_where_load();	/* the settings tests/run.sh gives in the environment */
	test_failed_checks();
	test_refusals();
	test_equivalent_untrusted();
	return t_done("harness");
}
