#!/bin/sh
# kernelbot serve against one bare connection from each of 300 addresses,
# reopened the moment it is ended (the seventh outside attack's F1), while
# a client connects first and sends after (as curl does, not in one Fast
# Open write) and checks /healthz from the same address after each
# delivery. With every slot in its 50 ms grace often enough, 29 of 54
# deliveries and 23 of 54 health checks got no answer (about 10,000
# connects a second); a client ended for room before its request line is
# now struck (no grace, and its newcomers end only struck clients'
# connections).
. "$KB_ROOT/tests/e2e/lib.sh"
t_init t1026
kb_config "$TMP/kb.yml"
kb_serve_start "$TMP/kb.yml" || t_done

attack_run 12 6 wall:127.0.20.1-255:255 wall:127.0.21.1-45:45 --deliver-plain
check_genuine
check_health_after wall
check "no crash" kill -0 "$KB_PID"
kb_serve_stop TERM
check_eq "SIGTERM: exit 0" "$KB_STATUS" 0
t_done
