/*
 * kernelbot judge status|stop: the judge servers of this user
 * (gpu/judgesrv.h; docs/evaluation.md, "The judge server").
 */
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "common/jsonx.h"
#include "gpu/judgesrv.h"

static const char judge_usage[] =
    "usage: kernelbot judge status [--json]\n"
    "       kernelbot judge stop\n"
    "\n"
    "The judge servers kernelbot eval keeps running between evaluations\n"
    "(in $KERNELBOT_JUDGE_DIR, else <cache>/judge). status: name, pid,\n"
    "backend, device, requests, idle time, log; --json: an array of objects.\n"
    "stop: SIGTERM to each live one. docs/commands/judge.md.\n";

int
cmd_judge(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "json", no_argument, NULL, 'j' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	int json_out = 0, c, stop;
	json_t *list = NULL, *v;
	char err[1024], dir[4096];
	size_t i;

	optind = 1;
	while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		if (c == 'j') {
			json_out = 1;
		} else if (c == 'h') {
			fputs(judge_usage, stdout);
			return 0;
		} else {
			fputs(judge_usage, stderr);
			return EXIT_USAGE;
		}
	}
	if (optind + 1 != argc || (strcmp(argv[optind], "status") && strcmp(argv[optind], "stop")))
		return cli_usage_error("judge", "expected one action: status or stop");
	stop = !strcmp(argv[optind], "stop");
	if (judgesrv_dir(dir, sizeof(dir), err, sizeof(err)) < 0 ||
	    judgesrv_list(&list, err, sizeof(err)) < 0) {
		fprintf(stderr, "kernelbot judge: %s\n", err);
		return 1;
	}
	if (stop) {
		printf("stopped %d judge server(s) in %s\n", judgesrv_stop_all(list), dir);
	} else if (json_out) {
		json_dumpf(list, stdout, JSON_INDENT(2));
		printf("\n");
	} else {
		printf("judge servers in %s:\n", dir);
		json_array_foreach(list, i, v)
			printf("  %s  pid %lld  %s device %lld  %s  %lld requests  idle %.0f s of %.0f s  log %s\n",
			    jsonx_str(v, "name", "?"), jsonx_int(v, "pid", 0),
			    jsonx_str(v, "backend", "?"), jsonx_int(v, "device", 0),
			    jsonx_bool(v, "alive", 0) ? "running" : "gone",
			    jsonx_int(v, "requests", 0), jsonx_num(v, "idle_s", 0),
			    jsonx_num(v, "idle_limit_s", 0), jsonx_str(v, "log", ""));
		if (!json_array_size(list))
			printf("  (none)\n");
	}
	json_decref(list);
	return 0;
}
