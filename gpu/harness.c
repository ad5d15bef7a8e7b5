#include "gpu/harness.h"

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/buf.h"
#include "common/jsonx.h"
#include "common/spawn.h"

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
	const char *env_py = getenv("KERNELBOT_PYTHON");
	const char *env_script = getenv("KERNELBOT_HARNESS");
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
		if (access(env_script, R_OK) == 0)
			found_script = strdup(env_script);
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
	json_t *v = NULL;
	int error;

	if ((error = harness_locate(&python, &script, err, errlen)) < 0)
		return error;
	if ((error = jsonx_dump(request, JSON_COMPACT, &req)) < 0 ||
	    (error = build_env(script, envp, 16)) < 0)
		goto out;
	argv[0] = python;
	argv[1] = "-u";
	argv[2] = script;
	argv[3] = NULL;
	o.argv = argv;
	o.envp = (const char *const *)envp;
	o.input = req.data;
	o.input_len = req.len;
	o.timeout_ms = timeout_ms;
	o.out_max = REPLY_MAX;
	o.err_max = 64u << 10;
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
	if (r.status != 0 || r.out_dropped ||
	    jsonx_parse(buf_cstr(&r.out), r.out.len, &v, NULL, 0) < 0 ||
	    !json_is_object(v)) {
		const char *e = buf_cstr(&r.err);
		size_t len = strlen(e);

		snprintf(err, errlen, "the harness failed (exit %d)%s%s", r.status,
		    len ? ": " : "", len > 1500 ? e + len - 1500 : e);
		json_decref(v);
		error = -EPROTO;
		goto out;
	}
	*reply = v;
out:
	free_env(envp);
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
