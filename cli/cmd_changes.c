/*
 * kernelbot changes: the modules a push changed, as the daemon computes
 * them for a push webhook; for scripts, CI and for checking a
 * .kernelbot.yml before committing it.
 */
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "common/jsonx.h"
#include "gitops/gitops.h"
#include "gitops/modules.h"

static const char changes_usage[] =
    "usage: kernelbot changes REPO_DIR BEFORE AFTER [--json]\n"
    "\n"
    "The modules to (re)optimize and to retire between two commits of the\n"
    "repository at REPO_DIR (a work tree or a bare repository). BEFORE may\n"
    "be 0000000000000000000000000000000000000000 (a new branch). Each line\n"
    "is REASON PATH CLASS SLUG, REASON one of added, modified, config,\n"
    "removed; --json prints [{path, class, reason, slug, ...}].\n";

int
cmd_changes(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "json", no_argument, NULL, 'j' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct modules_changes ch = { 0 };
	struct gitops_repo *repo = NULL;
	struct buf out = BUF_INIT(BUF_MAX_DEFAULT);
	char err[1024] = "";
	int c, json = 0, rc = 1;
	json_t *arr = NULL;

	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case 'j':
			json = 1;
			break;
		case 'h':
			fputs(changes_usage, stdout);
			return 0;
		default:
			fputs(changes_usage, stderr);
			return EXIT_USAGE;
		}
	}
	if (argc - optind != 3)
		return cli_usage_error("changes", "need REPO_DIR BEFORE AFTER "
		    "(see kernelbot changes --help)");
	if (gitops_open(argv[optind], &repo, err, sizeof(err)) < 0 ||
	    modules_changes(repo, argv[optind + 1], argv[optind + 2], &ch, err,
	    sizeof(err)) < 0) {
		fprintf(stderr, "kernelbot changes: %s\n", err);
		goto out;
	}
	if (json) {
		if (!(arr = modules_changes_json(&ch)) ||
		    jsonx_dump(arr, JSON_INDENT(2) | JSON_PRESERVE_ORDER, &out) < 0) {
			fprintf(stderr, "kernelbot changes: out of memory\n");
			goto out;
		}
		printf("%s\n", buf_cstr(&out));
	} else {
		for (size_t i = 0; i < ch.n; i++)
			printf("%-8s %s %s %s\n",
			    modules_reason_name(ch.v[i].reason), ch.v[i].path,
			    ch.v[i].class_name, ch.v[i].slug);
	}
	rc = 0;
out:
	json_decref(arr);
	buf_free(&out);
	modules_changes_free(&ch);
	gitops_close(repo);
	return rc;
}
