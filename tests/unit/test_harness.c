/* harness: the failed-check summary behind the sandboxed call's errors, and
 * the sandboxed call's refusals, which start no Python (the calls that do
 * run the harness are tests/e2e/t0101 and t0100). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

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
	ho.stage = "equivalence check";
	rc = harness_call_sandboxed(req, 5000, &ho, &reply, err, sizeof(err));
	CHECK_INT("a host without seccomp: refused", rc, -ENOTSUP);
	CHECK("the refusal names the stage, the feature and the way out",
	    strstr(err, "equivalence check: this host cannot sandbox") &&
	    strstr(err, "seccomp (") && strstr(err, "KERNELBOT_EVAL_UNSANDBOXED=1"));
	CHECK("its scratch folder is gone", dir_empty(tmp));
	unsetenv("KERNELBOT_SANDBOX_PRETEND_MISSING");

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

int
main(void)
{
	test_failed_checks();
	test_refusals();
	return t_done("harness");
}
