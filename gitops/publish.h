/*
 * publish: put a result on its branch, the way a good bot does it.
 *
 * One branch per module (BRANCH_PREFIX + slug), rebuilt on every result as
 * ONE commit on top of the base commit holding the given files, and pushed
 * in place (the pull request follows the branch; no new PR per result).
 *
 * Never clobber a human: the branch is only replaced when its current tip
 * on the remote is the bot's own commit for this module (committer e-mail
 * = the bot's, and the "Kernelbot-Module: SLUG" trailer). The push is a
 * lease: it carries the tip we inspected as the expected old value, and a
 * push negotiation check aborts it if the remote shows anything else, so
 * a commit pushed by someone in between is never overwritten.
 */
#ifndef KB_GITOPS_PUBLISH_H
#define KB_GITOPS_PUBLISH_H

#include <stddef.h>

#include "gitops/gitops.h"

#define PUBLISH_MAX_FILES 256
#define PUBLISH_MAX_FILE_BYTES (8u << 20)
#define PUBLISH_TRAILER "Kernelbot-Module"
#define PUBLISH_DEFAULT_NAME "kernelbot"
#define PUBLISH_DEFAULT_EMAIL "kernelbot@users.noreply.localhost"

struct gitops_file {
	const char *path;	/* repository-relative, no '.', '..' or .git segments */
	const void *data;
	size_t len;
	int executable;		/* mode 100755 instead of 100644 */
};

struct gitops_publish_opts {
	const char *base;		/* the commit to build on (e.g. the pushed commit) */
	const char *branch;		/* "kernelbot/models-attn-block" (no refs/heads/) */
	const char *slug;		/* the module slug, for the trailer */
	const struct gitops_file *files;
	size_t n_files;
	const char *message;		/* what and why; the trailer is appended */
	const char *name;		/* bot identity; NULL = PUBLISH_DEFAULT_NAME */
	const char *email;		/* NULL = PUBLISH_DEFAULT_EMAIL */
	const char *remote_url;		/* push here; NULL = the repository's origin */
	const struct gitops_cred *cred;	/* may be NULL */
	long long when;			/* commit time (Unix seconds); 0 = now */
};

enum gitops_publish_outcome {
	GITOPS_PUBLISH_CREATED,		/* the branch did not exist */
	GITOPS_PUBLISH_UPDATED,		/* our old commit was replaced */
	GITOPS_PUBLISH_UNCHANGED,	/* the same base and files are already there */
	GITOPS_PUBLISH_MOVED,		/* someone else's commit is on the branch */
};

struct gitops_publish_result {
	enum gitops_publish_outcome outcome;
	char commit[GITOPS_OID_HEX];	/* the branch's tip after the call (ours) */
	char remote_tip[GITOPS_OID_HEX];/* the tip found before pushing; "" if none */
	char moved_by[256];		/* MOVED: "Name <email>" of the foreign tip */
	char moved_subject[256];	/* MOVED: its subject line */
};

const char *gitops_publish_outcome_name(enum gitops_publish_outcome o);

/*
 * Build and push. 0 with res filled (CREATED, UPDATED, UNCHANGED).
 * -EEXIST when the branch holds a commit that is not ours, or moved while
 * we pushed: res is filled then too (outcome MOVED, remote_tip, moved_by)
 * so the caller can say so in the pull request; nothing was pushed.
 * -EINVAL for bad options (paths, branch name, too many files), -EACCES,
 * -EIO, -ENOENT (no base commit) as in gitops.h.
 */
int gitops_publish(struct gitops_repo *r, const struct gitops_publish_opts *o,
    struct gitops_publish_result *res, char *err, size_t errlen);

/*
 * The files that differ between base and head (head's side), for a
 * rendering of what a branch adds: calls fn(path, data, len, arg) for each
 * added or modified regular file, in path order. Deleted files are not
 * reported. Errors as in gitops.h, or fn's negative return.
 */
int gitops_branch_files(struct gitops_repo *r, const char *base,
    const char *head, int (*fn)(const char *path, const void *data,
    size_t len, void *arg), void *arg, char *err, size_t errlen);

#endif
