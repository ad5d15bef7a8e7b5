#!/bin/sh
# The folders are layers (docs/design.md): scripts/check-layers.sh, which
# `make lint` runs, passes on the tree and fails, naming the file, line and
# layers, on a copy given an include that runs up a layer.
. "$KB_ROOT/tests/e2e/lib.sh"
t_init t0910

"$KB_ROOT/scripts/check-layers.sh" "$KB_ROOT" >"$TMP/out" 2>&1
check_eq "the tree keeps its layers" "$?" 0
check_eq "and says nothing" "$(cat "$TMP/out")" ""

# A copy of the C sources, one of them given a bad include.
mkdir -p "$TMP/tree"
(cd "$KB_ROOT" && find common conf store gpu gitops pipeline webhooks coord cli -name '*.[ch]' |
	tar cf - -T -) | (cd "$TMP/tree" && tar xf -)
check "the copy has the store" test -f "$TMP/tree/store/store.h"
"$KB_ROOT/scripts/check-layers.sh" "$TMP/tree" >/dev/null 2>&1
check_eq "the copy passes as it is" "$?" 0
printf '#include "coord/coord.h"\n' >>"$TMP/tree/store/store_jobs.c"
printf '#include "gitops/forge.h"\n' >>"$TMP/tree/gpu/device.c"
printf '#include "pipeline/evolve/evolve.h"\n' >>"$TMP/tree/pipeline/archive/archive.c"
"$KB_ROOT/scripts/check-layers.sh" "$TMP/tree" >"$TMP/out" 2>&1
check_eq "an include up a layer fails" "$?" 1
out=$(cat "$TMP/out")
check_match "named with its file, line and the layers" "$out" \
	"^store/store_jobs\.c:[0-9]+: includes coord/coord\.h: layer coord is not below store$"
check_match "a folder of the same layer is not below either" "$out" \
	"^gpu/device\.c:[0-9]+: includes gitops/forge\.h: layer gitops is not below gpu$"
check_eq "a pipeline stage may use another" "$(grep -c '^pipeline/' "$TMP/out")" 0
check_eq "two offenders, two lines" "$(grep -c . "$TMP/out")" 2

t_done
