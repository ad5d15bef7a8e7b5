/*
 * gitops/forge_gitlab.c: the GitLab REST API v4 (gitlab.com or api_url).
 * The project is addressed by its URL-encoded path ("group%2Fsub%2Frepo").
 *
 *   GET  /projects/:id/merge_requests?state=opened&source_branch=B
 *   POST /projects/:id/merge_requests        {source_branch, target_branch,
 *                                             title, description, labels, reviewer_ids}
 *   PUT  /projects/:id/merge_requests/:iid   {title?, description?, add_labels?}
 *   GET  /projects/:id/merge_requests/:iid/notes (paginated)
 *   POST /projects/:id/merge_requests/:iid/notes        {body}
 *   PUT  /projects/:id/merge_requests/:iid/notes/:note  {body}
 *   POST /projects/:id/statuses/:sha         {state, name, description, target_url}
 *   GET  /users?username=U, GET /projects/:id/members/all/:user_id
 *   POST /projects/:id/merge_requests/:iid/notes/:note/award_emoji {name}
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/http.h"
#include "common/jsonx.h"
#include "gitops/forge_internal.h"

#define GL_DESC_MAX 255

struct gl {
	char *project;		/* URL-encoded path */
};

static struct gl *
GL(struct forge *f)
{
	return f->priv;
}

static int
gl_auth_header(struct forge *f, struct buf *hdr, char *err, size_t errlen)
{
	(void)err;
	(void)errlen;
	return buf_printf(hdr, "PRIVATE-TOKEN: %s", f->token);
}

static int
gl_git_cred(struct forge *f, struct gitops_cred *out, char *err, size_t errlen)
{
	(void)err;
	(void)errlen;
	out->username = "oauth2";
	out->password = f->token;
	return 0;
}

/* The numeric id of user name, 0 when there is none. */
static int
user_id(struct forge *f, const char *name, long long *out, char *err,
    size_t errlen)
{
	struct forge_reply r = { 0, NULL, "" };
	char url[512], *u = http_escape(name);
	int rc;

	if (!u)
		return -ENOMEM;
	snprintf(url, sizeof(url), "/users?username=%s", u);
	free(u);
	if ((rc = forge_request(f, "GET", url, NULL, NULL, 0, &r, err, errlen)) < 0)
		return rc;
	*out = jsonx_int(json_array_get(r.json, 0), "id", 0);
	forge_reply_free(&r);
	return 0;
}

static int
source_is(const json_t *item, void *arg)
{
	return !strcmp(jsonx_str(item, "source_branch", ""), (const char *)arg);
}

/* "a,b": GitLab takes labels as one comma-separated string. */
static char *
missing_labels(const char *const *labels, const json_t *have)
{
	struct buf b = BUF_INIT(BUF_MAX_SMALL);
	json_t *want = forge_missing_labels(labels, have), *it;
	size_t i;

	json_array_foreach(want, i, it)
		if ((b.len && buf_addch(&b, ',') < 0) ||
		    buf_addstr(&b, json_string_value(it)) < 0)
			break;
	json_decref(want);
	return buf_detach(&b, NULL);
}

static int
gl_pr_upsert(struct forge *f, const struct forge_pr_req *q, struct forge_pr *out,
    char *err, size_t errlen)
{
	struct forge_reply r = { 0, NULL, "" };
	struct forge_pr pr;
	json_t *found = NULL, *req = NULL;
	char *body = forge_clip(f, NULL, q->body), *src = http_escape(q->head);
	char *labels = NULL, url[1024];
	int rc;

	memset(&pr, 0, sizeof(pr));
	if (!body || !src) {
		rc = forge_fail(-ENOMEM, err, errlen, "out of memory");
		goto out;
	}
	snprintf(url, sizeof(url), "/projects/%s/merge_requests?state=opened&"
	    "source_branch=%s&per_page=100", GL(f)->project, src);
	if ((rc = forge_list_find(f, url, source_is, (void *)q->head, &found, err,
	    errlen)) < 0)
		goto out;
	if (!found && q->find_only) {
		rc = forge_fail(-ENOENT, err, errlen, "no open merge request for %s",
		    q->head);
		goto out;
	}
	labels = missing_labels(q->labels, found ?
	    json_object_get(found, "labels") : NULL);
	if (!found) {
		json_t *ids = json_array();

		for (const char *const *u = q->reviewers; u && *u; u++) {
			long long id = 0;

			if ((rc = user_id(f, *u, &id, err, errlen)) < 0) {
				json_decref(ids);
				goto out;
			}
			if (id > 0)
				json_array_append_new(ids, json_integer(id));
		}
		req = json_pack("{s:s, s:s, s:s, s:s, s:s, s:o}", "source_branch",
		    q->head, "target_branch", q->base, "title", q->title,
		    "description", body, "labels", labels ? labels : "",
		    "reviewer_ids", ids);
		snprintf(url, sizeof(url), "/projects/%s/merge_requests",
		    GL(f)->project);
		if ((rc = forge_request(f, "POST", url, req, NULL, 0, &r, err,
		    errlen)) < 0)
			goto out;
		pr.result = FORGE_CREATED;
	} else if (!q->find_only) {
		req = json_object();
		if (strcmp(jsonx_str(found, "title", ""), q->title))
			json_object_set_new(req, "title", json_string(q->title));
		if (strcmp(jsonx_str(found, "description", ""), body))
			json_object_set_new(req, "description", json_string(body));
		if (labels && *labels)
			json_object_set_new(req, "add_labels", json_string(labels));
		pr.result = FORGE_UNCHANGED;
		if (json_object_size(req)) {
			snprintf(url, sizeof(url), "/projects/%s/merge_requests/%lld",
			    GL(f)->project, jsonx_int(found, "iid", 0));
			if ((rc = forge_request(f, "PUT", url, req, NULL, 0, &r, err,
			    errlen)) < 0)
				goto out;
			pr.result = FORGE_UPDATED;
		}
	} else {
		pr.result = FORGE_UNCHANGED;
	}
	pr.number = jsonx_int(r.json ? r.json : found, "iid", 0);
	snprintf(pr.url, sizeof(pr.url), "%s",
	    jsonx_str(r.json ? r.json : found, "web_url", ""));
	if (pr.number <= 0) {
		rc = forge_fail(-EIO, err, errlen, "merge request reply has no iid");
		goto out;
	}
	*out = pr;
out:
	forge_reply_free(&r);
	json_decref(found);
	json_decref(req);
	free(body);
	free(src);
	free(labels);
	return rc;
}

static int
gl_comment_upsert(struct forge *f, long long pr, const char *marker,
    const char *body, struct forge_comment *out, char *err, size_t errlen)
{
	char list[512], create[512], edit[512];

	snprintf(list, sizeof(list), "/projects/%s/merge_requests/%lld/notes?"
	    "per_page=100&sort=asc&order_by=created_at", GL(f)->project, pr);
	snprintf(create, sizeof(create), "/projects/%s/merge_requests/%lld/notes",
	    GL(f)->project, pr);
	snprintf(edit, sizeof(edit), "/projects/%s/merge_requests/%lld/notes/",
	    GL(f)->project, pr);
	return forge_comment_generic(f, list, create, edit, "PUT", marker, body,
	    out, err, errlen);
}

static int
gl_status_set(struct forge *f, const char *sha, enum forge_state st,
    const char *context, const char *description, const char *target_url,
    char *err, size_t errlen)
{
	/* no neutral state a commit status takes: "failed", the reason in the description */
	static const char *const states[] = { "running", "success", "failed",
		"failed", "failed" };
	char url[512];
	int rc;

	snprintf(url, sizeof(url), "/projects/%s/statuses/%s", GL(f)->project, sha);
	rc = forge_status_post(f, url, states[st], "name", context, description,
	    GL_DESC_MAX, target_url, err, errlen);
	/* GitLab refuses to set the state a status already has: that is done. */
	if (rc == -EINVAL && err && strstr(err, "Cannot transition status"))
		rc = 0;
	return rc;
}

static int
gl_permission(struct forge *f, const char *user, enum forge_perm *out,
    char *err, size_t errlen)
{
	struct forge_reply r = { 0, NULL, "" };
	long long id = 0, level;
	char url[512];
	int rc;

	if ((rc = user_id(f, user, &id, err, errlen)) < 0)
		return rc;
	if (id <= 0) {
		*out = FORGE_PERM_NONE;
		return 0;
	}
	snprintf(url, sizeof(url), "/projects/%s/members/all/%lld", GL(f)->project,
	    id);
	if ((rc = forge_request(f, "GET", url, NULL, NULL, FORGE_ANSWER_404, &r,
	    err, errlen)) < 0)
		return rc;
	/* 50 owner, 40 maintainer, 30 developer, 20 reporter, 10 guest */
	level = r.status == 404 ? 0 : jsonx_int(r.json, "access_level", 0);
	*out = level >= 40 ? FORGE_PERM_ADMIN : level >= 30 ? FORGE_PERM_WRITE :
	    level >= 10 ? FORGE_PERM_READ : FORGE_PERM_NONE;
	forge_reply_free(&r);
	return 0;
}

static int
gl_react(struct forge *f, long long pr, long long comment_id,
    const char *reaction, char *err, size_t errlen)
{
	char url[512];
	int rc;

	if (pr <= 0)
		return forge_fail(-EINVAL, err, errlen, "GitLab needs the merge "
		    "request of the note");
	snprintf(url, sizeof(url), "/projects/%s/merge_requests/%lld/notes/%lld/"
	    "award_emoji", GL(f)->project, pr, comment_id);
	/* No just-created retry: GitLab's 404 also means "awarded already". */
	rc = forge_post_one(f, url, "name", !strcmp(reaction, "+1") ? "thumbsup" :
	    "eyes", 0, err, errlen);
	/* Awarding twice: GitLab answers 404 (or 400) "already been taken". */
	if ((rc == -EINVAL || rc == -ENOENT) && err &&
	    strstr(err, "already been taken"))
		rc = 0;
	return rc;
}

static int
gl_pr_get(struct forge *f, long long number, struct forge_pr_info *out,
    char *err, size_t errlen)
{
	struct forge_reply r = { 0, NULL, "" };
	struct forge_pr_info pi;
	char url[512];
	int rc;

	snprintf(url, sizeof(url), "/projects/%s/merge_requests/%lld",
	    GL(f)->project, number);
	if ((rc = forge_request(f, "GET", url, NULL, NULL, 0, &r, err,
	    errlen)) < 0)
		return rc;
	memset(&pi, 0, sizeof(pi));
	pi.number = jsonx_int(r.json, "iid", number);
	snprintf(pi.head_ref, sizeof(pi.head_ref), "%s",
	    jsonx_str(r.json, "source_branch", ""));
	snprintf(pi.base_ref, sizeof(pi.base_ref), "%s",
	    jsonx_str(r.json, "target_branch", ""));
	snprintf(pi.head_sha, sizeof(pi.head_sha), "%s",
	    jsonx_str(r.json, "sha", ""));
	snprintf(pi.state, sizeof(pi.state), "%s", jsonx_str(r.json, "state",
	    "opened"));
	if (!strcmp(pi.state, "opened"))
		snprintf(pi.state, sizeof(pi.state), "open");
	pi.fork = jsonx_int(r.json, "source_project_id", -1) !=
	    jsonx_int(r.json, "target_project_id", -2);
	forge_reply_free(&r);
	*out = pi;
	return 0;
}

static void
gl_close(struct forge *f)
{
	if (f->priv)
		free(GL(f)->project);
	free(f->priv);
}

static const struct forge_ops gl_ops = {
	.pr_upsert = gl_pr_upsert,
	.comment_upsert = gl_comment_upsert,
	.status_set = gl_status_set,
	.permission = gl_permission,
	.react = gl_react,
	.pr_get = gl_pr_get,
	.auth_header = gl_auth_header,
	.git_cred = gl_git_cred,
	.close = gl_close,
};

int
forge_gitlab_init(struct forge *f, const json_t *conf, char *err, size_t errlen)
{
	struct gl *g;

	(void)conf;
	f->ops = &gl_ops;
	if (!(g = calloc(1, sizeof(*g))))
		return -ENOMEM;
	f->priv = g;
	if (!f->token)
		return forge_fail(-EINVAL, err, errlen, "forges.gitlab: needs "
		    "token_file or token_env");
	if (!(g->project = http_escape(f->repo)))
		return -ENOMEM;
	return 0;
}
