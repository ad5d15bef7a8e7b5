/* coord/coord: the runners: and schedule: configuration, and kernelbot.example.yml's. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "conf/config.h"
#include "coord/coord.h"
#include "t.h"

/* Parse text as a server config and its coordinator options. */
static int
load(const char *text, struct coord_opts *o, char *err, size_t errlen)
{
	struct config *c = NULL;
	int rc;

	if ((rc = config_parse("kb.yml", text, strlen(text), CONFIG_NO_SECRETS, &c,
	    err, errlen)) < 0)
		return rc;
	rc = coord_opts_load(c, o, err, errlen);
	config_free(c);
	return rc;
}

static int
refused(const char *text, const char *want)
{
	struct coord_opts o;
	char err[512] = "";
	int rc = load(text, &o, err, sizeof(err));

	if (rc == 0)
		coord_opts_free(&o);
	if (rc != -EINVAL || !strstr(err, want)) {
		printf("     rc %d err \"%s\", want \"%s\"\n", rc, err, want);
		return 0;
	}
	return 1;
}

int
main(void)
{
	struct coord_opts o;
	struct config *c = NULL;
	char err[512] = "", ex[4096];
	const char *root = getenv("KB_ROOT");

	cli_where_load();	/* the settings tests/run.sh gives in the environment */
	CHECK_INT("no sections: defaults", load("listen: 127.0.0.1:1\n", &o, err, sizeof(err)), 0);
	CHECK_INT("auto runners", o.local_runners, COORD_RUNNERS_AUTO);
	CHECK_INT("coordinator on", o.coordinator, 1);
	CHECK_INT("lease 60", o.lease_s, 60);
	CHECK_INT("3 attempts", o.max_attempts, 3);
	CHECK_INT("no schedule", o.n_schedules, 0);
	CHECK("no command", o.command == NULL);
	CHECK("a benchmark's eval gets no more arguments", o.benchmark_args == NULL);
	CHECK_INT("failed work kept 24 h", o.work_keep_failed_h, 24);
	CHECK("retries: 8, from 2 s to at most 5 min", o.retries == 8 &&
	    o.retry_base_ms == 2000 && o.retry_max_ms == 300000);
	coord_opts_free(&o);

	CHECK_INT("runners: none", load("runners: none\n", &o, err, sizeof(err)), 0);
	CHECK_INT("no local runners", o.local_runners, 0);
	coord_opts_free(&o);
	CHECK_INT("runners: 2", load("runners: 2\n", &o, err, sizeof(err)), 0);
	CHECK_INT("two", o.local_runners, 2);
	coord_opts_free(&o);
	CHECK_INT("full section", load("runners:\n  local: 1\n  coordinator: false\n"
	    "  lease_s: 5\n  max_attempts: 2\n  poll_ms: 100\n  timeout_s: 60\n"
	    "  work_keep_failed_h: 0\n"
	    "  optimize_args: [--budget, 8]\n  command: [/bin/true]\n"
	    "schedule: [\"0 3 * * 0\", \"@daily\"]\n", &o, err, sizeof(err)), 0);
	CHECK_INT("coordinator off", o.coordinator, 0);
	CHECK_INT("lease", o.lease_s, 5);
	CHECK_INT("failed work removed at the next sweep", o.work_keep_failed_h, 0);
	CHECK_INT("two schedules", o.n_schedules, 2);
	CHECK_STR("numbers in argument lists become strings",
	    json_string_value(json_array_get(o.optimize_args, 1)), "8");
	CHECK_STR("command", json_string_value(json_array_get(o.command, 0)), "/bin/true");
	coord_opts_free(&o);

	CHECK("a bad runners value", refused("runners: many\n",
	    "kb.yml:1: runners: must be auto, none or a number"));
	CHECK("an unknown key", refused("runners:\n  leese_s: 5\n",
	    "kb.yml:2: runners.leese_s: unknown key"));
	CHECK("a lease of 0", refused("runners:\n  lease_s: 0\n", "runners.lease_s: must be"));
	CHECK("coordinator not a boolean", refused("runners:\n  coordinator: yes\n",
	    "runners.coordinator: must be true or false"));
	CHECK("an empty command", refused("runners:\n  command: []\n", "must name a program"));
	CHECK_INT("retries and their backoff", load("runners:\n  retries: 0\n"
	    "  retry_base_ms: 50\n  retry_max_ms: 50\n", &o, err, sizeof(err)), 0);
	CHECK("no retries, 50 ms", o.retries == 0 && o.retry_base_ms == 50 &&
	    o.retry_max_ms == 50);
	coord_opts_free(&o);
	CHECK("negative retries", refused("runners:\n  retries: -1\n",
	    "runners.retries: must be"));
	CHECK("a backoff cap under its base", refused("runners:\n  retry_base_ms: 5000\n"
	    "  retry_max_ms: 1000\n", "runners.retry_max_ms: must be at least retry_base_ms"));
	CHECK("optimize_args not a list", refused("runners:\n  optimize_args: --fast\n",
	    "runners.optimize_args: must be a list"));
	CHECK("a negative keep time", refused("runners:\n  work_keep_failed_h: -1\n",
	    "runners.work_keep_failed_h: must be a whole number from 0 to 8760"));
	CHECK("runner names fit for a directory", coord_runner_name_ok("host-cpu1") &&
	    coord_runner_name_ok("a.b_c-9") && !coord_runner_name_ok("") &&
	    !coord_runner_name_ok("../x") && !coord_runner_name_ok(".hidden") &&
	    !coord_runner_name_ok("a/b") && !coord_runner_name_ok("a b"));
	CHECK("a bad cron", refused("schedule: \"0 25 * * *\"\n",
	    "kb.yml:1: schedule: hour: '25' is out of range 0-23"));
	CHECK("a cron that is not a string", refused("schedule: 5\n", "schedule: must be a cron"));

	snprintf(ex, sizeof(ex), "%s/kernelbot.example.yml", root ? root : ".");
	CHECK_INT("kernelbot.example.yml loads", config_load(ex, CONFIG_NO_SECRETS, &c, err,
	    sizeof(err)), 0);
	if (c) {
		CHECK_INT("and its runners and schedule", coord_opts_load(c, &o, err, sizeof(err)), 0);
		CHECK_INT("its schedule", o.n_schedules, 1);
		coord_opts_free(&o);
		config_free(c);
	}
	return t_done("test_coord");
}
