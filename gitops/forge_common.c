/*
 * gitops/forge_common.c: what the HTTP drivers have in common: paginated
 * searches, the marker comment, statuses, reactions, permissions, and the
 * pull request upsert of the GitHub-shaped APIs (GitHub and Gitea).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "common/http.h"
#include "common/jsonx.h"
#include "gitops/forge_internal.h"

int
forge_list_find(struct forge *f, const char *url,
    int (*match)(const json_t *item, void *arg), void *arg, json_t **found,
    char *err, size_t errlen)
{
	char next[sizeof(((struct forge_reply *)0)->next)];
	int rc = 0;

	*found = NULL;
	snprintf(next, sizeof(next), "%s", url);
	for (int page = 0; page < FORGE_MAX_PAGES && next[0]; page++) {
		struct forge_reply r;
		size_t i;
		json_t *it;

		if ((rc = forge_request(f, "GET", next, NULL, NULL, 0, &r, err,
		    errlen)) < 0)
			return rc;
		if (!json_is_array(r.json)) {
			forge_reply_free(&r);
			return forge_fail(-EIO, err, errlen, "GET %s: expected a "
			    "list", url);
		}
		json_array_foreach(r.json, i, it)
			if (match(it, arg)) {
				*found = json_incref(it);
				forge_reply_free(&r);
				return 0;
			}
		snprintf(next, sizeof(next), "%s", r.next);
		forge_reply_free(&r);
	}
	return 0;
}

static int
has_marker(const json_t *item, void *arg)
{
	const char *body = json_string_value(json_object_get(item, "body"));

	return body && strstr(body, (const char *)arg) != NULL;
}

int
forge_comment_generic(struct forge *f, const char *list_url,
    const char *create_url, const char *edit_prefix, const char *edit_method,
    const char *marker, const char *body, struct forge_comment *out,
    char *err, size_t errlen)
{
	struct forge_comment c;
	struct forge_reply r = { 0, NULL, "" };
	json_t *found = NULL, *req = NULL;
	char *text = forge_clip(f, marker, body), url[1024];
	int rc;

	memset(&c, 0, sizeof(c));
	if (!text)
		return forge_fail(-ENOMEM, err, errlen, "out of memory");
	if ((rc = forge_list_find(f, list_url, has_marker, (void *)marker, &found,
	    err, errlen)) < 0)
		goto out;
	if (found && !strcmp(jsonx_str(found, "body", ""), text)) {
		c.id = jsonx_int(found, "id", 0);
		c.result = FORGE_UNCHANGED;
		snprintf(c.url, sizeof(c.url), "%s", jsonx_str(found, "html_url", ""));
		*out = c;
		goto out;
	}
	req = json_pack("{s:s}", "body", text);
	if (found) {
		snprintf(url, sizeof(url), "%s%lld", edit_prefix,
		    jsonx_int(found, "id", 0));
		rc = forge_request(f, edit_method, url, req, NULL, FORGE_RETRY_404,
		    &r, err, errlen);
		c.result = FORGE_UPDATED;
	} else {
		rc = forge_request(f, "POST", create_url, req, NULL, FORGE_RETRY_404,
		    &r, err, errlen);
		c.result = FORGE_CREATED;
	}
	if (rc < 0)
		goto out;
	c.id = jsonx_int(r.json, "id", 0);
	snprintf(c.url, sizeof(c.url), "%s", jsonx_str(r.json, "html_url", ""));
	if (c.id <= 0) {
		rc = forge_fail(-EIO, err, errlen, "comment reply has no id");
		goto out;
	}
	*out = c;
out:
	forge_reply_free(&r);
	json_decref(found);
	json_decref(req);
	free(text);
	return rc;
}

int
forge_status_post(struct forge *f, const char *url, const char *state,
    const char *ctx_key, const char *context, const char *description,
    size_t desc_max, const char *target_url, char *err, size_t errlen)
{
	struct forge_reply r = { 0, NULL, "" };
	char *desc = forge_clip_short(description, desc_max);
	json_t *req;
	int rc;

	if (!desc)
		return forge_fail(-ENOMEM, err, errlen, "out of memory");
	req = json_pack("{s:s, s:s, s:s}", "state", state, ctx_key, context,
	    "description", desc);
	if (target_url)
		json_object_set_new(req, "target_url", json_string(target_url));
	rc = forge_request(f, "POST", url, req, NULL, 0, &r, err, errlen);
	forge_reply_free(&r);
	json_decref(req);
	free(desc);
	return rc;
}

int
forge_post_one(struct forge *f, const char *url, const char *key,
    const char *value, unsigned flags, char *err, size_t errlen)
{
	struct forge_reply r = { 0, NULL, "" };
	json_t *req = json_pack("{s:s}", key, value);
	int rc;

	rc = forge_request(f, "POST", url, req, NULL, flags, &r, err, errlen);
	forge_reply_free(&r);
	json_decref(req);
	return rc;
}

enum forge_perm
forge_perm_from_name(const char *p)
{
	/* GitHub folds maintain into write and triage into read; Gitea has owner. */
	if (!strcmp(p, "admin") || !strcmp(p, "owner"))
		return FORGE_PERM_ADMIN;
	if (!strcmp(p, "write") || !strcmp(p, "maintain"))
		return FORGE_PERM_WRITE;
	if (!strcmp(p, "read") || !strcmp(p, "triage"))
		return FORGE_PERM_READ;
	return FORGE_PERM_NONE;
}

int
forge_pr_get_ghlike(struct forge *f, const char *url,
    struct forge_pr_info *out, char *err, size_t errlen)
{
	struct forge_reply r = { 0, NULL, "" };
	struct forge_pr_info pi;
	const char *head, *base;
	int rc;

	if ((rc = forge_request(f, "GET", url, NULL, NULL, 0, &r, err,
	    errlen)) < 0)
		return rc;
	memset(&pi, 0, sizeof(pi));
	pi.number = jsonx_int(r.json, "number", 0);
	snprintf(pi.head_ref, sizeof(pi.head_ref), "%s",
	    jsonx_str(r.json, "head.ref", ""));
	snprintf(pi.base_ref, sizeof(pi.base_ref), "%s",
	    jsonx_str(r.json, "base.ref", ""));
	snprintf(pi.head_sha, sizeof(pi.head_sha), "%s",
	    jsonx_str(r.json, "head.sha", ""));
	snprintf(pi.state, sizeof(pi.state), "%s", jsonx_bool(r.json, "merged", 0) ?
	    "merged" : jsonx_str(r.json, "state", "open"));
	/* A deleted fork has head.repo null: a fork all the same. */
	head = jsonx_str(r.json, "head.repo.full_name", NULL);
	base = jsonx_str(r.json, "base.repo.full_name", NULL);
	pi.fork = !head || !base || strcasecmp(head, base) != 0;
	forge_reply_free(&r);
	*out = pi;
	return 0;
}

int
forge_permission_get(struct forge *f, const char *url, enum forge_perm *out,
    char *err, size_t errlen)
{
	struct forge_reply r = { 0, NULL, "" };
	int rc;

	if ((rc = forge_request(f, "GET", url, NULL, NULL, FORGE_ANSWER_404, &r,
	    err, errlen)) < 0)
		return rc;
	*out = r.status == 404 ? FORGE_PERM_NONE :
	    forge_perm_from_name(jsonx_str(r.json, "permission", "none"));
	forge_reply_free(&r);
	return 0;
}

json_t *
forge_missing_labels(const char *const *labels, const json_t *have)
{
	json_t *want = json_array(), *it;
	size_t i;

	for (const char *const *l = labels; want && l && *l; l++) {
		int present = 0;

		json_array_foreach(have, i, it) {
			const char *name = json_is_string(it) ? json_string_value(it) :
			    jsonx_str(it, "name", "");

			if (!strcmp(name, *l))
				present = 1;
		}
		if (!present)
			json_array_append_new(want, json_string(*l));
	}
	return want;
}

static int
head_is(const json_t *item, void *arg)
{
	return !strcmp(jsonx_str(item, "head.ref", ""), (const char *)arg);
}

int
forge_pr_ghlike(struct forge *f, const struct forge_pr_req *q,
    const struct forge_ghpr *g, struct forge_pr *out, char *err, size_t errlen)
{
	struct forge_reply r = { 0, NULL, "" };
	struct forge_pr pr;
	json_t *found = NULL, *req = NULL, *missing = NULL;
	char *body = forge_clip(f, NULL, q->body), url[1024];
	int rc;

	memset(&pr, 0, sizeof(pr));
	if (!body)
		return forge_fail(-ENOMEM, err, errlen, "out of memory");
	if ((rc = forge_list_find(f, g->list_url, head_is, (void *)q->head, &found,
	    err, errlen)) < 0)
		goto out;
	if (!found && q->find_only) {
		rc = forge_fail(-ENOENT, err, errlen, "no open pull request for %s",
		    q->head);
		goto out;
	}
	pr.result = FORGE_UNCHANGED;
	if (!found) {
		req = json_pack("{s:s, s:s, s:s, s:s}", "title", q->title, "head",
		    q->head, "base", q->base, "body", body);
		if (g->create_extra)
			json_object_update(req, (json_t *)g->create_extra);
		if ((rc = forge_request(f, "POST", g->create_url, req, NULL, 0, &r,
		    err, errlen)) < 0)
			goto out;
		pr.result = FORGE_CREATED;
	} else if (!q->find_only && (strcmp(jsonx_str(found, "title", ""), q->title) ||
	    strcmp(jsonx_str(found, "body", ""), body))) {
		/* Only what changed: a PATCH that sends the same text still notifies. */
		req = json_object();
		if (strcmp(jsonx_str(found, "title", ""), q->title))
			json_object_set_new(req, "title", json_string(q->title));
		if (strcmp(jsonx_str(found, "body", ""), body))
			json_object_set_new(req, "body", json_string(body));
		snprintf(url, sizeof(url), "%s%lld", g->edit_prefix,
		    jsonx_int(found, "number", 0));
		if ((rc = forge_request(f, "PATCH", url, req, NULL, FORGE_RETRY_404,
		    &r, err, errlen)) < 0)
			goto out;
		pr.result = FORGE_UPDATED;
	}
	pr.number = jsonx_int(r.json ? r.json : found, "number", 0);
	snprintf(pr.url, sizeof(pr.url), "%s",
	    jsonx_str(r.json ? r.json : found, "html_url", ""));
	if (pr.number <= 0) {
		rc = forge_fail(-EIO, err, errlen, "pull request reply has no number");
		goto out;
	}
	if (q->find_only)
		goto done;
	missing = forge_missing_labels(q->labels, found ?
	    json_object_get(found, "labels") : NULL);
	if (json_array_size(missing)) {
		if ((rc = g->add_labels(f, pr.number, missing, err, errlen)) < 0)
			goto out;
		if (pr.result == FORGE_UNCHANGED)
			pr.result = FORGE_UPDATED;
	}
	if (pr.result == FORGE_CREATED && q->reviewers && q->reviewers[0]) {
		struct forge_reply rr = { 0, NULL, "" };
		json_t *rq = json_pack("{s:o}", "reviewers", jsonx_strv(q->reviewers));

		snprintf(url, sizeof(url), "%s%lld/requested_reviewers",
		    g->edit_prefix, pr.number);
		rc = forge_request(f, "POST", url, rq, NULL, FORGE_RETRY_404, &rr,
		    err, errlen);
		json_decref(rq);
		forge_reply_free(&rr);
		/* A reviewer who cannot review (422) must not undo the PR. */
		if (rc == -EINVAL)
			rc = 0;
		if (rc < 0)
			goto out;
	}
done:
	*out = pr;
	rc = 0;
out:
	forge_reply_free(&r);
	json_decref(found);
	json_decref(req);
	json_decref(missing);
	free(body);
	return rc;
}
