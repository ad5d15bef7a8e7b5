#!/bin/sh
# kernelbot serve with every connection slot taken by young bodies (the
# attack's N1): 258 connections from six addresses (43 each, under the
# per-address limit), each a whole head declaring 1 MB and then no body
# at all, reset after 0.8 s and reopened at once, against the default
# http.max_connections of 256. No body gets a second old, but one that
# has received nothing is never on course, so once past
# WH_GUARD_FULL_GRACE_MS (20 ms) a newcomer from an address holding fewer
# connections ends it, and genuine deliveries get through. Without that
# (a body ended only once a second old) 6 of 55 got through.
. "$KB_ROOT/tests/e2e/lib.sh"
t_init t1019
kb_config "$TMP/kb.yml"
kb_serve_start "$TMP/kb.yml" || t_done

attack_run 12 6 young:127.0.0.2-7:258
check_genuine
check "the attack did fill the server (250+ connections at once)" \
    test "$(attack_field young peak)" -ge 250
check "no connection of the attack lived past its reset" \
    test "$(attack_field young longest_s)" -lt 2
check "young bodies were ended to make room (at least one per delivery)" \
    test "$(attack_field young closed_by_server)" -ge "$sent"
check "no crash" kill -0 "$KB_PID"
kb_serve_stop TERM
check_eq "SIGTERM: exit 0" "$KB_STATUS" 0
t_done
