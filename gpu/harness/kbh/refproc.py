"""The reference process (docs/evaluation.md, "The reference process").

`harness.py refproc --dir SCRATCH --backend B` runs inside `kernelbot
sandbox-exec --profile compiler`: the only process of an evaluation that
imports the problem module (repository code, untrusted). It sees the
problem's directory read-only, writes only its scratch, has no network and
an environment built from nothing. The judge talks to it over JSON lines
(one request, one reply, like the worker protocol) and reads what it
writes as data: raw tensors in files whose names, sizes and layout the
judge decides, never objects.

Requests ({"cmd": ...}; every reply is {"ok": true, ...} or {"ok": false,
"error": text, "stage": s}):

- (none) the hello, sent once torch is imported and the device set up:
  {"torch", "device"}.
- import {path, class, init_fn, inputs_fn, variants_fn}: import the module.
- build {seed}: the model under the seed; writes state.bin (named
  parameters then buffers); replies their specs, forward's argument
  names, the init args (when plain JSON) and "state_fixed": per state
  tensor, whether a second build under another seed gave it bit for bit
  (computed by the model, not drawn: frequencies, masks, position ids;
  null when that build failed).
- draw {trial, seed, first}: the main inputs and every variant under the
  seed, the reference forward on each; writes in<i>.bin (forward's
  arguments) and exp<i>.bin (outputs), i = first, first+1, ...; replies
  their specs.
- other {seed}: the main inputs of one more draw, their outputs in
  other.bin (the degenerate check of a one-trial evaluation).
- compile {sets}: torch.compile built, warmed on those sets, its outputs
  on set 0 in cmp.bin for the judge to check.
- time {fn: eager|compile, sets}: one flushed, timed run per set (the
  judge's baseline timer, kbh/judge_timing.py); {ev_ms, host_ms}.
- reference {set, changes, sample}: forward on set k after the element
  changes [[input, hex int64 positions, hex values], ...] (little-endian;
  kbh/judge_perturb.py), an entry [input, a, b, positions, values] with a
  refresh of the input first (element e from (a*e + b) mod n), one
  [input, a, b, windows, bands, positions, values] with a refresh from
  the windows of the input's source (kbh/judge_skew.py; its bands from
  set `bands`'s draw of the input, -1 its own); inputs
  are forward's arguments, then the model's state (state.bin's order): a
  changed state tensor goes in as the model's for this forward only
  (functional_call), the model itself stays as built;
  outputs in ref.bin, whole or (sample [a, b, m]) the m elements at
  (a + j*b) mod n of each output of n > m elements.
- quit.
"""
import json
import os
import sys
import time

KEEP_TRIALS = 3		# the judge's MAX_TIMING_SETS
FIXED_SEED_XOR = 0x5DEECE66D	# the second build's seed (fixed_state)


_out = None	# the protocol's stream: the real stdout, kept apart


def _reply(obj):
    _out.write(json.dumps(obj) + "\n")
    _out.flush()


def _spec(name, t, jio):
    return {"name": name, "dtype": jio.dtype_name(t), "shape": list(t.shape), "nbytes": jio.nbytes(t)}


class Ref:
    def __init__(self, scratch, backend):
        import torch
        from kbh import judge_io as jio
        from kbh import judge_skew as skew
        from kbh import judge_timing as jt
        self.torch, self.jio, self.jt, self.skew = torch, jio, jt, skew
        self.sources = {}	# (set, input, bands' set) -> the input's refresh source
        self.scratch = scratch
        if backend == "cuda":
            if not torch.cuda.is_available():
                raise RuntimeError("backend cuda requested but PyTorch sees no GPU")
            # Inside the sandbox the one visible GPU is device 0.
            self.device = torch.device("cuda", 0)
            torch.cuda.set_device(self.device)
            # The truth for an fp32 problem is fp32 (cuDNN allows TF32 by
            # default); eager is timed the same way.
            torch.backends.cuda.matmul.allow_tf32 = False
            torch.backends.cudnn.allow_tf32 = False
            self.device_name = torch.cuda.get_device_name(self.device)
        else:
            self.device = torch.device("cpu")
            self.device_name = "cpu"
        self.staging = jio.Staging(self.device) if backend == "cuda" else None
        self.problem = self.model = self.timer = self.compiled = None
        self.state = []
        self.sets = {}

    def write(self, name, named):
        return self.jio.write_set(os.path.join(self.scratch, name), named, self.staging)

    def cmd_import(self, r):
        from kbh import judge_problem as jp
        self.problem = jp.Problem(r["path"], r.get("class", "Model"), r.get("init_fn", "get_init_inputs"),
                                  r.get("inputs_fn", "get_inputs"), r.get("variants_fn", "get_input_variants"),
                                  r.get("module_path") or [])
        return {"sha256": self.problem.sha256}

    def cmd_build(self, r):
        from kbh import judge_problem as jp
        self.model = self.problem.build(int(r["seed"]), self.device)
        state = jp.state_tensors(self.model)
        self.state = state
        self.write("state.bin", state)
        fixed = self.fixed_state(int(r["seed"]), state)
        init = self.problem.init_args()
        try:
            json.dumps(init, allow_nan=False)
        except (TypeError, ValueError):
            init = None
        return {"state": [_spec(n, t, self.jio) for n, t in state], "init_args": init,
                "arg_names": jp.arg_names(self.model, 64), "state_fixed": fixed}

    def fixed_state(self, seed, state):
        """Per state tensor, whether the model computes it rather than
        draws it: the same, bit for bit, in a build under another seed.
        None when there is no state or that build fails."""
        from kbh import judge_problem as jp
        if not state:
            return []
        try:
            other = dict(jp.state_tensors(self.problem.build(seed ^ FIXED_SEED_XOR, self.device)))
        except Exception:
            return None
        out = []
        for n, t in state:
            o = other.get(n)
            out.append(o is not None and o.dtype == t.dtype and o.shape == t.shape
                       and bool(self.torch.equal(o.reshape(-1).view(self.torch.uint8),
                                                 t.reshape(-1).view(self.torch.uint8))))
        del other
        return out

    def forward(self, args, what, state=None):
        """The model on args; with state {name: tensor}, those of its
        parameters and buffers replaced for this call only."""
        from kbh import judge_problem as jp
        torch = self.torch
        with torch.no_grad():
            try:
                if state:
                    outs = jp.as_outputs(_functional_call(torch)(self.model, state, tuple(args)))
                else:
                    outs = jp.as_outputs(self.model(*args))
            except jp.ProblemError:
                raise
            except Exception as e:
                raise jp.ProblemError("the reference failed on %s: %s: %s"
                                      % (what, type(e).__name__, e))
        return [o.detach().contiguous() for o in outs]

    def cmd_draw(self, r):
        from kbh import judge_problem as jp
        t, i = int(r["trial"]), int(r["first"])
        sets = []
        for v, args in enumerate(self.problem.draw(int(r["seed"]), self.device)):
            outs = self.forward(args, "input set %d/%d" % (t, v))
            if v == 0 and t < KEEP_TRIALS:
                # What later requests name: the timing sets (the main inputs
                # of the first trials) and set 0; the rest lives in the
                # judge only.
                self.sets[i] = args
            ins = self.write("in%d.bin" % i, [("arg%d" % j, a) for j, a in enumerate(args)])
            self.write("exp%d.bin" % i, [("out%d" % j, o) for j, o in enumerate(outs)])
            sets.append({"inputs": [dict(e, name=None) for e in ins],
                         "outputs": [_spec("out%d" % j, o, self.jio) for j, o in enumerate(outs)]})
            i += 1
        # forward's tensor arguments by name, now that its Python numbers are known.
        return {"sets": sets, "arg_names": jp.arg_names(self.model, 64),
                "scalars": self.problem.scalars or []}

    def cmd_other(self, r):
        args = self.problem.draw(int(r["seed"]), self.device)[0]
        outs = self.forward(args, "one more draw")
        self.write("other.bin", [("out%d" % j, o) for j, o in enumerate(outs)])
        return {"outputs": [_spec("out%d" % j, o, self.jio) for j, o in enumerate(outs)]}

    def _timer(self):
        if self.timer is None:
            self.timer = self.jt.Timer(self.device)
        return self.timer

    def _args(self, k):
        if k not in self.sets:
            raise ValueError("no input set %r" % (k,))
        return self.sets[k]

    def cmd_compile(self, r):
        from kbh import judge_problem as jp
        args = [self._args(int(k)) for k in r["sets"]]
        fn, note = self.jt.compiled(self.model)
        if fn is None:
            return {"available": False, "note": note}
        try:
            self._timer().time(fn, args + args[:1])
            with self.torch.no_grad():
                outs = [o.detach().contiguous() for o in jp.as_outputs(fn(*self._args(0)))]
        except Exception as e:
            return {"available": False, "note": "torch.compile failed: %s: %s"
                    % (type(e).__name__, str(e)[:300])}
        self.compiled = fn
        self.write("cmp.bin", [("out%d" % j, o) for j, o in enumerate(outs)])
        return {"available": True, "note": None,
                "outputs": [_spec("out%d" % j, o, self.jio) for j, o in enumerate(outs)]}

    def cmd_time(self, r):
        fn = self.model if r.get("fn") == "eager" else self.compiled
        if fn is None:
            raise ValueError("no %s baseline" % r.get("fn"))
        got = self._timer().time(fn, [self._args(int(k)) for k in r["sets"]])
        return {"ev_ms": [e for e, _ in got], "host_ms": [h for _, h in got]}

    def cmd_reference(self, r):
        torch = self.torch
        k = int(r["set"])
        args = list(self._args(k))
        nargs = len(args)
        args += [t for _, t in self.state]
        for ch in r.get("changes") or []:
            j, hexpos, hexval = int(ch[0]), ch[-2], ch[-1]
            if not 0 <= j < len(args):
                raise ValueError("reference: no input %d" % j)
            t = args[j].detach().clone()
            flat = t.reshape(-1)
            if len(ch) in (5, 7, 8):
                # A refresh first: element e from (a * e + b) mod n of the
                # windows of the input's source (kbh/judge_skew.py; its
                # bands from set ch[4]'s draw, -1 its own), or of the
                # input itself without them; then ch[5]'s mask.
                a, b, n = int(ch[1]), int(ch[2]), flat.numel()
                wins = [int(x) for x in ch[3]] if len(ch) >= 7 else []
                k2 = int(ch[4]) if len(ch) >= 7 else -1
                m = int(ch[5]) if len(ch) == 8 else 0
                if not (0 < a < n and 0 <= b < n < (1 << 31)) or (
                        wins and not self.skew.valid(n, self.skew.source_len(n), wins)) or (
                        m and not (t.dtype in (torch.float32, torch.float64) and
                                   0 < m < 1 << self.skew.MASK_BITS[t.element_size()])):
                    raise ValueError("reference: a refresh out of range for input %d" % j)
                orig = args[j].detach().reshape(-1)
                if wins:
                    if (k, j, k2) not in self.sources:
                        other = None
                        if k2 >= 0:
                            other = (list(self._args(k2)) + [t for _, t in self.state])[j]
                        self.sources[(k, j, k2)] = self.skew.source_of(orig, other)
                    orig = self.sources[(k, j, k2)]
                self.skew.rebuild(orig, n, a, b, wins, m, out=flat)
            n = len(hexpos) // 16
            pos = self.jio.from_bytes(bytes.fromhex(hexpos), "int64", [n]).to(flat.device)
            if n and (int(pos.min()) < 0 or int(pos.max()) >= flat.numel()):
                raise ValueError("reference: a change outside input %d" % j)
            vals = self.jio.from_bytes(bytes.fromhex(hexval), self.jio.dtype_name(t),
                                       [n]).to(flat.device)
            flat[pos] = vals
            args[j] = t
        state = {n: t for (n, t0), t in zip(self.state, args[nargs:]) if t is not t0}
        outs = self.forward(args[:nargs], "the perturbed input set %d" % k, state)
        if r.get("sample"):
            a, b, m = (int(x) for x in r["sample"])
            for j, o in enumerate(outs):
                n = max(1, o.numel())
                if n > m:
                    idx = (a % n + torch.arange(m, dtype=torch.int64, device=o.device) * (b % n)) % n
                    outs[j] = o.reshape(-1)[idx]
        self.write("ref.bin", [("out%d" % j, o) for j, o in enumerate(outs)])
        return {"outputs": [_spec("out%d" % j, o, self.jio) for j, o in enumerate(outs)]}


def _functional_call(torch):
    """torch.func.functional_call (torch 2), or its torch 1 name."""
    fn = getattr(getattr(torch, "func", None), "functional_call", None)
    if fn is None:
        from torch.nn.utils import stateless
        fn = stateless.functional_call
    return fn


def main(argv):
    opts = dict(zip(argv[0::2], argv[1::2]))
    scratch, backend = opts.get("--dir"), opts.get("--backend", "cpu")
    # Replies go to the real stdout only: a problem's prints (Python's or
    # a library's on fd 1) go to stderr and cannot break the protocol.
    global _out
    _out = os.fdopen(os.dup(1), "w")
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    try:
        ref = Ref(scratch, backend)
    except Exception as e:
        _reply({"ok": False, "stage": "start", "error": "%s: %s" % (type(e).__name__, e)})
        return 1
    from kbh import judge_problem as jp
    _reply({"ok": True, "torch": ref.torch.__version__, "device": ref.device_name})
    for line in sys.stdin:
        try:
            r = json.loads(line)
            cmd = r.get("cmd")
        except (ValueError, AttributeError):
            _reply({"ok": False, "stage": "request", "error": "bad request"})
            continue
        if cmd == "quit":
            break
        fn = getattr(ref, "cmd_%s" % cmd, None) if isinstance(cmd, str) else None
        t0 = time.perf_counter()
        try:
            if fn is None:
                raise ValueError("unknown command %r" % (cmd,))
            rep = fn(r)
            rep.update({"ok": True, "s": time.perf_counter() - t0})
        except jp.ProblemError as e:
            rep = {"ok": False, "stage": "load", "error": str(e)[:4000]}
        except Exception as e:
            rep = {"ok": False, "stage": cmd if isinstance(cmd, str) else "request",
                   "error": "%s: %s" % (type(e).__name__, str(e)[:4000])}
        _reply(rep)
    return 0
