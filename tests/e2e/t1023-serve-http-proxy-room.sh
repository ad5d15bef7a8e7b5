#!/bin/sh
# kernelbot serve behind a trusted reverse proxy that streams bodies (the
# fourth outside attack's F1): 256 slow bodies through the proxy at
# 127.0.0.1, 64 for each of four X-Forwarded-For clients, reopened when
# ended, against the default http.max_connections of 256. Once its head
# is in, a proxied request is its client's for room, so its slow body is
# ended for a newcomer as a direct one is: genuine deliveries through the
# proxy for another client, direct ones from another address, and
# /healthz all get in. Before, the proxy's connections were never ended
# for room and every newcomer was refused (0 of 40 and 0 of 16).
. "$KB_ROOT/tests/e2e/lib.sh"
t_init t1023
kb_config "$TMP/kb.yml"
cat >>"$TMP/kb.yml" <<EOC
http:
  trusted_proxies: [127.0.0.1]
EOC
kb_serve_start "$TMP/kb.yml" || t_done

# most deliveries in (a margin for a loaded host), and every 202 stored
check_most() {
	sent=$(attack_field DELIVER sent)
	ok=$(attack_field DELIVER accepted)
	check "deliveries were sent throughout (at least 10)" test "${sent:-0}" -ge 10
	check "at least 90% of them got 202 ($ok of $sent)" test $((ok * 10)) -ge $((sent * 9))
	sqlite3 "$TMP/data/kernelbot.db" \
	    "SELECT delivery_id FROM deliveries WHERE outcome = 'accepted'" >"$TMP/stored.txt"
	check_eq "every 202 is in the store" "$(grep -cFxf "$TMP/stored.txt" "$TMP/ids.txt")" \
	    "$(wc -l <"$TMP/ids.txt" | tr -d ' ')"
}

attack_run 8 5 proxied:127.0.0.1:256 --deliver 127.0.0.1 --deliver-xff 10.9.1.1
check_most
check "proxied slow bodies did fill the server (250+ connections at once)" \
    test "$(attack_field proxied peak)" -ge 250
# Most deliveries found their slot by ending a slow body; some take one a
# finished delivery or the attack's own churn left (34 of 35 in one CI run).
check "proxied slow bodies were ended to make room (at least half of $ok)" \
    test $(($(attack_field proxied closed_by_server) * 2)) -ge "$ok"

attack_run 8 5 proxied:127.0.0.1:256 --deliver 127.0.0.5
check_most
http GET "http://127.0.0.1:$KB_PORT/metrics"
printf '%s\n' "$HTTP_BODY" >"$TMP/metrics.txt"
check "slow bodies were ended for room" \
    grep -Eq 'ended_total\{reason="room_slow_body"\} [1-9]' "$TMP/metrics.txt"
check "no crash" kill -0 "$KB_PID"
kb_serve_stop TERM
check_eq "SIGTERM: exit 0" "$KB_STATUS" 0
t_done
