/*
 * kernelbot __sandbox-check [--cuda]: run inside the sandbox, say what the
 * process can and cannot do, as JSON on stdout. A self-test for a new host,
 * above all a GPU host, in one command:
 *
 *   kernelbot sandbox-exec --profile candidate --gpu 0 --verbose \
 *       --scratch DIR -- kernelbot __sandbox-check --cuda
 *
 * With --cuda it initializes CUDA through the driver API, allocates, sets
 * and reads back device memory, then calls sandbox_lockdown() (as the
 * worker does before loading a candidate) and does it again: the driver
 * must work under the lockdown filter, and fork must not.
 * Exit status: 0 when everything held, 1 otherwise.
 */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli/cli.h"
#include "common/jsonx.h"
#include "gpu/sandbox.h"

#define CHECK_BYTES (64u << 20)

/* The driver API calls used, resolved at run time (CUresult is an int). */
struct cuda {
	void *lib;
	int (*init)(unsigned);
	int (*count)(int *);
	int (*get)(int *, int);
	int (*name)(char *, int, int);
	int (*retain)(void **, int);
	int (*set)(void *);
	int (*alloc)(unsigned long long *, size_t);
	int (*memset8)(unsigned long long, unsigned char, size_t);
	int (*dtoh)(void *, unsigned long long, size_t);
	int (*sync)(void);
	int (*mfree)(unsigned long long);
	int dev;
	void *ctx;
};

static int failures;

static void
report(json_t *arr, const char *name, int passed, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

static void
report(json_t *arr, const char *name, int passed, const char *fmt, ...)
{
	char detail[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(detail, sizeof(detail), fmt, ap);
	va_end(ap);
	failures += !passed;
	json_array_append_new(arr, json_pack("{s:s, s:b, s:s}", "name", name,
	    "passed", passed, "detail", detail));
}

static const char *
status_line(const char *key, char *out, size_t len)
{
	FILE *f = fopen("/proc/self/status", "re");
	char line[256];

	snprintf(out, len, "?");
	while (f && fgets(line, sizeof(line), f))
		if (!strncmp(line, key, strlen(key))) {
			snprintf(out, len, "%s", line + strlen(key) + 1 + strspn(line + strlen(key) + 1, " \t"));
			out[strcspn(out, "\n")] = '\0';
		}
	if (f)
		fclose(f);
	return out;
}

static int
try_open(const char *path, int flags)
{
	int fd = open(path, flags | O_CLOEXEC, 0644);

	if (fd < 0)
		return -errno;
	close(fd);
	return 0;
}

static int
cuda_load(struct cuda *c, char *why, size_t len)
{
	memset(c, 0, sizeof(*c));
	if (!(c->lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL))) {
		snprintf(why, len, "libcuda.so.1: %s", dlerror());
		return -1;
	}
#define SYM(field, name) (*(void **)(&c->field) = dlsym(c->lib, name))
	if (!SYM(init, "cuInit") || !SYM(count, "cuDeviceGetCount") ||
	    !SYM(get, "cuDeviceGet") || !SYM(name, "cuDeviceGetName") ||
	    !SYM(retain, "cuDevicePrimaryCtxRetain") || !SYM(set, "cuCtxSetCurrent") ||
	    !SYM(alloc, "cuMemAlloc_v2") || !SYM(memset8, "cuMemsetD8_v2") ||
	    !SYM(dtoh, "cuMemcpyDtoH_v2") || !SYM(sync, "cuCtxSynchronize") ||
	    !SYM(mfree, "cuMemFree_v2")) {
		snprintf(why, len, "libcuda.so.1 lacks a driver API symbol");
		return -1;
	}
#undef SYM
	return 0;
}

/* Allocate, set and read back device memory; 0 or the failing CUresult. */
static int
cuda_roundtrip(struct cuda *c, unsigned char value, char *why, size_t len)
{
	unsigned long long d = 0;
	uint32_t word = 0, want = value * 0x01010101u;
	int rc;

	if ((rc = c->alloc(&d, CHECK_BYTES)) || (rc = c->memset8(d, value, CHECK_BYTES)) ||
	    (rc = c->sync()) || (rc = c->dtoh(&word, d + CHECK_BYTES - 4, 4))) {
		snprintf(why, len, "CUDA error %d", rc);
		if (d)
			c->mfree(d);
		return rc;
	}
	c->mfree(d);
	if (word != want) {
		snprintf(why, len, "read back %08x, wrote %08x", word, want);
		return -1;
	}
	snprintf(why, len, "64 MiB allocated, set, read back");
	return 0;
}

static void
check_cuda(json_t *arr)
{
	struct cuda c;
	char why[256], name[128] = "";
	int n = 0, rc;
	pid_t pid;

	if (cuda_load(&c, why, sizeof(why)) < 0) {
		report(arr, "cuda_init", 0, "%s", why);
		return;
	}
	if ((rc = c.init(0)) || (rc = c.count(&n)) || n < 1) {
		report(arr, "cuda_init", 0, "cuInit/cuDeviceGetCount: error %d, %d devices "
		    "(are /dev/nvidia* bound? see the gpu check)", rc, n);
		return;
	}
	c.get(&c.dev, 0);
	c.name(name, sizeof(name), c.dev);
	report(arr, "cuda_init", n == 1, "%d device(s) visible, device 0 is %s", n, name);
	if ((rc = c.retain(&c.ctx, c.dev)) || (rc = c.set(c.ctx))) {
		report(arr, "cuda_context", 0, "primary context: error %d", rc);
		return;
	}
	rc = cuda_roundtrip(&c, 0x5a, why, sizeof(why));
	report(arr, "cuda_memory", rc == 0, "%s", why);

	rc = sandbox_lockdown();
	report(arr, "lockdown", rc == 0, "%s", rc ? strerror(-rc) : "loaded on every thread");
	rc = cuda_roundtrip(&c, 0xa5, why, sizeof(why));
	report(arr, "cuda_after_lockdown", rc == 0, "%s", why);
	if ((pid = fork()) == 0)
		_exit(0);
	if (pid > 0)
		waitpid(pid, NULL, 0);
	report(arr, "fork_after_lockdown", pid < 0, "%s", pid < 0 ? strerror(errno) : "fork worked");
}

int
cmd_sandbox_check(int argc, char **argv)
{
	json_t *arr = json_array(), *doc;
	int cuda = argc > 1 && !strcmp(argv[1], "--cuda"), fd, rc;
	char buf[128], path[4096];
	const char *home = getenv("HOME");

	if (argc > 2 || (argc == 2 && !cuda))
		return cli_usage_error("__sandbox-check", "takes only --cuda");
	report(arr, "capabilities", !strcmp(status_line("CapEff:", buf, sizeof(buf)),
	    "0000000000000000"), "CapEff %s", buf);
	report(arr, "no_new_privs", prctl(PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0) == 1, "%s",
	    status_line("NoNewPrivs:", buf, sizeof(buf)));
	report(arr, "seccomp", !strcmp(status_line("Seccomp:", buf, sizeof(buf)), "2"),
	    "mode %s", buf);
	fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	report(arr, "no_inet_socket", fd < 0, "%s", fd < 0 ? strerror(errno) : "socket(AF_INET) worked");
	if (fd >= 0)
		close(fd);
	rc = try_open("/root", O_RDONLY);
	report(arr, "root_hidden", rc < 0, "%s", rc < 0 ? strerror(-rc) : "/root is readable");
	rc = try_open("/usr/.kernelbot-check", O_WRONLY | O_CREAT);
	report(arr, "usr_read_only", rc < 0, "%s", rc < 0 ? strerror(-rc) : "/usr is writable");
	snprintf(path, sizeof(path), "%s/.kernelbot-check", home ? home : "/nonexistent");
	rc = try_open(path, O_WRONLY | O_CREAT);
	report(arr, "scratch_writable", rc == 0, "%s: %s", path, rc ? strerror(-rc) : "ok");
	unlink(path);
	report(arr, "uid", getuid() != 0, "uid %d, gid %d", (int)getuid(), (int)getgid());
	if (cuda)
		check_cuda(arr);

	doc = json_pack("{s:o, s:b}", "checks", arr, "passed", failures == 0);
	json_dumpf(doc, stdout, JSON_INDENT(2));
	printf("\n");
	json_decref(doc);
	return failures ? 1 : 0;
}
