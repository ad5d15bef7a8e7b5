/*
 * http: the one HTTP client of kernelbot, over libcurl (included here
 * only; its errors are translated here, once, from CURLOPT_ERRORBUFFER).
 * Forge clients and LLM clients both use it.
 *
 * A request is a plain value: method, URL, headers, body, timeouts, a cap
 * on the response. The response keeps its status, its body (capped: a
 * larger body is an error, never silently cut) and its headers, so callers
 * can read Retry-After, x-ratelimit-*, Link and the like.
 *
 * Only http:// and https:// are allowed, redirects are not followed unless
 * asked for, and no signal is used (threads may call in parallel, each
 * with its own requests).
 */
#ifndef KB_COMMON_HTTP_H
#define KB_COMMON_HTTP_H

#include <stddef.h>

#include "common/buf.h"

#define HTTP_MAX_HEADERS_BYTES (64u << 10)	/* response headers kept */
#define HTTP_DEFAULT_TIMEOUT_MS 30000
#define HTTP_DEFAULT_CONNECT_MS 10000
#define HTTP_MAX_PARALLEL 64

struct http_request {
	const char *method;		/* "GET" (default when NULL), "POST", "PATCH", ... */
	const char *url;
	const char *const *headers;	/* "Name: value" strings, NULL-terminated; may be NULL */
	const void *body;		/* sent as is; NULL = no body */
	size_t body_len;
	long timeout_ms;		/* whole transfer; 0 = HTTP_DEFAULT_TIMEOUT_MS */
	long connect_timeout_ms;	/* 0 = HTTP_DEFAULT_CONNECT_MS */
	size_t max_response;		/* body cap; 0 = BUF_MAX_DEFAULT */
	int follow_redirects;		/* at most 5, same protocols */
	const char *user_agent;		/* NULL = "kernelbot" */
};

#define HTTP_REQUEST_INIT { 0 }

struct http_response {
	long status;			/* HTTP status of the final response */
	struct buf body;
	struct buf headers;		/* "name: value\n" lines of the final response */
};

/*
 * Perform one request. 0 when a response arrived, whatever its status
 * (read res->status); -errno when none did:
 *   -EINVAL bad URL or method, -ETIMEDOUT, -ECONNREFUSED, -EHOSTUNREACH
 *   (name or route), -EFBIG (body over max_response), -EPROTO (TLS or
 *   protocol), -EIO otherwise; err says what curl said.
 * res is filled on 0 only; free it with http_response_free() either way.
 */
int http_do(const struct http_request *req, struct http_response *res,
    char *err, size_t errlen);

/*
 * Perform n requests in parallel (at most max_parallel at once, 0 = all,
 * capped at HTTP_MAX_PARALLEL) with libcurl's multi interface. rcs[i] gets
 * what http_do would return for reqs[i]; errs (may be NULL) holds n
 * messages of errlen bytes each. Returns 0, or -ENOMEM / -EINVAL when it
 * could not run at all. Free every res[i] with http_response_free()
 * afterwards, whatever its rcs[i].
 */
int http_do_many(const struct http_request *reqs, struct http_response *res,
    int *rcs, size_t n, int max_parallel, char *errs, size_t errlen);

/*
 * The value of header name (case-insensitive) in the response, into out
 * (NUL-terminated, truncated to outlen). The last one wins when repeated.
 * 1 when found, 0 when not.
 */
int http_header(const struct http_response *res, const char *name, char *out,
    size_t outlen);

/*
 * The URL of the Link header's rel="next" (RFC 8288; what GitHub, GitLab
 * and Gitea use for pagination). 1 when there is one, 0 when not.
 */
int http_link_next(const struct http_response *res, char *out, size_t outlen);

/* Percent-encode s for a URL path segment or query value; caller frees. */
char *http_escape(const char *s);

void http_response_free(struct http_response *res);

#endif
