#!/bin/sh
# kernelbot serve lifecycle: kill -9 under load loses no acknowledged job;
# SIGTERM finishes the request in progress and exits 0; SIGHUP reopens the
# log; systemd gets READY=1, WATCHDOG=1 and STOPPING=1.
. "$KB_ROOT/tests/e2e/lib.sh"
t_init t1004
FX="$KB_ROOT/tests/fixtures/webhooks"
kb_config "$TMP/kb.yml"
echo "log_file: $TMP/kb.log" >>"$TMP/kb.yml"

db() {
	sqlite3 "$TMP/data/kernelbot.db" "$1"
}

# A client that sends signed pushes with fresh ids over one keep-alive
# connection until killed, appending "DELIVERY JOB" for each 202 (flushed
# before the next send), or sends one delivery slowly (mode "slow").
cat >"$TMP/client.py" <<'EOP'
import hashlib, hmac, http.client, json, sys, time
port, secret, body_file, mode, out = int(sys.argv[1]), sys.argv[2].encode(), sys.argv[3], sys.argv[4], sys.argv[5]
prefix = sys.argv[6] if len(sys.argv) > 6 else "load"
base = open(body_file, "rb").read()
def headers(i, body):
    return {"Content-Type": "application/json", "X-GitHub-Event": "push",
            "X-GitHub-Delivery": "%s-%d" % (prefix, i),
            "X-Hub-Signature-256": "sha256=" + hmac.new(secret, body, hashlib.sha256).hexdigest()}
f = open(out, "a")
if mode == "slow":
    import socket
    body = base
    h = headers(0, body)
    s = socket.create_connection(("127.0.0.1", port), 5)
    req = "POST /webhooks/github HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n" % len(body)
    req += "".join("%s: %s\r\n" % kv for kv in h.items()) + "\r\n"
    s.sendall(req.encode() + body[:100])
    f.write("started\n"); f.flush()
    time.sleep(1.5)
    s.sendall(body[100:])
    s.settimeout(10)
    resp = s.recv(4096).decode(errors="replace")
    f.write(resp.split("\r\n")[0] + " " + resp.split("\r\n\r\n", 1)[-1].strip() + "\n"); f.flush()
    sys.exit(0)
i = 0
conn = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
while True:
    i += 1
    # a distinct commit per delivery, so every job row differs
    body = base.replace(b"76ae82c7b1a177c8d03f9e96e0adf2466113728f",
                        hashlib.sha1(b"%s-%d" % (prefix.encode(), i)).hexdigest().encode())
    try:
        conn.request("POST", "/webhooks/github", body, headers(i, body))
        r = conn.getresponse()
        data = r.read()
    except Exception:
        break
    if r.status == 202:
        f.write("%s-%d %d\n" % (prefix, i, json.loads(data)["job"])); f.flush()
EOP

# --- sd_notify: READY=1, WATCHDOG=1, STOPPING=1 over NOTIFY_SOCKET ---
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
/usr/bin/python3 "$TMP/notify.py" "$TMP/notify.sock" "$TMP/notify.log" &
t_bg $!
wait_for 5 test -S "$TMP/notify.sock"
NOTIFY_SOCKET="$TMP/notify.sock" WATCHDOG_USEC=400000 kb_serve_start "$TMP/kb.yml" || t_done
check "READY=1 sent" wait_for 5 grep -q "READY=1" "$TMP/notify.log"
sleep 1
check "WATCHDOG=1 sent repeatedly" test "$(grep -c WATCHDOG=1 "$TMP/notify.log")" -ge 2

# --- SIGHUP reopens the log file ---
http GET "http://127.0.0.1:$KB_PORT/healthz"
mv "$TMP/kb.log" "$TMP/kb.log.1"
kill -HUP "$KB_PID"
check "a new log file after SIGHUP" wait_for 5 test -f "$TMP/kb.log"
http POST "http://127.0.0.1:$KB_PORT/webhooks/github" -H "Content-Type: application/json" \
    -H "X-GitHub-Event: ping" -H "X-GitHub-Delivery: hup-1" \
    -H "X-Hub-Signature-256: $(sig_github "$GH_SECRET" "$FX/github-ping.json")" \
    --data-binary "@$FX/github-ping.json"
check "later lines go to the new file" wait_for 5 grep -q 'delivery=hup-1' "$TMP/kb.log"
check "earlier lines stay in the rotated file" grep -q 'msg=listening' "$TMP/kb.log.1"
check "the daemon survived SIGHUP" kill -0 "$KB_PID"

# --- SIGTERM lets the request in progress finish ---
/usr/bin/python3 "$TMP/client.py" "$KB_PORT" "$GH_SECRET" "$FX/github-push.json" slow "$TMP/slow.out" &
t_bg $!
wait_for 5 grep -q started "$TMP/slow.out"
kb_serve_stop TERM
check_eq "SIGTERM: exit 0" "$KB_STATUS" 0
check_match "the request in progress got its 202" "$(tail -n 1 "$TMP/slow.out")" '^HTTP/1.1 202 .*"job":'
check_eq "and its job is stored" "$(db "SELECT count(*) FROM jobs")" 1
check "STOPPING=1 sent" wait_for 5 grep -q "STOPPING=1" "$TMP/notify.log"
if port_open "$KB_PORT" 2>/dev/null; then fail "nothing listens after the stop"; else ok "nothing listens after the stop"; fi

# --- kill -9 under load: every acknowledged job survives ---
ACKED=0
for round in 1 2 3; do
	kb_serve_start "$TMP/kb.yml" || t_done
	: >"$TMP/acks.$round"
	/usr/bin/python3 "$TMP/client.py" "$KB_PORT" "$GH_SECRET" "$FX/github-push.json" load "$TMP/acks.$round" "r$round" &
	CL=$!
	t_bg "$CL"
	wait_for 10 test -s "$TMP/acks.$round"
	sleep 0.$((round * 3))
	kill -9 "$KB_PID"
	wait "$KB_PID" 2>/dev/null
	wait "$CL" 2>/dev/null
	ACKED=$((ACKED + $(wc -l <"$TMP/acks.$round")))
done
check "the load was acknowledged before the kills" test "$ACKED" -gt 10
check_eq "store integrity after kill -9" "$(db 'PRAGMA integrity_check')" ok
cat "$TMP"/acks.[0-9] >"$TMP/acks.all"
missing=$(sqlite3 "$TMP/acks.db" <<EOS
CREATE TABLE acks (d TEXT, job INTEGER);
.separator " "
.import $TMP/acks.all acks
ATTACH '$TMP/data/kernelbot.db' AS s;
SELECT count(*) FROM acks a WHERE NOT EXISTS (SELECT 1 FROM s.jobs j
    JOIN s.deliveries d ON j.delivery = d.id WHERE j.id = a.job AND d.delivery_id = a.d);
EOS
)
check_eq "all acknowledgements read back" "$(sqlite3 "$TMP/acks.db" 'SELECT count(*) FROM acks')" "$ACKED"
echo "# $ACKED acknowledged deliveries across 3 kill -9 rounds"
check_eq "every acknowledged job is in the store" "$missing" 0
check_eq "no job without its delivery" "$(db 'SELECT count(*) FROM jobs WHERE delivery NOT IN (SELECT id FROM deliveries)')" 0
check_eq "no accepted push delivery without its job" \
    "$(db "SELECT count(*) FROM deliveries d WHERE event = 'push' AND outcome = 'accepted' AND NOT EXISTS (SELECT 1 FROM jobs j WHERE j.delivery = d.id)")" 0

# kill -9 at odd moments of start-up (opening, migrating, binding) on a
# fresh store: it always opens again, whole
for delay in 0 0.005 0.01 0.02 0.05 0.1 0.2 0.4; do
	"$KERNELBOT" serve --config "$TMP/kb.yml" --data-dir "$TMP/fresh" >>"$TMP/serve.log" 2>&1 &
	p=$!
	sleep "$delay"
	kill -9 "$p" 2>/dev/null
	wait "$p" 2>/dev/null
done
kb_serve_start "$TMP/kb.yml" --data-dir "$TMP/fresh" || t_done
check "the daemon starts on whatever the kills left" kill -0 "$KB_PID"
kb_serve_stop TERM
check_eq "the store is intact" "$(sqlite3 "$TMP/fresh/kernelbot.db" 'PRAGMA integrity_check' 2>&1)" ok
"$KERNELBOT" jobs --data-dir "$TMP/fresh" --json >"$TMP/fresh.json" 2>&1
st=$?
# The latest schema is whatever this binary migrates a store to ($TMP/data, made by serve above).
check_eq "and at the latest schema" "$st:$(sqlite3 "$TMP/fresh/kernelbot.db" 'SELECT max(version) FROM schema_version')" \
    "0:$(db 'SELECT max(version) FROM schema_version')"

# after the last kill: restart, and a redelivery of an acknowledged id is a duplicate
kb_serve_start "$TMP/kb.yml" || t_done
first=$(head -n 1 "$TMP/acks.1" | cut -d' ' -f1)
http POST "http://127.0.0.1:$KB_PORT/webhooks/github" -H "Content-Type: application/json" \
    -H "X-GitHub-Event: push" -H "X-GitHub-Delivery: $first" \
    -H "X-Hub-Signature-256: $(sig_github "$GH_SECRET" "$FX/github-push.json")" \
    --data-binary "@$FX/github-push.json"
check_eq "acknowledged delivery redelivered after restart: duplicate" "$HTTP_BODY" '{"status":"duplicate"}'
OUT=$("$KERNELBOT" jobs --data-dir "$TMP/data" --json | /usr/bin/python3 -c 'import json,sys; print(len(json.load(sys.stdin)))')
check_eq "kernelbot jobs sees every job" "$OUT" "$(db 'SELECT count(*) FROM jobs')"
kb_serve_stop INT
check_eq "SIGINT: exit 0" "$KB_STATUS" 0
t_done
