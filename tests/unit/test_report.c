/*
 * test_report: report_pr_build() on optimize directories written here,
 * shaped as `kernelbot optimize --out` writes them: which files a PR gets
 * and under which names, the manifest, the body's table and sections, the
 * no-PR outcome, and clear errors for malformed directories.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli/cli.h"
#include "common/jsonx.h"
#include "pipeline/report/report.h"
#include "pipeline/report/report_internal.h"
#include "t.h"

static char root[] = "/tmp/kbreportXXXXXX";

static void
put(const char *dir, const char *name, const char *text)
{
	char path[512];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s/%s", root, dir, name);
	for (char *s = path + strlen(root) + 1; (s = strchr(s, '/')); s++) {
		*s = '\0';
		mkdir(path, 0755);
		*s = '/';
	}
	if (!(f = fopen(path, "w")) || fputs(text, f) < 0 || fclose(f) != 0) {
		perror(path);
		exit(2);
	}
}

/* The text of dir/name as put() wrote it (static; one at a time). */
static const char *
file_text(const char *d, const char *name)
{
	static char text[8192];
	char path[512];
	size_t n = 0;
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s/%s", root, d, name);
	if ((f = fopen(path, "r"))) {
		n = fread(text, 1, sizeof(text) - 1, f);
		fclose(f);
	}
	text[n] = '\0';
	return text;
}

static const char *
dir(const char *name)
{
	static char paths[8][512];
	static int n;
	char *p = paths[n++ % 8];

	snprintf(p, 512, "%s/%s", root, name);
	return p;
}

static const char RESULT[] =
    "{\"candidate\": \"best/kernel.cu\", \"status\": \"correct\", \"correct\": true,"
    " \"backend\": \"cuda\", \"device\": \"NVIDIA H200\","
    " \"timings_ms\": {\"candidate\": {\"median\": 0.5}, \"eager\": {\"median\": 1.25},"
    "  \"compile\": {\"median\": 0.75}},"
    " \"speedup\": {\"eager\": 2.5, \"eager_ci95\": [2.25, 2.75], \"compile\": 1.5, \"compile_ci95\": [1.25, 1.75]},"
    " \"checks\": [{\"name\": \"trials\", \"passed\": true, \"detail\": \"5 trials | 2 variants\"},"
    "  {\"name\": \"static:side_stream\", \"passed\": false, \"detail\": \"cudaStreamCreate at line 3\"},"
    "  {\"name\": \"sanitize:memcheck\", \"passed\": true, \"detail\": \"0 errors\"}],"
    " \"flags\": [\"side_stream\"], \"max_rel_error\": 1e-7, \"seed\": 42,"
    " \"environment\": {\"cpu_model\": \"AMD EPYC 9654\", \"logical_cpus\": 192, \"cpus_allowed\": 16,"
    "  \"threads\": {\"OMP_NUM_THREADS\": \"1\", \"OMP_PROC_BIND\": null, \"OMP_PLACES\": \"{0,1}\","
    "   \"MKL_NUM_THREADS\": null}, \"torch_threads\": 1,"
    "  \"gpu\": {\"name\": \"NVIDIA H200\", \"driver\": \"580.1\", \"arch\": \"sm_90\"},"
    "  \"compiler\": \"/usr/local/cuda/bin/nvcc\", \"compiler_version\": \"Cuda compilation tools, release 12.8\","
    "  \"compile_flags\": \"-O3 -arch=sm_90 --shared\", \"python\": \"3.11.2\", \"torch\": \"2.5.1\","
    "  \"seed\": 42, \"seed_str\": \"42\", \"seed_given\": false,"
    "  \"eval_args\": [\"--backend\", \"cuda\", \"--seed\", \"42\", \"--trials\", \"8\", \"--sanitize\"]}}";

/* The same verdict as written before the evaluator recorded its environment. */
static const char RESULT_OLD[] =
    "{\"candidate\": \"best/kernel.cu\", \"status\": \"correct\", \"correct\": true,"
    " \"backend\": \"cuda\", \"device\": \"NVIDIA H200\","
    " \"timings_ms\": {\"candidate\": {\"median\": 0.5}, \"eager\": {\"median\": 1.25}},"
    " \"speedup\": {\"eager\": 2.5, \"eager_ci95\": [2.25, 2.75]},"
    " \"checks\": [], \"flags\": [], \"max_rel_error\": 1e-7, \"seed\": 4611686018427387904}";

static void
improved_dir(const char *name, const char *arch, double speedup)
{
	char summary[1024], history[2048], cc[8];

	snprintf(cc, sizeof(cc), "%c.%c", arch[3], arch[4]);
	snprintf(summary, sizeof(summary),
	    "{\"problem\": \"models/mlp.py\", \"status\": \"improved\", \"backend\": \"cuda\","
	    " \"best\": {\"path\": \"best/kernel.cu\", \"speedup\": {\"eager\": %g, \"compile\": 1.5}},"
	    " \"candidates_evaluated\": 24, \"generations\": 3, \"stop_reason\": \"budget:candidates\","
	    " \"spent\": {\"candidates\": 24, \"generations\": 3, \"wall_s\": 61.5, \"gpu_s\": 12,"
	    " \"tokens\": 0, \"dollars\": 0}}", speedup);
	snprintf(history, sizeof(history),
	    "{\"problem\": \"models/mlp.py\", \"backend\": \"cuda\","
	    " \"device\": {\"name\": \"NVIDIA H200\", \"compute_capability\": \"%s\", \"driver\": \"580.1\"},"
	    " \"toolchain\": {\"nvcc\": \"12.8\"},"
	    " \"budget\": {\"candidates\": 24}, \"generations\": ["
	    "  {\"generation\": 0, \"evaluated\": 8, \"correct\": 5, \"best_ms\": 0.9},"
	    "  {\"generation\": 1, \"evaluated\": 8, \"correct\": 6, \"best_ms\": 0.6},"
	    "  {\"generation\": 2, \"evaluated\": 8, \"correct\": 8, \"best_ms\": 0.5}],"
	    " \"candidates\": [{\"id\": 7, \"proposer\": \"graph-compiler\", \"source_sha\":"
	    "  \"a8b5d1c1e0d4c2a3a2c35c0b9a0fbb1b5a1f54fb0a0b4c4e0e1e87b3c6f2c0a9\"},"
	    "  {\"id\": 8, \"proposer\": \"llm\", \"model\": \"gpt-x\"}]}", cc);
	put(name, "summary.json", summary);
	put(name, "history.json", history);
	put(name, "best/kernel.cu", arch[3] == '9' ? "// sm_90 kernel\n" : "// sm_80 kernel\n");
	put(name, "best/result.json", RESULT);
	put(name, "ir.json", "{\"inputs\": [{\"name\": \"x\", \"role\": \"input\", \"shape\": [8, 64],"
	    " \"dtype\": \"float32\"}, {\"name\": \"fc.weight\", \"role\": \"parameter\", \"shape\": [64, 64],"
	    " \"dtype\": \"float32\"}], \"variants\": [[{\"name\": \"x\", \"shape\": [4, 64], \"dtype\": \"float32\"}]]}");
}

static const struct gitops_file *
file(const struct report_pr *p, const char *path)
{
	for (size_t i = 0; i < p->n_files; i++)
		if (!strcmp(p->files[i].path, path))
			return &p->files[i];
	return NULL;
}

static const char *cls;	/* the module's class for build(); NULL = Model */

static int
build(const char *const *dirs, size_t n, struct report_pr *p, char *err, size_t errlen)
{
	struct report_module m = {
		.repo = "acme/models", .commit = "0123456789abcdef0123456789abcdef01234567",
		.module_path = "models/mlp.py", .slug = "models-mlp", .optimize_dirs = dirs, .n_dirs = n,
		.module_class = cls,
	};

	return report_pr_build(&m, p, err, errlen);
}

/* report_sh_word(s) as a string ("<EINVAL>" when refused) */
static const char *
word(const char *s)
{
	static char out[256];
	struct buf b = BUF_INIT(4096);
	int error = report_sh_word(&b, s);

	snprintf(out, sizeof(out), "%s", error == 0 ? buf_cstr(&b) : error == -EINVAL ? "<EINVAL>" : "<error>");
	buf_free(&b);
	return out;
}

/*
 * The reproduce command: the thread settings as assignments (quoted where
 * the shell needs it), the recorded flags and seed, in the body and the
 * manifest alike; the environment line of the hardware section; a result
 * from before the environment was recorded still gets its seed.
 */
static void
reproduce(void)
{
	struct report_pr p;
	char err[512];
	const struct gitops_file *f;
	json_t *man = NULL, *k;
	const char *want = "OMP_NUM_THREADS=1 OMP_PLACES='{0,1}' kernelbot eval models/mlp.py "
	    "kernels/models-mlp/kernel.cu --backend cuda --seed 42 --trials 8 --sanitize";

	CHECK_STR("sh word: plain", word("models/mlp.py"), "models/mlp.py");
	CHECK_STR("sh word: flag value with = and ,", word("--baselines=eager,compile"), "--baselines=eager,compile");
	CHECK_STR("sh word: braces quoted", word("{0,1}"), "'{0,1}'");
	CHECK_STR("sh word: a quote inside", word("it's $HOME"), "'it'\\''s $HOME'");
	CHECK_STR("sh word: empty", word(""), "''");
	CHECK_STR("sh word: a newline is refused", word("a\nb"), "<EINVAL>");

	improved_dir("env", "sm_90", 2.5);
	const char *env[] = { dir("env") };
	CHECK_INT("a result with its environment builds", build(env, 1, &p, err, sizeof(err)), 0);
	CHECK("body: the reproduce command, assignments and recorded flags",
	    p.body && strstr(p.body, want) && strstr(p.body, want)[strlen(want)] == '\n');
	CHECK("body: the environment line", strstr(p.body, "- cuda measured with OMP_NUM_THREADS=1, "
	    "OMP_PROC_BIND unset, OMP_PLACES={0,1}, MKL_NUM_THREADS unset, torch threads 1, CPU AMD EPYC 9654, "
	    "logical CPUs 192, allowed 16, GPU NVIDIA H200, driver 580.1, compiler Cuda compilation tools, "
	    "release 12.8, flags -O3 -arch=sm_90 --shared, Python 3.11.2, PyTorch 2.5.1, seed 42\n"));
	f = file(&p, "kernels/models-mlp/manifest.json");
	CHECK_INT("manifest is JSON", f ? jsonx_parse(f->data, f->len, &man, err, sizeof(err)) : -1, 0);
	k = json_array_get(json_object_get(man, "kernels"), 0);
	CHECK_STR("manifest: the reproduce command", jsonx_str(k, "reproduce", NULL), want);
	CHECK_STR("manifest: environment threads", jsonx_str(k, "environment.threads.OMP_NUM_THREADS", NULL), "1");
	CHECK("manifest: an unset variable is null",
	    json_is_null(jsonx_path(k, "environment.threads.OMP_PROC_BIND")));
	CHECK_INT("manifest: torch threads", (int)jsonx_int(k, "environment.torch_threads", -1), 1);
	CHECK_STR("manifest: compiler", jsonx_str(k, "environment.compiler_version", NULL),
	    "Cuda compilation tools, release 12.8");
	CHECK_INT("manifest: the seed", (int)jsonx_int(k, "seed", 0), 42);
	json_decref(man);
	report_pr_free(&p);

	/* a class other than Model is named when the flags do not */
	cls = "MLP";
	CHECK_INT("with a class", build(env, 1, &p, err, sizeof(err)), 0);
	CHECK("body: --class after the recorded flags", p.body && strstr(p.body, "--sanitize --class MLP\n"));
	report_pr_free(&p);
	cls = NULL;

	/* before the environment was recorded: backend, the seed, sanitize */
	improved_dir("old", "sm_90", 2.5);
	put("old", "best/result.json", RESULT_OLD);
	const char *old[] = { dir("old") };
	CHECK_INT("an older result builds", build(old, 1, &p, err, sizeof(err)), 0);
	CHECK("body: its seed in the command", p.body && strstr(p.body, "\nkernelbot eval models/mlp.py "
	    "kernels/models-mlp/kernel.cu --backend cuda --seed 4611686018427387904 --sanitize\n"));
	CHECK("body: no environment line", !strstr(p.body, "measured with"));
	report_pr_free(&p);

	/* a recorded value that cannot go on a shell line: said, not printed */
	{
		char *r = strdup(RESULT), *at = strstr(r, "\"{0,1}\""), bad[sizeof(RESULT) + 16];

		*at = '\0';
		snprintf(bad, sizeof(bad), "%s\"{0,\\n1}\"%s", r, at + strlen("\"{0,1}\""));
		put("badenv", "best/result.json", bad);
		free(r);
	}
	improved_dir("badenv2", "sm_90", 2.5);
	put("badenv2", "best/result.json", file_text("badenv", "best/result.json"));
	const char *badenv[] = { dir("badenv2") };
	CHECK_INT("a newline in a recorded value builds", build(badenv, 1, &p, err, sizeof(err)), 0);
	CHECK("body: the command is replaced by a note", p.body &&
	    strstr(p.body, "# kernels/models-mlp/kernel.cu: its recorded settings cannot be written") &&
	    !strstr(p.body, "OMP_NUM_THREADS=1 OMP_PLACES"));
	report_pr_free(&p);
}

int
main(void)
{
	struct report_pr p;
	char err[512];
	const struct gitops_file *f;
	json_t *man = NULL;

	cli_where_load();	/* the settings tests/run.sh gives in the environment */
	if (!mkdtemp(root))
		return 2;

	/* one CUDA result */
	improved_dir("one", "sm_90", 2.5);
	const char *one[] = { dir("one") };
	CHECK_INT("one improved result builds", build(one, 1, &p, err, sizeof(err)), 0);
	CHECK_INT("improved", p.improved, 1);
	CHECK("kernel.cu", (f = file(&p, "kernels/models-mlp/kernel.cu")) && f->len == 16 &&
	    !memcmp(f->data, "// sm_90 kernel\n", 16));
	CHECK("the drop-in module", (f = file(&p, "kernels/models-mlp/__init__.py")) &&
	    strstr(f->data, "def load(module)"));
	CHECK("its test", (f = file(&p, "kernels/models-mlp/test_kernel.py")) &&
	    strstr(f->data, "def test_kernel_matches_module"));
	CHECK("REPORT.md has the generations", (f = file(&p, "kernels/models-mlp/REPORT.md")) &&
	    strstr(f->data, "### Generations") && strstr(f->data, "| 2 | 8 | 8 | 0.5 |"));
	CHECK_INT("five files", p.n_files, 5);
	f = file(&p, "kernels/models-mlp/manifest.json");
	CHECK_INT("manifest is JSON", f ? jsonx_parse(f->data, f->len, &man, err, sizeof(err)) : -1, 0);
	CHECK_STR("manifest: commit", jsonx_str(man, "commit", NULL), "0123456789abcdef0123456789abcdef01234567");
	CHECK_STR("manifest: module class", jsonx_str(man, "module.class", NULL), "Model");
	CHECK_STR("manifest: kernel file", jsonx_str(json_array_get(json_object_get(man, "kernels"), 0),
	    "file", NULL), "kernel.cu");
	CHECK_STR("manifest: arch", jsonx_str(json_array_get(json_object_get(man, "kernels"), 0),
	    "arch", NULL), "sm_90");
	CHECK_STR("manifest: driver", jsonx_str(json_array_get(json_object_get(man, "kernels"), 0),
	    "device_info.driver", NULL), "580.1");
	CHECK_INT("manifest: the verified input shapes, timed and variant",
	    json_array_size(json_object_get(man, "input_shapes")), 2);
	CHECK_INT("manifest: abi inputs", json_array_size(json_object_get(man, "abi_inputs")), 2);
	CHECK_INT("manifest: activations only in inputs", json_array_size(json_object_get(man, "inputs")), 1);
	json_decref(man);
	man = NULL;
	CHECK("title says the speedup", p.title && strstr(p.title, "2.50x") && strstr(p.title, "models/mlp.py"));
	CHECK("body: the table header", p.body && strstr(p.body,
	    "| backend, device | input shape | eager ms | torch.compile ms | kernel ms |"));
	CHECK("body: a table row with intervals", strstr(p.body, "| cuda, NVIDIA H200 (sm_90) | x: 8x64 float32 | 1.25 | 0.75 | 0.5 "
	    "| **2.50x** [2.25, 2.75] | **1.50x** [1.25, 1.75] |"));
	CHECK("body: the mermaid chart", strstr(p.body, "```mermaid\nxychart-beta") &&
	    strstr(p.body, "line [0.9, 0.6, 0.5]"));
	CHECK("body: a pipe in a check detail is escaped", strstr(p.body, "5 trials \\| 2 variants"));
	CHECK("body: static finding", strstr(p.body, "static:side_stream (cudaStreamCreate at line 3)"));
	CHECK("body: sanitizer", strstr(p.body, "Sanitizer: see the `sanitize:*` checks"));
	CHECK("body: toolchain", strstr(p.body, "nvcc 12.8"));
	CHECK("body: the search line", strstr(p.body, "**cuda, NVIDIA H200**: 24 candidates in 3 generations, "
	    "stopped by `budget:candidates`; spent candidates 24, generations 3, wall_s 61.5, gpu_s 12."));
	CHECK("body: reproduce", strstr(p.body, "kernelbot eval models/mlp.py kernels/models-mlp/kernel.cu --backend cuda"));
	CHECK("body: import for a slug with dashes", strstr(p.body, "importlib.import_module(\"kernels.models-mlp\")"));
	CHECK("body: checklist", strstr(p.body, "### Reviewer checklist\n\n- [ ]"));
	CHECK("comment has the table", p.comment && strstr(p.comment, "| **2.50x** [2.25, 2.75] |"));
	CHECK("status line", p.status_description &&
	    !strcmp(p.status_description, "2.50x vs eager [2.25, 2.75], 1.50x vs torch.compile on NVIDIA H200"));
	CHECK("commit message names the module", p.message && strstr(p.message, "kernels/models-mlp: verified kernel"));
	report_pr_free(&p);
	CHECK("free zeroes", p.files == NULL && p.title == NULL);

	/* two architectures, one per source; a third for sm_90 that is slower does not ship */
	improved_dir("a90", "sm_90", 2.5);
	improved_dir("a80", "sm_80", 1.8);
	improved_dir("a90slow", "sm_90", 1.2);
	const char *archs[] = { dir("a90slow"), dir("a80"), dir("a90") };
	CHECK_INT("three results build", build(archs, 3, &p, err, sizeof(err)), 0);
	CHECK("sm_90.cu is the faster sm_90 result", (f = file(&p, "kernels/models-mlp/sm_90.cu")) && f->len == 16 &&
	    !memcmp(f->data, "// sm_90", 8));
	CHECK("sm_80.cu", (f = file(&p, "kernels/models-mlp/sm_80.cu")) && !memcmp(f->data, "// sm_80", 8));
	CHECK("no kernel.cu", !file(&p, "kernels/models-mlp/kernel.cu"));
	CHECK_INT("two sources, four other files", p.n_files, 6);
	CHECK("the title takes the best", strstr(p.title, "2.50x"));
	CHECK_INT("a verified speedup needs no review", p.needs_review, 0);
	report_pr_free(&p);

	/* an implausible time is flagged, never headlined (docs/design.md) */
	improved_dir("flagged", "sm_90", 2.5);
	{
		char *r = strdup(RESULT), *at = strstr(r, "[\"side_stream\"]");
		char fixed[sizeof(RESULT) + 64];

		*at = '\0';
		snprintf(fixed, sizeof(fixed), "%s[\"below_bandwidth_floor\"]%s", r, at + strlen("[\"side_stream\"]"));
		put("flagged", "best/result.json", fixed);
		free(r);
	}
	const char *flagged[] = { dir("flagged") };
	CHECK_INT("a flagged result builds", build(flagged, 1, &p, err, sizeof(err)), 0);
	CHECK_INT("it still ships", p.improved, 1);
	CHECK("the title does not headline the speedup", p.title && !strstr(p.title, "2.50x") &&
	    strstr(p.title, "flagged for review (below_bandwidth_floor)"));
	CHECK_STR("nor does the status", p.status_description,
	    "verified kernel on NVIDIA H200, flagged for review: below_bandwidth_floor");
	CHECK("the body warns above the table", p.body && strstr(p.body, "> **Flagged for review (cuda, NVIDIA H200): "
	    "`below_bandwidth_floor`.**"));
	CHECK_INT("it asks for review", p.needs_review, 1);
	CHECK("the commit message claims no speedup", p.message && strstr(p.message, "needs review") &&
	    !strstr(p.message, "faster than PyTorch eager"));
	report_pr_free(&p);

	/* a search whose only correct kernels are flagged: needs_review ships
	 * as a PR for review, without a headline (docs/pull-requests.md) */
	improved_dir("review", "sm_90", 2.5);
	put("review", "summary.json", "{\"problem\": \"models/mlp.py\", \"status\": \"needs_review\","
	    " \"backend\": \"cuda\", \"best\": {\"path\": \"best/kernel.cu\", \"speedup\": {\"eager\": 2.5,"
	    " \"compile\": 1.5}, \"flags\": [\"below_bandwidth_floor\"]}, \"candidates_evaluated\": 24,"
	    " \"generations\": 3, \"stop_reason\": \"budget:candidates\", \"spent\": {}}");
	{
		char *r = strdup(RESULT), *at = strstr(r, "[\"side_stream\"]");
		char fixed[sizeof(RESULT) + 64];

		*at = '\0';
		snprintf(fixed, sizeof(fixed), "%s[\"below_bandwidth_floor\"]%s", r, at + strlen("[\"side_stream\"]"));
		put("review", "best/result.json", fixed);
		free(r);
	}
	const char *review[] = { dir("review") };
	CHECK_INT("a needs_review result builds", build(review, 1, &p, err, sizeof(err)), 0);
	CHECK_INT("it ships, for review", p.improved, 1);
	CHECK_INT("marked needs_review", p.needs_review, 1);
	CHECK("no headline speedup, the flag named", p.title && !strstr(p.title, "2.50x") &&
	    strstr(p.title, "flagged for review (below_bandwidth_floor)"));
	report_pr_free(&p);
	/* flagged only by the search's status (side_stream is a note elsewhere) */
	put("review", "best/result.json", RESULT);
	CHECK_INT("needs_review with side_stream builds", build(review, 1, &p, err, sizeof(err)), 0);
	CHECK("side_stream named when the search asked for review", p.needs_review && p.title &&
	    strstr(p.title, "flagged for review (side_stream)"));
	report_pr_free(&p);

	/* nothing faster: no PR, a status */
	put("slow", "summary.json", "{\"problem\": \"models/mlp.py\", \"status\": \"not_faster\", \"backend\": \"cpu\","
	    " \"best\": {\"path\": \"best/kernel.c\", \"speedup\": {\"eager\": 0.8, \"compile\": null}},"
	    " \"candidates_evaluated\": 12, \"generations\": 2, \"stop_reason\": \"converged\", \"spent\": {}}");
	const char *slow[] = { dir("slow") };
	CHECK_INT("not faster builds", build(slow, 1, &p, err, sizeof(err)), 0);
	CHECK_INT("not improved", p.improved, 0);
	CHECK_INT("no files", p.n_files, 0);
	CHECK_STR("status says so", p.status_description,
	    "no faster kernel: best 0.80x vs eager after 12 candidates (converged)");
	CHECK("body says no PR", p.body && strstr(p.body, "No pull request is opened"));
	report_pr_free(&p);

	/* errors */
	const char *none[] = { dir("missing") };
	CHECK_INT("missing summary.json", build(none, 1, &p, err, sizeof(err)), -ENOENT);
	CHECK("the error names the file", strstr(err, "missing/summary.json"));
	put("bad", "summary.json", "{\"status\": \"improved\", \"backend\": \"cuda\","
	    " \"best\": {\"path\": \"../../etc/passwd\"}}");
	const char *bad[] = { dir("bad") };
	CHECK_INT("a best.path outside the directory", build(bad, 1, &p, err, sizeof(err)), -EINVAL);
	CHECK("says which key", strstr(err, "best.path"));
	put("wrong", "summary.json", "{\"status\": \"improved\", \"backend\": \"cuda\","
	    " \"best\": {\"path\": \"best/kernel.cu\"}}");
	put("wrong", "best/kernel.cu", "x");
	put("wrong", "best/result.json", "{\"correct\": false, \"status\": \"mismatch\"}");
	const char *wrong[] = { dir("wrong") };
	CHECK_INT("an improved result whose confirmation failed", build(wrong, 1, &p, err, sizeof(err)), -EINVAL);
	CHECK("says the confirmation is not correct", strstr(err, "not correct (status mismatch)"));
	put("garbage", "summary.json", "{\"status\": ");
	const char *garbage[] = { dir("garbage") };
	CHECK_INT("malformed summary.json", build(garbage, 1, &p, err, sizeof(err)), -EINVAL);
	put("be", "summary.json", "{\"status\": \"error\", \"backend\": \"tpu\"}");
	const char *be[] = { dir("be") };
	CHECK_INT("unknown backend", build(be, 1, &p, err, sizeof(err)), -EINVAL);
	CHECK_INT("no directories", build(one, 0, &p, err, sizeof(err)), -EINVAL);
	struct report_module m = { .module_path = "m.py", .slug = "../x", .optimize_dirs = one, .n_dirs = 1 };
	CHECK_INT("a slug that is not one", report_pr_build(&m, &p, err, sizeof(err)), -EINVAL);
	CHECK("nothing left after an error", p.files == NULL && p.body == NULL);

	reproduce();

	char cmd[600];
	snprintf(cmd, sizeof(cmd), "rm -rf %s", root);
	(void)!system(cmd);
	return t_done("test_report");
}
