/*
 * The generation loop. Ordering that matters: a candidate's file is
 * written before it is evaluated and history.json is rewritten after
 * every generation, so a run killed half way leaves every evaluated
 * source and its verdict on disk. The confirmation evaluates best/kernel.*
 * itself, so best/result.json names the file that is shipped.
 */
#include "pipeline/evolve/evolve.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/buf.h"
#include "common/clock.h"
#include "common/crypto.h"
#include "common/fsx.h"
#include "common/jsonx.h"
#include "gpu/eval.h"
#include "pipeline/evolve/evolve_int.h"

#define EVO_PROBLEM_MAX		(4u << 20)	/* a problem file */
#define EVO_CONFIRM_TRIES	3		/* population entries tried by the confirmation */
#define EVO_EMPTY_ROUNDS	2		/* rounds of only duplicates before "exhausted" */

void
evolve_candidate_clear(struct evolve_candidate *c)
{
	free(c->source);
	json_decref(c->origin);
	c->source = NULL;
	c->origin = NULL;
}


static void
progress(const struct evo_run *r, const char *fmt, ...)
{
	va_list ap;

	if (r->o->quiet)
		return;
	va_start(ap, fmt);
	fputs("optimize: ", stderr);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
}

/* ------------------------------------------------------------ budgets */

static const char *
budget_spent(const struct evo_run *r)
{
	const struct evolve_budget *b = &r->o->budget;
	const struct evolve_spent *s = &r->spent;

	if (b->candidates > 0 && s->candidates >= b->candidates)
		return "budget:candidates";
	if (b->generations > 0 && s->generations >= b->generations)
		return "budget:generations";
	if (b->wall_s > 0 && clock_mono_s() - r->t0 >= b->wall_s)
		return "budget:wall";
	if (b->gpu_s > 0 && s->gpu_s >= b->gpu_s)
		return "budget:gpu";
	if (b->tokens > 0 && s->tokens >= b->tokens)
		return "budget:tokens";
	if (b->dollars > 0 && s->dollars >= b->dollars)
		return "budget:dollars";
	return NULL;
}

/* ------------------------------------------------------------ history */

static int
seen(const struct evo_run *r, const char *sha, char (*batch)[CRYPTO_SHA256_HEX], int n_batch)
{
	for (size_t i = 0; i < r->n_hist; i++)
		if (!strcmp(r->hist[i].source_sha, sha))
			return 1;
	for (int i = 0; i < n_batch; i++)
		if (!strcmp(batch[i], sha))
			return 1;
	return 0;
}

static int
pop_cmp(const void *a, const void *b)
{
	const struct evolve_entry *x = *(const struct evolve_entry *const *)a;
	const struct evolve_entry *y = *(const struct evolve_entry *const *)b;

	if (x->ms != y->ms)
		return x->ms < y->ms ? -1 : 1;
	return x->id - y->id;
}

/* The population: correct entries, fastest first, at most o->population. */
static int
rebuild_population(struct evo_run *r)
{
	const struct evolve_entry **all;
	size_t n = 0;

	if (!(all = calloc(r->n_hist + 1, sizeof(*all))))
		return -ENOMEM;
	for (size_t i = 0; i < r->n_hist; i++)
		if (r->hist[i].correct)
			all[n++] = &r->hist[i];
	qsort(all, n, sizeof(*all), pop_cmp);
	if (n > (size_t)r->o->population)
		n = (size_t)r->o->population;
	free(r->pop);
	r->pop = all;
	r->n_pop = n;
	r->ctx.history = r->hist;
	r->ctx.n_history = r->n_hist;
	r->ctx.population = r->pop;
	r->ctx.n_population = r->n_pop;
	return 0;
}

/* ------------------------------------------------------------ one generation */

static int
run_eval(struct evo_run *r, const char *const *paths, size_t n, int trials, const char *baselines,
    int sanitize, struct eval_result *results)
{
	struct eval_opts eo = EVAL_OPTS_INIT;
	evolve_eval_fn fn = r->o->eval ? r->o->eval : eval_run;
	json_t *arr = NULL;
	char why[256];
	int error;

	eo.problem = r->o->problem;
	eo.candidates = paths;
	eo.n_candidates = n;
	eo.backend = r->o->backend;
	eo.device = r->o->device;
	if (trials > 0)
		eo.trials = trials;
	if (r->o->timeout_s > 0)
		eo.timeout_s = r->o->timeout_s;
	eo.rounds = r->o->rounds;
	eo.reps = r->o->reps;
	eo.warmup = r->o->warmup;
	eo.baselines = baselines;
	eo.class_name = r->o->class_name;
	eo.entry = r->o->entry;
	eo.have_sandbox_exec = r->o->have_sandbox_exec;
	eo.sanitize = sanitize;
	eo.mem_bytes = r->o->mem_bytes;
	eo.disk_bytes = r->o->disk_bytes;
	eo.runners = r->o->runners;
	eo.build_timeout_s = r->o->build_timeout_s;
	eo.env = r->o->eval_env;
	results->cand = NULL;
	results->n = 0;
	if ((error = fn(&eo, &arr, r->error, sizeof(r->error))) < 0)
		return error;
	if (!json_is_array(arr) || json_array_size(arr) != n) {
		snprintf(r->error, sizeof(r->error), "the evaluator returned %zu results for %zu candidates",
		    json_is_array(arr) ? json_array_size(arr) : 0, n);
		json_decref(arr);
		return -EPROTO;
	}
	error = eval_result_parse(arr, results, why, sizeof(why));
	json_decref(arr);
	if (error < 0) {
		snprintf(r->error, sizeof(r->error), "the evaluator's result: %s",
		    error == -EINVAL ? why : strerror(-error));
		return error == -EINVAL ? -EPROTO : error;
	}
	for (size_t i = 0; i < n; i++)
		r->spent.gpu_s += eval_num_or(results->cand[i].eval_s, 0);
	return 0;
}

static int
grow_history(struct evo_run *r, size_t more)
{
	struct evolve_entry *h;
	size_t cap = r->cap_hist ? r->cap_hist : 64;

	while (cap < r->n_hist + more)
		cap *= 2;
	if (cap == r->cap_hist)
		return 0;
	if (!(h = realloc(r->hist, cap * sizeof(*h))))
		return -ENOMEM;
	r->hist = h;
	r->cap_hist = cap;
	/* the population points into the old array until it is rebuilt */
	return rebuild_population(r);
}

/*
 * Ask the proposers for up to `want` candidates, split by share; a
 * proposer that fills its quota is asked again for what others left.
 * Duplicates (by source hash) are dropped here. Returns the number kept
 * in out/who, or -errno with r->error set.
 */
static int
collect(struct evo_run *r, int want, struct evolve_candidate *out, int *who,
    char (*shas)[CRYPTO_SHA256_HEX], int *offered)
{
	const struct evolve_opts *o = r->o;
	double total = 0;
	int n = 0, quota[EVOLVE_MAX_PROPOSERS], full[EVOLVE_MAX_PROPOSERS];
	char perr[2048];

	*offered = 0;
	for (size_t i = 0; i < o->n_proposers; i++)
		if (!r->disabled[i])
			total += o->shares[i] > 0 ? o->shares[i] : 1;
	if (total <= 0)
		return 0;
	for (int pass = 0; pass < 2 && n < want; pass++) {
		int left = want - n, given = 0;
		for (size_t i = 0; i < o->n_proposers; i++) {
			double sh = o->shares[i] > 0 ? o->shares[i] : 1;
			if (r->disabled[i] || (pass == 1 && !full[i])) {
				quota[i] = 0;
				continue;
			}
			quota[i] = (int)floor(left * sh / total);
			given += quota[i];
		}
		/* the rounding remainder goes to the first proposers */
		for (size_t i = 0; i < o->n_proposers && given < left; i++)
			if (!r->disabled[i] && (pass == 0 || full[i])) {
				quota[i]++;
				given++;
			}
		for (size_t i = 0; i < o->n_proposers; i++) {
			struct proposer *p = o->proposers[i];
			int got;

			full[i] = 0;
			if (quota[i] <= 0 || r->disabled[i])
				continue;
			if (quota[i] > want - n)
				quota[i] = want - n;
			perr[0] = '\0';
			for (int k = n; k < n + quota[i]; k++)
				out[k].parents[0] = out[k].parents[1] = -1;
			got = p->propose(p, &r->ctx, out + n, quota[i], perr, sizeof(perr));
			if (got == -ENOTSUP) {
				r->disabled[i] = 1;
				snprintf(r->unsupported, sizeof(r->unsupported), "%s", perr);
				progress(r, "proposer %s: %s", p->name, perr);
				continue;
			}
			if (got < 0) {
				snprintf(r->error, sizeof(r->error), "proposer %s: %s", p->name,
				    perr[0] ? perr : strerror(-got));
				return got;
			}
			if (got > quota[i])
				got = quota[i];	/* a proposer that overfills is cut */
			full[i] = got == quota[i];
			*offered += got;
			for (int k = n, end = n + got; k < end; k++) {
				struct evolve_candidate *c = &out[k];
				if (!c->source || !*c->source) {
					r->spent.malformed++;
					evolve_candidate_clear(c);
					continue;
				}
				crypto_sha256_hex(c->source, strlen(c->source), shas[n]);
				if (seen(r, shas[n], shas, n)) {
					evolve_candidate_clear(c);
					continue;
				}
				if (k != n)
					out[n] = *c;
				who[n++] = (int)i;
			}
			/* a slot past n that was moved or dropped is no longer owned */
			for (int k = n; k < want; k++)
				memset(&out[k], 0, sizeof(out[k]));
		}
	}
	return n;
}

static int
generation(struct evo_run *r, int want)
{
	struct evolve_candidate *cands = NULL;
	char (*shas)[CRYPTO_SHA256_HEX] = NULL;
	char **paths = NULL, rel[64];
	int *who = NULL, n, offered = 0, error = 0, correct = 0;
	int gen = r->spent.generations;
	struct eval_result results = { 0 };
	json_t *g;
	size_t base;

	cands = calloc((size_t)want, sizeof(*cands));
	shas = calloc((size_t)want, sizeof(*shas));
	who = calloc((size_t)want, sizeof(*who));
	paths = calloc((size_t)want + 1, sizeof(*paths));
	if (!cands || !shas || !who || !paths) {
		error = -ENOMEM;
		goto out;
	}
	if ((n = collect(r, want, cands, who, shas, &offered)) < 0) {
		error = n;
		goto out;
	}
	if (n == 0) {
		error = offered > 0 ? -EAGAIN : -ENOENT;	/* only duplicates / nothing */
		goto out;
	}
	if ((error = grow_history(r, (size_t)n)) < 0)
		goto out;
	base = r->n_hist;
	for (int i = 0; i < n; i++) {
		char full[PATH_MAX];
		evo_cand_file(r, (int)base + i, rel, sizeof(rel));
		if ((error = evo_out_path(r, full, sizeof(full), rel)) < 0 ||
		    (error = fsx_write_file(full, cands[i].source, strlen(cands[i].source))) < 0) {
			snprintf(r->error, sizeof(r->error), "%s/%s: %s", r->o->out_dir, rel,
			    strerror(-error));
			goto out;
		}
		if (!(paths[i] = strdup(full))) {
			error = -ENOMEM;
			goto out;
		}
	}
	if ((error = run_eval(r, (const char *const *)paths, (size_t)n, r->o->trials,
	    r->o->baselines ? r->o->baselines : "eager", 0, &results)) < 0) {
		/* candidates/ holds evaluated sources only */
		for (int i = 0; i < n; i++)
			unlink(paths[i]);
		goto out;
	}
	for (int i = 0; i < n; i++) {
		struct evolve_entry *e = &r->hist[base + i];

		memset(e, 0, sizeof(*e));
		e->result = results.cand[i];	/* the entry's now */
		memset(&results.cand[i], 0, sizeof(results.cand[i]));
		e->id = (int)(base + i);
		e->generation = gen;
		e->proposer = r->o->proposers[who[i]]->name;
		e->op = cands[i].op ? cands[i].op : "seed";
		e->source = cands[i].source;
		e->origin = cands[i].origin;
		e->source_sha = strdup(shas[i]);
		e->correct = e->result.correct;
		e->ms = e->correct ? eval_num_or(e->result.t_candidate.median, -1) : -1;
		if (e->correct && e->ms < 0)
			e->correct = 0;	/* correct but untimed: nothing to rank it by */
		if (e->correct && evo_barring_flag(&e->result)) {
			e->correct = 0;
			e->flagged = 1;
		}
		for (int k = 0; k < 2; k++)
			e->parents[k] = cands[i].parents[k] >= 0 && (size_t)cands[i].parents[k] < base ?
			    cands[i].parents[k] : -1;
		cands[i].source = NULL;
		cands[i].origin = NULL;
		r->n_hist++;
		if (!e->source_sha) {
			error = -ENOMEM;
			goto out;
		}
		correct += e->correct;
		if (!r->device && e->result.device_info)
			r->device = json_incref((json_t *)e->result.device_info);
	}
	r->ctx.device = r->device;
	r->spent.candidates += n;
	r->spent.generations++;
	if ((error = rebuild_population(r)) < 0)
		goto out;
	if (r->n_pop) {
		double b = r->pop[0]->ms;
		if (r->best_ms < 0 || b < r->best_ms * (1 - r->o->noise))
			r->last_improved = gen;
		if (r->best_ms < 0 || b < r->best_ms)
			r->best_ms = b;
	}
	g = json_pack("{s:i, s:i, s:i, s:o}", "generation", gen, "evaluated", n, "correct", correct,
	    "best_ms", r->best_ms >= 0 ? json_real(r->best_ms) : json_null());
	json_array_append_new(r->gens, g);
	if (r->best_ms >= 0)
		progress(r, "generation %d: %d evaluated, %d correct, best %.4g ms (candidate %d)",
		    gen, n, correct, r->best_ms, r->pop[0]->id);
	else
		progress(r, "generation %d: %d evaluated, %d correct, nothing correct yet", gen, n, correct);
out:
	for (int i = 0; cands && i < want; i++)
		evolve_candidate_clear(&cands[i]);
	for (int i = 0; paths && i < want; i++)
		free(paths[i]);
	free(cands);
	free(shas);
	free(who);
	free(paths);
	eval_result_free(&results);
	return error;
}

/* ------------------------------------------------------------ the end */

/*
 * Confirm the best of list (n entries, fastest first): write it as
 * best/kernel.EXT and evaluate that file with more trials and both
 * baselines. The next is tried when a confirmation finds the kernel
 * wrong (a flaky kernel must not ship). 1 and *result when one confirmed
 * unflagged, 0 when none did. A confirmation that is correct but flagged
 * (evo_barring_flag) is not a failure of the kernel: the first such is
 * kept in *review and *review_id (when review->json is NULL) for a run
 * that confirms nothing else. Both are the caller's to eval_cand_clear().
 */
static int
confirm(struct evo_run *r, const struct evolve_entry *const *list, size_t n,
    struct eval_cand *result, int *which, struct eval_cand *review, int *review_id)
{
	char dir[PATH_MAX], file[PATH_MAX], name[32];
	const char *paths[1] = { file };
	/* never fewer trials than a generation had */
	int error, trials = r->o->confirm_trials > r->o->trials ? r->o->confirm_trials : r->o->trials;

	if ((error = evo_out_path(r, dir, sizeof(dir), "best")) < 0 || (error = fsx_mkdir_p(dir, 0755)) < 0)
		return error;
	snprintf(name, sizeof(name), "kernel%s", r->ext);
	if ((error = evo_join(file, sizeof(file), dir, name)) < 0)
		return error;
	for (size_t i = 0; i < n && i < EVO_CONFIRM_TRIES; i++) {
		const struct evolve_entry *e = list[i];
		const char *why, *flag;
		struct eval_result res;
		struct eval_cand c0;
		int kept;

		if ((error = fsx_write_file(file, e->source, strlen(e->source))) < 0)
			return error;
		progress(r, "confirming candidate %d (%.4g ms) with %d trials", e->id, e->ms, trials);
		/* docs/design.md, evaluation point 8: the winner also runs under
		 * compute-sanitizer where the machine has it (CUDA) */
		if ((error = run_eval(r, paths, 1, trials,
		    r->o->confirm_baselines ? r->o->confirm_baselines : "eager,compile", 2, &res)) < 0)
			return error;
		c0 = res.cand[0];	/* this loop's now */
		memset(&res.cand[0], 0, sizeof(res.cand[0]));
		eval_result_free(&res);
		flag = evo_barring_flag(&c0);
		if (c0.correct && !flag) {
			*result = c0;
			*which = e->id;
			return 1;
		}
		kept = c0.correct && flag && !review->json;
		if (kept) {
			*review = c0;	/* its strings stay good below */
			*review_id = e->id;
		}
		/* with the evaluator's first error (a sanitizer's report, a
		 * trial's mismatch): the log is where a user looks for why */
		why = c0.n_errors ? c0.errors[0] : NULL;
		progress(r, "candidate %d failed its confirmation (%s)%s%.300s", e->id,
		    flag ? flag : c0.status ? c0.status : "?", why ? ": " : "", why ? why : "");
		if (!kept)
			eval_cand_clear(&c0);
	}
	unlink(file);
	return 0;
}

static int
improved(const struct eval_cand *best)
{
	return eval_num_or(best->vs_eager.x, 0) > 1 && eval_num_or(best->vs_eager.lo, 0) > 1;
}

/* The flagged entries (correct, kept out of the population), fastest first. */
static size_t
flagged_entries(const struct evo_run *r, const struct evolve_entry **out, size_t max)
{
	size_t n = 0;

	for (size_t i = 0; i < r->n_hist; i++)
		if (r->hist[i].flagged && r->hist[i].ms >= 0)
			out[n++] = &r->hist[i];
	qsort(out, n, sizeof(*out), pop_cmp);
	return n < max ? n : max;
}

/*
 * The confirmations: the population first; when none of it confirms
 * unflagged, the flagged kernels, so that a run whose correct kernels are
 * all flagged reports one for review instead of "no correct kernel".
 * 1 and *best when a kernel confirmed unflagged; 0 and *review (a
 * correct, flagged confirmation, written to best/) or nothing; -errno.
 */
static int
confirm_all(struct evo_run *r, struct eval_cand *best, int *best_id, struct eval_cand *review,
    int *review_id)
{
	const struct evolve_entry **fl;
	char file[PATH_MAX], name[32];
	size_t n;
	int got = 0;

	if (r->n_pop && (got = confirm(r, r->pop, r->n_pop, best, best_id, review, review_id)) != 0)
		return got;
	if (!(fl = calloc(r->n_hist + 1, sizeof(*fl))))
		return -ENOMEM;
	n = flagged_entries(r, fl, EVO_CONFIRM_TRIES);
	if (n && !review->json)
		got = confirm(r, fl, n, best, best_id, review, review_id);
	free(fl);
	if (got || !review->json)
		return got;
	/* the reviewed kernel is the one best/ holds */
	snprintf(name, sizeof(name), "best/kernel%s", r->ext);
	if ((got = evo_out_path(r, file, sizeof(file), name)) < 0 ||
	    (got = fsx_write_file(file, r->hist[*review_id].source,
	    strlen(r->hist[*review_id].source))) < 0)
		return got;
	return 0;
}

static int
finish(struct evo_run *r, json_t **summary, char *err, size_t errlen)
{
	struct eval_cand best = { 0 }, review = { 0 };	/* none: json NULL */
	json_t *s = NULL, *h = NULL;
	const char *status;
	char path[PATH_MAX];
	int best_id = -1, review_id = -1, error = 0, got = 0;

	if (r->n_pop || r->n_hist) {
		/* a run that broke still confirms what it found, if the evaluator works */
		char keep[sizeof(r->error)];
		memcpy(keep, r->error, sizeof(keep));
		r->error[0] = '\0';
		if ((got = confirm_all(r, &best, &best_id, &review, &review_id)) < 0) {
			if (!keep[0])
				snprintf(keep, sizeof(keep), "confirmation: %s",
				    r->error[0] ? r->error : strerror(-got));
			r->stop_reason = "error";
			got = 0;
			eval_cand_clear(&review);
		}
		memcpy(r->error, keep, sizeof(keep));
	}
	r->spent.wall_s = clock_mono_s() - r->t0;
	if (got)
		status = improved(&best) ? "improved" : "not_faster";
	else if (review.json) {
		/* correct but flagged: kept and reported, never "no correct kernel" */
		status = "needs_review";
		best = review;
		best_id = review_id;
		memset(&review, 0, sizeof(review));
	} else if (!r->n_hist && r->unsupported[0] && !r->error[0])
		status = "unsupported";
	else if (r->error[0])
		status = "error";
	else
		status = "no_correct";
	if (!(s = evo_summary_json(r, status, best.json ? &best : NULL, best_id)) ||
	    !(h = evo_history_json(r))) {
		error = -ENOMEM;
		goto out;
	}
	if ((error = evo_write_history(r)) < 0 ||
	    (error = evo_out_path(r, path, sizeof(path), "summary.json")) < 0 ||
	    (error = evo_write_json(path, s)) < 0)
		goto werr;
	if (best.json && ((error = evo_out_path(r, path, sizeof(path), "best/result.json")) < 0 ||
	    (error = evo_write_json(path, best.json)) < 0))
		goto werr;
	if ((error = evo_out_path(r, path, sizeof(path), "REPORT.md")) < 0 ||
	    (error = evolve_write_report(path, s, h, best.json ? &best : NULL)) < 0)
		goto werr;
	progress(r, "%s after %d candidates in %d generations (%s); %s", status,
	    r->spent.candidates, r->spent.generations, r->stop_reason, r->o->out_dir);
	*summary = s;
	s = NULL;
	goto out;
werr:
	snprintf(err, errlen, "%s: cannot write the results: %s", r->o->out_dir, strerror(-error));
out:
	json_decref(s);
	json_decref(h);
	eval_cand_clear(&best);
	eval_cand_clear(&review);
	return error;
}

/* ------------------------------------------------------------ setup */

static int
check_opts(const struct evolve_opts *o, char *err, size_t errlen)
{
	if (!o->problem || !o->out_dir || !o->backend) {
		snprintf(err, errlen, "evolve: problem, out_dir and backend are required");
		return -EINVAL;
	}
	if (strcmp(o->backend, "cpu") && strcmp(o->backend, "cuda")) {
		snprintf(err, errlen, "evolve: backend is cpu or cuda, not '%s'", o->backend);
		return -EINVAL;
	}
	if (o->n_proposers < 1 || o->n_proposers > EVOLVE_MAX_PROPOSERS) {
		snprintf(err, errlen, "evolve: 1 to %d proposers", EVOLVE_MAX_PROPOSERS);
		return -EINVAL;
	}
	for (size_t i = 0; i < o->n_proposers; i++)
		if (!o->proposers[i] || !o->proposers[i]->propose || !o->proposers[i]->name) {
			snprintf(err, errlen, "evolve: proposer %zu is incomplete", i);
			return -EINVAL;
		}
	if (o->per_generation < 1 || o->per_generation > EVOLVE_MAX_PER_GEN) {
		snprintf(err, errlen, "evolve: 1 to %d candidates per generation", EVOLVE_MAX_PER_GEN);
		return -EINVAL;
	}
	if (o->population < 1 || o->patience < 1 || o->noise < 0 || o->noise >= 1 ||
	    o->confirm_trials < 1 || o->confirm_trials > EVAL_MAX_TRIALS) {
		snprintf(err, errlen, "evolve: population and patience at least 1, noise in [0, 1), "
		    "confirmation trials 1 to %d", EVAL_MAX_TRIALS);
		return -EINVAL;
	}
	return 0;
}

static int
setup(struct evo_run *r, char *err, size_t errlen)
{
	const struct evolve_opts *o = r->o;
	struct buf b = BUF_INIT(EVO_PROBLEM_MAX);
	char path[PATH_MAX];
	int error;

	if ((error = crypto_init()) < 0) {
		snprintf(err, errlen, "crypto_init failed");
		return error;
	}
	if ((error = buf_read_file(&b, o->problem)) < 0) {
		snprintf(err, errlen, "%s: %s", o->problem, strerror(-error));
		goto out;
	}
	r->problem_source = buf_detach(&b, NULL);
	if (!r->problem_source && !(r->problem_source = strdup(""))) {
		error = -ENOMEM;
		goto out;
	}
	crypto_sha256_hex(r->problem_source, strlen(r->problem_source), r->problem_sha);
	if ((error = evo_prepare_dir(o->out_dir)) == -EEXIST) {
		snprintf(err, errlen, "%s: not empty and holds no kernelbot optimize run "
		    "(no history.json); choose another --out", o->out_dir);
		goto out;
	}
	if (error < 0 ||
	    (error = evo_out_path(r, path, sizeof(path), "candidates")) < 0 ||
	    (error = fsx_mkdir_p(path, 0755)) < 0 ||
	    (error = evo_out_path(r, path, sizeof(path), "problem.py")) < 0 ||
	    (error = fsx_write_file(path, r->problem_source, strlen(r->problem_source))) < 0) {
		snprintf(err, errlen, "%s: %s", o->out_dir, strerror(-error));
		goto out;
	}
	if (!(r->gens = json_array())) {
		error = -ENOMEM;
		goto out;
	}
	r->ext = !strcmp(o->backend, "cuda") ? ".cu" : ".c";
	r->rng = o->seed ? o->seed : crypto_random_seed() | 1;
	r->last_improved = -1;
	r->best_ms = -1;
	r->stop_reason = "exhausted";
	r->ctx.problem = o->problem;
	r->ctx.problem_source = r->problem_source;
	r->ctx.ir = o->ir;
	r->ctx.ir_error = o->ir_error;
	/* the graph IR beside the problem: the archive's op signature, the report's shapes */
	if (o->ir && ((error = evo_out_path(r, path, sizeof(path), "ir.json")) < 0 ||
	    (error = evo_write_json(path, o->ir)) < 0)) {
		snprintf(err, errlen, "%s: %s", o->out_dir, strerror(-error));
		goto out;
	}
	r->ctx.backend = o->backend;
	r->ctx.budget = &o->budget;
	r->ctx.spent = &r->spent;
	r->spent.tokens = o->tokens_before;
	r->spent.dollars = o->dollars_before;
	r->ctx.rng = &r->rng;
	error = rebuild_population(r);
out:
	buf_free(&b);
	return error;
}

static void
teardown(struct evo_run *r)
{
	for (size_t i = 0; i < r->n_hist; i++) {
		free((char *)r->hist[i].source);
		free((char *)r->hist[i].source_sha);
		json_decref((json_t *)r->hist[i].origin);
		eval_cand_clear(&r->hist[i].result);
	}
	free(r->hist);
	free(r->pop);
	free(r->problem_source);
	json_decref(r->gens);
	json_decref(r->device);
}

/* Proposals some proposer still means to make (struct proposer's pending). */
static size_t
pending(const struct evolve_opts *o)
{
	size_t n = 0;

	for (size_t i = 0; i < o->n_proposers; i++)
		if (o->proposers[i]->pending)
			n += o->proposers[i]->pending(o->proposers[i]);
	return n;
}

int
evolve_run(const struct evolve_opts *o, json_t **summary, char *err, size_t errlen)
{
	struct evo_run r;
	int error, empty = 0;

	memset(&r, 0, sizeof(r));
	r.o = o;
	if ((error = check_opts(o, err, errlen)) < 0)
		return error;
	r.t0 = clock_mono_s();
	if ((error = setup(&r, err, errlen)) < 0)
		goto out;
	for (;;) {
		const char *why = budget_spent(&r);
		int want = o->per_generation;

		if (why) {
			r.stop_reason = why;
			break;
		}
		if (o->budget.candidates > 0 && want > o->budget.candidates - r.spent.candidates)
			want = o->budget.candidates - r.spent.candidates;
		error = generation(&r, want);
		if (error == -EAGAIN && ++empty < EVO_EMPTY_ROUNDS)
			continue;
		if (error == -EAGAIN || error == -ENOENT) {
			r.stop_reason = "exhausted";
			break;
		}
		if (error < 0) {
			if (!r.error[0])
				snprintf(r.error, sizeof(r.error), "%s", strerror(-error));
			r.stop_reason = "error";
			break;
		}
		empty = 0;
		r.spent.wall_s = clock_mono_s() - r.t0;
		if ((error = evo_write_history(&r)) < 0) {
			snprintf(err, errlen, "%s/history.json: %s", o->out_dir, strerror(-error));
			goto out;
		}
		if (r.last_improved >= 0 &&
		    r.spent.generations - 1 - r.last_improved >= o->patience && !pending(o)) {
			r.stop_reason = "converged";
			break;
		}
	}
	error = finish(&r, summary, err, errlen);
out:
	teardown(&r);
	return error;
}
