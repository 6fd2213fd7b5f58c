package main

import (
	"bufio"
	"fmt"
	"os"
	"strings"
)

// inMountNSFlag marks the re-executed benchlaunch that runs in its own mount namespace.
const inMountNSFlag = "-internal-in-mountns"

// The -propagation values: the extra tmpfs are each made shared (a peer group of its
// own, what a host whose / is shared, as systemd makes it, has), or left private.
const (
	propShared  = "shared"
	propPrivate = "private"
)

// checkMounts says whether -mounts n with -propagation prop can run as the user with
// this uid.
func checkMounts(n int, prop string, uid int) error {
	switch {
	case n < 0:
		return fmt.Errorf("-mounts %d: must be 0 or more", n)
	case prop != propShared && prop != propPrivate:
		return fmt.Errorf("-propagation %q: must be %s or %s", prop, propShared, propPrivate)
	case n > 0 && uid != 0:
		return fmt.Errorf("-mounts %d: needs root (it mounts in a private mount namespace of its own)", n)
	}
	return nil
}

// mountNSArgs is the argv of the re-executed benchlaunch: the same arguments, marked.
func mountNSArgs(self string, args []string) []string {
	return append(append([]string{self}, args...), inMountNSFlag)
}

// withoutMountNSFlag drops the mark from args, and says whether it was there.
func withoutMountNSFlag(args []string) ([]string, bool) {
	var out []string
	found := false
	for _, a := range args {
		if a == inMountNSFlag {
			found = true
			continue
		}
		out = append(out, a)
	}
	return out, found
}

// strayPropagation returns the mount points of a mountinfo text that propagate to or
// from a peer group (a "shared:" or "master:" optional field), except the shared mounts
// named in ours. A mount of ours that receives from a master is returned too: only a
// peer group of this namespace's own making is allowed.
func strayPropagation(mountinfo string, ours map[string]bool) []string {
	var out []string
	for _, l := range strings.Split(mountinfo, "\n") {
		f := strings.Fields(l)
		if len(f) < 7 {
			continue
		}
		for _, o := range f[6:] {
			if o == "-" {
				break
			}
			shared := strings.HasPrefix(o, "shared:")
			if shared && !ours[f[4]] || strings.HasPrefix(o, "master:") {
				out = append(out, f[4])
				break
			}
		}
	}
	return out
}

func countLines(name string) (int, error) {
	f, err := os.Open(name)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	n := 0
	s := bufio.NewScanner(f)
	for s.Scan() {
		n++
	}
	return n, s.Err()
}
