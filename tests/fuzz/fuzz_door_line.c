/*
 * The door's request-line check, on whatever a client sends first. The
 * door peeks again as more bytes arrive, so a verdict must never change
 * once given: a prefix that is bad or sound stays so however the input
 * goes on, and an incomplete input was incomplete all along. The same
 * holds for the head check (obs-fold) once the line is sound.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "webhooks/door.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *b = (const char *)data;
	enum wh_line all = wh_door_line_check(b, size), part;

	if (all == WH_LINE_OK && !memchr(b, '\n', size))
		abort();
	if (size == 0)
		return 0;
	part = wh_door_line_check(b, size - 1);
	if (part != WH_LINE_INCOMPLETE && part != all)
		abort();
	if (all == WH_LINE_INCOMPLETE && part != WH_LINE_INCOMPLETE)
		abort();
	if (all == WH_LINE_OK) {
		enum wh_line head = wh_door_head_check(b, size);

		part = part == WH_LINE_OK ? wh_door_head_check(b, size - 1) :
		    WH_LINE_INCOMPLETE;
		if (part != WH_LINE_INCOMPLETE && part != head)
			abort();
	}
	return 0;
}
