/*
 * handle: one webhook delivery from headers and body to a status and a
 * JSON answer, without HTTP (the server module does the HTTP). In order:
 *
 *   forge not configured        404 {"error":...}
 *   content type not JSON/form  415
 *   signature/token wrong       401  outcome "rejected", nothing stored
 *   no event or delivery id     400  outcome "malformed"
 *   body not JSON / fields      400  outcome "malformed"
 *   repository not allowed      403  outcome "forbidden", nothing stored
 *   delivery id seen before     200 {"status":"duplicate"}
 *   push of a ref and commit, or
 *   comment id, seen before     200 {"status":"duplicate"} (a replay)
 *   push to default branch      202 {"status":"accepted","job":ID}
 *   /kernelbot PR comment       202 {"status":"accepted","command":ID}
 *   PR/MR closed                202 {"status":"accepted","cleanup":ID}
 *   anything else               200 {"status":"ignored","reason":...}
 *   store cannot commit, or not  503 {"error":"the store cannot commit
 *   within the intake deadline        (CAUSE); retry later"}, Retry-After
 *                                    (the forge retries)
 *
 * Each delivery is logged once (401/400/415 at most 10 lines a second,
 * the rest counted). Rejected, malformed and forbidden deliveries are not written to the
 * store: a forged request must not take a genuine delivery's id, and a
 * redelivery after the allowlist is fixed must not be a "duplicate".
 */
#ifndef KB_WEBHOOKS_HANDLE_H
#define KB_WEBHOOKS_HANDLE_H

#include <stddef.h>
#include <stdint.h>

#include "conf/config.h"
#include "common/buf.h"
#include "webhooks/health.h"
#include "webhooks/intake.h"
#include "webhooks/metrics.h"

#define WH_MAX_DELIVERY_ID 128	/* bytes of a delivery id header */
#define WH_RETRY_AFTER_S 30	/* Retry-After of a 503 from the store */

struct wh_ctx {
	const struct config *cfg;
	struct wh_intake *intake;
	struct wh_metrics *metrics;	/* may be NULL */
	struct wh_health *health;	/* may be NULL: the causes of 503s */
};

/* The request: header values (NULL when absent) and the raw body. */
struct wh_request {
	enum config_forge forge;
	const char *content_type;
	const char *event;		/* X-GitHub-Event / X-Gitlab-Event / X-Gitea-Event */
	const char *delivery;		/* X-GitHub-Delivery / X-Gitlab-Event-UUID / X-Gitea-Delivery */
	const char *signature;		/* X-Hub-Signature-256 / X-Gitlab-Token / X-Gitea-Signature */
	const char *body;
	size_t len;
};

struct wh_response {
	int status;		/* HTTP status */
	char body[512];		/* JSON, newline-terminated */
	const char *outcome;	/* metrics label: accepted, ignored, duplicate, ... */
	int64_t id;		/* the job/command/cleanup created, 0 if none */
	int retry_after;	/* seconds for Retry-After, 0: none */
};

/*
 * GitHub's and Gitea's form encoding: the JSON is the URL-encoded value of
 * the first `payload` field of body (len bytes, not NUL-terminated).
 * Appends it to out: 0, -EINVAL (no such field, bad %-escape), -ENOBUFS
 * (past out's cap), -ENOMEM.
 */
int wh_form_payload(const char *body, size_t len, struct buf *out);

/* Never fails: every problem becomes a status and an answer. */
void wh_handle(const struct wh_ctx *ctx, const struct wh_request *rq,
    struct wh_response *rs);

#endif
