#!/usr/bin/env bash
# Where a tunnel's CPU goes: one sandbox (bwrap, the default egress proxy) makes N
# 256 MiB downloads through a CONNECT tunnel (curl --proxytunnel) from an origin in a
# network namespace this script creates, the same origin as benchlaunch's. It prints
# each download's speed and, by MODE:
#   cpu     the proxy's CPU (its threads' schedstat run time) and context switches
#           over the downloads;
#   strace  `strace -c -f` of the proxy over the downloads (STRACE_OPTS replaces -c,
#           e.g. STRACE_OPTS='-e trace=splice' for every splice and what it moved),
#           written to OUT/strace.txt;
#   perf    `perf record -a -g` over the downloads, written to OUT/perf.data.
# Usage, as root: scripts/proxycpu.sh BINDIR [N] [cpu|strace|perf] [OUT]
# BINDIR holds devsandbox, devsandbox-init, devsandbox-bwrap-init and devsandbox-proxy
# (make build: bin). The sandbox runs as BENCH_USER (default dsbtest). Wrap it in
# `flock -x /work/scratch/bench.lock` on a shared machine.
set -euo pipefail
bindir=$(realpath "$1")
n=${2:-8}
mode=${3:-cpu}
out=$(realpath "${4:-.}")
user=${BENCH_USER:-dsbtest}
[ "$(id -u)" = 0 ] || { echo "proxycpu: run as root (the origin is a network namespace)" >&2; exit 1; }
cd "$(dirname "$0")/.."

work=$(mktemp -d /tmp/proxycpu.XXXXXX)
chmod 755 "$work"
# A throwaway home beside the user's own, which the integration suite guards (as
# benchrun.ThrowawayHome in Go: in /var/tmp, the own home's permissions and rc files).
realhome=$(getent passwd "$user" | cut -d: -f6)
home=$(mktemp -d /var/tmp/dsb-XXXXXX)
chmod "$(stat -c %a "$realhome")" "$home"
find "$realhome" -maxdepth 1 -name '.*' -type f -size -1024k -exec cp -p {} "$home/" \;
chown -R "$user:" "$home"
proj=$(mktemp -d "$home/proxycpu-proj.XXXXXX")
id=$((RANDOM % 250 + 1))
ns=dsbcpu$id link=dsbch$id peer=dsbcn$id
addr=10.231.$id.2:8080
origin=
cleanup() {
	set +e # remove everything, whatever fails
	if [ -n "$origin" ]; then
		kill "$origin" 2>/dev/null
		wait "$origin" 2>/dev/null
	fi
	ip link del "$link" 2>/dev/null
	ip netns del "$ns" 2>/dev/null
	rm -rf "$work" "$home" # the project and devsandbox's state and data for it
}
trap cleanup EXIT

go build -o "$work/benchlaunch" ./scripts/benchlaunch
for b in devsandbox devsandbox-init devsandbox-bwrap-init devsandbox-proxy; do
	cp "$bindir/$b" "$work/"
done
ip netns add "$ns"
ip link add "$link" type veth peer name "$peer"
ip link set "$peer" netns "$ns"
ip addr add "10.231.$id.1/30" dev "$link"
ip link set "$link" up
ip -n "$ns" addr add "10.231.$id.2/30" dev "$peer"
ip -n "$ns" link set "$peer" up
ip -n "$ns" link set lo up
ip netns exec "$ns" "$work/benchlaunch" -origin "$addr" &
origin=$!
until curl -s -o /dev/null "http://$addr/small"; do sleep 0.1; done

# The sandbox's first request starts the proxy; the downloads wait for the go file.
go=$proj/go
cat >"$proj/run.sh" <<EOS
curl -s -o /dev/null http://$addr/small
while [ ! -e $go ]; do sleep 0.1; done
for i in \$(seq $n); do curl -s --proxytunnel -o /dev/null -w '%{speed_download}\n' http://$addr/big; done
EOS
chown -R "$user:" "$proj"
(cd "$proj" && setpriv --reuid="$user" --regid="$user" --init-groups env -i HOME="$home" USER="$user" \
	PATH=/usr/local/bin:/usr/bin:/bin LANG=C.UTF-8 "$work/devsandbox" --allow "$addr" -- sh "$proj/run.sh" >"$work/speeds") &
sandbox=$!
proxy=
for _ in $(seq 100); do
	proxy=$(pgrep -n -u "$user" -f "$work/devsandbox-proxy") && break
	sleep 0.1
done
[ -n "$proxy" ] || { echo "proxycpu: the proxy did not start" >&2; exit 1; }

# Both read nothing (0) once the proxy is gone.
runtime() { { cat /proc/"$proxy"/task/*/schedstat || true; } 2>/dev/null | awk '{s += $1} END {print s + 0}'; }
switches() { { cat /proc/"$proxy"/task/*/status || true; } 2>/dev/null | awk '/ctxt_switches/ {s += $2} END {print s + 0}'; }
case $mode in
cpu)
	r0=$(runtime) r1=$r0 c1=0
	touch "$go"
	# Poll until the proxy exits: its threads' counters go with it.
	while [ -e "/proc/$proxy" ]; do
		r=$(runtime) c=$(switches)
		if [ "$r" -gt "$r1" ] && [ "$c" -gt 0 ]; then r1=$r c1=$c; fi
		sleep 0.01
	done
	wait "$sandbox"
	echo "proxy: $(((r1 - r0) / 1000000)) ms of CPU, $c1 context switches for $n downloads of 256 MiB"
	;;
strace)
	# shellcheck disable=SC2086 # STRACE_OPTS is a list of options
	strace ${STRACE_OPTS:--c} -f -p "$proxy" -o "$out/strace.txt" &
	tracer=$!
	sleep 0.5 # strace attaches to every thread
	touch "$go"
	wait "$sandbox"
	wait "$tracer" || true
	echo "strace of the proxy: $out/strace.txt"
	;;
perf)
	perf record -a -g -o "$out/perf.data" -- sh -c "touch $go; while kill -0 $sandbox 2>/dev/null; do sleep 0.05; done" 2>/dev/null
	wait "$sandbox"
	echo "perf record -a -g: $out/perf.data (perf report -i $out/perf.data --sort comm,sym)"
	;;
*)
	echo "proxycpu: MODE is cpu, strace or perf" >&2
	exit 2
	;;
esac
echo "speeds, MB/s: $(awk '{printf "%.0f ", $1 / 1e6}' "$work/speeds")"
