/*
 * gitops/mirror.c: the bot's mirrors of forge repositories, fetching, and
 * the credential callback through which a forge's token reaches libgit2.
 */
#include "gitops/git_internal.h"

#include <errno.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

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
		if ((rc = gitops_mkdir_p(parent)) < 0) {
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
	rc = gitops_repo_wrap(g, out);
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
gitops_fetch_refspec(git_repository *g, const char *url,
    const struct gitops_cred *cred, const char *spec, char *err, size_t errlen)
{
	git_fetch_options fo;
	struct gitops_cred_state st = { .cred = cred };
	char *specs[] = { (char *)spec };
	git_strarray refspecs = { specs, 1 };
	git_remote *remote = NULL;
	int rc;

	git_fetch_options_init(&fo, GIT_FETCH_OPTIONS_VERSION);
	rc = url ? git_remote_create_anonymous(&remote, g, url) :
	    git_remote_lookup(&remote, g, "origin");
	if (rc < 0)
		return gitops_git_error(rc, "remote", err, errlen);
	gitops_remote_callbacks(&fo.callbacks, &st);
	fo.download_tags = GIT_REMOTE_DOWNLOAD_TAGS_NONE;
	if ((rc = git_remote_fetch(remote, &refspecs, &fo, NULL)) < 0)
		rc = gitops_git_error(rc, "fetch", err, errlen);
	git_remote_free(remote);
	return rc;
}

int
gitops_fetch_commit(struct gitops_repo *r, const char *url,
    const struct gitops_cred *cred, const char *sha, char *err, size_t errlen)
{
	char spec[GITOPS_OID_HEX + 64];
	git_oid oid;
	int rc;

	if (strlen(sha) != 40 || git_oid_fromstr(&oid, sha) < 0)
		return gitops_fail(-EINVAL, err, errlen, "'%s' is not a commit id",
		    sha);
	snprintf(spec, sizeof(spec), "%s:refs/kernelbot/fetched/%s", sha, sha);
	if ((rc = gitops_fetch_refspec(r->repo, url, cred, spec, err, errlen)) < 0)
		return rc == -EIO ? -ENOENT : rc;	/* most servers refuse ids */
	if (!gitops_has_commit(r, sha))
		return gitops_fail(-ENOENT, err, errlen, "%s: not on the remote", sha);
	return 0;
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
	if (gitops_is_zero(before)) {
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
