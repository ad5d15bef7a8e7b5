/*
 * sandbox_mounts: the mounts of a sandbox's new root, planned in the
 * parent: read-only binds of the host's paths (each with the mounts
 * beneath it), the device nodes (one GPU's), and the paths a caller asks
 * to show, with the few a kernelbot program inside needs without being
 * told.
 */
#include "gpu/sandbox.h"
#include "gpu/sandbox_int.h"

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/buf.h"
#include "common/where.h"

#define AUTO_PATHS_MAX 4	/* paths shown without being asked for */
#define TMPFS_SMALL "size=64m"

static const char *const dev_nodes[] = { "null", "zero", "full", "random", "urandom", "tty", NULL };
static const char *const gpu_nodes[] = {
	"nvidiactl", "nvidia-uvm", "nvidia-uvm-tools", "nvidia-modeset", NULL,
};

int
sbx_add_mount(struct sbx_plan *p, int kind, int is_dir, const char *src, const char *dst)
{
	struct sbx_mount *m;

	if (p->n_mounts >= SBX_MOUNTS_MAX)
		return -E2BIG;
	m = &p->mounts[p->n_mounts];
	m->kind = kind;
	m->is_dir = is_dir;
	m->flags = 0;
	if (snprintf(m->src, sizeof(m->src), "%s%s",
	    "", src ? src : "") >= (int)sizeof(m->src) ||
	    snprintf(m->dst, sizeof(m->dst), SBX_NEWROOT "%s",
	    strcmp(dst, "/") ? dst : "") >= (int)sizeof(m->dst))
		return -ENAMETOOLONG;
	p->n_mounts++;
	return 0;
}

/* mountinfo escapes spaces and friends as \ooo. */
static void
unescape(char *s)
{
	char *d = s;

	for (; *s; s++) {
		if (s[0] == '\\' && s[1] >= '0' && s[1] <= '7' && s[2] && s[3]) {
			*d++ = (char)((s[1] - '0') * 64 + (s[2] - '0') * 8 + (s[3] - '0'));
			s += 3;
		} else {
			*d++ = *s;
		}
	}
	*d = '\0';
}

/* A recursive bind brings src's submounts along writable: list them. */
static int
add_submounts(struct sbx_plan *p, const char *src)
{
	FILE *f = fopen("/proc/self/mountinfo", "re");
	char line[4096], *save, *mp;
	size_t sl = strlen(src);
	int error = 0;

	if (!f)
		return 0;
	while (!error && fgets(line, sizeof(line), f)) {
		save = NULL;
		mp = strtok_r(line, " ", &save);
		for (int i = 0; i < 4 && mp; i++)
			mp = strtok_r(NULL, " ", &save);
		if (!mp)
			continue;
		unescape(mp);
		if (!strncmp(mp, src, sl) && mp[sl] == '/')
			error = sbx_add_mount(p, SBX_REMOUNT_RO, 1, NULL, mp);
	}
	fclose(f);
	return error;
}

/* A host path, made visible read-only at the same place. */
int
sbx_add_ro(struct sbx_plan *p, const char *path, struct buf *shown)
{
	struct stat st;
	char target[PATH_MAX];
	ssize_t n;
	int error;

	if (lstat(path, &st) < 0)
		return 0;
	if (S_ISLNK(st.st_mode)) {
		if ((n = readlink(path, target, sizeof(target) - 1)) < 0)
			return 0;
		target[n] = '\0';
		return sbx_add_mount(p, SBX_SYMLINK, 0, target, path);
	}
	if ((error = sbx_add_mount(p, SBX_BIND_RO, S_ISDIR(st.st_mode), path, path)) < 0)
		return error;
	if (shown)
		buf_printf(shown, "%s%s", shown->len ? ", " : "", path);
	return S_ISDIR(st.st_mode) ? add_submounts(p, path) : 0;
}

/*
 * The /dev/nvidiaN of the index-th GPU in PCI bus order (nvidia-smi's
 * numbering), from the driver's /proc entries; index itself when they are
 * absent, which note says.
 */
static int
gpu_minor(int index, char *note, size_t len)
{
	struct dirent **ents = NULL;
	char path[512], text[4096], *p;
	int n, minor = index, fd;
	ssize_t got;

	n = scandir("/proc/driver/nvidia/gpus", &ents, NULL, alphasort);
	if (n < 0) {
		snprintf(note, len, "no /proc/driver/nvidia/gpus, assuming minor %d", index);
		return index;
	}
	for (int i = 0, k = 0; i < n; i++) {
		if (ents[i]->d_name[0] == '.')
			continue;
		if (k++ != index)
			continue;
		snprintf(path, sizeof(path), "/proc/driver/nvidia/gpus/%s/information",
		    ents[i]->d_name);
		if ((fd = open(path, O_RDONLY | O_CLOEXEC)) >= 0) {
			got = read(fd, text, sizeof(text) - 1);
			close(fd);
			text[got > 0 ? got : 0] = '\0';
			if ((p = strstr(text, "Device Minor:")))
				minor = atoi(p + strlen("Device Minor:"));
		}
		snprintf(note, len, "GPU %d is %.64s, device minor %d", index,
		    ents[i]->d_name, minor);
	}
	for (int i = 0; i < n; i++)
		free(ents[i]);
	free(ents);
	return minor;
}

/* extra: MS_* flags for /dev/shm (MS_NOEXEC for a candidate). */
int
sbx_plan_dev(struct sbx_plan *p, int gpu, unsigned long extra, json_t *ck)
{
	struct buf bound = BUF_INIT(4096), absent = BUF_INIT(4096);
	char path[64], note[256] = "";
	struct stat st;
	int error, have_gpu = 1;

	if ((error = sbx_add_mount(p, SBX_TMPFS, 1, "mode=0755,size=64k", "/dev")) < 0)
		goto out;
	for (int i = 0; dev_nodes[i]; i++) {
		snprintf(path, sizeof(path), "/dev/%s", dev_nodes[i]);
		if (stat(path, &st) == 0 && S_ISCHR(st.st_mode) &&
		    (error = sbx_add_mount(p, SBX_BIND_DEV, 0, path, path)) < 0)
			goto out;
	}
	if (gpu >= 0) {
		int minor = gpu_minor(gpu, note, sizeof(note));
		for (int i = 0; gpu_nodes[i] || i == 4; i++) {
			if (gpu_nodes[i])
				snprintf(path, sizeof(path), "/dev/%s", gpu_nodes[i]);
			else
				snprintf(path, sizeof(path), "/dev/nvidia%d", minor);
			if (stat(path, &st) == 0 && S_ISCHR(st.st_mode)) {
				if ((error = sbx_add_mount(p, SBX_BIND_DEV, 0, path, path)) < 0)
					goto out;
				buf_printf(&bound, "%s%s", bound.len ? ", " : "", path);
			} else {
				buf_printf(&absent, "%s%s", absent.len ? ", " : "", path);
				if (!gpu_nodes[i] || !strcmp(gpu_nodes[i], "nvidiactl"))
					have_gpu = 0;
			}
			if (!gpu_nodes[i])
				break;
		}
		if (stat("/dev/nvidia-caps", &st) == 0 && S_ISDIR(st.st_mode)) {
			/* MIG capability nodes; a directory of device nodes, bound as it is. */
			if ((error = sbx_add_mount(p, SBX_BIND_DEV, 1, "/dev/nvidia-caps", "/dev/nvidia-caps")) < 0)
				goto out;
			buf_printf(&bound, ", /dev/nvidia-caps");
		}
		sbx_check(ck, "gpu", have_gpu, "only GPU %d visible (%s): bound %s%s%s; "
		    "inside it is CUDA device 0; /sys read-only where the host allows",
		    gpu, note, bound.len ? buf_cstr(&bound) : "nothing",
		    absent.len ? "; absent on this host: " : "", buf_cstr(&absent));
	} else {
		sbx_check(ck, "gpu", 1, "no GPU device nodes");
	}
	if ((error = sbx_add_mount(p, SBX_SYMLINK, 0, "/proc/self/fd", "/dev/fd")) < 0 ||
	    (error = sbx_add_mount(p, SBX_SYMLINK, 0, "/proc/self/fd/0", "/dev/stdin")) < 0 ||
	    (error = sbx_add_mount(p, SBX_SYMLINK, 0, "/proc/self/fd/1", "/dev/stdout")) < 0 ||
	    (error = sbx_add_mount(p, SBX_SYMLINK, 0, "/proc/self/fd/2", "/dev/stderr")) < 0 ||
	    (error = sbx_add_mount(p, SBX_TMPFS, 1, "mode=1777," TMPFS_SMALL, "/dev/shm")) < 0)
		goto out;
	p->mounts[p->n_mounts - 1].flags = extra;
	error = sbx_add_mount(p, SBX_SEAL_RO, 1, NULL, "/dev");
out:
	buf_free(&bound);
	buf_free(&absent);
	return error;
}

static int
under(const char *path, const char *dir)
{
	size_t dl = strlen(dir);

	return !strncmp(path, dir, dl) && (path[dl] == '\0' || path[dl] == '/');
}

static int
readable_by_sandbox(const struct stat *st, int uid_differs)
{
	return !uid_differs || st->st_uid == SANDBOX_ROOT_UID ||
	    (st->st_mode & S_IROTH && (!S_ISDIR(st->st_mode) || st->st_mode & S_IXOTH));
}

/* Add the real path of dir (or of its parent when up) if it is usable. */
static void
auto_add(char **paths, size_t *n, const char *dir, int uid_differs)
{
	char real[PATH_MAX];
	struct stat st;

	if (*n < AUTO_PATHS_MAX && realpath(dir, real) && strcmp(real, "/") &&
	    stat(real, &st) == 0 && S_ISDIR(st.st_mode) &&
	    readable_by_sandbox(&st, uid_differs))
		paths[(*n)++] = strdup(real);
}

/*
 * What a kernelbot program inside needs without being told: the running
 * binary's directory (the worker is this binary; device-bundle/ holds its
 * lib/ and harness/), the harness of a source-tree build, and the
 * virtualenv of KERNELBOT_PYTHON.
 */
static size_t
auto_paths(char **paths, int uid_differs)
{
	const char *harness = where()->harness, *py = where()->python;
	char self[PATH_MAX], path[PATH_MAX + 32], *slash;
	size_t n = 0;
	ssize_t len;

	if ((len = readlink("/proc/self/exe", self, sizeof(self) - 1)) > 0) {
		self[len] = '\0';
		if ((slash = strrchr(self, '/')) && slash != self) {
			*slash = '\0';
			auto_add(paths, &n, self, uid_differs);
			snprintf(path, sizeof(path), "%s/../../gpu/harness", self);
			if (!harness)
				auto_add(paths, &n, path, uid_differs);
		}
	}
	if (harness && *harness == '/') {
		snprintf(path, sizeof(path), "%s", harness);
		if ((slash = strrchr(path, '/')) && slash != path) {
			*slash = '\0';
			auto_add(paths, &n, path, uid_differs);
		}
	}
	if (py && *py == '/') {
		/* .../venv/bin/python3 -> .../venv, when that is a virtualenv */
		snprintf(path, sizeof(path), "%s", py);
		for (int up = 0; up < 2 && (slash = strrchr(path, '/')) && slash != path; up++)
			*slash = '\0';
		if (strlen(path) + sizeof("/pyvenv.cfg") < sizeof(path)) {
			char cfg[PATH_MAX + 64];
			snprintf(cfg, sizeof(cfg), "%s/pyvenv.cfg", path);
			if (access(cfg, R_OK) == 0)
				auto_add(paths, &n, path, uid_differs);
		}
	}
	return n;
}

static int
by_length(const void *a, const void *b)
{
	size_t la = strlen(*(char *const *)a), lb = strlen(*(char *const *)b);

	return la < lb ? -1 : la > lb;
}

/*
 * The user's paths: resolved, checked, sorted parents first so a mount
 * point is always created inside the tree that will hold it.
 */
int
sbx_plan_paths(struct sbx_plan *p, const struct sandbox_opts *so, const char *scratch,
    int sandbox_uid_differs, json_t *ck, struct buf *shown)
{
	char *paths[SANDBOX_RO_PATHS_MAX + AUTO_PATHS_MAX + 1] = { NULL };
	size_t n = auto_paths(paths, sandbox_uid_differs);
	int error = 0;

	for (const char *const *r = so->ro_paths; r && *r; r++) {
		char real[PATH_MAX];
		struct stat st;

		if (n >= SANDBOX_RO_PATHS_MAX + AUTO_PATHS_MAX) {
			sbx_check(ck, "read_only_paths", 0, "more than %d read-only paths", SANDBOX_RO_PATHS_MAX);
			error = -E2BIG;
			goto out;
		}
		if (**r != '/' || !realpath(*r, real) || stat(real, &st) < 0) {
			sbx_check(ck, "read_only_paths", 0, "%s: not an absolute path to an existing file", *r);
			error = -EINVAL;
			goto out;
		}
		if (!strcmp(real, "/") || under(real, "/proc") || under(real, "/sys") ||
		    under(real, "/dev")) {
			sbx_check(ck, "read_only_paths", 0, "%s: / and paths under /proc, /sys, /dev cannot be shown", *r);
			error = -EINVAL;
			goto out;
		}
		if (!readable_by_sandbox(&st, sandbox_uid_differs)) {
			sbx_check(ck, "read_only_paths", 0, "%s (mode %04o) is not readable by the "
			    "sandbox's uid %d", real, (unsigned)(st.st_mode & 07777), SANDBOX_ROOT_UID);
			error = -EACCES;
			goto out;
		}
		if (strcmp(real, scratch))	/* scratch stays writable */
			paths[n++] = strdup(real);
	}
	paths[n++] = strdup(scratch);
	for (size_t i = 0; i < n; i++)
		if (!paths[i]) {
			error = -ENOMEM;
			goto out;
		}
	qsort(paths, n, sizeof(paths[0]), by_length);
	for (size_t i = 0; i < n && !error; i++) {
		if (!strcmp(paths[i], scratch)) {
			error = sbx_add_mount(p, SBX_BIND_RW, 1, scratch, scratch);
			if (!error && so->profile == SANDBOX_CANDIDATE)
				p->mounts[p->n_mounts - 1].flags = MS_NOEXEC;
		}
		else
			error = sbx_add_ro(p, paths[i], shown);
	}
out:
	for (size_t i = 0; i < n; i++)
		free(paths[i]);
	return error;
}
