/*
 * The server config loader and the whole check (cli/config_check.h): YAML
 * text in, a config and its effective form, or a located error out.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "conf/config.h"
#include "cli/config_check.h"

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
		json_t *eff = NULL;

		err[0] = '\0';
		rc = config_check(c, CONFIG_NO_SECRETS, &eff, err, sizeof(err));
		if ((rc == 0) != (eff != NULL) || (rc == -EINVAL && !err[0]))
			abort();
		json_decref(eff);
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
