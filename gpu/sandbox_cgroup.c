/*
 * Per-run cgroups for the sandbox's memory and pids limits.
 *
 * cgroup v2: runs live under a "kernelbot" child of our own cgroup, with
 * memory (and pids) enabled there. A v2 cgroup that holds processes cannot
 * hand controllers to children, so when ours has none enabled and we are
 * the only process in it (systemd's Delegate=yes service), we move
 * ourselves into a "kernelbot-main" leaf first and enable them. That
 * choice is made once per process.
 *
 * cgroup v1: a "kernelbot" child of our memory cgroup (and of our pids
 * cgroup when that hierarchy is mounted), limits on each run's directory.
 */
#include "gpu/sandbox_int.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define CG2_MOUNTS { "/sys/fs/cgroup", "/sys/fs/cgroup/unified" }
#define CG1_MEMORY "/sys/fs/cgroup/memory"
#define CG1_PIDS "/sys/fs/cgroup/pids"
#define CG_RMDIR_TRIES 200	/* x 5 ms: the killed tree takes a moment to leave */
#define CG_FILE_MAX 4096

static pthread_mutex_t cg_lock = PTHREAD_MUTEX_INITIALIZER;
static int cg_chosen;			/* 0 not yet, 1 chosen (maybe none) */
static int cg_version;
static char cg_parent[SBX_PATH_MAX];	/* v2: where runs go; v1: memory parent */
static char cg_pids_parent[SBX_PATH_MAX];	/* v1 pids parent, "" = none */
static char cg_why[256];
static unsigned long cg_counter;

/*
 * snprintf through a wrapper: names here are short in practice, and a
 * truncated one fails at open/mkdir with a clear error anyway.
 */
static int
pathf(char *dst, size_t len, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int
pathf(char *dst, size_t len, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(dst, len, fmt, ap);
	va_end(ap);
	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : n;
}

static int
read_small(const char *path, char *out, size_t len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return -errno;
	n = read(fd, out, len - 1);
	close(fd);
	if (n < 0)
		return -errno;
	out[n] = '\0';
	return 0;
}

static int
write_str(const char *path, const char *s)
{
	return -sbx_write_file(path, s);
}

/* Our cgroup path in the hierarchy whose controller list has want ("" = v2). */
static int
self_cgroup(const char *want, char *out, size_t len)
{
	char text[CG_FILE_MAX], *line, *save = NULL;

	if (read_small("/proc/self/cgroup", text, sizeof(text)) < 0)
		return -ENOENT;
	for (line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char *c1 = strchr(line, ':'), *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
		int match;

		if (!c2)
			continue;
		*c1 = *c2 = '\0';	/* line: the hierarchy id; c1 + 1: its controllers */
		if (!*want) {
			match = !strcmp(line, "0") && c1[1] == '\0';
		} else {
			char *ctl, *s2 = NULL;
			match = 0;
			for (ctl = strtok_r(c1 + 1, ",", &s2); ctl; ctl = strtok_r(NULL, ",", &s2))
				if (!strcmp(ctl, want))
					match = 1;
		}
		if (match) {
			pathf(out, len, "%s", !strcmp(c2 + 1, "/") ? "" : c2 + 1);
			return 0;
		}
	}
	return -ENOENT;
}

static int
has_word(const char *path, const char *word)
{
	char text[1024], *w, *save = NULL;

	if (read_small(path, text, sizeof(text)) < 0)
		return 0;
	for (w = strtok_r(text, " \n", &save); w; w = strtok_r(NULL, " \n", &save))
		if (!strcmp(w, word))
			return 1;
	return 0;
}

/* Enable memory (+pids when offered) for children of dir. */
static int
v2_enable(const char *dir)
{
	char path[SBX_PATH_MAX + 32];
	int err;

	pathf(path, sizeof(path), "%s/cgroup.subtree_control", dir);
	if (has_word(path, "memory"))
		return 0;
	if ((err = write_str(path, "+memory")) < 0)
		return err;
	pathf(path, sizeof(path), "%s/cgroup.controllers", dir);
	if (has_word(path, "pids")) {
		pathf(path, sizeof(path), "%s/cgroup.subtree_control", dir);
		write_str(path, "+pids");
	}
	return 0;
}

/* Processes in dir's cgroup.procs, and how many are not self; -1 unreadable. */
static int
count_procs(const char *dir, pid_t self, int *others)
{
	char path[SBX_PATH_MAX + 32], text[CG_FILE_MAX], *w, *save = NULL;
	int n = 0;

	*others = 0;
	pathf(path, sizeof(path), "%s/cgroup.procs", dir);
	if (read_small(path, text, sizeof(text)) < 0)
		return -1;
	for (w = strtok_r(text, "\n", &save); w; w = strtok_r(NULL, "\n", &save), n++)
		*others += atoi(w) != (int)self;
	return n;
}

static int
only_pid(const char *dir, pid_t self)
{
	int others;

	return count_procs(dir, self, &others) == 1 && others == 0;
}

static int
only_us(const char *dir)
{
	return only_pid(dir, getpid());
}

/*
 * What choose_v2() will find in base, decided without writing anything:
 * the memory controller offered and base writable, and either enabled for
 * children already or enableable: a v2 cgroup holding processes cannot
 * delegate (EBUSY), unless self is its only one (then a leaf is made).
 */
int
sbx_cgroup_v2_check(const char *base, pid_t self, char *why, size_t len)
{
	char path[SBX_PATH_MAX + 32];
	int others;

	pathf(path, sizeof(path), "%s/cgroup.controllers", base);
	if (!has_word(path, "memory")) {
		pathf(why, len, "cgroup v2 %s has no memory controller delegated", base);
		return -ENOENT;
	}
	if (access(base, W_OK) < 0) {
		pathf(why, len, "cgroup v2 %s is not writable (%s)", base, strerror(errno));
		return -EACCES;
	}
	pathf(path, sizeof(path), "%s/cgroup.subtree_control", base);
	if (has_word(path, "memory") || count_procs(base, self, &others) <= 0 || others == 0)
		return 0;
	pathf(why, len, "cannot enable the memory controller under cgroup v2 %s: %s%s",
	    base, strerror(EBUSY), SBX_CGROUP_SHARED_HINT);
	return -EBUSY;
}

static int
choose_v2(char *why, size_t len)
{
	static const char *const mounts[] = CG2_MOUNTS;
	char self[SBX_PATH_MAX / 2], base[SBX_PATH_MAX], path[SBX_PATH_MAX + 32];
	const char *mnt = NULL;
	int err;

	for (size_t i = 0; i < sizeof(mounts) / sizeof(mounts[0]); i++) {
		pathf(path, sizeof(path), "%s/cgroup.controllers", mounts[i]);
		if (access(path, F_OK) == 0) {
			mnt = mounts[i];
			break;
		}
	}
	if (!mnt) {
		pathf(why, len, "no cgroup v2 hierarchy");
		return -ENOENT;
	}
	if (self_cgroup("", self, sizeof(self)) < 0) {
		pathf(why, len, "not in a cgroup v2 hierarchy");
		return -ENOENT;
	}
	pathf(base, sizeof(base), "%s%s", mnt, self);
	err = sbx_cgroup_v2_check(base, getpid(), why, len);
	if (err == -ENOENT || err == -EACCES)
		return err;
	err = v2_enable(base);
	if (err == -EBUSY && only_us(base)) {
		/* A Delegate=yes service: step into a leaf so the parent may delegate. */
		char leaf[SBX_PATH_MAX + 32], pid[24];
		pathf(leaf, sizeof(leaf), "%s/kernelbot-main", base);
		pathf(path, sizeof(path), "%s/cgroup.procs", leaf);
		pathf(pid, sizeof(pid), "%d", (int)getpid());
		if ((mkdir(leaf, 0755) == 0 || errno == EEXIST) && write_str(path, pid) == 0)
			err = v2_enable(base);
	}
	if (err < 0) {
		pathf(why, len, "cannot enable the memory controller under cgroup v2 %s: %s%s",
		    base, strerror(-err), err == -EBUSY ? SBX_CGROUP_SHARED_HINT : "");
		return err;
	}
	pathf(cg_parent, sizeof(cg_parent), "%s/kernelbot", base);
	if (mkdir(cg_parent, 0755) < 0 && errno != EEXIST) {
		pathf(why, len, "mkdir %s: %s", cg_parent, strerror(errno));
		return -errno;
	}
	if ((err = v2_enable(cg_parent)) < 0) {
		pathf(why, len, "enabling memory in %s: %s", cg_parent, strerror(-err));
		return err;
	}
	return 0;
}

static int
choose_v1(char *why, size_t len)
{
	char self[SBX_PATH_MAX / 2], base[SBX_PATH_MAX];

	if (self_cgroup("memory", self, sizeof(self)) < 0 || access(CG1_MEMORY, F_OK) < 0) {
		pathf(why, len, "no cgroup v1 memory hierarchy");
		return -ENOENT;
	}
	pathf(base, sizeof(base), CG1_MEMORY "%s", self);
	if (access(base, W_OK) < 0) {
		pathf(why, len, "cgroup v1 %s is not writable (%s)", base, strerror(errno));
		return -EACCES;
	}
	pathf(cg_parent, sizeof(cg_parent), "%s/kernelbot", base);
	if (mkdir(cg_parent, 0755) < 0 && errno != EEXIST) {
		pathf(why, len, "mkdir %s: %s", cg_parent, strerror(errno));
		return -errno;
	}
	cg_pids_parent[0] = '\0';
	if (self_cgroup("pids", self, sizeof(self)) == 0 && access(CG1_PIDS, W_OK) == 0) {
		pathf(base, sizeof(base), CG1_PIDS "%s/kernelbot", self);
		if (mkdir(base, 0755) == 0 || errno == EEXIST)
			pathf(cg_pids_parent, sizeof(cg_pids_parent), "%s", base);
	}
	return 0;
}

/*
 * A launcher killed outright leaves its run's (empty) cgroup behind:
 * remove those whose process is gone, once per process.
 */
static void
sweep_stale(const char *parent)
{
	char path[SBX_PATH_MAX + 300];
	struct dirent *e;
	DIR *d;
	int pid;

	if (!parent[0] || !(d = opendir(parent)))
		return;
	while ((e = readdir(d)))
		if (sscanf(e->d_name, "run-%d-", &pid) == 1 && pid > 0 &&
		    kill(pid, 0) < 0 && errno == ESRCH &&
		    pathf(path, sizeof(path), "%s/%s", parent, e->d_name) > 0)
			rmdir(path);
	closedir(d);
}

static void
choose(void)
{
	char why2[256] = "", why1[256] = "";

	if (choose_v2(why2, sizeof(why2)) == 0)
		cg_version = 2;
	else if (choose_v1(why1, sizeof(why1)) == 0)
		cg_version = 1;
	else
		pathf(cg_why, sizeof(cg_why), "%s; %s", why2, why1);
	if (cg_version) {
		sweep_stale(cg_parent);
		sweep_stale(cg_version == 1 ? cg_pids_parent : "");
	}
	cg_chosen = 1;
}

int
sbx_cgroup_create(struct sbx_cgroup *cg, size_t mem_bytes, long pids_max)
{
	char path[SBX_PATH_MAX + 32], val[32], name[64];
	unsigned long n;
	int err = 0;

	memset(cg, 0, sizeof(*cg));
	pthread_mutex_lock(&cg_lock);
	if (!cg_chosen)
		choose();
	n = ++cg_counter;
	pthread_mutex_unlock(&cg_lock);
	if (!cg_version) {
		pathf(cg->why, sizeof(cg->why), "%s", cg_why);
		return 0;
	}
	pathf(name, sizeof(name), "run-%d-%lu", (int)getpid(), n);
	pathf(cg->mem_dir, sizeof(cg->mem_dir), "%s/%s", cg_parent, name);
	if (mkdir(cg->mem_dir, 0755) < 0) {
		err = -errno;
		cg->mem_dir[0] = '\0';
		goto out;
	}
	cg->version = cg_version;
	pathf(val, sizeof(val), "%zu", mem_bytes);
	if (cg_version == 2) {
		pathf(path, sizeof(path), "%s/memory.max", cg->mem_dir);
		if ((err = write_str(path, val)) < 0)
			goto out;
		pathf(path, sizeof(path), "%s/memory.swap.max", cg->mem_dir);
		write_str(path, "0");	/* absent without swap accounting */
		pathf(path, sizeof(path), "%s/pids.max", cg->mem_dir);
		pathf(val, sizeof(val), "%ld", pids_max);
		if (access(path, F_OK) == 0 && (err = write_str(path, val)) < 0)
			goto out;
		return 0;
	}
	pathf(path, sizeof(path), "%s/memory.limit_in_bytes", cg->mem_dir);
	if ((err = write_str(path, val)) < 0)
		goto out;
	pathf(path, sizeof(path), "%s/memory.memsw.limit_in_bytes", cg->mem_dir);
	write_str(path, val);	/* no swap beyond the limit, where accounted */
	if (cg_pids_parent[0]) {
		pathf(cg->pids_dir, sizeof(cg->pids_dir), "%s/%s", cg_pids_parent, name);
		pathf(path, sizeof(path), "%s/pids.max", cg->pids_dir);
		pathf(val, sizeof(val), "%ld", pids_max);
		if (mkdir(cg->pids_dir, 0755) < 0 || write_str(path, val) < 0) {
			if (errno != EEXIST)
				rmdir(cg->pids_dir);
			cg->pids_dir[0] = '\0';	/* RLIMIT_NPROC still holds */
		}
	}
	return 0;
out:
	pathf(cg->why, sizeof(cg->why), "setting up %s: %s", cg->mem_dir, strerror(-err));
	sbx_cgroup_destroy(cg);
	return err;
}

static long long
stat_value(const char *path, const char *key)
{
	char text[CG_FILE_MAX], *p;
	size_t kl = strlen(key);

	if (read_small(path, text, sizeof(text)) < 0)
		return -1;
	if (!*key)
		return atoll(text);
	for (p = text; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL)
		if (!strncmp(p, key, kl) && p[kl] == ' ')
			return atoll(p + kl + 1);
	return -1;
}

void
sbx_cgroup_report(const struct sbx_cgroup *cg, struct buf *detail)
{
	char path[SBX_PATH_MAX + 32];
	long long oom, peak;

	if (!cg->version)
		return;
	if (cg->version == 2) {
		pathf(path, sizeof(path), "%s/memory.events", cg->mem_dir);
		oom = stat_value(path, "oom_kill");
		pathf(path, sizeof(path), "%s/memory.peak", cg->mem_dir);
		peak = stat_value(path, "");
	} else {
		pathf(path, sizeof(path), "%s/memory.oom_control", cg->mem_dir);
		oom = stat_value(path, "oom_kill");
		pathf(path, sizeof(path), "%s/memory.max_usage_in_bytes", cg->mem_dir);
		peak = stat_value(path, "");
	}
	if (peak >= 0)
		buf_printf(detail, "; peak %lld MiB", peak >> 20);
	if (oom > 0)
		buf_printf(detail, "; the limit was hit: %lld process(es) killed", oom);
}

static void
kill_members(const char *dir)
{
	char path[SBX_PATH_MAX + 32], text[CG_FILE_MAX], *w, *save = NULL;

	pathf(path, sizeof(path), "%s/cgroup.kill", dir);
	if (write_str(path, "1") == 0)
		return;
	pathf(path, sizeof(path), "%s/cgroup.procs", dir);
	if (read_small(path, text, sizeof(text)) < 0)
		return;
	for (w = strtok_r(text, "\n", &save); w; w = strtok_r(NULL, "\n", &save))
		if (atoi(w) > 1)
			kill(atoi(w), SIGKILL);
}

static void
remove_dir(const char *dir)
{
	struct timespec ts = { 0, 5 * 1000 * 1000 };

	if (!dir[0])
		return;
	kill_members(dir);
	for (int i = 0; i < CG_RMDIR_TRIES; i++) {
		if (rmdir(dir) == 0 || errno == ENOENT)
			return;
		if (errno != EBUSY)
			return;
		nanosleep(&ts, NULL);
		if (i % 20 == 19)
			kill_members(dir);
	}
}

void
sbx_cgroup_destroy(struct sbx_cgroup *cg)
{
	remove_dir(cg->mem_dir);
	remove_dir(cg->pids_dir);
	cg->mem_dir[0] = cg->pids_dir[0] = '\0';
	cg->version = 0;
}

int
sbx_cgroup_probe(char *path, size_t len, char *why, size_t whylen)
{
	static const char *const mounts[] = CG2_MOUNTS;
	char self[SBX_PATH_MAX / 2], ctl[SBX_PATH_MAX + 32], base[SBX_PATH_MAX];
	char why2[256] = "", why1[256] = "";

	pthread_mutex_lock(&cg_lock);
	if (cg_chosen) {
		int v = cg_version;
		pathf(path, len, "%s", v ? cg_parent : "");
		pathf(why, whylen, "%s", v ? "" : cg_why);
		pthread_mutex_unlock(&cg_lock);
		return v != 0;
	}
	pthread_mutex_unlock(&cg_lock);
	/* The order and the tests of choose(), without its writes. */
	pathf(why2, sizeof(why2), "no cgroup v2 hierarchy");
	if (self_cgroup("", self, sizeof(self)) == 0)
		for (size_t i = 0; i < sizeof(mounts) / sizeof(mounts[0]); i++) {
			pathf(ctl, sizeof(ctl), "%s/cgroup.controllers", mounts[i]);
			if (access(ctl, F_OK) < 0)
				continue;
			pathf(base, sizeof(base), "%s%s", mounts[i], self);
			if (sbx_cgroup_v2_check(base, getpid(), why2, sizeof(why2)) == 0) {
				pathf(path, len, "%s/kernelbot", base);
				return 1;
			}
			break;
		}
	pathf(why1, sizeof(why1), "no cgroup v1 memory hierarchy");
	if (self_cgroup("memory", self, sizeof(self)) == 0 && access(CG1_MEMORY, F_OK) == 0) {
		pathf(ctl, sizeof(ctl), CG1_MEMORY "%s", self);
		if (access(ctl, W_OK) == 0) {
			pathf(path, len, "%s/kernelbot", ctl);
			return 1;
		}
		pathf(why1, sizeof(why1), "cgroup v1 %s is not writable (%s)", ctl, strerror(errno));
	}
	pathf(why, whylen, "%s; %s", why2, why1);
	return 0;
}
