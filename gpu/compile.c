/*
 * compile_batch(): hash, look up, then build the misses on a small pool of
 * threads, each build one sandbox_run() in its own scratch directory.
 */
#include "gpu/compile.h"

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <pthread.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "common/buf.h"
#include "common/clock.h"
#include "common/crypto.h"
#include "common/fsx.h"
#include "common/spawn.h"
#include "common/where.h"
#include "gpu/sandbox.h"

#define KEY_DOMAIN "kernelbot-compile-v1"
#define TOOL_PATH "/usr/local/cuda/bin:/usr/local/bin:/usr/bin:/bin"
#define ARCH_MAX 32
#define IDENTITY_TIMEOUT_MS 30000

static const char *const cudnn_libs[] = {
	"/usr/local/cuda/lib64/libcudnn.so", "/usr/local/cuda/lib/libcudnn.so",
	"/usr/lib/x86_64-linux-gnu/libcudnn.so", "/usr/lib/aarch64-linux-gnu/libcudnn.so",
	"/usr/lib64/libcudnn.so", NULL,
};

/* What a backend's builds depend on besides the source: found once per process. */
struct toolchain {
	int error;			/* -errno: unusable, why in `why` */
	char path[PATH_MAX];		/* the compiler */
	char id[CRYPTO_SHA256_HEX];	/* hash of version and target output */
	int cudnn;			/* link -lcudnn */
	char rpath[PATH_MAX + 16];	/* CUDA: "-rpath=LIBDIR", so the worker finds cuBLAS without ld.so.conf */
	char why[256];
};

static pthread_mutex_t tc_lock = PTHREAD_MUTEX_INITIALIZER;
static struct toolchain tc[2];
static int tc_done[2];

struct job {
	const char *cache_dir;
	const struct compile_req *req;
	struct compile_result *res;
	const struct toolchain *tc;
	unsigned char *src;
	size_t src_len;
	int todo;			/* a miss that this batch builds */
};

struct pool {
	struct job *jobs;
	size_t n, next;
	pthread_mutex_t lock;
};


/* Run a trusted host tool (the compiler's version query) and hash its output. */
static int
tool_output(const char *const *argv, struct crypto_sha256 *h)
{
	const char *envp[] = { "PATH=" TOOL_PATH, "LANG=C", NULL };
	struct spawn_opts o = SPAWN_OPTS_INIT;
	struct spawn_result r = { 0 };
	int error;

	o.argv = argv;
	o.envp = envp;
	o.timeout_ms = IDENTITY_TIMEOUT_MS;
	if ((error = spawn_run(&o, &r)) == 0 && r.status != 0)
		error = -EIO;
	if (error == 0) {
		crypto_sha256_add(h, r.out.data ? r.out.data : "", r.out.len);
		crypto_sha256_add(h, "\0", 1);
	}
	spawn_result_free(&r);
	return error;
}

static void
toolchain_find(enum compile_backend b, struct toolchain *t)
{
	struct crypto_sha256 h;
	unsigned char d[CRYPTO_SHA256_BYTES];
	const char *path = getenv("PATH");
	char *found = NULL, search[8192];
	int error;

	snprintf(search, sizeof(search), "%s:%s", TOOL_PATH, path ? path : "");
	if ((error = spawn_which(b == COMPILE_CUDA ? "nvcc" : "cc", search, &found)) < 0 ||
	    !realpath(found, t->path)) {
		t->error = -ENOENT;
		snprintf(t->why, sizeof(t->why), "%s not found (searched %s)",
		    b == COMPILE_CUDA ? "nvcc" : "cc", TOOL_PATH);
		free(found);
		return;
	}
	free(found);
	crypto_sha256_start(&h);
	crypto_sha256_add(&h, t->path, strlen(t->path) + 1);
	{
		const char *ver[] = { t->path, "--version", NULL };
		const char *native[] = { t->path, "-march=native", "-Q", "--help=target", NULL };
		if ((error = tool_output(ver, &h)) < 0 ||
		    (b == COMPILE_CPU && (error = tool_output(native, &h)) < 0)) {
			char why[sizeof(t->why)];
			t->error = error;
			snprintf(why, sizeof(why), "%s does not report its version "
			    "or target: %s", t->path, strerror(-error));
			memcpy(t->why, why, sizeof(why));
			return;
		}
	}
	if (b == COMPILE_CUDA) {
		char root[PATH_MAX], lib[PATH_MAX + 8], *slash;

		for (int i = 0; cudnn_libs[i]; i++)
			if (access(cudnn_libs[i], R_OK) == 0)
				t->cudnn = 1;
		/* .../cuda-X/bin/nvcc -> .../cuda-X/lib64 (or lib) */
		memcpy(root, t->path, sizeof(root));	/* both PATH_MAX, NUL-terminated */
		for (int up = 0; up < 2 && (slash = strrchr(root, '/')) && slash != root; up++)
			*slash = '\0';
		snprintf(lib, sizeof(lib), "%s/lib64", root);
		if (access(lib, R_OK) != 0)
			snprintf(lib, sizeof(lib), "%s/lib", root);
		if (access(lib, R_OK) == 0)
			snprintf(t->rpath, sizeof(t->rpath), "-rpath=%s", lib);
	}
	crypto_sha256_add(&h, t->rpath, strlen(t->rpath) + 1);
	crypto_sha256_add(&h, t->cudnn ? "cudnn" : "", t->cudnn ? 6 : 1);
	crypto_sha256_end(&h, d);
	crypto_hex(d, sizeof(d), t->id);
}

static const struct toolchain *
toolchain_get(enum compile_backend b)
{
	pthread_mutex_lock(&tc_lock);
	if (!tc_done[b]) {
		toolchain_find(b, &tc[b]);
		tc_done[b] = 1;
	}
	pthread_mutex_unlock(&tc_lock);
	return &tc[b];
}

/*
 * Where <dlpack/dlpack.h> comes from: $KERNELBOT_INCLUDE, else the system's
 * (Debian's libdlpack-dev), else include/ beside the binary (a device
 * bundle carries the header to GPU hosts that lack the package). "" when
 * the compiler's default search finds it.
 */
static pthread_once_t dlpack_once = PTHREAD_ONCE_INIT;
static char dlpack_flag[PATH_MAX + 16];

static void
dlpack_find(void)
{
	const char *env = where()->include;
	char exe[PATH_MAX], hdr[PATH_MAX + 32];
	ssize_t n;
	char *slash;

	if (env && *env) {
		snprintf(dlpack_flag, sizeof(dlpack_flag), "-I%s", env);
		return;
	}
	if (access("/usr/include/dlpack/dlpack.h", R_OK) == 0)
		return;
	if ((n = readlink("/proc/self/exe", exe, sizeof(exe) - 1)) <= 0)
		return;
	exe[n] = '\0';
	if ((slash = strrchr(exe, '/')))
		*slash = '\0';
	snprintf(hdr, sizeof(hdr), "%s/include/dlpack/dlpack.h", exe);
	if (access(hdr, R_OK) == 0)
		snprintf(dlpack_flag, sizeof(dlpack_flag), "-I%s/include", exe);
}

/* The argv of a build; flags (for the key) is the same with placeholders. */
static int
build_argv(const struct job *j, const char *src, const char *out, const char **argv,
    size_t max, char *arch_flag, size_t arch_len)
{
	size_t n = 0;

	argv[n++] = j->tc->path;
	pthread_once(&dlpack_once, dlpack_find);
	if (dlpack_flag[0])
		argv[n++] = dlpack_flag;
	if (j->req->backend == COMPILE_CUDA) {
		snprintf(arch_flag, arch_len, "-arch=%s", j->req->arch);
		argv[n++] = "-O3";
		argv[n++] = arch_flag;
		argv[n++] = "--shared";
		argv[n++] = "-Xcompiler";
		argv[n++] = "-fPIC";
		argv[n++] = "-o";
		argv[n++] = out;
		argv[n++] = src;
		argv[n++] = "-lcublas";
		argv[n++] = "-lcublasLt";
		if (j->tc->cudnn)
			argv[n++] = "-lcudnn";
		if (j->tc->rpath[0]) {
			argv[n++] = "-Xlinker";
			argv[n++] = j->tc->rpath;
		}
	} else {
		argv[n++] = "-O3";
		argv[n++] = "-march=native";
		argv[n++] = "-fopenmp";
		argv[n++] = "-fno-math-errno";
		argv[n++] = "-shared";
		argv[n++] = "-fPIC";
		argv[n++] = "-o";
		argv[n++] = out;
		argv[n++] = src;
		argv[n++] = "-lm";
	}
	argv[n] = NULL;
	return n < max ? 0 : -E2BIG;
}

int
compile_argv(enum compile_backend b, const char *arch, const char *src, const char *out,
    const char **argv, size_t max, char *arch_buf, size_t arch_len, char *err, size_t errlen)
{
	struct compile_req req = { src, b, arch, 0 };
	struct job j = { .req = &req, .tc = toolchain_get(b) };

	if (j.tc->error < 0) {
		snprintf(err, errlen, "%s", j.tc->why);
		return j.tc->error;
	}
	return build_argv(&j, src, out, argv, max, arch_buf, arch_len);
}

static int
valid_arch(const char *a)
{
	size_t i = 0;

	if (!a || (strncmp(a, "sm_", 3) && strncmp(a, "compute_", 8)))
		return 0;
	a = strchr(a, '_') + 1;
	while (a[i] >= '0' && a[i] <= '9')
		i++;
	return i > 0 && i < 5 && (!a[i] || (a[i] >= 'a' && a[i] <= 'z' && !a[i + 1]));
}

static int
read_source(const char *path, unsigned char **out, size_t *len)
{
	struct buf b = BUF_INIT(COMPILE_SOURCE_MAX);
	int error;

	if ((error = buf_read_file(&b, path)) < 0) {
		buf_free(&b);
		return error;
	}
	*out = (unsigned char *)buf_detach(&b, len);
	return 0;
}

static void
make_key(const struct job *j, char key[65])
{
	const char *argv[24];
	char arch_flag[ARCH_MAX + 8];
	struct crypto_sha256 h;
	unsigned char d[CRYPTO_SHA256_BYTES];

	build_argv(j, "SRC", "OUT", argv, 24, arch_flag, sizeof(arch_flag));
	crypto_sha256_start(&h);
	crypto_sha256_add(&h, KEY_DOMAIN, sizeof(KEY_DOMAIN));
	for (size_t i = 1; argv[i]; i++)	/* flags; the compiler is in the identity */
		crypto_sha256_add(&h, argv[i], strlen(argv[i]) + 1);
	crypto_sha256_add(&h, j->tc->id, sizeof(j->tc->id));
	crypto_sha256_add(&h, j->req->arch ? j->req->arch : "", j->req->arch ? strlen(j->req->arch) + 1 : 1);
	crypto_sha256_add(&h, j->src, j->src_len);
	crypto_sha256_end(&h, d);
	crypto_hex(d, sizeof(d), key);
}

static int
rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st, (void)flag, (void)ftw;
	remove(path);
	return 0;
}

static int
write_all(const char *path, const void *p, size_t n)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
	ssize_t w = 0;

	if (fd < 0)
		return -errno;
	while (n > 0 && (w = write(fd, p, n)) > 0) {
		p = (const char *)p + w;
		n -= (size_t)w;
	}
	close(fd);
	return n ? (w < 0 ? -errno : -EIO) : 0;
}


static void
set_log(struct compile_result *res, struct buf *log)
{
	free(res->log);
	res->log = buf_detach(log, NULL);
}

/*
 * "BUILD_DIR/kernel.cu:12: error" -> "kernel.cu:12: error": the build
 * directory is noise in error feedback, and differs on every build.
 */
static void
strip_dir(struct buf *log, const char *dir)
{
	size_t dl = strlen(dir), w = 0;
	char *p = log->data;

	if (!p || !dl)
		return;
	for (size_t r = 0; r < log->len;) {
		if (r + dl + 1 <= log->len && !memcmp(p + r, dir, dl) && p[r + dl] == '/') {
			r += dl + 1;
			continue;
		}
		p[w++] = p[r++];
	}
	buf_truncate(log, w);
}

/* Say what the sandbox lacked, for the build's log. */
static void
log_checks(struct buf *log, const json_t *checks)
{
	const json_t *c;
	size_t i;

	json_array_foreach(checks, i, c)
		if (!json_is_true(json_object_get(c, "passed")))
			buf_printf(log, "sandbox: %s: %s\n",
			    json_string_value(json_object_get(c, "name")),
			    json_string_value(json_object_get(c, "detail")));
}

static void
build_one(struct job *j)
{
	struct sandbox_opts so = SANDBOX_OPTS_INIT;
	struct spawn_opts o = SPAWN_OPTS_INIT;
	struct spawn_result r = { 0 };
	struct compile_result *res = j->res;
	struct buf log = BUF_INIT(COMPILE_LOG_MAX);
	char scratch[PATH_MAX], src[PATH_MAX + 16], out[PATH_MAX + 16], final[PATH_MAX];
	char arch_flag[ARCH_MAX + 8], tool_dir[PATH_MAX], *slash;
	const char *argv[24], *ro[3] = { NULL, NULL, NULL };
	json_t *checks = NULL;
	double t0 = clock_mono_s();
	int error, made = 0;

	snprintf(scratch, sizeof(scratch), "%s/tmp/build-XXXXXX", j->cache_dir);
	if (!(made = mkdtemp(scratch) != NULL)) {
		res->status = -errno;
		buf_printf(&log, "creating a build directory in %s/tmp: %s\n", j->cache_dir, strerror(errno));
		goto out;
	}
	snprintf(src, sizeof(src), "%s/kernel.%s", scratch, j->req->backend == COMPILE_CUDA ? "cu" : "c");
	snprintf(out, sizeof(out), "%s/kernel.so", scratch);
	snprintf(final, sizeof(final), "%s/kernels/%s.so", j->cache_dir, res->key);
	/* The bytes that were hashed are the bytes compiled. */
	if ((error = write_all(src, j->src, j->src_len)) < 0) {
		res->status = error;
		buf_printf(&log, "writing %s: %s\n", src, strerror(-error));
		goto out;
	}
	build_argv(j, src, out, argv, 24, arch_flag, sizeof(arch_flag));
	/* A compiler outside the system directories must be visible too. */
	snprintf(tool_dir, sizeof(tool_dir), "%s", j->tc->path);
	if ((slash = strrchr(tool_dir, '/')) && strncmp(tool_dir, "/usr/", 5) &&
	    strncmp(tool_dir, "/opt/", 5)) {
		*slash = '\0';
		ro[0] = tool_dir;
	}
	/* An include directory named by the environment must be visible too. */
	if (dlpack_flag[0])
		ro[ro[0] ? 1 : 0] = dlpack_flag + 2;
	so.profile = SANDBOX_COMPILER;
	so.scratch = scratch;
	so.ro_paths = ro;
	so.mem_bytes = COMPILE_MEM_BYTES;
	so.allow_degraded = where()->sandbox_allow_degraded;
	o.argv = argv;
	o.timeout_ms = (j->req->timeout_s > 0 ? j->req->timeout_s : COMPILE_DEFAULT_TIMEOUT_S) * 1000;
	o.out_max = COMPILE_LOG_MAX / 2;
	o.err_max = COMPILE_LOG_MAX / 2;
	error = sandbox_run(&so, &o, &r, &checks);
	if (error < 0) {
		res->status = error;
		buf_printf(&log, "the sandbox could not run %s: %s\n", j->tc->path, strerror(-error));
		log_checks(&log, checks);
		goto out;
	}
	buf_add_capped(&log, buf_cstr(&r.out), r.out.len);
	buf_add_capped(&log, buf_cstr(&r.err), r.err.len);
	strip_dir(&log, scratch);
	if (so.allow_degraded)
		log_checks(&log, checks);
	if (r.timed_out)
		buf_printf(&log, "\nkernelbot: the compiler timed out after %d s and was killed\n",
		    o.timeout_ms / 1000);
	if (r.status != 0) {
		res->status = r.status;
		goto out;
	}
	/* Ours, not the sandbox uid's, before it becomes visible in the cache. */
	if (lchown(out, geteuid(), getegid()) < 0 || chmod(out, 0755) < 0 ||
	    rename(out, final) < 0) {
		res->status = -errno;
		buf_printf(&log, "storing %s: %s\n", final, strerror(errno));
		goto out;
	}
	if (!(res->so_path = strdup(final)))
		res->status = -ENOMEM;
	else
		res->status = 0;
out:
	if (made)
		nftw(scratch, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
	set_log(res, &log);
	res->seconds = clock_mono_s() - t0;
	json_decref(checks);
	spawn_result_free(&r);
}

static void *
worker(void *arg)
{
	struct pool *p = arg;
	size_t i;

	for (;;) {
		pthread_mutex_lock(&p->lock);
		while (p->next < p->n && p->jobs[p->next].todo != 1)
			p->next++;
		i = p->next++;
		pthread_mutex_unlock(&p->lock);
		if (i >= p->n)
			return NULL;
		build_one(&p->jobs[i]);
	}
}

/* Look up one request; sets todo for a miss. */
static void
prepare(struct job *j)
{
	struct compile_result *res = j->res;
	struct buf log = BUF_INIT(4096);
	char final[PATH_MAX];
	struct stat st;
	double t0 = clock_mono_s();
	int error;

	if (j->req->backend == COMPILE_CUDA && !valid_arch(j->req->arch)) {
		res->status = -EINVAL;
		buf_printf(&log, "bad CUDA architecture '%s' (want sm_NN)\n",
		    j->req->arch ? j->req->arch : "(none)");
		goto out;
	}
	j->tc = toolchain_get(j->req->backend);
	if (j->tc->error < 0) {
		res->status = j->tc->error;
		buf_printf(&log, "%s\n", j->tc->why);
		goto out;
	}
	if ((error = read_source(j->req->source_path, &j->src, &j->src_len)) < 0) {
		res->status = error;
		buf_printf(&log, "reading %s: %s\n", j->req->source_path, error == -EFBIG ?
		    "larger than the source limit" : strerror(-error));
		goto out;
	}
	make_key(j, res->key);
	snprintf(final, sizeof(final), "%s/kernels/%s.so", j->cache_dir, res->key);
	if (stat(final, &st) == 0 && S_ISREG(st.st_mode)) {
		res->cached = 1;
		res->status = 0;
		if (!(res->so_path = strdup(final)))
			res->status = -ENOMEM;
	} else {
		j->todo = 1;
	}
out:
	set_log(res, &log);
	res->seconds = clock_mono_s() - t0;
}

int
compile_batch(const char *cache_dir, const struct compile_req *reqs, size_t n,
    int jobs, struct compile_result *results)
{
	struct pool p = { NULL, n, 0, PTHREAD_MUTEX_INITIALIZER };
	pthread_t threads[COMPILE_JOBS_MAX];
	char dir[PATH_MAX];
	int nthreads = 0, error = 0;
	size_t todo = 0;

	if (!cache_dir || cache_dir[0] != '/' || (n && (!reqs || !results)))
		return -EINVAL;
	if ((error = crypto_init()) < 0)
		return error;
	for (const char *sub = "kernels"; sub; sub = strcmp(sub, "kernels") ? NULL : "tmp") {
		if (snprintf(dir, sizeof(dir), "%s/%s", cache_dir, sub) >= (int)sizeof(dir))
			return -ENAMETOOLONG;
		if ((error = fsx_mkdir_p(dir, 0755)) < 0)
			return error;
	}
	if (!(p.jobs = calloc(n ? n : 1, sizeof(*p.jobs))))
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		memset(&results[i], 0, sizeof(results[i]));
		p.jobs[i] = (struct job){ cache_dir, &reqs[i], &results[i], NULL, NULL, 0, 0 };
		prepare(&p.jobs[i]);
	}
	/* One build per key: a later duplicate takes the first one's result. */
	for (size_t i = 0; i < n; i++)
		for (size_t k = 0; k < i && p.jobs[i].todo; k++)
			if (p.jobs[k].todo && !strcmp(results[k].key, results[i].key))
				p.jobs[i].todo = 2;
	for (size_t i = 0; i < n; i++)
		todo += p.jobs[i].todo == 1;
	if (jobs <= 0)
		jobs = (int)sysconf(_SC_NPROCESSORS_ONLN);
	if (jobs > COMPILE_JOBS_MAX)
		jobs = COMPILE_JOBS_MAX;
	if ((size_t)jobs > todo)
		jobs = (int)todo;
	for (size_t i = 0; i < n; i++)
		if (p.jobs[i].todo == 2)
			p.jobs[i].todo = -1;	/* not for the pool */
	for (; nthreads < jobs; nthreads++)
		if (pthread_create(&threads[nthreads], NULL, worker, &p) != 0)
			break;
	if (nthreads == 0 && todo)
		worker(&p);	/* no thread could start: build here */
	for (int i = 0; i < nthreads; i++)
		pthread_join(threads[i], NULL);
	for (size_t i = 0; i < n; i++) {
		if (p.jobs[i].todo != -1)
			continue;
		for (size_t k = 0; k < i; k++)
			if (p.jobs[k].todo == 1 && !strcmp(results[k].key, results[i].key)) {
				free(results[i].log);
				results[i].status = results[k].status;
				results[i].so_path = results[k].so_path ? strdup(results[k].so_path) : NULL;
				results[i].log = strdup(results[k].log ? results[k].log : "");
				results[i].cached = 1;
				if (results[k].so_path && !results[i].so_path)
					results[i].status = -ENOMEM;
				break;
			}
	}
	for (size_t i = 0; i < n; i++)
		free(p.jobs[i].src);
	free(p.jobs);
	return 0;
}

void
compile_result_free(struct compile_result *r)
{
	if (!r)
		return;
	free(r->so_path);
	free(r->log);
	r->so_path = r->log = NULL;
}

int
compile_default_cache_dir(char **out)
{
	const char *dir = where()->cache;
	struct passwd *pw;

	if (dir)
		return (*out = strdup(dir)) ? 0 : -ENOMEM;
	/* Told nothing: under the home of the user this runs as. */
	if (!(pw = getpwuid(geteuid())) || !pw->pw_dir || *pw->pw_dir != '/')
		return -ENOENT;
	return asprintf(out, "%s/.cache/kernelbot", pw->pw_dir) < 0 ? -ENOMEM : 0;
}
