#!/bin/sh
# t7008: a repository's .kernelbot.yml budget bounds its jobs' tasks,
# within the server's budgets:. The real `kernelbot optimize` runs (no
# stand-in) on examples/repo/models/softmax.py, whose search with these
# settings evaluates 14 candidates before it converges when let; the
# server allows 16 candidates, the repository asks for 3: the task's
# summary says 3 were evaluated and the candidates budget stopped it.
. "$KB_ROOT/tests/e2e/lib.sh"
t_init t7008
. "$KB_ROOT/tests/e2e/lib-coord.sh"
export KERNELBOT_PYTHON="$PY" KERNELBOT_CACHE="$TMP/cache" OMP_NUM_THREADS=1
git init -q --bare "$TMP/origin.git"
git init -q -b main "$TMP/w"
mkdir -p "$TMP/w/models"
cp "$KB_ROOT/examples/repo/models/softmax.py" "$TMP/w/models/softmax.py"
printf 'version: 1\nbudget:\n  candidates: 3\n' >"$TMP/w/.kernelbot.yml"
git -C "$TMP/w" add -A && git -C "$TMP/w" commit -q -m "a module and a budget"
git -C "$TMP/w" remote add origin "file://$TMP/origin.git"
git -C "$TMP/w" push -q origin main
SHA0=$(git -C "$TMP/w" rev-parse HEAD)

STANDIN=""
coord_config "$TMP/kb.yml" "$(local_forge)" '  optimize_args: [--per-generation, "4", --trials, "2", --confirm-trials, "2",
                  --rounds, "3", --reps, "3", --warmup, "1", --seed, "11"]
budgets:
  candidates: 16'
kb_serve_start "$TMP/kb.yml" || t_done
gh_push 0000000000000000000000000000000000000000 "$SHA0"
check_eq "push accepted" "$HTTP_CODE" 202
check "the job ends" wait_sql 240 "SELECT state FROM jobs WHERE id = 1" done
sum() {
	db "SELECT summary FROM tasks WHERE job = 1" | $PY -c 'import json,sys; d=json.load(sys.stdin); print(eval(sys.argv[1]))' "$1"
}
check_eq "the task finished" "$(db 'SELECT state FROM tasks WHERE job = 1')" done
check_eq "the repository's 3 candidates, not the server's 16" "$(sum 'd["candidates_evaluated"]')" 3
check_eq "the candidates budget stopped the search" "$(sum 'd["stop_reason"]')" "budget:candidates"
kb_serve_stop
t_done
