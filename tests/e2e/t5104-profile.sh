#!/bin/sh
# t5104: profile feedback from Nsight Compute (gpu/profile.h) with
# tests/fakes/fakencu standing in for ncu (it never runs its target; the
# CPU backend has no ncu anyway): `kernelbot profile` prints the paragraph
# and --json the figures and ncu's command line; no ncu, no counter
# permission, a hung ncu and an incorrect kernel give a reason and exit 1;
# `kernelbot optimize --proposer llm` with `profile: ncu` puts the
# paragraph into the stage 3 prompt and history.json, `profile: off` the
# timings paragraph, and a bad value is refused.
. "$KB_ROOT/tests/e2e/lib.sh"
. "$KB_ROOT/tests/e2e/lib-llm.sh"
t_init t5104
PY=/usr/bin/python3
export KERNELBOT_PYTHON=${KERNELBOT_PYTHON:-/usr/bin/python3}
P="$KB_ROOT/tests/fixtures/eval/scale_bias.py"
K="$KB_ROOT/tests/fixtures/exploits/cpu/correct.c"
F="$KB_ROOT/tests/fixtures/llm"

# fake_ncu NAME MODE: $TMP/NAME/ncu, the fake in MODE (the evaluator's
# sandbox shows the profiler's directory: the fake and its fixture live there)
fake_ncu() {
	mkdir -p "$TMP/$1"
	cp "$KB_ROOT/tests/fakes/fakencu" "$KB_ROOT/tests/fixtures/profile/ncu-raw.csv" "$TMP/$1/"
	cat >"$TMP/$1/ncu" <<EOF2
#!/bin/sh
exec $PY $TMP/$1/fakencu --fake-record $TMP/$1.argv --fake-mode $2 --fake-fixture $TMP/$1/ncu-raw.csv "\$@"
EOF2
	chmod +x "$TMP/$1/ncu"
}

# ---- 1. kernelbot profile ----
fake_ncu good csv
KERNELBOT_NCU="$TMP/good/ncu" "$KERNELBOT" profile "$P" "$K" --backend cpu >"$TMP/p1.out" 2>"$TMP/p1.err"
check_eq "1: exit 0 with a profile" "$?" 0
check_match "1: the paragraph names the longest kernel with its launches" "$(cat "$TMP/p1.out")" \
	'^ncu, one call: 2 kernels, 46.08 us on the GPU\..*`scale_bias_kernel` x2 40.96 us \(89%\): DRAM 1638 GB/s'
check_match "1: FP32 against the peak and where the peak comes from" "$(cat "$TMP/p1.out")" \
	'FP32 peak 59.3 TFLOP/s = 132 SMs x 128 lanes x 2 x 1.75 GHz.*FP32 205 GFLOP/s = 0.3% of peak'
check_match "1: occupancy with its limiter, top stalls" "$(cat "$TMP/p1.out")" \
	'occupancy 24% of 25% theoretical \(limit: registers\).*stalls barrier 52%, short_scoreboard 26%, long_scoreboard 17%'
check "1: under 800 characters or so" test "$(wc -c <"$TMP/p1.out")" -le 900
KERNELBOT_NCU="$TMP/good/ncu" "$KERNELBOT" profile "$P" "$K" --backend cpu --json >"$TMP/p1.json" 2>"$TMP/p1j.err"
check_eq "1: --json: status, source, kernels" \
	"$(json_get "$TMP/p1.json" '(d["status"], d["source"], [k["name"] for k in d["kernels"]], d["kernels"][0]["launches"])')" \
	"('ok', 'ncu', ['scale_bias_kernel', 'reduce_rows<float, 128>'], 2)"
check_eq "1: --json: figures" \
	"$(json_get "$TMP/p1.json" '(round(d["kernels"][0]["dram_gbs"], 1), d["kernels"][1]["occupancy_limiter"], d["kernels"][1]["registers_per_thread"], round(d["kernels"][0]["stalls"]["long_scoreboard"], 2), d["kernels"][1]["dram_pct_of_peak"])')" \
	"(1638.4, 'registers', 96, 30.5, None)"
check_eq "1: ncu's command: raw CSV, bounded launches, the metrics, a log file, then the worker" \
	"$(json_get "$TMP/p1.json" '(d["command"][1:4], "--launch-count" in d["command"], "smsp__average_warps_issue_stalled_long_scoreboard_per_issue_active.ratio" in d["command"][d["command"].index("--metrics")+1], d["command"][-2], d["command"][-1].endswith("profile.csv"))')" \
	"(['--csv', '--page', 'raw'], True, True, '--log-file', True)"
check_eq "1: the kernel was verified first (one trial, no baselines)" \
	"$(json_get "$TMP/p1.json" '(d["eval"]["status"], d["eval"]["speedup"] is None or d["eval"]["speedup"].get("eager") is None)')" \
	"('correct', True)"
if grep -q '"__worker"' "$TMP/good.argv"; then
	# unsandboxed, the fake could write its record (the sandbox hides it):
	# the worker's command line follows ncu's
	check_match "1: the fake saw the worker as its target" "$(grep '"__worker"' "$TMP/good.argv" | tail -n 1)" \
		'^\["--csv", "--page", "raw", .*"--log-file", "[^"]*profile.csv", "[^"]*kernelbot", "__worker", "--so"'
fi

# ---- 2. no profile: the reason, exit 1 ----
KERNELBOT_NCU="$TMP/absent/ncu" "$KERNELBOT" profile "$P" "$K" --backend cpu >"$TMP/p2.out" 2>"$TMP/p2.err"
check_eq "2: no ncu: exit 1" "$?" 1
check_match "2: ... saying why" "$(cat "$TMP/p2.err")" "no profile \(unavailable\): .*absent/ncu --version could not run"
fake_ncu perm perm
KERNELBOT_NCU="$TMP/perm/ncu" "$KERNELBOT" profile "$P" "$K" --backend cpu >"$TMP/p3.out" 2>"$TMP/p3.err"
check_eq "2: no counter permission: exit 1" "$?" 1
check_match "2: ... with ncu's own error" "$(cat "$TMP/p3.err")" "ERR_NVGPUCTRPERM"
fake_ncu hang hang
KERNELBOT_NCU="$TMP/hang/ncu" "$KERNELBOT" profile "$P" "$K" --backend cpu --timeout 3 >"$TMP/p4.out" 2>"$TMP/p4.err"
check_eq "2: a hung ncu: exit 1" "$?" 1
check_match "2: ... at its deadline" "$(cat "$TMP/p4.err")" "did not finish within 3 s"
fake_ncu empty empty
KERNELBOT_NCU="$TMP/empty/ncu" "$KERNELBOT" profile "$P" "$K" --backend cpu >"$TMP/p5.out" 2>"$TMP/p5.err"
check_match "2: no kernels profiled" "$(cat "$TMP/p5.err")" "No kernels were profiled"
KERNELBOT_NCU="$TMP/good/ncu" "$KERNELBOT" profile "$P" "$KB_ROOT/tests/fixtures/exploits/cpu/unwritten.c" \
	--backend cpu >"$TMP/p6.out" 2>"$TMP/p6.err"
check_eq "2: an incorrect kernel: exit 1" "$?" 1
check_match "2: ... is not profiled" "$(cat "$TMP/p6.err")" "no profile \(failed\): the kernel is not correct \(mismatch\)"
"$KERNELBOT" profile "$P" >/dev/null 2>"$TMP/p7.err"
check_eq "2: usage error: exit 2" "$?" 2

# ---- 3. the optimize prompt carries the paragraph ----
FAST="--backend cpu --trials 2 --confirm-trials 2 --rounds 2 --reps 3 --warmup 1 --timeout 60 --seed 5"
cat >"$TMP/rules.json" <<EOF
[{"match": "# Task: write kernel.c", "reply_file": "$F/fixed.md", "usage": [10, 10]},
 {"match": "# Task: a faster kernel.c", "reply_file": "$F/rewrite.md", "usage": [10, 10]}]
EOF
export T5104_KEY="sk-t5104-$$"
fakellm on "$TMP/rules.json"
llm_config "$TMP/on.yml" "$LLM_PORT" T5104_KEY "  proposals: 1" "  summarize_over: 0"
printf 'data_dir: %s\nprofile: ncu\n' "$TMP/data" >>"$TMP/on.yml"
KERNELBOT_NCU="$TMP/good/ncu" "$KERNELBOT" optimize "$P" --proposer llm --config "$TMP/on.yml" \
	--generations 2 $FAST --out "$TMP/out-on" >/dev/null 2>"$TMP/on.err"
check_eq "3: profile: ncu: the rewrite prompt carries ncu's paragraph" \
	"$(prompts "$TMP/on.log" '[("# Task: a faster" in x, "Profile of the fastest: ncu, one call: 2 kernels" in x, "`scale_bias_kernel` x2" in x) for x in p]')" \
	"[(False, False, False), (True, True, True)]"
check_eq "3: history.json: the profile and its source" \
	"$(json_get "$TMP/out-on/history.json" '[(c["id"], c.get("profile_source"), (c.get("profile") or "").startswith("ncu, one call")) for c in d["candidates"]]')" \
	"[(0, 'ncu', True), (1, None, False)]"

fakellm off "$TMP/rules.json"
llm_config "$TMP/off.yml" "$LLM_PORT" T5104_KEY "  proposals: 1" "  summarize_over: 0"
printf 'data_dir: %s\nprofile: off\n' "$TMP/data" >>"$TMP/off.yml"
KERNELBOT_NCU="$TMP/good/ncu" "$KERNELBOT" optimize "$P" --proposer llm --config "$TMP/off.yml" \
	--generations 2 $FAST --out "$TMP/out-off" >/dev/null 2>"$TMP/off.err"
check_eq "3: profile: off: the timings paragraph instead" \
	"$(prompts "$TMP/off.log" '[("Profile of the fastest: median " in x, "ncu, one call" in x) for x in p if "# Task: a faster" in x]')" \
	"[(True, False)]"
check_eq "3: history.json says so" \
	"$(json_get "$TMP/out-off/history.json" 'd["candidates"][0].get("profile_source")')" "timings"

llm_config "$TMP/bad.yml" "$LLM_PORT" T5104_KEY
printf 'data_dir: %s\nprofile: sometimes\n' "$TMP/data" >>"$TMP/bad.yml"
"$KERNELBOT" optimize "$P" --proposer llm --config "$TMP/bad.yml" $FAST --out "$TMP/out-bad" >/dev/null 2>"$TMP/bad.err"
check "3: a bad profile value fails the run" test "$?" -ne 0
check_match "3: ... naming the key and its line" "$(cat "$TMP/bad.err")" "bad.yml:1[0-9]: profile: must be auto, ncu or off"
t_done
