#include "gpu/evalenv.h"

#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "common/buf.h"
#include "common/jsonx.h"
#include "common/spawn.h"
#include "gpu/compile.h"

#define VERSION_TIMEOUT_MS 30000	/* nvcc --version on a cold cache */

const char *const evalenv_thread_vars[] = { "OMP_NUM_THREADS", "OMP_PROC_BIND", "OMP_PLACES",
	"MKL_NUM_THREADS", NULL };

/* The value of "key<spaces/tabs>: value" at line start, or NULL. */
static const char *
field(const char *line, const char *key)
{
	size_t n = strlen(key);

	if (strncmp(line, key, n))
		return NULL;
	line += n;
	while (*line == ' ' || *line == '\t')
		line++;
	if (*line++ != ':')
		return NULL;
	while (*line == ' ' || *line == '\t')
		line++;
	return line;
}

int
evalenv_cpu_model(const char *cpuinfo, char *out, size_t len)
{
	/* x86 says "model name"; arm64 kernels "Hardware" or nothing but
	 * "CPU part"; older arm "Processor"; s390 and mips "cpu model". */
	static const char *const keys[] = { "model name", "Hardware", "Processor", "cpu model", NULL };

	if (len)
		out[0] = '\0';
	for (int k = 0; keys[k]; k++)
		for (const char *l = cpuinfo; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL) {
			const char *v = field(l, keys[k]);
			size_t n;

			if (!v)
				continue;
			n = strcspn(v, "\n");
			while (n && (v[n - 1] == ' ' || v[n - 1] == '\t' || v[n - 1] == '\r'))
				n--;
			if (!n)
				continue;
			snprintf(out, len, "%.*s", (int)n, v);
			return 0;
		}
	return -ENOENT;
}

static json_t *
str_arg(json_t *a, const char *flag, const char *value)
{
	json_array_append_new(a, json_string(flag));
	json_array_append_new(a, json_string(value));
	return a;
}

static json_t *
int_arg(json_t *a, const char *flag, long long v)
{
	char s[32];

	snprintf(s, sizeof(s), "%lld", v);
	return str_arg(a, flag, s);
}

json_t *
evalenv_args(const struct eval_opts *o, const char *backend, uint64_t seed)
{
	json_t *a = json_array();
	char s[64];

	if (!a)
		return NULL;
	str_arg(a, "--backend", backend);
	/* A unique decimal: the seed is 63 bits, past a double's exactness. */
	snprintf(s, sizeof(s), "%llu", (unsigned long long)seed);
	str_arg(a, "--seed", s);
	if (o->trials != EVAL_DEFAULT_TRIALS)
		int_arg(a, "--trials", o->trials);
	/* 0: adaptive; a reproduction must be adaptive too, not fixed. */
	if (o->rounds > 0)
		int_arg(a, "--rounds", o->rounds);
	if (o->reps > 0)
		int_arg(a, "--reps", o->reps);
	if (o->warmup >= 0)
		int_arg(a, "--warmup", o->warmup);
	if (o->baselines && strcmp(o->baselines, "eager,compile") && strcmp(o->baselines, "compile,eager"))
		str_arg(a, "--baselines", o->baselines);
	/* %.17g: the same double back from strtod */
	if (o->atol >= 0) {
		snprintf(s, sizeof(s), "%.17g", o->atol);
		str_arg(a, "--atol", s);
	}
	if (o->rtol >= 0) {
		snprintf(s, sizeof(s), "%.17g", o->rtol);
		str_arg(a, "--rtol", s);
	}
	if (o->class_name && strcmp(o->class_name, "Model"))
		str_arg(a, "--class", o->class_name);
	if (o->device != 0 && !strcmp(backend, "cuda"))
		int_arg(a, "--device", o->device);
	if (o->sanitize && !strcmp(backend, "cuda"))
		json_array_append_new(a, json_string("--sanitize"));
	return a;
}

static json_t *
cpu_model(void)
{
	struct buf b = BUF_INIT(1u << 20);
	char model[256];
	struct utsname u;
	int error = buf_read_file(&b, "/proc/cpuinfo");

	if (error == 0)
		error = evalenv_cpu_model(buf_cstr(&b), model, sizeof(model));
	buf_free(&b);
	if (error == 0)
		return json_string(model);
	/* Some arm64 kernels name no model at all: the machine at least. */
	return uname(&u) == 0 ? json_string(u.machine) : json_null();
}

/* The CPUs this process may run on (taskset, a cgroup's cpuset), as OpenMP counts them. */
static json_t *
cpus_allowed(void)
{
	cpu_set_t set;

	if (sched_getaffinity(0, sizeof(set), &set) < 0)
		return json_null();
	return json_integer(CPU_COUNT(&set));
}

/* The compiler's one line that names its version: nvcc's "release" line, else the first. */
static json_t *
compiler_version(const char *path)
{
	const char *argv[] = { path, "--version", NULL };
	const char *envp[] = { "PATH=/usr/local/cuda/bin:/usr/local/bin:/usr/bin:/bin", "LANG=C", NULL };
	struct spawn_opts o = SPAWN_OPTS_INIT;
	struct spawn_result r = { 0 };
	json_t *v = json_null();

	o.argv = argv;
	o.envp = envp;
	o.timeout_ms = VERSION_TIMEOUT_MS;
	if (spawn_run(&o, &r) == 0 && r.status == 0 && r.out.len) {
		const char *s = buf_cstr(&r.out), *rel = strstr(s, ", release ");
		const char *line = s;

		if (rel)
			for (line = rel; line > s && line[-1] != '\n'; line--)
				;
		v = json_sprintf("%.*s", (int)strcspn(line, "\n"), line);
	}
	spawn_result_free(&r);
	return v;
}

/* compiler, compiler_version, compile_flags: the build compile_batch makes (gpu/compile.h). */
static void
toolchain(json_t *env, const struct evalenv_in *in)
{
	const char *argv[32];
	char arch_flag[64], why[256];
	struct buf flags = BUF_INIT(8192);
	enum compile_backend b = !strcmp(in->backend, "cuda") ? COMPILE_CUDA : COMPILE_CPU;

	json_object_set_new(env, "compiler", json_null());
	json_object_set_new(env, "compiler_version", json_null());
	json_object_set_new(env, "compile_flags", json_null());
	if (!in->native || (b == COMPILE_CUDA && !in->arch) ||
	    compile_argv(b, in->arch, "SRC", "OUT", argv, sizeof(argv) / sizeof(argv[0]),
	    arch_flag, sizeof(arch_flag), why, sizeof(why)) < 0)
		return;
	for (size_t i = 1; argv[i]; i++) {
		/* the build's own files are not flags */
		if (!strcmp(argv[i], "-o") && argv[i + 1]) {
			i++;
			continue;
		}
		if (!strcmp(argv[i], "SRC"))
			continue;
		if (buf_printf(&flags, "%s%s", flags.len ? " " : "", argv[i]) < 0)
			break;
	}
	json_object_set_new(env, "compiler", json_string(argv[0]));
	json_object_set_new(env, "compiler_version", compiler_version(argv[0]));
	json_object_set_new(env, "compile_flags", json_string(buf_cstr(&flags)));
	buf_free(&flags);
}

static json_t *
copy_or_null(const json_t *obj, const char *key)
{
	json_t *v = json_object_get(obj, key);

	return v ? json_deep_copy(v) : json_null();
}

json_t *
evalenv_json(const struct evalenv_in *in)
{
	json_t *env = json_object(), *threads = json_object(), *tt;
	long online = sysconf(_SC_NPROCESSORS_ONLN);
	char drv[64] = "", seed[32];

	if (!env || !threads) {
		json_decref(env);
		json_decref(threads);
		return NULL;
	}
	json_object_set_new(env, "cpu_model", cpu_model());
	json_object_set_new(env, "logical_cpus", online > 0 ? json_integer(online) : json_null());
	json_object_set_new(env, "cpus_allowed", cpus_allowed());
	/* null: unset, so the runtime chose (OpenMP: one thread per allowed CPU) */
	for (int i = 0; evalenv_thread_vars[i]; i++) {
		const char *v = getenv(evalenv_thread_vars[i]);
		json_object_set_new(threads, evalenv_thread_vars[i], v ? json_string(v) : json_null());
	}
	json_object_set_new(env, "threads", threads);
	tt = json_object_get(in->reply, "torch_threads");
	json_object_set_new(env, "torch_threads", json_is_integer(tt) ? json_incref(tt) : json_null());
	if (in->gpu) {
		gpu_driver_version(drv, sizeof(drv));
		json_object_set_new(env, "gpu", json_pack("{s:s, s:s, s:s}", "name", in->gpu->name,
		    "driver", drv, "arch", in->arch ? in->arch : ""));
	} else {
		json_object_set_new(env, "gpu", json_null());
	}
	toolchain(env, in);
	json_object_set_new(env, "python", copy_or_null(in->reply, "python"));
	json_object_set_new(env, "torch", copy_or_null(in->reply, "torch"));
	/* Both forms: the integer for programs, the string for shells and
	 * readers whose JSON numbers are doubles (63 bits do not fit one). */
	json_object_set_new(env, "seed", json_integer((json_int_t)in->seed));
	snprintf(seed, sizeof(seed), "%llu", (unsigned long long)in->seed);
	json_object_set_new(env, "seed_str", json_string(seed));
	json_object_set_new(env, "seed_given", json_boolean(in->seed_given));
	json_object_set_new(env, "eval_args", in->o ? evalenv_args(in->o, in->backend, in->seed) :
	    json_array());
	return env;
}
