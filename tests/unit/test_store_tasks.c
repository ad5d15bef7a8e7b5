/*
 * store/store_tasks.c and store/store_coord.c: the coordinator's tables
 * through store/store.h: tasks (idempotent creation, claims by backend and
 * arch, leases, cancel, requeue and the attempt limit), runners,
 * commands and cleanups, delivered modules, clocks.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "store/store.h"
#include "t.h"

static int64_t now_s = 2000000;

static int64_t
clock_fake(void *arg)
{
	(void)arg;
	return now_s;
}

static int64_t
push_job(struct store *s, const char *id)
{
	struct store_delivery d = { 0 };

	d.provider = "github";
	d.delivery_id = id;
	d.event = "push";
	d.repo = "acme/m";
	d.outcome = "accepted";
	d.work = STORE_WORK_JOB;
	d.clone_url = "file:///x";
	/* one commit per delivery: the same push again would be a duplicate */
	d.sha = !strcmp(id, "p1") ? "1111111111111111111111111111111111111111" :
	    "2222222222222222222222222222222222222222";
	d.ref = "refs/heads/main";
	d.trigger = "push";
	if (store_intake(s, &d, 1) < 0 || d.error)
		return -1;
	return d.work_id;
}

static int64_t
command(struct store *s, const char *id, const char *cmd)
{
	struct store_delivery d = { 0 };

	d.provider = "github";
	d.delivery_id = id;
	d.event = "issue_comment";
	d.repo = "acme/m";
	d.outcome = "accepted";
	d.work = STORE_WORK_COMMAND;
	d.pr = 7;
	d.command = cmd;
	d.actor = "alice";
	d.comment_id = 99 + (int64_t)strlen(cmd);	/* one comment per command */
	if (store_intake(s, &d, 1) < 0 || d.error)
		return -1;
	return d.work_id;
}

static void
tasks(struct store *s)
{
	struct store_task_spec v[3] = {
		{ "a.py", "Model", "a", NULL, NULL, NULL },
		{ "b.py", "Model", "b", "cuda", "sm_90", NULL },
		{ "c.py", "Model", "c", NULL, NULL, "benchmark" },
	};
	struct store_job j;
	struct store_task t, *list = NULL;
	struct store_task_result r = { 0 };
	size_t n = 0;
	int64_t job = push_job(s, "p1"), tn = 0;
	int req = -1, failed = -1, nc = 0;

	CHECK("a job", job > 0);
	CHECK_INT("tasks need the job's lease", store_tasks_create(s, job, "coord",
	    "acme/m", "1111", v, 3, "tasks"), -ESTALE);
	CHECK_INT("no tasks then", store_count(s, "tasks", &tn) == 0 ? tn : -1, 0);
	CHECK_INT("claim the job", store_job_claim(s, "coord", 30, &j), 0);
	store_job_free(&j);
	CHECK_INT("create three tasks", store_tasks_create(s, job, "coord", "acme/m",
	    "1111", v, 3, "tasks"), 0);
	CHECK_INT("again: nothing duplicated", store_tasks_create(s, job, "coord",
	    "acme/m", "1111", v, 3, "tasks"), 0);
	CHECK_INT("three tasks", store_count(s, "tasks", &tn) == 0 ? tn : -1, 3);
	CHECK_INT("the job's step", store_job_get(s, job, &j), 0);
	CHECK_STR("step is tasks", j.step, "tasks");
	store_job_free(&j);
	CHECK_INT("a spec without a module is refused", store_tasks_create(s, job,
	    "coord", "acme/m", "1111", (struct store_task_spec[]){ { NULL, "Model",
	    "x", NULL, NULL, NULL } }, 1, "tasks"), -EINVAL);

	/* A CPU runner gets a and c, never the sm_90 task. */
	CHECK_INT("cpu claims", store_task_claim(s, "cpu0", "cpu", "cpu", 10, &t), 0);
	CHECK_STR("the oldest it can run", t.module, "a.py");
	CHECK_INT("attempt 1", t.attempts, 1);
	CHECK_STR("running", t.state, STORE_TASK_RUNNING);
	store_task_free(&t);
	CHECK_INT("cpu claims again", store_task_claim(s, "cpu0", "cpu", "cpu", 10, &t), 0);
	CHECK_STR("skips the sm_90 task", t.module, "c.py");
	CHECK_STR("kind kept", t.kind, "benchmark");
	store_task_free(&t);
	CHECK_INT("nothing else for cpu", store_task_claim(s, "cpu0", "cpu", "cpu", 10, &t), -ENOENT);
	CHECK_INT("an sm_80 GPU does not get sm_90 work",
	    store_task_claim(s, "gpu1", "cuda", "sm_80", 10, &t), -ENOENT);
	CHECK_INT("an sm_90 GPU does", store_task_claim(s, "gpu0", "cuda", "sm_90", 10, &t), 0);
	CHECK_STR("the sm_90 task", t.module, "b.py");
	store_task_free(&t);

	CHECK_INT("heartbeat by the owner", store_task_heartbeat(s, 1, "cpu0", 10), 0);
	CHECK_INT("heartbeat by another", store_task_heartbeat(s, 1, "gpu0", 10), -ESTALE);
	r.state = STORE_TASK_DONE;
	r.ran_backend = "cpu";
	r.ran_arch = "cpu";
	r.out_dir = "/d/task-1";
	r.summary = "{\"status\":\"improved\"}";
	CHECK_INT("finish by another: stale", store_task_finish(s, 1, "gpu0", &r), -ESTALE);
	CHECK_INT("finish", store_task_finish(s, 1, "cpu0", &r), 0);
	CHECK_INT("finish twice: stale", store_task_finish(s, 1, "cpu0", &r), -ESTALE);
	r.state = "running";
	CHECK_INT("finish with a bad state", store_task_finish(s, 3, "cpu0", &r), -EINVAL);
	CHECK_INT("get it", store_task_get(s, 1, &t), 0);
	CHECK_STR("done", t.state, "done");
	CHECK_STR("summary kept", t.summary, "{\"status\":\"improved\"}");
	CHECK_STR("ran arch kept", t.ran_arch, "cpu");
	CHECK_INT("no lease", t.lease_expires, 0);
	store_task_free(&t);

	/* stop: c (running) and nothing else of slug c. */
	CHECK_INT("cancel slug c", store_tasks_cancel(s, "acme/m", "c", &nc), 0);
	CHECK_INT("one cancelled", nc, 1);
	CHECK_INT("its runner's heartbeat is refused", store_task_heartbeat(s, 3, "cpu0", 10), -ESTALE);
	CHECK_INT("published flag", store_task_set_published(s, 1), 0);
	CHECK_INT("published on a missing task", store_task_set_published(s, 99), -ENOENT);

	/* b's runner dies: its lease runs out, the task is queued again. */
	now_s += 11;
	CHECK_INT("requeue expired", store_tasks_requeue_expired(s, 2, &req, &failed), 0);
	CHECK_INT("one requeued", req, 1);
	CHECK_INT("none failed", failed, 0);
	CHECK_INT("claimed again", store_task_claim(s, "gpu0", "cuda", "sm_90", 10, &t), 0);
	CHECK_INT("attempt 2", t.attempts, 2);
	store_task_free(&t);
	now_s += 11;
	CHECK_INT("expired at the limit", store_tasks_requeue_expired(s, 2, &req, &failed), 0);
	CHECK_INT("failed, not requeued", failed * 10 + req, 10);
	CHECK_INT("the failed task", store_task_get(s, 2, &t), 0);
	CHECK_STR("failed", t.state, "failed");
	CHECK("says why", t.error && strstr(t.error, "stopped heartbeating 2 times"));
	store_task_free(&t);

	CHECK_INT("tasks of the job", store_tasks_of_job(s, job, &list, &n), 0);
	CHECK_INT("three", n, 3);
	if (n == 3) {
		CHECK_STR("a done", list[0].state, "done");
		CHECK_INT("a published", list[0].published, 1);
		CHECK_STR("b failed", list[1].state, "failed");
		CHECK_STR("c cancelled", list[2].state, "cancelled");
	}
	store_tasks_free(list, n);
	CHECK_INT("step of a job not held", store_job_set_step(s, job, "other", "x", NULL), -ESTALE);
}

static void
release(struct store *s)
{
	struct store_task_spec v = { "r.py", "Model", "r", NULL, NULL, NULL };
	struct store_job j;
	struct store_task t;
	int64_t job = push_job(s, "p2");

	now_s += 100;
	store_jobs_requeue_expired(s, 0, NULL, NULL);
	while (store_job_claim(s, "coord", 30, &j) == 0) {
		if (j.id == job)
			CHECK_INT("create", store_tasks_create(s, job, "coord", "acme/m",
			    "1111", &v, 1, "tasks"), 0);
		store_job_free(&j);
	}
	CHECK_INT("claim r", store_task_claim(s, "cpu0", "cpu", "cpu", 10, &t), 0);
	CHECK_INT("release it", store_task_release(s, t.id, "cpu0"), 0);
	CHECK_INT("release again: stale", store_task_release(s, t.id, "cpu0"), -ESTALE);
	store_task_free(&t);
	CHECK_INT("queued again", store_task_claim(s, "cpu1", "cpu", "cpu", 10, &t), 0);
	CHECK_STR("by the next runner", t.runner, "cpu1");
	store_task_free(&t);
}

static void
runners(struct store *s)
{
	struct store_runner r = { 0 }, *v = NULL;
	size_t n = 0;

	r.name = "host-gpu0";
	r.host = "host";
	r.pid = 42;
	r.gpu = 0;
	r.backend = "cuda";
	r.arch = "sm_90";
	r.device = "NVIDIA H200";
	CHECK_INT("register", store_runner_register(s, &r), 0);
	r.pid = 43;
	CHECK_INT("register again (restart)", store_runner_register(s, &r), 0);
	CHECK_INT("heartbeat", store_runner_heartbeat(s, "host-gpu0", 5), 0);
	CHECK_INT("heartbeat of a stranger", store_runner_heartbeat(s, "nobody", 0), -ENOENT);
	CHECK_INT("list", store_runners_list(s, &v, &n), 0);
	CHECK_INT("one runner", n, 1);
	if (n == 1) {
		CHECK_INT("its new pid", v[0].pid, 43);
		CHECK_STR("its arch", v[0].arch, "sm_90");
		CHECK_INT("its task", v[0].task, 5);
	}
	store_runners_free(v, n);
	r.arch = NULL;
	CHECK_INT("no arch: refused", store_runner_register(s, &r), -EINVAL);
}

static void
commands(struct store *s)
{
	struct store_command c;
	struct store_command *v = NULL;
	size_t n = 0;
	int64_t a = command(s, "c1", "retry"), b = command(s, "c2", "stop");

	CHECK("two commands", a > 0 && b > a);
	CHECK_INT("claim", store_command_claim(s, "coord", 5, &c), 0);
	CHECK_INT("the oldest", c.id, a);
	CHECK_STR("its command", c.command, "retry");
	CHECK_INT("its comment", c.comment_id, 99 + 5);
	CHECK_INT("finish with a bad state", store_command_finish(s, c.id, "coord", "ok", NULL), -EINVAL);
	CHECK_INT("finish refused", store_command_finish(s, c.id, "coord", "refused", "no"), 0);
	CHECK_INT("finish twice: stale", store_command_finish(s, c.id, "coord", "done", NULL), -ESTALE);
	store_command_free(&c);
	CHECK_INT("claim b", store_command_claim(s, "coord", 5, &c), 0);
	store_command_free(&c);
	CHECK_INT("nothing pending", store_command_claim(s, "coord", 5, &c), -ENOENT);
	now_s += 6;
	CHECK_INT("requeue expired", store_commands_requeue_expired(s, 0), 0);
	CHECK_INT("b again", store_command_claim(s, "coord2", 5, &c), 0);
	CHECK_INT("second attempt", c.attempts, 2);
	CHECK_INT("heartbeat", store_command_heartbeat(s, c.id, "coord2", 5), 0);
	CHECK_INT("the old owner cannot finish", store_command_finish(s, c.id, "coord", "done", NULL), -ESTALE);
	store_command_free(&c);
	now_s += 6;
	CHECK_INT("expired at the limit", store_commands_requeue_expired(s, 2), 0);
	CHECK_INT("list", store_commands_list(s, &v, &n), 0);
	if (n == 2) {
		CHECK_STR("a refused", v[0].state, "refused");
		CHECK_STR("a's answer", v[0].result, "no");
		CHECK_STR("b failed after its attempts", v[1].state, "failed");
	} else {
		CHECK_INT("two listed", n, 2);
	}
	store_commands_free(v, n);
}

static void
delivered(struct store *s)
{
	struct store_delivered d = { 0 }, *v = NULL;
	size_t n = 0;
	int64_t x;

	d.repo = "acme/m";
	d.slug = "a";
	d.arch = "cpu";
	d.provider = "github";
	d.clone_url = "file:///x";
	d.base_branch = "main";
	d.module = "a.py";
	d.class_name = "Model";
	d.last_sha = "1111";
	d.pr = 7;
	d.out_dir = "/d/1";
	CHECK_INT("put", store_delivered_put(s, &d), 0);
	d.arch = "sm_90";
	d.out_dir = "/d/2";
	CHECK_INT("put another arch", store_delivered_put(s, &d), 0);
	d.out_dir = "/d/3";
	d.last_sha = "2222";
	CHECK_INT("put the same key again", store_delivered_put(s, &d), 0);
	CHECK_INT("list the module", store_delivered_list(s, "acme/m", "a", &v, &n), 0);
	CHECK_INT("two arches", n, 2);
	if (n == 2) {
		CHECK_STR("cpu first", v[0].arch, "cpu");
		CHECK_STR("replaced in place", v[1].out_dir, "/d/3");
		CHECK_STR("with its sha", v[1].last_sha, "2222");
	}
	store_delivered_list_free(v, n);
	CHECK_INT("has sm_90", store_delivered_has_arch(s, "sm_90"), 1);
	CHECK_INT("has no sm_80", store_delivered_has_arch(s, "sm_80"), 0);
	CHECK_INT("by PR", store_delivered_by_pr(s, "acme/m", 7, &v, &n), 0);
	CHECK_INT("both rows of PR 7", n, 2);
	store_delivered_list_free(v, n);
	CHECK_INT("the PR closes", store_delivered_clear_pr(s, "acme/m", 7), 0);
	CHECK_INT("by PR after", store_delivered_by_pr(s, "acme/m", 7, &v, &n), 0);
	CHECK_INT("none", n, 0);
	store_delivered_list_free(v, n);
	CHECK_INT("every repo", store_delivered_list(s, NULL, NULL, &v, &n), 0);
	CHECK_INT("still two rows, kernels kept", n, 2);
	if (n)
		CHECK_INT("pr 0", v[0].pr, 0);
	store_delivered_list_free(v, n);
	d.out_dir = NULL;
	CHECK_INT("no out_dir: refused", store_delivered_put(s, &d), -EINVAL);

	CHECK_INT("a clock never set", store_clock_get(s, "x", &x), -ENOENT);
	CHECK_INT("set", store_clock_set(s, "x", 12), 0);
	CHECK_INT("set again", store_clock_set(s, "x", 13), 0);
	CHECK_INT("get", store_clock_get(s, "x", &x), 0);
	CHECK_INT("the last value", x, 13);
}

static void
job_add(struct store *s)
{
	struct store_job_new nj = { "github", "acme/m", "file:///x", NULL,
		"3333", "schedule", "{\"modules\":[]}" };
	struct store_job j;
	int64_t id = 0;

	CHECK_INT("add a job", store_job_add(s, &nj, &id), 0);
	CHECK_INT("get it", store_job_get(s, id, &j), 0);
	CHECK_STR("queued", j.state, "queued");
	CHECK_STR("step new", j.step, "new");
	CHECK_STR("trigger", j.trigger, "schedule");
	CHECK("no before", j.before == NULL);
	store_job_free(&j);
	store_jobs_requeue_expired(s, 0, NULL, NULL);
	while (store_job_claim(s, "coordA", 30, &j) == 0) {
		int mine = j.id == id;

		store_job_free(&j);
		if (mine)
			break;
	}
	CHECK_INT("another cannot release it", store_job_release(s, id, "coordB"), -ESTALE);
	CHECK_INT("its holder hands it back", store_job_release(s, id, "coordA"), 0);
	CHECK_INT("queued at once, for the next", store_job_claim(s, "coordB", 30, &j), 0);
	CHECK_INT("the same job", j.id, id);
	CHECK_INT("its second lease", j.attempts, 2);
	store_job_free(&j);
	nj.sha = NULL;
	CHECK_INT("no sha: refused", store_job_add(s, &nj, &id), -EINVAL);
}

int
main(void)
{
	char dir[] = "/tmp/coord-test_store_tasks.XXXXXX";
	struct store *s = NULL;
	char cmd[128];

	if (!mkdtemp(dir) || store_open(dir, 0, &s) < 0) {
		printf("cannot open a store in %s\n", dir);
		return 1;
	}
	store_set_clock(s, clock_fake, NULL);
	tasks(s);
	release(s);
	runners(s);
	commands(s);
	delivered(s);
	job_add(s);
	store_close(s);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	if (system(cmd) != 0)
		printf("could not remove %s\n", dir);
	return t_done("test_store_tasks");
}
