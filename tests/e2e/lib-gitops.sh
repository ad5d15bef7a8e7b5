# Sourced by the gitops e2e tests (t40xx): a private temporary directory
# removed on exit, git isolated from the user's configuration; the checks
# and the "tNNNN: N passed, N failed" line are tests/lib.sh's (no is its
# fail, check its check_sh, done_tests its t_summary).
: "${KERNELBOT:?run from tests/run.sh}"
T=$(mktemp -d)
trap 'lib_cleanup' EXIT
. "${KB_ROOT:-$PWD}/tests/lib.sh"
PY=/usr/bin/python3
export HOME="$T" GIT_CONFIG_NOSYSTEM=1 GIT_AUTHOR_NAME=dev \
	GIT_AUTHOR_EMAIL=dev@example.com GIT_COMMITTER_NAME=dev \
	GIT_COMMITTER_EMAIL=dev@example.com

# Processes a test started (fake servers) are stopped by pid, then $T goes.
lib_pids=""
lib_cleanup() {
	for p in $lib_pids; do kill "$p" 2>/dev/null; done
	rm -rf "$T"
}

no() { fail "$@"; }
# check NAME SHELL-CONDITION: the gitops tests' conditions are shell text.
check() { check_sh "$@"; }
done_tests() { t_summary "$1"; }

# start_fake NAME SCRIPT-ARGS...: run tests/fakes/NAME.py on a free port;
# sets PORT. The log is $T/NAME.log unless --log is given.
start_fake() {
	name=$1
	shift
	rm -f "$T/$name.port"
	$PY "$KB_ROOT/tests/fakes/$name.py" --port-file "$T/$name.port" "$@" \
		2>>"$T/$name.stderr" &
	lib_pids="$lib_pids $!"
	i=0
	while [ ! -s "$T/$name.port" ] && [ $i -lt 100 ]; do
		sleep 0.1
		i=$((i + 1))
	done
	PORT=$(cat "$T/$name.port" 2>/dev/null)
	[ -n "$PORT" ]
}

# q LOG PYTHON-EXPR: evaluate EXPR with `r` the list of logged requests and
# helpers n(method, path_regex) (count) and last(method, path_regex);
# prints the value. Exit status 1 when the value is false.
q() {
	$PY - "$1" "$2" <<'PY'
import json, re, sys
r = [json.loads(l) for l in open(sys.argv[1])]
def m(x, method, rx):
    return x["method"] == method and re.fullmatch(rx, x["path"])
def n(method, rx):
    return sum(1 for x in r if m(x, method, rx))
def last(method, rx):
    return [x for x in r if m(x, method, rx)][-1]
def writes():
    return [x for x in r if x["method"] != "GET"]
v = eval(sys.argv[2])
print(v)
sys.exit(0 if v else 1)
PY
}

# no_violations LOG: every request matched the documented API.
no_violations() {
	$PY - "$1" <<'PY'
import json, sys
bad = [x for x in map(json.loads, open(sys.argv[1])) if x["violations"]]
for x in bad:
    print(x["method"], x["path"], x["violations"])
sys.exit(1 if bad else 0)
PY
}

# setup_repo: $T/w, a repository with one module, pushed to $T/r.git
# (file://); sets base to its commit.
setup_repo() {
	git init -q --bare "$T/r.git"
	git init -q -b main "$T/w"
	mkdir -p "$T/w/models"
	printf 'class Model(nn.Module):\n    pass\ndef get_inputs(): pass\ndef get_init_inputs(): pass\n' >"$T/w/models/mlp.py"
	git -C "$T/w" add -A && git -C "$T/w" commit -q -m init
	git -C "$T/w" remote add origin "file://$T/r.git"
	git -C "$T/w" push -q origin main
	base=$(git -C "$T/w" rev-parse HEAD)
	mkdir -p "$T/res/kernels/models-mlp"
	printf 'int k1;\n' >"$T/res/kernels/models-mlp/kernel.c"
	printf 'Speedup 2.0x\n' >"$T/body.md"
	printf 'results v1\n' >"$T/comment.md"
}

# publish_to CONFIG FORGE [ARGS...]: publish models/mlp.py from $T/res with
# $T/body.md and $T/comment.md; JSON result in $T/out.json, stderr in $T/err.
publish_to() {
	cfg=$1 fname=$2
	shift 2
	"$KERNELBOT" publish --config "$cfg" --forge "$fname" --repo acme/models \
		--git-dir "$T/w" --base "$base" --base-branch main \
		--module models/mlp.py --files "$T/res" --title "${TITLE:-kernelbot: models/mlp.py}" \
		--body-file "$T/body.md" --comment-file "$T/comment.md" \
		--label performance --reviewer alice --status success \
		--context kernelbot/models-mlp --description "2.0x" --json "$@" \
		>"$T/out.json" 2>"$T/err"
}

# results: "outcome/pr-result/comment-result" of the last publish_to.
results() {
	$PY -c "import json; d=json.load(open('$T/out.json')); print('%s/%s/%s' % (d['outcome'], d['pr']['result'], d['comment']['result']))"
}
