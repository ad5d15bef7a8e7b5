#!/bin/sh
# make test-gpu: the coordinator with a local GPU runner, on a GPU host.
# serve (runners: auto) starts one runner per GPU; each registers with its
# architecture (sm_XY from the compute capability) and device name; a
# push's task runs with --backend cuda --device N (the optimize stand-in
# of tests/fixtures/coord, so this checks the coordinator and runner, not
# the search), and the PR carries a kernel.cu. Needs python3, git, curl,
# openssl. KERNELBOT as in eval-gpu.sh.
set -u
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
. "$ROOT/tests/gpu/lib.sh"
export KERNELBOT KB_ROOT="$ROOT"
need_gpu coord-gpu
. "$ROOT/tests/e2e/lib.sh"
t_init coord-gpu
. "$ROOT/tests/e2e/lib-coord.sh"
coord_repo
coord_config "$TMP/kb.yml" "$(local_forge)"
sed -i 's/^  local: 1$/  local: auto/' "$TMP/kb.yml"
kb_serve_start "$TMP/kb.yml" || t_done
gh_push 0000000000000000000000000000000000000000 "$SHA0"
check_eq "push accepted" "$HTTP_CODE" 202
# say why, and stop: nothing after this can pass without the job
diagnose() {
	echo "# $1; the client said: $(cat "$TMP/.curl.err" 2>/dev/null)"
	echo "# serve.log (last 40 lines):"
	tail -n 40 "$TMP/serve.log" | sed 's/^/#   /'
}
[ "$HTTP_CODE" = 202 ] || { diagnose "push not accepted"; t_done; }
job_state() {
	"$KERNELBOT" jobs --data-dir "$TMP/data" --json | $PY -c 'import json,sys; print(json.load(sys.stdin)[0]["state"])'
}
job_done() { [ "$(job_state)" = done ]; }
check "the job is done" wait_for 120 job_done
job_done || diagnose "job not done: $(job_state 2>&1)"
cc=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader -i 0 | tr -d ' .')
arch=$("$KERNELBOT" jobs --data-dir "$TMP/data" --json | $PY -c 'import json,sys; print(" ".join(sorted(set(t["arch"] or "" for t in json.load(sys.stdin)[0]["tasks"]))))')
check_eq "the tasks ran on the GPU's architecture" "$arch" "sm_$cc"
check_match "optimize got --backend cuda" "$(cat "$STANDIN_LOG")" "^models/fast.py cuda "
check "the PR carries a CUDA kernel" sh -c "git -C '$TMP/origin.git' ls-tree -r --name-only kernelbot/models-fast | grep -q '^kernels/models-fast/kernel.cu$'"
kb_serve_stop
check_eq "serve stops with its GPU runners" "$KB_STATUS" 0
t_done
