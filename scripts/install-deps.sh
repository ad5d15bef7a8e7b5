#!/bin/sh
# Installs the Debian packages kernelbot builds and tests with (README.md,
# "Building"). Idempotent: silent and quick when everything is present, so
# the Makefile can call it before every build and test run. With
# arguments it installs those packages instead (clang for `make fuzz`).
set -u

PKGS="build-essential pkg-config libgit2-dev libcurl4-openssl-dev
libjansson-dev libsodium-dev libmicrohttpd-dev libsqlite3-dev libyaml-dev
libdlpack-dev libssl-dev libsystemd-dev libseccomp-dev python3 python3-torch
python3-numpy python3-pytest curl git sqlite3 systemd openssl
e2fsprogs mount util-linux"
[ $# -gt 0 ] && PKGS="$*"

missing=""
for p in $PKGS; do
	s=$(dpkg-query -W -f='${db:Status-Status}' "$p" 2>/dev/null)
	[ "$s" = installed ] || missing="$missing $p"
done
[ -z "$missing" ] && exit 0

echo "install-deps: missing Debian packages:$missing" >&2
if ! command -v apt-get >/dev/null 2>&1; then
	echo "install-deps: no apt-get here; install them with your package manager" >&2
	exit 1
fi
if [ "$(id -u)" -ne 0 ]; then
	if command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
		SUDO="sudo -n"
	else
		echo "install-deps: not root and no password-less sudo; run as root:" >&2
		echo "  apt-get install$missing" >&2
		exit 1
	fi
else
	SUDO=""
fi

export DEBIAN_FRONTEND=noninteractive
log=$(mktemp)
# A fresh machine may have no package lists yet; refresh them once.
if ! $SUDO apt-get install -y -q --no-install-recommends $missing >"$log" 2>&1; then
	if ! $SUDO apt-get update -q >>"$log" 2>&1 ||
	   ! $SUDO apt-get install -y -q --no-install-recommends $missing >>"$log" 2>&1; then
		tail -n 20 "$log" >&2
		echo "install-deps: apt-get failed (is the Debian mirror reachable?)" >&2
		rm -f "$log"
		exit 1
	fi
fi
rm -f "$log"
echo "install-deps: installed$missing" >&2
