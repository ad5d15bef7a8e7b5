#!/bin/sh
# kernelbot serve against a request line and part of a header line, then
# a close (FIN), each from an address never used before, as fast as they
# connect (the eleventh outside attack: the door handed such a head to
# libmicrohttpd, which held its slot to the 10 s head deadline, so 26
# connects a second kept every slot full and every newcomer had to end
# another's; at 9,000 to 13,000 connects a second the listen queue
# overflowed, and genuine deliveries waited out SYN retries or were ended
# unanswered). A head cut short by its client's close now gets 400 at
# once; a body whose client closed before its end is ended within two
# reaper ticks.
. "$KB_ROOT/tests/e2e/lib.sh"
t_init t1032
kb_config "$TMP/kb.yml"
kb_serve_start "$TMP/kb.yml" || t_done

attack_run 10 5 fresh-finhead:127.100-199.0-255.1-254:200 \
    --deliver-plain --deliver-conc 4 --deliver-fresh 127.5.0-255.1-254
check_genuine
check "the health checks answered 200 (24 in 25 at least)" \
    test $((25 * $(attack_field HEALTH ok))) -ge $((24 * $(attack_field HEALTH sent)))
check "the attack connected (10,000 or more)" test "$(attack_field fresh-finhead opened)" -ge 10000
http GET "http://127.0.0.1:$KB_PORT/metrics"
check_match "the connections it holds are few once it is over" "$HTTP_BODY" \
    '^kernelbot_http_connections [0-9]$'
# Bodies cut short: a whole head, 2 of its 10 bytes, then a close, from 50
# addresses (held to the body's rate deadline, 2 to 3 s, before).
/usr/bin/python3 - "$KB_PORT" <<'PY'
import socket, sys
port = int(sys.argv[1])
for i in range(50):
    s = socket.create_connection(("127.0.0.1", port), timeout=5,
                                 source_address=("127.0.78.%d" % (i + 1), 0))
    s.sendall(b"POST /webhooks/github HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
              b"X-GitHub-Event: push\r\nX-GitHub-Delivery: cut-%d\r\n"
              b"X-Hub-Signature-256: sha256=00\r\nContent-Length: 10\r\n\r\n{}" % i)
    s.shutdown(socket.SHUT_WR)
PY
sleep 1
http GET "http://127.0.0.1:$KB_PORT/metrics"
check_match "bodies cut short by their clients: their slots go within a second" "$HTTP_BODY" \
    '^kernelbot_http_connections [0-9]$'
check_match "... counted" "$HTTP_BODY" \
    'kernelbot_http_connections_ended_total\{reason="client_closed"\} [1-9]'
check "no crash" kill -0 "$KB_PID"
kb_serve_stop TERM
check_eq "SIGTERM: exit 0" "$KB_STATUS" 0
t_done
