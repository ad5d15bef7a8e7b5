/*
 * forge_internal: what gitops/forge.c gives its drivers (forge_github.c,
 * forge_gitlab.c, forge_gitea.c, forge_local.c). Not a public contract.
 */
#ifndef KB_GITOPS_FORGE_INTERNAL_H
#define KB_GITOPS_FORGE_INTERNAL_H

#include <jansson.h>
#include <stddef.h>

#include "common/buf.h"
#include "gitops/forge.h"

struct forge_ops {
	int (*pr_upsert)(struct forge *f, const struct forge_pr_req *req,
	    struct forge_pr *out, char *err, size_t errlen);
	int (*comment_upsert)(struct forge *f, long long pr, const char *marker,
	    const char *body, struct forge_comment *out, char *err,
	    size_t errlen);
	int (*status_set)(struct forge *f, const char *sha, enum forge_state st,
	    const char *context, const char *description,
	    const char *target_url, char *err, size_t errlen);
	int (*permission)(struct forge *f, const char *user,
	    enum forge_perm *out, char *err, size_t errlen);
	int (*react)(struct forge *f, long long pr, long long comment_id,
	    const char *reaction, char *err, size_t errlen);
	int (*pr_get)(struct forge *f, long long number,
	    struct forge_pr_info *out, char *err, size_t errlen);
	/* Append "Header: value" for authentication to hdr (may refresh a token). */
	int (*auth_header)(struct forge *f, struct buf *hdr, char *err,
	    size_t errlen);
	int (*git_cred)(struct forge *f, struct gitops_cred *out, char *err,
	    size_t errlen);
	void (*close)(struct forge *f);
};

struct forge {
	const struct forge_ops *ops;
	char driver[16];
	char *repo;			/* owner/name as given */
	char *api_url;			/* no trailing slash */
	char *token;			/* secret: never logged */
	char *user_agent;
	const char *const *std_headers;	/* the driver's fixed headers */
	long write_interval_ms;
	long backoff_ms, backoff_max_ms;
	long timeout_ms;
	long max_wait_s;
	int max_retries;
	size_t body_limit;
	char *push_url;
	void *priv;			/* the driver's state */
};

/* forge_request flags */
#define FORGE_RETRY_404 1u		/* a 404 may be an object created a moment ago */
#define FORGE_ANSWER_404 2u		/* a 404 is an answer: status 404, rc 0 */
#define FORGE_NO_AUTH 4u		/* the driver's auth_header is not added */

struct forge_reply {
	long status;
	json_t *json;			/* the parsed body; NULL when empty */
	char next[2048];		/* Link rel="next", "" when none */
};

/*
 * One API call with every politeness rule of forge.h. url is absolute or a
 * path under api_url. body (may be NULL) is sent as JSON. extra: more
 * "Header: value" lines, NULL-terminated (may be NULL). On 0, out holds a
 * 2xx reply (or a 404 under FORGE_ANSWER_404); free with forge_reply_free.
 */
int forge_request(struct forge *f, const char *method, const char *url,
    const json_t *body, const char *const *extra, unsigned flags,
    struct forge_reply *out, char *err, size_t errlen);
void forge_reply_free(struct forge_reply *r);

/*
 * Walk a paginated JSON-array listing (Link rel="next", up to
 * FORGE_MAX_PAGES pages) and give the first item match() accepts (a new
 * reference), or NULL with 0 when none does.
 */
int forge_list_find(struct forge *f, const char *url,
    int (*match)(const json_t *item, void *arg), void *arg, json_t **found,
    char *err, size_t errlen);

/*
 * The comment upsert the three HTTP forges share: list list_url for a
 * body holding marker; unchanged, edited (edit_method edit_prefix + id) or
 * created (POST create_url). Items have "id", "body" and maybe "html_url".
 */
int forge_comment_generic(struct forge *f, const char *list_url,
    const char *create_url, const char *edit_prefix, const char *edit_method,
    const char *marker, const char *body, struct forge_comment *out,
    char *err, size_t errlen);

/*
 * POST {state, CTX_KEY: context, description (cut at desc_max),
 * target_url?} to url: the commit status of GitHub, GitLab and Gitea.
 */
int forge_status_post(struct forge *f, const char *url, const char *state,
    const char *ctx_key, const char *context, const char *description,
    size_t desc_max, const char *target_url, char *err, size_t errlen);

/* POST {key: value} to url (reactions), with forge_request's flags. */
int forge_post_one(struct forge *f, const char *url, const char *key,
    const char *value, unsigned flags, char *err, size_t errlen);

/* GET url: a GitHub-shaped pull request (GitHub, Gitea) into out. */
int forge_pr_get_ghlike(struct forge *f, const char *url,
    struct forge_pr_info *out, char *err, size_t errlen);

/* GET url's "permission" (a 404 is NONE), as GitHub and Gitea answer it. */
int forge_permission_get(struct forge *f, const char *url,
    enum forge_perm *out, char *err, size_t errlen);
enum forge_perm forge_perm_from_name(const char *name);

/*
 * The names in labels that have (strings, or objects with "name") lacks;
 * a new array.
 */
json_t *forge_missing_labels(const char *const *labels, const json_t *have);

/* The GitHub-shaped pull request API (GitHub, Gitea). */
struct forge_ghpr {
	const char *list_url;		/* open PRs, items with head.ref */
	const char *create_url;		/* POST {title, head, base, body} + create_extra */
	const char *edit_prefix;	/* + NUMBER: PATCH; + NUMBER/requested_reviewers */
	const json_t *create_extra;	/* more members for the create request */
	int (*add_labels)(struct forge *f, long long number,
	    const json_t *names, char *err, size_t errlen);
};

int forge_pr_ghlike(struct forge *f, const struct forge_pr_req *q,
    const struct forge_ghpr *g, struct forge_pr *out, char *err,
    size_t errlen);

/* "MARKER\nbody", cut to f->body_limit bytes with a notice; caller frees. */
char *forge_clip(const struct forge *f, const char *marker, const char *body);

/* s cut to max bytes at a UTF-8 boundary, "..." added when cut; caller frees. */
char *forge_clip_short(const char *s, size_t max);

/* Read a secret file (trimmed, at most FORGE_MAX_TOKEN bytes); caller frees. */
int forge_read_secret(const char *path, char **out, char *err, size_t errlen);

/* Config getters with "forges.DRIVER.KEY: reason" errors. */
int forge_conf_str(struct forge *f, const json_t *conf, const char *key,
    int required, const char **out, char *err, size_t errlen);
int forge_conf_long(struct forge *f, const json_t *conf, const char *key,
    long min, long max, long *inout, char *err, size_t errlen);

/* "owner" and "name" of f->repo (the last '/' splits them); caller frees. */
int forge_split_repo(const struct forge *f, char **owner, char **name);

/* Set err; returns code (gitops.h's helper, under the forge prefix). */
#define forge_fail gitops_fail

/* Milliseconds of the monotonic clock; sleep for ms. Overridable in tests: no. */
long long forge_now_ms(void);
void forge_sleep_ms(long long ms);

int forge_github_init(struct forge *f, const json_t *conf, char *err,
    size_t errlen);
int forge_gitlab_init(struct forge *f, const json_t *conf, char *err,
    size_t errlen);
int forge_gitea_init(struct forge *f, const json_t *conf, char *err,
    size_t errlen);
int forge_local_init(struct forge *f, const json_t *conf, char *err,
    size_t errlen);

#endif
