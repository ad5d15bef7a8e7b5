#!/bin/sh
# kernelbot serve with every connection slot taken by slow heads (issue
# 23: 260 slowloris connections against the default http.max_connections
# of 256, from five addresses, each under http.max_connections_per_ip):
# a newcomer ends the connection that has waited longest for its head,
# so genuine deliveries still get 202, all of them stored.
. "$KB_ROOT/tests/e2e/lib.sh"
t_init t1013
FX="$KB_ROOT/tests/fixtures/webhooks"
kb_config "$TMP/kb.yml"
kb_serve_start "$TMP/kb.yml" || t_done

(cd "$TMP" && /usr/bin/python3 "$KB_ROOT/tests/e2e/attack.py" "$KB_PORT" 12 \
    "$TMP/github.secret" "$FX/github-push.json" slowloris:127.0.0.2-6:260 \
    >"$TMP/attack.out" 2>&1) &
ATT=$!
t_bg "$ATT"
wait "$ATT"
sed 's/^/# /' "$TMP/attack.out"
check_genuine
check "the slow heads were ended to make room (more than the 4 over the limit)" \
    test "$(attack_field slowloris closed_by_server)" -gt 4
check "no crash" kill -0 "$KB_PID"
kb_serve_stop TERM
check_eq "SIGTERM: exit 0" "$KB_STATUS" 0
t_done
