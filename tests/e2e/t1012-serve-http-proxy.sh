#!/bin/sh
# kernelbot serve behind a reverse proxy (http.trusted_proxies): the
# proxy's connections are not limited per address, each request counts
# against its client (the rightmost X-Forwarded-For entry that is not a
# trusted proxy), a crowding client gets 429 while others get through,
# and X-Forwarded-For from anyone else is ignored.
. "$KB_ROOT/tests/e2e/lib.sh"
t_init t1012
FX="$KB_ROOT/tests/fixtures/webhooks"
kb_config "$TMP/kb.yml"
cat >>"$TMP/kb.yml" <<EOC
http:
  trusted_proxies: [127.0.0.9, 10.99.0.0/16]
  max_connections: 512
  min_body_bytes_per_s: 1
EOC
kb_serve_start "$TMP/kb.yml" || t_done

cat >"$TMP/proxy.py" <<'EOP'
# proxy.py PORT SECRET_FILE BODY_FILE: plays a reverse proxy at 127.0.0.9
# (and a stranger at 127.0.0.10) and prints one line per step.
import hashlib, hmac, http.client, json, socket, sys, time
port, secret, body = int(sys.argv[1]), open(sys.argv[2], "rb").read().rstrip(), open(sys.argv[3], "rb").read()
n = 0

def deliver(src, xff):
    global n
    n += 1
    # A fresh commit each: a replayed push is answered 200 duplicate.
    push = json.loads(body)
    push["after"] = hashlib.sha1(b"proxied-%d" % n).hexdigest()
    data = json.dumps(push).encode()
    sig = "sha256=" + hmac.new(secret, data, hashlib.sha256).hexdigest()
    h = {"Content-Type": "application/json", "X-GitHub-Event": "push",
         "X-GitHub-Delivery": "proxied-%d" % n, "X-Hub-Signature-256": sig}
    if xff:
        h["X-Forwarded-For"] = xff
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=10, source_address=(src, 0))
    c.request("POST", "/webhooks/github", data, h)
    r = c.getresponse()
    r.read()
    c.close()
    return r.status

# 70 requests of one client, heads done, bodies begun and held.
held = []
for i in range(70):
    s = socket.socket()
    s.bind(("127.0.0.9", 0))
    s.settimeout(10)
    s.connect(("127.0.0.1", port))
    s.sendall(b"POST /webhooks/github HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
              b"X-Forwarded-For: 6.6.6.6, 203.0.113.66, 10.99.1.1\r\nContent-Length: 5000\r\n\r\n" + b" " * 100)
    held.append(s)
refused = 0
deadline = time.monotonic() + 5
for s in held:
    s.settimeout(max(0.05, deadline - time.monotonic()) if refused < 6 else 0.05)
    try:
        d = s.recv(4096)
        if d.startswith(b"HTTP/1.1 429 "):
            refused += 1
    except OSError:
        pass
print("held %d refused %d" % (len(held), refused), flush=True)
print("crowding client through the proxy %d" % deliver("127.0.0.9", "203.0.113.66"), flush=True)
print("another client through the proxy %d" % deliver("127.0.0.9", "203.0.113.66, 203.0.113.7"), flush=True)
print("the proxy itself, no header %d" % deliver("127.0.0.9", None), flush=True)
print("a stranger claiming the crowding client %d" % deliver("127.0.0.10", "203.0.113.66"), flush=True)
for s in held:
    s.close()
time.sleep(1)
print("crowding client once its requests are gone %d" % deliver("127.0.0.9", "203.0.113.66"), flush=True)
EOP
timeout 60 /usr/bin/python3 "$TMP/proxy.py" "$KB_PORT" "$TMP/github.secret" "$FX/github-push.json" >"$TMP/proxy.out" 2>&1
sed 's/^/# /' "$TMP/proxy.out"
O=$(cat "$TMP/proxy.out")
check_match "70 connections from the proxy, 6 requests over the client's 64 refused" "$O" '^held 70 refused 6$'
check_match "the crowding client's next request: 429" "$O" '^crowding client through the proxy 429$'
check_match "another client behind the same proxy: 202" "$O" '^another client through the proxy 202$'
check_match "the proxy's own request (no X-Forwarded-For) is its own client: 202" "$O" '^the proxy itself, no header 202$'
check_match "X-Forwarded-For from an untrusted peer is ignored: 202" "$O" '^a stranger claiming the crowding client 202$'
check_match "the client's slots come back when its requests end" "$O" '^crowding client once its requests are gone 202$'
check "the 429 names the client in the log" grep -q 'too many requests from one client.*client=203.0.113.66' "$TMP/serve.log"
check "no crash" kill -0 "$KB_PID"
kb_serve_stop TERM
check_eq "SIGTERM: exit 0" "$KB_STATUS" 0
t_done
