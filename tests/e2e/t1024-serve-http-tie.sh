#!/bin/sh
# kernelbot serve full of partial request lines, one from each of 300
# addresses (a byte a second, reopened when ended; the fourth outside
# attack's F2), while a forge keeps 3 deliveries in flight from one
# address. A newcomer whose address's other connections have all earned
# their slots may end a connection without its request line from any
# address, so the forge's own deliveries in flight do not count against
# it. Before, only an address holding at least as many as the newcomer's
# could lose one, and 23-34% of the forge's deliveries were refused.
. "$KB_ROOT/tests/e2e/lib.sh"
t_init t1024
kb_config "$TMP/kb.yml"
kb_serve_start "$TMP/kb.yml" || t_done

attack_run 8 5 line:127.0.2.1-250:250 line:127.0.3.1-50:50 --deliver 127.0.0.9 --deliver-conc 3
sent=$(attack_field DELIVER sent)
ok=$(attack_field DELIVER accepted)
check "deliveries were sent throughout (at least 30)" test "${sent:-0}" -ge 30
check "at least 95% of them got 202 ($ok of $sent)" test $((ok * 20)) -ge $((sent * 19))
sqlite3 "$TMP/data/kernelbot.db" \
    "SELECT delivery_id FROM deliveries WHERE outcome = 'accepted'" >"$TMP/stored.txt"
check_eq "every 202 is in the store" "$(grep -cFxf "$TMP/stored.txt" "$TMP/ids.txt")" \
    "$(wc -l <"$TMP/ids.txt" | tr -d ' ')"
check "partial lines did fill the server (250+ connections at once)" \
    test $(($(attack_field line peak 1) + $(attack_field line peak 2))) -ge 250
check "no crash" kill -0 "$KB_PID"
kb_serve_stop TERM
check_eq "SIGTERM: exit 0" "$KB_STATUS" 0
t_done
