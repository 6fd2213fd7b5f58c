package docker

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"fmt"
	"go/ast"
	"go/token"
	"io"
	"slices"
	"strings"
	"testing"

	"github.com/devsandbox/devsandbox/internal/sourcecheck"
	"github.com/devsandbox/devsandbox/isolator"
)

// Every container the package removes goes with its anonymous volumes: an image's
// VOLUME gives each container made from it one (the home volume's chown helper, the
// mask and content helpers, the companion, the firewall helper, the sandbox), which
// nothing names, so one left behind stays on the engine with what was written there,
// out of reach of `sandboxes rm` and prune. Named volumes (the home, the endpoint)
// are not the engine's to remove with a container. Read from the package's source: a
// remove added later must say so too.
func TestEveryContainerRemoveTakesVolumes(t *testing.T) {
	seen := sourcecheck.Literals(t, "dockercontainer", "RemoveOptions", func(fset *token.FileSet, lit *ast.CompositeLit) {
		if !sourcecheck.HasField(lit, "RemoveVolumes", sourcecheck.IsTrue) {
			t.Errorf("%s: a container removed without RemoveVolumes: true: the anonymous volumes of the image's VOLUMEs stay on the engine", fset.Position(lit.Pos()))
		}
	})
	if seen < 10 {
		t.Fatalf("found %d container RemoveOptions in the package's source; the search no longer finds them", seen)
	}
}

// The home volume's archive is one directory entry, v/ (the volume's root, at /v),
// the sandbox user's, 0700: nothing else is written into the volume.
func TestHomeVolumeTar(t *testing.T) {
	tr := tar.NewReader(bytes.NewReader(homeVolumeTar(1000, 1001)))
	var got []string
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, fmt.Sprintf("%c %s %d:%d %o", h.Typeflag, h.Name, h.Uid, h.Gid, h.Mode))
	}
	if want := []string{"5 v/ 1000:1001 700"}; !slices.Equal(got, want) {
		t.Errorf("home volume archive: %q, want %q", got, want)
	}
}

func TestHiddenBy(t *testing.T) {
	paths := []string{"/run/devsandbox/init", "/run/devsandbox/devsandbox-proxy", "/etc/passwd", "/etc/group"}
	for _, c := range []struct {
		vols        []string
		wantV, want string
	}{
		{nil, "", ""},
		{[]string{"/data", "/var/lib/postgresql/data", "/run/devsandbox-other"}, "", ""},
		{[]string{"/run/devsandbox"}, "/run/devsandbox", "/run/devsandbox/init"},
		{[]string{"/run/devsandbox/"}, "/run/devsandbox/", "/run/devsandbox/init"},
		{[]string{"/run"}, "/run", "/run/devsandbox/init"},
		{[]string{"/data", "/etc"}, "/etc", "/etc/passwd"},
		{[]string{"/etc/group"}, "/etc/group", "/etc/group"},
		{[]string{"/"}, "/", "/run/devsandbox/init"},
		{[]string{"run//devsandbox/."}, "run//devsandbox/.", "/run/devsandbox/init"},
		{[]string{"/run/devsandbox/ep"}, "", ""}, // below: the files are not in it
	} {
		v, at := hiddenBy(c.vols, paths)
		if v != c.wantV || at != c.want {
			t.Errorf("hiddenBy(%q) = %q, %q; want %q, %q", c.vols, v, at, c.wantV, c.want)
		}
	}
}

// A base image that declares a VOLUME over the init's directory, on an engine that
// does not take the derived image as a load: the commit would leave devsandbox's init
// and proxy out of the image (they were copied into the volume) and keep the base's
// own at their paths, to run as the firewall helper (root, NET_ADMIN) and as the
// companion (given the credentials). The run is refused before any commit; a VOLUME
// elsewhere is committed as before.
func TestDerivedCommitRefusesHiddenFiles(t *testing.T) {
	for _, c := range []struct {
		vols   []string
		refuse bool
	}{
		{[]string{"/run/devsandbox"}, true},
		{[]string{"/etc"}, true},
		{[]string{"/data"}, false},
	} {
		f := newFake(t)
		f.baseVolumes = c.vols
		b, p := testIsolator(t, f, false)
		_, err := b.Run(context.Background(), p, isolator.Stdio{Out: io.Discard, Err: io.Discard})
		commits := slices.Index(f.derives, "ContainerCommit") >= 0
		var runs []string // the run's containers (named)
		for _, c := range f.created {
			if c.name != "" {
				runs = append(runs, c.name)
			}
		}
		if !c.refuse {
			if err != nil || !commits {
				t.Errorf("VOLUME %q: want the image committed and the run made, got commit %v, %v", c.vols, commits, err)
			}
			continue
		}
		if !errors.Is(err, isolator.ErrUnavailable) || !strings.Contains(err.Error(), "VOLUME "+c.vols[0]+", over ") || commits || len(runs) > 0 {
			t.Errorf("VOLUME %q: want the run refused before a commit, naming the VOLUME; got commit %v, runs %v, %v", c.vols, commits, runs, err)
		}
	}
}
