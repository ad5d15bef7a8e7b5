#!/bin/sh
# kernelbot serve against heads sent one byte a segment (TCP_NODELAY), 20
# connections from 4 addresses taking turns, as fast as they go (the
# tenth outside attack, 5 to 80 of them: a peek of such a head walked
# the socket's queue once for each segment it copied, a peek took
# seconds, and the door's thread, which accepts every connection, did
# nothing else: deliveries and /healthz waited in the listen queue, for
# minutes after the attack when its connections were queued there; here
# the build before answered nothing, SIGTERM included). The door now
# keeps such a queue collapsed (a small receive buffer while the head
# comes), peeks only what is queued, and ends a head sent in more than
# 256 pieces.
. "$KB_ROOT/tests/e2e/lib.sh"
t_init t1029
kb_config "$TMP/kb.yml"
kb_serve_start "$TMP/kb.yml" || t_done

attack_run 10 5 bytewise:127.0.40.1-4:20
check_genuine
check "the bytewise connections were ended (many reopened)" \
    test "$(attack_field bytewise opened)" -ge 20
http GET "http://127.0.0.1:$KB_PORT/healthz"
check_eq "healthz right after the attack" "$HTTP_CODE" 200
check "no crash" kill -0 "$KB_PID"
kb_serve_stop TERM
check_eq "SIGTERM: exit 0" "$KB_STATUS" 0
t_done
