#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/crypto.h"
#include "common/log.h"
#include "webhooks/handle.h"
#include "webhooks/verify.h"
#include "t.h"

static struct wh_ctx ctx;

static const char PUSH[] =
    "{\"ref\":\"refs/heads/main\",\"before\":\"1111111111111111111111111111111111111111\","
    "\"after\":\"2222222222222222222222222222222222222222\",\"pusher\":{\"name\":\"al\"},"
    "\"repository\":{\"full_name\":\"acme/model\",\"clone_url\":\"https://x/acme/model.git\","
    "\"default_branch\":\"main\"}}";

static void
send_github(const char *delivery, const char *body, const char *ctype,
    const char *secret, struct wh_response *rs)
{
	struct wh_request rq;
	char sig[80], hex[WH_SIG_HEX];

	wh_sign_hex(secret, strlen(secret), body, strlen(body), hex);
	snprintf(sig, sizeof(sig), "sha256=%s", hex);
	memset(&rq, 0, sizeof(rq));
	rq.forge = CONFIG_GITHUB;
	rq.content_type = ctype;
	rq.event = "push";
	rq.delivery = delivery;
	rq.signature = sig;
	rq.body = body;
	rq.len = strlen(body);
	wh_handle(&ctx, &rq, rs);
}

static void
send_gitlab(const char *uuid, const char *token, const char *body,
    struct wh_response *rs)
{
	struct wh_request rq;

	memset(&rq, 0, sizeof(rq));
	rq.forge = CONFIG_GITLAB;
	rq.content_type = "application/json";
	rq.event = "Push Hook";
	rq.delivery = uuid;
	rq.signature = token;
	rq.body = body;
	rq.len = strlen(body);
	wh_handle(&ctx, &rq, rs);
}

/* PUSH with commit n instead: a push of its own, not a replay. */
static void
push_of(char *body, size_t len, long n)
{
	char *p, sha[41];

	snprintf(body, len, "%s", PUSH);
	snprintf(sha, sizeof(sha), "%040ld", n);
	if ((p = strstr(body, "\"after\":\"")))
		memcpy(p + 9, sha, 40);
}

struct worker {
	int id, accepted;
};

static void *
hammer(void *arg)
{
	struct worker *w = arg;
	struct wh_response rs;
	char id[64], body[sizeof(PUSH)];

	for (int i = 0; i < 50; i++) {
		snprintf(id, sizeof(id), "t%d-%d", w->id, i);
		push_of(body, sizeof(body), w->id * 100 + i + 1);
		send_github(id, body, "application/json", "github-secret-0123456789", &rs);
		w->accepted += rs.status == 202;
	}
	return NULL;
}

int
main(void)
{
	char dir[] = "/tmp/kb-test-handle-XXXXXX", err[CONFIG_ERR_MAX], cmd[600];
	const char *yml =
	    "allow_repos: [acme/*]\n"
	    "forges:\n"
	    "  github: {webhook_secret_env: KB_T_GH}\n"
	    "  gitlab: {webhook_token_env: KB_T_GL}\n";
	struct config *cfg = NULL;
	struct store *s = NULL;
	struct wh_intake *in = NULL;
	struct wh_metrics *m = NULL;
	struct wh_response rs;
	int64_t n;

	if (!mkdtemp(dir) || crypto_init() < 0)
		return 1;
	setenv("KB_T_GH", "github-secret-0123456789", 1);
	setenv("KB_T_GL", "gitlab-token-0123456789", 1);
	if (config_parse("t.yml", yml, strlen(yml), 0, &cfg, err, sizeof(err)) < 0 ||
	    store_open(dir, 0, &s) < 0 || wh_intake_new(s, NULL, WH_HEALTH_DEADLINE_MS, &in) < 0 ||
	    wh_metrics_new(&m) < 0) {
		printf("setup failed: %s\n", err);
		return 1;
	}
	ctx = (struct wh_ctx){ cfg, in, m, NULL };

	send_github("a-1", PUSH, "application/json", "github-secret-0123456789", &rs);
	CHECK_INT("push accepted", rs.status, 202);
	CHECK("job id in the answer", rs.id > 0 && strstr(rs.body, "\"job\":"));
	CHECK_STR("outcome", rs.outcome, "accepted");
	send_github("a-1", PUSH, "application/json", "github-secret-0123456789", &rs);
	CHECK_INT("duplicate 200", rs.status, 200);
	CHECK_STR("duplicate body", rs.body, "{\"status\":\"duplicate\"}\n");
	send_github("a-1-replayed", PUSH, "application/json", "github-secret-0123456789", &rs);
	CHECK_INT("the same push under a new id: 200", rs.status, 200);
	CHECK_STR("the same push under a new id: duplicate", rs.body, "{\"status\":\"duplicate\"}\n");
	CHECK_INT("the same push under a new id: no job", rs.id, 0);
	send_github("a-2", PUSH, "application/json; charset=utf-8", "wrong-secret-0123456789", &rs);
	CHECK_INT("forged 401", rs.status, 401);
	CHECK_STR("forged outcome", rs.outcome, "rejected");
	send_github("a-3", PUSH, "text/plain", "github-secret-0123456789", &rs);
	CHECK_INT("wrong content type 415", rs.status, 415);
	send_github("a 4", PUSH, "application/json", "github-secret-0123456789", &rs);
	CHECK_INT("bad delivery id 400", rs.status, 400);
	send_github(NULL, PUSH, "application/json", "github-secret-0123456789", &rs);
	CHECK_INT("no delivery id 400", rs.status, 400);
	send_github("a-5", "{\"x\":", "application/json", "github-secret-0123456789", &rs);
	CHECK_INT("bad JSON 400", rs.status, 400);
	CHECK_STR("bad JSON outcome", rs.outcome, "malformed");
	CHECK("400 answer is valid JSON with an error",
	    strncmp(rs.body, "{\"error\":\"body is not JSON", 26) == 0);
	send_github("a-6", "payload=%7B%22x", "application/x-www-form-urlencoded",
	    "github-secret-0123456789", &rs);
	CHECK_INT("form with broken payload 400", rs.status, 400);
	send_github("a-7", "other=1", "application/x-www-form-urlencoded",
	    "github-secret-0123456789", &rs);
	CHECK_INT("form without payload 400", rs.status, 400);
	send_github("a-8", "payload=%7B%22zen%22%3A+%22hi%22%7D", "application/x-www-form-urlencoded",
	    "github-secret-0123456789", &rs);
	CHECK_INT("form decoded (ignored event body)", rs.status, 400);	/* push lacks fields */
	CHECK("form decode reached the parser", strstr(rs.body, "repository.full_name: missing") != NULL);

	/* the form decoder */
	struct buf fb = BUF_INIT(64);
	const char *f1 = "a=1&payload=%7B%22k%22%3A+%22v w%22%7D&b=2";
	CHECK_INT("form: payload among fields", wh_form_payload(f1, strlen(f1), &fb), 0);
	CHECK_STR("form: decoded, + is a space", buf_cstr(&fb), "{\"k\": \"v w\"}");
	buf_reset(&fb);
	CHECK_INT("form: only the length given is read", wh_form_payload("payload=ab", 9, &fb), 0);
	CHECK_STR("form: stops at len", buf_cstr(&fb), "a");
	buf_reset(&fb);
	CHECK_INT("form: truncated escape", wh_form_payload("payload=%4", 10, &fb), -EINVAL);
	CHECK_INT("form: not hex", wh_form_payload("payload=%g0", 11, &fb), -EINVAL);
	CHECK_INT("form: no payload field", wh_form_payload("xpayload=1", 10, &fb), -EINVAL);
	buf_reset(&fb);
	CHECK_INT("form: past the buffer's cap", wh_form_payload(
	    "payload=0123456789012345678901234567890123456789012345678901234567890123456789", 78, &fb), -ENOBUFS);
	buf_free(&fb);

	/* gitlab: token, and the body hash as delivery id */
	const char *glpush = "{\"ref\":\"refs/heads/dev\",\"before\":\"1111111111111111111111111111111111111111\","
	    "\"after\":\"2222222222222222222222222222222222222222\","
	    "\"project\":{\"path_with_namespace\":\"acme/x\",\"git_http_url\":\"u\",\"default_branch\":\"main\"}}";
	send_gitlab(NULL, "gitlab-token-0123456789", glpush, &rs);
	CHECK_INT("gitlab without uuid accepted as ignored", rs.status, 200);
	send_gitlab(NULL, "gitlab-token-0123456789", glpush, &rs);
	CHECK_STR("same body again is a duplicate", rs.outcome, "duplicate");
	send_gitlab("u-1", "gitlab-token-wrong", glpush, &rs);
	CHECK_INT("gitlab wrong token 401", rs.status, 401);

	/* gitea is not configured here */
	struct wh_request rq = { CONFIG_GITEA, "application/json", "push", "g-1", "x", "{}", 2 };
	wh_handle(&ctx, &rq, &rs);
	CHECK_INT("unconfigured forge 404", rs.status, 404);

	/* metrics counted what happened */
	CHECK_INT("metrics accepted", wh_metrics_get(m, "github", "push", "accepted"), 1);
	CHECK_INT("metrics rejected", wh_metrics_get(m, "github", "push", "rejected"), 1);
	CHECK_INT("metrics duplicate", wh_metrics_get(m, "gitlab", "Push Hook", "duplicate"), 1);

	/* a flood of forged deliveries is logged at a bounded rate */
	{
		char logpath[300], line[1024];
		int logged = 0, suppressed = 0;
		FILE *lf;

		snprintf(logpath, sizeof(logpath), "%s/flood.log", dir);
		log_open(logpath);
		/* A fresh window (1.1 s): earlier checks used some of this one. */
		nanosleep(&(struct timespec){ 1, 200000000L }, NULL);
		for (int i = 0; i < 40; i++)
			send_github("f-1", PUSH, "application/json", "forged-secret-0123456789", &rs);
		nanosleep(&(struct timespec){ 1, 200000000L }, NULL);
		send_github("f-2", PUSH, "application/json", "forged-secret-0123456789", &rs);
		log_open(NULL);
		if ((lf = fopen(logpath, "r"))) {
			while (fgets(line, sizeof(line), lf)) {
				logged += strstr(line, "outcome=rejected") != NULL;
				suppressed += strstr(line, "suppressed") != NULL;
			}
			fclose(lf);
		}
		if (!CHECK("forged flood: at most 10 lines a second logged", logged >= 11 && logged <= 21))
			printf("     logged %d\n", logged);
		CHECK("forged flood: the suppressed count is logged", suppressed >= 1);
		CHECK_INT("forged flood: every one still counted", wh_metrics_get(m, "github", "push", "rejected"), 42);
	}


	/* group commit: 8 threads x 50 deliveries, all accepted, fewer commits than deliveries */
	unsigned long before = wh_intake_commits(in);
	struct worker w[8];
	pthread_t th[8];
	for (int i = 0; i < 8; i++) {
		w[i] = (struct worker){ i, 0 };
		pthread_create(&th[i], NULL, hammer, &w[i]);
	}
	int total = 0;
	for (int i = 0; i < 8; i++) {
		pthread_join(th[i], NULL);
		total += w[i].accepted;
	}
	CHECK_INT("400 concurrent deliveries accepted", total, 400);
	store_count(s, "jobs", &n);
	CHECK_INT("401 jobs stored", n, 401);
	unsigned long commits = wh_intake_commits(in) - before;
	CHECK("commits were batched", commits > 0 && commits <= 400);
	printf("# %lu commits for 400 deliveries\n", commits);

	/* the store failing: 503, nothing half-written */
	snprintf(cmd, sizeof(cmd), "sqlite3 %s/kernelbot.db \"CREATE TRIGGER nojobs BEFORE INSERT ON jobs "
	    "BEGIN SELECT RAISE(ABORT, 'disk on fire'); END\"", dir);
	if (system(cmd) == 0) {
		char body[sizeof(PUSH)];

		push_of(body, sizeof(body), 999999);
		send_github("z-1", body, "application/json", "github-secret-0123456789", &rs);
		CHECK_INT("store failure 503", rs.status, 503);
		store_count(s, "deliveries", &n);
		int64_t d = n;
		send_github("z-1", body, "application/json", "github-secret-0123456789", &rs);
		store_count(s, "deliveries", &n);
		CHECK("failed delivery not recorded, so a retry is not a duplicate",
		    rs.status == 503 && n == d);
	} else {
		CHECK("sqlite3 CLI available", 0);
	}

	wh_metrics_free(m);
	wh_intake_free(in);
	store_close(s);
	config_free(cfg);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	return system(cmd) ? 1 : t_done("test_wh_handle");
}
