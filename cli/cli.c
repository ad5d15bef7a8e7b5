#include "cli/cli.h"

#include "common/where.h"
#include "conf/config.h"
#include "gpu/eval.h"

#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int
cli_parse_int(const char *s, int lo, int hi, int *out)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 10);
	if (errno || *end || end == s || v < lo || v > hi)
		return -EINVAL;
	*out = (int)v;
	return 0;
}

int
cli_parse_num(const char *s, double *out)
{
	char *end;
	double v = strtod(s, &end);

	if (*end || end == s || v < 0)
		return -EINVAL;
	*out = v;
	return 0;
}

int
cli_parse_size(const char *s, size_t *out)
{
	char *end;
	unsigned long long v;
	int shift = 0;

	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || end == s || *s == '-')
		return -EINVAL;
	switch (*end) {
	case 'k': case 'K': shift = 10; end++; break;
	case 'm': case 'M': shift = 20; end++; break;
	case 'g': case 'G': shift = 30; end++; break;
	default: break;
	}
	if (*end || !v || v > (~0ull >> shift))
		return -EINVAL;
	*out = (size_t)(v << shift);
	return 0;
}

static int
env_is(const char *name, const char *value)
{
	const char *v = getenv(name);

	return v && !strcmp(v, value);
}

/* An absolute path from the environment, or NULL. */
static const char *
env_abs(const char *name)
{
	const char *v = getenv(name);

	return v && *v == '/' ? v : NULL;
}

/* A whole number in [lo, hi] from the environment, else def. */
static long
env_long(const char *name, long def, long lo, long hi)
{
	const char *v = getenv(name);
	char *end;
	long n;

	if (!v || !*v)
		return def;
	n = strtol(v, &end, 10);
	return *end || n < lo || n > hi ? def : n;
}

/* A string from the environment, NULL when unset or empty. */
static const char *
env_str(const char *name)
{
	const char *v = getenv(name);

	return v && *v ? v : NULL;
}

int
cli_where_load(void)
{
	struct where w = WHERE_INIT;
	char cache[PATH_MAX];
	const char *v;

	w.python = env_str("KERNELBOT_PYTHON");
	w.harness = env_str("KERNELBOT_HARNESS");
	w.ncu = env_str("KERNELBOT_NCU");
	w.include = env_str("KERNELBOT_INCLUDE");
	w.prompts = env_str("KERNELBOT_PROMPTS");
	w.judge_dir = env_str("KERNELBOT_JUDGE_DIR");
	w.judge_idle_s = env_long("KERNELBOT_JUDGE_IDLE_S", 0, 1, 7 * 86400);
	w.judge_wait_s = env_long("KERNELBOT_JUDGE_WAIT_S", -1, 0, 86400);
	w.sandbox_pretend_missing = getenv("KERNELBOT_SANDBOX_PRETEND_MISSING");
	w.sandbox_allow_degraded = env_is("KERNELBOT_SANDBOX_ALLOW_DEGRADED", "1");
	if ((v = env_abs("KERNELBOT_CACHE")))
		w.cache = v;
	else if ((v = env_abs("XDG_CACHE_HOME")))
		w.cache = snprintf(cache, sizeof(cache), "%s/kernelbot", v) < (int)sizeof(cache) ?
		    cache : NULL;
	else if ((v = env_abs("HOME")))
		w.cache = snprintf(cache, sizeof(cache), "%s/.cache/kernelbot", v) <
		    (int)sizeof(cache) ? cache : NULL;
	return where_set(&w);
}

void
cli_eval_env(struct eval_env *e)
{
	const char *v;

	memset(e, 0, sizeof(*e));
	e->tmp_dir = getenv("TMPDIR");
	e->unsandboxed = env_is("KERNELBOT_EVAL_UNSANDBOXED", "1");
	e->judge_late = env_is("KERNELBOT_JUDGE_EARLY", "0");
	e->judge_server_off = env_is("KERNELBOT_JUDGE_SERVER", "0");
	e->keep_workdir = getenv("KERNELBOT_EVAL_KEEP") != NULL;
	e->allow_degraded = env_is("KERNELBOT_SANDBOX_ALLOW_DEGRADED", "1");
	if ((v = getenv("KERNELBOT_SPOT_SAMPLE")) && *v) {
		e->spot_sample_set = 1;
		e->spot_sample = strtol(v, NULL, 10);
	}
	/* A value that is not a number from 0 to 1 is ignored, not taken as 0. */
	if ((v = getenv("KERNELBOT_CHECK_FRACTION")) && *v) {
		char *end;
		double p = strtod(v, &end);

		if (*end == '\0' && p >= 0 && p <= 1) {
			e->check_fraction_set = 1;
			e->check_fraction = p;
		} else
			fprintf(stderr, "kernelbot: KERNELBOT_CHECK_FRACTION=%s is not a number "
			    "from 0 to 1; using the judge's default\n", v);
	}
	/* A noisy host (shared CPUs) may need a looser drift check. */
	if ((v = getenv("KERNELBOT_BASELINE_DRIFT"))) {
		char *end;
		double d = strtod(v, &end);

		if (end != v && !*end && d > 0 && d < 100)
			e->baseline_drift = d;
	}
	e->perturb_off = env_is("KERNELBOT_PERTURB", "0");
}

int
cli_path_arg(const char *cmd, const char *dir, const char **path, char (*store)[PATH_MAX])
{
	struct stat st;
	int n = 0;

	while (n < HARNESS_PATH_MAX && path[n])
		n++;
	if (n >= HARNESS_PATH_MAX)
		return cli_usage_error(cmd, "--path: at most %d folders", HARNESS_PATH_MAX);
	if (!realpath(dir, store[n]) || stat(store[n], &st) < 0)
		return cli_usage_error(cmd, "--path %s: %s", dir, strerror(errno));
	if (!S_ISDIR(st.st_mode))
		return cli_usage_error(cmd, "--path %s: not a folder", dir);
	path[n] = store[n];
	path[n + 1] = NULL;
	return 0;
}

int
cli_usage_error(const char *cmd, const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "kernelbot %s: ", cmd);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\n");
	return EXIT_USAGE;
}

int
config_load_cli(const char *cmd, const char *path, int flags,
    struct config **out)
{
	char err[CONFIG_ERR_MAX];
	int error;

	if (!path && access(CONFIG_DEFAULT_PATH, F_OK) < 0)
		error = config_default(out);
	else
		error = config_load(path ? path : CONFIG_DEFAULT_PATH, flags, out,
		    err, sizeof(err));
	if (error == -EINVAL) {
		fprintf(stderr, "kernelbot %s: %s\n", cmd, err);
		return EXIT_USAGE;
	}
	if (error < 0) {
		fprintf(stderr, "kernelbot %s: %s: %s\n", cmd,
		    path ? path : CONFIG_DEFAULT_PATH,
		    error == -EFBIG ? "file too large" : strerror(-error));
		return error == -ENOENT ? EXIT_USAGE : 1;
	}
	return 0;
}
