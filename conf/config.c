#include "conf/config.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/buf.h"
#include "common/log.h"
#include "common/yamldoc.h"

struct config {
	char *path;
	struct yamldoc *doc;		/* NULL for config_default() */
	json_t *empty;			/* the tree when there is no document */
	char *listen;
	char *data_dir;
	int data_dir_cli;		/* set by config_set_data_dir (--data-dir) */
	char *log_file;
	char *log_level;
	struct config_http http;
	char **allow;			/* patterns, "!" kept */
	size_t n_allow;
	char *secret[CONFIG_N_FORGES];
	size_t secret_len[CONFIG_N_FORGES];
	int local_clone[CONFIG_N_FORGES];	/* file:// clone URLs taken */
};

static const char *const forge_names[CONFIG_N_FORGES] = { "github", "gitlab", "gitea" };

/* Sections other modules own: accepted here, validated there. */
static const char *const top_keys[] = {
	"listen", "data_dir", "allow_repos", "log_file", "log_level", "http",
	"forges", "runners", "sandbox", "llm", "budgets", "schedule", "archive",
	"python", "profile", NULL,
};

/* The intake's keys, then the forge clients' (docs/configuration.md). */
static const char *const forge_keys[] = {
	"token_file", "token_env", "api_url", "app_id", "private_key_file",
	"webhook_secret_file", "webhook_secret_env", "webhook_token_file",
	"webhook_token_env", "local_clone_urls",
	/* the forge client's own keys (gitops/forge.h), used by the coordinator */
	"driver", "installation_id", "write_interval_ms", "max_retries",
	"backoff_ms", "backoff_max_ms", "max_wait_s", "timeout_ms", "body_limit",
	"user_agent", "git_user", "out_dir", "bare_repo", "permissions", NULL,
};

/* The dry-run forge has no webhooks, but its section is legal. */
static const char *const known_forges[] = { "github", "gitlab", "gitea", "local", NULL };

static int
in_list(const char *const *list, const char *s)
{
	for (; *list; list++)
		if (!strcmp(*list, s))
			return 1;
	return 0;
}

const char *
config_forge_name(enum config_forge f)
{
	return f < CONFIG_N_FORGES ? forge_names[f] : "?";
}

static void
config_http_defaults(struct config_http *h)
{
	h->max_body_bytes = 25u << 20;
	h->max_buffered_bytes = 256u << 20;
	h->max_header_bytes = 32u << 10;
	h->max_connections = 256;
	h->max_connections_per_ip = 64;
	h->connection_timeout_s = 10;
	h->request_timeout_s = 30;
	h->threads = 8;
	h->head_timeout_s = 10;
	h->min_body_bytes_per_s = 1024;
	h->max_buffered_bytes_per_ip = 32u << 20;	/* max_buffered_bytes / 8; see load_http_clients() */
	h->small_body_bytes = 256u << 10;	/* at most max_body_bytes; see load_http_clients() */
	h->small_body_reserve = 64u << 20;	/* max_connections small bodies; ditto */
}

static struct config *
config_new(const char *path)
{
	struct config *c = calloc(1, sizeof(*c));

	if (!c)
		return NULL;
	config_http_defaults(&c->http);
	c->path = strdup(path);
	c->listen = strdup(CONFIG_DEFAULT_LISTEN);
	c->data_dir = strdup(CONFIG_DEFAULT_DATA_DIR);
	c->log_level = strdup("info");
	c->empty = json_object();
	if (!c->path || !c->listen || !c->data_dir || !c->log_level || !c->empty) {
		config_free(c);
		return NULL;
	}
	return c;
}

void
config_free(struct config *c)
{
	if (!c)
		return;
	free(c->path);
	yamldoc_free(c->doc);
	json_decref(c->empty);
	free(c->listen);
	free(c->data_dir);
	free(c->log_file);
	free(c->log_level);
	for (size_t i = 0; i < c->n_allow; i++)
		free(c->allow[i]);
	free(c->allow);
	for (int f = 0; f < CONFIG_N_FORGES; f++) {
		if (c->secret[f])
			explicit_bzero(c->secret[f], c->secret_len[f]);
		free(c->secret[f]);
	}
	free(c);
}

json_t *
config_tree(const struct config *c)
{
	json_t *root = c->doc ? yamldoc_root(c->doc) : NULL;

	return json_is_object(root) ? root : c->empty;
}

const char *
config_path(const struct config *c)
{
	return c->path;
}

/*
 * The line of dotted `key`: the member line of its last component, or of
 * the nearest one above it that is in the file (a missing key is reported
 * where its section is).
 */
static int
key_line(const struct config *c, const char *key)
{
	const json_t *parent = config_tree(c);
	char part[256];
	const char *p = key, *dot;
	size_t n;
	int line = 0, l;

	if (!c->doc)
		return 0;
	while ((dot = strchr(p, '.'))) {
		n = (size_t)(dot - p);
		if (n >= sizeof(part))
			return line;
		memcpy(part, p, n);
		part[n] = '\0';
		if ((l = yamldoc_member_line(c->doc, parent, part)))
			line = l;
		parent = json_object_get(parent, part);
		if (!json_is_object(parent))
			return line;
		p = dot + 1;
	}
	return (l = yamldoc_member_line(c->doc, parent, p)) ? l : line;
}

int
config_error(const struct config *c, char *err, size_t errlen,
    const char *key, const json_t *node, const char *fmt, ...)
{
	char msg[CONFIG_ERR_MAX];
	va_list ap;
	int line = 0;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (node && c->doc)
		line = yamldoc_line(c->doc, node);
	if (!line)
		line = key_line(c, key);
	if (!err)
		return -EINVAL;
	if (line)
		snprintf(err, errlen, "%s:%d: %s: %s", c->path, line, key, msg);
	else
		snprintf(err, errlen, "%s: %s: %s", c->path, key, msg);
	return -EINVAL;
}

static int
set_str(char **dst, const char *s)
{
	char *p = strdup(s);

	if (!p)
		return -ENOMEM;
	free(*dst);
	*dst = p;
	return 0;
}

/* A string member, or -EINVAL naming it; absent leaves *dst as it is. */
static int
get_string(struct config *c, const json_t *obj, const char *member,
    const char *key, char **dst, char *err, size_t errlen)
{
	json_t *v = json_object_get(obj, member);

	if (!v || json_is_null(v))
		return 0;
	if (!json_is_string(v) || !json_string_length(v))
		return config_error(c, err, errlen, key, v, "must be a non-empty string");
	if (strlen(json_string_value(v)) != json_string_length(v))
		return config_error(c, err, errlen, key, v, "contains a NUL byte");
	return set_str(dst, json_string_value(v));
}

static int
get_uint(struct config *c, const json_t *obj, const char *member,
    const char *key, unsigned long long lo, unsigned long long hi,
    unsigned long long *dst, char *err, size_t errlen)
{
	json_t *v = json_object_get(obj, member);

	if (!v || json_is_null(v))
		return 0;
	if (!json_is_integer(v) || json_integer_value(v) < 0 ||
	    (unsigned long long)json_integer_value(v) < lo ||
	    (unsigned long long)json_integer_value(v) > hi)
		return config_error(c, err, errlen, key, v,
		    "must be an integer from %llu to %llu", lo, hi);
	*dst = (unsigned long long)json_integer_value(v);
	return 0;
}

static int
check_keys(struct config *c, const json_t *obj, const char *prefix,
    const char *const *allowed, char *err, size_t errlen)
{
	const char *k;
	json_t *v;
	char key[300];

	json_object_foreach((json_t *)obj, k, v) {
		if (in_list(allowed, k))
			continue;
		snprintf(key, sizeof(key), "%s%s%.200s", prefix, *prefix ? "." : "", k);
		return config_error(c, err, errlen, key, NULL, "unknown key");
	}
	return 0;
}

/* --- http: per-client keys (issue 23) --- */

/* "ADDR" or "ADDR/BITS", IPv4 or IPv6: 0 or -EINVAL. */
static int
parse_cidr(const char *s, struct config_cidr *out)
{
	char addr[INET6_ADDRSTRLEN + 1], *end;
	const char *slash = strchr(s, '/');
	size_t n = slash ? (size_t)(slash - s) : strlen(s);
	unsigned long bits;
	unsigned max;

	if (n == 0 || n >= sizeof(addr))
		return -EINVAL;
	memcpy(addr, s, n);
	addr[n] = '\0';
	memset(out, 0, sizeof(*out));
	if (inet_pton(AF_INET, addr, out->addr) == 1)
		out->family = AF_INET, max = 32;
	else if (inet_pton(AF_INET6, addr, out->addr) == 1)
		out->family = AF_INET6, max = 128;
	else
		return -EINVAL;
	out->bits = max;
	if (slash) {
		errno = 0;
		bits = strtoul(slash + 1, &end, 10);
		if (!slash[1] || *end || errno || bits > max || slash[1] == '-' ||
		    slash[1] == '+')
			return -EINVAL;
		out->bits = (unsigned)bits;
	}
	return 0;
}

/*
 * Whether a trusted proxy network is wider than any set of proxies: IPv4
 * shorter than /8, IPv6 shorter than /8 (fd00::/8 is all of the unique
 * local addresses), and an IPv6 network that holds IPv4 addresses judged
 * by its IPv4 part: the IPv4-mapped (::ffff:0:0/96), IPv4-compatible
 * (::/96), NAT64 (64:ff9b::/96) and 6to4 (2002::/16) prefixes, whole
 * (::/80 holds all of ::ffff:0:0/96) or with fewer than 8 bits of their
 * IPv4 part fixed.
 */
static int
cidr_too_wide(const struct config_cidr *n)
{
	static const struct {
		unsigned char addr[16];
		int bits;		/* the prefix's length */
		int v4;			/* where its IPv4 part starts */
	} embed[] = {
		{ { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff }, 96, 96 },
		{ { 0 }, 96, 96 },
		{ { 0, 0x64, 0xff, 0x9b }, 96, 96 },
		{ { 0x20, 0x02 }, 16, 16 },
	};

	if (n->family == AF_INET)
		return n->bits < CONFIG_MIN_PROXY_BITS4;
	if (n->bits < CONFIG_MIN_PROXY_BITS6)
		return 1;
	for (size_t i = 0; i < sizeof(embed) / sizeof(embed[0]); i++) {
		int bits = (int)n->bits, common = bits < embed[i].bits ? bits : embed[i].bits, b;

		/* Do the first `common` bits of the network and the prefix agree? */
		for (b = 0; b < common; b++)
			if ((n->addr[b / 8] ^ embed[i].addr[b / 8]) & (0x80 >> (b % 8)))
				break;
		if (b < common)
			continue;
		if (bits - embed[i].v4 < CONFIG_MIN_PROXY_BITS4)
			return 1;
	}
	return 0;
}

static int
load_http_clients(struct config *c, const json_t *h, char *err, size_t errlen)
{
	struct config_http *hp = &c->http;
	const json_t *list = json_object_get(h, "trusted_proxies"), *v;
	size_t i;

	if (!hp->max_buffered_bytes_per_ip) {
		hp->max_buffered_bytes_per_ip = hp->max_buffered_bytes / 8;
		if (hp->max_buffered_bytes_per_ip < hp->max_body_bytes)
			hp->max_buffered_bytes_per_ip = hp->max_body_bytes;
	} else if (hp->max_buffered_bytes_per_ip < hp->max_body_bytes ||
	    hp->max_buffered_bytes_per_ip > hp->max_buffered_bytes) {
		return config_error(c, err, errlen, "http.max_buffered_bytes_per_ip",
		    NULL, "must be from http.max_body_bytes (%zu) to "
		    "http.max_buffered_bytes (%zu)", hp->max_body_bytes,
		    hp->max_buffered_bytes);
	}
	/*
	 * Room for a small body on every connection at once, so that no
	 * number of bodies under way can keep a small one out of memory
	 * (the third outside attack's F3): larger bodies may not take it.
	 * Capped so that one largest body still fits beside it.
	 */
	if (!hp->small_body_bytes) {
		hp->small_body_bytes = 256u << 10;
		if (hp->small_body_bytes > hp->max_body_bytes)
			hp->small_body_bytes = hp->max_body_bytes;
	} else if (hp->small_body_bytes > hp->max_body_bytes) {
		return config_error(c, err, errlen, "http.small_body_bytes", NULL,
		    "must be at most http.max_body_bytes (%zu)", hp->max_body_bytes);
	}
	hp->small_body_reserve = (size_t)hp->max_connections * hp->small_body_bytes;
	if (hp->small_body_reserve > hp->max_buffered_bytes - hp->max_body_bytes)
		hp->small_body_reserve = hp->max_buffered_bytes - hp->max_body_bytes;
	if (!list || json_is_null(list))
		return 0;
	if (!json_is_array(list) || json_array_size(list) > CONFIG_MAX_PROXIES)
		return config_error(c, err, errlen, "http.trusted_proxies", list,
		    "must be a list of at most %d addresses or networks",
		    CONFIG_MAX_PROXIES);
	json_array_foreach(list, i, v) {
		if (!json_is_string(v) || parse_cidr(json_string_value(v),
		    &hp->trusted_proxies[i]) < 0)
			return config_error(c, err, errlen, "http.trusted_proxies", v,
			    "'%s' is not an address or ADDR/BITS",
			    json_is_string(v) ? json_string_value(v) : "?");
		if (cidr_too_wide(&hp->trusted_proxies[i]))
			return config_error(c, err, errlen, "http.trusted_proxies", v,
			    "'%s' is too wide: every address in it may set its "
			    "identity by X-Forwarded-For and escape the per-client "
			    "limits; name the proxies (IPv4 at least /%d, IPv6 at "
			    "least /%d)", json_string_value(v), CONFIG_MIN_PROXY_BITS4,
			    CONFIG_MIN_PROXY_BITS6);
	}
	hp->n_trusted_proxies = json_array_size(list);
	return 0;
}

/* --- end of http's per-client keys --- */

static int
load_http(struct config *c, const json_t *h, char *err, size_t errlen)
{
	static const char *const keys[] = { "max_body_bytes", "max_buffered_bytes",
		"max_header_bytes",
		"max_connections", "max_connections_per_ip",
		"connection_timeout_s", "request_timeout_s", "threads",
		"head_timeout_s", "min_body_bytes_per_s", "max_buffered_bytes_per_ip",
		"small_body_bytes", "trusted_proxies", NULL };
	unsigned long long v;
	int error;

	c->http.max_buffered_bytes_per_ip = 0;	/* unless given: derived */
	c->http.small_body_bytes = 0;		/* likewise */
	if (!h || json_is_null(h))
		return load_http_clients(c, NULL, err, errlen);
	if (!json_is_object(h))
		return config_error(c, err, errlen, "http", h, "must be a mapping");
	if ((error = check_keys(c, h, "http", keys, err, errlen)) < 0)
		return error;
#define UINT(name, lo, hi, field) do { \
	v = c->http.field; \
	if ((error = get_uint(c, h, name, "http." name, lo, hi, &v, err, errlen)) < 0) \
		return error; \
	c->http.field = v; \
} while (0)
	UINT("max_body_bytes", 1024, CONFIG_MAX_BODY_LIMIT, max_body_bytes);
	UINT("max_buffered_bytes", 1024, CONFIG_MAX_BUFFERED_LIMIT, max_buffered_bytes);
	UINT("max_header_bytes", 4096, 1u << 20, max_header_bytes);
	UINT("max_connections", 1, 65536, max_connections);
	UINT("max_connections_per_ip", 1, 65536, max_connections_per_ip);
	UINT("connection_timeout_s", 1, 3600, connection_timeout_s);
	UINT("request_timeout_s", 1, 3600, request_timeout_s);
	UINT("threads", 1, 256, threads);
	UINT("head_timeout_s", 1, 3600, head_timeout_s);
	UINT("min_body_bytes_per_s", 1, 1u << 30, min_body_bytes_per_s);
	UINT("max_buffered_bytes_per_ip", 1024, CONFIG_MAX_BUFFERED_LIMIT,
	    max_buffered_bytes_per_ip);
	UINT("small_body_bytes", 1024, CONFIG_MAX_BODY_LIMIT, small_body_bytes);
#undef UINT
	if (c->http.max_buffered_bytes < c->http.max_body_bytes)
		return config_error(c, err, errlen, "http.max_buffered_bytes", NULL,
		    "must be at least http.max_body_bytes (%zu)", c->http.max_body_bytes);
	/* one client may not hold every connection; unset, it is capped */
	if (c->http.max_connections_per_ip > c->http.max_connections) {
		if (json_object_get(h, "max_connections_per_ip"))
			return config_error(c, err, errlen,
			    "http.max_connections_per_ip", NULL, "must be at most "
			    "http.max_connections (%u): one client could hold every "
			    "connection", c->http.max_connections);
		c->http.max_connections_per_ip = c->http.max_connections;
	}
	return load_http_clients(c, h, err, errlen);
}

/*
 * Why the body of an allow_repos pattern (after any "!") cannot do what
 * it says, or NULL. fnmatch(3) takes anything, so a '[' without its ']'
 * or a bare owner would silently match nothing.
 */
static const char *
allow_glob_error(const char *p)
{
	int in_class = 0;

	for (const char *q = p; *q; q++) {
		if (in_class) {
			if (*q == ']' && q[-1] != '[' && !(q[-1] == '!' && q[-2] == '['))
				in_class = 0;
			else if (!isalnum((unsigned char)*q) && !strchr("._-!^]", *q))
				return "has a character no repository name holds";
		} else if (*q == '[') {
			in_class = 1;
		} else if (!isalnum((unsigned char)*q) && !strchr("._-/*?", *q)) {
			return "has a character no repository name holds "
			    "(letters, digits, . _ - / and the globs * ? [...])";
		}
	}
	if (in_class)
		return "has a '[' without its ']'";
	if (!strchr(p, '/'))
		return "never matches: repositories are owner/name and '*' does "
		    "not match '/' (all of an owner's: 'owner/*', with GitLab "
		    "subgroups 'owner/**')";
	return NULL;
}

/*
 * Why a pattern's segments (after any "!") cannot be those of a
 * repository, or NULL: no name has an empty segment, a segment '.' or
 * '..', or one ending in '.' or ".git" (webhooks/event.c refuses those
 * with 400), so such a pattern matches nothing (the fourth outside
 * attack's F5). Looked at first: '/acme/x' is an empty owner, not every
 * owner.
 */
static const char *
allow_segment_error(const char *p)
{
	for (const char *seg = p, *end;; seg = end + 1) {
		size_t n;

		end = strchr(seg, '/');
		n = end ? (size_t)(end - seg) : strlen(seg);
		if (n == 0)
			return "has an empty segment ('//', or '/' at either end): "
			    "no repository name has one, so it never matches";
		if ((n == 1 && *seg == '.') || (n == 2 && !strncmp(seg, "..", 2)))
			return "has a segment '.' or '..': no repository name has "
			    "one, so it never matches";
		if (seg[n - 1] == '.' || (n >= 4 && !strncasecmp(seg + n - 4, ".git", 4)))
			return "has a segment ending in '.' or '.git': no repository "
			    "name ends so (a push naming one is refused), so it never "
			    "matches";
		if (!end)
			return NULL;
	}
}

/*
 * Whether a pattern's owner (its first segment) is nothing but globs, so
 * it takes every owner's repositories: '*', '*' '/' '*', '**' '/' '*'.
 */
static int
allow_any_owner(const char *p)
{
	for (; *p && *p != '/'; p++) {
		if (*p == '[') {
			while (*p && *p != ']')
				p++;
			if (!*p)
				return 0;
		} else if (*p != '*' && *p != '?') {
			return 0;
		}
	}
	return 1;
}

static int
load_allow(struct config *c, const json_t *a, char *err, size_t errlen)
{
	size_t i;
	json_t *v;

	if (!a || json_is_null(a))
		return 0;
	if (!json_is_array(a))
		return config_error(c, err, errlen, "allow_repos", a,
		    "must be a list of repository globs");
	if (json_array_size(a) > CONFIG_MAX_ALLOW)
		return config_error(c, err, errlen, "allow_repos", a,
		    "more than %d patterns", CONFIG_MAX_ALLOW);
	if (!(c->allow = calloc(json_array_size(a) + 1, sizeof(*c->allow))))
		return -ENOMEM;
	json_array_foreach(a, i, v) {
		const char *s = json_string_value(v);
		const char *body = s && *s == '!' ? s + 1 : s;
		const char *why;

		if (!s || !*body || strlen(s) != json_string_length(v) ||
		    strchr(s, ' '))
			return config_error(c, err, errlen, "allow_repos", v,
			    "each entry must be a glob like 'owner/*' or '!owner/name'");
		if ((why = allow_segment_error(body)))
			return config_error(c, err, errlen, "allow_repos", v,
			    "'%.200s' %s", s, why);
		if (*s != '!' && allow_any_owner(body))
			return config_error(c, err, errlen, "allow_repos", v,
			    "'%.200s' matches every owner's repositories: anyone "
			    "who learns a webhook secret could queue any repository; "
			    "name the owners ('owner/*')", s);
		if ((why = allow_glob_error(body)))
			return config_error(c, err, errlen, "allow_repos", v,
			    "'%.200s' %s", s, why);
		if (!(c->allow[c->n_allow] = strdup(s)))
			return -ENOMEM;
		c->n_allow++;
	}
	return 0;
}

/*
 * Read a secret file: a regular file (a FIFO is refused, not waited on),
 * not under /proc or /sys (buf_read_secret), of at most CONFIG_MAX_SECRET
 * bytes, trailing whitespace cut.
 */
static int
read_secret_file(const char *path, char **out, size_t *outlen)
{
	struct buf b = BUF_INIT(CONFIG_MAX_SECRET);
	int error;

	if ((error = buf_read_secret(&b, path)) < 0)
		goto out;
	while (b.len && isspace((unsigned char)b.data[b.len - 1]))
		b.len--;
	if (b.len)
		b.data[b.len] = '\0';
	*outlen = b.len;
	*out = buf_detach(&b, NULL);
out:
	if (b.data)
		explicit_bzero(b.data, b.cap);
	buf_free(&b);
	return error;
}

/*
 * The intake secret of one forge: webhook_secret_* or webhook_token_*
 * (GitHub and Gitea call it a secret, GitLab a token; either name works),
 * from a file or an environment variable, exactly one of them.
 */
static int
load_forge_secret(struct config *c, const json_t *fo, enum config_forge f,
    int flags, char *err, size_t errlen)
{
	static const char *const names[] = { "webhook_secret_file",
		"webhook_token_file", "webhook_secret_env", "webhook_token_env" };
	const char *which = NULL;
	char key[128], *secret = NULL;
	json_t *v = NULL;
	size_t len = 0;
	int error;

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		json_t *x = json_object_get(fo, names[i]);
		if (!x || json_is_null(x))
			continue;
		snprintf(key, sizeof(key), "forges.%s.%s", forge_names[f], names[i]);
		if (which)
			return config_error(c, err, errlen, key, x,
			    "only one of webhook_secret_file, webhook_token_file, "
			    "webhook_secret_env, webhook_token_env may be set");
		if (!json_is_string(x) || !json_string_length(x))
			return config_error(c, err, errlen, key, x,
			    "must be a non-empty string");
		which = names[i];
		v = x;
	}
	if (!which || (flags & CONFIG_NO_SECRETS))
		return 0;
	snprintf(key, sizeof(key), "forges.%s.%s", forge_names[f], which);
	if (strstr(which, "_file")) {
		if ((error = read_secret_file(json_string_value(v), &secret, &len)) < 0)
			return config_error(c, err, errlen, key, v,
			    "cannot read '%s': %s", json_string_value(v),
			    error == -EFBIG ? "larger than 4096 bytes" :
			    error == -EINVAL ? "not a regular file" :
			    error == -EPERM ? BUF_SECRET_KERNEL_MSG : strerror(-error));
	} else {
		const char *e = getenv(json_string_value(v));
		if (!e)
			return config_error(c, err, errlen, key, v,
			    "environment variable %s is not set", json_string_value(v));
		if ((len = strlen(e)) > CONFIG_MAX_SECRET)
			return config_error(c, err, errlen, key, v,
			    "the secret is longer than %d bytes", CONFIG_MAX_SECRET);
		if (!(secret = strdup(e)))
			return -ENOMEM;
	}
	if (len < CONFIG_MIN_SECRET) {
		explicit_bzero(secret, len);
		free(secret);
		return config_error(c, err, errlen, key, v,
		    "the secret is %s; use at least %d random bytes",
		    len ? "too short" : "empty", CONFIG_MIN_SECRET);
	}
	c->secret[f] = secret;
	c->secret_len[f] = len;
	return 0;
}

/*
 * local_clone_urls: whether this forge's pushes may name a clone URL on
 * this host (file:// or a path); a forge never sends one, so only the
 * local forge (driver: local) and tests against fakes do. Default: true
 * for driver: local, false otherwise.
 */
static int
load_local_clone(struct config *c, const json_t *fo, enum config_forge f,
    char *err, size_t errlen)
{
	const json_t *v = json_object_get(fo, "local_clone_urls");
	const json_t *drv = json_object_get(fo, "driver");
	char key[128];

	c->local_clone[f] = json_is_string(drv) &&
	    !strcmp(json_string_value(drv), "local");
	if (!v || json_is_null(v))
		return 0;
	snprintf(key, sizeof(key), "forges.%s.local_clone_urls", forge_names[f]);
	if (!json_is_boolean(v))
		return config_error(c, err, errlen, key, v, "must be true or false");
	c->local_clone[f] = json_is_true(v);
	return 0;
}

static int
load_forges(struct config *c, const json_t *fs, int flags, char *err,
    size_t errlen)
{
	const char *name;
	json_t *fo;
	char key[300];
	int error;

	if (!fs || json_is_null(fs))
		return 0;
	if (!json_is_object(fs))
		return config_error(c, err, errlen, "forges", fs, "must be a mapping");
	json_object_foreach((json_t *)fs, name, fo) {
		snprintf(key, sizeof(key), "forges.%.200s", name);
		if (!in_list(known_forges, name))
			return config_error(c, err, errlen, key, NULL,
			    "unknown forge (github, gitlab, gitea, local)");
		if (json_is_null(fo))
			continue;
		if (!json_is_object(fo))
			return config_error(c, err, errlen, key, fo, "must be a mapping");
		if ((error = check_keys(c, fo, key, forge_keys, err, errlen)) < 0)
			return error;
		for (int f = 0; f < CONFIG_N_FORGES; f++)
			if (!strcmp(name, forge_names[f]) &&
			    ((error = load_forge_secret(c, fo, (enum config_forge)f,
			    flags, err, errlen)) < 0 ||
			    (error = load_local_clone(c, fo, (enum config_forge)f,
			    err, errlen)) < 0))
				return error;
	}
	return 0;
}

static int
config_validate(struct config *c, int flags, char *err, size_t errlen)
{
	json_t *root = yamldoc_root(c->doc);
	struct sockaddr_storage ss;
	socklen_t sl;
	enum log_level lvl;
	int error;

	if (json_is_null(root))
		return 0;	/* an empty file: all defaults */
	if (!json_is_object(root)) {
		snprintf(err, errlen, "%s:%d: the configuration must be a mapping",
		    c->path, yamldoc_line(c->doc, root));
		return -EINVAL;
	}
	if ((error = check_keys(c, root, "", top_keys, err, errlen)) < 0 ||
	    (error = get_string(c, root, "listen", "listen", &c->listen, err, errlen)) < 0 ||
	    (error = get_string(c, root, "data_dir", "data_dir", &c->data_dir, err, errlen)) < 0 ||
	    (error = get_string(c, root, "log_file", "log_file", &c->log_file, err, errlen)) < 0 ||
	    (error = get_string(c, root, "log_level", "log_level", &c->log_level, err, errlen)) < 0)
		return error;
	if (config_parse_listen(c->listen, &ss, &sl) < 0)
		return config_error(c, err, errlen, "listen", NULL,
		    "'%s' is not ADDR:PORT (e.g. 127.0.0.1:8080, [::1]:8080, *:8080)",
		    c->listen);
	if ((ss.ss_family == AF_INET ? ((struct sockaddr_in *)&ss)->sin_port :
	    ((struct sockaddr_in6 *)&ss)->sin6_port) == 0)
		return config_error(c, err, errlen, "listen", NULL,
		    "'%s': port 0 listens on whatever port the kernel picks, "
		    "which no forge's webhook can be pointed at; name the port",
		    c->listen);
	if (log_level_parse(c->log_level, &lvl) < 0)
		return config_error(c, err, errlen, "log_level", NULL,
		    "'%s' is not one of debug, info, warn, error", c->log_level);
	if ((error = load_http(c, json_object_get(root, "http"), err, errlen)) < 0 ||
	    (error = load_allow(c, json_object_get(root, "allow_repos"), err, errlen)) < 0 ||
	    (error = load_forges(c, json_object_get(root, "forges"), flags, err, errlen)) < 0)
		return error;
	return 0;
}

int
config_parse(const char *name, const char *data, size_t len, int flags,
    struct config **out, char *err, size_t errlen)
{
	struct config *c;
	int error;

	if (!(c = config_new(name)))
		return -ENOMEM;
	if ((error = yamldoc_parse(name, data, len, &c->doc, err, errlen)) < 0 ||
	    (error = config_validate(c, flags, err, errlen)) < 0) {
		config_free(c);
		return error;
	}
	*out = c;
	return 0;
}

int
config_load(const char *path, int flags, struct config **out, char *err,
    size_t errlen)
{
	struct config *c;
	int error;

	if (!(c = config_new(path)))
		return -ENOMEM;
	if ((error = yamldoc_load(path, &c->doc, err, errlen)) == -EISDIR) {
		/* a mistake in the command line, as a FIFO's is (exit 2) */
		snprintf(err, errlen, "%s: a directory, not a configuration file",
		    path);
		error = -EINVAL;
	}
	if (error < 0 || (error = config_validate(c, flags, err, errlen)) < 0) {
		config_free(c);
		return error;
	}
	*out = c;
	return 0;
}

int
config_default(struct config **out)
{
	struct config *c = config_new("(defaults)");

	if (!c)
		return -ENOMEM;
	*out = c;
	return 0;
}

const char *config_listen(const struct config *c) { return c->listen; }
const char *config_data_dir(const struct config *c) { return c->data_dir; }
const char *config_log_file(const struct config *c) { return c->log_file; }
const char *config_log_level(const struct config *c) { return c->log_level; }
const struct config_http *config_http(const struct config *c) { return &c->http; }

int
config_set_listen(struct config *c, const char *listen)
{
	struct sockaddr_storage ss;
	socklen_t sl;

	if (config_parse_listen(listen, &ss, &sl) < 0)
		return -EINVAL;
	return set_str(&c->listen, listen);
}

int
config_set_data_dir(struct config *c, const char *dir)
{
	if (!*dir)
		return -EINVAL;
	c->data_dir_cli = 1;
	return set_str(&c->data_dir, dir);
}

int
config_data_dir_cli(const struct config *c)
{
	return c->data_dir_cli;
}

const char *
config_forge_secret(const struct config *c, enum config_forge f, size_t *len)
{
	if (f >= CONFIG_N_FORGES || !c->secret[f])
		return NULL;
	if (len)
		*len = c->secret_len[f];
	return c->secret[f];
}

/*
 * Match segment by segment: a segment "**" takes one or more whole
 * segments; any other is an fnmatch(3) glob of one segment, so '*', '?'
 * and '[...]' never match '/'. 1 on a match.
 */
static int
allow_match(const char *p, const char *r)
{
	const char *pe = strchr(p, '/'), *re = strchr(r, '/');
	size_t pl = pe ? (size_t)(pe - p) : strlen(p);
	char seg[256];

	if (pl == 2 && !strncmp(p, "**", 2)) {
		if (!pe)
			return 1;	/* the rest, one segment or more */
		for (; re; re = strchr(re + 1, '/'))
			if (allow_match(pe + 1, re + 1))
				return 1;
		return 0;
	}
	if (pl >= sizeof(seg))
		return 0;
	memcpy(seg, p, pl);
	seg[pl] = '\0';
	if (!re != !pe)
		return 0;
	if (re) {
		char name[256];
		size_t rl = (size_t)(re - r);

		if (rl >= sizeof(name))
			return 0;
		memcpy(name, r, rl);
		name[rl] = '\0';
		return fnmatch(seg, name, FNM_CASEFOLD) == 0 &&
		    allow_match(pe + 1, re + 1);
	}
	return fnmatch(seg, r, FNM_CASEFOLD) == 0;
}

int
config_forge_local_clone(const struct config *c, enum config_forge f)
{
	return f < CONFIG_N_FORGES && c->local_clone[f];
}

int
config_repo_allowed(const struct config *c, const char *repo)
{
	int allowed = 0;

	if (!repo || !*repo)
		return 0;
	for (size_t i = 0; i < c->n_allow; i++) {
		const char *p = c->allow[i];
		if (*p == '!') {
			if (allow_match(p + 1, repo))
				return 0;
		} else if (allow_match(p, repo)) {
			allowed = 1;
		}
	}
	return allowed;
}

size_t
config_allow_count(const struct config *c)
{
	return c->n_allow;
}

int
config_parse_listen(const char *s, struct sockaddr_storage *out,
    socklen_t *outlen)
{
	struct sockaddr_storage ss;
	char host[64];
	const char *colon, *port_s;
	char *end;
	unsigned long port;
	size_t hl;

	memset(&ss, 0, sizeof(ss));
	if (*s == '[') {
		const char *rb = strchr(s, ']');
		if (!rb || rb[1] != ':')
			return -EINVAL;
		hl = (size_t)(rb - s - 1);
		if (hl >= sizeof(host))
			return -EINVAL;
		memcpy(host, s + 1, hl);
		host[hl] = '\0';
		port_s = rb + 2;
	} else {
		if (!(colon = strrchr(s, ':')))
			return -EINVAL;
		hl = (size_t)(colon - s);
		if (hl >= sizeof(host))
			return -EINVAL;
		memcpy(host, s, hl);
		host[hl] = '\0';
		port_s = colon + 1;
	}
	if (!*port_s || !isdigit((unsigned char)*port_s))
		return -EINVAL;
	errno = 0;
	port = strtoul(port_s, &end, 10);
	if (errno || *end || port > 65535)
		return -EINVAL;
	if (*s == '[') {
		struct sockaddr_in6 *a6 = (struct sockaddr_in6 *)&ss;
		if (inet_pton(AF_INET6, host, &a6->sin6_addr) != 1)
			return -EINVAL;
		a6->sin6_family = AF_INET6;
		a6->sin6_port = htons((uint16_t)port);
		*outlen = sizeof(*a6);
	} else {
		struct sockaddr_in *a4 = (struct sockaddr_in *)&ss;
		if (!strcmp(host, "*") || !*host)
			a4->sin_addr.s_addr = htonl(INADDR_ANY);
		else if (inet_pton(AF_INET, host, &a4->sin_addr) != 1)
			return -EINVAL;
		a4->sin_family = AF_INET;
		a4->sin_port = htons((uint16_t)port);
		*outlen = sizeof(*a4);
	}
	*out = ss;
	return 0;
}
