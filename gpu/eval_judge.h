/*
 * eval_judge: the three ways a batch of `kernelbot eval` (gpu/eval.c)
 * reaches its judge, behind one call:
 *
 *   server   the judge server (gpu/judgesrv.h), spawned when absent so it
 *            imports PyTorch while the compiles run: the default;
 *   early    a one-shot judge started before the compiles, waiting for its
 *            request in a file of the working directory: where the server
 *            cannot be reached (the reason is kept), or with
 *            --no-judge-server / KERNELBOT_JUDGE_SERVER=0;
 *   oneshot  a judge of its own started after the compiles, one harness
 *            call (KERNELBOT_JUDGE_EARLY=0), and the server's fallback
 *            when a call to it fails.
 *
 * eval_judge_choose() once, before the compiles; eval_judge_call() once,
 * with the request; eval_judge_free() whatever happened in between (a
 * waiting judge that got no request is told to go).
 */
#ifndef KB_GPU_EVAL_JUDGE_H
#define KB_GPU_EVAL_JUDGE_H

#include <jansson.h>
#include <limits.h>
#include <pthread.h>
#include <stddef.h>

#include "gpu/eval.h"
#include "gpu/judgesrv.h"

#define EVAL_BUILD_TIMEOUT_PY_S 900	/* load_inline builds: 46 s measured, much more cold */

enum judge_kind {
	JUDGE_ONESHOT,		/* a judge of its own, started after the compiles */
	JUDGE_EARLY,		/* a one-shot judge started before the compiles */
	JUDGE_SERVER,		/* the judge server (gpu/judgesrv.h); one-shot fallback */
};

/*
 * The early judge: a thread runs the harness with a stub request naming a
 * file; the judge imports, sets up its device, then waits for that file.
 */
struct judge {
	pthread_t tid;
	int started, joined;
	char path[PATH_MAX];
	json_t *stub, *reply;
	int timeout_ms, error;
	char err[2048];
};

struct eval_judge {
	const struct eval_opts *o;
	enum judge_kind judge_kind;
	struct judge early;		/* JUDGE_EARLY */
	struct judgesrv srv;		/* JUDGE_SERVER */
	int srv_spawned;
	const char *srv_state;		/* "off", "hit", "spawned", "fallback" */
	char srv_why[1024];
};

/*
 * Choose, and start where it starts early, the judge for a batch of
 * o->n_candidates on backend, in workdir (borrowed, outliving j). j must
 * be zeroed. 0, or -errno with err.
 */
int eval_judge_choose(struct eval_judge *j, const struct eval_opts *o, const char *backend,
    const char *workdir, char *err, size_t errlen);

/* The judge's reply to req: 0 and *reply (the caller's), or -errno with err. */
int eval_judge_call(struct eval_judge *j, json_t *req, json_t **reply, char *err,
    size_t errlen);

/* Which judge it was, into a reply's timing_breakdown_s object bd. */
void eval_judge_note(const struct eval_judge *j, json_t *bd);

/* Let go of what eval_judge_choose() started. Zeroed j: nothing. */
void eval_judge_free(struct eval_judge *j);

/*
 * The wall-clock bound on a judge for n candidates under o: every request
 * of every candidate at its --timeout (8 shape variants assumed), the
 * builds, the problem and the baselines; the judge itself enforces each
 * request's.
 */
long eval_judge_budget(const struct eval_opts *o, size_t n);

#endif
