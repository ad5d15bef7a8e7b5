#!/bin/sh
# t3006: attacks on the judge's file reading and on the sandbox's limits,
# each a CPU candidate next to a correct one that must stay correct:
# output files swapped for symlinks to a host file; code made at run time
# (W^X); a fault handler for work after the call returns (no signal
# handlers, no userfaultfd); a scratch filled without end (the disk quota); a build that never
# ends (the compile deadline); the limits echoed in the result.
. "$(dirname "$0")/eval-lib.sh"
P="$ROOT/tests/fixtures/eval/scale_bias.py"
X="$ROOT/tests/fixtures/exploits/cpu"

mkdir -p "$tmp/c"
# A host file of exactly the timed output's size (64 x 256 float32) full of
# 31337.25f (bytes 00 d4 f4 46): what the judge would report, were it to
# follow the candidate's symlink.
"$PY" -c 'import struct,sys; open(sys.argv[1],"wb").write(struct.pack("<f",31337.25)*64*256)' "$tmp/host.bin"
for f in correct.c symlink_swap.c jit_rwx.c jit_mprotect.c fault_handler.c got_rewrite.c \
    disk_fill.c compile_forever.c; do
	sed -e "s|@HOST_OUT_PATH@|$tmp/host.bin|" "$X/$f" >"$tmp/c/$f"
done

cd "$tmp/c"
# A cache of its own: the endless build's processes carry $tmp in their
# arguments, so any left behind can be found (a one-shot judge: no judge
# server keeps running in it afterwards).
export KERNELBOT_CACHE="$tmp/cache"
"$KERNELBOT" eval "$P" correct.c symlink_swap.c jit_rwx.c jit_mprotect.c fault_handler.c \
	got_rewrite.c disk_fill.c compile_forever.c \
	--backend cpu --json --trials 3 --rounds 2 --reps 3 --warmup 1 --timeout 8 \
	--mem 2G --disk 16M --compile-timeout 3 --no-judge-server \
	>"$tmp/out.json" 2>"$tmp/err"
st=$?
cd "$ROOT"
[ "$st" -eq 1 ] && ok "exit 1: evaluated, not all correct" || bad "exit $st: $(tail -5 "$tmp/err")"
expect "$tmp/out.json" correct.c 'r["status"] == "correct"' "the correct kernel in the same batch stays correct"
expect "$tmp/out.json" symlink_swap.c 'r["status"] in ("runtime_error", "mismatch")' "outputs swapped for symlinks: never correct"
expect "$tmp/out.json" symlink_swap.c '"31337" not in str(r)' "the host file's bytes are nowhere in the result"

# W^X: needs the worker's lockdown (the sandbox).
if [ "$SANDBOX" = 1 ]; then
	expect "$tmp/out.json" jit_rwx.c 'r["status"] == "runtime_error"' "a JIT through a writable+executable mapping: runtime_error"
	expect "$tmp/out.json" jit_mprotect.c 'r["status"] == "runtime_error"' "a JIT through mprotect (W then X): runtime_error"
	expect "$tmp/out.json" jit_rwx.c '"runtime_code_loading" in r["flags"]' "executable memory flagged statically"
	expect "$tmp/out.json" fault_handler.c 'r["status"] == "correct"' "a SIGSEGV handler and userfaultfd: refused (its witness output stays right)"
	expect "$tmp/out.json" got_rewrite.c 'r["status"] == "correct"' "the worker's GOT: read-only, and mprotect, mmap over it and /proc/self/mem refused (its witness output stays right)"
else
	skipped "jit_rwx.c, jit_mprotect.c, fault_handler.c, got_rewrite.c (no sandbox-exec in this build)"
fi

expect "$tmp/out.json" correct.c 'r["limits"] == {"mem_bytes": 2 << 30, "disk_bytes": 16 << 20, "compile_timeout_s": 3}' "the limits it ran under are in the result"

# The default memory limit: 3/4 of the host's memory per evaluation run at
# once (--runners), within 1 to 32 GiB.
cd "$tmp/c"
"$KERNELBOT" eval "$P" correct.c --backend cpu --json --trials 1 --rounds 1 --reps 2 --warmup 1 \
	--baselines none --runners 2 --no-judge-server >"$tmp/def.json" 2>"$tmp/err2"
cd "$ROOT"
total=$("$PY" -c 'import os; print(os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE"))')
expect "$tmp/def.json" correct.c "r['status'] == 'correct' and r['limits']['mem_bytes'] == min(32 << 30, max(1 << 30, $total // 4 * 3 // 2))" "the default memory limit: 3/4 of the host's memory over 2 runners"

# The compile deadline: an endless build ends at --compile-timeout, all of it.
expect "$tmp/out.json" compile_forever.c 'r["status"] == "compile_error" and "timed out after 3 s" in r["errors"][0]' "an endless build: compile_error, timed out after 3 s"
expect "$tmp/out.json" compile_forever.c 'r["compile_s"] < 30' "it ended near its deadline"
left=$(ps -eo pid,args | grep -F "$tmp/cache/tmp/build-" | grep -v grep)
[ -z "$left" ] && ok "no compiler process left behind" || bad "left behind: $left"

# The disk quota (as root: a tmpfs over each scratch).
if [ "$SANDBOX" = 1 ] && [ "$(id -u)" = 0 ]; then
	expect "$tmp/out.json" disk_fill.c 'r["status"] == "runtime_error"' "filling the scratch: runtime_error"
	expect "$tmp/out.json" disk_fill.c '"No space left on device" in r["errors"][0] or any(c["name"] == "sandbox:disk_quota" and "quota was hit" in c["detail"] for c in r["checks"])' "the run reports the quota hit (ENOSPC)"
	expect "$tmp/out.json" disk_fill.c 'r["eval_s"] < 60' "it ended quickly"
	expect "$tmp/out.json" correct.c 'any(c["name"] == "sandbox:disk_quota" and c["passed"] and "16 MiB" in c["detail"] for c in r["checks"])' "the correct kernel ran under the 16 MiB quota"
	grep -q " $tmp" /proc/mounts && bad "a scratch tmpfs is still mounted" || ok "no scratch tmpfs left mounted"
	# sandbox-exec itself with a small --disk: dd fails with ENOSPC, the
	# report says the quota was hit, the host directory holds at most 4 MiB.
	mkdir -p "$tmp/sx"
	"$KERNELBOT" sandbox-exec --profile candidate --scratch "$tmp/sx" --disk 4M \
		--report "$tmp/sx.json" -- /bin/sh -c \
		'i=0; while [ $i -lt 64 ] && dd if=/dev/zero of=f$i bs=1M count=1 2>/dev/null; do i=$((i+1)); done; [ $i -lt 64 ]' \
		>"$tmp/sx.out" 2>&1
	[ $? -eq 0 ] && ok "sandbox-exec --disk 4M: a write failed before 64 MiB" || bad "sandbox-exec --disk 4M: $(cat "$tmp/sx.out")"
	"$PY" -c 'import json,sys; sys.exit(0 if any(c["name"] == "disk_quota" and "quota was hit" in c["detail"] for c in json.load(open(sys.argv[1]))) else 1)' "$tmp/sx.json" &&
		ok "sandbox-exec's report: the quota was hit" || bad "sandbox-exec's report: $(cat "$tmp/sx.json")"
	used=$(du -sk "$tmp/sx" | cut -f1)
	[ "$used" -le 4200 ] && ok "the host directory holds ${used} KiB, at most the quota" || bad "the host directory holds ${used} KiB"
else
	skipped "disk_fill.c, sandbox-exec --disk (the disk quota needs the sandbox, run as root)"
fi

done_tests t3006-eval-fs-attacks
