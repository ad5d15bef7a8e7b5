#include "gpu/eval.h"
#include "gpu/flags.h"

#include <errno.h>
#include <ftw.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "common/clock.h"
#include "common/crypto.h"
#include "common/jsonx.h"
#include "gpu/compile.h"
#include "gpu/device.h"
#include "gpu/eval_build.h"
#include "gpu/eval_judge.h"
#include "gpu/sandbox.h"
#include "gpu/evalenv.h"
#include "gpu/harness.h"
#include "gpu/srccheck.h"


enum kind { KIND_C, KIND_CU, KIND_PY };

struct cand {
	const char *path;
	enum kind kind;
	const char *reject;		/* not evaluable as given: why */
	struct eval_build build;
	int built;
	json_t *res;
};


static int
rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	remove(path);
	return 0;
}

static void
rm_tree(const char *dir)
{
	nftw(dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}

static char *
self_exe(void)
{
	char path[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", path, sizeof(path) - 1);

	if (n <= 0)
		return NULL;
	path[n] = '\0';
	return strdup(path);
}

static const char *
capped(const char *s, char *dst, size_t len)
{
	size_t n = strlen(s);

	/* The tail of a compiler log holds the error that stopped it. */
	if (n < len)
		return s;
	snprintf(dst, len, "...%s", s + n - (len - 4));
	return dst;
}

size_t
eval_default_mem(int runners)
{
	long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
	size_t total = pages > 0 && page > 0 ? (size_t)pages * (size_t)page : EVAL_MEM_CAP;
	size_t m = total / 4 * 3 / (size_t)(runners > 0 ? runners : 1);

	return m < EVAL_MEM_FLOOR ? EVAL_MEM_FLOOR : m > EVAL_MEM_CAP ? EVAL_MEM_CAP : m;
}

/* The limits a worker ran under, as the result reports them. */
static size_t
mem_limit(const struct eval_opts *o)
{
	return o->mem_bytes ? o->mem_bytes : eval_default_mem(o->runners);
}

static json_t *
new_result(const struct cand *c, const char *backend, const char *status)
{
	return json_pack("{s:s, s:s, s:b, s:s, s:n, s:n, s:n, s:[], s:[], s:[], s:n, s:n}",
	    "candidate", c->path, "status", status, "correct", 0, "backend", backend,
	    "device", "timings_ms", "speedup", "checks", "flags", "errors",
	    "compile_s", "eval_s");
}

static void
add_error(json_t *res, const char *msg)
{
	char tmp[EVAL_ERROR_CHARS + 1];

	json_array_append_new(json_object_get(res, "errors"),
	    json_string(capped(msg, tmp, sizeof(tmp))));
}

static int
classify(struct cand *c, int cuda)
{
	const char *dot = strrchr(c->path, '.');

	if (access(c->path, R_OK) < 0)
		return -ENOENT;
	if (dot && !strcmp(dot, ".c"))
		c->kind = KIND_C;
	else if (dot && !strcmp(dot, ".cu"))
		c->kind = KIND_CU;
	else if (dot && !strcmp(dot, ".py"))
		c->kind = KIND_PY;
	else
		return -EINVAL;
	if (c->kind == KIND_C && cuda)
		c->reject = "a kernel.c candidate is for the cpu backend (--backend cpu)";
	else if (c->kind == KIND_CU && !cuda)
		c->reject = "a kernel.cu candidate needs the cuda backend";
	return 0;
}

/*
 * What identifies the device beyond what PyTorch tells the judge: part of
 * the baseline cache's key (a new driver may time eager differently).
 */
static json_t *
device_id(const struct gpu_device *g)
{
	char driver[64] = "";

	if (!g)
		return json_object();
	gpu_driver_version(driver, sizeof(driver));
	return json_pack("{s:s, s:s, s:s}", "name", g->name, "pci_bus_id", g->pci_bus_id,
	    "driver", driver);
}

/*
 * Whether a native candidate's source may bring device code the judge
 * cannot list from its shared object (kbh/judge_sanitize.py): a module
 * loaded from bytes or NVRTC, or symbols and driver entry points looked
 * up by name. Unreadable sources count as doing so.
 */
static int
loads_code(const char *path)
{
	json_t *checks = json_array(), *flags = json_array(), *v;
	size_t i;
	int yes = 0;

	if (!checks || !flags || srccheck_file(path, 0, checks, flags) < 0)
		yes = 1;
	json_array_foreach(flags, i, v)
		if (!strcmp(json_string_value(v), "runtime_code_loading") ||
		    !strcmp(json_string_value(v), "timer_tampering"))
			yes = 1;
	json_decref(checks);
	json_decref(flags);
	return yes;
}

static json_t *
build_request(const struct eval_opts *o, struct cand *cs, const char *backend,
    const char *workdir, const char *exe, int unsandboxed, const struct gpu_device *gpu,
    uint64_t seed)
{
	json_t *req, *list = json_array(), *env = json_object();
	const struct eval_env *e = &o->env;
	const char *ld = getenv("LD_LIBRARY_PATH");
	char *cache = NULL;

	for (size_t i = 0; i < o->n_candidates; i++) {
		struct cand *c = &cs[i];
		char abs[PATH_MAX];

		if (c->reject || (c->kind != KIND_PY && !c->built))
			continue;
		if (c->kind == KIND_PY)
			json_array_append_new(list, json_pack("{s:I, s:s, s:s}", "id", (json_int_t)i,
			    "kind", "kernelbench", "path", realpath(c->path, abs) ? abs : c->path));
		else {
			json_t *n = json_pack("{s:I, s:s, s:s}", "id", (json_int_t)i,
			    "kind", "native", "so", c->build.so_path);

			/* Kernels it may load or look up at run time are not in
			 * its shared object's list: racecheck all of them. */
			if (loads_code(c->path))
				json_object_set_new(n, "racecheck", json_string("all"));
			json_array_append_new(list, n);
		}
	}
	/*
	 * The CPU kernel's OpenMP team the same size as eager PyTorch's in the
	 * judge (gpu/harness.c passes OMP_NUM_THREADS to it): a fair race,
	 * and on a loaded host a team larger than the free cores waits in
	 * every parallel region.
	 */
	/* OMP_PROC_BIND, OMP_PLACES, MKL_NUM_THREADS likewise: the result's
	 * environment records them as set here (gpu/evalenv.h). */
	for (int k = 0; evalenv_thread_vars[k]; k++)
		if (getenv(evalenv_thread_vars[k]))
			json_object_set_new(env, evalenv_thread_vars[k],
			    json_string(getenv(evalenv_thread_vars[k])));
	/* A device bundle's libraries: the worker is this same binary. */
	if (ld)
		json_object_set_new(env, "LD_LIBRARY_PATH", json_string(ld));
	req = json_pack("{s:s, s:s, s:s, s:i, s:I, s:i, s:i, s:i, s:s, s:b, s:s, s:i, s:I, s:o, s:o}",
	    "verb", "evaluate", "problem", o->problem, "backend", backend, "device", o->device,
	    "seed", (json_int_t)seed, "trials", o->trials,
	    "timeout_s", o->timeout_s, "build_timeout_s", EVAL_BUILD_TIMEOUT_PY_S,
	    "kernelbot", exe, "sandbox", !unsandboxed, "workdir", workdir,
	    "sanitize", o->sanitize, "mem_bytes", (json_int_t)mem_limit(o),
	    "worker_env", env, "candidates", list);
	if (!req)
		return NULL;
	/* The scratch quota: sandbox-exec --disk (0: the sandbox's default). */
	if (o->disk_bytes)
		json_object_set_new(req, "disk_bytes", json_integer((json_int_t)o->disk_bytes));
	/* The operator's explicit choice (docs/sandbox.md): run where the host
	 * lacks a sandbox feature; each missing one is a failed check. */
	if (e->allow_degraded)
		json_object_set_new(req, "allow_degraded", json_true());
	/* Elements per output a spot check before the last compares (0: all). */
	if (e->spot_sample_set)
		json_object_set_new(req, "spot_sample", json_integer(e->spot_sample));
	/* The probability that the judge checks a timed run's outputs
	 * (docs/evaluation.md, What a check guarantees). */
	if (e->check_fraction_set)
		json_object_set_new(req, "check_fraction", json_real(e->check_fraction));
	/* A switch back to fixed timing inputs, in case the changes misbehave
	 * on a host; every result then says so in a failed check. */
	if (e->perturb_off)
		json_object_set_new(req, "perturb", json_false());
	if (o->profile)
		json_object_set(req, "profile", (json_t *)o->profile);
	if (o->rounds > 0)
		json_object_set_new(req, "rounds", json_integer(o->rounds));
	if (o->reps > 0)
		json_object_set_new(req, "reps", json_integer(o->reps));
	if (o->warmup >= 0)
		json_object_set_new(req, "warmup", json_integer(o->warmup));
	if (o->atol >= 0)
		json_object_set_new(req, "atol", json_real(o->atol));
	if (o->rtol >= 0)
		json_object_set_new(req, "rtol", json_real(o->rtol));
	if (o->class_name)
		json_object_set_new(req, "class", json_string(o->class_name));
	/* The entry points; a failed put only leaves a default the judge names. */
	(void)harness_entry_put(req, &o->entry, "_fn");
	/* No cache directory (no HOME): every evaluation measures its baselines. */
	if (compile_default_cache_dir(&cache) == 0) {
		char dir[PATH_MAX];
		snprintf(dir, sizeof(dir), "%s/baselines", cache);
		json_object_set_new(req, "baseline_cache", json_string(dir));
		free(cache);
	}
	json_object_set_new(req, "fresh_baselines", json_boolean(o->fresh_baselines));
	/* A noisy host (shared CPUs) may need a looser drift check. */
	if (e->baseline_drift > 0 && e->baseline_drift < 100)
		json_object_set_new(req, "baseline_drift_max", json_real(e->baseline_drift));
	json_object_set_new(req, "device_id", device_id(gpu));
	if (o->baselines) {
		json_t *b = json_array();
		if (strstr(o->baselines, "eager"))
			json_array_append_new(b, json_string("eager"));
		if (strstr(o->baselines, "compile"))
			json_array_append_new(b, json_string("compile"));
		json_object_set_new(req, "baselines", b);
	}
	return req;
}

/* Fold the judge's verdict on candidate c into its result object. */
static void
merge(json_t *res, const json_t *judged, const json_t *reply)
{
	static const char *const copy[] = { "status", "correct", "timings_ms", "speedup",
		"max_rel_error", "eval_s", "build_s", "baselines", "timing", "profile", "needs_review", NULL };
	json_t *v;
	size_t i;

	for (int k = 0; copy[k]; k++)
		if ((v = json_object_get(judged, copy[k])))
			json_object_set(res, copy[k], v);
	json_array_foreach(json_object_get(judged, "checks"), i, v)
		json_array_append(json_object_get(res, "checks"), v);
	json_array_foreach(json_object_get(judged, "flags"), i, v)
		json_array_append(json_object_get(res, "flags"), v);
	json_array_foreach(json_object_get(judged, "errors"), i, v)
		add_error(res, json_string_value(v) ? json_string_value(v) : "?");
	if ((v = json_object_get(reply, "device")))
		json_object_set(res, "device", v);
	json_object_set(json_object_get(res, "timing_breakdown_s"), "judge",
	    json_object_get(judged, "timing_breakdown_s"));
	json_object_set(json_object_get(res, "timing_breakdown_s"), "judge_shared",
	    json_object_get(reply, "timing_breakdown_s"));
	json_object_set_new(res, "seed", json_integer(jsonx_int(reply, "seed", 0)));
}

static void
dedup_flags(json_t *res)
{
	json_t *flags = json_object_get(res, "flags"), *out = json_array(), *v, *w;
	size_t i, j;

	json_array_foreach(flags, i, v) {
		int seen = 0;
		json_array_foreach(out, j, w)
			seen |= json_equal(v, w);
		if (!seen)
			json_array_append(out, v);
	}
	json_object_set_new(res, "flags", out);
}

/*
 * The device a result was measured on, for proposers' prompts, reports and
 * the archive: name, arch, torch and, on a GPU, its size and the bandwidth
 * the judge measured.
 */
static json_t *
device_info(const struct gpu_device *g, const char *arch, const json_t *reply)
{
	json_t *d = json_object(), *v;
	char drv[64];

	json_object_set_new(d, "name", json_string(g ? g->name : "cpu"));
	json_object_set_new(d, "arch", json_string(arch));
	if (g) {
		gpu_driver_version(drv, sizeof(drv));
		json_object_set_new(d, "compute_capability",
		    json_sprintf("%d.%d", g->cc_major, g->cc_minor));
		json_object_set_new(d, "sm_count", json_integer(g->sm_count));
		json_object_set_new(d, "l2_bytes", json_integer(g->l2_bytes));
		json_object_set_new(d, "shared_memory_bytes", json_integer(g->smem_optin_bytes));
		json_object_set_new(d, "mem_bytes", json_integer((json_int_t)g->mem_bytes));
		json_object_set_new(d, "driver", json_string(drv));
	}
	if ((v = json_object_get(reply, "bandwidth_gbs")) && json_is_number(v))
		json_object_set(d, "bandwidth_gbs", v);
	if ((v = json_object_get(reply, "torch")))
		json_object_set(d, "torch", v);
	return d;
}

/*
 * One batch's state from prepare to merge: eval_run's steps below each take
 * it, and batch_free() releases it whatever step stopped.
 */
struct batch {
	const struct eval_opts *o;
	const char *backend;
	int cuda, unsandboxed;
	struct gpu_device *gpus;
	int ngpu;
	char arch[32];
	struct cand *cs;
	char workdir[PATH_MAX];
	char *exe;
	size_t nbuild;
	struct eval_judge judge;
	uint64_t seed;
	json_t *req, *reply, *results;
	double t0, t_prepare, t_harness;
};

/* The GPU the batch runs on, or NULL for the CPU backend. */
static const struct gpu_device *
batch_gpu(const struct batch *b)
{
	return b->cuda ? &b->gpus[b->o->device] : NULL;
}

/*
 * Prepare: check the options, classify every candidate, find the device,
 * make the working directory.
 */
static int
batch_prepare(struct batch *b, char *err, size_t errlen)
{
	const struct eval_opts *o = b->o;
	const char *tmp = o->env.tmp_dir;
	int error;

	b->unsandboxed = o->env.unsandboxed;
	if (!o->n_candidates || o->n_candidates > EVAL_MAX_CANDIDATES) {
		snprintf(err, errlen, "between 1 and %d candidates", EVAL_MAX_CANDIDATES);
		return -EINVAL;
	}
	if (access(o->problem, R_OK) < 0) {
		snprintf(err, errlen, "%s: %s", o->problem, strerror(errno));
		return -EINVAL;
	}
	if ((error = crypto_init()) < 0) {
		snprintf(err, errlen, "no random seed source");
		return error;
	}
	gpu_list(&b->gpus, &b->ngpu, NULL, 0);
	b->backend = o->backend ? o->backend : b->ngpu > 0 ? "cuda" : "cpu";
	b->cuda = !strcmp(b->backend, "cuda");
	if (b->cuda) {
		if (o->device >= b->ngpu) {
			snprintf(err, errlen, "backend cuda: no GPU %d on this host (%d found)",
			    o->device, b->ngpu);
			return -ENODEV;
		}
		snprintf(b->arch, sizeof(b->arch), "sm_%d%d", b->gpus[o->device].cc_major,
		    b->gpus[o->device].cc_minor);
	}
	if (!o->have_sandbox_exec && !b->unsandboxed) {
		snprintf(err, errlen, "this kernelbot has no sandbox (no `sandbox-exec` command); "
		    "refusing to run candidates unconfined. For a developer run, set "
		    "KERNELBOT_EVAL_UNSANDBOXED=1 (reported as a failed sandbox check)");
		return -ENOSYS;
	}
	if (!(b->cs = calloc(o->n_candidates, sizeof(*b->cs))) || !(b->results = json_array()))
		return -ENOMEM;
	for (size_t i = 0; i < o->n_candidates; i++) {
		b->cs[i].path = o->candidates[i];
		if ((error = classify(&b->cs[i], b->cuda)) < 0) {
			snprintf(err, errlen, "%s: %s", b->cs[i].path, error == -ENOENT ?
			    strerror(errno) :
			    "not a candidate (kernel.c, kernel.cu, or a KernelBench .py)");
			return -EINVAL;
		}
	}
	snprintf(b->workdir, sizeof(b->workdir), "%s/kernelbot-eval-XXXXXX",
	    tmp && *tmp ? tmp : "/tmp");
	if (!mkdtemp(b->workdir)) {
		error = -errno;
		snprintf(err, errlen, "mkdtemp %s: %s", b->workdir, strerror(errno));
		b->workdir[0] = '\0';
		return error;
	}
	if (!(b->exe = self_exe())) {
		snprintf(err, errlen, "cannot find this executable");
		return -ENOENT;
	}
	return 0;
}

/* Build: compile every native candidate at once. */
static int
batch_build(struct batch *b, char *err, size_t errlen)
{
	const struct eval_opts *o = b->o;
	struct eval_build *bs = calloc(o->n_candidates, sizeof(*bs));
	size_t *idx = calloc(o->n_candidates, sizeof(*idx));
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);
	int error;

	if (!bs || !idx) {
		free(bs);
		free(idx);
		return -ENOMEM;
	}
	for (size_t i = 0; i < o->n_candidates; i++)
		if (!b->cs[i].reject && b->cs[i].kind != KIND_PY) {
			bs[b->nbuild].source = b->cs[i].path;
			bs[b->nbuild].cuda = b->cs[i].kind == KIND_CU;
			bs[b->nbuild].timeout_s = o->build_timeout_s;
			idx[b->nbuild++] = i;
		}
	error = eval_build_all(bs, b->nbuild, b->cuda ? b->arch : NULL, b->workdir,
	    o->jobs > 0 ? o->jobs : (int)(cpus > 0 ? cpus : 1), b->unsandboxed, err, errlen);
	for (size_t k = 0; k < b->nbuild; k++) {
		b->cs[idx[k]].build = bs[k];
		b->cs[idx[k]].built = error == 0 && bs[k].status == 0 && bs[k].so_path;
	}
	free(bs);
	free(idx);
	return error < 0 ? error : 0;
}

/*
 * Each candidate's result before the judge: its limits, and its rejection
 * or its compile's outcome.
 */
static void
batch_start_results(struct batch *b)
{
	const struct eval_opts *o = b->o;

	for (size_t i = 0; i < o->n_candidates; i++) {
		struct cand *c = &b->cs[i];
		json_t *bd;

		c->res = new_result(c, b->backend, "rejected");
		/* What the candidate ran under (docs/evaluation.md "limits"). */
		json_object_set_new(c->res, "limits", json_pack("{s:I, s:I, s:i}",
		    "mem_bytes", (json_int_t)mem_limit(o), "disk_bytes", (json_int_t)(o->disk_bytes ?
		    o->disk_bytes : c->kind == KIND_PY ? SANDBOX_DEFAULT_DISK_COMPILER :
		    SANDBOX_DEFAULT_DISK_CANDIDATE),
		    "compile_timeout_s", o->build_timeout_s > 0 ? o->build_timeout_s :
		    EVAL_BUILD_TIMEOUT_S));
		bd = json_object();
		json_object_set_new(c->res, "timing_breakdown_s", bd);
		if (c->reject) {
			add_error(c->res, c->reject);
		} else if (c->kind != KIND_PY) {
			json_object_set_new(c->res, "compile_s", json_real(c->build.seconds));
			json_object_set_new(bd, "compile", json_real(c->build.seconds));
			json_object_set_new(c->res, "compile_cached", json_boolean(c->build.cached));
			json_array_append_new(json_object_get(c->res, "checks"), json_pack(
			    "{s:s, s:b, s:s}", "name", "compile", "passed", c->built,
			    "detail", c->built ? (!b->unsandboxed ? "sandboxed compiler" :
			    "UNSANDBOXED compiler (developer mode)") :
			    "the compiler failed"));
			if (!c->built) {
				json_object_set_new(c->res, "status", json_string("compile_error"));
				add_error(c->res, c->build.log && *c->build.log ? c->build.log :
				    "the compiler failed without output");
			}
		}
	}
}

/*
 * Judge: the request with a seed (--seed reproduces a result; otherwise a
 * fresh one, never reused), sent when any candidate is left to run.
 */
static int
batch_judge(struct batch *b, char *err, size_t errlen)
{
	const struct eval_opts *o = b->o;
	int error;

	b->seed = o->seed_given ? o->seed & EVAL_SEED_MASK : crypto_random_seed();
	if (!(b->req = build_request(o, b->cs, b->backend, b->workdir, b->exe, b->unsandboxed,
	    batch_gpu(b), b->seed)))
		return -ENOMEM;
	if (json_array_size(json_object_get(b->req, "candidates")) > 0) {
		b->t_prepare = clock_mono_s() - b->t0;
		b->t_harness = clock_mono_s();
		if ((error = eval_judge_call(&b->judge, b->req, &b->reply, err, errlen)) < 0)
			return error;
		b->t_harness = clock_mono_s() - b->t_harness;
		if (!jsonx_bool(b->reply, "ok", 0)) {
			snprintf(err, errlen, "%s: %s", o->problem,
			    jsonx_str(b->reply, "error.message", "the judge refused the problem"));
			return !strcmp(jsonx_str(b->reply, "error.stage", ""), "load") ? -EINVAL :
			    -EPROTO;
		}
	}
	/* What became of the judge server, for the GPU runs' breakdown. */
	if (b->reply && json_is_object(json_object_get(b->reply, "timing_breakdown_s"))) {
		json_t *bd = json_object_get(b->reply, "timing_breakdown_s");

		eval_judge_note(&b->judge, bd);
	}
	return 0;
}

/*
 * Merge: the judge's reply, the static checks, the environment and the
 * provenance into each candidate's result, in order, into b->results.
 */
static int
batch_merge(struct batch *b)
{
	const struct eval_opts *o = b->o;
	const char *arch = b->cuda ? b->arch : NULL;
	int fp32 = jsonx_bool(json_object_get(b->reply, "problem"), "float32_only", 0);
	struct evalenv_in ei = { o, b->backend, arch, batch_gpu(b), b->reply, b->seed,
		o->seed_given, b->nbuild > 0 };
	json_t *environment = evalenv_json(&ei);

	if (!environment)
		return -ENOMEM;
	for (size_t i = 0; i < o->n_candidates; i++) {
		struct cand *c = &b->cs[i];
		json_t *v;
		size_t k;

		json_array_foreach(json_object_get(b->reply, "candidates"), k, v)
			if (jsonx_int(v, "id", -1) == (long long)i)
				merge(c->res, v, b->reply);
		srccheck_file(c->path, fp32 || c->kind == KIND_PY ? fp32 : 0,
		    json_object_get(c->res, "checks"), json_object_get(c->res, "flags"));
		dedup_flags(c->res);
		/*
		 * The review flags, the static check's included: a correct result
		 * whose source reads clocks, walks stack frames, makes raw system
		 * calls or hooks the harness (timer_tampering) asks for review like
		 * the judge's own plausibility flags: the worker's clock is in the
		 * candidate's address space (docs/evaluation.md).
		 */
		eval_flags_review(c->res);
		/* The whole command's steps, shared by the batch. */
		json_object_set_new(json_object_get(c->res, "timing_breakdown_s"), "command",
		    json_pack("{s:f, s:f}", "prepare", b->t_prepare, "harness", b->t_harness));
		json_object_set_new(c->res, "wall_s", json_real(clock_mono_s() - b->t0));
		/* what the kernel was built for: reports and the archive key on it */
		json_object_set_new(c->res, "arch", json_string(b->cuda ? b->arch : "cpu"));
		json_object_set_new(c->res, "device_info", device_info(batch_gpu(b),
		    b->cuda ? b->arch : "cpu", b->reply));
		/* The judge's own account of the seed; the request's for a
		 * candidate it never saw (rejected, not built). */
		if (!json_object_get(c->res, "seed"))
			json_object_set_new(c->res, "seed", json_integer((json_int_t)b->seed));
		json_object_set_new(c->res, "environment", json_deep_copy(environment));
		json_array_append(b->results, c->res);
	}
	json_decref(environment);
	return 0;
}

static void
batch_free(struct batch *b)
{
	if (b->cs)
		for (size_t i = 0; i < b->o->n_candidates; i++) {
			eval_build_free(&b->cs[i].build);
			json_decref(b->cs[i].res);
		}
	free(b->cs);
	free(b->gpus);
	free(b->exe);
	eval_judge_free(&b->judge);
	json_decref(b->req);
	json_decref(b->reply);
	json_decref(b->results);
	if (b->workdir[0] && !b->o->env.keep_workdir)
		rm_tree(b->workdir);
}

int
eval_run(const struct eval_opts *o, json_t **out, char *err, size_t errlen)
{
	struct batch b = { .o = o, .t0 = clock_mono_s() };
	int error;

	if ((error = batch_prepare(&b, err, errlen)) == 0 &&
	    (error = eval_judge_choose(&b.judge, o, b.backend, b.workdir, err, errlen)) == 0 &&
	    (error = batch_build(&b, err, errlen)) == 0) {
		batch_start_results(&b);
		if ((error = batch_judge(&b, err, errlen)) == 0 &&
		    (error = batch_merge(&b)) == 0) {
			*out = b.results;
			b.results = NULL;
		}
	}
	batch_free(&b);
	return error;
}
