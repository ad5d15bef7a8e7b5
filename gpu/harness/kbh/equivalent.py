"""The `equivalent` verb: does a rewrite compute what the original does?

Stage 1 (docs/design.md) asks a model for a traceable rewrite of a
module torch.fx cannot trace. Before its IR is used, the rewrite must be
the same function: both files are loaded, the original instantiated, its
state_dict copied into the rewrite (strict: the same parameter and buffer
names and shapes), and both run on the same fresh inputs from the
ORIGINAL's get_inputs() for a few seeds, and on every declared input
variant; outputs are compared at the fp32 tolerances of verify.compare.
"""
import os

import torch

from . import problem as problem_mod, verify
from .protocol import REQUIRED, HarnessError, check_fields, describe_exception

FIELDS = {
    "verb": ((str,), REQUIRED),
    "problem": ((str,), REQUIRED),      # the original
    "rewrite": ((str,), REQUIRED),      # the candidate rewrite
    "class": ((str,), "Model"),
    "rewrite_class": ((str,), "Model"),
    "seeds": ((int,), 3),
}
MAX_SEEDS = 16


def _forward(model, inputs, path, which):
    try:
        with torch.no_grad():
            return verify._flatten(model(*inputs))
    except HarnessError:
        raise
    except Exception as e:
        raise HarnessError("verify", "the %s's forward raised: %s"
                           % (which, describe_exception(e, path)))


def run(req):
    r = check_fields(req, FIELDS)
    if not 1 <= r["seeds"] <= MAX_SEEDS:
        raise HarnessError("request", "field 'seeds' must be 1..%d, got %d" % (MAX_SEEDS, r["seeds"]))
    orig = problem_mod.load(os.path.abspath(r["problem"]), r["class"])
    rw = problem_mod.load(os.path.abspath(r["rewrite"]), r["rewrite_class"])
    a = problem_mod.instantiate(orig, 0)
    b = problem_mod.instantiate(rw, 0)
    try:
        b.load_state_dict(a.state_dict(), strict=True)
    except Exception as e:
        raise HarnessError("verify", "the rewrite's parameters and buffers differ from the "
                                         "original's (names, order or shapes): %s" % e)
    pa = [n for n, _ in a.named_parameters()]
    pb = [n for n, _ in b.named_parameters()]
    if pa != pb:
        raise HarnessError("verify", "the rewrite's parameters are in a different order: %s, "
                                         "the original's %s" % (pb, pa))
    cases = []
    for i in range(r["seeds"]):
        cases.append(("seed %d" % (i + 1), problem_mod.make_inputs(orig, verify.verify_seed(i + 1))))
    variants = problem_mod.make_variants(orig, verify.verify_seed(0))
    for i, v in enumerate(variants or []):
        cases.append(("input variant %d" % (i + 1), v))
    report = []
    for name, xs in cases:
        want = _forward(a, [x.clone() if isinstance(x, torch.Tensor) else x for x in xs],
                        orig.path, "original")
        got = _forward(b, [x.clone() if isinstance(x, torch.Tensor) else x for x in xs],
                       rw.path, "rewrite")
        try:
            outs = verify.compare(want, got)
        except HarnessError as e:
            raise HarnessError("verify", "%s: %s" % (name, e.message.replace(
                "graph gives", "rewrite gives").replace("from the module", "from the original")
                .replace("module gives", "original gives")))
        report.append({"case": name, "max_abs_err": max([o["max_abs_err"] for o in outs] or [0.0])})
    return {"ok": True, "equivalent": True, "cases": report}
