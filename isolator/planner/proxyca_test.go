package planner

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/devsandbox/devsandbox/proxy/ca"
	"github.com/devsandbox/devsandbox/proxy/ca/capem"
)

// loadCA has the CA made (by devsandbox-proxy outside tests) exactly when a run
// needs one and the file is missing or within capem.Renew of its end; a dry run never
// does, and a file it cannot use is an error, never replaced behind the user's back.
func TestLoadCAMakesOnlyWhenNeeded(t *testing.T) {
	made := 0
	maker := func(dir, name string) error { made++; return makeTestCA(dir, name) }
	expiring := func(t *testing.T) string {
		dir := t.TempDir()
		if _, err := ca.LoadOrCreate(dir, "p", time.Now().Add(-capem.Validity+capem.Renew/2)); err != nil {
			t.Fatal(err)
		}
		return dir
	}

	dir := t.TempDir()
	if c, err := loadCA(dir, "p", false, maker); c != nil || err != nil || made != 0 {
		t.Fatalf("dry run, no CA: %v, made %d (want none, nothing made)", err, made)
	}
	c, err := loadCA(dir, "p", true, maker)
	if err != nil || c == nil || made != 1 {
		t.Fatalf("run, no CA: %v, made %d", err, made)
	}
	if again, err := loadCA(dir, "p", true, maker); err != nil || string(again.PEM()) != string(c.PEM()) || made != 1 {
		t.Errorf("run, a fresh CA: %v, made %d (want it kept)", err, made)
	}

	old := expiring(t)
	if c, err := loadCA(old, "p", false, maker); err != nil || c == nil || made != 1 {
		t.Errorf("dry run, an expiring CA: %v, made %d (want it read as it is)", err, made)
	}
	c, err = loadCA(old, "p", true, maker)
	if err != nil {
		t.Fatalf("run, an expiring CA: %v", err)
	}
	if made != 2 || !time.Now().Add(capem.Renew).Before(c.NotAfter) {
		t.Errorf("run, an expiring CA: made %d, ends %v (want it renewed)", made, c.NotAfter)
	}

	bad := t.TempDir()
	if err := os.WriteFile(filepath.Join(bad, capem.FileName), []byte("junk"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := loadCA(bad, "p", true, maker); err == nil || made != 2 {
		t.Errorf("run, an unusable CA: %v, made %d (want an error, nothing made)", err, made)
	}
	failing := func(string, string) error { return errors.New("no entropy") }
	if _, err := loadCA(t.TempDir(), "p", true, failing); err == nil || !strings.Contains(err.Error(), "no entropy") {
		t.Errorf("a failed make: %v", err)
	}
}

// Without devsandbox-proxy beside the program (as beside this test binary), making
// the CA fails and says how to fix it.
func TestMakeCAWithoutProxy(t *testing.T) {
	err := makeCA(t.TempDir(), "p")
	if err == nil || !strings.Contains(err.Error(), "reinstall devsandbox") {
		t.Errorf("makeCA without devsandbox-proxy: %v", err)
	}
}
