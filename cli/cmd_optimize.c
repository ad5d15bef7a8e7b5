/*
 * kernelbot optimize PROBLEM_OR_REPO [PATH...]: the evolutionary search
 * (pipeline/evolve) on one problem file, or on every module of a
 * repository's working tree, each into its own folder of the --out layout
 * (docs/optimize.md). Exit 0 when every problem got a verified kernel, 1
 * otherwise, 2 for usage errors.
 */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli/cli.h"
#include "conf/config.h"
#include "cli/config_check.h"
#include "pipeline/optimize/optimize.h"
#include "common/jsonx.h"
#include "gitops/repocfg.h"
#include "gpu/device.h"
#include "gpu/eval.h"
#include "pipeline/evolve/evolve.h"

#define OPT_DEFAULT_BUDGET	64
#define OPT_DEFAULT_OUT		"./kernelbot-out"

static const char optimize_usage[] =
    "usage: kernelbot optimize PROBLEM_OR_REPO [PATH...] [--backend cpu|cuda]\n"
    "                          [--proposer compiler|llm|both] [--budget N]\n"
    "                          [--config FILE] [--out DIR] [--json]\n"
    "                          [--generations N] [--per-generation N] [--population N]\n"
    "                          [--patience N] [--seed N] [--trials N] [--confirm-trials N]\n"
    "                          [--timeout SECONDS] [--rounds N] [--reps N] [--warmup N]\n"
    "                          [--wall-minutes M] [--gpu-minutes M]\n"
    "                          [--llm-tokens N] [--llm-usd X]\n"
    "                          [--device N] [--class NAME] [--init SPEC]\n"
    "                          [--inputs SPEC] [--variants SPEC] [--path DIR]\n"
    "                          [--mem BYTES] [--disk BYTES] [--compile-timeout SECONDS]\n"
    "                          [--runners N]\n"
    "\n"
    "Evolutionary search: the proposers' candidates verified and timed by the\n"
    "evaluator, generation after generation, for a problem file or for every\n"
    "module (or each PATH) of a repository's working tree. Exit 0 when every\n"
    "problem got a verified kernel, 1 otherwise, 2 for a usage error.\n"
    "Options [default]; \"budgets.X\" is the --config file's limit:\n"
    "  --backend cpu|cuda      the backend [cuda when a GPU is present, else cpu]\n"
    "  --proposer P            compiler, llm or both [compiler]\n"
    "  --budget N              candidates evaluated [64, or budgets.candidates]\n"
    "  --config FILE           server configuration: budgets and llm sections\n"
    "                          [/etc/kernelbot/kernelbot.yml if present]\n"
    "  --out DIR               the results [./kernelbot-out]\n"
    "  --json                  print summary.json (an array for a repository)\n"
    "  --generations N         generations at most [none, or budgets.generations]\n"
    "  --per-generation N      candidates asked for per generation [8]\n"
    "  --population N          fastest verified kept as parents [8]\n"
    "  --patience N            generations without a 3% gain before converged [3]\n"
    "  --seed N                the proposers' random choices [random]\n"
    "  --trials N              correctness trials per candidate [5]\n"
    "  --confirm-trials N      trials of the best's final confirmation [10]\n"
    "  --timeout SECONDS       each request to a worker [60]\n"
    "  --rounds N, --reps N, --warmup N\n"
    "                          timing, as kernelbot eval [adaptive, 10, 3]\n"
    "  --wall-minutes M        wall clock of each problem's run\n"
    "                          [none, or budgets.wall_minutes]\n"
    "  --gpu-minutes M         evaluation time, the sum of eval_s\n"
    "                          [none, or budgets.gpu_minutes]\n"
    "  --llm-tokens N          LLM tokens, in + out [none, or budgets.llm_tokens]\n"
    "  --llm-usd X             LLM cost; 0: stop once anything is spent\n"
    "                          [none, or budgets.llm_usd]\n"
    "  --device N              CUDA device ordinal [0]\n"
    "  --class NAME            a problem file's module class [Model]; in a\n"
    "                          repository, only its modules of that class\n"
    "  --init SPEC, --inputs SPEC, --variants SPEC\n"
    "                          a problem file's entry points: a function of\n"
    "                          it, MODULE:FUNCTION of a module on its path, or\n"
    "                          a literal JSON list (a repository's come from\n"
    "                          its .kernelbot.yml)\n"
    "  --path DIR              a folder first on a problem file's module path\n"
    "                          (repeatable, up to 8; a repository's is its\n"
    "                          .kernelbot.yml's python_path [., src])\n"
    "  --mem BYTES             each worker's memory limit, K/M/G suffixes\n"
    "                          [3/4 of the host's memory / --runners, 1 to 32 GiB]\n"
    "  --disk BYTES            each worker's scratch quota [2 GiB]\n"
    "  --compile-timeout SECONDS  a native candidate's build deadline [120]\n"
    "  --runners N             evaluations this host runs at once, for --mem's\n"
    "                          default [1]\n"
    "docs/commands/optimize.md has the output layout; docs/optimize.md the loop.\n";

struct opt_args {
	struct evolve_opts eo;
	const char *out, *config, *proposer, *class_name;
	const char *entry[3];	/* --init, --inputs, --variants */
	const char *path[HARNESS_PATH_MAX + 1];	/* --path, made absolute */
	char dirs[HARNESS_PATH_MAX][PATH_MAX];
	double wall_s, gpu_s;	/* --wall-minutes, --gpu-minutes; 0: not given */
	int json;
};


static void
print_human(const json_t *s, const char *out_dir)
{
	char report[PATH_MAX];

	printf("%s: %s", jsonx_str(s, "problem", "?"), jsonx_str(s, "status", "?"));
	if (json_is_object(json_object_get(s, "best"))) {
		json_t *ci = jsonx_path(s, "best.speedup.eager_ci95");
		printf(", best %.4g ms", jsonx_num(s, "best.ms", 0));
		if (json_is_number(jsonx_path(s, "best.speedup.eager")))
			printf(", %.2fx eager [%.2f, %.2f]", jsonx_num(s, "best.speedup.eager", 0),
			    json_number_value(json_array_get(ci, 0)),
			    json_number_value(json_array_get(ci, 1)));
		if (json_is_number(jsonx_path(s, "best.speedup.compile")))
			printf(", %.2fx torch.compile", jsonx_num(s, "best.speedup.compile", 0));
	}
	printf(" (%lld candidates, %lld generations, %s)", jsonx_int(s, "candidates_evaluated", 0),
	    jsonx_int(s, "generations", 0), jsonx_str(s, "stop_reason", "?"));
	/* an error is on stderr already */
	if (json_is_string(json_object_get(s, "error")) && strcmp(jsonx_str(s, "status", ""), "error"))
		printf(": %s", jsonx_str(s, "error", ""));
	printf("\n");
	if (snprintf(report, sizeof(report), "%s/REPORT.md", out_dir) < (int)sizeof(report) &&
	    access(report, F_OK) == 0)
		printf("  %s\n", report);
}

/* ------------------------------------------------------------ the command */

/*
 * The options that bound a problem's search: candidates, generations,
 * minutes, LLM tokens and dollars. 0, or the exit status of a usage error.
 */
static int
parse_budget_option(int c, struct opt_args *a)
{
	int v;

	switch (c) {
	case 'n':
		if (cli_parse_int(optarg, 1, 1000000, &v) < 0)
			return cli_usage_error("optimize", "--budget: candidates, 1 to 1000000");
		a->eo.budget.candidates = (int)v;
		break;
	case 'g':
		if (cli_parse_int(optarg, 1, 100000, &v) < 0)
			return cli_usage_error("optimize", "--generations: 1 to 100000");
		a->eo.budget.generations = (int)v;
		break;
	case 'W':
	case 'G': {
		char *end;
		double m = strtod(optarg, &end);
		if (*end || end == optarg || !(m > 0 && m <= 1e6))
			return cli_usage_error("optimize", "--%s: minutes, more than 0",
			    c == 'W' ? "wall-minutes" : "gpu-minutes");
		if (c == 'W')
			a->wall_s = m * 60;
		else
			a->gpu_s = m * 60;
		break;
	}
	case 'K':
		if (cli_parse_int(optarg, 1, INT_MAX, &v) < 0)
			return cli_usage_error("optimize", "--llm-tokens: 1 to %d", INT_MAX);
		a->eo.budget.tokens = v;
		break;
	case 'U': {
		char *end;
		double d = strtod(optarg, &end);
		if (*end || end == optarg || !(d >= 0 && d <= 1e9))
			return cli_usage_error("optimize", "--llm-usd: dollars, 0 or more");
		/* 0: stop once anything is spent (a budget of 0 means "no limit"). */
		a->eo.budget.dollars = d > 0 ? d : 1e-12;
		break;
	}
	}
	return 0;
}

/*
 * The options for how each candidate is evaluated: trials, timing, the
 * device, and each worker's limits. 0, or the exit status of a usage error.
 */
static int
parse_eval_option(int c, struct opt_args *a)
{
	int v;

	switch (c) {
	case 't':
		if (cli_parse_int(optarg, 1, EVAL_MAX_TRIALS, &v) < 0)
			return cli_usage_error("optimize", "--trials: 1 to %d", EVAL_MAX_TRIALS);
		a->eo.trials = (int)v;
		break;
	case 'F':
		if (cli_parse_int(optarg, 1, EVAL_MAX_TRIALS, &v) < 0)
			return cli_usage_error("optimize", "--confirm-trials: 1 to %d", EVAL_MAX_TRIALS);
		a->eo.confirm_trials = (int)v;
		break;
	case 'T':
		if (cli_parse_int(optarg, 1, 86400, &v) < 0)
			return cli_usage_error("optimize", "--timeout: seconds, 1 to 86400");
		a->eo.timeout_s = (int)v;
		break;
	case 'r':
		if (cli_parse_int(optarg, 1, 10000, &v) < 0)
			return cli_usage_error("optimize", "--rounds: 1 to 10000");
		a->eo.rounds = (int)v;
		break;
	case 'R':
		if (cli_parse_int(optarg, 1, 256, &v) < 0)
			return cli_usage_error("optimize", "--reps: 1 to 256");
		a->eo.reps = (int)v;
		break;
	case 'w':
		if (cli_parse_int(optarg, 0, 256, &v) < 0)
			return cli_usage_error("optimize", "--warmup: 0 to 256");
		a->eo.warmup = (int)v;
		break;
	case 'd':
		if (cli_parse_int(optarg, 0, 1023, &v) < 0)
			return cli_usage_error("optimize", "--device: 0 to 1023");
		a->eo.device = (int)v;
		break;
	case 'M':
		if (cli_parse_size(optarg, &a->eo.mem_bytes) < 0)
			return cli_usage_error("optimize", "--mem takes bytes (K, M, G suffixes allowed)");
		break;
	case 'D':
		if (cli_parse_size(optarg, &a->eo.disk_bytes) < 0)
			return cli_usage_error("optimize", "--disk takes bytes (K, M, G suffixes allowed)");
		break;
	case 'X':
		if (cli_parse_int(optarg, 1, 86400, &a->eo.build_timeout_s) < 0)
			return cli_usage_error("optimize", "--compile-timeout: 1 to 86400 seconds");
		break;
	case 'Q':
		if (cli_parse_int(optarg, 1, 1024, &a->eo.runners) < 0)
			return cli_usage_error("optimize", "--runners: 1 to 1024");
		break;
	}
	return 0;
}

static int
parse_args(int argc, char **argv, struct opt_args *a, int *done)
{
	static const struct option opts[] = {
		{ "backend", required_argument, NULL, 'b' },
		{ "proposer", required_argument, NULL, 'p' },
		{ "budget", required_argument, NULL, 'n' },
		{ "config", required_argument, NULL, 'C' },
		{ "out", required_argument, NULL, 'o' },
		{ "json", no_argument, NULL, 'j' },
		{ "generations", required_argument, NULL, 'g' },
		{ "per-generation", required_argument, NULL, 'P' },
		{ "population", required_argument, NULL, 'O' },
		{ "patience", required_argument, NULL, 'a' },
		{ "seed", required_argument, NULL, 's' },
		{ "trials", required_argument, NULL, 't' },
		{ "confirm-trials", required_argument, NULL, 'F' },
		{ "timeout", required_argument, NULL, 'T' },
		{ "rounds", required_argument, NULL, 'r' },
		{ "reps", required_argument, NULL, 'R' },
		{ "warmup", required_argument, NULL, 'w' },
		{ "device", required_argument, NULL, 'd' },
		{ "class", required_argument, NULL, 'c' },
		{ "init", required_argument, NULL, 1001 },
		{ "inputs", required_argument, NULL, 1002 },
		{ "variants", required_argument, NULL, 1003 },
		{ "path", required_argument, NULL, 1004 },
		{ "wall-minutes", required_argument, NULL, 'W' },
		{ "gpu-minutes", required_argument, NULL, 'G' },
		{ "llm-tokens", required_argument, NULL, 'K' },
		{ "llm-usd", required_argument, NULL, 'U' },
		{ "mem", required_argument, NULL, 'M' },
		{ "disk", required_argument, NULL, 'D' },
		{ "compile-timeout", required_argument, NULL, 'X' },
		{ "runners", required_argument, NULL, 'Q' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	char err[256];
	int v;
	int c, error;

	*done = 0;
	optind = 1;
	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (c) {
		case 'b':
			if (strcmp(optarg, "cpu") && strcmp(optarg, "cuda"))
				return cli_usage_error("optimize", "--backend is cpu or cuda");
			a->eo.backend = optarg;
			break;
		case 'p': a->proposer = optarg; break;
		case 'C': a->config = optarg; break;
		case 'o': a->out = optarg; break;
		case 'j': a->json = 1; break;
		case 'P':
			if (cli_parse_int(optarg, 1, EVOLVE_MAX_PER_GEN, &v) < 0)
				return cli_usage_error("optimize", "--per-generation: 1 to %d", EVOLVE_MAX_PER_GEN);
			a->eo.per_generation = (int)v;
			break;
		case 'O':
			if (cli_parse_int(optarg, 1, 1024, &v) < 0)
				return cli_usage_error("optimize", "--population: 1 to 1024");
			a->eo.population = (int)v;
			break;
		case 'a':
			if (cli_parse_int(optarg, 1, 100000, &v) < 0)
				return cli_usage_error("optimize", "--patience: 1 to 100000");
			a->eo.patience = (int)v;
			break;
		case 's': {
			char *end;
			errno = 0;
			a->eo.seed = strtoull(optarg, &end, 10);
			if (errno || *end || end == optarg || !a->eo.seed)
				return cli_usage_error("optimize", "--seed: a positive integer");
			break;
		}
		case 'c': a->class_name = optarg; break;
		case 1001: case 1002: case 1003: a->entry[c - 1001] = optarg; break;
		case 1004:
			if ((error = cli_path_arg("optimize", optarg, a->path, a->dirs)) != 0)
				return error;
			break;
		case 'n': case 'g': case 'W': case 'G': case 'K': case 'U':
			if ((error = parse_budget_option(c, a)) != 0)
				return error;
			break;
		case 't': case 'F': case 'T': case 'r': case 'R': case 'w': case 'd':
		case 'M': case 'D': case 'X': case 'Q':
			if ((error = parse_eval_option(c, a)) != 0)
				return error;
			break;
		case 'h':
			fputs(optimize_usage, stdout);
			*done = 1;
			return 0;
		default:
			fputs(optimize_usage, stderr);
			return EXIT_USAGE;
		}
	}
	if (argc - optind < 1) {
		fputs(optimize_usage, stderr);
		return EXIT_USAGE;
	}
	if (!strcmp(a->proposer, "both"))
		a->proposer = "compiler,llm";
	if ((error = optimize_proposers_check(a->proposer, err, sizeof(err))) == -ENOTSUP) {
		fprintf(stderr, "kernelbot optimize: %s\n", err);
		return EXIT_USAGE;
	}
	if (error < 0)
		return cli_usage_error("optimize", "--proposer: %s", err);
	return 0;
}


int
cmd_optimize(int argc, char **argv)
{
	struct opt_args a = { .eo = EVOLVE_OPTS_INIT, .out = OPT_DEFAULT_OUT, .proposer = "compiler" };
	struct config *cfg = NULL;
	struct optimize_module *mods = NULL;
	size_t n_mods = 0;
	json_t *all = NULL;
	struct stat st;
	char err[2048], root[PATH_MAX], dir[PATH_MAX];
	int rc, done, repo, failed = 0, usage = 0, cli_budget;

	a.eo.backend = NULL;
	if ((rc = parse_args(argc, argv, &a, &done)) != 0 || done)
		return rc;
	cli_budget = a.eo.budget.candidates;
	if ((rc = config_load_cli("optimize", a.config, CONFIG_NO_SECRETS, &cfg)) != 0)
		return rc;
	rc = EXIT_USAGE;
	/* serve's check, so a file one accepts the other does (no secrets read) */
	if (config_check(cfg, CONFIG_NO_SECRETS, NULL, err, sizeof(err)) < 0) {
		fprintf(stderr, "kernelbot optimize: %s\n", err);
		goto out;
	}
	if (optimize_config_budgets(cfg, &a.eo.budget, err, sizeof(err)) < 0) {
		fprintf(stderr, "kernelbot optimize: %s\n", err);
		goto out;
	}
	if (optimize_proposers_configured(a.proposer, cfg, err, sizeof(err)) < 0) {
		fprintf(stderr, "kernelbot optimize: %s\n", err);
		goto out;
	}
	if (a.wall_s > 0)
		a.eo.budget.wall_s = a.wall_s;
	if (a.gpu_s > 0)
		a.eo.budget.gpu_s = a.gpu_s;
	if (cli_budget)
		a.eo.budget.candidates = cli_budget;
	else if (!a.eo.budget.candidates)
		a.eo.budget.candidates = OPT_DEFAULT_BUDGET;
	if (!a.eo.backend) {
		struct gpu_device *gpus = NULL;
		int ngpu = 0;
		gpu_list(&gpus, &ngpu, NULL, 0);
		free(gpus);
		a.eo.backend = ngpu > 0 ? "cuda" : "cpu";
	}
	a.eo.have_sandbox_exec = cli_has_sandbox_exec();
	cli_eval_env(&a.eo.eval_env);
	if (!realpath(argv[optind], root) || stat(root, &st) < 0) {
		fprintf(stderr, "kernelbot optimize: %s: %s\n", argv[optind], strerror(errno));
		goto out;
	}
	repo = S_ISDIR(st.st_mode);
	if (!repo && argc - optind > 1) {
		rc = cli_usage_error("optimize", "PATH... only goes with a repository directory");
		goto out;
	}
	if (repo && (a.entry[0] || a.entry[1] || a.entry[2] || a.path[0])) {
		rc = cli_usage_error("optimize", "--init, --inputs, --variants and --path are for a "
		    "problem file; a repository names them in %s", REPOCFG_FILE);
		goto out;
	}
	if (repo) {
		if (optimize_repo_modules(root, argv + optind + 1, argc - optind - 1, a.class_name, &mods,
		    &n_mods, err, sizeof(err)) < 0) {
			fprintf(stderr, "kernelbot optimize: %s\n", err);
			goto out;
		}
	} else {
		if (!(mods = calloc(1, sizeof(*mods))) || !(mods[0].path = strdup(root)) ||
		    !(mods[0].class_name = strdup(a.class_name ? a.class_name : "Model"))) {
			rc = 1;
			goto out;
		}
		n_mods = 1;
		for (int k = 0; k < 3; k++)
			if (a.entry[k] && !(mods[0].entry[k] = strdup(a.entry[k]))) {
				rc = 1;
				goto out;
			}
		if (optimize_module_pypath(&mods[0], a.path, err, sizeof(err)) < 0) {
			fprintf(stderr, "kernelbot optimize: %s\n", err);
			goto out;
		}
	}
	if (!(all = json_array())) {
		rc = 1;
		goto out;
	}
	for (size_t i = 0; i < n_mods; i++) {
		const struct optimize_module *m = &mods[i];
		json_t *s;
		int ok;

		if (repo && snprintf(dir, sizeof(dir), "%s/%s", a.out, m->slug) >= (int)sizeof(dir)) {
			rc = cli_usage_error("optimize", "--out: path too long");
			goto out;
		}
		if (!repo)
			snprintf(dir, sizeof(dir), "%s", a.out);
		if (repo)
			fprintf(stderr, "optimize: module %s (%s) -> %s\n", m->rel, m->class_name, dir);
		if (!(s = optimize_module_run(&a.eo, a.proposer, cfg, m, dir, &ok, &usage))) {
			rc = 1;
			goto out;
		}
		failed += !ok;
		if (!strcmp(jsonx_str(s, "status", ""), "error"))
			fprintf(stderr, "kernelbot optimize: %s: %s\n", m->path, jsonx_str(s, "error", "?"));
		if (repo) {
			json_object_set_new(s, "module", json_string(m->rel));
			json_object_set_new(s, "slug", json_string(m->slug));
		}
		if (!a.json)
			print_human(s, dir);
		json_array_append_new(all, s);
	}
	if (a.json) {
		char *txt = json_dumps(repo ? all : json_array_get(all, 0),
		    JSON_INDENT(2) | JSON_REAL_PRECISION(6));
		if (txt)
			printf("%s\n", txt);
		free(txt);
	}
	rc = usage ? EXIT_USAGE : failed ? 1 : 0;
out:
	optimize_modules_free(mods, n_mods);
	json_decref(all);
	config_free(cfg);
	return rc;
}
