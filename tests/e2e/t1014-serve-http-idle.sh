#!/bin/sh
# kernelbot serve with every connection slot taken by connections that
# never finish a request line (the attack's F1): 256 idle connections from
# four addresses (64 each, the per-address limit), 120 more idle from 120
# addresses one each (so the newcomer's address holds as many as any
# victim's), and 40 whose request line trickles in a byte a second, all
# reopened as soon as the server closes them, against the default
# http.max_connections of 256. A connection must earn its slot with a
# request line within WH_GUARD_LINE_S (3 s); a newcomer ends one that has
# not; genuine deliveries and /healthz all get through.
. "$KB_ROOT/tests/e2e/lib.sh"
t_init t1014
FX="$KB_ROOT/tests/fixtures/webhooks"
kb_config "$TMP/kb.yml"
kb_serve_start "$TMP/kb.yml" || t_done

(cd "$TMP" && /usr/bin/python3 "$KB_ROOT/tests/e2e/attack.py" "$KB_PORT" 12 \
    "$TMP/github.secret" "$FX/github-push.json" idle:127.0.0.2-5:256 \
    idle:127.0.1.1-120:120 line:127.0.0.6-9:40 >"$TMP/attack.out" 2>&1) &
ATT=$!
t_bg "$ATT"
sleep 6
http GET "http://127.0.0.1:$KB_PORT/healthz"
check_eq "healthz during the attack" "$HTTP_CODE" 200
wait "$ATT"
sed 's/^/# /' "$TMP/attack.out"
check_genuine
check "the attack did fill the server (200+ idle at once from four addresses)" \
    test "$(attack_field idle peak 1)" -ge 200
check "idle, four addresses: none held past the 3 s line deadline + 3 s" \
    test "$(attack_field idle longest_s 1)" -le 6
check "idle, one per address: ended too (more than the 120 opened at first)" \
    test "$(attack_field idle closed_by_server 2)" -gt 120
check "idle, one per address: none held past 6 s" test "$(attack_field idle longest_s 2)" -le 6
check "request line at a byte a second: none held past 6 s" \
    test "$(attack_field line longest_s)" -le 6
check "no crash" kill -0 "$KB_PID"
kb_serve_stop TERM
check_eq "SIGTERM: exit 0" "$KB_STATUS" 0
t_done
