#!/bin/sh
# The webhook intake benchmark (docs/BENCHMARKS.md): a real `kernelbot
# serve` on loopback with a fresh store, bench/loadgen sending signed
# GitHub pushes with unique delivery ids from a second process, several
# runs, the median reported, and the store checked afterwards: every 202
# must be a job row on disk. Two kinds of run, RUNS of each:
#   paced:      RATE deliveries/s offered on a schedule; latency from the
#               scheduled send time (the p99 the target is about)
#   saturation: CONNECTIONS closed-loop clients, as fast as answers come
#
#   sh bench/webhook.sh [RUNS] [SECONDS] [CONNECTIONS] [RATE]
#
# Needs build/default/kernelbot and build/default/bench/loadgen (make bench).
set -u
RUNS=${1:-5}
SECS=${2:-10}
CONNS=${3:-16}
RATE=${4:-600}
BUILD=${BUILD:-build/default}
KB="$PWD/$BUILD/kernelbot"
LG="$PWD/$BUILD/bench/loadgen"
TMP=$(mktemp -d "${TMPDIR:-/tmp}/kb-bench.XXXXXX")
PID=""
cleanup() {
	[ -n "$PID" ] && kill -9 "$PID" 2>/dev/null
	rm -rf "$TMP"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

PORT=$(/usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n' >"$TMP/github.secret"
cat >"$TMP/kb.yml" <<EOC
listen: 127.0.0.1:$PORT
data_dir: ${BENCH_DATA_DIR:-$TMP/data}
log_file: $TMP/kb.log
allow_repos: [acme/*]
http:
  threads: ${BENCH_THREADS:-8}
forges:
  github:
    webhook_secret_file: $TMP/github.secret
EOC
"$KB" serve --config "$TMP/kb.yml" 2>>"$TMP/kb.log" &
PID=$!
i=0
until /usr/bin/python3 -c 'import socket,sys; socket.create_connection(("127.0.0.1",int(sys.argv[1])),1)' "$PORT" 2>/dev/null; do
	i=$((i + 1))
	[ "$i" -gt 100 ] && { echo "bench: kernelbot serve did not start"; cat "$TMP/kb.log"; exit 1; }
	sleep 0.1
done

echo "bench: $(nproc) CPUs, load average $(cut -d" " -f1-3 /proc/loadavg), $RUNS paced runs at $RATE/s and $RUNS saturation runs, ${SECS}s each, $CONNS connections, synchronous=FULL, data in ${BENCH_DATA_DIR:-$TMP/data}"
"$LG" --port "$PORT" --secret-file "$TMP/github.secret" \
    --body tests/fixtures/webhooks/github-push.json --connections "$CONNS" \
    --seconds 2 --prefix warmup >/dev/null || { echo "bench: warm-up failed"; exit 1; }
status=0
for r in $(seq "$RUNS"); do
	"$LG" --port "$PORT" --secret-file "$TMP/github.secret" \
	    --body tests/fixtures/webhooks/github-push.json --connections "$CONNS" \
	    --seconds "$SECS" --rate "$RATE" --prefix "paced$r" | tee -a "$TMP/paced.jsonl" || status=1
	"$LG" --port "$PORT" --secret-file "$TMP/github.secret" \
	    --body tests/fixtures/webhooks/github-push.json --connections "$CONNS" \
	    --seconds "$SECS" --prefix "sat$r" | tee -a "$TMP/sat.jsonl" || status=1
done
kill -TERM "$PID"
wait "$PID"
PID=""
echo "server log: $(grep -c 'msg="slow commit"' "$TMP/kb.log") commits over 100 ms, $(grep -c 'msg="slow wal checkpoint"' "$TMP/kb.log") checkpoints pausing writers over 50 ms"
grep -E 'msg="(slow commit|slow wal checkpoint)"' "$TMP/kb.log" | tail -n 5
DB="${BENCH_DATA_DIR:-$TMP/data}/kernelbot.db"
/usr/bin/python3 - "$TMP/paced.jsonl" "$TMP/sat.jsonl" "$DB" <<'EOP' || status=1
import json, sqlite3, statistics, sys
paced = [json.loads(l) for l in open(sys.argv[1])]
sat = [json.loads(l) for l in open(sys.argv[2])]
db = sqlite3.connect(sys.argv[3])
stored = db.execute("SELECT count(*) FROM jobs WHERE payload LIKE '%\"delivery\":\"paced%'"
                    " OR payload LIKE '%\"delivery\":\"sat%'").fetchone()[0]
accepted = sum(r["accepted"] for r in paced + sat)
def report(name, runs):
    med = lambda k: statistics.median(r[k] for r in runs)
    print("%s: median of %d runs: %.0f accepted deliveries/s, p50 %.2f ms, p90 %.2f ms, p99 %.2f ms"
          " (p99 range %.2f-%.2f ms)" % (name, len(runs), med("rate"), med("p50_ms"), med("p90_ms"),
          med("p99_ms"), min(r["p99_ms"] for r in runs), max(r["p99_ms"] for r in runs)))
    return med
mp = report("paced at %.0f/s" % paced[0]["offered"], paced)
ms = report("saturation, %d connections" % sat[0]["connections"], sat)
print("durable: %d deliveries acknowledged with 202, %d job rows in the store after the runs" % (accepted, stored))
ok = stored == accepted and mp("rate") >= 500 and mp("p99_ms") < 50 and ms("rate") >= 500
print("target (>= 500 accepted/s with p99 < 50 ms, every 202 stored): %s" % ("met" if ok else "NOT met"))
sys.exit(0 if ok else 1)
EOP
exit $status
