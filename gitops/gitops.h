/*
 * gitops: the repository side of kernelbot, over libgit2 (included from
 * gitops/ only; its errors are translated here, once, into -errno plus a
 * message).
 *
 * A `struct gitops_repo` is an open repository: a local checkout or bare
 * repository given by path, or the bot's own bare mirror of a forge
 * repository under data_dir (cloned once, fetched after). libgit2 is set up
 * so that no system, XDG or global git configuration is ever read: the
 * daemon's behaviour must not depend on whatever ~/.gitconfig the service
 * user has (url.insteadOf, credential helpers, hooks).
 *
 * Commits are named by full 40-hex ids or anything git_revparse accepts.
 * The all-zero id ("0000...0000", what a forge sends as `before` for a new
 * branch) stands for the empty tree.
 *
 * Every function returns 0 or a negative errno and, on error, writes a
 * one-line reason into err (when err is not NULL):
 *   -ENOENT   no such repository, commit or path
 *   -EINVAL   bad argument (not a commit, bad path, bad URL)
 *   -EACCES   authentication refused by the remote
 *   -EIO      transport or libgit2 failure
 *   -EFBIG    a file over the caller's cap
 *   -ENOMEM
 * Output parameters are written on success only.
 */
#ifndef KB_GITOPS_GITOPS_H
#define KB_GITOPS_GITOPS_H

#include <stddef.h>

#include "common/buf.h"

#define GITOPS_OID_HEX 41			/* 40 hex digits and NUL */
#define GITOPS_ZERO_OID "0000000000000000000000000000000000000000"
#define GITOPS_MAX_PATH 4096			/* longest repository path we handle */
#define GITOPS_MAX_TREE_FILES 200000		/* walk limit for a whole tree */

struct gitops_repo;

/*
 * Credentials for a remote, handed to libgit2 only from its credential
 * callback (never put into URLs, never logged). Both NULL: anonymous.
 */
struct gitops_cred {
	const char *username;	/* "x-access-token" for GitHub, "oauth2" for GitLab */
	const char *password;	/* the token */
};

/* Open an existing repository (work tree or bare) at exactly path. */
int gitops_open(const char *path, struct gitops_repo **out, char *err,
    size_t errlen);

/* Create a bare repository at path (parents too); an existing one is fine. */
int gitops_init_bare(const char *path, char *err, size_t errlen);

/*
 * The bot's mirror of a remote repository: DATA_DIR/mirrors/NAME.git, a bare
 * repository whose refs/heads/ and refs/tags/ follow the remote's (pruned).
 * Cloned on first use, fetched on every later call. name is "owner/repo"
 * (each part [A-Za-z0-9._-], not starting with '.'); url is the fetch URL
 * (https://, ssh://, file://, or a local path); cred may be NULL.
 * If the mirror exists with another URL, the URL is updated.
 */
int gitops_mirror(const char *data_dir, const char *name, const char *url,
    const struct gitops_cred *cred, struct gitops_repo **out, char *err,
    size_t errlen);

/*
 * Everything a push webhook needs before modules_changes(): the mirror
 * synced, AFTER present, and the best BEFORE to diff from, in before_used:
 *   - the zero id when before is the zero id (a new branch);
 *   - before itself when the mirror has it or can fetch it by id;
 *   - else (a force push whose old tip the mirror never saw and the server
 *     will not serve) the mirror's own previous tip of ref, the last state
 *     the bot knew; *fallback is set to 1;
 *   - else the zero id, *fallback = 2: every module counts as added.
 * ref is the pushed ref ("refs/heads/main"). -ENOENT when after cannot be
 * had. The caller closes *out.
 */
int gitops_sync_push(const char *data_dir, const char *name, const char *url,
    const struct gitops_cred *cred, const char *ref, const char *before,
    const char *after, struct gitops_repo **out,
    char before_used[GITOPS_OID_HEX], int *fallback, char *err,
    size_t errlen);

/*
 * Fetch one more commit by id into the repository (for a force-pushed
 * `before` that no branch reaches any more); many servers refuse this,
 * which is -ENOENT. url and cred as for gitops_mirror; url NULL = origin.
 */
int gitops_fetch_commit(struct gitops_repo *r, const char *url,
    const struct gitops_cred *cred, const char *sha, char *err,
    size_t errlen);

/* The repository's path (the .git or bare directory); borrowed. */
const char *gitops_path(const struct gitops_repo *r);

/*
 * Resolve rev to a commit id (40 hex). The zero id resolves to itself.
 * -ENOENT when there is no such commit.
 */
int gitops_resolve(struct gitops_repo *r, const char *rev,
    char out[GITOPS_OID_HEX], char *err, size_t errlen);

/* 1 when the commit is present in the object database, 0 when not. */
int gitops_has_commit(struct gitops_repo *r, const char *sha);

/*
 * The blob at path in commit, appended to out (whose cap applies: -EFBIG
 * when the blob is larger, nothing appended). -ENOENT when the path does
 * not exist or is not a file. blob_id (may be NULL) gets the blob's id.
 */
int gitops_read_file(struct gitops_repo *r, const char *commit,
    const char *path, struct buf *out, char blob_id[GITOPS_OID_HEX],
    char *err, size_t errlen);

/*
 * The blob id of path in commit (for "did this file change" without
 * reading it). -ENOENT when absent. The zero commit has no files.
 */
int gitops_blob_id(struct gitops_repo *r, const char *commit,
    const char *path, char out[GITOPS_OID_HEX], char *err, size_t errlen);

/*
 * Call fn for every regular file of commit's tree (symlinks and submodules
 * are skipped), in tree order. fn returns 0 to go on or a negative errno
 * to stop, which is returned. -E2BIG past GITOPS_MAX_TREE_FILES files.
 */
int gitops_walk_files(struct gitops_repo *r, const char *commit,
    int (*fn)(const char *path, void *arg), void *arg, char *err,
    size_t errlen);

enum gitops_delta_status {
	GITOPS_ADDED = 'A',
	GITOPS_DELETED = 'D',
	GITOPS_MODIFIED = 'M',
	GITOPS_RENAMED = 'R',
	GITOPS_TYPECHANGE = 'T',
};

struct gitops_delta {
	enum gitops_delta_status status;
	char *old_path;		/* NULL for ADDED */
	char *new_path;		/* NULL for DELETED */
};

struct gitops_diff {
	struct gitops_delta *deltas;
	size_t n;
};

/*
 * The files that differ between two commits' trees; before may be the zero
 * id (then every file of after is ADDED). Renames are detected (50%
 * similarity, git's default), so a moved file is one RENAMED delta. Free
 * with gitops_diff_free().
 */
int gitops_diff_trees(struct gitops_repo *r, const char *before,
    const char *after, struct gitops_diff *out, char *err, size_t errlen);
void gitops_diff_free(struct gitops_diff *d);

/*
 * Write commit's tree into dir (created if missing, must be empty or
 * absent): a job's private copy of the sources, without a .git.
 */
int gitops_checkout(struct gitops_repo *r, const char *commit,
    const char *dir, char *err, size_t errlen);

void gitops_close(struct gitops_repo *r);

/*
 * Write the formatted message into err (when not NULL) and return code:
 * the error convention of every gitops/ module, in one place.
 */
int gitops_fail(int code, char *err, size_t errlen, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

#endif
