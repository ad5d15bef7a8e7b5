#!/bin/sh
# t7006: `kernelbot runner` on its own (serve starts none): --once runs one
# task; a runner killed with -9 loses its lease, not the task, and its
# optimize dies with it; a task whose runners keep dying fails after
# runners.max_attempts leases, and its module's status says so; usage
# errors.
. "$KB_ROOT/tests/e2e/lib.sh"
t_init t7006
. "$KB_ROOT/tests/e2e/lib-coord.sh"
LEASE_S=2
coord_repo
module "$TMP/w/models/slow.py" "# standin: sleep 60"
coord_commit "a slow module"
coord_config "$TMP/kb.yml" "$(local_forge)"
sed -i 's/^  local: 1$/  local: none\n  max_attempts: 2/' "$TMP/kb.yml"
kb_serve_start "$TMP/kb.yml" || t_done
runner() {
	"$KERNELBOT" runner --config "$TMP/kb.yml" --cpu "$@"
}

gh_push 0000000000000000000000000000000000000000 "$SHA"
check "three tasks wait for a runner" wait_sql 30 "SELECT count(*) FROM tasks WHERE state = 'queued'" 3
runner --name r1 --once >>"$TMP/r1.log" 2>&1
check_eq "runner --once: exit 0" "$?" 0
check_eq "it ran the oldest task, once" "$(db "SELECT module, state, runner FROM tasks WHERE state <> 'queued'")" "models/fast.py|done|r1"

"$KERNELBOT" runner --config "$TMP/kb.yml" --cpu --name r2 >>"$TMP/r2.log" 2>&1 &
R2=$!
t_bg $R2
check "r2 runs the slow module" wait_sql 30 "SELECT runner FROM tasks WHERE module = 'models/slow.py' AND state = 'running'" r2
wait_for 10 grep -q '^models/slow.py' "$STANDIN_LOG"
P=$(awk '$1 == "models/slow.py" {print $3}' "$STANDIN_LOG" | tail -n 1)
kill -9 $R2
wait $R2 2>/dev/null
check "its optimize died with it" wait_for 5 sh -c "! kill -0 $P 2>/dev/null"
check "the lease ran out: the task is queued again" wait_sql 15 \
    "SELECT state, attempts FROM tasks WHERE module = 'models/slow.py'" "queued|1"
check_eq "the job waits, it is not lost" "$(db 'SELECT state FROM jobs')" running

"$KERNELBOT" runner --config "$TMP/kb.yml" --cpu --name r3 >>"$TMP/r3.log" 2>&1 &
R3=$!
t_bg $R3
check "r3 takes it: attempt 2" wait_sql 30 \
    "SELECT runner, attempts FROM tasks WHERE module = 'models/slow.py' AND state = 'running'" "r3|2"
kill -9 $R3
wait $R3 2>/dev/null
check "after max_attempts leases the task fails" wait_sql 15 \
    "SELECT state FROM tasks WHERE module = 'models/slow.py'" failed
check_match "saying why" "$(db "SELECT error FROM tasks WHERE module = 'models/slow.py'")" "stopped heartbeating 2 times"
runner --name r4 --once >>"$TMP/r4.log" 2>&1
check "the last task done by another runner, and the job ends" wait_sql 30 "SELECT state FROM jobs" done
check_match "the failed module's status says so" "$(cat "$TMP/forge/statuses/$SHA.json")" "optimization failed: its runner stopped heartbeating"
check_eq "four runners registered" "$(db 'SELECT group_concat(name) FROM (SELECT name FROM runners ORDER BY name)')" "r1,r2,r3,r4"
check_eq "kernelbot jobs --runners lists them" \
    "$("$KERNELBOT" jobs --data-dir "$TMP/data" --runners --json | $PY -c 'import json,sys; print(" ".join(r["name"] + ":" + r["backend"] + ":" + r["arch"] for r in json.load(sys.stdin)))')" \
    "r1:cpu:cpu r2:cpu:cpu r3:cpu:cpu r4:cpu:cpu"
check_match "and as a table" "$("$KERNELBOT" jobs --data-dir "$TMP/data" --runners)" "^r4 +[^ ]+ +[0-9]+ +-1 +cpu +cpu"

runner --name r5 --once >"$TMP/r5.log" 2>&1
check_eq "--once with nothing queued: exit 0" "$?" 0
"$KERNELBOT" runner --config "$TMP/kb.yml" --gpu 0 --cpu 2>"$TMP/err"
check_eq "--gpu with --cpu: usage error" "$?" 2
"$KERNELBOT" runner --config "$TMP/kb.yml" --gpu x 2>"$TMP/err"
check_eq "--gpu x: usage error" "$?" 2
if ! "$KERNELBOT" doctor --json 2>/dev/null | grep -q '"gpus": \[{'; then
	"$KERNELBOT" runner --config "$TMP/kb.yml" --gpu 0 --once 2>"$TMP/err"
	check_eq "--gpu 0 without a GPU: exit 1" "$?" 1
	check_match "saying so" "$(cat "$TMP/err")" "no GPU 0 on this host"
fi
# --- under systemd: READY=1 once registered, the watchdog, STOPPING=1 ---
cat >"$TMP/notify.py" <<'EOP'
import socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
s.bind(sys.argv[1])
out = open(sys.argv[2], "a")
s.settimeout(30)
try:
    while True:
        msg = s.recv(4096).decode()
        out.write(msg.replace("\n", " ") + "\n"); out.flush()
        if "STOPPING=1" in msg:
            break
except socket.timeout:
    pass
EOP
$PY "$TMP/notify.py" "$TMP/notify.sock" "$TMP/notify.log" &
t_bg $!
wait_for 5 test -S "$TMP/notify.sock"
NOTIFY_SOCKET="$TMP/notify.sock" WATCHDOG_USEC=400000 "$KERNELBOT" runner --config "$TMP/kb.yml" \
    --cpu --name r6 >>"$TMP/r6.log" 2>&1 &
R6=$!
t_bg $R6
check "READY=1 once registered" wait_for 10 grep -q "READY=1" "$TMP/notify.log"
check "the watchdog is pinged while idle" wait_for 5 sh -c "[ \$(grep -c WATCHDOG=1 '$TMP/notify.log') -ge 3 ]"
kill -TERM $R6
wait $R6
check_eq "SIGTERM: the runner exits 0" "$?" 0
check "STOPPING=1" grep -q "STOPPING=1" "$TMP/notify.log"
kb_serve_stop
t_done
