/*
 * gitops/forge_github.c: the GitHub REST API (api.github.com or a GitHub
 * Enterprise api_url), with a token or as a GitHub App.
 *
 * Endpoints (REST API version 2022-11-28):
 *   GET   /repos/{o}/{r}/pulls?state=open&head={o}:{branch}
 *   POST  /repos/{o}/{r}/pulls                       {title, head, base, body}
 *   PATCH /repos/{o}/{r}/pulls/{n}                   {title?, body?}
 *   POST  /repos/{o}/{r}/issues/{n}/labels           {labels}
 *   POST  /repos/{o}/{r}/pulls/{n}/requested_reviewers {reviewers}
 *   GET   /repos/{o}/{r}/issues/{n}/comments         (paginated)
 *   POST  /repos/{o}/{r}/issues/{n}/comments         {body}
 *   PATCH /repos/{o}/{r}/issues/comments/{id}        {body}
 *   POST  /repos/{o}/{r}/statuses/{sha}              {state, context, description, target_url}
 *   GET   /repos/{o}/{r}/commits/{sha}/check-runs?check_name=...  (App)
 *   POST  /repos/{o}/{r}/check-runs, PATCH /repos/{o}/{r}/check-runs/{id}  (App)
 *   GET   /repos/{o}/{r}/collaborators/{user}/permission
 *   POST  /repos/{o}/{r}/issues/comments/{id}/reactions {content}
 *   GET   /repos/{o}/{r}/installation; POST /app/installations/{id}/access_tokens (App)
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/http.h"
#include "common/jsonx.h"
#include "gitops/forge_internal.h"
#include "gitops/jwt.h"

#define GH_STATUS_DESC_MAX 140		/* GitHub's limit for a status description */
#define GH_TOKEN_SLACK_S 300		/* refresh an installation token this early */

struct gh {
	char *owner, *name;		/* URL-escaped */
	char *owner_raw;
	long long app_id;
	long installation_id;
	char *key_pem;			/* secret */
	char *inst_token;		/* secret: the installation token */
	long long inst_expires;		/* Unix seconds */
	char auth_fail[256];
};

static const char *const gh_headers[] = {
	"Accept: application/vnd.github+json",
	"X-GitHub-Api-Version: 2022-11-28",
	NULL,
};

static struct gh *
GH(struct forge *f)
{
	return f->priv;
}

/* "2016-07-11T22:14:10Z" -> Unix seconds, 0 when unparseable. */
static long long
parse_time(const char *s)
{
	struct tm tm;

	memset(&tm, 0, sizeof(tm));
	if (!s || !strptime(s, "%Y-%m-%dT%H:%M:%S", &tm))
		return 0;
	return (long long)timegm(&tm);
}

static int
app_token(struct forge *f, char *err, size_t errlen)
{
	struct gh *g = GH(f);
	struct forge_reply r = { 0, NULL, "" };
	char *jwt = NULL, auth[4096 + 32], url[512];
	const char *hv[] = { auth, NULL };
	const char *tok;
	int rc;

	if (g->inst_token && g->inst_expires - GH_TOKEN_SLACK_S > (long long)time(NULL))
		return 0;
	if ((rc = jwt_github_app(g->key_pem, strlen(g->key_pem), g->app_id,
	    (long long)time(NULL), &jwt, err, errlen)) < 0)
		return rc;
	snprintf(auth, sizeof(auth), "Authorization: Bearer %s", jwt);
	if (!g->installation_id) {
		snprintf(url, sizeof(url), "/repos/%s/%s/installation", g->owner,
		    g->name);
		if ((rc = forge_request(f, "GET", url, NULL, hv, FORGE_NO_AUTH, &r,
		    err, errlen)) < 0)
			goto out;
		g->installation_id = (long)jsonx_int(r.json, "id", 0);
		forge_reply_free(&r);
		if (g->installation_id <= 0) {
			rc = forge_fail(-EIO, err, errlen, "the App's installation "
			    "reply has no id");
			goto out;
		}
	}
	snprintf(url, sizeof(url), "/app/installations/%ld/access_tokens",
	    g->installation_id);
	if ((rc = forge_request(f, "POST", url, NULL, hv, FORGE_NO_AUTH, &r, err,
	    errlen)) < 0)
		goto out;
	tok = jsonx_str(r.json, "token", NULL);
	if (!tok || !*tok || strlen(tok) > FORGE_MAX_TOKEN) {
		rc = forge_fail(-EIO, err, errlen, "the access token reply has no "
		    "token");
		goto out;
	}
	if (g->inst_token) {
		explicit_bzero(g->inst_token, strlen(g->inst_token));
		free(g->inst_token);
	}
	g->inst_token = strdup(tok);
	g->inst_expires = parse_time(jsonx_str(r.json, "expires_at", NULL));
	if (!g->inst_expires)
		g->inst_expires = (long long)time(NULL) + 3000;	/* tokens last an hour */
	rc = g->inst_token ? 0 : -ENOMEM;
out:
	forge_reply_free(&r);
	if (jwt) {
		explicit_bzero(jwt, strlen(jwt));
		free(jwt);
	}
	explicit_bzero(auth, sizeof(auth));
	return rc;
}

static int
gh_auth_header(struct forge *f, struct buf *hdr, char *err, size_t errlen)
{
	struct gh *g = GH(f);
	int rc;

	if (g->key_pem) {
		if ((rc = app_token(f, err, errlen)) < 0)
			return rc;
		return buf_printf(hdr, "Authorization: Bearer %s", g->inst_token);
	}
	return buf_printf(hdr, "Authorization: Bearer %s", f->token);
}

static int
gh_git_cred(struct forge *f, struct gitops_cred *out, char *err, size_t errlen)
{
	struct gh *g = GH(f);
	int rc;

	if (g->key_pem && (rc = app_token(f, err, errlen)) < 0)
		return rc;
	out->username = "x-access-token";
	out->password = g->key_pem ? g->inst_token : f->token;
	return 0;
}

static int
gh_add_labels(struct forge *f, long long n, const json_t *names, char *err,
    size_t errlen)
{
	struct forge_reply r = { 0, NULL, "" };
	json_t *req = json_pack("{s:O}", "labels", names);
	char url[512];
	int rc;

	snprintf(url, sizeof(url), "/repos/%s/%s/issues/%lld/labels", GH(f)->owner,
	    GH(f)->name, n);
	rc = forge_request(f, "POST", url, req, NULL, FORGE_RETRY_404, &r, err,
	    errlen);
	forge_reply_free(&r);
	json_decref(req);
	return rc;
}

static int
gh_pr_upsert(struct forge *f, const struct forge_pr_req *q, struct forge_pr *out,
    char *err, size_t errlen)
{
	struct gh *g = GH(f);
	char list[1024], create[512], edit[512], *head = http_escape(q->head);
	struct forge_ghpr api = { list, create, edit, NULL, gh_add_labels };
	json_t *extra = json_pack("{s:b}", "maintainer_can_modify", 0);
	int rc;

	if (!head || !extra) {
		free(head);
		json_decref(extra);
		return forge_fail(-ENOMEM, err, errlen, "out of memory");
	}
	/* head=OWNER:BRANCH filters server-side; the match is checked anyway. */
	snprintf(list, sizeof(list), "/repos/%s/%s/pulls?state=open&head=%s:%s"
	    "&per_page=100", g->owner, g->name, g->owner, head);
	snprintf(create, sizeof(create), "/repos/%s/%s/pulls", g->owner, g->name);
	snprintf(edit, sizeof(edit), "/repos/%s/%s/pulls/", g->owner, g->name);
	api.create_extra = extra;
	rc = forge_pr_ghlike(f, q, &api, out, err, errlen);
	json_decref(extra);
	free(head);
	return rc;
}

static int
gh_comment_upsert(struct forge *f, long long pr, const char *marker,
    const char *body, struct forge_comment *out, char *err, size_t errlen)
{
	struct gh *g = GH(f);
	char list[512], create[512], edit[512];

	snprintf(list, sizeof(list), "/repos/%s/%s/issues/%lld/comments?per_page=100",
	    g->owner, g->name, pr);
	snprintf(create, sizeof(create), "/repos/%s/%s/issues/%lld/comments",
	    g->owner, g->name, pr);
	snprintf(edit, sizeof(edit), "/repos/%s/%s/issues/comments/", g->owner,
	    g->name);
	return forge_comment_generic(f, list, create, edit, "PATCH", marker, body,
	    out, err, errlen);
}

static int
check_run(struct forge *f, const char *sha, enum forge_state st,
    const char *context, const char *desc, const char *target_url, char *err,
    size_t errlen)
{
	struct gh *g = GH(f);
	struct forge_reply r = { 0, NULL, "" };
	char url[1024], *ctx = http_escape(context), *summary;
	json_t *req = NULL;
	long long id;
	int rc;

	if (!ctx || !(summary = forge_clip(f, NULL, desc))) {
		free(ctx);
		return forge_fail(-ENOMEM, err, errlen, "out of memory");
	}
	snprintf(url, sizeof(url), "/repos/%s/%s/commits/%s/check-runs?"
	    "check_name=%s&filter=latest", g->owner, g->name, sha, ctx);
	if ((rc = forge_request(f, "GET", url, NULL, NULL, 0, &r, err, errlen)) < 0)
		goto out;
	id = jsonx_int(json_array_get(json_object_get(r.json, "check_runs"), 0),
	    "id", 0);
	forge_reply_free(&r);
	req = json_pack("{s:s, s:{s:s, s:s}}", "status",
	    st == FORGE_PENDING ? "in_progress" : "completed", "output", "title",
	    context, "summary", summary[0] ? summary : context);
	if (st != FORGE_PENDING)
		json_object_set_new(req, "conclusion", json_string(
		    st == FORGE_SUCCESS ? "success" : st == FORGE_NEUTRAL ? "neutral" : "failure"));
	if (target_url)
		json_object_set_new(req, "details_url", json_string(target_url));
	if (id > 0) {
		snprintf(url, sizeof(url), "/repos/%s/%s/check-runs/%lld", g->owner,
		    g->name, id);
		rc = forge_request(f, "PATCH", url, req, NULL, 0, &r, err, errlen);
	} else {
		json_object_set_new(req, "name", json_string(context));
		json_object_set_new(req, "head_sha", json_string(sha));
		snprintf(url, sizeof(url), "/repos/%s/%s/check-runs", g->owner,
		    g->name);
		rc = forge_request(f, "POST", url, req, NULL, 0, &r, err, errlen);
	}
out:
	forge_reply_free(&r);
	json_decref(req);
	free(ctx);
	free(summary);
	return rc;
}

static int
gh_status_set(struct forge *f, const char *sha, enum forge_state st,
    const char *context, const char *description, const char *target_url,
    char *err, size_t errlen)
{
	/* commit statuses have no neutral state: "failure", the reason in the description */
	static const char *const states[] = { "pending", "success", "failure",
		"error", "failure" };
	char url[512];

	if (GH(f)->key_pem)
		return check_run(f, sha, st, context, description, target_url, err,
		    errlen);
	snprintf(url, sizeof(url), "/repos/%s/%s/statuses/%s", GH(f)->owner,
	    GH(f)->name, sha);
	return forge_status_post(f, url, states[st], "context", context,
	    description, GH_STATUS_DESC_MAX, target_url, err, errlen);
}

static int
gh_permission(struct forge *f, const char *user, enum forge_perm *out,
    char *err, size_t errlen)
{
	char url[512];

	snprintf(url, sizeof(url), "/repos/%s/%s/collaborators/%s/permission",
	    GH(f)->owner, GH(f)->name, user);
	return forge_permission_get(f, url, out, err, errlen);
}

static int
gh_react(struct forge *f, long long pr, long long comment_id,
    const char *reaction, char *err, size_t errlen)
{
	char url[512];

	(void)pr;
	snprintf(url, sizeof(url), "/repos/%s/%s/issues/comments/%lld/reactions",
	    GH(f)->owner, GH(f)->name, comment_id);
	return forge_post_one(f, url, "content", reaction, FORGE_RETRY_404, err,
	    errlen);
}

static int
gh_pr_get(struct forge *f, long long number, struct forge_pr_info *out,
    char *err, size_t errlen)
{
	char url[512];

	snprintf(url, sizeof(url), "/repos/%s/%s/pulls/%lld", GH(f)->owner,
	    GH(f)->name, number);
	return forge_pr_get_ghlike(f, url, out, err, errlen);
}

static void
gh_close(struct forge *f)
{
	struct gh *g = GH(f);

	if (!g)
		return;
	if (g->key_pem) {
		explicit_bzero(g->key_pem, strlen(g->key_pem));
		free(g->key_pem);
	}
	if (g->inst_token) {
		explicit_bzero(g->inst_token, strlen(g->inst_token));
		free(g->inst_token);
	}
	free(g->owner);
	free(g->name);
	free(g->owner_raw);
	free(g);
}

static const struct forge_ops gh_ops = {
	.pr_upsert = gh_pr_upsert,
	.comment_upsert = gh_comment_upsert,
	.status_set = gh_status_set,
	.permission = gh_permission,
	.react = gh_react,
	.pr_get = gh_pr_get,
	.auth_header = gh_auth_header,
	.git_cred = gh_git_cred,
	.close = gh_close,
};

int
forge_github_init(struct forge *f, const json_t *conf, char *err, size_t errlen)
{
	struct gh *g;
	const char *keyfile;
	char *owner = NULL, *name = NULL;
	long app_id = 0, inst = 0;
	int rc;

	f->ops = &gh_ops;
	f->std_headers = gh_headers;
	if (!(g = calloc(1, sizeof(*g))))
		return -ENOMEM;
	f->priv = g;
	if ((rc = forge_split_repo(f, &owner, &name)) < 0)
		return rc;
	if (strchr(owner, '/')) {
		rc = forge_fail(-EINVAL, err, errlen, "'%s' is not owner/name",
		    f->repo);
		goto out;
	}
	g->owner_raw = owner;
	owner = NULL;
	if (!(g->owner = http_escape(g->owner_raw)) || !(g->name = http_escape(name))) {
		rc = -ENOMEM;
		goto out;
	}
	if ((rc = forge_conf_long(f, conf, "app_id", 1, 2147483647L, &app_id, err,
	    errlen)) < 0 ||
	    (rc = forge_conf_long(f, conf, "installation_id", 1, 2147483647L, &inst,
	    err, errlen)) < 0 ||
	    (rc = forge_conf_str(f, conf, "private_key_file", 0, &keyfile, err,
	    errlen)) < 0)
		goto out;
	if (!app_id != !keyfile) {
		rc = forge_fail(-EINVAL, err, errlen, "forges.github: app_id and "
		    "private_key_file go together");
		goto out;
	}
	if (app_id && f->token) {
		rc = forge_fail(-EINVAL, err, errlen, "forges.github: a token and "
		    "an App (app_id) are exclusive");
		goto out;
	}
	if (!app_id && !f->token) {
		rc = forge_fail(-EINVAL, err, errlen, "forges.github: needs "
		    "token_file (or token_env), or app_id and private_key_file");
		goto out;
	}
	if (keyfile) {
		struct buf b = BUF_INIT(JWT_MAX_KEY);

		if ((rc = buf_read_regular(&b, keyfile)) < 0 || !b.len) {
			buf_free(&b);
			rc = forge_fail(rc < 0 && rc != -EFBIG ? rc : -EINVAL, err,
			    errlen, "forges.github.private_key_file: %s: %s", keyfile,
			    rc == 0 ? "empty" : rc == -EFBIG ? "too large" :
			    rc == -EINVAL ? "not a regular file" : strerror(-rc));
			goto out;
		}
		g->key_pem = buf_detach(&b, NULL);
		/* Sign once now, so a bad key is an error at open, not at first use. */
		{
			char *jwt = NULL;

			if ((rc = jwt_github_app(g->key_pem, strlen(g->key_pem), app_id,
			    (long long)time(NULL), &jwt, err, errlen)) < 0) {
				char why[256];

				snprintf(why, sizeof(why), "%s", err);
				rc = forge_fail(rc, err, errlen, "forges.github."
				    "private_key_file: %s", why);
				goto out;
			}
			free(jwt);
		}
	}
	g->app_id = app_id;
	g->installation_id = inst;
	rc = 0;
out:
	free(owner);
	free(name);
	return rc;
}
