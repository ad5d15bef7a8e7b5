/*
 * config: the server configuration (docs/configuration.md), read from a YAML
 * file through yamldoc.
 *
 * This module validates the keys the daemon's front door needs (listen,
 * data_dir, allow_repos, log_file, log_level, http.*, the webhook secrets
 * under forges.*) and keeps the whole tree, so the modules that own the
 * other sections (runners, sandbox, llm, budgets, schedule, archive, python,
 * the forge clients' keys) read and validate them from config_tree() and
 * report problems with config_error(), in the same "FILE:LINE: KEY: message"
 * form; cli/config_check.h has all of them check the file at once, before
 * serve listens. Unknown top-level keys are refused: a typo must not
 * silently turn a setting off.
 *
 * Secrets (webhook secrets and tokens) are read from files or environment
 * variables at load time, kept in memory only, never logged and never put
 * in the tree.
 */
#ifndef KB_CONF_CONFIG_H
#define KB_CONF_CONFIG_H

#include <jansson.h>
#include <stddef.h>
#include <sys/socket.h>

#define CONFIG_DEFAULT_PATH	"/etc/kernelbot/kernelbot.yml"
#define CONFIG_DEFAULT_LISTEN	"127.0.0.1:8080"
#define CONFIG_DEFAULT_DATA_DIR	"/var/lib/kernelbot"

/* Named limits on what the file may ask for. */
#define CONFIG_MAX_SECRET	4096		/* bytes of a secret file */
#define CONFIG_MIN_SECRET	16		/* shorter secrets are guessable */
#define CONFIG_MAX_ALLOW	1024		/* allow_repos patterns */
#define CONFIG_MAX_BODY_LIMIT	(256u << 20)	/* http.max_body_bytes ceiling */
#define CONFIG_MAX_BUFFERED_LIMIT (16ull << 30)	/* http.max_buffered_bytes ceiling */
#define CONFIG_ERR_MAX		512		/* a good size for error buffers */

/* The forges whose webhooks kernelbot takes; indexes config_forge_*. */
enum config_forge {
	CONFIG_GITHUB,
	CONFIG_GITLAB,
	CONFIG_GITEA,
	CONFIG_N_FORGES,
};

#define CONFIG_MAX_PROXIES	64		/* http.trusted_proxies entries */
#define CONFIG_MIN_PROXY_BITS4	8		/* narrowest allowed: 10.0.0.0/8 */
#define CONFIG_MIN_PROXY_BITS6	8		/* fd00::/8, all unique local */

/* An address or network: http.trusted_proxies' "ADDR" or "ADDR/BITS". */
struct config_cidr {
	int family;			/* AF_INET or AF_INET6 */
	unsigned char addr[16];		/* network order; 4 bytes for AF_INET */
	unsigned bits;			/* prefix length */
};

/* Limits of the HTTP intake (section `http:`), all with defaults. */
struct config_http {
	size_t max_body_bytes;		/* default 25 MiB */
	size_t max_buffered_bytes;	/* request bodies in memory at once, all connections; default 256 MiB */
	size_t max_header_bytes;	/* per-connection memory for headers; default 32 KiB */
	unsigned max_connections;	/* default 256 */
	unsigned max_connections_per_ip; /* default 64 */
	unsigned connection_timeout_s;	/* idle time before a connection is closed; default 10 */
	unsigned request_timeout_s;	/* whole request, first byte of body to last; default 30 */
	unsigned threads;		/* HTTP worker threads; default 8 */
	/* Against slow and crowding clients (issue 23): */
	unsigned head_timeout_s;	/* request line and headers must be in within; default 10 */
	size_t min_body_bytes_per_s;	/* slowest body allowed, on average; default 1024 */
	size_t max_buffered_bytes_per_ip; /* one client's share of max_buffered_bytes */
	size_t small_body_bytes;	/* a body declaring at most this may use the reserve; default 256 KiB */
	size_t small_body_reserve;	/* derived: max_buffered_bytes larger bodies leave to small ones */
	struct config_cidr trusted_proxies[CONFIG_MAX_PROXIES]; /* whose X-Forwarded-For is believed */
	size_t n_trusted_proxies;
};

struct config;

/* Flags for config_parse/config_load. */
#define CONFIG_NO_SECRETS 1	/* do not read secret files or variables (fuzzing, `jobs`) */

/*
 * Load and validate a configuration file. 0 and *out, or -EINVAL with
 * "FILE:LINE: KEY: message" in err (FILE:LINE:COL for YAML syntax), or
 * -errno when the file cannot be read.
 */
int config_load(const char *path, int flags, struct config **out, char *err,
    size_t errlen);

/* The same from memory; `name` stands for the file in messages. */
int config_parse(const char *name, const char *data, size_t len, int flags,
    struct config **out, char *err, size_t errlen);

/* A configuration of defaults only, for commands run without --config. */
int config_default(struct config **out);

void config_free(struct config *c);

/* The whole tree (a JSON object, possibly empty); borrowed. */
json_t *config_tree(const struct config *c);

/*
 * Format "FILE:LINE: KEY: message" into err and return -EINVAL, for any
 * module validating its part of the tree. `key` is the dotted path from the
 * root ("forges.github.api_url"); its line is found in the document, or,
 * for a key the file lacks, the line of the nearest section above it that
 * it has. When `node` is non-NULL and carries a line (an array element,
 * say) that line is used instead. Without a line the form is "FILE: KEY:
 * message".
 */
int config_error(const struct config *c, char *err, size_t errlen,
    const char *key, const json_t *node, const char *fmt, ...)
    __attribute__((format(printf, 6, 7)));

/* The file name given to load/parse ("(defaults)" for config_default). */
const char *config_path(const struct config *c);

/* listen, data_dir, log_file (NULL: stderr) and log_level. */
const char *config_listen(const struct config *c);
const char *config_data_dir(const struct config *c);
const char *config_log_file(const struct config *c);
const char *config_log_level(const struct config *c);
const struct config_http *config_http(const struct config *c);

/* Command-line overrides; the string is copied. 0, -EINVAL (bad address), -ENOMEM. */
int config_set_listen(struct config *c, const char *listen);
int config_set_data_dir(struct config *c, const char *dir);
/* Whether data_dir is config_set_data_dir()'s (serve --data-dir), not the file's. */
int config_data_dir_cli(const struct config *c);

/*
 * The webhook secret (GitHub, Gitea) or token (GitLab) of a forge, and its
 * length; NULL when that forge's intake is not configured. Borrowed.
 */
const char *config_forge_secret(const struct config *c, enum config_forge f,
    size_t *len);

/*
 * Whether forge f's push deliveries may name a clone URL on this host
 * (file:// or an absolute path): forges.NAME.local_clone_urls, default
 * true only for driver: local. Other forges' must be https, http, ssh or
 * git URLs.
 */
int config_forge_local_clone(const struct config *c, enum config_forge f);

/* "github", "gitlab", "gitea". */
const char *config_forge_name(enum config_forge f);

/*
 * Whether repository `repo` ("owner/name", GitLab "group/sub/name") passes
 * allow_repos: it must match at least one pattern and no "!pattern".
 * Patterns are matched a `/`-separated segment at a time, case-insensitive:
 * each segment an fnmatch(3) glob in which `*`, `?` and `[...]` never
 * match `/` (so "acme/" "*" takes acme/x, never acme/../../etc nor
 * acme/sub/x), and a segment "**" one or more whole segments (GitLab
 * subgroups: "acme/" "**"). An empty list allows nothing.
 */
int config_repo_allowed(const struct config *c, const char *repo);
size_t config_allow_count(const struct config *c);

/*
 * Parse "ADDR:PORT" ("127.0.0.1:8080", "[::1]:8080", "*:8080" for every
 * address) into a socket address. 0 or -EINVAL.
 */
int config_parse_listen(const char *s, struct sockaddr_storage *out,
    socklen_t *outlen);

#endif
