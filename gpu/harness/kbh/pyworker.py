"""The worker for KernelBench-format solutions (ModelNew, usually built with
load_inline): the slow path of docs/evaluation.md. Started by the judge as
`harness.py pyworker ...` through `kernelbot sandbox-exec --profile
compiler` (load_inline runs nvcc and ninja), it speaks the native worker's
JSON-line protocol and reads the same input files.

It is untrusted like the native worker: it never holds expected outputs.
The reference model never ran in this process, so a ModelNew that returns
torch.empty() it never writes cannot find the reference's result in freed
memory; and before every call the allocator's block of each output size
is filled with poison (the judge's value for that run, drawn alike for
trials and timed runs), so such an output shows up as unwritten. A timed
run's outputs are copied as the call returns: a dump reads that copy.
"""
import argparse
import json
import os
import struct
import sys
import time

DEFER_S = 0.005
PATTERNS = {1: (0xA5, 0x5A), 2: (0x7DA5, 0x7DB5), 4: (0x7FA5A5A5, 0x7FB5B5B5),
            8: (0x7FA5A5A57FA5A5A5, 0x7FB5B5B57FB5B5B5)}


def _reply(out, obj, fds=()):
    """One reply line; fds (the sealed snapshots of a time request) go
    with it as SCM_RIGHTS when out is a socket (the judge's socket pair)."""
    line = (json.dumps(obj) + "\n").encode()
    if fds:
        import socket
        sock = socket.socket(fileno=os.dup(out.fileno()))
        try:
            sent = socket.send_fds(sock, [line], list(fds))
            sock.sendall(line[sent:])
        finally:
            sock.close()
        return
    out.write(line)
    out.flush()


def _is_socket(f):
    import stat
    try:
        return stat.S_ISSOCK(os.fstat(f.fileno()).st_mode)
    except OSError:
        return False


def _seal(outs, host_bytes):
    """A memfd holding outs back to back, sealed against writes and
    resizing (the native worker's sealed snapshot); its fd. host_bytes(o):
    o's bytes as a host buffer."""
    import fcntl
    fd = os.memfd_create("kb-snapshot", os.MFD_CLOEXEC | os.MFD_ALLOW_SEALING)
    try:
        for o in outs:
            mv = memoryview(host_bytes(o)).cast("B")
            done = 0
            while done < len(mv):
                done += os.write(fd, mv[done:])
        fcntl.fcntl(fd, fcntl.F_ADD_SEALS, fcntl.F_SEAL_WRITE | fcntl.F_SEAL_SHRINK
                    | fcntl.F_SEAL_GROW | fcntl.F_SEAL_SEAL)
    except BaseException:
        os.close(fd)
        raise
    return fd


class PyWorker:
    def __init__(self, args, out):
        import torch
        from kbh import judge_io as jio
        from kbh import judge_problem as jp
        self.torch, self.jio, self.jp = torch, jio, jp
        self.args, self.out = args, out
        with open(os.path.join(args.dir, "manifest.json")) as f:
            self.manifest = json.load(f)
        self.sets = self.manifest["sets"]
        self.cuda = args.backend == "cuda"
        self.device = torch.device("cuda", 0) if self.cuda else torch.device("cpu")
        self.slots = {}
        self.last = {}
        self.sealing = _is_socket(out) and hasattr(os, "memfd_create")
        self.fds = []		# sealed snapshots for the reply being built
        if self.cuda:
            torch.cuda.set_device(self.device)
            l2 = getattr(torch.cuda.get_device_properties(self.device), "L2_cache_size", 0) or (64 << 20)
            self.flush_buf = torch.empty(2 * l2, dtype=torch.uint8, device=self.device)
            self.ev = [torch.cuda.Event(enable_timing=True) for _ in range(2)]
        else:
            self.flush_buf = torch.empty(64 << 20, dtype=torch.uint8)
        self.flushes = 0
        self.prepared = {}	# set -> its prepared run's poison
        self.params = []	# the model's state tensors, where the reference's reach it
        self.pristine = None	# their values as built, kept once the judge changes one
        self.states = {}	# set -> its state as the judge changed it
        self.loaded = -1	# the set whose changed state the model holds; -1: as built

    def build(self):
        torch, jp = self.torch, self.jp
        t0 = time.perf_counter()
        mod = jp.load_module(self.args.solution, prefix="kbh_solution")
        cls = getattr(mod, self.args.cls, None)
        if cls is None:
            raise jp.ProblemError("%s defines no %s" % (self.args.solution, self.args.cls))
        init = self.manifest.get("init_args")
        if init is None:
            raise jp.ProblemError("the problem's init arguments are not JSON values")
        torch.manual_seed(int(self.manifest.get("seed", 0)))
        # forward's Python numbers, as the reference drew them: ModelNew
        # takes the same arguments as Model.
        scalars = [tuple(e) for e in self.manifest.get("scalars") or []]
        model = jp.bind_scalars(cls(*init).eval().to(self.device), scalars)
        # The reference's parameters travel with the inputs; a ModelNew
        # with the same names and shapes gets exactly them. Every set
        # holds them: read from the first whose file is here (a fresh
        # process gets a timing set's only before its run there).
        k0 = next((k for k, s in enumerate(self.sets)
                   if os.path.exists(os.path.join(self.args.dir, s["file"]))), 0)
        s0 = self.sets[k0]
        state = {e["name"]: e for e in s0["inputs"][s0["n_args"]:]}
        own = dict(model.state_dict())
        if state and all(k in own and list(own[k].shape) == state[k]["shape"]
                         and self.jio.DTYPES.get(own[k].dtype) == state[k]["dtype"] for k in state):
            tensors = self.load_tensors(k0)[s0["n_args"]:]
            with torch.no_grad():
                for (name, _), t in zip(state.items(), tensors):
                    own[name].copy_(t)
            self.params_from_reference = True
            # The tensors a set's state (the inputs past forward's
            # arguments, which the judge perturbs) is copied into.
            self.params = [own[name] for name in state]
        else:
            self.params_from_reference = False
            self.params = []
        self.model = model
        return time.perf_counter() - t0

    def load_tensors(self, k):
        s = self.sets[k]
        with open(os.path.join(self.args.dir, s["file"]), "rb") as f:
            data = f.read()
        return [self.jio.from_bytes(data[e["offset"]:e["offset"] + e["nbytes"]], e["dtype"],
                                    e["shape"]).to(self.device) for e in s["inputs"]]

    def slot(self, k):
        if k not in self.slots:
            ts = self.load_tensors(k)
            n = self.sets[k]["n_args"]
            self.slots[k] = (ts[:n], [t.clone() for t in ts[:n]])
        return self.slots[k]

    def inputs(self, k, change=False):
        """Set k's inputs as the judge addresses them: forward's arguments,
        then the model's state where it reaches the model (set k's own
        copy once the judge changes it: made on the first change, so
        sets never changed hold none)."""
        args = self.slot(k)[0]
        if not self.params:
            return list(args)
        if change and k not in self.states:
            if self.pristine is None:
                self.pristine = [t.detach().clone() for t in self.params]
            self.states[k] = [t.clone() for t in self.pristine]
        return list(args) + self.states.get(k, self.pristine or self.params)

    def forward_args(self, k):
        """Set k's forward arguments, the model holding set k's state (a
        copy, outside the timed call, where another set's was there)."""
        want = k if k in self.states else -1	# every set's state as built is the same
        if self.params and self.loaded != want:
            with self.torch.no_grad():
                for dst, src in zip(self.params, self.states.get(k, self.pristine)):
                    dst.copy_(src)
            self.loaded = want
        return self.slot(k)[0]

    def patterns(self, k, poison, runs, run, dflt):
        """Run `run` of `runs`' poison for set k's outputs, as signed
        integers of each element's size: the request's "poison" (one list
        per run of one hex string per output), or the fixed pattern dflt."""
        torch, out = self.torch, []
        specs = self.sets[k]["outputs"]
        if poison is not None and (not isinstance(poison, list) or len(poison) != runs
                                   or not isinstance(poison[run], list)
                                   or len(poison[run]) != len(specs)):
            raise ValueError("poison holds one list per run of one value per output")
        for i, spec in enumerate(specs):
            es = torch.empty(0, dtype=self.jio.BY_NAME[spec["dtype"]]).element_size()
            if poison is None:
                out.append(PATTERNS.get(es, PATTERNS[1])[dflt])
                continue
            b = bytes.fromhex(poison[run][i])
            if len(b) != es:
                raise ValueError("poison[%d][%d]: not %d bytes" % (run, i, es))
            out.append(int.from_bytes(b, "little"))
        return out

    def poison_allocator(self, k, pats):
        torch = self.torch
        for spec, pat in zip(self.sets[k]["outputs"], pats):
            es = torch.empty(0, dtype=self.jio.BY_NAME[spec["dtype"]]).element_size()
            view = {1: torch.uint8, 2: torch.int16, 4: torch.int32, 8: torch.int64}[es]
            n = max(1, spec["nbytes"] // es)
            block = torch.empty(n, dtype=view, device=self.device)
            block.fill_(pat - (1 << (8 * es)) if pat >= 1 << (8 * es - 1) else pat)
            del block

    def call(self, args):
        torch = self.torch
        with torch.no_grad():
            out = self.model(*args)
        if self.cuda:
            torch.cuda.synchronize()
        return self.jp.as_outputs(out)

    def check_shapes(self, k, outs):
        specs = self.sets[k]["outputs"]
        if len(outs) != len(specs):
            return "ModelNew returned %d outputs, expected %d" % (len(outs), len(specs))
        for i, (o, s) in enumerate(zip(outs, specs)):
            if list(o.shape) != s["shape"] or self.jio.DTYPES.get(o.dtype) != s["dtype"]:
                return "out%d: %s %s, expected %s %s" % (i, self.jio.DTYPES.get(o.dtype, o.dtype),
                                                        list(o.shape), s["dtype"], s["shape"])
        return None

    def unwritten(self, outs, pats):
        counts = []
        for o, pat in zip(outs, pats):
            es = o.element_size()
            view = {1: self.torch.uint8, 2: self.torch.int16, 4: self.torch.int32,
                    8: self.torch.int64}[es]
            pat = pat - (1 << (8 * es)) if pat >= 1 << (8 * es - 1) else pat
            flat = o.detach().contiguous().reshape(-1)
            if o.dtype == self.torch.bool:
                flat = flat.to(self.torch.uint8)
            counts.append(int((flat.view(view) == pat).sum()) if flat.numel() else 0)
        return counts

    def write(self, outs, tag, run):
        files = []
        for i, o in enumerate(outs):
            path = os.path.join(self.args.scratch, "%s_r%d_o%d.bin" % (tag, run, i))
            with open(path, "wb") as f:
                f.write(self.jio.to_bytes(o))
            files.append(path)
        return files

    def cmd_run(self, k, tag, poison=None):
        args, pristine = self.slot(k)
        rc, files, unw, late, mod = [], [], [], [], []
        pats = [self.patterns(k, poison, 2, run, run) for run in (0, 1)]
        for run in (0, 1):
            fargs = self.forward_args(k)
            self.poison_allocator(k, pats[run])
            outs = self.call(fargs)
            bad = self.check_shapes(k, outs)
            if bad:
                return {"ok": True, "shape_error": bad}
            first = [self.jio.to_bytes(o) for o in outs]
            time.sleep(DEFER_S)
            if self.cuda:
                self.torch.cuda.synchronize()
            late.append(sum(a != self.jio.to_bytes(o) for a, o in zip(first, outs)))
            unw.append(self.unwritten(outs, pats[run]))
            for i, (a, p) in enumerate(zip(args, pristine)):
                if not self.torch.equal(a, p):
                    mod.append(self.sets[k]["inputs"][i]["name"])
                    a.copy_(p)
            files.append(self.write(outs, tag, run))
            rc.append(0)
        return {"ok": True, "rc": rc, "files": files, "unwritten": unw,
                "changed_after_return": late, "inputs_modified": mod}

    def host_bytes(self, o):
        """o's bytes on the host: on CUDA through one page-locked buffer
        kept between runs (what the native worker does), not a fresh
        pageable copy of hundreds of MiB a run."""
        torch = self.torch
        if not o.is_cuda:
            return self.jio.to_array(o)
        flat = o.detach().contiguous().reshape(-1)
        n = flat.numel() * flat.element_size()
        if getattr(self, "_host", None) is None or self._host.numel() < n:
            self._host = None
            self._host = torch.empty(max(n, 1), dtype=torch.uint8, pin_memory=True)
        h = self._host[:n]
        if n:
            h.copy_(flat.view(torch.uint8))
        return h.numpy()

    def perturb(self, k, changes):
        """Write the judge's [input, element, hex] changes into set k's
        inputs (the native worker's "perturb", docs/evaluation.md)."""
        specs = self.sets[k]["inputs"]
        n = self.sets[k]["n_args"]
        args = self.inputs(k, change=any(int(j) >= n for j, _, _ in changes))
        by_arg = {}
        for j, e, hx in changes:
            j = int(j)
            by_arg.setdefault(j, ([], []))
            if isinstance(e, str):
                # Packed: int64 positions and the values back to back, in hex.
                pos = bytes.fromhex(e)
                if len(pos) % 8:
                    raise ValueError("perturb: packed positions are not int64s")
                if not 0 <= j < len(args):
                    raise ValueError("perturb: no input %d" % j)
                # Split by the input's element size, not the string's.
                w = 2 * args[j].element_size()
                if len(hx) != len(pos) // 8 * w:
                    raise ValueError("perturb: %d packed values of input %d are not %d bytes "
                                     "each in hex" % (len(pos) // 8, j, w // 2))
                by_arg[j][0].extend(struct.unpack("<%dq" % (len(pos) // 8), pos))
                by_arg[j][1].extend(hx[i:i + w] for i in range(0, len(hx), w))
            else:
                by_arg[j][0].append(int(e))
                by_arg[j][1].append(hx)
            if j >= n and self.loaded == k:
                self.loaded = None	# the state changed: copied in before the call
        # One indexed write per input: thousands of changes a run.
        for j, (pos, hexes) in by_arg.items():
            if not 0 <= j < len(args):
                raise ValueError("perturb: no input %d" % j)
            flat = args[j].view(-1)
            es = args[j].element_size()
            if any(len(h) != 2 * es for h in hexes):
                raise ValueError("perturb: the value is not %d bytes in hex" % es)
            p = self.torch.tensor(pos, dtype=self.torch.int64)
            if len(pos) and (int(p.min()) < 0 or int(p.max()) >= flat.numel()):
                raise ValueError("perturb: an element outside input %d" % j)
            v = self.jio.from_bytes(bytes.fromhex("".join(hexes)), specs[j]["dtype"], [len(pos)])
            flat[p.to(flat.device)] = v.to(flat.device)

    def poison_flush(self, k, pats):
        """A timed run's poison for set k's outputs, then the cache flushed."""
        self.poison_allocator(k, pats)
        self.flushes += 1
        self.flush_buf.fill_(self.flushes & 0xFF)

    def cmd_prepare(self, k, poison=None):
        """What comes before set k's next timed run, in a request of its
        own (the native worker's "prepare"): poison, flush, synchronize."""
        t0 = time.perf_counter()
        pats = self.patterns(k, poison, 1, 0, 0)
        self.slot(k)
        self.poison_flush(k, pats)
        if self.cuda:
            self.torch.cuda.synchronize()
        self.prepared[k] = pats
        return {"ok": True, "overhead_ms": (time.perf_counter() - t0) * 1e3}

    def cmd_time(self, sets, perturb=None, poison=None, prepared=False, mark=None):
        """mark: sends the mark just before the call (a prepared run;
        the native worker's "mark", docs/evaluation.md)."""
        torch = self.torch
        ev, host, over = [], [], 0.0
        if perturb is not None and len(perturb) != len(sets):
            raise ValueError("time: perturb holds one list per timed run")
        if mark is not None and not prepared:
            raise ValueError("time: mark only when prepared")
        if prepared:
            if len(sets) != 1 or sets[0] not in self.prepared:
                raise ValueError("time: prepared runs one set, after its prepare")
            pats = [self.prepared.pop(sets[0])]
        else:
            pats = [self.patterns(k, poison, len(sets), i, 0) for i, k in enumerate(sets)]
        for i, k in enumerate(sets):
            self.slot(k)
            t0 = time.perf_counter()
            if not prepared:
                self.poison_flush(k, pats[i])
            if perturb:
                self.perturb(k, perturb[i])
            fargs = self.forward_args(k)
            if self.cuda:
                torch.cuda.synchronize()
            over += time.perf_counter() - t0
            if mark is not None:
                mark()
            t1 = time.perf_counter()
            with torch.no_grad():
                if self.cuda:
                    self.ev[0].record()
                    out = self.model(*fargs)
                    self.ev[1].record()
                    torch.cuda.synchronize()
                    h = (time.perf_counter() - t1) * 1e3
                    e = self.ev[0].elapsed_time(self.ev[1])
                else:
                    out = self.model(*fargs)
                    h = e = (time.perf_counter() - t1) * 1e3
            # The snapshot a dump reads, at once: not what a thread the
            # model started writes into its outputs later.
            t2 = time.perf_counter()
            self.last[k] = ([o.detach().clone() for o in self.jp.as_outputs(out)], pats[i])
            if self.cuda:
                torch.cuda.synchronize()
            if self.sealing and len(sets) <= 16:
                self.fds.append(_seal(self.last[k][0], self.host_bytes))
            over += time.perf_counter() - t2
            ev.append(e)
            host.append(h)
        return {"ok": True, "rc": 0, "ev_ms": ev, "host_ms": host, "overhead_ms": over * 1e3,
                "sealed": len(self.fds)}

    def cmd_dump(self, k, tag, sample=None, n_in=0):
        """The last timed run's outputs; with sample [a, b, m] only the m
        elements (a + j*b) mod n of each output of n > m elements (the
        native worker's rule, docs/evaluation.md)."""
        if k not in self.last:
            return {"ok": False, "stage": "dump", "error": "set %d was never timed" % k}
        outs, pats = self.last[k]
        unw = self.unwritten(outs, pats)
        ins = self.inputs(k)[:int(n_in)]
        if sample is not None:
            a, b, m = (int(x) for x in sample)
            outs, ins = self.sample(outs, a, b, m), self.sample(ins, a, b, m)
        return {"ok": True, "files": self.write(outs, tag, 0), "unwritten": unw,
                "in_files": self.write(ins, tag + "_in", 0)}

    def sample(self, ts, a, b, m):
        picked = []
        for o in ts:
            flat = o.detach().contiguous().reshape(-1)
            n = flat.numel()
            if 0 < m < n:
                j = self.torch.arange(m, dtype=self.torch.int64, device=flat.device)
                flat = flat[(a % n + j * (b % n)) % n]
            picked.append(flat)
        return picked


def _tag(c):
    """Tags become file names: [A-Za-z0-9_] only."""
    return "".join(ch if ch.isalnum() or ch == "_" else "_" for ch in str(c.get("tag", "out")))[:32]


def main(argv):
    p = argparse.ArgumentParser(prog="harness.py pyworker")
    p.add_argument("--solution", required=True)
    p.add_argument("--dir", required=True)
    p.add_argument("--scratch", required=True)
    p.add_argument("--backend", default="cuda", choices=("cpu", "cuda"))
    p.add_argument("--class", dest="cls", default="ModelNew")
    args = p.parse_args(argv)
    sys.stdout.flush()
    out = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    try:
        w = PyWorker(args, out)
        build_s = w.build()
    except Exception as e:
        _reply(out, {"ok": False, "stage": "load", "error": "%s: %s" % (type(e).__name__, str(e)[:3000])})
        return 3
    _reply(out, {"ok": True, "hello": 1, "lockdown": "compiler-profile", "build_s": build_s,
                 "device": str(w.device), "params_from_reference": w.params_from_reference,
                 "state": bool(w.params)})
    for line in sys.stdin:
        try:
            c = json.loads(line)
            cmd = c.get("cmd")
            if cmd == "quit":
                break
            elif cmd == "noop":
                r = {"ok": True}
            elif cmd == "run":
                r = w.cmd_run(int(c["set"]), _tag(c), c.get("poison"))
            elif cmd == "time":
                mark = None
                if c.get("mark") is True:
                    def mark():
                        _reply(out, {"ok": True, "calling": True})
                r = w.cmd_time([int(k) for k in c["sets"]], c.get("perturb"), c.get("poison"),
                               c.get("prepared") is True, mark)
            elif cmd == "prepare":
                r = w.cmd_prepare(int(c["set"]), c.get("poison"))
            elif cmd == "dump":
                r = w.cmd_dump(int(c["set"]), _tag(c), c.get("sample"), c.get("inputs", 0))
            else:
                r = {"ok": False, "stage": "request", "error": "unknown command"}
        except Exception as e:
            r = {"ok": False, "stage": "run", "error": "%s: %s" % (type(e).__name__, str(e)[:2000])}
        fds, w.fds = w.fds, []
        try:
            _reply(out, r, fds if r.get("ok") else ())
        finally:
            for f in fds:
                os.close(f)
        if not r.get("ok"):
            return 1
    return 0
