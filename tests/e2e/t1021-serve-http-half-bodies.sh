#!/bin/sh
# kernelbot serve full of connections that a newcomer could not end
# before (the third outside attack), against the default
# http.max_connections of 256:
#  - F1: from each of 256 addresses a head declaring a 2-byte body, one
#    byte of it, then nothing until the minimum-rate deadline (408 at 2 s),
#    reopened at once: on course by its average, so never slow; now a body
#    short of its length that has received nothing for
#    WH_GUARD_FULL_STALL_MS is. Before: 1 of 75 genuine deliveries.
#  - F2: 256 connections that send a request line only, one an address,
#    and knockers from fresh addresses sending whole requests at once: the
#    genuine delivery's connection, its head written but not yet read by
#    the door, was taken for one "without its request line" (408). Now a
#    head is not ended in its first WH_GUARD_HEAD_GRACE_MS, nor while its
#    whole head waits unread in the socket. Before: 42 of 76 with the
#    attack's own client; this test's client (connect, one write) was not
#    caught even then, so this part guards against a regression only
#    (tests/unit/test_wh_guard.c has the case itself).
. "$KB_ROOT/tests/e2e/lib.sh"
t_init t1021
kb_config "$TMP/kb.yml"
kb_serve_start "$TMP/kb.yml" || t_done

attack_run 12 6 halfbody:127.0.10.1-255:255 halfbody:127.0.11.1:1
check_genuine
check "half bodies filled the server (250+ connections at once)" \
    test $(($(attack_field halfbody peak 1) + $(attack_field halfbody peak 2))) -ge 250
# What the guard did, on /metrics: slow bodies ended for room, the rest at
# their deadlines.
http GET "http://127.0.0.1:$KB_PORT/metrics"
check_eq "metrics: 200" "$HTTP_CODE" 200
ended=$(printf '%s\n' "$HTTP_BODY" | sed -n 's/^kernelbot_http_connections_ended_total{reason="room_slow_body"} //p')
check "metrics: slow bodies ended for room ($ended)" test "${ended:-0}" -ge 10
late=$(printf '%s\n' "$HTTP_BODY" | sed -n 's/^kernelbot_http_connections_ended_total{reason="deadline"} //p')
check "metrics: bodies ended at their deadline ($late)" test "${late:-0}" -ge 100
check_match "metrics: the open connections gauge" "$HTTP_BODY" '^kernelbot_http_connections [0-9]+$'

attack_run 12 6 crowd:127.0.12.1-255:255 crowd:127.0.13.1:1 knock:127.0.14.1-250:24
check_genuine
check "the knockers were answered (a whole request each)" \
    test "$(attack_field knock opened)" -ge 100
check "no crash" kill -0 "$KB_PID"
kb_serve_stop TERM
check_eq "SIGTERM: exit 0" "$KB_STATUS" 0
t_done
