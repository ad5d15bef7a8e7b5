"""The `trace` verb: problem file -> verified graph IR."""
import inspect
import os
import time

import torch
from torch.fx.proxy import TraceError

from . import canon, problem as problem_mod, tracer, verify
from .ir import tensor_desc
from .protocol import REQUIRED, HarnessError, check_fields, describe_exception

FIELDS = {
    "verb": ((str,), REQUIRED),
    "problem": ((str,), REQUIRED),
    "seed": ((int,), 0),
    "class": ((str,), "Model"),
    "init": ((str,), "get_init_inputs"),
    "inputs": ((str,), "get_inputs"),
    "variants": ((str,), "get_input_variants"),
    "verify": ((str,), "auto"),
    "module_path": ((list,), []),
}
VERIFY_MODES = ("auto", "full", "reduced", "none")


def trace_problem(prob, model, inputs):
    """Trace an instantiated problem; returns the IR dict."""
    try:
        with torch.no_grad():
            graph, _, specialized = tracer.trace(model, inputs, prob.path)
    except HarnessError:
        raise
    except TraceError as e:
        raise HarnessError("trace", "data-dependent control flow (Python if/while/bool on a traced "
                                    "tensor value) cannot be traced: %s"
                           % describe_exception(e, prob.path))
    except Exception as e:
        raise HarnessError("trace", "tracing %s.forward failed: %s"
                           % (prob.class_name, describe_exception(e, prob.path)))
    params = list(inspect.signature(model.forward).parameters)
    forward_names = [params[i] for i, x in enumerate(inputs) if isinstance(x, torch.Tensor)]
    spec_vals = [(k, inputs[params.index(k)] if params.index(k) < len(inputs) else
                  inspect.signature(model.forward).parameters[k].default) for k in specialized]
    with torch.no_grad():
        return canon.convert(graph, model, forward_names, prob.path, prob.class_name,
                             prob.source_sha256, spec_vals)


# What a variant graph keeps of its trace: the rest is the traced graph's.
VARIANT_KEYS = ("ir_version", "inputs", "nodes", "outputs", "specialized")


def variant_graphs(ir, prob, model, variants):
    """ir["variant_graphs"][i]: the graph traced at variants[i]'s inputs
    (node shapes differ), so the graph compiler can build a version of the
    kernel per shape set. A variant that does not trace leaves them all
    out, with the reason in ir["variant_graphs_error"]: the problem still
    traces, only the compiler cannot serve its variants."""
    graphs = []
    for i, v in enumerate(variants):
        try:
            g = trace_problem(prob, model, v)
        except HarnessError as e:
            ir["variant_graphs_error"] = "input variant %d: %s" % (i + 1, e.message)
            return
        graphs.append({k: g[k] for k in VARIANT_KEYS if k in g})
    ir["variant_graphs"] = graphs


def run(req):
    r = check_fields(req, FIELDS)
    if r["verify"] not in VERIFY_MODES:
        raise HarnessError("request", "field 'verify' must be one of %s, got %r"
                           % (", ".join(VERIFY_MODES), r["verify"]))
    path = os.path.abspath(r["problem"])
    timing = {}
    t = time.monotonic()
    prob = problem_mod.load(path, r["class"], r["init"], r["inputs"],
                            variants_name=r["variants"], module_path=r["module_path"])
    model = problem_mod.instantiate(prob, r["seed"])
    inputs = problem_mod.make_inputs(prob, r["seed"])
    timing["load"] = time.monotonic() - t

    t = time.monotonic()
    ir = trace_problem(prob, model, inputs)
    variants = problem_mod.make_variants(prob, r["seed"])
    if variants is not None:
        tensor_names = [i["name"] for i in ir["inputs"] if i["role"] == "input"]
        ir["variants"] = []
        for v in variants:
            ts = [x for x in v if isinstance(x, torch.Tensor)]
            if len(ts) != len(tensor_names):
                raise HarnessError("inputs", "get_input_variants() gives %d tensors where get_inputs() "
                                             "gives %d" % (len(ts), len(tensor_names)))
            ir["variants"].append([tensor_desc(n, x) for n, x in zip(tensor_names, ts)])
        variant_graphs(ir, prob, model, variants)
    timing["trace"] = time.monotonic() - t

    t = time.monotonic()
    report = verify.run(r["verify"], ir, prob, model, r["seed"], trace_problem)
    timing["verify"] = time.monotonic() - t
    return {"ok": True, "ir": ir, "verify": report,
            "timing": {k: round(v, 3) for k, v in timing.items()}}
