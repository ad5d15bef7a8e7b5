/*
 * gitops/forge_local.c: the dry-run forge. Branches are pushed to a local
 * bare repository (bare_repo, created when missing); each pull request is
 * OUT/prs/SLUG.json (the record) and OUT/prs/SLUG.md (the same, rendered
 * to read like a pull request page); statuses are OUT/statuses/SHA.json.
 * docs/forges.md describes the format. Files are replaced atomically
 * (write, fsync, rename), so a reader never sees half a pull request.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "common/crypto.h"
#include "common/jsonx.h"
#include "gitops/forge_internal.h"
#include "gitops/gitops.h"
#include "gitops/modules.h"
#include "gitops/publish.h"

#define LOCAL_INLINE_MAX (64u << 10)	/* text files shown inline up to this */
#define LOCAL_MAX_RECORD (32u << 20)

struct lf {
	char *out_dir;
	char *bare;
	json_t *perms;			/* user -> level */
};

static struct lf *
LF(struct forge *f)
{
	return f->priv;
}

static void
now_iso(char out[32])
{
	time_t t = time(NULL);
	struct tm tm;

	gmtime_r(&t, &tm);
	strftime(out, 32, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

static int
write_atomic(const char *path, const char *data, size_t len, char *err,
    size_t errlen)
{
	char tmp[GITOPS_MAX_PATH + 16];
	int fd, rc = 0;

	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	if ((fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644)) < 0)
		return forge_fail(-errno, err, errlen, "%s: %s", tmp, strerror(errno));
	for (size_t off = 0; off < len; ) {
		ssize_t n = write(fd, data + off, len - off);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			rc = -errno;
			break;
		}
		off += (size_t)n;
	}
	if (rc == 0 && fsync(fd) < 0)
		rc = -errno;
	close(fd);
	if (rc == 0 && rename(tmp, path) < 0)
		rc = -errno;
	if (rc < 0) {
		unlink(tmp);
		return forge_fail(rc, err, errlen, "%s: %s", path, strerror(-rc));
	}
	return 0;
}

static int
write_json(const char *path, const json_t *j, char *err, size_t errlen)
{
	struct buf b = BUF_INIT(LOCAL_MAX_RECORD);
	int rc;

	if ((rc = jsonx_dump(j, JSON_INDENT(2) | JSON_SORT_KEYS, &b)) < 0 ||
	    (rc = buf_addch(&b, '\n')) < 0)
		rc = forge_fail(rc, err, errlen, "%s: record too large", path);
	else
		rc = write_atomic(path, b.data, b.len, err, errlen);
	buf_free(&b);
	return rc;
}

static void
pr_path(struct forge *f, const char *slug, const char *ext, char *out,
    size_t len)
{
	snprintf(out, len, "%s/prs/%s.%s", LF(f)->out_dir, slug, ext);
}

static json_t *
load_json(const char *path)
{
	json_t *j = NULL;
	char err[128];

	if (jsonx_load_file(path, LOCAL_MAX_RECORD, &j, err, sizeof(err)) < 0)
		return NULL;
	return j;
}

/* Call fn on every record in OUT/prs until it returns nonzero. */
static int
each_pr(struct forge *f, int (*fn)(struct forge *f, const char *slug,
    json_t *pr, void *arg), void *arg)
{
	char dir[GITOPS_MAX_PATH], path[GITOPS_MAX_PATH + 300];
	struct dirent *e;
	DIR *d;
	int rc = 0;

	snprintf(dir, sizeof(dir), "%s/prs", LF(f)->out_dir);
	if (!(d = opendir(dir)))
		return 0;
	while (rc == 0 && (e = readdir(d))) {
		size_t n = strlen(e->d_name);
		char slug[256];
		json_t *pr;

		if (n < 6 || n - 5 >= sizeof(slug) || strcmp(e->d_name + n - 5, ".json"))
			continue;
		snprintf(slug, sizeof(slug), "%.*s", (int)(n - 5), e->d_name);
		snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
		if (!(pr = load_json(path)))
			continue;
		rc = fn(f, slug, pr, arg);
		json_decref(pr);
	}
	closedir(d);
	return rc;
}

static int
max_number(struct forge *f, const char *slug, json_t *pr, void *arg)
{
	long long *max = arg;

	(void)f;
	(void)slug;
	if (jsonx_int(pr, "number", 0) > *max)
		*max = jsonx_int(pr, "number", 0);
	return 0;
}

static const char *
state_icon(const char *s)
{
	return !strcmp(s, "success") ? "✅" : !strcmp(s, "pending") ? "⏳" :
	    !strcmp(s, "failure") ? "❌" : !strcmp(s, "neutral") ? "➖" : "⚠️";
}

/* The statuses of one commit: OUT/statuses/SHA.json, an array. */
static json_t *
statuses_of(struct forge *f, const char *sha)
{
	char path[GITOPS_MAX_PATH];
	json_t *j;

	snprintf(path, sizeof(path), "%s/statuses/%s.json", LF(f)->out_dir, sha);
	j = load_json(path);
	return json_is_array(j) ? j : (json_decref(j), json_array());
}

/* Render the record as a pull request page and write both files. */
static int
save_pr(struct forge *f, const char *slug, json_t *pr, char *err, size_t errlen)
{
	struct buf md = BUF_INIT(LOCAL_MAX_RECORD);
	char path[GITOPS_MAX_PATH];
	const char *shas[2] = { jsonx_str(pr, "head_sha", ""),
		jsonx_str(pr, "base_sha", "") };
	json_t *all = json_array(), *it, *st;
	size_t i;
	int rc;

	for (int k = 0; k < 2; k++) {
		if (!*shas[k])
			continue;
		st = statuses_of(f, shas[k]);
		json_array_foreach(st, i, it) {
			json_t *c = json_deep_copy(it);

			json_object_set_new(c, "sha", json_string(shas[k]));
			json_array_append_new(all, c);
		}
		json_decref(st);
	}
	json_object_set_new(pr, "statuses", all);
	buf_printf(&md, "# %s\n\n", jsonx_str(pr, "title", ""));
	buf_printf(&md, "**#%lld** · %s · `%s` → `%s` · head %.12s · opened %s · "
	    "updated %s (%lld updates)\n\n", jsonx_int(pr, "number", 0),
	    jsonx_str(pr, "state", "open"), jsonx_str(pr, "head", ""),
	    jsonx_str(pr, "base", ""), shas[0], jsonx_str(pr, "created_at", ""),
	    jsonx_str(pr, "updated_at", ""), jsonx_int(pr, "updates", 0));
	if (json_array_size(json_object_get(pr, "labels"))) {
		buf_addstr(&md, "Labels:");
		json_array_foreach(json_object_get(pr, "labels"), i, it)
			buf_printf(&md, " `%s`", json_string_value(it));
		buf_addstr(&md, "\n\n");
	}
	if (json_array_size(json_object_get(pr, "reviewers"))) {
		buf_addstr(&md, "Reviewers:");
		json_array_foreach(json_object_get(pr, "reviewers"), i, it)
			buf_printf(&md, " @%s", json_string_value(it));
		buf_addstr(&md, "\n\n");
	}
	buf_printf(&md, "---\n\n%s\n\n---\n\n## Files changed (%zu)\n\n",
	    jsonx_str(pr, "body", ""), json_array_size(json_object_get(pr, "files")));
	json_array_foreach(json_object_get(pr, "files"), i, it)
		buf_printf(&md, "- `%s` (%lld bytes)\n", jsonx_str(it, "path", ""),
		    jsonx_int(it, "bytes", 0));
	buf_addstr(&md, "\n## Checks\n\n");
	if (!json_array_size(all))
		buf_addstr(&md, "(none)\n");
	json_array_foreach(all, i, it)
		buf_printf(&md, "- %s **%s** %s: %s%s%s%s (%.12s)\n",
		    state_icon(jsonx_str(it, "state", "")), jsonx_str(it, "context", ""),
		    jsonx_str(it, "state", ""), jsonx_str(it, "description", ""),
		    jsonx_str(it, "target_url", NULL) ? " [details](" : "",
		    jsonx_str(it, "target_url", ""),
		    jsonx_str(it, "target_url", NULL) ? ")" : "",
		    jsonx_str(it, "sha", ""));
	buf_printf(&md, "\n## Comments (%zu)\n",
	    json_array_size(json_object_get(pr, "comments")));
	json_array_foreach(json_object_get(pr, "comments"), i, it) {
		size_t k;
		json_t *rx;

		buf_printf(&md, "\n### comment %lld (updated %s)\n\n%s\n",
		    jsonx_int(it, "id", 0), jsonx_str(it, "updated_at", ""),
		    jsonx_str(it, "body", ""));
		json_array_foreach(json_object_get(it, "reactions"), k, rx)
			buf_printf(&md, "%s:%s:", k ? " " : "\nReactions: ",
			    json_string_value(rx));
	}
	if (md.len + 1 >= md.max) {
		buf_free(&md);
		return forge_fail(-EFBIG, err, errlen, "pull request %s too large",
		    slug);
	}
	pr_path(f, slug, "json", path, sizeof(path));
	if ((rc = write_json(path, pr, err, errlen)) == 0) {
		pr_path(f, slug, "md", path, sizeof(path));
		rc = write_atomic(path, md.data, md.len, err, errlen);
	}
	buf_free(&md);
	return rc;
}

static int
add_file(const char *path, const void *data, size_t len, void *arg)
{
	json_t *files = arg;
	char hex[CRYPTO_SHA256_HEX];
	json_t *o;

	crypto_sha256_hex(data, len, hex);
	o = json_pack("{s:s, s:I, s:s}", "path", path, "bytes", (json_int_t)len,
	    "sha256", hex);
	/* Text is shown inline (json_stringn refuses invalid UTF-8). */
	if (len <= LOCAL_INLINE_MAX && !memchr(data, 0, len)) {
		json_t *s = json_stringn(data, len);

		if (s)
			json_object_set_new(o, "content", s);
	}
	json_array_append_new(files, o);
	return 0;
}

static int
lf_pr_upsert(struct forge *f, const struct forge_pr_req *q, struct forge_pr *out,
    char *err, size_t errlen)
{
	struct gitops_repo *repo = NULL;
	struct forge_pr pr;
	char slug[MODULES_MAX_SLUG + 1], path[GITOPS_MAX_PATH], ref[GITOPS_MAX_PATH];
	char head[GITOPS_OID_HEX], base[GITOPS_OID_HEX], ts[32];
	json_t *rec = NULL, *files = json_array(), *labels;
	long long max = 0;
	int rc, same;

	memset(&pr, 0, sizeof(pr));
	if (q->slug)
		snprintf(slug, sizeof(slug), "%s", q->slug);
	else if (modules_slug(q->head, NULL, slug) < 0)
		return forge_fail(-EINVAL, err, errlen, "bad branch '%s'", q->head);
	pr_path(f, slug, "json", path, sizeof(path));
	rec = load_json(path);
	pr.result = FORGE_UNCHANGED;
	if (!rec && q->find_only) {
		rc = forge_fail(-ENOENT, err, errlen, "no pull request for %s",
		    q->head);
		goto out;
	}
	if (q->find_only)
		goto done;
	snprintf(ref, sizeof(ref), "refs/heads/%s", q->head);
	if ((rc = gitops_open(LF(f)->bare, &repo, err, errlen)) < 0 ||
	    (rc = gitops_resolve(repo, ref, head, err, errlen)) < 0)
		goto out;
	snprintf(ref, sizeof(ref), "%s^", head);
	if (gitops_resolve(repo, ref, base, err, errlen) < 0)
		snprintf(base, sizeof(base), "%s", GITOPS_ZERO_OID);
	if ((rc = gitops_branch_files(repo, base, head, add_file, files, err,
	    errlen)) < 0)
		goto out;
	labels = jsonx_strv(q->labels ? q->labels : (const char *const[]){ NULL });
	now_iso(ts);
	if (!rec) {
		each_pr(f, max_number, &max);
		rec = json_pack("{s:I, s:s, s:s, s:[], s:s, s:I}", "number",
		    (json_int_t)(max + 1), "state", "open", "created_at", ts,
		    "comments", "slug", slug, "updates", (json_int_t)0);
		json_object_set_new(rec, "reviewers", jsonx_strv(q->reviewers ?
		    q->reviewers : (const char *const[]){ NULL }));
		pr.result = FORGE_CREATED;
	}
	same = pr.result != FORGE_CREATED &&
	    !strcmp(jsonx_str(rec, "title", ""), q->title) &&
	    !strcmp(jsonx_str(rec, "body", ""), q->body) &&
	    !strcmp(jsonx_str(rec, "head_sha", ""), head) &&
	    json_equal(json_object_get(rec, "labels"), labels);
	json_object_set_new(rec, "title", json_string(q->title));
	json_object_set_new(rec, "body", json_string(q->body));
	json_object_set_new(rec, "head", json_string(q->head));
	json_object_set_new(rec, "base", json_string(q->base));
	json_object_set_new(rec, "head_sha", json_string(head));
	json_object_set_new(rec, "base_sha", json_string(base));
	json_object_set_new(rec, "labels", labels);
	json_object_set(rec, "files", files);
	pr_path(f, slug, "md", path, sizeof(path));
	json_object_set_new(rec, "url", json_pack("s++", "file://", path, ""));
	if (pr.result != FORGE_CREATED) {
		if (same) {
			pr.result = FORGE_UNCHANGED;
			goto done;
		}
		pr.result = FORGE_UPDATED;
		json_object_set_new(rec, "updates", json_integer(
		    jsonx_int(rec, "updates", 0) + 1));
	}
	json_object_set_new(rec, "updated_at", json_string(ts));
	if ((rc = save_pr(f, slug, rec, err, errlen)) < 0)
		goto out;
done:
	pr.number = jsonx_int(rec, "number", 0);
	snprintf(pr.url, sizeof(pr.url), "%s", jsonx_str(rec, "url", ""));
	*out = pr;
	rc = 0;
out:
	json_decref(rec);
	json_decref(files);
	gitops_close(repo);
	return rc;
}

struct find_num {
	long long number;
	char slug[256];
	json_t *rec;
};

static int
match_number(struct forge *f, const char *slug, json_t *pr, void *arg)
{
	struct find_num *x = arg;

	(void)f;
	if (jsonx_int(pr, "number", 0) != x->number)
		return 0;
	snprintf(x->slug, sizeof(x->slug), "%s", slug);
	x->rec = json_incref(pr);
	return 1;
}

static int
lf_comment_upsert(struct forge *f, long long pr, const char *marker,
    const char *body, struct forge_comment *out, char *err, size_t errlen)
{
	struct find_num x = { pr, "", NULL };
	struct forge_comment c;
	json_t *comments, *it, *hit = NULL;
	char *text = forge_clip(f, marker, body), ts[32];
	size_t i;
	int rc = 0;

	memset(&c, 0, sizeof(c));
	if (!text)
		return forge_fail(-ENOMEM, err, errlen, "out of memory");
	each_pr(f, match_number, &x);
	if (!x.rec) {
		rc = forge_fail(-ENOENT, err, errlen, "no pull request #%lld", pr);
		goto out;
	}
	comments = json_object_get(x.rec, "comments");
	json_array_foreach(comments, i, it)
		if (strstr(jsonx_str(it, "body", ""), marker))
			hit = it;
	now_iso(ts);
	if (hit && !strcmp(jsonx_str(hit, "body", ""), text)) {
		c.result = FORGE_UNCHANGED;
	} else if (hit) {
		json_object_set_new(hit, "body", json_string(text));
		json_object_set_new(hit, "updated_at", json_string(ts));
		json_object_set_new(hit, "edits", json_integer(jsonx_int(hit,
		    "edits", 0) + 1));
		c.result = FORGE_UPDATED;
	} else {
		hit = json_pack("{s:I, s:s, s:s, s:s, s:I, s:[]}", "id",
		    (json_int_t)(pr * 1000 + (long long)json_array_size(comments) + 1),
		    "body", text, "created_at", ts, "updated_at", ts, "edits",
		    (json_int_t)0, "reactions");
		json_array_append_new(comments, hit);
		c.result = FORGE_CREATED;
	}
	c.id = jsonx_int(hit, "id", 0);
	snprintf(c.url, sizeof(c.url), "%s#comment-%lld",
	    jsonx_str(x.rec, "url", ""), c.id);
	if (c.result != FORGE_UNCHANGED &&
	    (rc = save_pr(f, x.slug, x.rec, err, errlen)) < 0)
		goto out;
	*out = c;
out:
	json_decref(x.rec);
	free(text);
	return rc;
}

struct resave {
	const char *sha;
	int rc;
	char *err;
	size_t errlen;
};

static int
resave_if(struct forge *f, const char *slug, json_t *pr, void *arg)
{
	struct resave *x = arg;

	if (strcmp(jsonx_str(pr, "head_sha", ""), x->sha) &&
	    strcmp(jsonx_str(pr, "base_sha", ""), x->sha))
		return 0;
	x->rc = save_pr(f, slug, pr, x->err, x->errlen);
	return x->rc;
}

static int
lf_status_set(struct forge *f, const char *sha, enum forge_state st,
    const char *context, const char *description, const char *target_url,
    char *err, size_t errlen)
{
	static const char *const states[] = { "pending", "success", "failure",
		"error", "neutral" };
	struct resave x = { sha, 0, err, errlen };
	char path[GITOPS_MAX_PATH], ts[32];
	json_t *all = statuses_of(f, sha), *it, *entry;
	size_t i;
	int rc;

	now_iso(ts);
	entry = json_pack("{s:s, s:s, s:s, s:s}", "context", context, "state",
	    states[st], "description", description, "updated_at", ts);
	if (target_url)
		json_object_set_new(entry, "target_url", json_string(target_url));
	/* One entry per context, replaced, as a forge shows the latest. */
	json_array_foreach(all, i, it)
		if (!strcmp(jsonx_str(it, "context", ""), context)) {
			json_array_remove(all, i);
			break;
		}
	json_array_append_new(all, entry);
	snprintf(path, sizeof(path), "%s/statuses/%s.json", LF(f)->out_dir, sha);
	rc = write_json(path, all, err, errlen);
	json_decref(all);
	if (rc == 0)
		each_pr(f, resave_if, &x);
	return rc < 0 ? rc : x.rc;
}

static int
lf_permission(struct forge *f, const char *user, enum forge_perm *out,
    char *err, size_t errlen)
{
	const char *p = jsonx_str(LF(f)->perms, user, "none");

	(void)err;
	(void)errlen;
	*out = !strcmp(p, "admin") ? FORGE_PERM_ADMIN : !strcmp(p, "write") ?
	    FORGE_PERM_WRITE : !strcmp(p, "read") ? FORGE_PERM_READ :
	    FORGE_PERM_NONE;
	return 0;
}

static int
lf_react(struct forge *f, long long pr, long long comment_id,
    const char *reaction, char *err, size_t errlen)
{
	struct find_num x = { pr, "", NULL };
	json_t *it, *rx, *hit = NULL;
	size_t i;
	int rc = 0, have = 0;

	each_pr(f, match_number, &x);
	if (!x.rec)
		return forge_fail(-ENOENT, err, errlen, "no pull request #%lld", pr);
	json_array_foreach(json_object_get(x.rec, "comments"), i, it)
		if (jsonx_int(it, "id", 0) == comment_id)
			hit = it;
	if (!hit) {
		rc = forge_fail(-ENOENT, err, errlen, "no comment %lld on #%lld",
		    comment_id, pr);
		goto out;
	}
	if (!json_is_array(json_object_get(hit, "reactions")))
		json_object_set_new(hit, "reactions", json_array());
	json_array_foreach(json_object_get(hit, "reactions"), i, rx)
		if (!strcmp(json_string_value(rx), reaction))
			have = 1;
	if (!have) {
		json_array_append_new(json_object_get(hit, "reactions"),
		    json_string(reaction));
		rc = save_pr(f, x.slug, x.rec, err, errlen);
	}
out:
	json_decref(x.rec);
	return rc;
}

/* Local pull requests are the bot's own branches: never a fork. */
static int
lf_pr_get(struct forge *f, long long number, struct forge_pr_info *out,
    char *err, size_t errlen)
{
	struct find_num x = { number, "", NULL };
	struct forge_pr_info pi;

	each_pr(f, match_number, &x);
	if (!x.rec)
		return forge_fail(-ENOENT, err, errlen, "no pull request #%lld",
		    number);
	memset(&pi, 0, sizeof(pi));
	pi.number = number;
	snprintf(pi.head_ref, sizeof(pi.head_ref), "%s",
	    jsonx_str(x.rec, "head", ""));
	snprintf(pi.base_ref, sizeof(pi.base_ref), "%s",
	    jsonx_str(x.rec, "base", ""));
	snprintf(pi.head_sha, sizeof(pi.head_sha), "%s",
	    jsonx_str(x.rec, "head_sha", ""));
	snprintf(pi.state, sizeof(pi.state), "%s", jsonx_str(x.rec, "state",
	    "open"));
	json_decref(x.rec);
	*out = pi;
	return 0;
}

static void
lf_close(struct forge *f)
{
	struct lf *l = LF(f);

	if (!l)
		return;
	free(l->out_dir);
	free(l->bare);
	json_decref(l->perms);
	free(l);
}

static const struct forge_ops lf_ops = {
	.pr_upsert = lf_pr_upsert,
	.comment_upsert = lf_comment_upsert,
	.status_set = lf_status_set,
	.permission = lf_permission,
	.react = lf_react,
	.pr_get = lf_pr_get,
	.close = lf_close,
};

static int
mkdirs(const char *base, const char *sub, char *err, size_t errlen)
{
	char p[GITOPS_MAX_PATH];

	snprintf(p, sizeof(p), "%s%s", base, sub);
	for (char *s = p + 1; *s; s++) {
		if (*s != '/')
			continue;
		*s = '\0';
		mkdir(p, 0755);
		*s = '/';
	}
	if (mkdir(p, 0755) < 0 && errno != EEXIST)
		return forge_fail(-errno, err, errlen, "%s: %s", p, strerror(errno));
	return 0;
}

int
forge_local_init(struct forge *f, const json_t *conf, char *err, size_t errlen)
{
	const char *out_dir, *bare;
	json_t *perms = json_object_get(conf, "permissions");
	struct lf *l;
	int rc;

	f->ops = &lf_ops;
	if (!(l = calloc(1, sizeof(*l))))
		return -ENOMEM;
	f->priv = l;
	if ((rc = forge_conf_str(f, conf, "out_dir", 1, &out_dir, err, errlen)) < 0 ||
	    (rc = forge_conf_str(f, conf, "bare_repo", 1, &bare, err, errlen)) < 0)
		return rc;
	if (perms && !json_is_object(perms))
		return forge_fail(-EINVAL, err, errlen, "forges.local.permissions: "
		    "must map user names to admin, write, read or none");
	if (!(l->out_dir = realpath(out_dir, NULL))) {
		if ((rc = mkdirs(out_dir, "", err, errlen)) < 0)
			return rc;
		if (!(l->out_dir = realpath(out_dir, NULL)))
			return forge_fail(-errno, err, errlen, "forges.local.out_dir: "
			    "%s: %s", out_dir, strerror(errno));
	}
	if ((rc = mkdirs(l->out_dir, "/prs", err, errlen)) < 0 ||
	    (rc = mkdirs(l->out_dir, "/statuses", err, errlen)) < 0 ||
	    (rc = gitops_init_bare(bare, err, errlen)) < 0)
		return rc;
	if (!(l->bare = realpath(bare, NULL)))
		return forge_fail(-errno, err, errlen, "forges.local.bare_repo: %s: %s",
		    bare, strerror(errno));
	if (!(f->push_url = strdup(l->bare)))
		return -ENOMEM;
	l->perms = perms ? json_incref(perms) : json_object();
	return 0;
}
