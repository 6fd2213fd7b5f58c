//go:build integration

package integration

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// Package initialisation runs on every start of devsandbox, the bwrap init and the
// docker backend, whatever the command: a regexp compiled or a table built at package
// level is paid by every launch, though only some runs use it (issue 18: three regexps of main's
// usage errors cost 0.05 ms and 40 KB of heap a launch). Each of devsandbox's own
// packages stays within a small budget of heap at init (GODEBUG=inittrace=1, whose
// byte and allocation counts do not move with the load); what only some runs need is
// built on first use (sync.OnceValue), a fixed table is a switch or a constant.
func TestPackageInitBudget(t *testing.T) {
	const maxBytes, maxAllocs = 4096, 64
	p := newProject(t)
	for _, c := range []struct {
		bin  string
		args []string
	}{
		{"devsandbox", []string{"version"}},
		// Without arguments these refuse to start; their packages are initialised
		// before that, as on a launch.
		{"devsandbox-bwrap-init", nil},
		{"devsandbox-docker", nil},
	} {
		if _, err := os.Stat(filepath.Join(filepath.Dir(it.bin), c.bin)); err != nil {
			t.Fatalf("%s: %v (run `make integration`, which builds every binary)", c.bin, err)
		}
		r := runBin(t, filepath.Join(filepath.Dir(it.bin), c.bin), p.dir, []string{"GODEBUG=inittrace=1"}, "", c.args...)
		inits := 0
		for _, line := range strings.Split(r.stderr, "\n") {
			// init PKG @0.5 ms, 0.01 ms clock, 312 bytes, 7 allocs
			f := strings.Fields(line)
			if len(f) != 11 || f[0] != "init" || f[8] != "bytes," || f[10] != "allocs" {
				continue
			}
			inits++
			pkg := f[1]
			if pkg != "main" && !strings.HasPrefix(pkg, "github.com/devsandbox/devsandbox/") {
				continue
			}
			bytes, err1 := strconv.Atoi(f[7])
			allocs, err2 := strconv.Atoi(f[9])
			if err1 != nil || err2 != nil {
				t.Fatalf("%s: unreadable init trace line %q", c.bin, line)
			}
			if bytes > maxBytes || allocs > maxAllocs {
				t.Errorf("%s: package init of %s allocates %d bytes in %d allocations, over the budget of %d bytes and %d allocations that every start pays: build what only some runs need on first use (sync.OnceValue), a fixed table as a switch or a constant",
					c.bin, pkg, bytes, allocs, maxBytes, maxAllocs)
			}
		}
		if inits == 0 {
			t.Fatalf("%s: no package init trace on stderr (GODEBUG=inittrace=1):\n%s", c.bin, r)
		}
	}
}
