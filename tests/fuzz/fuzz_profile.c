/*
 * gpu/profile's outside input: ncu's CSV report (a tool's output about an
 * untrusted kernel, whose name it quotes) through profile_parse_csv(),
 * then the paragraph and the JSON of whatever parsed.
 */
#include <stdint.h>
#include <stdlib.h>

#include "gpu/profile.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct profile_report r = PROFILE_REPORT_INIT;
	char err[256];

	if (profile_parse_csv((const char *)data, size, &r, err, sizeof(err)) == 0) {
		char *s = profile_summary(&r, 1000);
		json_t *j = profile_report_json(&r);

		free(s);
		json_decref(j);
		profile_report_free(&r);
	}
	return 0;
}
