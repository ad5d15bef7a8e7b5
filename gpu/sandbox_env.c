/*
 * The environment of a sandboxed program: built from nothing, so no token
 * or key of the caller's can reach it.
 */
#include "gpu/sandbox.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SANDBOX_PATH "/usr/local/cuda/bin:/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin"

void
sandbox_env_free(char **env)
{
	if (!env)
		return;
	for (char **e = env; *e; e++)
		free(*e);
	free(env);
}

int
sandbox_env_build(const char *scratch, const char *const *extra, char ***out)
{
	char **env = calloc(SANDBOX_ENV_MAX + 1, sizeof(*env));
	int n = 0, error = 0;

	if (!env)
		return -ENOMEM;
	if (asprintf(&env[n++], "PATH=%s", SANDBOX_PATH) < 0 ||
	    !(env[n++] = strdup("LANG=C.UTF-8")) ||
	    asprintf(&env[n++], "HOME=%s", scratch) < 0 ||
	    asprintf(&env[n++], "TMPDIR=%s/tmp", scratch) < 0
#ifdef __SANITIZE_ADDRESS__
	    /* LeakSanitizer stops the world with ptrace, which the sandbox refuses. */
	    || !(env[n++] = strdup("ASAN_OPTIONS=detect_leaks=0"))
#endif
	    ) {
		env[n - 1] = NULL;
		error = -ENOMEM;
		goto out;
	}
	for (const char *const *e = extra; e && *e; e++) {
		const char *eq = strchr(*e, '=');
		int i;

		if (!eq || eq == *e) {
			error = -EINVAL;
			goto out;
		}
		for (i = 0; i < n; i++)
			if (!strncmp(env[i], *e, (size_t)(eq - *e) + 1))
				break;
		if (i == n && n >= SANDBOX_ENV_MAX) {
			error = -EINVAL;
			goto out;
		}
		{
			char *dup = strdup(*e);
			if (!dup) {
				error = -ENOMEM;
				goto out;
			}
			free(env[i]);
			env[i] = dup;
		}
		if (i == n)
			n++;
	}
	*out = env;
	env = NULL;
out:
	sandbox_env_free(env);
	return error;
}
