/*
 * test_evolve: the generation loop with a scripted proposer and an
 * injected evaluator (the real one runs in tests/e2e/t5000 and t5001).
 * A fake candidate's source says what the fake evaluator answers:
 * "ms=N" is a correct kernel of N ms, "wrong" a mismatch.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli/cli.h"
#include "common/buf.h"
#include "common/crypto.h"
#include "common/jsonx.h"
#include "gpu/eval.h"
#include "pipeline/compiler/schedule.h"
#include "pipeline/evolve/evolve.h"
#include "t.h"

/* ------------------------------------------------------------ fake evaluator */

static int eval_calls, eval_candidates, eval_fail;
static int last_trials;

static int
fake_eval(const struct eval_opts *o, json_t **out, char *err, size_t errlen)
{
	json_t *arr = json_array();

	eval_calls++;
	last_trials = o->trials;
	if (eval_fail) {
		json_decref(arr);
		snprintf(err, errlen, "the judge crashed");
		return -EPROTO;
	}
	for (size_t i = 0; i < o->n_candidates; i++) {
		struct buf b = BUF_INIT(1 << 20);
		double ms = -1;
		json_t *r;

		buf_read_file(&b, o->candidates[i]);
		if (b.data && sscanf(b.data, "ms=%lf", &ms) == 1)
			r = json_pack("{s:s, s:s, s:b, s:s, s:{s:{s:f}, s:{s:f}}, s:{s:f, s:[f, f]}, s:f, s:[], s:[]}",
			    "candidate", o->candidates[i], "status", "correct", "correct", 1,
			    "device", "fake", "timings_ms", "candidate", "median", ms, "eager", "median", 1000.0,
			    "speedup", "eager", 1000.0 / ms, "eager_ci95", 1000.0 / ms * 0.9, 1000.0 / ms * 1.1,
			    "eval_s", 0.5, "errors", "flags");
		else
			r = json_pack("{s:s, s:s, s:b, s:s, s:f, s:[s]}", "candidate", o->candidates[i],
			    "status", "mismatch", "correct", 0, "device", "fake", "eval_s", 0.5,
			    "errors", "out0: 3 of 16 elements differ");
		/* "ms=V flag=NAME": a correct result the evaluator flagged */
		if (b.data && strstr(b.data, "flag=") && json_object_get(r, "flags"))
			json_array_append_new(json_object_get(r, "flags"),
			    json_string(strstr(b.data, "flag=") + 5));
		json_array_append_new(arr, r);
		buf_free(&b);
		if (o->trials != EVOLVE_DEFAULT_CONFIRM_TRIALS)
			eval_candidates++;
	}
	*out = arr;
	return 0;
}

/* ------------------------------------------------------------ scripted proposer */

enum mode { M_IMPROVING, M_FLAT, M_DUPS, M_NONE, M_UNSUPPORTED, M_WRONG, M_TOKENS, M_EMPTY,
	M_FLAGGED, M_ALL_FLAGGED };

struct fake {
	enum mode mode;
	int calls, next;
	int pop_sorted;		/* 0 once a population was seen out of order */
	int parents_ok;		/* 0 once a parent id was not in the history */
	int pending;		/* proposals it still means to make (each call's less) */
};

static int fake_pending_start;	/* run() starts a fake with this many pending */

static size_t
fake_pending(struct proposer *p)
{
	return (size_t)((struct fake *)p->state)->pending;
}

static int
fake_propose(struct proposer *p, const struct evolve_ctx *ctx, struct evolve_candidate *out,
    int max, char *err, size_t errlen)
{
	struct fake *f = p->state;
	int n = 0;

	f->calls++;
	for (size_t i = 1; i < ctx->n_population; i++)
		if (ctx->population[i - 1]->ms > ctx->population[i]->ms)
			f->pop_sorted = 0;
	for (size_t i = 0; i < ctx->n_history; i++)
		if (ctx->history[i].id != (int)i)
			f->parents_ok = 0;
	switch (f->mode) {
	case M_NONE:
		return 0;
	case M_UNSUPPORTED:
		snprintf(err, errlen, "unsupported: frobnicate (no kernel for it)");
		return -ENOTSUP;
	case M_TOKENS:
		ctx->spent->tokens += 100;
		ctx->spent->dollars += 0.2;
		break;
	default:
		break;
	}
	f->pending = f->pending > max ? f->pending - max : 0;
	for (; n < max; n++) {
		char src[64];
		double v = 100 * pow(0.8, f->next++);	/* 20% better each time */

		if (f->mode == M_FLAT)
			v = ctx->spent->generations == 0 ? 500 - n : 900 + f->next;
		if (f->mode == M_DUPS)
			v = n % 2 ? 1700 : 1600;	/* two sources, again and again */
		if (f->mode == M_WRONG)
			snprintf(src, sizeof(src), "wrong %d", f->next);
		else if (f->mode == M_FLAGGED)	/* the faster half is physically implausible */
			snprintf(src, sizeof(src), n % 2 ? n % 4 == 1 ? "ms=%d flag=untimed_work" :
			    "ms=%d flag=below_bandwidth_floor" : "ms=%d",
			    n % 2 ? 1 + f->next : 100 + f->next);
		else if (f->mode == M_ALL_FLAGGED)	/* correct, every one flagged */
			snprintf(src, sizeof(src), "ms=%d flag=below_bandwidth_floor", 50 - f->next);
		else if (f->mode == M_EMPTY && f->calls == 1 && n == 0)
			src[0] = '\0';
		else
			snprintf(src, sizeof(src), "ms=%.6g", v);
		out[n].source = strdup(src);
		out[n].origin = json_pack("{s:f}", "v", v);
		out[n].op = ctx->n_population ? "mutate" : "seed";
		out[n].parents[0] = ctx->n_population ? ctx->population[0]->id : -1;
		out[n].parents[1] = -1;
	}
	return n;
}

static char tmpdir[] = "/tmp/evolve-unit.XXXXXX";
static char problem[256];

static json_t *
run(enum mode mode, struct evolve_budget budget, int per_gen, struct fake *f, const char *sub,
    int *rc)
{
	struct proposer p = { "fake", f, fake_propose, NULL, fake_pending };
	struct evolve_opts o = EVOLVE_OPTS_INIT;
	static char outdir[512];
	json_t *summary = NULL;
	char err[1024];

	memset(f, 0, sizeof(*f));
	f->mode = mode;
	f->pop_sorted = f->parents_ok = 1;
	f->pending = fake_pending_start;
	snprintf(outdir, sizeof(outdir), "%s/%s", tmpdir, sub);
	o.problem = problem;
	o.backend = "cpu";
	o.out_dir = outdir;
	o.proposers[0] = &p;
	o.n_proposers = 1;
	o.per_generation = per_gen;
	o.population = 4;
	o.patience = 2;
	o.budget = budget;
	o.eval = fake_eval;
	o.seed = 42;
	o.quiet = 1;
	o.trials = 2;
	eval_candidates = eval_calls = 0;
	*rc = evolve_run(&o, &summary, err, sizeof(err));
	if (*rc < 0)
		printf("     evolve_run: %s\n", err);
	return summary;
}

static json_t *
load(const char *sub, const char *name)
{
	char path[600];
	json_t *j = NULL;
	char err[256];

	snprintf(path, sizeof(path), "%s/%s/%s", tmpdir, sub, name);
	if (jsonx_load_file(path, 1 << 24, &j, err, sizeof(err)) < 0)
		return NULL;
	return j;
}

static int
exists(const char *sub, const char *name)
{
	char path[600];

	snprintf(path, sizeof(path), "%s/%s/%s", tmpdir, sub, name);
	return access(path, F_OK) == 0;
}

static void
test_budget_candidates(void)
{
	struct evolve_budget b = { .candidates = 10 };
	struct fake f;
	int rc;
	json_t *s = run(M_IMPROVING, b, 4, &f, "cand", &rc), *h = load("cand", "history.json");
	json_t *c;

	CHECK_INT("budget run returns 0", rc, 0);
	CHECK_STR("stop_reason budget:candidates", jsonx_str(s, "stop_reason", ""), "budget:candidates");
	CHECK_INT("10 candidates evaluated", jsonx_int(s, "candidates_evaluated", 0), 10);
	CHECK_INT("the evaluator saw 10 candidates", eval_candidates, 10);
	CHECK_INT("3 generations (4 + 4 + 2)", jsonx_int(s, "generations", 0), 3);
	CHECK_INT("one batch per generation plus the confirmation", eval_calls, 4);
	CHECK_INT("the confirmation ran with its own trials", last_trials, EVOLVE_DEFAULT_CONFIRM_TRIALS);
	CHECK_STR("improved (13 ms against eager 1000)", jsonx_str(s, "status", ""), "improved");
	CHECK_INT("best is the last candidate (fastest)", jsonx_int(s, "best.candidate", -1), 9);
	CHECK_STR("best.path", jsonx_str(s, "best.path", ""), "best/kernel.c");
	CHECK("population fastest first, every time", f.pop_sorted);
	CHECK("history ids are indexes", f.parents_ok);
	CHECK_INT("history has 10 candidates", json_array_size(json_object_get(h, "candidates")), 10);
	c = json_array_get(json_object_get(h, "candidates"), 4);
	CHECK_STR("candidate 4 was a mutation", jsonx_str(c, "op", ""), "mutate");
	CHECK_INT("its parent is the best of generation 0 (candidate 3)",
	    json_integer_value(json_array_get(json_object_get(c, "parents"), 0)), 3);
	CHECK_INT("a seed has no parents",
	    json_array_size(jsonx_path(json_array_get(json_object_get(h, "candidates"), 0), "parents")), 0);
	CHECK_STR("its file", jsonx_str(c, "file", ""), "candidates/0004.c");
	CHECK("its origin is kept", fabs(jsonx_num(c, "origin.v", 0) - 100 * pow(0.8, 4)) < 1e-3);
	CHECK_INT("three generation records", json_array_size(json_object_get(h, "generations")), 3);
	CHECK("best_ms per generation", fabs(jsonx_num(json_array_get(json_object_get(h, "generations"), 2),
	    "best_ms", 0) - 100 * pow(0.8, 9)) < 1e-3);
	CHECK("candidates/0009.c written", exists("cand", "candidates/0009.c"));
	CHECK("no candidates/0010.c", !exists("cand", "candidates/0010.c"));
	CHECK("best/kernel.c written", exists("cand", "best/kernel.c"));
	CHECK("best/result.json written", exists("cand", "best/result.json"));
	CHECK("summary.json written", exists("cand", "summary.json"));
	CHECK("REPORT.md written", exists("cand", "REPORT.md"));
	CHECK("problem.py copied", exists("cand", "problem.py"));
	CHECK("gpu seconds summed from eval_s", jsonx_num(s, "spent.gpu_s", 0) >= 5.0);
	{
		struct buf rep = BUF_INIT(1 << 20);
		char path[600];
		snprintf(path, sizeof(path), "%s/cand/REPORT.md", tmpdir);
		buf_read_file(&rep, path);
		CHECK("REPORT.md: the speedup table with the confirmation's interval",
		    rep.data && strstr(rep.data, "| best (candidate 9) | 13.42 |") &&
		    strstr(rep.data, "| 74.51x | [67.06, 81.96] |"));
		CHECK("REPORT.md: the chart of best times", rep.data &&
		    strstr(rep.data, "    x-axis \"generation\" [0, 1, 2]\n") &&
		    strstr(rep.data, "    line [51.2, 20.9715, 13.4218]\n"));
		CHECK("REPORT.md: why it stopped", rep.data && strstr(rep.data, "stopped: budget:candidates"));
		CHECK("REPORT.md: the fastest candidates, fastest first", rep.data &&
		    strstr(rep.data, "## Fastest candidates (of 10 verified, 10 evaluated)") &&
		    strstr(rep.data, "| 9 | 2 | mutate | 13.42 | 74.51x | `{\"v\":13.4217") &&
		    strstr(rep.data, "| 9 | 2 |") < strstr(rep.data, "| 8 | 2 |"));
		buf_free(&rep);
	}
	json_decref(s);
	json_decref(h);
}

static void
test_dedup(void)
{
	struct evolve_budget b = { .generations = 3 };
	struct fake f;
	int rc;
	json_t *s = run(M_DUPS, b, 4, &f, "dups", &rc);

	CHECK_INT("dedup: run ok", rc, 0);
	CHECK_INT("dedup: only the two distinct sources were evaluated", eval_candidates, 2);
	CHECK_INT("dedup: one generation evaluated", jsonx_int(s, "generations", 0), 1);
	CHECK_STR("dedup: nothing new is exhausted", jsonx_str(s, "stop_reason", ""), "exhausted");
	CHECK_STR("dedup: not faster (1600 ms vs eager 1000)", jsonx_str(s, "status", ""), "not_faster");
	json_decref(s);
}

static void
test_generations_and_convergence(void)
{
	struct evolve_budget b = { .generations = 2 };
	struct fake f;
	int rc;
	json_t *s = run(M_IMPROVING, b, 2, &f, "gens", &rc);

	CHECK_STR("stop_reason budget:generations", jsonx_str(s, "stop_reason", ""), "budget:generations");
	CHECK_INT("2 generations", jsonx_int(s, "generations", 0), 2);
	json_decref(s);
	b.generations = 0;
	b.candidates = 100;
	s = run(M_FLAT, b, 3, &f, "flat", &rc);
	CHECK_STR("no improvement for 2 generations: converged", jsonx_str(s, "stop_reason", ""),
	    "converged");
	CHECK_INT("converged after generation 0 + patience 2", jsonx_int(s, "generations", 0), 3);
	CHECK_INT("best stays the seed generation's fastest", jsonx_int(s, "best.candidate", -1), 2);
	json_decref(s);
	/* a proposer with proposals still to make (the compiler's untried
	 * neighbours) holds convergence off until it has made them */
	fake_pending_start = 12;
	s = run(M_FLAT, b, 3, &f, "pending", &rc);
	fake_pending_start = 0;
	CHECK_STR("pending proposals: still converged in the end", jsonx_str(s, "stop_reason", ""), "converged");
	CHECK_INT("but only once all 12 are made: 4 generations of 3", jsonx_int(s, "generations", 0), 4);
	json_decref(s);
}

static void
test_outcomes(void)
{
	struct evolve_budget b = { .candidates = 8 };
	struct fake f;
	int rc;
	json_t *s, *h;

	s = run(M_NONE, b, 4, &f, "none", &rc);
	CHECK_STR("a proposer with nothing: exhausted", jsonx_str(s, "stop_reason", ""), "exhausted");
	CHECK_STR("and no_correct", jsonx_str(s, "status", ""), "no_correct");
	CHECK("best is null", json_is_null(json_object_get(s, "best")));
	json_decref(s);

	s = run(M_UNSUPPORTED, b, 4, &f, "unsup", &rc);
	CHECK_STR("unsupported status", jsonx_str(s, "status", ""), "unsupported");
	CHECK_STR("with the compiler's message", jsonx_str(s, "error", ""),
	    "unsupported: frobnicate (no kernel for it)");
	CHECK("REPORT.md even then", exists("unsup", "REPORT.md"));
	json_decref(s);

	s = run(M_WRONG, b, 4, &f, "wrong", &rc);
	h = load("wrong", "history.json");
	CHECK_STR("all wrong: no_correct", jsonx_str(s, "status", ""), "no_correct");
	CHECK_INT("all wrong: the whole budget spent", jsonx_int(s, "candidates_evaluated", 0), 8);
	CHECK_STR("a failed candidate keeps its first error",
	    jsonx_str(json_array_get(json_object_get(h, "candidates"), 0), "error", ""),
	    "out0: 3 of 16 elements differ");
	CHECK("no best/kernel.c without a correct kernel", !exists("wrong", "best/kernel.c"));
	json_decref(s);
	json_decref(h);

	b.candidates = 0;
	b.tokens = 250;
	s = run(M_TOKENS, b, 2, &f, "tokens", &rc);
	CHECK_STR("token budget", jsonx_str(s, "stop_reason", ""), "budget:tokens");
	CHECK_INT("tokens spent as the proposer counted them", jsonx_int(s, "spent.tokens", 0), 300);
	json_decref(s);

	b.tokens = 0;
	b.gpu_s = 3;	/* 0.5 s of eval_s per candidate: 2 after one generation, 4 after two */
	s = run(M_IMPROVING, b, 4, &f, "gpu", &rc);
	CHECK_STR("gpu budget", jsonx_str(s, "stop_reason", ""), "budget:gpu");
	CHECK_INT("gpu budget: two generations", jsonx_int(s, "generations", 0), 2);
	json_decref(s);

	b.gpu_s = 0;
	b.wall_s = 1e-9;
	s = run(M_IMPROVING, b, 4, &f, "wall", &rc);
	CHECK_STR("wall budget", jsonx_str(s, "stop_reason", ""), "budget:wall");
	CHECK_INT("wall budget spent before anything ran", jsonx_int(s, "candidates_evaluated", -1), 0);
	CHECK_STR("so no_correct", jsonx_str(s, "status", ""), "no_correct");
	json_decref(s);

	b.wall_s = 0;
	b.dollars = 0.5;
	s = run(M_TOKENS, b, 2, &f, "dollars", &rc);
	CHECK_STR("dollar budget", jsonx_str(s, "stop_reason", ""), "budget:dollars");
	json_decref(s);

	b.dollars = 0;
	b.candidates = 4;
	s = run(M_EMPTY, b, 4, &f, "empty", &rc);
	CHECK_INT("an empty source is malformed, not evaluated", jsonx_int(s, "spent.malformed", 0), 1);
	CHECK_INT("the others are, up to the budget", eval_candidates, 4);
	json_decref(s);

	eval_fail = 1;
	s = run(M_IMPROVING, b, 4, &f, "evalfail", &rc);
	eval_fail = 0;
	CHECK_STR("an evaluator failure: status error", jsonx_str(s, "status", ""), "error");
	CHECK_STR("stop_reason error", jsonx_str(s, "stop_reason", ""), "error");
	CHECK_STR("with its message", jsonx_str(s, "error", ""), "the judge crashed");
	json_decref(s);
}

/* A flagged kernel never becomes the best, however fast it looks. */
static void
test_flagged(void)
{
	struct evolve_budget b = { .candidates = 8 };
	struct fake f;
	size_t i, excluded = 0, untimed = 0;
	json_t *s, *h, *c;
	int rc;

	s = run(M_FLAGGED, b, 4, &f, "flagged", &rc);
	h = load("flagged", "history.json");
	CHECK_STR("flagged: a verified kernel still wins", jsonx_str(s, "status", ""), "improved");
	CHECK("the best is an unflagged one (about 100 ms, not 1)",
	    jsonx_num(s, "best.ms", 0) >= 100);
	json_array_foreach(json_object_get(h, "candidates"), i, c)
		if ((!strcmp(jsonx_str(c, "excluded", ""), "below_bandwidth_floor") ||
		    !strcmp(jsonx_str(c, "excluded", ""), "untimed_work")) &&
		    !jsonx_bool(c, "correct", 1)) {
			excluded++;
			untimed += !strcmp(jsonx_str(c, "excluded", ""), "untimed_work");
		}
	CHECK("the flagged ones are in the history, excluded", excluded == 4);
	CHECK("untimed_work excluded like below_bandwidth_floor", untimed > 0 && untimed < 4);
	json_decref(h);
	json_decref(s);
}

/*
 * A run whose correct kernels are all flagged is not "no correct kernel":
 * the fastest flagged one is confirmed, kept as the best for review, and
 * the status says needs_review with its flags.
 */
static void
test_all_flagged(void)
{
	struct evolve_budget b = { .candidates = 8 };
	struct buf k = BUF_INIT(1 << 20), rep = BUF_INIT(1 << 20);
	char path[600];
	struct fake f;
	json_t *s, *res;
	int rc;

	s = run(M_ALL_FLAGGED, b, 4, &f, "allflagged", &rc);
	CHECK_INT("all flagged: the run returns 0", rc, 0);
	CHECK_STR("all flagged: needs_review, not no_correct", jsonx_str(s, "status", ""), "needs_review");
	CHECK_INT("the best for review is the fastest flagged one", jsonx_int(s, "best.candidate", -1), 7);
	CHECK_STR("its flags named in the summary",
	    json_string_value(json_array_get(jsonx_path(s, "best.flags"), 0)), "below_bandwidth_floor");
	CHECK("it went through a confirmation", last_trials == EVOLVE_DEFAULT_CONFIRM_TRIALS);
	snprintf(path, sizeof(path), "%s/allflagged/best/kernel.c", tmpdir);
	buf_read_file(&k, path);
	CHECK("best/kernel.c holds that kernel", k.data && !strcmp(k.data, "ms=42 flag=below_bandwidth_floor"));
	res = load("allflagged", "best/result.json");
	CHECK("best/result.json: correct, flagged", jsonx_bool(res, "correct", 0) &&
	    !strcmp(json_string_value(json_array_get(json_object_get(res, "flags"), 0)) ?
	    json_string_value(json_array_get(json_object_get(res, "flags"), 0)) : "", "below_bandwidth_floor"));
	snprintf(path, sizeof(path), "%s/allflagged/REPORT.md", tmpdir);
	buf_read_file(&rep, path);
	CHECK("REPORT.md asks for review, names the flag", rep.data && strstr(rep.data, "## Needs review") &&
	    strstr(rep.data, "`below_bandwidth_floor`"));
	buf_free(&k);
	buf_free(&rep);
	json_decref(res);
	json_decref(s);
}

static void
test_rerun(void)
{
	struct evolve_budget b = { .candidates = 2 };
	struct fake f;
	char path[600];
	FILE *fp;
	int rc;
	json_t *s = run(M_IMPROVING, b, 4, &f, "cand", &rc);

	CHECK_INT("a rerun into an earlier run's folder works", rc, 0);
	CHECK("the new run's candidates are there", exists("cand", "candidates/0001.c"));
	CHECK("the earlier run's are gone", !exists("cand", "candidates/0002.c") &&
	    !exists("cand", "candidates/0009.c"));
	json_decref(s);
	snprintf(path, sizeof(path), "%s/foreign", tmpdir);
	mkdir(path, 0755);
	snprintf(path, sizeof(path), "%s/foreign/notes.txt", tmpdir);
	if ((fp = fopen(path, "w")))
		fclose(fp);
	s = run(M_IMPROVING, b, 4, &f, "foreign", &rc);
	CHECK_INT("a folder with other files is -EEXIST", rc, -EEXIST);
	CHECK("and no summary", s == NULL);
	CHECK("its files are left alone", exists("foreign", "notes.txt") &&
	    !exists("foreign", "candidates"));
}

static void
test_bad_opts(void)
{
	struct evolve_opts o = EVOLVE_OPTS_INIT;
	json_t *s = NULL;
	char err[256];

	o.problem = problem;
	o.out_dir = tmpdir;
	CHECK_INT("no proposer: -EINVAL", evolve_run(&o, &s, err, sizeof(err)), -EINVAL);
	CHECK("no summary on -EINVAL", s == NULL);
	o.backend = "tpu";
	CHECK_INT("bad backend: -EINVAL", evolve_run(&o, &s, err, sizeof(err)), -EINVAL);
	CHECK("the message names it", strstr(err, "tpu") != NULL);
}

/* ------------------------------------------------------------ the compiler proposer */

static const char *
code_of(const char *src)
{
	const char *e = strstr(src, "*/");

	return e ? e + 2 : src;
}

static json_t *
ir_fixture(const char *name)
{
	char path[512], err[256];
	const char *root = getenv("KB_ROOT") ? getenv("KB_ROOT") : ".";
	json_t *j = NULL;

	snprintf(path, sizeof(path), "%s/tests/fixtures/ir/%s.json", root, name);
	if (jsonx_load_file(path, 64u << 20, &j, err, sizeof(err)) < 0)
		printf("     %s: %s\n", path, err);
	return j;
}

/* A fake archive for the compiler proposer: what its neighbours hold. */
static int archive_asked, archive_freed;

static json_t *
fake_archive(void *arg, const struct evolve_ctx *ctx, int k)
{
	(void)ctx;
	archive_asked = k;
	return json_loads((const char *)arg, 0, NULL);
}

static void
fake_archive_free(void *arg)
{
	(void)arg;
	archive_freed++;
}

/* Generation 0 with an archive: the default, then the nearest compiler
 * kernels' schedules for this backend, then the rest. */
static void
test_prop_compiler_archive(void)
{
	static const char near[] = "["
	    "{\"kernel\": \"/*\\n * schedule: cpu_tile=256 bn_fold=1 cuts=3\\n */\\nint x;\", \"backend\": \"cpu\"},"
	    "{\"kernel\": \"/*\\n * schedule: cpu_tile=64 bn_fold=1 cuts=0\\n */\", \"backend\": \"cpu\"},"
	    "{\"kernel\": \"/*\\n * schedule: cpu_tile=16 bn_fold=1 cuts=0\\n */\", \"backend\": \"cuda\"},"
	    "{\"kernel\": \"/* an LLM's kernel, no schedule */\", \"backend\": \"cpu\"},"
	    "{\"kernel\": \"/*\\n * schedule: cpu_tile=32 bn_fold=1 cuts=0\\n */\", \"backend\": \"cpu\"}]";
	struct proposer *p = NULL;
	struct evolve_candidate out[8];
	struct evolve_spent spent = { 0 };
	struct evolve_budget budget = { 0 };
	struct evolve_ctx ctx = { .backend = "cpu", .budget = &budget, .spent = &spent };
	struct schedule s;
	uint64_t rng = 7;
	char err[512];
	json_t *ir = ir_fixture("05_linear_gelu");
	int n;

	ctx.rng = &rng;
	ctx.ir = ir;
	CHECK_INT("prop_compiler_new", prop_compiler_new("cpu", &p), 0);
	prop_compiler_set_archive(p, fake_archive, (void *)near, fake_archive_free);
	memset(out, 0, sizeof(out));
	n = p->propose(p, &ctx, out, 8, err, sizeof(err));
	CHECK_INT("the five codes there are", n, 5);
	CHECK("the archive was asked for its nearest", archive_asked > 0);
	CHECK_STR("the default first", n > 0 ? out[0].op : "", "seed");
	schedule_default(&s, NULL, SCHED_CPU);
	CHECK("then the best match's schedule, cuts and all", n > 1 && !strcmp(out[1].op, "archive") &&
	    schedule_from_json(&s, json_object_get(out[1].origin, "schedule"), err, sizeof(err)) == 0 &&
	    s.cpu_tile == 256 && s.cuts == 3);
	schedule_default(&s, NULL, SCHED_CPU);
	CHECK("then the next one of this backend (not the default's, not CUDA's, not an LLM's)",
	    n > 2 && !strcmp(out[2].op, "archive") &&
	    schedule_from_json(&s, json_object_get(out[2].origin, "schedule"), err, sizeof(err)) == 0 &&
	    s.cpu_tile == 32);
	CHECK("then the neighbours", n > 3 && !strcmp(out[3].op, "seed"));
	for (int i = 0; i < n; i++)
		evolve_candidate_clear(&out[i]);
	p->free(p);
	CHECK_INT("the archive's argument freed with the proposer", archive_freed, 1);
	json_decref(ir);
}

static void
test_prop_compiler(void)
{
	struct proposer *p = NULL;
	struct evolve_candidate out[8];
	struct evolve_entry hist[64];
	const struct evolve_entry *pop[64];
	struct evolve_spent spent = { 0 };
	struct evolve_budget budget = { 0 };
	struct evolve_ctx ctx = { .backend = "cpu", .budget = &budget, .spent = &spent };
	struct schedule d, s;
	uint64_t rng = 99;
	char err[512], shas[64][CRYPTO_SHA256_HEX];
	const char *half = "{\"ir_version\": 1, \"inputs\": [{\"name\": \"x\", \"role\": \"input\", "
	    "\"shape\": [4], \"dtype\": \"float16\"}], \"nodes\": [{\"name\": \"y\", \"op\": \"relu\", "
	    "\"args\": [{\"ref\": \"x\"}], \"kwargs\": {}, \"shape\": [4], \"dtype\": \"float16\"}], "
	    "\"outputs\": [{\"name\": \"y\", \"shape\": [4], \"dtype\": \"float16\"}]}";
	json_t *ir;
	int n, total = 0, calls, distinct = 1;

	ctx.rng = &rng;
	CHECK_INT("prop_compiler_new", prop_compiler_new("cpu", &p), 0);
	ctx.ir_error = "m.py: trace failed: boom";
	CHECK_INT("no IR: -ENOTSUP", p->propose(p, &ctx, out, 8, err, sizeof(err)), -ENOTSUP);
	CHECK_STR("saying why", err, "unsupported: m.py: trace failed: boom");
	ctx.ir = ir = json_loads(half, 0, NULL);
	CHECK_INT("an op or dtype the compiler refuses: -ENOTSUP",
	    p->propose(p, &ctx, out, 8, err, sizeof(err)), -ENOTSUP);
	CHECK("with the compiler's message", strstr(err, "unsupported: dtype float16") == err);
	p->free(p);
	json_decref(ir);

	/* shape variants: a version per graph traced at a variant's shapes;
	 * without one (an IR from before variant_graphs) nothing can serve it */
	{
		const char *vg = "[{\"ir_version\": 1, \"inputs\": [{\"name\": \"x\", \"role\": \"input\", "
		    "\"shape\": [9], \"dtype\": \"float32\"}], \"nodes\": [{\"name\": \"y\", \"op\": \"relu\", "
		    "\"args\": [{\"ref\": \"x\"}], \"kwargs\": {}, \"shape\": [9], \"dtype\": \"float32\"}], "
		    "\"outputs\": [{\"name\": \"y\", \"shape\": [9], \"dtype\": \"float32\"}]}]";
		const char *var = "{\"ir_version\": 1, \"inputs\": [{\"name\": \"x\", \"role\": \"input\", "
		    "\"shape\": [4], \"dtype\": \"float32\"}], \"nodes\": [{\"name\": \"y\", \"op\": \"relu\", "
		    "\"args\": [{\"ref\": \"x\"}], \"kwargs\": {}, \"shape\": [4], \"dtype\": \"float32\"}], "
		    "\"outputs\": [{\"name\": \"y\", \"shape\": [4], \"dtype\": \"float32\"}], "
		    "\"variants\": [[{\"name\": \"x\", \"shape\": [4], \"dtype\": \"float32\"}], "
		    "[{\"name\": \"x\", \"shape\": [9], \"dtype\": \"float32\"}]]}";
		CHECK_INT("prop_compiler_new", prop_compiler_new("cpu", &p), 0);
		ctx.ir = ir = json_loads(var, 0, NULL);
		CHECK_INT("shape variants: -ENOTSUP", p->propose(p, &ctx, out, 8, err, sizeof(err)), -ENOTSUP);
		CHECK("naming the input and the variant",
		    strstr(err, "unsupported: shape variants (input x of variant 1") == err);
		p->free(p);
		json_object_set_new(ir, "variant_graphs", json_loads(vg, 0, NULL));
		CHECK_INT("prop_compiler_new", prop_compiler_new("cpu", &p), 0);
		memset(out, 0, sizeof(out));
		n = p->propose(p, &ctx, out, 8, err, sizeof(err));
		CHECK_INT("with a graph traced at the variant: a candidate", n, 1);
		CHECK("holding a version for each shape and a dispatcher", n == 1 &&
		    strstr(out[0].source, "kb_v1_forward") && !strstr(out[0].source, "kb_v2_forward") &&
		    strstr(out[0].source, "(const int64_t[]){9}") && strstr(out[0].source, "kb_v1_match"));
		for (int i = 0; i < n; i++)
			evolve_candidate_clear(&out[i]);
		p->free(p);
		json_object_del(ir, "variant_graphs");
		json_array_remove(json_object_get(ir, "variants"), 1);
		CHECK_INT("prop_compiler_new", prop_compiler_new("cpu", &p), 0);
		memset(out, 0, sizeof(out));
		n = p->propose(p, &ctx, out, 8, err, sizeof(err));
		CHECK_INT("a variant of the traced shape is fine", n, 1);
		for (int i = 0; i < n; i++)
			evolve_candidate_clear(&out[i]);
		p->free(p);
		json_decref(ir);
	}

	/* linear + gelu on the CPU: cpu_tile is the only knob that changes the
	 * code (the GEMM's k block, 4 x cpu_tile), so its five values are the
	 * only different codes */
	CHECK_INT("prop_compiler_new", prop_compiler_new("cpu", &p), 0);
	ctx.ir = ir = ir_fixture("05_linear_gelu");
	ctx.ir_error = NULL;
	memset(out, 0, sizeof(out));
	n = p->propose(p, &ctx, out, 8, err, sizeof(err));
	CHECK_INT("generation 0: the five codes there are", n, 5);
	schedule_default(&d, NULL, SCHED_CPU);
	s = d;
	CHECK("the first is the default schedule", n > 0 &&
	    schedule_from_json(&s, json_object_get(out[0].origin, "schedule"), err, sizeof(err)) == 0 &&
	    !schedule_cmp(&s, &d));
	CHECK_STR("a seed", n > 0 ? out[0].op : "", "seed");
	CHECK("with no parents", n > 0 && out[0].parents[0] == -1 && out[0].parents[1] == -1);
	for (int i = 0; i < n; i++) {
		crypto_sha256_hex(code_of(out[i].source), strlen(code_of(out[i].source)), shas[i]);
		for (int k = 0; k < i; k++)
			distinct &= strcmp(shas[i], shas[k]) != 0;
		/* the loop's view of them: evaluated, the last one fastest */
		memset(&hist[i], 0, sizeof(hist[i]));
		hist[i].id = i;
		hist[i].source = out[i].source;
		hist[i].origin = out[i].origin;
		hist[i].correct = 1;
		hist[i].ms = 10.0 - i;
		hist[i].parents[0] = hist[i].parents[1] = -1;
		hist[i].source_sha = strdup(shas[i]);	/* not the loop's sha: only compared */
		pop[n - 1 - i] = &hist[i];
	}
	CHECK("no two with the same code", distinct);
	total = n;
	ctx.history = hist;
	ctx.n_history = (size_t)n;
	ctx.population = pop;
	ctx.n_population = (size_t)n;
	spent.generations = 1;
	for (calls = 0; calls < 5; calls++) {
		struct evolve_candidate more[8];
		memset(more, 0, sizeof(more));
		n = p->propose(p, &ctx, more, 8, err, sizeof(err));
		total += n > 0 ? n : 0;
		for (int i = 0; i < n; i++)
			evolve_candidate_clear(&more[i]);
		if (n <= 0)
			break;
	}
	CHECK_INT("then nothing new: 0, not a schedule that changes nothing", n, 0);
	CHECK_INT("five candidates in all", total, 5);
	for (int i = 0; i < 5 && i < total; i++) {
		free((char *)hist[i].source_sha);
		evolve_candidate_clear(&out[i]);
	}
	p->free(p);

	/* the same problem on CUDA: block, vec, unroll change the code there */
	CHECK_INT("prop_compiler_new cuda", prop_compiler_new("cuda", &p), 0);
	memset(&ctx, 0, sizeof(ctx));
	ctx.backend = "cuda";
	ctx.budget = &budget;
	ctx.spent = &spent;
	rng = 99;	/* its own draws, whatever the cases above took */
	ctx.rng = &rng;
	ctx.ir = ir;
	spent.generations = 0;
	memset(out, 0, sizeof(out));
	n = p->propose(p, &ctx, out, 8, err, sizeof(err));
	/* more different codes than the CPU's five (random draws past the
	 * neighbours mostly repeat a code, so not always all eight) */
	CHECK("cuda: more different codes than on the CPU", n > 5 && n <= 8);
	CHECK("cuda sources", n > 0 && strstr(out[0].source, "__global__") != NULL);
	distinct = 1;
	for (int i = 0; i < n; i++)
		for (int k = 0; k < i; k++)
			distinct &= strcmp(out[i].source, out[k].source) != 0;
	CHECK("cuda: no two with the same code", distinct);
	for (int i = 0; i < n; i++)
		evolve_candidate_clear(&out[i]);
	p->free(p);
	json_decref(ir);
}

/* CUDA, a team kernel: after the default the other block sizes, nearest
 * first; the proposer has neighbours pending until it has drawn them. */
static void
test_prop_compiler_blocks(void)
{
	struct proposer *p = NULL;
	struct evolve_candidate out[8];
	struct evolve_spent spent = { 0 };
	struct evolve_budget budget = { 0 };
	struct evolve_ctx ctx = { .backend = "cuda", .budget = &budget, .spent = &spent };
	static const int want[] = { 256, 128, 512, 64, 1024 };
	struct schedule s;
	uint64_t rng = 5;
	char err[512];
	json_t *ir = ir_fixture("02_softmax_rows");
	int n, ok = 1;

	ctx.rng = &rng;
	ctx.ir = ir;
	CHECK_INT("prop_compiler_new (cuda)", prop_compiler_new("cuda", &p), 0);
	CHECK("before generation 0 it has proposals pending", p->pending(p) > 0);
	memset(out, 0, sizeof(out));
	n = p->propose(p, &ctx, out, 5, err, sizeof(err));
	CHECK_INT("five candidates", n, 5);
	for (int i = 0; i < n && i < 5; i++) {
		schedule_default(&s, NULL, SCHED_CUDA);
		ok &= schedule_from_json(&s, json_object_get(out[i].origin, "schedule"), err, sizeof(err)) == 0 &&
		    s.block == want[i];
	}
	CHECK("the default's block 256, then 128, 512, 64 and 1024", ok);
	CHECK("and neighbours are still pending", p->pending(p) > 0);
	for (int i = 0; i < n; i++)
		evolve_candidate_clear(&out[i]);
	p->free(p);
	json_decref(ir);
}

int
main(void)
{
	FILE *f;

	cli_where_load();	/* the settings tests/run.sh gives in the environment */
	if (!mkdtemp(tmpdir)) {
		perror("mkdtemp");
		return 1;
	}
	snprintf(problem, sizeof(problem), "%s/problem.py", tmpdir);
	if (!(f = fopen(problem, "w")) || fputs("# a problem\n", f) < 0 || fclose(f) != 0)
		return 1;
	test_budget_candidates();
	test_dedup();
	test_generations_and_convergence();
	test_outcomes();
	test_flagged();
	test_all_flagged();
	test_rerun();
	test_bad_opts();
	test_prop_compiler();
	test_prop_compiler_archive();
	test_prop_compiler_blocks();
	if (!t_failed) {
		char cmd[600];
		snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
		if (system(cmd) != 0)
			printf("     could not remove %s\n", tmpdir);
	}
	return t_done("test_evolve");
}
