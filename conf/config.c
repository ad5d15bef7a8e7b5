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
#include "conf/config_int.h"

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

int
config_in_list(const char *const *list, const char *s)
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

int
config_get_uint(struct config *c, const json_t *obj, const char *member,
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

int
config_check_keys(struct config *c, const json_t *obj, const char *prefix,
    const char *const *allowed, char *err, size_t errlen)
{
	const char *k;
	json_t *v;
	char key[300];

	json_object_foreach((json_t *)obj, k, v) {
		if (config_in_list(allowed, k))
			continue;
		snprintf(key, sizeof(key), "%s%s%.200s", prefix, *prefix ? "." : "", k);
		return config_error(c, err, errlen, key, NULL, "unknown key");
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
		if (!config_in_list(known_forges, name))
			return config_error(c, err, errlen, key, NULL,
			    "unknown forge (github, gitlab, gitea, local)");
		if (json_is_null(fo))
			continue;
		if (!json_is_object(fo))
			return config_error(c, err, errlen, key, fo, "must be a mapping");
		if ((error = config_check_keys(c, fo, key, forge_keys, err, errlen)) < 0)
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
	if ((error = config_check_keys(c, root, "", top_keys, err, errlen)) < 0 ||
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
	if ((error = config_load_http(c, json_object_get(root, "http"), err, errlen)) < 0 ||
	    (error = config_load_allow(c, json_object_get(root, "allow_repos"), err, errlen)) < 0 ||
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
