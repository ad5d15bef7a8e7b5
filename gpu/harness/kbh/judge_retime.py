"""The flags a candidate's timing may earn after its rounds, each stood
only when a re-time trips it again (one disturbed stretch of a loaded
host must not decide): integrity (side_stream: the events and the
host's clock part; untimed_work: the requests' wall clock is not
explained by the calls the worker timed) and plausibility
(suspicious_speedup; below_bandwidth_floor: faster than the bytes that
must move allow). A mixin of judge_run.CandidateRun, whose rounds
(rotation, timed_round), checks, flags and breakdown it uses."""
import statistics
import time

from kbh import judge_stats as stats
from kbh import judge_timing as jt
from kbh.judge_timed import clock_bound

SUSPICIOUS_SPEEDUP = 10.0
# A candidate that trips suspicious_speedup or below_bandwidth_floor is
# timed again for this many rounds (with a fresh copy-bandwidth figure and,
# for the speedup, fresh baseline rounds) and flagged only if it trips
# again: one disturbed stretch of a loaded host must not decide.
RETIME_ROUNDS = 5
# How much slower than the first rounds a re-time may be and still clear
# a flag: noise on a busy host is a few percent; a kernel that was fast
# only while the figures were set is far more.
RETIME_AGREE = 0.25


class Retimed:
    """CandidateRun's flags after the rounds (see the module)."""

    # --- integrity: work outside the timed calls, a rewritten clock -------
    @staticmethod
    def integrity_trips(n_rounds, side_notes, untimed_notes, clock_runs):
        """{flag: why} for side_stream and untimed_work over rounds that
        left these notes and runs: a majority of rounds, not one (a loaded
        host can stall one request), or the judge's clock (clock_bound)."""
        got = {}
        clock = clock_bound(clock_runs)
        if 2 * len(untimed_notes) > n_rounds or clock:
            got["untimed_work"] = "; ".join(([clock] if clock else []) + untimed_notes[:3])
        if 2 * len(side_notes) > n_rounds:
            got["side_stream"] = "; ".join(side_notes[:3])
        return got

    def integrity(self, w, n_rounds, side_notes, untimed_notes, clock_runs, med):
        """Flag side_stream and untimed_work, but only when RETIME_ROUNDS
        more rounds trip them again, as the plausibility flags: a stretch
        of a loaded host (a worker preempted before its replies round after
        round) must not decide. A kernel that does its work outside the
        timed calls, or rewrites its clock, does so in these rounds too; one
        that stops when they start reports times it did not report before
        (a median more than RETIME_AGREE slower), and keeps its flags."""
        got = self.integrity_trips(n_rounds, side_notes, untimed_notes, clock_runs)
        if got:
            t0 = time.perf_counter()
            side2, untimed2, clock2, cand = [], [], [], []
            for r in range(RETIME_ROUNDS):
                rot = self.rotation(r)
                cand.append(self.timed_round(w, rot, r, side2, untimed2, clock2))
            self.add_time("timing_recheck", t0)
            again = self.integrity_trips(RETIME_ROUNDS, side2, untimed2, clock2)
            rmed = statistics.median([x for rd in cand for x in rd])
            agree = rmed <= (1 + RETIME_AGREE) * med
            still = set(got) if not agree else set(again) & set(got)
            self.res["timing"]["recheck"] = {
                "rounds": RETIME_ROUNDS, "tripped": sorted(got), "still": sorted(still),
                "median_ms": rmed, "agrees": agree}
            got = {f: "; ".join([got[f]] + ([again[f]] if f in again else [])
                                + ([] if agree else ["the re-check's median %.4g ms against the "
                                                     "first rounds' %.4g ms" % (rmed, med)]))
                   for f in sorted(still)}
        if "untimed_work" in got:
            self.flag("untimed_work")
            self.check("no_untimed_work", False, got["untimed_work"])
        else:
            self.check("no_untimed_work", True, "the timing requests' wall clock is explained by "
                       "the timed runs, flushes, poisons and perturbations, and the judge's "
                       "clock by the calls the worker timed%s" % self.recheck_note("untimed_work"))
        if "side_stream" in got:
            self.flag("side_stream")
            self.check("timing_consistent", False, got["side_stream"])
        else:
            self.check("timing_consistent", True, "events, device-wide sync and the judge's clock "
                       "agree%s" % self.recheck_note("side_stream"))

    def recheck_note(self, flag):
        rc = self.res["timing"].get("recheck")
        if rc and flag in rc["tripped"]:
            return (" (the first rounds tripped it; %d more rounds did not)" % rc["rounds"])
        return ""

    # --- plausibility: the bandwidth floor, suspicious speedups -----------
    def bw_probe(self):
        """A CopyProbe sized to the working set when the floor can apply
        (some of it cannot stay in the last-level cache), else None: a
        working set that fits has no bytes that must move."""
        ctx = self.ctx
        if getattr(ctx, "llc_bytes", None) is None:
            ctx.llc_bytes = jt.cache_bytes(ctx.device)
        self.working_set = ctx.sets[ctx.timing_sets[0]]["bytes"]
        if jt.must_move_bytes(self.working_set, ctx.llc_bytes) <= 0:
            return None
        return jt.CopyProbe(ctx.device, self.working_set)

    def trips(self, med, se, sc, probe):
        """Which of suspicious_speedup, below_bandwidth_floor a median of
        med ms (speedups se, sc) trips, and the floor's figures."""
        got = set()
        if (se and se > SUSPICIOUS_SPEEDUP) or (sc and sc > SUSPICIOUS_SPEEDUP):
            got.add("suspicious_speedup")
        bw = probe.gbs() if probe is not None else None
        fl = jt.floor_ms(self.working_set, self.ctx.llc_bytes, bw)
        if fl is not None and med < fl:
            got.add("below_bandwidth_floor")
        return got, {"median_ms": med, "bandwidth_gbs": bw, "floor_ms": fl}

    def plausibility(self, w, med, se, sc, probe, seed):
        """Flag suspicious_speedup and below_bandwidth_floor, but only
        when a re-time (RETIME_ROUNDS more rounds, fresh figures) trips
        them again. A flag never changes the status: the outputs were
        right; the result asks for review (needs_review)."""
        ctx = self.ctx
        got, fig = self.trips(med, se, sc, probe)
        first = fig
        if got:
            t0 = time.perf_counter()
            rmed, rse, rsc = self.retime(w, probe, "suspicious_speedup" in got, se, sc, seed)
            self.add_time("timing_retime", t0)
            again, fig = self.trips(rmed, rse, rsc, probe)
            again &= got	# only what tripped first: the re-time confirms, it does not add
            # The re-time clears a flag only when it timed the same kernel:
            # one markedly slower now than in the rounds that set the
            # figures (a kernel that counts its calls and is honest only
            # once the re-time starts) keeps what it tripped.
            agree = rmed <= (1 + RETIME_AGREE) * med
            if not agree:
                again = set(got)
            self.res["timing"]["retime"] = {
                "rounds": RETIME_ROUNDS, "tripped": sorted(got), "still": sorted(again),
                "median_ms": rmed, "bandwidth_gbs": fig["bandwidth_gbs"],
                "speedup_eager": rse, "speedup_compile": rsc, "agrees": agree}
            self.check("timing_repeatable", agree, "the re-time's median %.4g ms against the "
                       "first rounds' %.4g ms (at most %.0f%% slower to clear a flag)"
                       % (rmed, med, RETIME_AGREE * 100))
            got = again
        for f in sorted(got):
            self.flag(f)
        ws, llc = self.working_set, ctx.llc_bytes
        must = jt.must_move_bytes(ws, llc)
        # The roofline, for reports (not a decision): all the bytes at the
        # copy's bandwidth, the one next to the rounds where there was one.
        bw_ref = fig["bandwidth_gbs"] or getattr(ctx, "bw", None)
        roof = ("; roofline: median %.4g ms vs %.4g ms to move all %d bytes at %.1f GB/s"
                % (fig["median_ms"], ws / (bw_ref * 1e9) * 1e3, ws, bw_ref)) if bw_ref else ""
        if must <= 0:
            self.check("bandwidth_floor", True, "the working set (%d bytes of inputs, parameters and "
                       "outputs) fits in the %d-byte last-level cache: no bytes must move, the floor "
                       "does not apply%s" % (ws, llc, roof))
            return
        if fig["floor_ms"] is None:
            self.check("bandwidth_floor", True, "no copy bandwidth was measured: the floor does not "
                       "apply")
            return
        retimed = self.res["timing"].get("retime")
        note = ""
        if retimed and "below_bandwidth_floor" in retimed["tripped"]:
            note = ("; the first rounds' median %.4g ms was below %.4g ms, so it was re-timed "
                    "(%d rounds)" % (first["median_ms"], first["floor_ms"], RETIME_ROUNDS))
        self.check("bandwidth_floor", "below_bandwidth_floor" not in got,
                   "median %.4g ms vs floor %.4g ms = %.2g x %d bytes that must move (the %d-byte "
                   "working set less the %d-byte last-level cache) at the %.1f GB/s of a copy "
                   "measured next to the candidate's rounds%s%s"
                   % (fig["median_ms"], fig["floor_ms"], jt.FLOOR_MARGIN, must, ws, llc,
                      fig["bandwidth_gbs"], note, roof))

    def retime(self, w, probe, baselines, se, sc, seed):
        """RETIME_ROUNDS more rounds of the candidate, each next to a copy
        (probe) and, with baselines, eager and torch.compile as in the
        main loop: (median ms, eager speedup, compile speedup); a speedup
        that was None stays None."""
        ctx = self.ctx
        if probe is not None:
            probe.fresh()
        cand, eager, comp = [], [], []
        eager_fn = getattr(ctx, "eager_fn", None) if baselines else None
        comp_fn = getattr(ctx, "compile_fn", None) if baselines and ctx.cached is None else None
        for r in range(RETIME_ROUNDS):
            rot = self.rotation(r)
            # Timed runs like the others: each may be checked.
            cand.append(self.timed_round(w, rot, r, [], []))
            if probe is not None:
                probe.round()
            if eager_fn is not None:
                eager.append([e for e, _ in ctx.time_baseline(eager_fn, rot)])
            if comp_fn is not None:
                comp.append([e for e, _ in ctx.time_baseline(comp_fn, rot)])
        med = statistics.median([x for rd in cand for x in rd])
        rse = stats.speedup(eager, cand, seed)[0] if eager and se is not None else None
        if comp and sc is not None:
            rsc = stats.speedup(comp, cand, seed + 1)[0]
        elif sc is not None and baselines and ctx.cached is not None:
            rsc = stats.speedup_unpaired(ctx.cached.get("compile_rounds") or [], cand, seed + 1)[0]
        else:
            rsc = None
        if not baselines:
            rse, rsc = se, sc
        return med, rse, rsc
