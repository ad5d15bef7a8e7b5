#include "pipeline/evolve/evolve_int.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/buf.h"
#include "common/fsx.h"
#include "common/jsonx.h"

int
evo_join(char *out, size_t outlen, const char *dir, const char *name)
{
	int n = snprintf(out, outlen, "%s/%s", dir, name);

	return n < 0 || (size_t)n >= outlen ? -ENAMETOOLONG : 0;
}



int
evo_write_json(const char *path, const json_t *v)
{
	struct buf b = BUF_INIT(BUF_MAX_DEFAULT * 4);
	int error;

	if ((error = jsonx_dump(v, JSON_INDENT(2) | JSON_REAL_PRECISION(6), &b)) < 0 ||
	    (error = buf_addch(&b, '\n')) < 0)
		goto out;
	error = fsx_write_file(path, b.data ? b.data : "", b.len);
out:
	buf_free(&b);
	return error;
}

/* candidates/NNNN.c or .cu, as the loop names them */
static int
is_candidate_name(const char *n)
{
	size_t len = strlen(n), digits = strspn(n, "0123456789");

	return digits >= 4 && (!strcmp(n + digits, ".c") || !strcmp(n + digits, ".cu")) &&
	    len == digits + strlen(n + digits);
}

static int
remove_in(const char *dir, const char *name)
{
	char p[PATH_MAX];

	if (evo_join(p, sizeof(p), dir, name) < 0)
		return -ENAMETOOLONG;
	if (unlink(p) < 0 && errno != ENOENT)
		return -errno;
	return 0;
}

int
evo_prepare_dir(const char *dir)
{
	static const char *const own[] = { "summary.json", "history.json", "REPORT.md",
		"problem.py", "ir.json", "functional.py", "best/kernel.c", "best/kernel.cu",
		"best/result.json", NULL };
	char p[PATH_MAX], q[PATH_MAX];
	struct dirent *de;
	DIR *d;
	int error = 0, other = 0, run;

	if (!(d = opendir(dir)))
		return errno == ENOENT ? fsx_mkdir_p(dir, 0755) : -errno;
	while ((de = readdir(d)))
		if (strcmp(de->d_name, ".") && strcmp(de->d_name, ".."))
			other = 1;
	closedir(d);
	if (!other)
		return 0;
	if ((error = evo_join(p, sizeof(p), dir, "history.json")) < 0 ||
	    (error = evo_join(q, sizeof(q), dir, "summary.json")) < 0)
		return error;
	run = access(p, F_OK) == 0 || access(q, F_OK) == 0;
	if (!run)
		return -EEXIST;
	for (int i = 0; own[i]; i++)
		if ((error = remove_in(dir, own[i])) < 0)
			return error;
	if ((error = evo_join(p, sizeof(p), dir, "candidates")) < 0)
		return error;
	if (!(d = opendir(p)))
		return errno == ENOENT ? 0 : -errno;
	while ((de = readdir(d)) && !error)
		if (is_candidate_name(de->d_name))
			error = remove_in(p, de->d_name);
	closedir(d);
	return error;
}
