/*
 * coord_files: where the coordinator's and runners' files live under
 * DATA_DIR (coord.h has the layout) and the sweep of runners' work
 * directories that nothing needs any more: the leftovers of a runner
 * killed between storing a result and removing its work, and failed
 * attempts kept for a look once their time is up.
 */
#include "coord/coord.h"

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "common/fsx.h"
#include "common/log.h"

int
coord_job_dir(const char *data_dir, long long job, char *out, size_t len)
{
	if ((size_t)snprintf(out, len, "%s/work/job-%lld", data_dir, job) >= len)
		return -ENAMETOOLONG;
	return 0;
}

int
coord_runner_dir(const char *data_dir, const char *name, char *out, size_t len)
{
	if ((size_t)snprintf(out, len, "%s/runners/%s", data_dir, name) >= len)
		return -ENAMETOOLONG;
	return 0;
}

int
coord_results_dir(const char *data_dir, long long job, long long task,
    int attempt, char *out, size_t len)
{
	if ((size_t)snprintf(out, len, "%s/results/job-%lld/task-%lld-%d",
	    data_dir, job, task, attempt) >= len)
		return -ENAMETOOLONG;
	return 0;
}

int
coord_runner_name_ok(const char *name)
{
	size_t n = name ? strlen(name) : 0;

	return n > 0 && n <= 64 && name[0] != '.' && strspn(name,
	    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._-") == n;
}

/*
 * Whether work directory task-T-A (under a runner's area, last changed
 * at mtime) may go: never while attempt A of T runs, nor when it holds
 * the results of T (done) that could not be moved; at once when T is done
 * with its results stored elsewhere; else after keep_h hours.
 */
static int
may_remove(struct store *store, const char *path, const char *base,
    time_t mtime, int keep_h, time_t now)
{
	struct store_task t;
	long long id;
	int attempt, rc, keep;

	if (sscanf(base, "task-%lld-%d", &id, &attempt) != 2)
		return 0;
	keep = now - mtime < (time_t)keep_h * 3600;
	if ((rc = store_task_get(store, id, &t)) < 0)
		return rc == -ENOENT ? !keep : 0;
	if (!strcmp(t.state, STORE_TASK_RUNNING) && t.attempts == attempt) {
		store_task_free(&t);
		return 0;
	}
	if (!strcmp(t.state, STORE_TASK_DONE) && t.attempts == attempt) {
		/* Results that could not be moved out stay where they are. */
		int stored_here = !t.out_dir || !strncmp(t.out_dir, path,
		    strlen(path));

		store_task_free(&t);
		return !stored_here;
	}
	store_task_free(&t);
	return !keep;
}

int
coord_work_sweep(struct store *store, const char *data_dir, int keep_h,
    time_t now, int *removed)
{
	char root[PATH_MAX], dir[PATH_MAX * 2], path[PATH_MAX * 3];
	struct dirent *r, *w;
	DIR *rd, *wd;
	int rc;

	*removed = 0;
	if ((size_t)snprintf(root, sizeof(root), "%s/runners", data_dir) >=
	    sizeof(root))
		return -ENAMETOOLONG;
	if (!(rd = opendir(root)))
		return errno == ENOENT ? 0 : -errno;
	while ((r = readdir(rd))) {
		if (!coord_runner_name_ok(r->d_name))
			continue;
		snprintf(dir, sizeof(dir), "%s/%s", root, r->d_name);
		if (!(wd = opendir(dir)))
			continue;
		while ((w = readdir(wd))) {
			struct stat sb;

			if (strncmp(w->d_name, "task-", 5))
				continue;
			snprintf(path, sizeof(path), "%s/%s", dir, w->d_name);
			if (lstat(path, &sb) < 0 || !S_ISDIR(sb.st_mode) ||
			    !may_remove(store, path, w->d_name, sb.st_mtime, keep_h,
			    now))
				continue;
			if ((rc = fsx_rmtree(path)) < 0)
				log_warn("cannot remove a work directory", "path=%s "
				    "err=\"%s\"", path, strerror(-rc));
			else
				++*removed;
		}
		closedir(wd);
	}
	closedir(rd);
	return 0;
}
