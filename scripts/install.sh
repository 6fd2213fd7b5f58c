#!/usr/bin/env bash
# Builds devsandbox and installs it with what it needs at run time (bubblewrap, passt).
# Installs packages itself when run as root or with sudo available; otherwise prints
# the exact command. PREFIX (default /usr/local) chooses where the binary goes.
set -euo pipefail
cd "$(dirname "$0")/.."
PREFIX=${PREFIX:-/usr/local}

need=()
command -v bwrap >/dev/null || need+=(bubblewrap)
command -v pasta >/dev/null || need+=(passt)

sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
if [ ${#need[@]} -gt 0 ]; then
	if command -v apt-get >/dev/null; then cmd="apt-get update && apt-get install -y ${need[*]}"
	elif command -v dnf >/dev/null; then cmd="dnf install -y ${need[*]}"
	elif command -v pacman >/dev/null; then cmd="pacman -S --noconfirm ${need[*]}"
	elif command -v zypper >/dev/null; then cmd="zypper install -y ${need[*]}"
	else cmd=""
	fi
	if [ -z "$cmd" ]; then
		echo "install: please install ${need[*]} with your package manager" >&2
		exit 1
	fi
	if [ -z "$sudo" ] || { command -v sudo >/dev/null && sudo -n true 2>/dev/null; }; then
		echo "install: installing ${need[*]}"
		$sudo sh -c "$cmd"
	else
		echo "install: run this, then run this script again:" >&2
		echo "  sudo sh -c '$cmd'" >&2
		exit 1
	fi
fi

make build
if [ -w "$PREFIX/bin" ] || [ -z "$sudo" ]; then sudo=""; fi
# The Makefile's list of binaries, installed the same way as `make install` does.
$sudo make --no-print-directory install-bin PREFIX="$PREFIX"
echo "install: devsandbox and its helpers are in $PREFIX/bin; run \`devsandbox doctor\` to check the host"
