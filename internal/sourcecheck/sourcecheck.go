// Package sourcecheck reads a package's own Go source for tests that check every
// place the package does something (every container it removes, every Config it
// writes): a place added later is checked without the test naming it.
package sourcecheck

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strings"
	"testing"
)

// Inspect parses the non-test Go files of the current directory (a test's package)
// and calls visit for every node, as ast.Inspect does, with the file set for
// positions. It fails the test when a file cannot be read or parsed.
func Inspect(t testing.TB, visit func(fset *token.FileSet, n ast.Node) bool) {
	t.Helper()
	fset := token.NewFileSet()
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(f, func(n ast.Node) bool { return visit(fset, n) })
	}
}

// Literals calls check for every composite literal of type pkg.name (as the source
// writes it, such as dockercontainer.Config) in the current directory's non-test Go
// files, and returns how many it found.
func Literals(t testing.TB, pkg, name string, check func(fset *token.FileSet, lit *ast.CompositeLit)) int {
	t.Helper()
	seen := 0
	Inspect(t, func(fset *token.FileSet, n ast.Node) bool {
		lit, ok := n.(*ast.CompositeLit)
		if !ok {
			return true
		}
		sel, ok := lit.Type.(*ast.SelectorExpr)
		if !ok || sel.Sel.Name != name {
			return true
		}
		if x, ok := sel.X.(*ast.Ident); !ok || x.Name != pkg {
			return true
		}
		seen++
		check(fset, lit)
		return true
	})
	return seen
}

// HasField reports whether the composite literal sets key, and to a value that
// satisfies ok (nil: any value).
func HasField(lit *ast.CompositeLit, key string, ok func(ast.Expr) bool) bool {
	for _, e := range lit.Elts {
		kv, isKV := e.(*ast.KeyValueExpr)
		if !isKV {
			continue
		}
		if k, isIdent := kv.Key.(*ast.Ident); isIdent && k.Name == key && (ok == nil || ok(kv.Value)) {
			return true
		}
	}
	return false
}

// IsTrue reports whether e is the identifier true.
func IsTrue(e ast.Expr) bool {
	id, ok := e.(*ast.Ident)
	return ok && id.Name == "true"
}
