"""The judge's side of the reference process (kbh/refproc.py).

The problem module is repository code: untrusted. The judge never imports
it; a sandboxed reference process does (`kernelbot sandbox-exec --profile
compiler`, the problem's directory read-only, its own scratch, no network,
an environment built from nothing). The judge asks it over JSON lines for
the model's state, the input sets and their expected outputs, baseline
timings and the reference outputs of perturbed sets, and reads what it
writes as data: files whose names the judge chooses, opened without
following links relative to the scratch's directory descriptor, each a
regular file of exactly the size the (checked) specs imply, decoded into
the judge's own tensors. Every comparison and verdict stays in the judge.

Every request has a deadline; past it, or when the process dies or breaks
the protocol, the evaluation ends with a RefError naming the stage, and
the process's whole tree is killed (its launcher's process group; the
sandbox kills what it started when the launcher dies).
"""
import json
import os
import re
import shutil
import sys
import tempfile
import time

import torch

from kbh import judge_io as jio
from kbh.judge_run import sandbox_argv, ProblemFailed, SANDBOX_CPU_MAX_S
from kbh.judge_worker import Worker, WorkerError

# PyTorch's import in a fresh interpreter on a loaded host, and the CUDA
# context: not the problem's time.
HELLO_S = 180
MAX_DIMS = 16
NAME_MAX = 200
TIMEOUT_MAX_S = 7 * 24 * 3600	# sandbox-exec's largest --timeout

# What each stage's deadline covers, for the error that names it.
STAGE_WHAT = {
    "start": "the reference process (PyTorch's import) did not start within %g s",
    "import": "the problem module did not finish importing within %g s",
    "build": "building the model (get_init_inputs() and the class's __init__) did not finish "
             "within %g s",
    "draw": "drawing the inputs (get_inputs(), get_input_variants()) and the reference forward "
            "did not finish within %g s",
}


class RefError(Exception):
    """The reference process failed: the evaluation cannot go on. stage:
    "load" while the problem is loaded and its sets drawn, "reference"
    afterwards."""

    def __init__(self, stage, message):
        super().__init__(message)
        self.stage = stage
        self.message = message


def check_specs(specs, limit, what):
    """The specs of one file, checked and laid out by the judge: dtype
    known, shape a short list of non-negative integers, total size within
    limit. Offsets are recomputed (tensors back to back, in order)."""
    if not isinstance(specs, list) or len(specs) > 4096:
        raise ValueError("%s: malformed specs" % what)
    out, off = [], 0
    for s in specs:
        if not isinstance(s, dict) or s.get("dtype") not in jio.BY_NAME:
            raise ValueError("%s: bad dtype in %r" % (what, s))
        shape = s.get("shape")
        if (not isinstance(shape, list) or len(shape) > MAX_DIMS
                or not all(isinstance(d, int) and not isinstance(d, bool) and 0 <= d < 1 << 40
                           for d in shape)):
            raise ValueError("%s: bad shape in %r" % (what, s))
        n = torch.empty((), dtype=jio.BY_NAME[s["dtype"]]).element_size()
        for d in shape:
            n *= d
        if off + n > limit:
            raise ValueError("%s: more than %d bytes" % (what, limit))
        out.append({"dtype": s["dtype"], "shape": list(shape), "offset": off, "nbytes": n})
        off += n
    return out, off


def read_tensors(dirpath, name, specs, device, limit):
    """The tensors of dirpath/name, laid out as specs say, as the judge's
    own copies on device. The file is opened by jio.open_untrusted's rules
    (no link followed, no FIFO waited on, a regular file of exactly the
    specs' size); ValueError otherwise."""
    if not isinstance(name, str) or "/" in name or name in ("", ".", ".."):
        raise ValueError("bad file name %r" % (name,))
    specs, total = check_specs(specs, limit, name)
    try:
        fd = jio.open_untrusted(dirpath, name, total)
    except OSError as e:
        raise ValueError("%s: %s" % (name, e.strerror))
    try:
        buf = torch.empty(max(1, total), dtype=torch.uint8)
        if total:
            jio.pread_exact(fd, memoryview(buf.numpy())[:total], 0)
    finally:
        os.close(fd)
    out = []
    for s in specs:
        dt = jio.BY_NAME[s["dtype"]]
        if s["nbytes"] == 0:
            out.append(torch.empty(s["shape"], dtype=dt, device=device))
            continue
        raw = buf[s["offset"]:s["offset"] + s["nbytes"]].clone()
        t = raw.view(torch.uint8 if dt == torch.bool else dt).reshape(s["shape"])
        if dt == torch.bool:
            t = t != 0
        out.append(t.to(device))
    return out


def _name(v, default):
    if isinstance(v, str) and 0 < len(v) <= NAME_MAX and v.isprintable():
        return v
    return default


class RefProc:
    def __init__(self, ctx, life_s, base=None):
        """Start the process (its interpreter imports PyTorch meanwhile);
        life_s bounds its whole life (the sandbox's deadline). base: the
        directory of its scratch, stderr and report (ctx.workdir; a
        prestarted one's own, removed by close())."""
        self.ctx = ctx
        self.base = base
        self.copied = False
        # Seconds spent waiting on this process's answers: a candidate's
        # worker deadline does not run while the reference works.
        self.spent = 0.0
        base = base or ctx.workdir
        self.dir = os.path.join(base, "ref")
        os.makedirs(self.dir, exist_ok=True)
        self.limit = max(1 << 20, ctx.mem_bytes)
        self.life_s = int(min(TIMEOUT_MAX_S, life_s))
        argv, env = self.argv()
        self.w = Worker(argv, env, os.path.join(base, "ref.stderr"),
                        time.monotonic() + self.life_s + 5, ctx.timeout_s)

    def problem_dir(self):
        """The directory bound read-only: the problem's own, where the
        sandbox's user may read it; else a judge-made copy of the file
        alone (as root the sandbox runs as nobody, and a 0700 directory,
        mkdtemp's, would be refused)."""
        ctx = self.ctx
        pdir = os.path.dirname(ctx.problem_path)
        st = os.stat(pdir)
        if (os.geteuid() != 0 or not ctx.sandbox
                or (st.st_mode & 0o005) == 0o005 and os.stat(ctx.problem_path).st_mode & 0o004):
            return pdir, ctx.problem_path
        self.copied = True
        own = os.path.join(self.base or ctx.workdir, "problem")
        os.makedirs(own, exist_ok=True)
        os.chmod(own, 0o755)
        dst = os.path.join(own, os.path.basename(ctx.problem_path))
        shutil.copyfile(ctx.problem_path, dst)
        os.chmod(dst, 0o644)
        return own, dst

    def argv(self):
        ctx = self.ctx
        pdir, self.path = self.problem_dir()
        inner = [sys.executable, "-u", ctx.harness_py, "refproc", "--dir", self.dir,
                 "--backend", ctx.backend]
        path = ":".join(dict.fromkeys([os.path.dirname(sys.executable), "/usr/local/cuda/bin",
                                       "/usr/local/bin", "/usr/bin", "/bin"]))
        env = {"PATH": path, "LANG": "C.UTF-8", "HOME": self.dir, "TMPDIR": self.dir,
               "PYTHONDONTWRITEBYTECODE": "1", "CUDA_HOME": "/usr/local/cuda"}
        env.update(ctx.worker_env)
        cuda = ctx.backend == "cuda"
        if not ctx.sandbox:
            # DEVELOPER FALLBACK (KERNELBOT_EVAL_UNSANDBOXED=1): the problem
            # still never runs in the judge, but unconfined.
            if cuda:
                env["CUDA_VISIBLE_DEVICES"] = str(ctx.req.get("device", 0))
            return inner, env
        # The module path's folders (a repository's root, its src/) as the
        # problem's own: read-only, for its imports of its own package.
        outer = sandbox_argv(ctx, "compiler", self.dir, self.life_s,
                             ctx.req.get("device", 0) if cuda else -1, [pdir] + ctx.module_path)
        outer += ["--report", os.path.join(self.base or ctx.workdir, "ref.sandbox.json"),
                  "--mem", str(ctx.mem_bytes),
                  # Eager timing runs on every core for the whole batch:
                  # the default RLIMIT_CPU (600 s) is too small.
                  "--cpu", str(min(SANDBOX_CPU_MAX_S, self.life_s * (os.cpu_count() or 1)))]
        for k, v in sorted(env.items()):
            outer += ["--env", "%s=%s" % (k, v)]
        return outer + ["--"] + inner, dict(ctx.worker_env, PATH=env["PATH"], LANG="C.UTF-8")

    def call(self, cmd, stage, timeout, phase="load"):
        """One request; RefError on a deadline, death or protocol error,
        ProblemFailed when the problem's own code raised."""
        t0 = time.monotonic()
        try:
            if cmd is None:
                return self.w.read_reply("start", timeout)
            # A forward that raises on the judge's changed inputs is the
            # problem's answer, not a broken process: it stays up.
            return self.w.request(cmd, timeout, survive=cmd.get("cmd") == "reference")
        except WorkerError as e:
            if e.kind == "timeout":
                what = STAGE_WHAT.get(stage, "the reference process did not answer '%s' within %%g s"
                                      % stage)
                raise RefError(phase, what % timeout)
            if e.kind == "rejected" and cmd is not None and cmd.get("cmd") == "reference":
                raise ProblemFailed(e.message.split(": ", 1)[-1])
            msg = e.message
            if e.kind == "rejected":	# the problem's own error (import, init, draw, forward)
                msg = msg.split(": ", 1)[-1]
            else:
                msg = msg.replace("worker", "the reference process", 1)
            raise RefError(phase, "%s (%s)" % (msg, stage) if e.kind != "rejected" else msg)
        finally:
            self.spent += time.monotonic() - t0

    def read(self, name, specs):
        # Opened by path each time: as root the sandbox mounts its quota's
        # tmpfs over the directory once the process starts, and the
        # judge's workdir above it is not the sandbox's to change.
        try:
            return read_tensors(self.dir, name, specs, self.ctx.device, self.limit)
        except ValueError as e:
            raise RefError("reference", "the reference process's data: %s" % e)
        finally:
            # Read once into the judge's own memory: the file is gone, so
            # the sets of a GPU-sized problem never pile up in the
            # process's scratch (a quota'd tmpfs, charged to its memory).
            try:
                os.unlink(os.path.join(self.dir, name))
            except OSError:
                pass

    # --- loading ----------------------------------------------------------
    def take_draw_names(self, d):
        """From the first draw's reply: forward's tensor arguments by name
        and its Python numbers (known once inputs were drawn; baked into
        a kernel, and a KernelBench solution's Python worker gets them in
        the manifest)."""
        ctx = self.ctx
        names = d.get("arg_names")
        if isinstance(names, list):
            ctx.forward_names = [_name(v, None) for v in names[:64]]
        sc = d.get("scalars")
        ctx.scalars = [list(e) for e in sc] if isinstance(sc, list) and all(
            isinstance(e, list) and len(e) == 2 and isinstance(e[0], int) for e in sc) else []

    def load(self, seed, trials, trial_seed):
        """The state, every set's inputs and expected outputs, and the
        outputs of one more draw when there is one trial. Fills
        ctx.state, ctx.sets, ctx.forward_names, ctx.init_args, ctx.other."""
        ctx, t = self.ctx, ctx_timeout(self.ctx)
        t0 = time.perf_counter()
        hello = self.call(None, "start", max(HELLO_S, t))
        ctx.breakdown["ref_start"] = time.perf_counter() - t0
        ctx.ref_torch = str(hello.get("torch"))[:100]
        p = ctx.req
        self.call({"cmd": "import", "path": self.path, "class": p.get("class", "Model"),
                   "init_fn": p.get("init_fn", "get_init_inputs"),
                   "inputs_fn": p.get("inputs_fn", "get_inputs"),
                   "variants_fn": p.get("variants_fn", "get_input_variants"),
                   "module_path": ctx.module_path}, "import", t)
        b = self.call({"cmd": "build", "seed": seed}, "build", t)
        st = b.get("state") if isinstance(b.get("state"), list) else None
        if st is None:
            raise RefError("load", "the reference process sent no state")
        tensors = self.read("state.bin", st)
        ctx.state = [(_name(s.get("name"), "state%d" % i), x)
                     for i, (s, x) in enumerate(zip(st, tensors))]
        fixed = b.get("state_fixed")
        # What the model computes (the same under another seed) is not
        # perturbed: a kernel may compute it too. Unknown: all of it.
        ctx.state_fixed = ([f is True for f in fixed] if isinstance(fixed, list)
                           and len(fixed) == len(ctx.state) else [True] * len(ctx.state))
        names = b.get("arg_names") if isinstance(b.get("arg_names"), list) else []
        ctx.forward_names = [_name(v, None) for v in names[:64]]
        init = b.get("init_args")
        ctx.init_args = init if isinstance(init, list) else None
        ctx.sets, n_var = [], None
        for tr in range(trials):
            d = self.call({"cmd": "draw", "trial": tr, "seed": trial_seed(seed, tr),
                           "first": len(ctx.sets)}, "draw", t)
            got = d.get("sets")
            if tr == 0:
                self.take_draw_names(d)
            if not isinstance(got, list) or not got or (n_var is not None and len(got) != n_var):
                raise RefError("load", "the reference process sent %r input sets for trial %d"
                               % (len(got) if isinstance(got, list) else got, tr))
            n_var = len(got)
            for v, s in enumerate(got):
                i = len(ctx.sets)
                if not isinstance(s, dict):
                    raise RefError("load", "malformed set %d" % i)
                args = self.read("in%d.bin" % i, s.get("inputs"))
                exp = self.read("exp%d.bin" % i, s.get("outputs"))
                if not exp:
                    raise RefError("load", "forward returned no tensor for set %d" % i)
                ctx.sets.append({"trial": tr, "variant": v, "args": args, "expected": exp})
        ctx.other = None
        if trials < 2:
            o = self.call({"cmd": "other", "seed": trial_seed(seed, trials)}, "draw", t)
            ctx.other = self.read("other.bin", o.get("outputs"))

    # --- baselines and references ------------------------------------------
    def time(self, fn, sets):
        """[(event_ms, host_ms)] of one flushed run of the baseline fn
        ("eager" or "compile") per set, in order."""
        t = ctx_timeout(self.ctx) * max(1, len(sets))
        r = self.call({"cmd": "time", "fn": fn, "sets": list(sets)}, "time " + fn, t, "reference")
        ev, host = r.get("ev_ms"), r.get("host_ms")
        if (not isinstance(ev, list) or not isinstance(host, list) or len(ev) != len(sets)
                or len(host) != len(sets)
                or not all(isinstance(x, (int, float)) and not isinstance(x, bool) and 0 <= x < 1e9
                           for x in ev + host)):
            raise RefError("reference", "the reference process sent malformed %s timings" % fn)
        return [(float(e), float(h)) for e, h in zip(ev, host)]

    def compile(self, sets):
        """(available, note, outputs on set 0 or None)."""
        ctx = self.ctx
        r = self.call({"cmd": "compile", "sets": list(sets)}, "compile",
                      ctx.build_timeout_s + ctx_timeout(ctx) * (len(sets) + 2), "reference")
        if not r.get("available"):
            note = r.get("note")
            return False, str(note)[:1000] if note else "torch.compile unavailable", None
        return True, None, self.read("cmp.bin", r.get("outputs"))

    def reference(self, k, changes, sample=None):
        r = self.call({"cmd": "reference", "set": k, "changes": changes, "sample": sample},
                      "reference", ctx_timeout(self.ctx), "reference")
        return self.read("ref.bin", r.get("outputs"))

    def close(self):
        if self.w is not None:
            self.w.close()
            self.w = None
        if self.base:
            shutil.rmtree(self.base, ignore_errors=True)
            self.base = None


# --- prestarting (the judge server) ---------------------------------------
# A judge server starts the next request's reference process as soon as a
# request ends, for the same problem and settings (an optimization loop
# evaluates one problem many times): its sandbox, interpreter and PyTorch
# import (seconds, the CUDA context included) then overlap the caller's
# compiles instead of delaying the problem's load. It has imported
# nothing of the problem yet; a request that does not match closes it.
_spare = None	# (key, RefProc)
_swept = False
PREFIX = "kernelbot-ref-"
# Where prestart directories go: the judge server's own private directory
# (set by it), never the TMPDIR of whichever caller spawned it, which that
# caller may expect to find empty once it is done.
BASE = None


def _sweep():
    """Remove the prestart directories of judge servers that are gone (a
    server killed with SIGKILL cannot remove its own; its processes died
    with it): BASE/kernelbot-ref-PID-*, ours, PID not running."""
    tmp = BASE or tempfile.gettempdir()
    try:
        names = os.listdir(tmp)
    except OSError:
        return
    for n in names:
        parts = n[len(PREFIX):].split("-", 1)
        if not n.startswith(PREFIX) or len(parts) != 2 or not parts[0].isdigit():
            continue
        pid = int(parts[0])
        try:
            os.kill(pid, 0)
            continue
        except ProcessLookupError:
            pass
        except PermissionError:
            continue
        p = os.path.join(tmp, n)
        try:
            if os.lstat(p).st_uid == os.getuid():
                _unmount_quotas(p)
                shutil.rmtree(p, ignore_errors=True)
        except OSError:
            pass


def _unmount_quotas(top):
    """Detach the disk-quota tmpfs mounts (gpu/sandbox_disk.c, source
    "kb-scratch") left beneath top: their janitor unmounts them when the
    sandboxed process ends, but a kill of the whole service (SIGKILL to
    its cgroup) takes the janitor too, and each leftover holds its files
    in memory and the directory against removal."""
    import ctypes
    try:
        with open("/proc/self/mountinfo") as f:
            lines = f.read().splitlines()
    except OSError:
        return
    libc = ctypes.CDLL(None, use_errno=True)
    for line in reversed(lines):	# the innermost first
        pre, _, post = line.partition(" - ")
        f, g = pre.split(), post.split()
        if len(f) < 5 or len(g) < 2 or g[0] != "tmpfs" or g[1] != "kb-scratch":
            continue
        # mountinfo escapes space, tab, newline and backslash as \ooo
        mp = re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), f[4])
        if mp.startswith(top.rstrip("/") + "/"):
            libc.umount2(mp.encode(), 2 | 8)	# MNT_DETACH | UMOUNT_NOFOLLOW


def _key(ctx):
    return json.dumps([ctx.problem_path, ctx.module_path, ctx.backend, ctx.req.get("device", 0),
                       ctx.kernelbot, ctx.sandbox, ctx.mem_bytes, sorted(ctx.worker_env.items()),
                       bool(ctx.req.get("allow_degraded")), ctx.harness_py, sys.executable])


def prestart(ctx):
    """Start a reference process for a request like ctx's (the judge
    server, after a request)."""
    global _spare, _swept
    drop_spare()
    if not _swept:
        _swept = True
        _sweep()
    ref = RefProc(ctx, TIMEOUT_MAX_S, base=tempfile.mkdtemp(prefix="%s%d-" % (PREFIX, os.getpid()),
                                                         dir=BASE))
    if ref.copied:
        # A copy of the problem file would be stale by the next request.
        ref.close()
        return
    _spare = (_key(ctx), ref)


def take_spare(ctx):
    """The prestarted reference process when it matches ctx and still
    runs, adopted by ctx; else None (and it is closed)."""
    global _spare
    if _spare is None:
        return None
    key, ref = _spare
    _spare = None
    if key != _key(ctx) or ref.w is None or ref.w.proc.poll() is not None:
        print("judge: the prestarted reference process is not used (%s)"
              % ("another request" if key != _key(ctx) else "it exited: %s"
                 % ref.w.stderr_tail()[-300:]), file=sys.stderr)
        ref.close()
        return None
    ref.ctx = ctx
    ref.w.per_request = ctx.timeout_s
    return ref


def drop_spare():
    global _spare
    if _spare is not None:
        _spare[1].close()
        _spare = None


def ctx_timeout(ctx):
    return ctx.timeout_s


__all__ = ["RefProc", "RefError", "ProblemFailed", "read_tensors"]
