package docker

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// dockerClient is the Docker client's package.
const dockerClient = "github.com/docker/docker/client"

// TestOneEngineConstructor reads every non-test Go file of the module: only connect
// (and speaking, which shares its verdict) in engine.go make a Docker client
// (dialVersion, the client package's New functions) or an engineConn, so every
// engine connection is pinned, pinged and judged (connect), and a new command
// cannot reach an engine around the refusals. A client made elsewhere fails here
// until it goes through connect (or Dial).
func TestOneEngineConstructor(t *testing.T) {
	allowed := map[string]bool{"connect": true, "speaking": true, "dialVersion": true}
	seen := 0
	err := filepath.WalkDir("../..", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == ".git" || d.Name() == "testdata" || d.Name() == "bin") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		seen++
		clientName := ""
		for _, im := range f.Imports {
			if p, _ := strconv.Unquote(im.Path.Value); p == dockerClient {
				clientName = "client"
				if im.Name != nil {
					clientName = im.Name.Name
				}
			}
		}
		inEngine := filepath.ToSlash(path) == "../../isolator/docker/engine.go"
		for _, decl := range f.Decls {
			fn, _ := decl.(*ast.FuncDecl)
			where := "package level"
			if fn != nil {
				where = fn.Name.Name
			}
			ast.Inspect(decl, func(n ast.Node) bool {
				what := ""
				switch n := n.(type) {
				case *ast.CallExpr:
					switch fun := n.Fun.(type) {
					case *ast.SelectorExpr:
						if x, ok := fun.X.(*ast.Ident); ok && clientName != "" && x.Name == clientName && strings.HasPrefix(fun.Sel.Name, "New") {
							what = "calls " + clientName + "." + fun.Sel.Name
						}
					case *ast.Ident:
						if fun.Name == "dialVersion" && f.Name.Name == "docker" {
							what = "calls dialVersion"
						}
					}
				case *ast.CompositeLit:
					if id, ok := n.Type.(*ast.Ident); ok && id.Name == "engineConn" {
						what = "makes an engineConn"
					}
					if se, ok := n.Type.(*ast.SelectorExpr); ok && clientName != "" {
						if x, ok := se.X.(*ast.Ident); ok && x.Name == clientName && se.Sel.Name == "Client" {
							what = "makes a client.Client"
						}
					}
				}
				if what != "" && !(inEngine && allowed[where]) {
					t.Errorf("%s (%s) %s: every engine connection goes through connect (engine.go), which pins the socket, pings the engine and refuses what the docker isolator does not speak to; use Dial or the Isolator's engine/connect", path, where, what)
				}
				return true
			})
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if seen < 100 {
		t.Fatalf("read %d Go files from ../.., want the module's (hundreds)", seen)
	}
}

// TestEveryRequestWaitsForTheVerdict reads engineconn.go: every method of engineConn
// that uses its Docker client calls ready first (but Close and clientVersion, which
// send nothing), so a method added to Engine cannot reach the engine around the
// verdict.
func TestEveryRequestWaitsForTheVerdict(t *testing.T) {
	f, err := parser.ParseFile(token.NewFileSet(), "engineconn.go", nil, parser.SkipObjectResolution)
	if err != nil {
		t.Fatal(err)
	}
	exempt := map[string]bool{"Close": true, "clientVersion": true, "ready": true}
	methods := 0
	for _, d := range f.Decls {
		fn, ok := d.(*ast.FuncDecl)
		if !ok || fn.Recv == nil || exempt[fn.Name.Name] {
			continue
		}
		methods++
		ready, client := token.NoPos, token.NoPos
		ast.Inspect(fn.Body, func(n ast.Node) bool {
			se, ok := n.(*ast.SelectorExpr)
			if !ok {
				return true
			}
			if x, ok := se.X.(*ast.Ident); ok && x.Name == "c" {
				switch se.Sel.Name {
				case "ready":
					if ready == token.NoPos {
						ready = se.Pos()
					}
				case "c":
					if client == token.NoPos {
						client = se.Pos()
					}
				}
			}
			return true
		})
		if client != token.NoPos && (ready == token.NoPos || ready > client) {
			t.Errorf("engineConn.%s uses the client without waiting for the engine's verdict first (c.ready)", fn.Name.Name)
		}
	}
	if methods < 27 {
		t.Fatalf("read %d methods of engineConn, want one per Engine method (27 and Dialer)", methods)
	}
}
