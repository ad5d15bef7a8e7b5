#!/bin/sh
# t5102: kernelbot optimize --proposer llm|both --backend cpu against the
# fake LLM server: the scripted compile error, then the kernel wrong at a
# second input variant, then the fix, which ends as best/kernel.c; every
# call in the store's llm_calls; the archived kernel retrieved into the
# next run's prompt; `both` seeds the LLM with the graph compiler's
# kernels; token and dollar budgets stop the run with their reason; the
# key appears in no output, file or store.
. "$KB_ROOT/tests/e2e/lib.sh"
. "$KB_ROOT/tests/e2e/lib-llm.sh"
t_init t5102
PY=/usr/bin/python3
export KERNELBOT_PYTHON=${KERNELBOT_PYTHON:-/usr/bin/python3}
F="$KB_ROOT/tests/fixtures/llm"
P="$KB_ROOT/tests/fixtures/eval/scale_bias.py"
FAST="--backend cpu --trials 2 --confirm-trials 2 --rounds 2 --reps 3 --warmup 1 --timeout 60 --seed 5"
KEY="sk-SECRET-5102-$$"
export T5102_KEY="$KEY"

# config FILE [LLM LINE...]: one model on the fake, the store in $TMP/data
config() {
	f=$1
	shift
	llm_config "$f" "$LLM_PORT" T5102_KEY "  proposals: 1" "  summarize_over: 0" "$@"
	echo "data_dir: $TMP/data" >>"$f"
}

# ---- 1. the fix loop ends as the verified best ----
cat >"$TMP/one.json" <<EOF
[{"match": "# Task: write kernel.c", "reply_file": "$F/broken.md", "usage": [1000, 300]},
 {"match": "# Task: fix kernel.c.*scale_bias_undeclared", "reply_file": "$F/wrong_variant.md", "usage": [1200, 300]},
 {"match": "# Task: fix kernel.c.*input variant 2.*never written", "reply_file": "$F/fixed.md", "usage": [1200, 300]}]
EOF
fakellm one "$TMP/one.json"
config "$TMP/one.yml"
OUT="$TMP/out1"
"$KERNELBOT" optimize "$P" --proposer llm --config "$TMP/one.yml" --budget 3 $FAST \
	--out "$OUT" --json >"$TMP/one.out" 2>"$TMP/one.err"
st=$?
check "1: a verified kernel: exit 0 ($st)" test "$st" -eq 0
S="$OUT/summary.json"
check_eq "1: three candidates, the budget's stop" \
	"$(json_get "$S" '(d["candidates_evaluated"], d["stop_reason"], d["status"] in ("improved", "not_faster"))')" \
	"(3, 'budget:candidates', True)"
check_eq "1: compile error, variant mismatch, correct; fixes of their parents" \
	"$(json_get "$OUT/history.json" '[(c["proposer"], c["op"], c["status"], (c["parents"] or [-1])[0]) for c in d["candidates"]]')" \
	"[('llm', 'seed', 'compile_error', -1), ('llm', 'fix', 'mismatch', 0), ('llm', 'fix', 'correct', 1)]"
check_eq "1: the prompt's IR has the variants' shapes, not their graphs" \
	"$(prompts "$TMP/one.log" '("variant_graphs" in p[0], "\"variants\"" in p[0])')" "(False, True)"
check_eq "1: the scripted fix is best/kernel.c" "$(head -n 1 "$OUT/best/kernel.c")" "/* fixed: every row of every shape */"
check_eq "1: its confirmation is correct" "$(json_get "$OUT/best/result.json" 'd["correct"]')" True
check_eq "1: tokens and dollars in the summary" \
	"$(json_get "$S" '(d["spent"]["tokens"], "%.3f" % d["spent"]["dollars"], d["spent"]["malformed"])')" \
	"(4300, '0.043', 0)"
check_eq "1: the origins name the model and stage" \
	"$(json_get "$OUT/history.json" '[(c["origin"]["model"], c["origin"]["stage"]) for c in d["candidates"]]')" \
	"[('fake-gpt', 'translate'), ('fake-gpt', 'fix'), ('fake-gpt', 'fix')]"
DB="$TMP/data/kernelbot.db"
check_eq "1: every call in llm_calls" \
	"$(sqlite3 "$DB" "SELECT group_concat(stage || ':' || status, ' '), printf('%.3f', sum(cost)), sum(tokens_in + tokens_out) FROM llm_calls")" \
	"translate:ok fix:ok fix:ok|0.043|4300"

# ---- 2. the archive's kernel comes back in the next prompt ----
"$KERNELBOT" archive add "$OUT" --data-dir "$TMP/data" >"$TMP/add.out" 2>&1
check_eq "2: the run is archived" "$?" 0
cat >"$TMP/two.json" <<EOF
[{"match": "# Task: write kernel.c", "reply_file": "$F/fixed.md", "usage": [10, 10]}]
EOF
fakellm two "$TMP/two.json"
config "$TMP/two.yml"
"$KERNELBOT" optimize "$P" --proposer llm --config "$TMP/two.yml" --budget 1 $FAST \
	--out "$TMP/out2" >/dev/null 2>"$TMP/two.err"
check_eq "2: the translate prompt carries the archived example" \
	"$(prompts "$TMP/two.log" '[("## A solved problem like this one: " in x, "/* fixed: every row of every shape */" in x.split("## A solved problem")[1] if "## A solved problem" in x else False) for x in p]')" \
	"[(True, True)]"

# ---- 3. both: the compiler's kernels seed the LLM ----
cat >"$TMP/three.json" <<EOF
[{"match": "# Task: a faster kernel.c", "reply_file": "$F/rewrite.md", "usage": [10, 10]}]
EOF
fakellm three "$TMP/three.json"
config "$TMP/three.yml"
OUT3="$TMP/out3"
# with the problem's shape variants: the compiler's seed holds a version each
"$KERNELBOT" optimize "$P" --proposer both --config "$TMP/three.yml" --per-generation 2 --generations 2 \
	$FAST --out "$OUT3" >/dev/null 2>"$TMP/three.err"
check_eq "3: generation 0 is the compiler's, then the LLM rewrites its best" \
	"$(json_get "$OUT3/history.json" '[(c["generation"], c["proposer"], c["op"]) for c in d["candidates"] if c["proposer"] == "llm" or c["generation"] == 0]')" \
	"[(0, 'compiler', 'seed'), (1, 'llm', 'rewrite')]"
check_eq "3: the LLM's parent is a compiler kernel" \
	"$(json_get "$OUT3/history.json" '[d["candidates"][c["parents"][0]]["proposer"] for c in d["candidates"] if c["proposer"] == "llm"]')" \
	"['compiler']"
check_eq "3: one rewrite, its prompt holding the compiler's kernel" \
	"$(prompts "$TMP/three.log" '(sum("# Task: a faster" in x for x in p), "# Task: a faster" in p[0], open(sys.argv[1].replace("three.log", "out3/candidates/0000.c")).read() in p[0])')" \
	"(1, True, True)"
check_eq "3: stopped by --generations" "$(json_get "$OUT3/summary.json" 'd["stop_reason"]')" "budget:generations"
check_eq "3: the compiler's seed has a version per input-shape set, and is correct" \
	"$(grep -cE '^kb_v[0-9]+_forward\(' "$OUT3/candidates/0000.c") $(json_get "$OUT3/history.json" 'd["candidates"][0]["status"]')" \
	"3 correct"

# ---- 4. budgets: tokens (budgets.tokens), dollars (budgets.llm_usd) ----
cat >"$TMP/four.json" <<EOF
[{"match": "", "reply_file": "$F/fixed.md", "usage": [800, 400]}]
EOF
fakellm four "$TMP/four.json"
config "$TMP/four.yml"
printf 'budgets:\n  tokens: 1000\n' >>"$TMP/four.yml"
"$KERNELBOT" optimize "$P" --proposer llm --config "$TMP/four.yml" $FAST --out "$TMP/out4" \
	>/dev/null 2>"$TMP/four.err"
check_eq "4: a token budget stops the run" \
	"$(json_get "$TMP/out4/summary.json" '(d["stop_reason"], d["spent"]["tokens"], d["candidates_evaluated"])')" \
	"('budget:tokens', 1200, 1)"
config "$TMP/five.yml"
printf 'budgets:\n  llm_usd: 0.01\n' >>"$TMP/five.yml"
"$KERNELBOT" optimize "$P" --proposer llm --config "$TMP/five.yml" $FAST --out "$TMP/out5" \
	>/dev/null 2>"$TMP/five.err"
check_eq "4: a dollar budget stops the run" \
	"$(json_get "$TMP/out5/summary.json" '(d["stop_reason"], "%.3f" % d["spent"]["dollars"], d["candidates_evaluated"])')" \
	"('budget:dollars', '0.012', 1)"
check_eq "4: one request per run" "$(wc -l <"$TMP/four.log" | tr -d ' ')" 2
config "$TMP/six.yml"
printf 'budgets:\n  dollars: 1\n  llm_usd: 2\n' >>"$TMP/six.yml"
"$KERNELBOT" optimize "$P" --proposer llm --config "$TMP/six.yml" $FAST --out "$TMP/out6" \
	>/dev/null 2>"$TMP/six.err"
check_eq "4: both spellings of a budget: exit 2" "$?" 2
check_match "4: ... naming the line" "$(cat "$TMP/six.err")" "six.yml:1[0-9]: budgets.(dollars|llm_usd): give budgets.dollars or budgets.llm_usd, not both"

# ---- 5. no models ----
printf 'data_dir: %s\n' "$TMP/data" >"$TMP/none.yml"
"$KERNELBOT" optimize "$P" --proposer both --config "$TMP/none.yml" $FAST --out "$TMP/out7" \
	>"$TMP/none.out" 2>"$TMP/none.err"
check_eq "5: no llm.models: exit 2" "$?" 2
check_match "5: ... saying what is missing" "$(cat "$TMP/none.err")" \
	"--proposer compiler,llm needs llm.models in the server config"

# ---- the key is nowhere ----
check "the key is in no output or log" sh -c "! grep -rq -e '$KEY' '$TMP'/*.err '$TMP'/*.out"
check "the key is in no --out file" sh -c "! grep -rq -e '$KEY' '$TMP'/out1 '$TMP'/out2 '$TMP'/out3 '$TMP'/out4"
check_eq "the key is in no request body, only its auth header" \
	"$(cat "$TMP"/one.log "$TMP"/two.log "$TMP"/three.log "$TMP"/four.log | $PY -c 'import json,sys; r=[json.loads(l) for l in sys.stdin]; print(any(sys.argv[1] in x["raw_body"] for x in r), all(x["auth"] == "Bearer " + sys.argv[1] for x in r))' "$KEY")" \
	"False True"
check "the key is not in the store" sh -c "! sqlite3 '$DB' .dump | grep -q -e '$KEY'"
t_done
