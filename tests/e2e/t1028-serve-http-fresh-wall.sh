#!/bin/sh
# kernelbot serve against a wall of bare connections, each reconnect from
# an address never seen before (the ninth outside attack: 400 at once from
# 127.100-199.x.y kept every slot in its grace; deliveries each from a new
# address, so never vouched for, got 2 of 80 in, 4 in flight at a time,
# and a vouched forge lost 10% to 40% against 1,000). Striking addresses
# cannot hold a wall that never reuses one; the slots turn over oldest
# first instead, so a connection that sends its request when it connects
# keeps its slot (a connection yet to show it is genuine, a head not
# whole or a body below a forge's rate, is ended oldest first once such
# hold more than half the slots).
. "$KB_ROOT/tests/e2e/lib.sh"
t_init t1028
kb_config "$TMP/kb.yml"
kb_serve_start "$TMP/kb.yml" || t_done

# First deliveries, each from a new address, connected then sent.
attack_run 10 5 fresh:127.100-199.0-255.1-254:400 \
    --deliver-plain --deliver-conc 4 --deliver-fresh 127.3.0-255.1-254
check_genuine
check "the health checks answered 200 (24 in 25 at least)" \
    test $((25 * $(attack_field HEALTH ok))) -ge $((24 * $(attack_field HEALTH sent)))
check "the fresh connections did fill the server (250+ at once)" \
    test "$(attack_field fresh peak)" -ge 250

# The same with a head and one byte of a 2-byte body each: on course for
# its first 250 ms, so the slots stayed in their grace (7 of 140 in,
# sent as curl does).
# Each delivery sent as its connection opens (the kernel's, not this
# client's: a busy host may hold a connected client past the slots' turn).
attack_run 8 4 fresh-halfbody:127.100-199.0-255.1-254:400 \
    --deliver-conc 4 --deliver-fresh 127.4.0-255.1-254
check_genuine

# A forge that has delivered (vouched for), 50 ms between each connect
# and its send, against 1,000.
deliver_before before-1
attack_run 10 5 fresh:127.100-199.0-255.1-254:1000 \
    --deliver-plain --deliver-conc 4 --deliver-delay 50
check_genuine
check "the health checks answered 200 (24 in 25 at least)" \
    test $((25 * $(attack_field HEALTH ok))) -ge $((24 * $(attack_field HEALTH sent)))
check "no crash" kill -0 "$KB_PID"
kb_serve_stop TERM
check_eq "SIGTERM: exit 0" "$KB_STATUS" 0
t_done
