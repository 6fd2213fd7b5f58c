#!/usr/bin/env bash
# Installs and prepares what the integration tests need on a Debian/Ubuntu machine.
# As root it installs packages and creates the unprivileged test user; as another user
# it only checks and prints the commands a root user would run. Idempotent.
set -euo pipefail

TEST_USER=${DEVSANDBOX_TEST_USER:-dsbtest}
PACKAGES=(bubblewrap passt nftables iptables iproute2 uidmap git procps busybox-static shellcheck curl python3-minimal openssh-client)

missing=()
for p in "${PACKAGES[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done

if [ "$(id -u)" -ne 0 ]; then
	if [ ${#missing[@]} -gt 0 ]; then
		echo "setup: missing packages: ${missing[*]}" >&2
		echo "setup: run as root: apt-get update && apt-get install -y ${missing[*]}" >&2
		exit 1
	fi
	echo "setup: not root; the integration tests run as $(id -un)"
	exit 0
fi

if [ ${#missing[@]} -gt 0 ]; then
	echo "setup: installing ${missing[*]}"
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -qq
	apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

if ! id "$TEST_USER" >/dev/null 2>&1; then
	echo "setup: creating the unprivileged test user $TEST_USER"
	useradd --create-home --shell /bin/bash "$TEST_USER"
fi

# A fact of this test machine, not of the product: /dev/net/tun is 0600 here, and
# pasta (run as the unprivileged user) needs it. Ordinary distributions ship 0666.
if [ -c /dev/net/tun ]; then
	chmod 0666 /dev/net/tun
fi
echo "setup: ready (bwrap $(bwrap --version | awk '{print $2}'), test user $TEST_USER)"
