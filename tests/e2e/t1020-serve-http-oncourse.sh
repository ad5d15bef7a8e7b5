#!/bin/sh
# kernelbot serve with every connection slot taken by bodies a full
# server cannot call slow (the attack's N2), against the default
# http.max_connections of 256:
#  - 258 bodies from six addresses (43 each) that send their first 256
#    bytes at once and the rest at 1300 B/s, on course to end inside 5 s,
#    reopened the moment they end: the last resort ends the one with the
#    most time left from an address holding more than the newcomer's;
#  - one slow body from each of 256 addresses: a newcomer alone from its
#    address may end a slow body of an address holding one.
# Before either rule, 3 of 70 and 0 of 70 genuine deliveries got through
# (bench/intake_attack.sh oncourse, bodiesspread).
. "$KB_ROOT/tests/e2e/lib.sh"
t_init t1020
kb_config "$TMP/kb.yml"
kb_serve_start "$TMP/kb.yml" || t_done

attack_run 12 6 oncourse:127.0.0.2-7:258
check_genuine
check "on-course bodies did fill the server (250+ connections at once)" \
    test "$(attack_field oncourse peak)" -ge 250
check "on-course bodies were ended to make room (at least one per delivery)" \
    test "$(attack_field oncourse closed_by_server)" -ge "$sent"

attack_run 12 6 bodies:127.0.2.1-255:255 bodies:127.0.3.1:1
check_genuine
check "one slow body from each of 256 addresses filled the server" \
    test $(($(attack_field bodies peak 1) + $(attack_field bodies peak 2))) -ge 250
check "no crash" kill -0 "$KB_PID"
kb_serve_stop TERM
check_eq "SIGTERM: exit 0" "$KB_STATUS" 0
t_done
