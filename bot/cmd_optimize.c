/*
 * kernelbot optimize PROBLEM_OR_REPO [PATH...]: the evolutionary search
 * (pipeline/evolve) on one problem file, or on every module of a
 * repository's working tree, each into its own folder of the --out layout
 * (docs/optimize.md). Exit 0 when every problem got a verified kernel, 1
 * otherwise, 2 for usage errors.
 */
#include <dirent.h>
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "bot/cli.h"
#include "bot/config.h"
#include "bot/optimize_llm.h"
#include "common/buf.h"
#include "common/jsonx.h"
#include "gitops/modules.h"
#include "gitops/repocfg.h"
#include "gpu/device.h"
#include "gpu/eval.h"
#include "pipeline/compiler/irload.h"
#include "pipeline/evolve/evolve.h"
#include "pipeline/llm/client.h"

#define OPT_DEFAULT_BUDGET	64
#define OPT_DEFAULT_OUT		"./kernelbot-out"
#define OPT_MAX_MODULES		REPOCFG_MAX_MODULES
#define OPT_MAX_DEPTH		16	/* folders below the repository root */

static const char optimize_usage[] =
    "usage: kernelbot optimize PROBLEM_OR_REPO [PATH...] [--backend cpu|cuda]\n"
    "                          [--proposer compiler|llm|both] [--budget N]\n"
    "                          [--config FILE] [--out DIR] [--json]\n"
    "                          [--generations N] [--per-generation N] [--population N]\n"
    "                          [--patience N] [--seed N] [--trials N] [--confirm-trials N]\n"
    "                          [--timeout SECONDS] [--rounds N] [--reps N] [--warmup N]\n"
    "                          [--wall-minutes M] [--gpu-minutes M]\n"
    "                          [--device N] [--class NAME]\n";

/*
 * The proposers `--proposer` can name ("both" means compiler + llm). A
 * proposer that is not built in has no constructor. seeded: the graph
 * compiler runs too, so the LLM starts from its kernels.
 */
struct proposer_kind {
	const char *name;
	int (*make)(const char *backend, const struct config *cfg, int seeded,
	    struct proposer **out, char *err, size_t errlen);
};

static int
make_compiler(const char *backend, const struct config *cfg, int seeded,
    struct proposer **out, char *err, size_t errlen)
{
	(void)cfg;
	(void)seeded;
	(void)err;
	(void)errlen;
	return prop_compiler_new(backend, out);
}

static int
make_llm(const char *backend, const struct config *cfg, int seeded,
    struct proposer **out, char *err, size_t errlen)
{
	return optimize_llm_new(cfg, backend, seeded, 0, out, err, errlen);
}

static const struct proposer_kind proposer_kinds[] = {
	{ "compiler", make_compiler },
	{ "llm", make_llm },
	{ NULL, NULL },
};

struct module {
	char *path;		/* absolute file */
	char *rel;		/* relative to the repository, NULL for a single problem */
	char *class_name;
	char slug[MODULES_MAX_SLUG + 1];
};

struct opt_args {
	struct evolve_opts eo;
	const char *out, *config, *proposer, *class_name;
	double wall_s, gpu_s;	/* --wall-minutes, --gpu-minutes; 0: not given */
	int json;
};

static int
parse_int(const char *s, long lo, long hi, long *out)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 10);
	if (errno || *end || end == s || v < lo || v > hi)
		return -EINVAL;
	*out = v;
	return 0;
}

/* ------------------------------------------------------------ budgets.* */

/*
 * budgets.* from the server configuration, read where the LLM's section
 * is (pipeline/llm/client.h: one reader of the section, so each accepts
 * the other's keys): candidates, generations, tokens, dollars,
 * gpu_seconds, wall_seconds (or llm_tokens, llm_usd, gpu_minutes,
 * wall_minutes); 0 for no limit. Limits already set by flags stay.
 */
static int
config_budgets(const struct config *cfg, struct evolve_budget *b, char *err, size_t errlen)
{
	struct llm_config lc;
	int error;

	if ((error = llm_config_load(cfg, &lc, err, errlen)) < 0)
		return error;
	/* a command-line flag already set wins */
	if (!b->candidates)
		b->candidates = lc.budget_candidates;
	if (!b->generations)
		b->generations = lc.budget_generations;
	if (!b->wall_s)
		b->wall_s = lc.budget_wall_s;
	if (!b->gpu_s)
		b->gpu_s = lc.budget_gpu_s;
	if (!b->tokens)
		b->tokens = lc.budget_tokens;
	if (!b->dollars)
		b->dollars = lc.budget_dollars;
	llm_config_free(&lc);
	return 0;
}

/* Does the config name at least one LLM model? (Its section is valid:
 * config_budgets read it.) */
static int
llm_configured(const struct config *cfg)
{
	struct llm_config lc;
	char err[CONFIG_ERR_MAX];
	int n;

	if (llm_config_load(cfg, &lc, err, sizeof(err)) < 0)
		return 0;
	n = (int)lc.n_models;
	llm_config_free(&lc);
	return n > 0;
}

/* ------------------------------------------------------------ modules of a repository */

static void
modules_free_all(struct module *m, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		free(m[i].path);
		free(m[i].rel);
		free(m[i].class_name);
	}
	free(m);
}

static int
read_text(const char *path, size_t max, char **out)
{
	struct buf b = BUF_INIT(max);
	int error;

	if ((error = buf_read_file(&b, path)) < 0) {
		buf_free(&b);
		return error;
	}
	*out = b.data ? buf_detach(&b, NULL) : strdup("");
	return *out ? 0 : -ENOMEM;
}

struct walk {
	const char *root;
	const json_t *entries;		/* .kernelbot.yml modules, or NULL: the convention */
	struct module *v;
	size_t n;
	char err[1024];
};

static int
add_module(struct walk *w, const char *rel, const char *cls)
{
	char full[PATH_MAX];
	struct module *m;

	if (w->n >= OPT_MAX_MODULES) {
		snprintf(w->err, sizeof(w->err), "more than %d modules", OPT_MAX_MODULES);
		return -E2BIG;
	}
	if (!(m = realloc(w->v, (w->n + 1) * sizeof(*m))))
		return -ENOMEM;
	w->v = m;
	m = &w->v[w->n];
	memset(m, 0, sizeof(*m));
	if (snprintf(full, sizeof(full), "%s/%s", w->root, rel) >= (int)sizeof(full))
		return -ENAMETOOLONG;
	if (modules_slug(rel, cls, m->slug) < 0) {
		snprintf(w->err, sizeof(w->err), "%.300s: no slug for this path", rel);
		return -EINVAL;
	}
	m->path = strdup(full);
	m->rel = strdup(rel);
	m->class_name = strdup(cls);
	w->n++;
	return m->path && m->rel && m->class_name ? 0 : -ENOMEM;
}

/* Whether a repository file is a module, and with which class. */
static int
consider(struct walk *w, const char *rel)
{
	char full[PATH_MAX], *text = NULL;
	size_t i;
	json_t *e;
	int error = 0;

	if (snprintf(full, sizeof(full), "%s/%s", w->root, rel) >= (int)sizeof(full))
		return 0;
	if (read_text(full, MODULES_MAX_FILE, &text) < 0)
		return 0;	/* unreadable or too large: never a module */
	if (!w->entries) {
		if (modules_detect(text, strlen(text), REPOCFG_DEFAULT_CLASS, REPOCFG_DEFAULT_INIT,
		    REPOCFG_DEFAULT_INPUTS))
			error = add_module(w, rel, REPOCFG_DEFAULT_CLASS);
		goto out;
	}
	json_array_foreach(w->entries, i, e) {
		const char *path = jsonx_str(e, "path", NULL), *glob = jsonx_str(e, "glob", NULL);
		const char *cls = jsonx_str(e, "class", REPOCFG_DEFAULT_CLASS);
		json_t *init = json_object_get(e, "init"), *inputs = json_object_get(e, "inputs");

		if (path ? strcmp(path, rel) : !(glob && repocfg_glob_match(glob, rel)))
			continue;
		if (!modules_detect(text, strlen(text), cls,
		    json_is_string(init) ? json_string_value(init) : NULL,
		    json_is_string(inputs) ? json_string_value(inputs) : NULL)) {
			if (path) {
				snprintf(w->err, sizeof(w->err), "%.300s: named in %s but it does not define "
				    "class %s with its input functions", rel, REPOCFG_FILE, cls);
				error = -EINVAL;
				goto out;
			}
			continue;
		}
		if ((error = add_module(w, rel, cls)) < 0)
			goto out;
	}
out:
	free(text);
	return error;
}

static int
walk_dir(struct walk *w, const char *rel, int depth)
{
	char full[PATH_MAX], sub[PATH_MAX];
	struct dirent **ents = NULL;
	int n, error = 0;

	if (depth > OPT_MAX_DEPTH)
		return 0;
	snprintf(full, sizeof(full), "%s%s%s", w->root, *rel ? "/" : "", rel);
	if ((n = scandir(full, &ents, NULL, alphasort)) < 0)
		return 0;
	for (int i = 0; i < n; i++) {
		const char *name = ents[i]->d_name;
		struct stat st;
		size_t len = strlen(name);

		if (error || name[0] == '.' || !strcmp(name, "__pycache__"))
			continue;
		if (snprintf(sub, sizeof(sub), "%s%s%s", rel, *rel ? "/" : "", name) >= (int)sizeof(sub))
			continue;
		if (snprintf(full, sizeof(full), "%s/%s", w->root, sub) >= (int)sizeof(full))
			continue;
		if (lstat(full, &st) < 0)
			continue;
		if (S_ISDIR(st.st_mode))
			error = walk_dir(w, sub, depth + 1);
		else if (S_ISREG(st.st_mode) && len > 3 && !strcmp(name + len - 3, ".py"))
			error = consider(w, sub);
	}
	for (int i = 0; i < n; i++)
		free(ents[i]);
	free(ents);
	return error;
}

/*
 * The modules of the working tree at root, or only those among paths
 * (relative to root) when n_paths > 0. 0, or -EINVAL with a sentence in
 * err (a bad .kernelbot.yml, a PATH that is no module).
 */
static int
repo_modules(const char *root, char **paths, int n_paths, struct module **out, size_t *n_out,
    char *err, size_t errlen)
{
	struct walk w = { .root = root };
	struct repocfg *rc = NULL;
	char cfgpath[PATH_MAX], *text = NULL;
	size_t kept = 0;
	int error;

	if (snprintf(cfgpath, sizeof(cfgpath), "%s/%s", root, REPOCFG_FILE) >= (int)sizeof(cfgpath)) {
		snprintf(err, errlen, "%.300s: path too long", root);
		return -ENAMETOOLONG;
	}
	if ((error = read_text(cfgpath, BUF_MAX_SMALL, &text)) == 0) {
		if ((error = repocfg_parse(REPOCFG_FILE, text, strlen(text), &rc, err, errlen)) < 0)
			goto out;
		w.entries = json_object_get(repocfg_json(rc), "modules");
		if (!json_is_array(w.entries))
			w.entries = NULL;
	} else if (error != -ENOENT) {
		snprintf(err, errlen, "%.300s: %s", cfgpath, strerror(-error));
		goto out;
	}
	if ((error = walk_dir(&w, "", 0)) < 0) {
		snprintf(err, errlen, "%.300s: %s", root, w.err[0] ? w.err : strerror(-error));
		goto out;
	}
	for (int p = 0; p < n_paths; p++) {
		const char *want = paths[p];
		int found = 0;
		while (want[0] == '.' && want[1] == '/')
			want += 2;
		for (size_t i = 0; i < w.n; i++)
			found |= !strcmp(w.v[i].rel, want);
		if (!found) {
			snprintf(err, errlen, "%.300s: not a module of %.300s (%s)", paths[p], root,
			    w.entries ? "not matched by " REPOCFG_FILE :
			    "no class Model with get_init_inputs and get_inputs");
			error = -EINVAL;
			goto out;
		}
	}
	for (size_t i = 0; i < w.n; i++) {
		int keep = n_paths == 0;
		for (int p = 0; p < n_paths && !keep; p++) {
			const char *want = paths[p];
			while (want[0] == '.' && want[1] == '/')
				want += 2;
			keep = !strcmp(w.v[i].rel, want);
		}
		if (keep) {
			w.v[kept++] = w.v[i];
		} else {
			free(w.v[i].path);
			free(w.v[i].rel);
			free(w.v[i].class_name);
		}
	}
	w.n = kept;
	if (!w.n) {
		snprintf(err, errlen, "%.300s: no PyTorch modules found", root);
		error = -EINVAL;
		goto out;
	}
	*out = w.v;
	*n_out = w.n;
	w.v = NULL;
	w.n = 0;
	error = 0;
out:
	modules_free_all(w.v, w.n);
	repocfg_free(rc);
	free(text);
	return error;
}

/* ------------------------------------------------------------ one problem */

static json_t *
error_summary(const struct module *m, const char *backend, const char *msg)
{
	return json_pack("{s:s, s:s, s:n, s:i, s:i, s:s, s:s, s:s}", "problem", m->path,
	    "status", "error", "best", "candidates_evaluated", 0, "generations", 0,
	    "stop_reason", "error", "backend", backend, "error", msg);
}

/*
 * One problem into out_dir: its summary (NULL only on ENOMEM); *ok when it
 * got a verified kernel, *usage when the options did not fit it (exit 2).
 */
static json_t *
optimize_one(const struct opt_args *a, const struct config *cfg, const struct module *m,
    const char *out_dir, int *ok, int *usage)
{
	struct evolve_opts eo = a->eo;
	json_t *ir = NULL, *summary = NULL;
	char err[4096], irerr[2048];
	int error, n = 0;

	*ok = 0;
	err[0] = irerr[0] = '\0';
	eo.problem = m->path;
	eo.class_name = m->class_name;
	eo.out_dir = out_dir;
	if (irload(m->path, m->class_name, &ir, irerr, sizeof(irerr)) < 0) {
		ir = NULL;
		eo.ir_error = irerr;
	}
	eo.ir = ir;
	for (const char *p = a->proposer; *p && n < EVOLVE_MAX_PROPOSERS;) {
		size_t len = strcspn(p, ",");
		for (const struct proposer_kind *k = proposer_kinds; k->name; k++) {
			if (strlen(k->name) != len || strncmp(k->name, p, len))
				continue;
			if ((error = k->make(eo.backend, cfg, strstr(a->proposer, "compiler") != NULL,
			    &eo.proposers[n], err, sizeof(err))) < 0) {
				if (!err[0] || error == -ENOMEM)
					snprintf(err, sizeof(err), "proposer %s: %s", k->name, strerror(-error));
				summary = error_summary(m, eo.backend, err);
				goto out;
			}
			eo.shares[n++] = 1;
		}
		p += len + (p[len] == ',');
	}
	eo.n_proposers = (size_t)n;
	if ((error = evolve_run(&eo, &summary, err, sizeof(err))) < 0) {
		fprintf(stderr, "kernelbot optimize: %s: %s\n", m->path, err);
		*usage |= error == -EEXIST || error == -EINVAL;
		summary = error_summary(m, eo.backend, err);
		goto out;
	}
	*ok = json_is_object(json_object_get(summary, "best"));
out:
	for (int i = 0; i < n; i++)
		if (eo.proposers[i] && eo.proposers[i]->free)
			eo.proposers[i]->free(eo.proposers[i]);
	json_decref(ir);
	return summary;
}

static void
print_human(const json_t *s, const char *out_dir)
{
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
	if (json_is_string(json_object_get(s, "error")))
		printf(": %s", jsonx_str(s, "error", ""));
	printf("\n  %s/REPORT.md\n", out_dir);
}

/* ------------------------------------------------------------ the command */

static int
check_proposer(const char *arg)
{
	const char *want = !strcmp(arg, "both") ? "compiler,llm" : arg;

	for (const char *p = want; *p;) {
		size_t len = strcspn(p, ",");
		const struct proposer_kind *k;
		for (k = proposer_kinds; k->name; k++)
			if (strlen(k->name) == len && !strncmp(k->name, p, len))
				break;
		if (!k->name)
			return cli_usage_error("optimize", "--proposer is compiler, llm or both");
		if (!k->make) {
			fprintf(stderr, "kernelbot optimize: proposer %s: not built in yet\n", k->name);
			return EXIT_USAGE;
		}
		p += len + (p[len] == ',');
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
		{ "wall-minutes", required_argument, NULL, 'W' },
		{ "gpu-minutes", required_argument, NULL, 'G' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	long v;
	int c;

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
		case 'n':
			if (parse_int(optarg, 1, 1000000, &v) < 0)
				return cli_usage_error("optimize", "--budget: candidates, 1 to 1000000");
			a->eo.budget.candidates = (int)v;
			break;
		case 'C': a->config = optarg; break;
		case 'o': a->out = optarg; break;
		case 'j': a->json = 1; break;
		case 'g':
			if (parse_int(optarg, 1, 100000, &v) < 0)
				return cli_usage_error("optimize", "--generations: 1 to 100000");
			a->eo.budget.generations = (int)v;
			break;
		case 'P':
			if (parse_int(optarg, 1, EVOLVE_MAX_PER_GEN, &v) < 0)
				return cli_usage_error("optimize", "--per-generation: 1 to %d", EVOLVE_MAX_PER_GEN);
			a->eo.per_generation = (int)v;
			break;
		case 'O':
			if (parse_int(optarg, 1, 1024, &v) < 0)
				return cli_usage_error("optimize", "--population: 1 to 1024");
			a->eo.population = (int)v;
			break;
		case 'a':
			if (parse_int(optarg, 1, 100000, &v) < 0)
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
		case 't':
			if (parse_int(optarg, 1, EVAL_MAX_TRIALS, &v) < 0)
				return cli_usage_error("optimize", "--trials: 1 to %d", EVAL_MAX_TRIALS);
			a->eo.trials = (int)v;
			break;
		case 'F':
			if (parse_int(optarg, 1, EVAL_MAX_TRIALS, &v) < 0)
				return cli_usage_error("optimize", "--confirm-trials: 1 to %d", EVAL_MAX_TRIALS);
			a->eo.confirm_trials = (int)v;
			break;
		case 'T':
			if (parse_int(optarg, 1, 86400, &v) < 0)
				return cli_usage_error("optimize", "--timeout: seconds, 1 to 86400");
			a->eo.timeout_s = (int)v;
			break;
		case 'r':
			if (parse_int(optarg, 1, 10000, &v) < 0)
				return cli_usage_error("optimize", "--rounds: 1 to 10000");
			a->eo.rounds = (int)v;
			break;
		case 'R':
			if (parse_int(optarg, 1, 256, &v) < 0)
				return cli_usage_error("optimize", "--reps: 1 to 256");
			a->eo.reps = (int)v;
			break;
		case 'w':
			if (parse_int(optarg, 0, 256, &v) < 0)
				return cli_usage_error("optimize", "--warmup: 0 to 256");
			a->eo.warmup = (int)v;
			break;
		case 'd':
			if (parse_int(optarg, 0, 1023, &v) < 0)
				return cli_usage_error("optimize", "--device: 0 to 1023");
			a->eo.device = (int)v;
			break;
		case 'c': a->class_name = optarg; break;
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
	return check_proposer(a->proposer);
}

static int
sandbox_exec_built_in(void)
{
	for (const struct cli_command *c = cli_commands; c->name; c++)
		if (!strcmp(c->name, "sandbox-exec"))
			return 1;
	return 0;
}

int
cmd_optimize(int argc, char **argv)
{
	struct opt_args a = { .eo = EVOLVE_OPTS_INIT, .out = OPT_DEFAULT_OUT, .proposer = "compiler" };
	struct config *cfg = NULL;
	struct module *mods = NULL;
	size_t n_mods = 0;
	json_t *all = NULL;
	struct stat st;
	char err[2048], root[PATH_MAX], dir[PATH_MAX];
	int rc, done, repo, failed = 0, usage = 0, cli_budget;

	a.eo.backend = NULL;
	if ((rc = parse_args(argc, argv, &a, &done)) != 0 || done)
		return rc;
	if (!strcmp(a.proposer, "both"))
		a.proposer = "compiler,llm";
	cli_budget = a.eo.budget.candidates;
	if ((rc = config_load_cli("optimize", a.config, CONFIG_NO_SECRETS, &cfg)) != 0)
		return rc;
	rc = EXIT_USAGE;
	if (config_budgets(cfg, &a.eo.budget, err, sizeof(err)) < 0) {
		fprintf(stderr, "kernelbot optimize: %s\n", err);
		goto out;
	}
	if (strstr(a.proposer, "llm") && !llm_configured(cfg)) {
		fprintf(stderr, "kernelbot optimize: --proposer %s needs llm.models in the "
		    "server config (--config FILE; docs/llm.md)\n", a.proposer);
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
	a.eo.have_sandbox_exec = sandbox_exec_built_in();
	if (!realpath(argv[optind], root) || stat(root, &st) < 0) {
		fprintf(stderr, "kernelbot optimize: %s: %s\n", argv[optind], strerror(errno));
		goto out;
	}
	repo = S_ISDIR(st.st_mode);
	if (!repo && argc - optind > 1) {
		rc = cli_usage_error("optimize", "PATH... only goes with a repository directory");
		goto out;
	}
	if (repo) {
		if (a.class_name) {
			rc = cli_usage_error("optimize", "--class is for a problem file; a repository "
			    "names classes in %s", REPOCFG_FILE);
			goto out;
		}
		if (repo_modules(root, argv + optind + 1, argc - optind - 1, &mods, &n_mods, err,
		    sizeof(err)) < 0) {
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
	}
	if (!(all = json_array())) {
		rc = 1;
		goto out;
	}
	for (size_t i = 0; i < n_mods; i++) {
		const struct module *m = &mods[i];
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
		if (!(s = optimize_one(&a, cfg, m, dir, &ok, &usage))) {
			rc = 1;
			goto out;
		}
		failed += !ok;
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
	modules_free_all(mods, n_mods);
	json_decref(all);
	config_free(cfg);
	return rc;
}
