/*
 * forge, http, jwt: configuration errors at open, the HTTP response
 * helpers, the RS256 signer's refusals, and transport errors against a
 * port nothing listens on.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/http.h"
#include "common/jsonx.h"
#include "gitops/forge.h"
#include "gitops/jwt.h"
#include "t.h"

static char tmp[128];

static int
open_err(const char *driver, const char *conf_json, const char *repo,
    const char *want)
{
	struct forge *f = NULL;
	json_t *conf = NULL;
	char err[512] = "", jerr[128];
	int rc;

	if (jsonx_parse(conf_json, strlen(conf_json), &conf, jerr, sizeof(jerr)) < 0) {
		printf("     bad test JSON: %s\n", jerr);
		return 0;
	}
	rc = forge_open(driver, conf, repo, &f, err, sizeof(err));
	json_decref(conf);
	forge_close(f);
	if (rc == 0 || !strstr(err, want)) {
		printf("     rc %d err \"%s\", want \"%s\"\n", rc, err, want);
		return 0;
	}
	return 1;
}

static void
test_open(void)
{
	char conf[512], tok[160];
	FILE *fp;

	snprintf(tok, sizeof(tok), "%s/token", tmp);
	if ((fp = fopen(tok, "w"))) {
		fputs("t0ken\n", fp);
		fclose(fp);
	}
	CHECK("unknown driver", open_err("bitbucket", "{}", "a/b",
	    "unknown forge driver 'bitbucket'"));
	CHECK("bad repo name", open_err("github", "{}", "no-slash",
	    "'no-slash' is not owner/name"));
	CHECK("repo with ..", open_err("github", "{}", "a/../b", "is not owner/name"));
	CHECK("github needs credentials", open_err("github", "{}", "a/b",
	    "needs token_file"));
	CHECK("missing token file", open_err("github",
	    "{\"token_file\": \"/nonexistent/tok\"}", "a/b",
	    "forges.github.token_file: /nonexistent/tok"));
	snprintf(conf, sizeof(conf), "{\"token_file\": \"%s\", \"app_id\": 1, "
	    "\"private_key_file\": \"%s\"}", tok, tok);
	CHECK("token and App are exclusive", open_err("github", conf, "a/b",
	    "exclusive"));
	CHECK("app_id without key", open_err("github", "{\"app_id\": 5}", "a/b",
	    "go together"));
	snprintf(conf, sizeof(conf), "{\"app_id\": 5, \"private_key_file\": \"%s\"}",
	    tok);
	CHECK("App key that is not a key", open_err("github", conf, "a/b",
	    "forges.github.private_key_file: private key"));
	snprintf(conf, sizeof(conf), "{\"token_file\": \"%s\", \"api_url\": "
	    "\"ftp://x\"}", tok);
	CHECK("api_url must be http(s)", open_err("github", conf, "a/b",
	    "forges.github.api_url: must be an http(s) URL"));
	snprintf(conf, sizeof(conf), "{\"token_file\": \"%s\", "
	    "\"write_interval_ms\": \"soon\"}", tok);
	CHECK("write_interval_ms must be an integer", open_err("github", conf,
	    "a/b", "forges.github.write_interval_ms: must be an integer"));
	snprintf(conf, sizeof(conf), "{\"token_file\": \"%s\", \"max_retries\": 99}",
	    tok);
	CHECK("max_retries range", open_err("gitlab", conf, "a/b",
	    "forges.gitlab.max_retries: must be an integer from 0 to 20"));
	CHECK("token_env unset", open_err("gitlab",
	    "{\"token_env\": \"KB_TEST_UNSET_TOKEN\"}", "a/b",
	    "KB_TEST_UNSET_TOKEN is not set"));
	snprintf(conf, sizeof(conf), "{\"token_file\": \"%s\"}", tok);
	CHECK("gitea needs api_url", open_err("gitea", conf, "a/b",
	    "forges.gitea.api_url: required"));
	CHECK("local needs out_dir", open_err("local", "{\"bare_repo\": \"/tmp/x\"}",
	    "a/b", "forges.local.out_dir: required"));
	CHECK("conf must be a mapping", open_err("github", "[1]", "a/b",
	    "must be a mapping"));
}

static void
test_calls(void)
{
	struct forge *f = NULL;
	struct forge_comment c;
	enum forge_perm p;
	enum forge_state st;
	json_t *conf;
	char err[512], tok[160], cfg[512];

	snprintf(tok, sizeof(tok), "%s/token", tmp);
	/* Port 1 on loopback: nothing listens, so every call fails fast. */
	snprintf(cfg, sizeof(cfg), "{\"token_file\": \"%s\", \"api_url\": "
	    "\"http://127.0.0.1:1\", \"max_retries\": 1, \"backoff_ms\": 1}", tok);
	conf = json_loads(cfg, 0, NULL);
	CHECK_INT("open github", forge_open("github", conf, "acme/m", &f, err,
	    sizeof(err)), 0);
	json_decref(conf);
	if (!f)
		return;
	CHECK_STR("driver name", forge_driver(f), "github");
	CHECK_INT("unreachable API is -EIO", forge_permission(f, "alice", &p, err,
	    sizeof(err)), -EIO);
	CHECK("error names the call", strstr(err, "GET /repos/acme/m/collaborators/"
	    "alice/permission") != NULL);
	CHECK("the token is not in the error", strstr(err, "t0ken") == NULL);
	CHECK_INT("bad user name", forge_permission(f, "a/b", &p, err,
	    sizeof(err)), -EINVAL);
	CHECK_INT("status needs a full sha", forge_status_set(f, "abc",
	    FORGE_SUCCESS, "c", "d", NULL, err, sizeof(err)), -EINVAL);
	CHECK_INT("react needs +1 or eyes", forge_react(f, 1, 2, "heart", err,
	    sizeof(err)), -EINVAL);
	CHECK_INT("comment needs a marker", forge_comment_upsert(f, 1, "", "b", &c,
	    err, sizeof(err)), -EINVAL);
	forge_close(f);
	CHECK_INT("state parse", forge_state_parse("failure", &st), 0);
	CHECK_INT("state value", st, FORGE_FAILURE);
	CHECK_INT("bad state", forge_state_parse("done", &st), -EINVAL);
	CHECK_INT("neutral parses", forge_state_parse("neutral", &st), 0);
	CHECK_INT("neutral value", st, FORGE_NEUTRAL);
	CHECK_STR("perm names", forge_perm_name(FORGE_PERM_WRITE), "write");
	CHECK_STR("result names", forge_result_name(FORGE_UNCHANGED), "unchanged");
}

/*
 * FORGE_NEUTRAL (the bot ran and shipped nothing verified) is recorded as
 * "neutral" by the local forge, never as success.
 */
static void
test_local_neutral(void)
{
	struct forge *f = NULL;
	json_t *conf, *all = NULL;
	char err[512] = "", cfg[512], path[256], jerr[128];
	const char *sha = "0123456789abcdef0123456789abcdef01234567";

	snprintf(cfg, sizeof(cfg), "{\"out_dir\": \"%s/lf\", \"bare_repo\": \"%s/lf.git\"}",
	    tmp, tmp);
	conf = json_loads(cfg, 0, NULL);
	CHECK_INT("open local", forge_open("local", conf, "acme/m", &f, err, sizeof(err)), 0);
	json_decref(conf);
	if (!f) {
		printf("     %s\n", err);
		return;
	}
	CHECK_INT("neutral status set", forge_status_set(f, sha, FORGE_NEUTRAL,
	    "kernelbot/m", "no faster kernel: best 0.98x vs eager", NULL, err, sizeof(err)), 0);
	forge_close(f);
	snprintf(path, sizeof(path), "%s/lf/statuses/%s.json", tmp, sha);
	if (jsonx_load_file(path, 1 << 20, &all, jerr, sizeof(jerr)) < 0) {
		CHECK("statuses file read", 0);
		return;
	}
	CHECK_STR("recorded neutral", jsonx_str(json_array_get(all, 0), "state", ""), "neutral");
	CHECK_STR("with its reason", jsonx_str(json_array_get(all, 0), "description", ""),
	    "no faster kernel: best 0.98x vs eager");
	json_decref(all);
}

static void
test_http(void)
{
	struct http_response r = { 0, BUF_INIT(1024), BUF_INIT(4096) };
	struct http_request rq[2] = { HTTP_REQUEST_INIT, HTTP_REQUEST_INIT };
	struct http_response rs[2];
	int rcs[2];
	char v[256], err[256];
	char *e;

	buf_addstr(&r.headers, "Retry-After: 7\nX-RateLimit-Remaining:  0 \n"
	    "Link: <https://api/x?page=1>; rel=\"prev\", <https://api/x?page=3>; "
	    "rel=\"next\", <https://api/x?page=9>; rel=\"last\"\n");
	CHECK("header found, case-insensitive", http_header(&r, "retry-after", v,
	    sizeof(v)) && !strcmp(v, "7"));
	CHECK("header value trimmed", http_header(&r, "x-ratelimit-remaining", v,
	    sizeof(v)) && !strcmp(v, "0"));
	CHECK("absent header", !http_header(&r, "etag", v, sizeof(v)));
	CHECK("Link rel=next", http_link_next(&r, v, sizeof(v)) &&
	    !strcmp(v, "https://api/x?page=3"));
	buf_reset(&r.headers);
	buf_addstr(&r.headers, "Link: <https://api/x?page=1>; rel=\"prev\"\n");
	CHECK("no rel=next", !http_link_next(&r, v, sizeof(v)));
	http_response_free(&r);
	e = http_escape("kernelbot/models mlp");
	CHECK_STR("escape", e, "kernelbot%2Fmodels%20mlp");
	free(e);

	rq[0].url = "file:///etc/passwd";
	CHECK_INT("only http(s)", http_do(&rq[0], &rs[0], err, sizeof(err)),
	    -EINVAL);
	rq[0].url = "http://127.0.0.1:1/";
	rq[0].method = "get";
	CHECK_INT("bad method", http_do(&rq[0], &rs[0], err, sizeof(err)), -EINVAL);
	rq[0].method = NULL;
	CHECK_INT("connection refused", http_do(&rq[0], &rs[0], err, sizeof(err)),
	    -ECONNREFUSED);
	rq[1].url = "http://127.0.0.1:1/other";
	rq[1].method = "POST";
	rq[1].body = "{}";
	rq[1].body_len = 2;
	CHECK_INT("many: runs", http_do_many(rq, rs, rcs, 2, 2, NULL, 0), 0);
	CHECK("many: each refused", rcs[0] == -ECONNREFUSED &&
	    rcs[1] == -ECONNREFUSED);
	http_response_free(&rs[0]);
	http_response_free(&rs[1]);
}

static void
test_jwt(void)
{
	char *out = NULL, err[256] = "";

	CHECK_INT("not PEM", jwt_rs256("hello", 5, "{}", &out, err, sizeof(err)),
	    -EINVAL);
	CHECK("reason given", strstr(err, "private key") != NULL);
	CHECK("nothing returned", out == NULL);
}

int
main(void)
{
	char t[] = "/tmp/kb-test-forge-XXXXXX";

	if (!mkdtemp(t))
		return 1;
	snprintf(tmp, sizeof(tmp), "%s", t);
	unsetenv("KB_TEST_UNSET_TOKEN");
	test_open();
	test_calls();
	test_local_neutral();
	test_http();
	test_jwt();
	{
		char p[200];

		snprintf(p, sizeof(p), "%s/token", tmp);
		unlink(p);
		rmdir(tmp);
	}
	return t_done("test_forge");
}
