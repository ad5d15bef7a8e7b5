/*
 * flags: the table of what each evaluation flag means to the result's
 * users (gpu/flags.h).
 */
#include <string.h>

#include "gpu/flags.h"

#define ALL (EVAL_FLAG_REVIEW | EVAL_FLAG_BARS_BEST | EVAL_FLAG_NO_HEADLINE | EVAL_FLAG_DISTRUSTED)

const struct eval_flag eval_flags[] = {
	/*
	 * Over 10x eager is common and honest where eager's per-op dispatch
	 * dominates (small CPU problems): a search may keep it as its best;
	 * the report keeps it out of headlines.
	 */
	{ "suspicious_speedup", ALL & ~EVAL_FLAG_BARS_BEST },
	{ "below_bandwidth_floor", ALL },
	/*
	 * The report names it in the body (the static check's stream call
	 * is a note there); a search whose best needs review for it says so.
	 */
	{ "side_stream", ALL & ~EVAL_FLAG_NO_HEADLINE },
	{ "untimed_work", ALL },
	{ "stale_inputs", ALL },
	/* Fast only on what earlier calls left in its process. */
	{ "state_across_calls", ALL },
	{ "degenerate_outputs", EVAL_FLAG_DISTRUSTED },
	/* From the static check: a clock read or rewritten by the candidate. */
	{ "timer_tampering", EVAL_FLAG_REVIEW },
	/*
	 * ... files, sockets or the environment: a kernel has no business
	 * there, and one read the judge's input files at its first, untimed,
	 * call to know every value its timed calls would hold (an outside
	 * attack: 8.8x eager, unflagged, its honest twin 1.0x).
	 */
	{ "file_or_network_access", ALL },
	{ NULL, 0 }
};

unsigned
eval_flag_use(const char *name)
{
	for (const struct eval_flag *f = eval_flags; f->name; f++)
		if (!strcmp(f->name, name))
			return f->use;
	return 0;
}

const char *
eval_flag_first(const json_t *result, unsigned use)
{
	const json_t *v;
	size_t i;

	json_array_foreach(json_object_get(result, "flags"), i, v)
		if (json_is_string(v) && (eval_flag_use(json_string_value(v)) & use))
			return json_string_value(v);
	return NULL;
}

void
eval_flags_review(json_t *result)
{
	if (json_is_true(json_object_get(result, "correct")) &&
	    eval_flag_first(result, EVAL_FLAG_REVIEW))
		json_object_set_new(result, "needs_review", json_true());
}
