#!/bin/sh
# kernelbot serve under issue 23's attacks, all at once for 15 s:
# slowloris heads from four addresses (220 connections), 70 connections
# from one address, 60 bodies that declare 25 MiB and trickle, and 4 that
# send 20 MiB and stall. Meanwhile genuinely signed pushes from another
# address must all get 202 within a bounded time and be in the store,
# and every attacking connection must be closed by its deadline.
. "$KB_ROOT/tests/e2e/lib.sh"
t_init t1011
FX="$KB_ROOT/tests/fixtures/webhooks"
kb_config "$TMP/kb.yml"
cat >>"$TMP/kb.yml" <<EOC
http:
  head_timeout_s: 5
  request_timeout_s: 10
  max_connections: 512
EOC
kb_serve_start "$TMP/kb.yml" || t_done

(cd "$TMP" && /usr/bin/python3 "$KB_ROOT/tests/e2e/attack.py" "$KB_PORT" 15 \
    "$TMP/github.secret" "$FX/github-push.json" \
    slowloris:127.0.0.2-5:220 crowd:127.0.0.6:70 bodies:127.0.0.7:60 \
    stall:127.0.0.8:4 >"$TMP/attack.out" 2>&1) &
ATT=$!
t_bg "$ATT"
wait "$ATT"
sed 's/^/# /' "$TMP/attack.out"

# --- the genuine deliveries ---
check_genuine
check_eq "and each made its job" "$(sqlite3 "$TMP/data/kernelbot.db" 'SELECT count(*) FROM jobs')" \
    "$(wc -l <"$TMP/ids.txt" | tr -d ' ')"

# --- the attacks were held off, not merely outlasted ---
check "slowloris: 200+ connections at once" test "$(attack_field slowloris peak)" -ge 200
check "slowloris: each closed, though it kept sending header lines" \
    test "$(attack_field slowloris closed_by_server)" -ge 220
check "slowloris: none lived past head_timeout_s (5 s) + 4 s" test "$(attack_field slowloris longest_s)" -le 9
check_eq "one address holds 64 connections, not 70" "$(attack_field crowd held_at_2s)" 64
check "fake bodies: 50+ at once" test "$(attack_field bodies peak)" -ge 50
check "fake bodies: closed by request_timeout_s (10 s) + 4 s" test "$(attack_field bodies longest_s)" -le 14
check "stalled bodies: closed by request_timeout_s + 4 s" test "$(attack_field stall longest_s)" -le 14
check_eq "nothing fake was stored" \
    "$(sqlite3 "$TMP/data/kernelbot.db" "SELECT count(*) FROM deliveries WHERE delivery_id LIKE 'fake-%'")" 0

http GET "http://127.0.0.1:$KB_PORT/healthz"
check_eq "healthz after the attacks" "$HTTP_CODE" 200
check "no crash" kill -0 "$KB_PID"
kb_serve_stop TERM
check_eq "SIGTERM: exit 0" "$KB_STATUS" 0
t_done
