#!/bin/sh
# kernelbot serve with every connection slot taken by idle connections
# from 260 addresses, one each (cheap with IPv6): the newcomer's address
# holds as many as any other, so the tie must not refuse it, and the
# handover from the door to libmicrohttpd must not count the newcomer's
# connection twice (which made it look like an address holding two).
. "$KB_ROOT/tests/e2e/lib.sh"
t_init t1018
FX="$KB_ROOT/tests/fixtures/webhooks"
kb_config "$TMP/kb.yml"
kb_serve_start "$TMP/kb.yml" || t_done

(cd "$TMP" && /usr/bin/python3 "$KB_ROOT/tests/e2e/attack.py" "$KB_PORT" 8 \
    "$TMP/github.secret" "$FX/github-push.json" idle:127.0.1.1-200:200 \
    idle:127.0.2.1-60:60 >"$TMP/attack.out" 2>&1) &
ATT=$!
t_bg "$ATT"
wait "$ATT"
sed 's/^/# /' "$TMP/attack.out"
check_genuine
check "the idle connections did fill the server (190+ of the first 200 at once)" \
    test "$(attack_field idle peak)" -ge 190
check "no crash" kill -0 "$KB_PID"
kb_serve_stop TERM
check_eq "SIGTERM: exit 0" "$KB_STATUS" 0
t_done
