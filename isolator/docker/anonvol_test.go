package docker

import (
	"archive/tar"
	"bytes"
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// Every container the package removes goes with its anonymous volumes: an image's
// VOLUME gives each container made from it one (the home volume's chown helper, the
// mask and content helpers, the companion, the firewall helper, the sandbox), which
// nothing names, so one left behind stays on the engine with what was written there,
// out of reach of `sandboxes rm` and prune. Named volumes (the home, the endpoint)
// are not the engine's to remove with a container. Read from the package's source: a
// remove added later must say so too.
func TestEveryContainerRemoveTakesVolumes(t *testing.T) {
	fset := token.NewFileSet()
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	seen := 0
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(f, func(n ast.Node) bool {
			lit, ok := n.(*ast.CompositeLit)
			if !ok {
				return true
			}
			sel, ok := lit.Type.(*ast.SelectorExpr)
			if !ok || sel.Sel.Name != "RemoveOptions" || fmt.Sprint(sel.X) != "dockercontainer" {
				return true
			}
			seen++
			if !slices.ContainsFunc(lit.Elts, func(e ast.Expr) bool {
				kv, ok := e.(*ast.KeyValueExpr)
				return ok && fmt.Sprint(kv.Key) == "RemoveVolumes" && fmt.Sprint(kv.Value) == "true"
			}) {
				t.Errorf("%s: a container removed without RemoveVolumes: true: the anonymous volumes of the image's VOLUMEs stay on the engine", fset.Position(lit.Pos()))
			}
			return true
		})
	}
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
