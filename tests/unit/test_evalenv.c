/*
 * test_evalenv: the pieces of a result's "environment" that do not need a
 * judge: the CPU model from /proc/cpuinfo text of several architectures,
 * the `kernelbot eval` flags that repeat an evaluation (defaults left out,
 * a 63-bit seed exact), and the object's thread settings as set in this
 * process (unset ones null, never defaulted).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/jsonx.h"
#include "gpu/evalenv.h"
#include "t.h"

/* The array of strings as one space-separated line. */
static const char *
joined(json_t *a)
{
	static char out[1024];
	size_t i, n = 0;
	json_t *v;

	out[0] = '\0';
	json_array_foreach(a, i, v)
		n += snprintf(out + n, sizeof(out) - n, "%s%s", i ? " " : "",
		    json_is_string(v) ? json_string_value(v) : "<not a string>");
	json_decref(a);
	return out;
}

int
main(void)
{
	char model[128];
	struct eval_opts o = EVAL_OPTS_INIT;
	struct evalenv_in in = { 0 };
	json_t *env;

	/* CPU model */
	CHECK_INT("x86", evalenv_cpu_model("processor\t: 0\nvendor_id\t: AuthenticAMD\n"
	    "model name\t: AMD EPYC 9654 96-Core Processor  \nflags\t\t: fpu\n", model, sizeof(model)), 0);
	CHECK_STR("x86: the model, trailing blanks cut", model, "AMD EPYC 9654 96-Core Processor");
	CHECK_INT("arm: Hardware", evalenv_cpu_model("processor\t: 0\nBogoMIPS\t: 50.00\n"
	    "CPU part\t: 0xd4f\n\nHardware\t: NVIDIA Grace\n", model, sizeof(model)), 0);
	CHECK_STR("arm: the Hardware line", model, "NVIDIA Grace");
	CHECK_INT("model name wins over Processor", evalenv_cpu_model("Processor\t: ARMv7\n"
	    "model name\t: ARMv7 Processor rev 4 (v7l)\n", model, sizeof(model)), 0);
	CHECK_STR("model name", model, "ARMv7 Processor rev 4 (v7l)");
	CHECK_INT("a key must be the whole field name", evalenv_cpu_model("model names\t: no\n"
	    "processor\t: 0\n", model, sizeof(model)), -ENOENT);
	CHECK_STR("none: empty", model, "");
	CHECK_INT("an empty value does not count", evalenv_cpu_model("model name\t:   \n", model, sizeof(model)),
	    -ENOENT);
	CHECK_INT("cut to the buffer", evalenv_cpu_model("model name: Intel(R) Xeon(R)\n", model, 6), 0);
	CHECK_STR("cut", model, "Intel");

	/* the flags that repeat an evaluation */
	CHECK_STR("defaults: backend and seed only", joined(evalenv_args(&o, "cpu", 123)),
	    "--backend cpu --seed 123");
	CHECK_STR("a 63-bit seed, exact", joined(evalenv_args(&o, "cpu", 0x7fffffffffffffffull)),
	    "--backend cpu --seed 9223372036854775807");
	o.trials = 8;
	o.rounds = 12;
	o.reps = 5;
	o.warmup = 0;
	o.baselines = "eager";
	o.atol = 0.001;
	o.class_name = "Block";
	o.device = 2;
	o.sanitize = 2;
	CHECK_STR("CPU: what changes the measurement, no device or sanitizer",
	    joined(evalenv_args(&o, "cpu", 7)), "--backend cpu --seed 7 --trials 8 --rounds 12 --reps 5 "
	    "--warmup 0 --baselines eager --atol 0.001 --class Block");
	o.baselines = "compile,eager";
	o.class_name = "Model";
	o.atol = -1;
	o.rtol = 0.25;
	CHECK_STR("CUDA: device and sanitizer; default baselines and class left out",
	    joined(evalenv_args(&o, "cuda", 7)), "--backend cuda --seed 7 --trials 8 --rounds 12 --reps 5 "
	    "--warmup 0 --rtol 0.25 --device 2 --sanitize");

	/* the object: thread settings as set here, the seed both ways */
	setenv("OMP_NUM_THREADS", "3", 1);
	setenv("OMP_PLACES", "{0,1,2}", 1);
	unsetenv("OMP_PROC_BIND");
	unsetenv("MKL_NUM_THREADS");
	o = (struct eval_opts)EVAL_OPTS_INIT;
	in.o = &o;
	in.backend = "cpu";
	in.seed = 0x7ffffffffffffff0ull;
	in.seed_given = 1;
	env = evalenv_json(&in);
	CHECK("an object", json_is_object(env));
	CHECK_STR("OMP_NUM_THREADS as set", jsonx_str(env, "threads.OMP_NUM_THREADS", NULL), "3");
	CHECK_STR("OMP_PLACES as set", jsonx_str(env, "threads.OMP_PLACES", NULL), "{0,1,2}");
	CHECK("OMP_PROC_BIND unset: null", json_is_null(jsonx_path(env, "threads.OMP_PROC_BIND")));
	CHECK("MKL_NUM_THREADS unset: null", json_is_null(jsonx_path(env, "threads.MKL_NUM_THREADS")));
	CHECK("no judge reply: torch fields null", json_is_null(jsonx_path(env, "torch_threads")) &&
	    json_is_null(jsonx_path(env, "torch")) && json_is_null(jsonx_path(env, "python")));
	CHECK("no native build: no compiler", json_is_null(jsonx_path(env, "compiler")));
	CHECK("CPU: no GPU", json_is_null(jsonx_path(env, "gpu")));
	CHECK("logical CPUs", jsonx_int(env, "logical_cpus", 0) >= 1);
	CHECK("allowed CPUs", jsonx_int(env, "cpus_allowed", 0) >= 1 &&
	    jsonx_int(env, "cpus_allowed", 0) <= jsonx_int(env, "logical_cpus", 0));
	CHECK("a CPU model", json_is_string(jsonx_path(env, "cpu_model")) &&
	    *jsonx_str(env, "cpu_model", ""));
	CHECK_STR("the seed as a string", jsonx_str(env, "seed_str", NULL), "9223372036854775792");
	CHECK("the seed as an integer", json_integer_value(jsonx_path(env, "seed")) ==
	    (json_int_t)0x7ffffffffffffff0ll);
	CHECK("seed_given", json_is_true(jsonx_path(env, "seed_given")));
	CHECK_STR("eval_args", joined(json_incref((json_t *)jsonx_path(env, "eval_args"))),
	    "--backend cpu --seed 9223372036854775792");
	json_decref(env);
	return t_done("test_evalenv");
}
