#!/bin/sh
# kernelbot serve with every connection slot taken by slow bodies (the
# attack's F2): 258 connections from six addresses (43 each, under the
# per-address limit), each a whole head declaring 25 MiB and then 2 KiB a
# second, reopened as soon as the server closes one, against the default
# http.max_connections of 256. When full, a newcomer from an address
# holding fewer connections ends the slowest body that is not on course
# to end within 5 s, so genuine deliveries get through; the attackers,
# holding equal shares, cannot churn each other's bodies.
. "$KB_ROOT/tests/e2e/lib.sh"
t_init t1017
kb_config "$TMP/kb.yml"
kb_serve_start "$TMP/kb.yml" || t_done

attack_run 12 6 bodies:127.0.0.2-7:258
check_genuine
check "the attack did fill the server (250+ bodies at once)" test "$(attack_field bodies peak)" -ge 250
check "slow bodies were ended to make room (at least one per delivery)" \
    test "$(attack_field bodies closed_by_server)" -ge "$sent"
check "no crash" kill -0 "$KB_PID"
kb_serve_stop TERM
check_eq "SIGTERM: exit 0" "$KB_STATUS" 0
t_done
