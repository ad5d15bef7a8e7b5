/*
 * kernelbot __worker: the evaluation worker (gpu/worker.h). Hidden: only
 * the judge starts it, through `kernelbot sandbox-exec`.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "gpu/worker.h"

static const char worker_usage[] =
    "usage: kernelbot __worker (--so PATH | --null) --dir INPUTS --scratch DIR\n"
    "                          [--backend cpu|cuda] [--device N] [--no-lockdown]\n"
    "                          [--mem-limit BYTES]\n";

int
cmd_worker(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "so", required_argument, NULL, 's' },
		{ "dir", required_argument, NULL, 'd' },
		{ "scratch", required_argument, NULL, 'S' },
		{ "backend", required_argument, NULL, 'b' },
		{ "device", required_argument, NULL, 'D' },
		{ "no-lockdown", no_argument, NULL, 'L' },
		{ "mem-limit", required_argument, NULL, 'M' },
		{ "null", no_argument, NULL, 'N' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct worker_opts o = WORKER_OPTS_INIT;
	char *end;
	int c;

	optind = 1;
	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (c) {
		case 's': o.so_path = optarg; break;
		case 'd': o.dir = optarg; break;
		case 'S': o.scratch = optarg; break;
		case 'b':
			if (strcmp(optarg, "cpu") && strcmp(optarg, "cuda"))
				return cli_usage_error("__worker", "--backend is cpu or cuda");
			o.cuda = !strcmp(optarg, "cuda");
			break;
		case 'D':
			o.device = (int)strtol(optarg, &end, 10);
			if (*end || o.device < 0)
				return cli_usage_error("__worker", "bad --device '%s'", optarg);
			break;
		case 'L': o.lockdown = 0; break;
		case 'M':
			o.mem_limit = strtoull(optarg, &end, 10);
			if (*end)
				return cli_usage_error("__worker", "bad --mem-limit '%s'", optarg);
			break;
		case 'N': o.null = 1; break;
		case 'h': fputs(worker_usage, stdout); return 0;
		default: fputs(worker_usage, stderr); return EXIT_USAGE;
		}
	}
	if (!o.so_path == !o.null || !o.dir || !o.scratch || optind != argc) {
		fputs(worker_usage, stderr);
		return EXIT_USAGE;
	}
	return worker_main(&o);
}
