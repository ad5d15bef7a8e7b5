/*
 * The chat client. Requests that need another try are sent again in the
 * next round, all together, after the longest wait any of them was asked
 * for: a server that said Retry-After: 2 never hears from us sooner.
 */
#include "pipeline/llm/client.h"

#include <errno.h>
#include <pthread.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/buf.h"
#include "common/http.h"
#include "common/jsonx.h"
#include "common/log.h"

#define ANTHROPIC_VERSION "2023-06-01"
#define AUTH_MAX (LLM_MAX_KEY + 64)

const char *
llm_provider_name(enum llm_provider p)
{
	return p == LLM_ANTHROPIC ? "anthropic" : "openai";
}

char *
llm_request_body(const struct llm_request *req)
{
	const struct llm_model *m = req->model;
	double temp = req->temperature >= 0 ? req->temperature : m->temperature;
	json_t *msgs = json_array(), *o = json_object();
	char *text = NULL;

	if (!msgs || !o)
		goto out;
	if (m->provider == LLM_OPENAI && req->system && *req->system)
		json_array_append_new(msgs, json_pack("{s:s,s:s}", "role", "system",
		    "content", req->system));
	json_array_append_new(msgs, json_pack("{s:s,s:s}", "role", "user",
	    "content", req->user ? req->user : ""));
	if (json_object_set_new(o, "model", json_string(m->model)) ||
	    json_object_set_new(o, "max_tokens", json_integer(m->max_tokens)) ||
	    json_object_set_new(o, "temperature", json_real(temp)) ||
	    (m->provider == LLM_ANTHROPIC && req->system && *req->system &&
	    json_object_set_new(o, "system", json_string(req->system))) ||
	    json_object_set(o, "messages", msgs))
		goto out;
	text = json_dumps(o, JSON_COMPACT);
out:
	json_decref(msgs);
	json_decref(o);
	return text;
}

int
llm_parse_answer(enum llm_provider p, const char *body, size_t len,
    char **text, int64_t *tokens_in, int64_t *tokens_out, char *err,
    size_t errlen)
{
	json_t *root = NULL, *parts;
	struct buf b = BUF_INIT(LLM_MAX_RESPONSE);
	const char *s;
	int error = -EPROTO;

	if (jsonx_parse(body, len, &root, err, errlen) < 0)
		goto out;
	if (p == LLM_OPENAI) {
		if (!(s = jsonx_str(json_array_get(json_object_get(root, "choices"), 0),
		    "message.content", NULL))) {
			snprintf(err, errlen, "no choices[0].message.content in the reply");
			goto out;
		}
		if (buf_addstr(&b, s) < 0)
			goto nomem;
		*tokens_in = jsonx_int(root, "usage.prompt_tokens", 0);
		*tokens_out = jsonx_int(root, "usage.completion_tokens", 0);
	} else {
		size_t i;
		json_t *part;

		if (!json_is_array(parts = json_object_get(root, "content"))) {
			snprintf(err, errlen, "no content[] in the reply");
			goto out;
		}
		json_array_foreach(parts, i, part) {
			if (strcmp(jsonx_str(part, "type", ""), "text"))
				continue;
			if (buf_addstr(&b, jsonx_str(part, "text", "")) < 0)
				goto nomem;
		}
		if (!b.data) {
			snprintf(err, errlen, "no text part in content[]");
			goto out;
		}
		*tokens_in = jsonx_int(root, "usage.input_tokens", 0);
		*tokens_out = jsonx_int(root, "usage.output_tokens", 0);
	}
	if (*tokens_in < 0 || *tokens_out < 0) {
		snprintf(err, errlen, "negative token counts in usage");
		goto out;
	}
	*text = buf_detach(&b, NULL);
	error = *text ? 0 : -ENOMEM;
	goto out;
nomem:
	error = -ENOMEM;
	snprintf(err, errlen, "out of memory");
out:
	buf_free(&b);
	json_decref(root);
	return error;
}

/* Retry-After: delta-seconds or an HTTP-date (RFC 9110 10.2.3). */
static long
retry_after_ms(const char *v)
{
	struct tm tm = { 0 };
	char *end;
	long s;

	if (!v || !*v)
		return 0;
	s = strtol(v, &end, 10);
	if (end != v && (*end == '\0' || *end == ' ') && s >= 0)
		return s > LLM_MAX_RETRY_AFTER_S ? -1 : s * 1000;
	if (strptime(v, "%a, %d %b %Y %H:%M:%S GMT", &tm)) {
		time_t at = timegm(&tm), now = time(NULL);
		if (at <= now)
			return 0;
		return at - now > LLM_MAX_RETRY_AFTER_S ? -1 : (long)(at - now) * 1000;
	}
	return 0;	/* unreadable: the backoff alone */
}

long
llm_retry_wait_ms(int backoff_ms, int attempt, const char *retry_after)
{
	long wait = backoff_ms > 0 ? backoff_ms : 0, ra = retry_after_ms(retry_after);

	for (int i = 1; i < attempt && wait < LLM_MAX_BACKOFF_MS; i++)
		wait *= 2;
	if (wait > LLM_MAX_BACKOFF_MS)
		wait = LLM_MAX_BACKOFF_MS;
	if (ra < 0)
		return -1;
	return ra > wait ? ra : wait;
}

/* The key, read now; "" for a model without one. 0, or -errno with why. */
static int
read_key(const struct llm_model *m, char *key, size_t keylen, char *err,
    size_t errlen)
{
	struct buf b = BUF_INIT(LLM_MAX_KEY);
	size_t n;
	int error;

	key[0] = '\0';
	if (m->key_env) {
		const char *v = getenv(m->key_env);
		if (!v || !*v) {
			snprintf(err, errlen, "api_key_env %s is not set", m->key_env);
			return -ENOENT;
		}
		if (strlen(v) >= keylen) {
			snprintf(err, errlen, "the key in %s is too long", m->key_env);
			return -EFBIG;
		}
		strcpy(key, v);
		return 0;
	}
	if (!m->key_file)
		return 0;
	if ((error = buf_read_secret(&b, m->key_file)) < 0) {
		snprintf(err, errlen, "api_key_file %s: %s", m->key_file,
		    error == -EINVAL ? "not a regular file" : error == -EFBIG ?
		    "too large" : error == -EPERM ? BUF_SECRET_KERNEL_MSG :
		    strerror(-error));
		buf_free(&b);
		return error;
	}
	n = b.len;
	while (n && (b.data[n - 1] == '\n' || b.data[n - 1] == '\r' ||
	    b.data[n - 1] == ' ' || b.data[n - 1] == '\t'))
		n--;
	if (n == 0 || n >= keylen || memchr(b.data, '\n', n)) {
		snprintf(err, errlen, "api_key_file %s: %s", m->key_file,
		    n == 0 ? "empty" : "not one line");
		explicit_bzero(b.data ? b.data : key, b.data ? b.len : 0);
		buf_free(&b);
		return -EINVAL;
	}
	memcpy(key, b.data, n);
	key[n] = '\0';
	explicit_bzero(b.data, b.len);
	buf_free(&b);
	return 0;
}

int
llm_model_key_check(const struct llm_model *m, char *err, size_t errlen)
{
	char key[LLM_MAX_KEY + 1];
	int error;

	error = read_key(m, key, sizeof(key), err, errlen);
	explicit_bzero(key, sizeof(key));
	return error;
}

/* Per request, what lives across rounds. */
struct slot {
	char *body;
	char url[1024];
	char auth[AUTH_MAX];		/* the header with the key: wiped after each round */
	const char *headers[5];
	int done;
	long wait_ms;
	struct timespec start;
};

static double
since(const struct timespec *t0)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)(t.tv_sec - t0->tv_sec) + (t.tv_nsec - t0->tv_nsec) / 1e9;
}

static void
default_sleep(void *arg, long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	(void)arg;
	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

static int
slot_prepare(struct slot *s, const struct llm_request *rq, struct llm_reply *rp)
{
	const struct llm_model *m = rq->model;
	char key[LLM_MAX_KEY + 1];
	int n = 0;

	if (read_key(m, key, sizeof(key), rp->error, sizeof(rp->error)) < 0) {
		rp->status = "no_key";
		return -ENOENT;
	}
	s->headers[n++] = "Content-Type: application/json";
	if (m->provider == LLM_ANTHROPIC) {
		s->headers[n++] = "anthropic-version: " ANTHROPIC_VERSION;
		if (*key) {
			snprintf(s->auth, sizeof(s->auth), "x-api-key: %s", key);
			s->headers[n++] = s->auth;
		}
	} else if (*key) {
		snprintf(s->auth, sizeof(s->auth), "Authorization: Bearer %s", key);
		s->headers[n++] = s->auth;
	}
	s->headers[n] = NULL;
	explicit_bzero(key, sizeof(key));
	return 0;
}

static void
record(const struct llm_client *cl, const struct llm_request *rq,
    const struct llm_reply *rp, const char *status, long http_status,
    int64_t tin, int64_t tout, double cost, double latency)
{
	struct llm_call c;

	if (!cl->record)
		return;
	c.model = rq->model->model;
	c.provider = llm_provider_name(rq->model->provider);
	c.stage = rq->stage ? rq->stage : "";
	c.prompt_sha = rp->prompt_sha;
	c.status = status;
	c.http_status = http_status;
	c.attempt = rp->attempts;
	c.tokens_in = tin;
	c.tokens_out = tout;
	c.cost = cost;
	c.latency_s = latency;
	cl->record(cl->record_arg, &c);
}

/*
 * Judge one attempt's outcome; 1 when it should be tried again. A 2xx
 * body is a chat answer (into rp->text), or with vec an embedding of dim
 * values (llm_embed).
 */
static int
settle(const struct llm_client *cl, const struct llm_request *rq,
    struct slot *s, struct llm_reply *rp, int rc, const char *rcerr,
    struct http_response *res, double latency, float *vec, size_t dim)
{
	const struct llm_model *m = rq->model;
	char ra[64] = "";
	int64_t tin = 0, tout = 0;
	double cost = 0;
	const char *status;
	int retry = 0;

	rp->http_status = rc == 0 ? res->status : 0;
	if (rc == 0 && res->status >= 200 && res->status < 300) {
		char *text = NULL;

		if (vec ? llm_parse_embedding(buf_cstr(&res->body), res->body.len, vec, dim,
		    &tin, rp->error, sizeof(rp->error)) == 0 :
		    llm_parse_answer(m->provider, buf_cstr(&res->body), res->body.len,
		    &text, &tin, &tout, rp->error, sizeof(rp->error)) == 0) {
			status = "ok";
			rp->text = text;
			rp->error[0] = '\0';
		} else {
			status = "malformed";
		}
		cost = (tin * m->price_in + tout * m->price_out) / 1e6;
	} else if (rc == 0) {
		status = "http_error";
		snprintf(rp->error, sizeof(rp->error), "HTTP %ld from %s", res->status,
		    m->model);
		if (res->status == 429 || res->status >= 500) {
			http_header(res, "retry-after", ra, sizeof(ra));
			retry = 1;
		}
	} else {
		status = rc == -ETIMEDOUT ? "timeout" : "network";
		snprintf(rp->error, sizeof(rp->error), "%s: %s", m->model, rcerr);
		retry = rc != -EINVAL && rc != -EFBIG;
	}
	rp->status = status;
	rp->tokens_in += tin;
	rp->tokens_out += tout;
	rp->cost += cost;
	rp->latency_s = since(&s->start);
	record(cl, rq, rp, status, rp->http_status, tin, tout, cost, latency);
	if (!retry || rp->attempts >= cl->cfg->max_attempts)
		return 0;
	s->wait_ms = llm_retry_wait_ms(cl->cfg->backoff_ms, rp->attempts, ra);
	if (s->wait_ms < 0) {
		snprintf(rp->error, sizeof(rp->error),
		    "HTTP %ld from %s with Retry-After over %d s", res->status, m->model,
		    LLM_MAX_RETRY_AFTER_S);
		return 0;
	}
	return 1;
}

int
llm_chat_many(const struct llm_client *cl, const struct llm_request *reqs,
    struct llm_reply *replies, size_t n)
{
	struct slot *slots = NULL;
	struct http_request *hr = NULL;
	struct http_response *res = NULL;
	size_t *idx = NULL, npend = 0;
	int *rcs = NULL, error = 0;
	char *errs = NULL;
	const size_t errlen = 256;

	for (size_t i = 0; i < n; i++) {
		memset(&replies[i], 0, sizeof(replies[i]));
		replies[i].status = "network";
	}
	if (n == 0)
		return 0;
	if (!(slots = calloc(n, sizeof(*slots))) || !(hr = calloc(n, sizeof(*hr))) ||
	    !(res = calloc(n, sizeof(*res))) || !(idx = calloc(n, sizeof(*idx))) ||
	    !(rcs = calloc(n, sizeof(*rcs))) || !(errs = calloc(n, errlen))) {
		error = -ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < n; i++) {
		const struct llm_request *rq = &reqs[i];
		struct buf p = BUF_INIT(SIZE_MAX / 2);

		if (!rq->model || !rq->user) {
			error = -EINVAL;
			goto out;
		}
		if (buf_addstr(&p, rq->system ? rq->system : "") < 0 ||
		    buf_addch(&p, '\0') < 0 || buf_addstr(&p, rq->user) < 0) {
			buf_free(&p);
			error = -ENOMEM;
			goto out;
		}
		crypto_sha256_hex(p.data, p.len, replies[i].prompt_sha);
		buf_free(&p);
		if (!(slots[i].body = llm_request_body(rq))) {
			error = -ENOMEM;
			goto out;
		}
		snprintf(slots[i].url, sizeof(slots[i].url), "%s%s", rq->model->base_url,
		    rq->model->provider == LLM_ANTHROPIC ? "/v1/messages" :
		    "/chat/completions");
		clock_gettime(CLOCK_MONOTONIC, &slots[i].start);
		idx[npend++] = i;
	}
	while (npend > 0) {
		size_t k = 0, next = 0;
		long wait = 0;
		struct timespec round_t0;

		/* build this round's requests, keys read now */
		for (size_t j = 0; j < npend; j++) {
			size_t i = idx[j];
			struct http_request r = HTTP_REQUEST_INIT;

			if (slot_prepare(&slots[i], &reqs[i], &replies[i]) < 0)
				continue;
			r.method = "POST";
			r.url = slots[i].url;
			r.headers = slots[i].headers;
			r.body = slots[i].body;
			r.body_len = strlen(slots[i].body);
			r.timeout_ms = 1000L * reqs[i].model->timeout_s;
			r.max_response = LLM_MAX_RESPONSE;
			hr[k] = r;
			idx[k++] = i;
			replies[i].attempts++;
		}
		npend = k;
		if (npend == 0)
			break;
		memset(res, 0, npend * sizeof(*res));
		clock_gettime(CLOCK_MONOTONIC, &round_t0);
		error = http_do_many(hr, res, rcs, npend,
		    cl->cfg->parallel > 0 ? cl->cfg->parallel : 0, errs, errlen);
		for (size_t j = 0; j < npend; j++)
			explicit_bzero(slots[idx[j]].auth, sizeof(slots[idx[j]].auth));
		if (error < 0) {
			for (size_t j = 0; j < npend; j++)
				http_response_free(&res[j]);
			goto out;
		}
		for (size_t j = 0; j < npend; j++) {
			size_t i = idx[j];
			double lat = since(&round_t0);

			if (settle(cl, &reqs[i], &slots[i], &replies[i], rcs[j],
			    errs + j * errlen, &res[j], lat, NULL, 0)) {
				if (slots[i].wait_ms > wait)
					wait = slots[i].wait_ms;
				idx[next++] = i;
			}
			http_response_free(&res[j]);
		}
		npend = next;
		if (npend > 0 && wait > 0)
			(cl->sleep_ms ? cl->sleep_ms : default_sleep)(cl->sleep_arg, wait);
	}
out:
	if (slots)
		for (size_t i = 0; i < n; i++) {
			free(slots[i].body);
			explicit_bzero(slots[i].auth, sizeof(slots[i].auth));
		}
	free(slots);
	free(hr);
	free(res);
	free(idx);
	free(rcs);
	free(errs);
	return error;
}

void
llm_reply_free(struct llm_reply *r)
{
	if (!r)
		return;
	free(r->text);
	r->text = NULL;
}

int
llm_parse_embedding(const char *body, size_t len, float *vec, size_t dim,
    int64_t *tokens_in, char *err, size_t errlen)
{
	json_t *root = NULL, *data, *e;
	size_t i;
	int error = -EPROTO;

	*tokens_in = 0;
	if (jsonx_parse(body, len, &root, NULL, 0) < 0 || !json_is_object(root)) {
		snprintf(err, errlen, "the embeddings response is not a JSON object");
		goto out;
	}
	data = json_object_get(root, "data");
	e = json_is_array(data) && json_array_size(data) > 0 ?
	    json_object_get(json_array_get(data, 0), "embedding") : NULL;
	if (!json_is_array(e)) {
		snprintf(err, errlen, "no data[0].embedding in the embeddings response");
		goto out;
	}
	if (json_array_size(e) != dim) {
		snprintf(err, errlen, "the embedding has %zu values, llm.embeddings.dim says %zu",
		    json_array_size(e), dim);
		goto out;
	}
	for (i = 0; i < dim; i++) {
		json_t *x = json_array_get(e, i);

		if (!json_is_number(x)) {
			snprintf(err, errlen, "embedding value %zu is not a number", i);
			goto out;
		}
		vec[i] = (float)json_number_value(x);
	}
	*tokens_in = jsonx_int(json_object_get(root, "usage"), "prompt_tokens", 0);
	error = 0;
out:
	json_decref(root);
	return error;
}

int
llm_embed(const struct llm_client *cl, const char *text, float *vec,
    size_t dim, char *err, size_t errlen)
{
	const struct llm_model *m = &cl->cfg->embed;
	struct llm_request rq = { .model = m, .user = text, .stage = "embed" };
	struct llm_reply rp = { .status = "network" };
	struct slot s = { 0 };
	size_t len = strlen(text);
	json_t *body;
	int error;

	if (!m->model || !cl->cfg->embed_dim) {
		snprintf(err, errlen, "no llm.embeddings endpoint configured");
		return -ENOENT;
	}
	if (len > LLM_MAX_EMBED_TEXT)
		len = LLM_MAX_EMBED_TEXT;
	while (len > 0 && ((unsigned char)text[len] & 0xc0) == 0x80)
		len--;	/* not inside a UTF-8 sequence */
	crypto_sha256_hex(text, len, rp.prompt_sha);
	if (!(body = json_pack("{s:s, s:s%}", "model", m->model, "input", text, len)) ||
	    !(s.body = json_dumps(body, JSON_COMPACT))) {
		json_decref(body);
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	json_decref(body);
	snprintf(s.url, sizeof(s.url), "%s/embeddings", m->base_url);
	if (slot_prepare(&s, &rq, &rp) < 0) {
		snprintf(err, errlen, "%s", rp.error);
		free(s.body);
		return -ENOENT;
	}
	clock_gettime(CLOCK_MONOTONIC, &s.start);
	for (;;) {
		struct http_request hr = HTTP_REQUEST_INIT;
		struct http_response res = { 0 };
		char herr[256] = "";
		int rc, retry;

		hr.method = "POST";
		hr.url = s.url;
		hr.headers = s.headers;
		hr.body = s.body;
		hr.body_len = strlen(s.body);
		hr.timeout_ms = (long)m->timeout_s * 1000;
		hr.max_response = LLM_MAX_RESPONSE;
		rp.attempts++;
		rc = http_do(&hr, &res, herr, sizeof(herr));
		retry = settle(cl, &rq, &s, &rp, rc, herr, &res, since(&s.start), vec, dim);
		http_response_free(&res);
		if (!retry)
			break;
		(cl->sleep_ms ? cl->sleep_ms : default_sleep)(cl->sleep_arg, s.wait_ms);
	}
	error = !strcmp(rp.status, "ok") ? 0 : !strcmp(rp.status, "malformed") ? -EPROTO :
	    !strcmp(rp.status, "timeout") ? -ETIMEDOUT : -EIO;
	explicit_bzero(s.auth, sizeof(s.auth));
	free(s.body);
	if (error < 0)
		snprintf(err, errlen, "%s", rp.error);
	return error;
}

/* The hook's memory of recent vectors: retrieval embeds the same texts again. */
#define EMBED_CACHE 32
static struct {
	char sha[CRYPTO_SHA256_HEX];
	float *vec;
	size_t dim;
} embed_cache[EMBED_CACHE];
static unsigned embed_next;
static pthread_mutex_t embed_lock = PTHREAD_MUTEX_INITIALIZER;

int
llm_embed_hook(void *arg, const char *text, float *vec, size_t dim)
{
	const struct llm_client *cl = arg;
	char sha[CRYPTO_SHA256_HEX], err[256];
	float *keep;
	int error, i;

	crypto_sha256_hex(text, strlen(text), sha);
	pthread_mutex_lock(&embed_lock);
	for (i = 0; i < EMBED_CACHE; i++) {
		if (embed_cache[i].vec && embed_cache[i].dim == dim && !strcmp(embed_cache[i].sha, sha)) {
			memcpy(vec, embed_cache[i].vec, dim * sizeof(*vec));
			pthread_mutex_unlock(&embed_lock);
			return 0;
		}
	}
	pthread_mutex_unlock(&embed_lock);
	if ((error = llm_embed(cl, text, vec, dim, err, sizeof(err))) < 0) {
		log_warn("embedding failed; retrieval goes on without embeddings", "error=%s", err);
		return error;
	}
	if (!(keep = malloc(dim * sizeof(*keep))))
		return 0;
	memcpy(keep, vec, dim * sizeof(*keep));
	pthread_mutex_lock(&embed_lock);
	i = (int)(embed_next++ % EMBED_CACHE);
	free(embed_cache[i].vec);
	memcpy(embed_cache[i].sha, sha, sizeof(sha));
	embed_cache[i].vec = keep;
	embed_cache[i].dim = dim;
	pthread_mutex_unlock(&embed_lock);
	return 0;
}
