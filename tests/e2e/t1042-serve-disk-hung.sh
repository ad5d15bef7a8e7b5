#!/bin/sh
# The store's disk hangs (ext4 on a loop device, frozen with fsfreeze):
# a webhook answers 503 with Retry-After at the intake's deadline (5 s)
# rather than hanging; /healthz answers within 1 s each time and turns
# 503 ("commit did not finish within 5 s"); /metrics answers; the log
# names the cause. Thawed, /healthz is 200 again, the redelivery is taken
# (or is a duplicate, when the hung commit finished), and every 202 is in
# the store.
. "$KB_ROOT/tests/e2e/lib-disk.sh"
t_init t1042
[ "$(id -u)" -eq 0 ] || disk_skip "needs root to mount and freeze a loop device"
command -v sqlite3 >/dev/null || disk_skip "no sqlite3"
command -v mkfs.ext4 >/dev/null || disk_skip "no mkfs.ext4 (e2fsprogs)"
command -v fsfreeze >/dev/null || disk_skip "no fsfreeze (util-linux)"
mkdir "$TMP/data"
truncate -s 16M "$TMP/disk.img" && mkfs.ext4 -q -F "$TMP/disk.img" 2>/dev/null ||
    disk_skip "cannot make an ext4 image"
mount -o loop "$TMP/disk.img" "$TMP/data" 2>/dev/null ||
    disk_skip "cannot mount a loop device here"
# Thaw first, whatever happened: a frozen file system left behind would
# hang everything that writes to it, umount included.
cleanup_mount() {
	fsfreeze -u "$TMP/data" 2>/dev/null
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

fsfreeze -f "$TMP/data" 2>/dev/null || disk_skip "cannot freeze a file system here"
disk_send hung 1 1
check_match "a delivery whose commit hangs gets 503 with Retry-After, in time" \
    "$(cat "$TMP/sent" | grep '^hung-1 ')" \
    '^hung-1 503 [0-9.]* 30 .*commit did not finish within 5 s'
check "within the forge's 10 s" awk '$1 == "hung-1" && $3 < 10 { ok = 1 } END { exit !ok }' "$TMP/sent"
check "/healthz 503, within 1 s" wait_for 10 healthz_is 503
check_match "its body names the cause" "$(cat "$TMP/healthz")" \
    '"status":"unavailable","error":"commit did not finish within 5 s"'
check "/healthz answers within 1 s each time" healthz_fast 5
disk_get /metrics >"$TMP/metrics"
check_match "/metrics answers, within 3 s" "$(cat "$TMP/metrics")" '^200 [0-2]\.'
check "the log names the cause" \
    grep -q 'msg="store cannot commit writes" cause="commit did not finish within 5 s"' "$TMP/serve.log"
# A second delivery queues behind the hung commit and gives up too.
disk_send hung 2 2
check "a delivery queued behind it gets 503 too" grep -q '^hung-2 503 ' "$TMP/sent"

fsfreeze -u "$TMP/data"
check "/healthz 200 again once the disk moves" wait_for 20 healthz_is 200
check "the log says so" grep -q 'msg="store takes writes again"' "$TMP/serve.log"
disk_send hung 1 2 "$TMP/redelivered"
check "the redeliveries are taken (202) or were committed late (duplicate)" \
    test "$(grep -Ec ' (202|200) .*(accepted|duplicate)' "$TMP/redelivered")" -eq 2
cat "$TMP/redelivered" >>"$TMP/sent"
disk_send after 1 2
check "new deliveries are accepted" test "$(grep -c '^after-[0-9]* 202 ' "$TMP/sent")" -eq 2

kb_serve_stop
check_eq "the daemon exits 0" "$KB_STATUS" 0
check "every 202 is in the store" acked_in_store "$TMP/data/kernelbot.db"
check "each hung delivery is in the store once" test "$(sqlite3 "$TMP/data/kernelbot.db" \
    "SELECT count(*) FROM deliveries WHERE delivery_id IN ('hung-1', 'hung-2')")" -eq 2
t_done
