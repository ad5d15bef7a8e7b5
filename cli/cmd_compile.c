/*
 * kernelbot compile PROBLEM_OR_IR [--backend cpu|cuda] [--schedule JSON]
 *                                 [-o FILE]: the graph compiler alone.
 * A .py problem is traced through the harness first; anything else is
 * read as graph IR JSON (the "ir" object of `kernelbot trace --json`, or
 * a whole trace reply).
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "common/jsonx.h"
#include "pipeline/compiler/compiler.h"
#include "pipeline/compiler/irload.h"

static const char compile_usage[] =
    "usage: kernelbot compile PROBLEM.py|IR.json [--backend cpu|cuda]\n"
    "                         [--schedule JSON|@FILE] [-o FILE]\n"
    "\n"
    "The graph compiler: a problem (traced first) or a graph IR to one kernel\n"
    "source in the kernel ABI. Exit 0 with a kernel, 1 when the input cannot be\n"
    "read or an op is unsupported, 2 for a usage error. Options [default]:\n"
    "  --backend cpu|cuda      kernel.c with OpenMP, or kernel.cu [cpu]\n"
    "  --schedule JSON|@FILE   a schedule, as JSON text or a file's; fields left\n"
    "                          out keep their defaults [the default schedule]\n"
    "  -o FILE, --output FILE  where the source goes [stdout]\n"
    "docs/commands/compile.md; the schedule's fields: docs/compiler.md.\n";

int
cmd_compile(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "backend", required_argument, NULL, 'b' },
		{ "schedule", required_argument, NULL, 's' },
		{ "output", required_argument, NULL, 'o' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	enum schedule_backend backend = SCHED_CPU;
	const char *sched_arg = NULL, *outpath = NULL;
	struct schedule sched;
	struct ir_graph *g = NULL;
	json_t *ir = NULL, *sj = NULL;
	char err[1024], *src = NULL;
	FILE *f = NULL;
	int c, rc = 1, error;

	optind = 1;
	while ((c = getopt_long(argc, argv, "o:h", longopts, NULL)) != -1) {
		switch (c) {
		case 'b':
			if (!strcmp(optarg, "cpu"))
				backend = SCHED_CPU;
			else if (!strcmp(optarg, "cuda"))
				backend = SCHED_CUDA;
			else
				return cli_usage_error("compile", "--backend is cpu or cuda");
			break;
		case 's':
			sched_arg = optarg;
			break;
		case 'o':
			outpath = optarg;
			break;
		case 'h':
			fputs(compile_usage, stdout);
			return 0;
		default:
			fputs(compile_usage, stderr);
			return EXIT_USAGE;
		}
	}
	if (argc - optind != 1) {
		fputs(compile_usage, stderr);
		return EXIT_USAGE;
	}
	if (irload(argv[optind], NULL, NULL, &ir, err, sizeof(err)) < 0) {
		fprintf(stderr, "kernelbot compile: %s\n", err);
		goto out;
	}
	if ((error = ir_load(ir, &g, err, sizeof(err))) < 0) {
		fprintf(stderr, "kernelbot compile: %s: bad IR: %s\n", argv[optind], err);
		goto out;
	}
	schedule_default(&sched, g, backend);
	if (sched_arg) {
		if (sched_arg[0] == '@')
			error = jsonx_load_file(sched_arg + 1, BUF_MAX_SMALL, &sj, err, sizeof(err));
		else
			error = jsonx_parse(sched_arg, strlen(sched_arg), &sj, err, sizeof(err));
		if (error < 0 || schedule_from_json(&sched, sj, err, sizeof(err)) < 0) {
			rc = cli_usage_error("compile", "--schedule: %s", err);
			goto out;
		}
	}
	if ((error = compiler_emit(g, &sched, backend, &src, err, sizeof(err))) < 0) {
		fprintf(stderr, "kernelbot compile: %s\n", err);
		goto out;
	}
	if (outpath) {
		if (!(f = fopen(outpath, "we"))) {
			fprintf(stderr, "kernelbot compile: %s: %s\n", outpath, strerror(errno));
			goto out;
		}
		if (fputs(src, f) < 0 || fclose(f) != 0) {
			f = NULL;
			fprintf(stderr, "kernelbot compile: %s: write failed\n", outpath);
			goto out;
		}
		f = NULL;
	} else {
		fputs(src, stdout);
	}
	rc = 0;
out:
	if (f)
		fclose(f);
	free(src);
	ir_free(g);
	json_decref(ir);
	json_decref(sj);
	return rc;
}
