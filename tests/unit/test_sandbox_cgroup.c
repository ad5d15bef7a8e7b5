/*
 * The cgroup v2 decision that `doctor` reports and the sandbox acts on
 * (sbx_cgroup_v2_check), against fake cgroup directories: a cgroup whose
 * processes include others cannot delegate the memory controller (EBUSY,
 * the shared-cgroup case of a container or a login shell), one holding
 * only us can (the sandbox steps into a leaf), one that delegates already
 * can, and one without the controller cannot.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "gpu/sandbox_int.h"
#include "t.h"

static char dir[256];

static void
put(const char *name, const char *text)
{
	char path[512];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	if (!(f = fopen(path, "w"))) {
		perror(path);
		exit(1);
	}
	fputs(text, f);
	fclose(f);
}

int
main(void)
{
	char why[512], procs[64];
	int rc;

	snprintf(dir, sizeof(dir), "%s/evalperf-cg-XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
	if (!mkdtemp(dir)) {
		perror("mkdtemp");
		return 1;
	}
	put("cgroup.controllers", "cpuset cpu io memory pids\n");
	put("cgroup.subtree_control", "");
	put("cgroup.procs", "4242\n4243\n");
	why[0] = '\0';
	rc = sbx_cgroup_v2_check(dir, 4242, why, sizeof(why));
	CHECK_INT("shared cgroup: EBUSY", rc, -EBUSY);
	CHECK("shared cgroup: the reason says so", strstr(why, SBX_CGROUP_SHARED_HINT) != NULL);

	snprintf(procs, sizeof(procs), "%d\n", 4242);
	put("cgroup.procs", procs);
	CHECK_INT("only us: usable (the sandbox moves into a leaf)",
	    sbx_cgroup_v2_check(dir, 4242, why, sizeof(why)), 0);

	put("cgroup.procs", "1\n2\n3\n");
	put("cgroup.subtree_control", "cpu memory\n");
	CHECK_INT("memory already delegated to children: usable",
	    sbx_cgroup_v2_check(dir, 4242, why, sizeof(why)), 0);

	put("cgroup.subtree_control", "");
	put("cgroup.controllers", "cpu io pids\n");
	why[0] = '\0';
	CHECK_INT("no memory controller: ENOENT", sbx_cgroup_v2_check(dir, 4242, why, sizeof(why)),
	    -ENOENT);
	CHECK("no memory controller: named", strstr(why, "no memory controller") != NULL);

	{
		char p[512];
		const char *names[] = { "cgroup.controllers", "cgroup.subtree_control", "cgroup.procs" };
		for (int i = 0; i < 3; i++) {
			snprintf(p, sizeof(p), "%s/%s", dir, names[i]);
			unlink(p);
		}
		rmdir(dir);
	}
	return t_done("sandbox_cgroup");
}
