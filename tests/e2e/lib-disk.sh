# Helpers for the store's disk faults (t1040..): a data_dir on a file
# system the test controls, deliveries that record what they were
# answered, and the check that every 202 is in the store.
. "$KB_ROOT/tests/e2e/lib.sh"

# disk_skip REASON...: the mechanism is unavailable here: say why, exit 0.
disk_skip() {
	echo "$T_NAME: skip: $*"
	exit 0
}

# send.py PORT SECRET BODY PREFIX FIRST LAST OUT: one signed push per id
# PREFIX-FIRST..PREFIX-LAST, each with its own commit, a fresh connection
# each; appends "ID STATUS SECONDS RETRY-AFTER BODY" per answer (status 0:
# no answer in 20 s). Stops at the first 503 when STOP503 is set.
disk_tools() {
	cat >"$TMP/send.py" <<'EOP'
import hashlib, hmac, http.client, os, sys, time
port, secret, body_file, prefix = int(sys.argv[1]), sys.argv[2].encode(), sys.argv[3], sys.argv[4]
first, last, out = int(sys.argv[5]), int(sys.argv[6]), open(sys.argv[7], "a")
base = open(body_file, "rb").read()
for i in range(first, last + 1):
    body = base.replace(b"76ae82c7b1a177c8d03f9e96e0adf2466113728f",
                        hashlib.sha1(b"%s-%d" % (prefix.encode(), i)).hexdigest().encode())
    h = {"Content-Type": "application/json", "X-GitHub-Event": "push",
         "X-GitHub-Delivery": "%s-%d" % (prefix, i),
         "X-Hub-Signature-256": "sha256=" + hmac.new(secret, body, hashlib.sha256).hexdigest()}
    t0 = time.monotonic()
    status, ra, data = 0, "-", b"-"
    try:
        c = http.client.HTTPConnection("127.0.0.1", port, timeout=20)
        c.request("POST", "/webhooks/github", body, h)
        r = c.getresponse()
        status, ra, data = r.status, r.getheader("Retry-After") or "-", r.read().strip()
        c.close()
    except Exception as e:
        data = repr(e).encode()
    out.write("%s-%d %d %.3f %s %s\n" % (prefix, i, status, time.monotonic() - t0, ra, data.decode(errors="replace")))
    out.flush()
    if status == 503 and os.environ.get("STOP503"):
        break
EOP
	cat >"$TMP/get.py" <<'EOP'
import http.client, sys, time
port, path = int(sys.argv[1]), sys.argv[2]
t0 = time.monotonic()
try:
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=20)
    c.request("GET", path)
    r = c.getresponse()
    data = r.read().decode(errors="replace").strip().replace("\n", " ")
    print("%d %.3f %s" % (r.status, time.monotonic() - t0, data))
except Exception as e:
    print("0 %.3f %r" % (time.monotonic() - t0, e))
EOP
}

# disk_send PREFIX FIRST LAST [OUT]: see send.py; OUT defaults to $TMP/sent.
disk_send() {
	/usr/bin/python3 "$TMP/send.py" "$KB_PORT" "$GH_SECRET" \
	    "$KB_ROOT/tests/fixtures/webhooks/github-push.json" "$1" "$2" "$3" \
	    "${4:-$TMP/sent}"
}

# disk_get PATH: "STATUS SECONDS BODY" of one GET.
disk_get() {
	/usr/bin/python3 "$TMP/get.py" "$KB_PORT" "$1"
}

# healthz_is CODE: /healthz answered CODE, within 1 s (the answer is in
# $TMP/healthz).
healthz_is() {
	disk_get /healthz >"$TMP/healthz"
	awk -v c="$1" '$1 == c && $2 < 1.0 { ok = 1 } END { exit !ok }' "$TMP/healthz"
}

# healthz_fast N: N answers of /healthz, each within 1 s.
healthz_fast() {
	n=0
	while [ "$n" -lt "$1" ]; do
		disk_get /healthz >"$TMP/healthz"
		awk '$1 != 0 && $2 < 1.0 { ok = 1 } END { exit !ok }' "$TMP/healthz" || return 1
		n=$((n + 1))
	done
}

# acked_in_store DB: every delivery answered 202 in $TMP/sent has its
# delivery row and its job in DB.
acked_in_store() {
	awk '$2 == 202 { print $1 }' "$TMP/sent" | sort -u >"$TMP/acked"
	[ -s "$TMP/acked" ] || return 1
	sqlite3 "$1" "SELECT d.delivery_id FROM deliveries d JOIN jobs j ON j.delivery = d.id" |
	    sort -u >"$TMP/stored"
	missing=$(comm -23 "$TMP/acked" "$TMP/stored")
	[ -z "$missing" ] || { echo "acknowledged but not stored: $missing"; return 1; }
}
