"""The baseline cache: eager PyTorch and torch.compile timings of one
problem on one device, kept on disk so that a repeat evaluation of the same
problem does not build torch.compile again (seconds to tens of seconds)
nor measure the device's bandwidth again.

What is cached is timings only: per-round samples in milliseconds, the
measured copy bandwidth and why torch.compile was not usable. Expected
outputs, inputs and seeds never are (docs/design.md, evaluation points 1
and 2: a trusted judge and fresh seeds per evaluation); `load` refuses an
entry with anything else.

An entry is keyed by everything that changes the figures: the problem's
source hash and class, the shapes and dtypes of the timed inputs (forward's
arguments and the model's state), the backend, the device's name, UUID and
driver (or the CPU's model), the PyTorch and Python versions, the timing
parameters (rounds, reps, warm-up, flush size) and the baselines asked for.
A hit still times eager interleaved with the candidate (fewer runs per
round): its median against the cached one is the drift check, and past
DRIFT_MAX the entry is dropped and the baselines are measured in full.
"""
import hashlib
import json
import math
import os
import time

VERSION = 1
MAX_AGE_S = 7 * 24 * 3600
DRIFT_MAX = 0.10		# |fresh eager median / cached - 1| beyond this: stale
MAX_ROUNDS = 256		# rounds kept per baseline
MAX_FILE = 4 << 20		# an entry is small; anything larger is not ours
ENTRY_KEYS = {"version", "key", "fields", "created", "eager_rounds", "compile_rounds",
              "compile_note", "bandwidth_gbs"}


def cpu_model():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    import platform
    return platform.processor() or platform.machine()


def device_identity(ctx):
    """name, UUID and driver of the device the baselines ran on."""
    import torch
    ident = dict(ctx.req.get("device_id") or {})
    if ctx.backend == "cuda":
        props = torch.cuda.get_device_properties(ctx.device)
        ident["name"] = props.name
        uuid = getattr(props, "uuid", None)
        if uuid is not None:
            ident["uuid"] = str(uuid)
        ident["cuda"] = torch.version.cuda
    else:
        import socket
        ident.update({"name": cpu_model(), "cpus": os.cpu_count(), "host": socket.gethostname()})
    return ident


def key_fields(ctx, timing_args, flush_bytes):
    """What an entry's figures depend on (docs/evaluation.md, "Baseline cache")."""
    import sys
    import torch

    def spec(t):
        return [str(t.dtype).replace("torch.", ""), list(t.shape)]
    return {
        "version": VERSION,
        "problem_sha256": ctx.problem.sha256,
        "class": ctx.req.get("class", "Model"),
        # The entry points (.kernelbot.yml's init/inputs/variants) and
        # forward's Python numbers: the same shapes can be another model.
        "entry": [ctx.req.get(k) for k in ("init_fn", "inputs_fn", "variants_fn")],
        "module_path": ctx.req.get("module_path") or [],
        "scalars": getattr(ctx, "scalars", []),
        "inputs": [[spec(t) for t in args] for args in timing_args],
        "state": [[n, spec(t)] for n, t in ctx.state],
        "backend": ctx.backend,
        "device": device_identity(ctx),
        "torch": torch.__version__,
        "python": sys.version.split()[0],
        "rounds": ctx.rounds, "reps": ctx.reps, "warmup": ctx.warmup,
        "flush_bytes": flush_bytes,
        "baselines": sorted(ctx.baselines),
    }


def key_of(fields):
    return hashlib.sha256(json.dumps(fields, sort_keys=True).encode()).hexdigest()


def path_of(cache_dir, key):
    return os.path.join(cache_dir, key[:2], key + ".json")


def _rounds_ok(v):
    if v is None:
        return True
    if not isinstance(v, list) or len(v) > MAX_ROUNDS:
        return False
    for rd in v:
        if not isinstance(rd, list) or not rd or len(rd) > 4096:
            return False
        for x in rd:
            if not isinstance(x, (int, float)) or isinstance(x, bool) or not math.isfinite(x) or x < 0:
                return False
    return True


def load(cache_dir, key, fields, now=None):
    """(entry, None) on a hit; (None, why) otherwise: "miss", "corrupt",
    "stale" (older than MAX_AGE_S or from the future), "mismatch"."""
    now = time.time() if now is None else now
    p = path_of(cache_dir, key)
    try:
        if os.path.getsize(p) > MAX_FILE:
            return None, "corrupt"
        with open(p) as f:
            e = json.load(f)
    except FileNotFoundError:
        return None, "miss"
    except (OSError, ValueError, UnicodeDecodeError):
        return None, "corrupt"
    if (not isinstance(e, dict) or set(e) != ENTRY_KEYS or e.get("version") != VERSION
            or not isinstance(e.get("created"), (int, float)) or not _rounds_ok(e.get("eager_rounds"))
            or not _rounds_ok(e.get("compile_rounds"))
            or not (e.get("compile_note") is None or isinstance(e.get("compile_note"), str))
            or not (e.get("bandwidth_gbs") is None or (isinstance(e["bandwidth_gbs"], (int, float))
                                                       and e["bandwidth_gbs"] > 0))):
        return None, "corrupt"
    if e.get("key") != key or e.get("fields") != fields:
        return None, "mismatch"
    if "eager" in fields["baselines"] and not e["eager_rounds"]:
        return None, "mismatch"
    age = now - e["created"]
    if age < -60 or age > MAX_AGE_S:
        return None, "stale"
    return e, None


def store(cache_dir, key, fields, eager_rounds, compile_rounds, compile_note, bandwidth_gbs):
    """Write an entry atomically (a temporary file renamed); errors are
    returned as text, never raised: the cache is an optimization."""
    e = {"version": VERSION, "key": key, "fields": fields, "created": time.time(),
         "eager_rounds": (eager_rounds or [])[-MAX_ROUNDS:] or None,
         "compile_rounds": (compile_rounds or [])[-MAX_ROUNDS:] or None,
         "compile_note": compile_note, "bandwidth_gbs": bandwidth_gbs}
    p = path_of(cache_dir, key)
    tmp = "%s.%d.tmp" % (p, os.getpid())
    try:
        os.makedirs(os.path.dirname(p), exist_ok=True)
        with open(tmp, "w") as f:
            json.dump(e, f)
        os.rename(tmp, p)
    except OSError as ex:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        return "cannot write %s: %s" % (p, ex)
    return None


def drop(cache_dir, key):
    try:
        os.unlink(path_of(cache_dir, key))
    except OSError:
        pass
