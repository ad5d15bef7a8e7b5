/*
 * gitops/publish.c: one commit on the base, pushed with a lease.
 */
#include "gitops/publish.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/buf.h"
#include "gitops/git_internal.h"

const char *
gitops_publish_outcome_name(enum gitops_publish_outcome o)
{
	switch (o) {
	case GITOPS_PUBLISH_CREATED:
		return "created";
	case GITOPS_PUBLISH_UPDATED:
		return "updated";
	case GITOPS_PUBLISH_UNCHANGED:
		return "unchanged";
	case GITOPS_PUBLISH_MOVED:
		return "moved";
	}
	return "?";
}

static int
valid_file_path(const char *p)
{
	const char *seg = p;

	if (!p || !*p || *p == '/' || strlen(p) >= GITOPS_MAX_PATH)
		return 0;
	for (;;) {
		const char *end = strchr(seg, '/');
		size_t n = end ? (size_t)(end - seg) : strlen(seg);

		if (n == 0 || (n == 1 && seg[0] == '.') ||
		    (n == 2 && !memcmp(seg, "..", 2)) ||
		    (n == 4 && !strncasecmp(seg, ".git", 4)))
			return 0;
		if (!end)
			return 1;
		seg = end + 1;
	}
}

static int
check_opts(const struct gitops_publish_opts *o, char *err, size_t errlen)
{
	char ref[GITOPS_MAX_PATH];
	int valid = 0;

	if (!o->base || !o->branch || !o->slug || !o->message)
		return gitops_fail(-EINVAL, err, errlen,
		    "publish needs base, branch, slug and message");
	snprintf(ref, sizeof(ref), "refs/heads/%s", o->branch);
	if (git_reference_name_is_valid(&valid, ref) < 0 || !valid)
		return gitops_fail(-EINVAL, err, errlen, "'%s' is not a valid "
		    "branch name", o->branch);
	if (o->n_files == 0 || o->n_files > PUBLISH_MAX_FILES)
		return gitops_fail(-EINVAL, err, errlen, "publish takes 1 to %d "
		    "files, not %zu", PUBLISH_MAX_FILES, o->n_files);
	for (size_t i = 0; i < o->n_files; i++) {
		if (!valid_file_path(o->files[i].path))
			return gitops_fail(-EINVAL, err, errlen, "'%s' is not a "
			    "valid repository path", o->files[i].path ?
			    o->files[i].path : "(null)");
		if (o->files[i].len > PUBLISH_MAX_FILE_BYTES)
			return gitops_fail(-EFBIG, err, errlen, "%s: over %u bytes",
			    o->files[i].path, PUBLISH_MAX_FILE_BYTES);
	}
	return 0;
}

/* The tree of base with the files laid over it. */
static int
build_tree(git_repository *g, git_commit *base,
    const struct gitops_publish_opts *o, git_oid *tree_id, char *err,
    size_t errlen)
{
	git_index *idx = NULL;
	git_tree *tree = NULL;
	int rc;

	if ((rc = git_index_new(&idx)) < 0 ||
	    (rc = git_commit_tree(&tree, base)) < 0 ||
	    (rc = git_index_read_tree(idx, tree)) < 0) {
		rc = gitops_git_error(rc, "index", err, errlen);
		goto out;
	}
	for (size_t i = 0; i < o->n_files; i++) {
		git_index_entry e;

		memset(&e, 0, sizeof(e));
		e.path = o->files[i].path;
		e.mode = o->files[i].executable ? GIT_FILEMODE_BLOB_EXECUTABLE :
		    GIT_FILEMODE_BLOB;
		/* An in-memory index has no odb: write the blob, then add it. */
		if ((rc = git_blob_create_from_buffer(&e.id, g, o->files[i].data,
		    o->files[i].len)) < 0 || (rc = git_index_add(idx, &e)) < 0) {
			rc = gitops_git_error(rc, o->files[i].path, err, errlen);
			goto out;
		}
	}
	if ((rc = git_index_write_tree_to(tree_id, idx, g)) < 0)
		rc = gitops_git_error(rc, "write tree", err, errlen);
out:
	git_tree_free(tree);
	git_index_free(idx);
	return rc;
}

/* Is c the bot's commit for this module? */
static int
is_ours(git_commit *c, const struct gitops_publish_opts *o, const char *email)
{
	const git_signature *s = git_commit_committer(c);
	const char *msg = git_commit_message(c);
	char trailer[256];

	if (!s || !s->email || strcmp(s->email, email) || !msg)
		return 0;
	snprintf(trailer, sizeof(trailer), "\n" PUBLISH_TRAILER ": %s\n", o->slug);
	return strstr(msg, trailer) != NULL;
}

struct lease {
	const char *dst;		/* refs/heads/BRANCH */
	git_oid expect;			/* zero: the branch must not exist */
	int moved;
	const char *rejected;		/* the server's reason, when it refused */
	char reason[256];
};

/* Refuse to push when the remote's tip is not the one we inspected. */
static int
lease_negotiation(const git_push_update **updates, size_t len, void *payload)
{
	struct lease *l = ((struct gitops_cred_state *)payload)->lease;

	for (size_t i = 0; i < len; i++)
		if (!strcmp(updates[i]->dst_refname, l->dst) &&
		    !git_oid_equal(&updates[i]->src, &l->expect)) {
			l->moved = 1;
			return -1;
		}
	return 0;
}

static int
lease_update_ref(const char *refname, const char *status, void *payload)
{
	struct lease *l = ((struct gitops_cred_state *)payload)->lease;

	if (status && !strcmp(refname, l->dst)) {
		snprintf(l->reason, sizeof(l->reason), "%s", status);
		l->rejected = l->reason;
	}
	return 0;
}

/* Make sure the remote's tip is in our object database. */
static int
fetch_tip(git_repository *g, const char *url, const struct lease *l,
    const struct gitops_cred *cred, char *err, size_t errlen)
{
	char spec[GITOPS_MAX_PATH + 64];
	git_commit *c = NULL;

	if (git_commit_lookup(&c, g, &l->expect) == 0) {
		git_commit_free(c);
		return 0;
	}
	snprintf(spec, sizeof(spec), "+%s:refs/kernelbot/remote/%s", l->dst,
	    l->dst + strlen("refs/heads/"));
	return gitops_fetch_refspec(g, url, cred, spec, err, errlen);
}

static void
describe_foreign(git_commit *c, struct gitops_publish_result *res)
{
	const git_signature *a = git_commit_author(c);
	const char *summary = git_commit_summary(c);

	snprintf(res->moved_by, sizeof(res->moved_by), "%s <%s>",
	    a && a->name ? a->name : "?", a && a->email ? a->email : "?");
	snprintf(res->moved_subject, sizeof(res->moved_subject), "%s",
	    summary ? summary : "");
}

/* After a lost race: who holds the branch now (best effort). */
static void
describe_new_tip(git_repository *g, const char *url, const char *dst,
    const struct gitops_cred *cred, struct gitops_publish_result *out)
{
	char spec[2 * GITOPS_MAX_PATH + 128], local[GITOPS_MAX_PATH + 32];
	git_commit *c = NULL;
	git_oid oid;

	snprintf(local, sizeof(local), "refs/kernelbot/remote/%s",
	    dst + strlen("refs/heads/"));
	snprintf(spec, sizeof(spec), "+%s:%s", dst, local);
	if (gitops_fetch_refspec(g, url, cred, spec, NULL, 0) < 0 ||
	    git_reference_name_to_id(&oid, g, local) < 0 ||
	    git_commit_lookup(&c, g, &oid) < 0)
		return;
	git_oid_tostr(out->remote_tip, sizeof(out->remote_tip), &oid);
	describe_foreign(c, out);
	git_commit_free(c);
}

static int
remote_url(git_repository *g, const struct gitops_publish_opts *o,
    struct buf *out, char *err, size_t errlen)
{
	git_remote *origin = NULL;
	const char *u;
	int rc;

	if (o->remote_url)
		return buf_addstr(out, o->remote_url);
	if ((rc = git_remote_lookup(&origin, g, "origin")) < 0)
		return gitops_git_error(rc, "no remote_url and no origin", err,
		    errlen);
	u = git_remote_pushurl(origin) ? git_remote_pushurl(origin) :
	    git_remote_url(origin);
	rc = buf_addstr(out, u ? u : "");
	git_remote_free(origin);
	return rc;
}

int
gitops_publish(struct gitops_repo *r, const struct gitops_publish_opts *o,
    struct gitops_publish_result *res, char *err, size_t errlen)
{
	const char *email = o->email ? o->email : PUBLISH_DEFAULT_EMAIL;
	const char *name = o->name ? o->name : PUBLISH_DEFAULT_NAME;
	struct gitops_publish_result out;
	struct lease lease;
	struct gitops_cred_state st = { .cred = o->cred, .lease = &lease };
	git_remote_callbacks cb;
	git_push_options po;
	git_remote *remote = NULL;
	git_commit *base = NULL, *tip = NULL;
	git_signature *sig = NULL;
	git_tree *tree = NULL;
	const git_remote_head **heads;
	struct buf url = BUF_INIT(GITOPS_MAX_PATH), msg = BUF_INIT(BUF_MAX_SMALL);
	char dst[GITOPS_MAX_PATH], src[GITOPS_MAX_PATH + 32], spec[2 * GITOPS_MAX_PATH + 64];
	char *specs[] = { spec };
	git_strarray refspecs = { specs, 1 };
	git_oid tree_id, commit_id;
	git_reference *ref = NULL;
	size_t nheads;
	int rc, have_tip = 0;

	memset(&out, 0, sizeof(out));
	memset(&lease, 0, sizeof(lease));
	if ((rc = gitops_lib_init(err, errlen)) < 0 ||
	    (rc = check_opts(o, err, errlen)) < 0 ||
	    (rc = gitops_lookup_commit(r, o->base, &base, err, errlen)) < 0)
		goto out;
	if ((rc = remote_url(r->repo, o, &url, err, errlen)) < 0)
		goto out;
	snprintf(dst, sizeof(dst), "refs/heads/%s", o->branch);
	lease.dst = dst;

	/* The tip as the remote advertises it now, on the push connection. */
	gitops_remote_callbacks(&cb, &st);
	cb.push_negotiation = lease_negotiation;
	cb.push_update_reference = lease_update_ref;
	if ((rc = git_remote_create_anonymous(&remote, r->repo,
	    buf_cstr(&url))) < 0 ||
	    (rc = git_remote_connect(remote, GIT_DIRECTION_PUSH, &cb, NULL,
	    NULL)) < 0 ||
	    (rc = git_remote_ls(&heads, &nheads, remote)) < 0) {
		rc = gitops_git_error(rc, "connect for push", err, errlen);
		goto out;
	}
	for (size_t i = 0; i < nheads; i++)
		if (!strcmp(heads[i]->name, dst)) {
			git_oid_cpy(&lease.expect, &heads[i]->oid);
			have_tip = 1;
		}
	if (have_tip) {
		git_oid_tostr(out.remote_tip, sizeof(out.remote_tip),
		    &lease.expect);
		if ((rc = fetch_tip(r->repo, buf_cstr(&url), &lease, o->cred, err,
		    errlen)) < 0 ||
		    (rc = git_commit_lookup(&tip, r->repo, &lease.expect)) < 0) {
			rc = rc < -1 ? rc : gitops_git_error(rc, "branch tip", err,
			    errlen);
			goto out;
		}
		if (!is_ours(tip, o, email)) {
			out.outcome = GITOPS_PUBLISH_MOVED;
			describe_foreign(tip, &out);
			*res = out;
			rc = gitops_fail(-EEXIST, err, errlen, "%s: the tip %.12s is "
			    "not kernelbot's (by %s); not overwriting it", o->branch,
			    out.remote_tip, out.moved_by);
			goto out;
		}
	}

	if ((rc = build_tree(r->repo, base, o, &tree_id, err, errlen)) < 0)
		goto out;
	if (tip && git_commit_parentcount(tip) == 1 &&
	    git_oid_equal(git_commit_parent_id(tip, 0), git_commit_id(base)) &&
	    git_oid_equal(git_commit_tree_id(tip), &tree_id)) {
		out.outcome = GITOPS_PUBLISH_UNCHANGED;
		memcpy(out.commit, out.remote_tip, sizeof(out.commit));
		*res = out;
		goto out;
	}

	if ((rc = buf_addstr(&msg, o->message)) < 0 ||
	    (msg.len && msg.data[msg.len - 1] != '\n' &&
	    (rc = buf_addch(&msg, '\n')) < 0) ||
	    (rc = buf_printf(&msg, "\n" PUBLISH_TRAILER ": %s\n", o->slug)) < 0) {
		rc = gitops_fail(rc, err, errlen, "commit message too long");
		goto out;
	}
	rc = o->when ? git_signature_new(&sig, name, email, (git_time_t)o->when, 0) :
	    git_signature_now(&sig, name, email);
	if (rc < 0 || (rc = git_tree_lookup(&tree, r->repo, &tree_id)) < 0 ||
	    (rc = git_commit_create(&commit_id, r->repo, NULL, sig, sig, NULL,
	    buf_cstr(&msg), tree, 1, (const git_commit **)&base)) < 0) {
		rc = gitops_git_error(rc, "commit", err, errlen);
		goto out;
	}
	/* A private ref: the mirror's refs/heads/ belong to the fetch. */
	snprintf(src, sizeof(src), "refs/kernelbot/publish/%s", o->branch);
	if ((rc = git_reference_create(&ref, r->repo, src, &commit_id, 1,
	    "kernelbot publish")) < 0) {
		rc = gitops_git_error(rc, "ref", err, errlen);
		goto out;
	}
	snprintf(spec, sizeof(spec), "+%s:%s", src, dst);
	git_push_options_init(&po, GIT_PUSH_OPTIONS_VERSION);
	po.callbacks = cb;
	rc = git_remote_upload(remote, &refspecs, &po);
	if (lease.moved || lease.rejected) {
		out.outcome = GITOPS_PUBLISH_MOVED;
		snprintf(out.moved_by, sizeof(out.moved_by), "an unknown pusher");
		describe_new_tip(r->repo, buf_cstr(&url), dst, o->cred, &out);
		*res = out;
		rc = gitops_fail(-EEXIST, err, errlen, "%s moved while pushing%s%s; "
		    "not overwriting it", o->branch, lease.rejected ? ": " : "",
		    lease.rejected ? lease.rejected : "");
		goto out;
	}
	if (rc < 0) {
		rc = gitops_git_error(rc, "push", err, errlen);
		goto out;
	}
	out.outcome = have_tip ? GITOPS_PUBLISH_UPDATED : GITOPS_PUBLISH_CREATED;
	git_oid_tostr(out.commit, sizeof(out.commit), &commit_id);
	*res = out;
out:
	git_reference_free(ref);
	git_tree_free(tree);
	git_signature_free(sig);
	git_commit_free(tip);
	git_commit_free(base);
	if (remote)
		git_remote_disconnect(remote);
	git_remote_free(remote);
	buf_free(&url);
	buf_free(&msg);
	return rc;
}

int
gitops_branch_files(struct gitops_repo *r, const char *base, const char *head,
    int (*fn)(const char *path, const void *data, size_t len, void *arg),
    void *arg, char *err, size_t errlen)
{
	struct gitops_diff d = { 0 };
	struct buf b = BUF_INIT(PUBLISH_MAX_FILE_BYTES);
	int rc;

	if ((rc = gitops_diff_trees(r, base, head, &d, err, errlen)) < 0)
		return rc;
	for (size_t i = 0; i < d.n && rc == 0; i++) {
		if (!d.deltas[i].new_path)
			continue;
		buf_reset(&b);
		rc = gitops_read_file(r, head, d.deltas[i].new_path, &b, NULL, err,
		    errlen);
		if (rc == -ENOENT) {
			rc = 0;	/* a symlink or submodule: nothing to show */
			continue;
		}
		if (rc == 0)
			rc = fn(d.deltas[i].new_path, buf_cstr(&b), b.len, arg);
	}
	buf_free(&b);
	gitops_diff_free(&d);
	return rc;
}
