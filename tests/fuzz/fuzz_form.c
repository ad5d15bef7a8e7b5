/* The form-encoded webhook body decoder (payload=<urlencoded JSON>). */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "webhooks/handle.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct buf out = BUF_INIT(1u << 20);
	int rc = wh_form_payload((const char *)data, size, &out);

	/* Decoding only shrinks: "%xx" -> one byte, everything else one for one. */
	if (rc == 0 && out.len > size)
		abort();
	if (rc < 0 && rc != -EINVAL && rc != -ENOBUFS && rc != -ENOMEM)
		abort();
	buf_free(&out);
	return 0;
}
