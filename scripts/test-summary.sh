#!/usr/bin/env bash
# Passes `go test -v` output through and keeps its exit status meaningful in a pipe:
# fails when the output holds a FAIL line or no test ran, and prints a closing count.
set -u
pass=0 fail=0 skip=0
while IFS= read -r line; do
	printf '%s\n' "$line"
	case "$line" in
	"--- PASS"*) pass=$((pass + 1)) ;;
	"--- FAIL"*) fail=$((fail + 1)) ;;
	"--- SKIP"*) skip=$((skip + 1)) ;;
	"FAIL"*) fail=$((fail + 1)) ;;
	esac
done
echo "integration: $pass passed, $fail failed, $skip skipped"
[ "$fail" -eq 0 ] && [ "$pass" -gt 0 ]
