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
field() {	# field KIND NAME
	sed -nE "s/^(ATTACK $1|$1)( | .* )$2=([0-9.]+).*/\3/p" "$TMP/attack.out" | cut -d. -f1
}
sent=$(field DELIVER sent)
check "deliveries were sent throughout (at least 10)" test "${sent:-0}" -ge 10
check_eq "every genuine delivery got 202" "$(field DELIVER accepted)" "$sent"
check "each within 5 s" test "$(field DELIVER max_ms)" -le 5000
check_eq "every 202 is in the store" \
    "$(sqlite3 "$TMP/data/kernelbot.db" "SELECT count(*) FROM deliveries WHERE outcome = 'accepted'")" \
    "$(wc -l <"$TMP/ids.txt" | tr -d ' ')"
check "the slow heads were ended to make room (more than the 4 over the limit)" \
    test "$(field slowloris closed_by_server)" -gt 4
check "no crash" kill -0 "$KB_PID"
kb_serve_stop TERM
check_eq "SIGTERM: exit 0" "$KB_STATUS" 0
t_done
