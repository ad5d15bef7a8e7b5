/* The server config loader: YAML text in, a config or a located error out. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "bot/config.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct config *c = NULL;
	char err[CONFIG_ERR_MAX];

	err[0] = '\0';
	/* No secrets: a fuzzed path must not make the target read files. */
	int rc = config_parse("fuzz.yml", (const char *)data, size,
	    CONFIG_NO_SECRETS, &c, err, sizeof(err));

	if (rc == 0) {
		(void)config_repo_allowed(c, "acme/model");
		(void)config_repo_allowed(c, "group/sub/repo");
		(void)config_error(c, err, sizeof(err), "forges.github.api_url", NULL, "x");
		(void)config_error(c, err, sizeof(err), "allow_repos", NULL, "x");
		config_free(c);
	} else if (rc == -EINVAL && !err[0]) {
		abort();
	}
	return 0;
}
