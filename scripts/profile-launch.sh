#!/usr/bin/env bash
# CPU profiles of real launches (docs/performance.md, "Profile-guided optimisation
# and the launcher's own CPU"): a build with the launchprofile tag (package
# internal/launchprof) profiles each devsandbox and bwrap-init process of
# PROFILE_RUNS launches (default 1500) of each of `--egress=open -- true` and
# `--egress=proxy -- true` as PROFILE_USER (default dsbtest) in an empty project;
# `go tool pprof -proto` merges them into OUT/devsandbox.pprof and
# OUT/bwrap-init.pprof (OUT: the first argument, default launch-profiles). Root.
# Read them with `go tool pprof -top OUT/devsandbox.pprof`; copied to
# cmd/devsandbox/default.pgo and cmd/devsandbox-bwrap-init/default.pgo they are what
# profile-guided optimisation would build with.
set -euo pipefail
cd "$(dirname "$0")/.."
out=$(realpath -m "${1:-launch-profiles}")
runs=${PROFILE_RUNS:-1500}
user=${PROFILE_USER:-dsbtest}
tags=${TAGS:-urfave_cli_no_docs}
[ "$(id -u)" = 0 ] || { echo "profile-launch: run as root (the launches run as $user)" >&2; exit 1; }
id "$user" >/dev/null 2>&1 || { echo "profile-launch: no user $user (make setup makes dsbtest)" >&2; exit 1; }
work=$(mktemp -d /tmp/devsandbox-profile.XXXXXX)
trap 'rm -rf "$work"' EXIT
# -pgo=off: the profile is of the code as written, whatever default.pgo is beside it.
CGO_ENABLED=0 go build -tags "$tags launchprofile" -pgo=off -trimpath -o "$work/bin/" \
	./cmd/devsandbox ./cmd/devsandbox-bwrap-init ./cmd/devsandbox-init ./cmd/devsandbox-proxy
chmod 0755 "$work" "$work/bin"
# devsandbox writes to $DEVSANDBOX_PROFILE_DIR; the init gets the sandbox's
# environment and writes to .launch-profiles in the sandbox home, kept under
# $work/data (XDG_DATA_HOME) for this run: nothing is written into the project,
# whose files every launch scans. The project's state (XDG_STATE_HOME) is the
# run's own too, so nothing is left in the user's.
mkdir -p "$work/launcher" "$work/project" "$work/data" "$work/state"
chown "$user" "$work/launcher" "$work/project" "$work/data" "$work/state"
home=$(getent passwd "$user" | cut -d: -f6)
cd "$work/project"
launch() { # launch MODE: one launch as the user; its stderr in $work/stderr
	runuser -u "$user" -- env -i HOME="$home" PATH=/usr/bin:/bin XDG_DATA_HOME="$work/data" XDG_STATE_HOME="$work/state" \
		DEVSANDBOX_PROFILE_DIR="$work/launcher" "$work/bin/devsandbox" --egress="$1" -- true 2>"$work/stderr"
}
# First use (the sandbox home, the proxy's CA) is not what a launch repeats.
for mode in open proxy; do
	launch "$mode" || { cat "$work/stderr" >&2; exit 1; }
done
sbhome=$(echo "$work"/data/devsandbox/*/home)
[ -d "$sbhome" ] || { echo "profile-launch: no sandbox home under $work/data" >&2; exit 1; }
rm -f "$work"/launcher/*
runuser -u "$user" -- mkdir "$sbhome/.launch-profiles"
failed=0
for i in $(seq 1 "$runs"); do
	for mode in open proxy; do
		# The profiling runtime's note on the rate is expected on stderr; a failed
		# launch prints all of it, and more than 2 % of them stops the run.
		if ! launch "$mode"; then
			echo "profile-launch: launch $i ($mode) failed:" >&2
			cat "$work/stderr" >&2
			failed=$((failed + 1))
			[ "$failed" -le $((runs / 50)) ] || exit 1
		fi
	done
done
cd - >/dev/null
mkdir -p "$out"
merge() { # merge DIR OUT
	echo "profile-launch: $(find "$1" -name 'cpu-*.pprof' | wc -l) profiles -> $2"
	# In batches: one pprof over thousands of names would outgrow xargs's command line.
	# shellcheck disable=SC2016 # expanded by the inner sh
	find "$1" -name 'cpu-*.pprof' -print0 | xargs -0 -n 500 sh -c 'go tool pprof -proto "$@" >"$(mktemp -p "$0" merged-XXXXXX.pb)" 2>/dev/null' "$work"
	go tool pprof -proto "$work"/merged-*.pb >"$2" 2>/dev/null
	rm -f "$work"/merged-*.pb
	go tool pprof -top -nodecount=0 "$2" 2>/dev/null | grep -m1 'Total samples'
}
merge "$work/launcher" "$out/devsandbox.pprof"
merge "$sbhome/.launch-profiles" "$out/bwrap-init.pprof"
