#!/bin/sh
# The store's disk fills up (a small tmpfs as data_dir): webhooks answer
# 503 with Retry-After, /healthz answers 503 naming ENOSPC within 1 s,
# the log names the cause; space freed, /healthz is 200 again, the
# forge's redeliveries are taken, and every 202 is in the store.
. "$KB_ROOT/tests/e2e/lib-disk.sh"
t_init t1040
[ "$(id -u)" -eq 0 ] || disk_skip "needs root to mount a tmpfs"
command -v sqlite3 >/dev/null || disk_skip "no sqlite3"
mkdir "$TMP/data"
mount -t tmpfs -o size=4m kbtest "$TMP/data" 2>/dev/null ||
    disk_skip "cannot mount a tmpfs here"
cleanup_mount() {
	[ -n "${KB_PID:-}" ] && kill -9 "$KB_PID" 2>/dev/null && wait "$KB_PID" 2>/dev/null
	umount "$TMP/data" 2>/dev/null
	t_cleanup
}
trap cleanup_mount EXIT
disk_tools
kb_config "$TMP/kb.yml"
kb_serve_start "$TMP/kb.yml" || t_done

disk_send ok 1 3
check "deliveries before the fault are accepted" \
    test "$(awk '$2 == 202' "$TMP/sent" | wc -l)" -eq 3
check "/healthz 200 while writes commit" healthz_is 200

# Fill the file system. The WAL reuses its blocks after a checkpoint, so
# the first commits may still fit: send until one does not.
dd if=/dev/zero of="$TMP/data/fill" bs=64k 2>/dev/null
STOP503=1 disk_send full 1 400
export STOP503=
check "a delivery that cannot commit gets 503" \
    grep -q '^full-[0-9]* 503 ' "$TMP/sent"
check_match "with Retry-After and the cause" \
    "$(grep '^full-[0-9]* 503 ' "$TMP/sent" | head -n 1)" '^full-[0-9]* 503 [0-9.]* 30 .*ENOSPC'
check "/healthz 503 naming ENOSPC, within 1 s" wait_for 10 healthz_is 503
check_match "its body" "$(cat "$TMP/healthz")" \
    '"status":"unavailable","error":"ENOSPC: No space left on device"'
check "/healthz answers within 1 s each time" healthz_fast 5
check "the log names the cause" \
    grep -q 'msg="store cannot commit writes" cause="ENOSPC' "$TMP/serve.log"
disk_get /metrics >"$TMP/metrics"
check_match "/metrics still answers" "$(cat "$TMP/metrics")" '^200 .*kernelbot_jobs'

rm -f "$TMP/data/fill"
check "/healthz 200 again once space is free" wait_for 20 healthz_is 200
check "the log says so" grep -q 'msg="store takes writes again"' "$TMP/serve.log"
# The forge redelivers what got 503: it is taken now.
for id in $(awk '$2 == 503 { print $1 }' "$TMP/sent"); do
	disk_send "${id%-*}" "${id##*-}" "${id##*-}" "$TMP/redelivered"
done
check "the redelivery is accepted" \
    test "$(awk '$2 == 202' "$TMP/redelivered" | wc -l)" -ge 1
cat "$TMP/redelivered" >>"$TMP/sent"
disk_send after 1 2
check "new deliveries are accepted" test "$(grep -c '^after-[0-9]* 202 ' "$TMP/sent")" -eq 2

kb_serve_stop
check_eq "the daemon exits 0" "$KB_STATUS" 0
check "every 202 is in the store" acked_in_store "$TMP/data/kernelbot.db"
t_done
