#!/bin/sh
# Regenerate tests/fixtures/ir/*.json from the problems under
# tests/fixtures/compiler/problems/ (and any extra .py given), through the
# harness's trace verb. Run after the graph IR conventions change:
#   KERNELBOT_HARNESS=/path/to/harness.py sh tests/compiler/make_ir_fixtures.sh
set -eu
KB=${KERNELBOT:-build/default/kernelbot}
out=tests/fixtures/ir
mkdir -p "$out"
for p in tests/fixtures/compiler/problems/*.py tests/fixtures/compiler/ops/*.py "$@"; do
	[ -f "$p" ] || continue
	name=$(basename "$p" .py)
	"$KB" trace --json --verify none "$p" > "$out/$name.json.tmp"
	mv "$out/$name.json.tmp" "$out/$name.json"
done
