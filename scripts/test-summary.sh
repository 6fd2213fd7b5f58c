#!/usr/bin/env bash
# Passes `go test -v` output through and keeps its exit status meaningful in a pipe:
# fails when a test or the test binary failed (a FAIL line) or no test ran, and prints
# a closing count of the top-level tests.
set -u
pass=0 fail=0 skip=0 binfail=0
while IFS= read -r line; do
	printf '%s\n' "$line"
	case "$line" in
	"--- PASS"*) pass=$((pass + 1)) ;;
	"--- FAIL"*) fail=$((fail + 1)) ;;
	"--- SKIP"*) skip=$((skip + 1)) ;;
	"FAIL"*) binfail=1 ;; # the package's verdict: also a panic, a timeout, a build error
	esac
done
echo "integration: $pass passed, $fail failed, $skip skipped"
if [ "$binfail" -eq 1 ] && [ "$fail" -eq 0 ]; then
	echo "integration: the test binary failed outside any test (a panic, a timeout or a build error: see above)"
fi
[ "$fail" -eq 0 ] && [ "$binfail" -eq 0 ] && [ "$pass" -gt 0 ]
