/*
 * kernelbot report OPTIMIZE_DIR... --module PATH [--class NAME]
 *                  [--slug SLUG] [--repo OWNER/NAME] [--commit SHA]
 *                  [--out DIR] [--json]
 *
 * What the coordinator would put in a module's pull request, built from
 * `kernelbot optimize --out` directories (pipeline/report/report.h), with
 * no forge: the files are written under DIR (DIR/kernels/SLUG/...) and the
 * PR's title, body, comment, commit message and status line next to them
 * (DIR/pr.json, DIR/pr.md). For reviewing a result by hand, and for
 * testing the generated drop-in module against a real kernel.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli/cli.h"
#include "common/fsx.h"
#include "common/jsonx.h"
#include "gitops/modules.h"
#include "pipeline/report/report.h"

static const char report_usage[] =
    "usage: kernelbot report OPTIMIZE_DIR... --module PATH [--class NAME] [--slug SLUG]\n"
    "                        [--repo OWNER/NAME] [--commit SHA] [--out DIR] [--json]\n"
    "\n"
    "What the coordinator puts in a module's pull request, built from its\n"
    "`kernelbot optimize --out` directories (one per backend or architecture),\n"
    "with no forge. Exit 0, 1 when a directory cannot be read, 2 for a usage\n"
    "error. Options [default]:\n"
    "  --module PATH           the module's repository path (required)\n"
    "  --class NAME            its class [Model]\n"
    "  --slug SLUG             kernels/SLUG/ and the branch [the module's slug]\n"
    "  --repo OWNER/NAME       the repository named in the manifest [none]\n"
    "  --commit SHA            the commit named in the manifest and texts [none]\n"
    "  --out DIR               write DIR/kernels/SLUG/, DIR/pr.json, DIR/pr.md\n"
    "                          [nothing written]\n"
    "  --json                  {improved, needs_review, title, message,\n"
    "                          status_description, files}\n"
    "docs/commands/report.md; what a PR holds: docs/pull-requests.md.\n";


static int
write_file(const char *dir, const char *rel, const void *data, size_t len)
{
	char path[4096];
	int error;

	if (snprintf(path, sizeof(path), "%s/%s", dir, rel) >= (int)sizeof(path))
		return -ENAMETOOLONG;
	if ((error = fsx_mkdir_parents(path, 0755)) < 0)
		return error;
	return fsx_write_file(path, data, len);
}

static json_t *
pr_json(const struct report_pr *p)
{
	json_t *files = json_array(), *j;

	for (size_t i = 0; i < p->n_files; i++)
		json_array_append_new(files, json_string(p->files[i].path));
	j = json_pack("{s:b,s:b,s:s,s:s,s:s,s:s,s:s,s:o}", "improved", p->improved,
	    "needs_review", p->needs_review, "title", p->title,
	    "body", p->body, "comment", p->comment, "message", p->message,
	    "status_description", p->status_description, "files", files);
	return j;
}

int
cmd_report(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "module", required_argument, NULL, 'm' },
		{ "class", required_argument, NULL, 'c' },
		{ "slug", required_argument, NULL, 's' },
		{ "repo", required_argument, NULL, 'r' },
		{ "commit", required_argument, NULL, 'C' },
		{ "out", required_argument, NULL, 'o' },
		{ "json", no_argument, NULL, 'j' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct report_module m = { 0 };
	struct report_pr p = { 0 };
	char slug[MODULES_MAX_SLUG + 1], err[1024];
	const char *out = NULL;
	struct buf b = BUF_INIT(64u << 20);
	json_t *j = NULL;
	int c, as_json = 0, rc = 1, error;

	optind = 1;
	while ((c = getopt_long(argc, argv, "o:h", longopts, NULL)) != -1) {
		switch (c) {
		case 'm': m.module_path = optarg; break;
		case 'c': m.module_class = optarg; break;
		case 's': m.slug = optarg; break;
		case 'r': m.repo = optarg; break;
		case 'C': m.commit = optarg; break;
		case 'o': out = optarg; break;
		case 'j': as_json = 1; break;
		case 'h':
			fputs(report_usage, stdout);
			return 0;
		default:
			fputs(report_usage, stderr);
			return EXIT_USAGE;
		}
	}
	if (!m.module_path || optind >= argc) {
		fputs(report_usage, stderr);
		return EXIT_USAGE;
	}
	if (!m.slug) {
		if (modules_slug(m.module_path, m.module_class, slug) < 0)
			return cli_usage_error("report", "--module %s: no slug can be made of it", m.module_path);
		m.slug = slug;
	}
	m.optimize_dirs = (const char *const *)argv + optind;
	m.n_dirs = (size_t)(argc - optind);
	if ((error = report_pr_build(&m, &p, err, sizeof(err))) < 0) {
		fprintf(stderr, "kernelbot report: %s\n", err);
		return error == -EINVAL && !strncmp(err, "report:", 7) ? EXIT_USAGE : 1;
	}
	if (!(j = pr_json(&p)))
		goto out;
	if (out) {
		for (size_t i = 0; i < p.n_files; i++)
			if ((error = write_file(out, p.files[i].path, p.files[i].data, p.files[i].len)) < 0) {
				fprintf(stderr, "kernelbot report: %s/%s: %s\n", out, p.files[i].path, strerror(-error));
				goto out;
			}
		if ((error = jsonx_dump(j, JSON_INDENT(2) | JSON_SORT_KEYS, &b)) < 0 ||
		    (error = write_file(out, "pr.json", b.data, b.len)) < 0) {
			fprintf(stderr, "kernelbot report: %s/pr.json: %s\n", out, strerror(-error));
			goto out;
		}
		buf_reset(&b);
		if ((error = buf_printf(&b, "# %s\n\n%s", p.title, p.body)) < 0 ||
		    (error = write_file(out, "pr.md", b.data, b.len)) < 0) {
			fprintf(stderr, "kernelbot report: %s/pr.md: %s\n", out, strerror(-error));
			goto out;
		}
		buf_reset(&b);
	}
	if (as_json) {
		json_object_del(j, "body");
		json_object_del(j, "comment");
		if (jsonx_dump(j, JSON_INDENT(2) | JSON_SORT_KEYS, &b) < 0)
			goto out;
		printf("%s\n", buf_cstr(&b));
	} else {
		printf("%s\n%s\n", p.title, p.status_description);
		for (size_t i = 0; i < p.n_files; i++)
			printf("%s%s%s\n", out ? out : "", out ? "/" : "", p.files[i].path);
	}
	rc = 0;
out:
	json_decref(j);
	buf_free(&b);
	report_pr_free(&p);
	return rc;
}
