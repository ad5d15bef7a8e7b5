/*
 * forge: where pull requests, comments and statuses go. One interface,
 * four drivers: github, gitlab, gitea (HTTP APIs, through common/http) and
 * local (a dry run that pushes to a local bare repository and writes each
 * pull request as files). docs/forges.md describes every driver, the
 * configuration keys and the local forge's output.
 *
 * A `struct forge` is opened for one repository ("owner/name"; GitLab
 * groups may nest: "group/sub/name") from the `forges.<name>` subtree of
 * the server configuration. It owns its credentials (read from files or
 * the environment at open, never logged, never put in an error message)
 * and its politeness state: write requests (POST/PATCH/PUT/DELETE) to one
 * API are serialized process-wide, at least write_interval_ms apart;
 * Retry-After, x-ratelimit-reset / RateLimit-Reset and secondary rate
 * limits are waited out (up to max_wait_s), 5xx answers and network
 * errors are retried with capped exponential backoff, and so are GitHub's
 * 404s on objects created a moment ago. Texts over the forge's limit are
 * cut, with a notice saying so.
 *
 * Errors, everywhere: 0 or
 *   -EACCES  401: the credentials were refused
 *   -EPERM   403 that is not a rate limit: not allowed
 *   -ENOENT  404: no such repository / PR / comment
 *   -EINVAL  422 or bad arguments (the forge's own message is in err)
 *   -EAGAIN  rate limited for longer than max_wait_s, or retries exhausted
 *   -EIO     5xx after the retries, transport errors, unparseable replies
 * with one line in err (when err is not NULL). Outputs are written on
 * success only. A forge is not thread-safe; open one per thread.
 */
#ifndef KB_GITOPS_FORGE_H
#define KB_GITOPS_FORGE_H

#include <jansson.h>
#include <stddef.h>

#include "gitops/gitops.h"

#define FORGE_MAX_TOKEN 4096		/* bytes of a token or key file */
#define FORGE_MAX_MARKER 200
#define FORGE_MAX_PAGES 20		/* list pages read when searching */

struct forge;

/* The hidden marker of a module's results comment: <!-- kernelbot:SLUG --> */
#define FORGE_MARKER_FMT "<!-- kernelbot:results:%s -->"

/*
 * Open a driver ("github", "gitlab", "gitea", "local") for repo with conf,
 * the forges.<name> object of the server configuration:
 *
 *   api_url            API root (github: https://api.github.com; gitlab:
 *                      https://gitlab.com/api/v4; gitea: required)
 *   token_file         file holding the token (or token_env: a variable name)
 *   app_id, private_key_file, installation_id   (github App; installation_id
 *                      looked up from the repository when absent)
 *   write_interval_ms  gap between write requests (default 1000)
 *   max_retries        retries of 5xx/network/just-created-404 (default 4)
 *   backoff_ms, backoff_max_ms   exponential backoff (default 1000, 60000)
 *   max_wait_s         the longest rate-limit wait honoured (default 900)
 *   timeout_ms         per request (default 30000)
 *   body_limit         bytes of a PR body or comment (default: the forge's)
 *   user_agent         (default "kernelbot")
 *   local only: out_dir (required), bare_repo (required), permissions
 *                      {user: admin|write|read|none} (default none)
 *
 * Unknown keys are left to other modules (the webhook secret lives in the
 * same subtree). -EINVAL with "forges.DRIVER.KEY: reason" for bad ones.
 */
int forge_open(const char *driver, const json_t *conf, const char *repo,
    struct forge **out, char *err, size_t errlen);

const char *forge_driver(const struct forge *f);

/*
 * Git credentials for pushing to and fetching from this forge (the token
 * as password, with the forge's conventional user name); borrowed, valid
 * until the next forge call. Anonymous (both NULL) for local.
 */
int forge_git_cred(struct forge *f, struct gitops_cred *out, char *err,
    size_t errlen);

/* Where to push branches instead of the mirror's origin; NULL = origin. */
const char *forge_push_url(const struct forge *f);

enum forge_result {
	FORGE_CREATED,
	FORGE_UPDATED,
	FORGE_UNCHANGED,
};

const char *forge_result_name(enum forge_result r);

struct forge_pr_req {
	const char *head;		/* the branch, e.g. kernelbot/models-attn */
	const char *base;		/* the target branch, e.g. main */
	const char *title;
	const char *body;		/* markdown; cut at the forge's limit */
	const char *const *labels;	/* NULL-terminated, may be NULL */
	const char *const *reviewers;	/* asked for on creation only */
	const char *slug;		/* the module slug (local: file names) */
	int find_only;			/* look it up, never create or edit: -ENOENT if none */
};

struct forge_pr {
	long long number;		/* PR number / MR iid */
	char url[512];			/* web URL */
	enum forge_result result;
};

/*
 * Find the open pull request whose head is req->head; create it when there
 * is none, edit it only when the title or body differ, add missing labels.
 */
int forge_pr_upsert(struct forge *f, const struct forge_pr_req *req,
    struct forge_pr *out, char *err, size_t errlen);

struct forge_comment {
	long long id;
	char url[512];
	enum forge_result result;
};

/*
 * One comment per marker on PR pr: found by the marker (which is put at
 * the top of the body, as a hidden HTML comment in markdown), created when
 * absent, edited only when its text differs.
 */
int forge_comment_upsert(struct forge *f, long long pr, const char *marker,
    const char *body, struct forge_comment *out, char *err, size_t errlen);

enum forge_state {
	FORGE_PENDING,
	FORGE_SUCCESS,
	FORGE_FAILURE,		/* the bot ran and the result is bad */
	FORGE_ERROR,		/* the bot could not run */
	/*
	 * The bot ran and shipped nothing verified: no faster kernel, or
	 * only kernels that need review. Never success, which would read as
	 * "a kernel was delivered". Drivers map it to the forge's closest
	 * non-success state (docs/forges.md): a GitHub check run's
	 * "neutral", "failure" for a GitHub commit status (it has no
	 * neutral), GitLab's "failed", Gitea's "warning"; the description
	 * says why.
	 */
	FORGE_NEUTRAL,
};

/* "pending", "success", "failure", "error", "neutral"; -EINVAL otherwise. */
int forge_state_parse(const char *s, enum forge_state *out);

/*
 * The result on commit sha: a commit status named context, or, for a
 * GitHub App, a check run named context (updated in place when one with
 * that name exists on the commit). description is cut at the forge's
 * limit; target_url may be NULL.
 */
int forge_status_set(struct forge *f, const char *sha, enum forge_state state,
    const char *context, const char *description, const char *target_url,
    char *err, size_t errlen);

enum forge_perm {
	FORGE_PERM_NONE,
	FORGE_PERM_READ,
	FORGE_PERM_WRITE,
	FORGE_PERM_ADMIN,
};

const char *forge_perm_name(enum forge_perm p);

/* What user may do in the repository; an unknown user is NONE, not an error. */
int forge_permission(struct forge *f, const char *user, enum forge_perm *out,
    char *err, size_t errlen);

/*
 * Acknowledge a command: react to comment comment_id (on PR pr, which
 * GitLab needs) with "+1" or "eyes". Reacting twice is not an error.
 */
int forge_react(struct forge *f, long long pr, long long comment_id,
    const char *reaction, char *err, size_t errlen);

/* What the bot needs to know of a pull request before obeying a command on it. */
struct forge_pr_info {
	long long number;
	char head_ref[256];		/* the source branch */
	char base_ref[256];		/* the target branch */
	char head_sha[GITOPS_OID_HEX];	/* "" when the forge did not say */
	char state[16];			/* "open", "closed", "merged" */
	int fork;			/* the head is in another repository (or a deleted one) */
};

/*
 * Look pull request (GitLab: merge request iid) number up. Comment
 * webhooks do not say whether a PR comes from a fork; this asks.
 * -ENOENT when there is no such PR.
 */
int forge_pr_get(struct forge *f, long long number, struct forge_pr_info *out,
    char *err, size_t errlen);

void forge_close(struct forge *f);

#endif
