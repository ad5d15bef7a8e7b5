/*
 * config_int: what conf/config.c shares with its section loaders
 * (conf/config_http.c, conf/config_allow.c): the configuration's
 * representation and the member readers. Not an interface for anything
 * outside conf/.
 */
#ifndef KB_CONF_CONFIG_INT_H
#define KB_CONF_CONFIG_INT_H

#include <jansson.h>
#include <stddef.h>

#include "conf/config.h"
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

/* Whether s is in the NULL-terminated list. */
int config_in_list(const char *const *list, const char *s);

/*
 * obj's member as an integer from lo to hi into *dst, or -EINVAL naming
 * key (config_error); absent leaves *dst as it is.
 */
int config_get_uint(struct config *c, const json_t *obj, const char *member, const char *key,
    unsigned long long lo, unsigned long long hi, unsigned long long *dst, char *err,
    size_t errlen);

/* -EINVAL naming the first member of obj not in allowed (prefix.member). */
int config_check_keys(struct config *c, const json_t *obj, const char *prefix,
    const char *const *allowed, char *err, size_t errlen);

/* The http section's defaults, and the section (absent: the defaults checked). */
void config_http_defaults(struct config_http *h);
int config_load_http(struct config *c, const json_t *h, char *err, size_t errlen);

/* allow_repos: the patterns, each checked (a '[' without ']', a bare owner). */
int config_load_allow(struct config *c, const json_t *a, char *err, size_t errlen);

#endif
