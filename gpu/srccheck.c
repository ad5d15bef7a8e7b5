#include "gpu/srccheck.h"

#include <errno.h>
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/buf.h"

enum cat { SIDE_STREAM, DEVICE_SYNC, THREADS, TAMPER, LOADING, IO, PRECISION, CACHING, N_CAT };

static const struct {
	const char *name, *flag, *why;
} cats[N_CAT] = {
	{ "side_stream", "side_stream", "work off the given stream escapes the timer" },
	{ "device_sync", "device_sync", "the ABI forbids device-wide synchronization" },
	{ "threads", "threads", "threads or processes may work after the call returns" },
	{ "timer_tampering", "timer_tampering", "timers, symbol lookup or hooks into the harness" },
	{ "runtime_code_loading", "runtime_code_loading",
	    "code built or loaded at run time (device modules, or host code in executable "
	    "memory: a JIT) escapes review and the sanitizer's kernel list" },
	{ "file_or_network_access", "file_or_network_access", "files, sockets or the environment" },
	{ "precision_downgrade", "precision_downgrade", "reduced precision on an fp32 problem" },
	{ "result_caching", "result_caching", "state kept between calls may return stale results" },
};

/* lang mask: 1 C, 2 CUDA, 4 Python. */
static const struct rule {
	enum cat cat;
	int langs;
	const char *re;
} rules[] = {
	{ SIDE_STREAM, 7, "cudaStreamCreate|cuStreamCreate|cudaStreamPerThread|cudaStreamLegacy|"
	    "cudaStreamNonBlocking|cudaLaunchHostFunc|getStreamFromPool" },
	{ SIDE_STREAM, 4, "torch\\.cuda\\.(Stream|stream)\\b" },
	{ DEVICE_SYNC, 7, "cudaDeviceSynchronize|cuCtxSynchronize|cudaThreadSynchronize" },
	{ DEVICE_SYNC, 4, "torch\\.cuda\\.synchronize" },
	{ THREADS, 7, "pthread_create|std::thread|std::async|\\bv?fork[[:space:]]*\\(|"
	    "\\bclone3?[[:space:]]*\\(|posix_spawn|\\bsystem[[:space:]]*\\(|\\bpopen[[:space:]]*\\(|"
	    "\\bexec[lv]p?e?[[:space:]]*\\(" },
	{ THREADS, 4, "threading\\.|subprocess|multiprocessing|os\\.fork|os\\.system" },
	{ TAMPER, 7, "cudaEventElapsedTime|cuEventElapsedTime|clock_gettime|gettimeofday|"
	    "\\bdlsym\\b|\\bdlopen\\b|LD_PRELOAD|/proc/|__attribute__[[:space:]]*\\(\\([[:space:]]*"
	    "constructor|\\batexit[[:space:]]*\\(|\\bsignal[[:space:]]*\\(|sigaction|setitimer|\\bptrace\\b|"
	    "\\bsyscall[[:space:]]*\\(|__builtin_(frame|return)_address|\\b__rdtscp?\\b|\\brdtscp?\\b|"
	    "\\bvdso\\b|getauxval" },
	/* The other clocks a host program reads: a kernel has no use for one. */
	{ TAMPER, 3, "\\bomp_get_wtime\\b|\\btimespec_get\\b|\\bchrono::|\\bclock[[:space:]]*\\([[:space:]]*\\)|"
	    "\\bCLOCK_(MONOTONIC|REALTIME|BOOTTIME|TAI|PROCESS_CPUTIME_ID|THREAD_CPUTIME_ID)|"
	    "__builtin_ia32_rdtscp?|\\bgetrusage\\b|\\btimes[[:space:]]*\\([[:space:]]*&" },
	/*
	 * A declaration renamed by an asm label (int f(void) __asm__("clock"
	 * "_gettime");): a clock read under a name of its own, which an
	 * outside attack used to forge the worker's times unseen. Not inline
	 * asm, which follows a statement's start, not a declarator.
	 */
	{ TAMPER, 3, "[A-Za-z0-9_)][[:space:]]*(__asm__|__asm|asm)[[:space:]]*\\([[:space:]]*\"" },
	{ TAMPER, 4, "time\\.perf_counter|sys\\._getframe|inspect\\.|gc\\.get_objects|"
	    "sys\\.modules|builtins" },
	{ LOADING, 3, "cuModuleLoad|cuLibraryLoad|cudaLibraryLoad|cuLink(Create|Add|Complete)|"
	    "\\bnvrtc[A-Z]|nvJitLink|cuGetProcAddress|cudaGetDriverEntryPoint" },
	/* Host code made at run time: executable memory, memfds, icache flushes. */
	{ LOADING, 3, "PROT_EXEC|\\b(pkey_)?mprotect\\b|\\bmemfd_create\\b|MAP_JIT|SHM_EXEC|"
	    "__builtin___clear_cache|\\b__clear_cache\\b|pthread_jit_write_protect" },
	{ LOADING, 4, "RawKernel|RawModule|cuModuleLoad|\\bnvrtc|load_cubin|PROT_EXEC|memfd_create|"
	    "\\bmprotect\\b" },
	{ IO, 3, "\\bf?open(at2?)?(64)?[[:space:]]*\\(|\\bfreopen|\\bcreat(64)?[[:space:]]*\\(|"
	    "\\b(open|read|scan)dir|\\bfdopen|\\b[io]?fstream\\b|\\bsocket[[:space:]]*\\(|"
	    "\\bconnect[[:space:]]*\\(|\\bgetenv[[:space:]]*\\(|\\benviron\\b|/etc/|/tmp/|"
	    "/home/|/root/|kernelbot-eval" },
	{ IO, 4, "\\bopen[[:space:]]*\\(|os\\.environ|getenv|socket|urllib|requests\\.|/etc/|/home/" },
	{ PRECISION, 3, "__half|\\bhalf2?\\b|__nv_bfloat16|__float2half|__float2bfloat16|\\bbf16\\b|"
	    "[Tt][Ff]32|_FAST_16B?F|CUBLAS_TENSOR_OP_MATH|ALLOW_CONVERSION|\\bwmma::|_Float16|"
	    "\\.f16\\b|cublasSetMathMode" },
	{ PRECISION, 4, "\\.half\\(\\)|float16|bfloat16|allow_tf32|autocast|__half|__nv_bfloat16|"
	    "__float2half|[Tt][Ff]32" },
	{ CACHING, 3, "\\bstatic[[:space:]]+[A-Za-z_][A-Za-z0-9_ ]*\\*+[[:space:]]*[A-Za-z_][A-Za-z0-9_]*"
	    "[[:space:]]*(=|;|\\[)" },
	{ CACHING, 4, "lru_cache|functools\\.cache|\\bglobal\\b" },
};

#define N_RULES (sizeof(rules) / sizeof(rules[0]))

int
srccheck_lang_of(const char *path, enum srccheck_lang *lang)
{
	const char *dot = strrchr(path, '.');

	if (!dot)
		return -EINVAL;
	if (!strcmp(dot, ".c"))
		*lang = SRCCHECK_C;
	else if (!strcmp(dot, ".cu"))
		*lang = SRCCHECK_CUDA;
	else if (!strcmp(dot, ".py"))
		*lang = SRCCHECK_PY;
	else
		return -EINVAL;
	return 0;
}

/*
 * Blank out C comments, keeping newlines (line numbers stay right) and
 * string literals (a name in a string is what dlsym would look up).
 */
static void
strip_comments(char *s)
{
	enum { CODE, STR, CHR, LINE, BLOCK } st = CODE;

	for (char *p = s; *p; p++) {
		switch (st) {
		case CODE:
			if (p[0] == '/' && p[1] == '/') {
				st = LINE;
				*p = ' ';
			} else if (p[0] == '/' && p[1] == '*') {
				st = BLOCK;
				*p = ' ';
				*++p = ' ';
			} else if (*p == '"') {
				st = STR;
			} else if (*p == '\'') {
				st = CHR;
			}
			break;
		case STR:
		case CHR:
			if (*p == '\\' && p[1])
				p++;
			else if (*p == (st == STR ? '"' : '\'') || *p == '\n')
				st = CODE;
			break;
		case LINE:
			if (*p == '\n')
				st = CODE;
			else
				*p = ' ';
			break;
		case BLOCK:
			if (p[0] == '*' && p[1] == '/') {
				*p = ' ';
				*++p = ' ';
				st = CODE;
			} else if (*p != '\n') {
				*p = ' ';
			}
			break;
		}
	}
}

static void
add_flag(json_t *flags, const char *flag)
{
	size_t i;
	json_t *v;

	json_array_foreach(flags, i, v)
		if (!strcmp(json_string_value(v), flag))
			return;
	json_array_append_new(flags, json_string(flag));
}

int
srccheck_text(const char *text, size_t len, enum srccheck_lang lang,
    int fp32_problem, json_t *checks, json_t *flags)
{
	struct buf detail[N_CAT];
	int count[N_CAT] = { 0 };
	regex_t re[N_RULES];
	int compiled[N_RULES] = { 0 };
	int mask = lang == SRCCHECK_C ? 1 : lang == SRCCHECK_CUDA ? 2 : 4;
	char *copy = NULL, *line, *next;
	int error = 0, lineno = 1;

	for (int c = 0; c < N_CAT; c++)
		detail[c] = (struct buf)BUF_INIT(BUF_MAX_SMALL);
	if (len > SRCCHECK_MAX_BYTES)
		return -EFBIG;
	if (!(copy = malloc(len + 1)))
		return -ENOMEM;
	memcpy(copy, text, len);
	copy[len] = '\0';
	if (lang != SRCCHECK_PY)
		strip_comments(copy);
	for (size_t r = 0; r < N_RULES; r++) {
		if (!(rules[r].langs & mask))
			continue;
		/* The patterns are ours: failing to compile one is a bug here. */
		if (regcomp(&re[r], rules[r].re, REG_EXTENDED) != 0) {
			error = -EINVAL;
			goto out;
		}
		compiled[r] = 1;
	}
	for (line = copy; line; line = next, lineno++) {
		if ((next = strchr(line, '\n')))
			*next++ = '\0';
		for (size_t r = 0; r < N_RULES; r++) {
			regmatch_t m;
			enum cat c = rules[r].cat;

			if (!compiled[r] || regexec(&re[r], line, 1, &m, 0) != 0)
				continue;
			if (++count[c] <= SRCCHECK_MAX_DETAIL)
				buf_printf(&detail[c], "%sline %d: %.*s", count[c] > 1 ? "; " : "",
				    lineno, (int)(m.rm_eo - m.rm_so > 60 ? 60 : m.rm_eo - m.rm_so),
				    line + m.rm_so);
		}
	}
	for (int c = 0; c < N_CAT; c++) {
		char name[64];
		int found = count[c] > 0 && (c != PRECISION || fp32_problem);

		snprintf(name, sizeof(name), "static:%s", cats[c].name);
		if (c == PRECISION && !fp32_problem && count[c])
			buf_printf(&detail[c], " (not an fp32 problem: informational)");
		if (count[c] > SRCCHECK_MAX_DETAIL)
			buf_printf(&detail[c], "; and %d more", count[c] - SRCCHECK_MAX_DETAIL);
		json_array_append_new(checks, json_pack("{s:s, s:b, s:s}", "name", name,
		    "passed", !found, "detail", count[c] ?
		    buf_cstr(&detail[c]) : "no findings"));
		if (found)
			add_flag(flags, cats[c].flag);
		/* The reason rides along in the detail of failed checks. */
		if (found) {
			json_t *last = json_array_get(checks, json_array_size(checks) - 1);
			char d[BUF_MAX_SMALL / 8];
			snprintf(d, sizeof(d), "%s (%s)", buf_cstr(&detail[c]), cats[c].why);
			json_object_set_new(last, "detail", json_string(d));
		}
	}
out:
	for (size_t r = 0; r < N_RULES; r++)
		if (compiled[r])
			regfree(&re[r]);
	for (int c = 0; c < N_CAT; c++)
		buf_free(&detail[c]);
	free(copy);
	return error;
}

int
srccheck_file(const char *path, int fp32_problem, json_t *checks, json_t *flags)
{
	enum srccheck_lang lang;
	struct buf b = BUF_INIT(SRCCHECK_MAX_BYTES);
	char chunk[65536];
	FILE *f;
	size_t n;
	int error = 0;

	if (srccheck_lang_of(path, &lang) < 0)
		return -EINVAL;
	if (!(f = fopen(path, "re")))
		return -errno;
	while ((n = fread(chunk, 1, sizeof(chunk), f)) > 0)
		if ((error = buf_add(&b, chunk, n)) < 0)
			break;
	fclose(f);
	if (error == 0)
		error = srccheck_text(buf_cstr(&b), b.len, lang, fp32_problem, checks, flags);
	buf_free(&b);
	return error == -ENOBUFS ? -EFBIG : error;
}
