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
set, its first call there, spot-checked as the rounds' runs are. Where
the median of those runs is above FRESH_FACTOR x the rounds' (the
FRESH_QUANTILE of their per-round medians), a second fresh process is
timed, and only both together flag `state_across_calls` (a loaded host
can slow a few runs). Without spare draws (fewer trials than timing sets
and one) it does not run, and its check says so. A mixin of
judge_run.CandidateRun (start, greet, probe_rtt, perturber, timed_round
and the per-worker snapshot state)."""
import os
import shutil
import statistics
import time

from kbh import judge_checks as jchk
from kbh.judge_timed import Failed

# Fresh processes at most: the second only confirms the first.
FRESH_TRIES = 2
# A fresh process's median above this many times the rounds' trips ...
FRESH_FACTOR = 2.0
# ... the rounds' figure being this quantile of their per-round medians.
FRESH_QUANTILE = 0.75


class Fresh:
    """CandidateRun's timing in fresh worker processes (see the module)."""

    def fresh_process(self, rounds):
        """Time the candidate's first calls on the timing sets in fresh
        processes (rounds: the first process's event times per round);
        check no_state_across_calls and flag state_across_calls."""
        ctx = self.ctx
        spare = [i for i, s in enumerate(ctx.sets)
                 if s["variant"] == 0 and i not in ctx.timing_sets]
        if not spare:
            self.check("no_state_across_calls", True, "not run: no spare draws to warm a fresh "
                       "process on (--trials %d; it takes %d or more)"
                       % (ctx.trials, len(ctx.timing_sets) + 1))
            return
        per = sorted(statistics.median(r) for r in rounds if r)
        ref = per[int(FRESH_QUANTILE * (len(per) - 1))]
        t0 = time.perf_counter()
        meds = []
        for i in range(FRESH_TRIES):
            meds.append(self.fresh_once(i, spare))
            if meds[-1] <= FRESH_FACTOR * ref:
                break
        self.add_time("timing_fresh", t0)
        tripped = len(meds) == FRESH_TRIES and all(m > FRESH_FACTOR * ref for m in meds)
        self.res["timing"]["fresh"] = {"processes": len(meds), "medians_ms": meds,
                                       "rounds_ms": ref, "tripped": tripped}
        how = ("the first call on each timing set in %d fresh process%s (warmed up on %d spare "
               "draw%s): median %s, against %.4g ms in the rounds" % (
                   len(meds), "es" if len(meds) > 1 else "", len(spare),
                   "s" if len(spare) > 1 else "", ", ".join("%.4g ms" % m for m in meds), ref))
        if tripped:
            self.flag("state_across_calls")
            self.check("no_state_across_calls", False, how + ": fast only on what earlier calls "
                       "left in its process (results kept per value seen?)")
        else:
            self.check("no_state_across_calls", True, how)

    def fresh_once(self, i, spare):
        """The median ms of one timed run on each timing set in a new
        worker process warmed up on the spare sets, its scratch and
        sandbox report its own."""
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
        # Its own scratch and report while it runs: the first process's
        # files are not its to read, and its report is the first's.
        saved = self.scratch, self.report
        self.scratch, self.report = scratch, "%s.fresh%d" % (self.report, i)
        w = None
        try:
            w = self.start(tag="-fresh%d" % i)
            self.greet(w)
            self.probe_rtt(w)
            self.pert = self.perturber()
            # The warm-up: two calls a request, as the trials run them.
            for j in range(max(1, -(-ctx.warmup // 2))):
                s = ctx.sets[spare[j % len(spare)]]
                p0 = jchk.draw_poison(s["specs"], self.prng)
                r = w.request({"cmd": "run", "set": spare[j % len(spare)],
                               "poison": [p0, jchk.draw_poison(s["specs"], self.prng, p0)]})
                if r.get("rc", [0, 0]) != [0, 0]:
                    raise Failed("runtime_error", "a fresh process's warm-up: "
                                 "kernelbot_forward returned %s" % r.get("rc"))
            return statistics.median(self.timed_round(w, list(ctx.timing_sets), 0, [], []))
        finally:
            if w is not None:
                w.close()
            self.drop_snapshots()
            fresh_report = self.report
            self.scratch, self.report = saved
            self.sandbox_checks(fresh_report, "sandbox:fresh%d:" % i, failed_only=True)
            if not os.environ.get("KERNELBOT_EVAL_KEEP"):
                shutil.rmtree(scratch, ignore_errors=True)
