#!/bin/sh
# t0900: the documentation holds together: every relative link in README.md
# and docs/ resolves (file and heading anchor, inside the repository), the
# README stays short and keeps the test command CI runs, and every command
# in the README's table has its page and a --help that exits 0.
. "$KB_ROOT/tests/e2e/lib.sh"
t_init t0900
PY=/usr/bin/python3
CHECK="$KB_ROOT/tests/check_links.py"

$PY "$CHECK" "$KB_ROOT" README.md docs >"$TMP/out" 2>&1
check_eq "every relative link in README.md and docs/ resolves" "$?" 0
[ -s "$TMP/out" ] && cat "$TMP/out"

# The checker itself fails on what it is for.
mkdir -p "$TMP/r/docs"
printf '# Title\n\n[a](docs/gone.md) [b](docs/p.md#nope) [c](#title) [d](../x.md)\n`[e](no.md)` [f](https://example.com/x)\n\n    [g](indented.md)\n' >"$TMP/r/README.md"
printf '# P\n\n## Same\n\n## Same\n\n[h](../README.md#title) [i](p.md#same-1)\n' >"$TMP/r/docs/p.md"
$PY "$CHECK" "$TMP/r" README.md docs >"$TMP/bad" 2>&1
check_eq "a broken link fails the check" "$?" 1
check_eq "each broken link is named, nothing else" "$(cut -d: -f1-3 "$TMP/bad" | tr '\n' ' ')" \
	"README.md:3: docs/gone.md README.md:3: docs/p.md#nope README.md:3: ../x.md "

lines=$(wc -l <"$KB_ROOT/README.md")
check "README.md is under 300 lines ($lines)" [ "$lines" -lt 300 ]
check "README.md keeps the test command .ci/run runs" \
	grep -q '^    make test      # build and run the whole test suite$' "$KB_ROOT/README.md"
check "and the demo command" grep -q '^    make demo      # ' "$KB_ROOT/README.md"
check "docs/design.md exists" [ -s "$KB_ROOT/docs/design.md" ]

# Each command the README lists has its page; each page's command has a
# --help that exits 0 with the usage on stdout.
cmds=$(sed -n 's#^| \[`kernelbot \([a-z-]*\)[^]]*\](docs/commands/[a-z-]*\.md).*#\1#p' "$KB_ROOT/README.md")
check "the README's table lists the commands" [ "$(echo $cmds | wc -w)" -ge 17 ]
for c in $cmds; do
	check "docs/commands/$c.md exists" [ -s "$KB_ROOT/docs/commands/$c.md" ]
done
for f in "$KB_ROOT"/docs/commands/*.md; do
	c=$(basename "$f" .md)
	[ "$c" = README ] && continue
	"$KERNELBOT" "$c" --help >"$TMP/help" 2>"$TMP/err"
	check_eq "kernelbot $c --help exits 0" "$?" 0
	check_match "kernelbot $c --help prints its usage" "$(head -n 1 "$TMP/help")" "^usage: kernelbot $c"
done
t_done
