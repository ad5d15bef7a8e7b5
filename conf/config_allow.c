/*
 * allow_repos (docs/configuration.md): the repository patterns, each
 * checked for what fnmatch(3) would silently take.
 */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "conf/config_int.h"

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

int
config_load_allow(struct config *c, const json_t *a, char *err, size_t errlen)
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
