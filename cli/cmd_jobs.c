/*
 * kernelbot jobs: the job queue, newest first, as a table or as JSON
 * (an array of {id, provider, repo, sha, trigger, state, step, error,
 * retries (failed tries of its fetch), created, tasks: [{id, module, class, slug, state, attempts, runner,
 * arch, published, error}]}), each job followed by its tasks: the
 * coordinator's progress. --runners lists the registered runners instead
 * ({name, host, pid, gpu, backend, arch, device, registered, heartbeat,
 * task}).
 * Reads the store of --data-dir, or of the config's data_dir.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli/cli.h"
#include "conf/config.h"
#include "store/store.h"
#include "common/buf.h"
#include "common/jsonx.h"

static void
jobs_usage(FILE *f)
{
	fprintf(f, "usage: kernelbot jobs [--data-dir DIR | --config FILE] "
	    "[--limit N] [--runners] [--json]\n\n"
	    "The jobs in the store, newest first, with their tasks. Exit 1 when\n"
	    "there is no store. Options [default]:\n"
	    "  --data-dir DIR          the store's directory [the config's data_dir]\n"
	    "  --config FILE           read data_dir from it, no secrets read\n"
	    "                          [/etc/kernelbot/kernelbot.yml]\n"
	    "  --limit N               at most N jobs [all]\n"
	    "  --runners               the runners that registered instead, with when\n"
	    "                          each was last heard from\n"
	    "  --json                  an array of objects\n"
	    "docs/commands/jobs.md has the keys.\n");
}

static void
iso_time(int64_t t, char *out, size_t len)
{
	time_t tt = (time_t)t;
	struct tm tm;

	gmtime_r(&tt, &tm);
	strftime(out, len, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

static json_t *
tasks_json(struct store *s, int64_t job)
{
	struct store_task *t = NULL;
	size_t n = 0;
	json_t *arr = json_array();

	if (store_tasks_of_job(s, job, &t, &n) < 0)
		return arr;
	for (size_t i = 0; i < n; i++)
		json_array_append_new(arr, json_pack("{s:I, s:s, s:s, s:s, s:s, s:i, "
		    "s:s?, s:s?, s:b, s:s?}", "id", (json_int_t)t[i].id, "module",
		    t[i].module, "class", t[i].class_name, "slug", t[i].slug, "state",
		    t[i].state, "attempts", t[i].attempts, "runner", t[i].runner,
		    "arch", t[i].ran_arch ? t[i].ran_arch : (t[i].arch[0] ? t[i].arch :
		    NULL), "published", t[i].published, "error", t[i].error));
	store_tasks_free(t, n);
	return arr;
}

static int
print_json(struct store *s, const struct store_job *jobs, size_t n)
{
	json_t *arr = json_array();
	struct buf b = BUF_INIT(BUF_MAX_DEFAULT * 4);
	char ts[32];
	int error = arr ? 0 : -ENOMEM;

	for (size_t i = 0; i < n && error == 0; i++) {
		iso_time(jobs[i].created, ts, sizeof(ts));
		if (json_array_append_new(arr, json_pack("{s:I, s:s, s:s, s:s, s:s, s:s, "
		    "s:s, s:s?, s:i, s:s, s:o}",
		    "id", (json_int_t)jobs[i].id, "provider", jobs[i].provider,
		    "repo", jobs[i].repo, "sha", jobs[i].sha, "trigger",
		    jobs[i].trigger, "state", jobs[i].state, "step", jobs[i].step,
		    "error", jobs[i].error, "retries", jobs[i].retries, "created",
		    ts, "tasks",
		    tasks_json(s, jobs[i].id))) < 0)
			error = -ENOMEM;
	}
	if (error == 0 && (error = jsonx_dump(arr, JSON_INDENT(2), &b)) == 0)
		printf("%s\n", buf_cstr(&b));
	buf_free(&b);
	json_decref(arr);
	return error;
}

static void
print_tasks(struct store *s, int64_t job)
{
	struct store_task *t = NULL;
	size_t n = 0;

	if (store_tasks_of_job(s, job, &t, &n) < 0)
		return;
	for (size_t i = 0; i < n; i++)
		printf("       task %-5lld %-40s %-9s attempt %d%s%s%s%s\n",
		    (long long)t[i].id, t[i].module, t[i].state, t[i].attempts,
		    t[i].runner ? " on " : "", t[i].runner ? t[i].runner : "",
		    t[i].published ? " published" : "", t[i].error ? " (error)" : "");
	store_tasks_free(t, n);
}

static void
print_table(struct store *s, const struct store_job *jobs, size_t n)
{
	char ts[32];

	printf("%-6s %-8s %-30s %-12s %-8s %-8s %s\n", "ID", "PROVIDER", "REPO",
	    "SHA", "TRIGGER", "STATE", "CREATED");
	for (size_t i = 0; i < n; i++) {
		iso_time(jobs[i].created, ts, sizeof(ts));
		printf("%-6lld %-8s %-30s %-12.12s %-8s %-8s %s\n",
		    (long long)jobs[i].id, jobs[i].provider, jobs[i].repo,
		    jobs[i].sha, jobs[i].trigger, jobs[i].state, ts);
		if (jobs[i].error)
			printf("       error: %s\n", jobs[i].error);
		print_tasks(s, jobs[i].id);
	}
}

static int
print_runners(struct store *s, int json)
{
	struct store_runner *v = NULL;
	struct buf b = BUF_INIT(BUF_MAX_DEFAULT);
	json_t *arr = NULL;
	char reg[32], hb[32];
	size_t n = 0;
	int error;

	if ((error = store_runners_list(s, &v, &n)) < 0)
		return error;
	if (json && !(arr = json_array()))
		error = -ENOMEM;
	if (!json)
		printf("%-24s %-16s %-8s %-4s %-8s %-8s %-24s %-6s %s\n", "NAME", "HOST",
		    "PID", "GPU", "BACKEND", "ARCH", "DEVICE", "TASK", "LAST SEEN");
	for (size_t i = 0; i < n && error == 0; i++) {
		iso_time(v[i].registered, reg, sizeof(reg));
		iso_time(v[i].heartbeat, hb, sizeof(hb));
		if (!json) {
			printf("%-24s %-16s %-8lld %-4d %-8s %-8s %-24.24s %-6lld %s\n",
			    v[i].name, v[i].host, (long long)v[i].pid, v[i].gpu,
			    v[i].backend, v[i].arch, v[i].device, (long long)v[i].task, hb);
			continue;
		}
		if (json_array_append_new(arr, json_pack("{s:s, s:s, s:I, s:i, s:s, s:s, "
		    "s:s, s:s, s:s, s:I}", "name", v[i].name, "host", v[i].host, "pid",
		    (json_int_t)v[i].pid, "gpu", v[i].gpu, "backend", v[i].backend,
		    "arch", v[i].arch, "device", v[i].device, "registered", reg,
		    "heartbeat", hb, "task", (json_int_t)v[i].task)) < 0)
			error = -ENOMEM;
	}
	if (json && error == 0 && (error = jsonx_dump(arr, JSON_INDENT(2), &b)) == 0)
		printf("%s\n", buf_cstr(&b));
	json_decref(arr);
	buf_free(&b);
	store_runners_free(v, n);
	return error;
}

int
cmd_jobs(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "config", required_argument, NULL, 'c' },
		{ "data-dir", required_argument, NULL, 'd' },
		{ "limit", required_argument, NULL, 'n' },
		{ "json", no_argument, NULL, 'j' },
		{ "runners", no_argument, NULL, 'r' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *config_path = NULL, *data_dir = NULL;
	struct config *cfg = NULL;
	struct store *store = NULL;
	struct store_job *jobs = NULL;
	size_t n = 0, limit = 0;
	int opt, json = 0, runners = 0, rc, error;
	char *end;

	optind = 1;
	while ((opt = getopt_long(argc, argv, "c:d:n:jrh", opts, NULL)) != -1) {
		switch (opt) {
		case 'r': runners = 1; break;
		case 'c': config_path = optarg; break;
		case 'd': data_dir = optarg; break;
		case 'j': json = 1; break;
		case 'n':
			errno = 0;
			limit = strtoul(optarg, &end, 10);
			if (errno || *end || !*optarg || optarg[0] == '-')
				return cli_usage_error("jobs", "--limit wants a number, not '%s'", optarg);
			break;
		case 'h': jobs_usage(stdout); return 0;
		default: jobs_usage(stderr); return EXIT_USAGE;
		}
	}
	if (optind < argc)
		return cli_usage_error("jobs", "unexpected argument '%s'", argv[optind]);
	if (config_path && data_dir)
		return cli_usage_error("jobs", "give --data-dir or --config, not both");
	if (!data_dir) {
		/* The store is all it needs: secrets stay unread. */
		if ((rc = config_load_cli("jobs", config_path, CONFIG_NO_SECRETS, &cfg)) != 0)
			return rc;
		data_dir = config_data_dir(cfg);
	}
	rc = 1;
	if ((error = store_open(data_dir, STORE_OPEN_EXISTING, &store)) < 0) {
		fprintf(stderr, "kernelbot jobs: cannot open the store in %s: %s\n",
		    data_dir, error == -ENOENT ? "no kernelbot.db there" : strerror(-error));
		goto out;
	}
	if (runners) {
		if ((error = print_runners(store, json)) < 0) {
			fprintf(stderr, "kernelbot jobs: %s\n", error == -ENOMEM ?
			    "out of memory" : store_errmsg(store));
			goto out;
		}
		rc = 0;
		goto out;
	}
	if ((error = store_jobs_list(store, limit, &jobs, &n)) < 0) {
		fprintf(stderr, "kernelbot jobs: %s\n", store_errmsg(store));
		goto out;
	}
	if (json) {
		if (print_json(store, jobs, n) < 0)
			goto out;
	} else {
		print_table(store, jobs, n);
	}
	rc = 0;
out:
	store_jobs_free(jobs, n);
	store_close(store);
	config_free(cfg);
	return rc;
}
