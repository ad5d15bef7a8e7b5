#!/bin/sh
# kernelbot serve: request bodies held in memory at once are bounded
# (http.max_buffered_bytes): past the budget a delivery gets 503 at once,
# small deliveries still fit, and the budget comes back when a request ends.
. "$KB_ROOT/tests/e2e/lib.sh"
t_init t1005
FX="$KB_ROOT/tests/fixtures/webhooks"
kb_config "$TMP/kb.yml"
cat >>"$TMP/kb.yml" <<EOC
http:
  max_body_bytes: 1048576
  max_buffered_bytes: 1572864
  request_timeout_s: 4
EOC
kb_serve_start "$TMP/kb.yml" || t_done
URL="http://127.0.0.1:$KB_PORT/webhooks/github"

# Hold 1,000,000 bytes of budget: a declared body that arrives slowly,
# until $TMP/release exists (at most 30 s).
cat >"$TMP/hold.py" <<'EOP'
import os, socket, sys, time
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])), 5)
s.sendall(b"POST /webhooks/github HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
          b"X-GitHub-Event: push\r\nX-GitHub-Delivery: hold-1\r\nContent-Length: 1000000\r\n\r\n")
print("holding", flush=True)
end = time.time() + 30
while time.time() < end and not os.path.exists(sys.argv[2]):
    try:
        s.sendall(b" ")
    except OSError:
        break
    time.sleep(0.2)
s.close()
EOP
/usr/bin/python3 "$TMP/hold.py" "$KB_PORT" "$TMP/release" >"$TMP/hold.out" 2>&1 &
HOLD=$!
t_bg "$HOLD"
wait_for 5 grep -q holding "$TMP/hold.out"
sleep 0.3
head -c 800000 /dev/zero | tr '\0' ' ' >"$TMP/800k.json"
http POST "$URL" -H "Content-Type: application/json" -H "X-GitHub-Event: push" \
    -H "X-GitHub-Delivery: big-1" -H "X-Hub-Signature-256: sha256=00" --data-binary "@$TMP/800k.json"
check_eq "a body past the memory budget: 503 at once" "$HTTP_CODE" 503
check_match "503 says busy" "$HTTP_BODY" 'busy'
http POST "$URL" -H "Content-Type: application/json" -H "X-GitHub-Event: push" \
    -H "X-GitHub-Delivery: small-1" \
    -H "X-Hub-Signature-256: $(sig_github "$GH_SECRET" "$FX/github-push.json")" \
    --data-binary "@$FX/github-push.json"
check_eq "a small delivery still fits: 202" "$HTTP_CODE" 202
# chunked: no length up front, so it is charged as it arrives
http POST "$URL" -H "Content-Type: application/json" -H "X-GitHub-Event: push" \
    -H "X-GitHub-Delivery: big-2" -H "X-Hub-Signature-256: sha256=00" \
    -H "Transfer-Encoding: chunked" --data-binary "@$TMP/800k.json"
check_eq "a chunked body past the budget: 503" "$HTTP_CODE" 503
# once the holder is gone (its connection closes mid-body), the budget is back
: >"$TMP/release"
wait "$HOLD"
release_seen() {
	http POST "$URL" -H "Content-Type: application/json" -H "X-GitHub-Event: push" \
	    -H "X-GitHub-Delivery: big-3" -H "X-Hub-Signature-256: sha256=00" --data-binary "@$TMP/800k.json"
	[ "$HTTP_CODE" != 503 ]
}
wait_for 10 release_seen
check_eq "budget released: the same body is read (401 on its signature)" "$HTTP_CODE" 401
http GET "http://127.0.0.1:$KB_PORT/metrics"
check_match "metrics count busy refusals" "$HTTP_BODY" 'outcome="busy"\} [2-9]$'
kb_serve_stop TERM
check_eq "SIGTERM: exit 0" "$KB_STATUS" 0
t_done
