/* judgesrv: the private directory is created 0700 and refused when it is
 * not ours alone; names depend on backend and device; a missing server is
 * an error with a sentence (the caller's fallback), and a NAME.json whose
 * pid is not a judge server is listed as not alive. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli/cli.h"
#include "gpu/judgesrv.h"
#include "tests/unit/t.h"

int
main(void)
{
	char base[] = "/tmp/judgeserver-unit-XXXXXX", dir[PATH_MAX], got[PATH_MAX], err[1024];
	char path[PATH_MAX + 64];
	struct judgesrv a, b, c;
	struct stat st;
	json_t *list = NULL, *reply = NULL, *req;
	FILE *f;

	cli_where_load();	/* the settings tests/run.sh gives in the environment */
	if (!mkdtemp(base))
		return 1;
	/* The harness as found from the source tree; the interpreter is not run here. */
	setenv("KERNELBOT_PYTHON", "/usr/bin/python3", 1);
	setenv("KERNELBOT_HARNESS", "gpu/harness/harness.py", 1);
	cli_where_load();
	snprintf(dir, sizeof(dir), "%s/x/judge", base);
	setenv("KERNELBOT_JUDGE_DIR", dir, 1);
	cli_where_load();

	CHECK_INT("absent directory: created", judgesrv_dir(got, sizeof(got), err, sizeof(err)), 0);
	CHECK_STR("the directory is KERNELBOT_JUDGE_DIR", got, dir);
	CHECK("created 0700", stat(dir, &st) == 0 && (st.st_mode & 0777) == 0700);

	chmod(dir, 0750);
	CHECK_INT("group access: refused", judgesrv_dir(got, sizeof(got), err, sizeof(err)), -EPERM);
	CHECK("the refusal says why", strstr(err, "open to other users") != NULL);
	chmod(dir, 0700);

	snprintf(path, sizeof(path), "%s/link", base);
	CHECK("symlink made", symlink(dir, path) == 0);
	setenv("KERNELBOT_JUDGE_DIR", path, 1);
	cli_where_load();
	CHECK_INT("a symlink: refused", judgesrv_dir(got, sizeof(got), err, sizeof(err)), -EPERM);
	CHECK("the refusal names it", strstr(err, "not a directory") != NULL);
	setenv("KERNELBOT_JUDGE_DIR", dir, 1);
	cli_where_load();

	CHECK_INT("open cpu 0", judgesrv_open(&a, "cpu", 0, err, sizeof(err)), 0);
	CHECK_INT("open cpu 0 again", judgesrv_open(&b, "cpu", 0, err, sizeof(err)), 0);
	CHECK_INT("open cuda 1", judgesrv_open(&c, "cuda", 1, err, sizeof(err)), 0);
	CHECK("name: backend and device, 16 hex", !strncmp(a.name, "cpu0-", 5) && strlen(a.name) == 21);
	CHECK_STR("the same server for the same backend and device", a.name, b.name);
	CHECK("another for another device", strncmp(c.name, "cuda1-", 6) == 0 &&
	    strcmp(a.name + 5, c.name + 6) != 0);
	snprintf(path, sizeof(path), "%s/%s.sock", dir, a.name);
	CHECK_STR("the socket in the directory", a.sock, path);

	req = json_pack("{s:s}", "verb", "evaluate");
	CHECK("no server: an error, no reply",
	    judgesrv_call(&a, req, 1000, &reply, err, sizeof(err)) < 0 && reply == NULL);
	CHECK("no server: the sentence says so", strstr(err, "cannot connect") != NULL);
	json_decref(req);

	/* A status file whose pid is alive but no judge server (a recycled pid). */
	snprintf(path, sizeof(path), "%s/cpu0-0000000000000000.json", dir);
	if ((f = fopen(path, "w"))) {
		fprintf(f, "{\"pid\": %d, \"backend\": \"cpu\", \"device\": 0, \"requests\": 3, "
		    "\"last_used\": 0, \"idle_s\": 600}", (int)getpid());
		fclose(f);
	}
	CHECK_INT("list", judgesrv_list(&list, err, sizeof(err)), 0);
	CHECK_INT("one entry", json_array_size(list), 1);
	CHECK("a pid that is no judge server: not alive",
	    json_is_false(json_object_get(json_array_get(list, 0), "alive")));
	CHECK_INT("stop spares it", judgesrv_stop_all(list), 0);
	json_decref(list);

	{
		char longdir[PATH_MAX];
		memset(longdir, 'd', 150);
		snprintf(longdir + 150, sizeof(longdir) - 150, "%s", "");
		snprintf(path, sizeof(path), "%s/%s", base, longdir);
		setenv("KERNELBOT_JUDGE_DIR", path, 1);
		cli_where_load();
		CHECK_INT("a socket path too long: refused",
		    judgesrv_open(&a, "cpu", 0, err, sizeof(err)), -ENAMETOOLONG);
		CHECK("the refusal names the knob", strstr(err, "KERNELBOT_JUDGE_DIR") != NULL);
	}
	{
		char cmd[PATH_MAX + 16];
		snprintf(cmd, sizeof(cmd), "rm -rf %s", base);
		if (system(cmd) != 0)
			printf("note: could not remove %s\n", base);
	}
	return t_done("test_judgesrv");
}
