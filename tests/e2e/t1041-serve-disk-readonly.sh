#!/bin/sh
# The store's file system turns read-only under the daemon (ext4 on a
# loop device, `mount -o remount,abort`: what errors=remount-ro does
# after a disk error): webhooks answer 503 with Retry-After, /healthz
# answers 503 naming EROFS within 1 s, the log names the cause. Mounted
# again and the daemon restarted, every 202 is in the store and the
# forge's redeliveries are taken.
. "$KB_ROOT/tests/e2e/lib-disk.sh"
t_init t1041
[ "$(id -u)" -eq 0 ] || disk_skip "needs root to mount a loop device"
command -v sqlite3 >/dev/null || disk_skip "no sqlite3"
command -v mkfs.ext4 >/dev/null || disk_skip "no mkfs.ext4 (e2fsprogs)"
mkdir "$TMP/data"
truncate -s 16M "$TMP/disk.img" && mkfs.ext4 -q -F "$TMP/disk.img" 2>/dev/null ||
    disk_skip "cannot make an ext4 image"
mount -o loop "$TMP/disk.img" "$TMP/data" 2>/dev/null ||
    disk_skip "cannot mount a loop device here"
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

mount -o remount,abort "$TMP/data" 2>/dev/null ||
    { echo "t1041: skip: this kernel's ext4 cannot abort"; exit 0; }
STOP503=1 disk_send ro 1 20
export STOP503=
check "a delivery that cannot commit gets 503" grep -q '^ro-[0-9]* 503 ' "$TMP/sent"
check_match "with Retry-After and the cause" \
    "$(grep '^ro-[0-9]* 503 ' "$TMP/sent" | head -n 1)" '^ro-[0-9]* 503 [0-9.]* 30 .*EROFS'
check "/healthz 503 naming EROFS, within 1 s" wait_for 10 healthz_is 503
check_match "its body" "$(cat "$TMP/healthz")" \
    '"status":"unavailable","error":"EROFS: Read-only file system"'
check "/healthz answers within 1 s each time" healthz_fast 5
check "the log names the cause" \
    grep -q 'msg="store cannot commit writes" cause="EROFS' "$TMP/serve.log"

# The operator's remedy: stop, mount again (the journal replays), start.
kb_serve_stop
check_eq "the daemon exits 0" "$KB_STATUS" 0
umount "$TMP/data" && mount -o loop "$TMP/disk.img" "$TMP/data"
check "every 202 is in the store" acked_in_store "$TMP/data/kernelbot.db"
kb_serve_start "$TMP/kb.yml" || t_done
check "/healthz 200 after the remount" wait_for 20 healthz_is 200
for id in $(awk '$2 == 503 { print $1 }' "$TMP/sent"); do
	disk_send "${id%-*}" "${id##*-}" "${id##*-}" "$TMP/redelivered"
done
check "the redelivery is accepted" \
    test "$(awk '$2 == 202' "$TMP/redelivered" | wc -l)" -ge 1
cat "$TMP/redelivered" >>"$TMP/sent"
kb_serve_stop
check "every 202 is in the store, redeliveries too" acked_in_store "$TMP/data/kernelbot.db"
t_done
