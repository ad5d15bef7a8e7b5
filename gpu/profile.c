/*
 * profile: finding ncu and running one profiling evaluation (the CSV
 * parser and the paragraph are in profile_csv.c).
 */
#include "gpu/profile.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/jsonx.h"
#include "common/spawn.h"
#include "common/where.h"
#include "gpu/eval.h"

#define NCU_FALLBACK "/usr/local/cuda/bin/ncu"
#define NCU_VERSION_TIMEOUT_MS 30000

int
profile_ncu_locate(char **path, char *why, size_t whylen)
{
	const char *env = where()->ncu;
	const char *argv[3] = { NULL, "--version", NULL };
	const char *envp[] = { "PATH=/usr/local/cuda/bin:/usr/bin:/bin", "LANG=C.UTF-8", NULL };
	struct spawn_opts so = { 0 };
	struct spawn_result r = { 0 };
	char *p = NULL;
	int error;

	if (env && *env) {
		if (!(p = strdup(env)))
			return -ENOMEM;
	} else if (spawn_which("ncu", NULL, &p) < 0) {
		if (access(NCU_FALLBACK, X_OK) < 0) {
			snprintf(why, whylen, "ncu (Nsight Compute) is not on PATH nor at %s "
			    "(set KERNELBOT_NCU)", NCU_FALLBACK);
			return -ENOENT;
		}
		if (!(p = strdup(NCU_FALLBACK)))
			return -ENOMEM;
	}
	argv[0] = p;
	so.argv = argv;
	so.envp = envp;
	so.timeout_ms = NCU_VERSION_TIMEOUT_MS;
	if ((error = spawn_run(&so, &r)) < 0 || r.status != 0) {
		snprintf(why, whylen, "%s --version %s%s", p, error < 0 ? "could not run: " :
		    r.timed_out ? "timed out" : "failed", error < 0 ? strerror(-error) : "");
		spawn_result_free(&r);
		free(p);
		return -ENOENT;
	}
	spawn_result_free(&r);
	*path = p;
	return 0;
}

void
profile_result_free(struct profile_result *res)
{
	if (!res)
		return;
	free(res->summary);
	res->summary = NULL;
	profile_report_free(&res->report);
	json_decref(res->command);
	json_decref(res->eval);
	res->command = res->eval = NULL;
}

static void __attribute__((format(printf, 3, 4)))
unavailable(struct profile_result *res, const char *status, const char *fmt, ...)
{
	va_list ap;

	res->status = status;
	va_start(ap, fmt);
	vsnprintf(res->reason, sizeof(res->reason), fmt, ap);
	va_end(ap);
}

int
profile_run(const struct profile_opts *o, struct profile_result *res,
    char *err, size_t errlen)
{
	struct eval_opts eo = EVAL_OPTS_INIT;
	const char *cands[1];
	json_t *req = NULL, *out = NULL, *args = NULL;
	const json_t *r, *p;
	char *ncu = NULL, why[512] = "", perr[512];
	const char *csv;
	int timeout = o->timeout_s > 0 ? o->timeout_s : PROFILE_DEFAULT_TIMEOUT_S;
	int error;

	memset(res, 0, sizeof(*res));
	res->status = "failed";
	if (!o->problem || !o->kernel) {
		snprintf(err, errlen, "a problem and a kernel are required");
		return -EINVAL;
	}
	if (o->ncu) {
		if (!(ncu = strdup(o->ncu)))
			return -ENOMEM;
	} else if ((error = profile_ncu_locate(&ncu, why, sizeof(why))) < 0) {
		if (error != -ENOENT)
			return error;
		unavailable(res, "unavailable", "%s", why);
		return 0;
	}
	if (!(args = profile_ncu_args()) ||
	    !(req = json_pack("{s:s, s:O, s:i}", "tool", ncu, "args", args, "timeout_s", timeout))) {
		error = -ENOMEM;
		goto out;
	}
	cands[0] = o->kernel;
	eo.problem = o->problem;
	eo.candidates = cands;
	eo.n_candidates = 1;
	eo.backend = o->backend;
	eo.device = o->device;
	eo.class_name = o->class_name;
	eo.have_sandbox_exec = o->have_sandbox_exec;
	eo.env = o->env;
	/* Correctness once, the least timing: the profile is what is wanted. */
	eo.trials = 1;
	eo.rounds = 1;
	eo.reps = 1;
	eo.warmup = 0;
	eo.baselines = "none";
	eo.profile = req;
	if ((error = eval_run(&eo, &out, err, errlen)) < 0)
		goto out;
	r = json_array_get(out, 0);
	res->eval = json_incref((json_t *)r);
	res->bw_gbs = o->bw_gbs > 0 ? o->bw_gbs : jsonx_num(r, "device_info.bandwidth_gbs", 0);
	if (!jsonx_bool(r, "correct", 0)) {
		unavailable(res, "failed", "the kernel is not correct (%s): only correct kernels "
		    "are profiled", jsonx_str(r, "status", "?"));
		goto out;
	}
	p = json_object_get(r, "profile");
	if (!json_is_object(p)) {
		unavailable(res, "failed", "%s", "the evaluator returned no profile (an older harness?)");
		goto out;
	}
	res->command = json_incref(json_object_get(p, "command"));
	csv = jsonx_str(p, "csv", NULL);
	if (!jsonx_bool(p, "ok", 0) || !csv) {
		unavailable(res, "unavailable", "%s", jsonx_str(p, "error", "ncu wrote no report"));
		goto out;
	}
	if (profile_parse_csv(csv, strlen(csv), &res->report, perr, sizeof(perr)) < 0) {
		unavailable(res, "unavailable", "ncu's report could not be read: %s", perr);
		goto out;
	}
	if (!(res->summary = profile_summary(&res->report, res->bw_gbs))) {
		error = -ENOMEM;
		goto out;
	}
	res->status = "ok";
out:
	json_decref(out);
	json_decref(req);
	json_decref(args);
	free(ncu);
	return error;
}
