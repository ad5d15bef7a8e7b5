#!/bin/sh
# kernelbot archive through the binary: add optimize directories (one
# problem and a repository's), list, show, search with FTS5 syntax in the
# query, similar (a new softmax variant finds the softmax before the conv),
# export/import round trip, a corrupt import, refusals and usage errors.
. "$KB_ROOT/tests/e2e/lib.sh"
t_init t6000
PY=/usr/bin/python3
FIX="$KB_ROOT/tests/fixtures"
MKRUN="$PY $KB_ROOT/tests/fakes/optimize_run.py"
D="--data-dir $TMP/data"

# json_get FILE EXPR: a Python expression over the document `d`.

"$KERNELBOT" archive list $D >"$TMP/out" 2>"$TMP/err"
check_eq "list without a store exits 1" "$?" 1
check_match "... saying there is none" "$(cat "$TMP/err")" "no kernelbot.db there"

# One optimize run per fixture problem, on sm_90.
ms=0.01
for p in 02_softmax_rows 03_layernorm 01_scale_gelu_bias 06_linear_relu_scale_residual \
    07_conv2d_relu_bias 11_causal_attention; do
	$MKRUN "$TMP/runs/$p" "$FIX/compiler/problems/$p.py" "$FIX/archive/kernels/$p.cu" \
		--ir "$FIX/ir/$p.json" --ms "$ms" || exit 1
	ms=$(echo "$ms" | awk '{print $1 * 2}')
done

"$KERNELBOT" archive add "$TMP/runs/02_softmax_rows" --job 7 --repo acme/model $D --json \
	>"$TMP/add.json" 2>"$TMP/err"
check_eq "add one run exits 0" "$?" 0
check_eq "... the best and the other correct candidate" "$(json_get "$TMP/add.json" 'd["added"]')" 2
n_ok=0
for p in 03_layernorm 01_scale_gelu_bias 06_linear_relu_scale_residual \
    07_conv2d_relu_bias 11_causal_attention; do
	"$KERNELBOT" archive add "$TMP/runs/$p" $D >/dev/null 2>>"$TMP/err" && n_ok=$((n_ok + 1))
done
check_eq "add five more runs" "$n_ok" 5
"$KERNELBOT" archive add "$TMP/runs/02_softmax_rows" $D --json >"$TMP/add.json"
check_eq "adding a run again: all duplicates" \
	"$(json_get "$TMP/add.json" '(d["added"], d["duplicates"])')" "(0, 2)"

# A repository's run: one directory per module slug; one made on sm_80.
$MKRUN "$TMP/repo/models-attn-1f2e" "$FIX/compiler/problems/10_logsumexp_rows.py" \
	"$FIX/archive/kernels/02_softmax_rows.cu" --ir "$FIX/ir/10_logsumexp_rows.json" \
	--cc 8.0 --extra 0 --module models/attn.py || exit 1
mkdir -p "$TMP/repo/models-mlp-9a9a"
echo '{"problem": "models/mlp.py", "status": "no_correct", "best": null, "backend": "cuda"}' \
	>"$TMP/repo/models-mlp-9a9a/summary.json"
"$KERNELBOT" archive add "$TMP/repo" $D --json >"$TMP/add.json" 2>"$TMP/err"
check_eq "add a repository's run exits 0" "$?" 0
check_eq "... two problems, one kernel, one without a verified kernel" \
	"$(json_get "$TMP/add.json" '(d["problems"], d["added"], d["skipped"])')" "(2, 1, 1)"

"$KERNELBOT" archive list $D --json >"$TMP/list.json"
check_eq "list --json: 13 kernels" "$(json_get "$TMP/list.json" 'len(d)')" 13
check_eq "... the repository's kernel on sm_80, named by its slug, with its module" \
	"$(json_get "$TMP/list.json" '[(e["problem"], e["module"]) for e in d if e["arch"] == "sm_80"]')" \
	"[('models-attn-1f2e', 'models/attn.py')]"
check_eq "... no big texts in a listing" "$(json_get "$TMP/list.json" 'd[0]["kernel"]')" None
"$KERNELBOT" archive list $D --arch sm_80 >"$TMP/out"
check_eq "list --arch sm_80: a header and one row" "$(wc -l <"$TMP/out")" 2
softmax_id=$(json_get "$TMP/list.json" \
	'[e["id"] for e in d if e["problem"] == "02_softmax_rows" and e["proposer"] == "compiler"][0]')

"$KERNELBOT" archive show "$softmax_id" $D >"$TMP/out"
check_eq "show exits 0" "$?" 0
check_match "show: the kernel source" "$(cat "$TMP/out")" "__global__ void softmax_rows"
check_match "show: the provenance" "$(cat "$TMP/out")" "repo: +acme/model"
"$KERNELBOT" archive show "$softmax_id" $D --json >"$TMP/show.json"
check_eq "show --json: every field" \
	"$(json_get "$TMP/show.json" '(d["ops"], d["arch"], d["job"], d["speedup_eager_lo"], d["ir"]["ir_version"])')" \
	"('softmax', 'sm_90', 7, 2.9, 1)"
"$KERNELBOT" archive show 99999 $D >/dev/null 2>"$TMP/err"
check_eq "show of a missing id exits 1" "$?" 1
check_match "... saying so" "$(cat "$TMP/err")" "no such kernel"
"$KERNELBOT" archive show abc $D >/dev/null 2>&1
check_eq "show abc is a usage error" "$?" 2

"$KERNELBOT" archive search softmax $D --json >"$TMP/search.json"
check_eq "search softmax exits 0" "$?" 0
check_eq "... the softmax first" "$(json_get "$TMP/search.json" 'd[0]["problem"]')" 02_softmax_rows
bad=""
for q in '"' '*' 'NEAR' 'NEAR(a b)' '(' 'softmax)' 'a"b' 'ops: x' '-x' '^y' 'AND' '{kernel}:' "'"; do
	"$KERNELBOT" archive search $D -- "$q" >/dev/null 2>"$TMP/err" || bad="$bad [$q]"
done
check_eq "queries with FTS5 syntax never fail" "$bad" ""
"$KERNELBOT" archive search '"softmax*' $D --json >"$TMP/search.json"
check_eq "... and are read as words" "$(json_get "$TMP/search.json" 'd[0]["problem"]')" 02_softmax_rows

"$KERNELBOT" archive similar "$FIX/archive/softmax_scaled.py" --ir "$FIX/archive/softmax_scaled.ir.json" \
	--arch sm_90 -k 6 $D --json >"$TMP/sim.json" 2>"$TMP/err"
check_eq "similar exits 0" "$?" 0
check_eq "a new softmax variant: the softmax first, then the attention" \
	"$(json_get "$TMP/sim.json" '[e["problem"] for e in d][:2]')" "['02_softmax_rows', '11_causal_attention']"
check_eq "... the softmax before the conv" \
	"$(json_get "$TMP/sim.json" '[e["problem"] for e in d].index("02_softmax_rows") < ([e["problem"] for e in d] + ["07_conv2d_relu_bias"]).index("07_conv2d_relu_bias")')" True
check_eq "... the fastest softmax kernel (the best, not the variant)" \
	"$(json_get "$TMP/sim.json" 'd[0]["id"]')" "$softmax_id"
"$KERNELBOT" archive similar "$FIX/compiler/problems/10_logsumexp_rows.py" \
	--ir "$FIX/ir/10_logsumexp_rows.json" --arch sm_80 -k 1 $D --json >"$TMP/sim.json"
check_eq "on sm_80 the sm_80 kernel of logsumexp is found" \
	"$(json_get "$TMP/sim.json" '(d[0]["problem"], d[0]["arch"])')" "('models-attn-1f2e', 'sm_80')"
"$KERNELBOT" archive similar "$FIX/archive/softmax_scaled.py" $D >"$TMP/out"
check_match "similar without an IR: a table" "$(sed -n 2p "$TMP/out")" "02_softmax_rows"

"$KERNELBOT" archive export "$TMP/a.jsonl" $D >"$TMP/out"
check_eq "export exits 0" "$?" 0
check_eq "... one line per kernel" "$(wc -l <"$TMP/a.jsonl")" 13
check "... no temporary file left" test ! -e "$TMP/a.jsonl.tmp"
"$KERNELBOT" archive import "$TMP/a.jsonl" --data-dir "$TMP/data2" --json >"$TMP/imp.json"
check_eq "import into a new store" "$(json_get "$TMP/imp.json" '(d["lines"], d["added"], d["duplicates"])')" "(13, 13, 0)"
"$KERNELBOT" archive import "$TMP/a.jsonl" --data-dir "$TMP/data2" >"$TMP/out"
check_match "import again: all duplicates" "$(cat "$TMP/out")" "13 kernels read, 0 added, 13 duplicates skipped"
"$KERNELBOT" archive export - --data-dir "$TMP/data2" >"$TMP/b.jsonl"
check "the round trip keeps every field (exports identical)" cmp -s "$TMP/a.jsonl" "$TMP/b.jsonl"

head -n 1 "$TMP/a.jsonl" >"$TMP/bad.jsonl"
echo '{"problem": "x", "kernel": "unterminated' >>"$TMP/bad.jsonl"
"$KERNELBOT" archive import "$TMP/bad.jsonl" --data-dir "$TMP/data3" >"$TMP/out" 2>"$TMP/err"
check_eq "a corrupt line: import exits 1" "$?" 1
check_match "... naming the file and line" "$(cat "$TMP/err")" "bad.jsonl:2: "
"$KERNELBOT" archive list --data-dir "$TMP/data3" --json >"$TMP/list3.json"
check_eq "... nothing imported" "$(json_get "$TMP/list3.json" 'len(d)')" 0
head -n 1 "$TMP/a.jsonl" | sed 's/"ms":[0-9.e-]*/"ms":-1/' >"$TMP/bad.jsonl"
"$KERNELBOT" archive import "$TMP/bad.jsonl" --data-dir "$TMP/data3" >/dev/null 2>"$TMP/err"
check_match "a negative time is refused" "$(cat "$TMP/err")" "bad.jsonl:1: ms: "

$MKRUN "$TMP/runs/wrong" "$FIX/compiler/problems/09_mean_tanh.py" "$FIX/archive/kernels/03_layernorm.cu" \
	--status mismatch || exit 1
"$KERNELBOT" archive add "$TMP/runs/wrong" $D >/dev/null 2>"$TMP/err"
check_eq "an unverified best: add exits 1" "$?" 1
check_match "... saying so" "$(cat "$TMP/err")" "not a verified kernel"
"$KERNELBOT" archive add "$TMP/nothing-here" --data-dir "$TMP/data4" >/dev/null 2>"$TMP/err"
check_eq "add of a missing directory exits 1" "$?" 1
check "... and creates no store" test ! -e "$TMP/data4"

printf 'data_dir: %s\n' "$TMP/data" >"$TMP/kernelbot.yml"
"$KERNELBOT" archive list --config "$TMP/kernelbot.yml" --json >"$TMP/list.json"
check_eq "--config: the config's data_dir" "$(json_get "$TMP/list.json" 'len(d)')" 13
"$KERNELBOT" archive frobnicate $D >/dev/null 2>&1
check_eq "an unknown command is a usage error" "$?" 2
"$KERNELBOT" archive list --config "$TMP/kernelbot.yml" $D >/dev/null 2>&1
check_eq "--config and --data-dir together is a usage error" "$?" 2


# llm.embeddings: the endpoint's cosine joins the score (fakellm's vectors:
# words hashed into buckets), the key goes in the header only, a 429 is
# retried, and each call is recorded in llm_calls with stage "embed".
cat >"$TMP/script.json" <<'EOF'
[{"provider": "embeddings", "times": 1, "status": 429, "headers": {"Retry-After": "0"}}]
EOF
$PY "$KB_ROOT/tests/fakes/fakellm.py" --port-file "$TMP/port" --log "$TMP/llm.log" \
	--script "$TMP/script.json" --embed-dim 32 2>"$TMP/fake.err" &
t_bg $!
wait_for 10 test -s "$TMP/port" || { fail "fake LLM started" "$(cat "$TMP/fake.err")"; t_done; }
cat >"$TMP/emb.yml" <<EOF
data_dir: $TMP/data
llm:
  backoff_ms: 10
  embeddings:
    base_url: http://127.0.0.1:$(cat "$TMP/port")/v1
    model: fake-embed
    api_key_env: KB_T6000_EMBED_KEY
    dim: 32
EOF
"$KERNELBOT" archive similar "$FIX/archive/softmax_scaled.py" --ir "$FIX/archive/softmax_scaled.ir.json" \
	--arch sm_90 -k 6 $D --json >"$TMP/sim0.json" 2>"$TMP/err"
KB_T6000_EMBED_KEY=sk-embed-t6000 "$KERNELBOT" archive similar "$FIX/archive/softmax_scaled.py" \
	--ir "$FIX/archive/softmax_scaled.ir.json" --arch sm_90 -k 6 --config "$TMP/emb.yml" --json \
	>"$TMP/sim1.json" 2>"$TMP/err"
check_eq "similar with llm.embeddings exits 0" "$?" 0
check_eq "... the softmax still first" "$(json_get "$TMP/sim1.json" 'd[0]["problem"]')" 02_softmax_rows
check_eq "... its score gains the embeddings' term" \
	"$($PY -c 'import json,sys; a=json.load(open(sys.argv[1]))[0]["score"]; b=json.load(open(sys.argv[2]))[0]["score"]; print(b > a)' "$TMP/sim0.json" "$TMP/sim1.json")" True
check_eq "... the endpoint got the query and each neighbour, after one 429" \
	"$($PY -c 'import json,sys; L=[json.loads(l) for l in open(sys.argv[1])]; print(L[0]["status"], all(e["path"] == "/v1/embeddings" and not e["violations"] for e in L), len(L) >= 3)' "$TMP/llm.log")" "429 True True"
check_eq "... the key in the Authorization header" \
	"$($PY -c 'import json,sys; print(set(json.loads(l)["auth"] for l in open(sys.argv[1])))' "$TMP/llm.log")" "{'Bearer sk-embed-t6000'}"
check "... and nowhere in the output" sh -c "! grep -q sk-embed-t6000 '$TMP/sim1.json' '$TMP/err'"
if command -v sqlite3 >/dev/null 2>&1; then
	check_match "... recorded in llm_calls" \
		"$(sqlite3 "$TMP/data/kernelbot.db" "SELECT stage || ':' || status FROM llm_calls ORDER BY id LIMIT 2" | tr '\n' ' ')" \
		"^embed:http_error embed:ok"
	check "... and not the key" sh -c "! grep -aq sk-embed-t6000 '$TMP/data/kernelbot.db'"
fi
sed -i 's/    dim: 32/    dim: 8/' "$TMP/emb.yml"
KB_T6000_EMBED_KEY=sk-embed-t6000 "$KERNELBOT" archive similar "$FIX/archive/softmax_scaled.py" \
	--arch sm_90 -k 2 --config "$TMP/emb.yml" --json >"$TMP/sim2.json" 2>"$TMP/err"
check_eq "a vector of another length: similar still answers" "$?" 0
check_match "... warning that embeddings were dropped" "$(cat "$TMP/err")" "32 values, llm.embeddings.dim says 8"
printf 'data_dir: %s\nllm:\n  embeddings: {model: m}\n' "$TMP/data" >"$TMP/bad.yml"
"$KERNELBOT" archive similar "$FIX/archive/softmax_scaled.py" --config "$TMP/bad.yml" >/dev/null 2>"$TMP/err"
check_eq "llm.embeddings without dim: exit 1" "$?" 1
check_match "... saying so" "$(cat "$TMP/err")" "llm.embeddings.dim: missing"

t_done
