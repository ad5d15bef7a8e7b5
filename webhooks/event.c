#include "webhooks/event.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "common/jsonx.h"
#include "webhooks/forges.h"

const char *
wh_event_label(enum config_forge forge, const char *event)
{
	const struct wh_forge *f = wh_forge(forge);
	const char *const *list = f ? f->events : NULL;

	if (!event || !list)
		return "other";
	for (; *list; list++)
		if (!strcmp(*list, event))
			return *list;
	return "other";
}

void
wh_event_free(struct wh_event *ev)
{
	if (!ev)
		return;
	free(ev->command);
	free(ev->args);
	json_decref(ev->root);
	memset(ev, 0, sizeof(*ev));
}

/* Required string at a dotted path, or -EINVAL naming it. */
static int
need_str(const json_t *root, const char *path, const char **out, char *err,
    size_t errlen)
{
	json_t *v = jsonx_path(root, path);

	if (!json_is_string(v) || !json_string_length(v) ||
	    strlen(json_string_value(v)) != json_string_length(v)) {
		snprintf(err, errlen, "%s: %s", path,
		    v ? "must be a non-empty string" : "missing");
		return -EINVAL;
	}
	*out = json_string_value(v);
	return 0;
}

static int
need_int(const json_t *root, const char *path, int64_t *out, char *err,
    size_t errlen)
{
	json_t *v = jsonx_path(root, path);

	if (!json_is_integer(v)) {
		snprintf(err, errlen, "%s: %s", path, v ? "must be an integer" : "missing");
		return -EINVAL;
	}
	*out = json_integer_value(v);
	return 0;
}

/* A commit id: 40 (SHA-1) or 64 (SHA-256) hex digits. */
static int
need_sha(const json_t *root, const char *path, const char **out, char *err,
    size_t errlen)
{
	const char *s;
	size_t n;
	int error;

	if ((error = need_str(root, path, &s, err, errlen)) < 0)
		return error;
	n = strlen(s);
	for (size_t i = 0; i < n; i++)
		if (!isxdigit((unsigned char)s[i]))
			n = 0;
	if (n != 40 && n != 64) {
		snprintf(err, errlen, "%s: not a commit id", path);
		return -EINVAL;
	}
	*out = s;
	return 0;
}

static int
is_zero_sha(const char *s)
{
	return strspn(s, "0") == strlen(s);
}

static void
ignore(struct wh_event *ev, const char *why)
{
	ev->kind = WH_IGNORED;
	ev->reason = why;
}

int
wh_command_parse(const char *body, char **command, char **args)
{
	const char *p = body, *w, *e;
	size_t wl, al;
	char *c, *a;

	while (*p == ' ' || *p == '\t' || *p == '\r' || *p == '\n')
		p++;
	if (strncmp(p, WH_COMMAND_PREFIX, strlen(WH_COMMAND_PREFIX)))
		return 0;
	p += strlen(WH_COMMAND_PREFIX);
	if (*p != ' ' && *p != '\t')
		return 0;
	while (*p == ' ' || *p == '\t')
		p++;
	for (w = p; isalnum((unsigned char)*p) || *p == '-' || *p == '_'; p++)
		;
	wl = (size_t)(p - w);
	if (wl == 0 || wl > WH_MAX_COMMAND || (*p && !isspace((unsigned char)*p)))
		return 0;
	while (*p == ' ' || *p == '\t')
		p++;
	for (e = p; *e && *e != '\n' && *e != '\r'; e++)
		;
	while (e > p && (e[-1] == ' ' || e[-1] == '\t'))
		e--;
	al = (size_t)(e - p);
	/* Longer arguments keep one byte past the limit: the coordinator
	 * refuses them with a reply instead of obeying a cut command. */
	if (al > WH_MAX_ARGS)
		al = WH_MAX_ARGS + 1;
	if (!(c = strndup(w, wl)) || !(a = strndup(p, al))) {
		free(c);
		return -ENOMEM;
	}
	for (char *q = c; *q; q++)
		*q = (char)tolower((unsigned char)*q);
	*command = c;
	*args = a;
	return 1;
}

/*
 * The command in the comment body at path of r, if any. A NUL byte on the
 * command's line ends the C string there: the command would be obeyed cut
 * short (`/kernelbot opt\u0000imize x` as `opt`), so such a comment is
 * not taken as a command.
 */
static int
comment_command(struct wh_event *ev, const json_t *r, const char *path)
{
	const json_t *node = jsonx_path(r, path);
	const char *body = json_is_string(node) ? json_string_value(node) : "";
	size_t len = json_is_string(node) ? json_string_length(node) : 0;
	int rc = wh_command_parse(body, &ev->command, &ev->args);

	if (rc < 0)
		return rc;
	if (rc == 0) {
		ignore(ev, "comment is not a /kernelbot command");
	} else if (strlen(body) < len && !strpbrk(body + strspn(body, " \t\r\n"), "\r\n")) {
		free(ev->command);
		free(ev->args);
		ev->command = ev->args = NULL;
		ignore(ev, "a NUL byte in the /kernelbot command's line");
	} else {
		ev->kind = WH_COMMAND;
	}
	return 0;
}

/* GitHub and Gitea share the push payload's shape. */
static int
push_common(struct wh_event *ev, char *err, size_t errlen)
{
	const json_t *r = ev->root;
	int error;

	if ((error = need_str(r, "repository.full_name", &ev->repo, err, errlen)) < 0 ||
	    (error = need_str(r, "repository.clone_url", &ev->clone_url, err, errlen)) < 0 ||
	    (error = need_str(r, "repository.default_branch", &ev->default_branch, err, errlen)) < 0 ||
	    (error = need_str(r, "ref", &ev->ref, err, errlen)) < 0 ||
	    (error = need_sha(r, "before", &ev->before, err, errlen)) < 0 ||
	    (error = need_sha(r, "after", &ev->after, err, errlen)) < 0)
		return error;
	ev->pusher = jsonx_str(r, "pusher.name", jsonx_str(r, "pusher.login", NULL));
	return 0;
}

static void
push_classify(struct wh_event *ev)
{
	size_t bl = strlen(ev->default_branch);

	if (strncmp(ev->ref, "refs/heads/", 11) || strlen(ev->ref) != 11 + bl ||
	    strcmp(ev->ref + 11, ev->default_branch))
		ignore(ev, "not a push to the default branch");
	else if (is_zero_sha(ev->after))
		ignore(ev, "branch deleted");
	else
		ev->kind = WH_PUSH;
}

/* GitHub's and Gitea's head.repo vs base.repo; a deleted fork has head.repo null. */
static int
pr_is_fork(const json_t *pr)
{
	const char *head = jsonx_str(pr, "head.repo.full_name", NULL);
	const char *base = jsonx_str(pr, "base.repo.full_name", NULL);

	return !head || !base || strcasecmp(head, base) != 0;
}

static int
parse_hub(enum config_forge forge, const char *event, struct wh_event *ev,
    char *err, size_t errlen)
{
	const json_t *r = ev->root;
	const char *action;
	json_t *pr;
	int error;

	if (!strcmp(event, "push")) {
		if ((error = push_common(ev, err, errlen)) < 0)
			return error;
		push_classify(ev);
		return 0;
	}
	if (!strcmp(event, "issue_comment")) {
		if ((error = need_str(r, "repository.full_name", &ev->repo, err, errlen)) < 0 ||
		    (error = need_str(r, "action", &action, err, errlen)) < 0 ||
		    (error = need_int(r, "issue.number", &ev->pr, err, errlen)) < 0 ||
		    (error = need_str(r, "comment.user.login", &ev->actor, err, errlen)) < 0 ||
		    (error = need_int(r, "comment.id", &ev->comment_id, err, errlen)) < 0)
			return error;
		ev->author_association = jsonx_str(r, "comment.author_association", NULL);
		if (strcmp(action, "created"))
			ignore(ev, "comment not newly created");
		else if (!json_is_object(jsonx_path(r, "issue.pull_request")) &&
		    !(wh_forge(forge)->comment_on_pull &&
		    jsonx_bool(r, wh_forge(forge)->comment_on_pull, 0)))
			ignore(ev, "comment on an issue, not a pull request");
		else
			return comment_command(ev, r, "comment.body");
		return 0;
	}
	if (!strcmp(event, "pull_request")) {
		if ((error = need_str(r, "repository.full_name", &ev->repo, err, errlen)) < 0 ||
		    (error = need_str(r, "action", &action, err, errlen)) < 0 ||
		    (error = need_int(r, "number", &ev->pr, err, errlen)) < 0)
			return error;
		if (!json_is_object(pr = jsonx_path(r, "pull_request"))) {
			snprintf(err, errlen, "pull_request: missing");
			return -EINVAL;
		}
		ev->head_ref = jsonx_str(pr, "head.ref", NULL);
		ev->head_sha = jsonx_str(pr, "head.sha", NULL);
		ev->merged = jsonx_bool(pr, "merged", 0);
		ev->fork = pr_is_fork(pr);
		if (strcmp(action, "closed"))
			ignore(ev, "pull request not closed");
		else if (ev->fork)
			ignore(ev, "fork pull request");
		else
			ev->kind = WH_CLEANUP;
		return 0;
	}
	ev->repo = jsonx_str(r, "repository.full_name", NULL);
	ignore(ev, !strcmp(event, "ping") ? "ping" : "event not handled");
	return 0;
}

static int
parse_gitlab(const char *event, struct wh_event *ev, char *err, size_t errlen)
{
	const json_t *r = ev->root;
	const char *type, *action;
	int64_t src, dst;
	int error;

	if ((error = need_str(r, "project.path_with_namespace", &ev->repo, err, errlen)) < 0)
		return error;
	if (!strcmp(event, "Push Hook")) {
		if ((error = need_str(r, "project.git_http_url", &ev->clone_url, err, errlen)) < 0 ||
		    (error = need_str(r, "project.default_branch", &ev->default_branch, err, errlen)) < 0 ||
		    (error = need_str(r, "ref", &ev->ref, err, errlen)) < 0 ||
		    (error = need_sha(r, "before", &ev->before, err, errlen)) < 0 ||
		    (error = need_sha(r, "after", &ev->after, err, errlen)) < 0)
			return error;
		ev->pusher = jsonx_str(r, "user_username", NULL);
		push_classify(ev);
		return 0;
	}
	if (!strcmp(event, "Note Hook")) {
		if ((error = need_str(r, "object_attributes.noteable_type", &type, err, errlen)) < 0)
			return error;
		if (strcmp(type, "MergeRequest")) {
			ignore(ev, "comment not on a merge request");
			return 0;
		}
		if ((error = need_str(r, "user.username", &ev->actor, err, errlen)) < 0 ||
		    (error = need_int(r, "object_attributes.id", &ev->comment_id, err, errlen)) < 0 ||
		    (error = need_int(r, "merge_request.iid", &ev->pr, err, errlen)) < 0 ||
		    (error = need_int(r, "merge_request.source_project_id", &src, err, errlen)) < 0 ||
		    (error = need_int(r, "merge_request.target_project_id", &dst, err, errlen)) < 0)
			return error;
		action = jsonx_str(r, "object_attributes.action", "create");
		ev->fork = src != dst;
		if (strcmp(action, "create"))
			ignore(ev, "comment not newly created");
		else if (ev->fork)
			ignore(ev, "fork merge request");
		else
			return comment_command(ev, r, "object_attributes.note");
		return 0;
	}
	if (!strcmp(event, "Merge Request Hook")) {
		if ((error = need_int(r, "object_attributes.iid", &ev->pr, err, errlen)) < 0 ||
		    (error = need_int(r, "object_attributes.source_project_id", &src, err, errlen)) < 0 ||
		    (error = need_int(r, "object_attributes.target_project_id", &dst, err, errlen)) < 0)
			return error;
		action = jsonx_str(r, "object_attributes.action", "");
		ev->head_ref = jsonx_str(r, "object_attributes.source_branch", NULL);
		ev->head_sha = jsonx_str(r, "object_attributes.last_commit.id", NULL);
		ev->merged = !strcmp(action, "merge");
		ev->fork = src != dst;
		if (strcmp(action, "close") && strcmp(action, "merge"))
			ignore(ev, "merge request not closed");
		else if (ev->fork)
			ignore(ev, "fork merge request");
		else
			ev->kind = WH_CLEANUP;
		return 0;
	}
	ignore(ev, "event not handled");
	return 0;
}

int
wh_event_parse(enum config_forge forge, const char *event, const char *body,
    size_t len, struct wh_event *out, char *err, size_t errlen)
{
	struct wh_event ev;
	char jerr[200];
	int error;

	memset(&ev, 0, sizeof(ev));
	if (!event || !*event) {
		snprintf(err, errlen, "missing event header");
		return -EINVAL;
	}
	if (jsonx_parse(body, len, &ev.root, jerr, sizeof(jerr)) < 0) {
		snprintf(err, errlen, "body is not JSON: %s", jerr);
		return -EINVAL;
	}
	if (!json_is_object(ev.root)) {
		snprintf(err, errlen, "body is not a JSON object");
		error = -EINVAL;
		goto out;
	}
	if (wh_forge(forge)->dialect == WH_DIALECT_LAB)
		error = parse_gitlab(event, &ev, err, errlen);
	else
		error = parse_hub(forge, event, &ev, err, errlen);
out:
	if (error < 0) {
		wh_event_free(&ev);
		return error;
	}
	*out = ev;
	return 0;
}

/* ------------------------------------------ names and URLs a forge sends */

/*
 * Whether repo is OWNER/NAME (GitLab GROUP/.../NAME, at most
 * WH_MAX_REPO_DEPTH segments) of segments a forge allows: letters, digits,
 * '.', '_', '-', none "." or ".." and none starting with '-' (no path
 * that climbs out of DATA_DIR/mirrors/OWNER/NAME.git, no option-like
 * argument). A leading '.' is a name forges allow: GitHub's org/.github.
 * None ends in '.' or ".git" either: the forges drop or refuse those
 * endings, so "acme/model." and "acme/model.git" would be other spellings
 * of acme/model (the fourth outside attack's F3).
 */
static int
repo_ok(enum config_forge forge, const char *repo)
{
	size_t segs = 1, len = 0;
	const char *p = repo;

	if (strlen(repo) > WH_MAX_REPO)
		return 0;
	for (;; p++) {
		if (*p == '/' || !*p) {
			if (len == 0 || (len <= 2 && !strncmp(p - len, "..", len)) ||
			    p[-1] == '.' || (len >= 4 && !strncasecmp(p - 4, ".git", 4)))
				return 0;
			if (!*p)
				break;
			segs++;
			len = 0;
			continue;
		}
		if (!isalnum((unsigned char)*p) && !strchr("._-", *p))
			return 0;
		if (len++ == 0 && *p == '-')
			return 0;
	}
	return wh_forge(forge)->nested_groups ? segs >= 2 && segs <= WH_MAX_REPO_DEPTH :
	    segs == 2;
}

/*
 * Whether ref is a full ref name git takes (git-check-ref-format(1)):
 * "refs/..." of non-empty components, none starting with '.' or ending in
 * ".lock", no "..", "@{", control characters, space or ~^:?*[\, not
 * ending in '/' or '.'. A forge sends nothing else, and a spelling git
 * would refuse ("refs/heads/main/") must not pass for the branch.
 */
static int
ref_ok(const char *ref)
{
	size_t len = 0, n = strlen(ref);

	if (strncmp(ref, "refs/", 5) || n > 1024 || ref[n - 1] == '.' ||
	    strstr(ref, "..") || strstr(ref, "@{"))
		return 0;
	for (const char *p = ref;; p++) {
		if (*p == '/' || !*p) {
			if (len == 0 || p[-len] == '.' ||
			    (len >= 5 && !strncmp(p - 5, ".lock", 5)))
				return 0;
			if (!*p)
				return 1;
			len = 0;
			continue;
		}
		if ((unsigned char)*p <= ' ' || *p == 0x7f || strchr("~^:?*[\\", *p))
			return 0;
		len++;
	}
}

/*
 * Whether a clone URL is one a forge sends: https, http, ssh or git with
 * a host, printable, no spaces. With local: also file:// and absolute
 * paths (the local forge's repositories are on this host).
 */
static int
clone_url_ok(const char *url, int local)
{
	static const char *const schemes[] = { "https://", "http://", "ssh://",
		"git://", NULL };
	const char *host = NULL;

	for (const char *p = url; *p; p++)
		if ((unsigned char)*p <= ' ' || *p == 0x7f)
			return 0;
	for (const char *const *sc = schemes; *sc; sc++)
		if (!strncasecmp(url, *sc, strlen(*sc)))
			host = url + strlen(*sc);
	if (host)
		return *host && *host != '/' && *host != '-';
	return local && (!strncasecmp(url, "file:///", 8) || *url == '/');
}

int
wh_event_check(const struct wh_event *ev, enum config_forge forge,
    int local_clone, char *err, size_t errlen)
{
	const struct wh_forge *f = wh_forge(forge);
	char branch[1024 + 12];

	if (ev->repo && !repo_ok(forge, ev->repo)) {
		snprintf(err, errlen, "%s: '%.100s' is not %s of letters, digits, "
		    "'.', '_' and '-' (none '.', '..', starting with '-' or "
		    "ending in '.' or '.git')", f->repo_key, ev->repo,
		    f->nested_groups ? "GROUP/NAME" : "OWNER/NAME");
		return -EINVAL;
	}
	if (ev->ref && !ref_ok(ev->ref)) {
		snprintf(err, errlen, "ref: '%.100s' is not a ref name git allows",
		    ev->ref);
		return -EINVAL;
	}
	if (ev->default_branch && (strlen(ev->default_branch) > 1000 ||
	    !ref_ok((snprintf(branch, sizeof(branch), "refs/heads/%s",
	    ev->default_branch), branch)))) {
		snprintf(err, errlen, "%s: '%.100s' is not a branch name git allows",
		    f->branch_key, ev->default_branch);
		return -EINVAL;
	}
	if (ev->kind == WH_PUSH && !clone_url_ok(ev->clone_url, local_clone)) {
		snprintf(err, errlen, "%s: '%.100s' is not an https, http, ssh or "
		    "git URL of a host", f->clone_key, ev->clone_url);
		return -EINVAL;
	}
	return 0;
}
