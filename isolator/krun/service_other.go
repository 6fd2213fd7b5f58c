//go:build !linux

package krun

import (
	"fmt"
	"os"

	spec "github.com/opencontainers/runtime-spec/specs-go"
)

// pinService returns sock: krun needs Linux, and this package builds elsewhere only
// so that the macOS build of ./... does.
func pinService(sock string) (string, *os.File, error) { return sock, nil, nil }

func serviceLimits(string) (int, map[string]uint64, error) { return 0, nil, nil }

func serviceRlimits(string) ([]spec.POSIXRlimit, error) { return nil, nil }

func stopService(sock string, pid int) error {
	return fmt.Errorf("stopping podman's service on %s (pid %d): krun needs Linux", sock, pid)
}
