/*
 * gitops/forge.c: the forge interface, its configuration, and the one
 * request loop every HTTP driver goes through, where the politeness rules
 * live (serialized writes, rate limits, retries).
 */
#include "gitops/forge_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include "common/crypto.h"
#include "common/http.h"
#include "common/jsonx.h"

#define FORGE_MAX_REPLY (8u << 20)
#define WRITE_SLOTS 32

long long
forge_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

void
forge_sleep_ms(long long ms)
{
	struct timespec ts;

	if (ms <= 0)
		return;
	ts.tv_sec = (time_t)(ms / 1000);
	ts.tv_nsec = (long)(ms % 1000) * 1000000;
	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

/*
 * Writes are serialized per API root across the whole process (every
 * forge object of one account shares its limits): the lock is held for
 * the whole write, and the next one waits out the interval.
 */
static pthread_mutex_t write_lock = PTHREAD_MUTEX_INITIALIZER;
static struct {
	char api[256];
	long long last_ms;
} write_slots[WRITE_SLOTS];

static long long *
write_slot(const char *api)
{
	for (int i = 0; i < WRITE_SLOTS; i++) {
		if (!strncmp(write_slots[i].api, api, sizeof(write_slots[i].api) - 1))
			return &write_slots[i].last_ms;
		if (!write_slots[i].api[0]) {
			snprintf(write_slots[i].api, sizeof(write_slots[i].api), "%s",
			    api);
			return &write_slots[i].last_ms;
		}
	}
	return &write_slots[WRITE_SLOTS - 1].last_ms;	/* shared overflow slot */
}

static int
is_write(const char *method)
{
	return strcmp(method, "GET") && strcmp(method, "HEAD");
}

/* The forge's message for an error reply, for err. */
static void
reply_message(const struct http_response *res, char *out, size_t outlen)
{
	json_t *j = NULL, *m, *e;
	char perr[64];

	out[0] = '\0';
	if (jsonx_parse(buf_cstr(&res->body), res->body.len, &j, perr,
	    sizeof(perr)) < 0)
		return;
	m = json_object_get(j, "message");
	if (!m)
		m = json_object_get(j, "error");
	if (json_is_string(m))
		snprintf(out, outlen, "%s", json_string_value(m));
	else if (m)
		snprintf(out, outlen, "%s", "(structured message)");
	/* GitHub's 422s name the field that was refused. */
	if ((e = json_array_get(json_object_get(j, "errors"), 0))) {
		size_t n = strlen(out);
		const char *field = jsonx_str(e, "field", NULL);
		const char *code = jsonx_str(e, "code", NULL);
		const char *msg = jsonx_str(e, "message", NULL);

		snprintf(out + n, outlen - n, "%s%s%s%s%s", n ? " (" : "(",
		    field ? field : "", field && (code || msg) ? ": " : "",
		    msg ? msg : code ? code : "", ")");
	} else if (json_is_object(m)) {
		/* GitLab: {"message": {"field": ["reason"]}} */
		const char *k;
		json_t *v;

		json_object_foreach(m, k, v) {
			snprintf(out, outlen, "%s: %s", k,
			    json_is_array(v) ? jsonx_str(json_array_get(v, 0), "", "?")
			    : "?");
			if (json_is_string(json_array_get(v, 0)))
				snprintf(out, outlen, "%s: %s", k,
				    json_string_value(json_array_get(v, 0)));
			break;
		}
	}
	json_decref(j);
}

/*
 * How long a rate-limited reply asks us to wait, in ms, or -1 when the
 * reply is not a rate limit. Retry-After first (seconds), then the reset
 * time of an exhausted quota (x-ratelimit-reset, GitLab's RateLimit-Reset:
 * Unix seconds), then GitHub's secondary limit with neither (at least a
 * minute, per its documentation, capped by backoff_max_ms).
 */
static long long
rate_limit_wait(const struct forge *f, const struct http_response *res,
    int attempt)
{
	char v[64], msg[512];
	int limited = res->status == 429;
	long long ms;

	if (res->status == 403) {
		reply_message(res, msg, sizeof(msg));
		if ((http_header(res, "x-ratelimit-remaining", v, sizeof(v)) &&
		    !strcmp(v, "0")) || http_header(res, "retry-after", v, sizeof(v)) ||
		    strcasestr(msg, "rate limit"))
			limited = 1;
	}
	if (!limited)
		return -1;
	if (http_header(res, "retry-after", v, sizeof(v)) && atoll(v) >= 0)
		return atoll(v) * 1000;
	if ((http_header(res, "x-ratelimit-reset", v, sizeof(v)) ||
	    http_header(res, "ratelimit-reset", v, sizeof(v))) && atoll(v) > 0) {
		long long reset = atoll(v) - (long long)time(NULL);

		return (reset > 0 ? reset : 0) * 1000 + 1000;
	}
	ms = f->backoff_ms << (attempt < 16 ? attempt : 16);
	if (ms < 60000)
		ms = 60000;
	return ms > f->backoff_max_ms ? f->backoff_max_ms : ms;
}

static long long
backoff(const struct forge *f, int attempt)
{
	long long ms = f->backoff_ms << (attempt < 16 ? attempt : 16);

	if (ms > f->backoff_max_ms)
		ms = f->backoff_max_ms;
	/* Up to 10% jitter, so many bots do not retry in lockstep. */
	if (ms >= 10)
		ms += (long long)(crypto_random_seed() % (uint64_t)(ms / 10 + 1));
	return ms;
}

void
forge_reply_free(struct forge_reply *r)
{
	if (!r)
		return;
	json_decref(r->json);
	r->json = NULL;
}

static int
build_headers(struct forge *f, const char *const *extra, unsigned flags,
    int has_body, struct buf *store, const char **hv, size_t hvmax, char *err,
    size_t errlen)
{
	size_t n = 0, offs[32];
	int rc;

	/* Offsets first: the buffer may move while it grows. */
	for (const char *const *h = f->std_headers; h && *h; h++) {
		offs[n++] = store->len;
		if ((rc = buf_addstr(store, *h)) < 0 || (rc = buf_addch(store, 0)) < 0)
			return rc;
	}
	for (const char *const *h = extra; h && *h && n < 28; h++) {
		offs[n++] = store->len;
		if ((rc = buf_addstr(store, *h)) < 0 || (rc = buf_addch(store, 0)) < 0)
			return rc;
	}
	if (has_body) {
		offs[n++] = store->len;
		if ((rc = buf_addstr(store, "Content-Type: application/json")) < 0 ||
		    (rc = buf_addch(store, 0)) < 0)
			return rc;
	}
	if (!(flags & FORGE_NO_AUTH) && f->ops->auth_header) {
		offs[n++] = store->len;
		if ((rc = f->ops->auth_header(f, store, err, errlen)) < 0)
			return rc;
		if ((rc = buf_addch(store, 0)) < 0)
			return rc;
	}
	if (n + 1 > hvmax)
		return -E2BIG;
	for (size_t i = 0; i < n; i++)
		hv[i] = store->data + offs[i];
	hv[n] = NULL;
	return 0;
}

int
forge_request(struct forge *f, const char *method, const char *url,
    const json_t *body, const char *const *extra, unsigned flags,
    struct forge_reply *out, char *err, size_t errlen)
{
	struct buf full = BUF_INIT(8192), payload = BUF_INIT(BUF_MAX_DEFAULT);
	struct http_request req = HTTP_REQUEST_INIT;
	int write = is_write(method), rc = 0, locked = 0;
	char msg[512], herr[256];

	if ((rc = (strncmp(url, "http://", 7) && strncmp(url, "https://", 8)) ?
	    buf_printf(&full, "%s%s", f->api_url, url) : buf_addstr(&full, url)) < 0 ||
	    (body && (rc = jsonx_dump(body, JSON_COMPACT, &payload)) < 0)) {
		rc = forge_fail(rc, err, errlen, "request too large");
		goto out;
	}
	req.method = method;
	req.url = buf_cstr(&full);
	req.body = body ? payload.data : NULL;
	req.body_len = payload.len;
	req.timeout_ms = f->timeout_ms;
	req.max_response = FORGE_MAX_REPLY;
	req.user_agent = f->user_agent;
	for (int attempt = 0;; attempt++) {
		struct buf hstore = BUF_INIT(BUF_MAX_SMALL);
		struct http_response res;
		const char *hv[34];
		long long wait = -1;

		if ((rc = build_headers(f, extra, flags, body != NULL, &hstore, hv,
		    34, err, errlen)) < 0) {
			buf_free(&hstore);
			goto out;
		}
		req.headers = hv;
		if (write) {
			long long *last, gap;

			pthread_mutex_lock(&write_lock);
			locked = 1;
			last = write_slot(f->api_url);
			gap = *last + f->write_interval_ms - forge_now_ms();
			if (*last && gap > 0)
				forge_sleep_ms(gap);
		}
		memset(&res, 0, sizeof(res));	/* freed below whatever http_do did */
		rc = http_do(&req, &res, herr, sizeof(herr));
		if (write) {
			*write_slot(f->api_url) = forge_now_ms();
			pthread_mutex_unlock(&write_lock);
			locked = 0;
		}
		buf_free(&hstore);
		if (rc < 0) {
			http_response_free(&res);
			if (attempt < f->max_retries && rc != -EINVAL) {
				forge_sleep_ms(backoff(f, attempt));
				continue;
			}
			rc = forge_fail(rc == -EINVAL ? -EINVAL : -EIO, err, errlen,
			    "%s %s: %s", method, url, herr);
			goto out;
		}
		if (res.status >= 200 && res.status < 300) {
			struct forge_reply r = { res.status, NULL, "" };

			if (res.body.len && jsonx_parse(res.body.data, res.body.len,
			    &r.json, herr, sizeof(herr)) < 0) {
				http_response_free(&res);
				rc = forge_fail(-EIO, err, errlen, "%s %s: reply is not "
				    "JSON: %s", method, url, herr);
				goto out;
			}
			http_link_next(&res, r.next, sizeof(r.next));
			http_response_free(&res);
			*out = r;
			rc = 0;
			goto out;
		}
		reply_message(&res, msg, sizeof(msg));
		if ((wait = rate_limit_wait(f, &res, attempt)) >= 0) {
			http_response_free(&res);
			if (wait > f->max_wait_s * 1000) {
				rc = forge_fail(-EAGAIN, err, errlen, "%s %s: rate "
				    "limited for %lld s, over max_wait_s (%ld)", method,
				    url, wait / 1000, f->max_wait_s);
				goto out;
			}
			if (attempt >= f->max_retries + 2) {
				rc = forge_fail(-EAGAIN, err, errlen, "%s %s: still rate "
				    "limited after %d waits", method, url, attempt + 1);
				goto out;
			}
			forge_sleep_ms(wait);
			continue;
		}
		if ((res.status >= 500 || (res.status == 404 &&
		    (flags & FORGE_RETRY_404))) && attempt < f->max_retries) {
			http_response_free(&res);
			forge_sleep_ms(backoff(f, attempt));
			continue;
		}
		if (res.status == 404 && (flags & FORGE_ANSWER_404)) {
			http_response_free(&res);
			out->status = 404;
			out->json = NULL;
			out->next[0] = '\0';
			rc = 0;
			goto out;
		}
		switch (res.status) {
		case 401:
			rc = forge_fail(-EACCES, err, errlen, "%s %s: 401 the %s "
			    "credentials were refused: %s", method, url, f->driver,
			    msg[0] ? msg : "no message");
			break;
		case 403:
			rc = forge_fail(-EPERM, err, errlen, "%s %s: 403 not allowed: "
			    "%s", method, url, msg[0] ? msg : "no message");
			break;
		case 404:
			rc = forge_fail(-ENOENT, err, errlen, "%s %s: 404 not found "
			    "(or not visible to these credentials)%s%s", method, url,
			    msg[0] ? ": " : "", msg);
			break;
		case 409:
		case 422:
			rc = forge_fail(-EINVAL, err, errlen, "%s %s: %ld refused: %s",
			    method, url, res.status, msg[0] ? msg : "no message");
			break;
		default:
			rc = forge_fail(res.status >= 500 ? -EIO : -EINVAL, err,
			    errlen, "%s %s: %ld%s%s%s", method, url, res.status,
			    msg[0] ? " " : "", msg, res.status >= 500 ?
			    " (retries exhausted)" : "");
		}
		http_response_free(&res);
		goto out;
	}
out:
	if (locked)
		pthread_mutex_unlock(&write_lock);
	buf_free(&full);
	buf_free(&payload);
	return rc;
}

char *
forge_clip_short(const char *s, size_t max)
{
	size_t n = strlen(s ? s : "");
	char *out;

	if (n <= max)
		return strdup(s ? s : "");
	n = max > 3 ? max - 3 : 0;
	while (n > 0 && ((unsigned char)s[n] & 0xC0) == 0x80)
		n--;	/* do not split a UTF-8 sequence */
	if (!(out = malloc(n + 4)))
		return NULL;
	memcpy(out, s, n);
	memcpy(out + n, "...", 4);
	return out;
}

char *
forge_clip(const struct forge *f, const char *marker, const char *body)
{
	static const char notice[] = "\n\n---\n*kernelbot: this text was cut "
	    "at the forge's limit of %zu bytes; %zu bytes are not shown. The "
	    "full report is in the branch, in kernels/.../REPORT.md.*\n";
	struct buf b = BUF_INIT(BUF_MAX_DEFAULT);
	size_t head = marker ? strlen(marker) + 1 : 0, n = strlen(body);
	char note[sizeof(notice) + 64];

	if (marker && (buf_addstr(&b, marker) < 0 || buf_addch(&b, '\n') < 0))
		goto fail;
	if (head + n <= f->body_limit) {
		if (buf_add(&b, body, n) < 0)
			goto fail;
		return buf_detach(&b, NULL);
	}
	snprintf(note, sizeof(note), notice, f->body_limit, (size_t)0);
	{
		size_t room = f->body_limit > head + strlen(note) + 16 ?
		    f->body_limit - head - strlen(note) - 16 : 0;

		while (room > 0 && ((unsigned char)body[room] & 0xC0) == 0x80)
			room--;
		snprintf(note, sizeof(note), notice, f->body_limit, n - room);
		if (buf_add(&b, body, room) < 0 || buf_addstr(&b, note) < 0)
			goto fail;
	}
	return buf_detach(&b, NULL);
fail:
	buf_free(&b);
	return NULL;
}

int
forge_read_secret(const char *path, char **out, char *err, size_t errlen)
{
	struct buf b = BUF_INIT(FORGE_MAX_TOKEN);
	int rc;

	if ((rc = buf_read_secret(&b, path)) < 0) {
		buf_free(&b);
		return forge_fail(rc, err, errlen, "%s: %s", path, rc == -EFBIG ?
		    "larger than a secret should be" : rc == -EINVAL ?
		    "not a regular file" : rc == -EPERM ? BUF_SECRET_KERNEL_MSG :
		    strerror(-rc));
	}
	while (b.len && (b.data[b.len - 1] == '\n' || b.data[b.len - 1] == '\r' ||
	    b.data[b.len - 1] == ' '))
		buf_truncate(&b, b.len - 1);
	if (!b.len) {
		buf_free(&b);
		return forge_fail(-EINVAL, err, errlen, "%s: empty", path);
	}
	*out = buf_detach(&b, NULL);
	return 0;
}

int
forge_conf_str(struct forge *f, const json_t *conf, const char *key,
    int required, const char **out, char *err, size_t errlen)
{
	json_t *v = json_object_get(conf, key);

	if (!v || json_is_null(v)) {
		if (required)
			return forge_fail(-EINVAL, err, errlen, "forges.%s.%s: "
			    "required", f->driver, key);
		*out = NULL;
		return 0;
	}
	if (!json_is_string(v) || !json_string_length(v))
		return forge_fail(-EINVAL, err, errlen, "forges.%s.%s: must be a "
		    "non-empty string", f->driver, key);
	*out = json_string_value(v);
	return 0;
}

int
forge_conf_long(struct forge *f, const json_t *conf, const char *key, long min,
    long max, long *inout, char *err, size_t errlen)
{
	json_t *v = json_object_get(conf, key);

	if (!v || json_is_null(v))
		return 0;
	/* YAML gives integers; a quoted "123" is accepted for ids. */
	if (json_is_string(v)) {
		char *end;
		long long x = strtoll(json_string_value(v), &end, 10);

		if (*end || end == json_string_value(v) || x < min || x > max)
			goto bad;
		*inout = (long)x;
		return 0;
	}
	if (!json_is_integer(v) || json_integer_value(v) < min ||
	    json_integer_value(v) > max)
		goto bad;
	*inout = (long)json_integer_value(v);
	return 0;
bad:
	return forge_fail(-EINVAL, err, errlen, "forges.%s.%s: must be an "
	    "integer from %ld to %ld", f->driver, key, min, max);
}

int
forge_split_repo(const struct forge *f, char **owner, char **name)
{
	const char *slash = strrchr(f->repo, '/');

	if (!slash)
		return -EINVAL;
	*owner = strndup(f->repo, (size_t)(slash - f->repo));
	*name = strdup(slash + 1);
	if (!*owner || !*name) {
		free(*owner);
		free(*name);
		return -ENOMEM;
	}
	return 0;
}

static int
valid_repo(const char *r)
{
	const char *slash = r ? strchr(r, '/') : NULL;

	if (!slash || slash == r || !slash[1] || strlen(r) > 255 ||
	    r[strlen(r) - 1] == '/' || strstr(r, "//") || strstr(r, ".."))
		return 0;
	for (; *r; r++)
		if (!((*r >= 'a' && *r <= 'z') || (*r >= 'A' && *r <= 'Z') ||
		    (*r >= '0' && *r <= '9') || strchr("._-/", *r)))
			return 0;
	return 1;
}

static int
common_conf(struct forge *f, const json_t *conf, char *err, size_t errlen)
{
	const char *s, *tf, *te;
	char why[512];
	long v;
	int rc;

	f->write_interval_ms = 1000;
	f->backoff_ms = 1000;
	f->backoff_max_ms = 60000;
	f->timeout_ms = 30000;
	f->max_wait_s = 900;
	v = 4;
	if ((rc = forge_conf_long(f, conf, "write_interval_ms", 0, 3600000,
	    &f->write_interval_ms, err, errlen)) < 0 ||
	    (rc = forge_conf_long(f, conf, "backoff_ms", 0, 3600000,
	    &f->backoff_ms, err, errlen)) < 0 ||
	    (rc = forge_conf_long(f, conf, "backoff_max_ms", 0, 3600000,
	    &f->backoff_max_ms, err, errlen)) < 0 ||
	    (rc = forge_conf_long(f, conf, "timeout_ms", 100, 600000,
	    &f->timeout_ms, err, errlen)) < 0 ||
	    (rc = forge_conf_long(f, conf, "max_wait_s", 0, 86400,
	    &f->max_wait_s, err, errlen)) < 0 ||
	    (rc = forge_conf_long(f, conf, "max_retries", 0, 20, &v, err,
	    errlen)) < 0)
		return rc;
	f->max_retries = (int)v;
	v = (long)f->body_limit;
	if ((rc = forge_conf_long(f, conf, "body_limit", 1024, 16 << 20, &v, err,
	    errlen)) < 0)
		return rc;
	f->body_limit = (size_t)v;
	if ((rc = forge_conf_str(f, conf, "user_agent", 0, &s, err, errlen)) < 0)
		return rc;
	if (!(f->user_agent = strdup(s ? s : "kernelbot")))
		return -ENOMEM;
	if ((rc = forge_conf_str(f, conf, "api_url", 0, &s, err, errlen)) < 0)
		return rc;
	if (s) {
		free(f->api_url);
		if (!(f->api_url = strdup(s)))
			return -ENOMEM;
	}
	if (f->api_url) {
		size_t n = strlen(f->api_url);

		while (n > 0 && f->api_url[n - 1] == '/')
			f->api_url[--n] = '\0';
		if (strncmp(f->api_url, "http://", 7) &&
		    strncmp(f->api_url, "https://", 8))
			return forge_fail(-EINVAL, err, errlen, "forges.%s.api_url: "
			    "must be an http(s) URL", f->driver);
	}
	if ((rc = forge_conf_str(f, conf, "token_file", 0, &tf, err, errlen)) < 0 ||
	    (rc = forge_conf_str(f, conf, "token_env", 0, &te, err, errlen)) < 0)
		return rc;
	if (tf && te)
		return forge_fail(-EINVAL, err, errlen, "forges.%s: token_file and "
		    "token_env are exclusive", f->driver);
	if (tf && (rc = forge_read_secret(tf, &f->token, why, sizeof(why))) < 0)
		return forge_fail(rc, err, errlen, "forges.%s.token_file: %s",
		    f->driver, why);
	if (te) {
		const char *val = getenv(te);

		if (!val || !*val)
			return forge_fail(-EINVAL, err, errlen, "forges.%s.token_env: "
			    "%s is not set", f->driver, te);
		if (!(f->token = strdup(val)))
			return -ENOMEM;
	}
	return 0;
}

int
forge_open(const char *driver, const json_t *conf, const char *repo,
    struct forge **out, char *err, size_t errlen)
{
	static const struct {
		const char *name;
		int (*init)(struct forge *, const json_t *, char *, size_t);
		const char *api;
		size_t limit;
	} drivers[] = {
		/* GitHub: 65536 characters per body; bytes are a safe bound. */
		{ "github", forge_github_init, "https://api.github.com", 65536 },
		{ "gitlab", forge_gitlab_init, "https://gitlab.com/api/v4", 1000000 },
		{ "gitea", forge_gitea_init, NULL, 65536 },
		{ "local", forge_local_init, NULL, 1u << 20 },
	};
	struct forge *f;
	int rc = -EINVAL;

	if (conf && !json_is_object(conf))
		return forge_fail(-EINVAL, err, errlen, "forges.%s: must be a "
		    "mapping", driver ? driver : "?");
	if (!valid_repo(repo))
		return forge_fail(-EINVAL, err, errlen, "'%s' is not owner/name",
		    repo ? repo : "");
	for (size_t i = 0; driver && i < sizeof(drivers) / sizeof(drivers[0]); i++) {
		if (strcmp(driver, drivers[i].name))
			continue;
		if (!(f = calloc(1, sizeof(*f))))
			return -ENOMEM;
		snprintf(f->driver, sizeof(f->driver), "%s", driver);
		f->body_limit = drivers[i].limit;
		if (!(f->repo = strdup(repo)) || (drivers[i].api &&
		    !(f->api_url = strdup(drivers[i].api)))) {
			rc = -ENOMEM;
		} else if ((rc = common_conf(f, conf, err, errlen)) == 0) {
			rc = drivers[i].init(f, conf, err, errlen);
		}
		if (rc < 0) {
			if (rc == -ENOMEM)
				forge_fail(rc, err, errlen, "out of memory");
			forge_close(f);
			return rc;
		}
		*out = f;
		return 0;
	}
	return forge_fail(-EINVAL, err, errlen, "unknown forge driver '%s' "
	    "(github, gitlab, gitea, local)", driver ? driver : "");
}

int
forge_pr_get(struct forge *f, long long number, struct forge_pr_info *out,
    char *err, size_t errlen)
{
	if (number <= 0)
		return forge_fail(-EINVAL, err, errlen, "bad pull request number %lld",
		    number);
	return f->ops->pr_get(f, number, out, err, errlen);
}

void
forge_close(struct forge *f)
{
	if (!f)
		return;
	if (f->ops && f->ops->close)
		f->ops->close(f);
	if (f->token) {
		explicit_bzero(f->token, strlen(f->token));
		free(f->token);
	}
	free(f->repo);
	free(f->api_url);
	free(f->user_agent);
	free(f->push_url);
	free(f);
}

const char *
forge_driver(const struct forge *f)
{
	return f->driver;
}

const char *
forge_push_url(const struct forge *f)
{
	return f->push_url;
}

int
forge_git_cred(struct forge *f, struct gitops_cred *out, char *err,
    size_t errlen)
{
	struct gitops_cred none = { NULL, NULL };

	if (!f->ops->git_cred) {
		*out = none;
		return 0;
	}
	return f->ops->git_cred(f, out, err, errlen);
}

const char *
forge_result_name(enum forge_result r)
{
	return r == FORGE_CREATED ? "created" : r == FORGE_UPDATED ? "updated" :
	    "unchanged";
}

const char *
forge_perm_name(enum forge_perm p)
{
	static const char *const names[] = { "none", "read", "write", "admin" };

	return (unsigned)p < 4 ? names[p] : "none";
}

int
forge_state_parse(const char *s, enum forge_state *out)
{
	static const char *const names[] = { "pending", "success", "failure",
		"error", "neutral" };

	for (int i = 0; s && i < 5; i++)
		if (!strcmp(s, names[i])) {
			*out = (enum forge_state)i;
			return 0;
		}
	return -EINVAL;
}

int
forge_pr_upsert(struct forge *f, const struct forge_pr_req *req,
    struct forge_pr *out, char *err, size_t errlen)
{
	if (!req->head || !req->base || !req->title || !req->body)
		return forge_fail(-EINVAL, err, errlen, "a pull request needs "
		    "head, base, title and body");
	return f->ops->pr_upsert(f, req, out, err, errlen);
}

int
forge_comment_upsert(struct forge *f, long long pr, const char *marker,
    const char *body, struct forge_comment *out, char *err, size_t errlen)
{
	if (pr <= 0 || !marker || !*marker || strlen(marker) > FORGE_MAX_MARKER ||
	    !body)
		return forge_fail(-EINVAL, err, errlen, "a comment needs a PR "
		    "number, a marker of 1 to %d bytes and a body",
		    FORGE_MAX_MARKER);
	return f->ops->comment_upsert(f, pr, marker, body, out, err, errlen);
}

int
forge_status_set(struct forge *f, const char *sha, enum forge_state state,
    const char *context, const char *description, const char *target_url,
    char *err, size_t errlen)
{
	if (!sha || strlen(sha) != 40 || strspn(sha, "0123456789abcdef") != 40 ||
	    !context || !*context)
		return forge_fail(-EINVAL, err, errlen, "a status needs a full "
		    "commit id and a context");
	return f->ops->status_set(f, sha, state, context, description ?
	    description : "", target_url, err, errlen);
}

int
forge_permission(struct forge *f, const char *user, enum forge_perm *out,
    char *err, size_t errlen)
{
	if (!user || !*user || strpbrk(user, "/?#%& "))
		return forge_fail(-EINVAL, err, errlen, "bad user name");
	return f->ops->permission(f, user, out, err, errlen);
}

int
forge_react(struct forge *f, long long pr, long long comment_id,
    const char *reaction, char *err, size_t errlen)
{
	if (!reaction || (strcmp(reaction, "+1") && strcmp(reaction, "eyes")) ||
	    comment_id <= 0)
		return forge_fail(-EINVAL, err, errlen, "react takes a comment id "
		    "and \"+1\" or \"eyes\"");
	return f->ops->react(f, pr, comment_id, reaction, err, errlen);
}
