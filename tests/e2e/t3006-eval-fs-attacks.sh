#!/bin/sh
# t3006: attacks on the judge's file reading and on the sandbox's limits,
# each a CPU candidate next to a correct one that must stay correct:
# output files swapped for symlinks to a host file; code made at run time
# (W^X).
. "$(dirname "$0")/eval-lib.sh"
P="$ROOT/tests/fixtures/eval/scale_bias.py"
X="$ROOT/tests/fixtures/exploits/cpu"

mkdir -p "$tmp/c"
# A host file of exactly the timed output's size (64 x 256 float32) full of
# 31337.25f (bytes 00 d4 f4 46): what the judge would report, were it to
# follow the candidate's symlink.
"$PY" -c 'import struct,sys; open(sys.argv[1],"wb").write(struct.pack("<f",31337.25)*64*256)' "$tmp/host.bin"
for f in correct.c symlink_swap.c jit_rwx.c jit_mprotect.c; do
	sed -e "s|@HOST_OUT_PATH@|$tmp/host.bin|" "$X/$f" >"$tmp/c/$f"
done

cd "$tmp/c"
"$KERNELBOT" eval "$P" correct.c symlink_swap.c jit_rwx.c jit_mprotect.c \
	--backend cpu --json --trials 3 --rounds 2 --reps 3 --warmup 1 --timeout 8 \
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
else
	skipped "jit_rwx.c, jit_mprotect.c (no sandbox-exec in this build)"
fi

done_tests t3006-eval-fs-attacks
