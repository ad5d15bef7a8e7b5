"""One candidate's evaluation inside the judge: start its worker, run the
correctness trials, time it interleaved with the baselines, decide. The
timed runs themselves (a request each, the snapshot, the judge's clock,
the spot checks) are kbh/judge_timed.py's TimedRuns."""
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import time

import torch

from kbh import judge_checks as jchk
from kbh import judge_compare as cmp
from kbh import judge_devsnap as jds
from kbh import judge_io as jio
from kbh import judge_perturb as jpert
from kbh import judge_profile
from kbh import judge_sanitize as jsan
from kbh import judge_stats as stats
# The timed runs' names stay importable from here (judge.py, judge_ref.py, the tests).
from kbh.judge_timed import (SPOT_SAMPLE, Failed, ProblemFailed, TimedRuns,  # noqa: F401
                              clock_bound, sample_specs, untimed_work)
from kbh.judge_worker import Worker, WorkerError
# The flags after the rounds, and their constants, importable from here too.
from kbh.judge_fresh import Fresh
from kbh.judge_retime import RETIME_AGREE, RETIME_ROUNDS, SUSPICIOUS_SPEEDUP, Retimed  # noqa: F401

ERRORS_MAX = 8
ERROR_CHARS = 2000
NOOP_PROBES = 5
SANITIZER_EXIT = 86
SANITIZER_PADDING = 4096	# bytes of memcheck's guard after every allocation
SANDBOX_CPU_MAX_S = 7 * 24 * 3600	# sandbox-exec's largest --cpu
# The flags that make a correct result ask for review instead of standing
# as a verified speedup (res["needs_review"]).
REVIEW_FLAGS = ("suspicious_speedup", "below_bandwidth_floor", "side_stream", "untimed_work",
                "stale_inputs", "state_across_calls")
# Eager runs per round, as a fraction of --reps, when the baselines come
# from the cache (judge_cache.py): enough for the drift check and the
# eager speedup's interval, a third of the cost.
EAGER_CACHED_DIV = 3
# Adaptive timing's extra rounds may cost at most this many times the floor's.
ADAPTIVE_WALL_FACTOR = 4
# A candidate this many times slower than eager over its first
# SLOW_MIN_ROUNDS rounds stops being timed there: no search keeps it, and
# a schedule that turns a 0.1 ms row into 800 ms would otherwise hold the
# GPU for minutes of rounds (timing.stopped says so; the last full spot
# check still runs).
SLOW_FACTOR = 10.0
SLOW_MIN_ROUNDS = 2
# The null worker's requests per timing set (NullRun).
NULL_RUNS = 7
PRECEDENCE = {"correct": 0, "mismatch": 1, "runtime_error": 2, "rejected": 3, "timeout": 4}


def _tail(path, n):
    """The last n characters of a text file in a directory the sandboxed
    process writes, "" when it cannot be read (jio.open_untrusted's rules:
    no links followed)."""
    return jio.read_tail(os.path.dirname(path), os.path.basename(path), n)



def sandbox_argv(ctx, profile, scratch, timeout, gpu, ro):
    """kernelbot sandbox-exec's argv up to the caller's own options: the
    profile, a scratch directory, a deadline in seconds, the GPU it may
    open (None: no option, -1: none) and read-only paths. The one builder
    for workers, tools and the reference process (kbh/judge_ref.py)."""
    outer = [ctx.kernelbot, "sandbox-exec", "--profile", profile, "--scratch", scratch,
             "--timeout", str(timeout)]
    if gpu is not None:
        outer += ["--gpu", str(gpu)]
    for p in ro:
        outer += ["--ro", p]
    if getattr(ctx, "disk_bytes", 0):
        outer += ["--disk", str(ctx.disk_bytes)]
    if ctx.req.get("allow_degraded"):
        outer.append("--allow-degraded")
    return outer


def ctx_start_timeout(run):
    """Starting a native worker is quick; a load_inline solution builds."""
    return run.ctx.timeout_s + (run.ctx.build_timeout_s if run.kind != "native" else 0)


class CandidateRun(Retimed, Fresh, TimedRuns):
    def __init__(self, ctx, cand):
        self.ctx = ctx
        self.c = cand
        self.kind = cand.get("kind", "native")
        self.res = {"id": cand.get("id"), "status": "correct", "correct": False,
                    "checks": [], "flags": list(ctx.problem_flags), "errors": [],
                    "timings_ms": None, "speedup": None, "max_rel_error": None,
                    "timing_breakdown_s": {}}
        self.scratch = os.path.join(ctx.workdir, "cand%s" % cand.get("id"))
        os.makedirs(self.scratch, exist_ok=True)
        self.report = os.path.join(ctx.workdir, "cand%s.sandbox.json" % cand.get("id"))
        self.acc = {}
        # Poison values and check decisions: the system's RNG, never the
        # evaluation seed (the worker reads it in the manifest).
        self.prng = random.SystemRandom()
        self.spot_n = {"full": 0, "sampled": 0, "sealed": 0}
        # Per timing set: the snapshot of its last timed run (a sealed
        # memfd's fd from the worker, the judge's copy of an exported one,
        # a jds.Shared, or None) and that run's poison.
        self.snap = {}
        # Per timing set the worker exported (judge_devsnap): its mapping.
        self.shared = {}
        self.share = False
        self.last_poison = {}
        self.req_ref_ms = {}	# set -> the judge's parse and refresh reference (timed)

    # --- bookkeeping -------------------------------------------------------
    def check(self, name, passed, detail=""):
        self.res["checks"].append({"name": name, "passed": bool(passed), "detail": detail})

    def flag(self, name):
        if name not in self.res["flags"]:
            self.res["flags"].append(name)

    def error(self, msg):
        if len(self.res["errors"]) < ERRORS_MAX:
            self.res["errors"].append(msg[:ERROR_CHARS])

    def add_time(self, what, t0):
        self.acc[what] = self.acc.get(what, 0.0) + time.perf_counter() - t0

    def fail(self, status, msg):
        if PRECEDENCE[status] > PRECEDENCE[self.res["status"]]:
            self.res["status"] = status
        self.error(msg)

    # --- the worker's command line ----------------------------------------
    def argv(self, sanitizer=None, tool=None, scratch=None, profiler=None, tool_args=()):
        """profiler: the profiler's argv prefix (kbh/judge_profile.py),
        run inside the same sandbox as a sanitizer is; tool_args: more
        of the sanitizer's options (kbh/judge_sanitize.py)."""
        ctx, scratch = self.ctx, scratch or self.scratch
        if self.kind == "native":
            so = ["--null"] if self.c.get("null") else ["--so", self.c["so"]]
            inner = [ctx.kernelbot, "__worker"] + so + ["--backend", ctx.backend,
                     "--dir", ctx.inputs_dir, "--scratch", scratch, "--device", "0"]
            if sanitizer or profiler:
                inner.append("--no-lockdown")	# the tool needs its own IPC
            ro = [] if self.c.get("null") else [self.c["so"]]
        else:
            inner = [sys.executable, "-u", ctx.harness_py, "pyworker", "--solution", self.c["path"],
                     "--dir", ctx.inputs_dir, "--scratch", scratch, "--backend", ctx.backend]
            ro = [self.c["path"], os.path.dirname(ctx.harness_py)]
        # The interpreter's own bin directory first: a venv's ninja lives there.
        path = ":".join(dict.fromkeys([os.path.dirname(sys.executable), "/usr/local/cuda/bin",
                                       "/usr/local/bin", "/usr/bin", "/bin"]))
        env = {"PATH": path, "LANG": "C.UTF-8", "HOME": scratch, "TMPDIR": scratch}
        env.update(ctx.worker_env)
        if self.kind != "native":
            env.update({"TORCH_EXTENSIONS_DIR": os.path.join(scratch, "torch_extensions"),
                        "CUDA_HOME": "/usr/local/cuda", "PYTHONDONTWRITEBYTECODE": "1",
                        "MAX_JOBS": str(os.cpu_count() or 4)})
        if sanitizer:
            pad = []
            if tool == "memcheck" and jsan.has_padding(sanitizer):
                # Small allocations sit next to each other: without a gap
                # after each, a read past the end of one input lands in
                # the next and memcheck sees a valid address.
                pad = ["--padding", str(SANITIZER_PADDING)]
            inner = [sanitizer, "--tool", tool] + pad + list(tool_args) + ["--log-file",
                     os.path.join(scratch, "sanitizer-%s.log" % tool),
                     "--error-exitcode", str(SANITIZER_EXIT)] + inner
        if profiler:
            inner = list(profiler) + inner
            ro.append(os.path.dirname(os.path.realpath(profiler[0])))
        # The sandbox's own deadline is a backstop for a judge that stops
        # answering; the judge holds the candidate to budget() itself,
        # moved on by the time it waits on the reference process, which
        # may be up to the baselines' reps per round of the candidate's.
        timeout = self.budget() * (1 + 2 * max(1, getattr(ctx, "reps", 1)))
        if not ctx.sandbox:
            # DEVELOPER FALLBACK (KERNELBOT_EVAL_UNSANDBOXED=1): no confinement
            # beyond an explicit environment, a process group and rlimits.
            if ctx.backend == "cuda":
                env["CUDA_VISIBLE_DEVICES"] = str(ctx.req.get("device", 0))
            if self.kind == "native" and ctx.backend == "cpu":
                # Beyond what the worker maps itself (a sanitizer build
                # reserves terabytes of shadow), so not a plain RLIMIT_AS.
                inner += ["--mem-limit", str(ctx.mem_bytes)]
            return inner, env, 0
        tooled = sanitizer or profiler
        profile = "candidate" if self.kind == "native" and not tooled else "compiler"
        outer = self.sandbox(profile, scratch, int(timeout) + 5,
                             ctx.req.get("device", 0) if ctx.backend == "cuda" else None,
                             [ctx.inputs_dir] + ro)
        outer += ["--report", self.report]
        # Always a limit of ours: the sandbox's default (1 GiB) is too small
        # for host copies of GPU-sized tensors, nvcc on torch headers, or a
        # sanitizer's bookkeeping.
        outer += ["--mem", str(ctx.mem_bytes * (2 if tooled else 1))]
        if tooled:
            # A sanitizer analyses on every core: its CPU time runs many
            # times its wall time, and the sandbox's default RLIMIT_CPU
            # (600 s) ended racecheck of a cuBLAS GEMM on 16 cores with
            # SIGXCPU (exit 24) long before the deadline. The deadline
            # still bounds the run.
            outer += ["--cpu", str(min(SANDBOX_CPU_MAX_S, (int(timeout) + 5) * (os.cpu_count() or 1)))]
        for k, v in sorted(env.items()):
            outer += ["--env", "%s=%s" % (k, v)]
        return outer + ["--"] + inner, dict(ctx.worker_env, PATH=env["PATH"], LANG="C.UTF-8"), 0

    def sandbox(self, profile, scratch, timeout, gpu, ro):
        return sandbox_argv(self.ctx, profile, scratch, timeout, gpu, ro)

    def run_tool(self, argv, timeout=60):
        """A toolkit program (cuobjdump) over the candidate's shared
        object, in the compiler's sandbox where the judge sandboxes:
        the file is the candidate's, and so is any trap in it."""
        ctx = self.ctx
        env = dict(os.environ)
        if ctx.sandbox:
            scratch = self.scratch + "-tool"
            os.makedirs(scratch, exist_ok=True)
            outer = self.sandbox("compiler", scratch, timeout, -1,
                                 [self.c["so"], os.path.dirname(os.path.realpath(argv[0]))])
            outer += ["--env", "PATH=/usr/local/cuda/bin:/usr/bin:/bin", "--env", "LANG=C.UTF-8"]
            argv = outer + ["--"] + list(argv)
            env = dict(ctx.worker_env, PATH=os.environ.get("PATH", "/usr/bin:/bin"), LANG="C.UTF-8")
        try:
            return subprocess.run(argv, capture_output=True, text=True, timeout=timeout + 15,
                                  errors="replace", env=env)
        finally:
            if ctx.sandbox:
                shutil.rmtree(scratch, ignore_errors=True)

    def budget(self):
        """The whole worker's deadline: --timeout is per request (one run
        or timing round); a worker gets that for each of its requests,
        plus the build for load_inline solutions."""
        ctx = self.ctx
        # A round's timed runs share one --timeout (timed_round); its
        # checks are dumps, about one a run.
        n = len(ctx.sets) + 2 * ctx.max_rounds + 2 * NOOP_PROBES + 3
        return (ctx.timeout_s * n + (ctx.build_timeout_s if self.kind != "native" else 0))

    def start(self, tag="", **kw):
        """A worker for the candidate (argv()'s options); tag names its
        stderr file beside the first one's."""
        argv, env, mem = self.argv(**kw)
        # The budget is the candidate's: the time its judge waits on the
        # reference process (eager rounds, expected outputs) moves it on,
        # so a slow reference is not the candidate's timeout.
        ref = getattr(self.ctx, "ref", None)
        spent0 = ref.spent if ref is not None else 0.0
        return Worker(argv, env, os.path.join(self.ctx.workdir, "cand%s%s.stderr" % (self.c.get("id"), tag)),
                      time.monotonic() + self.budget(), self.ctx.timeout_s, mem,
                      paused=(lambda: ref.spent - spent0) if ref is not None else None)

    def prime(self, w):
        """Worker w greeted, its round trip probed, and a new perturber:
        a worker that only times (a fresh process, the null worker) is
        ready for its timed requests."""
        self.greet(w)
        self.probe_rtt(w)
        self.pert = self.perturber()

    # --- the evaluation ----------------------------------------------------
    def run(self):
        t0 = time.perf_counter()
        bd = self.res["timing_breakdown_s"]
        w = None
        try:
            w = self.start()
            hello = self.greet(w)
            bd["worker_start"] = time.perf_counter() - t0
            if "build_s" in hello:
                self.res["build_s"] = hello["build_s"]
            self.lockdown_check(hello)
            self.probe_rtt(w)
            t1 = time.perf_counter()
            self.trials(w)
            bd["trials"] = time.perf_counter() - t1
            if self.res["status"] == "correct":
                # Once per batch (its cost is in judge_shared), not this
                # candidate's timing.
                self.ctx.baselines_ready()
                t2 = time.perf_counter()
                self.timing(w)
                bd["timing"] = time.perf_counter() - t2
            # Where trials and timing went: waiting on the worker, reading
            # and comparing its outputs, spot checks, the baselines' runs.
            bd.update({k: round(v, 6) for k, v in self.acc.items()})
        except WorkerError as e:
            if "exit 125" in e.message:
                # Not the candidate's doing: say so where a reviewer looks.
                self.check("sandbox", False, "the sandbox could not be set up; the candidate was "
                           "not run: " + e.message[:1500])
            self.fail(e.kind, e.message)
        except Failed as e:
            self.fail(e.status, e.message)
        finally:
            if w is not None:
                w.close()
            self.drop_snapshots()
            self.sandbox_checks()
        if self.res["status"] == "correct" and self.ctx.sanitize:
            t3 = time.perf_counter()
            bd.update(self.sanitize())
            bd["sanitize"] = time.perf_counter() - t3
        if self.res["status"] == "correct" and self.ctx.profile:
            t4 = time.perf_counter()
            self.res["profile"] = judge_profile.run(self)
            bd["profile"] = time.perf_counter() - t4
        self.res["correct"] = self.res["status"] == "correct"
        # Correct, but a plausibility flag stands: the outputs are right and
        # the status stays "correct"; its speedup waits for a person.
        self.res["needs_review"] = self.res["correct"] and any(f in self.res["flags"]
                                                               for f in REVIEW_FLAGS)
        bd["total"] = time.perf_counter() - t0
        self.res["eval_s"] = bd["total"]
        if not os.environ.get("KERNELBOT_EVAL_KEEP"):
            shutil.rmtree(self.scratch, ignore_errors=True)
        return self.res

    def drop_snapshots(self):
        """Close the current worker's snapshots and exported mappings."""
        for k in list(self.snap):
            self.close_snap(k)
        for sh in self.shared.values():
            sh.close()
        self.shared = {}

    def greet(self, w):
        """A started worker's hello, read, and what it offers taken."""
        hello = w.read_reply("start", ctx_start_timeout(self))
        self.worker_refresh = hello.get("refresh") is True
        self.worker_mask = hello.get("refresh_mask") is True
        # Exported snapshots only where this process can map them:
        # after an export the worker seals no memfd for that set.
        self.share = (hello.get("share") is True and self.ctx.backend == "cuda"
                      and jds.usable())
        # Writes to the inputs past forward's arguments reach the
        # kernel: the model's state is perturbed too.
        self.worker_state = hello.get("state") is True
        return hello

    def probe_rtt(self, w):
        """The round trip to worker w, from NOOP_PROBES empty requests."""
        for _ in range(NOOP_PROBES):
            w.request({"cmd": "noop"})
        self.rtt = statistics.median(w.walls[-NOOP_PROBES:])

    def perturber(self):
        """The perturbations for the worker greet() last read."""
        return jpert.Perturber(self.ctx, refresh=getattr(self, "worker_refresh", False),
                               state=getattr(self, "worker_state", False),
                               mask=getattr(self, "worker_mask", False))

    def lockdown_check(self, hello):
        how = hello.get("lockdown", "none")
        if how == "compiler-profile":
            self.check("lockdown", False, "KernelBench-format solutions run in the compiler profile "
                       "(load_inline executes nvcc and ninja): no process/exec lockdown")
            return self.unsandboxed_check()
        self.check("lockdown", how == "sandbox",
                   "sandbox_lockdown() (no processes, exec or sockets) before the candidate was "
                   "loaded" if how == "sandbox" else "no lockdown: the candidate ran unconfined (%s)" % how)
        self.unsandboxed_check()

    def unsandboxed_check(self):
        if not self.ctx.sandbox:
            self.check("sandbox", False, "KERNELBOT_EVAL_UNSANDBOXED=1: developer mode, the worker "
                       "ran without the sandbox; this result must not be trusted")

    def sandbox_checks(self, path=None, prefix="sandbox:", failed_only=False):
        """The sandbox's report (the first worker's, or path) as checks
        named prefix + its names; failed_only: only those that failed."""
        try:
            with open(path or self.report) as f:
                checks = json.load(f)
        except (OSError, ValueError):
            if self.ctx.sandbox:
                self.check(prefix.rstrip(":"), False, "sandbox-exec wrote no report")
            return
        for c in checks if isinstance(checks, list) else []:
            if isinstance(c, dict) and "name" in c and not (failed_only and c.get("passed")):
                self.check(prefix + str(c["name"]), c.get("passed", False),
                           str(c.get("detail", "")))

    def read_outs(self, files, specs):
        if not isinstance(files, list) or len(files) != len(specs):
            raise Failed("runtime_error", "worker returned %r output files for %d outputs"
                         % (files, len(specs)))
        try:
            outs = [jio.read_output(f, s, self.scratch, self.ctx.staging) for f, s in zip(files, specs)]
        except (OSError, ValueError) as e:
            raise Failed("runtime_error", "reading the candidate's outputs: %s" % e)
        # The files stay: the worker rewrites them in place for the next
        # set, reusing their page cache (hundreds of MiB at GPU sizes).
        return outs

    def phases(self, r, what):
        """Add the worker's own account of a request (ms per phase)."""
        ph = r.get("phase_ms")
        if isinstance(ph, dict):
            for k in ("load", "device", "d2h", "check", "write"):
                v = ph.get(k)
                if isinstance(v, (int, float)) and 0 < v < 1e9:
                    key = "%s_%s" % (what, k)
                    self.acc[key] = self.acc.get(key, 0.0) + v / 1e3

    def trials(self, w):
        ctx = self.ctx
        worst_rel, nondet = 0.0, []
        # Shape-major: consecutive trials of one shape land in the same
        # buffers with fresh contents, so results cached per pointer (or
        # per pointer and size) come back stale.
        # The spare draw past the trials (judge.py) is the fresh process's.
        order = sorted((i for i in range(len(ctx.sets)) if ctx.sets[i]["trial"] < ctx.trials),
                       key=lambda i: (ctx.sets[i]["variant"], ctx.sets[i]["trial"]))
        for i in order:
            s = ctx.sets[i]
            where = "trial %d, %s" % (s["trial"], "main inputs" if s["variant"] == 0
                                       else "input variant %d" % s["variant"])
            t0 = time.perf_counter()
            p0 = jchk.draw_poison(s["specs"], self.prng)
            r = w.request({"cmd": "run", "set": i,
                           "poison": [p0, jchk.draw_poison(s["specs"], self.prng, p0)]})
            self.add_time("trials_worker", t0)
            self.phases(r, "trials_worker")
            t0 = time.perf_counter()
            if r.get("shape_error"):
                raise Failed("mismatch", "%s: %s" % (where, str(r["shape_error"])[:500]))
            rc = r.get("rc", [None, None])
            if rc != [0, 0]:
                raise Failed("runtime_error", "%s: kernelbot_forward returned %s" % (where, rc))
            if r.get("inputs_modified"):
                self.check("inputs_unchanged", False, "%s: modified %s" % (where, r["inputs_modified"]))
                raise Failed("mismatch", "%s: the kernel modified its inputs %s"
                             % (where, ", ".join(map(str, r["inputs_modified"]))))
            late = r.get("changed_after_return") or [0, 0]
            if any(late):
                self.check("no_work_after_return", False, "%s: %s elements changed after return" % (where, late))
                raise Failed("mismatch", "%s: outputs changed after kernelbot_forward returned "
                             "(%s elements): work left running after the call" % (where, late))
            files = r.get("files") or [[], []]
            runs = [self.read_outs(files[0], s["specs"])]
            # A second run bitwise equal to the first is not sent again.
            if len(files) > 1 and not files[1] and r.get("runs_differ_bytes") == 0:
                runs.append(runs[0])
            else:
                runs.append(self.read_outs(files[1] if len(files) > 1 else None, s["specs"]))
            unwritten = r.get("unwritten") or [[0], [0]]
            for k in (0, 1):
                for j, n in enumerate(unwritten[k]):
                    if n:
                        self.check("outputs_fully_written", False, "%s run %d: out%d" % (where, k + 1, j))
                        raise Failed("mismatch", "%s, run %d: %d of %d elements of out%d were never "
                                     "written (still hold the poison pattern)"
                                     % (where, k + 1, n, runs[k][j].numel(), j))
            # A second run bitwise equal to the first needs no second look.
            for k in ((0,) if runs[1] is runs[0] else (0, 1)):
                for j, (got, exp) in enumerate(zip(runs[k], s["expected"])):
                    bad, rel = cmp.compare("out%d" % j, got, exp, ctx.atol, ctx.rtol)
                    if rel is not None:
                        worst_rel = max(worst_rel, rel)
                    if bad:
                        self.res["max_rel_error"] = rel
                        self.check("outputs_match", False, "%s run %d" % (where, k + 1))
                        raise Failed("mismatch", "%s, run %d: %s" % (where, k + 1, bad))
            for j, (a, b) in enumerate(zip(*runs)):
                if a is not b and not torch.equal(a, b):
                    nondet.append("%s out%d" % (where, j))
            self.add_time("trials_judge", t0)
        self.res["max_rel_error"] = worst_rel
        n = len(order)
        self.check("outputs_match", True, "%d input sets (%d trials x %d shapes), 2 runs each; "
                   "max relative error %.3g" % (n, ctx.trials, ctx.variants, worst_rel))
        self.check("outputs_fully_written", True, "no poison left in any output")
        self.check("inputs_unchanged", True, "inputs compared to a pristine copy after every run")
        self.check("no_work_after_return", True, "outputs unchanged after a delay")
        self.check("variants", True, "%d declared shape variants checked" % (ctx.variants - 1))
        self.check("deterministic", not nondet, "runs differ bitwise (within tolerance) at: %s"
                   % ", ".join(nondet[:5]) if nondet else "both runs bitwise identical")
        if nondet:
            self.flag("nondeterministic")
        if ctx.degenerate_why:
            self.check("problem_not_degenerate", False, ctx.degenerate_why)

    def timing(self, w):
        ctx = self.ctx
        ctx.baselines_ready()
        S = ctx.timing_sets
        cached = ctx.cached
        cand_rounds, eager_rounds, comp_rounds = [], [], []
        side_notes, untimed_notes, clock_runs = [], [], []
        # A run's time is floored by the judge's clock from the mark less
        # what a null worker's requests held there (clock_floor):
        # measured before this candidate's worker runs any round.
        clock_ref = ctx.clock_ref() if self.kind == "native" else None
        self.pert = self.perturber()
        probe = self.bw_probe()
        # With cached baselines eager is the drift check: fewer runs a round.
        eager_reps = ctx.reps if cached is None else max(1, -(-ctx.reps // EAGER_CACHED_DIV))
        if ctx.warmup:
            # Warm-up times are not judged: first calls may load modules
            # (and the worker loads its timing sets on first use).
            t0 = time.perf_counter()
            ev = self.timed(w, [S[i % len(S)] for i in range(ctx.warmup)])[0]
            # Each timing set's first call on its buffers (the fresh
            # process's figure is one too: kbh/judge_fresh.py).
            self.warm_first = min(ev[:len(S)]) if ev else None
            self.add_time("timing_warmup", t0)
        self.sched = jchk.Schedule(getattr(ctx, "check_fraction", jchk.CHECK_FRACTION), self.prng)
        seed = ctx.seed ^ int(self.c.get("id") or 0)	# reproducible from the reported seed
        t_rounds, floor_s, precision = time.perf_counter(), None, None
        r, stopped, rot = 0, None, []
        while True:
            slow = stats.slowdown(eager_rounds, cand_rounds) if r >= SLOW_MIN_ROUNDS else None
            if slow is not None and slow > SLOW_FACTOR:
                stopped = "%.3gx slower than eager after %d rounds" % (slow, r)
                break
            if r >= ctx.rounds:
                # Past the floor (adaptive timing only): stop once the
                # median is precise enough, at the cap, or when the extra
                # rounds have cost twice what the floor did.
                floor_s = floor_s or time.perf_counter() - t_rounds
                precision = stats.median_precision(cand_rounds, seed)
                if (r >= ctx.max_rounds or (precision is not None and precision <= ctx.precision)
                        or time.perf_counter() - t_rounds > (1 + ADAPTIVE_WALL_FACTOR) * floor_s):
                    break
            rot = self.rotation(r)
            order = ["eager", "cand", "compile"]
            order = order[r % 3:] + order[:r % 3]
            for who in order:
                if who == "cand":
                    cand_rounds.append(self.timed_round(w, rot, r, side_notes, untimed_notes,
                                                        clock_runs))
                    if probe is not None:
                        t0 = time.perf_counter()
                        probe.round()	# the copy bandwidth right next to this round
                        self.add_time("timing_bandwidth", t0)
                elif who == "eager" and ctx.eager_fn is not None:
                    t0 = time.perf_counter()
                    eager_rounds.append([e for e, _ in ctx.time_baseline(
                        ctx.eager_fn, rot[:eager_reps])])
                    self.add_time("timing_eager", t0)
                elif who == "compile" and ctx.compile_fn is not None:
                    t0 = time.perf_counter()
                    comp_rounds.append([e for e, _ in ctx.time_baseline(ctx.compile_fn, rot)])
                    self.add_time("timing_compile", t0)
            r += 1
        if rot and not self.spot_n["full"]:
            # At least one comparison of every element: the last timed run's
            # (its slot's snapshot is still that run's), beside the draws.
            t0 = time.perf_counter()
            self.sched.extra += 1
            self.spot_check(w, rot[-1], r - 1, full=True)
            self.add_time("spot_checks", t0)
        self.res["timing"] = {"rounds": r, "reps": ctx.reps, "adaptive": ctx.adaptive,
                              "max_rounds": ctx.max_rounds, "target_precision": ctx.precision,
                              "median_precision": precision if precision is not None else
                              stats.median_precision(cand_rounds, seed),
                              "checks": self.sched.info(),
                              "clock_floored": getattr(self, "clock_floored", 0),
                              "clock_ref_ms": clock_ref and {str(k): round(v, 4)
                                                             for k, v in clock_ref.items()}}
        if stopped:
            self.res["timing"]["stopped"] = stopped
        for x in eager_rounds:
            ctx.eager_all.extend(x)
        for x in comp_rounds:
            ctx.compile_all.extend(x)
        if cached is None:
            ctx.eager_rounds_all.extend(eager_rounds)
            ctx.compile_rounds_all.extend(comp_rounds)
        samples = [x for rd in cand_rounds for x in rd]
        se, se_ci = stats.speedup(eager_rounds, cand_rounds, seed)
        info = dict(ctx.cache_info, eager_runs_per_round=eager_reps if ctx.eager_fn else 0)
        if cached is None:
            sc, sc_ci = stats.speedup(comp_rounds, cand_rounds, seed + 1)
            info["compile"] = "timed" if comp_rounds else None
        else:
            # torch.compile from the cache, not interleaved: an unpaired
            # interval, and none at all if eager drifted since the entry.
            comp_rounds = cached["compile_rounds"] or []
            sc, sc_ci = stats.speedup_unpaired(comp_rounds, cand_rounds, seed + 1)
            drift = stats.drift([x for rd in eager_rounds for x in rd], cached["eager_rounds"])
            info.update({"compile": "cache" if comp_rounds else None, "drift": drift})
            if comp_rounds and (drift is None or abs(drift - 1) > ctx.drift_max):
                sc, sc_ci = None, None
                info["compile_dropped"] = ("eager ran at %s of its cached time during this "
                                           "candidate's rounds: the cached torch.compile figure "
                                           "is not comparable" % ("?" if drift is None else
                                                                  "%.3fx" % drift))
        self.res["baselines"] = info
        # The baselines' figures are those of the rounds paired with this
        # candidate, so they are the ones its speedup is computed from; the
        # whole batch's baseline samples are summarized beside them.
        self.res["timings_ms"] = {
            "candidate": stats.summary(samples),
            "eager": stats.summary([x for rd in eager_rounds for x in rd]),
            "compile": stats.summary([x for rd in comp_rounds for x in rd]),
        }
        self.res["speedup"] = {"eager": se, "eager_ci95": se_ci, "compile": sc, "compile_ci95": sc_ci}
        sn = self.spot_n
        self.check("spot_checks", True, "%s; compared: %d in full, %d on %d elements per output "
                   "drawn after the run; %d read from the run's sealed snapshot"
                   % (self.sched.summary(), sn["full"], sn["sampled"],
                      getattr(ctx, "spot_sample", SPOT_SAMPLE), sn["sealed"]))
        for k in list(self.snap):
            self.close_snap(k)
        # Inputs the judge could not change (all of them pattern, one
        # value), or changes that never moved the expected outputs: an
        # output kept from an earlier run and replayed would pass the spot
        # checks, so the speedup waits for a person (stale_inputs).
        whole = self.pert.kept_whole() if getattr(ctx, "perturb", True) else []
        failed = getattr(self, "ref_failed", None)
        fresh = (getattr(ctx, "perturb", True) and (self.pert.runs > 0 or self.pert.plain == 0)
                 and not (self.pert.spots > 0 and self.pert.moved == 0) and not whole
                 and not failed)
        self.check("timing_inputs_fresh", fresh, (
            "the problem's reference failed on the inputs the judge changed (%s): %d timed "
            "runs went unchecked, a replayed output would pass them; " % (
                failed, self.spot_n.get("unchecked", 0)) if failed else "") + (
            "input%s %s never changed (all pattern or sorted): a function of %s kept from one "
            "call to the next would pass; " % ("s" if len(whole) > 1 else "",
                                                ", ".join(map(str, whole)),
                                                "them" if len(whole) > 1 else "it")
            if whole else "") + self.pert.summary())
        if not fresh:
            self.flag("stale_inputs")
        self.integrity(w, len(cand_rounds), side_notes, untimed_notes, clock_runs,
                       statistics.median(samples))
        try:
            self.plausibility(w, statistics.median(samples), se, sc, probe, seed)
        finally:
            if probe is not None:
                probe.close()
        if self.res["status"] == "correct" and not stopped:
            # The first process goes first: two workers' copies of the
            # sets need not fit on the device at once.
            self.drop_snapshots()
            if w is not None:
                w.close()
            self.fresh_process(cand_rounds, clock_runs)

    def rotation(self, r):
        """Round r's timed sets: reps runs rotating among the timing sets
        from set r mod their number, so every round starts elsewhere."""
        S = self.ctx.timing_sets
        return [S[(r + i) % len(S)] for i in range(self.ctx.reps)]

    def sanitize(self):
        """memcheck and racecheck on set 0, each in its own sandboxed
        worker; returns each tool's seconds for the breakdown."""
        tool_path = os.environ.get("KERNELBOT_COMPUTE_SANITIZER") or shutil.which(
            "compute-sanitizer", path="/usr/local/cuda/bin:/usr/bin:/bin")
        if self.ctx.backend != "cuda":
            self.res["checks"].append({"name": "sanitize", "passed": True, "skipped": True,
                                       "detail": "compute-sanitizer applies to the cuda backend only"})
            return {}
        if not tool_path:
            if self.ctx.sanitize == 2:
                self.res["checks"].append({"name": "sanitize", "passed": True, "skipped": True,
                                           "detail": "compute-sanitizer is not installed here"})
            else:
                self.check("sanitize", False, "compute-sanitizer not found (set KERNELBOT_COMPUTE_SANITIZER)")
            return {}
        found, took = [], {}
        for tool in ("memcheck", "racecheck"):
            t0 = time.perf_counter()
            scratch = self.scratch + "-" + tool
            os.makedirs(scratch, exist_ok=True)
            args, scope = [], "every kernel"
            if tool == "racecheck":
                args, scope = jsan.racecheck_scope(self.c, tool_path, self.run_tool)
            w = None
            try:
                w = self.start(sanitizer=tool_path, tool=tool, scratch=scratch, tool_args=args)
                w.read_reply("start", ctx_start_timeout(self))
                # The sanitizers slow kernels by 10-100x.
                w.request({"cmd": "run", "set": 0, "tag": "san"}, timeout=self.ctx.timeout_s * 20)
                st = w.close()
                w = None
                log = _tail(os.path.join(scratch, "sanitizer-%s.log" % tool), 3000)
                ok = st == 0
                self.check("sanitize:%s" % tool, ok, "checked: %s. %s" % (
                    scope, log.strip()[-1500:] or "exit status %s" % st))
            except WorkerError as e:
                ok = False
                # the tool's own log says what it saw before the worker died
                seen = _tail(os.path.join(scratch, "sanitizer-%s.log" % tool), 1000).strip()
                log = "checked: %s. %s" % (scope, e.message) + (
                    "; %s log: %s" % (tool, seen) if seen else "")
                self.check("sanitize:%s" % tool, False, log)
            finally:
                if w is not None:
                    w.close()
                shutil.rmtree(scratch, ignore_errors=True)
                took["sanitize_" + tool] = round(time.perf_counter() - t0, 6)
            if not ok:
                found.append("compute-sanitizer %s: %s" % (tool, (log or "").strip()[-1200:]))
        # A kernel with an out-of-bounds access or a race is not correct,
        # however right its outputs happened to be.
        if found:
            self.res["status"] = "runtime_error"
            for f in found:
                self.error(f)
        return took


class NullRun(CandidateRun):
    """The judge's clock reference (judge_timed.clock_floor): a worker with
    no candidate (`kernelbot __worker --null`, whose forward returns at
    once), started like a candidate's and sent the same timed requests on
    the timing sets (prepare, then the perturbations, the refresh, the
    mark, the call and the snapshot), so what a request holds from the
    mark to the reply beside the call (the snapshot and the reply) is
    measured by code the candidate never touched, not estimated from the
    judge's own references: an allowance of 3x those for the whole
    request let a rewritten clock hide 1.5 to 15x of a 110 ms kernel on
    8 MiB inputs (an outside attack)."""

    def __init__(self, ctx):
        super().__init__(ctx, {"id": "null", "kind": "native", "null": True})

    def measure(self, runs=NULL_RUNS):
        """{set: the median of the judge's clock from the worker's mark
        before the call to its reply (the snapshot and the reply: the call
        returns at once) over runs requests per timing set, ms} after a
        warm-up request per set; raises WorkerError or Failed."""
        w = self.start()
        try:
            self.prime(w)
            S = self.ctx.timing_sets
            self.timed(w, list(S))
            over = {k: [] for k in S}
            for _ in range(runs):
                for k in S:
                    self.timed(w, [k])
                    over[k].append(self.last_mark_ms)
            return {k: statistics.median(v) for k, v in over.items()}
        finally:
            w.close()
            self.drop_snapshots()
            shutil.rmtree(self.scratch, ignore_errors=True)
