/*
 * gitops: mirror, read, walk, diff and checkout on repositories built with
 * git(1) in a temporary directory; slugs, globs, detection and
 * .kernelbot.yml validation.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/spawn.h"
#include "gitops/gitops.h"
#include "gitops/modules.h"
#include "gitops/repocfg.h"
#include "t.h"

static char tmp[256];
static char envhome[300];

static int
git(const char *dir, const char *a1, const char *a2, const char *a3,
    const char *a4)
{
	const char *argv[] = { "/usr/bin/git", "-C", dir, a1, a2, a3, a4, NULL };
	const char *envp[] = { envhome, "GIT_CONFIG_NOSYSTEM=1",
		"GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@t", "GIT_COMMITTER_NAME=t",
		"GIT_COMMITTER_EMAIL=t@t", "PATH=/usr/bin:/bin", NULL };
	struct spawn_opts o = SPAWN_OPTS_INIT;
	struct spawn_result r = { 0 };
	int st;

	o.argv = argv;
	o.envp = envp;
	o.timeout_ms = 30000;
	st = spawn_run(&o, &r) == 0 ? r.status : -1;
	if (st)
		fprintf(stderr, "git %s: %s\n", a1, buf_cstr(&r.err));
	spawn_result_free(&r);
	return st;
}

static void
put(const char *rel, const char *text)
{
	char p[512];
	FILE *f;

	snprintf(p, sizeof(p), "%s/w/%s", tmp, rel);
	f = fopen(p, "w");
	if (f) {
		fputs(text, f);
		fclose(f);
	}
}

static int
count_cb(const char *path, void *arg)
{
	(void)path;
	(*(int *)arg)++;
	return 0;
}

static int
stop_cb(const char *path, void *arg)
{
	(void)path;
	(void)arg;
	return -ECANCELED;
}

static void
test_repo(void)
{
	char w[300], bare[300], url[320], data[300], p[600], err[512];
	char c1[GITOPS_OID_HEX], c2[GITOPS_OID_HEX], blob[GITOPS_OID_HEX];
	struct gitops_repo *r = NULL, *m = NULL;
	struct gitops_diff d = { 0 };
	struct buf b = BUF_INIT(1 << 20), small = BUF_INIT(2);
	struct stat sb;
	int n = 0, rc;
	FILE *f;

	snprintf(w, sizeof(w), "%s/w", tmp);
	snprintf(bare, sizeof(bare), "%s/r.git", tmp);
	snprintf(url, sizeof(url), "file://%s", bare);
	snprintf(data, sizeof(data), "%s/data", tmp);
	CHECK_INT("git init", git(tmp, "init", "-q", "--bare", bare), 0);
	mkdir(w, 0700);
	CHECK_INT("git init w", git(w, "init", "-q", "-b", "main"), 0);
	put("a.py", "one\n");
	put("b.txt", "two\n");
	git(w, "add", "-A", NULL, NULL);
	git(w, "commit", "-q", "-m", "c1");
	git(w, "push", "-q", url, "main");

	/*
	 * A global config that would break every fetch if it were read: the
	 * mirror must never look at ~/.gitconfig.
	 */
	snprintf(p, sizeof(p), "%s/.gitconfig", tmp);
	if ((f = fopen(p, "w"))) {
		fprintf(f, "[url \"file:///nonexistent/\"]\n\tinsteadOf = file://\n");
		fclose(f);
	}
	setenv("HOME", tmp, 1);
	rc = gitops_mirror(data, "acme/models", url, NULL, &m, err, sizeof(err));
	CHECK_INT("mirror: first clone", rc, 0);
	if (rc)
		printf("     %s\n", err);
	snprintf(p, sizeof(p), "%s/mirrors/acme/models.git/HEAD", data);
	CHECK("mirror: bare repository under data_dir", stat(p, &sb) == 0);
	CHECK_INT("mirror: resolve main", m ? gitops_resolve(m, "main", c1, err,
	    sizeof(err)) : -1, 0);
	gitops_close(m);
	m = NULL;

	put("a.py", "one more\n");
	git(w, "commit", "-q", "-am", "c2");
	git(w, "push", "-q", url, "main");
	rc = gitops_mirror(data, "acme/models", url, NULL, &m, err, sizeof(err));
	CHECK_INT("mirror: later fetch", rc, 0);
	CHECK_INT("mirror: fetched the new commit", m ? gitops_resolve(m, "main",
	    c2, err, sizeof(err)) : -1, 0);
	CHECK("mirror: main moved", strcmp(c1, c2) != 0);
	CHECK_INT("mirror: bad name", gitops_mirror(data, "../x", url, NULL, &r,
	    err, sizeof(err)), -EINVAL);
	CHECK_INT("mirror: unreachable URL", gitops_mirror(data, "acme/gone",
	    "file:///nonexistent/repo.git", NULL, &r, err, sizeof(err)) < 0, 1);
	snprintf(p, sizeof(p), "%s/mirrors/acme/gone.git", data);
	CHECK("mirror: a failed clone leaves nothing", stat(p, &sb) < 0);

	if (m) {
		CHECK_INT("read_file", gitops_read_file(m, c2, "a.py", &b, blob,
		    err, sizeof(err)), 0);
		CHECK_STR("read_file: content", buf_cstr(&b), "one more\n");
		CHECK_INT("read_file: missing", gitops_read_file(m, c2, "nope", &b,
		    NULL, err, sizeof(err)), -ENOENT);
		CHECK_INT("read_file: over the cap", gitops_read_file(m, c2,
		    "b.txt", &small, NULL, err, sizeof(err)), -EFBIG);
		CHECK_INT("read_file: zero commit has nothing",
		    gitops_read_file(m, GITOPS_ZERO_OID, "a.py", &b, NULL, err,
		    sizeof(err)), -ENOENT);
		CHECK_INT("walk", gitops_walk_files(m, c2, count_cb, &n, err,
		    sizeof(err)), 0);
		CHECK_INT("walk: two files", n, 2);
		CHECK_INT("walk: callback stops it", gitops_walk_files(m, c2,
		    stop_cb, NULL, err, sizeof(err)), -ECANCELED);
		CHECK_INT("diff", gitops_diff_trees(m, c1, c2, &d, err,
		    sizeof(err)), 0);
		CHECK_INT("diff: one delta", d.n, 1);
		CHECK("diff: modified a.py", d.n == 1 &&
		    d.deltas[0].status == GITOPS_MODIFIED &&
		    !strcmp(d.deltas[0].new_path, "a.py"));
		gitops_diff_free(&d);
		CHECK_INT("diff from zero", gitops_diff_trees(m, GITOPS_ZERO_OID,
		    c2, &d, err, sizeof(err)), 0);
		CHECK_INT("diff from zero: all added", d.n, 2);
		gitops_diff_free(&d);
		CHECK_INT("diff: unknown commit", gitops_diff_trees(m, "0123456789"
		    "0123456789012345678901234567890", c2, &d, err, sizeof(err)),
		    -ENOENT);
		snprintf(p, sizeof(p), "%s/job", tmp);
		CHECK_INT("checkout", gitops_checkout(m, c1, p, err, sizeof(err)), 0);
		snprintf(p, sizeof(p), "%s/job/a.py", tmp);
		buf_reset(&b);
		if ((f = fopen(p, "r"))) {
			char line[64] = "";

			if (fgets(line, sizeof(line), f))
				buf_addstr(&b, line);
			fclose(f);
		}
		CHECK_STR("checkout: the old content", buf_cstr(&b), "one\n");
		snprintf(p, sizeof(p), "%s/job/.git", tmp);
		CHECK("checkout: no .git in the job dir", stat(p, &sb) < 0);
	}
	CHECK_INT("open: not a repository", gitops_open(tmp, &r, err,
	    sizeof(err)), -ENOENT);
	gitops_close(m);
	buf_free(&b);
	buf_free(&small);
}

/* Commit file=text in w, push it (forced when force), out = the commit. */
static void
commit_push(const char *w, const char *url, const char *file, const char *text,
    int force, char out[GITOPS_OID_HEX])
{
	struct gitops_repo *wr = NULL;
	char err[256];

	put(file, text);
	git(w, "add", "-A", NULL, NULL);
	git(w, "commit", "-q", "-m", file);
	git(w, "push", force ? "-qf" : "-q", url, "main");
	out[0] = '\0';
	if (gitops_open(w, &wr, err, sizeof(err)) == 0)
		gitops_resolve(wr, "HEAD", out, err, sizeof(err));
	gitops_close(wr);
}

/* gitops_sync_push from before to after into data; 1 when used/fb match. */
static int
sync_ok(const char *data, const char *url, const char *before,
    const char *after, const char *want_used, int want_fb)
{
	struct gitops_repo *m = NULL;
	char err[512], used[GITOPS_OID_HEX];
	int fb = -1, rc;

	rc = gitops_sync_push(data, "acme/p", url, NULL, "refs/heads/main", before,
	    after, &m, used, &fb, err, sizeof(err));
	gitops_close(m);
	if (!want_used)
		return rc < 0;
	if (rc < 0)
		printf("     %s\n", err);
	return rc == 0 && !strcmp(used, want_used) && fb == want_fb;
}

static void
test_sync_push(void)
{
	char w[300], url[320], data[300], err[512];
	char c1[GITOPS_OID_HEX], c2[GITOPS_OID_HEX], c3[GITOPS_OID_HEX];
	char c5[GITOPS_OID_HEX];
	const char *lost = "0123456789abcdef0123456789abcdef01234567";
	struct gitops_repo *wr = NULL;

	snprintf(w, sizeof(w), "%s/w", tmp);
	snprintf(url, sizeof(url), "file://%s/r.git", tmp);
	snprintf(data, sizeof(data), "%s/data2", tmp);
	if (gitops_open(w, &wr, err, sizeof(err)) < 0)
		return;
	gitops_resolve(wr, "HEAD", c1, err, sizeof(err));
	gitops_close(wr);
	CHECK("sync: new branch, zero before stays zero", sync_ok(data, url,
	    GITOPS_ZERO_OID, c1, GITOPS_ZERO_OID, 0));
	commit_push(w, url, "c.py", "c2\n", 0, c2);
	CHECK("sync: ordinary push", sync_ok(data, url, c1, c2, c1, 0));
	/* A force push: the old tip c2 is gone from the remote, not from the mirror. */
	git(w, "reset", "-q", "--hard", c1);
	commit_push(w, url, "d.py", "c3\n", 1, c3);
	CHECK("sync: force push, old tip known", sync_ok(data, url, c2, c3, c2, 0));
	/* An old tip nobody can serve: fall back to what the mirror last saw. */
	commit_push(w, url, "e.py", "c5\n", 0, c5);
	CHECK("sync: lost before falls back to the mirror's old tip",
	    sync_ok(data, url, lost, c5, c3, 1));
	snprintf(data, sizeof(data), "%s/data3", tmp);
	CHECK("sync: nothing known: the zero id, fallback 2", sync_ok(data, url,
	    lost, c5, GITOPS_ZERO_OID, 2));
	CHECK("sync: an after nobody has is an error", sync_ok(data, url, c5, lost,
	    NULL, 0));
}

static void
test_slug(void)
{
	char s[MODULES_MAX_SLUG + 1];
	char longp[400];

	CHECK_INT("slug", modules_slug("models/attn/block.py", "Model", s), 0);
	CHECK_STR("slug: path", s, "models-attn-block");
	modules_slug("Models/My_Attn.PY", "Model", s);
	CHECK_STR("slug: lowercase, runs become one dash", s, "models-my-attn-py");
	modules_slug("src/x.py", "FlashAttn", s);
	CHECK_STR("slug: non-default class appended", s, "src-x-flashattn");
	CHECK_INT("slug: nothing usable", modules_slug("__/.py", "Model", s),
	    -EINVAL);
	memset(longp, 'a', sizeof(longp) - 1);
	longp[sizeof(longp) - 1] = '\0';
	modules_slug(longp, "Model", s);
	CHECK_INT("slug: capped", strlen(s), MODULES_MAX_SLUG);
	CHECK("slug: hash suffix", s[MODULES_MAX_SLUG - 9] == '-');
}

static void
test_detect(void)
{
	const char *ok = "import torch\nclass Model(nn.Module):\n    pass\n"
	    "def get_inputs():\n    return []\ndef get_init_inputs():\n"
	    "    return []\n";
	const char *doc = "\"\"\"\nclass Model(nn.Module):\n\"\"\"\n"
	    "def get_inputs():\n    return []\ndef get_init_inputs():\n"
	    "    return []\n";
	const char *nested = "if True:\n    class Model(nn.Module):\n"
	    "        pass\ndef get_inputs(): pass\ndef get_init_inputs(): pass\n";

	CHECK("detect: KernelBench module", modules_detect(ok, strlen(ok),
	    "Model", "get_init_inputs", "get_inputs"));
	CHECK("detect: class in a docstring does not count",
	    !modules_detect(doc, strlen(doc), "Model", "get_init_inputs",
	    "get_inputs"));
	CHECK("detect: indented class does not count", !modules_detect(nested,
	    strlen(nested), "Model", "get_init_inputs", "get_inputs"));
	CHECK("detect: other class name", !modules_detect(ok, strlen(ok),
	    "Attention", NULL, NULL));
	CHECK("detect: ModelNew is not Model", !modules_detect("class ModelNew(x):\n",
	    19, "Model", NULL, NULL));
	CHECK("detect: literal inputs need no function", modules_detect(
	    "class Model:\n", 13, "Model", NULL, NULL));
}

static void
test_glob(void)
{
	CHECK("glob: **/ zero dirs", repocfg_glob_match("models/**/*.py",
	    "models/a.py"));
	CHECK("glob: **/ many dirs", repocfg_glob_match("models/**/*.py",
	    "models/x/y/a.py"));
	CHECK("glob: * stays in a segment", !repocfg_glob_match("models/*.py",
	    "models/x/a.py"));
	CHECK("glob: other dir", !repocfg_glob_match("models/**/*.py",
	    "tools/a.py"));
	CHECK("glob: trailing **", repocfg_glob_match("src/**", "src/a/b.txt"));
	CHECK("glob: class", repocfg_glob_match("m/[ab].py", "m/b.py"));
}

static void
cfg_err(const char *name, const char *yml, const char *want)
{
	struct repocfg *c = NULL;
	char err[512] = "";
	int rc = repocfg_parse(".kernelbot.yml", yml, strlen(yml), &c, err,
	    sizeof(err));

	if (!CHECK(name, rc == -EINVAL && strstr(err, want)))
		printf("     rc %d err \"%s\", want \"%s\"\n", rc, err, want);
	repocfg_free(c);
}

static void
test_repocfg(void)
{
	const char *good = "version: 1\nmodules:\n  - path: a.py\n"
	    "    dtype: bf16\n    init: [1, 2]\n  - glob: \"m/**\"\n"
	    "branch_prefix: bots/kb-\nbudget:\n  candidates: 8\n"
	    "  gpu_minutes: 1.5\n  llm_usd: 0\nlabels: [perf, bot]\n"
	    "reviewers: [alice]\n";
	struct repocfg *c = NULL;
	char err[512];
	const json_t *j;

	CHECK_INT("repocfg: a full file", repocfg_parse(".kernelbot.yml", good,
	    strlen(good), &c, err, sizeof(err)), 0);
	if (c) {
		j = repocfg_json(c);
		CHECK_STR("repocfg: prefix", repocfg_branch_prefix(c), "bots/kb-");
		CHECK_STR("repocfg: dtype normalized", json_string_value(
		    json_object_get(json_array_get(json_object_get(j, "modules"), 0),
		    "dtype")), "bfloat16");
		CHECK_STR("repocfg: class default", json_string_value(
		    json_object_get(json_array_get(json_object_get(j, "modules"), 1),
		    "class")), "Model");
		CHECK("repocfg: literal init kept", json_is_array(json_object_get(
		    json_array_get(json_object_get(j, "modules"), 0), "init")));
		CHECK_INT("repocfg: budget", json_integer_value(json_object_get(
		    json_object_get(j, "budget"), "candidates")), 8);
		CHECK_INT("repocfg: labels", json_array_size(json_object_get(j,
		    "labels")), 2);
		CHECK_STR("repocfg: python_path default", json_string_value(json_array_get(
		    json_object_get(j, "python_path"), 1)), "src");
	}
	repocfg_free(c);
	c = NULL;
	{
		const char *pp = "version: 1\npython_path: [., lib/py]\nmodules:\n  - path: a.py\n"
		    "    init: 'configs.gpt:make'\n    inputs: other:fn\n";

		CHECK_INT("repocfg: python_path and MODULE:FUNCTION", repocfg_parse(".kernelbot.yml", pp,
		    strlen(pp), &c, err, sizeof(err)), 0);
		if (c)
			CHECK_STR("repocfg: python_path kept", json_string_value(json_array_get(
			    json_object_get(repocfg_json(c), "python_path"), 1)), "lib/py");
		repocfg_free(c);
		c = NULL;
	}
	CHECK_INT("repocfg: defaults", repocfg_default(&c), 0);
	if (c)
		CHECK_STR("repocfg: default prefix", repocfg_branch_prefix(c),
		    "kernelbot/");
	repocfg_free(c);
	cfg_err("repocfg: version missing", "labels: [x]\n", ":1: version: missing");
	cfg_err("repocfg: version 2", "version: 2\n", ":1: version: only version 1");
	cfg_err("repocfg: unknown top key", "version: 1\nmodule: []\n",
	    ":2: module: unknown key");
	cfg_err("repocfg: path and glob", "version: 1\nmodules:\n  - path: a\n"
	    "    glob: b\n", ":3: modules[0]: needs exactly one");
	cfg_err("repocfg: absolute path", "version: 1\nmodules:\n  - path: /etc/x\n",
	    ":3: modules[0].path: must be a relative path");
	cfg_err("repocfg: dotdot", "version: 1\nmodules:\n  - path: a/../../x\n",
	    "modules[0].path");
	cfg_err("repocfg: bad class", "version: 1\nmodules:\n  - path: a.py\n"
	    "    class: 'os.system(1)'\n", ":4: modules[0].class:");
	cfg_err("repocfg: bad atol", "version: 1\nmodules:\n  - path: a.py\n"
	    "    atol: -1\n", ":4: modules[0].atol: must be a number >= 0");
	cfg_err("repocfg: bad budget", "version: 1\nbudget:\n  candidates: 0\n",
	    ":3: budget.candidates:");
	cfg_err("repocfg: unknown budget key", "version: 1\nbudget:\n  gpus: 1\n",
	    ":3: budget.gpus: unknown key");
	cfg_err("repocfg: bad prefix", "version: 1\nbranch_prefix: ../x\n",
	    ":2: branch_prefix:");
	cfg_err("repocfg: labels not a list", "version: 1\nlabels: perf\n",
	    ":2: labels: must be a list");
	cfg_err("repocfg: not a mapping", "- 1\n", "must be a mapping");
	cfg_err("repocfg: python_path absolute", "version: 1\npython_path: [/usr]\n",
	    ":2: python_path: entry 0 must be a folder relative to the repository");
	cfg_err("repocfg: python_path dotdot", "version: 1\npython_path: [., a/../..]\n",
	    ":2: python_path: entry 1 must be");
	cfg_err("repocfg: python_path not a list", "version: 1\npython_path: src\n",
	    ":2: python_path: must be a list of at most 8 folders");
	cfg_err("repocfg: init MODULE:FUNCTION with a bad module", "version: 1\nmodules:\n"
	    "  - path: a.py\n    init: 'a..b:f'\n", ":4: modules[0].init: must be a Python function name, "
	    "MODULE:FUNCTION or a literal list");
	cfg_err("repocfg: init MODULE: with no function", "version: 1\nmodules:\n"
	    "  - path: a.py\n    init: 'a.b:'\n", ":4: modules[0].init:");
	cfg_err("repocfg: YAML syntax", "version: [1\n", ".kernelbot.yml:");
}

/* Every prefix and a few corruptions of a full file: 0 or -EINVAL, no crash. */
static void
test_repocfg_robust(void)
{
	const char *full = "version: 1\nmodules:\n  - path: a.py\n    class: A\n"
	    "    init: [1, {x: 2}]\n    dtype: fp16\n  - glob: \"m/**\"\n"
	    "budget: {candidates: 3, gpu_minutes: 1.5}\nlabels: [a, b]\n"
	    "reviewers: [r]\nbranch_prefix: kb/\n";
	size_t n = strlen(full);
	char buf[512], err[256];
	int bad = 0;

	for (size_t cut = 0; cut <= n; cut++) {
		for (int flip = -1; flip < 4; flip++) {
			struct repocfg *c = NULL;
			int rc;

			memcpy(buf, full, cut);
			buf[cut] = '\0';
			if (flip >= 0 && cut > 0)
				buf[(cut * 7 + (size_t)flip * 13) % cut] = "[:-{"[flip];
			rc = repocfg_parse("f.yml", buf, strlen(buf), &c, err,
			    sizeof(err));
			if (rc != 0 && rc != -EINVAL)
				bad++;
			if (rc == -EINVAL && !strstr(err, "f.yml"))
				bad++;
			repocfg_free(c);
			(void)modules_detect(buf, strlen(buf), "A", "init", NULL);
		}
	}
	CHECK_INT("repocfg: prefixes and corruptions: 0 or a named error", bad, 0);
}

int
main(void)
{
	char t[] = "/tmp/kb-test-gitops-XXXXXX";

	if (!mkdtemp(t))
		return 1;
	snprintf(tmp, sizeof(tmp), "%s", t);
	/* git(1) gets its own HOME: the one in tmp holds a poisoned config. */
	snprintf(envhome, sizeof(envhome), "HOME=%s/w", tmp);
	test_repo();
	test_sync_push();
	test_slug();
	test_detect();
	test_glob();
	test_repocfg();
	test_repocfg_robust();
	{
		const char *argv[] = { "/bin/rm", "-rf", tmp, NULL };
		struct spawn_opts o = SPAWN_OPTS_INIT;
		struct spawn_result r = { 0 };

		o.argv = argv;
		spawn_run(&o, &r);
		spawn_result_free(&r);
	}
	return t_done("test_gitops");
}
