package krun

import (
	"go/ast"
	"go/token"
	"testing"

	"github.com/devsandbox/devsandbox/internal/sourcecheck"
)

// Every container removal names WithVolumes(true): a removal without it leaves the
// anonymous volumes of the image's VOLUMEs (and what the sandbox wrote into them) in
// the user's podman storage. Read from the package's source: one added later must
// say so too.
func TestEveryRemoveTakesVolumes(t *testing.T) {
	seen := 0
	sourcecheck.Inspect(t, func(fset *token.FileSet, n ast.Node) bool {
		call, ok := n.(*ast.CallExpr)
		if !ok {
			return true
		}
		sel, ok := call.Fun.(*ast.SelectorExpr)
		if !ok || sel.Sel.Name != "Remove" {
			return true
		}
		if x, ok := sel.X.(*ast.Ident); !ok || x.Name != "containers" {
			return true
		}
		seen++
		if len(call.Args) < 3 || !withVolumes(call.Args[2]) {
			t.Errorf("%s: containers.Remove without WithVolumes(true): the image's VOLUMEs stay in the user's storage", fset.Position(call.Pos()))
		}
		return true
	})
	if seen == 0 {
		t.Fatal("found no containers.Remove in the package's source; the search no longer finds it")
	}
}

// withVolumes reports whether the options chain e calls WithVolumes(true).
func withVolumes(e ast.Expr) bool {
	for {
		call, ok := e.(*ast.CallExpr)
		if !ok {
			return false
		}
		sel, ok := call.Fun.(*ast.SelectorExpr)
		if !ok {
			return false
		}
		if sel.Sel.Name == "WithVolumes" && len(call.Args) == 1 {
			if id, ok := call.Args[0].(*ast.Ident); ok && id.Name == "true" {
				return true
			}
		}
		e = sel.X
	}
}
