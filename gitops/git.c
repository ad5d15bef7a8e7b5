/*
 * gitops/git.c: opening repositories, the mirror, reading trees, diffs and
 * checkouts over libgit2.
 */
#include "gitops/git_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/*
 * libgit2 1.5's git_regexp_match() returns on "no match" without freeing
 * its pcre2 match data (fixed upstream later); every remote lookup walks
 * the config with a regex and leaks. Tell LeakSanitizer, so sanitizer
 * builds keep failing on our leaks and not on that one. Unused otherwise.
 */
const char *__lsan_default_suppressions(void);
const char *
__lsan_default_suppressions(void)
{
	return "leak:git_regexp_match\nleak:libpcre2-8.so\n";
}

static pthread_once_t lib_once = PTHREAD_ONCE_INIT;
static int lib_rc;

static void
lib_setup(void)
{
	static const int levels[] = {
		GIT_CONFIG_LEVEL_PROGRAMDATA, GIT_CONFIG_LEVEL_SYSTEM,
		GIT_CONFIG_LEVEL_XDG, GIT_CONFIG_LEVEL_GLOBAL,
	};

	if ((lib_rc = git_libgit2_init()) < 0)
		return;
	/* An empty search path means no file at that level is ever found. */
	for (size_t i = 0; i < sizeof(levels) / sizeof(levels[0]); i++)
		if ((lib_rc = git_libgit2_opts(GIT_OPT_SET_SEARCH_PATH,
		    levels[i], "")) < 0)
			return;
	lib_rc = 0;
}

int
gitops_lib_init(char *err, size_t errlen)
{
	pthread_once(&lib_once, lib_setup);
	if (lib_rc < 0)
		return gitops_git_error(lib_rc, "libgit2 init", err, errlen);
	return 0;
}

int
gitops_fail(int code, char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	if (err && errlen) {
		va_start(ap, fmt);
		vsnprintf(err, errlen, fmt, ap);
		va_end(ap);
	}
	return code;
}

int
gitops_git_error(int rc, const char *what, char *err, size_t errlen)
{
	const git_error *e = git_error_last();
	const char *msg = e && e->message ? e->message : "unknown libgit2 error";
	int code;

	switch (rc) {
	case GIT_ENOTFOUND:
		code = -ENOENT;
		break;
	case GIT_EEXISTS:
		code = -EEXIST;
		break;
	case GIT_EAUTH:
		code = -EACCES;
		if (!e || !strstr(msg, "credentials"))
			msg = "the remote refused the credentials";
		break;
	case GIT_EINVALIDSPEC:
	case GIT_EAMBIGUOUS:
		code = -EINVAL;
		break;
	default:
		code = -EIO;
		if (strstr(msg, "authentication") || strstr(msg, "401") ||
		    strstr(msg, "403"))
			code = -EACCES;
	}
	return gitops_fail(code, err, errlen, "%s: %s", what, msg);
}

int
gitops_is_zero(const char *sha)
{
	return sha && !strcmp(sha, GITOPS_ZERO_OID);
}

int
gitops_repo_wrap(git_repository *g, struct gitops_repo **out)
{
	struct gitops_repo *r = calloc(1, sizeof(*r));
	const char *p = git_repository_path(g);

	if (!r || !(r->path = strdup(p ? p : ""))) {
		free(r);
		git_repository_free(g);
		return -ENOMEM;
	}
	r->repo = g;
	*out = r;
	return 0;
}

int
gitops_open(const char *path, struct gitops_repo **out, char *err,
    size_t errlen)
{
	git_repository *g = NULL;
	int rc;

	if ((rc = gitops_lib_init(err, errlen)) < 0)
		return rc;
	rc = git_repository_open_ext(&g, path, GIT_REPOSITORY_OPEN_NO_SEARCH,
	    NULL);
	if (rc < 0) {
		if (rc == GIT_ENOTFOUND)
			return gitops_fail(-ENOENT, err, errlen,
			    "%s: not a git repository", path);
		return gitops_git_error(rc, path, err, errlen);
	}
	if ((rc = gitops_repo_wrap(g, out)) < 0)
		return gitops_fail(rc, err, errlen, "out of memory");
	return 0;
}

const char *
gitops_path(const struct gitops_repo *r)
{
	return r->path;
}

void
gitops_close(struct gitops_repo *r)
{
	if (!r)
		return;
	git_repository_free(r->repo);
	free(r->path);
	free(r);
}

int
gitops_mkdir_p(const char *path)
{
	char tmp[GITOPS_MAX_PATH];
	size_t n = strlen(path);

	if (n >= sizeof(tmp))
		return -ENAMETOOLONG;
	memcpy(tmp, path, n + 1);
	for (char *p = tmp + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		if (mkdir(tmp, 0750) < 0 && errno != EEXIST)
			return -errno;
		*p = '/';
	}
	if (mkdir(tmp, 0750) < 0 && errno != EEXIST)
		return -errno;
	return 0;
}

int
gitops_lookup_commit(struct gitops_repo *r, const char *rev, git_commit **out,
    char *err, size_t errlen)
{
	git_object *obj = NULL, *peeled = NULL;
	int rc;

	if ((rc = git_revparse_single(&obj, r->repo, rev)) < 0) {
		if (rc == GIT_ENOTFOUND || rc == GIT_EINVALIDSPEC ||
		    rc == GIT_EAMBIGUOUS)
			return gitops_fail(rc == GIT_ENOTFOUND ? -ENOENT : -EINVAL,
			    err, errlen, "%s: no such commit", rev);
		return gitops_git_error(rc, rev, err, errlen);
	}
	rc = git_object_peel(&peeled, obj, GIT_OBJECT_COMMIT);
	git_object_free(obj);
	if (rc < 0)
		return gitops_fail(-EINVAL, err, errlen, "%s: not a commit", rev);
	*out = (git_commit *)peeled;
	return 0;
}

int
gitops_resolve(struct gitops_repo *r, const char *rev, char out[GITOPS_OID_HEX],
    char *err, size_t errlen)
{
	git_commit *c = NULL;
	int rc;

	if (gitops_is_zero(rev)) {
		memcpy(out, GITOPS_ZERO_OID, GITOPS_OID_HEX);
		return 0;
	}
	if ((rc = gitops_lookup_commit(r, rev, &c, err, errlen)) < 0)
		return rc;
	git_oid_tostr(out, GITOPS_OID_HEX, git_commit_id(c));
	git_commit_free(c);
	return 0;
}

int
gitops_has_commit(struct gitops_repo *r, const char *sha)
{
	git_oid oid;
	git_commit *c = NULL;

	if (strlen(sha) != 40 || git_oid_fromstr(&oid, sha) < 0)
		return 0;
	if (git_commit_lookup(&c, r->repo, &oid) < 0)
		return 0;
	git_commit_free(c);
	return 1;
}

/* The tree of commit, or NULL (and 0) for the zero id. */
static int
commit_tree(struct gitops_repo *r, const char *commit, git_tree **out,
    char *err, size_t errlen)
{
	git_commit *c = NULL;
	int rc;

	*out = NULL;
	if (gitops_is_zero(commit))
		return 0;
	if ((rc = gitops_lookup_commit(r, commit, &c, err, errlen)) < 0)
		return rc;
	if ((rc = git_commit_tree(out, c)) < 0)
		rc = gitops_git_error(rc, commit, err, errlen);
	git_commit_free(c);
	return rc;
}

static int
tree_blob_entry(struct gitops_repo *r, const char *commit, const char *path,
    git_tree_entry **out, char *err, size_t errlen)
{
	git_tree *tree = NULL;
	git_tree_entry *e = NULL;
	int rc;

	if ((rc = commit_tree(r, commit, &tree, err, errlen)) < 0)
		return rc;
	if (!tree) {
		rc = gitops_fail(-ENOENT, err, errlen, "%s: not in the empty tree",
		    path);
		goto out;
	}
	if ((rc = git_tree_entry_bypath(&e, tree, path)) < 0) {
		rc = gitops_fail(-ENOENT, err, errlen, "%s: no such file at %.12s",
		    path, commit);
		goto out;
	}
	if (git_tree_entry_type(e) != GIT_OBJECT_BLOB ||
	    git_tree_entry_filemode(e) == GIT_FILEMODE_LINK) {
		rc = gitops_fail(-ENOENT, err, errlen, "%s: not a file at %.12s",
		    path, commit);
		git_tree_entry_free(e);
		goto out;
	}
	*out = e;
out:
	git_tree_free(tree);
	return rc;
}

int
gitops_blob_id(struct gitops_repo *r, const char *commit, const char *path,
    char out[GITOPS_OID_HEX], char *err, size_t errlen)
{
	git_tree_entry *e = NULL;
	int rc;

	if ((rc = tree_blob_entry(r, commit, path, &e, err, errlen)) < 0)
		return rc;
	git_oid_tostr(out, GITOPS_OID_HEX, git_tree_entry_id(e));
	git_tree_entry_free(e);
	return 0;
}

int
gitops_read_file(struct gitops_repo *r, const char *commit, const char *path,
    struct buf *out, char blob_id[GITOPS_OID_HEX], char *err, size_t errlen)
{
	git_tree_entry *e = NULL;
	git_blob *blob = NULL;
	git_object_size_t size;
	int rc;

	if ((rc = tree_blob_entry(r, commit, path, &e, err, errlen)) < 0)
		return rc;
	if ((rc = git_blob_lookup(&blob, r->repo, git_tree_entry_id(e))) < 0) {
		rc = gitops_git_error(rc, path, err, errlen);
		goto out;
	}
	size = git_blob_rawsize(blob);
	if (size > out->max - out->len) {
		rc = gitops_fail(-EFBIG, err, errlen, "%s: %llu bytes, over the %zu "
		    "byte limit", path, (unsigned long long)size, out->max);
		goto out;
	}
	if ((rc = buf_add(out, git_blob_rawcontent(blob), (size_t)size)) < 0) {
		rc = gitops_fail(rc, err, errlen, "%s: %s", path, strerror(-rc));
		goto out;
	}
	if (blob_id)
		git_oid_tostr(blob_id, GITOPS_OID_HEX, git_tree_entry_id(e));
out:
	git_blob_free(blob);
	git_tree_entry_free(e);
	return rc;
}

struct walk_state {
	int (*fn)(const char *path, void *arg);
	void *arg;
	size_t n;
	int rc;
	char path[GITOPS_MAX_PATH];
};

static int
walk_cb(const char *root, const git_tree_entry *e, void *payload)
{
	struct walk_state *w = payload;
	git_filemode_t mode = git_tree_entry_filemode(e);

	if (mode != GIT_FILEMODE_BLOB && mode != GIT_FILEMODE_BLOB_EXECUTABLE)
		return 0;
	if (++w->n > GITOPS_MAX_TREE_FILES) {
		w->rc = -E2BIG;
		return -1;
	}
	if ((size_t)snprintf(w->path, sizeof(w->path), "%s%s", root,
	    git_tree_entry_name(e)) >= sizeof(w->path))
		return 0;	/* no module lives at a path this long */
	if ((w->rc = w->fn(w->path, w->arg)) < 0)
		return -1;
	return 0;
}

int
gitops_walk_files(struct gitops_repo *r, const char *commit,
    int (*fn)(const char *path, void *arg), void *arg, char *err,
    size_t errlen)
{
	struct walk_state *w;
	git_tree *tree = NULL;
	int rc;

	if ((rc = commit_tree(r, commit, &tree, err, errlen)) < 0 || !tree)
		return rc;
	if (!(w = calloc(1, sizeof(*w)))) {
		git_tree_free(tree);
		return gitops_fail(-ENOMEM, err, errlen, "out of memory");
	}
	w->fn = fn;
	w->arg = arg;
	rc = git_tree_walk(tree, GIT_TREEWALK_PRE, walk_cb, w);
	if (w->rc < 0)
		rc = w->rc == -E2BIG ? gitops_fail(-E2BIG, err, errlen,
		    "%.12s: more than %d files", commit, GITOPS_MAX_TREE_FILES) :
		    w->rc;
	else if (rc < 0)
		rc = gitops_git_error(rc, "tree walk", err, errlen);
	free(w);
	git_tree_free(tree);
	return rc;
}

void
gitops_diff_free(struct gitops_diff *d)
{
	if (!d)
		return;
	for (size_t i = 0; i < d->n; i++) {
		free(d->deltas[i].old_path);
		free(d->deltas[i].new_path);
	}
	free(d->deltas);
	d->deltas = NULL;
	d->n = 0;
}

int
gitops_diff_trees(struct gitops_repo *r, const char *before, const char *after,
    struct gitops_diff *out, char *err, size_t errlen)
{
	git_diff_options dopt;
	git_diff_find_options fopt;
	git_tree *a = NULL, *b = NULL;
	git_diff *diff = NULL;
	struct gitops_diff d = { NULL, 0 };
	size_t n;
	int rc;

	git_diff_find_options_init(&fopt, GIT_DIFF_FIND_OPTIONS_VERSION);
	git_diff_options_init(&dopt, GIT_DIFF_OPTIONS_VERSION);
	if ((rc = commit_tree(r, before, &a, err, errlen)) < 0 ||
	    (rc = commit_tree(r, after, &b, err, errlen)) < 0)
		goto out;
	dopt.flags = GIT_DIFF_SKIP_BINARY_CHECK;
	if ((rc = git_diff_tree_to_tree(&diff, r->repo, a, b, &dopt)) < 0) {
		rc = gitops_git_error(rc, "diff", err, errlen);
		goto out;
	}
	fopt.flags = GIT_DIFF_FIND_RENAMES;
	if ((rc = git_diff_find_similar(diff, &fopt)) < 0) {
		rc = gitops_git_error(rc, "rename detection", err, errlen);
		goto out;
	}
	n = git_diff_num_deltas(diff);
	if (n && !(d.deltas = calloc(n, sizeof(*d.deltas)))) {
		rc = gitops_fail(-ENOMEM, err, errlen, "out of memory");
		goto out;
	}
	for (size_t i = 0; i < n; i++) {
		const git_diff_delta *gd = git_diff_get_delta(diff, i);
		struct gitops_delta *x = &d.deltas[d.n];

		switch (gd->status) {
		case GIT_DELTA_ADDED:
			x->status = GITOPS_ADDED;
			break;
		case GIT_DELTA_DELETED:
			x->status = GITOPS_DELETED;
			break;
		case GIT_DELTA_MODIFIED:
			x->status = GITOPS_MODIFIED;
			break;
		case GIT_DELTA_RENAMED:
			x->status = GITOPS_RENAMED;
			break;
		case GIT_DELTA_TYPECHANGE:
			x->status = GITOPS_TYPECHANGE;
			break;
		default:
			continue;
		}
		if ((x->status != GITOPS_ADDED &&
		    !(x->old_path = strdup(gd->old_file.path))) ||
		    (x->status != GITOPS_DELETED &&
		    !(x->new_path = strdup(gd->new_file.path)))) {
			d.n++;
			rc = gitops_fail(-ENOMEM, err, errlen, "out of memory");
			goto out;
		}
		d.n++;
	}
	*out = d;
	d.deltas = NULL;
	d.n = 0;
out:
	gitops_diff_free(&d);
	git_diff_free(diff);
	git_tree_free(a);
	git_tree_free(b);
	return rc;
}

int
gitops_checkout(struct gitops_repo *r, const char *commit, const char *dir,
    char *err, size_t errlen)
{
	git_checkout_options co;
	git_commit *c = NULL;
	git_index *empty = NULL;
	int rc;

	git_checkout_options_init(&co, GIT_CHECKOUT_OPTIONS_VERSION);
	if ((rc = gitops_lookup_commit(r, commit, &c, err, errlen)) < 0)
		return rc;
	if ((rc = gitops_mkdir_p(dir)) < 0) {
		rc = gitops_fail(rc, err, errlen, "%s: %s", dir, strerror(-rc));
		goto out;
	}
	/* Against an empty baseline every file is new, so every file is written. */
	if ((rc = git_index_new(&empty)) < 0) {
		rc = gitops_git_error(rc, "index", err, errlen);
		goto out;
	}
	co.checkout_strategy = GIT_CHECKOUT_FORCE | GIT_CHECKOUT_DONT_UPDATE_INDEX |
	    GIT_CHECKOUT_DONT_WRITE_INDEX;
	co.target_directory = dir;
	co.baseline_index = empty;
	if ((rc = git_checkout_tree(r->repo, (git_object *)c, &co)) < 0)
		rc = gitops_git_error(rc, "checkout", err, errlen);
out:
	git_index_free(empty);
	git_commit_free(c);
	return rc;
}
