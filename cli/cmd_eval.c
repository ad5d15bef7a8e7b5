/*
 * kernelbot eval PROBLEM CANDIDATE...: verify and time candidates against
 * a problem (docs/evaluation.md). JSON with --json: one object for one
 * candidate, an array for several. Exit 0 when every candidate is
 * correct, 1 when any is not (or the evaluator could not run), 2 for a
 * usage or problem error.
 */
#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "gpu/eval.h"

static const char eval_usage[] =
    "usage: kernelbot eval PROBLEM CANDIDATE... [--backend cpu|cuda] [--json]\n"
    "                      [--trials N] [--timeout SECONDS] [--sanitize]\n"
    "                      [--device N] [--rounds N] [--reps N] [--warmup N]\n"
    "                      [--baselines eager,compile|eager|none] [--atol X] [--rtol X]\n"
    "                      [--class NAME] [--init SPEC] [--inputs SPEC]\n"
    "                      [--variants SPEC] [--path DIR] [--jobs N] [--fresh-baselines]\n"
    "                      [--no-judge-server] [--mem BYTES] [--disk BYTES]\n"
    "                      [--compile-timeout SECONDS] [--runners N] [--seed N]\n"
    "\n"
    "Verify and time each CANDIDATE (kernel.cu, kernel.c, or a KernelBench\n"
    "ModelNew .py) against PROBLEM in a trusted judge, each in its own sandboxed\n"
    "worker. Exit 0 when all are correct, 1 when any is not, 2 for a usage or\n"
    "problem error. Options [default]:\n"
    "  --backend cpu|cuda      the backend [cuda when a GPU is present, else cpu]\n"
    "  --json                  one JSON object per candidate (an array for several)\n"
    "  --trials N              correctness trials, 1 to 100 [5]\n"
    "  --timeout SECONDS       each request to a worker: a run pair or a timing\n"
    "                          round [60]\n"
    "  --sanitize              compute-sanitizer memcheck and racecheck on correct\n"
    "                          CUDA candidates [off]\n"
    "  --device N              CUDA device ordinal [0]\n"
    "  --rounds N              timing rounds, fixed (no adaptive extension)\n"
    "                          [adaptive, 10 to 30]\n"
    "  --reps N                timed runs per round, 1 to 256 [10]\n"
    "  --warmup N              untimed runs before timing, 0 to 256 [3]\n"
    "  --baselines LIST        eager,compile, eager or none [eager,compile]\n"
    "  --atol X, --rtol X      comparison tolerances [per dtype]\n"
    "  --class NAME            the problem's module class [Model]\n"
    CLI_ENTRY_HELP
    "  --jobs N                parallel compiles, 1 to 256 [online CPUs]\n"
    "  --fresh-baselines       ignore the baseline cache, measure afresh [off]\n"
    "  --no-judge-server       a one-shot judge, as KERNELBOT_JUDGE_SERVER=0 [off]\n"
    "  --mem BYTES             each worker's memory limit, K/M/G suffixes\n"
    "                          [3/4 of the host's memory / --runners, 1 to 32 GiB]\n"
    "  --disk BYTES            each worker's scratch quota [2 GiB; 4 GiB for\n"
    "                          KernelBench solutions]\n"
    "  --compile-timeout SECONDS  a native candidate's build deadline [120]\n"
    "  --runners N             evaluations this host runs at once, for --mem's\n"
    "                          default, 1 to 1024 [1]\n"
    "  --seed N                the evaluation's seed (0 to 2^63-1) instead of a\n"
    "                          fresh one: to reproduce a result (same model\n"
    "                          parameters and trial inputs); the spot checks'\n"
    "                          positions and the timed runs' input changes still\n"
    "                          come from the system's RNG [fresh]\n"
    "docs/commands/eval.md and docs/evaluation.md have the protocol and the JSON.\n";




/* A seed: the whole of s, decimal, below 2^63 (what the judge reads). 0 or -EINVAL. */
static int
parse_seed(const char *s, unsigned long long *out)
{
	unsigned long long v;
	char *end;

	if (!isdigit((unsigned char)s[0]))
		return -EINVAL;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || *end || v > EVAL_SEED_MASK)
		return -EINVAL;
	*out = v;
	return 0;
}

static void
print_summary(const struct eval_result *res)
{
	for (size_t i = 0; i < res->n; i++) {
		const struct eval_cand *r = &res->cand[i];

		printf("%s: %s", r->candidate ? r->candidate : "?", r->status ? r->status : "?");
		if (r->correct && r->timed) {
			printf("  %.4g ms", eval_num_or(r->t_candidate.median, 0));
			if (r->t_eager.present)
				printf("  eager %.4g ms (%.2fx [%.2f, %.2f])",
				    eval_num_or(r->t_eager.median, 0), eval_num_or(r->vs_eager.x, 0),
				    eval_num_or(r->vs_eager.lo, 0), eval_num_or(r->vs_eager.hi, 0));
			if (r->t_compile.present)
				printf("  compile %.4g ms (%.2fx)", eval_num_or(r->t_compile.median, 0),
				    eval_num_or(r->vs_compile.x, 0));
		}
		printf("\n");
		if (r->n_flags) {
			printf("  flags:");
			for (size_t j = 0; j < r->n_flags; j++)
				printf(" %s", r->flags[j]);
			printf("\n");
		}
		for (size_t j = 0; j < r->n_errors; j++)
			printf("  error: %.*s%s\n", 400, r->errors[j], strlen(r->errors[j]) > 400 ? "..." : "");
		for (size_t j = 0; j < r->n_checks; j++)
			if (r->checks[j].passed == 0)
				printf("  failed check %s: %.300s\n", r->checks[j].name ? r->checks[j].name : "?",
				    r->checks[j].detail ? r->checks[j].detail : "");
	}
}

int
cmd_eval(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "backend", required_argument, NULL, 'b' },
		{ "json", no_argument, NULL, 'j' },
		{ "trials", required_argument, NULL, 't' },
		{ "timeout", required_argument, NULL, 'T' },
		{ "sanitize", no_argument, NULL, 's' },
		{ "device", required_argument, NULL, 'd' },
		{ "rounds", required_argument, NULL, 'r' },
		{ "reps", required_argument, NULL, 'R' },
		{ "warmup", required_argument, NULL, 'w' },
		{ "baselines", required_argument, NULL, 'B' },
		{ "atol", required_argument, NULL, 'a' },
		{ "rtol", required_argument, NULL, 'e' },
		{ "class", required_argument, NULL, 'c' },
		{ "init", required_argument, NULL, 1001 },
		{ "inputs", required_argument, NULL, 1002 },
		{ "variants", required_argument, NULL, 1003 },
		{ "path", required_argument, NULL, 1004 },
		{ "jobs", required_argument, NULL, 'J' },
		{ "fresh-baselines", no_argument, NULL, 'F' },
		{ "no-judge-server", no_argument, NULL, 'N' },
		{ "mem", required_argument, NULL, 'M' },
		{ "disk", required_argument, NULL, 'D' },
		{ "compile-timeout", required_argument, NULL, 'C' },
		{ "runners", required_argument, NULL, 'Q' },
		{ "seed", required_argument, NULL, 'S' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct eval_opts o = EVAL_OPTS_INIT;
	json_t *results = NULL;
	struct eval_result res;
	static char dirs[HARNESS_PATH_MAX][PATH_MAX];
	char err[4096];
	int json = 0, c, error;

	optind = 1;
	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (c) {
		case 'b':
			if (strcmp(optarg, "cpu") && strcmp(optarg, "cuda"))
				return cli_usage_error("eval", "--backend is cpu or cuda");
			o.backend = optarg;
			break;
		case 'j': json = 1; break;
		case 't':
			if (cli_parse_int(optarg, 1, EVAL_MAX_TRIALS, &o.trials) < 0)
				return cli_usage_error("eval", "--trials: 1 to %d", EVAL_MAX_TRIALS);
			break;
		case 'T':
			if (cli_parse_int(optarg, 1, 86400, &o.timeout_s) < 0)
				return cli_usage_error("eval", "--timeout: seconds, 1 to 86400");
			break;
		case 's': o.sanitize = 1; break;
		case 'd':
			if (cli_parse_int(optarg, 0, 1023, &o.device) < 0)
				return cli_usage_error("eval", "bad --device '%s'", optarg);
			break;
		case 'r':
			if (cli_parse_int(optarg, 1, 10000, &o.rounds) < 0)
				return cli_usage_error("eval", "--rounds: 1 to 10000");
			break;
		case 'R':
			if (cli_parse_int(optarg, 1, 256, &o.reps) < 0)
				return cli_usage_error("eval", "--reps: 1 to 256");
			break;
		case 'w':
			if (cli_parse_int(optarg, 0, 256, &o.warmup) < 0)
				return cli_usage_error("eval", "--warmup: 0 to 256");
			break;
		case 'B':
			if (strcmp(optarg, "eager,compile") && strcmp(optarg, "compile,eager") &&
			    strcmp(optarg, "eager") && strcmp(optarg, "none"))
				return cli_usage_error("eval", "--baselines: eager,compile, eager or none");
			o.baselines = optarg;
			break;
		case 'a':
			if (cli_parse_num(optarg, &o.atol) < 0)
				return cli_usage_error("eval", "--atol: a non-negative number");
			break;
		case 'e':
			if (cli_parse_num(optarg, &o.rtol) < 0)
				return cli_usage_error("eval", "--rtol: a non-negative number");
			break;
		case 'c': o.class_name = optarg; break;
		case 1001: o.entry.init = optarg; break;
		case 1002: o.entry.inputs = optarg; break;
		case 1003: o.entry.variants = optarg; break;
		case 1004:
			if ((error = cli_path_arg("eval", optarg, o.entry.path, dirs)) != 0)
				return error;
			break;
		case 'J':
			if (cli_parse_int(optarg, 1, 256, &o.jobs) < 0)
				return cli_usage_error("eval", "--jobs: 1 to 256");
			break;
		case 'F':
			o.fresh_baselines = 1;
			break;
		case 'N':
			o.judge_server_off = 1;
			break;
		case 'M':
			if (cli_parse_size(optarg, &o.mem_bytes) < 0)
				return cli_usage_error("eval", "--mem takes bytes (K, M, G suffixes allowed)");
			break;
		case 'D':
			if (cli_parse_size(optarg, &o.disk_bytes) < 0)
				return cli_usage_error("eval", "--disk takes bytes (K, M, G suffixes allowed)");
			break;
		case 'C':
			if (cli_parse_int(optarg, 1, 86400, &o.build_timeout_s) < 0)
				return cli_usage_error("eval", "--compile-timeout: 1 to 86400 seconds");
			break;
		case 'Q':
			if (cli_parse_int(optarg, 1, 1024, &o.runners) < 0)
				return cli_usage_error("eval", "--runners: 1 to 1024");
			break;
		case 'S':
			if (parse_seed(optarg, &o.seed) < 0)
				return cli_usage_error("eval", "--seed: a decimal integer, 0 to 2^63-1");
			o.seed_given = 1;
			break;
		case 'h': fputs(eval_usage, stdout); return 0;
		default: fputs(eval_usage, stderr); return EXIT_USAGE;
		}
	}
	if (argc - optind < 2) {
		fputs(eval_usage, stderr);
		return EXIT_USAGE;
	}
	o.problem = argv[optind];
	o.candidates = (const char *const *)argv + optind + 1;
	o.n_candidates = (size_t)(argc - optind - 1);
	o.have_sandbox_exec = cli_has_sandbox_exec();
	cli_eval_env(&o.env);
	if ((error = eval_run(&o, &results, err, sizeof(err))) < 0) {
		fprintf(stderr, "kernelbot eval: %s\n", err);
		return error == -EINVAL ? EXIT_USAGE : 1;
	}
	if ((error = eval_result_parse(results, &res, err, sizeof(err))) < 0) {
		fprintf(stderr, "kernelbot eval: the evaluator's result: %s\n", err);
		json_decref(results);
		return 1;
	}
	if (json) {
		json_t *show = o.n_candidates == 1 ? json_array_get(results, 0) : results;
		char *s = json_dumps(show, JSON_INDENT(2) | JSON_REAL_PRECISION(6));
		if (s)
			printf("%s\n", s);
		free(s);
	} else {
		print_summary(&res);
	}
	error = eval_result_all_correct(&res) ? 0 : 1;
	eval_result_free(&res);
	json_decref(results);
	return error;
}
