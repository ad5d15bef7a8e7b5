#!/bin/sh
# kernelbot serve against connections that each send a whole head and half
# of an 8 KiB body at once, then nothing, each reconnect from an address
# never seen before (the twelfth outside attack, open-loop from 6,000 new
# addresses a second, kept 16-21% of first deliveries out). By its
# average such a body is faster than a forge's rate for its first 125 ms,
# so it kept its grace that long; a body short of its length without a
# byte for WH_GUARD_YOUNG_STALL_MS has yet to show it is genuine, and the
# oldest of those goes when a newcomer needs the room; so does a chunked
# body stopped inside a chunk.
. "$KB_ROOT/tests/e2e/lib.sh"
t_init t1033

# most_in: the deliveries went on throughout the attack, 97 in 100 got
# 202 at least, each answered within 5 s.
most_in() {
	sent=$(attack_field DELIVER sent)
	check "deliveries were sent throughout (at least 10)" test "${sent:-0}" -ge 10
	check "97 in 100 got 202 at least" \
	    test $((100 * $(attack_field DELIVER accepted))) -ge $((97 * ${sent:-1}))
	check "each answered within 5 s" test "$(attack_field DELIVER max_ms)" -le 5000
}

kb_config "$TMP/kb.yml"
kb_serve_start "$TMP/kb.yml" || t_done

# Each delivery sent as its connection opens (the kernel's, not this
# client's), each from a new address.
# At least 97 in 100 in: on the loaded 2-core host one or two in 150
# were still refused (a newcomer that found the slots held by requests
# still proving themselves: docs/operations.md); 48 of 173 before.
attack_run 10 5 fresh-halfbig:127.100-199.0-255.1-254:400 \
    --deliver-conc 4 --deliver-fresh 127.4.0-255.1-254
most_in
sqlite3 "$TMP/data/kernelbot.db" \
    "SELECT delivery_id FROM deliveries WHERE outcome = 'accepted'" >"$TMP/stored.txt"
check_eq "every 202 is in the store" "$(grep -cFxf "$TMP/stored.txt" "$TMP/ids.txt")" \
    "$(wc -l <"$TMP/ids.txt" | tr -d ' ')"
check "the half bodies did fill the server (250+ at once)" \
    test "$(attack_field fresh-halfbig peak)" -ge 250

# The same with a chunked body cut short in its first chunk (64 KiB
# declared, half sent): no length to be short of, so it was never partial
# and its rate proved it for seconds (the thirteenth outside attack on
# the intake: 139 of 846 first deliveries in at 300 connects a second).
attack_run 10 0 fresh-halfchunk:127.100-199.0-255.1-254:400 \
    --deliver-conc 4 --deliver-fresh 127.5.0-255.1-254
most_in
check "no crash" kill -0 "$KB_PID"
kb_serve_stop TERM
check_eq "SIGTERM: exit 0" "$KB_STATUS" 0
t_done
