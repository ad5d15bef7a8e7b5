/*
 * test_archive: the kernel archive through store/store.h and
 * pipeline/archive/archive.h. An archive is built from the compiler's
 * fixture problems (source and IR) with small kernels from
 * tests/fixtures/archive/kernels, then: what is refused, the op
 * signature, retrieval order for a new problem, that the arch matters,
 * FTS5 syntax in queries, export/import, corrupt imports, and optimize
 * directories.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli/cli.h"
#include "store/store.h"
#include "store/store_internal.h"	/* store_schema_migration(1) */
#include "common/buf.h"
#include "common/crypto.h"
#include "common/jsonx.h"
#include "pipeline/archive/archive.h"
#include "t.h"

static const char *root = ".";

static char *
slurp_path(const char *path)
{
	struct buf b = BUF_INIT(BUF_MAX_DEFAULT);

	if (buf_read_file(&b, path) < 0) {
		printf("cannot read %s\n", path);
		exit(2);
	}
	return buf_detach(&b, NULL);
}

/* A fixture: ROOT/tests/fixtures/SUB/NAME.EXT */
static char *
slurp(const char *sub, const char *name, const char *ext)
{
	char path[1024];

	snprintf(path, sizeof(path), "%s/tests/fixtures/%s/%s.%s", root, sub, name, ext);
	return slurp_path(path);
}

static json_t *
load_ir(const char *sub, const char *name, const char *ext)
{
	char path[1024], err[256];
	json_t *ir;

	snprintf(path, sizeof(path), "%s/tests/fixtures/%s/%s.%s", root, sub, name, ext);
	if (jsonx_load_file(path, BUF_MAX_DEFAULT, &ir, err, sizeof(err)) < 0) {
		printf("cannot load %s: %s\n", path, err);
		exit(2);
	}
	return ir;
}

/* An evaluator result for a correct kernel. */
static json_t *
result(const char *backend, double ms, double eager_ms)
{
	return json_pack("{s:s, s:b, s:s, s:s, s:{s:{s:f}, s:{s:f}, s:n}, "
	    "s:{s:f, s:[f, f], s:n, s:n}, s:[]}",
	    "status", "correct", "correct", 1, "backend", backend,
	    "device", !strcmp(backend, "cpu") ? "cpu" : "NVIDIA H200",
	    "timings_ms", "candidate", "median", ms, "eager", "median", eager_ms,
	    "compile", "speedup", "eager", eager_ms / ms, "eager_ci95",
	    eager_ms / ms * 0.9, eager_ms / ms * 1.1, "compile", "compile_ci95",
	    "flags");
}

/* Archive fixture problem `name` with kernels/<kname>.cu on arch. */
static int
add_fixture(struct store *s, const char *name, const char *kname,
    const char *arch, double ms, const char *extra, int64_t *id)
{
	char *src = slurp("compiler/problems", name, "py");
	char *kernel = slurp("archive/kernels", kname, "cu");
	json_t *ir = load_ir("ir", name, "json");
	json_t *res = result(strcmp(arch, "cpu") ? "cuda" : "cpu", ms, ms * 2);
	struct archive_kernel k = { 0 };
	char err[256], *ksrc = kernel;
	int error;

	if (extra && asprintf(&ksrc, "%s%s", kernel, extra) < 0)
		exit(2);
	k.problem = name;
	k.problem_source = src;
	k.ir = ir;
	k.kernel = ksrc;
	k.result = res;
	k.arch = arch;
	k.proposer = "compiler";
	error = archive_add(s, &k, id, err, sizeof(err));
	if (error < 0 && error != -EEXIST)
		printf("     archive_add %s: %s\n", name, err);
	if (ksrc != kernel)
		free(ksrc);
	free(src);
	free(kernel);
	json_decref(ir);
	json_decref(res);
	return error;
}

static const char *
nth_problem(const json_t *arr, size_t i)
{
	return jsonx_str(json_array_get(arr, i), "problem", "(none)");
}

static long
index_of(const json_t *arr, const char *problem)
{
	for (size_t i = 0; i < json_array_size(arr); i++)
		if (!strcmp(nth_problem(arr, i), problem))
			return (long)i;
	return -1;
}

static size_t
archive_rows(struct store *s)
{
	struct store_archive_entry *e = NULL;
	size_t n = 0;

	if (store_archive_list(s, NULL, 0, 0, &e, &n) < 0)
		return (size_t)-1;
	store_archive_entries_free(e, n);
	return n;
}

/* ---- refusals ---- */

static void
test_refusals(struct store *s)
{
	char *src = slurp("compiler/problems", "02_softmax_rows", "py");
	struct archive_kernel k = { 0 };
	char err[256];
	json_t *r;

	k.problem = "02_softmax_rows";
	k.problem_source = src;
	k.kernel = "__global__ void k(void) {}\n";
	k.arch = "sm_90";

	r = result("cuda", 1.0, 2.0);
	json_object_set_new(r, "correct", json_false());
	json_object_set_new(r, "status", json_string("mismatch"));
	k.result = r;
	CHECK_INT("a mismatch is refused", archive_add(s, &k, NULL, err, sizeof(err)), -EINVAL);
	CHECK("... saying why", strstr(err, "not a verified kernel") != NULL);
	json_decref(r);

	r = result("cuda", 1.0, 2.0);
	json_object_set_new(r, "status", json_string("timeout"));
	k.result = r;
	CHECK_INT("correct:true with another status is refused",
	    archive_add(s, &k, NULL, err, sizeof(err)), -EINVAL);
	json_decref(r);

	r = result("cuda", 1.0, 2.0);
	json_array_append_new(json_object_get(r, "flags"), json_string("side_stream"));
	k.result = r;
	CHECK_INT("a side_stream result is refused", archive_add(s, &k, NULL, err, sizeof(err)),
	    -EINVAL);
	CHECK("... naming the flag", strstr(err, "side_stream") != NULL);
	json_decref(r);

	k.result = NULL;
	CHECK_INT("no result is refused", archive_add(s, &k, NULL, err, sizeof(err)), -EINVAL);

	r = result("cuda", 1.0, 2.0);
	k.result = r;
	k.arch = NULL;
	CHECK_INT("cuda without an arch is refused", archive_add(s, &k, NULL, err, sizeof(err)),
	    -EINVAL);
	k.arch = "hopper";
	CHECK_INT("an arch that is not sm_NN is refused",
	    archive_add(s, &k, NULL, err, sizeof(err)), -EINVAL);
	k.arch = "sm_90";
	k.kernel = "";
	CHECK_INT("an empty kernel is refused", archive_add(s, &k, NULL, err, sizeof(err)),
	    -EINVAL);
	k.kernel = "// caf\xe9 in Latin-1\n__global__ void k(void) {}\n";
	CHECK_INT("a kernel that is not UTF-8 is refused",
	    archive_add(s, &k, NULL, err, sizeof(err)), -EINVAL);
	CHECK("... saying so", strstr(err, "UTF-8") != NULL);
	json_decref(r);

	r = result("cuda", 1.0, 2.0);
	json_object_del(json_object_get(r, "timings_ms"), "candidate");
	k.result = r;
	k.kernel = "__global__ void k(void) {}\n";
	CHECK_INT("a result without the kernel's time is refused",
	    archive_add(s, &k, NULL, err, sizeof(err)), -EINVAL);
	json_decref(r);
	CHECK_INT("nothing refused was stored", archive_rows(s), 0);
	free(src);
}

/* ---- op signatures ---- */

static void
test_signature(void)
{
	json_t *ir = load_ir("ir", "04_rmsnorm_residual", "json");
	char *ops = NULL, *shape = NULL;

	CHECK_INT("signature of the rmsnorm IR", archive_op_signature(ir, &ops, &shape), 0);
	CHECK_STR("ops: sorted, repeats kept", ops, "add add mean mul mul pow rsqrt");
	CHECK_STR("shape class: dtype, ranks, size", shape, "float32 in=2,2 out=2 n=2^14");
	free(ops);
	free(shape);
	json_decref(ir);
	CHECK_INT("signature of no IR", archive_op_signature(NULL, &ops, &shape), 0);
	CHECK_STR("... empty ops", ops, "");
	CHECK_STR("... empty shape class", shape, "");
	free(ops);
	free(shape);
}

/* ---- retrieval ---- */

static int
fake_embed(void *arg, const char *text, float *vec, size_t dim)
{
	(*(int *)arg)++;
	memset(vec, 0, dim * sizeof(*vec));
	for (const unsigned char *p = (const unsigned char *)text; *p; p++)
		vec[*p % dim] += 1;
	return 0;
}

static void
test_neighbours(struct store *s)
{
	char *src = slurp("archive", "softmax_scaled", "py");
	json_t *ir = load_ir("archive", "softmax_scaled", "ir.json");
	json_t *out = NULL, *out2 = NULL, *first;
	char err[256];
	int64_t id1 = 0, id2 = 0;
	int calls = 0;

	CHECK_INT("an empty archive: neighbours works",
	    archive_neighbours(s, src, ir, "sm_90", 5, &out, err, sizeof(err)), 0);
	CHECK_INT("... and finds nothing", json_array_size(out), 0);
	json_decref(out);
	out = NULL;
	CHECK_INT("an empty archive has no sm_90", archive_has_arch(s, "sm_90"), 0);

	CHECK_INT("add softmax (sm_90)", add_fixture(s, "02_softmax_rows", "02_softmax_rows",
	    "sm_90", 0.020, NULL, &id1), 0);
	CHECK_INT("add the same again: -EEXIST", add_fixture(s, "02_softmax_rows",
	    "02_softmax_rows", "sm_90", 0.020, NULL, &id2), -EEXIST);
	CHECK_INT("... with the first one's id", id2, id1);
	CHECK_INT("add a slower softmax kernel (sm_90)", add_fixture(s, "02_softmax_rows",
	    "02_softmax_rows", "sm_90", 0.050, "// unrolled\n", NULL), 0);
	CHECK_INT("add softmax on the CPU, faster on paper", add_fixture(s, "02_softmax_rows",
	    "02_softmax_rows", "cpu", 0.010, "// cpu\n", NULL), 0);
	CHECK_INT("add layernorm", add_fixture(s, "03_layernorm", "03_layernorm", "sm_90",
	    0.030, NULL, NULL), 0);
	CHECK_INT("add the gelu chain", add_fixture(s, "01_scale_gelu_bias",
	    "01_scale_gelu_bias", "sm_90", 0.011, NULL, NULL), 0);
	CHECK_INT("add matmul + relu", add_fixture(s, "06_linear_relu_scale_residual",
	    "06_linear_relu_scale_residual", "sm_90", 0.100, NULL, NULL), 0);
	CHECK_INT("add conv", add_fixture(s, "07_conv2d_relu_bias", "07_conv2d_relu_bias",
	    "sm_90", 0.200, NULL, NULL), 0);
	CHECK_INT("add attention", add_fixture(s, "11_causal_attention", "11_causal_attention",
	    "sm_90", 0.300, NULL, NULL), 0);
	CHECK_INT("eight kernels archived", archive_rows(s), 8);
	CHECK_INT("has sm_90", archive_has_arch(s, "sm_90"), 1);
	CHECK_INT("has cpu", archive_has_arch(s, "cpu"), 1);
	CHECK_INT("has no sm_80 (a new arch)", archive_has_arch(s, "sm_80"), 0);

	CHECK_INT("neighbours of a new softmax variant",
	    archive_neighbours(s, src, ir, "sm_90", 5, &out, err, sizeof(err)), 0);
	CHECK_STR("the softmax comes first", nth_problem(out, 0), "02_softmax_rows");
	CHECK_STR("then the attention (it has a softmax)", nth_problem(out, 1),
	    "11_causal_attention");
	CHECK("the softmax before the conv", index_of(out, "07_conv2d_relu_bias") == -1 ||
	    index_of(out, "07_conv2d_relu_bias") > index_of(out, "02_softmax_rows"));
	CHECK("one entry per problem", index_of(out, "02_softmax_rows") == 0 &&
	    jsonx_int(json_array_get(out, 1), "id", 0) != jsonx_int(json_array_get(out, 0), "id", 0) &&
	    strcmp(nth_problem(out, 1), "02_softmax_rows") && strcmp(nth_problem(out, 2),
	    "02_softmax_rows"));
	first = json_array_get(out, 0);
	CHECK_STR("the softmax shown is the sm_90 one", jsonx_str(first, "arch", ""), "sm_90");
	CHECK("... the fastest of the sm_90 kernels", fabs(jsonx_num(first, "ms", 0) - 0.020) < 1e-9);
	CHECK_INT("... and its id", jsonx_int(first, "id", 0), id1);
	CHECK_STR("ops are the signature", jsonx_str(first, "ops", ""), "softmax");
	CHECK("the kernel's source is there", strstr(jsonx_str(first, "kernel", ""),
	    "softmax_rows") != NULL);
	CHECK("the speedup is there", fabs(jsonx_num(first, "speedup_eager", 0) - 2.0) < 1e-9);
	CHECK("speedup_compile is null when unknown",
	    json_is_null(json_object_get(first, "speedup_compile")));
	CHECK("scores descend", jsonx_num(first, "score", 0) >=
	    jsonx_num(json_array_get(out, 1), "score", 0) &&
	    jsonx_num(json_array_get(out, 1), "score", 0) > 0);
	json_decref(out);
	out = NULL;

	CHECK_INT("k limits the count",
	    archive_neighbours(s, src, ir, "sm_90", 1, &out, err, sizeof(err)), 0);
	CHECK_INT("... to 1", json_array_size(out), 1);
	json_decref(out);
	out = NULL;

	/* Other new problems: the archived problem with their heaviest ops first. */
	{
		static const struct { const char *sub, *name, *want0, *want1; } q[] = {
			{ "compiler/problems", "05_linear_gelu", "06_linear_relu_scale_residual",
			  "01_scale_gelu_bias" },
			{ "ops", "conv2d", "07_conv2d_relu_bias", NULL },
			{ "compiler/problems", "12_mlp_block", "06_linear_relu_scale_residual",
			  "01_scale_gelu_bias" },
		};

		for (size_t i = 0; i < sizeof(q) / sizeof(q[0]); i++) {
			char *qs = slurp(q[i].sub, q[i].name, "py");
			json_t *qir = load_ir("ir", q[i].name, "json");
			char what[160];

			snprintf(what, sizeof(what), "%s retrieves %s first", q[i].name, q[i].want0);
			CHECK_INT(what, archive_neighbours(s, qs, qir, "sm_90", 3, &out, err,
			    sizeof(err)), 0);
			CHECK_STR(what, nth_problem(out, 0), q[i].want0);
			if (q[i].want1) {
				snprintf(what, sizeof(what), "%s retrieves %s second", q[i].name,
				    q[i].want1);
				CHECK_STR(what, nth_problem(out, 1), q[i].want1);
			}
			json_decref(out);
			out = NULL;
			json_decref(qir);
			free(qs);
		}
	}

	/* The arch: the CPU asks, the CPU kernel of the same problem is shown. */
	CHECK_INT("neighbours for the cpu",
	    archive_neighbours(s, src, ir, "cpu", 3, &out, err, sizeof(err)), 0);
	CHECK_STR("... the softmax first", nth_problem(out, 0), "02_softmax_rows");
	CHECK_STR("... its cpu kernel", jsonx_str(json_array_get(out, 0), "arch", ""), "cpu");
	json_decref(out);
	out = NULL;

	/* Without an IR, the problem's words alone still find the softmax. */
	CHECK_INT("neighbours from the source alone",
	    archive_neighbours(s, src, NULL, "sm_90", 3, &out, err, sizeof(err)), 0);
	CHECK_STR("... the softmax first", nth_problem(out, 0), "02_softmax_rows");
	json_decref(out);
	out = NULL;
	CHECK_INT("neither source nor IR: -EINVAL",
	    archive_neighbours(s, NULL, NULL, "sm_90", 3, &out, err, sizeof(err)), -EINVAL);
	CHECK_INT("k = 0: -EINVAL", archive_neighbours(s, src, ir, "sm_90", 0, &out, err,
	    sizeof(err)), -EINVAL);

	/*
	 * Two problems alike in all but the arch their kernels were made on:
	 * the asking arch decides the order.
	 */
	{
		char *lsrc = slurp("compiler/problems", "03_layernorm", "py");
		char *lsrc2 = NULL, *kern = slurp("archive/kernels", "03_layernorm", "cu");
		json_t *lir = load_ir("ir", "03_layernorm", "json");
		json_t *res = result("cuda", 0.030, 0.060);
		struct archive_kernel k = { 0 };

		if (asprintf(&lsrc2, "%s# the same, tuned on an A100\n", lsrc) < 0)
			exit(2);
		k.problem = "03_layernorm_a100";
		k.problem_source = lsrc2;
		k.ir = lir;
		k.kernel = kern;
		k.result = res;
		k.arch = "sm_80";
		CHECK_INT("add a layernorm made on sm_80", archive_add(s, &k, NULL, err,
		    sizeof(err)), 0);
		CHECK_INT("neighbours of layernorm asked on sm_90",
		    archive_neighbours(s, lsrc, lir, "sm_90", 2, &out, err, sizeof(err)), 0);
		CHECK_INT("neighbours of layernorm asked on sm_80",
		    archive_neighbours(s, lsrc, lir, "sm_80", 2, &out2, err, sizeof(err)), 0);
		CHECK_STR("sm_90 asks: the sm_90 layernorm first", nth_problem(out, 0),
		    "03_layernorm");
		CHECK_STR("sm_80 asks: the sm_80 layernorm first", nth_problem(out2, 0),
		    "03_layernorm_a100");
		json_decref(out);
		json_decref(out2);
		out = out2 = NULL;
		free(lsrc);
		free(lsrc2);
		free(kern);
		json_decref(lir);
		json_decref(res);
	}

	/* The embedding hook: used when installed, not otherwise. */
	{
		struct archive_embedder em = { fake_embed, &calls, 64 };
		double plain, with;

		archive_neighbours(s, src, ir, "sm_90", 1, &out, err, sizeof(err));
		plain = jsonx_num(json_array_get(out, 0), "score", 0);
		json_decref(out);
		out = NULL;
		CHECK_INT("no embedder: never called", calls, 0);
		archive_set_embedder(&em);
		CHECK_INT("with an embedder", archive_neighbours(s, src, ir, "sm_90", 1, &out,
		    err, sizeof(err)), 0);
		with = jsonx_num(json_array_get(out, 0), "score", 0);
		CHECK("... it is called", calls > 1);
		/* 7 problems hold 10 kernels, 3 of them one softmax problem. */
		CHECK("... once per problem, not per kernel", calls <= 1 + 7);
		CHECK("... and adds to the score", with > plain);
		CHECK_STR("... the softmax still first", nth_problem(out, 0), "02_softmax_rows");
		json_decref(out);
		out = NULL;
		archive_set_embedder(NULL);
	}
	json_decref(ir);
	free(src);
}

/* ---- FTS5 syntax in queries ---- */

static void
test_fts_escaping(struct store *s)
{
	static const char *const odd[] = { "\"", "*", "NEAR", "NEAR(", "(", ")",
		"softmax)", "a\"b", "ops:", "-x", "^", "AND", "OR", "NOT",
		"{kernel}", "col : x", "\"\"\"", "'", "\\", "NEAR/2", "+", NULL };
	struct store_archive_entry *e = NULL;
	const char *one[1];
	size_t n = 0;
	int bad = 0;

	for (const char *const *p = odd; *p; p++) {
		one[0] = *p;
		if (store_archive_search(s, one, 1, 0, 0, 10, &e, &n) < 0) {
			printf("     search [%s]: %s\n", *p, store_errmsg(s));
			bad++;
		}
		store_archive_entries_free(e, n);
		e = NULL;
		n = 0;
	}
	CHECK_INT("odd terms, one at a time, never an FTS5 error", bad, 0);
	CHECK_INT("all of them at once (AND)", store_archive_search(s, odd,
	    sizeof(odd) / sizeof(odd[0]) - 1, 0, 0, 10, &e, &n), 0);
	store_archive_entries_free(e, n);
	CHECK_INT("all of them at once (OR), ops only", store_archive_search(s, odd,
	    sizeof(odd) / sizeof(odd[0]) - 1, 1, 1, 10, &e, &n), 0);
	store_archive_entries_free(e, n);
	one[0] = "NEAR";
	CHECK_INT("NEAR is a word, not an operator", store_archive_search(s, one, 1, 0, 0,
	    10, &e, &n), 0);
	CHECK_INT("... no kernel says NEAR", n, 0);
	store_archive_entries_free(e, n);
	one[0] = "softmax*";
	CHECK_INT("softmax* is the word softmax", store_archive_search(s, one, 1, 0, 0,
	    10, &e, &n), 0);
	CHECK("... and finds the softmax", n > 0 && !strcmp(e[0].problem, "02_softmax_rows"));
	store_archive_entries_free(e, n);
	one[0] = "(layer_norm";
	CHECK_INT("(layer_norm in the op names", store_archive_search(s, one, 1, 0, 1, 10,
	    &e, &n), 0);
	CHECK("... finds the layernorms only", n >= 1 && strstr(e[0].problem, "layernorm"));
	store_archive_entries_free(e, n);
	{
		json_t *out = NULL;
		char err[256];

		CHECK_INT("neighbours of a source full of FTS5 syntax",
		    archive_neighbours(s, "x = \"NEAR(a b)\" * (softmax OR \"\" ) ^ {ops}: -y",
		    NULL, "sm_90", 3, &out, err, sizeof(err)), 0);
		json_decref(out);
	}
}

/* ---- export and import ---- */

static void
write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	if (!f || fputs(text, f) == EOF || fclose(f) == EOF)
		exit(2);
}

static int
import_file(struct store *s, const char *path, struct archive_import_stats *st,
    char *err, size_t errlen)
{
	FILE *f = fopen(path, "r");
	int error;

	if (!f)
		return -errno;
	error = archive_import(s, f, path, st, err, errlen);
	fclose(f);
	return error;
}

static void
test_export_import(struct store *s, const char *dir)
{
	char path[600], path2[600], bad[600], err[512];
	struct archive_import_stats st;
	struct store *s2 = NULL;
	char *a, *b, *line1, *nl;
	size_t n = 0, total = archive_rows(s);
	FILE *f;

	snprintf(path, sizeof(path), "%s/export.jsonl", dir);
	snprintf(path2, sizeof(path2), "%s/export2.jsonl", dir);
	snprintf(bad, sizeof(bad), "%s/bad.jsonl", dir);
	f = fopen(path, "w");
	CHECK_INT("export", archive_export(s, f, &n, err, sizeof(err)), 0);
	fclose(f);
	CHECK_INT("... every kernel", n, total);

	snprintf(err, sizeof(err), "%s/second", dir);
	CHECK_INT("a second store", store_open(err, 0, &s2), 0);
	CHECK_INT("import into it", import_file(s2, path, &st, err, sizeof(err)), 0);
	CHECK_INT("... every line read", st.lines, total);
	CHECK_INT("... every kernel added", st.added, total);
	CHECK_INT("... no duplicates", st.duplicates, 0);
	f = fopen(path2, "w");
	archive_export(s2, f, &n, err, sizeof(err));
	fclose(f);
	a = slurp_path(path);
	b = slurp_path(path2);
	CHECK("the round trip keeps every field (exports identical)", !strcmp(a, b));
	free(b);
	CHECK_INT("import again", import_file(s2, path, &st, err, sizeof(err)), 0);
	CHECK_INT("... all duplicates", st.duplicates, total);
	CHECK_INT("... none added", st.added, 0);
	CHECK_INT("... the store unchanged", archive_rows(s2), total);

	/* A corrupt line: an error with its line number, nothing imported. */
	nl = strchr(a, '\n');
	line1 = strndup(a, (size_t)(nl - a) + 1);
	{
		struct store *s3 = NULL;
		char *text;
		static const struct { const char *tail, *want; } cases[] = {
			{ "{\"problem\": \"x\", \"kern", "bad.jsonl:2: " },
			{ "[1, 2]\n", "not a JSON object" },
			{ "{\"problem\": \"x\"}\n", "bad.jsonl:2: " },
			{ "{\"problem\": 7}\n", "problem: wrong type" },
			{ "{\"surprise\": 1}\n", "unknown key \"surprise\"" },
			{ "\xff\xfe garbage\n", "bad.jsonl:2: " },
			{ "", NULL },
		};

		snprintf(err, sizeof(err), "%s/third", dir);
		CHECK_INT("a third store", store_open(err, 0, &s3), 0);
		for (size_t i = 0; cases[i].want; i++) {
			if (asprintf(&text, "%s%s%s", line1, cases[i].tail, line1) < 0)
				exit(2);
			write_file(bad, text);
			free(text);
			err[0] = '\0';
			CHECK_INT("a corrupt line 2 is -EINVAL", import_file(s3, bad, &st, err,
			    sizeof(err)), -EINVAL);
			if (!CHECK("... saying where and why", strstr(err, "bad.jsonl:2: ") &&
			    strstr(err, cases[i].want)))
				printf("     err: %s\n", err);
		}
		/* A line whose kernel was edited after export: its sha says so. */
		{
			char *edited = strdup(line1), *p = strstr(edited, "\"kernel\":\"");

			p[10] = p[10] == 'X' ? 'Y' : 'X';
			write_file(bad, edited);
			free(edited);
		}
		CHECK_INT("an edited kernel is -EINVAL", import_file(s3, bad, &st, err,
		    sizeof(err)), -EINVAL);
		CHECK("... kernel_sha does not match", strstr(err, "bad.jsonl:1: kernel_sha"));
		CHECK_INT("nothing was imported from the corrupt files", archive_rows(s3), 0);
		write_file(bad, "\n\n");
		CHECK_INT("blank lines: nothing to do", import_file(s3, bad, &st, err,
		    sizeof(err)), 0);
		CHECK_INT("... zero lines", st.lines, 0);
		store_close(s3);
	}
	free(line1);
	free(a);
	store_close(s2);
}

/* ---- optimize directories ---- */

static void
mkdirs(const char *dir, const char *sub)
{
	char p[700];

	snprintf(p, sizeof(p), "%s/%s", dir, sub);
	if (mkdir(p, 0755) < 0 && errno != EEXIST)
		exit(2);
}

static void
put(const char *dir, const char *rel, const char *text)
{
	char p[700];

	snprintf(p, sizeof(p), "%s/%s", dir, rel);
	write_file(p, text);
}

/*
 * A run of `optimize --out`: best kernel B, correct candidates C1..C4
 * (C4 flagged), a wrong one W, and the best evaluated twice.
 */
static void
make_run(const char *d, const char *best_status)
{
	static const char *const cand[] = { "// best\n", "// c1\n", "// c2\n", "// c3\n",
		"// c4\n", "// wrong\n" };
	char sha[6][65], *h, *summary, *res;

	for (int i = 0; i < 6; i++)
		crypto_sha256_hex(cand[i], strlen(cand[i]), sha[i]);
	mkdir(d, 0755);
	mkdirs(d, "best");
	mkdirs(d, "candidates");
	put(d, "problem.py", "import torch\nclass Model(torch.nn.Module):\n"
	    "    def forward(self, x):\n        return torch.softmax(x, dim=-1)\n");
	put(d, "ir.json", "{\"ir\": {\"ir_version\": 1, \"inputs\": [{\"name\": \"x\", "
	    "\"role\": \"input\", \"shape\": [4, 8], \"dtype\": \"float32\"}], \"nodes\": "
	    "[{\"name\": \"softmax\", \"op\": \"softmax\", \"args\": [{\"ref\": \"x\"}], "
	    "\"kwargs\": {\"dim\": 1}, \"shape\": [4, 8], \"dtype\": \"float32\"}], "
	    "\"outputs\": [{\"name\": \"softmax\", \"shape\": [4, 8], \"dtype\": \"float32\"}]}}");
	put(d, "best/kernel.cu", cand[0]);
	put(d, "candidates/0000.cu", cand[0]);
	put(d, "candidates/0001.cu", cand[1]);
	put(d, "candidates/0002.cu", cand[2]);
	put(d, "candidates/0003.cu", cand[3]);
	put(d, "candidates/0004.cu", cand[4]);
	put(d, "candidates/0005.cu", cand[5]);
	put(d, "candidates/0006.cu", cand[0]);
	if (asprintf(&res, "{\"candidate\": \"best/kernel.cu\", \"status\": \"%s\", "
	    "\"correct\": %s, \"backend\": \"cuda\", \"device\": \"NVIDIA H200\", "
	    "\"timings_ms\": {\"candidate\": {\"median\": 0.010}, \"eager\": {\"median\": 0.030}, "
	    "\"compile\": {\"median\": 0.020}}, \"speedup\": {\"eager\": 3.0, \"eager_ci95\": "
	    "[2.8, 3.2], \"compile\": 2.0, \"compile_ci95\": [1.9, 2.1]}, \"flags\": []}",
	    best_status, strcmp(best_status, "correct") ? "false" : "true") < 0 ||
	    asprintf(&summary, "{\"problem\": \"/src/models/softmax_rows.py\", \"status\": "
	    "\"improved\", \"best\": {\"path\": \"best/kernel.cu\", \"speedup\": {\"eager\": 3.0, "
	    "\"compile\": 2.0}}, \"backend\": \"cuda\", \"module\": \"models/softmax_rows.py\"}") < 0 ||
	    asprintf(&h, "{\"problem\": \"x\", \"backend\": \"cuda\", \"device\": {\"name\": "
	    "\"NVIDIA H200\", \"compute_capability\": \"9.0\"}, \"candidates\": ["
	    "{\"id\": 0, \"generation\": 0, \"proposer\": \"compiler\", \"op\": \"seed\", "
	    "\"parents\": [], \"source_sha\": \"%s\", \"file\": \"candidates/0000.cu\", "
	    "\"status\": \"correct\", \"correct\": true, \"ms\": 0.011},"
	    "{\"id\": 1, \"proposer\": \"llm\", \"origin\": {\"model\": \"m1\"}, \"parents\": [0], "
	    "\"source_sha\": \"%s\", \"file\": \"candidates/0001.cu\", \"status\": \"correct\", "
	    "\"correct\": true, \"ms\": 0.040},"
	    "{\"id\": 2, \"proposer\": \"llm\", \"parents\": [0, 1], \"source_sha\": \"%s\", "
	    "\"file\": \"candidates/0002.cu\", \"status\": \"correct\", \"correct\": true, "
	    "\"ms\": 0.020, \"speedup\": {\"eager\": 1.5, \"eager_ci95\": [1.4, 1.6]}},"
	    "{\"id\": 3, \"proposer\": \"llm\", \"source_sha\": \"%s\", \"file\": "
	    "\"candidates/0003.cu\", \"status\": \"correct\", \"correct\": true, \"ms\": 0.030},"
	    "{\"id\": 4, \"proposer\": \"llm\", \"source_sha\": \"%s\", \"file\": "
	    "\"candidates/0004.cu\", \"status\": \"correct\", \"correct\": true, \"ms\": 0.012, "
	    "\"flags\": [\"side_stream\"]},"
	    "{\"id\": 5, \"proposer\": \"llm\", \"source_sha\": \"%s\", \"file\": "
	    "\"candidates/0005.cu\", \"status\": \"mismatch\", \"correct\": false, \"ms\": null},"
	    "{\"id\": 6, \"proposer\": \"compiler\", \"parents\": [2], \"source_sha\": \"%s\", "
	    "\"file\": \"candidates/0006.cu\", \"status\": \"correct\", \"correct\": true, "
	    "\"ms\": 0.010}]}", sha[0], sha[1], sha[2], sha[3], sha[4], sha[5], sha[0]) < 0)
		exit(2);
	put(d, "best/result.json", res);
	put(d, "summary.json", summary);
	put(d, "history.json", h);
	free(res);
	free(summary);
	free(h);
}

static void
test_ingest(const char *dir)
{
	struct archive_provenance prov = ARCHIVE_PROVENANCE_INIT;
	struct archive_ingest_stats st;
	struct store_archive_entry *e = NULL;
	struct store *s = NULL;
	char p[1200], run[600], repo[600], err[512];
	size_t n = 0;

	snprintf(p, sizeof(p), "%s/ingest-store", dir);
	CHECK_INT("a store for ingest", store_open(p, 0, &s), 0);
	snprintf(run, sizeof(run), "%s/run", dir);
	make_run(run, "correct");
	prov.per_problem = 3;
	prov.job = 42;
	prov.repo = "acme/model";
	CHECK_INT("ingest an optimize dir", archive_ingest_optimize_dir(s, run, &prov, &st,
	    err, sizeof(err)), 0);
	if (err[0])
		printf("     err: %s\n", err);
	CHECK_INT("... one problem", st.problems, 1);
	CHECK_INT("... K = 3 kernels: the best and the two fastest others", st.added, 3);
	CHECK_INT("... the flagged candidate refused", st.refused, 1);
	CHECK_INT("list them", store_archive_list(s, NULL, 0, 1, &e, &n), 0);
	CHECK_INT("... three rows", n, 3);
	if (n == 3) {
		/* Newest first: c3 (0.030), c2 (0.020), best (0.010). */
		CHECK("the best's time is the confirmation's", fabs(e[2].ms - 0.010) < 1e-12);
		CHECK("... its eager time", fabs(e[2].eager_ms - 0.030) < 1e-12);
		CHECK("... its compile interval", fabs(e[2].speedup_compile_lo - 1.9) < 1e-12);
		CHECK_STR("... arch from the compute capability", e[2].arch, "sm_90");
		CHECK_STR("... device", e[2].device, "NVIDIA H200");
		CHECK_STR("... problem named after the file", e[2].problem, "softmax_rows");
		CHECK_STR("... module from the summary", e[2].module, "models/softmax_rows.py");
		CHECK_STR("... repo from the provenance", e[2].repo, "acme/model");
		CHECK_INT("... job", e[2].job, 42);
		CHECK_STR("... ops from ir.json", e[2].ops, "softmax");
		CHECK_STR("... proposer of its history entry", e[2].proposer, "compiler");
		CHECK_STR("second: candidate 2 (0.020 ms)", e[1].kernel, "// c2\n");
		CHECK("... its speedup from the history", fabs(e[1].speedup_eager - 1.5) < 1e-12);
		CHECK("... eager time unknown", isnan(e[1].eager_ms));
		CHECK("... parents as kernel shas", e[1].parents && strlen(e[1].parents) == 2 * 66 + 3);
		CHECK_STR("third: candidate 3 (0.030 ms)", e[0].kernel, "// c3\n");
	}
	store_archive_entries_free(e, n);
	CHECK_INT("ingest again", archive_ingest_optimize_dir(s, run, &prov, &st, err,
	    sizeof(err)), 0);
	CHECK_INT("... all duplicates", st.duplicates, 3);
	CHECK_INT("... none added", st.added, 0);

	/* A repository's run: DIR/<slug>/, one failed, one good. */
	snprintf(repo, sizeof(repo), "%s/repo", dir);
	mkdir(repo, 0755);
	snprintf(p, sizeof(p), "%s/attn-1a2b", repo);
	make_run(p, "correct");
	put(p, "candidates/0002.cu", "// c2, changed after the run\n");
	snprintf(p, sizeof(p), "%s/mlp-3c4d", repo);
	mkdir(p, 0755);
	put(p, "summary.json", "{\"problem\": \"mlp.py\", \"status\": \"no_correct\", "
	    "\"best\": null, \"backend\": \"cuda\"}");
	prov.repo = "acme/other";
	prov.per_problem = 0;
	CHECK_INT("ingest a repository's run", archive_ingest_optimize_dir(s, repo, &prov,
	    &st, err, sizeof(err)), 0);
	CHECK_INT("... two problems", st.problems, 2);
	CHECK_INT("... one without a verified kernel", st.skipped, 1);
	CHECK_INT("... the candidate whose file changed refused", st.refused, 2);
	CHECK_INT("... K = 5 now: candidate 1 is new", st.added, 1);
	CHECK_INT("... the best and candidate 3 are duplicates of the first run",
	    st.duplicates, 2);

	/* Errors. */
	snprintf(p, sizeof(p), "%s/unverified", dir);
	make_run(p, "mismatch");
	CHECK_INT("a best that is not verified: -EINVAL", archive_ingest_optimize_dir(s, p,
	    NULL, &st, err, sizeof(err)), -EINVAL);
	CHECK("... saying so", strstr(err, "not a verified kernel") != NULL);
	snprintf(p, sizeof(p), "%s/noarch", dir);
	make_run(p, "correct");
	put(p, "history.json", "{\"device\": {\"name\": \"NVIDIA H200\"}, \"candidates\": []}");
	CHECK_INT("no arch anywhere: -EINVAL", archive_ingest_optimize_dir(s, p, NULL, &st,
	    err, sizeof(err)), -EINVAL);
	CHECK("... asking for --arch", strstr(err, "--arch") != NULL);
	prov.arch = "sm_90a";
	CHECK_INT("... given by the provenance", archive_ingest_optimize_dir(s, p, &prov, &st,
	    err, sizeof(err)), 0);
	CHECK_INT("... added on sm_90a", archive_has_arch(s, "sm_90a"), 1);
	prov.arch = NULL;
	put(p, "history.json", "{\"device\": {\"name\": \"NVIDIA A100\", \"cc_major\": 8, "
	    "\"cc_minor\": 0}, \"candidates\": []}");
	CHECK_INT("arch from cc_major/cc_minor", archive_ingest_optimize_dir(s, p, NULL, &st,
	    err, sizeof(err)), 0);
	CHECK_INT("... added on sm_80", archive_has_arch(s, "sm_80"), 1);
	put(p, "summary.json", "{\"status\": \"improved\", \"best\": {\"path\": \"../../etc/passwd\"}}");
	CHECK_INT("a best path out of the dir: -EINVAL", archive_ingest_optimize_dir(s, p,
	    NULL, &st, err, sizeof(err)), -EINVAL);
	put(p, "summary.json", "{\"status\": \"improved\", \"best\": ");
	CHECK_INT("a broken summary: -EINVAL", archive_ingest_optimize_dir(s, p, NULL, &st,
	    err, sizeof(err)), -EINVAL);
	CHECK("... naming the file", strstr(err, "summary.json") != NULL);
	snprintf(p, sizeof(p), "%s/empty", dir);
	mkdir(p, 0755);
	CHECK_INT("not an optimize dir: -ENOENT", archive_ingest_optimize_dir(s, p, NULL, &st,
	    err, sizeof(err)), -ENOENT);
	store_close(s);
}

/*
 * A store at schema 1 (made from migration 1's own SQL, so whatever later
 * migrations add is absent) with a job in it: opening it applies every
 * later migration and keeps the job; the FTS index passes its integrity
 * check after inserts and a delete.
 */
static void
test_migration(const char *dir)
{
	struct store *s = NULL;
	char sub[400], sql[500], cmd[1200];
	int64_t n = 0;
	int64_t id = 0;
	FILE *f;

	snprintf(sub, sizeof(sub), "%s/v1", dir);
	snprintf(sql, sizeof(sql), "%s/v1.sql", dir);
	snprintf(cmd, sizeof(cmd), "mkdir -p %s", sub);
	CHECK_INT("a directory", system(cmd), 0);
	if (!(f = fopen(sql, "w"))) {
		CHECK("v1.sql", 0);
		return;
	}
	fprintf(f, "CREATE TABLE schema_version (version INTEGER PRIMARY KEY, "
	    "applied INTEGER NOT NULL);\n%s\nINSERT INTO schema_version VALUES (1, 0);\n"
	    "INSERT INTO jobs (provider, repo, clone_url, sha, trigger, created, updated) "
	    "VALUES ('github', 'acme/model', 'https://example.com/acme/model.git', "
	    "'0123456789012345678901234567890123456789', 'push', 0, 0);\n",
	    store_schema_migration(1));
	fclose(f);
	snprintf(cmd, sizeof(cmd), "sqlite3 %s/kernelbot.db < %s", sub, sql);
	CHECK_INT("a store at schema 1 with a job", system(cmd), 0);
	CHECK_INT("reopened", store_open(sub, 0, &s), 0);
	if (!s)
		return;
	CHECK_INT("... migrated to the latest schema", store_schema_version(s),
	    store_schema_latest());
	CHECK("... at least 2", store_schema_version(s) >= 2);
	CHECK_INT("... the job kept", store_count(s, "jobs", &n), 0);
	CHECK_INT("... one job", n, 1);
	CHECK_INT("... the archive usable", add_fixture(s, "02_softmax_rows", "02_softmax_rows",
	    "sm_90", 0.02, NULL, &id), 0);
	CHECK_INT("... twice", add_fixture(s, "03_layernorm", "03_layernorm", "sm_90", 0.02,
	    NULL, NULL), 0);
	store_close(s);
	snprintf(cmd, sizeof(cmd), "sqlite3 %s/kernelbot.db \"DELETE FROM archive WHERE id = %lld; "
	    "INSERT INTO archive_fts (archive_fts) VALUES ('integrity-check')\"", sub,
	    (long long)id);
	CHECK_INT("the FTS index in step after inserts and a delete", system(cmd), 0);
	CHECK_INT("reopened again", store_open(sub, 0, &s), 0);
	if (s) {
		struct store_archive_entry *e = NULL;
		const char *w[] = { "softmax" };
		size_t k = 0;

		CHECK_INT("search after the delete", store_archive_search(s, w, 1, 0, 0, 10, &e,
		    &k), 0);
		CHECK_INT("... the deleted kernel is not found", k, 0);
		store_archive_entries_free(e, k);
		store_close(s);
	}
}

int
main(void)
{
	char dir[] = "/tmp/archive-test-XXXXXX", sub[300], cmd[400];
	struct store *s = NULL;

	cli_where_load();	/* the settings tests/run.sh gives in the environment */
	if (getenv("KB_ROOT"))
		root = getenv("KB_ROOT");
	if (!mkdtemp(dir))
		return 2;
	snprintf(sub, sizeof(sub), "%s/data", dir);
	CHECK_INT("open", store_open(sub, 0, &s), 0);
	if (!s)
		return t_done("test_archive");
	test_signature();
	test_refusals(s);
	test_neighbours(s);
	test_fts_escaping(s);
	test_export_import(s, dir);
	store_close(s);
	test_ingest(dir);
	test_migration(dir);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	if (system(cmd) != 0)
		printf("cannot remove %s\n", dir);
	return t_done("test_archive");
}
