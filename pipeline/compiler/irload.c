#include "pipeline/compiler/irload.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/jsonx.h"
#include "gpu/harness.h"

static int
ends_with(const char *s, const char *suffix)
{
	size_t n = strlen(s), m = strlen(suffix);

	return n >= m && !strcmp(s + n - m, suffix);
}

int
irload(const char *arg, const char *class_name, const struct harness_entry *entry, json_t **ir,
    char *err, size_t errlen)
{
	char path[PATH_MAX];
	json_t *req = NULL, *reply = NULL, *doc = NULL;
	struct harness_opts ho = HARNESS_OPTS_INIT;
	const char *ro[] = { path, NULL };
	int error;

	if (!realpath(arg, path)) {
		error = -errno;
		snprintf(err, errlen, "%s: %s", arg, strerror(errno));
		return error;
	}
	if (!ends_with(path, ".py")) {
		if ((error = jsonx_load_file(path, IRLOAD_MAX, &doc, err, errlen)) < 0)
			return error;
		/* a whole trace reply works too */
		if (json_object_get(doc, "ir")) {
			*ir = json_incref(json_object_get(doc, "ir"));
			json_decref(doc);
		} else {
			*ir = doc;
		}
		return 0;
	}
	req = json_pack("{s:s, s:s, s:s}", "verb", "trace", "problem", path,
	    "class", class_name ? class_name : "Model");
	if (!req || harness_entry_put(req, entry, "") < 0) {
		json_decref(req);
		return -ENOMEM;
	}
	/* Tracing imports the module, which runs its code: sandboxed, shown only the file. */
	ho.ro_paths = ro;
	ho.stage = "trace";
	if ((error = harness_call_sandboxed(req, IRLOAD_TIMEOUT_S * 1000, &ho, &reply, err,
	    errlen)) < 0)
		goto out;
	if (!jsonx_bool(reply, "ok", 0) || !json_is_object(json_object_get(reply, "ir"))) {
		snprintf(err, errlen, "%s: trace failed: %s", arg,
		    jsonx_str(reply, "error.message", "no message"));
		error = -EINVAL;
		goto out;
	}
	*ir = json_incref(json_object_get(reply, "ir"));
	error = 0;
out:
	json_decref(req);
	json_decref(reply);
	return error;
}
