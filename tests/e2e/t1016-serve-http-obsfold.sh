#!/bin/sh
# kernelbot serve and obs-fold (a header line continued by one starting
# with SP or HT, RFC 9112 section 5.2): libmicrohttpd glues the
# continuation onto the field name, which hid a second Content-Length or
# a Transfer-Encoding from the framing check, so a request framed by its
# first Content-Length smuggled the next one. The door refuses obs-fold
# with 400, and every answer closes its connection, so a second request
# on the same connection never skips the door.
. "$KB_ROOT/tests/e2e/lib.sh"
t_init t1016
kb_config "$TMP/kb.yml"
kb_serve_start "$TMP/kb.yml" || t_done

cat >"$TMP/fold.py" <<'EOP'
import socket, sys
port = int(sys.argv[1])
H = (b"POST /webhooks/github HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
     b"X-GitHub-Event: push\r\nX-GitHub-Delivery: f1\r\nX-Hub-Signature-256: sha256=" + b"0" * 64 + b"\r\n")
SM = b"GET /smuggled HTTP/1.1\r\nHost: x\r\n\r\n"
for name, d in [
    ("folded TE + CL", H + b"Transfer-Encoding:\r\n chunked\r\nContent-Length: 2\r\n\r\n{}" + SM),
    ("folded second CL", H + b"Content-Length: 2\r\nContent-Length:\r\n 40\r\n\r\n{}" + SM),
    ("folded by a tab", H + b"X-A: a\r\n\tb\r\nContent-Length: 2\r\n\r\n{}" + SM),
    ("no fold, a request after", H + b"Content-Length: 2\r\n\r\n{}" + SM),
    ("no fold, then a folded request", H + b"Content-Length: 2\r\n\r\n{}" + SM[:-2] + b"X-A:\r\n b\r\n\r\n"),
]:
    s = socket.create_connection(("127.0.0.1", port), timeout=5)
    s.sendall(d)
    got = b""
    try:
        while True:
            b = s.recv(65536)
            if not b:
                break
            got += b
    except OSError:
        pass
    s.close()
    codes = [l.split(b" ")[1].decode() for l in got.split(b"\r\n") if l.startswith(b"HTTP/1.1 ")]
    print("%s: %s%s" % (name, " ".join(codes), " obs-fold" if b"obs-fold" in got else ""), flush=True)
EOP
timeout 60 /usr/bin/python3 "$TMP/fold.py" "$KB_PORT" >"$TMP/fold.out" 2>&1
sed 's/^/# /' "$TMP/fold.out"
O=$(cat "$TMP/fold.out")
check_match "a folded Transfer-Encoding: 400, nothing smuggled" "$O" '^folded TE \+ CL: 400 obs-fold$'
check_match "a folded second Content-Length: 400, nothing smuggled" "$O" '^folded second CL: 400 obs-fold$'
check_match "a fold by a tab: 400" "$O" '^folded by a tab: 400 obs-fold$'
check_match "without a fold: 401, and the connection closes (no second answer)" "$O" \
    '^no fold, a request after: 401$'
check_match "a folded request after a sound one is never read" "$O" \
    '^no fold, then a folded request: 401$'
http GET "http://127.0.0.1:$KB_PORT/healthz"
check_eq "healthz" "$HTTP_CODE" 200
check "no crash" kill -0 "$KB_PID"
kb_serve_stop TERM
check_eq "SIGTERM: exit 0" "$KB_STATUS" 0
t_done
