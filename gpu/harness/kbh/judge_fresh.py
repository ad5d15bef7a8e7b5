"""A candidate timed again in a worker process of its own after its
rounds, on values that process has never seen: whatever its first
process kept from earlier calls (a table of f per value seen, outputs
per input) is of no use there. An honest kernel's first call on a set
costs what its later ones do (the judge flushes the caches before every
timed run anyway); a kernel fast only on what earlier calls left behind
is slow on it.

The inputs' refresh makes each timed run's values new to the candidate
where values can be new (floats: the mask), but an input of integers
drawn from a range the timed calls cover many times over (ids from
2^20, 2^15 a call, hundreds of calls) comes back whatever the judge
places: a table of f per id ran at 27x its honest twin, correct, before
this check (tests/fixtures/valmemo/ids_memo.c). The fresh process is
warmed up on the spare draws (the trials' main inputs past the timing
sets: the same shapes, other values), then times one run on each timing
set, its first call there, spot-checked as the rounds' runs are; the
least of those runs is its figure (an honest kernel's times in the
rounds spread 3 to 24 ms a run on a host loaded by the suite, and the
median of two first calls flagged an honest compiled kernel there). Its
inputs folder gets a timing set's files only just before that run: a
kernel that read them all at an untimed call was as fast here as in the
first process (ids_files.c, an outside attack's). Where
the least of those runs is above FRESH_FACTOR x the rounds' (the
median of all their runs, as the headline's), or the judge's own clock
around those requests is above FRESH_CLOCK_FACTOR x its figure for the
rounds' requests and FRESH_CLOCK_SLACK_MS (a clock rewritten in the
fresh process only), another fresh
process is timed, up to FRESH_TRIES, and only all of them together flag
`state_across_calls` (a loaded host, or a virtual machine's idle vCPUs,
can slow every first call of one process). Each first call follows an
untimed request on a spare draw at once, as the rounds' runs follow one
another. With no more trials than timing sets
the judge draws one spare past them (kbh/judge.py); without any spare
draw it does not run, and its check says so. A mixin of
judge_run.CandidateRun (start, prime, timed_round
and the per-worker snapshot state)."""
import os
import shutil
import statistics
import time

from kbh import judge_checks as jchk
from kbh.judge_timed import Failed

# Warm-up requests (two calls each) at least, whatever --warmup says.
FRESH_WARMUP_MIN = 3
# Fresh processes at most: the later ones only confirm the first. With 2,
# an honest 0.15 ms kernel of 2 OpenMP threads on an otherwise idle
# 2-vCPU guest was flagged in 1 of 4 evaluations (its first calls 0.8 to
# 2.2 ms, 0.14 ms in the rounds); a kernel that keeps results per value
# is slow in every fresh process, however many.
FRESH_TRIES = 4
# A fresh process's least first call above this many times the rounds'
# trips ...
FRESH_FACTOR = 2.0
# ... the rounds' figure being the median of all their runs, as the
# headline's is (for the judge's clock, of all their requests): what the
# candidate cannot raise without raising its own timing's. An upper
# quantile (0.75) of the per-round medians, and the first process's first
# calls in its warm-up where slower, were raised by an outside attack's
# kernel (slow on a third of its calls, and on its first calls on the
# timing sets; a table of f per id the rest of the time) until it passed
# at 10x its honest twin (tests/fixtures/valmemo/ids_memo_pad.c); the
# median of the per-round medians by one slow on 6 of 10 calls in 2 of
# every 3 rounds' worth, its runs' median a lookup's (ids_memo_rounds.c).

# The judge's clock around a first call also holds what a first timed
# request costs the worker beyond later ones (its snapshot's and the
# refresh's buffers, faulted in: 13.5 ms against 6.4 ms in the rounds for
# an honest 4.3 ms call, 256x1024 on the CPU), so it trips only above
# this factor and slack: a backstop for a clock rewritten in the fresh
# process only, not the measure.
FRESH_CLOCK_FACTOR = 3.0
FRESH_CLOCK_SLACK_MS = 5.0


class Fresh:
    """CandidateRun's timing in fresh worker processes (see the module)."""

    def fresh_process(self, rounds, clock_runs=()):
        """Time the candidate's first calls on the timing sets in fresh
        processes (rounds: the first process's event times per round;
        clock_runs: its runs' judge-clock tuples, judge_timed); check
        no_state_across_calls and flag state_across_calls."""
        ctx = self.ctx
        spare = [i for i, s in enumerate(ctx.sets)
                 if s["variant"] == 0 and i not in ctx.timing_sets]
        if not spare:
            self.check("no_state_across_calls", True, "not run: no spare draw to warm a fresh "
                       "process on")
            return
        runs = [t for r in rounds for t in r]
        ref = statistics.median(runs)
        # The first process's first calls on the timing sets, in its
        # warm-up: reported, not the figure (a candidate's own untimed
        # calls; an honest kernel's first calls cost more there only
        # while the worker's buffers shared its heap, gpu/wdev.c).
        first = getattr(self, "warm_first", None)
        ref_clk = statistics.median(c[0] for c in clock_runs) if clock_runs else None

        def slow(m):
            ev, c = m
            return ev > FRESH_FACTOR * ref or (
                ref_clk is not None and c > FRESH_CLOCK_FACTOR * ref_clk + FRESH_CLOCK_SLACK_MS)
        t0 = time.perf_counter()
        meds = []
        for i in range(FRESH_TRIES):
            meds.append(self.fresh_once(i, spare))
            if not slow(meds[-1]):
                break
        self.add_time("timing_fresh", t0)
        tripped = len(meds) == FRESH_TRIES and all(slow(m) for m in meds)
        self.res["timing"]["fresh"] = {"processes": len(meds), "medians_ms": [m[0] for m in meds],
                                       "clock_ms": [m[1] for m in meds], "rounds_ms": ref,
                                       "rounds_clock_ms": ref_clk, "warm_first_ms": first,
                                       "tripped": tripped}
        how = ("the first call on each timing set in %d fresh process%s (warmed up on %d spare "
               "draw%s): the least %s (the judge's clock around the requests: %s), against %.4g ms "
               "in the rounds (%s)" % (
                   len(meds), "es" if len(meds) > 1 else "", len(spare),
                   "s" if len(spare) > 1 else "", ", ".join("%.4g ms" % m[0] for m in meds),
                   ", ".join("%.4g ms" % m[1] for m in meds), ref,
                   "%.4g ms" % ref_clk if ref_clk is not None else "not measured"))
        if tripped:
            self.flag("state_across_calls")
            self.check("no_state_across_calls", False, how + ": fast only on what earlier calls "
                       "left in its process (results kept per value seen?)")
        else:
            self.check("no_state_across_calls", True, how)

    def fresh_once(self, i, spare):
        """(The least ms, and the least of the judge's clock around the
        requests) of one timed run on each timing set in a new worker
        process warmed up on the spare sets, its scratch and sandbox
        report its own."""
        ctx = self.ctx
        self.drop_snapshots()
        scratch = "%s-fresh%d" % (self.scratch, i)
        os.makedirs(scratch, exist_ok=True)
        built = os.path.join(self.scratch, "torch_extensions")
        if self.kind != "native" and os.path.isdir(built):
            # A solution's extension, built by the first process: copied
            # with its times, so the fresh one loads it instead of
            # compiling it again (a CUDA build is a minute).
            shutil.copytree(built, os.path.join(scratch, "torch_extensions"), symlinks=True,
                            dirs_exist_ok=True)
        # Its own scratch, report and inputs while it runs: the first
        # process's files are not its to read, and its report is the
        # first's. Its inputs folder holds the manifest and the spare
        # sets; a timing set's files come just before its first run
        # (deliver()): a kernel that read the sets' files at an untimed
        # call knew every value its timed calls would hold, and was as
        # fast here as there (an outside attack).
        inputs = "%s-fresh%d-inputs" % (self.scratch, i)
        shutil.rmtree(inputs, ignore_errors=True)
        os.makedirs(inputs)
        main_inputs = ctx.inputs_dir
        self.deliver(main_inputs, inputs, "manifest.json")
        for k in spare:
            self.deliver_set(main_inputs, inputs, k)
        saved = self.scratch, self.report
        self.scratch, self.report = scratch, "%s.fresh%d" % (self.report, i)
        ctx.inputs_dir = inputs
        w = None
        try:
            w = self.start(tag="-fresh%d" % i)
            self.prime(w)
            # The warm-up: two calls a request, as the trials run them.
            n = max(FRESH_WARMUP_MIN, -(-ctx.warmup // 2))
            for j in range(n):
                self.warm(w, spare[j % len(spare)])
            clock, ev = [], []
            for j, k in enumerate(ctx.timing_sets):
                self.deliver_set(main_inputs, inputs, k)
                # And one more just before each first call, as the rounds'
                # runs follow one another: a parallel kernel's first call
                # after an idle gap waits for its threads (in a virtual
                # machine, for an idle vCPU to be woken). Without it an
                # honest 0.15 ms kernel of 2 OpenMP threads on a 2-vCPU
                # guest took 1.2 to 4.3 ms at its least in each of four
                # fresh processes (0.23 ms in the rounds: flagged), and a
                # second process was needed in 5 of 6 evaluations; with it,
                # none of 8 was flagged and 2 needed a second process.
                self.warm(w, spare[(n + j) % len(spare)])
                # The clock floor's reading from the worker's mark only
                # (judge_timed.clock_floor): a first request in a new
                # worker also builds its refresh's buffers, which the
                # reading around the whole request credited to an honest
                # 4.4 ms call (flagged, under the suite's load); the mark
                # comes after them, and the snapshot's pages were mapped
                # when it was allocated.
                ev += self.timed_round(w, [k], 0, [], [], clock, floor="mark")
            # The least of them: a loaded host only adds time, and a
            # kernel fast only on what earlier calls left is slow on every
            # first call. And the judge's own clock around those requests,
            # set against the same clock in the rounds: a clock rewritten
            # in this process only would report the fast times it needs
            # here.
            return min(ev), min(c[0] for c in clock)
        finally:
            if w is not None:
                w.close()
            self.drop_snapshots()
            fresh_report = self.report
            self.scratch, self.report = saved
            ctx.inputs_dir = main_inputs
            shutil.rmtree(inputs, ignore_errors=True)
            self.sandbox_checks(fresh_report, "sandbox:fresh%d:" % i, failed_only=True)
            if not os.environ.get("KERNELBOT_EVAL_KEEP"):
                shutil.rmtree(scratch, ignore_errors=True)

    def warm(self, w, k):
        """An untimed run request (two calls, as the trials run them) on
        spare set k in worker w."""
        s = self.ctx.sets[k]
        p0 = jchk.draw_poison(s["specs"], self.prng)
        r = w.request({"cmd": "run", "set": k,
                       "poison": [p0, jchk.draw_poison(s["specs"], self.prng, p0)]})
        if r.get("rc", [0, 0]) != [0, 0]:
            raise Failed("runtime_error", "a fresh process's warm-up: "
                         "kernelbot_forward returned %s" % r.get("rc"))

    def deliver_set(self, src, dst, k):
        """Set k's files (its inputs, and its refresh's sources) from
        folder src into dst."""
        for n in self.ctx.sets[k].get("files", []):
            self.deliver(src, dst, n)

    @staticmethod
    def deliver(src, dst, name):
        """File name from folder src into dst: a hard link where both are
        on one file system (GPU sets are hundreds of MiB), else a copy."""
        a, b = os.path.join(src, name), os.path.join(dst, name)
        if os.path.exists(b) or not os.path.exists(a):
            return
        try:
            os.link(a, b)
        except OSError:
            shutil.copy2(a, b)
