/*
 * kernelbot archive list|show ID|search QUERY...|similar PROBLEM|
 *                   export FILE|import FILE|add DIR
 *                   [--data-dir DIR | --config FILE] [--json]
 *
 * The kernel archive (stage 4, docs/archive.md) of the store that `serve`
 * uses: the data dir comes from --data-dir, else from the config's
 * data_dir. `add` ingests a `kernelbot optimize --out` directory, what
 * optimize and the runners do after a run; `import` and `add` create the
 * store when there is none, the others want it to exist.
 */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli/cli.h"
#include "conf/config.h"
#include "pipeline/optimize/optimize_llm.h"
#include "store/store.h"
#include "common/buf.h"
#include "common/jsonx.h"
#include "pipeline/archive/archive.h"

#define ARCHIVE_CLI_IR_MAX (64u << 20)
#define ARCHIVE_CLI_QUERY_MAX 4096

static const char archive_usage_text[] =
    "usage: kernelbot archive COMMAND [ARGS] [--data-dir DIR | --config FILE] [--json]\n\n"
    "  list [--arch ARCH] [--limit N]   archived kernels, newest first\n"
    "  show ID                          one kernel, with its source\n"
    "  search QUERY... [--limit N]      full-text search (words, not FTS5 syntax)\n"
    "  similar PROBLEM.py [--ir FILE] [--arch ARCH] [-k N]\n"
    "                                   the most similar solved problems\n"
    "  export FILE                      every kernel as JSON lines (FILE - : stdout)\n"
    "  import FILE                      add an export's kernels, skipping duplicates\n"
    "  add DIR [--arch ARCH] [--job N] [--repo R] [--module PATH] [--per-problem K]\n"
    "          [--ir FILE]              ingest a `kernelbot optimize --out` directory\n"
    "\n"
    "Options [default]:\n"
    "  --data-dir DIR     the store's directory [the config's data_dir]\n"
    "  --config FILE      read data_dir from it, no secrets read\n"
    "                     [/etc/kernelbot/kernelbot.yml]\n"
    "  --json             JSON output\n"
    "  --arch ARCH        only kernels for ARCH, e.g. sm_90 or cpu [any];\n"
    "                     add: the architecture recorded [history.json's device]\n"
    "  --limit N          rows at most [list: all; search: 20]\n"
    "  -k N               similar: problems returned [5]\n"
    "  --ir FILE          the problem's `kernelbot trace --json` output\n"
    "                     [similar: none, text only; add: DIR/ir.json if present]\n"
    "  --job N, --repo R, --module PATH   add: provenance recorded [none]\n"
    "  --per-problem K    add: kernels kept per problem, the best first [5]\n"
    "docs/commands/archive.md; the archive: docs/archive.md.\n";

static void
archive_usage(FILE *f)
{
	fputs(archive_usage_text, f);
}

struct archive_opts {
	const char *config, *data_dir, *arch, *repo, *module, *ir;
	int json, k, per_problem;
	size_t limit;
	int64_t job;
};

static void
iso_time(int64_t t, char *out, size_t len)
{
	time_t tt = (time_t)t;
	struct tm tm;

	gmtime_r(&tt, &tm);
	strftime(out, len, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

static int
print_json(const json_t *v)
{
	struct buf b = BUF_INIT(BUF_MAX_DEFAULT * 4);
	int error;

	if ((error = jsonx_dump(v, JSON_INDENT(2) | JSON_PRESERVE_ORDER, &b)) == 0)
		printf("%s\n", buf_cstr(&b));
	else
		fprintf(stderr, "kernelbot archive: cannot print the result: %s\n",
		    strerror(-error));
	buf_free(&b);
	return error;
}

/* v with `decimals` decimals and a suffix, or "-" when unknown. */
static void
fmt_num(char *out, size_t len, double v, int decimals, const char *suffix)
{
	if (isfinite(v))
		snprintf(out, len, "%.*f%s", decimals, v, suffix);
	else
		snprintf(out, len, "-");
}

static void
print_row(const struct store_archive_entry *e, int with_rank)
{
	char ts[32], ms[32], sp[32], rank[32];

	iso_time(e->created, ts, sizeof(ts));
	fmt_num(ms, sizeof(ms), e->ms, 4, "");
	fmt_num(sp, sizeof(sp), e->speedup_eager, 2, "x");
	fmt_num(rank, sizeof(rank), -e->rank, 3, "");
	printf("%-6lld %-28.28s %-7s %-10s %-8s %-10s %s", (long long)e->id, e->problem,
	    e->arch, ms, sp, e->proposer ? e->proposer : "-", ts);
	if (with_rank)
		printf(" %s", rank);
	printf("\n");
}

/* Entries as a table or a JSON array (with "rank" for searches). */
static int
print_entries(const struct store_archive_entry *e, size_t n, int json, int with_rank)
{
	json_t *arr, *o;
	int error = 0;

	if (!json) {
		printf("%-6s %-28s %-7s %-10s %-8s %-10s %s%s\n", "ID", "PROBLEM", "ARCH",
		    "MS", "EAGER", "PROPOSER", "CREATED", with_rank ? " BM25" : "");
		for (size_t i = 0; i < n; i++)
			print_row(&e[i], with_rank);
		return 0;
	}
	if (!(arr = json_array()))
		return -ENOMEM;
	for (size_t i = 0; i < n && error == 0; i++) {
		if (!(o = archive_entry_json(&e[i])) ||
		    (with_rank && json_object_set_new(o, "rank", json_real(-e[i].rank)) < 0) ||
		    json_array_append_new(arr, o) < 0)
			error = -ENOMEM;
	}
	if (error == 0)
		error = print_json(arr);
	json_decref(arr);
	return error;
}

static int
do_list(struct store *s, const struct archive_opts *o)
{
	struct store_archive_entry *e = NULL;
	size_t n = 0;
	int error;

	if ((error = store_archive_list(s, o->arch, o->limit, 0, &e, &n)) < 0) {
		fprintf(stderr, "kernelbot archive list: %s\n", store_errmsg(s));
		return 1;
	}
	error = print_entries(e, n, o->json, 0);
	store_archive_entries_free(e, n);
	return error < 0;
}

static int
parse_id(const char *arg, int64_t *id)
{
	char *end;
	long long v;

	errno = 0;
	v = strtoll(arg, &end, 10);
	if (errno || *end || !*arg || v <= 0)
		return -EINVAL;
	*id = v;
	return 0;
}

static int
do_show(struct store *s, const struct archive_opts *o, const char *arg)
{
	struct store_archive_entry e;
	char ts[32];
	json_t *j;
	int64_t id;
	int error;

	if (parse_id(arg, &id) < 0)
		return cli_usage_error("archive", "show wants a kernel id, not '%s'", arg);
	if ((error = store_archive_get(s, id, &e)) < 0) {
		fprintf(stderr, "kernelbot archive show: %s\n", error == -ENOENT ?
		    "no such kernel in the archive" : store_errmsg(s));
		return 1;
	}
	if (o->json) {
		if (!(j = archive_entry_json(&e)))
			error = -ENOMEM;
		else
			error = print_json(j);
		json_decref(j);
	} else {
		iso_time(e.created, ts, sizeof(ts));
		printf("id:          %lld\nproblem:     %s\nops:         %s\nshape:       %s\n"
		    "backend:     %s\narch:        %s\ndevice:      %s\n", (long long)e.id,
		    e.problem, e.ops, e.shape_class, e.backend, e.arch, e.device ? e.device : "-");
		{
			char v[6][32];
			const double x[6] = { e.speedup_eager, e.speedup_eager_lo,
				e.speedup_eager_hi, e.speedup_compile, e.speedup_compile_lo,
				e.speedup_compile_hi };

			fmt_num(v[0], sizeof(v[0]), e.eager_ms, 4, "");
			fmt_num(v[1], sizeof(v[1]), e.compile_ms, 4, "");
			printf("ms:          %.4f (eager %s, compile %s)\n", e.ms, v[0], v[1]);
			for (int i = 0; i < 6; i++)
				fmt_num(v[i], sizeof(v[i]), x[i], 2, "");
			printf("speedup:     eager %s [%s, %s], compile %s [%s, %s]\n", v[0], v[1],
			    v[2], v[3], v[4], v[5]);
		}
		printf("proposer:    %s%s%s\nparents:     %s\n", e.proposer ? e.proposer : "-",
		    e.model ? " / " : "", e.model ? e.model : "", e.parents ? e.parents : "-");
		printf("job:         %lld\nrepo:        %s\nmodule:      %s\ncreated:     %s\n"
		    "kernel_sha:  %s\nproblem_sha: %s\n\n%s", (long long)e.job,
		    e.repo ? e.repo : "-", e.module ? e.module : "-", ts, e.kernel_sha,
		    e.problem_sha, e.kernel);
		if (*e.kernel && e.kernel[strlen(e.kernel) - 1] != '\n')
			printf("\n");
	}
	store_archive_entry_free(&e);
	return error < 0;
}

/* The words of the query arguments, split at whitespace. */
static int
do_search(struct store *s, const struct archive_opts *o, int argc, char **argv)
{
	const char *terms[STORE_ARCHIVE_MAX_TERMS];
	struct store_archive_entry *e = NULL;
	char *q = NULL, *save = NULL, *w;
	size_t n = 0, nt = 0, len = 0;
	int error;

	if (argc < 1)
		return cli_usage_error("archive", "search wants a query");
	for (int i = 0; i < argc; i++)
		len += strlen(argv[i]) + 1;
	if (len > ARCHIVE_CLI_QUERY_MAX)
		return cli_usage_error("archive", "the query is longer than %d bytes",
		    ARCHIVE_CLI_QUERY_MAX);
	if (!(q = calloc(1, len + 1)))
		return 1;
	for (int i = 0; i < argc; i++) {
		strcat(q, argv[i]);
		strcat(q, " ");
	}
	for (w = strtok_r(q, " \t\n", &save); w && nt < STORE_ARCHIVE_MAX_TERMS;
	    w = strtok_r(NULL, " \t\n", &save))
		terms[nt++] = w;
	if ((error = store_archive_search(s, terms, nt, 0, 0, o->limit ? o->limit : 20,
	    &e, &n)) < 0) {
		fprintf(stderr, "kernelbot archive search: %s\n", error == -EINVAL ?
		    "--limit must be 1..1000" : store_errmsg(s));
		free(q);
		return 1;
	}
	error = print_entries(e, n, o->json, 1);
	store_archive_entries_free(e, n);
	free(q);
	return error < 0;
}

/* IR from FILE: the IR itself or a whole `trace --json` reply. */
static int
load_ir_file(const char *path, json_t **ir)
{
	char err[512];
	json_t *doc;

	if (jsonx_load_file(path, ARCHIVE_CLI_IR_MAX, &doc, err, sizeof(err)) < 0) {
		fprintf(stderr, "kernelbot archive: %s: %s\n", path, err);
		return -EINVAL;
	}
	if (json_is_object(json_object_get(doc, "ir"))) {
		*ir = json_incref(json_object_get(doc, "ir"));
		json_decref(doc);
	} else if (json_is_object(doc) && json_is_array(json_object_get(doc, "nodes"))) {
		*ir = doc;
	} else {
		fprintf(stderr, "kernelbot archive: %s: not a graph IR (no \"nodes\")\n", path);
		json_decref(doc);
		return -EINVAL;
	}
	return 0;
}

static int
do_similar(struct store *s, const struct archive_opts *o, const char *problem)
{
	struct buf src = BUF_INIT(ARCHIVE_MAX_SOURCE);
	json_t *ir = NULL, *out = NULL, *n;
	char err[512];
	size_t i;
	int rc = 1, error;

	if ((error = buf_read_file(&src, problem)) < 0) {
		fprintf(stderr, "kernelbot archive similar: %s: %s\n", problem,
		    error == -EFBIG ? "larger than 1 MiB" : strerror(-error));
		goto out;
	}
	if (o->ir && load_ir_file(o->ir, &ir) < 0)
		goto out;
	if (archive_neighbours(s, buf_cstr(&src), ir, o->arch, o->k, &out, err,
	    sizeof(err)) < 0) {
		fprintf(stderr, "kernelbot archive similar: %s\n", err);
		goto out;
	}
	if (o->json) {
		if (print_json(out) < 0)
			goto out;
	} else {
		printf("%-6s %-28s %-7s %-10s %-8s %-6s %s\n", "ID", "PROBLEM", "ARCH", "MS",
		    "EAGER", "SCORE", "OPS");
		json_array_foreach(out, i, n) {
			char sp[32];

			fmt_num(sp, sizeof(sp), jsonx_num(n, "speedup_eager", NAN), 2, "x");
			printf("%-6lld %-28.28s %-7s %-10.4f %-8s %-6.3f %s\n",
			    jsonx_int(n, "id", 0), jsonx_str(n, "problem", ""),
			    jsonx_str(n, "arch", ""), jsonx_num(n, "ms", 0), sp,
			    jsonx_num(n, "score", 0), jsonx_str(n, "ops", ""));
		}
	}
	rc = 0;
out:
	buf_free(&src);
	json_decref(ir);
	json_decref(out);
	return rc;
}

static void
record_call(void *arg, const struct llm_call *c)
{
	optimize_llm_record(arg, 0, c);
}

/* similar, with the config's llm.embeddings (when --config has one) in the score. */
static int
similar_with_config(struct store *s, const struct config *cfg,
    const struct archive_opts *o, const char *problem)
{
	struct llm_config lc;
	struct llm_client cl = { 0 };
	char err[512];
	int set = 0, rc;

	if (cfg && (set = optimize_llm_embedder(cfg, &lc, &cl, record_call, s, err, sizeof(err))) < 0) {
		fprintf(stderr, "kernelbot archive similar: %s\n", err);
		return 1;
	}
	rc = do_similar(s, o, problem);
	if (set)
		archive_set_embedder(NULL);
	if (cfg && set >= 0)
		llm_config_free(&lc);
	return rc;
}

/* Written to FILE.tmp and renamed: an interrupted export leaves no half file. */
static int
do_export(struct store *s, const struct archive_opts *o, const char *file)
{
	char tmp[PATH_MAX], err[PATH_MAX + 256];
	int to_stdout = !strcmp(file, "-");
	size_t n = 0;
	FILE *f;
	int error;

	if (to_stdout) {
		f = stdout;
	} else {
		if (snprintf(tmp, sizeof(tmp), "%s.tmp", file) >= (int)sizeof(tmp))
			return cli_usage_error("archive", "%s: path too long", file);
		if (!(f = fopen(tmp, "we"))) {
			fprintf(stderr, "kernelbot archive export: %s: %s\n", tmp, strerror(errno));
			return 1;
		}
	}
	error = archive_export(s, f, &n, err, sizeof(err));
	if (!to_stdout) {
		if (error == 0 && (fsync(fileno(f)) < 0 || ferror(f))) {
			error = -EIO;
			snprintf(err, sizeof(err), "%s: %s", tmp, strerror(errno));
		}
		if (fclose(f) == EOF && error == 0) {
			error = -EIO;
			snprintf(err, sizeof(err), "%s: %s", tmp, strerror(errno));
		}
		if (error == 0 && rename(tmp, file) < 0) {
			error = -errno;
			snprintf(err, sizeof(err), "%s: %s", file, strerror(errno));
		}
		if (error < 0)
			unlink(tmp);
	}
	if (error < 0) {
		fprintf(stderr, "kernelbot archive export: %s\n", err);
		return 1;
	}
	if (o->json && !to_stdout)
		printf("{\"exported\": %zu, \"file\": \"%s\"}\n", n, file);
	else if (!to_stdout)
		printf("exported %zu kernel%s to %s\n", n, n == 1 ? "" : "s", file);
	return 0;
}

static int
do_import(struct store *s, const struct archive_opts *o, const char *file)
{
	struct archive_import_stats st = { 0 };
	char err[1024];
	FILE *f;
	int error;

	if (!(f = fopen(file, "re"))) {
		fprintf(stderr, "kernelbot archive import: %s: %s\n", file, strerror(errno));
		return 1;
	}
	error = archive_import(s, f, file, &st, err, sizeof(err));
	fclose(f);
	if (error < 0) {
		fprintf(stderr, "kernelbot archive import: %s\n", err);
		if (st.added)
			fprintf(stderr, "kernelbot archive import: %zu kernels were added "
			    "before the failure; importing again skips them\n", st.added);
		return 1;
	}
	if (o->json)
		printf("{\"lines\": %zu, \"added\": %zu, \"duplicates\": %zu}\n", st.lines,
		    st.added, st.duplicates);
	else
		printf("%s: %zu kernels read, %zu added, %zu duplicates skipped\n", file,
		    st.lines, st.added, st.duplicates);
	return 0;
}

static int
do_add(struct store *s, const struct archive_opts *o, const char *dir)
{
	struct archive_provenance prov = ARCHIVE_PROVENANCE_INIT;
	struct archive_ingest_stats st = { 0 };
	json_t *ir = NULL;
	char err[1024];
	int error;

	if (o->ir && load_ir_file(o->ir, &ir) < 0)
		return 1;
	prov.job = o->job;
	prov.repo = o->repo;
	prov.module = o->module;
	prov.arch = o->arch;
	prov.ir = ir;
	prov.per_problem = o->per_problem;
	error = archive_ingest_optimize_dir(s, dir, &prov, &st, err, sizeof(err));
	json_decref(ir);
	if (error < 0) {
		fprintf(stderr, "kernelbot archive add: %s\n", err);
		if (st.added)
			fprintf(stderr, "kernelbot archive add: %d kernels of earlier problems "
			    "were added\n", st.added);
		return 1;
	}
	if (o->json)
		printf("{\"problems\": %d, \"added\": %d, \"duplicates\": %d, \"skipped\": %d, "
		    "\"refused\": %d}\n", st.problems, st.added, st.duplicates, st.skipped,
		    st.refused);
	else
		printf("%s: %d problem%s, %d kernels added, %d duplicates, %d problems without "
		    "a verified kernel, %d candidates refused\n", dir, st.problems,
		    st.problems == 1 ? "" : "s", st.added, st.duplicates, st.skipped, st.refused);
	return 0;
}

static int
parse_count(const char *opt, const char *arg, long long max, long long *out)
{
	char *end;
	long long v;

	errno = 0;
	v = strtoll(arg, &end, 10);
	if (errno || *end || !*arg || v < 0 || v > max)
		return cli_usage_error("archive", "%s wants a number from 0 to %lld, not '%s'",
		    opt, max, arg);
	*out = v;
	return 0;
}

int
cmd_archive(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "config", required_argument, NULL, 'c' },
		{ "data-dir", required_argument, NULL, 'd' },
		{ "json", no_argument, NULL, 'j' },
		{ "limit", required_argument, NULL, 'n' },
		{ "arch", required_argument, NULL, 'a' },
		{ "job", required_argument, NULL, 'J' },
		{ "repo", required_argument, NULL, 'r' },
		{ "module", required_argument, NULL, 'm' },
		{ "per-problem", required_argument, NULL, 'p' },
		{ "ir", required_argument, NULL, 'i' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct archive_opts o = { .k = 5 };
	struct config *cfg = NULL;
	struct store *store = NULL;
	const char *sub, *data_dir;
	long long v;
	int opt, rc, error, create;

	optind = 1;
	while ((opt = getopt_long(argc, argv, "c:d:jn:k:h", opts, NULL)) != -1) {
		switch (opt) {
		case 'c': o.config = optarg; break;
		case 'd': o.data_dir = optarg; break;
		case 'j': o.json = 1; break;
		case 'a': o.arch = optarg; break;
		case 'r': o.repo = optarg; break;
		case 'm': o.module = optarg; break;
		case 'i': o.ir = optarg; break;
		case 'n':
			if ((rc = parse_count("--limit", optarg, 1000000, &v)) != 0)
				return rc;
			o.limit = (size_t)v;
			break;
		case 'k':
			if ((rc = parse_count("-k", optarg, ARCHIVE_MAX_K, &v)) != 0)
				return rc;
			o.k = (int)v;
			break;
		case 'J':
			if ((rc = parse_count("--job", optarg, INT64_MAX, &v)) != 0)
				return rc;
			o.job = v;
			break;
		case 'p':
			if ((rc = parse_count("--per-problem", optarg, 1000, &v)) != 0)
				return rc;
			o.per_problem = (int)v;
			break;
		case 'h': archive_usage(stdout); return 0;
		default: archive_usage(stderr); return EXIT_USAGE;
		}
	}
	if (optind >= argc) {
		archive_usage(stderr);
		return EXIT_USAGE;
	}
	sub = argv[optind++];
	argc -= optind;
	argv += optind;
	if (!strcmp(sub, "list") || !strcmp(sub, "search")) {
		if (!strcmp(sub, "list") && argc > 0)
			return cli_usage_error("archive", "unexpected argument '%s'", argv[0]);
	} else if (!strcmp(sub, "show") || !strcmp(sub, "export") ||
	    !strcmp(sub, "import") || !strcmp(sub, "add") || !strcmp(sub, "similar")) {
		if (argc != 1)
			return cli_usage_error("archive", "%s wants one argument", sub);
	} else {
		return cli_usage_error("archive", "unknown command '%s' (list, show, search, "
		    "similar, export, import, add)", sub);
	}
	if (o.k < 1)
		return cli_usage_error("archive", "-k must be at least 1");
	if (o.config && o.data_dir)
		return cli_usage_error("archive", "give --data-dir or --config, not both");
	data_dir = o.data_dir;
	if (!data_dir) {
		/* The store is all it needs: secrets stay unread. */
		if ((rc = config_load_cli("archive", o.config, CONFIG_NO_SECRETS, &cfg)) != 0)
			return rc;
		data_dir = config_data_dir(cfg);
	}
	create = !strcmp(sub, "import") || !strcmp(sub, "add");
	rc = 1;
	/* A typo in the path must not leave a new, empty store behind. */
	if (create && access(argv[0], R_OK) < 0) {
		fprintf(stderr, "kernelbot archive %s: %s: %s\n", sub, argv[0], strerror(errno));
		goto out;
	}
	if ((error = store_open(data_dir, create ? 0 : STORE_OPEN_EXISTING, &store)) < 0) {
		fprintf(stderr, "kernelbot archive: cannot open the store in %s: %s\n",
		    data_dir, error == -ENOENT ? "no kernelbot.db there" : strerror(-error));
		goto out;
	}
	if (!strcmp(sub, "list"))
		rc = do_list(store, &o);
	else if (!strcmp(sub, "show"))
		rc = do_show(store, &o, argv[0]);
	else if (!strcmp(sub, "search"))
		rc = do_search(store, &o, argc, argv);
	else if (!strcmp(sub, "similar"))
		rc = similar_with_config(store, cfg, &o, argv[0]);
	else if (!strcmp(sub, "export"))
		rc = do_export(store, &o, argv[0]);
	else if (!strcmp(sub, "import"))
		rc = do_import(store, &o, argv[0]);
	else
		rc = do_add(store, &o, argv[0]);
out:
	store_close(store);
	config_free(cfg);
	return rc;
}
