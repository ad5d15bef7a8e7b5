#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/buf.h"
#include "webhooks/event.h"
#include "t.h"

static char *
fixture(const char *name, size_t *len)
{
	const char *root = getenv("KB_ROOT");
	char path[512], chunk[4096];
	struct buf b = BUF_INIT(1u << 20);
	FILE *f;
	size_t n;

	snprintf(path, sizeof(path), "%s/tests/fixtures/webhooks/%s", root ? root : ".", name);
	if (!(f = fopen(path, "r"))) {
		printf("cannot open %s\n", path);
		exit(1);
	}
	while ((n = fread(chunk, 1, sizeof(chunk), f)) > 0)
		buf_add(&b, chunk, n);
	fclose(f);
	return buf_detach(&b, len);
}

static int
parse_file(enum config_forge f, const char *event, const char *name,
    struct wh_event *ev)
{
	size_t len;
	char *body = fixture(name, &len), err[300];
	int rc = wh_event_parse(f, event, body, len, ev, err, sizeof(err));

	free(body);
	return rc;
}

static int
parse_str(enum config_forge f, const char *event, const char *body,
    struct wh_event *ev, char *err)
{
	return wh_event_parse(f, event, body, strlen(body), ev, err, 300);
}

int
main(void)
{
	struct wh_event ev;
	char err[300], *c, *a;

	/* GitHub */
	CHECK_INT("github push parses", parse_file(CONFIG_GITHUB, "push", "github-push.json", &ev), 0);
	CHECK_INT("github push is a push", ev.kind, WH_PUSH);
	CHECK_STR("repo", ev.repo, "acme/model");
	CHECK_STR("clone url", ev.clone_url, "https://github.com/acme/model.git");
	CHECK_STR("default branch", ev.default_branch, "main");
	CHECK_STR("before", ev.before, "6113728f27ae82c7b1a177c8d03f9e96e0adf246");
	CHECK_STR("after", ev.after, "76ae82c7b1a177c8d03f9e96e0adf2466113728f");
	CHECK_STR("pusher", ev.pusher, "alice");
	wh_event_free(&ev);
	CHECK_INT("branch push parses", parse_file(CONFIG_GITHUB, "push", "github-push-branch.json", &ev), 0);
	CHECK_INT("branch push ignored", ev.kind, WH_IGNORED);
	CHECK_STR("reason", ev.reason, "not a push to the default branch");
	wh_event_free(&ev);
	CHECK_INT("comment parses", parse_file(CONFIG_GITHUB, "issue_comment", "github-issue-comment.json", &ev), 0);
	CHECK_INT("comment is a command", ev.kind, WH_COMMAND);
	CHECK_STR("command word", ev.command, "optimize");
	CHECK_STR("args: first line only, CR cut", ev.args, "models/mlp.py --budget 20");
	CHECK_STR("actor", ev.actor, "alice");
	CHECK_STR("association", ev.author_association, "MEMBER");
	CHECK_INT("pr", ev.pr, 7);
	CHECK_INT("comment id", ev.comment_id, 1593822101);
	wh_event_free(&ev);
	CHECK_INT("pr closed parses", parse_file(CONFIG_GITHUB, "pull_request", "github-pull-request-closed.json", &ev), 0);
	CHECK_INT("pr closed is a cleanup", ev.kind, WH_CLEANUP);
	CHECK_STR("head ref", ev.head_ref, "kernelbot/mlp");
	CHECK_INT("merged", ev.merged, 1);
	CHECK_INT("pr number", ev.pr, 12);
	wh_event_free(&ev);
	CHECK_INT("fork pr parses", parse_file(CONFIG_GITHUB, "pull_request", "github-pull-request-fork.json", &ev), 0);
	CHECK_INT("fork pr ignored", ev.kind, WH_IGNORED);
	CHECK_INT("fork detected", ev.fork, 1);
	wh_event_free(&ev);
	CHECK_INT("ping parses", parse_file(CONFIG_GITHUB, "ping", "github-ping.json", &ev), 0);
	CHECK("ping ignored", ev.kind == WH_IGNORED && !strcmp(ev.reason, "ping"));
	wh_event_free(&ev);
	CHECK_INT("unknown event with JSON", parse_str(CONFIG_GITHUB, "star", "{}", &ev, err), 0);
	CHECK_INT("unknown event ignored", ev.kind, WH_IGNORED);
	wh_event_free(&ev);

	/* malformed */
	CHECK_INT("not JSON", parse_str(CONFIG_GITHUB, "push", "{\"ref\":", &ev, err), -EINVAL);
	CHECK("not JSON message", strstr(err, "body is not JSON") != NULL);
	CHECK_INT("array body", parse_str(CONFIG_GITHUB, "push", "[1]", &ev, err), -EINVAL);
	CHECK_INT("no event", parse_str(CONFIG_GITHUB, NULL, "{}", &ev, err), -EINVAL);
	CHECK_INT("push without repo", parse_str(CONFIG_GITHUB, "push", "{\"ref\":\"refs/heads/main\"}", &ev, err), -EINVAL);
	CHECK_STR("names the field", err, "repository.full_name: missing");
	CHECK_INT("push with a bad sha", parse_str(CONFIG_GITHUB, "push",
	    "{\"ref\":\"refs/heads/main\",\"before\":\"0000000000000000000000000000000000000000\","
	    "\"after\":\"zz\",\"repository\":{\"full_name\":\"a/b\",\"clone_url\":\"u\",\"default_branch\":\"main\"}}",
	    &ev, err), -EINVAL);
	CHECK_STR("bad sha message", err, "after: not a commit id");
	CHECK_INT("branch deletion parses", parse_str(CONFIG_GITHUB, "push",
	    "{\"ref\":\"refs/heads/main\",\"before\":\"1111111111111111111111111111111111111111\","
	    "\"after\":\"0000000000000000000000000000000000000000\",\"repository\":{\"full_name\":\"a/b\",\"clone_url\":\"u\",\"default_branch\":\"main\"}}",
	    &ev, err), 0);
	CHECK("branch deletion ignored", ev.kind == WH_IGNORED && !strcmp(ev.reason, "branch deleted"));
	wh_event_free(&ev);
	CHECK_INT("prefix of default branch is not it", parse_str(CONFIG_GITHUB, "push",
	    "{\"ref\":\"refs/heads/main2\",\"before\":\"1111111111111111111111111111111111111111\","
	    "\"after\":\"2222222222222222222222222222222222222222\",\"repository\":{\"full_name\":\"a/b\",\"clone_url\":\"u\",\"default_branch\":\"main\"}}",
	    &ev, err), 0);
	CHECK_INT("main2 ignored", ev.kind, WH_IGNORED);
	wh_event_free(&ev);
	CHECK_INT("issue comment (not PR)", parse_str(CONFIG_GITHUB, "issue_comment",
	    "{\"action\":\"created\",\"issue\":{\"number\":1},\"comment\":{\"id\":1,\"body\":\"/kernelbot retry\",\"user\":{\"login\":\"x\"}},"
	    "\"repository\":{\"full_name\":\"a/b\"}}", &ev, err), 0);
	CHECK("comment on an issue ignored", ev.kind == WH_IGNORED && strstr(ev.reason, "issue"));
	wh_event_free(&ev);
	CHECK_INT("edited comment", parse_str(CONFIG_GITHUB, "issue_comment",
	    "{\"action\":\"edited\",\"issue\":{\"number\":1,\"pull_request\":{}},\"comment\":{\"id\":1,\"body\":\"/kernelbot retry\",\"user\":{\"login\":\"x\"}},"
	    "\"repository\":{\"full_name\":\"a/b\"}}", &ev, err), 0);
	CHECK_INT("edited comment ignored", ev.kind, WH_IGNORED);
	wh_event_free(&ev);
	CHECK_INT("comment with a string number", parse_str(CONFIG_GITHUB, "issue_comment",
	    "{\"action\":\"created\",\"issue\":{\"number\":\"1\"},\"comment\":{\"id\":1,\"user\":{\"login\":\"x\"}},"
	    "\"repository\":{\"full_name\":\"a/b\"}}", &ev, err), -EINVAL);
	CHECK_STR("type error named", err, "issue.number: must be an integer");

	/* GitLab */
	CHECK_INT("gitlab push", parse_file(CONFIG_GITLAB, "Push Hook", "gitlab-push.json", &ev), 0);
	CHECK_INT("gitlab push kind", ev.kind, WH_PUSH);
	CHECK_STR("gitlab repo with subgroup", ev.repo, "acme/ml/model");
	CHECK_STR("gitlab clone url", ev.clone_url, "https://gitlab.example.com/acme/ml/model.git");
	CHECK_STR("gitlab after", ev.after, "da1560886d4f094c3e6c9ef40349f7d38b5d27d7");
	wh_event_free(&ev);
	CHECK_INT("gitlab note", parse_file(CONFIG_GITLAB, "Note Hook", "gitlab-note.json", &ev), 0);
	CHECK_INT("gitlab note is a command", ev.kind, WH_COMMAND);
	CHECK_STR("gitlab command", ev.command, "benchmark");
	CHECK_STR("gitlab no args", ev.args, "");
	CHECK_STR("gitlab actor", ev.actor, "root");
	CHECK_INT("gitlab mr iid", ev.pr, 1);
	CHECK("gitlab has no association", ev.author_association == NULL);
	wh_event_free(&ev);
	CHECK_INT("gitlab mr merged", parse_file(CONFIG_GITLAB, "Merge Request Hook", "gitlab-merge-request.json", &ev), 0);
	CHECK_INT("gitlab mr cleanup", ev.kind, WH_CLEANUP);
	CHECK_STR("gitlab source branch", ev.head_ref, "kernelbot/norm");
	CHECK_INT("gitlab merged", ev.merged, 1);
	wh_event_free(&ev);
	CHECK_INT("gitlab fork note", parse_str(CONFIG_GITLAB, "Note Hook",
	    "{\"project\":{\"path_with_namespace\":\"a/b\"},\"user\":{\"username\":\"m\"},"
	    "\"object_attributes\":{\"id\":1,\"note\":\"/kernelbot optimize\",\"noteable_type\":\"MergeRequest\"},"
	    "\"merge_request\":{\"iid\":2,\"source_project_id\":99,\"target_project_id\":15}}", &ev, err), 0);
	CHECK("gitlab fork note ignored", ev.kind == WH_IGNORED && ev.fork);
	wh_event_free(&ev);
	CHECK_INT("gitlab note on an issue", parse_str(CONFIG_GITLAB, "Note Hook",
	    "{\"project\":{\"path_with_namespace\":\"a/b\"},\"object_attributes\":{\"noteable_type\":\"Issue\"}}",
	    &ev, err), 0);
	CHECK_INT("gitlab issue note ignored", ev.kind, WH_IGNORED);
	wh_event_free(&ev);
	CHECK_INT("gitlab without project", parse_str(CONFIG_GITLAB, "Push Hook", "{}", &ev, err), -EINVAL);
	CHECK_INT("gitlab other event", parse_str(CONFIG_GITLAB, "Pipeline Hook",
	    "{\"project\":{\"path_with_namespace\":\"a/b\"}}", &ev, err), 0);
	CHECK_INT("gitlab other ignored", ev.kind, WH_IGNORED);
	wh_event_free(&ev);

	/* Gitea */
	CHECK_INT("gitea push", parse_file(CONFIG_GITEA, "push", "gitea-push.json", &ev), 0);
	CHECK_INT("gitea push kind", ev.kind, WH_PUSH);
	CHECK_STR("gitea clone url", ev.clone_url, "https://gitea.example.com/acme/model.git");
	wh_event_free(&ev);
	CHECK_INT("gitea comment", parse_file(CONFIG_GITEA, "issue_comment", "gitea-issue-comment.json", &ev), 0);
	CHECK_INT("gitea command", ev.kind, WH_COMMAND);
	CHECK_STR("gitea command word", ev.command, "retry");
	wh_event_free(&ev);
	CHECK_INT("gitea pr closed", parse_file(CONFIG_GITEA, "pull_request", "gitea-pull-request-closed.json", &ev), 0);
	CHECK("gitea cleanup, not merged", ev.kind == WH_CLEANUP && !ev.merged);
	wh_event_free(&ev);

	/* the command grammar */
	CHECK_INT("plain", wh_command_parse("/kernelbot retry", &c, &a), 1);
	CHECK("plain parts", !strcmp(c, "retry") && !strcmp(a, ""));
	free(c), free(a);
	CHECK_INT("leading blank lines", wh_command_parse("\n\n  /kernelbot Optimize  a b  \nrest", &c, &a), 1);
	CHECK("lowercased, trimmed", !strcmp(c, "optimize") && !strcmp(a, "a b"));
	free(c), free(a);
	CHECK_INT("no space after prefix", wh_command_parse("/kernelbotretry", &c, &a), 0);
	CHECK_INT("prefix alone", wh_command_parse("/kernelbot", &c, &a), 0);
	CHECK_INT("prefix and spaces only", wh_command_parse("/kernelbot   ", &c, &a), 0);
	CHECK_INT("not at the start", wh_command_parse("please /kernelbot retry", &c, &a), 0);
	CHECK_INT("odd command word", wh_command_parse("/kernelbot re$try", &c, &a), 0);
	CHECK_INT("overlong command word", wh_command_parse(
	    "/kernelbot aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", &c, &a), 0);
	{
		/* Arguments past the limit keep one byte more: refused, not cut. */
		char body[2 * WH_MAX_ARGS];

		snprintf(body, sizeof(body), "/kernelbot optimize %0*d", WH_MAX_ARGS + 50, 7);
		CHECK_INT("overlong arguments", wh_command_parse(body, &c, &a), 1);
		CHECK_INT("kept one byte past the limit", strlen(a), WH_MAX_ARGS + 1);
		free(c), free(a);
	}
	/* A NUL on the command's line: not a command (it would be obeyed cut). */
	CHECK_INT("a NUL in the command word", parse_str(CONFIG_GITHUB, "issue_comment",
	    "{\"action\":\"created\",\"issue\":{\"number\":1,\"pull_request\":{}},\"comment\":"
	    "{\"id\":1,\"body\":\"/kernelbot opt\\u0000imize x\",\"user\":{\"login\":\"x\"}},"
	    "\"repository\":{\"full_name\":\"a/b\"}}", &ev, err), 0);
	CHECK("ignored, saying why", ev.kind == WH_IGNORED && strstr(ev.reason, "NUL"));
	wh_event_free(&ev);
	CHECK_INT("a NUL on a later line", parse_str(CONFIG_GITHUB, "issue_comment",
	    "{\"action\":\"created\",\"issue\":{\"number\":1,\"pull_request\":{}},\"comment\":"
	    "{\"id\":1,\"body\":\"/kernelbot retry\\nx\\u0000y\",\"user\":{\"login\":\"x\"}},"
	    "\"repository\":{\"full_name\":\"a/b\"}}", &ev, err), 0);
	CHECK("the command stands", ev.kind == WH_COMMAND && !strcmp(ev.command, "retry"));
	wh_event_free(&ev);

	/* attack F7: names and clone URLs no forge sends */
	{
		static const struct { enum config_forge f; const char *repo; int ok; } names[] = {
			{ CONFIG_GITHUB, "acme/model", 1 },
			{ CONFIG_GITHUB, "Acme-1/model_x.y", 1 },
			{ CONFIG_GITHUB, "acme/../../etc", 0 },
			{ CONFIG_GITHUB, "acme/..", 0 },
			{ CONFIG_GITHUB, "acme/.github", 1 },
			{ CONFIG_GITHUB, "acme/.", 0 },
			{ CONFIG_GITHUB, "./x", 0 },
			{ CONFIG_GITHUB, "acme/...", 0 },
			{ CONFIG_GITHUB, "acme/.x.", 0 },
			/* the fourth outside attack's F3: other spellings of acme/model */
			{ CONFIG_GITHUB, "acme/model.", 0 },
			{ CONFIG_GITHUB, "acme/model.git", 0 },
			{ CONFIG_GITEA, "acme/model.GIT", 0 },
			{ CONFIG_GITLAB, "acme.git/ml/model", 0 },
			{ CONFIG_GITHUB, "acme/model.gitx", 1 },
			{ CONFIG_GITHUB, "acme./model", 0 },
			{ CONFIG_GITHUB, "ACME/Model", 1 },
			{ CONFIG_GITHUB, "-acme/x", 0 },
			{ CONFIG_GITHUB, "acme/-x", 0 },
			{ CONFIG_GITHUB, "acme/x\nlevel=error", 0 },
			{ CONFIG_GITHUB, "acme/x y", 0 },
			{ CONFIG_GITHUB, "acme", 0 },
			{ CONFIG_GITHUB, "acme/", 0 },
			{ CONFIG_GITHUB, "/acme/x", 0 },
			{ CONFIG_GITHUB, "acme//x", 0 },
			{ CONFIG_GITHUB, "acme/ml/model", 0 },
			{ CONFIG_GITEA, "acme/ml/model", 0 },
			{ CONFIG_GITLAB, "acme/ml/model", 1 },
			{ CONFIG_GITLAB, "acme/ml/../x", 0 },
			{ CONFIG_GITLAB, "a/b/c/d/e/f/g/h/i/j/k/l/m/n/o/p/q/r/s/t/u", 1 },
			{ CONFIG_GITLAB, "a/b/c/d/e/f/g/h/i/j/k/l/m/n/o/p/q/r/s/t/u/v", 0 },
		};
		static const struct { const char *url; int local, ok; } urls[] = {
			{ "https://github.com/acme/model.git", 0, 1 },
			{ "HTTP://gitea.local:3000/acme/model.git", 0, 1 },
			{ "ssh://git@host/acme/model.git", 0, 1 },
			{ "git://host/acme/model.git", 0, 1 },
			{ "file:///etc/", 0, 0 },
			{ "/srv/git/model.git", 0, 0 },
			{ "ext::sh -c touch% /tmp/x", 0, 0 },
			{ "https:///etc", 0, 0 },
			{ "ssh://-oProxyCommand=x/y", 0, 0 },
			{ "https://host/a b", 0, 0 },
			{ "git@github.com:acme/model.git", 0, 0 },
			{ "file:///srv/git/model.git", 1, 1 },
			{ "/srv/git/model.git", 1, 1 },
			{ "ext::sh", 1, 0 },
		};
		struct wh_event e;

		for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
			memset(&e, 0, sizeof(e));
			e.repo = names[i].repo;
			if (!CHECK(names[i].repo, (wh_event_check(&e, names[i].f, 0, err,
			    sizeof(err)) == 0) == names[i].ok))
				printf("     err=\"%s\"\n", err);
		}
		for (size_t i = 0; i < sizeof(urls) / sizeof(urls[0]); i++) {
			memset(&e, 0, sizeof(e));
			e.kind = WH_PUSH;
			e.repo = "acme/model";
			e.clone_url = urls[i].url;
			CHECK(urls[i].url, (wh_event_check(&e, CONFIG_GITHUB, urls[i].local,
			    err, sizeof(err)) == 0) == urls[i].ok);
		}
		{
			static const struct { const char *ref, *branch; int ok; } refs[] = {
				{ "refs/heads/main", "main", 1 },
				{ "refs/heads/feature/x-1.2", "feature/x-1.2", 1 },
				{ "refs/heads/main/", "main/", 0 },
				{ "refs/heads/main", "main/", 0 },
				{ "refs/heads//main", "main", 0 },
				{ "refs/heads/main.", "main", 0 },
				{ "refs/heads/.main", "main", 0 },
				{ "refs/heads/main.lock", "main", 0 },
				{ "refs/heads/a..b", "main", 0 },
				{ "refs/heads/a@{1}", "main", 0 },
				{ "refs/heads/a b", "main", 0 },
				{ "refs/heads/a~1", "main", 0 },
				{ "refs/heads/a:b", "main", 0 },
				{ "refs/heads/a\\b", "main", 0 },
				{ "heads/main", "main", 0 },
				{ "refs/heads/main", "a*", 0 },
			};
			for (size_t i = 0; i < sizeof(refs) / sizeof(refs[0]); i++) {
				memset(&e, 0, sizeof(e));
				e.kind = WH_IGNORED;
				e.repo = "acme/model";
				e.ref = refs[i].ref;
				e.default_branch = refs[i].branch;
				if (!CHECK(refs[i].ref, (wh_event_check(&e, CONFIG_GITHUB, 0,
				    err, sizeof(err)) == 0) == refs[i].ok))
					printf("     branch=%s err=\"%s\"\n", refs[i].branch, err);
			}
			memset(&e, 0, sizeof(e));
			e.repo = "acme/model";
			e.ref = "refs/heads/main/";
			wh_event_check(&e, CONFIG_GITHUB, 0, err, sizeof(err));
			CHECK_STR("a bad ref: 400's reason", err,
			    "ref: 'refs/heads/main/' is not a ref name git allows");
			e.ref = "refs/heads/main";
			e.default_branch = "main/";
			wh_event_check(&e, CONFIG_GITLAB, 0, err, sizeof(err));
			CHECK_STR("a bad default branch: 400's reason", err,
			    "project.default_branch: 'main/' is not a branch name git allows");
			e.default_branch = NULL;
			e.clone_url = "ext::sh";
		}
		e.kind = WH_IGNORED;
		CHECK("an ignored push's URL is not looked at",
		    wh_event_check(&e, CONFIG_GITHUB, 0, err, sizeof(err)) == 0);
		e.repo = "acme/../../etc";
		wh_event_check(&e, CONFIG_GITHUB, 0, err, sizeof(err));
		CHECK_STR("the reason names the field", err, "repository.full_name: "
		    "'acme/../../etc' is not OWNER/NAME of letters, digits, '.', '_' "
		    "and '-' (none '.', '..', starting with '-' or ending in '.' or "
		    "'.git')");
		e.repo = "acme/x";
		e.kind = WH_PUSH;
		e.clone_url = "file:///etc/";
		wh_event_check(&e, CONFIG_GITLAB, 0, err, sizeof(err));
		CHECK_STR("GitLab's field", err, "project.git_http_url: 'file:///etc/' "
		    "is not an https, http, ssh or git URL of a host");
	}

	/* metrics labels are bounded */
	CHECK_STR("known label", wh_event_label(CONFIG_GITLAB, "Push Hook"), "Push Hook");
	CHECK_STR("unknown label", wh_event_label(CONFIG_GITHUB, "anything-at-all"), "other");
	CHECK_STR("missing label", wh_event_label(CONFIG_GITEA, NULL), "other");
	return t_done("test_wh_event");
}
