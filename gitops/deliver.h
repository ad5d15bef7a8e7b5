/*
 * deliver: a module's result, published the way the issue asks: its
 * branch (publish.h), its one pull request, its one results comment and
 * the commit status or check run (forge.h). Calling it again with a new
 * result updates all four in place; calling it with the same result
 * changes nothing (no push, no write request).
 *
 * When someone else has pushed to the module's branch, nothing is
 * overwritten: the results go into the PR's results comment, under a
 * notice naming the foreign commit, and the outcome says "moved".
 */
#ifndef KB_GITOPS_DELIVER_H
#define KB_GITOPS_DELIVER_H

#include <jansson.h>

#include "gitops/forge.h"
#include "gitops/gitops.h"
#include "gitops/modules.h"
#include "gitops/publish.h"

struct deliver_req {
	struct gitops_repo *repo;	/* the mirror (or any clone) holding base_sha */
	struct forge *forge;
	const char *base_sha;		/* the commit the result was computed on */
	const char *base_branch;	/* the PR's target, e.g. main */
	const char *module_path;
	const char *module_class;	/* NULL = Model */
	const char *branch_prefix;	/* NULL = kernelbot/ */
	const struct gitops_file *files;
	size_t n_files;
	const char *message;		/* commit message: what and why */
	const char *title;
	const char *body;		/* the PR body */
	const char *comment;		/* the results comment; NULL = none */
	const char *const *labels;
	const char *const *reviewers;
	const char *bot_name, *bot_email;	/* NULL = publish.h defaults */
	/* The commit status / check run; context NULL = none. */
	const char *status_sha;		/* NULL = base_sha */
	enum forge_state status_state;
	const char *status_context;
	const char *status_description;
	const char *status_url;
};

struct deliver_result {
	char slug[MODULES_MAX_SLUG + 1];
	char branch[GITOPS_MAX_PATH];
	struct gitops_publish_result push;
	int have_pr;
	struct forge_pr pr;
	int have_comment;
	struct forge_comment comment;
	int status_set;
};

/*
 * 0 with res filled, also when the branch had moved (res->push.outcome ==
 * GITOPS_PUBLISH_MOVED). Errors: those of gitops_publish and forge.h; the
 * step that failed is named in err.
 */
int deliver(const struct deliver_req *req, struct deliver_result *res,
    char *err, size_t errlen);

/* {slug, branch, outcome, commit, remote_tip, moved_by?, pr{...}, comment{...}, status} */
json_t *deliver_result_json(const struct deliver_result *res);

#endif
