#!/bin/sh
# t3003: the worker's protocol by hand (no judge): hello, run with poison
# and pristine-input checks, time, dump, and its failure paths: a missing
# manifest, a .so without kernelbot_forward, unknown commands, bad sets,
# malformed manifests, and tags that try to leave the scratch directory.
. "$(dirname "$0")/eval-lib.sh"
# As inside the sandbox (sandbox_env.c): LeakSanitizer needs ptrace, which
# the worker's lockdown refuses, so a sanitizer build must not run it.
export ASAN_OPTIONS=detect_leaks=0
X="$ROOT/tests/fixtures/exploits/cpu"
mkdir -p "$tmp/in" "$tmp/scratch"
cc -O2 -fPIC -shared -o "$tmp/correct.so" "$X/correct.c" -lm || bad "cc"
cc -O2 -fPIC -shared -o "$tmp/mutate.so" "$X/mutate_input.c" -lm || bad "cc"
printf 'int other(void) { return 0; }\n' >"$tmp/noentry.c"
cc -fPIC -shared -o "$tmp/noentry.so" "$tmp/noentry.c" || bad "cc"

# One input set: x [2,4] = 1..8, weight = 1, bias = 0 (float32, packed).
"$PY" - "$tmp/in" <<'PYEOF'
import json, struct, sys
d = sys.argv[1]
x = [float(i + 1) for i in range(8)]
w = [1.0] * 4
b = [0.0] * 4
with open(d + "/set0.bin", "wb") as f:
    f.write(struct.pack("<16f", *x, *w, *b))
ins = [{"name": "x", "dtype": "float32", "shape": [2, 4], "offset": 0, "nbytes": 32},
       {"name": "weight", "dtype": "float32", "shape": [4], "offset": 32, "nbytes": 16},
       {"name": "bias", "dtype": "float32", "shape": [4], "offset": 48, "nbytes": 16}]
outs = [{"name": "out0", "dtype": "float32", "shape": [2, 4], "nbytes": 32}]
json.dump({"sets": [{"file": "set0.bin", "n_args": 1, "inputs": ins, "outputs": outs}]},
          open(d + "/manifest.json", "w"))
PYEOF

W() { "$KERNELBOT" __worker --backend cpu --dir "$tmp/in" --scratch "$tmp/scratch" "$@"; }

printf '%s\n' '{"cmd":"noop"}' '{"cmd":"run","set":0,"tag":"a/../../x"}' \
	'{"cmd":"time","sets":[0,0,0]}' '{"cmd":"dump","set":0,"tag":"d"}' \
	'{"cmd":"bogus"}' '{"cmd":"run","set":7}' 'not json' '{"cmd":"quit"}' |
	W --so "$tmp/correct.so" >"$tmp/replies" 2>"$tmp/err"
st=$?
[ "$st" -eq 0 ] && ok "worker exits 0 after quit" || bad "worker exit $st: $(cat "$tmp/err")"
line() { sed -n "${1}p" "$tmp/replies"; }
py() { "$PY" -c "import json,sys; r=json.loads(sys.argv[1]); print($2)" "$3"; }
[ "$(py x 'r["hello"] == 1 and r["lockdown"] == "sandbox" and r["perturb_writes"] == "stores" and r["refresh"] is True and r["refresh_mask"] is True' "$(line 1)")" = True ] &&
	ok "hello after lockdown" || bad "hello: $(line 1)"
[ "$(py x 'r["ok"]' "$(line 2)")" = True ] && ok "noop" || bad "noop: $(line 2)"
r=$(line 3)
[ "$(py x 'r["rc"] == [0, 0] and r["unwritten"] == [[0], [0]] and r["inputs_modified"] == [] and r["runs_differ_bytes"] == 0' "$r")" = True ] &&
	ok "run: both runs wrote everything, inputs intact, runs identical" || bad "run: $r"
"$PY" -c 'import json,sys,os; r=json.loads(sys.argv[1]); s=sys.argv[2]; sys.exit(0 if all(os.path.dirname(p)==s for p in r["files"][0]) and r["files"][1]==[] else 1)' "$r" "$tmp/scratch" &&
	ok "output files stay in scratch whatever the tag; identical second run not resent" || bad "files: $r"
"$PY" - "$tmp/scratch" <<'PYEOF' && ok "the output holds tanh(x) * 1 + 0" || bad "output values"
import glob, math, struct, sys
f = glob.glob(sys.argv[1] + "/*_r0_o0.bin")[0]
v = struct.unpack("<8f", open(f, "rb").read())
sys.exit(0 if all(abs(a - math.tanh(i + 1)) < 1e-6 for i, a in enumerate(v)) else 1)
PYEOF
[ "$(py x 'r["rc"] == 0 and len(r["ev_ms"]) == 3 and len(r["host_ms"]) == 3' "$(line 4)")" = True ] &&
	ok "time: three timed calls" || bad "time: $(line 4)"
[ "$(py x 'r["unwritten"] == [0] and len(r["files"]) == 1' "$(line 5)")" = True ] &&
	ok "dump: the last timed run's outputs" || bad "dump: $(line 5)"
for n in 6 7 8; do
	[ "$(py x 'r["ok"] is False and r["stage"] == "request"' "$(line $n)")" = True ] &&
		ok "bad command $n answered with an error" || bad "bad command $n: $(line $n)"
done

# A sampled dump: elements (a + j*b) mod n, j < m, of each output (the
# judge's spot checks before the last), and the run's phase account.
mkdir -p "$tmp/scratch2"
W2() { "$KERNELBOT" __worker --backend cpu --dir "$tmp/in" --scratch "$tmp/scratch2" --so "$tmp/correct.so"; }
printf '%s\n' '{"cmd":"run","set":0}' '{"cmd":"time","sets":[0]}' \
	'{"cmd":"dump","set":0,"sample":[1,2,50]}' '{"cmd":"quit"}' | W2 >"$tmp/rs" 2>/dev/null
[ "$(py x 'set(r["phase_ms"]) == {"load", "device", "d2h", "check", "write"}' "$(sed -n 2p "$tmp/rs")")" = True ] &&
	ok "run: the worker's phases reported" || bad "phases: $(sed -n 2p "$tmp/rs")"
"$PY" -c 'import json,os,sys; r=json.loads(sys.argv[1]); sys.exit(0 if os.path.getsize(r["files"][0]) == 32 else 1)' \
	"$(sed -n 4p "$tmp/rs")" && ok "dump: a sample larger than the output sends it whole" ||
	bad "sample > n: $(sed -n 4p "$tmp/rs")"
printf '%s\n' '{"cmd":"time","sets":[0]}' '{"cmd":"dump","set":0,"sample":[0,1,0]}' \
	'{"cmd":"dump","set":0,"sample":[13,3,3]}' '{"cmd":"quit"}' | W2 >"$tmp/rs" 2>/dev/null
[ "$(py x 'r["ok"] is False and "sample" in r["error"]' "$(sed -n 3p "$tmp/rs")")" = True ] &&
	ok "dump: a sample of 0 elements is refused" || bad "sample 0: $(sed -n 3p "$tmp/rs")"
"$PY" - "$(sed -n 4p "$tmp/rs")" <<'PYEOF' && ok "dump with a sample: elements 5, 0, 3 of 8, poison counted over all" || bad "sampled dump: $(sed -n 4p "$tmp/rs")"
import json, math, struct, sys
r = json.loads(sys.argv[1])
v = struct.unpack("<3f", open(r["files"][0], "rb").read())
sys.exit(0 if r["unwritten"] == [0] and all(abs(a - math.tanh(i + 1)) < 1e-6
                                            for a, i in zip(v, (5, 0, 3))) else 1)
PYEOF

# The judge's poison, one value per run and output: a kernel that writes
# nothing leaves exactly that value, counted against that run's value
# (run: two runs, two values; time: one per timed call; dump: the last
# run's). A set never timed has nothing to dump; malformed poison is
# refused. Output files are rewritten by the next request: one worker
# per look.
mkdir -p "$tmp/scratch4"
cc -O2 -fPIC -shared -o "$tmp/unwritten.so" "$X/unwritten.c" -lm || bad "cc"
UW() { "$KERNELBOT" __worker --backend cpu --dir "$tmp/in" --scratch "$tmp/scratch4" \
	--so "$tmp/unwritten.so"; }
printf '%s\n' '{"cmd":"dump","set":0}' \
	'{"cmd":"run","set":0,"poison":[["0700c07f"],["0900c0ff"]]}' '{"cmd":"quit"}' |
	UW >"$tmp/rq" 2>/dev/null
[ "$(py x 'r["ok"] is False and "never timed" in r["error"]' "$(sed -n 2p "$tmp/rq")")" = True ] &&
	ok "dump of a set never timed refused" || bad "dump untimed: $(sed -n 2p "$tmp/rq")"
"$PY" - "$(sed -n 3p "$tmp/rq")" <<'PYEOF' && ok "run: each run's own poison, left and counted" || bad "run poison: $(sed -n 3p "$tmp/rq")"
import json, sys
run = json.loads(sys.argv[1])
b0 = open(run["files"][0][0], "rb").read()
b1 = open(run["files"][1][0], "rb").read()
sys.exit(0 if run["unwritten"] == [[8], [8]] and b0 == bytes.fromhex("0700c07f") * 8
         and b1 == bytes.fromhex("0900c0ff") * 8 else 1)
PYEOF
printf '%s\n' '{"cmd":"time","sets":[0,0],"poison":[["1234a57f"],["4321b5ff"]]}' \
	'{"cmd":"dump","set":0}' '{"cmd":"time","sets":[0],"poison":[["1234a5"]]}' \
	'{"cmd":"dump","set":0,"outputs":false,"inputs":1}' '{"cmd":"quit"}' | UW >"$tmp/rq" 2>/dev/null
[ "$(py x 'r["files"] == [] and r["unwritten"] == [] and len(r["in_files"]) == 1' "$(sed -n 5p "$tmp/rq")")" = True ] &&
	ok "dump with outputs false: the inputs only" || bad "outputs false: $(sed -n 5p "$tmp/rq")"
"$PY" - "$(sed -n 3p "$tmp/rq")" <<'PYEOF' && ok "time and dump: the last run's poison, left and counted" || bad "time poison: $(sed -n 2,3p "$tmp/rq")"
import json, sys
dump = json.loads(sys.argv[1])
d = open(dump["files"][0], "rb").read()
sys.exit(0 if dump["unwritten"] == [8] and d == bytes.fromhex("4321b5ff") * 8 else 1)
PYEOF
[ "$(py x 'r["ok"] is False and "poison" in r["error"]' "$(sed -n 4p "$tmp/rq")")" = True ] &&
	ok "poison of the wrong size refused" || bad "bad poison: $(sed -n 4p "$tmp/rq")"
# prepare: a timed run's poison and flush in a request of their own; the
# prepared time request after it runs the call only, once.
printf '%s\n' '{"cmd":"time","sets":[0],"prepared":true}' \
	'{"cmd":"prepare","set":0,"poison":[["2222a57f"]]}' '{"cmd":"time","sets":[0],"prepared":true}' \
	'{"cmd":"dump","set":0}' '{"cmd":"time","sets":[0],"prepared":true}' \
	'{"cmd":"prepare","set":0,"poison":[["22"]]}' '{"cmd":"prepare","set":0}' \
	'{"cmd":"time","sets":[0,0],"prepared":true}' '{"cmd":"export","set":0}' '{"cmd":"quit"}' |
	UW >"$tmp/rp" 2>/dev/null
[ "$(py x 'r["ok"] is False and "not prepared" in r["error"]' "$(sed -n 2p "$tmp/rp")")" = True ] &&
	ok "prepared time before its prepare: refused" || bad "unprepared: $(sed -n 2p "$tmp/rp")"
[ "$(py x 'r["ok"] is True and r["overhead_ms"] >= 0' "$(sed -n 3p "$tmp/rp")")" = True ] &&
[ "$(py x 'r["ok"] is True and len(r["host_ms"]) == 1' "$(sed -n 4p "$tmp/rp")")" = True ] &&
	ok "prepare, then the prepared time request" || bad "prepare: $(sed -n 3,4p "$tmp/rp")"
"$PY" - "$(sed -n 5p "$tmp/rp")" <<'PYEOF' && ok "the prepared run: the prepare's poison, left and counted" || bad "prepared poison: $(sed -n 5p "$tmp/rp")"
import json, sys
dump = json.loads(sys.argv[1])
sys.exit(0 if dump["unwritten"] == [8] and open(dump["files"][0], "rb").read() == bytes.fromhex("2222a57f") * 8 else 1)
PYEOF
[ "$(py x 'r["ok"] is False and "not prepared" in r["error"]' "$(sed -n 6p "$tmp/rp")")" = True ] &&
	ok "a prepare serves one timed run" || bad "prepare reused: $(sed -n 6p "$tmp/rp")"
[ "$(py x 'r["ok"] is False and "poison" in r["error"]' "$(sed -n 7p "$tmp/rp")")" = True ] &&
[ "$(py x 'r["ok"] is True' "$(sed -n 8p "$tmp/rp")")" = True ] &&
[ "$(py x 'r["ok"] is False and "1 when prepared" in r["error"]' "$(sed -n 9p "$tmp/rp")")" = True ] &&
	ok "prepare: bad poison refused, none given the fixed pattern; prepared takes one set" ||
	bad "prepare errors: $(sed -n 7,9p "$tmp/rp")"
[ "$(py x 'r["ok"] is False and "pipe" in r["error"]' "$(sed -n 10p "$tmp/rp")")" = True ] &&
	ok "export: refused when replies go through a pipe" || bad "export on a pipe: $(sed -n 10p "$tmp/rp")"
printf '%s\n' '{"cmd":"run","set":0,"poison":[["0700c07f"]]}' '{"cmd":"quit"}' | UW >"$tmp/rq" 2>/dev/null
[ "$(py x 'r["ok"] is False and "poison" in r["error"]' "$(sed -n 2p "$tmp/rq")")" = True ] &&
	ok "run: poison for one run of two refused" || bad "run poison: $(sed -n 2p "$tmp/rq")"

# Through the judge's own client (a socket for the worker's stdout): every
# timed run's outputs come back as a memfd sealed against writes and
# resizing, holding what the run left; neither writing nor mapping it
# writable is possible any more.
mkdir -p "$tmp/scratch5"
"$PY" - "$KERNELBOT" "$tmp/in" "$tmp/scratch5" "$tmp/correct.so" "$ROOT/gpu/harness" <<'PYEOF' && ok "time over a socket: one sealed snapshot per run, right values, unwritable" || bad "sealed snapshots"
import errno, fcntl, math, mmap, os, struct, sys, time
sys.path.insert(0, sys.argv[5])
from kbh.judge_worker import Worker
d = sys.argv[3]
w = Worker([sys.argv[1], "__worker", "--backend", "cpu", "--dir", sys.argv[2], "--scratch", d,
            "--so", sys.argv[4]], dict(os.environ), d + "/err", time.monotonic() + 60, 30)
hello = w.read_reply("start")
# The CPU has no shared device memory: no "share", and an export says so
# (the judge keeps the sealed memfds).
good = hello["ok"] and hello["share"] is False
r = w.request({"cmd": "export", "set": 0})
good = good and r["exported"] is False and "CPU" in r["why"] and not w.take_fds()
r = w.request({"cmd": "time", "sets": [0, 0]})
fds = w.take_fds()
good = good and r["sealed"] == 2 and len(fds) == 2
for f in fds:
    good = good and fcntl.fcntl(f, 1034) & 0xF == 0xF and os.fstat(f).st_size == 32
    v = struct.unpack("<8f", os.pread(f, 32, 0))
    good = good and all(abs(a - math.tanh(i + 1)) < 1e-6 for i, a in enumerate(v))
    for attempt in (lambda: os.pwrite(f, b"x", 0),
                    lambda: mmap.mmap(f, 32, mmap.MAP_SHARED, mmap.PROT_WRITE)):
        try:
            attempt()
            good = False
        except OSError as e:
            good = good and e.errno == errno.EPERM
    os.close(f)
w.close()
sys.exit(0 if good else 1)
PYEOF

# The judge's perturbations: element 2 of x set to 10.0 before the first
# timed run, element 5 to -1.0 before the second; they persist, and a
# dump with "inputs" returns x as changed and the outputs of that state.
mkdir -p "$tmp/scratch3"
printf '%s\n' '{"cmd":"time","sets":[0,0],"perturb":[[[0,2,"00002041"]],[[0,5,"000080bf"]]]}' \
	'{"cmd":"dump","set":0,"inputs":1}' \
	'{"cmd":"time","sets":[0],"perturb":[[[0,8,"00000000"]]]}' \
	'{"cmd":"time","sets":[0],"perturb":[[[3,0,"00000000"]]]}' \
	'{"cmd":"time","sets":[0],"perturb":[[[0,0,"0000"]]]}' \
	'{"cmd":"time","sets":[0,0],"perturb":[[]]}' \
	'{"cmd":"time","sets":[0],"perturb":[[[0,0,"zz000000"]]]}' '{"cmd":"quit"}' |
	"$KERNELBOT" __worker --backend cpu --dir "$tmp/in" --scratch "$tmp/scratch3" \
	--so "$tmp/correct.so" >"$tmp/rp" 2>/dev/null
"$PY" - "$(sed -n 3p "$tmp/rp")" <<'PYEOF' && ok "time with perturb: the changes persist; dump returns x as changed and its outputs" || bad "perturb: $(sed -n 2,3p "$tmp/rp")"
import json, math, struct, sys
r = json.loads(sys.argv[1])
x = struct.unpack("<8f", open(r["in_files"][0], "rb").read())
y = struct.unpack("<8f", open(r["files"][0], "rb").read())
want = [1.0, 2.0, 10.0, 4.0, 5.0, -1.0, 7.0, 8.0]
sys.exit(0 if list(x) == want and all(abs(a - math.tanh(v)) < 1e-6 for a, v in zip(y, want)) else 1)
PYEOF
for n in 4 5 6 7 8; do
	[ "$(py x 'r["ok"] is False and r["stage"] == "time" and "perturb" in r["error"]' "$(sed -n ${n}p "$tmp/rp")")" = True ] &&
		ok "malformed perturbation $n refused" || bad "perturbation $n: $(sed -n ${n}p "$tmp/rp")"
done

# Packed, as the judge sends them: [input, int64 positions, values] in hex,
# in order (the last change to an element wins); a short value list, a
# position past the input and odd hex are refused.
mkdir -p "$tmp/scratch9"
"$PY" - >"$tmp/packed" <<'PYEOF'
import json, struct
pos = lambda *p: struct.pack("<%dq" % len(p), *p).hex()
val = lambda *v: struct.pack("<%df" % len(v), *v).hex()
print(json.dumps({"cmd": "time", "sets": [0], "perturb": [[[0, pos(1, 6, 1), val(20.0, -3.0, 30.0)]]]}))
print(json.dumps({"cmd": "dump", "set": 0, "inputs": 1}))
for bad in ([0, pos(1, 2), val(1.0)], [0, pos(8), val(1.0)], [0, pos(1)[:-1], val(1.0)],
            [0, pos(1), "zz" + val(1.0)[2:]]):
    print(json.dumps({"cmd": "time", "sets": [0], "perturb": [[bad]]}))
print('{"cmd":"quit"}')
PYEOF
"$KERNELBOT" __worker --backend cpu --dir "$tmp/in" --scratch "$tmp/scratch9" \
	--so "$tmp/correct.so" <"$tmp/packed" >"$tmp/rpk" 2>/dev/null
"$PY" - "$(sed -n 3p "$tmp/rpk")" <<'PYEOF' && ok "packed changes: applied in order" || bad "packed: $(sed -n 2,3p "$tmp/rpk")"
import json, struct, sys
r = json.loads(sys.argv[1])
x = struct.unpack("<8f", open(r["in_files"][0], "rb").read())
sys.exit(0 if list(x) == [1.0, 30.0, 3.0, 4.0, 5.0, 6.0, -3.0, 8.0] else 1)
PYEOF
for n in 4 5 6 7; do
	[ "$(py x 'r["ok"] is False and "perturb" in r["error"]' "$(sed -n ${n}p "$tmp/rpk")")" = True ] &&
		ok "malformed packed change $n refused" || bad "packed $n: $(sed -n ${n}p "$tmp/rpk")"
done

# Thousands of changes before one run (the judge spreads them over every
# axis of each input, docs/evaluation.md): 16384 entries, the most one run
# takes, over x's 8 elements, applied in order (the last to each element
# wins); one more is refused.
mkdir -p "$tmp/scratch6"
"$PY" - >"$tmp/many" <<'PYEOF'
import json, struct
hx = lambda v: struct.pack("<f", v).hex()
run = [[0, i % 8, hx(100.0 + i)] for i in range(16384)]
print(json.dumps({"cmd": "time", "sets": [0], "perturb": [run]}))
print(json.dumps({"cmd": "dump", "set": 0, "inputs": 1}))
print(json.dumps({"cmd": "time", "sets": [0], "perturb": [run + [[0, 0, hx(1.0)]]]}))
print(json.dumps({"cmd": "quit"}))
PYEOF
"$KERNELBOT" __worker --backend cpu --dir "$tmp/in" --scratch "$tmp/scratch6" \
	--so "$tmp/correct.so" <"$tmp/many" >"$tmp/rm" 2>/dev/null
"$PY" - "$(sed -n 3p "$tmp/rm")" <<'PYEOF' && ok "time with 16384 changes in a run: all applied, in order" || bad "many changes: $(sed -n 2,3p "$tmp/rm" | cut -c1-300)"
import json, math, struct, sys
r = json.loads(sys.argv[1])
x = struct.unpack("<8f", open(r["in_files"][0], "rb").read())
want = [100.0 + 16376 + i for i in range(8)]
y = struct.unpack("<8f", open(r["files"][0], "rb").read())
sys.exit(0 if list(x) == want and all(abs(a - math.tanh(v)) < 1e-6 for a, v in zip(y, want)) else 1)
PYEOF
[ "$(py x 'r["ok"] is False and "at most 16384 entries" in r["error"]' "$(sed -n 4p "$tmp/rm")")" = True ] &&
	ok "16385 changes in a run refused" || bad "too many changes: $(sed -n 4p "$tmp/rm" | cut -c1-300)"

# The judge's refresh: before the run, x[e] = x0[(a*e + b) mod 8] from
# the inputs as loaded (a = 3, b = 1), then the run's changes on top;
# the next run's refresh (a = 1, b = 0) starts from the loaded copy
# again, not from the state the first left. Out of range: refused.
mkdir -p "$tmp/scratch7" "$tmp/scratch8"
printf '%s\n' '{"cmd":"time","sets":[0],"refresh":[[[0,3,1]]],"perturb":[[[0,0,"00002041"]]]}' \
	'{"cmd":"dump","set":0,"inputs":1}' '{"cmd":"quit"}' |
	"$KERNELBOT" __worker --backend cpu --dir "$tmp/in" --scratch "$tmp/scratch7" \
	--so "$tmp/correct.so" >"$tmp/rr1" 2>/dev/null
printf '%s\n' '{"cmd":"time","sets":[0,0],"refresh":[[[0,3,1]],[[0,1,0]]]}' \
	'{"cmd":"dump","set":0,"inputs":1}' \
	'{"cmd":"time","sets":[0],"refresh":[[[0,0,1]]]}' \
	'{"cmd":"time","sets":[0],"refresh":[[[0,8,1]]]}' \
	'{"cmd":"time","sets":[0],"refresh":[[[0,3,8]]]}' \
	'{"cmd":"time","sets":[0],"refresh":[[[3,3,1]]]}' '{"cmd":"quit"}' |
	"$KERNELBOT" __worker --backend cpu --dir "$tmp/in" --scratch "$tmp/scratch8" \
	--so "$tmp/correct.so" >"$tmp/rr" 2>/dev/null
"$PY" - "$(sed -n 3p "$tmp/rr1")" "$(sed -n 3p "$tmp/rr")" <<'PYEOF' && ok "time with refresh: a permutation of the loaded inputs, the run's changes on top, each run from the loaded copy" || bad "refresh: $(sed -n 2,3p "$tmp/rr1" | cut -c1-200) $(sed -n 2,3p "$tmp/rr" | cut -c1-200)"
import json, math, struct, sys
want = [[10.0, 5.0, 8.0, 3.0, 6.0, 1.0, 4.0, 7.0], [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0]]
for line, w in zip(sys.argv[1:], want):
    r = json.loads(line)
    x = struct.unpack("<8f", open(r["in_files"][0], "rb").read())
    y = struct.unpack("<8f", open(r["files"][0], "rb").read())
    if list(x) != w or not all(abs(a - math.tanh(v)) < 1e-6 for a, v in zip(y, w)):
        sys.exit(1)
PYEOF
for n in 4 5 6 7; do
	[ "$(py x 'r["ok"] is False and r["stage"] == "time" and "refresh" in r["error"]' "$(sed -n ${n}p "$tmp/rr")")" = True ] &&
		ok "malformed refresh $n refused" || bad "refresh $n: $(sed -n ${n}p "$tmp/rr")"
done

# A refresh from windows of the input's source (the manifest's
# "sources", kbh/judge_skew.py): x's source holds 101..112; windows
# [2, 7) and [9, 12) give 103..107, 110..112, then x[e] = that[(3e + 1)
# mod 8]. Windows that miss n, leave the source, number five, or name an
# input without a source are refused; so is a manifest whose source is
# smaller than its input.
mkdir -p "$tmp/insrc" "$tmp/scratch9"
"$PY" - "$tmp/in" "$tmp/insrc" <<'PYEOF'
import json, shutil, struct, sys
src, dst = sys.argv[1], sys.argv[2]
shutil.copy(src + "/set0.bin", dst + "/set0.bin")
m = json.load(open(src + "/manifest.json"))
with open(dst + "/src0.bin", "wb") as f:
    f.write(struct.pack("<12f", *[101.0 + i for i in range(12)]))
m["sets"][0]["sources"] = {"file": "src0.bin", "inputs": [{"input": 0, "offset": 0, "nbytes": 48}]}
json.dump(m, open(dst + "/manifest.json", "w"))
m["sets"][0]["sources"]["inputs"][0]["nbytes"] = 28
json.dump(m, open(dst + "/bad.json", "w"))
PYEOF
printf '%s\n' '{"cmd":"time","sets":[0],"refresh":[[[0,3,1,2,5,9,3]]]}' \
	'{"cmd":"dump","set":0,"inputs":1}' \
	'{"cmd":"time","sets":[0],"refresh":[[[0,3,1,2,5,9,2]]]}' \
	'{"cmd":"time","sets":[0],"refresh":[[[0,3,1,2,5,10,3]]]}' \
	'{"cmd":"time","sets":[0],"refresh":[[[0,3,1,0,1,0,1,0,1,0,1,0,4]]]}' \
	'{"cmd":"time","sets":[0],"refresh":[[[1,3,1,0,4]]]}' '{"cmd":"quit"}' |
	"$KERNELBOT" __worker --backend cpu --dir "$tmp/insrc" --scratch "$tmp/scratch9" \
	--so "$tmp/correct.so" >"$tmp/rs" 2>/dev/null
"$PY" - "$(sed -n 3p "$tmp/rs")" <<'PYEOF' && ok "time with a refresh from the source's windows" || bad "windows: $(sed -n 2,3p "$tmp/rs" | cut -c1-300)"
import json, math, struct, sys
r = json.loads(sys.argv[1])
cat = [103.0, 104.0, 105.0, 106.0, 107.0, 110.0, 111.0, 112.0]
want = [cat[(3 * e + 1) % 8] for e in range(8)]
x = struct.unpack("<8f", open(r["in_files"][0], "rb").read())
y = struct.unpack("<8f", open(r["files"][0], "rb").read())
sys.exit(0 if list(x) == want and all(abs(a - math.tanh(v)) < 1e-6 for a, v in zip(y, want)) else 1)
PYEOF
for n in 4 5 6 7; do
	[ "$(py x 'r["ok"] is False and r["stage"] == "time" and "windows" in r["error"]' "$(sed -n ${n}p "$tmp/rs")")" = True ] &&
		ok "malformed windows $n refused" || bad "windows $n: $(sed -n ${n}p "$tmp/rs")"
done
# A refresh's mask, the entry's last, a hex string: the low bits of the
# normal values flipped after the permutation (103.0 ^ 0xff is
# 103.00389...). Zero, not hex, or reaching the exponent: refused.
printf '%s\n' '{"cmd":"time","sets":[0],"refresh":[[[0,3,1,2,5,9,3,"ff"]]]}' \
	'{"cmd":"dump","set":0,"inputs":1}' \
	'{"cmd":"time","sets":[0],"refresh":[[[0,3,1,2,5,9,3,"0"]]]}' \
	'{"cmd":"time","sets":[0],"refresh":[[[0,3,1,2,5,9,3,"fg"]]]}' \
	'{"cmd":"time","sets":[0],"refresh":[[[0,3,1,2,5,9,3,"800000"]]]}' '{"cmd":"quit"}' |
	"$KERNELBOT" __worker --backend cpu --dir "$tmp/insrc" --scratch "$tmp/scratch9" \
	--so "$tmp/correct.so" >"$tmp/rx" 2>/dev/null
"$PY" - "$(sed -n 3p "$tmp/rx")" <<'PYEOF' && ok "time with a masked refresh: low bits of each value flipped" || bad "mask: $(sed -n 2,3p "$tmp/rx" | cut -c1-300)"
import json, math, struct, sys
r = json.loads(sys.argv[1])
cat = [103.0, 104.0, 105.0, 106.0, 107.0, 110.0, 111.0, 112.0]
flip = lambda v: struct.unpack("<f", struct.pack("<I", struct.unpack("<I", struct.pack("<f", v))[0] ^ 0xff))[0]
want = [flip(cat[(3 * e + 1) % 8]) for e in range(8)]
x = struct.unpack("<8f", open(r["in_files"][0], "rb").read())
y = struct.unpack("<8f", open(r["files"][0], "rb").read())
sys.exit(0 if list(x) == want and x[0] != cat[1] and
         all(abs(a - math.tanh(v)) < 1e-6 for a, v in zip(y, want)) else 1)
PYEOF
for n in 4 5 6; do
	[ "$(py x 'r["ok"] is False and r["stage"] == "time" and "mask" in r["error"]' "$(sed -n ${n}p "$tmp/rx")")" = True ] &&
		ok "malformed mask $n refused" || bad "mask $n: $(sed -n ${n}p "$tmp/rx")"
done
cp "$tmp/insrc/bad.json" "$tmp/insrc/manifest.json"
printf '%s\n' '{"cmd":"quit"}' |
	"$KERNELBOT" __worker --backend cpu --dir "$tmp/insrc" --scratch "$tmp/scratch9" \
	--so "$tmp/correct.so" >"$tmp/rs2" 2>/dev/null
[ "$(py x 'r["ok"] is False and "malformed sources" in r["error"]' "$(sed -n 1p "$tmp/rs2")")" = True ] &&
	ok "a source smaller than its input: the manifest refused" || bad "bad sources: $(cat "$tmp/rs2")"

printf '%s\n' '{"cmd":"run","set":0}' '{"cmd":"quit"}' | W --so "$tmp/mutate.so" >"$tmp/r2" 2>/dev/null
[ "$(py x 'r["inputs_modified"] == ["x"]' "$(sed -n 2p "$tmp/r2")")" = True ] &&
	ok "input mutation reported by name" || bad "mutation: $(cat "$tmp/r2")"

echo '{"cmd":"quit"}' | W --so "$tmp/noentry.so" >"$tmp/r3" 2>/dev/null
st=$?
[ "$st" -eq 3 ] && grep -q '"stage":"load"' "$tmp/r3" && grep -q kernelbot_forward "$tmp/r3" &&
	ok "no kernelbot_forward: load error, exit 3" || bad "noentry: exit $st $(cat "$tmp/r3")"

echo '{"cmd":"quit"}' | "$KERNELBOT" __worker --backend cpu --dir "$tmp/nope" --scratch "$tmp/scratch" \
	--so "$tmp/correct.so" >"$tmp/r4" 2>/dev/null
st=$?
[ "$st" -ne 0 ] && grep -q '"stage":"setup"' "$tmp/r4" && ok "missing manifest: setup error" ||
	bad "missing manifest: exit $st $(cat "$tmp/r4")"

sed 's/"offset": 32/"offset": 40/' "$tmp/in/manifest.json" >"$tmp/m.json" && mkdir -p "$tmp/in2" &&
	cp "$tmp/m.json" "$tmp/in2/manifest.json" && cp "$tmp/in/set0.bin" "$tmp/in2/"
echo '{"cmd":"quit"}' | "$KERNELBOT" __worker --backend cpu --dir "$tmp/in2" --scratch "$tmp/scratch" \
	--so "$tmp/correct.so" >"$tmp/r5" 2>/dev/null
grep -q 'not packed' "$tmp/r5" && ok "malformed manifest refused" || bad "manifest: $(cat "$tmp/r5")"
sed 's/"set0.bin"/"..\/set0.bin"/' "$tmp/in/manifest.json" >"$tmp/in2/manifest.json"
echo '{"cmd":"quit"}' | "$KERNELBOT" __worker --backend cpu --dir "$tmp/in2" --scratch "$tmp/scratch" \
	--so "$tmp/correct.so" >"$tmp/r6" 2>/dev/null
grep -q 'malformed' "$tmp/r6" && ok "a set file outside the input directory is refused" || bad "path: $(cat "$tmp/r6")"

"$KERNELBOT" __worker --so x >/dev/null 2>&1; st=$?
[ "$st" -eq 2 ] && ok "missing options: exit 2" || bad "usage exit $st"

done_tests t3003-eval-worker
