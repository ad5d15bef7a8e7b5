#!/bin/sh
# t5000: kernelbot optimize on the CPU backend, through the real evaluator:
# every file of the --out layout, the --json keys, the history's parents,
# best/result.json correct, REPORT.md's table and chart; a problem that
# does not trace is "unsupported"; one with shape variants gets a kernel
# version per variant; a repository directory gets one folder
# per module; usage errors exit 2.
. "$KB_ROOT/tests/e2e/lib.sh"
t_init t5000
PY=/usr/bin/python3
export KERNELBOT_PYTHON=${KERNELBOT_PYTHON:-/usr/bin/python3}
FIX="$KB_ROOT/tests/fixtures"
P="$FIX/optimize/mm_colcenter.py"
# Small timing so the test stays short; the loop is what is tested here.
FAST="--backend cpu --trials 2 --confirm-trials 3 --rounds 3 --reps 3 --warmup 1 --timeout 60 --seed 7"


# --- one problem, two generations of four ---------------------------------
OUT="$TMP/out"
"$KERNELBOT" optimize "$P" --budget 8 --per-generation 4 $FAST --out "$OUT" --json \
	>"$TMP/sum.json" 2>"$TMP/err"
check_eq "a verified kernel: exit 0" "$?" 0
check_match "progress on stderr, one line per generation" "$(cat "$TMP/err")" \
	"generation 1: 4 evaluated, [0-9] correct, best [0-9.e+-]+ ms"
check_eq "--json prints summary.json" "$(json_get "$TMP/sum.json" 'd == json.load(open(sys.argv[1].replace("sum.json", "out/summary.json")))')" True
S="$OUT/summary.json"
check_eq "summary keys" "$(json_get "$S" 'sorted(d)')" \
	"['backend', 'best', 'candidates_evaluated', 'generations', 'problem', 'spent', 'status', 'stop_reason']"
check_eq "status improved or not_faster" "$(json_get "$S" 'd["status"] in ("improved", "not_faster")')" True
check_eq "improved only with the interval above 1" \
	"$(json_get "$S" '(d["status"] == "improved") == (d["best"]["speedup"]["eager"] > 1 and d["best"]["speedup"]["eager_ci95"][0] > 1)')" True
check_eq "8 candidates in 2 generations, stopped by the budget" \
	"$(json_get "$S" '(d["candidates_evaluated"], d["generations"], d["stop_reason"], d["backend"])')" \
	"(8, 2, 'budget:candidates', 'cpu')"
check_eq "best.path and speedup keys" "$(json_get "$S" '(d["best"]["path"], sorted(d["best"]["speedup"]))')" \
	"('best/kernel.c', ['compile', 'compile_ci95', 'eager', 'eager_ci95'])"
check_eq "spent keys" "$(json_get "$S" 'sorted(d["spent"])')" \
	"['candidates', 'dollars', 'generations', 'gpu_s', 'malformed', 'tokens', 'wall_s']"
check "best/kernel.c" test -s "$OUT/best/kernel.c"
check_eq "summary keeps the confirmation's seed, fresh, and its environment" \
	"$(json_get "$S" '(d["best"]["seed"] == json.load(open(sys.argv[1].replace("summary.json", "best/result.json")))["seed"], d["best"]["environment"]["seed"] == d["best"]["seed"], d["best"]["environment"]["seed_given"])')" \
	"(True, True, False)"
check_eq "the environment has the confirmation's flags" \
	"$(json_get "$S" 'd["best"]["environment"]["eval_args"][:2] + d["best"]["environment"]["eval_args"][4:]')" \
	"['--backend', 'cpu', '--trials', '3', '--rounds', '3', '--reps', '3', '--warmup', '1']"
check_eq "best/result.json is a correct verdict on best/kernel.c" \
	"$(json_get "$OUT/best/result.json" '(d["correct"], d["status"], d["candidate"].endswith("best/kernel.c"))')" \
	"(True, 'correct', True)"
# A working set of under 1 MiB fits in any last-level cache: the bandwidth
# floor does not apply, so no run here depends on a copy's timing. An
# honest kernel gets no flag of the timing's integrity; suspicious_speedup
# may stand (over 10x eager is honest where eager's per-op dispatch
# dominates, as on a small CPU problem on a loaded host: a CI run saw it).
check_eq "the bandwidth floor does not apply to a working set that fits in the cache" \
	"$(json_get "$OUT/best/result.json" '[("does not apply" in c["detail"], c["passed"]) for c in d["checks"] if c["name"] == "bandwidth_floor"] + [[f for f in d["flags"] if f in ("below_bandwidth_floor", "side_stream", "untimed_work", "stale_inputs")] and (d["flags"], [c["name"] + ": " + c["detail"] for c in d["checks"] if not c["passed"]])]')" \
	"[(True, True), []]"
check_eq "the confirmation ran --confirm-trials (3 trials)" \
	"$(json_get "$OUT/best/result.json" '"(3 trials x 1 shapes)" in str(d["checks"])')" True
check "problem.py is the problem" cmp -s "$P" "$OUT/problem.py"
check_eq "8 candidate files" "$(ls "$OUT/candidates" | wc -l | tr -d ' ')" 8
H="$OUT/history.json"
check_eq "history keys" "$(json_get "$H" 'sorted(d)')" \
	"['backend', 'budget', 'candidates', 'device', 'generations', 'problem', 'problem_sha', 'spent', 'stop_reason']"
check_eq "problem_sha is the problem's" "$(json_get "$H" 'd["problem_sha"]')" \
	"$(sha256sum "$P" | cut -d' ' -f1)"
check_eq "generation records" "$(json_get "$H" '[(g["generation"], g["evaluated"]) for g in d["generations"]]')" \
	"[(0, 4), (1, 4)]"
check_eq "candidate keys" "$(json_get "$H" 'sorted(set(k for c in d["candidates"] for k in c) - {"speedup_eager", "error", "excluded"})')" \
	"['correct', 'file', 'generation', 'id', 'ms', 'op', 'origin', 'parents', 'proposer', 'source_sha', 'status']"
check_eq "every file's SHA-256 is its source_sha" \
	"$(json_get "$H" 'all(__import__("hashlib").sha256(open(sys.argv[1].replace("history.json", c["file"]), "rb").read()).hexdigest() == c["source_sha"] for c in d["candidates"])')" True
check_eq "no source evaluated twice" "$(json_get "$H" 'len(set(c["source_sha"] for c in d["candidates"])) == len(d["candidates"])')" True
check_eq "candidate 0 is the default schedule's seed" \
	"$(json_get "$H" '(d["candidates"][0]["op"], d["candidates"][0]["parents"], d["candidates"][0]["origin"]["schedule"]["cuts"], d["candidates"][0]["origin"]["schedule"]["cpu_tile"])')" \
	"('seed', [], '0', 64)"
check_eq "parents are earlier candidates" \
	"$(json_get "$H" 'all(p < c["id"] and d["candidates"][p]["generation"] < c["generation"] for c in d["candidates"] for p in c["parents"])')" True
check_eq "the best is the fastest correct candidate recorded" \
	"$(json_get "$H" 'min((c["ms"], c["id"]) for c in d["candidates"] if c["correct"])[1] == json.load(open(sys.argv[1].replace("history.json", "summary.json")))["best"]["candidate"]')" True
R=$(cat "$OUT/REPORT.md")
check_match "REPORT.md: the speedup table" "$R" '^\| best \(candidate [0-9]+\) \| [0-9.e+-]+ \|'
check_match "REPORT.md: eager row" "$R" '^\| eager PyTorch \| [0-9.e+-]+ \|'
check_match "REPORT.md: torch.compile row" "$R" '^\| torch.compile \|'
check_match "REPORT.md: a mermaid chart" "$R" '^```mermaid$'
check_match "REPORT.md: best time per generation" "$R" '^    line \[[0-9.e+-]+, [0-9.e+-]+\]$'
check_match "REPORT.md: why it stopped" "$R" 'stopped: budget:candidates'
check_match "REPORT.md: the best schedule" "$R" 'Origin: `\{"schedule":'

# --- a problem that does not trace ----------------------------------------
"$KERNELBOT" optimize "$FIX/bad/unsupported_op.py" $FAST --out "$TMP/u" --json >"$TMP/u.json" 2>/dev/null
check_eq "unsupported: exit 1" "$?" 1
check_eq "status unsupported, nothing evaluated, the reason given" \
	"$(json_get "$TMP/u.json" '(d["status"], d["best"], d["candidates_evaluated"], d["error"].startswith("unsupported: ") and "sort" in d["error"])')" \
	"('unsupported', None, 0, True)"
check "REPORT.md even then" grep -q "No verified kernel" "$TMP/u/REPORT.md"

# --- an op the compiler refuses ---------------------------------------------
"$KERNELBOT" optimize "$FIX/optimize/half_scale.py" $FAST --out "$TMP/hs" --json >"$TMP/hs.json" 2>/dev/null
check_eq "compiler refusal: exit 1" "$?" 1
check_eq "status unsupported with the compiler's message" \
	"$(json_get "$TMP/hs.json" '(d["status"], d["error"], d["candidates_evaluated"])')" \
	"('unsupported', 'unsupported: dtype float16 (input x)', 0)"

# --- shape variants: a kernel version per input-shape set ------------------
"$KERNELBOT" optimize "$FIX/eval/scale_bias.py" --budget 2 $FAST --out "$TMP/sv" --json >"$TMP/sv.json" 2>/dev/null
check_eq "shape variants: exit 0" "$?" 0
check_eq "a correct best kernel" "$(json_get "$TMP/sv/best/result.json" 'd["correct"]')" True
check_eq "the evaluator checked it on both declared variants" \
	"$(json_get "$TMP/sv/best/result.json" '[c["detail"] for c in d["checks"] if c["name"] == "variants" and c["passed"]]')" \
	"['2 declared shape variants checked']"
check_eq "three versions (64, 7 and 129 rows) behind one entry" \
	"$(grep -cE '^kb_v[0-9]+_forward\(' "$TMP/sv/best/kernel.c") $(grep -c '^kernelbot_forward(' "$TMP/sv/best/kernel.c")" "3 1"

# --- a second run into the same DIR replaces the first; human output --------
# (the budget comes from --config's budgets section this time)
printf 'budgets:\n  candidates: 1\n  wall_minutes: 30\n' >"$TMP/budget.yml"
"$KERNELBOT" optimize "$FIX/optimize/col_center.py" --config "$TMP/budget.yml" $FAST --out "$OUT" \
	>"$TMP/human" 2>/dev/null
check_eq "rerun into a used DIR: exit 0" "$?" 0
check_match "human summary: status, best, stop reason; budgets.candidates applied" "$(cat "$TMP/human")" \
	'col_center.py: (improved|not_faster), best [0-9.e+-]+ ms.*\(1 candidates, 1 generations, budget:candidates\)'
check_eq "the budget in history.json" "$(json_get "$OUT/history.json" '(d["budget"]["candidates"], d["budget"]["wall_s"])')" "(1, 1800.0)"
check_eq "the old run's candidates are gone" "$(ls "$OUT/candidates")" "0000.c"
check "problem.py is the new problem" cmp -s "$FIX/optimize/col_center.py" "$OUT/problem.py"
mkdir -p "$TMP/foreign" && echo keep >"$TMP/foreign/notes.txt"
"$KERNELBOT" optimize "$FIX/optimize/col_center.py" --budget 1 $FAST --out "$TMP/foreign" >/dev/null 2>"$TMP/err"
check_eq "a non-empty DIR that holds no run: exit 2" "$?" 2
check_match "and says why" "$(cat "$TMP/err")" "not empty and holds no kernelbot optimize run"
check "its files are left alone" test -f "$TMP/foreign/notes.txt"

# --- a repository ----------------------------------------------------------
mkdir -p "$TMP/repo/models" "$TMP/repo/.git"
cp "$FIX/optimize/col_center.py" "$TMP/repo/models/Center.py"
printf 'def helper():\n    return 1\n' >"$TMP/repo/models/util.py"
cp "$FIX/optimize/col_center.py" "$TMP/repo/.git/hidden.py"
"$KERNELBOT" optimize "$TMP/repo" --budget 1 $FAST --out "$TMP/r" --json >"$TMP/r.json" 2>"$TMP/r.err"
check_eq "repository: exit 0" "$?" 0
# A correct kernel: improved or not faster, or on a host busy enough to
# trip a timing check, correct and flagged for review (what this part
# tests is the repository's plumbing, not the verdict).
check_eq "one summary per module, with module and slug" \
	"$(json_get "$TMP/r.json" '[(s["module"], s["slug"], s["status"] if s["status"] not in ("improved", "not_faster", "needs_review") else "correct") for s in d]')" \
	"[('models/Center.py', 'models-center', 'correct')]"
check "DIR/<slug>/summary.json" test -s "$TMP/r/models-center/summary.json"
check "DIR/<slug>/best/kernel.c" test -s "$TMP/r/models-center/best/kernel.c"
"$KERNELBOT" optimize "$TMP/repo" models/util.py $FAST --out "$TMP/r2" >/dev/null 2>"$TMP/err"
check_eq "a PATH that is no module: exit 2" "$?" 2
check_match "and says so" "$(cat "$TMP/err")" "models/util.py: not a module"
"$KERNELBOT" optimize "$TMP/repo" models/Center.py --class Other $FAST --out "$TMP/r4" >/dev/null 2>"$TMP/err"
check_eq "--class naming no module's class: exit 2" "$?" 2
check_match "and says which" "$(cat "$TMP/err")" "no module of class Other in the files named"
printf 'version: 1\nmodules:\n  - path: models/Center.py\n    class: Nope\n' >"$TMP/repo/.kernelbot.yml"
"$KERNELBOT" optimize "$TMP/repo" $FAST --out "$TMP/r3" >/dev/null 2>"$TMP/err"
check_eq ".kernelbot.yml naming a missing class: exit 2" "$?" 2
check_match "and the message names the class" "$(cat "$TMP/err")" "does not define class Nope"

# --- the evaluator cannot run (no GPU here for --backend cuda) --------------
if ! command -v nvidia-smi >/dev/null 2>&1 || ! nvidia-smi -L >/dev/null 2>&1; then
	"$KERNELBOT" optimize "$FIX/optimize/col_center.py" --budget 4 $FAST --backend cuda --out "$TMP/cu" \
		--json >"$TMP/cu.json" 2>/dev/null
	check_eq "cuda without a GPU: exit 1" "$?" 1
	check_eq "status error, stop_reason error, the evaluator's message" \
		"$(json_get "$TMP/cu.json" '(d["status"], d["stop_reason"], "no GPU" in d["error"])')" \
		"('error', 'error', True)"
	check_eq "no unevaluated source left in candidates/" "$(ls "$TMP/cu/candidates" | wc -l | tr -d ' ')" 0
fi

# --- usage -----------------------------------------------------------------
"$KERNELBOT" optimize "$P" --proposer llm --out "$TMP/x" >/dev/null 2>"$TMP/err"
check_eq "--proposer llm without llm.models: exit 2" "$?" 2
check_match "with a clear message" "$(cat "$TMP/err")" "--proposer llm needs llm.models in the server config"
"$KERNELBOT" optimize "$P" --proposer magic >/dev/null 2>&1
check_eq "--proposer magic: exit 2" "$?" 2
"$KERNELBOT" optimize "$P" --backend tpu >/dev/null 2>&1
check_eq "--backend tpu: exit 2" "$?" 2
"$KERNELBOT" optimize "$P" --budget 0 >/dev/null 2>&1
check_eq "--budget 0: exit 2" "$?" 2
"$KERNELBOT" optimize "$TMP/nope.py" --backend cpu >/dev/null 2>&1
check_eq "missing problem: exit 2" "$?" 2
"$KERNELBOT" optimize "$P" extra.py --backend cpu >/dev/null 2>&1
check_eq "PATH after a problem file: exit 2" "$?" 2
printf 'budgets:\n  candidates: lots\n' >"$TMP/bad.yml"
"$KERNELBOT" optimize "$P" --config "$TMP/bad.yml" --backend cpu >/dev/null 2>"$TMP/err"
check_eq "a bad budgets key in --config: exit 2" "$?" 2
check_match "named with its line" "$(cat "$TMP/err")" "bad.yml:2: budgets.candidates"
t_done
