#!/bin/sh
# Prints the build stamp `make build` gives every binary (go build -ldflags -B):
# 0x, then hex of "dsb1", 8 bytes of a digest of the Go sources, go.mod and go.sum,
# and the version ($1, at most 20 bytes). Binaries built from the same sources with
# the same version carry the same stamp; devsandbox refuses a helper whose stamp is
# not its own (internal/buildstamp).
set -eu
version=$(printf '%s' "${1:-dev}" | cut -c1-20)
digest=$(find . -path ./bin -prune -o -path ./.git -prune -o \( -name '*.go' -o -name go.mod -o -name go.sum \) -type f -print0 |
	LC_ALL=C sort -z | xargs -0 sha256sum | sha256sum | cut -c1-16)
printf '0x%s%s%s\n' "$(printf dsb1 | od -An -tx1 | tr -d ' \n')" "$digest" "$(printf '%s' "$version" | od -An -tx1 | tr -d ' \n')"
