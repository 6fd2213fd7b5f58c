//go:build integration

package integration

import (
	"bytes"
	"encoding/hex"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/devsandbox/devsandbox/internal/buildstamp"
)

// A helper installed beside devsandbox from another build (one binary upgraded, or
// an older install's copy) is refused before anything starts: exit 125, naming the
// helper, its path, both builds and the fix, instead of failing later in words that
// blame something else (an old devsandbox-bwrap-init refusing a new flag read as
// "bubblewrap failed"). doctor's row says the same.
func TestHelperSkew(t *testing.T) {
	p := newProject(t)
	self, err := buildstamp.Read(it.bin)
	if err != nil || !self.Stamped() {
		t.Fatalf("the built devsandbox carries no build stamp (%v): build it with make build", err)
	}
	for _, c := range []struct {
		helper, iso string
		args        []string
	}{
		{"devsandbox-bwrap-init", "bwrap", nil},
		{"devsandbox-init", "bwrap", nil},
		{"devsandbox-proxy", "bwrap", []string{"--egress=proxy"}},
		{"devsandbox-docker", localDocker, nil},
		{"devsandbox-krun", "krun", nil},
	} {
		t.Run(c.helper, func(t *testing.T) {
			forEachIsolatorOf(t, []string{c.iso}, func(t *testing.T, iso string) {
				if iso != "bwrap" && !slices.Contains(isolators(), iso) {
					t.Skipf("%s is not among DEVSANDBOX_IT_ISOLATORS", iso)
				}
				dir := skewedInstall(t, c.helper)
				bin := filepath.Join(dir, "devsandbox")
				args := append(append([]string{"--isolator=" + iso}, c.args...), "--", "/bin/sh", "-c", "echo ran")
				r := runBin(t, bin, p.dir, nil, "", args...)
				helper := filepath.Join(dir, c.helper)
				got, _ := buildstamp.Read(helper)
				want := c.helper + " at " + helper + " is from another build than devsandbox at " + bin +
					" (" + c.helper + ": " + got.String() + "; devsandbox: " + self.String() + ")"
				if r.code != 125 || strings.Contains(r.stdout, "ran") || !strings.Contains(r.stderr, want) || !strings.Contains(r.stderr, "make install") {
					t.Errorf("a run with %s from another build: want exit 125 and %q with the fix:\n%s", c.helper, want, r)
				}
				d := runBin(t, bin, p.dir, nil, "", "doctor")
				row := "helper binaries"
				var line string
				for _, l := range strings.Split(d.stdout, "\n") {
					if strings.HasPrefix(l, row) {
						line = l
					}
				}
				if !strings.Contains(line, "unavailable") || !strings.Contains(line, c.helper+" at "+helper) {
					t.Errorf("doctor's %q row does not name %s as from another build:\n%s", row, c.helper, d)
				}
			})
		})
	}
}

// skewedInstall copies the built binaries into a directory the test user can run
// them from, with helper's build stamp changed: a helper from another build.
func skewedInstall(t *testing.T, helper string) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "devsandbox-it-skew-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, name := range binaries() {
		data, err := os.ReadFile(filepath.Join(filepath.Dir(it.bin), name))
		if os.IsNotExist(err) {
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		if name == helper {
			s, err := buildstamp.Read(filepath.Join(filepath.Dir(it.bin), name))
			if err != nil || !s.Stamped() {
				t.Fatalf("%s carries no build stamp (%v)", name, err)
			}
			digest, _ := hex.DecodeString(s.Digest)
			note := append([]byte("dsb1"), digest...)
			i := bytes.Index(data, note)
			if i < 0 {
				t.Fatalf("%s: its build stamp is not in the file", name)
			}
			data[i+4] ^= 0xff // another source digest: another build
		}
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}
