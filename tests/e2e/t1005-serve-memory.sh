#!/bin/sh
# kernelbot serve: request bodies held in memory are bounded per client
# (http.max_buffered_bytes_per_ip) and in all (http.max_buffered_bytes),
# charged as the bytes arrive: a declared Content-Length alone holds
# nothing; past a budget a delivery gets 503, small deliveries still fit,
# and the budget comes back when a request ends.
. "$KB_ROOT/tests/e2e/lib.sh"
t_init t1005
FX="$KB_ROOT/tests/fixtures/webhooks"
kb_config "$TMP/kb.yml"
cat >>"$TMP/kb.yml" <<EOC
http:
  max_body_bytes: 1048576
  max_buffered_bytes: 1572864
  request_timeout_s: 20
EOC
kb_serve_start "$TMP/kb.yml" || t_done
URL="http://127.0.0.1:$KB_PORT/webhooks/github"

# hold.py PORT SRC SEND RELEASE: from SRC, declare a 1,000,000-byte body,
# send SEND bytes of it, then one byte every 0.2 s until RELEASE exists
# (at most 30 s).
cat >"$TMP/hold.py" <<'EOP'
import os, socket, sys, time
port, src, send, release = int(sys.argv[1]), sys.argv[2], int(sys.argv[3]), sys.argv[4]
s = socket.create_connection(("127.0.0.1", port), 5, source_address=(src, 0))
s.sendall(b"POST /webhooks/github HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
          b"X-GitHub-Event: push\r\nX-GitHub-Delivery: hold-%d\r\nContent-Length: 1000000\r\n\r\n" % send
          + b" " * send)
print("holding", flush=True)
end = time.time() + 30
while time.time() < end and not os.path.exists(release):
    try:
        s.sendall(b" ")
    except OSError:
        break
    time.sleep(0.2)
s.close()
EOP
# post SRC FILE [HEADER...]: a POST of FILE from address SRC; sets HTTP_CODE and HTTP_BODY.
cat >"$TMP/post.py" <<'EOP'
import http.client, sys
port, src, path, extra = int(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4:]
h = {"Content-Type": "application/json", "X-GitHub-Event": "push",
     "X-GitHub-Delivery": "post-" + src, "X-Hub-Signature-256": "sha256=00"}
for e in extra:
    k, _, v = e.partition(":")
    h[k.strip()] = v.strip()
body = open(path, "rb").read()
c = http.client.HTTPConnection("127.0.0.1", port, timeout=10, source_address=(src, 0))
if h.get("Transfer-Encoding") == "chunked":
    c.putrequest("POST", "/webhooks/github")
    for k, v in h.items():
        c.putheader(k, v)
    c.endheaders()
    try:
        for i in range(0, len(body), 65536):
            piece = body[i:i + 65536]
            c.send(b"%x\r\n%s\r\n" % (len(piece), piece))
        c.send(b"0\r\n\r\n")
    except OSError:
        pass
else:
    c.request("POST", "/webhooks/github", body, h)
r = c.getresponse()
print(r.read().decode().strip())
print(r.status)
EOP
post() {
	src=$1 f=$2
	shift 2
	HTTP_BODY=$(/usr/bin/python3 "$TMP/post.py" "$KB_PORT" "$src" "$f" "$@" 2>"$TMP/post.err")
	HTTP_CODE=$(printf '%s' "$HTTP_BODY" | tail -n 1)
	HTTP_BODY=$(printf '%s' "$HTTP_BODY" | sed '$d')
}
head -c 800000 /dev/zero | tr '\0' ' ' >"$TMP/800k.json"

# --- a declared size costs nothing (issue 23: 11 such bodies took the budget) ---
/usr/bin/python3 "$TMP/hold.py" "$KB_PORT" 127.0.0.5 0 "$TMP/release0" >"$TMP/hold0.out" 2>&1 &
HOLD0=$!
t_bg "$HOLD0"
wait_for 5 grep -q holding "$TMP/hold0.out"
post 127.0.0.2 "$TMP/800k.json"
check_eq "a declared but unsent 1 MB body holds no budget: 800 kB read (401)" "$HTTP_CODE" 401
: >"$TMP/release0"
wait "$HOLD0"

# --- 900,000 bytes really sent and held by 127.0.0.1 ---
/usr/bin/python3 "$TMP/hold.py" "$KB_PORT" 127.0.0.1 900000 "$TMP/release" >"$TMP/hold.out" 2>&1 &
HOLD=$!
t_bg "$HOLD"
wait_for 5 grep -q holding "$TMP/hold.out"
sleep 0.5
post 127.0.0.1 "$TMP/800k.json"
check_eq "the same client past its share (1 MiB): 503" "$HTTP_CODE" 503
check_match "503 says busy" "$HTTP_BODY" 'busy'
post 127.0.0.3 "$TMP/800k.json"
check_eq "another client past the total (1.5 MiB): 503" "$HTTP_CODE" 503
post 127.0.0.3 "$TMP/800k.json" "Transfer-Encoding: chunked"
check_eq "a chunked body past the total: 503" "$HTTP_CODE" 503
http POST "$URL" -H "Content-Type: application/json" -H "X-GitHub-Event: push" \
    -H "X-GitHub-Delivery: small-1" \
    -H "X-Hub-Signature-256: $(sig_github "$GH_SECRET" "$FX/github-push.json")" \
    --data-binary "@$FX/github-push.json"
check_eq "a small delivery still fits: 202" "$HTTP_CODE" 202
# once the holder is gone (its connection closes mid-body), the budget is back
: >"$TMP/release"
wait "$HOLD"
release_seen() {
	post 127.0.0.3 "$TMP/800k.json"
	[ "$HTTP_CODE" != 503 ]
}
wait_for 10 release_seen
check_eq "budget released: the same body is read (401 on its signature)" "$HTTP_CODE" 401
http GET "http://127.0.0.1:$KB_PORT/metrics"
check_match "metrics count busy refusals" "$HTTP_BODY" 'outcome="busy"\} [3-9]$'
kb_serve_stop TERM
check_eq "SIGTERM: exit 0" "$KB_STATUS" 0
t_done
