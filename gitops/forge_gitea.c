/*
 * gitops/forge_gitea.c: the Gitea (and Forgejo) API v1 at api_url
 * (https://HOST/api/v1; there is no default).
 *
 *   GET   /repos/{o}/{r}/pulls?state=open       (paginated; matched on head.ref)
 *   POST  /repos/{o}/{r}/pulls                  {head, base, title, body}
 *   PATCH /repos/{o}/{r}/pulls/{n}              {title?, body?}
 *   GET   /repos/{o}/{r}/labels; POST /repos/{o}/{r}/issues/{n}/labels {labels: [ids]}
 *   POST  /repos/{o}/{r}/pulls/{n}/requested_reviewers {reviewers}
 *   GET   /repos/{o}/{r}/issues/{n}/comments
 *   POST  /repos/{o}/{r}/issues/{n}/comments    {body}
 *   PATCH /repos/{o}/{r}/issues/comments/{id}   {body}
 *   POST  /repos/{o}/{r}/statuses/{sha}         {state, context, description, target_url}
 *   GET   /repos/{o}/{r}/collaborators/{user}/permission
 *   POST  /repos/{o}/{r}/issues/comments/{id}/reactions {content}
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/http.h"
#include "common/jsonx.h"
#include "gitops/forge_internal.h"

#define GT_DESC_MAX 255

struct gt {
	char *owner, *name;	/* URL-escaped */
	char *git_user;
};

static const char *const gt_headers[] = {
	"Accept: application/json",
	NULL,
};

static struct gt *
GT(struct forge *f)
{
	return f->priv;
}

static int
gt_auth_header(struct forge *f, struct buf *hdr, char *err, size_t errlen)
{
	(void)err;
	(void)errlen;
	return buf_printf(hdr, "Authorization: token %s", f->token);
}

static int
gt_git_cred(struct forge *f, struct gitops_cred *out, char *err, size_t errlen)
{
	(void)err;
	(void)errlen;
	out->username = GT(f)->git_user;
	out->password = f->token;
	return 0;
}

/* Gitea takes label ids: map the names through the repository's labels. */
static int
gt_add_labels(struct forge *f, long long n, const json_t *names, char *err,
    size_t errlen)
{
	struct forge_reply r = { 0, NULL, "" };
	json_t *ids = json_array(), *req, *it, *name;
	char url[512];
	size_t i, k;
	int rc;

	snprintf(url, sizeof(url), "/repos/%s/%s/labels?limit=50", GT(f)->owner,
	    GT(f)->name);
	if ((rc = forge_request(f, "GET", url, NULL, NULL, 0, &r, err, errlen)) < 0)
		goto out;
	json_array_foreach(names, k, name)
		json_array_foreach(r.json, i, it)
			if (!strcmp(jsonx_str(it, "name", ""), json_string_value(name)))
				json_array_append_new(ids,
				    json_integer(jsonx_int(it, "id", 0)));
	forge_reply_free(&r);
	if (!json_array_size(ids))
		goto out;	/* labels the repository does not have are skipped */
	snprintf(url, sizeof(url), "/repos/%s/%s/issues/%lld/labels",
	    GT(f)->owner, GT(f)->name, n);
	req = json_pack("{s:O}", "labels", ids);
	rc = forge_request(f, "POST", url, req, NULL, FORGE_RETRY_404, &r, err,
	    errlen);
	json_decref(req);
	forge_reply_free(&r);
out:
	json_decref(ids);
	return rc;
}

static int
gt_pr_upsert(struct forge *f, const struct forge_pr_req *q, struct forge_pr *out,
    char *err, size_t errlen)
{
	char list[512], create[512], edit[512];
	struct forge_ghpr api = { list, create, edit, NULL, gt_add_labels };

	/* No server-side head filter in older Gitea: page through open PRs. */
	snprintf(list, sizeof(list), "/repos/%s/%s/pulls?state=open&limit=50",
	    GT(f)->owner, GT(f)->name);
	snprintf(create, sizeof(create), "/repos/%s/%s/pulls", GT(f)->owner,
	    GT(f)->name);
	snprintf(edit, sizeof(edit), "/repos/%s/%s/pulls/", GT(f)->owner,
	    GT(f)->name);
	return forge_pr_ghlike(f, q, &api, out, err, errlen);
}

static int
gt_comment_upsert(struct forge *f, long long pr, const char *marker,
    const char *body, struct forge_comment *out, char *err, size_t errlen)
{
	char list[512], edit[512];

	snprintf(list, sizeof(list), "/repos/%s/%s/issues/%lld/comments",
	    GT(f)->owner, GT(f)->name, pr);
	snprintf(edit, sizeof(edit), "/repos/%s/%s/issues/comments/",
	    GT(f)->owner, GT(f)->name);
	return forge_comment_generic(f, list, list, edit, "PATCH", marker, body,
	    out, err, errlen);
}

static int
gt_status_set(struct forge *f, const char *sha, enum forge_state st,
    const char *context, const char *description, const char *target_url,
    char *err, size_t errlen)
{
	/* "warning": Gitea's one non-success state that is not a failure */
	static const char *const states[] = { "pending", "success", "failure",
		"error", "warning" };
	char url[512];

	snprintf(url, sizeof(url), "/repos/%s/%s/statuses/%s", GT(f)->owner,
	    GT(f)->name, sha);
	return forge_status_post(f, url, states[st], "context", context,
	    description, GT_DESC_MAX, target_url, err, errlen);
}

static int
gt_permission(struct forge *f, const char *user, enum forge_perm *out,
    char *err, size_t errlen)
{
	char url[512];

	snprintf(url, sizeof(url), "/repos/%s/%s/collaborators/%s/permission",
	    GT(f)->owner, GT(f)->name, user);
	return forge_permission_get(f, url, out, err, errlen);
}

static int
gt_react(struct forge *f, long long pr, long long comment_id,
    const char *reaction, char *err, size_t errlen)
{
	char url[512];

	(void)pr;
	snprintf(url, sizeof(url), "/repos/%s/%s/issues/comments/%lld/reactions",
	    GT(f)->owner, GT(f)->name, comment_id);
	return forge_post_one(f, url, "content", reaction, FORGE_RETRY_404, err,
	    errlen);
}

static int
gt_pr_get(struct forge *f, long long number, struct forge_pr_info *out,
    char *err, size_t errlen)
{
	char url[512];

	snprintf(url, sizeof(url), "/repos/%s/%s/pulls/%lld", GT(f)->owner,
	    GT(f)->name, number);
	return forge_pr_get_ghlike(f, url, out, err, errlen);
}

static void
gt_close(struct forge *f)
{
	struct gt *g = GT(f);

	if (!g)
		return;
	free(g->owner);
	free(g->name);
	free(g->git_user);
	free(g);
}

static const struct forge_ops gt_ops = {
	.pr_upsert = gt_pr_upsert,
	.comment_upsert = gt_comment_upsert,
	.status_set = gt_status_set,
	.permission = gt_permission,
	.react = gt_react,
	.pr_get = gt_pr_get,
	.auth_header = gt_auth_header,
	.git_cred = gt_git_cred,
	.close = gt_close,
};

int
forge_gitea_init(struct forge *f, const json_t *conf, char *err, size_t errlen)
{
	struct gt *g;
	char *owner = NULL, *name = NULL;
	const char *gu;
	int rc;

	f->ops = &gt_ops;
	f->std_headers = gt_headers;
	if (!(g = calloc(1, sizeof(*g))))
		return -ENOMEM;
	f->priv = g;
	if (!f->api_url)
		return forge_fail(-EINVAL, err, errlen, "forges.gitea.api_url: "
		    "required (https://HOST/api/v1)");
	if (!f->token)
		return forge_fail(-EINVAL, err, errlen, "forges.gitea: needs "
		    "token_file or token_env");
	if ((rc = forge_conf_str(f, conf, "git_user", 0, &gu, err, errlen)) < 0)
		return rc;
	if ((rc = forge_split_repo(f, &owner, &name)) < 0)
		return rc;
	g->owner = http_escape(owner);
	g->name = http_escape(name);
	g->git_user = strdup(gu ? gu : "oauth2");
	free(owner);
	free(name);
	if (!g->owner || !g->name || !g->git_user)
		return -ENOMEM;
	return 0;
}
