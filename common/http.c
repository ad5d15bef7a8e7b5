/*
 * common/http.c: libcurl, easy and multi, behind one small interface.
 */
#include "common/http.h"

#include <curl/curl.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

static pthread_once_t http_once = PTHREAD_ONCE_INIT;
static CURLcode http_init_rc;

static void
http_global_init(void)
{
	http_init_rc = curl_global_init(CURL_GLOBAL_DEFAULT);
}

struct xfer {
	CURL *h;
	struct curl_slist *hdrs;
	struct http_response *res;
	char errbuf[CURL_ERROR_SIZE];
	int too_big;
};

static size_t
on_body(char *p, size_t size, size_t n, void *arg)
{
	struct xfer *x = arg;
	size_t len = size * n;

	if (buf_add(&x->res->body, p, len) < 0) {
		x->too_big = 1;
		return 0;	/* makes curl stop with CURLE_WRITE_ERROR */
	}
	return len;
}

static size_t
on_header(char *p, size_t size, size_t n, void *arg)
{
	struct xfer *x = arg;
	size_t len = size * n;

	/* A new status line: an interim (100) or redirect response ended. */
	if (len >= 5 && !memcmp(p, "HTTP/", 5)) {
		buf_reset(&x->res->headers);
		return len;
	}
	while (len > 0 && (p[len - 1] == '\n' || p[len - 1] == '\r'))
		len--;
	if (len > 0 && memchr(p, ':', len)) {
		if (buf_add(&x->res->headers, p, len) < 0 ||
		    buf_addch(&x->res->headers, '\n') < 0)
			return 0;
	}
	return size * n;
}

static int
xfer_setup(struct xfer *x, const struct http_request *req,
    struct http_response *res, char *err, size_t errlen)
{
	const char *method = req->method ? req->method : "GET";

	memset(x, 0, sizeof(*x));
	memset(res, 0, sizeof(*res));
	res->body.max = req->max_response ? req->max_response : BUF_MAX_DEFAULT;
	res->headers.max = HTTP_MAX_HEADERS_BYTES;
	x->res = res;
	pthread_once(&http_once, http_global_init);
	if (http_init_rc != CURLE_OK) {
		snprintf(err, errlen, "curl init: %s", curl_easy_strerror(http_init_rc));
		return -EIO;
	}
	if (!req->url || (strncasecmp(req->url, "http://", 7) &&
	    strncasecmp(req->url, "https://", 8))) {
		snprintf(err, errlen, "'%s' is not an http(s) URL",
		    req->url ? req->url : "");
		return -EINVAL;
	}
	for (const char *m = method; *m; m++)
		if (*m < 'A' || *m > 'Z') {
			snprintf(err, errlen, "bad method '%s'", method);
			return -EINVAL;
		}
	if (!(x->h = curl_easy_init()))
		return -ENOMEM;
	for (const char *const *h = req->headers; h && *h; h++) {
		struct curl_slist *n = curl_slist_append(x->hdrs, *h);

		if (!n)
			return -ENOMEM;
		x->hdrs = n;
	}
	/* curl adds "Expect: 100-continue" to large bodies; forges don't need it. */
	x->hdrs = curl_slist_append(x->hdrs, "Expect:");
	curl_easy_setopt(x->h, CURLOPT_URL, req->url);
	curl_easy_setopt(x->h, CURLOPT_ERRORBUFFER, x->errbuf);
	curl_easy_setopt(x->h, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(x->h, CURLOPT_PROTOCOLS_STR, "http,https");
	curl_easy_setopt(x->h, CURLOPT_REDIR_PROTOCOLS_STR, "http,https");
	curl_easy_setopt(x->h, CURLOPT_FOLLOWLOCATION, req->follow_redirects ? 1L : 0L);
	curl_easy_setopt(x->h, CURLOPT_MAXREDIRS, 5L);
	curl_easy_setopt(x->h, CURLOPT_TIMEOUT_MS,
	    req->timeout_ms ? req->timeout_ms : (long)HTTP_DEFAULT_TIMEOUT_MS);
	curl_easy_setopt(x->h, CURLOPT_CONNECTTIMEOUT_MS, req->connect_timeout_ms ?
	    req->connect_timeout_ms : (long)HTTP_DEFAULT_CONNECT_MS);
	curl_easy_setopt(x->h, CURLOPT_USERAGENT,
	    req->user_agent ? req->user_agent : "kernelbot");
	curl_easy_setopt(x->h, CURLOPT_HTTPHEADER, x->hdrs);
	curl_easy_setopt(x->h, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(x->h, CURLOPT_WRITEDATA, x);
	curl_easy_setopt(x->h, CURLOPT_HEADERFUNCTION, on_header);
	curl_easy_setopt(x->h, CURLOPT_HEADERDATA, x);
	curl_easy_setopt(x->h, CURLOPT_ACCEPT_ENCODING, "");
	if (!strcmp(method, "GET")) {
		curl_easy_setopt(x->h, CURLOPT_HTTPGET, 1L);
	} else if (!strcmp(method, "HEAD")) {
		curl_easy_setopt(x->h, CURLOPT_NOBODY, 1L);
	} else {
		curl_easy_setopt(x->h, CURLOPT_CUSTOMREQUEST, method);
		curl_easy_setopt(x->h, CURLOPT_POSTFIELDSIZE_LARGE,
		    (curl_off_t)(req->body ? req->body_len : 0));
		curl_easy_setopt(x->h, CURLOPT_POSTFIELDS,
		    req->body ? req->body : "");
	}
	return 0;
}

/* Translate how the transfer ended into 0 / -errno and a message. */
static int
xfer_result(struct xfer *x, CURLcode cc, char *err, size_t errlen)
{
	const char *msg = x->errbuf[0] ? x->errbuf : curl_easy_strerror(cc);

	if (cc == CURLE_OK) {
		curl_easy_getinfo(x->h, CURLINFO_RESPONSE_CODE, &x->res->status);
		return 0;
	}
	if (x->too_big) {
		snprintf(err, errlen, "response body over %zu bytes",
		    x->res->body.max);
		return -EFBIG;
	}
	snprintf(err, errlen, "%s", msg);
	switch (cc) {
	case CURLE_OPERATION_TIMEDOUT:
		return -ETIMEDOUT;
	case CURLE_COULDNT_CONNECT:
		return -ECONNREFUSED;
	case CURLE_COULDNT_RESOLVE_HOST:
	case CURLE_COULDNT_RESOLVE_PROXY:
		return -EHOSTUNREACH;
	case CURLE_URL_MALFORMAT:
	case CURLE_UNSUPPORTED_PROTOCOL:
		return -EINVAL;
	case CURLE_SSL_CONNECT_ERROR:
	case CURLE_PEER_FAILED_VERIFICATION:
	case CURLE_SSL_CERTPROBLEM:
	case CURLE_SSL_CACERT_BADFILE:
		return -EPROTO;
	default:
		return -EIO;
	}
}

static void
xfer_cleanup(struct xfer *x)
{
	if (x->h)
		curl_easy_cleanup(x->h);
	curl_slist_free_all(x->hdrs);
	x->h = NULL;
	x->hdrs = NULL;
}

int
http_do(const struct http_request *req, struct http_response *res, char *err,
    size_t errlen)
{
	struct http_response r;
	struct xfer x;
	int rc;

	if ((rc = xfer_setup(&x, req, &r, err, errlen)) == 0)
		rc = xfer_result(&x, curl_easy_perform(x.h), err, errlen);
	xfer_cleanup(&x);
	if (rc < 0) {
		http_response_free(&r);
		return rc;
	}
	*res = r;
	return 0;
}

int
http_do_many(const struct http_request *reqs, struct http_response *res,
    int *rcs, size_t n, int max_parallel, char *errs, size_t errlen)
{
	struct xfer *x = NULL;
	CURLM *m = NULL;
	char scratch[CURL_ERROR_SIZE];
	size_t next = 0, active = 0, limit;
	int rc = 0, running;

	if (n == 0)
		return 0;
	limit = max_parallel > 0 ? (size_t)max_parallel : n;
	if (limit > HTTP_MAX_PARALLEL)
		limit = HTTP_MAX_PARALLEL;
	if (!(x = calloc(n, sizeof(*x))) || !(m = curl_multi_init())) {
		rc = -ENOMEM;
		goto out;
	}
#define ERRBUF(i) (errs ? errs + (i) * errlen : scratch)
#define ERRLEN (errs ? errlen : sizeof(scratch))
	for (size_t i = 0; i < n; i++) {
		rcs[i] = -EINPROGRESS;
		memset(&res[i], 0, sizeof(res[i]));
	}
	for (;;) {
		CURLMsg *msg;
		int left;

		while (active < limit && next < n) {
			size_t i = next++;

			rcs[i] = xfer_setup(&x[i], &reqs[i], &res[i], ERRBUF(i),
			    ERRLEN);
			if (rcs[i] == 0) {
				curl_easy_setopt(x[i].h, CURLOPT_PRIVATE, (void *)&x[i]);
				curl_multi_add_handle(m, x[i].h);
				rcs[i] = -EINPROGRESS;
				active++;
			} else {
				xfer_cleanup(&x[i]);
			}
		}
		if (active == 0)
			break;
		if (curl_multi_perform(m, &running) != CURLM_OK) {
			rc = -EIO;
			goto out;
		}
		while ((msg = curl_multi_info_read(m, &left))) {
			struct xfer *t;
			size_t i;

			if (msg->msg != CURLMSG_DONE)
				continue;
			curl_easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE, (char **)&t);
			i = (size_t)(t - x);
			rcs[i] = xfer_result(t, msg->data.result, ERRBUF(i), ERRLEN);
			curl_multi_remove_handle(m, t->h);
			xfer_cleanup(t);
			active--;
		}
		if (active > 0 && curl_multi_poll(m, NULL, 0, 1000, NULL) != CURLM_OK) {
			rc = -EIO;
			goto out;
		}
	}
#undef ERRBUF
#undef ERRLEN
out:
	for (size_t i = 0; x && i < n; i++) {
		if (x[i].h) {
			curl_multi_remove_handle(m, x[i].h);
			xfer_cleanup(&x[i]);
		}
		if (rcs[i] == -EINPROGRESS)
			rcs[i] = -ECANCELED;
	}
	if (m)
		curl_multi_cleanup(m);
	free(x);
	return rc;
}

int
http_header(const struct http_response *res, const char *name, char *out,
    size_t outlen)
{
	const char *p = buf_cstr(&res->headers);
	size_t nl = strlen(name);
	int found = 0;

	while (*p) {
		const char *eol = strchr(p, '\n');
		size_t len = eol ? (size_t)(eol - p) : strlen(p);

		if (len > nl && p[nl] == ':' && !strncasecmp(p, name, nl)) {
			const char *v = p + nl + 1;
			size_t vl = len - nl - 1;

			while (vl && (*v == ' ' || *v == '\t')) {
				v++;
				vl--;
			}
			while (vl && (v[vl - 1] == ' ' || v[vl - 1] == '\t'))
				vl--;
			if (outlen) {
				if (vl >= outlen)
					vl = outlen - 1;
				memcpy(out, v, vl);
				out[vl] = '\0';
			}
			found = 1;
		}
		p += len + (eol ? 1 : 0);
	}
	return found;
}

int
http_link_next(const struct http_response *res, char *out, size_t outlen)
{
	char link[8192];
	const char *p;

	if (!http_header(res, "link", link, sizeof(link)))
		return 0;
	/* <url>; rel="next", <url>; rel="last" */
	for (p = link; (p = strchr(p, '<')); ) {
		const char *end = strchr(p, '>');
		const char *sep;

		if (!end)
			return 0;
		sep = strchr(end, ',');
		if (strstr(end, "rel=\"next\"") &&
		    (!sep || strstr(end, "rel=\"next\"") < sep)) {
			size_t n = (size_t)(end - p - 1);

			if (n >= outlen)
				return 0;
			memcpy(out, p + 1, n);
			out[n] = '\0';
			return 1;
		}
		p = end;
	}
	return 0;
}

char *
http_escape(const char *s)
{
	char *e, *copy;

	pthread_once(&http_once, http_global_init);
	if (!(e = curl_easy_escape(NULL, s, 0)))
		return NULL;
	copy = strdup(e);
	curl_free(e);
	return copy;
}

void
http_response_free(struct http_response *res)
{
	if (!res)
		return;
	buf_free(&res->body);
	buf_free(&res->headers);
	res->status = 0;
}
