/*
 * test_eval_result: the evaluator's result parsed once into struct
 * eval_cand (gpu/eval_result.h): a judge's object in, the fields out;
 * absent members absent, a member of the wrong type a named error.
 */
#include <errno.h>
#include <math.h>
#include <string.h>

#include "gpu/eval_result.h"
#include "gpu/flags.h"
#include "tests/unit/t.h"

static const char judged[] =
    "{\"candidate\": \"k.cu\", \"status\": \"correct\", \"correct\": true,"
    " \"backend\": \"cuda\", \"device\": \"NVIDIA H200\", \"arch\": \"sm_90\","
    " \"timings_ms\": {\"candidate\": {\"median\": 0.5, \"p10\": 0.45, \"p90\": 0.55, \"runs\": 120},"
    "   \"eager\": {\"median\": 1.25, \"p10\": 1.2, \"p90\": 1.3, \"runs\": 120}, \"compile\": null},"
    " \"speedup\": {\"eager\": 2.5, \"eager_ci95\": [2.25, 2.75], \"compile\": null, \"compile_ci95\": null},"
    " \"checks\": [{\"name\": \"trials\", \"passed\": true, \"detail\": \"5 of 5\"},"
    "   {\"name\": \"sanitize\", \"passed\": false}, {\"name\": \"odd\"}],"
    " \"flags\": [\"precision_downgrade\", \"suspicious_speedup\"],"
    " \"errors\": [], \"max_rel_error\": 3.1e-08, \"eval_s\": 1.5, \"seed\": 9007199254740993,"
    " \"device_info\": {\"name\": \"NVIDIA H200\", \"torch\": \"2.5.1\"},"
    " \"environment\": {\"seed_given\": false, \"threads\": {\"OMP_NUM_THREADS\": \"4\", \"OMP_PLACES\": null},"
    "   \"eval_args\": [\"--backend\", \"cuda\", \"--seed\", \"9007199254740993\"]}, \"needs_review\": true}";

static int
parse_text(const char *text, struct eval_cand *c, char *err, size_t errlen)
{
	json_t *o = json_loads(text, 0, NULL);
	int error = eval_cand_parse(o, c, err, errlen);

	json_decref(o);		/* the cand keeps its own reference */
	return error;
}

static void
malformed(const char *name, const char *text, const char *want)
{
	struct eval_cand c;
	char err[256];
	int error = parse_text(text, &c, err, sizeof(err));

	CHECK_INT(name, error, -EINVAL);
	if (!CHECK(name, strstr(err, want) != NULL))
		printf("     err \"%s\", want \"%s\"\n", err, want);
	CHECK(name, c.json == NULL && c.n_flags == 0 && isnan(c.t_candidate.median));
	eval_cand_clear(&c);
}

int
main(void)
{
	struct eval_cand c;
	struct eval_result r;
	char err[256];
	json_t *arr;

	CHECK_INT("a judged candidate parses", parse_text(judged, &c, err, sizeof(err)), 0);
	CHECK_STR("candidate", c.candidate, "k.cu");
	CHECK_STR("status", c.status, "correct");
	CHECK("correct, needs review", c.correct && c.needs_review);
	CHECK_STR("backend", c.backend, "cuda");
	CHECK_STR("arch", c.arch, "sm_90");
	CHECK_STR("device_info.name", c.device_name, "NVIDIA H200");
	CHECK_STR("device_info.torch", c.torch, "2.5.1");
	CHECK("the kernel's timing row", c.timed && c.t_candidate.present && c.t_candidate.median == 0.5 &&
	    c.t_candidate.p10 == 0.45 && c.t_candidate.p90 == 0.55 && c.t_candidate.runs == 120);
	CHECK("eager's median", c.t_eager.present && c.t_eager.median == 1.25);
	CHECK("compile null: absent", !c.t_compile.present && isnan(c.t_compile.median) &&
	    c.t_compile.json == NULL);
	CHECK("the eager speedup and its interval", c.vs_eager.x == 2.5 && c.vs_eager.lo == 2.25 &&
	    c.vs_eager.hi == 2.75);
	CHECK("no compile speedup", isnan(c.vs_compile.x) && isnan(c.vs_compile.lo));
	CHECK_INT("three checks", c.n_checks, 3);
	CHECK("passed, failed, unsaid", c.checks[0].passed == 1 && c.checks[1].passed == 0 &&
	    c.checks[2].passed == -1);
	CHECK_STR("a check's detail", c.checks[0].detail, "5 of 5");
	CHECK("no detail: NULL", c.checks[1].detail == NULL);
	CHECK_INT("two flags", c.n_flags, 2);
	CHECK_STR("the flags in order", c.flags[1], "suspicious_speedup");
	CHECK_STR("the headline's flag from the table", eval_cand_flag(&c, EVAL_FLAG_NO_HEADLINE),
	    "suspicious_speedup");
	CHECK("a search may keep it", eval_cand_flag(&c, EVAL_FLAG_BARS_BEST) == NULL);
	CHECK("has_flag", eval_cand_has_flag(&c, "precision_downgrade") &&
	    !eval_cand_has_flag(&c, "side_stream"));
	CHECK_INT("no errors", c.n_errors, 0);
	CHECK("a seed past 2^53 exact", c.has_seed && c.seed == 9007199254740993LL);
	CHECK("max_rel_error, eval_s", c.max_rel_error == 3.1e-08 && c.eval_s == 1.5);
	CHECK("provenance passed through", json_is_object(c.environment) &&
	    json_is_object(c.device_info) && json_is_object(c.speedup_json));
	CHECK_INT("the flags that repeat it", c.n_eval_args, 4);
	CHECK_STR("... in order", c.eval_args[3], "9007199254740993");
	CHECK_STR("a thread setting", eval_cand_thread(&c, "OMP_NUM_THREADS"), "4");
	CHECK("an unset one", eval_cand_thread(&c, "OMP_PLACES") == NULL &&
	    eval_cand_thread(&c, "MKL_NUM_THREADS") == NULL);
	CHECK("the object kept", json_is_object(c.json) && c.json->refcount == 1);
	eval_cand_clear(&c);
	CHECK("cleared", c.json == NULL && c.flags == NULL && isnan(c.vs_eager.x));

	CHECK_INT("a bare mismatch parses", parse_text("{\"status\": \"mismatch\", \"correct\": false,"
	    " \"errors\": [\"out0: 3 of 16 elements differ\"]}", &c, err, sizeof(err)), 0);
	CHECK("absent: NAN, NULL, 0", !c.correct && !c.timed && !c.t_candidate.present &&
	    isnan(c.vs_eager.x) && isnan(c.max_rel_error) && !c.has_seed && c.device_name == NULL);
	CHECK("no eval_args recorded", c.eval_args == NULL && c.n_eval_args == 0);
	CHECK_STR("its error", c.n_errors == 1 ? c.errors[0] : NULL, "out0: 3 of 16 elements differ");
	CHECK("no flag", eval_cand_flag(&c, ~0u) == NULL);
	eval_cand_clear(&c);
	CHECK_INT("a device as an object", parse_text("{\"device\": {\"name\": \"cpu\"}}", &c, err,
	    sizeof(err)), 0);
	CHECK_STR("... its name", c.device, "cpu");
	eval_cand_clear(&c);

	malformed("not an object", "[1]", "not a JSON object");
	malformed("correct as a string", "{\"correct\": \"yes\"}", "correct: not true or false");
	malformed("a median as a string", "{\"timings_ms\": {\"eager\": {\"median\": \"1\"}}}",
	    "timings_ms.eager.median: not a number");
	malformed("a row not an object", "{\"timings_ms\": {\"candidate\": 1.0}}",
	    "timings_ms.candidate: not an object");
	malformed("a short interval", "{\"speedup\": {\"eager\": 2.0, \"eager_ci95\": [1.0]}}",
	    "speedup.eager_ci95: not [lo, hi]");
	malformed("a flag not a string", "{\"flags\": [\"side_stream\", 3]}", "flags[1]: not a string");
	malformed("a check not an object", "{\"checks\": [\"x\"]}", "checks[0]: not an object");
	malformed("eval_args not strings", "{\"environment\": {\"eval_args\": [\"--seed\", 1]}}",
	    "environment.eval_args[1]: not a string");
	malformed("a device as a number", "{\"device\": 0}", "device: not a string");
	malformed("a seed not an integer", "{\"seed\": 1.5}", "seed: not an integer");

	arr = json_pack("[o, {s:b}]", json_loads(judged, 0, NULL), "correct", 0);
	CHECK_INT("an array parses", eval_result_parse(arr, &r, err, sizeof(err)), 0);
	CHECK_INT("two candidates", r.n, 2);
	CHECK("not all correct", !eval_result_all_correct(&r));
	eval_result_free(&r);
	json_array_append_new(arr, json_string("x"));
	CHECK_INT("a bad member fails the array", eval_result_parse(arr, &r, err, sizeof(err)), -EINVAL);
	CHECK_STR("naming the candidate", err, "candidate 2: not a JSON object");
	CHECK("nothing left", r.cand == NULL && r.n == 0);
	json_decref(arr);
	arr = json_array();
	CHECK_INT("an empty array parses", eval_result_parse(arr, &r, err, sizeof(err)), 0);
	CHECK("nothing is not all correct", !eval_result_all_correct(&r));
	eval_result_free(&r);
	json_decref(arr);
	CHECK_INT("not an array", eval_result_parse(NULL, &r, err, sizeof(err)), -EINVAL);
	return t_done("eval_result");
}
