package nocore

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Programs of cmd/ that run inside the sandbox, as the sandbox's user, and hold
// nothing the sandbox may not read: a core of theirs is the sandbox's own.
var insideSandbox = map[string]string{
	"devsandbox-init":       "the container's init, the sandbox's own process",
	"devsandbox-bwrap-init": "bwrap's init, the sandbox's own process",
}

// TestEveryHostProgramTurnsCoreOff reads each program's main in cmd/: every one that
// runs on the host (it holds a run's secrets, credentials or the MITM CA's key) must
// call Off among the first statements of main, before anything that could read a
// secret, and exit when it fails. TestLauncherCoreDumpHoldsNoSecret shows the
// launcher's core in the project; the helpers have no such test, and a main that
// forgot the call would dump them whole. A new program fails here until it calls Off
// or is named in insideSandbox with the reason.
func TestEveryHostProgramTurnsCoreOff(t *testing.T) {
	dirs, err := filepath.Glob("../../cmd/*")
	if err != nil {
		t.Fatal(err)
	}
	seen := 0
	for _, dir := range dirs {
		name := filepath.Base(dir)
		if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
			continue
		}
		main := mainOf(t, dir)
		if main == nil {
			continue
		}
		seen++
		if why, ok := insideSandbox[name]; ok {
			if callsOff(main) {
				t.Logf("%s calls nocore.Off although it is listed as %s", name, why)
			}
			continue
		}
		if msg := offFirst(main); msg != "" {
			t.Errorf("%s: %s: a core of it (GOTRACEBACK=crash, a raised RLIMIT_CORE) lands in its working directory with the secrets it holds; call nocore.Off first thing in main and exit when it fails", name, msg)
		}
	}
	if seen < 6 {
		t.Fatalf("found %d programs with a main in ../../cmd, want the 6 of the Makefile's BINARIES", seen)
	}
}

// mainOf parses the non-test Go files of dir and returns its func main, or nil.
func mainOf(t *testing.T, dir string) *ast.FuncDecl {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	for _, file := range files {
		if strings.HasSuffix(file, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, file, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		if f.Name.Name != "main" {
			continue
		}
		for _, d := range f.Decls {
			if fd, ok := d.(*ast.FuncDecl); ok && fd.Recv == nil && fd.Name.Name == "main" {
				return fd
			}
		}
	}
	return nil
}

// offFirst says what is wrong with main's call of Off ("" when nothing): it must be
// `if err := nocore.Off(); err != nil { ...; os.Exit(...) }` among main's first two
// statements (the launcher's first is startup(), the bwrap init's dispatch).
func offFirst(main *ast.FuncDecl) string {
	for i, st := range main.Body.List {
		if i > 1 {
			break
		}
		is, ok := st.(*ast.IfStmt)
		if !ok {
			continue
		}
		as, ok := is.Init.(*ast.AssignStmt)
		if !ok || len(as.Rhs) != 1 || !isOffCall(as.Rhs[0]) {
			continue
		}
		for _, s := range is.Body.List {
			if es, ok := s.(*ast.ExprStmt); ok && isCall(es.X, "os", "Exit") {
				return ""
			}
		}
		return "nocore.Off's failure does not end the program (no os.Exit)"
	}
	if callsOff(main) {
		return "nocore.Off is not called among main's first statements"
	}
	return "main never calls nocore.Off"
}

func callsOff(main *ast.FuncDecl) bool {
	found := false
	ast.Inspect(main, func(n ast.Node) bool {
		if e, ok := n.(ast.Expr); ok && isOffCall(e) {
			found = true
		}
		return !found
	})
	return found
}

func isOffCall(e ast.Expr) bool { return isCall(e, "nocore", "Off") }

func isCall(e ast.Expr, pkg, fn string) bool {
	c, ok := e.(*ast.CallExpr)
	if !ok {
		return false
	}
	sel, ok := c.Fun.(*ast.SelectorExpr)
	if !ok || sel.Sel.Name != fn {
		return false
	}
	id, ok := sel.X.(*ast.Ident)
	return ok && id.Name == pkg
}
