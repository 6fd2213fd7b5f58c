package syscalls

import (
	"fmt"
	"runtime"
	"slices"
	"strings"
)

// Arch is a Linux architecture the policy is rendered for, by its GOARCH name.
type Arch string

// The supported architectures.
const (
	AMD64 Arch = "amd64"
	ARM64 Arch = "arm64"
)

// Arches are the supported architectures.
var Arches = []Arch{AMD64, ARM64}

// sysnum is one system call of an architecture.
type sysnum struct {
	name string
	nr   uint32
}

// calls returns arch's system calls sorted by name, and AUDIT_ARCH_* of its native
// system call ABI (seccomp_data.arch); nil for an unsupported arch. The tables are
// static data (zsysnum.go): no package initialisation on every launch.
func calls(arch Arch) ([]sysnum, uint32) {
	switch arch {
	case AMD64:
		return amd64Calls[:], 0xc000003e
	case ARM64:
		return arm64Calls[:], 0xc00000b7
	}
	return nil, 0
}

// number returns the number of name on arch.
func number(arch Arch, name string) (uint32, bool) {
	cs, _ := calls(arch)
	i, ok := slices.BinarySearchFunc(cs, name, func(c sysnum, n string) int { return strings.Compare(c.name, n) })
	if !ok {
		return 0, false
	}
	return cs[i].nr, true
}

// ErrArch is returned for an architecture the policy has no table for.
type ErrArch struct{ Arch string }

func (e ErrArch) Error() string {
	return fmt.Sprintf("the syscall policy has no system call table for %s (supported: amd64, arm64)", e.Arch)
}

// Native returns the architecture devsandbox was built for, which is the one it
// runs sandboxes on (the bwrap isolator; a container engine reports its own).
func Native() (Arch, error) { return ParseArch(runtime.GOARCH) }

// ParseArch returns the architecture with the GOARCH name s (also accepted: the
// names container engines report, x86_64 and aarch64).
func ParseArch(s string) (Arch, error) {
	switch s {
	case "amd64", "x86_64":
		return AMD64, nil
	case "arm64", "aarch64":
		return ARM64, nil
	}
	return "", ErrArch{s}
}
