#!/bin/sh
# t3008: the problem module is repository code, and the judge never runs
# it (docs/evaluation.md, "The reference process"): a module that copies
# the caller's secrets at import leaks nothing; one that patches the
# judge's comparison at import does not change the next evaluation on the
# same judge server; modules that never finish importing, building,
# drawing inputs or running forward end `kernelbot eval --timeout 10` with
# an error naming the stage, leave no process behind, and the judge server
# still answers afterwards; a slow reference does not use up the
# candidate's deadline.
. "$(dirname "$0")/eval-lib.sh"
F="$ROOT/tests/fixtures/untrusted"
P="$ROOT/tests/fixtures/eval/scale_bias.py"
C="$ROOT/tests/fixtures/exploits/cpu/correct.c"
FAST="--backend cpu --trials 2 --rounds 2 --reps 3 --warmup 1"
export KERNELBOT_JUDGE_DIR="$tmp/jd"
export KERNELBOT_CACHE="$tmp/cache"
trap '"$KERNELBOT" judge stop >/dev/null 2>&1; rm -rf "$tmp"' EXIT
# Every evaluation's work directory (and so every process it starts: the
# reference process, workers) lies under $tmp/w.
mkdir -p "$tmp/w" "$tmp/prob" "$tmp/loot" "$tmp/home" "$tmp/data"
chmod 0755 "$tmp/prob"
chmod 0777 "$tmp/loot"	# writable by anyone: only the sandbox can stop a copy

# (a) secrets readable by the caller: in $TMPDIR, a data directory, $HOME.
SECRET="kb-secret-$$-$(date +%s)"
for f in "$tmp/secret.txt" "$tmp/data/kernelbot.key" "$tmp/home/.kernelbot-token"; do
	echo "$SECRET" >"$f"
	chmod 0644 "$f"
done
chmod 0755 "$tmp/data" "$tmp/home"
sed -e "s|@SECRETS@|[\"$tmp/secret.txt\", \"$tmp/data/kernelbot.key\", \"$tmp/home/.kernelbot-token\"]|" \
	-e "s|@LOOT@|$tmp/loot|" "$F/steal.py" >"$tmp/prob/steal.py"
HOME="$tmp/home" TMPDIR="$tmp/w" KERNELBOT_JUDGE_SERVER=0 "$KERNELBOT" eval "$tmp/prob/steal.py" "$C" $FAST \
	--timeout 20 --json >"$tmp/steal.json" 2>"$tmp/err" || bad "eval of the stealing problem failed: $(cat "$tmp/err")"
# It ran (it loaded and its reference is right) and took nothing.
expect "$tmp/steal.json" correct.c 'r["status"] == "correct"' "the stealing problem was loaded and evaluated"
if grep -rqs "$SECRET" "$tmp/loot" "$tmp/w"; then
	bad "a secret leaked: $(grep -rls "$SECRET" "$tmp/loot" "$tmp/w")"
else
	ok "no secret copied out (loot: $(ls "$tmp/loot" | wc -l) files, none with the secret)"
fi
if [ "$SANDBOX" = 1 ]; then
	[ -z "$(ls -A "$tmp/loot")" ] && ok "the problem could not write outside its scratch" ||
		bad "the problem wrote into $tmp/loot: $(ls "$tmp/loot")"
else
	skipped "without sandbox-exec the copy is not confined"
fi

# (b) a problem that patches the judge's comparison, through one server,
# then a wrong kernel against a clean problem on the same server.
cp "$F/patch_judge.py" "$tmp/prob/patch_judge.py"
TMPDIR="$tmp/w" "$KERNELBOT" eval "$tmp/prob/patch_judge.py" "$C" $FAST --timeout 20 --json >"$tmp/patch.json" 2>"$tmp/err" ||
	bad "eval of the patching problem failed: $(cat "$tmp/err")"
expect "$tmp/patch.json" correct.c 'r["status"] == "correct" and r["timing_breakdown_s"]["judge_shared"]["judge_server"] == "spawned"' "the patching problem: evaluated on a new judge server"
pid=$(field "$tmp/patch.json" correct.c "r['timing_breakdown_s']['judge_shared'].get('judge_server_pid')")
TMPDIR="$tmp/w" "$KERNELBOT" eval "$P" "$F/ones.c" $FAST --timeout 20 --json >"$tmp/ones.json" 2>"$tmp/err"
expect "$tmp/ones.json" ones.c "r['status'] == 'mismatch' and r['timing_breakdown_s']['judge_shared'].get('judge_server_pid') == $pid" \
	"a wrong kernel on the same server afterwards: mismatch"

# (c) hangs: import, __init__, get_inputs, forward; one-shot and server.
gone_under() {	# no process whose command line names $1, within a bounded wait
	n=0
	while ps -eo args= | grep -F "$1" | grep -vq grep && [ $n -lt 100 ]; do sleep 0.1; n=$((n + 1)); done
	! ps -eo args= | grep -F "$1" | grep -vq grep
}
for st in import init inputs forward; do
	case $st in
	import) want="did not finish importing within 10 s" ;;
	init) want="__init__) did not finish within 10 s" ;;
	*) want="reference forward did not finish within 10 s" ;;
	esac
	cp "$F/hang_$st.py" "$tmp/prob/hang_$st.py"
	for mode in oneshot server; do
		w="$tmp/w/$st-$mode"
		mkdir -p "$w"
		t0=$(date +%s)
		if [ $mode = oneshot ]; then
			TMPDIR="$w" KERNELBOT_JUDGE_SERVER=0 "$KERNELBOT" eval "$tmp/prob/hang_$st.py" "$C" $FAST --timeout 10 --json >"$tmp/h.json" 2>"$tmp/herr"
		else
			TMPDIR="$w" "$KERNELBOT" eval "$tmp/prob/hang_$st.py" "$C" $FAST --timeout 10 --json >"$tmp/h.json" 2>"$tmp/herr"
		fi
		rc=$? took=$(($(date +%s) - t0))
		[ $rc -ne 0 ] && [ $took -le 60 ] && grep -qF "$want" "$tmp/herr" &&
			ok "hang in $st ($mode): exit $rc after $took s: $(head -c 200 "$tmp/herr")" ||
			bad "hang in $st ($mode): exit $rc after $took s: $(head -c 600 "$tmp/herr")"
		gone_under "$w" && ok "hang in $st ($mode): no process left" ||
			bad "hang in $st ($mode): left behind: $(ps -eo pid,args | grep -F "$w" | grep -v grep)"
	done
done
# A client that goes away while its request hangs: the server stops that
# request's work (the reference process and its tree) and stays free.
w="$tmp/w/gone"
mkdir -p "$w"
TMPDIR="$w" "$KERNELBOT" eval "$tmp/prob/hang_forward.py" "$C" $FAST --timeout 300 --json >/dev/null 2>&1 &
cpid=$!
n=0	# until its reference process runs (bounded by a count)
until ps -eo args= | grep -F "$w" | grep -F refproc | grep -vq grep || [ $n -ge 600 ]; do sleep 0.1; n=$((n + 1)); done
ps -eo args= | grep -F "$w" | grep -F refproc | grep -vq grep && ok "the abandoned request's reference process runs" ||
	bad "no reference process seen under $w"
kill -9 $cpid
wait $cpid 2>/dev/null
gone_under "$w" && ok "client killed: the server stopped its reference process" ||
	bad "client killed: left behind: $(ps -eo pid,args | grep -F "$w" | grep -v grep)"
TMPDIR="$tmp/w" "$KERNELBOT" eval "$P" "$C" $FAST --timeout 20 --json >"$tmp/after.json" 2>"$tmp/err" ||
	bad "eval after the hangs failed: $(cat "$tmp/err")"
expect "$tmp/after.json" correct.c "r['status'] == 'correct' and r['timing_breakdown_s']['judge_shared']['judge_server'] == 'hit' and r['timing_breakdown_s']['judge_shared'].get('judge_server_pid') == $pid" \
	"the same judge server answers after the hangs, correct"

# A slow reference under a short --timeout: its forward (0.45 s, no
# variants) fits the 1 s deadline of each request, and the time the judge
# waits on it (eager and torch.compile every round, the expected outputs
# of each check: 30 s and more) is not taken from the candidate's budget
# (23 requests of 1 s): the fast kernel is correct, not "timeout".
sed -e '1i import time' -e 's/^        return torch.tanh(x)/        time.sleep(0.45)\n&/' \
	-e '/^def get_input_variants/,/^$/d' "$P" >"$tmp/prob/slow_ref.py"
grep -q 'time.sleep(0.45)' "$tmp/prob/slow_ref.py" && ! grep -q '^def get_input_variants' "$tmp/prob/slow_ref.py" ||
	bad "the slow problem was not made"
TMPDIR="$tmp/w" "$KERNELBOT" eval "$tmp/prob/slow_ref.py" "$C" --backend cpu --trials 2 --rounds 4 \
	--reps 10 --warmup 1 --timeout 1 --json >"$tmp/slow.json" 2>"$tmp/err"
expect "$tmp/slow.json" correct.c "r['status'] == 'correct'" "a slow reference under --timeout 1: the candidate is correct, not timed out"
expect "$tmp/slow.json" correct.c "r['eval_s'] > 23" "(the reference's time was more than the candidate's budget)"

done_tests t3008-eval-untrusted-problem
