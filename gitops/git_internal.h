/*
 * git_internal: what the libgit2 files of gitops/ share (not a public
 * contract; include it from the .c files of gitops/ only).
 */
#ifndef KB_GITOPS_GIT_INTERNAL_H
#define KB_GITOPS_GIT_INTERNAL_H

#include <git2.h>
#include <stddef.h>

#include "gitops/gitops.h"

struct gitops_repo {
	git_repository *repo;
	char *path;
};

/* libgit2 set up once, with every configuration search path emptied. */
int gitops_lib_init(char *err, size_t errlen);

/*
 * Translate a libgit2 return code: write "what: libgit2's message" to err
 * and return the matching -errno.
 */
int gitops_git_error(int rc, const char *what, char *err, size_t errlen);


/* The commit named by rev (not the zero id): -ENOENT or -EINVAL. */
int gitops_lookup_commit(struct gitops_repo *r, const char *rev,
    git_commit **out, char *err, size_t errlen);

/* Wrap an open libgit2 repository (taken over, freed on failure). */
int gitops_repo_wrap(git_repository *g, struct gitops_repo **out);

/* Fetch one refspec from url (NULL = origin) with cred (may be NULL). */
int gitops_fetch_refspec(git_repository *g, const char *url,
    const struct gitops_cred *cred, const char *spec, char *err,
    size_t errlen);

/* 1 for the all-zero id (the empty tree's stand-in). */
int gitops_is_zero(const char *sha);

/* mkdir -p; 0 or -errno. */
int gitops_mkdir_p(const char *path);

struct lease;

/* Remote callbacks for cred (may be NULL); payload must outlive the call. */
struct gitops_cred_state {
	const struct gitops_cred *cred;
	int tries;
	struct lease *lease;	/* publish's push lease; NULL elsewhere */
};
void gitops_remote_callbacks(git_remote_callbacks *cb,
    struct gitops_cred_state *st);

#endif
