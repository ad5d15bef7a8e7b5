#!/bin/sh
# kernelbot serve against chunked bodies that declare a 1 MiB chunk, send
# 60 KB of it with their head and then a byte every 3 ms, one from each of
# 260 addresses, reopened as they are ended, while a forge that has
# delivered before (vouched for) sends 4 at a time (the fifteenth outside
# attack: a chunked body had no length to be on course for and was slow
# only past 5 s, so the slots stayed full at 5-7 MB/s of loopback traffic
# and 3-37% of the forge's deliveries got no answer). A body of unknown
# length is now judged by its average rate past WH_GUARD_FULL_FLOOR_MS,
# as a declared one is, and held at most WH_GUARD_FULL_CHUNKED_MS when
# the room is needed.
. "$KB_ROOT/tests/e2e/lib.sh"
t_init t1034
kb_config "$TMP/kb.yml"
kb_serve_start "$TMP/kb.yml" || t_done
deliver_before before-1

attack_run 10 5 chunktrickle:127.0.40-41.1-130:260 --deliver-conc 4
check_genuine
check "the chunked bodies did fill the server (250+ at once)" \
    test "$(attack_field chunktrickle peak)" -ge 250
check "no crash" kill -0 "$KB_PID"
kb_serve_stop TERM
check_eq "SIGTERM: exit 0" "$KB_STATUS" 0
t_done
