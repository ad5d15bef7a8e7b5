#!/bin/sh
# kernelbot serve: requests whose framing is ambiguous (RFC 9112 section
# 6) or whose request line or field names are malformed (sections 3, 5.1)
# get 400 before a byte of their body is read, sent over raw sockets
# since curl will not send them; sound requests around them still work.
. "$KB_ROOT/tests/e2e/lib.sh"
t_init t1010
FX="$KB_ROOT/tests/fixtures/webhooks"
kb_config "$TMP/kb.yml"
kb_serve_start "$TMP/kb.yml" || t_done

# raw DESC WANT_CODE WANT_BODY_ERE REQUEST [--shut]
raw() {
	out=$(/usr/bin/python3 "$KB_ROOT/tests/e2e/rawhttp.py" $5 "$KB_PORT" "$4")
	check_eq "$1: $2" "$(printf '%s\n' "$out" | head -n 1)" "$2"
	[ -z "$3" ] || check_match "$1: says why" "$(printf '%s\n' "$out" | sed 1d)" "$3"
}

H='POST /webhooks/github HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nX-GitHub-Event: push\r\nX-GitHub-Delivery: raw-1\r\nX-Hub-Signature-256: sha256=00\r\n'
raw "two different Content-Length" 400 'more than one Content-Length' \
    "${H}Content-Length: 2\r\nContent-Length: 5\r\n\r\n{}abc"
raw "the same Content-Length twice" 400 'more than one Content-Length' \
    "${H}Content-Length: 2\r\nContent-Length: 2\r\n\r\n{}"
# Content-Length is 1*DIGIT (RFC 9110 section 8.6); libmicrohttpd answered
# the rest with its status line and headers twice (the sixth outside
# attack's F3).
L='Content-Length must be a decimal number'
raw "Content-Length list" 400 "$L" "${H}Content-Length: 2, 2\r\n\r\n{}"
raw "Content-Length not a number" 400 "$L" "${H}Content-Length: 2x\r\n\r\n{}"
raw "Content-Length a word" 400 "$L" "${H}Content-Length: abc\r\n\r\n{}"
raw "Content-Length negative" 400 "$L" "${H}Content-Length: -5\r\n\r\n{}"
raw "Content-Length signed" 400 "$L" "${H}Content-Length: +2\r\n\r\n{}"
raw "Content-Length in hex" 400 "$L" "${H}Content-Length: 0x2\r\n\r\n{}"
raw "Content-Length past 2^64" 400 "$L" "${H}Content-Length: 99999999999999999999999\r\n\r\n{}"
raw "Content-Length with a space after" 400 "$L" "${H}Content-Length: 2 \r\n\r\n{}"
raw "Content-Length empty" 400 "$L" "${H}Content-Length:\r\n\r\n{}"
raw "Content-Length of 18 digits: too large, once" 413 'body too large' \
    "${H}Content-Length: 999999999999999999\r\n\r\n{}"
raw "Content-Length after a tab" 401 'signature' "${H}Content-Length:\t2\r\n\r\n{}"
# RFC 9110 section 5.5: no NUL, no CR but before LF in a field (the seventh
# outside attack's F4: both were taken as part of the value); a request
# line or head past http.max_header_bytes: one JSON answer, not
# libmicrohttpd's page.
raw "a NUL in a header value" 400 'a header line holds a NUL' 'GET /healthz HTTP/1.1\r\nHost: x\x00y\r\n\r\n'
raw "a bare CR in a header value" 400 'a header line holds a NUL or a CR' 'GET /healthz HTTP/1.1\r\nHost: x\ry\r\n\r\n'
raw "a request line past the head limit" 414 'request line too long' \
    "GET /$(head -c 70000 /dev/zero | tr '\0' a) HTTP/1.1\r\nHost: x\r\n\r\n"
# libmicrohttpd answered 256 header lines of 10 bytes (4 KB), or one of
# 31,500 bytes, with its HTML 431.
raw "300 header lines" 431 'more than 100 header lines' \
    "GET /healthz HTTP/1.1\r\nHost: x\r\n$(i=0; while [ $i -lt 300 ]; do printf 'X%d: b\\r\\n' $i; i=$((i + 1)); done)\r\n"
raw "one header line of 31,500 bytes" 431 'request head too large' \
    "GET /healthz HTTP/1.1\r\nHost: x\r\nX-A: $(head -c 31500 /dev/zero | tr '\0' a)\r\n\r\n"
raw "a head past the head limit" 431 'request head too large' \
    "GET /healthz HTTP/1.1\r\nX-A: $(head -c 70000 /dev/zero | tr '\0' a)\r\n\r\n"
raw "Content-Length then chunked" 400 'Content-Length with Transfer-Encoding' \
    "${H}Content-Length: 2\r\nTransfer-Encoding: chunked\r\n\r\n2\r\n{}\r\n0\r\n\r\n"
raw "chunked then Content-Length" 400 'Content-Length with Transfer-Encoding' \
    "${H}Transfer-Encoding: chunked\r\nContent-Length: 2\r\n\r\n2\r\n{}\r\n0\r\n\r\n"
raw "Content-Length with chunked on a path that has no body" 400 'Content-Length with Transfer-Encoding' \
    'POST /healthz HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\nTransfer-Encoding: chunked\r\n\r\n2\r\n{}\r\n0\r\n\r\n'
raw "gzip transfer coding" 400 'Transfer-Encoding other than chunked' \
    "${H}Transfer-Encoding: gzip\r\n\r\n{}"
raw "chunked twice" 400 'Transfer-Encoding other than chunked' \
    "${H}Transfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n2\r\n{}\r\n0\r\n\r\n"
# RFC 9112 section 5.1: a line without a colon is no field (libmicrohttpd
# answered it with its own HTML page, the ninth outside attack's L2); one
# Host on HTTP/1.1, at most one on 1.0 (section 3.2: it took none).
raw "a header line without a colon" 400 'malformed header field name' \
    "${H}NoColon\r\nContent-Length: 2\r\n\r\n{}"
raw "HTTP/1.1 without Host" 400 'exactly one Host' 'GET /healthz HTTP/1.1\r\n\r\n'
raw "two Host headers" 400 'exactly one Host' 'GET /healthz HTTP/1.1\r\nHost: x\r\nHost: y\r\n\r\n'
raw "HTTP/1.0 without Host is fine" 200 '"ok"' 'GET /healthz HTTP/1.0\r\n\r\n'
raw "the absolute form (section 3.2.2)" 200 '"ok"' 'GET http://x/healthz HTTP/1.1\r\nHost: x\r\n\r\n'
# A forge's headers, each once: libmicrohttpd hands out the first, a proxy
# in front may have judged the last (the tenth outside attack's L2).
W='POST /webhooks/github HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 2\r\n'
raw "two signatures" 400 'more than one X-Hub-Signature-256' \
    "${W}X-GitHub-Event: push\r\nX-GitHub-Delivery: d2\r\nX-Hub-Signature-256: sha256=00\r\nX-Hub-Signature-256: sha256=01\r\n\r\n{}"
raw "two delivery ids" 400 'more than one X-GitHub-Delivery' \
    "${W}X-GitHub-Event: push\r\nX-GitHub-Delivery: d3\r\nX-GitHub-Delivery: d4\r\nX-Hub-Signature-256: sha256=00\r\n\r\n{}"
raw "two events" 400 'more than one X-GitHub-Event' \
    "${W}X-GitHub-Event: push\r\nX-GitHub-Event: ping\r\nX-GitHub-Delivery: d5\r\nX-Hub-Signature-256: sha256=00\r\n\r\n{}"
raw "space before the colon (section 5.1)" 400 'malformed header field name' \
    "${H}Content-Length : 2\r\n\r\n{}"

# Request lines libmicrohttpd would drop without a word, or take loosely.
raw "a request line without spaces" 400 'malformed request line' 'GARBAGE\r\n\r\n'
raw "TLS on the plain port" 400 'malformed request line' '\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03'
raw "no HTTP version" 400 'malformed request line' 'GET /healthz\r\n\r\n'
raw "not HTTP" 400 'malformed request line' 'GET /healthz FOO/1.1\r\nHost: x\r\n\r\n'
raw "two spaces" 400 'malformed request line' 'GET  /healthz HTTP/1.1\r\nHost: x\r\n\r\n'
raw "a control byte in the target" 400 'malformed request line' 'GET /heal\x01thz HTTP/1.1\r\nHost: x\r\n\r\n'
raw "a bad method byte" 400 'malformed request line' 'G(T /healthz HTTP/1.1\r\nHost: x\r\n\r\n'
raw "a line cut off by the client" 400 'malformed request line' 'GET /heal' --shut
raw "an empty line first is fine" 200 '"ok"' '\r\nGET /healthz HTTP/1.1\r\nHost: x\r\n\r\n'
raw "HTTP/9.9 is a version, just not ours" 505 'HTTP/1.0 and HTTP/1.1 only' 'GET /healthz HTTP/9.9\r\nHost: x\r\n\r\n'
raw "HTTP/2's preface" 505 'HTTP/1.0 and HTTP/1.1 only' 'PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n'
# Host is uri-host [":" port] (RFC 9110 section 7.2); Transfer-Encoding
# in HTTP/1.0 is faulty framing whatever else the head says (RFC 9112
# section 6.1).
raw "a Host with a space" 400 'a Host that is no host and port' 'GET /healthz HTTP/1.1\r\nHost: a b\r\n\r\n'
raw "a bracketed address and a port" 200 '' 'GET /healthz HTTP/1.1\r\nHost: [::1]:8080\r\n\r\n'
# A port is digits up to 65535, a bracketed literal an IPv6 address (an
# outside attack had x:-1, x:99999999 and [zz] accepted).
raw "a negative port" 400 'a Host that is no host and port' 'GET /healthz HTTP/1.1\r\nHost: x:-1\r\n\r\n'
raw "a port past 65535" 400 'a Host that is no host and port' 'GET /healthz HTTP/1.1\r\nHost: x:99999999\r\n\r\n'
raw "letters in brackets" 400 'a Host that is no host and port' 'GET /healthz HTTP/1.1\r\nHost: [zz]\r\n\r\n'
raw "two colons outside brackets" 400 'a Host that is no host and port' 'GET /healthz HTTP/1.1\r\nHost: x:1:2\r\n\r\n'
raw "an underscore in a name, an empty port" 200 '' 'GET /healthz HTTP/1.1\r\nHost: a_b:\r\n\r\n'
raw "an address and a port" 200 '' 'GET /healthz HTTP/1.1\r\nHost: 127.0.0.1:65535\r\n\r\n'
raw "chunked in HTTP/1.0" 400 'Transfer-Encoding in an HTTP/1.0 request' \
    'POST /webhooks/github HTTP/1.0\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n2\r\n{}\r\n0\r\n\r\n'
# An origin server with a clock sends Date (RFC 9110 section 6.6.1): the
# door's own answers too, not only libmicrohttpd's.
raw "the door's answers" "505 dated" '' 'GET /healthz HTTP/9.9\r\nHost: x\r\n\r\n' --dated
raw "libmicrohttpd's" "200 dated" '' 'GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n' --dated

# Sound framing, both ways, reaches the handler (401: the signature is wrong).
raw "one Content-Length" 401 'signature' "${H}Content-Length: 2\r\n\r\n{}"
raw "chunked alone" 401 'signature' "${H}Transfer-Encoding: chunked\r\n\r\n2\r\n{}\r\n0\r\n\r\n"
raw "GET without a body" 200 '"ok"' 'GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n'
# Query arguments cost libmicrohttpd a record each, as header lines do: a
# 1 KB target of 494 "a&" got no status line, more of them a 10 s wait
# (an outside attack's flood of them kept genuine deliveries out).
Q=$(/usr/bin/python3 -c 'print("&".join(["a"] * 600))')
raw "600 query arguments: the door's JSON 431" 431 'request head too large' \
    "GET /healthz?$Q HTTP/1.1\r\nHost: x\r\n\r\n"
Q=$(/usr/bin/python3 -c 'print("&".join(["a"] * 40))')
raw "40 query arguments: answered" 200 '"ok"' "GET /healthz?$Q HTTP/1.1\r\nHost: x\r\n\r\n"

# A genuine delivery after all of it, and nothing of the above was stored.
http POST "http://127.0.0.1:$KB_PORT/webhooks/github" -H "Content-Type: application/json" \
    -H "X-GitHub-Event: push" -H "X-GitHub-Delivery: real-1" \
    -H "X-Hub-Signature-256: $(sig_github "$GH_SECRET" "$FX/github-push.json")" \
    --data-binary "@$FX/github-push.json"
check_eq "a genuine push still answers 202" "$HTTP_CODE" 202
check_eq "only it was stored" \
    "$(sqlite3 "$TMP/data/kernelbot.db" 'SELECT delivery_id FROM deliveries')" real-1
check "no crash" kill -0 "$KB_PID"
kb_serve_stop TERM
check_eq "SIGTERM: exit 0" "$KB_STATUS" 0
t_done
