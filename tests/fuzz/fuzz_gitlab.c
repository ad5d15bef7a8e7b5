/* The gitlab payload parser: "EVENT\nBODY" inputs. */
#include "tests/fuzz/fuzz_event.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	return fuzz_event(CONFIG_GITLAB, data, size);
}
