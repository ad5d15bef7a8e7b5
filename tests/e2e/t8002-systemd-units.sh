#!/bin/sh
# t8002: the systemd units `make install` installs are valid for systemd
# (`systemd-analyze verify` prints nothing), keep the hardening the design
# asks for, give device access to the runner only, and their sysusers.d
# entry creates the kernelbot user. Skips (exit 0, saying why) where
# systemd-analyze cannot run in this container.
. "$(dirname "$0")/lib.sh"
t_init t8002
P="$TMP/prefix"
if ! command -v systemd-analyze >/dev/null 2>&1; then
	echo "t8002: skipped: systemd-analyze is not installed (scripts/install-deps.sh installs systemd)"
	exit 0
fi
# Can verify run here at all? A minimal valid unit must verify silently.
mkdir -p "$TMP/probe"
printf '[Service]\nExecStart=/bin/true\n' >"$TMP/probe/probe.service"
if ! (cd "$TMP/probe" && systemd-analyze verify ./probe.service) >"$TMP/probe.out" 2>&1 ||
	[ -s "$TMP/probe.out" ]; then
	echo "t8002: skipped: systemd-analyze verify does not work in this container: $(head -n 3 "$TMP/probe.out")"
	exit 0
fi

check "make install-data installs the units" make -s -C "$KB_ROOT" install-data PREFIX="$P" DESTDIR=
U="$P/lib/systemd/system"
check "kernelbot.service installed" test -s "$U/kernelbot.service"
check "kernelbot-runner@.service installed" test -s "$U/kernelbot-runner@.service"
check "PREFIX substituted" grep -q "^ExecStart=$P/bin/kernelbot serve " "$U/kernelbot.service"
check "no placeholder left" sh -c "! grep -q @PREFIX@ '$U'/*.service"

# verify checks that ExecStart's binary exists: the one under test.
mkdir -p "$P/bin"
ln -s "$KERNELBOT" "$P/bin/kernelbot"
cp "$U/kernelbot-runner@.service" "$TMP/kernelbot-runner@0.service"
out=$(cd "$U" && systemd-analyze verify ./kernelbot.service 2>&1)
check_eq "systemd-analyze verify kernelbot.service: no complaint" "$out" ""
out=$(cd "$TMP" && systemd-analyze verify ./kernelbot-runner@0.service 2>&1)
check_eq "systemd-analyze verify kernelbot-runner@0.service: no complaint" "$out" ""

# A unit with a misspelt key is reported: the check above can fail.
sed 's/^WatchdogSec=/WatchdgSec=/' "$U/kernelbot.service" >"$TMP/typo.service"
out=$(cd "$TMP" && systemd-analyze verify ./typo.service 2>&1)
check_match "verify reports a misspelt key" "$out" "Unknown key 'WatchdgSec'"

S="$U/kernelbot.service"
R="$U/kernelbot-runner@.service"
for key in Type=notify WatchdogSec= User=kernelbot StateDirectory=kernelbot NoNewPrivileges=yes \
	ProtectSystem=strict PrivateTmp=yes ProtectHome=yes RestrictAddressFamilies= \
	SystemCallArchitectures=native LoadCredential=; do
	check "serve: $key" grep -q "^$key" "$S"
	check "runner: $key" grep -q "^$key" "$R"
done
check "serve: no devices" grep -q '^PrivateDevices=yes' "$S"
check "serve: no DeviceAllow" sh -c "! grep -q '^DeviceAllow=' '$S'"
check "serve: namespaces restricted" grep -q '^RestrictNamespaces=yes' "$S"
check "runner: its GPU only" grep -q '^DeviceAllow=/dev/nvidia%i rw' "$R"
check "runner: device policy closed" grep -q '^DevicePolicy=closed' "$R"
check "runner: namespaces left to the sandbox" sh -c "! grep -q '^RestrictNamespaces=' '$R'"
check "runner: delegated cgroup for the memory limit" grep -q '^Delegate=yes' "$R"
check "runner: GPU index on the command line" grep -q -- '--gpu %i' "$R"

if command -v systemd-sysusers >/dev/null 2>&1; then
	mkdir -p "$TMP/root/etc"
	check "sysusers.d entry applies" sh -c "systemd-sysusers --root='$TMP/root' '$P/lib/sysusers.d/kernelbot.conf' >/dev/null 2>&1"
	check "it creates the kernelbot user" grep -q '^kernelbot:' "$TMP/root/etc/passwd"
fi
t_done
