#!/bin/sh
# t7010: runners' work directories. Two local CPU runners get names and
# work areas of their own (DATA_DIR/runners/NAME, locked: a second runner
# of the same name is refused, not let in to clobber it); a task's work
# (runners/NAME/task-T-A) is removed once its results are stored in
# DATA_DIR/results/, a failed one's stays for runners.work_keep_failed_h;
# after a crash, the sweep at the next start removes the leftovers that
# nothing needs (a stored task's work, an old failed attempt's), never a
# young failed one's.
. "$KB_ROOT/tests/e2e/lib.sh"
t_init t7010
. "$KB_ROOT/tests/e2e/lib-coord.sh"
coord_repo
module "$TMP/w/models/broken.py" "# standin: crash"
coord_commit "a third module, which crashes"
LOCAL_RUNNERS=2 coord_config "$TMP/kb.yml" "$(local_forge)" "  work_keep_failed_h: 24"
kb_serve_start "$TMP/kb.yml" || t_done
R="$TMP/data/runners"

check "both runners register" wait_sql 30 "SELECT count(*) FROM runners" 2
names=$(db "SELECT name FROM runners ORDER BY name" | tr '\n' ' ')
N1=$(db "SELECT name FROM runners ORDER BY name LIMIT 1")
check_match "with names of their own" "$names" "^[^ ]+-cpu [^ ]+-cpu1 $"
for n in $names; do
	check "runner $n has its own locked work area" test -f "$R/$n/lock"
done
"$KERNELBOT" runner --cpu --name "$N1" --data-dir "$TMP/data" --once >"$TMP/dup.out" 2>&1
check_eq "a second runner of the same name is refused" "$?" 1
check_match "saying why" "$(cat "$TMP/dup.out")" "a runner named $N1 is already running.*own --name"

gh_push 0000000000000000000000000000000000000000 "$SHA"
check "the job ends" wait_sql 60 "SELECT state FROM jobs WHERE id = 1" done
check_eq "three tasks: two done, one failed" \
    "$(db "SELECT module, state FROM tasks WHERE job = 1 ORDER BY module" | tr '\n' ' ')" \
    "models/broken.py|failed models/fast.py|done models/same.py|done "
for id in $(db "SELECT id FROM tasks WHERE job = 1 AND state = 'done'"); do
	check_match "task $id's results are in DATA_DIR/results" \
	    "$(db "SELECT out_dir FROM tasks WHERE id = $id")" "^$TMP/data/results/job-1/task-$id-1\$"
	check "task $id's summary is there" sh -c "test -s $TMP/data/results/job-1/task-$id-1/*/summary.json"
	check "task $id's work directory is gone" sh -c "! ls -d $R/*/task-$id-* 2>/dev/null"
done
FAILED=$(db "SELECT id FROM tasks WHERE module = 'models/broken.py'")
check "the failed task's work directory stays" sh -c "ls -d $R/*/task-$FAILED-* >/dev/null 2>&1"
check "the job's checkout is gone, and its directory" test ! -e "$TMP/data/work/job-1"
check "the improved module's PR was built from the stored results" test -s "$TMP/forge/prs/models-fast.md"

# --- a crash leaves work behind; the sweep at the next start removes what nothing needs ---
kb_serve_stop KILL
DONE=$(db "SELECT id FROM tasks WHERE module = 'models/fast.py'")
mkdir -p "$R/$N1/task-$DONE-1/out" "$R/$N1/task-999-1/tmp" "$R/$N1/task-998-1"
touch -d '3 days ago' "$R/$N1/task-999-1"
kb_serve_start "$TMP/kb.yml" || t_done
check "the sweep runs at the start" wait_sql 30 \
    "SELECT state || ' ' || result FROM cleanups WHERE kind = 'work' ORDER BY id DESC LIMIT 1" "done removed 2"
check "a stored task's leftover work is removed" test ! -e "$R/$N1/task-$DONE-1"
check "an old attempt nothing knows is removed" test ! -e "$R/$N1/task-999-1"
check "a young one is kept" test -d "$R/$N1/task-998-1"
check "the failed task's work is still kept" sh -c "ls -d $R/*/task-$FAILED-* >/dev/null 2>&1"
check "the runners' areas stay" test -f "$R/$N1/lock"
kb_serve_stop
t_done
