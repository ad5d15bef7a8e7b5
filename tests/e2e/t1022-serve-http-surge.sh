#!/bin/sh
# kernelbot serve's memory for bodies held by young bodies (the third
# outside attack's F3, scaled down): from each of 12 addresses a head
# declaring a 1 MiB body and 7/8 of it at once, then 2 KiB a second, so on
# course for its first 4 s and never ended for room meanwhile; and 120
# small bodies (12 KiB, sent the same way, on course until they end) from
# the same addresses, filling what the large ones leave. Large bodies hold
# at most http.max_buffered_bytes less the reserve for small ones
# (http.max_connections x http.small_body_bytes), so a genuine delivery
# (1.5 KB) always finds room. Before the reserve, the large and small
# bodies together took the whole 8 MiB and deliveries got 503 until the
# large ones fell off course.
. "$KB_ROOT/tests/e2e/lib.sh"
t_init t1022
kb_config "$TMP/kb.yml"
cat >>"$TMP/kb.yml" <<EOC
http:
  max_body_bytes: 1048576
  max_buffered_bytes: 8388608
  small_body_bytes: 16384
EOC
kb_serve_start "$TMP/kb.yml" || t_done

attack_run 8 4 surge:127.0.15.1-12:12:1048576 surge:127.0.15.1-12:120:12288
check_genuine
check "large bodies from all 12 addresses" test "$(attack_field surge peak 1)" -ge 12
check "small bodies filled the rest (100+ at once)" test "$(attack_field surge peak 2)" -ge 100
http GET "http://127.0.0.1:$KB_PORT/metrics"
check_eq "metrics: 200" "$HTTP_CODE" 200
reserve=$(printf '%s\n' "$HTTP_BODY" |
    sed -n 's/^kernelbot_http_bodies_refused_total{reason="small_body_reserve"} //p')
check "metrics: large bodies refused for the reserve ($reserve)" test "${reserve:-0}" -ge 3
check "no crash" kill -0 "$KB_PID"
kb_serve_stop TERM
check_eq "SIGTERM: exit 0" "$KB_STATUS" 0
t_done
