"""kernelbot's check of this folder's kernel against the original module
(generated: do not edit). Run from anywhere: `python3 -m pytest
kernels/SLUG/test_kernel.py`. Skips, saying why, where the kernel cannot
run here (no C compiler for a CPU kernel; no GPU or nvcc for a CUDA one).
"""
import importlib.util
import os
import shutil
import sys

import pytest
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))


def _load(name, path):
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    spec.loader.exec_module(mod)
    return mod


dropin = _load("kernelbot_dropin_" + os.path.basename(HERE).replace("-", "_"), os.path.join(HERE, "__init__.py"))
M = dropin.MANIFEST["module"]
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)


def _original():
    """The module's file, imported as the repository imports it (a dotted
    name, so its relative imports work) where its path allows, else by path."""
    parts = M["path"][:-3].split("/") if M["path"].endswith(".py") else []
    if parts and all(p.isidentifier() for p in parts):
        try:
            return importlib.import_module(".".join(parts))
        except ImportError:
            pass
    return _load("kernelbot_original_" + os.path.basename(HERE).replace("-", "_"), os.path.join(ROOT, M["path"]))


original = _original()
BACKENDS = sorted({k["backend"] for k in dropin.MANIFEST["kernels"]})


def _device(backend):
    if backend == "cuda":
        if not torch.cuda.is_available():
            pytest.skip("CUDA kernel and no GPU here")
        if not (shutil.which("nvcc") or os.access("/usr/local/cuda/bin/nvcc", os.X_OK)):
            pytest.skip("CUDA kernel and no nvcc here")
        return torch.device("cuda")
    if not (shutil.which(os.environ.get("CC", "cc")) or shutil.which("gcc") or shutil.which("clang")):
        pytest.skip("CPU kernel and no C compiler here")
    return torch.device("cpu")


def _model(device, seed):
    torch.manual_seed(seed)
    init = getattr(original, M.get("init") or "get_init_inputs")
    cls = getattr(original, M.get("class") or "Model")
    return cls(*init()).to(device).eval()


def _input_sets():
    inputs = getattr(original, M.get("inputs") or "get_inputs")
    sets = [inputs()]
    variants = getattr(original, M.get("variants") or "get_input_variants", None)
    if callable(variants):
        sets += list(variants())
    return sets


def _to(xs, device):
    return [x.to(device) if isinstance(x, torch.Tensor) else x for x in xs]


def _close(a, b):
    if a.dtype in (torch.float16, torch.bfloat16):
        atol, rtol = 1e-2, 1e-2
    else:
        atol, rtol = 1e-4, 1e-4
    tol = dropin.MANIFEST.get("tolerance") or {}
    atol, rtol = tol.get("atol", atol), tol.get("rtol", rtol)
    if a.dtype.is_floating_point:
        return torch.allclose(a, b, atol=atol, rtol=rtol, equal_nan=True)
    return torch.equal(a, b)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_kernel_matches_module(backend, seed):
    device = _device(backend)
    model = _model(device, seed)
    fast = dropin.load(model)
    torch.manual_seed(1000 + seed)
    for n, xs in enumerate(_input_sets()):
        xs = _to(xs, device)
        with torch.no_grad():
            want = model(*xs)
            # twice: the first call of a shape also checks against the module
            for run in range(2):
                got = fast(*xs)
                assert fast.fallback_reason is None, "set %d: fell back: %s" % (n, fast.fallback_reason)
                wants = want if isinstance(want, (tuple, list)) else [want]
                gots = got if isinstance(got, (tuple, list)) else [got]
                assert len(gots) == len(wants)
                for i, (g, w) in enumerate(zip(gots, wants)):
                    assert g.shape == w.shape and g.dtype == w.dtype, "set %d output %d" % (n, i)
                    assert _close(g, w), "set %d run %d output %d: max abs error %g" % (
                        n, run, i, (g.double() - w.double()).abs().max().item())
    assert fast.kernel_calls >= 2


def test_falls_back_where_it_cannot_run():
    model = _model(torch.device("cpu"), 0)
    fast = dropin.load(model)
    xs = [x.double() if isinstance(x, torch.Tensor) and x.is_floating_point() else x
          for x in _input_sets()[0]]
    with torch.no_grad():
        got = fast.to(torch.float64)(*xs)
        want = model(*xs)
    assert fast.fallback_reason is not None
    wants = want if isinstance(want, (tuple, list)) else [want]
    gots = got if isinstance(got, (tuple, list)) else [got]
    for g, w in zip(gots, wants):
        assert torch.equal(g, w)
