/*
 * event: what a forge's delivery means for kernelbot. One parser per
 * forge turns the event name and the JSON body into a struct wh_event:
 *
 *   push to the default branch            -> WH_PUSH (a job)
 *   PR comment "/kernelbot CMD [ARGS]"    -> WH_COMMAND (a command request)
 *   pull/merge request closed or merged   -> WH_CLEANUP (a cleanup request)
 *   anything else, and every fork PR      -> WH_IGNORED, with the reason
 *
 * GitHub: push, issue_comment, pull_request, ping. GitLab: Push Hook,
 * Note Hook, Merge Request Hook. Gitea/Forgejo: push, issue_comment,
 * pull_request. The default branch comes from the payload
 * (repository.default_branch, GitLab project.default_branch).
 *
 * Errors: -EINVAL with a message in err when the body is not JSON or a
 * field the event needs is missing or has the wrong type (answer 400);
 * -ENOMEM.
 */
#ifndef KB_WEBHOOKS_EVENT_H
#define KB_WEBHOOKS_EVENT_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "conf/config.h"

#define WH_MAX_ARGS	1024	/* bytes of a command's arguments */
#define WH_MAX_COMMAND	32	/* bytes of a command word */
#define WH_COMMAND_PREFIX "/kernelbot"

enum wh_kind {
	WH_IGNORED,
	WH_PUSH,
	WH_COMMAND,
	WH_CLEANUP,
};

/*
 * The strings point into the parsed body (owned by the event) or are
 * static; wh_event_free() releases everything. NULL where not present.
 */
struct wh_event {
	enum wh_kind kind;
	const char *reason;		/* WH_IGNORED: why, static text */
	const char *repo;		/* "owner/name" (GitLab: path_with_namespace) */
	/* push */
	const char *clone_url, *default_branch, *ref, *before, *after;
	const char *pusher;
	/* command and cleanup */
	int64_t pr;			/* PR number (GitLab: MR iid) */
	char *command, *args;		/* allocated */
	const char *actor, *author_association;
	int64_t comment_id;
	const char *head_ref;
	const char *head_sha;		/* cleanup: the PR's head commit, where given */
	int merged;
	int fork;			/* head repository differs from the base */
	json_t *root;			/* the body; owned */
};

/*
 * Parse a delivery. `event` is the event header's value (X-GitHub-Event,
 * X-Gitlab-Event, X-Gitea-Event). 0 and *out filled (free it with
 * wh_event_free), or -EINVAL with the reason in err.
 */
int wh_event_parse(enum config_forge forge, const char *event,
    const char *body, size_t len, struct wh_event *out, char *err,
    size_t errlen);

void wh_event_free(struct wh_event *ev);

#define WH_MAX_REPO		255	/* bytes of a repository's full name */
#define WH_MAX_REPO_DEPTH	21	/* GitLab: 20 levels of groups, then the project */

/*
 * Whether a parsed delivery names what a forge would send (attack F7): a
 * repository OWNER/NAME (GitLab GROUP/.../NAME) of letters, digits, '.',
 * '_', '-', no segment '.', '..', starting with '-' or ending in '.' or
 * ".git" (no control characters); a ref and default branch git allows
 * (git-check-ref-format: not "refs/heads/main/"); a push that makes a
 * job (WH_PUSH) a clone URL https://,
 * http://, ssh:// or git:// and a host, or, with local_clone
 * (config_forge_local_clone), also file:// or an absolute path. 0, or -EINVAL with the reason in err (answer 400).
 */
int wh_event_check(const struct wh_event *ev, enum config_forge forge,
    int local_clone, char *err, size_t errlen);

/*
 * Split a comment body into command and arguments when it starts with
 * "/kernelbot " (leading blank lines and spaces allowed); only the first
 * line counts. Arguments longer than WH_MAX_ARGS come back as their first
 * WH_MAX_ARGS + 1 bytes (the coordinator refuses them, saying why). 1
 * and the two allocated strings, 0 when it is not a command, -ENOMEM.
 */
int wh_command_parse(const char *body, char **command, char **args);

/*
 * The event name as a bounded metrics label: the name itself for events
 * kernelbot knows, "other" for the rest (so a sender cannot grow the
 * metrics, or the store's replay keys, without bound); at most
 * WH_EVENT_LABEL_MAX bytes.
 */
#define WH_EVENT_LABEL_MAX	18	/* "Merge Request Hook" */
const char *wh_event_label(enum config_forge forge, const char *event);

#endif
