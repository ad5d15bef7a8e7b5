/*
 * The graph compiler through its public headers: IR loading and its
 * refusals, schedules as values, "unsupported: OP" for what it cannot do,
 * and the CPU kernels of every IR fixture checked against PyTorch by the
 * trusted driver tests/compiler/run_kernel.py (also under schedules that
 * cut every fusion boundary, so materialized paths are exercised too).
 */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/jsonx.h"
#include "common/spawn.h"
#include "gpu/srccheck.h"
#include "pipeline/compiler/compiler.h"
#include "t.h"

#define MAX_PAIRS 256

static const char *root;

static json_t *
fixture(const char *name)
{
	char path[4096], err[256];
	json_t *j = NULL;

	snprintf(path, sizeof(path), "%s/tests/fixtures/ir/%s.json", root, name);
	if (jsonx_load_file(path, 64u << 20, &j, err, sizeof(err)) < 0)
		printf("     %s: %s\n", path, err);
	return j;
}

static int
compile_json(json_t *j, enum schedule_backend be, const struct schedule *s, char **src,
    char *err, size_t errlen)
{
	struct ir_graph *g = NULL;
	struct schedule d;
	int error;

	if ((error = ir_load(j, &g, err, errlen)) < 0)
		return error;
	if (!s) {
		schedule_default(&d, g, be);
		s = &d;
	}
	error = compiler_emit(g, s, be, src, err, errlen);
	ir_free(g);
	return error;
}

static void
test_ir_refusals(void)
{
	static const char *const bad[] = {
		"{\"ir_version\": 2, \"inputs\": [], \"nodes\": [], \"outputs\": []}",
		"{\"ir_version\": 1, \"inputs\": [], \"nodes\": []}",
		"{\"ir_version\": 1, \"inputs\": [{\"name\": \"x\", \"role\": \"input\", \"shape\": [2], \"dtype\": \"float32\"}],"
		" \"nodes\": [{\"name\": \"y\", \"op\": \"relu\", \"args\": [{\"ref\": \"z\"}], \"kwargs\": {}, \"shape\": [2], \"dtype\": \"float32\"}],"
		" \"outputs\": [{\"name\": \"y\"}]}",
		"{\"ir_version\": 1, \"inputs\": [{\"name\": \"x\", \"role\": \"input\", \"shape\": [-2], \"dtype\": \"float32\"}],"
		" \"nodes\": [], \"outputs\": [{\"name\": \"x\"}]}",
		"{\"ir_version\": 1, \"inputs\": [{\"name\": \"x\", \"role\": \"input\", \"shape\": [2], \"dtype\": \"float32\"},"
		" {\"name\": \"x\", \"role\": \"input\", \"shape\": [2], \"dtype\": \"float32\"}], \"nodes\": [], \"outputs\": [{\"name\": \"x\"}]}",
		/* a variant graph must be called like the traced one: same inputs */
		"{\"ir_version\": 1, \"inputs\": [{\"name\": \"x\", \"role\": \"input\", \"shape\": [2], \"dtype\": \"float32\"}],"
		" \"nodes\": [], \"outputs\": [{\"name\": \"x\"}], \"variant_graphs\": [{\"ir_version\": 1,"
		" \"inputs\": [{\"name\": \"y\", \"role\": \"input\", \"shape\": [3], \"dtype\": \"float32\"}],"
		" \"nodes\": [], \"outputs\": [{\"name\": \"y\"}]}]}",
		"{\"ir_version\": 1, \"inputs\": [{\"name\": \"x\", \"role\": \"input\", \"shape\": [2], \"dtype\": \"float32\"}],"
		" \"nodes\": [], \"outputs\": [{\"name\": \"x\"}], \"variant_graphs\": [{\"ir_version\": 1,"
		" \"inputs\": [], \"nodes\": [], \"outputs\": []}]}",
	};
	char err[256];

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		json_t *j = json_loads(bad[i], 0, NULL);
		struct ir_graph *g = NULL;
		CHECK("bad IR parses as JSON", j != NULL);
		CHECK_INT("bad IR is refused", ir_load(j, &g, err, sizeof(err)), -EINVAL);
		CHECK("with a reason", err[0] != '\0');
		json_decref(j);
	}
}

static void
test_unsupported(void)
{
	const char *text =
	    "{\"ir_version\": 1, \"inputs\": [{\"name\": \"x\", \"role\": \"input\", \"shape\": [4], \"dtype\": \"float32\"}],"
	    " \"nodes\": [{\"name\": \"y\", \"op\": \"sort\", \"args\": [{\"ref\": \"x\"}], \"kwargs\": {}, \"shape\": [4], \"dtype\": \"float32\"}],"
	    " \"outputs\": [{\"name\": \"y\", \"shape\": [4], \"dtype\": \"float32\"}]}";
	const char *half =
	    "{\"ir_version\": 1, \"inputs\": [{\"name\": \"x\", \"role\": \"input\", \"shape\": [4], \"dtype\": \"float16\"}],"
	    " \"nodes\": [{\"name\": \"y\", \"op\": \"relu\", \"args\": [{\"ref\": \"x\"}], \"kwargs\": {}, \"shape\": [4], \"dtype\": \"float16\"}],"
	    " \"outputs\": [{\"name\": \"y\", \"shape\": [4], \"dtype\": \"float16\"}]}";
	json_t *j = json_loads(text, 0, NULL);
	char err[256], *src = NULL;

	CHECK_INT("an unknown op is refused", compile_json(j, SCHED_CPU, NULL, &src, err, sizeof(err)),
	    -ENOTSUP);
	CHECK_STR("with unsupported: OP, naming the node", err, "unsupported: sort (node y, op sort)");
	CHECK("and no source", src == NULL);
	json_decref(j);
	j = json_loads(half, 0, NULL);
	CHECK_INT("fp16 is refused", compile_json(j, SCHED_CPU, NULL, &src, err, sizeof(err)), -ENOTSUP);
	CHECK("naming the dtype", strstr(err, "unsupported: dtype float16") == err);
	json_decref(j);
}

/* Compile fixture name for backend b (checked, labelled what): how many
 * times needle occurs in the source; -1 when it does not compile. */
static int
occurrences(const char *name, enum schedule_backend b, const char *what, const char *needle)
{
	json_t *j = fixture(name);
	char err[256], label[160], *src = NULL;
	int n = 0;

	snprintf(label, sizeof(label), "%s: %s compiles", b == SCHED_CUDA ? "cuda" : "cpu", what);
	if (!j || !CHECK(label, compile_json(j, b, NULL, &src, err, sizeof(err)) == 0)) {
		printf("     %s\n", j ? err : "no fixture");
		json_decref(j);
		return -1;
	}
	for (const char *t = src; (t = strstr(t, needle)); t++)
		n++;
	free(src);
	json_decref(j);
	return n;
}

/* A group whose loop nest needs more index variables than a kernel has
 * (twelve overlapping windows, fused) is cut into kernels that fit, on
 * both backends, and the header lists them. The cost model: a group
 * norm's statistics, read per element of a pooling window, get kernels
 * of their own instead of being reduced again for each. */
static void
test_group_cut(void)
{
	static const enum schedule_backend be[] = { SCHED_CPU, SCHED_CUDA };

	for (int b = 0; b < 2; b++) {
		CHECK(b ? "cuda: twelve windows cut into several kernels" :
		    "cpu: twelve windows cut into several kernels",
		    occurrences("deep_windows", be[b], "twelve windows in a row", " -> scratch {") >= 2);
		CHECK(b ? "cuda: group statistics materialized, not recomputed per window" :
		    "cpu: group statistics materialized, not recomputed per window",
		    occurrences("groupnorm_pool", be[b], "a group norm under a pooling",
		    "sum -> scratch {2, 4, 1}") == 2);
	}
}

/* A kernel's leading comment gives its schedule back (the archive's
 * schedules seed the search from it). */
static void
test_schedule_from_source(void)
{
	json_t *j = fixture("05_linear_gelu");
	struct schedule a, b, c;
	char err[256], *src = NULL;

	schedule_default(&a, NULL, SCHED_CUDA);
	a.block = 128;
	a.reduce = SCHED_RED_WARP;
	a.cuts = 0x2a;
	a.gemm_algo = 3;
	a.conv_algo = -1;
	schedule_default(&b, NULL, SCHED_CUDA);
	CHECK("a CUDA kernel's schedule comes back from its comment",
	    j && compile_json(j, SCHED_CUDA, &a, &src, err, sizeof(err)) == 0 &&
	    schedule_from_source(&b, src, err, sizeof(err)) == 0 && !schedule_cmp(&a, &b));
	free(src);
	src = NULL;
	schedule_default(&a, NULL, SCHED_CPU);
	a.cpu_tile = 32;
	a.cuts = 1;
	schedule_default(&b, NULL, SCHED_CPU);
	CHECK("and a CPU kernel's",
	    j && compile_json(j, SCHED_CPU, &a, &src, err, sizeof(err)) == 0 &&
	    schedule_from_source(&b, src, err, sizeof(err)) == 0 && !schedule_cmp(&a, &b));
	free(src);
	schedule_default(&c, NULL, SCHED_CPU);
	CHECK_INT("no schedule line: -ENOENT", schedule_from_source(&c, "/* hand-written */", err,
	    sizeof(err)), -ENOENT);
	CHECK_INT("a line that does not parse: -EINVAL",
	    schedule_from_source(&c, " * schedule: cpu_tile=x\n", err, sizeof(err)), -EINVAL);
	CHECK_INT("nor a value out of range",
	    schedule_from_source(&c, " * schedule: cpu_tile=9999\n", err, sizeof(err)), -EINVAL);
	json_decref(j);
}

static void
test_schedule(void)
{
	struct schedule a, b, c;
	json_t *j, *bad;
	char err[256];
	uint64_t rng = 42;
	int changed = 0, from_parents = 1;

	schedule_default(&a, NULL, SCHED_CUDA);
	j = schedule_to_json(&a);
	CHECK("schedule serializes", j != NULL);
	schedule_default(&b, NULL, SCHED_CPU);
	CHECK_INT("and reads back", schedule_from_json(&b, j, err, sizeof(err)), 0);
	CHECK_INT("to the same value", schedule_cmp(&a, &b), 0);
	json_decref(j);
	for (int i = 0; i < 64; i++) {
		b = a;
		schedule_mutate(&b, &rng);
		changed += schedule_cmp(&a, &b) != 0;
		j = schedule_to_json(&b);
		c = a;
		if (schedule_from_json(&c, j, err, sizeof(err)) < 0 || schedule_cmp(&b, &c))
			from_parents = 0;
		json_decref(j);
	}
	CHECK("mutation changes schedules", changed > 32);
	CHECK("every mutant round-trips through JSON", from_parents);
	schedule_default(&b, NULL, SCHED_CUDA);
	b.block = 1024;
	b.vec = 1;
	b.cuts = 0xff;
	schedule_crossover(&c, &a, &b, &rng);
	CHECK("crossover takes each field from a parent",
	    (c.block == a.block || c.block == b.block) && (c.vec == a.vec || c.vec == b.vec) &&
	    (c.cuts & ~b.cuts) == 0);
	bad = json_loads("{\"block\": 100}", 0, NULL);
	CHECK_INT("block must be a power of two", schedule_from_json(&a, bad, err, sizeof(err)), -EINVAL);
	json_decref(bad);
	bad = json_loads("{\"blocks\": 128}", 0, NULL);
	CHECK_INT("unknown fields are refused", schedule_from_json(&a, bad, err, sizeof(err)), -EINVAL);
	CHECK("naming the field", strstr(err, "blocks") != NULL);
	json_decref(bad);
	bad = json_loads("{\"reduce\": \"grid\"}", 0, NULL);
	CHECK_INT("unknown reduce strategy", schedule_from_json(&a, bad, err, sizeof(err)), -EINVAL);
	json_decref(bad);
	bad = json_loads("{\"row_regs\": 2}", 0, NULL);
	CHECK_INT("row_regs 2 (32 floats a thread)", schedule_from_json(&a, bad, err, sizeof(err)), 0);
	CHECK_INT("... is kept", a.row_regs, 2);
	json_decref(bad);
	bad = json_loads("{\"row_regs\": false}", 0, NULL);
	CHECK_INT("row_regs still takes a boolean", schedule_from_json(&a, bad, err, sizeof(err)), 0);
	CHECK_INT("... false is 0", a.row_regs, 0);
	json_decref(bad);
	bad = json_loads("{\"row_regs\": 3}", 0, NULL);
	CHECK_INT("row_regs 3 is refused", schedule_from_json(&a, bad, err, sizeof(err)), -EINVAL);
	json_decref(bad);
	schedule_default(&a, NULL, SCHED_CUDA);
	CHECK("by default a row is one block's, 32 floats a thread, no occupancy hint, divisions, plain loads, the one-pass scan",
	    a.row_split == 1 && a.row_regs == 2 && a.min_blocks == 0 && a.rcp == 0 && a.stream == 0 && a.scan == 1);
	bad = json_loads("{\"row_split\": 4, \"stream\": true, \"scan\": 0}", 0, NULL);
	CHECK_INT("row_split 4, stream and scan are read", schedule_from_json(&a, bad, err, sizeof(err)), 0);
	CHECK("... and kept", a.row_split == 4 && a.stream == 1 && a.scan == 0);
	json_decref(bad);
	j = schedule_to_json(&a);
	schedule_default(&b, NULL, SCHED_CUDA);
	CHECK("... and round-trip through JSON", j && schedule_from_json(&b, j, err, sizeof(err)) == 0 &&
	    schedule_cmp(&a, &b) == 0);
	json_decref(j);
	bad = json_loads("{\"row_split\": 3}", 0, NULL);
	CHECK_INT("row_split 3 is refused", schedule_from_json(&a, bad, err, sizeof(err)), -EINVAL);
	json_decref(bad);
	bad = json_loads("{\"row_split\": 8}", 0, NULL);
	CHECK_INT("row_split 8 is refused", schedule_from_json(&a, bad, err, sizeof(err)), -EINVAL);
	json_decref(bad);
	bad = json_loads("{\"min_blocks\": 3}", 0, NULL);
	CHECK_INT("min_blocks 3 is refused", schedule_from_json(&a, bad, err, sizeof(err)), -EINVAL);
	json_decref(bad);
	bad = json_loads("{\"min_blocks\": 2}", 0, NULL);
	CHECK_INT("min_blocks 2 is read", schedule_from_json(&a, bad, err, sizeof(err)), 0);
	CHECK_INT("... and kept", a.min_blocks, 2);
	json_decref(bad);
	bad = json_loads("{\"row_split\": true}", 0, NULL);
	CHECK_INT("row_split is not a boolean", schedule_from_json(&a, bad, err, sizeof(err)), -EINVAL);
	json_decref(bad);
	b = a;
	b.scan = !a.scan;
	CHECK("scan tells schedules apart", schedule_cmp(&a, &b) != 0);
	b = a;
	b.row_split = 2;
	CHECK("and row_split", schedule_cmp(&a, &b) != 0);
}

static int
write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "we");

	if (!f)
		return -1;
	fputs(text, f);
	return fclose(f);
}

enum { PAIR_DEFAULT, PAIR_CUTS, PAIR_NOFOLD };

/* Compile fixture NAME for the CPU into dir, under the default schedule,
 * with every fusion boundary cut, or with bn_fold turned off; 1 when a
 * pair was added. */
static int
add_pair(const char *dir, const char *kind, const char *problem, int variant, char *name,
    char *kpath, char *ppath)
{
	static const char *const suffix[] = { "", "+cuts", "+nofold" };
	int cut = variant == PAIR_CUTS;
	struct schedule s;
	json_t *j = fixture(problem);
	char *src = NULL, label[160], err[1024];
	int ok;

	schedule_default(&s, NULL, SCHED_CPU);
	s.cuts = cut ? ~UINT64_C(0) : 0;
	s.cpu_tile = cut ? 16 : 64;
	if (variant == PAIR_NOFOLD)
		s.bn_fold = 0;
	snprintf(label, sizeof(label), "%.64s compiles for the CPU%s", problem,
	    cut ? " (all fusion cuts)" : variant == PAIR_NOFOLD ? " (bn_fold off)" : "");
	ok = CHECK(label, j && compile_json(j, SCHED_CPU, &s, &src, err, sizeof(err)) == 0);
	json_decref(j);
	if (!ok) {
		printf("     %s\n", err);
		return 0;
	}
	CHECK("the source has the ABI entry point", strstr(src, "\nkernelbot_forward(") != NULL);
	snprintf(name, 64, "%.50s%s", problem, suffix[variant]);
	snprintf(kpath, 4200, "%s/%s.c", dir, name);
	/* The op fixtures are the harness's own; only the shrunk problems are ours. */
	snprintf(ppath, 4200, "%s/tests/fixtures/%s%s/%s.py", root,
	    strcmp(kind, "ops") ? "compiler/" : "", kind, problem);
	ok = CHECK("kernel written", write_file(kpath, src) == 0);
	free(src);
	return ok;
}

/* CUDA sources compile with nvcc (no GPU needed), in one nvcc run: one
 * kernel per CUDA code path (flat, warp, block and column teams, thread per
 * output, cuBLAS, cuDNN, scans, gathers, argmax, batch norms folded into
 * cuDNN and cuBLAS calls, and the schedule's off-by-default paths: cluster
 * rows, cache hints, the one-pass scan), so the check stays cheap;
 * tests/compiler/check_cuda.sh compiles every fixture. */
static void
test_cuda_compiles(const char *dir)
{
	static const char *const problems[] = { "02_softmax_rows", "08_conv2d_batchnorm_silu",
		"09_mean_tanh", "11_causal_attention", "13_cross_entropy", "14_cumsum",
		"16_maxpool_relu_scale", "reduce_paths", "attention_tiles", "conv_chain",
		"shape_variants", NULL };
	static const char *const ops[] = { "argmax_argmin", "cat_stack", NULL };
	/* bn_fold is off by default on CUDA: these get it turned on */
	static const char *const folds[] = { "bn_fold", NULL };
	static const struct {
		const char *ir, *sched;
	} choices[] = {
		{ "02_softmax_rows", "{\"row_split\": 4, \"stream\": 1, \"rcp\": 1}" },
		{ "10_logsumexp_rows", "{\"row_split\": 2, \"row_regs\": 2, \"min_blocks\": 4}" },
		{ "13_cross_entropy", "{\"row_split\": 2, \"stream\": 1}" },
		{ "13_cross_entropy", "{\"pdl\": 1, \"block\": 128}" },
		{ "10_logsumexp_rows", "{\"online\": 1}" },
		{ "13_cross_entropy", "{\"online\": 1, \"reduce\": \"warp\"}" },
		{ "08_conv2d_batchnorm_silu", "{\"pdl\": 1}" },
		{ "14_cumsum", "{\"scan\": 1, \"stream\": 1}" },
		{ "14_cumsum", "{\"scan\": 1, \"block\": 64}" },
		/* cuBLASLt's heuristic: a linear, a batched GEMM, and with TF32 */
		{ "05_linear_gelu", "{\"gemm_algo\": 1}" },
		{ "11_causal_attention", "{\"gemm_algo\": 3}" },
		{ "12_mlp_block", "{\"gemm_algo\": 2, \"tf32\": 1}" },
		{ "{\"ir_version\": 1, \"inputs\": [{\"name\": \"x\", \"role\": \"input\", \"shape\": [8, 4096], \"dtype\": \"float32\"}],"
		  " \"nodes\": [{\"name\": \"a\", \"op\": \"argmax\", \"args\": [{\"ref\": \"x\"}], \"kwargs\": {\"dim\": 1, \"keepdim\": false},"
		  " \"shape\": [8], \"dtype\": \"int64\"}],"
		  " \"outputs\": [{\"name\": \"a\", \"shape\": [8], \"dtype\": \"int64\"}]}", "{\"row_split\": 4}" },
		{ NULL, NULL },
	};
	static const char nvcc[] = "/usr/local/cuda/bin/nvcc";
	const char *argv[64], *envp[] = { "PATH=/usr/local/cuda/bin:/usr/bin:/bin", "HOME=/tmp", NULL };
	char paths[40][4200], err[1024];
	struct spawn_opts o = SPAWN_OPTS_INIT;
	struct spawn_result r;
	int argc = 0, n = 0;

	if (access(nvcc, X_OK) != 0) {
		printf("nvcc not found: CUDA compile checks skipped\n");
		return;
	}
	argv[argc++] = nvcc;
	argv[argc++] = "-c";
	argv[argc++] = "-O1";
	argv[argc++] = "-arch=sm_90";
	argv[argc++] = "-Xcompiler";
	argv[argc++] = "-fPIC";
	argv[argc++] = "-I/usr/include";
	argv[argc++] = "-odir";
	argv[argc++] = dir;
	for (int k = 0; k < 3; k++) {
		const char *const *list = k == 2 ? folds : k ? ops : problems;
		struct schedule sc;
		schedule_default(&sc, NULL, SCHED_CUDA);
		sc.bn_fold = k == 2;
		for (int i = 0; list[i] && n < 40; i++) {
			json_t *j = fixture(list[i]);
			char *src = NULL, label[160];
			snprintf(label, sizeof(label), "%.64s compiles for CUDA%s", list[i], k == 2 ? " (bn_fold)" : "");
			if (!CHECK(label, j && compile_json(j, SCHED_CUDA, &sc, &src, err, sizeof(err)) == 0)) {
				printf("     %s\n", err);
				json_decref(j);
				continue;
			}
			json_decref(j);
			snprintf(paths[n], sizeof(paths[n]), "%s/%s%s.cu", dir, list[i], k == 2 ? "+fold" : "");
			if (write_file(paths[n], src) == 0 && argc < 62)
				argv[argc++] = paths[n++];
			free(src);
		}
	}
	/* the schedule choices the default does not take, where they apply
	 * (full-size rows; an argmax so that the cluster team's arg is built) */
	for (int i = 0; choices[i].ir && n < 40; i++) {
		struct schedule sc;
		json_t *j = NULL, *sj = json_loads(choices[i].sched, 0, NULL);
		char *src = NULL, label[200], path[4200];
		int ok;
		if (choices[i].ir[0] == '{') {
			j = json_loads(choices[i].ir, 0, NULL);
		} else {
			snprintf(path, sizeof(path), "%s/bench/ir/%s.json", root, choices[i].ir);
			if (jsonx_load_file(path, 64u << 20, &j, err, sizeof(err)) < 0)
				j = NULL;
		}
		schedule_default(&sc, NULL, SCHED_CUDA);
		ok = j && sj && schedule_from_json(&sc, sj, err, sizeof(err)) == 0 &&
		    compile_json(j, SCHED_CUDA, &sc, &src, err, sizeof(err)) == 0;
		snprintf(label, sizeof(label), "%.40s compiles for CUDA under %.100s",
		    choices[i].ir[0] == '{' ? "argmax over rows of 4096" : choices[i].ir, choices[i].sched);
		json_decref(j);
		json_decref(sj);
		if (!CHECK(label, ok)) {
			printf("     %s\n", err);
			free(src);
			continue;
		}
		snprintf(paths[n], sizeof(paths[n]), "%s/variant%d.cu", dir, i);
		if (write_file(paths[n], src) == 0 && argc < 62)
			argv[argc++] = paths[n++];
		free(src);
	}
	argv[argc] = NULL;
	o.argv = argv;
	o.envp = envp;
	o.timeout_ms = 1200 * 1000;
	memset(&r, 0, sizeof(r));
	CHECK("nvcc runs", spawn_run(&o, &r) == 0);
	if (!CHECK("every CUDA kernel compiles with nvcc", r.status == 0)) {
		/* The errors, not the warnings before them: the end of what it said. */
		const char *e = buf_cstr(&r.err);
		size_t len = strlen(e);

		printf("     status %d, signal %d, timed out %d, %.0f s; ...%s\n", r.status,
		    r.term_signal, r.timed_out, r.wall_s, e + (len > 3000 ? len - 3000 : 0));
	}
	spawn_result_free(&r);
	for (int i = 0; i < n; i++) {
		char obj[4300];
		unlink(paths[i]);
		snprintf(obj, sizeof(obj), "%.4190s", paths[i]);
		obj[strlen(obj) - 3] = '\0';
		strcat(obj, ".o");
		unlink(obj);
	}
}

/* The CPU backend's code shape: a parallel region only for enough work,
 * float32 GEMM and conv through the prelude's kb_sgemm, cpu_tile reaching
 * the GEMM's k block. */
static void
test_cpu_codegen(void)
{
	static const char *const relu =
	    "{\"ir_version\": 1, \"inputs\": [{\"name\": \"x\", \"role\": \"input\", \"shape\": [%d, 1024], \"dtype\": \"float32\"}],"
	    " \"nodes\": [{\"name\": \"y\", \"op\": \"relu\", \"args\": [{\"ref\": \"x\"}], \"kwargs\": {}, \"shape\": [%d, 1024], \"dtype\": \"float32\"}],"
	    " \"outputs\": [{\"name\": \"y\", \"shape\": [%d, 1024], \"dtype\": \"float32\"}]}";
	char text[1024], err[256], *src = NULL, *src2 = NULL;
	json_t *j;
	struct schedule s;
	const char *p;
	int calls;

	for (int big = 0; big < 2; big++) {
		int rows = big ? 1024 : 4;
		snprintf(text, sizeof(text), relu, rows, rows, rows);
		j = json_loads(text, 0, NULL);
		CHECK_INT("relu compiles", compile_json(j, SCHED_CPU, NULL, &src, err, sizeof(err)), 0);
		/* the kernel's body, after the prelude (whose GEMM has its own regions) */
		p = src ? strstr(src, "int rc = 0;") : NULL;
		CHECK(big ? "1M elements: a parallel region" : "4K elements: none (one thread)",
		    p && (strstr(p, "omp parallel for") != NULL) == big);
		CHECK("and a simd loop", p && strstr(p, "omp simd"));
		free(src);
		src = NULL;
		json_decref(j);
	}
	if ((j = fixture("07_conv2d_relu_bias"))) {
		CHECK_INT("conv compiles", compile_json(j, SCHED_CPU, NULL, &src, err, sizeof(err)), 0);
		for (calls = 0, p = src; p && (p = strstr(p, "kb_im2col_pack(")); p++)
			calls++;
		CHECK_INT("float32 conv2d is im2col + GEMM (definition and a call)", calls, 2);
		free(src);
		src = NULL;
		json_decref(j);
	}
	if ((j = fixture("bn_fold"))) {
		/* the fold step's kernels: each layer's weight scaled per output channel */
		static const char *const folded[] = { "add rsqrt mul mul -> scratch {6, 2, 3, 3}",
			"add rsqrt mul -> scratch {5, 3, 3}", "add rsqrt mul mul -> scratch {9, 7}",
			"add rsqrt mul mul -> scratch {7, 9}", NULL };
		int all = 1, none = 1;
		schedule_default(&s, NULL, SCHED_CPU);
		CHECK_INT("bn_fold is on by default on the CPU", s.bn_fold, 1);
		CHECK_INT("batch norms after layers compile", compile_json(j, SCHED_CPU, &s, &src, err, sizeof(err)), 0);
		s.bn_fold = 0;
		CHECK_INT("and without the fold", compile_json(j, SCHED_CPU, &s, &src2, err, sizeof(err)), 0);
		for (int i = 0; folded[i]; i++) {
			all &= src && strstr(src, folded[i]) != NULL;
			none &= src2 && !strstr(src2, folded[i]);
		}
		CHECK("conv2d, conv1d, linear and addmm take the batch norm into their weights", all);
		CHECK("bn_fold off keeps the weights as they are", none);
		CHECK("so does matmul, with its bias add or without one",
		    src && strstr(src, "add tanh -> output {5, 9} (tanh)") &&
		    strstr(src, "add -> output {5, 9} (matmul_1)"));
		CHECK("a layer whose output is also read elsewhere keeps its own",
		    src && strstr(src, "[library] gemm -> scratch {5, 9} (linear_1)") &&
		    strstr(src, "sub add rsqrt mul mul add add -> output {5, 9} (add)"));
		CHECK("and so does a matmul with a bias that is not per output channel",
		    src && strstr(src, "[library] gemm -> scratch {5, 9} (matmul_2)"));
		free(src);
		free(src2);
		src = src2 = NULL;
		json_decref(j);
	}
	if ((j = fixture("05_linear_gelu"))) {
		schedule_default(&s, NULL, SCHED_CPU);
		s.cpu_tile = 16;
		CHECK_INT("linear compiles", compile_json(j, SCHED_CPU, &s, &src, err, sizeof(err)), 0);
		s.cpu_tile = 128;
		CHECK_INT("with another tile", compile_json(j, SCHED_CPU, &s, &src2, err, sizeof(err)), 0);
		CHECK("float32 linear calls kb_sgemm", src && strstr(src, "kb_sgemm, k block 64"));
		CHECK("cpu_tile sets its k block", src2 && strstr(src2, "kb_sgemm, k block 512"));
		free(src);
		free(src2);
		json_decref(j);
	}
}


/* Source for IR under a schedule given as JSON; NULL on any failure. */
static char *
cuda_source(const char *ir_path, const char *sched)
{
	json_t *j = NULL, *sj = json_loads(sched, 0, NULL);
	struct schedule sc;
	char err[256], *src = NULL;

	schedule_default(&sc, NULL, SCHED_CUDA);
	if (jsonx_load_file(ir_path, 64u << 20, &j, err, sizeof(err)) < 0 || !sj ||
	    schedule_from_json(&sc, sj, err, sizeof(err)) < 0 ||
	    compile_json(j, SCHED_CUDA, &sc, &src, err, sizeof(err)) < 0)
		printf("     %s under %s: %s\n", ir_path, sched, err);
	json_decref(j);
	json_decref(sj);
	return src;
}

/* `reduce: thread` is not taken on long rows (emit_cuda.c's
 * CU_THREAD_ROW_MAX): there it gives the kernel of `reduce: warp`, which
 * the search judges once. Shorter rows keep a thread a row. */
static void
test_cuda_thread_rows(void)
{
	char path[4200];
	char *t, *w;

	snprintf(path, sizeof(path), "%s/bench/ir/02_softmax_rows.json", root);
	t = cuda_source(path, "{\"reduce\": \"thread\"}");
	w = cuda_source(path, "{\"reduce\": \"warp\"}");
	/* the code after the leading comment, which names the schedule */
	CHECK("rows of 16384: reduce thread gives reduce warp's kernel",
	    t && w && strstr(t, "*/") && strstr(w, "*/") && !strcmp(strstr(t, "*/"), strstr(w, "*/")));
	free(t);
	free(w);
	snprintf(path, sizeof(path), "%s/tests/fixtures/ir/02_softmax_rows.json", root);
	t = cuda_source(path, "{\"reduce\": \"thread\"}");
	w = cuda_source(path, "{\"reduce\": \"warp\"}");
	CHECK("rows of 1000: reduce thread keeps a thread a row",
	    t && w && strstr(t, "*/") && strstr(w, "*/") && strcmp(strstr(t, "*/"), strstr(w, "*/")) != 0);
	free(t);
	free(w);
}

/* The compiler's own kernels give the reviewer no static-check flags
 * (gpu/srccheck.c): not the library paths, and not TF32's name where the
 * schedule does not ask for TF32. */
static void
test_cuda_no_flags(void)
{
	static const struct {
		const char *ir, *sched;
	} cases[] = {
		{ "05_linear_gelu", "{}" },
		{ "05_linear_gelu", "{\"gemm_algo\": 1}" },
		{ "11_causal_attention", "{\"gemm_algo\": 2}" },
		{ "08_conv2d_batchnorm_silu", "{}" },
		{ "13_cross_entropy", "{\"stream\": true}" },
		{ "14_cumsum", "{}" },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char path[4200], label[200];
		json_t *checks = json_array(), *flags = json_array();
		char *src;

		snprintf(path, sizeof(path), "%s/bench/ir/%s.json", root, cases[i].ir);
		src = cuda_source(path, cases[i].sched);
		snprintf(label, sizeof(label), "%s under %s: no static-check flags", cases[i].ir,
		    cases[i].sched);
		if (!CHECK(label, src && srccheck_text(src, strlen(src), SRCCHECK_CUDA, 1, checks,
		    flags) == 0 && json_array_size(flags) == 0))
			printf("     flags: %s\n", json_dumps(flags, 0));
		free(src);
		json_decref(checks);
		json_decref(flags);
	}
}

/* What the CUDA backend picks for the full-size development problems
 * (bench/ir/), read off the generated source: no GPU needed. */
static void
test_cuda_paths(void)
{
	static const struct {
		const char *ir, *sched, *want, *unwanted, *label;
	} cases[] = {
		{ "09_mean_tanh", NULL, "KB_BLOCK_TEAM 2", NULL,
		  "a mean over the middle dim runs as column teams" },
		{ "09_mean_tanh", NULL, "kb_load_vec(t5, in0 + x0 + 4194304 * x1 + 1024 * r2);", NULL,
		  "a column team thread sums 4 adjacent outputs, reading them 16 bytes at a time" },
		{ "09_mean_tanh", NULL, "KB_LANES a4[kb_j] = kb_team_sum(a4[kb_j]);", NULL,
		  "and combines each lane's sum across the team" },
		{ "09_mean_tanh", NULL, "kb_k0<<<kb_grid(512, 1), dim3(32, 8), 0, st>>>", NULL,
		  "so a block covers 128 outputs" },
		{ "09_mean_tanh", NULL, "if (kb_lane == 0 && kb_oc == kb_o) kb_store_vec(out0 + x0 + 1024 * x1, t7);", NULL,
		  "and one lane of the team stores them, 16 bytes at a time" },
		{ "09_mean_tanh", "{\"vec\": 1}", "kb_k0<<<kb_grid(2048, 1), dim3(32, 8), 0, st>>>", "kb_load_vec(t",
		  "vec 1 keeps a thread per output" },
		{ "09_mean_tanh", "{\"reduce\": \"thread\"}", "KB_BLOCK_TEAM 0", "KB_BLOCK_TEAM 2",
		  "reduce=thread keeps a thread per output" },
		{ "11_causal_attention", "{\"attn\": true}", "kb_attn<64, 1><<<dim3(16, 128)", "cublas",
		  "attn=true makes attention one fused kernel" },
		{ "11_causal_attention", NULL, "cublasSgemmStridedBatched", "kb_attn<",
		  "by default attention is cuBLAS and a softmax kernel" },
		{ "05_linear_gelu", NULL, "cublasSgemmStridedBatched(h, CUBLAS_OP_T, CUBLAS_OP_N, 4096, 4096, 4096",
		  "kb_lt_gemm", "gemm_algo 0: a linear is cuBLAS's SGEMM, the weight transposed" },
		{ "05_linear_gelu", "{\"gemm_algo\": 3}",
		  "kb_lt_gemm(st, kb_gemm0_algo, 2, CUBLAS_COMPUTE_32F, CUBLAS_OP_T, CUBLAS_OP_N, 4096, 4096, 4096", "cublasSgemm",
		  "gemm_algo 3: cuBLASLt's third heuristic answer, the same operands" },
		{ "11_causal_attention", "{\"gemm_algo\": 1}", "s5, 1024, 1048576, 128))",
		  "cublasSgemmStridedBatched", "and batched GEMMs through cuBLASLt's strided batches" },
		{ "11_causal_attention", "{\"gemm_algo\": 1}", "kb_lt_gemm(st, kb_gemm1_algo, 0, CUBLAS_COMPUTE_32F,",
		  NULL, "each GEMM keeping its own pick" },
		{ "02_softmax_rows", "{\"row_cache\": true, \"row_regs\": false}",
		  "*reinterpret_cast<kb_vec_t<float, 4> *>(kb_row0 + 4 * kb_c) = "
		  "*reinterpret_cast<const kb_vec_t<float, 4> *>(in0 + 16384 * x0 + 4 * kb_c);", NULL,
		  "row_cache copies a softmax row into shared memory once, 16 bytes at a time" },
		{ "02_softmax_rows", "{\"row_cache\": true, \"row_regs\": false}", "kb_row0[kb_c] = in0[16384 * x0 + kb_c];", NULL,
		  "and one float at a time in the kernel for unaligned buffers" },
		{ "02_softmax_rows", "{\"row_cache\": true, \"row_regs\": false}",
		  "cudaFuncAttributeMaxDynamicSharedMemorySize, 65536", NULL,
		  "a 64 KiB row opts in to the shared memory" },
		{ "02_softmax_rows", "{\"row_regs\": false}", "kb_load_vec(", "kb_row0",
		  "with row_regs and row_cache off rows are read from global memory" },
		{ "02_softmax_rows", "{\"row_regs\": 1}",
		  "kb_load_part<float, 4>(kb_row0, kb_c * 4, in0 + 16384 * x0 + (int64_t)(kb_lane + kb_c * 1024) * 4);",
		  "kb_smem", "row_regs 1: a 16384 row goes to registers, 16 floats a thread of 1024, 16 bytes at a time" },
		{ "02_softmax_rows", NULL, "float t22 = kb_row0[kb_i2 * 4 + kb_j2];", "in0[16384 * x0 + r",
		  "and the max and sum passes read those registers, not global memory" },
		{ "02_softmax_rows", NULL, "KB_LANES t20[kb_j] = kb_row0[kb_ni * 4 + kb_j];", NULL,
		  "and so does the normalize-and-write loop" },
		{ "02_softmax_rows", "{\"row_regs\": 1}", "kb_k0<<<kb_grid(4096, 1), 1024, 0, st>>>", NULL,
		  "the team grows to 1024 threads so that the row fits" },
		{ "02_softmax_rows", "{\"row_regs\": 1}",
		  "KB_LANES kb_row0[kb_c * KB_VEC + kb_j] = in0[16384 * x0 + (int64_t)(kb_lane + kb_c * 1024) * KB_VEC + kb_j];",
		  NULL, "the kernel for unaligned buffers loads the same layout one float at a time" },
		{ "02_softmax_rows", "{\"row_regs\": false, \"row_cache\": true}", "kb_smem", "kb_load_part<",
		  "row_cache is still selectable with row_regs off" },
		{ "02_softmax_rows", NULL, "kb_k0<<<kb_grid(4096, 1), 512, 0, st>>>", "1024, 0, st>>>",
		  "by default (row_regs 2) the team stops at 512 threads of 32 floats" },
		{ "02_softmax_rows", NULL, "float kb_row0[32];", "kb_smem",
		  "and each thread keeps 32 floats of the row in registers" },
		{ "02_softmax_rows", NULL,
		  "KB_LANES kb_row0[kb_c * KB_VEC + kb_j] = in0[16384 * x0 + (int64_t)(kb_lane + kb_c * 512) * KB_VEC + kb_j];",
		  NULL, "the kernel for unaligned buffers loads that layout one float at a time" },
		{ "03_layernorm", NULL, "kb_load_part<float, 4>(kb_row0, kb_c * 4, in0 + 4096 * x0 + (int64_t)(kb_lane + kb_c * 256) * 4);",
		  "in0[4096 * x0 + r", "a layer norm's row of 4096 in registers with 256 threads" },
		{ "04_rmsnorm_residual", NULL, "float kb_row1[16];", "kb_smem",
		  "both rows of the residual add in registers" },
		{ "10_logsumexp_rows", "{\"row_regs\": 1}", "kb_k0<<<kb_grid(8192, 1), 512, 0, st>>>", NULL,
		  "row_regs 1: a row of 8192 gets 512 threads of 16" },
		{ "10_logsumexp_rows", NULL, "kb_k0<<<kb_grid(8192, 1), 256, 0, st>>>", NULL,
		  "by default 256 threads of 32" },
		{ "13_cross_entropy", NULL, "float t35 = kb_row0[kb_i2 * 4 + kb_j2];", NULL,
		  "the loss's max and sum read the logits' row from registers" },
		{ "03_layernorm", "{\"row_cache\": true, \"row_regs\": false}", "kb_row0", NULL, "row_cache caches a layer norm's row" },
		{ "05_linear_gelu", NULL, "kb_scratch((void **)&s4", "cublasSetMathMode",
		  "GEMM scratch is pooled and the math mode untouched" },
		{ "05_linear_gelu", NULL, "int s4_own = 1;", "kb_scratch_at(0",
		  "64 MiB of GEMM output is the pool's on each call, never kept" },
		{ "05_linear_gelu", "{\"tf32\": true}", "CUBLAS_TF32_TENSOR_OP_MATH", NULL,
		  "tf32=true asks cuBLAS for TF32" },
		{ "14_cumsum", "{\"scan\": 0}", "kb_v[kb_j] = ", NULL, "scan 0: cumsum keeps its segment in registers" },
		{ "07_conv2d_relu_bias", NULL, "cudnnFindConvolutionForwardAlgorithmEx(", NULL,
		  "the default convolution measures its algorithm once" },
		{ "08_conv2d_batchnorm_silu", "{\"bn_fold\": true}",
		  "add rsqrt mul mul -> scratch {128, 128, 3, 3}", NULL,
		  "bn_fold scales the convolution's weights per output channel, on every call" },
		{ "08_conv2d_batchnorm_silu", "{\"bn_fold\": true}", "add silu -> output {16, 128, 64, 64}", NULL,
		  "and the convolution's epilogue adds the folded bias before the SiLU" },
		{ "08_conv2d_batchnorm_silu", NULL, "mul add silu -> output {16, 128, 64, 64}", "-> scratch {128, 128, 3, 3}",
		  "without it (the CUDA default) the epilogue normalizes" },
		{ "07_conv2d_relu_bias", "{\"conv_algo\": 2}", "kb_conv_pick(perf, found, 2, (size_t)-1)", "cudnnFind",
		  "conv_algo ranks the heuristic's answers" },
		{ "14_cumsum", "{\"scan\": 0}", "kb_vec_t<float, 4> kb_w = *reinterpret_cast<const kb_vec_t<float, 4> *>(in0 + 0 + 4096 * x0 + kb_lo + 4 * kb_q);",
		  "one pass", "and loads it 16 bytes at a time" },
		{ "02_softmax_rows", NULL, "if (a21n) a21 = NAN;\n\t\ta21 = kb_team_nmax(a21);", "n = kb_team_or(",
		  "a row's max carries its NaN flag in the one team reduction" },
		{ "13_cross_entropy", NULL, "(int64_t)(kb_lane + kb_c * 256) * 4);\n\t\tint64_t t30 = in1[x0];", NULL,
		  "the logits' row is loaded before the target's gather chain" },
		{ "13_cross_entropy", NULL, "kb_k2<<<kb_grid(1, 1), 1024, 0, st>>>", NULL,
		  "the mean over the batch, one block, has 1024 threads" },
		{ "02_softmax_rows", "{\"row_split\": 4}", "__global__ void __cluster_dims__(4, 1, 1) __launch_bounds__(256)", NULL,
		  "row_split 4: a row over a cluster of 4 blocks of 256 threads" },
		{ "02_softmax_rows", "{\"row_split\": 4}", "kb_k0<<<kb_grid(4096, 1) * 4, 256, 0, st>>>", "1024, 0, st>>>",
		  "a cluster per row" },
		{ "02_softmax_rows", "{\"row_split\": 4}", "(int64_t)(kb_lane + kb_c * 1024) * 4);", NULL,
		  "the register layout spans the cluster's 1024 lanes" },
		{ "02_softmax_rows", "{\"row_split\": 4}", "#define KB_BLOCK_TEAM 3\n#undef KB_TEAM_PH\n#define KB_TEAM_PH , kb_ph\n", NULL,
		  "whose reductions go through the cluster team with its slot counter" },
		{ "02_softmax_rows", "{\"row_split\": 4}", "cooperative_groups::this_cluster().sync();\t/*", NULL,
		  "and the kernel waits for the cluster before it ends" },
		{ "10_logsumexp_rows", "{\"row_split\": 2}", "kb_k0<<<kb_grid(8192, 1) * 2, 256, 0, st>>>", NULL,
		  "row_split 2 on a row of 8192" },
		{ "13_cross_entropy", "{\"row_split\": 4, \"block\": 1024}", "kb_k0<<<kb_grid(16384, 1), 1024, 0, st>>>",
		  "__cluster_dims__", "a split whose layout has a tail is halved down to one block" },
		{ "03_layernorm", "{\"row_split\": 2, \"row_regs\": false}", "KB_BLOCK_TEAM 1", "__cluster_dims__",
		  "row_split needs rows in registers" },
		{ "02_softmax_rows", "{\"min_blocks\": 2, \"row_regs\": 1}", "__global__ void __launch_bounds__(1024, 2)\nkb_k0(", NULL,
		  "min_blocks 2: two blocks of 1024 an SM, registers capped to fit" },
		{ "02_softmax_rows", "{\"min_blocks\": 4, \"row_regs\": 1}", "__global__ void __launch_bounds__(1024, 2)\nkb_k0(", NULL,
		  "min_blocks 4 is capped at 2048 threads an SM" },
		{ "10_logsumexp_rows", "{\"min_blocks\": 4, \"row_regs\": 1}", "__global__ void __launch_bounds__(512, 4)\nkb_k0(", NULL,
		  "four blocks of 512" },
		{ "01_scale_gelu_bias", "{\"min_blocks\": 4}", "__launch_bounds__(256)\n", "__launch_bounds__(256, ",
		  "min_blocks is for team kernels only" },
		{ "13_cross_entropy", "{\"min_blocks\": 2}", "__launch_bounds__(1024)\nkb_k2(", NULL,
		  "and not for a whole-tensor reduction's one block" },
		{ "13_cross_entropy", "{\"min_blocks\": 2}", "__launch_bounds__(256, 2)\nkb_k0(", NULL,
		  "while its rows' kernel gets it" },
		{ "02_softmax_rows", "{\"rcp\": 1}", "float t31 = 1.0f / a27;\n", NULL,
		  "rcp: a softmax's sum is inverted once a row" },
		{ "02_softmax_rows", "{\"rcp\": 1}", "KB_LANES t32[kb_j] = t26[kb_j] * t31;", NULL,
		  "and each element multiplied by it" },
		{ "02_softmax_rows", NULL, "KB_LANES t29[kb_j] = t24[kb_j] / a25;", "1.0f / a",
		  "by default it is divided" },
		{ "02_softmax_rows", "{\"stream\": 1}", "kb_load_part_cs<float, 4>(kb_row0, kb_c * 4, in0 + 16384 * x0", NULL,
		  "stream loads a register row evict-first" },
		{ "02_softmax_rows", "{\"stream\": 1}", "kb_store_vec_cs(out0 + 16384 * x0 + x1, t29);", NULL,
		  "and stores the output evict-first" },
		{ "02_softmax_rows", "{\"stream\": 1}", "kb_row0[kb_c * KB_VEC + kb_j] = kb_ldcs(in0 + ", NULL,
		  "also one float at a time in the kernel for unaligned buffers" },
		{ "13_cross_entropy", "{\"stream\": 1}", "if (kb_lane == 0) s15[x0] = ", "kb_stcs(&s15",
		  "but not a scratch buffer the next kernel reads" },
		{ "14_cumsum", "{\"scan\": 1}", "cumsum along dim 1: one pass, a block per row, 4 16-byte chunks a thread", "kb_part[",
		  "scan 1: a row of 4096 as 4 chunks of 16 bytes a thread" },
		{ "14_cumsum", "{\"scan\": 1}", "kb_k0<<<kb_grid(16384, 1), 256, 0, st>>>(in0, out0);", NULL,
		  "a block of 256 per row" },
		{ "14_cumsum", "{\"scan\": 1, \"block\": 64}", "8 16-byte chunks a thread", NULL,
		  "a small block grows until a thread holds at most 8 chunks" },
		{ "14_cumsum", "{\"scan\": 1, \"stream\": 1}", "kb_store_vec_cs(kb_dst + 1024 * kb_c, kb_v[kb_c]);", NULL,
		  "and with stream it stores evict-first" },
		{ "13_cross_entropy", "{\"pdl\": 1}", "\tkb_launch_pdl(kb_k2, kb_grid(1, 1), 1024, 0, st, in1, s15, out0);",
		  "kb_k2<<<", "pdl: the kernel after the first launches with programmatic dependent launch" },
		{ "13_cross_entropy", "{\"pdl\": 1}", "kb_k0<<<kb_grid(16384, 1), 256, 0, st>>>(in0, in1, s15);", NULL,
		  "and the first as usual" },
		{ "13_cross_entropy", "{\"pdl\": 1}", "kb_k2(const int64_t *__restrict__ in1, const float *__restrict__ s15, "
		  "float *__restrict__ out0)\n{\n\tKB_PDL_TRIGGER();\n", "KB_PDL_ENTRY();\n\tconst int kb_lane = threadIdx.x, kb_team = 1024;",
		  "and lets the next one start first thing" },
		{ "13_cross_entropy", "{\"pdl\": 1}", "\t\t\tint64_t t83 = in1[r0];\n", NULL,
		  "the mean's kernel counts the valid targets (inputs only) first" },
		{ "13_cross_entropy", "{\"pdl\": 1}", "\t\ta82 = kb_team_sum(a82);\n\t\tKB_PDL_WAIT();\n\t\tfloat a86 = 0.0f;\n", NULL,
		  "then waits for the row kernel, before it reads the row losses" },
		{ "13_cross_entropy", "{\"pdl\": 1}", "\tKB_PDL_ENTRY();\n\tconst int kb_lane = threadIdx.x, kb_team = 256;", NULL,
		  "the row kernel, launched the usual way, has nothing to wait for" },
		{ "12_mlp_block", "{\"pdl\": 1}", "\tKB_PDL_TRIGGER();\n\tKB_PDL_WAIT();\n\tfor (int64_t kb_i = ", NULL,
		  "with no reduction over inputs alone, a kernel waits once, before its loop" },
		{ "13_cross_entropy", NULL, "if (kb_scratch_at(0, (void **)&s15, sizeof(float) * 16384, st, &s15_own))", NULL,
		  "the row losses' 64 KiB are kept per stream" },
		{ "13_cross_entropy", NULL, "\tif (s15 && s15_own)\n\t\tcudaFreeAsync(s15, st);", NULL,
		  "and freed only where the pool gave them for this call" },
		{ "13_cross_entropy", NULL, "kb_team = 1024;", "KB_PDL_ENTRY();\n", "a team is a constant; no pdl by default" },
		{ "13_cross_entropy", NULL, "#pragma unroll\n\t\tfor (int64_t r0 = kb_lane; r0 < 16384; r0 += kb_team)", NULL,
		  "a team loop of 16 steps a thread unrolls fully" },
		{ "02_softmax_rows", "{\"row_regs\": 0}", "#pragma unroll 4\n", NULL,
		  "a longer one by the schedule's factor" },
		{ "02_softmax_rows", "{\"row_split\": 4}", "kb_team = 1024;", NULL, "a cluster team's size is a constant too" },
		{ "10_logsumexp_rows", "{\"online\": 1}", "\t\tkb_team_lse(a28, a30);\n", "kb_team_nmax(a",
		  "online: the row's max and sum of exponentials in one team combine" },
		{ "10_logsumexp_rows", "{\"online\": 1}", "float a30 = 0.0f;\n\t\t{\n\t\t\tfloat t32 = kb_fabsf(a28);\n", NULL,
		  "each thread's sum against its own max, logsumexp's shift of it kept inside that pass" },
		{ "10_logsumexp_rows", "{\"online\": 1}", "\t\tif (!isfinite(a28))\n\t\t{\n\t\t\ta30 = 0.0f;\n", NULL,
		  "and a second pass against the row's shift where the row's max is not finite" },
		{ "10_logsumexp_rows", "{\"online\": 1}", "float t44 = t43 + t40;", NULL,
		  "the result adds the row's shift, not a thread's" },
		{ "13_cross_entropy", "{\"online\": 1}", "kb_team_lse(a37, a39);\n", "kb_team_nmax(a",
		  "online reached from the max (cross-entropy needs it for the target's logit)" },
		{ "13_cross_entropy", "{\"online\": 1}", "float t46 = t36 - a37;", NULL, "which then reads the row's max" },
		{ "13_cross_entropy", NULL, "kb_team_nmax(a", "kb_team_lse(a", "two team combines by default" },
		{ "03_layernorm", "{\"online\": 1}", "kb_team_sum(a", "kb_team_lse(a", "online leaves other rows alone" },
	};
	char path[4200], err[256], label[200];

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct schedule sc;
		json_t *j = NULL, *sj = NULL;
		char *src = NULL;
		int ok;
		snprintf(path, sizeof(path), "%s/bench/ir/%s.json", root, cases[i].ir);
		schedule_default(&sc, NULL, SCHED_CUDA);
		if (cases[i].sched) {
			sj = json_loads(cases[i].sched, 0, NULL);
			if (!sj || schedule_from_json(&sc, sj, err, sizeof(err)) < 0)
				printf("     schedule %s: %s\n", cases[i].sched, err);
			json_decref(sj);
		}
		ok = jsonx_load_file(path, 64u << 20, &j, err, sizeof(err)) == 0 &&
		    compile_json(j, SCHED_CUDA, &sc, &src, err, sizeof(err)) == 0;
		json_decref(j);
		snprintf(label, sizeof(label), "%s: %s", cases[i].ir, cases[i].label);
		if (!CHECK(label, ok && strstr(src, cases[i].want) &&
		    (!cases[i].unwanted || !strstr(src, cases[i].unwanted))))
			printf("     %s\n", ok ? "the source has not the expected shape" : err);
		free(src);
	}
}

/* The search moves freely: every schedule it can reach compiles for CUDA
 * (the compiler clamps what does not apply). Mutation chains from the
 * default over the development problems and the CUDA path fixtures. */
static void
test_cuda_schedules(void)
{
	static const char *const names[] = { "02_softmax_rows", "03_layernorm", "09_mean_tanh",
		"11_causal_attention", "13_cross_entropy", "14_cumsum", "15_linear_groupnorm_swish",
		"16_maxpool_relu_scale", "reduce_paths", "attention_tiles", "bn_fold", NULL };
	uint64_t rng = 7;
	int ok = 1;
	char err[256];

	for (int i = 0; names[i]; i++) {
		json_t *j = fixture(names[i]);
		struct schedule sc;
		schedule_default(&sc, NULL, SCHED_CUDA);
		for (int t = 0; t < 24 && j; t++) {
			char *src = NULL;
			schedule_mutate(&sc, &rng);
			if (compile_json(j, SCHED_CUDA, &sc, &src, err, sizeof(err)) < 0) {
				struct buf b = BUF_INIT(4096);
				schedule_describe(&sc, &b);
				printf("     %s under %s: %s\n", names[i], buf_cstr(&b), err);
				buf_free(&b);
				ok = 0;
			}
			free(src);
		}
		ok &= j != NULL;
		json_decref(j);
	}
	CHECK("every mutated schedule compiles for CUDA", ok);
}

/* An identifier PREFIX followed by digits (s15, out0, in1) in p[0..n). */
static int
names_buffer(const char *p, size_t n, const char *prefix)
{
	size_t k = strlen(prefix);

	for (size_t i = 0; i + k < n; i++) {
		size_t j = i + k;
		if (strncmp(p + i, prefix, k) || (i > 0 && (isalnum((unsigned char)p[i - 1]) || p[i - 1] == '_')) ||
		    !isdigit((unsigned char)p[j]))
			continue;
		while (j < n && isdigit((unsigned char)p[j]))
			j++;
		if (j >= n || !(isalnum((unsigned char)p[j]) || p[j] == '_'))
			return 1;
	}
	return 0;
}

/* With pdl, a kernel after the first may run while the one before it
 * does: up to KB_PDL_WAIT it may read graph inputs only. Every fixture,
 * every such kernel. */
static void
test_cuda_pdl_wait(void)
{
	char dir[4200], err[256];
	int kernels = 0, early = 0, bad = 0, files = 0;
	DIR *dp;
	struct dirent *de;

	snprintf(dir, sizeof(dir), "%s/tests/fixtures/ir", root);
	if (!(dp = opendir(dir))) {
		CHECK("the IR fixtures are there", 0);
		return;
	}
	while ((de = readdir(dp))) {
		size_t len = strlen(de->d_name);
		char name[256], *src = NULL;
		struct schedule sc;
		json_t *j;
		if (len < 6 || len >= sizeof(name) || strcmp(de->d_name + len - 5, ".json"))
			continue;
		snprintf(name, sizeof(name), "%.*s", (int)(len - 5), de->d_name);
		if (!(j = fixture(name)))
			continue;
		schedule_default(&sc, NULL, SCHED_CUDA);
		sc.pdl = 1;
		if (compile_json(j, SCHED_CUDA, &sc, &src, err, sizeof(err)) == 0) {
			files++;
			for (const char *t = src; (t = strstr(t, "\tKB_PDL_TRIGGER();\n")); t++) {
				const char *end = strstr(t, "\n}\n"), *w = strstr(t, "KB_PDL_WAIT();");
				kernels++;
				size_t n = w ? (size_t)(w - t) : 0;
				if (!end || !w || w > end || names_buffer(t, n, "s") || names_buffer(t, n, "out")) {
					printf("     %s: a kernel reads another's buffer before KB_PDL_WAIT\n", name);
					bad++;
				} else {
					early += names_buffer(t, n, "in");
				}
			}
		}
		free(src);
		json_decref(j);
	}
	closedir(dp);
	CHECK("pdl: the fixtures compile", files > 60);
	CHECK("pdl: no kernel reads another kernel's buffer before it waits", kernels > 20 && bad == 0);
	CHECK("pdl: kernels load inputs before they wait", early > 20);
}

int
main(void)
{
	static const char *const problems[] = {
		"01_scale_gelu_bias", "02_softmax_rows", "03_layernorm", "04_rmsnorm_residual",
		"05_linear_gelu", "06_linear_relu_scale_residual", "07_conv2d_relu_bias",
		"08_conv2d_batchnorm_silu", "09_mean_tanh", "10_logsumexp_rows",
		"11_causal_attention", "12_mlp_block", "13_cross_entropy", "14_cumsum",
		"15_linear_groupnorm_swish", "16_maxpool_relu_scale", "reduce_paths",
		"attention_tiles", "conv_chain", "shape_variants", "bn_fold", "deep_windows",
		"groupnorm_pool", NULL,
	};
	static const char *const folds[] = { "08_conv2d_batchnorm_silu", "bn_fold", NULL };
	const char *argv[2 * MAX_PAIRS + 4], *envp[] = { "PATH=/usr/bin:/bin", "OMP_NUM_THREADS=2",
		"HOME=/tmp", NULL };
	char dir[] = "/tmp/kbcompXXXXXX", names[MAX_PAIRS][64], kpath[MAX_PAIRS][4200],
	    ppath[MAX_PAIRS][4200], driver[4200];
	char opsdir[4200];
	DIR *dp;
	struct spawn_opts o = SPAWN_OPTS_INIT;
	struct spawn_result r;
	int n = 0, argc = 0;

	root = getenv("KB_ROOT") ? getenv("KB_ROOT") : ".";
	test_ir_refusals();
	test_unsupported();
	test_group_cut();
	test_schedule();
	test_schedule_from_source();
	test_cpu_codegen();

	test_cuda_paths();
	test_cuda_thread_rows();
	test_cuda_no_flags();
	test_cuda_schedules();
	test_cuda_pdl_wait();

	snprintf(opsdir, sizeof(opsdir), "%s/tests/fixtures/ops", root);
	if (!mkdtemp(dir)) {
		CHECK("temporary directory", 0);
		return t_done("compiler");
	}
	for (int i = 0; problems[i]; i++) {
		/* each problem under the default schedule and with every cut */
		for (int cut = 0; cut < 2; cut++)
			n += add_pair(dir, "problems", problems[i], cut ? PAIR_CUTS : PAIR_DEFAULT, names[n],
			    kpath[n], ppath[n]);
	}
	/* and the problems with an eval batch_norm without its fold */
	for (int i = 0; folds[i]; i++)
		n += add_pair(dir, "problems", folds[i], PAIR_NOFOLD, names[n], kpath[n], ppath[n]);
	/* one problem per canonical op (the harness's op fixtures) */
	if ((dp = opendir(opsdir))) {
		struct dirent *de;
		while ((de = readdir(dp)) && n < MAX_PAIRS) {
			char name[64];
			size_t len = strlen(de->d_name);
			if (len < 4 || len >= sizeof(name) || strcmp(de->d_name + len - 3, ".py"))
				continue;
			snprintf(name, sizeof(name), "%.*s", (int)(len - 3), de->d_name);
			n += add_pair(dir, "ops", name, PAIR_DEFAULT, names[n], kpath[n], ppath[n]);
		}
		closedir(dp);
	}
	CHECK("the op fixtures are there", n > 60);
	test_cuda_compiles(dir);
	snprintf(driver, sizeof(driver), "%s/tests/compiler/run_kernel.py", root);
	argv[argc++] = "/usr/bin/python3";
	argv[argc++] = driver;
	for (int i = 0; i < n; i++) {
		argv[argc++] = ppath[i];
		argv[argc++] = kpath[i];
	}
	argv[argc] = NULL;
	o.argv = argv;
	o.envp = envp;
	o.timeout_ms = 900 * 1000;
	memset(&r, 0, sizeof(r));
	CHECK("the driver runs", spawn_run(&o, &r) == 0);
	if (r.out.data) {
		const char *line = buf_cstr(&r.out);
		for (int i = 0; i < n; i++) {
			const char *nl = strchr(line, '\n');
			char label[256];
			snprintf(label, sizeof(label), "%.64s matches PyTorch on the CPU", names[i]);
			if (!CHECK(label, !strncmp(line, "ok", 2)))
				printf("     %.*s\n", nl ? (int)(nl - line) : (int)strlen(line), line);
			line = nl ? nl + 1 : line + strlen(line);
		}
	}
	if (r.status)
		printf("     driver stderr: %.2000s\n", buf_cstr(&r.err));
	spawn_result_free(&r);
	for (int i = 0; i < n; i++)
		unlink(kpath[i]);
	rmdir(dir);
	return t_done("compiler");
}
