/*
 * gitops/git.c: opening repositories, the mirror, reading trees, diffs and
 * checkouts over libgit2.
 */
#include "gitops/git_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
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

static int
is_zero(const char *sha)
{
	return sha && !strcmp(sha, GITOPS_ZERO_OID);
}

static int
repo_wrap(git_repository *g, struct gitops_repo **out)
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
	if ((rc = repo_wrap(g, out)) < 0)
		return gitops_fail(rc, err, errlen, "out of memory");
	return 0;
}

int
gitops_init_bare(const char *path, char *err, size_t errlen)
{
	git_repository_init_options io;
	git_repository *g = NULL;
	int rc;

	git_repository_init_options_init(&io, GIT_REPOSITORY_INIT_OPTIONS_VERSION);
	if ((rc = gitops_lib_init(err, errlen)) < 0)
		return rc;
	if (git_repository_open_bare(&g, path) == 0) {
		git_repository_free(g);
		return 0;
	}
	io.flags = GIT_REPOSITORY_INIT_BARE | GIT_REPOSITORY_INIT_MKPATH;
	if ((rc = git_repository_init_ext(&g, path, &io)) < 0)
		return gitops_git_error(rc, path, err, errlen);
	git_repository_free(g);
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

static int
cred_cb(git_credential **out, const char *url, const char *user_from_url,
    unsigned int allowed, void *payload)
{
	struct gitops_cred_state *st = payload;

	(void)url;
	(void)user_from_url;
	if (!st || !st->cred || !st->cred->password)
		return GIT_PASSTHROUGH;
	/* A second call means the first answer was refused: stop, don't loop. */
	if (st->tries++ > 0 || !(allowed & GIT_CREDENTIAL_USERPASS_PLAINTEXT)) {
		git_error_set_str(GIT_ERROR_NET, st->tries > 1 ?
		    "the remote refused the credentials (check the forge's token)" :
		    "the remote wants credentials other than a token");
		return GIT_EAUTH;
	}
	return git_credential_userpass_plaintext_new(out,
	    st->cred->username ? st->cred->username : "x-access-token",
	    st->cred->password);
}

void
gitops_remote_callbacks(git_remote_callbacks *cb, struct gitops_cred_state *st)
{
	git_remote_init_callbacks(cb, GIT_REMOTE_CALLBACKS_VERSION);
	cb->credentials = cred_cb;
	cb->payload = st;
}

static int
valid_name_part(const char *s, size_t n)
{
	if (n == 0 || s[0] == '.')
		return 0;
	for (size_t i = 0; i < n; i++)
		if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= 'A' && s[i] <= 'Z') ||
		    (s[i] >= '0' && s[i] <= '9') || s[i] == '.' || s[i] == '_' ||
		    s[i] == '-'))
			return 0;
	return 1;
}

static int
mkdir_p(const char *path)
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

static int
rm_entry(const char *p, const struct stat *sb, int flag, struct FTW *ftw)
{
	(void)sb;
	(void)flag;
	(void)ftw;
	return remove(p) < 0 ? -1 : 0;
}

static void
rm_rf(const char *path)
{
	nftw(path, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}

static int
fetch_origin(git_repository *g, const struct gitops_cred *cred, char *err,
    size_t errlen)
{
	git_fetch_options fo;
	struct gitops_cred_state st = { .cred = cred };
	git_remote *remote = NULL;
	int rc;

	git_fetch_options_init(&fo, GIT_FETCH_OPTIONS_VERSION);
	if ((rc = git_remote_lookup(&remote, g, "origin")) < 0) {
		rc = gitops_git_error(rc, "mirror remote", err, errlen);
		goto out;
	}
	gitops_remote_callbacks(&fo.callbacks, &st);
	fo.prune = GIT_FETCH_PRUNE;
	fo.download_tags = GIT_REMOTE_DOWNLOAD_TAGS_NONE;
	if ((rc = git_remote_fetch(remote, NULL, &fo, "kernelbot mirror")) < 0)
		rc = gitops_git_error(rc, "fetch", err, errlen);
out:
	git_remote_free(remote);
	return rc;
}

int
gitops_mirror(const char *data_dir, const char *name, const char *url,
    const struct gitops_cred *cred, struct gitops_repo **out, char *err,
    size_t errlen)
{
	static const char *const specs[] = {
		"+refs/heads/*:refs/heads/*", "+refs/tags/*:refs/tags/*",
	};
	git_repository_init_options io;
	git_repository *g = NULL;
	git_remote *remote = NULL;
	char path[GITOPS_MAX_PATH], tmp[GITOPS_MAX_PATH + 32], parent[GITOPS_MAX_PATH];
	const char *slash = name ? strchr(name, '/') : NULL;
	struct stat sb;
	int rc, fresh = 0;

	git_repository_init_options_init(&io, GIT_REPOSITORY_INIT_OPTIONS_VERSION);
	if ((rc = gitops_lib_init(err, errlen)) < 0)
		return rc;
	if (!slash || strchr(slash + 1, '/') ||
	    !valid_name_part(name, (size_t)(slash - name)) ||
	    !valid_name_part(slash + 1, strlen(slash + 1)))
		return gitops_fail(-EINVAL, err, errlen,
		    "mirror name '%s' is not owner/repo", name ? name : "");
	if (!url || !*url)
		return gitops_fail(-EINVAL, err, errlen, "mirror %s: no URL", name);
	if ((size_t)snprintf(path, sizeof(path), "%s/mirrors/%s.git", data_dir,
	    name) >= sizeof(path))
		return gitops_fail(-ENAMETOOLONG, err, errlen, "data_dir too long");
	snprintf(parent, sizeof(parent), "%s/mirrors/%.*s", data_dir,
	    (int)(slash - name), name);

	if (stat(path, &sb) == 0) {
		if ((rc = git_repository_open_bare(&g, path)) < 0) {
			rc = gitops_git_error(rc, path, err, errlen);
			goto out;
		}
		if ((rc = git_remote_lookup(&remote, g, "origin")) < 0 ||
		    (strcmp(git_remote_url(remote), url) &&
		    (rc = git_remote_set_url(g, "origin", url)) < 0)) {
			rc = gitops_git_error(rc, "mirror remote", err, errlen);
			goto out;
		}
	} else {
		/* Clone into a temporary name, so a failed first clone leaves nothing. */
		if ((rc = mkdir_p(parent)) < 0) {
			rc = gitops_fail(rc, err, errlen, "%s: %s", parent,
			    strerror(-rc));
			goto out;
		}
		snprintf(tmp, sizeof(tmp), "%s.tmp-%ld", path, (long)getpid());
		rm_rf(tmp);
		fresh = 1;
		io.flags = GIT_REPOSITORY_INIT_BARE | GIT_REPOSITORY_INIT_MKPATH |
		    GIT_REPOSITORY_INIT_NO_REINIT;
		if ((rc = git_repository_init_ext(&g, tmp, &io)) < 0 ||
		    (rc = git_remote_create_with_fetchspec(&remote, g, "origin",
		    url, specs[0])) < 0 ||
		    (rc = git_remote_add_fetch(g, "origin", specs[1])) < 0) {
			rc = gitops_git_error(rc, "mirror init", err, errlen);
			goto out;
		}
	}
	if ((rc = fetch_origin(g, cred, err, errlen)) < 0)
		goto out;
	if (fresh) {
		git_repository_free(g);
		g = NULL;
		if (rename(tmp, path) < 0) {
			rc = gitops_fail(-errno, err, errlen, "rename %s: %s", tmp,
			    strerror(errno));
			goto out;
		}
		fresh = 0;
		if ((rc = git_repository_open_bare(&g, path)) < 0) {
			rc = gitops_git_error(rc, path, err, errlen);
			goto out;
		}
	}
	rc = repo_wrap(g, out);
	g = NULL;
	if (rc < 0)
		gitops_fail(rc, err, errlen, "out of memory");
out:
	git_remote_free(remote);
	git_repository_free(g);
	if (fresh)
		rm_rf(tmp);
	return rc;
}

int
gitops_fetch_commit(struct gitops_repo *r, const char *url,
    const struct gitops_cred *cred, const char *sha, char *err, size_t errlen)
{
	git_fetch_options fo;
	struct gitops_cred_state st = { .cred = cred };
	char spec[GITOPS_OID_HEX + 64];
	char *specs[] = { spec };
	git_strarray refspecs = { specs, 1 };
	git_remote *remote = NULL;
	git_oid oid;
	int rc;

	git_fetch_options_init(&fo, GIT_FETCH_OPTIONS_VERSION);
	if (git_oid_fromstr(&oid, sha) < 0 || strlen(sha) != 40)
		return gitops_fail(-EINVAL, err, errlen, "'%s' is not a commit id",
		    sha);
	snprintf(spec, sizeof(spec), "%s:refs/kernelbot/fetched/%s", sha, sha);
	rc = url ? git_remote_create_anonymous(&remote, r->repo, url) :
	    git_remote_lookup(&remote, r->repo, "origin");
	if (rc < 0) {
		rc = gitops_git_error(rc, "remote", err, errlen);
		goto out;
	}
	gitops_remote_callbacks(&fo.callbacks, &st);
	fo.download_tags = GIT_REMOTE_DOWNLOAD_TAGS_NONE;
	if ((rc = git_remote_fetch(remote, &refspecs, &fo, NULL)) < 0) {
		rc = gitops_git_error(rc, "fetch commit", err, errlen);
		if (rc == -EIO)
			rc = -ENOENT;
		goto out;
	}
	if (!gitops_has_commit(r, sha))
		rc = gitops_fail(-ENOENT, err, errlen, "%s: not on the remote", sha);
out:
	git_remote_free(remote);
	return rc;
}

/* The mirror's current value of ref, "" when there is no mirror or ref. */
static void
mirror_ref(const char *data_dir, const char *name, const char *ref,
    char out[GITOPS_OID_HEX])
{
	char path[GITOPS_MAX_PATH];
	git_repository *g = NULL;
	git_oid oid;

	out[0] = '\0';
	snprintf(path, sizeof(path), "%s/mirrors/%s.git", data_dir, name);
	if (git_repository_open_bare(&g, path) < 0)
		return;
	if (git_reference_name_to_id(&oid, g, ref) == 0)
		git_oid_tostr(out, GITOPS_OID_HEX, &oid);
	git_repository_free(g);
}

int
gitops_sync_push(const char *data_dir, const char *name, const char *url,
    const struct gitops_cred *cred, const char *ref, const char *before,
    const char *after, struct gitops_repo **out,
    char before_used[GITOPS_OID_HEX], int *fallback, char *err, size_t errlen)
{
	struct gitops_repo *r = NULL;
	char old[GITOPS_OID_HEX], used[GITOPS_OID_HEX];
	int rc, fb = 0;

	if ((rc = gitops_lib_init(err, errlen)) < 0)
		return rc;
	mirror_ref(data_dir, name, ref ? ref : "", old);
	if ((rc = gitops_mirror(data_dir, name, url, cred, &r, err, errlen)) < 0)
		return rc;
	if (!gitops_has_commit(r, after) &&
	    (rc = gitops_fetch_commit(r, NULL, cred, after, err, errlen)) < 0)
		goto out;
	if (is_zero(before)) {
		snprintf(used, sizeof(used), "%s", GITOPS_ZERO_OID);
	} else if (gitops_has_commit(r, before) ||
	    gitops_fetch_commit(r, NULL, cred, before, NULL, 0) == 0) {
		snprintf(used, sizeof(used), "%s", before);
	} else if (old[0] && gitops_has_commit(r, old)) {
		snprintf(used, sizeof(used), "%s", old);
		fb = 1;
	} else {
		snprintf(used, sizeof(used), "%s", GITOPS_ZERO_OID);
		fb = 2;
	}
	memcpy(before_used, used, GITOPS_OID_HEX);
	*fallback = fb;
	*out = r;
	r = NULL;
	rc = 0;
out:
	gitops_close(r);
	return rc;
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

	if (is_zero(rev)) {
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
	if (is_zero(commit))
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
	if ((rc = mkdir_p(dir)) < 0) {
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
