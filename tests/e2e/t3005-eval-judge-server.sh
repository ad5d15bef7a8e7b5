#!/bin/sh
# t3005: the judge server (docs/evaluation.md, "The judge server"): two
# evaluations share one server (the second a "hit", same pid) with the
# same verdict as a one-shot judge; a killed server and a stale socket file
# lead to a respawn and a correct result; a problem's change to PyTorch's
# defaults does not outlive its request; a request that kills the judge
# fails as a one-shot judge does and leaves the server serving; the idle
# time ends it; a directory open to others is refused; `kernelbot judge
# status|stop` lists and stops servers.
. "$(dirname "$0")/eval-lib.sh"
P="$ROOT/tests/fixtures/eval/scale_bias.py"
C="$ROOT/tests/fixtures/exploits/cpu/correct.c"
FAST="--backend cpu --trials 2 --rounds 2 --reps 3 --warmup 1 --timeout 20"
export KERNELBOT_JUDGE_DIR="$tmp/jd"
export KERNELBOT_CACHE="$tmp/cache"
trap '"$KERNELBOT" judge stop >/dev/null 2>&1; rm -rf "$tmp"' EXIT

js() { field "$1" correct.c "r['timing_breakdown_s']['judge_shared'].get('$2')"; }
# verdict FILE: status, checks and flags, but those read off the clocks
# (on a busy host a run's host clock and its events part now and then:
# timing_consistent, side_stream), which no two runs need share.
verdict() { field "$1" correct.c '(r["status"], sorted((c["name"], c["passed"]) for c in r["checks"] if c["name"] not in ("timing_consistent", "no_untimed_work", "bandwidth_floor")), sorted(set(r["flags"]) - {"side_stream", "untimed_work", "below_bandwidth_floor", "suspicious_speedup"}))'; }
# gone PID: wait (bounded by a count, not a clock) until the process is gone.
gone() {
	n=0
	while kill -0 "$1" 2>/dev/null && [ $n -lt 600 ]; do sleep 0.1; n=$((n + 1)); done
	! kill -0 "$1" 2>/dev/null
}

"$KERNELBOT" eval "$P" "$C" $FAST --json >"$tmp/a.json" 2>"$tmp/err" || bad "first eval failed: $(cat "$tmp/err")"
"$KERNELBOT" eval "$P" "$C" $FAST --json >"$tmp/b.json" 2>"$tmp/err" || bad "second eval failed: $(cat "$tmp/err")"
expect "$tmp/a.json" correct.c 'r["status"] == "correct" and r["timing_breakdown_s"]["judge_shared"]["judge_server"] == "spawned"' "first eval: correct, the server spawned"
expect "$tmp/b.json" correct.c 'r["status"] == "correct" and r["timing_breakdown_s"]["judge_shared"]["judge_server"] == "hit"' "second eval: correct, a hit"
pid1=$(js "$tmp/a.json" judge_server_pid)
[ -n "$pid1" ] && [ "$pid1" = "$(js "$tmp/b.json" judge_server_pid)" ] && ok "one server pid for both ($pid1)" ||
	bad "server pids differ: $pid1 vs $(js "$tmp/b.json" judge_server_pid)"
expect "$tmp/b.json" correct.c 'r["timing_breakdown_s"]["judge_shared"]["judge_start"] == 0 and "judge" in r["timing_breakdown_s"]' "a hit starts nothing; the breakdown keeps its keys"
st=$(stat -c %a "$KERNELBOT_JUDGE_DIR")
[ "$st" = 700 ] && ok "the judge directory is 0700" || bad "judge directory mode $st"

# The same verdict from a one-shot judge (the variable and the option).
KERNELBOT_JUDGE_SERVER=0 "$KERNELBOT" eval "$P" "$C" $FAST --json >"$tmp/off.json" 2>"$tmp/err" || bad "one-shot eval failed: $(cat "$tmp/err")"
"$KERNELBOT" eval "$P" "$C" $FAST --no-judge-server --json >"$tmp/off2.json" 2>"$tmp/err" || bad "--no-judge-server eval failed: $(cat "$tmp/err")"
expect "$tmp/off.json" correct.c 'r["timing_breakdown_s"]["judge_shared"]["judge_server"] == "off" and "judge_wait" in r["timing_breakdown_s"]["judge_shared"]' "KERNELBOT_JUDGE_SERVER=0: off, the early-start one-shot judge"
expect "$tmp/off2.json" correct.c 'r["timing_breakdown_s"]["judge_shared"]["judge_server"] == "off"' "--no-judge-server: off"
[ "$(verdict "$tmp/off.json")" = "$(verdict "$tmp/b.json")" ] && ok "server and one-shot: same status, checks and flags" ||
	bad "verdicts differ: $(verdict "$tmp/off.json") vs $(verdict "$tmp/b.json")"

# A server still running another request: a one-shot judge after the wait.
runf=$(ls "$KERNELBOT_JUDGE_DIR"/*.run | head -1)
KERNELBOT_JUDGE_WAIT_S=0 flock -o "$runf" "$KERNELBOT" eval "$P" "$C" $FAST --json >"$tmp/busy.json" 2>"$tmp/err" || bad "eval beside a busy server failed: $(cat "$tmp/err")"
expect "$tmp/busy.json" correct.c 'r["status"] == "correct" and r["timing_breakdown_s"]["judge_shared"]["judge_server"] == "fallback" and "busy" in r["timing_breakdown_s"]["judge_shared"]["judge_server_reason"]' "a busy server: one-shot fallback, correct"

# Status lists it; kill -9 leaves a stale socket; the next eval respawns.
"$KERNELBOT" judge status --json >"$tmp/status.json" || bad "judge status failed"
"$PY" -c 'import json,sys; l=json.load(open(sys.argv[1])); sys.exit(0 if any(s["pid"] == int(sys.argv[2]) and s["alive"] and s["backend"] == "cpu" and s["requests"] == 2 for s in l) else 1)' \
	"$tmp/status.json" "$pid1" && ok "judge status: the server, alive, 2 requests" || bad "judge status: $(cat "$tmp/status.json")"
# A problem that flips PyTorch's default dtype at import: the next
# request on the same server sees the server's own default again.
cp "$P" "$tmp/flip.py"; printf '\ntorch.set_default_dtype(torch.float64)\n' >>"$tmp/flip.py"
"$KERNELBOT" eval "$tmp/flip.py" "$C" $FAST --json >"$tmp/flip.json" 2>/dev/null
"$KERNELBOT" eval "$P" "$C" $FAST --json >"$tmp/after.json" 2>"$tmp/err" || bad "eval after the flip failed: $(cat "$tmp/err")"
expect "$tmp/after.json" correct.c 'r["timing_breakdown_s"]["judge_shared"]["judge_server"] == "hit" and r["timing_breakdown_s"]["judge_shared"]["judge_server_requests"] >= 4' "after a dtype-flipping problem: the same server"
[ "$(verdict "$tmp/after.json")" = "$(verdict "$tmp/b.json")" ] && ok "the flip did not outlive its request: same verdict" ||
	bad "verdict after the flip: $(verdict "$tmp/after.json")"

kill -9 "$pid1"
gone "$pid1" || bad "kill -9 did not end $pid1"
sock=$(ls "$KERNELBOT_JUDGE_DIR"/*.sock 2>/dev/null | head -1)
[ -S "$sock" ] && ok "kill -9 leaves a stale socket file" || bad "no stale socket after kill -9"
"$KERNELBOT" eval "$P" "$C" $FAST --json >"$tmp/c.json" 2>"$tmp/err" || bad "eval after kill -9 failed: $(cat "$tmp/err")"
expect "$tmp/c.json" correct.c 'r["status"] == "correct" and r["timing_breakdown_s"]["judge_shared"]["judge_server"] == "spawned"' "after kill -9: respawned, correct"
pid2=$(js "$tmp/c.json" judge_server_pid)
[ -n "$pid2" ] && [ "$pid2" != "$pid1" ] && ok "a new server pid ($pid2)" || bad "same pid after kill: $pid2"

# A plain file where the socket should be (not a socket at all).
kill -9 "$pid2"; gone "$pid2"
rm -f "$sock"; echo junk >"$sock"
"$KERNELBOT" eval "$P" "$C" $FAST --json >"$tmp/d.json" 2>"$tmp/err" || bad "eval over a junk socket file failed: $(cat "$tmp/err")"
expect "$tmp/d.json" correct.c 'r["status"] == "correct" and r["timing_breakdown_s"]["judge_shared"]["judge_server"] == "spawned"' "a junk file at the socket path: replaced, correct"
pid3=$(js "$tmp/d.json" judge_server_pid)

# A problem that exits at import: it kills only its reference process
# (the judge never imports it), the same failure as a one-shot judge, and
# the server goes on.
printf 'import os\nos._exit(3)\n' >"$tmp/killer.py"
KERNELBOT_JUDGE_SERVER=0 "$KERNELBOT" eval "$tmp/killer.py" "$C" $FAST --json >/dev/null 2>"$tmp/err1"; st1=$?
"$KERNELBOT" eval "$tmp/killer.py" "$C" $FAST --json >/dev/null 2>"$tmp/err2"; st2=$?
[ "$st2" -ne 0 ] && [ "$st1" = "$st2" ] && grep -q "reference process exited with status 3" "$tmp/err2" &&
	ok "a problem that exits at import: exit $st2, as with a one-shot judge" ||
	bad "exiting problem: server exit $st2, one-shot exit $st1: $(cat "$tmp/err2")"
kill -0 "$pid3" 2>/dev/null && ok "the server survives it" || bad "server $pid3 died with the problem's os._exit"
"$KERNELBOT" eval "$P" "$C" $FAST --json >"$tmp/e.json" 2>"$tmp/err" || bad "eval after the killer failed: $(cat "$tmp/err")"
expect "$tmp/e.json" correct.c "r['status'] == 'correct' and r['timing_breakdown_s']['judge_shared']['judge_server'] == 'hit' and r['timing_breakdown_s']['judge_shared']['judge_server_pid'] == $pid3" "the next eval: the same server, correct"

# stop: SIGTERM; the server removes its socket.
pid4=$(js "$tmp/e.json" judge_server_pid)
"$KERNELBOT" judge stop >"$tmp/stop" && grep -q "stopped 1 judge server" "$tmp/stop" && ok "judge stop: one stopped" || bad "judge stop: $(cat "$tmp/stop")"
gone "$pid4" && [ ! -e "$sock" ] && ok "stopped: the process and its socket gone" ||
	bad "after stop: pid $pid4 or $sock remains: $(ls "$KERNELBOT_JUDGE_DIR"; tail -5 "$KERNELBOT_JUDGE_DIR"/*.log)"
"$KERNELBOT" judge status >"$tmp/st2" && ! grep -q running "$tmp/st2" && ok "judge status: none running" || bad "status after stop: $(cat "$tmp/st2")"

# The idle time ends a server.
KERNELBOT_JUDGE_IDLE_S=1 "$KERNELBOT" eval "$P" "$C" $FAST --json >"$tmp/f.json" 2>"$tmp/err" || bad "idle eval failed: $(cat "$tmp/err")"
pid5=$(js "$tmp/f.json" judge_server_pid)
gone "$pid5" && grep -q "judge-server $pid5: exiting: idle" "$KERNELBOT_JUDGE_DIR"/*.log && ok "KERNELBOT_JUDGE_IDLE_S=1: the server exits when idle" ||
	bad "idle server $pid5: $(tail -3 "$KERNELBOT_JUDGE_DIR"/*.log)"

# A judge directory others can enter is refused: a one-shot judge instead.
chmod 0755 "$KERNELBOT_JUDGE_DIR"
"$KERNELBOT" eval "$P" "$C" $FAST --json >"$tmp/g.json" 2>"$tmp/err" || bad "eval with an open judge dir failed: $(cat "$tmp/err")"
expect "$tmp/g.json" correct.c 'r["status"] == "correct" and r["timing_breakdown_s"]["judge_shared"]["judge_server"] == "fallback" and "open to other users" in r["timing_breakdown_s"]["judge_shared"]["judge_server_reason"]' "a judge dir open to others: refused, one-shot fallback, correct"
"$KERNELBOT" judge status >/dev/null 2>"$tmp/err"; st=$?
[ "$st" -eq 1 ] && grep -q "open to other users" "$tmp/err" && ok "judge status refuses it too" || bad "judge status on an open dir: exit $st"
chmod 0700 "$KERNELBOT_JUDGE_DIR"

"$KERNELBOT" judge bogus >/dev/null 2>&1; st=$?
[ "$st" -eq 2 ] && ok "judge with an unknown action: exit 2" || bad "judge bogus: exit $st"

# A one-shot judge whose caller is killed ends its reference process and
# workers and itself (an outside attack found them running 13 minutes
# after its `kernelbot eval` was killed: the judge has a process group of
# its own, so the group's kill did not reach it).
sed 's|int64_t rows|for (volatile long spin = 0; spin < 40000000000L; spin++) ; int64_t rows|' "$C" >"$tmp/slow.c"
mkdir -p "$tmp/oneshot"
TMPDIR="$tmp/oneshot" "$KERNELBOT" eval "$P" "$tmp/slow.c" $FAST --no-judge-server --json \
    >/dev/null 2>&1 &
cpid=$!
n=0
while ! pgrep -f "$tmp/oneshot/kernelbot-eval-.*/cand0" >/dev/null && [ $n -lt 600 ]; do
	sleep 0.1; n=$((n + 1))
done
pgrep -f "$tmp/oneshot/kernelbot-eval-.*/cand0" >/dev/null && ok "the one-shot judge's worker runs" ||
	bad "no worker of the one-shot judge came"
kill -9 "$cpid"
# Within 5 s (a watch every 0.2 s), where its calls alone take minutes.
n=0
while pgrep -f "$tmp/oneshot/" >/dev/null && [ $n -lt 50 ]; do sleep 0.1; n=$((n + 1)); done
pgrep -f "$tmp/oneshot/" >/dev/null && bad "after its caller's kill -9 still running: $(pgrep -af "$tmp/oneshot/" | head -3)" ||
	ok "the caller killed: the one-shot judge's processes end"

done_tests t3005-eval-judge-server
