//go:build integration

package integration

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// bwrap runs the init installed next to devsandbox: devsandbox-bwrap-init, else
// devsandbox-init, else devsandbox itself; each is pid 1 at /run/devsandbox/init,
// starts the command and serves the proxy modes.
func TestBwrapInitFallback(t *testing.T) {
	requireBwrap(t)
	p := newProject(t)
	for _, c := range []struct {
		installed []string
		init      string // the one bwrap runs
	}{
		{[]string{"devsandbox", "devsandbox-init", "devsandbox-bwrap-init", "devsandbox-proxy"}, "devsandbox-bwrap-init"},
		{[]string{"devsandbox", "devsandbox-init", "devsandbox-proxy"}, "devsandbox-init"},
		{[]string{"devsandbox", "devsandbox-proxy"}, "devsandbox"},
	} {
		t.Run(c.init, func(t *testing.T) {
			dir, err := os.MkdirTemp("", "devsandbox-it-init-")
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { os.RemoveAll(dir) })
			if err := os.Chmod(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			var want int
			for _, name := range c.installed {
				data, err := os.ReadFile(filepath.Join(filepath.Dir(it.bin), name))
				if err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(filepath.Join(dir, name), data, 0o755); err != nil {
					t.Fatal(err)
				}
				if name == c.init {
					want = len(data)
				}
			}
			for _, mode := range []string{"open", "proxy"} {
				r := runBin(t, filepath.Join(dir, "devsandbox"), p.dir, nil, "", "--isolator=bwrap", "--egress="+mode, "--",
					"/bin/sh", "-c", "stat -c %s /run/devsandbox/init; exit 3")
				if r.code != 3 || strings.TrimSpace(r.stdout) != strconv.Itoa(want) {
					t.Errorf("--egress=%s: want exit 3 with %s (%d bytes) as the init:\n%s", mode, c.init, want, r)
				}
			}
		})
	}
}

// The init, pid 1, is out of the sandbox's reach: it holds the readiness socket to
// devsandbox while the command starts (the report follows the command's start), and
// a command that reached it could forge the report. Nothing in the sandbox may list
// or open its descriptors, read its environment or memory, or trace it.
func TestBwrapInitUnreachable(t *testing.T) {
	requireBwrap(t)
	p := newProject(t)
	script := `ls /proc/1/fd >/dev/null 2>&1 && echo "LISTED /proc/1/fd"
for fd in 0 1 2 3 4 5 6; do readlink /proc/1/fd/$fd >/dev/null 2>&1 && echo "REACHED /proc/1/fd/$fd"; done
head -c1 /proc/1/environ >/dev/null 2>&1 && echo "READ /proc/1/environ"
head -c1 /proc/1/mem >/dev/null 2>&1 && echo "READ /proc/1/mem"
readlink /proc/1/cwd >/dev/null 2>&1 && echo "REACHED /proc/1/cwd"
readlink /proc/1/exe >/dev/null 2>&1 && echo "REACHED /proc/1/exe"
echo done`
	for _, mode := range []string{"open", "proxy"} {
		out := p.mustSandbox("bwrap", []string{"--egress=" + mode}, script)
		if strings.TrimSpace(out) != "done" {
			t.Errorf("--egress=%s: the sandbox reached the init:\n%s", mode, out)
		}
	}
}
