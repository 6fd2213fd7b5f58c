#!/usr/bin/env bash
# Launch benchmarks: devsandbox against plain bwrap, alternating, with ratios.
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${1:-bin/devsandbox}
# BENCH_BWRAP=PATH: another bubblewrap for both plain bwrap and devsandbox.
go run ./scripts/benchlaunch -bin "$bin" -n "${BENCH_RUNS:-200}" -large "${BENCH_LARGE:-200000}" ${BENCH_BWRAP:+-bwrap "$BENCH_BWRAP"}
# The launch on a terminal, as a user at one gets it: a new pty as the command's
# stdin, stdout, stderr and controlling terminal, for plain bwrap and devsandbox
# alike (devsandbox relays it to a pty of the command's own).
go run ./scripts/benchlaunch -bin "$bin" -n "${BENCH_RUNS:-200}" -tty all -only "egress open" ${BENCH_BWRAP:+-bwrap "$BENCH_BWRAP"}
# The launch with BENCH_MOUNTS extra tmpfs in the mount table (in a private mount
# namespace of benchlaunch's own; the host's is untouched): bubblewrap before 0.13
# reads the whole table after each of its mounts. Each tmpfs is shared, a peer group
# of its own, as a host's mounts are where / is shared (systemd);
# BENCH_PROPAGATION=private leaves them private. BENCH_MOUNTS=0 skips it.
if [ "${BENCH_MOUNTS:-300}" -gt 0 ]; then
	go run ./scripts/benchlaunch -bin "$bin" -n "${BENCH_RUNS:-200}" -mounts "${BENCH_MOUNTS:-300}" \
		-propagation "${BENCH_PROPAGATION:-shared}" -only "egress open" ${BENCH_BWRAP:+-bwrap "$BENCH_BWRAP"}
fi
# MITM throughput, in process: TLS straight to an origin against the same download
# decrypted and re-encrypted by the proxy.
go test ./proxy -run '^$' -bench 'Download(TLSDirect|MITM)$' -benchtime 3x | awk '
/^BenchmarkDownloadTLSDirect/ { d = $(NF-1) }
/^BenchmarkDownloadMITM/ { m = $(NF-1) }
END {
	if (d == 0 || m == 0) { print "MITM benchmark: no result"; exit 1 }
	printf "MITM in process, 256 MiB over TLS: direct %.0f MB/s, decrypted through the proxy %.0f MB/s: %.2fx (target >= 0.5x)\n", d, m, m / d
}'
