"""The judge's review flags (kbh/judge_run.py REVIEW_FLAGS) are the ones
gpu/flags.c marks EVAL_FLAG_REVIEW, less those only the evaluator raises:
a flag the judge sets needs_review for is treated as one by the search,
the report and the archive too."""
import os
import re
import sys

ROOT = os.path.join(os.path.dirname(__file__), "..", "..")
sys.path.insert(0, os.path.join(ROOT, "gpu", "harness"))

from kbh import judge_run  # noqa: E402

# Raised by the evaluator's static check, never by the judge.
EVALUATOR_ONLY = {"timer_tampering", "file_or_network_access"}


def table():
    src = open(os.path.join(ROOT, "gpu", "flags.c")).read()
    out = {}
    for name, use in re.findall(r'\{ "(\w+)", ([^}]+?) \}', src):
        review = (("ALL" in use and "~EVAL_FLAG_REVIEW" not in use)
                  or re.search(r"(?<!~)EVAL_FLAG_REVIEW", use) is not None)
        out[name] = review
    return out


def test_judge_review_flags_are_the_tables():
    t = table()
    assert "stale_inputs" in t and "degenerate_outputs" in t
    review = {n for n, r in t.items() if r}
    assert set(judge_run.REVIEW_FLAGS) == review - EVALUATOR_ONLY
