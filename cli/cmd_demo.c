/*
 * kernelbot demo [--examples DIR] [--dir DIR] [--timeout SECONDS]
 *                [--problem FILE]...
 *
 * The whole job on the embedded defaults (docs/design.md, "The embedded
 * defaults"), on
 * examples/: a git repository made from examples/repo (first commit), then
 * examples/push laid over it (the commit that changes two modules); a
 * server configuration with the local forge, a data directory, local
 * runners (`runners: auto`: CUDA where there is a GPU, else the CPU) and a
 * webhook secret; `kernelbot serve` started on it; a signed GitHub push
 * webhook for the second commit; a wait for the job in the store; then the
 * path of each pull request's markdown (DIR/forge/prs/SLUG.md) and its
 * speedup table, or the status of a module that got no pull request.
 * --problem adds a KernelBench-format problem (a development problem, say)
 * to the pushed commit as models/NAME.py, listed in .kernelbot.yml, so the
 * same job optimizes it beside the examples' two modules. serve
 * is stopped at the end. Exit 0 when the job is done, 1 when it failed or
 * did not finish in time (serve's log is DIR/serve.log).
 *
 * Processes (git, cp, serve) go through common/spawn.h; serve runs on a
 * thread of its own inside spawn_run() and is stopped with SIGTERM to the
 * pid its child_setup hook reports over a pipe.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cli/cli.h"
#include "store/store.h"
#include "common/clock.h"
#include "common/crypto.h"
#include "common/http.h"
#include "common/jsonx.h"
#include "common/spawn.h"

#define DEMO_TIMEOUT_S 600
#define DEMO_REPO "demo/models"
#define DEMO_GIT_TIMEOUT_MS 60000
#define DEMO_SMALL_CPUS 4	/* up to this many online CPUs, one OpenMP thread by default */
#define DEMO_MAX_PROBLEMS 8

static const char demo_usage[] =
    "usage: kernelbot demo [--examples DIR] [--dir DIR] [--timeout SECONDS]\n"
    "                      [--problem FILE]...\n"
    "\n"
    "Builds a sample repository from examples/, starts `kernelbot serve` with the\n"
    "local forge and local runners, sends a signed push webhook for a commit that\n"
    "changes two modules, waits, and prints each pull request's markdown file and\n"
    "speedup table. Exit 0 when the job is done, 1 when it failed or timed out,\n"
    "2 for a usage error. Options [default]:\n"
    "  --examples DIR          a folder with repo/, push/ and push.message\n"
    "                          [./examples, else PREFIX/share/kernelbot/examples]\n"
    "  --dir DIR               a new directory that keeps it all\n"
    "                          [a new /tmp/kernelbot-demo.XXXXXX]\n"
    "  --timeout SECONDS       how long to wait for the job, 10 to 86400 [600]\n"
    "  --problem FILE          add a KernelBench-format problem to the pushed\n"
    "                          commit as models/NAME.py (NAME: the file's name\n"
    "                          without a leading NN_); repeatable, at most 8\n"
    "docs/commands/demo.md.\n";

struct demo {
	char dir[PATH_MAX];
	char examples[PATH_MAX];
	char self[PATH_MAX];
	char path_env[4096];
	char home_env[PATH_MAX + 8];
	char secret[65];
	int port;
	char problems[DEMO_MAX_PROBLEMS][PATH_MAX];
	int n_problems;
	/* serve */
	pthread_t thread;
	int started;
	int pid_pipe[2];
	pid_t serve_pid;
	struct spawn_result serve_res;
	int serve_rc;
	const char *serve_argv[6];
	const char *serve_envp[32];
};


static int
is_dir(const char *p)
{
	struct stat st;

	return stat(p, &st) == 0 && S_ISDIR(st.st_mode);
}

/* Run a short tool (git, cp) with a small, explicit environment. */
static int
run(struct demo *d, const char *cwd, const char *const *argv)
{
	const char *envp[] = { d->path_env, d->home_env, "GIT_CONFIG_NOSYSTEM=1", "LC_ALL=C", NULL };
	struct spawn_opts o = SPAWN_OPTS_INIT;
	struct spawn_result r;
	int error;

	o.argv = argv;
	o.envp = envp;
	o.cwd = cwd;
	o.search_path = 1;
	o.timeout_ms = DEMO_GIT_TIMEOUT_MS;
	if ((error = spawn_run(&o, &r)) < 0) {
		fprintf(stderr, "kernelbot demo: %s: %s\n", argv[0], strerror(-error));
		return error;
	}
	if (r.status != 0) {
		fprintf(stderr, "kernelbot demo: %s %s failed (exit %d): %s\n", argv[0], argv[1],
		    r.status, buf_cstr(&r.err));
		error = -EIO;
	}
	spawn_result_free(&r);
	return error;
}

static int
write_text(const char *path, const char *text, mode_t mode)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
	size_t len = strlen(text);
	int error = 0;

	if (fd < 0)
		return -errno;
	if (write(fd, text, len) != (ssize_t)len)
		error = -EIO;
	if (close(fd) < 0 && error == 0)
		error = -errno;
	return error;
}

static int
git_commit(struct demo *d, const char *repo, const char *msgfile)
{
	const char *add[] = { "git", "add", "-A", NULL };
	const char *commit[] = { "git", "-c", "user.name=kernelbot demo", "-c",
		"user.email=demo@kernelbot.invalid", "commit", "-q", "-F", msgfile, NULL };
	int error;

	if ((error = run(d, repo, add)) < 0)
		return error;
	return run(d, repo, commit);
}

static int
git_head(struct demo *d, const char *repo, const char *rev, char out[41])
{
	const char *argv[] = { "git", "rev-parse", rev, NULL };
	const char *envp[] = { d->path_env, d->home_env, "GIT_CONFIG_NOSYSTEM=1", NULL };
	struct spawn_opts o = SPAWN_OPTS_INIT;
	struct spawn_result r;
	int error;

	o.argv = argv;
	o.envp = envp;
	o.cwd = repo;
	o.search_path = 1;
	o.timeout_ms = DEMO_GIT_TIMEOUT_MS;
	if ((error = spawn_run(&o, &r)) < 0)
		return error;
	if (r.status != 0 || r.out.len < 40) {
		spawn_result_free(&r);
		return -EIO;
	}
	memcpy(out, r.out.data, 40);
	out[40] = '\0';
	spawn_result_free(&r);
	return 0;
}

static int
has_suffix(const char *s, const char *suffix)
{
	size_t n = strlen(s), m = strlen(suffix);

	return n >= m && !strcmp(s + n - m, suffix);
}

/*
 * models/NAME.py for a --problem FILE: the file's name without a leading
 * "NN_" (a development problem's number), so it is a Python module name.
 */
static int
problem_name(const char *file, char *name, size_t len)
{
	const char *base = strrchr(file, '/'), *p;

	base = base ? base + 1 : file;
	for (p = base; *p >= '0' && *p <= '9'; p++)
		;
	if (p > base && *p == '_')
		base = p + 1;
	if (!has_suffix(base, ".py") || strlen(base) <= 3 || strchr(base, '-') ||
	    (*base >= '0' && *base <= '9'))
		return -EINVAL;
	if (snprintf(name, len, "%s", base) >= (int)len)
		return -ENAMETOOLONG;
	return 0;
}

/*
 * The --problem files into the pushed tree: copied to models/, and each
 * listed in .kernelbot.yml's modules (after the last "  - path:" line).
 */
static int
add_problems(struct demo *d, const char *repo)
{
	char yml[PATH_MAX + 32], dst[PATH_MAX + 288], name[256];
	struct buf in = BUF_INIT(1 << 20), b = BUF_INIT(1 << 20);
	const char *text, *last = NULL, *p, *eol;
	size_t len;
	int error = 0;

	if (d->n_problems == 0)
		return 0;
	snprintf(yml, sizeof(yml), "%s/.kernelbot.yml", repo);
	if ((error = buf_read_file(&in, yml)) < 0) {
		fprintf(stderr, "kernelbot demo: %s: %s\n", yml, strerror(-error));
		return error;
	}
	text = p = buf_cstr(&in);
	len = in.len;
	while ((p = strstr(p, "\n  - path: "))) {
		last = p + 1;
		p++;
	}
	if (!last || !(eol = strchr(last, '\n'))) {
		fprintf(stderr, "kernelbot demo: %s: no modules list to extend\n", yml);
		error = -EINVAL;
		goto out;
	}
	if ((error = buf_add(&b, text, (size_t)(eol + 1 - text))) < 0)
		goto out;
	for (int i = 0; i < d->n_problems; i++) {
		problem_name(d->problems[i], name, sizeof(name));
		snprintf(dst, sizeof(dst), "%s/models/%s", repo, name);
		if (access(dst, F_OK) == 0) {
			fprintf(stderr, "kernelbot demo: --problem %s: models/%s exists in the examples\n",
			    d->problems[i], name);
			error = -EEXIST;
			goto out;
		}
		const char *cp[] = { "cp", d->problems[i], dst, NULL };
		if ((error = run(d, d->dir, cp)) < 0)
			goto out;
		if ((error = buf_printf(&b, "  - path: models/%s\n", name)) < 0)
			goto out;
	}
	if ((error = buf_add(&b, eol + 1, len - (size_t)(eol + 1 - text))) == 0)
		error = write_text(yml, buf_cstr(&b), 0644);
out:
	buf_free(&in);
	buf_free(&b);
	return error;
}

/* The sample repository: examples/repo committed, then examples/push over it. */
static int
make_repo(struct demo *d, char before[41], char after[41])
{
	char repo[PATH_MAX + 8], src[PATH_MAX + 16], msg[PATH_MAX + 32];
	const char *init[] = { "git", "init", "-q", "-b", "main", NULL };
	int error = 0;

	snprintf(repo, sizeof(repo), "%s/repo", d->dir);
	snprintf(src, sizeof(src), "%s/repo/.", d->examples);
	const char *cp1[] = { "cp", "-R", src, repo, NULL };
	if (mkdir(repo, 0755) < 0)
		return -errno;
	if ((error = run(d, d->dir, cp1)) < 0 || (error = run(d, repo, init)) < 0)
		return error;
	snprintf(msg, sizeof(msg), "%s/initial.message", d->dir);
	if ((error = write_text(msg, "models: the MLP block, RMSNorm and attention softmax\n", 0644)) < 0 ||
	    (error = git_commit(d, repo, msg)) < 0 || (error = git_head(d, repo, "HEAD", before)) < 0)
		return error;
	snprintf(src, sizeof(src), "%s/push/.", d->examples);
	const char *cp2[] = { "cp", "-R", src, repo, NULL };
	snprintf(msg, sizeof(msg), "%s/push.message", d->examples);
	if ((error = run(d, d->dir, cp2)) < 0 || (error = add_problems(d, repo)) < 0 ||
	    (error = git_commit(d, repo, msg)) < 0 ||
	    (error = git_head(d, repo, "HEAD", after)) < 0)
		return error;
	return 0;
}

static int
free_port(void)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t len = sizeof(sa);
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), port = -1;

	if (fd < 0)
		return -1;
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0 &&
	    getsockname(fd, (struct sockaddr *)&sa, &len) == 0)
		port = ntohs(sa.sin_port);
	close(fd);
	return port;
}

static int
write_config(struct demo *d)
{
	unsigned char raw[32];
	char path[PATH_MAX + 32], text[6 * PATH_MAX + 1024];
	int error;

	crypto_random(raw, sizeof(raw));
	crypto_hex(raw, sizeof(raw), d->secret);
	snprintf(path, sizeof(path), "%s/webhook.secret", d->dir);
	if ((error = write_text(path, d->secret, 0600)) < 0)
		return error;
	snprintf(text, sizeof(text),
	    "# Written by `kernelbot demo`: the embedded defaults (docs/design.md).\n"
	    "listen: 127.0.0.1:%d\n"
	    "data_dir: %s/data\n"
	    "log_file: %s/serve.log\n"
	    "log_level: info\n"
	    "allow_repos: [\"%s\"]\n"
	    "runners: auto\n"
	    "budgets: { candidates: 8, wall_minutes: 2 }\n"
	    "forges:\n"
	    "  github:\n"
	    "    driver: local\n"
	    "    webhook_secret_file: %s/webhook.secret\n"
	    "    out_dir: %s/forge\n"
	    "    bare_repo: %s/forge.git\n",
	    d->port, d->dir, d->dir, DEMO_REPO, d->dir, d->dir, d->dir);
	snprintf(path, sizeof(path), "%s/kernelbot.yml", d->dir);
	return write_text(path, text, 0600);
}

/* In serve's child, before exec: tell the parent our pid over fd 3. */
static int
report_pid(void *arg)
{
	pid_t pid = getpid();

	(void)arg;
	if (write(3, &pid, sizeof(pid)) != (ssize_t)sizeof(pid))
		return EIO;
	close(3);
	return 0;
}

static void *
serve_thread(void *arg)
{
	struct demo *d = arg;
	struct spawn_opts o = SPAWN_OPTS_INIT;

	o.argv = d->serve_argv;
	o.envp = d->serve_envp;
	o.cwd = d->dir;
	o.timeout_ms = 0;
	o.grace_ms = 15000;
	o.out_max = 1 << 16;
	o.err_max = 1 << 16;
	o.pass_fds = &d->pid_pipe[1];
	o.n_pass_fds = 1;
	o.child_setup = report_pid;
	d->serve_rc = spawn_run(&o, &d->serve_res);
	/* a serve that never started: the reader in start_serve() gets EOF */
	close(d->pid_pipe[1]);
	return NULL;
}

static int
start_serve(struct demo *d)
{
	static char cfg[PATH_MAX + 32];
	/* LD_LIBRARY_PATH: a device bundle's libraries (make device-bundle) */
	/* the thread settings: what a PR's reproduce command repeats (gpu/evalenv.h) */
	const char *keep[] = { "PATH=", "HOME=", "LANG=", "LD_LIBRARY_PATH=", "KERNELBOT_",
		"CUDA_VISIBLE_DEVICES=", "OMP_NUM_THREADS=", "OMP_PROC_BIND=", "OMP_PLACES=",
		"MKL_NUM_THREADS=" };
	extern char **environ;
	size_t n = 0;

	snprintf(cfg, sizeof(cfg), "%s/kernelbot.yml", d->dir);
	d->serve_argv[0] = d->self;
	d->serve_argv[1] = "serve";
	d->serve_argv[2] = "--config";
	d->serve_argv[3] = cfg;
	d->serve_argv[4] = NULL;
	/* serve's environment: what finding the toolchain needs, no secrets */
	for (char **e = environ; *e && n < sizeof(d->serve_envp) / sizeof(*d->serve_envp) - 2; e++)
		for (size_t k = 0; k < sizeof(keep) / sizeof(*keep); k++)
			if (!strncmp(*e, keep[k], strlen(keep[k]))) {
				d->serve_envp[n++] = *e;
				break;
			}
	/*
	 * One OpenMP thread on a small machine unless told otherwise: with as
	 * many threads as cores, a parallel region of a CPU kernel (and of
	 * eager PyTorch) waits milliseconds whenever another process holds a
	 * core, and the timings say nothing about the kernels.
	 */
	if (!getenv("OMP_NUM_THREADS") && sysconf(_SC_NPROCESSORS_ONLN) <= DEMO_SMALL_CPUS) {
		d->serve_envp[n++] = "OMP_NUM_THREADS=1";
		printf("OMP_NUM_THREADS=1 (%ld CPUs; set OMP_NUM_THREADS to choose)\n",
		    sysconf(_SC_NPROCESSORS_ONLN));
	}
	d->serve_envp[n] = NULL;
	if (pipe2(d->pid_pipe, O_CLOEXEC) < 0)
		return -errno;
	if (pthread_create(&d->thread, NULL, serve_thread, d) != 0)
		return -EAGAIN;
	d->started = 1;
	if (read(d->pid_pipe[0], &d->serve_pid, sizeof(d->serve_pid)) != (ssize_t)sizeof(d->serve_pid))
		d->serve_pid = 0;
	return d->serve_pid > 0 ? 0 : -ECHILD;
}

static void
stop_serve(struct demo *d)
{
	if (!d->started)
		return;
	if (d->serve_pid > 0)
		kill(d->serve_pid, SIGTERM);
	pthread_join(d->thread, NULL);
	if (d->serve_rc == 0)
		spawn_result_free(&d->serve_res);
	close(d->pid_pipe[0]);
	d->started = 0;
}

static int
serve_alive(struct demo *d)
{
	return d->serve_pid > 0 && kill(d->serve_pid, 0) == 0;
}

/* GET /healthz until it answers 200 (serve listening and its store writable). */
static int
wait_healthy(struct demo *d, double deadline)
{
	char url[64];

	snprintf(url, sizeof(url), "http://127.0.0.1:%d/healthz", d->port);
	while (clock_mono_s() < deadline && serve_alive(d)) {
		struct http_request rq = HTTP_REQUEST_INIT;
		struct http_response rs = { 0 };
		char err[256];

		rq.url = url;
		rq.timeout_ms = 2000;
		if (http_do(&rq, &rs, err, sizeof(err)) == 0 && rs.status == 200) {
			http_response_free(&rs);
			return 0;
		}
		http_response_free(&rs);
		usleep(100 * 1000);
	}
	return -ETIMEDOUT;
}

/* A GitHub push delivery for before..after, signed as GitHub signs it. */
static int
send_push(struct demo *d, const char *before, const char *after, int64_t *job)
{
	char url[64], sig[80], hdr_sig[128], hdr_id[96], clone[PATH_MAX + 16], err[512], hex[65];
	unsigned char mac[CRYPTO_SHA256_BYTES], id[16];
	struct http_request rq = HTTP_REQUEST_INIT;
	struct http_response rs = { 0 };
	struct buf body = BUF_INIT(1 << 20);
	json_t *p, *reply = NULL;
	int error;

	snprintf(clone, sizeof(clone), "%s/repo", d->dir);
	p = json_pack("{s:s,s:s,s:s,s:{s:s,s:s,s:{s:s,s:s},s:s,s:s},s:{s:s,s:s},s:{s:s},s:b,s:b,s:b,"
	    "s:{s:s,s:s}}",
	    "ref", "refs/heads/main", "before", before, "after", after,
	    "repository", "name", "models", "full_name", DEMO_REPO, "owner", "name", "demo", "login", "demo",
	    "clone_url", clone, "default_branch", "main",
	    "pusher", "name", "demo", "email", "demo@kernelbot.invalid",
	    "sender", "login", "demo", "created", 0, "deleted", 0, "forced", 0,
	    "head_commit", "id", after, "message", "models: two modules changed");
	if (!p)
		return -ENOMEM;
	error = jsonx_dump(p, JSON_COMPACT, &body);
	json_decref(p);
	if (error < 0)
		goto out;
	crypto_hmac_sha256(d->secret, strlen(d->secret), body.data, body.len, mac);
	crypto_hex(mac, sizeof(mac), hex);
	snprintf(sig, sizeof(sig), "sha256=%s", hex);
	crypto_random(id, sizeof(id));
	crypto_hex(id, sizeof(id), hex);
	snprintf(hdr_sig, sizeof(hdr_sig), "X-Hub-Signature-256: %s", sig);
	snprintf(hdr_id, sizeof(hdr_id), "X-GitHub-Delivery: demo-%s", hex);
	const char *headers[] = { "Content-Type: application/json", "X-GitHub-Event: push", hdr_id, hdr_sig, NULL };
	snprintf(url, sizeof(url), "http://127.0.0.1:%d/webhooks/github", d->port);
	rq.method = "POST";
	rq.url = url;
	rq.headers = headers;
	rq.body = body.data;
	rq.body_len = body.len;
	if ((error = http_do(&rq, &rs, err, sizeof(err))) < 0) {
		fprintf(stderr, "kernelbot demo: webhook: %s\n", err);
		goto out;
	}
	if (rs.status != 202 || jsonx_parse(buf_cstr(&rs.body), rs.body.len, &reply, err, sizeof(err)) < 0 ||
	    (*job = jsonx_int(reply, "job", 0)) <= 0) {
		fprintf(stderr, "kernelbot demo: webhook answered %ld: %s\n", rs.status, buf_cstr(&rs.body));
		error = -EPROTO;
	}
out:
	json_decref(reply);
	http_response_free(&rs);
	buf_free(&body);
	return error;
}

/* Poll the job's state in the store until done or failed. */
static int
wait_job(struct demo *d, int64_t id, double deadline, char *state, size_t statelen)
{
	char data[PATH_MAX + 8];
	double last = 0;

	snprintf(data, sizeof(data), "%s/data", d->dir);
	while (clock_mono_s() < deadline) {
		struct store *s = NULL;
		struct store_job j = { 0 };

		if (store_open(data, STORE_OPEN_EXISTING, &s) == 0 && store_job_get(s, id, &j) == 0) {
			snprintf(state, statelen, "%s", j.state ? j.state : "?");
			store_job_free(&j);
		}
		store_close(s);
		if (!strcmp(state, STORE_JOB_DONE) || !strcmp(state, STORE_JOB_FAILED))
			return 0;
		if (!serve_alive(d)) {
			fprintf(stderr, "kernelbot demo: serve exited; see %s/serve.log\n", d->dir);
			return -ECHILD;
		}
		if (clock_mono_s() - last >= 15) {
			fprintf(stderr, "kernelbot demo: job %lld %s ...\n", (long long)id, state);
			last = clock_mono_s();
		}
		sleep(1);
	}
	return -ETIMEDOUT;
}

/* The "### Speedup" section of a PR's markdown, up to the next heading. */
static void
print_table(const char *md)
{
	FILE *f = fopen(md, "re");
	char line[8192];
	int in = 0;

	if (!f)
		return;
	while (fgets(line, sizeof(line), f)) {
		if (!strncmp(line, "### Speedup", 11)) {
			in = 1;
			continue;
		}
		if (in && !strncmp(line, "###", 3))
			break;
		if (in && line[0] == '|')
			fputs(line, stdout);
	}
	fclose(f);
}

/* Every PR the local forge wrote, and every status of the pushed commit. */
static int
print_results(struct demo *d, const char *after)
{
	char path[PATH_MAX + 64], err[256];
	struct dirent *e;
	DIR *dir;
	int prs = 0;
	json_t *st = NULL, *v;
	size_t i;

	snprintf(path, sizeof(path), "%s/forge/prs", d->dir);
	if ((dir = opendir(path))) {
		while ((e = readdir(dir))) {
			if (!has_suffix(e->d_name, ".md"))
				continue;
			snprintf(path, sizeof(path), "%s/forge/prs/%s", d->dir, e->d_name);
			printf("\nPull request: %s\n", path);
			print_table(path);
			prs++;
		}
		closedir(dir);
	}
	snprintf(path, sizeof(path), "%s/forge/statuses/%s.json", d->dir, after);
	if (jsonx_load_file(path, 1 << 20, &st, err, sizeof(err)) == 0) {
		printf("\nStatuses of %.12s:\n", after);
		json_array_foreach(json_is_array(st) ? st : json_object_get(st, "statuses"), i, v)
			printf("  %s: %s: %s\n", jsonx_str(v, "context", "?"), jsonx_str(v, "state", "?"),
			    jsonx_str(v, "description", ""));
		json_decref(st);
	}
	return prs;
}

static int
find_examples(struct demo *d, const char *arg)
{
	char probe[PATH_MAX + 16];
	const char *cands[] = { arg, "examples", KB_DATADIR "/examples", NULL };

	for (size_t i = arg ? 0 : 1; cands[i]; i++) {
		snprintf(probe, sizeof(probe), "%s/repo", cands[i]);
		if (is_dir(probe) && realpath(cands[i], d->examples))
			return 0;
		if (arg)
			break;
	}
	return -ENOENT;
}

int
cmd_demo(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "examples", required_argument, NULL, 'e' },
		{ "dir", required_argument, NULL, 'd' },
		{ "timeout", required_argument, NULL, 't' },
		{ "problem", required_argument, NULL, 'p' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	static struct demo d;
	const char *examples = NULL, *dir = NULL;
	char before[41], after[41], state[32] = "queued";
	long timeout = DEMO_TIMEOUT_S;
	double t0 = clock_mono_s();
	int64_t job = 0;
	int c, rc = 1, error, prs;
	ssize_t n;

	optind = 1;
	while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		switch (c) {
		case 'e': examples = optarg; break;
		case 'd': dir = optarg; break;
		case 't': {
			char *end;

			timeout = strtol(optarg, &end, 10);
			if (*end || timeout < 10 || timeout > 86400)
				return cli_usage_error("demo", "--timeout: seconds from 10 to 86400");
			break;
		}
		case 'p': {
			char name[256];

			if (d.n_problems == DEMO_MAX_PROBLEMS)
				return cli_usage_error("demo", "--problem: at most %d", DEMO_MAX_PROBLEMS);
			if (access(optarg, R_OK) < 0 || !realpath(optarg, d.problems[d.n_problems]))
				return cli_usage_error("demo", "--problem %s: %s", optarg, strerror(errno));
			if (problem_name(optarg, name, sizeof(name)) < 0)
				return cli_usage_error("demo", "--problem %s: not a NAME.py or NN_NAME.py "
				    "file with a Python module name", optarg);
			d.n_problems++;
			break;
		}
		case 'h':
			fputs(demo_usage, stdout);
			return 0;
		default:
			fputs(demo_usage, stderr);
			return EXIT_USAGE;
		}
	}
	if (optind != argc) {
		fputs(demo_usage, stderr);
		return EXIT_USAGE;
	}
	if (find_examples(&d, examples) < 0)
		return cli_usage_error("demo", "%s: no examples (a folder with repo/ and push/); "
		    "run from kernelbot's source tree or pass --examples", examples ? examples : "examples");
	if (dir) {
		if (mkdir(dir, 0700) < 0)
			return cli_usage_error("demo", "--dir %s: %s (give a new directory)", dir, strerror(errno));
		if (!realpath(dir, d.dir))
			return cli_usage_error("demo", "--dir %s: %s", dir, strerror(errno));
	} else {
		snprintf(d.dir, sizeof(d.dir), "/tmp/kernelbot-demo.XXXXXX");
		if (!mkdtemp(d.dir)) {
			fprintf(stderr, "kernelbot demo: mkdtemp: %s\n", strerror(errno));
			return 1;
		}
	}
	if ((n = readlink("/proc/self/exe", d.self, sizeof(d.self) - 1)) <= 0) {
		fprintf(stderr, "kernelbot demo: cannot find this binary: %s\n", strerror(errno));
		return 1;
	}
	d.self[n] = '\0';
	snprintf(d.path_env, sizeof(d.path_env), "PATH=%s",
	    getenv("PATH") ? getenv("PATH") : "/usr/local/bin:/usr/bin:/bin");
	snprintf(d.home_env, sizeof(d.home_env), "HOME=%s", d.dir);

	printf("kernelbot demo in %s\n", d.dir);
	if ((error = make_repo(&d, before, after)) < 0)
		goto out;
	printf("repository %s/repo: %.12s -> %.12s (two modules changed, %d added)\n", d.dir,
	    before, after, d.n_problems);
	if ((d.port = free_port()) < 0 || (error = write_config(&d)) < 0) {
		fprintf(stderr, "kernelbot demo: configuration: %s\n", d.port < 0 ? "no free port" : strerror(-error));
		goto out;
	}
	if ((error = start_serve(&d)) < 0) {
		fprintf(stderr, "kernelbot demo: starting serve: %s\n", strerror(-error));
		goto out;
	}
	if (wait_healthy(&d, clock_mono_s() + 30) < 0) {
		fprintf(stderr, "kernelbot demo: serve did not come up; see %s/serve.log\n", d.dir);
		goto out;
	}
	printf("serve on 127.0.0.1:%d (config %s/kernelbot.yml, log %s/serve.log)\n", d.port, d.dir, d.dir);
	if (send_push(&d, before, after, &job) < 0)
		goto out;
	printf("push webhook accepted: job %lld; waiting (at most %ld s)\n", (long long)job, timeout);
	fflush(stdout);
	if ((error = wait_job(&d, job, t0 + (double)timeout, state, sizeof(state))) < 0) {
		if (error == -ETIMEDOUT)
			fprintf(stderr, "kernelbot demo: job %lld still %s after %ld s; see %s/serve.log\n",
			    (long long)job, state, timeout, d.dir);
		goto out;
	}
	printf("job %lld %s after %.0f s\n", (long long)job, state, clock_mono_s() - t0);
	prs = print_results(&d, after);
	printf("\n%d pull request%s in %s/forge/prs\n", prs, prs == 1 ? "" : "s", d.dir);
	rc = strcmp(state, STORE_JOB_DONE) ? 1 : 0;
out:
	stop_serve(&d);
	fflush(stdout);
	return rc;
}
