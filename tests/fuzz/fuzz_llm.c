/*
 * LLM answers, which are outside input: the raw response body through
 * both providers' parsers, then the text through kernel extraction (fenced
 * blocks, search/replace edits against a fixed parent). Either a kernel
 * with the entry point comes out, or a refusal with a reason.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "pipeline/llm/client.h"
#include "pipeline/llm/extract.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char PARENT[] =
    "#include <dlpack/dlpack.h>\n"
    "int kernelbot_forward(const DLTensor *in, int n_in, DLTensor *out, int n_out, void *s)\n"
    "{\n\tfloat *y = out[0].data;\n\ty[0] = 1;\n\treturn 0;\n}\n";

static void
extract_one(const char *text)
{
	char *src = NULL, why[512];
	enum extract_kind kind;
	int rc;

	why[0] = '\0';
	rc = llm_extract(text, PARENT, "cuda", 1, &src, &kind, why, sizeof(why));
	if (rc == 0 && (!src || !llm_has_entry(src) || strlen(src) > EXTRACT_MAX_SOURCE))
		abort();
	if (rc == -EINVAL && !why[0])
		abort();
	free(src);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *text = malloc(size + 1), *answer = NULL, err[256];
	int64_t tin, tout;

	if (!text)
		return 0;
	memcpy(text, data, size);
	text[size] = '\0';
	for (int p = 0; p < 2; p++) {
		err[0] = '\0';
		if (llm_parse_answer(p ? LLM_ANTHROPIC : LLM_OPENAI, text, size, &answer,
		    &tin, &tout, err, sizeof(err)) == 0) {
			if (!answer || tin < 0 || tout < 0)
				abort();
			extract_one(answer);
			free(answer);
			answer = NULL;
		} else if (!err[0]) {
			abort();
		}
	}
	extract_one(text);
	(void)llm_retry_wait_ms(1000, 3, text);
	free(text);
	return 0;
}
