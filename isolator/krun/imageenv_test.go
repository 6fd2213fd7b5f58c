package krun

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/devsandbox/devsandbox/isolator"
	"github.com/devsandbox/devsandbox/isolator/sandboxinit/wire"
)

// exitingFake is a fake whose init reports ready and exits.
func exitingFake(t *testing.T, ref string, images ...string) *fakeEngine {
	f := newFake(t, "krun")
	f.refImage, f.images = ref, images
	f.init = func(_ io.Reader, _, stderr io.Writer, _ *wire.Hello) {
		fmt.Fprint(stderr, wire.ReadyMarker)
	}
	return f
}

// runWith runs p on f and returns the spec's UnsetEnv and the manifest's ImageEnv.
func runWith(t *testing.T, f *fakeEngine, p *isolator.Plan) (unset, give []string) {
	t.Helper()
	if _, err := backend(f, t).Run(context.Background(), p, isolator.Stdio{Out: io.Discard, Err: io.Discard}); err != nil {
		t.Fatalf("Run: %v (calls %q)", err, f.Calls())
	}
	m, err := wire.DecodeManifest(f.created.Env[wire.ManifestEnv])
	if err != nil {
		t.Fatal(err)
	}
	return f.created.UnsetEnv, m.ImageEnv
}

// The second run of an image takes its ENV from the first run's record, with no
// inspect of the image: the create's inspect shows podman made it from that image.
func TestRunImageEnvRecorded(t *testing.T) {
	p := runPlan(t)
	img := fakeImage + " GODEBUG=tlsrsakex=1 PATH=/img/bin"
	for i, wantCalls := range []string{"image-env(img) create runtime attach start", "create runtime attach start"} {
		f := exitingFake(t, "", img)
		unset, give := runWith(t, f, p)
		if got := f.Calls(); !strings.HasPrefix(got, wantCalls+" ") || strings.Contains(got, "remove") {
			t.Errorf("run %d: calls %q, want %q first", i+1, got, wantCalls)
		}
		if !slices.Equal(unset, []string{"GODEBUG"}) || !slices.Equal(give, []string{"GODEBUG=tlsrsakex=1", "PATH=/img/bin"}) {
			t.Errorf("run %d: UnsetEnv %q, manifest ImageEnv %q", i+1, unset, give)
		}
	}
}

// A reference that names another image than the record's (retagged, or another
// storage's): the container made with the old ENV is removed before it started and
// made again with the new image's, read by its ID; the record follows.
func TestRunImageRetagged(t *testing.T) {
	p := runPlan(t)
	root := filepath.Dir(p.StateDir)
	if err := saveImageEnv(root, "img", "aaaa", []string{"OLD=1"}); err != nil {
		t.Fatal(err)
	}
	f := exitingFake(t, "", "bbbb GODEBUG=x NEW=2")
	unset, give := runWith(t, f, p)
	if got, want := f.Calls(), "create runtime remove image-env(bbbb) create runtime attach start"; !strings.HasPrefix(got, want+" ") {
		t.Errorf("calls %q, want %q first", got, want)
	}
	if !slices.Equal(unset, []string{"GODEBUG", "NEW"}) || !slices.Equal(give, []string{"GODEBUG=x", "NEW=2"}) {
		t.Errorf("UnsetEnv %q, manifest ImageEnv %q; want the new image's", unset, give)
	}
	if id, env, ok := loadImageEnv(root, "img"); !ok || id != "bbbb" || !slices.Equal(env, []string{"GODEBUG=x", "NEW=2"}) {
		t.Errorf("record %q %q %v, want the new image's", id, env, ok)
	}

	// Retagged between the inspect and the create (no record): caught the same way.
	p = runPlan(t)
	f = exitingFake(t, "aaaa A=1", "bbbb GODEBUG=x")
	unset, _ = runWith(t, f, p)
	if got, want := f.Calls(), "image-env(img) create runtime remove image-env(bbbb) create runtime attach start"; !strings.HasPrefix(got, want+" ") {
		t.Errorf("calls %q, want %q first", got, want)
	}
	if !slices.Equal(unset, []string{"GODEBUG"}) {
		t.Errorf("UnsetEnv %q, want the image podman used", unset)
	}
}

// An image that changes at every create: the run gives up, closed, and started
// nothing.
func TestRunImageAlwaysMoving(t *testing.T) {
	f := exitingFake(t, "zzzz Z=1", "aaaa A=1", "bbbb B=1", "cccc C=1", "dddd D=1")
	_, err := backend(f, t).Run(context.Background(), runPlan(t), isolator.Stdio{Out: io.Discard, Err: io.Discard})
	if !errors.Is(err, isolator.ErrProtection) || !errors.Is(err, errImageMoving) {
		t.Fatalf("Run: %v", err)
	}
	if got := f.Calls(); strings.Contains(got, "start") || strings.Count(got, "create") != imageTries || strings.Count(got, "remove") != imageTries {
		t.Errorf("calls %q", got)
	}
}

// A record that is not one (a link, another reference's, garbage, not an image ID)
// is a miss; the records' directory is the user's alone.
func TestImageEnvRecord(t *testing.T) {
	root := t.TempDir()
	if _, _, ok := loadImageEnv(root, "img"); ok {
		t.Error("a record out of nothing")
	}
	if err := saveImageEnv(root, "img", "sha256:abcd", []string{"A=1"}); err != nil {
		t.Fatal(err)
	}
	if id, env, ok := loadImageEnv(root, "img"); !ok || !sameImage(id, "abcd") || !slices.Equal(env, []string{"A=1"}) {
		t.Errorf("loaded %q %q %v", id, env, ok)
	}
	if fi, err := os.Stat(filepath.Join(root, imageEnvDir)); err != nil || fi.Mode().Perm() != 0o700 {
		t.Errorf("records' directory: %v %v", fi, err)
	}
	p := imageEnvPath(root, "img")
	for name, plant := range map[string]func() error{
		"link": func() error {
			other := filepath.Join(root, "other")
			if err := os.WriteFile(other, []byte(`{"ref":"img","id":"abcd","env":[]}`), 0o600); err != nil {
				return err
			}
			return os.Symlink(other, p)
		},
		"another reference's": func() error { return os.WriteFile(p, []byte(`{"ref":"img2","id":"abcd","env":[]}`), 0o600) },
		"garbage":             func() error { return os.WriteFile(p, []byte(`{"ref":`), 0o600) },
		"not an image ID":     func() error { return os.WriteFile(p, []byte(`{"ref":"img","id":"../x","env":[]}`), 0o600) },
	} {
		_ = os.Remove(p)
		if err := plant(); err != nil {
			t.Fatal(err)
		}
		if _, _, ok := loadImageEnv(root, "img"); ok {
			t.Errorf("%s: read as a record", name)
		}
	}
	// A link planted at the record is replaced, not followed.
	_ = os.Remove(p)
	target := filepath.Join(root, "target")
	if err := os.Symlink(target, p); err != nil {
		t.Fatal(err)
	}
	if err := saveImageEnv(root, "img", "abcd", nil); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(target); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the save followed the link: %v", err)
	}
	if !sameImage("sha256:ab", "ab") || sameImage("", "") || sameImage("ab", "ac") {
		t.Error("sameImage")
	}
}
