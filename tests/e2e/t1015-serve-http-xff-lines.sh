#!/bin/sh
# kernelbot serve behind a reverse proxy that adds its own
# X-Forwarded-For line instead of appending to the client's (HAProxy's
# option forwardfor): the lines are one list in order (RFC 9110 section
# 5.3), so the client is the rightmost untrusted address of all the
# lines together. A client that sends its own first line cannot pose as
# someone else to escape its limit, nor charge its requests to another.
. "$KB_ROOT/tests/e2e/lib.sh"
t_init t1015
FX="$KB_ROOT/tests/fixtures/webhooks"
kb_config "$TMP/kb.yml"
cat >>"$TMP/kb.yml" <<EOC
http:
  trusted_proxies: [127.0.0.9, 10.99.0.0/16]
  max_connections_per_ip: 4
  min_body_bytes_per_s: 1
EOC
kb_serve_start "$TMP/kb.yml" || t_done

cat >"$TMP/proxy.py" <<'EOP'
# proxy.py PORT SECRET_FILE BODY_FILE: plays a proxy at 127.0.0.9 that
# adds a line of its own; prints one line per step.
import hashlib, hmac, http.client, json, socket, sys, time
port, secret, body = int(sys.argv[1]), open(sys.argv[2], "rb").read().rstrip(), open(sys.argv[3], "rb").read()
n = 0

def deliver(*xff):
    global n
    n += 1
    push = json.loads(body)
    push["after"] = hashlib.sha1(b"lines-%d" % n).hexdigest()
    data = json.dumps(push).encode()
    sig = "sha256=" + hmac.new(secret, data, hashlib.sha256).hexdigest()
    s = socket.create_connection(("127.0.0.1", port), timeout=10, source_address=("127.0.0.9", 0))
    s.sendall(b"POST /webhooks/github HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
              b"X-GitHub-Event: push\r\nX-GitHub-Delivery: lines-%d\r\n"
              b"X-Hub-Signature-256: %s\r\n%sContent-Length: %d\r\nConnection: close\r\n\r\n%s"
              % (n, sig.encode(), b"".join(b"X-Forwarded-For: %s\r\n" % x.encode() for x in xff),
                 len(data), data))
    got = b""
    while not got.endswith(b"}\n"):
        d = s.recv(4096)
        if not d:
            break
        got += d
    s.close()
    return int(got.split(b" ")[1]) if got.startswith(b"HTTP/1.1 ") else 0

# 4 requests of client 203.0.113.66 (its limit), bodies begun and held;
# the proxy's line comes last, after one the client sent.
held = []
for i in range(4):
    s = socket.create_connection(("127.0.0.1", port), timeout=10, source_address=("127.0.0.9", 0))
    s.sendall(b"POST /webhooks/github HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
              b"X-Forwarded-For: 6.6.6.%d\r\nX-Forwarded-For: 203.0.113.66\r\n"
              b"Content-Length: 5000\r\n\r\n" % i + b" " * 100)
    held.append(s)
time.sleep(0.5)
print("the client, posing as another in its own first line %d"
      % deliver("198.51.100.1", "203.0.113.66"), flush=True)
print("another client, with the same first line %d" % deliver("6.6.6.0", "203.0.113.7"), flush=True)
print("another client, naming the crowding one first %d"
      % deliver("203.0.113.66", "203.0.113.7"), flush=True)
print("three lines, the last a trusted hop %d"
      % deliver("7.7.7.7", "203.0.113.66", "10.99.1.1"), flush=True)
print("an empty last line %d" % deliver("203.0.113.66", ""), flush=True)
for s in held:
    s.close()
EOP
timeout 60 /usr/bin/python3 "$TMP/proxy.py" "$KB_PORT" "$TMP/github.secret" "$FX/github-push.json" >"$TMP/proxy.out" 2>&1
sed 's/^/# /' "$TMP/proxy.out"
O=$(cat "$TMP/proxy.out")
check_match "a first line of the client's own does not hide it: 429" "$O" \
    '^the client, posing as another in its own first line 429$'
check_match "another client is not charged for the crowding one's first line: 202" "$O" \
    '^another client, with the same first line 202$'
check_match "nor when it names the crowding client first: 202" "$O" \
    '^another client, naming the crowding one first 202$'
check_match "trusted hops in a later line are skipped: 429" "$O" \
    '^three lines, the last a trusted hop 429$'
check_match "an empty line adds no entry: 429" "$O" '^an empty last line 429$'
check "the 429s name the client in the log" \
    grep -q 'too many requests from one client.*client=203.0.113.66' "$TMP/serve.log"
check "no crash" kill -0 "$KB_PID"
kb_serve_stop TERM
check_eq "SIGTERM: exit 0" "$KB_STATUS" 0
t_done
