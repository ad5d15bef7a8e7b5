/*
 * forges: what the intake knows of each forge, one row each (forges.c):
 * the headers its deliveries carry, how one is verified, the events it
 * sends by name, the dialect of its payloads and how they name a
 * repository. The server, the handler and the event parser read the row
 * and name no forge; a forge that speaks a dialect already here (as
 * Forgejo speaks Gitea's) is a row, its name in conf/ (enum
 * config_forge) and its driver in gitops/.
 */
#ifndef KB_WEBHOOKS_FORGES_H
#define KB_WEBHOOKS_FORGES_H

#include <stddef.h>

#include "conf/config.h"

/* How a forge's payloads say things (webhooks/event.c parses each). */
enum wh_dialect {
	WH_DIALECT_HUB,		/* GitHub's: repository.full_name, pull_request, ... */
	WH_DIALECT_LAB,		/* GitLab's: project.path_with_namespace, object_kind, ... */
};

struct wh_forge {
	const char *event_header;	/* names the event */
	const char *delivery_header;	/* the delivery's id */
	const char *signature_header;	/* its signature, or its token */
	const char *const *events;	/* the events kernelbot knows, NULL-ended */
	/*
	 * Is the delivery genuine: 0, -EBADMSG when header is missing or
	 * malformed, -EACCES when it does not match (webhooks/verify.h).
	 */
	int (*verify)(const char *secret, size_t secret_len, const char *header,
	    const void *body, size_t len);
	enum wh_dialect dialect;
	int form_bodies;	/* also sends application/x-www-form-urlencoded (payload=) */
	int body_identity;	/* a delivery without its id header is its body's hash */
	int nested_groups;	/* a repository is GROUP/.../NAME, else OWNER/NAME */
	const char *comment_on_pull;	/* a comment's key saying it is on a pull request, or NULL */
	/* The payload's keys, for the errors that name them. */
	const char *repo_key, *branch_key, *clone_key;
};

/* Forge f's row; NULL when f is no forge. */
const struct wh_forge *wh_forge(enum config_forge f);

#endif
