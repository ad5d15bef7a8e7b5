/*
 * gitops/deliver.c: branch, pull request, comment, status, in that order:
 * the PR needs the branch, the comment needs the PR, and the status is
 * last so that it only reports what is already visible.
 */
#include "gitops/deliver.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "common/buf.h"
#include "gitops/repocfg.h"

static int
step_fail(int rc, const char *step, char *err, size_t errlen)
{
	char why[768];

	snprintf(why, sizeof(why), "%s", err ? err : "");
	if (err && errlen)
		snprintf(err, errlen, "%s: %s", step, why);
	return rc;
}

int
deliver(const struct deliver_req *q, struct deliver_result *res, char *err,
    size_t errlen)
{
	struct deliver_result out;
	struct gitops_publish_opts po;
	struct gitops_cred cred = { NULL, NULL };
	struct forge_pr_req pq;
	struct buf note = BUF_INIT(BUF_MAX_DEFAULT);
	char marker[FORGE_MAX_MARKER + 1];
	const char *comment = q->comment;
	int rc;

	memset(&out, 0, sizeof(out));
	memset(&po, 0, sizeof(po));
	memset(&pq, 0, sizeof(pq));
	if (!q->repo || !q->forge || !q->base_sha || !q->base_branch ||
	    !q->module_path || !q->title || !q->body || !q->message) {
		snprintf(err, errlen, "deliver needs repo, forge, base_sha, "
		    "base_branch, module_path, title, body and message");
		return -EINVAL;
	}
	if (modules_slug(q->module_path, q->module_class ? q->module_class :
	    REPOCFG_DEFAULT_CLASS, out.slug) < 0) {
		snprintf(err, errlen, "%s: no slug can be made from this path",
		    q->module_path);
		return -EINVAL;
	}
	snprintf(out.branch, sizeof(out.branch), "%s%s", q->branch_prefix ?
	    q->branch_prefix : REPOCFG_DEFAULT_PREFIX, out.slug);
	snprintf(marker, sizeof(marker), FORGE_MARKER_FMT, out.slug);

	if ((rc = forge_git_cred(q->forge, &cred, err, errlen)) < 0)
		return step_fail(rc, "credentials", err, errlen);
	po.base = q->base_sha;
	po.branch = out.branch;
	po.slug = out.slug;
	po.files = q->files;
	po.n_files = q->n_files;
	po.message = q->message;
	po.name = q->bot_name;
	po.email = q->bot_email;
	po.remote_url = forge_push_url(q->forge);
	po.cred = &cred;
	rc = gitops_publish(q->repo, &po, &out.push, err, errlen);
	if (rc < 0 && rc != -EEXIST)
		return step_fail(rc, "push", err, errlen);

	pq.head = out.branch;
	pq.base = q->base_branch;
	pq.title = q->title;
	pq.body = q->body;
	pq.labels = q->labels;
	pq.reviewers = q->reviewers;
	pq.slug = out.slug;
	if (rc == -EEXIST) {
		/* Never overwrite a human: tell them on the PR, with the results. */
		pq.find_only = 1;
		buf_printf(&note, "> [!WARNING]\n> kernelbot did not update `%s`: "
		    "its tip %.12s (\"%s\") is by %s, not by kernelbot. New results "
		    "for %.12s are below and were not pushed. To let kernelbot "
		    "manage the branch again, delete it or reset it to kernelbot's "
		    "last commit.\n\n%s", out.branch, out.push.remote_tip,
		    out.push.moved_subject, out.push.moved_by, q->base_sha,
		    q->comment ? q->comment : q->body);
		comment = buf_cstr(&note);
	}
	rc = forge_pr_upsert(q->forge, &pq, &out.pr, err, errlen);
	if (rc == -ENOENT && pq.find_only) {
		rc = 0;		/* a moved branch without a PR: nowhere to say it */
		comment = NULL;
	} else if (rc < 0) {
		rc = step_fail(rc, "pull request", err, errlen);
		goto out;
	} else {
		out.have_pr = 1;
	}
	if (comment && out.have_pr) {
		if ((rc = forge_comment_upsert(q->forge, out.pr.number, marker,
		    comment, &out.comment, err, errlen)) < 0) {
			rc = step_fail(rc, "comment", err, errlen);
			goto out;
		}
		out.have_comment = 1;
	}
	if (q->status_context) {
		if ((rc = forge_status_set(q->forge, q->status_sha ? q->status_sha :
		    q->base_sha, q->status_state, q->status_context,
		    q->status_description, q->status_url, err, errlen)) < 0) {
			rc = step_fail(rc, "status", err, errlen);
			goto out;
		}
		out.status_set = 1;
	}
	*res = out;
	rc = 0;
out:
	buf_free(&note);
	return rc;
}

json_t *
deliver_result_json(const struct deliver_result *r)
{
	json_t *o = json_pack("{s:s, s:s, s:s, s:s, s:s, s:b}", "slug", r->slug,
	    "branch", r->branch, "outcome",
	    gitops_publish_outcome_name(r->push.outcome), "commit", r->push.commit,
	    "remote_tip", r->push.remote_tip, "status", r->status_set);

	if (!o)
		return NULL;
	if (r->push.outcome == GITOPS_PUBLISH_MOVED)
		json_object_set_new(o, "moved_by", json_string(r->push.moved_by));
	json_object_set_new(o, "pr", r->have_pr ? json_pack("{s:I, s:s, s:s}",
	    "number", (json_int_t)r->pr.number, "url", r->pr.url, "result",
	    forge_result_name(r->pr.result)) : json_null());
	json_object_set_new(o, "comment", r->have_comment ?
	    json_pack("{s:I, s:s}", "id", (json_int_t)r->comment.id, "result",
	    forge_result_name(r->comment.result)) : json_null());
	return o;
}
