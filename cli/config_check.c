#include "cli/config_check.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "coord/coord.h"
#include "pipeline/optimize/optimize_llm.h"
#include "common/crypto.h"
#include "common/jsonx.h"
#include "gitops/forge.h"
#include "pipeline/llm/client.h"

/* The repository a forge client is opened for to check its settings. */
#define CHECK_REPO "kernelbot/config-check"

/* Open files serve keeps beside its connections: store, logs, clients. */
#define FD_RESERVE 128

static const char *const secret_keys[] = { "webhook_secret_file",
	"webhook_secret_env", "webhook_token_file", "webhook_token_env",
	"token_file", "token_env", "private_key_file", "api_key_file",
	"api_key_env", NULL };

int
config_check_secret_key(const char *key)
{
	for (const char *const *k = secret_keys; *k; k++)
		if (!strcmp(*k, key))
			return 1;
	return 0;
}

/* Sections accepted at the top level that no code reads a key from. */
static int
check_unread(const struct config *c, char *err, size_t errlen)
{
	static const char *const names[] = { "sandbox", "archive", "python", NULL };
	const json_t *root = config_tree(c);

	for (const char *const *n = names; *n; n++) {
		const json_t *v = json_object_get(root, *n);
		const char *k;
		json_t *x;
		char key[300];

		if (!v || json_is_null(v))
			continue;
		if (!json_is_object(v))
			return config_error(c, err, errlen, *n, v, "must be a mapping");
		json_object_foreach((json_t *)v, k, x) {
			snprintf(key, sizeof(key), "%s.%.200s", *n, k);
			return config_error(c, err, errlen, key, x, "unknown key (no "
			    "setting is read from %s: yet; its options are command-line "
			    "flags)", *n);
		}
	}
	return 0;
}

/* --- the files serve opens (the fourth outside attack's F4, F6) --- */

static const char *
file_kind(mode_t m)
{
	return S_ISDIR(m) ? "a directory" : S_ISFIFO(m) ? "a FIFO" :
	    S_ISCHR(m) ? "a character device" : S_ISBLK(m) ? "a block device" :
	    S_ISSOCK(m) ? "a socket" : "not a regular file";
}

/* path's directory part into dir ("." for a bare name). */
static void
dir_of(const char *path, char *dir, size_t len)
{
	const char *slash = strrchr(path, '/');

	if (!slash)
		snprintf(dir, len, ".");
	else if (slash == path)
		snprintf(dir, len, "/");
	else
		snprintf(dir, len, "%.*s", (int)(slash - path), path);
}

/*
 * log_file: a regular file serve may append to, or a name not yet taken
 * in a directory it may create it in. Anything else would have serve
 * block in open() (a FIFO with no reader), write its log nowhere
 * (/dev/full, a terminal) or fail after the check passed (a missing
 * directory). Symbolic links are followed, as open() follows them.
 */
static int
check_log_file(const struct config *c, char *err, size_t errlen)
{
	const char *path = config_log_file(c);
	char dir[PATH_MAX];
	struct stat st;

	if (!path)
		return 0;
	if (stat(path, &st) == 0) {
		if (!S_ISREG(st.st_mode))
			return config_error(c, err, errlen, "log_file", NULL,
			    "'%s' is %s: the log must be a regular file (or a name "
			    "not yet taken in an existing directory)", path,
			    file_kind(st.st_mode));
		if (access(path, W_OK) < 0)
			return config_error(c, err, errlen, "log_file", NULL,
			    "cannot write '%s': %s", path, strerror(errno));
		return 0;
	}
	if (errno != ENOENT && errno != ENOTDIR)
		return config_error(c, err, errlen, "log_file", NULL,
		    "'%s': %s", path, strerror(errno));
	if (path[strlen(path) - 1] == '/')
		return config_error(c, err, errlen, "log_file", NULL,
		    "'%s' names a directory: the log must be a file", path);
	dir_of(path, dir, sizeof(dir));
	if (stat(dir, &st) < 0)
		return config_error(c, err, errlen, "log_file", NULL,
		    "the directory of '%s': %s (serve creates the file, not "
		    "its directory)", path, strerror(errno));
	if (!S_ISDIR(st.st_mode))
		return config_error(c, err, errlen, "log_file", NULL,
		    "the directory of '%s', '%s', is %s", path, dir,
		    S_ISREG(st.st_mode) ? "a file" : file_kind(st.st_mode));
	if (access(dir, W_OK | X_OK) < 0)
		return config_error(c, err, errlen, "log_file", NULL,
		    "cannot create '%s' in '%s': %s", path, dir, strerror(errno));
	return 0;
}

/*
 * data_dir: a directory, or a path serve can create it at (with its
 * parents): the nearest part of it that exists must be a directory.
 * Named as --data-dir when serve's command line gave it.
 */
static int
check_data_dir(const struct config *c, char *err, size_t errlen)
{
	const char *path = config_data_dir(c);
	char up[PATH_MAX], why[PATH_MAX + 200];
	struct stat st;

	why[0] = '\0';
	if (snprintf(up, sizeof(up), "%s", path) >= (int)sizeof(up))
		snprintf(why, sizeof(why), "'%.100s...' is longer than %d bytes",
		    path, PATH_MAX - 1);
	while (!why[0]) {
		char *slash;

		if (stat(up, &st) == 0) {
			if (S_ISDIR(st.st_mode))
				return 0;
			if (!strcmp(up, path))
				snprintf(why, sizeof(why), "'%s' is %s, not a directory",
				    path, S_ISREG(st.st_mode) ? "a file" :
				    file_kind(st.st_mode));
			else
				snprintf(why, sizeof(why), "'%s' cannot be created: "
				    "'%s' is %s, not a directory", path, up,
				    S_ISREG(st.st_mode) ? "a file" : file_kind(st.st_mode));
			break;
		}
		if (errno != ENOENT && errno != ENOTDIR) {
			snprintf(why, sizeof(why), "'%s': %s", up, strerror(errno));
			break;
		}
		/* one level up: drop trailing slashes, then the last part */
		while ((slash = strrchr(up, '/')) && slash[1] == '\0' && slash != up)
			*slash = '\0';
		if (!(slash = strrchr(up, '/')))
			return 0;	/* relative: the working directory exists */
		if (slash == up) {
			if (!up[1])
				return 0;
			up[1] = '\0';
		} else {
			*slash = '\0';
		}
	}
	if (config_data_dir_cli(c)) {
		snprintf(err, errlen, "--data-dir: %s", why);
		return -EINVAL;
	}
	return config_error(c, err, errlen, "data_dir", NULL, "%s", why);
}

/* One model's key, read and forgotten; the error names where it comes from. */
static int
check_key(const struct config *c, const struct llm_model *m,
    const json_t *mo, const char *pfx, char *err, size_t errlen)
{
	const char *name = m->key_env ? "api_key_env" : "api_key_file";
	char why[256], key[128];

	if (llm_model_key_check(m, why, sizeof(why)) == 0)
		return 0;
	snprintf(key, sizeof(key), "%s.%s", pfx, name);
	/* why starts with the key's own name: "api_key_file PATH: reason" */
	return config_error(c, err, errlen, key, json_object_get(mo, name), "%s",
	    strchr(why, ' ') ? strchr(why, ' ') + 1 : why);
}

/*
 * llm.prompts_dir, with models to ask: a directory holding the templates
 * (translate.md, which the installed directory is found by, a regular
 * file), not a path the first proposal would fail or block on.
 */
static int
check_prompts_dir(const struct config *c, const char *dir, char *err,
    size_t errlen)
{
	char path[PATH_MAX + 16];
	struct stat st;

	if (stat(dir, &st) < 0)
		return config_error(c, err, errlen, "llm.prompts_dir", NULL,
		    "'%s': %s", dir, strerror(errno));
	if (!S_ISDIR(st.st_mode))
		return config_error(c, err, errlen, "llm.prompts_dir", NULL,
		    "'%s' is %s, not a directory of prompt templates", dir,
		    S_ISREG(st.st_mode) ? "a file" : file_kind(st.st_mode));
	snprintf(path, sizeof(path), "%s/translate.md", dir);
	if (stat(path, &st) < 0 || !S_ISREG(st.st_mode) || access(path, R_OK) < 0)
		return config_error(c, err, errlen, "llm.prompts_dir", NULL,
		    "'%s' holds no readable translate.md: not a directory of "
		    "prompt templates (pipeline/prompts/ has them all)", dir);
	return 0;
}

static int
check_llm(const struct config *c, int flags, struct llm_config *lc, char *err,
    size_t errlen)
{
	const json_t *l = json_object_get(config_tree(c), "llm");
	char pfx[64];
	int error;

	if ((error = llm_config_load(c, lc, err, errlen)) < 0)
		return error;
	if (lc->prompts_dir && lc->n_models &&
	    (error = check_prompts_dir(c, lc->prompts_dir, err, errlen)) < 0)
		return error;
	if (flags & CONFIG_NO_SECRETS)
		return 0;
	for (size_t i = 0; i < lc->n_models; i++) {
		snprintf(pfx, sizeof(pfx), "llm.models[%zu]", i);
		if ((error = check_key(c, &lc->models[i], json_array_get(
		    json_object_get(l, "models"), i), pfx, err, errlen)) < 0)
			return error;
	}
	if (lc->embed.model &&
	    (error = check_key(c, &lc->embed, json_object_get(l, "embeddings"),
	    "llm.embeddings", err, errlen)) < 0)
		return error;
	return 0;
}

/*
 * A driver's "forges.DRIVER[.KEY]: reason" as "FILE:LINE: forges.NAME[.KEY]:
 * reason": the section may be named for another driver (driver: local).
 */
static int
forge_error(const struct config *c, const char *name, const char *driver,
    const char *why, char *err, size_t errlen)
{
	size_t dl = strlen(driver);
	const char *rest = why + 7 + dl, *colon;
	char key[300];

	if (!strncmp(why, "forges.", 7) && !strncmp(why + 7, driver, dl) &&
	    (*rest == '.' || *rest == ':') && (colon = strstr(rest, ": "))) {
		snprintf(key, sizeof(key), "forges.%.100s%.*s", name,
		    (int)(colon - rest) > 150 ? 150 : (int)(colon - rest), rest);
		return config_error(c, err, errlen, key, NULL, "%s", colon + 2);
	}
	snprintf(key, sizeof(key), "forges.%.100s", name);
	return config_error(c, err, errlen, key, NULL, "%s", why);
}

/* Open each forge's client as the coordinator will, and close it again. */
static int
check_forges(const struct config *c, char *err, size_t errlen)
{
	const json_t *fs = json_object_get(config_tree(c), "forges");
	const char *name;
	json_t *conf;

	json_object_foreach((json_t *)fs, name, conf) {
		const char *driver = jsonx_str(conf, "driver", name);
		struct forge *f = NULL;
		char why[CONFIG_ERR_MAX];
		int error;

		if (!json_is_object(conf))
			continue;	/* a null section: config.c took it as absent */
		if ((error = forge_open(driver, conf, CHECK_REPO, &f, why,
		    sizeof(why))) < 0)
			return error == -ENOMEM ? error :
			    forge_error(c, name, driver, why, err, errlen);
		forge_close(f);
	}
	return 0;
}

/* The key forge f's webhook secret was read from, and its node. */
static const json_t *
secret_source(const struct config *c, enum config_forge f, char *key,
    size_t keylen)
{
	static const char *const names[] = { "webhook_secret_file",
		"webhook_token_file", "webhook_secret_env", "webhook_token_env",
		NULL };
	const json_t *fo = json_object_get(json_object_get(config_tree(c),
	    "forges"), config_forge_name(f)), *v;

	for (const char *const *n = names; *n; n++)
		if ((v = json_object_get(fo, *n)) && !json_is_null(v)) {
			snprintf(key, keylen, "forges.%s.%s", config_forge_name(f), *n);
			return v;
		}
	snprintf(key, keylen, "forges.%s", config_forge_name(f));
	return NULL;
}

/*
 * The key HMAC-SHA256 actually uses for secret s (RFC 2104): a key longer
 * than the 64-byte block is replaced by its SHA-256, and every key is
 * padded with zeros to the block. Two secrets with the same block sign
 * alike: "S" and "S\0", or a long L and SHA-256(L).
 */
static void
hmac_block(const char *s, size_t n, unsigned char out[64])
{
	memset(out, 0, 64);
	if (n > 64) {
		struct crypto_sha256 h;

		crypto_sha256_start(&h);
		crypto_sha256_add(&h, s, n);
		crypto_sha256_end(&h, out);
	} else {
		memcpy(out, s, n);
	}
}

/*
 * Each forge's webhook secret its own, compared as HMAC-SHA256 keys (two
 * files or a file and a variable with the same bytes, or bytes that make
 * the same HMAC key): with one key a delivery signed for one forge is
 * accepted by another's endpoint as new (attack F5), and GitLab's token,
 * sent in clear, would sign GitHub's deliveries.
 */
static int
check_secrets_distinct(const struct config *c, char *err, size_t errlen)
{
	for (int f = 1; f < CONFIG_N_FORGES; f++) {
		size_t lf, lg;
		const char *sf = config_forge_secret(c, (enum config_forge)f, &lf);
		unsigned char bf[64], bg[64];

		if (sf)
			hmac_block(sf, lf, bf);
		for (int g = 0; sf && g < f; g++) {
			const char *sg = config_forge_secret(c, (enum config_forge)g, &lg);
			char key[128], other[128];
			const json_t *v;

			if (!sg)
				continue;
			hmac_block(sg, lg, bg);
			if (memcmp(bf, bg, sizeof(bf)))
				continue;
			secret_source(c, (enum config_forge)g, other, sizeof(other));
			v = secret_source(c, (enum config_forge)f, key, sizeof(key));
			return config_error(c, err, errlen, key, v, "the same secret "
			    "as %s: give each forge its own, or a delivery signed "
			    "for one is taken by the other's endpoint as new", other);
		}
	}
	return 0;
}

/*
 * The open files serve needs for http.max_connections: the door's bound,
 * a quarter more for sockets ended and not yet closed, and room for the
 * store, the logs and the forge clients.
 */
unsigned long long
config_fd_need(const struct config *c)
{
	const struct config_http *h = config_http(c);

	return (unsigned long long)h->max_connections + h->max_connections / 4 +
	    16 + FD_RESERVE;
}

/*
 * config_fd_need() against RLIMIT_NOFILE's hard limit, which serve raises
 * its soft limit towards (config_fd_raise()). Short of it, accept fails
 * with EMFILE under a crowd and the door spins on the ready socket it
 * cannot take (an outside attack saw 6.5 s of CPU in 9 s and /healthz
 * down at max_connections 2000 with 256 files).
 */
static int
check_fd_limit(const struct config *c, char *err, size_t errlen)
{
	unsigned long long need = config_fd_need(c);
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl) < 0 || rl.rlim_max == RLIM_INFINITY ||
	    rl.rlim_max >= need)
		return 0;
	return config_error(c, err, errlen, "http.max_connections",
	    json_object_get(json_object_get(config_tree(c), "http"),
	    "max_connections"), "%u connections need about %llu open files, "
	    "and this process may open at most %llu (RLIMIT_NOFILE; systemd: "
	    "LimitNOFILE=): lower it or raise the limit",
	    config_http(c)->max_connections, need,
	    (unsigned long long)rl.rlim_max);
}

int
config_fd_raise(const struct config *c)
{
	rlim_t need = (rlim_t)config_fd_need(c);
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl) < 0)
		return -errno;
	if (rl.rlim_cur == RLIM_INFINITY || rl.rlim_cur >= need)
		return 0;
	/* Twice the need where the hard limit allows: room to spare. */
	rl.rlim_cur = rl.rlim_max == RLIM_INFINITY || rl.rlim_max > need * 2 ?
	    need * 2 : rl.rlim_max;
	if (setrlimit(RLIMIT_NOFILE, &rl) < 0)
		return -errno;
	return rl.rlim_cur >= need ? 0 : -EMFILE;
}

/* ----------------------------------------------- the effective configuration */

static int
set(json_t *o, const char *k, json_t *v)
{
	return json_object_set_new(o, k, v) < 0 ? -ENOMEM : 0;
}

static int
set_copy(json_t *o, const char *k, const json_t *v)
{
	return set(o, k, v ? json_deep_copy(v) : json_null());
}

static json_t *
model_tree(const struct llm_model *m, int embed, int dim)
{
	json_t *o = json_object();
	int error = 0;

	if (!o)
		return NULL;
	if (!embed)
		error |= set(o, "provider", json_string(llm_provider_name(m->provider)));
	error |= set(o, "base_url", json_string(m->base_url));
	error |= set(o, "model", json_string(m->model));
	if (m->key_env)
		error |= set(o, "api_key_env", json_string(m->key_env));
	if (m->key_file)
		error |= set(o, "api_key_file", json_string(m->key_file));
	if (embed) {
		error |= set(o, "dim", json_integer(dim));
	} else {
		error |= set(o, "temperature", json_real(m->temperature));
		error |= set(o, "max_tokens", json_integer(m->max_tokens));
		error |= set(o, "weight", json_real(m->weight));
	}
	error |= set(o, "price_in", json_real(m->price_in));
	if (!embed)
		error |= set(o, "price_out", json_real(m->price_out));
	error |= set(o, "timeout_s", json_integer(m->timeout_s));
	if (error) {
		json_decref(o);
		return NULL;
	}
	return o;
}

static int
llm_tree(json_t *root, const struct llm_config *lc)
{
	json_t *l = json_object(), *ms = json_array(), *b = json_object();
	int error = 0;

	if (set(root, "llm", l) < 0 || set(root, "budgets", b) < 0 || !ms) {
		json_decref(ms);
		return -ENOMEM;
	}
	for (size_t i = 0; i < lc->n_models; i++)
		if (json_array_append_new(ms, model_tree(&lc->models[i], 0, 0)) < 0)
			error = -ENOMEM;
	error |= set(l, "models", ms);
	error |= set(l, "max_attempts", json_integer(lc->max_attempts));
	error |= set(l, "backoff_ms", json_integer(lc->backoff_ms));
	error |= set(l, "parallel", json_integer(lc->parallel));
	error |= set(l, "proposals", json_integer(lc->proposals));
	error |= set(l, "fix_rounds", json_integer(lc->fix_rounds));
	error |= set(l, "summarize_over", json_integer(lc->summarize_over));
	if (lc->prompts_dir)
		error |= set(l, "prompts_dir", json_string(lc->prompts_dir));
	if (lc->embed.model)
		error |= set(l, "embeddings", model_tree(&lc->embed, 1, lc->embed_dim));
	error |= set(b, "candidates", json_integer(lc->budget_candidates));
	error |= set(b, "generations", json_integer(lc->budget_generations));
	error |= set(b, "tokens", json_integer(lc->budget_tokens));
	error |= set(b, "dollars", json_real(lc->budget_dollars));
	error |= set(b, "gpu_seconds", json_real(lc->budget_gpu_s));
	error |= set(b, "wall_seconds", json_real(lc->budget_wall_s));
	return error ? -ENOMEM : 0;
}

static int
runners_tree(json_t *root, const struct coord_opts *o)
{
	json_t *r = json_object();
	int error = 0;

	if (set(root, "runners", r) < 0)
		return -ENOMEM;
	error |= set(r, "local", o->local_runners == COORD_RUNNERS_AUTO ?
	    json_string("auto") : o->local_runners == 0 ? json_string("none") :
	    json_integer(o->local_runners));
	error |= set(r, "coordinator", json_boolean(o->coordinator));
	error |= set(r, "lease_s", json_integer(o->lease_s));
	error |= set(r, "max_attempts", json_integer(o->max_attempts));
	error |= set(r, "poll_ms", json_integer(o->poll_ms));
	error |= set(r, "timeout_s", json_integer(o->timeout_s));
	error |= set(r, "work_keep_failed_h", json_integer(o->work_keep_failed_h));
	error |= set(r, "retries", json_integer(o->retries));
	error |= set(r, "retry_base_ms", json_integer(o->retry_base_ms));
	error |= set(r, "retry_max_ms", json_integer(o->retry_max_ms));
	if (o->optimize_args)
		error |= set_copy(r, "optimize_args", o->optimize_args);
	if (o->benchmark_args)
		error |= set_copy(r, "benchmark_args", o->benchmark_args);
	if (o->command)
		error |= set_copy(r, "command", o->command);
	return error ? -ENOMEM : 0;
}

static json_t *
effective_tree(const struct config *c, const struct llm_config *lc,
    const struct coord_opts *o)
{
	const struct config_http *h = config_http(c);
	const json_t *tree = config_tree(c), *v;
	json_t *root = json_object(), *http = json_object(), *sch;
	int error = 0;

	if (!root || !http) {
		json_decref(root);
		json_decref(http);
		return NULL;
	}
	error |= set(root, "listen", json_string(config_listen(c)));
	error |= set(root, "data_dir", json_string(config_data_dir(c)));
	error |= set(root, "log_file", config_log_file(c) ?
	    json_string(config_log_file(c)) : json_null());
	error |= set(root, "log_level", json_string(config_log_level(c)));
	v = json_object_get(tree, "allow_repos");
	error |= set(root, "allow_repos", json_is_array(v) ? json_deep_copy(v) :
	    json_array());
	error |= set(root, "http", http);
	error |= set(http, "max_body_bytes", json_integer((json_int_t)h->max_body_bytes));
	error |= set(http, "max_buffered_bytes", json_integer((json_int_t)h->max_buffered_bytes));
	error |= set(http, "max_header_bytes", json_integer((json_int_t)h->max_header_bytes));
	error |= set(http, "max_connections", json_integer(h->max_connections));
	error |= set(http, "max_connections_per_ip", json_integer(h->max_connections_per_ip));
	error |= set(http, "connection_timeout_s", json_integer(h->connection_timeout_s));
	error |= set(http, "request_timeout_s", json_integer(h->request_timeout_s));
	error |= set(http, "threads", json_integer(h->threads));
	error |= set(http, "head_timeout_s", json_integer(h->head_timeout_s));
	error |= set(http, "min_body_bytes_per_s", json_integer((json_int_t)h->min_body_bytes_per_s));
	error |= set(http, "max_buffered_bytes_per_ip",
	    json_integer((json_int_t)h->max_buffered_bytes_per_ip));
	error |= set(http, "small_body_bytes", json_integer((json_int_t)h->small_body_bytes));
	/* as written: already parsed into addresses and prefixes */
	v = json_object_get(json_object_get(tree, "http"), "trusted_proxies");
	error |= set(http, "trusted_proxies", json_is_array(v) ? json_deep_copy(v) : json_array());
	v = json_object_get(tree, "forges");
	error |= set(root, "forges", json_is_object(v) ? json_deep_copy(v) :
	    json_object());
	error |= runners_tree(root, o);
	/* schedule: always a list, as coord_opts_load reads it */
	v = json_object_get(tree, "schedule");
	sch = !v || json_is_null(v) ? json_array() : json_is_array(v) ?
	    json_deep_copy(v) : json_pack("[O]", v);
	error |= set(root, "schedule", sch);
	error |= llm_tree(root, lc);
	/* checked already: auto, ncu or off */
	error |= set(root, "profile", json_string(jsonx_str(tree, "profile", "auto")));
	if (error) {
		json_decref(root);
		return NULL;
	}
	return root;
}

int
config_check(const struct config *c, int flags, json_t **effective,
    char *err, size_t errlen)
{
	struct llm_config lc;
	struct coord_opts o;
	int on, force, error, have_lc = 0, have_opts = 0;

	/* the files serve opens; `optimize --config` (no secrets) opens neither */
	if (!(flags & CONFIG_NO_SECRETS) &&
	    ((error = check_log_file(c, err, errlen)) < 0 ||
	    (error = check_data_dir(c, err, errlen)) < 0))
		goto out;
	if ((error = check_unread(c, err, errlen)) < 0 ||
	    (error = check_secrets_distinct(c, err, errlen)) < 0 ||
	    (error = check_fd_limit(c, err, errlen)) < 0 ||
	    (error = check_llm(c, flags, &lc, err, errlen)) < 0)
		goto out;
	have_lc = 1;
	if ((error = optimize_llm_profile_mode(c, NULL, &on, &force, err,
	    errlen)) < 0 ||
	    (error = coord_opts_load(c, &o, err, errlen)) < 0)
		goto out;
	have_opts = 1;
	/* The forge clients are the coordinator's; without it only webhooks come in. */
	if (o.coordinator && !(flags & CONFIG_NO_SECRETS) &&
	    (error = check_forges(c, err, errlen)) < 0)
		goto out;
	if (effective && !(*effective = effective_tree(c, &lc, &o))) {
		snprintf(err, errlen, "out of memory");
		error = -ENOMEM;
	}
out:
	if (have_lc)
		llm_config_free(&lc);
	if (have_opts)
		coord_opts_free(&o);
	return error;
}
