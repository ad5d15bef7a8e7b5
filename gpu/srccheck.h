/*
 * srccheck: static checks on a candidate's source (docs/design.md,
 * "The evaluation protocol", point 7):
 * side streams, device-wide syncs, threads and processes, timer or harness
 * tampering, file/network/environment access, precision downgrades (for
 * fp32 problems), and state kept between calls. Text patterns over the
 * source with C comments removed: they inform the reviewer; correctness is
 * decided by the judge, never here.
 */
#ifndef KB_GPU_SRCCHECK_H
#define KB_GPU_SRCCHECK_H

#include <jansson.h>
#include <stddef.h>

#define SRCCHECK_MAX_BYTES (4u << 20)	/* larger sources are not scanned */
#define SRCCHECK_MAX_DETAIL 5		/* findings quoted per category */

enum srccheck_lang { SRCCHECK_C, SRCCHECK_CUDA, SRCCHECK_PY };

/*
 * Scan text. Appends to `checks` one {"name": "static:<category>",
 * "passed", "detail"} per category, and to `flags` (no duplicates) the
 * flag of each category with findings: side_stream, device_sync, threads,
 * timer_tampering, runtime_code_loading, file_or_network_access,
 * result_caching, and precision_downgrade when fp32_problem. 0, -ENOMEM,
 * or -EFBIG for text over SRCCHECK_MAX_BYTES.
 */
int srccheck_text(const char *text, size_t len, enum srccheck_lang lang,
    int fp32_problem, json_t *checks, json_t *flags);

/* The same for a file; the language from its extension (.c, .cu, .py). */
int srccheck_file(const char *path, int fp32_problem, json_t *checks, json_t *flags);

/* The language of a path by extension; -EINVAL for others. */
int srccheck_lang_of(const char *path, enum srccheck_lang *lang);

#endif
