#!/bin/sh
# t3017: no value comes back whole from one timed run to the next. A
# kernel that kept f(x) per value it had seen (an elementwise series of
# 24 terms, looked up instead of computed, computed only on a miss) ran
# at several times its honest twin and passed: every value a refresh
# placed was one of the draws'. Now the worker flips the low bits of each
# refreshed value with a mask drawn for the run (kbh/judge_skew.py,
# xor_normal). memo_tell.c is the witness: honest, but it spoils a call
# in which half the values or more are ones it has seen (an identical
# repeat, the determinism trial, aside), so a table of seen values would
# have paid exactly where it is not correct. series_memo.c, the attack
# itself, stays correct (it always is; only its speed was the gain).
# ids_memo.c keeps f per integer id: ids drawn from 2^20, 2^15 a call,
# come back across the timed calls whatever a refresh places, so only a
# fresh process, warmed up on other draws, shows it slow
# (kbh/judge_fresh.py): flagged state_across_calls; its honest twin not.
# ids_files.c reads the judge's input files at its first, untimed call
# and computes f for every id in them (an outside attack): the fresh
# process gets a timing set's files only just before its first run there,
# so it is flagged too (and its reads by the static check).
# ids_memo_pad.c is ids_memo.c slowed on purpose where the figure was
# taken (an outside attack): on a third of its calls, which raised the
# 75th percentile of the rounds, and on its first calls on the timing
# sets in the first process's warm-up, which were the figure where
# slower; the figure is the median of all the rounds' runs now, so it is
# flagged too. So is ids_memo_rounds.c, slow on most rounds' medians but
# not on the median of its runs (another outside attack).
# convnet.c, the graph compiler's kernel for a small VGG, mallocs its
# scratch per call: its first call on each set in the fresh process
# faulted that scratch in afresh (53 pages, 0.9 ms against 0.3 ms in the
# rounds: flagged) while the worker's set buffers came from the same
# heap; they are mappings of their own now (gpu/wdev.c).
. "$(dirname "$0")/eval-lib.sh"
F="$ROOT/tests/fixtures/valmemo"

mkdir -p "$tmp/c"
cp "$F/series.c" "$F/series_memo.c" "$F/memo_tell.c" "$F/ids.c" "$F/ids_memo.c" "$F/ids_files.c" \
    "$F/ids_memo_pad.c" "$F/ids_memo_rounds.c" "$tmp/c/"
cd "$tmp/c"
"$KERNELBOT" compile "$F/convnet.py" -o convnet.c 2>"$tmp/convnet.err" &&
	ok "convnet: compiled" || bad "convnet: compile: $(tail -3 "$tmp/convnet.err")"
eval_cpu convnet "$F/convnet.py" convnet.c
eval_cpu series "$F/series.py" series.c series_memo.c memo_tell.c
eval_cpu ids "$F/ids.py" ids.c ids_memo.c ids_files.c ids_memo_pad.c ids_memo_rounds.c
cd "$ROOT"

expect "$tmp/series.json" series.c 'r["status"] == "correct"' "honest: correct"
expect "$tmp/series.json" memo_tell.c 'r["status"] == "correct"' "no timed run held half its values again"
expect "$tmp/series.json" series_memo.c 'r["status"] == "correct"' "the table of seen values: correct, and of no use"
expect "$tmp/series.json" series.c '"with a mask" in [c["detail"] for c in r["checks"] if c["name"] == "timing_inputs_fresh"][0]' "the fresh-inputs check names the mask"
expect "$tmp/ids.json" ids.c 'r["status"] == "correct" and "state_across_calls" not in r["flags"] and [c for c in r["checks"] if c["name"] == "no_state_across_calls"][0]["passed"]' "honest, its first calls in a fresh process as fast"
expect "$tmp/ids.json" ids_memo.c 'r["status"] == "correct" and "state_across_calls" in r["flags"] and r["needs_review"] and r["timing"]["fresh"]["processes"] == 4' "the table of f per id: flagged state_across_calls, confirmed"
expect "$tmp/ids.json" ids_files.c 'r["status"] == "correct" and "state_across_calls" in r["flags"] and "file_or_network_access" in r["flags"] and r["needs_review"]' "the ids read ahead from the judge's files: flagged, at run time and statically"

expect "$tmp/ids.json" ids_memo_pad.c 'r["status"] == "correct" and "state_across_calls" in r["flags"] and r["needs_review"]' "the table slowed where the figure was taken: flagged, against the median run"
expect "$tmp/ids.json" ids_memo_rounds.c 'r["status"] == "correct" and "state_across_calls" in r["flags"] and r["needs_review"]' "the table slow on most rounds' medians: flagged, against the median run"
expect "$tmp/convnet.json" convnet.c 'r["status"] == "correct" and "state_across_calls" not in r["flags"]' "a compiled kernel with per-call scratch: its fresh first calls as fast"

done_tests t3017-eval-value-memo
