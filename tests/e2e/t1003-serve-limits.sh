#!/bin/sh
# kernelbot serve: huge bodies get 413 without being read, slow clients
# (slowloris headers, dribbled bodies) are cut off, the connection limit
# holds, and the daemon keeps answering through all of it.
. "$KB_ROOT/tests/e2e/lib.sh"
t_init t1003
FX="$KB_ROOT/tests/fixtures/webhooks"
kb_config "$TMP/kb.yml"
cat >>"$TMP/kb.yml" <<EOC
http:
  connection_timeout_s: 2
  request_timeout_s: 3
  max_connections: 24
  max_connections_per_ip: 24
EOC
kb_serve_start "$TMP/kb.yml" || t_done
URL="http://127.0.0.1:$KB_PORT/webhooks/github"

push_ok() {
	http POST "$URL" -H "Content-Type: application/json" -H "X-GitHub-Event: push" \
	    -H "X-GitHub-Delivery: ok-$1" \
	    -H "X-Hub-Signature-256: $(sig_github "$GH_SECRET" "$FX/github-push.json")" \
	    --data-binary "@$FX/github-push.json"
	[ "$HTTP_CODE" = 202 ] || [ "$HTTP_CODE" = 200 ]
}

# --- oversized: Content-Length over 25 MiB is refused before the upload ---
truncate -s 27M "$TMP/big.json"
start=$(date +%s)
http POST "$URL" -H "Content-Type: application/json" -H "X-GitHub-Event: push" \
    -H "X-GitHub-Delivery: big-1" -H "X-Hub-Signature-256: sha256=00" \
    --data-binary "@$TMP/big.json"
check_eq "Content-Length over the limit: 413" "$HTTP_CODE" 413
check "413 came at once" test $(( $(date +%s) - start )) -le 3
# chunked: no length up front, refused once the stream passes the limit
http POST "$URL" -H "Content-Type: application/json" -H "X-GitHub-Event: push" \
    -H "X-GitHub-Delivery: big-2" -H "X-Hub-Signature-256: sha256=00" \
    -H "Transfer-Encoding: chunked" --data-binary "@$TMP/big.json"
check_eq "chunked body over the limit: 413" "$HTTP_CODE" 413
# just under the limit is read (and then judged on its signature)
truncate -s 1M "$TMP/mid.json"
http POST "$URL" -H "Content-Type: application/json" -H "X-GitHub-Event: push" \
    -H "X-GitHub-Delivery: mid-1" -H "X-Hub-Signature-256: sha256=00" \
    --data-binary "@$TMP/mid.json"
check_eq "1 MiB body with a bad signature: 401, not 413" "$HTTP_CODE" 401
check "still serving after huge bodies" push_ok 1

# --- a header too large for the per-connection memory ---
LONG=$(head -c 40000 /dev/zero | tr '\0' a)
http POST "$URL" -H "X-Padding: $LONG" -H "Content-Type: application/json" -d '{}'
check_eq "oversized headers refused: 431" "$HTTP_CODE" 431

# --- slow clients ---
cat >"$TMP/slow.py" <<'EOP'
import socket, sys, time
port, mode, n = int(sys.argv[1]), sys.argv[2], int(sys.argv[3])
socks = []
for i in range(n):
    s = socket.create_connection(("127.0.0.1", port), 2)
    if mode == "headers":   # slowloris: a request line, then nothing more
        s.sendall(b"POST /webhooks/github HTTP/1.1\r\nHost: x\r\n")
    else:                   # headers done, the body dribbled
        s.sendall(b"POST /webhooks/github HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                  b"X-GitHub-Event: push\r\nX-GitHub-Delivery: slow-%d\r\nContent-Length: 100000\r\n\r\n" % i)
    socks.append(s)
print("open", flush=True)
start = time.time()
closed = set()
while time.time() - start < 15 and len(closed) < n:
    for i, s in enumerate(socks):
        if i in closed:
            continue
        try:
            if mode == "body":
                s.sendall(b" ")   # one byte now and then: never idle long
            s.settimeout(0.05)
            d = s.recv(4096)
            if not d:
                closed.add(i)
        except socket.timeout:
            pass
        except OSError:
            closed.add(i)
    time.sleep(0.5)
print("closed %d of %d after %.1f s" % (len(closed), n, time.time() - start), flush=True)
EOP
/usr/bin/python3 "$TMP/slow.py" "$KB_PORT" headers 20 >"$TMP/slow1.out" 2>&1 &
SLOW=$!
t_bg "$SLOW"
wait_for 5 grep -q open "$TMP/slow1.out"
check "a genuine delivery is served while 20 slowloris connections hang" push_ok 2
wait "$SLOW"
check_match "slowloris connections closed by the idle timeout" "$(cat "$TMP/slow1.out")" 'closed 20 of 20 after [0-9.]+ s'
secs=$(sed -nE 's/.*after ([0-9]+)\.[0-9] s/\1/p' "$TMP/slow1.out")
echo "# slowloris: $(tail -n 1 "$TMP/slow1.out")"
check "within reach of connection_timeout_s (2 s)" test "${secs:-99}" -le 5

/usr/bin/python3 "$TMP/slow.py" "$KB_PORT" body 5 >"$TMP/slow2.out" 2>&1 &
SLOW=$!
t_bg "$SLOW"
wait_for 5 grep -q open "$TMP/slow2.out"
check "served while bodies dribble in" push_ok 3
wait "$SLOW"
echo "# dribbled bodies: $(tail -n 1 "$TMP/slow2.out")"
check_match "dribbled bodies cut off" "$(cat "$TMP/slow2.out")" 'closed 5 of 5 after'
secs=$(sed -nE 's/.*after ([0-9]+)\.[0-9] s/\1/p' "$TMP/slow2.out")
check "by request_timeout_s (3 s), not the idle timeout" test "${secs:-0}" -ge 2 -a "${secs:-99}" -le 8

# --- the connection limit: 24; the 25th waits or is refused, the daemon recovers ---
/usr/bin/python3 "$TMP/slow.py" "$KB_PORT" headers 30 >"$TMP/slow3.out" 2>&1 &
SLOW=$!
t_bg "$SLOW"
wait_for 5 grep -q open "$TMP/slow3.out"
wait "$SLOW"
echo "# over the limit: $(tail -n 1 "$TMP/slow3.out")"
check_match "connections over the limit closed" "$(cat "$TMP/slow3.out")" 'closed 30 of 30'
check "served again once the slow ones are gone" push_ok 4
http GET "http://127.0.0.1:$KB_PORT/healthz"
check_eq "healthz after the abuse" "$HTTP_CODE" 200
check "no crash" kill -0 "$KB_PID"
kb_serve_stop TERM
check_eq "SIGTERM: exit 0" "$KB_STATUS" 0
t_done
