/*
 * kernelbot publish: put one module's result on its branch, pull request,
 * results comment and status, as the daemon does after a job; and
 * kernelbot forge: the single forge calls (permission, react, status,
 * comment) for scripts and for checking a forge configuration.
 */
#include <dirent.h>
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli/cli.h"
#include "common/buf.h"
#include "common/jsonx.h"
#include "common/yamldoc.h"
#include "gitops/deliver.h"
#include "gitops/forge.h"
#include "gitops/gitops.h"

#define PUBLISH_MAX_LIST 32

static const char publish_usage[] =
    "usage: kernelbot publish --config FILE --forge NAME --repo OWNER/NAME\n"
    "           --git-dir DIR --base SHA --base-branch BRANCH --module PATH\n"
    "           --files DIR --title TEXT --body-file FILE\n"
    "           [--class NAME] [--prefix PREFIX] [--message TEXT]\n"
    "           [--comment-file FILE] [--label L]... [--reviewer USER]...\n"
    "           [--status STATE --context NAME [--description TEXT]\n"
    "            [--target-url URL] [--status-sha SHA]]\n"
    "           [--name NAME --email EMAIL] [--json]\n"
    "\n"
    "Commits the files under DIR (paths relative to DIR) on top of SHA as\n"
    "branch PREFIX+SLUG (default kernelbot/), pushes it unless someone else\n"
    "has pushed to it, then creates or updates its pull request, its results\n"
    "comment and the status. FILE holds the server configuration (YAML);\n"
    "forges.NAME is the forge (docs/forges.md). STATE: pending, success,\n"
    "failure, error. Options [default]; those down to --body-file are required:\n"
    "  --config FILE           the server configuration\n"
    "  --forge NAME            its forges.NAME entry\n"
    "  --repo OWNER/NAME       the repository on the forge\n"
    "  --git-dir DIR           a clone whose origin the branch is pushed to\n"
    "  --base SHA              the commit the branch is built on\n"
    "  --base-branch BRANCH    the pull request's base\n"
    "  --module PATH           the module's path: the slug and the trailer\n"
    "  --files DIR             the files to commit, e.g. DIR/kernels/SLUG/...\n"
    "  --title TEXT, --body-file FILE   the pull request's title and body\n"
    "  --class NAME            the module's class [Model]\n"
    "  --prefix PREFIX         the branch's prefix [kernelbot/]\n"
    "  --message TEXT          the commit message [kernelbot: kernels for PATH]\n"
    "  --comment-file FILE     the results comment's body [no comment]\n"
    "  --label L, --reviewer USER   labels to add, reviewers to ask for (on\n"
    "                          creation); repeatable [none]\n"
    "  --status STATE, --context NAME   the commit status to set [none]\n"
    "  --description TEXT, --target-url URL   the status's text and link [none]\n"
    "  --status-sha SHA        the commit the status goes on [--base]\n"
    "  --name NAME, --email EMAIL   the commit's author\n"
    "                          [kernelbot <kernelbot@users.noreply.localhost>]\n"
    "  --json                  {slug, branch, outcome, commit, remote_tip, status,\n"
    "                          pr, comment}\n"
    "docs/commands/publish.md.\n";

static const char forge_usage[] =
    "usage: kernelbot forge --config FILE --forge NAME --repo OWNER/NAME ACTION\n"
    "  permission USER                  admin, write, read or none\n"
    "  react PR COMMENT_ID +1|eyes\n"
    "  status SHA STATE CONTEXT [DESCRIPTION [TARGET_URL]]\n"
    "  comment PR MARKER BODY_FILE\n"
    "  pr NUMBER                        {number, head_ref, base_ref, head_sha, state, fork}\n"
    "\n"
    "One call of forges.NAME's client (FILE: the server configuration) on the\n"
    "repository OWNER/NAME, all three required. STATE: pending, success,\n"
    "failure, error. docs/commands/forge.md.\n";

/* Open forges.NAME of the configuration file for repo. */
static int
open_forge(const char *config, const char *name, const char *repo,
    struct forge **out, const char *cmd)
{
	struct yamldoc *doc = NULL;
	char err[1024];
	json_t *conf;
	const char *driver;
	int rc;

	if (yamldoc_load(config, &doc, err, sizeof(err)) < 0) {
		fprintf(stderr, "kernelbot %s: %s\n", cmd, err);
		return -EINVAL;
	}
	conf = jsonx_path(yamldoc_root(doc), "forges");
	conf = json_object_get(conf, name);
	if (!json_is_object(conf)) {
		fprintf(stderr, "kernelbot %s: %s: no forges.%s mapping\n", cmd,
		    config, name);
		yamldoc_free(doc);
		return -EINVAL;
	}
	driver = jsonx_str(conf, "driver", name);
	if ((rc = forge_open(driver, conf, repo, out, err, sizeof(err))) < 0)
		fprintf(stderr, "kernelbot %s: %s\n", cmd, err);
	yamldoc_free(doc);
	return rc;
}

static char *
slurp_len(const char *path, size_t max, const char *cmd, size_t *len)
{
	struct buf b = BUF_INIT(max);
	char chunk[8192];
	FILE *f = fopen(path, "re");
	size_t n;

	if (!f) {
		fprintf(stderr, "kernelbot %s: %s: %s\n", cmd, path, strerror(errno));
		return NULL;
	}
	while ((n = fread(chunk, 1, sizeof(chunk), f)) > 0)
		if (buf_add(&b, chunk, n) < 0) {
			fprintf(stderr, "kernelbot %s: %s: larger than %zu bytes\n",
			    cmd, path, max);
			fclose(f);
			buf_free(&b);
			return NULL;
		}
	fclose(f);
	return buf_detach(&b, len);
}

static char *
slurp(const char *path, size_t max, const char *cmd)
{
	return slurp_len(path, max, cmd, NULL);
}

struct fileset {
	struct gitops_file v[PUBLISH_MAX_FILES];
	size_t n;
};

static int
collect(const char *root, const char *rel, struct fileset *fs)
{
	char dir[GITOPS_MAX_PATH], path[GITOPS_MAX_PATH * 2 + 2];
	struct dirent *e;
	DIR *d;
	int rc = 0;

	snprintf(dir, sizeof(dir), "%s%s%s", root, *rel ? "/" : "", rel);
	if (!(d = opendir(dir))) {
		fprintf(stderr, "kernelbot publish: %s: %s\n", dir, strerror(errno));
		return -errno;
	}
	while (rc == 0 && (e = readdir(d))) {
		char sub[GITOPS_MAX_PATH];
		struct stat sb;

		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		snprintf(sub, sizeof(sub), "%s%s%s", rel, *rel ? "/" : "", e->d_name);
		snprintf(path, sizeof(path), "%s/%s", root, sub);
		if (lstat(path, &sb) < 0)
			continue;
		if (S_ISDIR(sb.st_mode)) {
			rc = collect(root, sub, fs);
		} else if (S_ISREG(sb.st_mode)) {
			char *data;
			size_t len;

			if (fs->n >= PUBLISH_MAX_FILES) {
				fprintf(stderr, "kernelbot publish: more than %d files\n",
				    PUBLISH_MAX_FILES);
				rc = -E2BIG;
				break;
			}
			if (!(data = slurp_len(path, PUBLISH_MAX_FILE_BYTES, "publish",
			    &len))) {
				rc = -EIO;
				break;
			}
			fs->v[fs->n].path = strdup(sub);
			fs->v[fs->n].data = data;
			fs->v[fs->n].len = len;
			fs->v[fs->n].executable = (sb.st_mode & 0100) != 0;
			fs->n++;
		}
	}
	closedir(d);
	return rc;
}

static void
fileset_free(struct fileset *fs)
{
	for (size_t i = 0; i < fs->n; i++) {
		free((char *)fs->v[i].path);
		free((void *)fs->v[i].data);
	}
	fs->n = 0;
}

/*
 * What publish did, on stdout: the JSON of res, or one line (outcome,
 * branch, commit, the pull request and the comment); and on stderr, a
 * branch it could not update. 0, or -ENOMEM.
 */
static int
print_result(const struct deliver_result *res, int json)
{
	struct buf out = BUF_INIT(BUF_MAX_DEFAULT);
	json_t *j;
	int rc = 0;

	if (res->push.outcome == GITOPS_PUBLISH_MOVED)
		fprintf(stderr, "kernelbot publish: %s was not updated: its tip is "
		    "by %s; %s\n", res->branch, res->push.moved_by, res->have_pr ?
		    "said so in the pull request" : "and it has no pull request");
	if (json) {
		j = deliver_result_json(res);
		if (!j || jsonx_dump(j, JSON_INDENT(2) | JSON_PRESERVE_ORDER, &out) < 0)
			rc = -ENOMEM;
		else
			printf("%s\n", buf_cstr(&out));
		json_decref(j);
		buf_free(&out);
		return rc;
	}
	printf("%s %s %s", gitops_publish_outcome_name(res->push.outcome),
	    res->branch, res->push.commit);
	if (res->have_pr)
		printf(" pr #%lld %s %s", res->pr.number,
		    forge_result_name(res->pr.result), res->pr.url);
	if (res->have_comment)
		printf(" comment %lld %s", res->comment.id,
		    forge_result_name(res->comment.result));
	printf("\n");
	return 0;
}

int
cmd_publish(int argc, char **argv)
{
	enum { O_CONFIG = 256, O_FORGE, O_REPO, O_GITDIR, O_BASE, O_BBRANCH,
		O_MODULE, O_CLASS, O_PREFIX, O_FILES, O_TITLE, O_BODY, O_MESSAGE,
		O_COMMENT, O_LABEL, O_REVIEWER, O_STATUS, O_CONTEXT, O_DESC, O_URL,
		O_SSHA, O_NAME, O_EMAIL, O_JSON };
	static const struct option opts[] = {
		{ "config", required_argument, NULL, O_CONFIG },
		{ "forge", required_argument, NULL, O_FORGE },
		{ "repo", required_argument, NULL, O_REPO },
		{ "git-dir", required_argument, NULL, O_GITDIR },
		{ "base", required_argument, NULL, O_BASE },
		{ "base-branch", required_argument, NULL, O_BBRANCH },
		{ "module", required_argument, NULL, O_MODULE },
		{ "class", required_argument, NULL, O_CLASS },
		{ "prefix", required_argument, NULL, O_PREFIX },
		{ "files", required_argument, NULL, O_FILES },
		{ "title", required_argument, NULL, O_TITLE },
		{ "body-file", required_argument, NULL, O_BODY },
		{ "message", required_argument, NULL, O_MESSAGE },
		{ "comment-file", required_argument, NULL, O_COMMENT },
		{ "label", required_argument, NULL, O_LABEL },
		{ "reviewer", required_argument, NULL, O_REVIEWER },
		{ "status", required_argument, NULL, O_STATUS },
		{ "context", required_argument, NULL, O_CONTEXT },
		{ "description", required_argument, NULL, O_DESC },
		{ "target-url", required_argument, NULL, O_URL },
		{ "status-sha", required_argument, NULL, O_SSHA },
		{ "name", required_argument, NULL, O_NAME },
		{ "email", required_argument, NULL, O_EMAIL },
		{ "json", no_argument, NULL, O_JSON },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *config = NULL, *fname = NULL, *repo_name = NULL, *gitdir = NULL;
	const char *files_dir = NULL, *body_file = NULL, *comment_file = NULL;
	const char *status = NULL, *labels[PUBLISH_MAX_LIST + 1] = { NULL };
	const char *reviewers[PUBLISH_MAX_LIST + 1] = { NULL };
	struct deliver_req q;
	struct deliver_result res;
	struct fileset *fs;
	struct gitops_repo *repo = NULL;
	struct forge *forge = NULL;
	struct buf msg = BUF_INIT(BUF_MAX_SMALL);
	char *body = NULL, *comment = NULL, err[1024];
	char base[GITOPS_OID_HEX];
	size_t nl = 0, nr = 0;
	int c, json = 0, rc = 1;

	memset(&q, 0, sizeof(q));
	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case O_CONFIG: config = optarg; break;
		case O_FORGE: fname = optarg; break;
		case O_REPO: repo_name = optarg; break;
		case O_GITDIR: gitdir = optarg; break;
		case O_BASE: q.base_sha = optarg; break;
		case O_BBRANCH: q.base_branch = optarg; break;
		case O_MODULE: q.module_path = optarg; break;
		case O_CLASS: q.module_class = optarg; break;
		case O_PREFIX: q.branch_prefix = optarg; break;
		case O_FILES: files_dir = optarg; break;
		case O_TITLE: q.title = optarg; break;
		case O_BODY: body_file = optarg; break;
		case O_MESSAGE: q.message = optarg; break;
		case O_COMMENT: comment_file = optarg; break;
		case O_LABEL:
			if (nl < PUBLISH_MAX_LIST)
				labels[nl++] = optarg;
			break;
		case O_REVIEWER:
			if (nr < PUBLISH_MAX_LIST)
				reviewers[nr++] = optarg;
			break;
		case O_STATUS: status = optarg; break;
		case O_CONTEXT: q.status_context = optarg; break;
		case O_DESC: q.status_description = optarg; break;
		case O_URL: q.status_url = optarg; break;
		case O_SSHA: q.status_sha = optarg; break;
		case O_NAME: q.bot_name = optarg; break;
		case O_EMAIL: q.bot_email = optarg; break;
		case O_JSON: json = 1; break;
		case 'h':
			fputs(publish_usage, stdout);
			return 0;
		default:
			fputs(publish_usage, stderr);
			return EXIT_USAGE;
		}
	}
	if (!config || !fname || !repo_name || !gitdir || !q.base_sha ||
	    !q.base_branch || !q.module_path || !files_dir || !q.title ||
	    !body_file || optind != argc)
		return cli_usage_error("publish", "missing or extra arguments "
		    "(see kernelbot publish --help)");
	if (!!status != !!q.status_context)
		return cli_usage_error("publish", "--status and --context go together");
	if (status && forge_state_parse(status, &q.status_state) < 0)
		return cli_usage_error("publish", "--status: '%s' is not pending, "
		    "success, failure, error or neutral", status);
	if (!(fs = calloc(1, sizeof(*fs))))
		return 1;
	if (!(body = slurp(body_file, BUF_MAX_DEFAULT, "publish")) ||
	    (comment_file && !(comment = slurp(comment_file, BUF_MAX_DEFAULT,
	    "publish"))) || collect(files_dir, "", fs) < 0)
		goto out;
	if (open_forge(config, fname, repo_name, &forge, "publish") < 0)
		goto out;
	if (gitops_open(gitdir, &repo, err, sizeof(err)) < 0 ||
	    gitops_resolve(repo, q.base_sha, base, err, sizeof(err)) < 0) {
		fprintf(stderr, "kernelbot publish: %s\n", err);
		goto out;
	}
	q.base_sha = base;
	if (!q.message) {
		buf_printf(&msg, "kernelbot: kernels for %s\n\nOptimized kernels for "
		    "%s at %.12s, verified against the original module; see the "
		    "pull request for the speedups and the test results.\n",
		    q.module_path, q.module_path, base);
		q.message = buf_cstr(&msg);
	}
	q.repo = repo;
	q.forge = forge;
	q.body = body;
	q.comment = comment;
	q.files = fs->v;
	q.n_files = fs->n;
	q.labels = labels;
	q.reviewers = reviewers;
	if (deliver(&q, &res, err, sizeof(err)) < 0) {
		fprintf(stderr, "kernelbot publish: %s\n", err);
		goto out;
	}
	rc = print_result(&res, json) < 0;
out:
	buf_free(&msg);
	free(body);
	free(comment);
	fileset_free(fs);
	free(fs);
	gitops_close(repo);
	forge_close(forge);
	return rc;
}

static int
parse_ll(const char *s, long long *out)
{
	char *end;

	*out = strtoll(s, &end, 10);
	return *s && !*end && *out > 0 ? 0 : -EINVAL;
}

int
cmd_forge(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "config", required_argument, NULL, 'c' },
		{ "forge", required_argument, NULL, 'f' },
		{ "repo", required_argument, NULL, 'r' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *config = NULL, *fname = NULL, *repo = NULL, *act;
	struct forge *f = NULL;
	char err[1024] = "";
	long long a = 0, b = 0;
	int c, rc = -EINVAL, n;

	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case 'c': config = optarg; break;
		case 'f': fname = optarg; break;
		case 'r': repo = optarg; break;
		case 'h':
			fputs(forge_usage, stdout);
			return 0;
		default:
			fputs(forge_usage, stderr);
			return EXIT_USAGE;
		}
	}
	n = argc - optind;
	act = n > 0 ? argv[optind] : "";
	argv += optind;
	if (!config || !fname || !repo ||
	    !((!strcmp(act, "permission") && n == 2) ||
	    (!strcmp(act, "react") && n == 4 && !parse_ll(argv[1], &a) &&
	    !parse_ll(argv[2], &b)) ||
	    (!strcmp(act, "status") && n >= 4 && n <= 6) ||
	    (!strcmp(act, "comment") && n == 4 && !parse_ll(argv[1], &a)) ||
	    (!strcmp(act, "pr") && n == 2 && !parse_ll(argv[1], &a))))
		return cli_usage_error("forge", "bad arguments (see kernelbot forge "
		    "--help)");
	if (open_forge(config, fname, repo, &f, "forge") < 0)
		return 1;
	if (!strcmp(act, "permission")) {
		enum forge_perm p;

		if ((rc = forge_permission(f, argv[1], &p, err, sizeof(err))) == 0)
			printf("%s\n", forge_perm_name(p));
	} else if (!strcmp(act, "react")) {
		rc = forge_react(f, a, b, argv[3], err, sizeof(err));
	} else if (!strcmp(act, "status")) {
		enum forge_state st;

		if (forge_state_parse(argv[2], &st) < 0) {
			forge_close(f);
			return cli_usage_error("forge", "'%s' is not pending, success, "
			    "failure, error or neutral", argv[2]);
		}
		rc = forge_status_set(f, argv[1], st, argv[3], n > 4 ? argv[4] : "",
		    n > 5 ? argv[5] : NULL, err, sizeof(err));
	} else if (!strcmp(act, "pr")) {
		struct forge_pr_info pi;

		if ((rc = forge_pr_get(f, a, &pi, err, sizeof(err))) == 0)
			printf("{\"number\": %lld, \"head_ref\": \"%s\", \"base_ref\": "
			    "\"%s\", \"head_sha\": \"%s\", \"state\": \"%s\", "
			    "\"fork\": %s}\n", pi.number, pi.head_ref, pi.base_ref,
			    pi.head_sha, pi.state, pi.fork ? "true" : "false");
	} else {
		struct forge_comment cm;
		char *body = slurp(argv[3], BUF_MAX_DEFAULT, "forge");

		rc = body ? forge_comment_upsert(f, a, argv[2], body, &cm, err,
		    sizeof(err)) : -EIO;
		if (rc == 0)
			printf("%lld %s\n", cm.id, forge_result_name(cm.result));
		free(body);
	}
	if (rc < 0 && err[0])
		fprintf(stderr, "kernelbot forge: %s\n", err);
	forge_close(f);
	return rc < 0 ? 1 : 0;
}
