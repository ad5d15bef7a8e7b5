/* flags: the table of what each evaluation flag means to its users, and
 * the three questions asked of a result through it. */
#include <string.h>

#include "gpu/flags.h"
#include "tests/unit/t.h"

static json_t *
result(int correct, const char *const *flags)
{
	json_t *r = json_pack("{s:b, s:[]}", "correct", correct, "flags");

	for (; *flags; flags++)
		json_array_append_new(json_object_get(r, "flags"), json_string(*flags));
	return r;
}

int
main(void)
{
	static const char *const none[] = { NULL };
	static const char *const quiet[] = { "precision_downgrade", "device_sync", NULL };
	static const char *const sus[] = { "threads", "suspicious_speedup", NULL };
	static const char *const two[] = { "side_stream", "below_bandwidth_floor", NULL };
	static const char *const tamper[] = { "timer_tampering", NULL };
	json_t *r;

	/* Every review flag the judge raises (kbh/judge_run.py REVIEW_FLAGS). */
	CHECK("suspicious_speedup asks for review", eval_flag_use("suspicious_speedup") & EVAL_FLAG_REVIEW);
	CHECK("stale_inputs asks for review and bars a best",
	    (eval_flag_use("stale_inputs") & (EVAL_FLAG_REVIEW | EVAL_FLAG_BARS_BEST)) ==
	    (EVAL_FLAG_REVIEW | EVAL_FLAG_BARS_BEST));
	CHECK("state kept across calls: every use",
	    eval_flag_use("state_across_calls") == (EVAL_FLAG_REVIEW | EVAL_FLAG_BARS_BEST |
	    EVAL_FLAG_NO_HEADLINE | EVAL_FLAG_DISTRUSTED));
	CHECK("files read by the kernel: every use",
	    eval_flag_use("file_or_network_access") == (EVAL_FLAG_REVIEW | EVAL_FLAG_BARS_BEST |
	    EVAL_FLAG_NO_HEADLINE | EVAL_FLAG_DISTRUSTED));
	CHECK("an unknown flag has no use", eval_flag_use("no_such_flag") == 0);
	CHECK("every distrusted review flag but degenerate_outputs",
	    eval_flag_use("degenerate_outputs") == EVAL_FLAG_DISTRUSTED);
	for (const struct eval_flag *f = eval_flags; f->name; f++)
		if (f->use & EVAL_FLAG_BARS_BEST)
			CHECK(f->name, f->use & EVAL_FLAG_DISTRUSTED);	/* never archived as a best */

	r = result(1, none);
	CHECK("no flags: nothing first", eval_flag_first(r, ~0u) == NULL);
	eval_flags_review(r);
	CHECK("no flags: no review", json_object_get(r, "needs_review") == NULL);
	json_decref(r);

	r = result(1, quiet);
	CHECK("notes only: nothing first", eval_flag_first(r, ~0u) == NULL);
	eval_flags_review(r);
	CHECK("notes only: no review", json_object_get(r, "needs_review") == NULL);
	json_decref(r);

	/* suspicious_speedup: review and no headline, but a search may keep it. */
	r = result(1, sus);
	CHECK_STR("headline barred by suspicious_speedup", eval_flag_first(r, EVAL_FLAG_NO_HEADLINE),
	    "suspicious_speedup");
	CHECK("a search may keep it", eval_flag_first(r, EVAL_FLAG_BARS_BEST) == NULL);
	eval_flags_review(r);
	CHECK("correct with it: review", json_is_true(json_object_get(r, "needs_review")));
	json_decref(r);

	/* The first flag in the result's order that has the use. */
	r = result(1, two);
	CHECK_STR("bars best: the first, side_stream", eval_flag_first(r, EVAL_FLAG_BARS_BEST),
	    "side_stream");
	CHECK_STR("headline: side_stream has none, the floor does",
	    eval_flag_first(r, EVAL_FLAG_NO_HEADLINE), "below_bandwidth_floor");
	json_decref(r);

	/* The static check's flag asks for review only when correct. */
	r = result(1, tamper);
	eval_flags_review(r);
	CHECK("timer_tampering, correct: review", json_is_true(json_object_get(r, "needs_review")));
	CHECK("timer_tampering is not distrusted", eval_flag_first(r, EVAL_FLAG_DISTRUSTED) == NULL);
	json_decref(r);
	r = result(0, tamper);
	eval_flags_review(r);
	CHECK("timer_tampering, not correct: no review", json_object_get(r, "needs_review") == NULL);
	json_decref(r);

	r = json_pack("{s:b, s:[i, s]}", "correct", 1, "flags", 3, "untimed_work");
	CHECK_STR("a flag that is no string is skipped", eval_flag_first(r, EVAL_FLAG_REVIEW),
	    "untimed_work");
	json_decref(r);
	return t_done("test_flags");
}
