#include "webhooks/forges.h"

#include "webhooks/verify.h"

static const char *const hub_events[] = { "push", "issue_comment", "pull_request", "ping",
	NULL };
static const char *const gitea_events[] = { "push", "issue_comment", "pull_request", NULL };
static const char *const lab_events[] = { "Push Hook", "Note Hook", "Merge Request Hook",
	"Tag Push Hook", NULL };

/* GitLab's token is the secret itself: the body plays no part. */
static int
verify_token(const char *secret, size_t secret_len, const char *header, const void *body,
    size_t len)
{
	(void)body;
	(void)len;
	return wh_verify_gitlab(secret, secret_len, header);
}

static const struct wh_forge forges[CONFIG_N_FORGES] = {
	[CONFIG_GITHUB] = {
		.event_header = "X-GitHub-Event", .delivery_header = "X-GitHub-Delivery",
		.signature_header = "X-Hub-Signature-256", .events = hub_events,
		.verify = wh_verify_github, .dialect = WH_DIALECT_HUB, .form_bodies = 1,
		.repo_key = "repository.full_name", .branch_key = "repository.default_branch",
		.clone_key = "repository.clone_url",
	},
	[CONFIG_GITLAB] = {
		.event_header = "X-Gitlab-Event", .delivery_header = "X-Gitlab-Event-UUID",
		.signature_header = "X-Gitlab-Token", .events = lab_events,
		.verify = verify_token, .dialect = WH_DIALECT_LAB,
		/* Older GitLab sends no X-Gitlab-Event-UUID. */
		.body_identity = 1, .nested_groups = 1,
		.repo_key = "project.path_with_namespace", .branch_key = "project.default_branch",
		.clone_key = "project.git_http_url",
	},
	[CONFIG_GITEA] = {
		.event_header = "X-Gitea-Event", .delivery_header = "X-Gitea-Delivery",
		.signature_header = "X-Gitea-Signature", .events = gitea_events,
		.verify = wh_verify_gitea, .dialect = WH_DIALECT_HUB, .form_bodies = 1,
		.comment_on_pull = "is_pull",
		.repo_key = "repository.full_name", .branch_key = "repository.default_branch",
		.clone_key = "repository.clone_url",
	},
};

const struct wh_forge *
wh_forge(enum config_forge f)
{
	return (unsigned)f < CONFIG_N_FORGES ? &forges[f] : NULL;
}
