#!/bin/sh
# kernelbot serve with every connection slot taken by tiny bodies
# trickled (the sixth outside attack's F1), against the default
# http.max_connections of 256: from each of 260 addresses a head declaring
# a 10-byte body and its first byte, then one byte every 0.4 s, reopened
# the moment it ends. Each is on course to end 3.6 s after its head and never 0.5 s without a
# byte, so neither the on-course rule nor the stall rule calls it slow;
# past WH_GUARD_FULL_FLOOR_MS its average is under WH_GUARD_FULL_RATE, so
# a newcomer alone from its address ends one. Before that rule, 0 of 55
# genuine deliveries and no health check got through.
. "$KB_ROOT/tests/e2e/lib.sh"
t_init t1025
kb_config "$TMP/kb.yml"
kb_serve_start "$TMP/kb.yml" || t_done

attack_run 12 6 trickle:127.0.4.1-255:255 trickle:127.0.5.1-5:5
check_genuine
check "trickled bodies did fill the server (250+ connections at once)" \
    test $(($(attack_field trickle peak 1) + $(attack_field trickle peak 2))) -ge 250
check "trickled bodies were ended to make room (at least one per delivery)" \
    test $(($(attack_field trickle closed_by_server 1) + \
    $(attack_field trickle closed_by_server 2))) -ge "$sent"
http GET "http://127.0.0.1:$KB_PORT/metrics"
check_eq "metrics after the attack: 200" "$HTTP_CODE" 200
check "no crash" kill -0 "$KB_PID"
kb_serve_stop TERM
check_eq "SIGTERM: exit 0" "$KB_STATUS" 0
t_done
