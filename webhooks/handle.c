#include "webhooks/handle.h"

#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <pthread.h>
#include <time.h>

#include "common/buf.h"
#include "common/crypto.h"
#include "common/jsonx.h"
#include "common/log.h"
#include "webhooks/event.h"
#include "webhooks/forges.h"

#define WH_LOG_JUNK_PER_S 10

enum body_kind { BODY_JSON, BODY_FORM, BODY_OTHER };

/* The media type, case-insensitive, parameters (charset=...) ignored. */
static enum body_kind
body_kind(const char *ct)
{
	size_t n;

	if (!ct)
		return BODY_OTHER;
	while (*ct == ' ' || *ct == '\t')
		ct++;
	n = strcspn(ct, "; \t");
	if (n == 16 && !strncasecmp(ct, "application/json", n))
		return BODY_JSON;
	if (n == 33 && !strncasecmp(ct, "application/x-www-form-urlencoded", n))
		return BODY_FORM;
	return BODY_OTHER;
}

static int
hexdigit(char c)
{
	return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 :
	    c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
}

/* The signature covers the encoded body, so this runs after verification. */
int
wh_form_payload(const char *body, size_t len, struct buf *out)
{
	const char *p = body, *end = body + len;
	int error;

	while (p < end) {
		const char *amp = memchr(p, '&', (size_t)(end - p));
		const char *fe = amp ? amp : end;
		if ((size_t)(fe - p) >= 8 && !memcmp(p, "payload=", 8)) {
			for (p += 8; p < fe; p++) {
				char c = *p;
				if (c == '+') {
					c = ' ';
				} else if (c == '%') {
					int hi, lo;
					if (fe - p < 3 || (hi = hexdigit(p[1])) < 0 ||
					    (lo = hexdigit(p[2])) < 0)
						return -EINVAL;
					c = (char)(hi << 4 | lo);
					p += 2;
				}
				if ((error = buf_addch(out, c)) < 0)
					return error;
			}
			return 0;
		}
		p = fe + 1;
	}
	return -EINVAL;
}

static void
answer(struct wh_response *rs, int status, const char *outcome,
    const char *fmt, ...) __attribute__((format(printf, 4, 5)));

static void
answer(struct wh_response *rs, int status, const char *outcome,
    const char *fmt, ...)
{
	va_list ap;
	int n;

	rs->status = status;
	rs->outcome = outcome;
	va_start(ap, fmt);
	n = vsnprintf(rs->body, sizeof(rs->body) - 1, fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= sizeof(rs->body) - 1)
		n = (int)strlen(rs->body);
	rs->body[n] = '\n';
	rs->body[n + 1] = '\0';
}

/* An error answer with a message that may hold anything: JSON-escaped by jansson. */
static void
answer_error(struct wh_response *rs, int status, const char *outcome,
    const char *msg)
{
	json_t *o = json_pack("{s:s}", "error", msg);
	char *s = o ? json_dumps(o, JSON_COMPACT | JSON_ENSURE_ASCII) : NULL;

	answer(rs, status, outcome, "%s", s ? s : "{\"error\":\"out of memory\"}");
	free(s);
	json_decref(o);
}

static int
delivery_id_ok(const char *s)
{
	size_t n = strlen(s);

	if (n == 0 || n > WH_MAX_DELIVERY_ID)
		return 0;
	for (; *s; s++)
		if (!isalnum((unsigned char)*s) && !strchr("-_.:", *s))
			return 0;
	return 1;
}

static int
verify(const struct wh_ctx *ctx, const struct wh_request *rq)
{
	size_t slen;
	const char *secret = config_forge_secret(ctx->cfg, rq->forge, &slen);
	const struct wh_forge *f = wh_forge(rq->forge);

	return f ? f->verify(secret, slen, rq->signature, rq->body, rq->len) : -EINVAL;
}

/* The little of the payload a job keeps: what a later stage may want to show. */
static char *
job_payload(const struct wh_event *ev, const char *delivery, const char *event)
{
	json_t *o = json_pack("{s:s, s:s, s:s, s:s, s:s?}", "delivery", delivery,
	    "event", event, "ref", ev->ref, "default_branch", ev->default_branch,
	    "pusher", ev->pusher);
	char *s = o ? json_dumps(o, JSON_COMPACT) : NULL;

	json_decref(o);
	return s;
}

static void
record(const struct wh_ctx *ctx, const struct wh_request *rq,
    const struct wh_event *ev, const char *delivery, struct wh_response *rs)
{
	struct store_delivery d;
	const char *provider = config_forge_name(rq->forge);
	char *payload = NULL, body_key[WH_EVENT_LABEL_MAX + 1 + CRYPTO_SHA256_HEX];
	int n, error;

	memset(&d, 0, sizeof(d));
	d.provider = provider;
	d.delivery_id = delivery;
	d.event = rq->event;
	d.repo = ev->repo;
	d.outcome = ev->kind == WH_IGNORED ? "ignored" : "accepted";
	switch (ev->kind) {
	case WH_PUSH:
		if (!(payload = job_payload(ev, delivery, rq->event))) {
			answer_error(rs, 503, "error", "out of memory");
			return;
		}
		d.work = STORE_WORK_JOB;
		d.clone_url = ev->clone_url;
		d.before = ev->before;
		d.sha = ev->after;
		d.ref = ev->ref;
		d.trigger = "push";
		d.payload = payload;
		break;
	case WH_COMMAND:
		d.work = STORE_WORK_COMMAND;
		d.pr = ev->pr;
		d.command = ev->command;
		d.args = ev->args;
		d.actor = ev->actor;
		d.author_association = ev->author_association;
		d.comment_id = ev->comment_id;
		break;
	case WH_CLEANUP:
		d.work = STORE_WORK_CLEANUP;
		d.pr = ev->pr;
		d.head_ref = ev->head_ref;
		d.sha = ev->head_sha;	/* part of its replay key */
		d.merged = ev->merged;
		break;
	default:
		d.work = STORE_WORK_NONE;
		/*
		 * Its replay key: the body as signed under the event's label
		 * (an event kernelbot does not know is "other"), so however
		 * many ids and event names a replay tries, one body makes
		 * a row for each event kernelbot knows and one more.
		 */
		n = snprintf(body_key, sizeof(body_key), "%s ",
		    wh_event_label(rq->forge, rq->event));
		crypto_sha256_hex(rq->body, rq->len, body_key + n);
		d.body_key = body_key;
		break;
	}
	if ((error = wh_intake_submit(ctx->intake, &d)) < 0) {
		char cause[WH_HEALTH_CAUSE_MAX], msg[WH_HEALTH_CAUSE_MAX + 64];

		wh_health_cause(ctx->health, error, cause, sizeof(cause));
		snprintf(msg, sizeof(msg), "the store cannot commit (%s); retry later",
		    cause);
		answer_error(rs, 503, "error", msg);
		rs->retry_after = WH_RETRY_AFTER_S;
	} else if (d.duplicate) {
		answer(rs, 200, "duplicate", "{\"status\":\"duplicate\"}");
	} else if (ev->kind == WH_IGNORED) {
		answer(rs, 200, "ignored", "{\"status\":\"ignored\",\"reason\":\"%s\"}",
		    ev->reason);
	} else {
		rs->id = d.work_id;
		answer(rs, 202, "accepted", "{\"status\":\"accepted\",\"%s\":%lld}",
		    ev->kind == WH_PUSH ? "job" : ev->kind == WH_COMMAND ?
		    "command" : "cleanup", (long long)d.work_id);
	}
	free(payload);
}

static void
handle(const struct wh_ctx *ctx, const struct wh_request *rq,
    struct wh_response *rs, char **repo)
{
	struct buf form = BUF_INIT(CONFIG_MAX_BODY_LIMIT);
	struct wh_event ev;
	char err[300], hashid[8 + CRYPTO_SHA256_HEX];
	const char *body = rq->body, *delivery = rq->delivery;
	size_t len = rq->len;
	enum body_kind kind = body_kind(rq->content_type);
	int error;

	if (!config_forge_secret(ctx->cfg, rq->forge, NULL)) {
		answer_error(rs, 404, "unconfigured", "this forge's webhook is not configured");
		return;
	}
	if (kind == BODY_OTHER || (kind == BODY_FORM && !wh_forge(rq->forge)->form_bodies)) {
		answer_error(rs, 415, "unsupported",
		    "content type must be application/json (or application/x-www-form-urlencoded for GitHub and Gitea)");
		return;
	}
	if ((error = verify(ctx, rq)) < 0) {
		answer_error(rs, 401, "rejected", error == -EBADMSG ?
		    "missing or malformed signature" : "signature does not match");
		return;
	}
	if (!rq->event || !*rq->event) {
		answer_error(rs, 400, "malformed", "missing event header");
		return;
	}
	if (delivery && wh_forge(rq->forge)->body_identity && !strncmp(delivery, "sha256:", 7)) {
		/* kernelbot's own form for a delivery without an id */
		answer_error(rs, 400, "malformed", "a delivery id may not begin with sha256: "
		    "(the form kernelbot gives deliveries that come without one)");
		return;
	}
	if (!delivery && wh_forge(rq->forge)->body_identity) {
		/* Older GitLab sends no X-Gitlab-Event-UUID: the body is the identity. */
		memcpy(hashid, "sha256:", 7);
		crypto_sha256_hex(rq->body, rq->len, hashid + 7);
		delivery = hashid;
	}
	if (!delivery || !delivery_id_ok(delivery)) {
		answer_error(rs, 400, "malformed", "missing or malformed delivery id header");
		return;
	}
	if (kind == BODY_FORM) {
		if (wh_form_payload(rq->body, rq->len, &form) < 0) {
			answer_error(rs, 400, "malformed", "form body without a valid payload field");
			goto out;
		}
		body = buf_cstr(&form);
		len = form.len;
	}
	if (wh_event_parse(rq->forge, rq->event, body, len, &ev, err, sizeof(err)) < 0) {
		answer_error(rs, 400, "malformed", err);
		goto out;
	}
	*repo = ev.repo ? strdup(ev.repo) : NULL;
	if (wh_event_check(&ev, rq->forge, config_forge_local_clone(ctx->cfg,
	    rq->forge), err, sizeof(err)) < 0)
		answer_error(rs, 400, "malformed", err);
	else if (ev.repo && !config_repo_allowed(ctx->cfg, ev.repo))
		answer_error(rs, 403, "forbidden", "repository not in allow_repos");
	else
		record(ctx, rq, &ev, delivery, rs);
	wh_event_free(&ev);
out:
	buf_free(&form);
}

/*
 * Every answer but a first delivery (202, or 200 ignored the first time
 * its body came) is logged at most WH_LOG_JUNK_PER_S lines a second:
 * unauthenticated junk (401, 400, 415, 404), and what a captured signed
 * body replayed in a loop gets (403 for a repository not allowed, 400,
 * 503 while the store cannot commit), so no flood can fill the disk with
 * log; duplicates with a budget of their own, so a replay loop cannot
 * crowd out the junk's lines (the store counts duplicates without
 * growing). The rest are counted and the count logged with the next line
 * that goes out.
 *
 * A line goes out when the WH_LOG_JUNK_PER_S-th line before it went out
 * WH_LOG_WINDOW_MS ago or more: a second and a margin, so that no second
 * of the log's timestamps holds more (each line is stamped a little after
 * it is let through, later for some than for others, and a window of a
 * whole calendar second let an eleventh through into the next second's
 * stamps, where the one let through at its end was stamped).
 */
#define WH_LOG_WINDOW_MS 1100

struct log_limit {
	pthread_mutex_t lock;
	struct timespec out[WH_LOG_JUNK_PER_S];	/* when the last lines went out, a ring */
	unsigned next;				/* the oldest of them */
	unsigned long dropped;
};

static struct log_limit junk_limit = { .lock = PTHREAD_MUTEX_INITIALIZER };
static struct log_limit duplicate_limit = { .lock = PTHREAD_MUTEX_INITIALIZER };

static int
log_allowed(struct log_limit *l, unsigned long *suppressed)
{
	struct timespec now, *oldest;
	int ok;

	clock_gettime(CLOCK_MONOTONIC, &now);
	pthread_mutex_lock(&l->lock);
	oldest = &l->out[l->next];
	*suppressed = 0;
	ok = (!oldest->tv_sec && !oldest->tv_nsec) ||
	    (now.tv_sec - oldest->tv_sec) * 1000 + (now.tv_nsec - oldest->tv_nsec) / 1000000 >=
	    WH_LOG_WINDOW_MS;
	if (ok) {
		*oldest = now;
		l->next = (l->next + 1) % WH_LOG_JUNK_PER_S;
		*suppressed = l->dropped;
		l->dropped = 0;
	} else {
		l->dropped++;
	}
	pthread_mutex_unlock(&l->lock);
	return ok;
}

void
wh_handle(const struct wh_ctx *ctx, const struct wh_request *rq,
    struct wh_response *rs)
{
	const char *provider = config_forge_name(rq->forge);
	const char *label = wh_event_label(rq->forge, rq->event);
	char *repo = NULL;
	char qd[160], qr[300], qb[600];

	memset(rs, 0, sizeof(*rs));
	handle(ctx, rq, rs, &repo);
	if (ctx->metrics)
		wh_metrics_delivery(ctx->metrics, provider, label, rs->outcome);
	if (rs->status >= 300 || (rs->outcome && !strcmp(rs->outcome, "duplicate"))) {
		int dup = rs->status < 300;
		unsigned long suppressed;
		if (!log_allowed(dup ? &duplicate_limit : &junk_limit, &suppressed))
			goto out;
		if (suppressed)
			log_warn("webhook log lines suppressed", "count=%lu%s",
			    suppressed, dup ? " outcome=duplicate" : "");
	}
	log_msg(rs->status == 401 || rs->status >= 500 ? LOG_WARN : LOG_INFO,
	    "webhook", "provider=%s event=%s delivery=%s repo=%s status=%d outcome=%s id=%lld answer=%s",
	    provider, label, log_quote(qd, sizeof(qd), rq->delivery ? rq->delivery : ""),
	    log_quote(qr, sizeof(qr), repo ? repo : ""), rs->status, rs->outcome,
	    (long long)rs->id, log_quote(qb, sizeof(qb), rs->body));
out:
	free(repo);
}
