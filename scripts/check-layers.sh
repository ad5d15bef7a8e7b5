#!/bin/sh
# check-layers.sh [ROOT]: fail when a C file includes a header of a layer
# above its own. The layers, bottom up (docs/design.md, "Layers"):
#
#   common                       buffers, logging, spawning, JSON/YAML, HTTP
#   conf store                   the configuration; the store (all SQL)
#   gpu gitops                   devices, sandbox, evaluation; git and forges
#   pipeline                     compiler, evolve, llm, report, archive, optimize
#   webhooks                     the HTTP intake
#   coord                        coordinator, runners, schedule
#   cli                          main() and the commands
#
# A file may include headers of its own folder and of lower layers only;
# folders that share a layer do not include each other. Prints each
# offending include as FILE:LINE: message; exit 1 if any, else 0.
set -u
root=${1:-.}
cd "$root" || exit 2
rank() {
	case $1 in
	common) echo 0 ;;
	conf|store) echo 1 ;;
	gpu|gitops) echo 2 ;;
	pipeline) echo 3 ;;
	webhooks) echo 4 ;;
	coord) echo 5 ;;
	cli) echo 6 ;;
	*) echo - ;;
	esac
}
bad=0
for dir in common conf store gpu gitops pipeline webhooks coord cli; do
	[ -d "$dir" ] || continue
	mine=$(rank "$dir")
	out=$(find "$dir" -name '*.[ch]' | sort | xargs -r grep -Hn '^[[:space:]]*#[[:space:]]*include[[:space:]]*"[^"]*/' |
	    while IFS= read -r hit; do
		file=${hit%%:*}
		rest=${hit#*:}
		line=${rest%%:*}
		hdr=$(printf '%s\n' "$rest" | sed 's/^[^"]*"\([^"]*\)".*/\1/')
		top=${hdr%%/*}
		theirs=$(rank "$top")
		[ "$theirs" = - ] && continue
		[ "$top" = "$dir" ] && continue
		if [ "$theirs" -ge "$mine" ]; then
			echo "$file:$line: includes $hdr: layer $top is not below $dir"
		fi
	done)
	if [ -n "$out" ]; then
		printf '%s\n' "$out"
		bad=1
	fi
done
exit $bad
