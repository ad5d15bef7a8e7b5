/*
 * coord_runners: the `runners:` and `schedule:` configuration, and the
 * local runners `serve` starts: one supervisor thread per runner that
 * spawns `kernelbot runner` (through common/spawn.h, in its own process
 * group, killed when serve dies through PR_SET_PDEATHSIG) and starts it
 * again when it exits, with a growing pause so a runner that cannot start
 * does not spin.
 */
#include "coord/coord_internal.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

#include "common/jsonx.h"
#include "common/log.h"
#include "common/spawn.h"
#include "gpu/device.h"

#define RUNNER_PAUSE_MAX_MS 30000

extern char **environ;

static int
int_key(const struct config *cfg, const json_t *sec, const char *key,
    const char *path, long lo, long hi, int *out, char *err, size_t errlen)
{
	const json_t *v = json_object_get(sec, key);

	if (!v)
		return 0;
	if (!json_is_integer(v) || json_integer_value(v) < lo ||
	    json_integer_value(v) > hi)
		return config_error(cfg, err, errlen, path, v,
		    "must be a whole number from %ld to %ld", lo, hi);
	*out = (int)json_integer_value(v);
	return 0;
}

static int
strv_key(const struct config *cfg, const json_t *sec, const char *key,
    const char *path, json_t **out, char *err, size_t errlen)
{
	const json_t *v = json_object_get(sec, key), *it;
	size_t i;

	if (!v)
		return 0;
	if (!json_is_array(v) || json_array_size(v) > 64)
		return config_error(cfg, err, errlen, path, v,
		    "must be a list of at most 64 strings");
	json_array_foreach(v, i, it)
		if (!json_is_string(it) && !json_is_integer(it))
			return config_error(cfg, err, errlen, path, it,
			    "must be a list of strings");
	*out = json_array();
	json_array_foreach(v, i, it) {
		char num[32];

		if (json_is_integer(it)) {
			snprintf(num, sizeof(num), "%lld", (long long)json_integer_value(it));
			json_array_append_new(*out, json_string(num));
		} else {
			json_array_append(*out, (json_t *)it);
		}
	}
	return 0;
}

static int
local_key(const struct config *cfg, const json_t *v, const char *path,
    int *out, char *err, size_t errlen)
{
	if (json_is_string(v) && !strcmp(json_string_value(v), "auto"))
		*out = COORD_RUNNERS_AUTO;
	else if (json_is_string(v) && !strcmp(json_string_value(v), "none"))
		*out = 0;
	else if (json_is_integer(v) && json_integer_value(v) >= 0 &&
	    json_integer_value(v) <= COORD_MAX_LOCAL)
		*out = (int)json_integer_value(v);
	else
		return config_error(cfg, err, errlen, path, v,
		    "must be auto, none or a number of runners from 0 to %d",
		    COORD_MAX_LOCAL);
	return 0;
}

int
coord_opts_load(const struct config *cfg, struct coord_opts *o, char *err,
    size_t errlen)
{
	static const char *const keys[] = { "local", "coordinator", "lease_s", "max_attempts",
		"poll_ms", "timeout_s", "optimize_args", "benchmark_args", "command",
		"work_keep_failed_h", "retries", "retry_base_ms", "retry_max_ms", NULL };
	const json_t *root = config_tree(cfg);
	const json_t *r = json_object_get(root, "runners");
	const json_t *sch = json_object_get(root, "schedule"), *it;
	const char *k;
	json_t *v;
	size_t i;
	int rc;

	memset(o, 0, sizeof(*o));
	o->coordinator = 1;
	o->local_runners = COORD_RUNNERS_AUTO;
	o->lease_s = 60;
	o->max_attempts = 3;
	o->poll_ms = 1000;
	o->timeout_s = 7200;
	o->work_keep_failed_h = 24;
	o->retries = COORD_RETRIES;
	o->retry_base_ms = COORD_RETRY_BASE_MS;
	o->retry_max_ms = COORD_RETRY_MAX_MS;
	if (r && !json_is_object(r)) {
		if ((rc = local_key(cfg, r, "runners", &o->local_runners, err,
		    errlen)) < 0)
			return rc;
	} else if (r) {
		json_object_foreach((json_t *)r, k, v) {
			int known = 0;

			for (const char *const *p = keys; *p; p++)
				known |= !strcmp(*p, k);
			if (!known) {
				char path[300];

				snprintf(path, sizeof(path), "runners.%s", k);
				return config_error(cfg, err, errlen, path, v,
				    "unknown key (known: local, coordinator, lease_s, max_attempts, "
				    "poll_ms, timeout_s, work_keep_failed_h, retries, "
				    "retry_base_ms, retry_max_ms, optimize_args, "
				    "benchmark_args, command)");
			}
		}
		if ((v = json_object_get(r, "coordinator"))) {
			if (!json_is_boolean(v))
				return config_error(cfg, err, errlen, "runners.coordinator",
				    v, "must be true or false");
			o->coordinator = json_is_true(v);
		}
		if ((v = json_object_get(r, "local")) && (rc = local_key(cfg, v,
		    "runners.local", &o->local_runners, err, errlen)) < 0)
			return rc;
		if ((rc = int_key(cfg, r, "lease_s", "runners.lease_s", 1, 86400,
		    &o->lease_s, err, errlen)) < 0 ||
		    (rc = int_key(cfg, r, "max_attempts", "runners.max_attempts", 1,
		    100, &o->max_attempts, err, errlen)) < 0 ||
		    (rc = int_key(cfg, r, "poll_ms", "runners.poll_ms", 10, 60000,
		    &o->poll_ms, err, errlen)) < 0 ||
		    (rc = int_key(cfg, r, "timeout_s", "runners.timeout_s", 1,
		    7 * 86400, &o->timeout_s, err, errlen)) < 0 ||
		    (rc = int_key(cfg, r, "work_keep_failed_h",
		    "runners.work_keep_failed_h", 0, 24 * 365,
		    &o->work_keep_failed_h, err, errlen)) < 0 ||
		    (rc = int_key(cfg, r, "retries", "runners.retries", 0, 100,
		    &o->retries, err, errlen)) < 0 ||
		    (rc = int_key(cfg, r, "retry_base_ms", "runners.retry_base_ms", 10,
		    3600000, &o->retry_base_ms, err, errlen)) < 0 ||
		    (rc = int_key(cfg, r, "retry_max_ms", "runners.retry_max_ms", 10,
		    86400000, &o->retry_max_ms, err, errlen)) < 0 ||
		    (rc = strv_key(cfg, r, "optimize_args", "runners.optimize_args",
		    &o->optimize_args, err, errlen)) < 0 ||
		    (rc = strv_key(cfg, r, "benchmark_args", "runners.benchmark_args",
		    &o->benchmark_args, err, errlen)) < 0 ||
		    (rc = strv_key(cfg, r, "command", "runners.command", &o->command,
		    err, errlen)) < 0)
			goto fail;
		if (o->retry_max_ms < o->retry_base_ms) {
			rc = config_error(cfg, err, errlen, "runners.retry_max_ms",
			    json_object_get(r, "retry_max_ms"),
			    "must be at least retry_base_ms (%d)", o->retry_base_ms);
			goto fail;
		}
		if (o->command && json_array_size(o->command) == 0) {
			rc = config_error(cfg, err, errlen, "runners.command", NULL,
			    "must name a program");
			goto fail;
		}
	}
	if (sch && !json_is_null(sch)) {
		json_t *list = json_is_array(sch) ? json_incref((json_t *)sch) :
		    json_pack("[O]", sch);

		json_array_foreach(list, i, it) {
			char why[256];

			if (i >= COORD_MAX_SCHEDULES || !json_is_string(it) ||
			    cron_parse(json_string_value(it), &o->schedules[i], why,
			    sizeof(why)) < 0) {
				rc = config_error(cfg, err, errlen, "schedule", it, "%s",
				    i >= COORD_MAX_SCHEDULES ? "too many expressions" :
				    !json_is_string(it) ? "must be a cron expression in "
				    "quotes, or a list of them" : why);
				json_decref(list);
				goto fail;
			}
			o->n_schedules++;
		}
		json_decref(list);
	}
	return 0;
fail:
	coord_opts_free(o);
	return rc;
}

void
coord_opts_free(struct coord_opts *o)
{
	json_decref(o->command);
	json_decref(o->optimize_args);
	json_decref(o->benchmark_args);
	o->command = o->optimize_args = o->benchmark_args = NULL;
}

/* In the child, before exec: die with serve, whatever kills it. */
static int
die_with_parent(void *arg)
{
	(void)arg;
	if (prctl(PR_SET_PDEATHSIG, SIGTERM) < 0)
		return errno;
	return 0;
}

static void
started(pid_t pid, void *arg)
{
	struct coord_runner *r = arg;

	atomic_store(&r->pid, (int)pid);
}

/*
 * The runner's environment: ours (it is our own binary, and optimize
 * needs what we were given, the LLM keys among them) without systemd's
 * per-service variables, which name serve and must not be taken for the
 * runner's own.
 */
static const char **
runner_env(void)
{
	static const char *const drop[] = { "NOTIFY_SOCKET=", "WATCHDOG_USEC=",
		"WATCHDOG_PID=", "LISTEN_FDS=", "LISTEN_PID=", "LISTEN_FDNAMES=",
		NULL };
	size_t n = 0, k = 0;
	const char **env;

	while (environ[n])
		n++;
	if (!(env = calloc(n + 1, sizeof(*env))))
		return NULL;
	for (size_t i = 0; i < n; i++) {
		int keep = 1;

		for (const char *const *d = drop; *d && keep; d++)
			keep = strncmp(environ[i], *d, strlen(*d)) != 0;
		if (keep)
			env[k++] = environ[i];
	}
	env[k] = NULL;
	return env;
}

static void *
supervise(void *arg)
{
	struct coord_runner *r = arg;
	struct coord *c = r->c;
	char gpu[32], name[96], host[64] = "localhost";
	const char *argv[16], **env = runner_env();
	int pause_ms = 1000, n = 0;

	gethostname(host, sizeof(host) - 1);
	argv[n++] = c->self_exe;
	argv[n++] = "runner";
	if (c->config_file[0]) {
		argv[n++] = "--config";
		argv[n++] = c->config_file;
	}
	argv[n++] = "--data-dir";
	argv[n++] = c->data_dir;
	if (r->gpu < 0) {
		argv[n++] = "--cpu";
		/* Each its own name: the name is its lease owner and work area. */
		if (r->cpu_index)
			snprintf(name, sizeof(name), "%s-cpu%d", host, r->cpu_index);
		else
			snprintf(name, sizeof(name), "%s-cpu", host);
	} else {
		snprintf(gpu, sizeof(gpu), "%d", r->gpu);
		argv[n++] = "--gpu";
		argv[n++] = gpu;
		snprintf(name, sizeof(name), "%s-gpu%d", host, r->gpu);
	}
	argv[n++] = "--name";
	argv[n++] = name;
	argv[n] = NULL;
	while (!atomic_load(&c->stop)) {
		struct spawn_opts o = SPAWN_OPTS_INIT;
		struct spawn_result res;
		int rc;

		memset(&res, 0, sizeof(res));
		o.argv = argv;
		o.envp = env;
		o.stdio_inherit = 1;			/* its log lines join serve's */
		o.child_setup = die_with_parent;
		o.on_start = started;
		o.start_arg = r;
		rc = spawn_run(&o, &res);
		atomic_store(&r->pid, 0);
		if (atomic_load(&c->stop)) {
			spawn_result_free(&res);
			break;
		}
		if (rc < 0)
			log_error("cannot start a local runner", "name=%s err=\"%s\"",
			    name, strerror(-rc));
		else
			log_warn("local runner exited; starting it again", "name=%s "
			    "status=%d pause_ms=%d", name, res.status, pause_ms);
		/* One that ran a good while before it exited starts over quickly. */
		if (rc == 0 && res.wall_s > 60)
			pause_ms = 1000;
		spawn_result_free(&res);
		coord_nap(c, pause_ms);
		pause_ms = pause_ms * 2 > RUNNER_PAUSE_MAX_MS ? RUNNER_PAUSE_MAX_MS :
		    pause_ms * 2;
	}
	free(env);
	return NULL;
}

int
coord_runners_start(struct coord *c)
{
	struct gpu_device *gpus = NULL;
	int n = c->opts.local_runners, ngpu = 0, rc;

	if (n == COORD_RUNNERS_AUTO) {
		if (gpu_list(&gpus, &ngpu, NULL, 0) < 0)
			ngpu = 0;
		n = ngpu > 0 ? ngpu : 1;
	}
	if (n == 0)
		goto out;
	if (!(c->runners = calloc((size_t)n, sizeof(*c->runners)))) {
		free(gpus);
		return -ENOMEM;
	}
	for (int i = 0; i < n; i++) {
		struct coord_runner *r = &c->runners[i];

		r->c = c;
		/* runners: N without GPUs: N CPU runners; with: one per GPU index. */
		r->gpu = i < ngpu ? gpus[i].index : -1;
		r->cpu_index = i < ngpu ? 0 : i - ngpu;
		if ((rc = pthread_create(&r->thread, NULL, supervise, r)) != 0) {
			free(gpus);
			return -rc;
		}
		r->started = 1;
		c->n_runners = i + 1;
	}
	log_info("local runners started", "count=%d gpus=%d", n, ngpu);
out:
	free(gpus);
	return 0;
}

void
coord_runners_stop(struct coord *c)
{
	for (int i = 0; i < c->n_runners; i++) {
		int pid = atomic_load(&c->runners[i].pid);

		if (pid > 0)
			kill(-pid, SIGTERM);
	}
	for (int i = 0; i < c->n_runners; i++) {
		/* A runner that started between the signal and now gets its own. */
		while (c->runners[i].started) {
			struct timespec ts = { 0, 50000000L };
			int pid = atomic_load(&c->runners[i].pid);

			if (pthread_tryjoin_np(c->runners[i].thread, NULL) == 0)
				break;
			if (pid > 0)
				kill(-pid, SIGTERM);
			nanosleep(&ts, NULL);
		}
	}
	free(c->runners);
	c->runners = NULL;
	c->n_runners = 0;
}
