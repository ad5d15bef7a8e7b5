/*
 * config_check: the whole server configuration checked at once, before
 * anything listens or runs. conf/config.c loads the file and checks the
 * front door's keys; this module has every other section read by the
 * module that owns it, with the rules that module applies when it uses
 * it, so a file passes here exactly when it works later:
 *
 *   llm, budgets        pipeline/llm's llm_config_load (what `kernelbot
 *                       optimize --config` reads), and each model's key:
 *                       api_key_env set, api_key_file a regular file
 *   profile             auto, ncu or off (pipeline/optimize/optimize_llm.h)
 *   runners, schedule   the coordinator's coord_opts_load
 *   forges              with the coordinator on, each forges.<name> opened
 *                       by its driver (gitops/forge.h): api_url, the
 *                       credentials (token_file, token_env, app_id and
 *                       private_key_file) read as a job would read them
 *   sandbox, archive,   nothing reads a key from them: they must be empty
 *   python
 *   forges.*.webhook_*  each forge's webhook secret its own, compared by
 *                       content (with secrets read)
 *   log_file, data_dir  with secrets read (serve, config check): the log a
 *                       regular file or a new name in a writable directory,
 *                       the data directory a directory or a path it can be
 *                       made at (--data-dir named as such)
 *   llm.prompts_dir     with models: a directory holding the templates
 *
 * `serve`, `optimize --config` and `config check` all use it. Every error
 * is "FILE:LINE: KEY: message" (config_error), the first one found.
 */
#ifndef KB_CLI_CONFIG_CHECK_H
#define KB_CLI_CONFIG_CHECK_H

#include <jansson.h>
#include <stddef.h>

#include "conf/config.h"

/*
 * Check c. flags: CONFIG_NO_SECRETS leaves credentials unread (the LLM
 * keys and the forge clients, which need them to open). effective: when
 * not NULL, set on success to a new object, the configuration as it will
 * be used (defaults filled in, aliases resolved, `runners: N` spelt out),
 * which holds file and variable names but never a secret's value.
 * 0, -EINVAL with err, -ENOMEM.
 */
int config_check(const struct config *c, int flags, json_t **effective,
    char *err, size_t errlen);

/*
 * The open files serve needs for c's http.max_connections, and serve's
 * start-up raising RLIMIT_NOFILE's soft limit towards twice that (as far
 * as the hard limit, which config_check() has checked, allows): 0 or -errno.
 */
unsigned long long config_fd_need(const struct config *c);
int config_fd_raise(const struct config *c);

/* Whether key names where a secret comes from (token_file, api_key_env...). */
int config_check_secret_key(const char *key);

#endif
