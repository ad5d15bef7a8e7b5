#include "gpu/harness.h"

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/buf.h"
#include "common/fsx.h"
#include "common/jsonx.h"
#include "common/log.h"
#include "common/spawn.h"
#include "common/where.h"
#include "gpu/sandbox.h"

#ifndef KB_DATADIR
#define KB_DATADIR "/usr/local/share/kernelbot"
#endif

#define PROBE_TIMEOUT_MS 20000
#define REPLY_MAX (256u << 20)	/* a graph IR or eval report, never more */

static pthread_once_t locate_once = PTHREAD_ONCE_INIT;
static char *found_python, *found_script;
static char locate_err[512];

/* Does this interpreter see torch? find_spec does not import it: cheap. */
static int
python_has_torch(const char *python)
{
	const char *argv[] = { python, "-c",
		"import importlib.util, sys; "
		"sys.exit(0 if importlib.util.find_spec('torch') else 1)", NULL };
	const char *envp[] = { "PATH=/usr/local/bin:/usr/bin:/bin", "LANG=C.UTF-8", NULL };
	struct spawn_opts o = SPAWN_OPTS_INIT;
	struct spawn_result r = { 0 };
	int ok;

	o.argv = argv;
	o.envp = envp;
	o.timeout_ms = PROBE_TIMEOUT_MS;
	ok = spawn_run(&o, &r) == 0 && r.status == 0;
	spawn_result_free(&r);
	return ok;
}

static char *
exe_dir(void)
{
	char path[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", path, sizeof(path) - 1);
	char *slash;

	if (n <= 0)
		return NULL;
	path[n] = '\0';
	if ((slash = strrchr(path, '/')))
		*slash = '\0';
	return strdup(path);
}

static void
locate(void)
{
	const char *env_py = where()->python;
	const char *env_script = where()->harness;
	const char *rel[] = { "/harness/harness.py", "/../../gpu/harness/harness.py",
		"/../gpu/harness/harness.py", NULL };
	char *dir, *cand;

	if (env_py && *env_py) {
		/* A bare name ("python3") is looked up on PATH, like a shell would. */
		if (strchr(env_py, '/') || spawn_which(env_py, NULL, &found_python) < 0)
			found_python = strdup(env_py);
	} else {
		if (spawn_which("python3", NULL, &cand) == 0) {
			if (python_has_torch(cand))
				found_python = cand;
			else
				free(cand);
		}
		if (!found_python && python_has_torch("/usr/bin/python3"))
			found_python = strdup("/usr/bin/python3");
	}
	if (!found_python) {
		snprintf(locate_err, sizeof(locate_err),
		    "no python3 with PyTorch found (tried python3 on PATH and "
		    "/usr/bin/python3); set KERNELBOT_PYTHON");
		return;
	}

	if (env_script && *env_script) {
		/* absolute: the sandbox shows its folder, and starts elsewhere */
		if (access(env_script, R_OK) == 0)
			found_script = realpath(env_script, NULL);
	} else if ((dir = exe_dir())) {
		for (int i = 0; rel[i] && !found_script; i++) {
			char p[PATH_MAX];
			snprintf(p, sizeof(p), "%s%s", dir, rel[i]);
			if (access(p, R_OK) == 0)
				found_script = realpath(p, NULL);
		}
		free(dir);
	}
	if (!found_script && !env_script &&
	    access(KB_DATADIR "/harness/harness.py", R_OK) == 0)
		found_script = strdup(KB_DATADIR "/harness/harness.py");
	if (!found_script)
		snprintf(locate_err, sizeof(locate_err),
		    "harness.py not found%s%s; set KERNELBOT_HARNESS",
		    env_script ? " at " : "", env_script ? env_script : "");
}

int
harness_locate(const char **python, const char **script, char *err,
    size_t errlen)
{
	pthread_once(&locate_once, locate);
	if (!found_python || !found_script) {
		if (err)
			snprintf(err, errlen, "%s", locate_err);
		return -ENOENT;
	}
	*python = found_python;
	*script = found_script;
	return 0;
}

/*
 * The child's whole environment: what Python and PyTorch need, nothing else.
 * The thread settings pass as they are (never defaulted): eager PyTorch's
 * team in the judge is then the one the workers get through the request's
 * worker_env (gpu/eval.c) and the one the result records (gpu/evalenv.h).
 * They are part of harness_identity(), so a judge server never serves a
 * caller whose settings differ from those it was started with.
 */
static int
build_env(const char *script, char **envp, size_t max)
{
	static const char *const pass[] = { "HOME", "CUDA_VISIBLE_DEVICES",
		"TMPDIR", "OMP_NUM_THREADS", "OMP_PROC_BIND", "OMP_PLACES", "MKL_NUM_THREADS", NULL };
	const char *slash = strrchr(script, '/');
	size_t n = 0;
	char tmp[PATH_MAX + 64];

	if (!slash)
		return -EINVAL;
	snprintf(tmp, sizeof(tmp), "PYTHONPATH=%.*s", (int)(slash - script), script);
	envp[n++] = strdup(tmp);
	envp[n++] = strdup("PATH=/usr/local/cuda/bin:/usr/local/bin:/usr/bin:/bin");
	envp[n++] = strdup("LANG=C.UTF-8");
	envp[n++] = strdup("PYTHONDONTWRITEBYTECODE=1");
	envp[n++] = strdup("PYTHONUNBUFFERED=1");
	for (int i = 0; pass[i] && n + 1 < max; i++) {
		const char *v = getenv(pass[i]);
		if (v) {
			snprintf(tmp, sizeof(tmp), "%s=%s", pass[i], v);
			envp[n++] = strdup(tmp);
		}
	}
	envp[n] = NULL;
	for (size_t i = 0; i < n; i++)
		if (!envp[i])
			return -ENOMEM;
	return 0;
}

static void
free_env(char **envp)
{
	for (int i = 0; envp[i]; i++)
		free(envp[i]);
}

/* The reply on r's stdout, or why there is none in err (-EPROTO). */
static int
parse_reply(const struct spawn_result *r, json_t **reply, char *err, size_t errlen)
{
	json_t *v = NULL;

	if (r->status != 0 || r->out_dropped ||
	    jsonx_parse(buf_cstr(&r->out), r->out.len, &v, NULL, 0) < 0 ||
	    !json_is_object(v)) {
		const char *e = buf_cstr(&r->err);
		size_t len = strlen(e);

		snprintf(err, errlen, "the harness failed (exit %d)%s%s", r->status,
		    len ? ": " : "", len > 1500 ? e + len - 1500 : e);
		json_decref(v);
		return -EPROTO;
	}
	*reply = v;
	return 0;
}

/*
 * The spawn of one harness call, sandboxed or not: `python -u script`
 * (argv, four slots, filled here), envp, the request on its stdin, the
 * reply on its stdout up to REPLY_MAX, the deadline.
 */
static void
child_opts(struct spawn_opts *o, const char **argv, const char *python,
    const char *script, char **envp, const struct buf *req, int timeout_ms)
{
	argv[0] = python;
	argv[1] = "-u";
	argv[2] = script;
	argv[3] = NULL;
	o->argv = argv;
	o->envp = (const char *const *)envp;
	o->input = req->data;
	o->input_len = req->len;
	o->timeout_ms = timeout_ms;
	o->out_max = REPLY_MAX;
	o->err_max = 64u << 10;
}

int
harness_call(const json_t *request, int timeout_ms, json_t **reply,
    char *err, size_t errlen)
{
	struct buf req = BUF_INIT(REPLY_MAX);
	struct spawn_opts o = SPAWN_OPTS_INIT;
	struct spawn_result r = { 0 };
	const char *python, *script;
	char *envp[16] = { 0 };
	const char *argv[4];
	int error;

	if ((error = harness_locate(&python, &script, err, errlen)) < 0)
		return error;
	if ((error = jsonx_dump(request, JSON_COMPACT, &req)) < 0 ||
	    (error = build_env(script, envp, 16)) < 0)
		goto out;
	child_opts(&o, argv, python, script, envp, &req, timeout_ms);
	if ((error = spawn_run(&o, &r)) < 0) {
		snprintf(err, errlen, "cannot run %s: %s", python, strerror(-error));
		goto out;
	}
	if (r.timed_out) {
		snprintf(err, errlen, "the harness did not answer within %d ms",
		    timeout_ms);
		error = -ETIMEDOUT;
		goto out;
	}
	error = parse_reply(&r, reply, err, errlen);
out:
	free_env(envp);
	buf_free(&req);
	spawn_result_free(&r);
	return error;
}

int
harness_failed_checks(const json_t *checks, char *out, size_t outlen)
{
	struct buf b = BUF_INIT(64u << 10);
	size_t i;
	json_t *c;
	int n = 0;

	json_array_foreach(checks, i, c) {
		if (!json_is_object(c) || jsonx_bool(c, "passed", 1))
			continue;
		buf_printf(&b, "%s%s (%s)", n++ ? "; " : "", jsonx_str(c, "name", "?"),
		    jsonx_str(c, "detail", "no detail"));
	}
	if (outlen)
		snprintf(out, outlen, "%s", buf_cstr(&b));
	buf_free(&b);
	return n;
}

static int
under(const char *path, const char *dir)
{
	size_t n = strlen(dir);

	return !strncmp(path, dir, n) && (path[n] == '/' || path[n] == '\0');
}

/* Cut the last two components off path: .../bin/python3 -> ... ("" when none). */
static void
up_two(char *path)
{
	for (int i = 0; i < 2; i++) {
		char *slash = strrchr(path, '/');
		if (!slash || slash == path) {
			path[0] = '\0';
			return;
		}
		*slash = '\0';
	}
}

/*
 * What the interpreter needs beyond what the sandbox always shows (/usr,
 * /opt, KERNELBOT_PYTHON's virtualenv): the virtualenv it belongs to, and
 * the prefix of the binary it resolves to (a pyenv or a conda install).
 * Paths under /usr or /opt are skipped; at most two, into paths[].
 */
static size_t
interp_paths(const char *python, char paths[2][PATH_MAX])
{
	char p[PATH_MAX], cfg[PATH_MAX + 16];
	size_t n = 0;

	snprintf(p, sizeof(p), "%s", python);
	up_two(p);
	if (p[0] && snprintf(cfg, sizeof(cfg), "%s/pyvenv.cfg", p) < (int)sizeof(cfg) &&
	    access(cfg, R_OK) == 0 && realpath(p, paths[n]) && strcmp(paths[n], "/") &&
	    !under(paths[n], "/usr") && !under(paths[n], "/opt"))
		n++;
	if (realpath(python, p)) {
		up_two(p);
		if (p[0] && strcmp(p, "/") && !under(p, "/usr") && !under(p, "/opt") &&
		    (n == 0 || strcmp(p, paths[0])))
			snprintf(paths[n++], PATH_MAX, "%s", p);
	}
	return n;
}

/*
 * The developer fallbacks of evaluations and builds, one rule for every
 * verb: run with the confinement the host has rather than refuse.
 */
static const char *
degraded_allowed(void)
{
	static const char *const names[] = { "KERNELBOT_EVAL_UNSANDBOXED",
		"KERNELBOT_SANDBOX_ALLOW_DEGRADED", NULL };

	for (int i = 0; names[i]; i++) {
		const char *v = getenv(names[i]);
		if (v && !strcmp(v, "1"))
			return names[i];
	}
	return NULL;
}

/* RLIMIT_CPU counts every thread: a multithreaded torch may use all CPUs for the whole deadline. */
static int
cpu_limit_s(int timeout_ms)
{
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);
	long long s = (timeout_ms > 0 ? timeout_ms : SANDBOX_DEFAULT_TIMEOUT_MS) / 1000 + 1;

	s = s * (cpus > 0 ? cpus : 1) + 60;
	return s > INT_MAX / 2 ? INT_MAX / 2 : (int)s;
}

int
harness_call_sandboxed(const json_t *request, int timeout_ms,
    const struct harness_opts *ho, json_t **reply, char *err, size_t errlen)
{
	struct buf req = BUF_INIT(REPLY_MAX);
	struct sandbox_opts so = SANDBOX_OPTS_INIT;
	struct spawn_opts o = SPAWN_OPTS_INIT;
	struct spawn_result r = { 0 };
	const char *python, *script, *argv[4], *extra[8], *ro[SANDBOX_RO_PATHS_MAX + 1];
	const char *stage = ho->stage ? ho->stage : jsonx_str(request, "verb", "harness");
	const char *tmp = ho->tmp_dir ? ho->tmp_dir : getenv("TMPDIR");
	char scratch[PATH_MAX] = "", dir[PATH_MAX], pypath[PATH_MAX + 16], omp[64];
	char ipaths[2][PATH_MAX], why[1536], base[PATH_MAX];
	char **env = NULL;
	json_t *checks = NULL;
	size_t nro = 0, nx = 0, ni;
	int error, deadline_ms = timeout_ms > 0 ? timeout_ms : SANDBOX_DEFAULT_TIMEOUT_MS;
	const char *slash, *fallback;
	json_t *v;

	if ((error = harness_locate(&python, &script, err, errlen)) < 0)
		return error;
	if ((error = jsonx_dump(request, JSON_COMPACT, &req)) < 0)
		goto out;
	/* The scratch folder first, absolute (the sandbox's rule), before anything is shown. */
	errno = 0;
	if (!realpath(tmp && *tmp ? tmp : "/tmp", base) ||
	    snprintf(scratch, sizeof(scratch), "%s/kernelbot-harness-XXXXXX", base) >=
	    (int)sizeof(scratch) || !mkdtemp(scratch)) {
		error = errno ? -errno : -ENAMETOOLONG;
		snprintf(err, errlen, "%s: cannot make a scratch folder in %s: %s", stage,
		    tmp && *tmp ? tmp : "/tmp", strerror(-error));
		scratch[0] = '\0';
		goto out;
	}
	slash = strrchr(script, '/');
	snprintf(dir, sizeof(dir), "%.*s", (int)(slash - script), script);
	ro[nro++] = dir;
	ni = interp_paths(python, ipaths);
	for (size_t i = 0; i < ni; i++)
		ro[nro++] = ipaths[i];
	for (const char *const *p = ho->ro_paths; p && *p; p++) {
		if (nro >= SANDBOX_RO_PATHS_MAX)
			goto too_many;
		ro[nro++] = *p;
	}
	/* The module's path (harness_entry_put): shown as the problem file is. */
	json_array_foreach(json_object_get(request, "module_path"), ni, v) {
		if (!json_is_string(v))
			continue;
		if (nro >= SANDBOX_RO_PATHS_MAX)
			goto too_many;
		ro[nro++] = json_string_value(v);
	}
	ro[nro] = NULL;

	snprintf(pypath, sizeof(pypath), "PYTHONPATH=%s", dir);
	extra[nx++] = pypath;
	extra[nx++] = "PYTHONDONTWRITEBYTECODE=1";
	extra[nx++] = "PYTHONUNBUFFERED=1";
	if (getenv("OMP_NUM_THREADS") &&
	    snprintf(omp, sizeof(omp), "OMP_NUM_THREADS=%s", getenv("OMP_NUM_THREADS")) < (int)sizeof(omp))
		extra[nx++] = omp;
	if (ho->gpu >= 0)
		extra[nx++] = "CUDA_VISIBLE_DEVICES=0";	/* the one GPU shown */
	extra[nx] = NULL;
	if ((error = sandbox_env_build(scratch, extra, &env)) < 0)
		goto out;

	so.profile = SANDBOX_COMPILER;	/* torch may start compilers */
	so.scratch = scratch;
	so.ro_paths = ro;
	so.mem_bytes = ho->mem_bytes ? ho->mem_bytes : HARNESS_SANDBOX_MEM;
	so.cpu_s = cpu_limit_s(deadline_ms);
	so.gpu = ho->gpu;
	child_opts(&o, argv, python, script, env, &req, deadline_ms);
	error = sandbox_run(&so, &o, &r, &checks);
	if (error == -ENOTSUP && (fallback = degraded_allowed())) {
		harness_failed_checks(checks, why, sizeof(why));
		log_warn("running the harness with the host's partial sandbox",
		    "stage=%s missing=\"%s\" because=%s=1", stage, why, fallback);
		json_decref(checks);
		checks = NULL;
		spawn_result_free(&r);
		memset(&r, 0, sizeof(r));
		so.allow_degraded = 1;
		error = sandbox_run(&so, &o, &r, &checks);
	}
	harness_failed_checks(checks, why, sizeof(why));
	if (error == -ENOTSUP) {
		snprintf(err, errlen, "%s: this host cannot sandbox the harness, which runs the "
		    "module's code; missing: %s. For a developer run with what the host has, "
		    "set KERNELBOT_EVAL_UNSANDBOXED=1", stage, why);
		goto out;
	}
	if (error < 0) {
		snprintf(err, errlen, "%s: cannot run the harness in the sandbox: %s%s%s", stage,
		    strerror(-error), why[0] ? ": " : "", why);
		goto out;
	}
	if (r.timed_out) {
		snprintf(err, errlen, "%s: timed out after %d s; the harness and every process "
		    "it started were killed", stage, (deadline_ms + 999) / 1000);
		error = -ETIMEDOUT;
		goto out;
	}
	if (r.term_signal == SIGKILL) {
		/* the cgroup's OOM killer, or RLIMIT_CPU's last word; its stderr has nothing */
		snprintf(err, errlen, "%s: the harness was killed (SIGKILL), most likely at its "
		    "memory limit (%zu MiB)", stage, so.mem_bytes >> 20);
		error = -EPROTO;
		goto out;
	}
	error = parse_reply(&r, reply, err, errlen);
	goto out;
too_many:
	snprintf(err, errlen, "%s: too many files to show the harness (at most %d)", stage,
	    SANDBOX_RO_PATHS_MAX - 3);
	error = -E2BIG;
out:
	if (scratch[0] && fsx_rmtree(scratch) < 0)
		log_warn("cannot remove a harness scratch folder", "path=%s", scratch);
	json_decref(checks);
	sandbox_env_free(env);
	buf_free(&req);
	spawn_result_free(&r);
	return error;
}

int
harness_launch(const char *const *args, int timeout_ms, char *err, size_t errlen)
{
	struct spawn_opts o = SPAWN_OPTS_INIT;
	struct spawn_result r = { 0 };
	const char *python, *script, *argv[24];
	char *envp[16] = { 0 };
	size_t n = 0;
	int error;

	if ((error = harness_locate(&python, &script, err, errlen)) < 0)
		return error;
	argv[n++] = python;
	argv[n++] = "-u";
	argv[n++] = script;
	for (size_t i = 0; args[i]; i++) {
		if (n + 1 >= sizeof(argv) / sizeof(argv[0]))
			return -E2BIG;
		argv[n++] = args[i];
	}
	argv[n] = NULL;
	if ((error = build_env(script, envp, 16)) < 0)
		goto out;
	o.argv = argv;
	o.envp = (const char *const *)envp;
	o.cwd = "/";	/* a server outlives the caller's working directory */
	o.timeout_ms = timeout_ms;
	o.err_max = 16u << 10;
	if ((error = spawn_run(&o, &r)) < 0) {
		snprintf(err, errlen, "cannot run %s: %s", python, strerror(-error));
		goto out;
	}
	if (r.timed_out) {
		snprintf(err, errlen, "the harness launcher did not finish within %d ms", timeout_ms);
		error = -ETIMEDOUT;
	} else if (r.status != 0) {
		const char *e = buf_cstr(&r.err);
		size_t len = strlen(e);

		snprintf(err, errlen, "the harness launcher failed (exit %d)%s%s", r.status,
		    len ? ": " : "", len > 1000 ? e + len - 1000 : e);
		error = -EPROTO;
	}
out:
	free_env(envp);
	spawn_result_free(&r);
	return error;
}

static int
cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/*
 * name:size:mtime of every .py file in dir, sorted, appended to b (not
 * __pycache__: any Python that imports kbh may write there).
 */
static int
dir_stamp(const char *dir, struct buf *b)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	char *names[512];
	size_t n = 0;
	int error = 0;

	if (!d)
		return 0;	/* no package beside the script: the script alone */
	while ((e = readdir(d)) && n < sizeof(names) / sizeof(names[0]))
		if (e->d_name[0] != '.' && strlen(e->d_name) > 3 &&
		    !strcmp(e->d_name + strlen(e->d_name) - 3, ".py") &&
		    !(names[n++] = strdup(e->d_name)))
			error = -ENOMEM;
	closedir(d);
	qsort(names, n, sizeof(names[0]), cmp_str);
	for (size_t i = 0; i < n; i++) {
		char p[PATH_MAX];
		struct stat st;

		if (error == 0 && names[i] &&
		    snprintf(p, sizeof(p), "%s/%s", dir, names[i]) < (int)sizeof(p) &&
		    stat(p, &st) == 0)
			error = buf_printf(b, "%s:%lld:%lld.%09ld\n", names[i], (long long)st.st_size,
			    (long long)st.st_mtim.tv_sec, st.st_mtim.tv_nsec);
		free(names[i]);
	}
	return error;
}

int
harness_identity(char **out, char *err, size_t errlen)
{
	struct buf b = BUF_INIT(1u << 20);
	const char *python, *script, *slash;
	char *envp[16] = { 0 }, dir[PATH_MAX];
	int error;

	if ((error = harness_locate(&python, &script, err, errlen)) < 0)
		return error;
	if ((error = build_env(script, envp, 16)) < 0 ||
	    (error = buf_printf(&b, "python=%s\nscript=%s\n", python, script)) < 0)
		goto out;
	for (int i = 0; envp[i]; i++)
		if ((error = buf_printf(&b, "env %s\n", envp[i])) < 0)
			goto out;
	slash = strrchr(script, '/');
	snprintf(dir, sizeof(dir), "%.*s/kbh", (int)(slash - script), script);
	if ((error = dir_stamp(dir, &b)) < 0)
		goto out;
	snprintf(dir, sizeof(dir), "%.*s/kbh/ops", (int)(slash - script), script);
	if ((error = dir_stamp(dir, &b)) < 0)
		goto out;
	{
		struct stat st;
		if (stat(script, &st) == 0 && (error = buf_printf(&b, "harness.py:%lld:%lld\n",
		    (long long)st.st_size, (long long)st.st_mtim.tv_sec)) < 0)
			goto out;
	}
	if (!(*out = strdup(buf_cstr(&b))))
		error = -ENOMEM;
out:
	free_env(envp);
	buf_free(&b);
	return error;
}

int
harness_entry_put(json_t *req, const struct harness_entry *e, const char *suffix)
{
	const char *v[3] = { e ? e->init : NULL, e ? e->inputs : NULL, e ? e->variants : NULL };
	static const char *const keys[3] = { "init", "inputs", "variants" };
	char key[32];

	json_t *path;

	for (int i = 0; i < 3; i++) {
		if (!v[i])
			continue;
		snprintf(key, sizeof(key), "%s%s", keys[i], suffix);
		if (json_object_set_new(req, key, json_string(v[i])) < 0)
			return -ENOMEM;
	}
	if (!e || !e->path[0])
		return 0;
	if (!(path = json_array()) || json_object_set_new(req, "module_path", path) < 0)
		return -ENOMEM;
	for (int i = 0; i < HARNESS_PATH_MAX && e->path[i]; i++)
		if (json_array_append_new(path, json_string(e->path[i])) < 0)
			return -ENOMEM;
	return 0;
}
