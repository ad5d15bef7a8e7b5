#!/bin/sh
# kernelbot serve against whole bad-signature requests, each sent 50 ms
# after its connect (curl's pattern), from 300 addresses, reopened the
# moment each is answered, while a forge with 4 deliveries in flight
# connects 50 ms before it sends too and checks /healthz after each (the
# eighth outside attack: its connections, more than any attacker's
# address held, were the ones ended, and its newcomers refused: 26 of
# 248 deliveries in). A client whose delivery was accepted is vouched for
# (a longer grace, its newcomers end unvouched heads): here the forge has
# delivered before the attack begins. (A forge's first delivery, paused
# as long as the attackers pause, is not told from theirs: 3 or 4 of 140
# were lost that way; forges send at once.)
. "$KB_ROOT/tests/e2e/lib.sh"
t_init t1027
kb_config "$TMP/kb.yml"
kb_serve_start "$TMP/kb.yml" || t_done
deliver_before before-1

attack_run 12 6 pause:127.0.30.1-255:255 pause:127.0.31.1-45:45 \
    --deliver-plain --deliver-conc 4 --deliver-delay 50
check_genuine
check_health_after pause
check "no crash" kill -0 "$KB_PID"
kb_serve_stop TERM
check_eq "SIGTERM: exit 0" "$KB_STATUS" 0
t_done
