#!/bin/sh
# bench/eval_cost_cpu.sh: one honest CPU kernel through an old judge (a
# bundle of an earlier commit in .bundle-before/: binary and harness) and
# the current build, interleaved, three times each: what the trust checks
# cost per candidate on the CPU backend (docs/BENCHMARKS.md). One-shot
# judges (no judge server), so the reference process starts every time.
cd "$(dirname "$0")/.." || exit 2
P=tests/fixtures/eval/scale_bias.py; C=tests/fixtures/exploits/cpu/correct.c
[ -x .bundle-before/kernelbot ] || { echo "bench: no .bundle-before/kernelbot (make device-bundle at the old commit, then copy its kernelbot and harness/ there)"; exit 2; }
export KERNELBOT_JUDGE_SERVER=0 KERNELBOT_PYTHON=/usr/bin/python3
for i in 1 2 3; do
  for b in old new; do
    if [ $b = old ]; then K=.bundle-before/kernelbot; H=$PWD/.bundle-before/harness/harness.py; else K=build/default/kernelbot; H=$PWD/gpu/harness/harness.py; fi
    s=$(date +%s.%N)
    KERNELBOT_HARNESS=$H $K eval $P $C --backend cpu --json --rounds 10 > "${TMPDIR:-/tmp}/cost-$b-$i.json" 2>/dev/null
    rc=$?
    w=$(echo "$(date +%s.%N) - $s" | bc)
    python3 -c "
import json,sys; r=json.load(open(sys.argv[1])); r=r[0] if isinstance(r,list) else r
j=r['timing_breakdown_s']['judge']; sh=r['timing_breakdown_s'].get('judge_shared',{})
print(sys.argv[2], sys.argv[3], 'rc', sys.argv[4], 'wall %.2f'%float(sys.argv[5]), r['status'], 'eval_s %.2f'%r['eval_s'], 'timing %.2f'%j.get('timing',0), 'checks %.2f'%j.get('spot_checks',0), 'setup %.2f'%sh.get('judge_setup',0))
" "${TMPDIR:-/tmp}/cost-$b-$i.json" $b $i $rc $w
  done
done
