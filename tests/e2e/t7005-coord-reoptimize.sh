#!/bin/sh
# t7005: re-optimization. A schedule (`schedule: "* * * * *"`; on its
# first start serve counts the current minute, so it fires at once)
# queues a job for the modules that have kernels, for the architecture
# each has; the PR is brought up to date, not duplicated. A runner of a
# GPU architecture that no delivered module has kernels for gets the
# modules queued for that architecture.
. "$KB_ROOT/tests/e2e/lib.sh"
t_init t7005
. "$KB_ROOT/tests/e2e/lib-coord.sh"
coord_repo
export STANDIN_MS_FILE="$TMP/standin.ms"
coord_config "$TMP/kb.yml" "$(local_forge)"
kb_serve_start "$TMP/kb.yml" || t_done
gh_push 0000000000000000000000000000000000000000 "$SHA0"
wait_sql 60 "SELECT state FROM jobs WHERE id = 1" done
check_eq "the push delivered one module" "$(db 'SELECT slug, arch FROM delivered')" "models-fast|cpu"
check_eq "no schedule: no schedule clock" "$(db "SELECT count(*) FROM coord_clock WHERE name = 'schedule_minute'")" 0
kb_serve_stop

# The re-run finds a faster kernel (the stand-in's median, 0.5 ms so far),
# so the PR has something new to say: without a change in results, an
# identical re-run would leave it "unchanged" (or not, when the manifest's
# created_at second differs): the forge skips identical updates.
echo 0.4 >"$TMP/standin.ms"
coord_config "$TMP/kb.yml" "$(local_forge)" 'schedule: "* * * * *"'
kb_serve_start "$TMP/kb.yml" || t_done
check "the schedule fired" wait_sql 30 "SELECT count(*) FROM jobs WHERE trigger = 'schedule'" 1
check "the scheduled job is done" wait_sql 120 "SELECT state FROM jobs WHERE trigger = 'schedule'" done
check_eq "it re-optimized the delivered module for its arch" \
    "$(db "SELECT t.module, t.arch, t.state FROM tasks t JOIN jobs j ON j.id = t.job WHERE j.trigger = 'schedule'")" \
    "models/fast.py|cpu|done"
check_eq "the not-faster module has no kernels, so it was left alone" \
    "$(db "SELECT count(*) FROM tasks t JOIN jobs j ON j.id = t.job WHERE j.trigger = 'schedule' AND t.module = 'models/same.py'")" 0
check_eq "still one PR, updated in place with the new run" \
    "$($PY -c "import json; d=json.load(open('$TMP/forge/prs/models-fast.json')); print(d['number'], d['updates'], '2.50x' in d['body'])")" "1 1 True"
check_eq "no second PR" "$(ls "$TMP/forge/prs/" | grep -c '\.json$')" 1
check_eq "the minute it fired in is recorded" \
    "$(db "SELECT value > 0 FROM coord_clock WHERE name = 'schedule_minute'")" 1

# A GPU runner of a new architecture registers (by hand: this host has no GPU).
db "INSERT INTO runners (name, host, pid, gpu, backend, arch, device, registered, heartbeat)
    VALUES ('gpu-host-gpu0', 'gpu-host', 1, 0, 'cuda', 'sm_90', 'NVIDIA H200', 0, 0)"
check "the new arch queued a job" wait_sql 15 "SELECT count(*) FROM jobs WHERE trigger = 'arch'" 1
check_eq "for the delivered module, on sm_90 only" \
    "$(db "SELECT t.module, t.backend, t.arch FROM tasks t JOIN jobs j ON j.id = t.job WHERE j.trigger = 'arch'")" \
    "models/fast.py|any|sm_90"
check_eq "the CPU runner leaves the sm_90 task alone" \
    "$(db "SELECT t.state FROM tasks t JOIN jobs j ON j.id = t.job WHERE j.trigger = 'arch'")" queued
check_eq "an arch is looked at once" "$(db "SELECT count(*) FROM coord_clock WHERE name = 'arch_checked:sm_90'")" 1
kb_serve_stop
t_done
