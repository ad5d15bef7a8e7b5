/*
 * The archive's outside input: an export file (JSON lines) through
 * archive_import(), and the same bytes as a problem source (and, when they
 * parse, as an IR) through archive_neighbours(), which turns them into
 * FTS5 queries. One store in a temporary directory serves every input.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "store/store.h"
#include "common/jsonx.h"
#include "pipeline/archive/archive.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static struct store *store;
static char dir[] = "/tmp/fuzz-archive-XXXXXX";

static void
cleanup(void)
{
	char p[sizeof(dir) + 32];

	store_close(store);
	store = NULL;
	for (const char *const *f = (const char *const[]){ "kernelbot.db",
	    "kernelbot.db-wal", "kernelbot.db-shm", NULL }; *f; f++) {
		snprintf(p, sizeof(p), "%s/%s", dir, *f);
		unlink(p);
	}
	rmdir(dir);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct archive_import_stats st;
	char err[1024], *text;
	json_t *out = NULL, *ir = NULL;
	FILE *f;
	int rc;

	if (!store) {
		if (!mkdtemp(dir) || store_open(dir, 0, &store) < 0)
			abort();
		atexit(cleanup);
	}
	if (size && (f = fmemopen((void *)data, size, "r"))) {
		err[0] = '\0';
		rc = archive_import(store, f, "fuzz.jsonl", &st, err, sizeof(err));
		fclose(f);
		/* Bad input is a located error, never a silent one. */
		if (rc == -EINVAL && strncmp(err, "fuzz.jsonl:", 11))
			abort();
	}
	if (!(text = strndup((const char *)data, size)))
		return 0;
	if (jsonx_parse((const char *)data, size, &ir, err, sizeof(err)) < 0)
		ir = NULL;
	rc = archive_neighbours(store, *text ? text : NULL, json_is_object(ir) ? ir : NULL,
	    "sm_90", 5, &out, err, sizeof(err));
	if (rc == 0 && !json_is_array(out))
		abort();
	json_decref(out);
	json_decref(ir);
	free(text);
	return 0;
}
