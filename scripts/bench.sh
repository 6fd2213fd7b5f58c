#!/usr/bin/env bash
# Launch benchmarks: devsandbox against plain bwrap, alternating, with ratios.
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${1:-bin/devsandbox}
go run ./scripts/benchlaunch -bin "$bin" -n "${BENCH_RUNS:-200}" -large "${BENCH_LARGE:-200000}"
