/* srccheck: each category is found, comments do not count, and fp32-only
 * precision findings become a flag only for fp32 problems. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "gpu/srccheck.h"
#include "tests/unit/t.h"

static int
has_flag(json_t *flags, const char *f)
{
	size_t i;
	json_t *v;

	json_array_foreach(flags, i, v)
		if (!strcmp(json_string_value(v), f))
			return 1;
	return 0;
}

static int
check_passed(json_t *checks, const char *name)
{
	size_t i;
	json_t *v;

	json_array_foreach(checks, i, v)
		if (!strcmp(json_string_value(json_object_get(v, "name")), name))
			return json_is_true(json_object_get(v, "passed"));
	return -1;
}

static void
scan(const char *src, enum srccheck_lang lang, int fp32, json_t **checks, json_t **flags)
{
	*checks = json_array();
	*flags = json_array();
	CHECK("scan succeeds", srccheck_text(src, strlen(src), lang, fp32, *checks, *flags) == 0);
}

static const struct {
	const char *src, *label;
	enum srccheck_lang lang;
} loaders[] = {
	{ "CUmodule m; cuModuleLoadData(&m, image);\n", "module loading flagged", SRCCHECK_CUDA },
	{ "void *fn; cudaGetDriverEntryPoint(\"cuModuleLoadData\", &fn, 0, 0);\n",
	  "a driver entry point looked up is flagged", SRCCHECK_CUDA },
	{ "nvrtcCreateProgram(&p, src, \"k.cu\", 0, 0, 0);\n", "NVRTC flagged", SRCCHECK_C },
	{ "k = cupy.RawKernel(src, 'k')\n", "CuPy's RawKernel flagged", SRCCHECK_PY },
	{ "void *p = mmap(0, 4096, PROT_READ | PROT_WRITE | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);\n",
	  "an executable mapping (a JIT) flagged", SRCCHECK_C },
	{ "mprotect(p, 4096, 5);\n", "mprotect flagged, whatever its protection", SRCCHECK_C },
	{ "int fd = memfd_create(\"x\", 0);\n", "memfd_create flagged", SRCCHECK_CUDA },
	{ "__builtin___clear_cache(p, p + n);\n", "an instruction-cache flush flagged", SRCCHECK_C },
	{ "m = mmap.mmap(-1, 4096, prot=mmap.PROT_READ | mmap.PROT_EXEC)\n",
	  "PROT_EXEC flagged in Python", SRCCHECK_PY },
};

int
main(void)
{
	json_t *c, *f;
	enum srccheck_lang lang;

	scan("int kernelbot_forward(void) { return 0; }\n", SRCCHECK_CUDA, 1, &c, &f);
	CHECK_INT("clean source: no flags", json_array_size(f), 0);
	CHECK_INT("clean source: 8 checks", json_array_size(c), 8);
	CHECK_INT("clean source: side_stream passes", check_passed(c, "static:side_stream"), 1);
	json_decref(c);
	json_decref(f);

	scan("cudaStream_t s; cudaStreamCreate(&s);\ncudaDeviceSynchronize();\n"
	    "pthread_create(&t, 0, fn, 0);\nfloat ms; cudaEventElapsedTime(&ms, a, b);\n"
	    "FILE *f = fopen(\"/etc/passwd\", \"r\");\n__half h = __float2half(x);\n"
	    "static float *kept = 0;\n", SRCCHECK_CUDA, 1, &c, &f);
	CHECK("side stream flagged", has_flag(f, "side_stream"));
	CHECK("device sync flagged", has_flag(f, "device_sync"));
	CHECK("threads flagged", has_flag(f, "threads"));
	CHECK("timer tampering flagged", has_flag(f, "timer_tampering"));
	CHECK("file access flagged", has_flag(f, "file_or_network_access"));
	CHECK("half on fp32 flagged", has_flag(f, "precision_downgrade"));
	CHECK("static pointer flagged", has_flag(f, "result_caching"));
	CHECK_INT("failed check recorded", check_passed(c, "static:side_stream"), 0);
	CHECK("detail names the line",
	    strstr(json_string_value(json_object_get(json_array_get(c, 0), "detail")), "line 1") != NULL);
	json_decref(c);
	json_decref(f);

	/* file access under other names: each is flagged, and a member named bin is not */
	{
		static const char *const io[] = { "int fd = open64(p, 0);", "FILE *f = fopen64(p, \"r\");",
		    "std::ifstream in(p);", "DIR *d = opendir(p);", "int fd = openat2(3, p, &h, 24);",
		    "freopen(p, \"r\", stdin);", "const char *d = \"kernelbot-eval\";" };

		for (size_t i = 0; i < sizeof(io) / sizeof(io[0]); i++) {
			scan(io[i], SRCCHECK_C, 1, &c, &f);
			CHECK(io[i], has_flag(f, "file_or_network_access"));
			json_decref(c);
			json_decref(f);
		}
		scan("h.bin[i] += 1; float open_ratio = 0;", SRCCHECK_C, 1, &c, &f);
		CHECK("a histogram's bins are not files", !has_flag(f, "file_or_network_access"));
		json_decref(c);
		json_decref(f);
	}

	/* the worker's clock read or reached around the names the scan knows */
	{
		static const char *const tamper[] = {
			"struct timespec ts; syscall(228, 1, &ts);\n",
			"double *t0 = (double *)__builtin_frame_address(1) - 3;\n",
			"void *ra = __builtin_return_address(0);\n",
			"unsigned long long t = __rdtsc();\n",
			"void *vd = (void *)getauxval(AT_SYSINFO_EHDR);\n",
			"extern int now(int, void *) __asm__(\"clock\" \"_gettime\");\n",
			"extern int tick asm (\"counter\");\n",
			"double t = omp_get_wtime();\n",
			"auto t = std::chrono::steady_clock::now();\n",
			"struct timespec ts; timespec_get(&ts, TIME_UTC);\n",
			"clock_t c = clock ();\n",
			"int id = CLOCK_MONOTONIC_RAW;\n",
			"unsigned long long t = __builtin_ia32_rdtsc();\n",
		};
		for (size_t i = 0; i < sizeof(tamper) / sizeof(tamper[0]); i++) {
			scan(tamper[i], SRCCHECK_C, 1, &c, &f);
			CHECK(tamper[i], has_flag(f, "timer_tampering"));
			json_decref(c);
			json_decref(f);
		}
	}

	/* device code loaded or looked up at run time escapes the sanitizer's
	 * list of the candidate's own kernels (kbh/judge_sanitize.py) */
	for (size_t i = 0; i < sizeof(loaders) / sizeof(loaders[0]); i++) {
		scan(loaders[i].src, loaders[i].lang, 1, &c, &f);
		CHECK(loaders[i].label, has_flag(f, "runtime_code_loading"));
		json_decref(c);
		json_decref(f);
	}
	/* a large allocation through mmap is not code */
	scan("float *b = mmap(0, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);\n",
	    SRCCHECK_C, 1, &c, &f);
	CHECK("a writable, not executable mapping is not flagged", !has_flag(f, "runtime_code_loading"));
	json_decref(c);
	json_decref(f);

	scan("float clock_rate = 1.0f, wtime = clock_rate * 2;\n", SRCCHECK_C, 1, &c, &f);
	CHECK("names that only start like a clock are not timer tampering",
	    !has_flag(f, "timer_tampering"));
	json_decref(c);
	json_decref(f);

	/* inline asm is a statement, not a renamed declaration */
	scan("unsigned lane;\nasm(\"mov.u32 %0, %%laneid;\" : \"=r\"(lane));\n"
	    "asm volatile(\"membar.gl;\");\n", SRCCHECK_CUDA, 1, &c, &f);
	CHECK("inline asm is not timer tampering", !has_flag(f, "timer_tampering"));
	json_decref(c);
	json_decref(f);

	scan("__half h = __float2half(x);\n", SRCCHECK_CUDA, 0, &c, &f);
	CHECK("half on an fp16 problem is not a flag", !has_flag(f, "precision_downgrade"));
	json_decref(c);
	json_decref(f);

	scan("// cudaDeviceSynchronize();\n/* cudaStreamCreate(&s);\n fork(); */\nint x;\n",
	    SRCCHECK_CUDA, 1, &c, &f);
	CHECK_INT("comments are not findings", json_array_size(f), 0);
	json_decref(c);
	json_decref(f);

	scan("static float helper(float *x) { return *x; }\n", SRCCHECK_C, 1, &c, &f);
	CHECK("a static function is not cached state", !has_flag(f, "result_caching"));
	json_decref(c);
	json_decref(f);

	scan("import torch\nx = x.half()\ntorch.cuda.synchronize()\ns = torch.cuda.Stream()\n",
	    SRCCHECK_PY, 1, &c, &f);
	CHECK("python: half flagged", has_flag(f, "precision_downgrade"));
	CHECK("python: synchronize flagged", has_flag(f, "device_sync"));
	CHECK("python: side stream flagged", has_flag(f, "side_stream"));
	json_decref(c);
	json_decref(f);

	c = json_array();
	f = json_array();
	{
		size_t n = SRCCHECK_MAX_BYTES + 1;
		char *big = malloc(n);
		memset(big, 'a', n);
		CHECK_INT("oversized source refused", srccheck_text(big, n, SRCCHECK_C, 1, c, f), -EFBIG);
		free(big);
	}
	CHECK_INT("missing file", srccheck_file("/nonexistent/k.cu", 1, c, f), -ENOENT);
	CHECK_INT("unknown extension", srccheck_file("/etc/passwd", 1, c, f), -EINVAL);
	CHECK("lang of .cu", srccheck_lang_of("a/kernel.cu", &lang) == 0 && lang == SRCCHECK_CUDA);
	json_decref(c);
	json_decref(f);
	return t_done("test_srccheck");
}
