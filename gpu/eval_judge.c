/*
 * eval_judge: the three ways a batch of `kernelbot eval` reaches its judge
 * (gpu/eval_judge.h).
 */
#include "gpu/eval_judge.h"

#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "gpu/eval_build.h"
#include "gpu/harness.h"

#define JUDGE_SLACK_S 900	/* problem load, baselines, torch.compile warm-up */

static double
wall_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/*
 * The judge starts before the compiles: its interpreter and the PyTorch
 * import take seconds, as long as a batch's compiles or longer. A thread
 * runs the harness with a stub request naming a file; the judge imports,
 * sets up its device, then waits for that file, which judge_post() writes
 * once the real request is ready (judge_cancel(): {"cancel": true}).
 */
static void *
judge_thread(void *arg)
{
	struct judge *j = arg;

	j->error = harness_call(j->stub, j->timeout_ms, &j->reply, j->err, sizeof(j->err));
	return NULL;
}

static int
judge_start(struct judge *j, const char *workdir, const char *backend, int device,
    long wait_s, long budget_s)
{
	if (snprintf(j->path, sizeof(j->path), "%s/request.json", workdir) >= (int)sizeof(j->path))
		return -ENAMETOOLONG;
	if (budget_s > INT_MAX / 1000)
		budget_s = INT_MAX / 1000;
	j->timeout_ms = (int)budget_s * 1000;
	if (!(j->stub = json_pack("{s:s, s:s, s:s, s:i, s:I, s:f}", "verb", "evaluate",
	    "request_file", j->path, "backend", backend, "device", device,
	    "wait_s", (json_int_t)wait_s, "t_spawn", wall_s())))
		return -ENOMEM;
	if (pthread_create(&j->tid, NULL, judge_thread, j) != 0)
		return -EAGAIN;
	j->started = 1;
	return 0;
}

/* The request where the waiting judge looks: a temporary file, renamed. */
static int
judge_post(struct judge *j, const json_t *req)
{
	char tmp[PATH_MAX + 8];

	snprintf(tmp, sizeof(tmp), "%s.tmp", j->path);
	if (json_dump_file(req, tmp, JSON_COMPACT) < 0)
		return -EIO;
	return rename(tmp, j->path) < 0 ? -errno : 0;
}

/* Wait for the judge's reply: 0 and *reply, or harness_call's error and err. */
static int
judge_wait(struct judge *j, json_t **reply, char *err, size_t errlen)
{
	pthread_join(j->tid, NULL);
	j->joined = 1;
	if (j->error < 0) {
		snprintf(err, errlen, "%s", j->err);
		return j->error;
	}
	*reply = j->reply;
	j->reply = NULL;
	return 0;
}

/* Nothing for the judge to do (every candidate rejected, or an error): let it go. */
static void
judge_cancel(struct judge *j)
{
	json_t *c;

	if (j->started && !j->joined) {
		/* If even this cannot be written, the judge gives up at wait_s. */
		if ((c = json_pack("{s:b}", "cancel", 1))) {
			judge_post(j, c);
			json_decref(c);
		}
		pthread_join(j->tid, NULL);
		j->joined = 1;
	}
	json_decref(j->reply);
	json_decref(j->stub);
	j->reply = j->stub = NULL;
}

/*
 * The judge enforces --timeout per worker request; this only bounds a
 * judge that hangs itself: every request of every candidate at its limit
 * (up to 8 shape variants assumed), plus the problem and the baselines.
 */
long
eval_judge_budget(const struct eval_opts *o, size_t n)
{
	long per = (long)o->timeout_s * (o->trials * 8 + (o->rounds > 0 ? o->rounds :
	    EVAL_ADAPTIVE_MAX_ROUNDS) + 20) * (o->sanitize ? 3 : 1) + EVAL_BUILD_TIMEOUT_PY_S;

	if (o->profile)		/* the profiler's own deadline */
		per += (long)json_integer_value(json_object_get(o->profile, "timeout_s")) + 30;

	return (long)n * per + JUDGE_SLACK_S;
}

static int
budget_ms(const struct eval_opts *o, const json_t *req)
{
	long budget = eval_judge_budget(o, json_array_size(json_object_get(req, "candidates")));

	return (int)(budget > INT_MAX / 1000 ? INT_MAX / 1000 : budget) * 1000;
}

/* A judge of its own for this request: started now, after the compiles. */
static int
oneshot_call(const struct eval_opts *o, json_t *req, json_t **reply, char *err, size_t errlen)
{
	/* The judge reports its own start (interpreter, imports) from this. */
	json_object_set_new(req, "t_spawn", json_real(wall_s()));
	return harness_call(req, budget_ms(o, req), reply, err, errlen);
}

/*
 * The request to the judge server: the same, but the server's working
 * directory is not ours, so the problem's path is made absolute.
 */
static int
srv_call(const struct eval_opts *o, struct judgesrv *srv, const json_t *req, json_t **reply,
    char *why, size_t whylen)
{
	char abs[PATH_MAX];
	json_t *r = json_deep_copy(req);
	int error;

	if (!r)
		return -ENOMEM;
	if (realpath(o->problem, abs))
		json_object_set_new(r, "problem", json_string(abs));
	error = judgesrv_call(srv, r, budget_ms(o, r), reply, why, whylen);
	json_decref(r);
	return error;
}

/*
 * Choose the judge, once, before the compiles. The judge server, when on
 * (the default), is spawned now if absent and imports PyTorch while the
 * compiles run; any failure to reach it leaves the early-start one-shot
 * judge (KERNELBOT_JUDGE_EARLY=0: that judge starts after the compiles,
 * as one plain harness call).
 */
int
eval_judge_choose(struct eval_judge *b, const struct eval_opts *o, const char *backend,
    const char *workdir, char *err, size_t errlen)
{
	long wait_s;
	int error;

	b->o = o;
	b->judge_kind = JUDGE_ONESHOT;
	b->srv_state = "off";
	if (o->env.judge_late)
		return 0;
	if (!o->judge_server_off && !o->env.judge_server_off) {
		if (judgesrv_open(&b->srv, backend, o->device, b->srv_why,
		    sizeof(b->srv_why)) == 0 && judgesrv_ensure(&b->srv, &b->srv_spawned,
		    b->srv_why, sizeof(b->srv_why)) == 0) {
			b->judge_kind = JUDGE_SERVER;
			return 0;
		}
		b->srv_state = "fallback";
	}
	wait_s = (long)(o->build_timeout_s > 0 ? o->build_timeout_s : EVAL_BUILD_TIMEOUT_S) *
	    (long)o->n_candidates + 60;
	if ((error = judge_start(&b->early, workdir, backend, o->device, wait_s,
	    wait_s + eval_judge_budget(o, o->n_candidates))) < 0) {
		snprintf(err, errlen, "cannot start the judge: %s", strerror(-error));
		return error;
	}
	b->judge_kind = JUDGE_EARLY;
	return 0;
}

/*
 * The one call to the judge that eval_judge_choose() chose.
 */
int
eval_judge_call(struct eval_judge *b, json_t *req, json_t **reply, char *err, size_t errlen)
{
	char herr[2048];
	int error = 0;

	switch (b->judge_kind) {
	case JUDGE_SERVER:
		error = srv_call(b->o, &b->srv, req, reply, b->srv_why, sizeof(b->srv_why));
		b->srv_state = error == 0 ? (b->srv_spawned ? "spawned" : "hit") : "fallback";
		if (error < 0)
			error = oneshot_call(b->o, req, reply, herr, sizeof(herr));
		break;
	case JUDGE_EARLY:
		if ((error = judge_post(&b->early, req)) < 0) {
			snprintf(err, errlen, "cannot write the judge's request in %s: %s",
			    b->early.path, strerror(-error));
			return error;
		}
		error = judge_wait(&b->early, reply, herr, sizeof(herr));
		break;
	case JUDGE_ONESHOT:
		error = oneshot_call(b->o, req, reply, herr, sizeof(herr));
		break;
	}
	if (error < 0)
		snprintf(err, errlen, "the judge failed: %s", herr);
	return error;
}

void
eval_judge_note(const struct eval_judge *b, json_t *bd)
{
	json_object_set_new(bd, "judge_server", json_string(b->srv_state));
	if (!strcmp(b->srv_state, "fallback"))
		json_object_set_new(bd, "judge_server_reason", json_string(b->srv_why));
	if (b->judge_kind == JUDGE_SERVER && b->srv.pid > 0)
		json_object_set_new(bd, "judge_server_pid", json_integer(b->srv.pid));
}

void
eval_judge_free(struct eval_judge *b)
{
	judge_cancel(&b->early);
}
