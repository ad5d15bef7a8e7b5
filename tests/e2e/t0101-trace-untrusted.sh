#!/bin/sh
# t0101: kernelbot trace imports the problem module, and a module runs any
# code at import. The trace runs in the sandbox: a module that runs a shell
# and opens a file of the evaluating user cannot copy it out; one that
# never finishes importing and starts a process in a session of its own is
# ended, with everything it started, at the deadline; a host that cannot
# sandbox refuses to trace unless KERNELBOT_EVAL_UNSANDBOXED=1.
. "$KB_ROOT/tests/e2e/lib.sh"
t_init t0101
PY=/usr/bin/python3
FIX="$KB_ROOT/tests/fixtures"

# File modes are not the defense here: under root the sandbox runs as
# nobody, so the secret is world-readable and the drop folder world-writable;
# only what the sandbox shows can stop the copy.
chmod 0755 "$TMP"
mkdir -m 0755 "$TMP/mod" "$TMP/td"
mkdir -m 1777 "$TMP/drop"
printf 'whsec-t0101-%s\n' "$$" >"$TMP/secret"
chmod 0644 "$TMP/secret"
LEAK="$TMP/drop/leak"
sed -e "s|@SECRET@|$TMP/secret|" -e "s|@LEAK@|$LEAK|" \
	"$FIX/untrusted/leak_at_import.py" >"$TMP/mod/leak_at_import.py"
chmod 0644 "$TMP/mod/leak_at_import.py"

# The attack works where nothing confines it (as the harness ran before):
# else this test proves nothing.
$PY "$TMP/mod/leak_at_import.py" >/dev/null 2>&1
check "bare, the module copies the secret (open)" cmp -s "$TMP/secret" "$LEAK"
check "bare, the module copies the secret (shell)" cmp -s "$TMP/secret" "$LEAK.sh"
rm -f "$LEAK" "$LEAK.sh"

TMPDIR="$TMP/td" "$KERNELBOT" trace --json "$TMP/mod/leak_at_import.py" >"$TMP/leak.json" 2>"$TMP/leak.err"
check_eq "traced, the module still traces" "$?" 0
check "traced, nothing copied by open()" sh -c "! test -s '$LEAK'"
check "traced, nothing copied by the shell" sh -c "! test -s '$LEAK.sh'"
check_eq "the IR is the module's" \
	"$($PY -c 'import json,sys; print([n["op"] for n in json.load(open(sys.argv[1]))["nodes"]])' "$TMP/leak.json")" \
	"['relu']"
check_eq "the call's scratch folder is gone" "$(ls -A "$TMP/td")" ""

# ---- a module that never finishes importing ----
MARK="kb0101x$$"
sed -e "s|@MARK@|$MARK|" "$FIX/untrusted/loop_at_import.py" >"$TMP/mod/loop_at_import.py"
chmod 0644 "$TMP/mod/loop_at_import.py"
t0=$(date +%s)
TMPDIR="$TMP/td" "$KERNELBOT" trace --timeout 5 "$TMP/mod/loop_at_import.py" >/dev/null 2>"$TMP/loop.err"
st=$?
t1=$(date +%s)
check_eq "a module that loops at import fails the trace" "$st" 1
check_match "the error names the stage and the deadline" "$(cat "$TMP/loop.err")" \
	'^kernelbot trace: trace: timed out after 5 s'
# 5 s, the grace period and a torch import on a busy machine; never the 600 s default
check "it returns long before the default deadline" test $((t1 - t0)) -lt 120
# The kill is synchronous; the kernel may take a moment to tear the namespace down.
left=""
for i in 1 2 3 4 5 6 7 8 9 10; do
	left=$(pgrep -x "$MARK"; pgrep -f "$MARK")
	[ -z "$left" ] && break
	sleep 1
done
check_eq "no process it started is left (the spinning module, the helper in its own session)" "$left" ""
[ -n "$left" ] && kill -9 $left 2>/dev/null
check_eq "its scratch folder is gone too" "$(ls -A "$TMP/td")" ""

# ---- a host that cannot sandbox ----
KERNELBOT_SANDBOX_PRETEND_MISSING=net_ns "$KERNELBOT" trace "$FIX/trace/norm_linear.py" >/dev/null 2>"$TMP/nosbx.err"
check_eq "without a network namespace the trace is refused" "$?" 1
check_match "the refusal names the missing feature and the way out" "$(cat "$TMP/nosbx.err")" \
	'trace: this host cannot sandbox the harness.*network_namespace.*KERNELBOT_EVAL_UNSANDBOXED=1'
KERNELBOT_SANDBOX_PRETEND_MISSING=net_ns KERNELBOT_EVAL_UNSANDBOXED=1 \
	"$KERNELBOT" trace "$FIX/trace/norm_linear.py" >/dev/null 2>"$TMP/dev.err"
check_eq "KERNELBOT_EVAL_UNSANDBOXED=1 runs it with what the host has" "$?" 0
check_match "and says so" "$(cat "$TMP/dev.err")" 'partial sandbox.*network_namespace'
t_done
