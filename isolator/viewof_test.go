package isolator_test

import (
	"context"
	"errors"
	"go/ast"
	"go/parser"
	"go/printer"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/devsandbox/devsandbox/isolator"
)

// noViewer is an isolator that cannot say what its sandbox shows.
type noViewer struct{}

func (noViewer) Name() string                                     { return "other" }
func (noViewer) Check(context.Context) isolator.Status            { return isolator.Status{} }
func (noViewer) Render(*isolator.Plan) (isolator.Rendered, error) { return nil, nil }
func (noViewer) Run(context.Context, *isolator.Plan, isolator.Stdio) (int, error) {
	return 0, nil
}

// ViewOf an isolator without a View fails, rather than give bwrap's view of a Plan
// that another sandbox shows otherwise.
func TestViewOfNoViewer(t *testing.T) {
	v, err := isolator.ViewOf(noViewer{}, &isolator.Plan{})
	if v != nil || !errors.Is(err, isolator.ErrUnavailable) {
		t.Errorf("ViewOf(an isolator with no View) = %v, %v; want ErrUnavailable", v, err)
	}
}

// A View comes only from the isolator that runs the Plan: no exported function,
// method or field of the module's packages returns one but ViewOf and the bwrap
// library session's (made with ViewOf for the bwrap Plan the session runs). With
// NewView, exported before, a harness running docker made bwrap's view of its Plan
// and read the host's /etc/hostname, which the container does not have
// (TestContainerViewHostFiles).
func TestViewOnlyFromIsolator(t *testing.T) {
	allowed := map[string]bool{"isolator.ViewOf": true, "bwrap.Session.View": true}
	fset := token.NewFileSet()
	var found []string
	err := filepath.WalkDir("..", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if n := d.Name(); n == "testdata" || n == "internal" || strings.HasPrefix(n, ".") && n != ".." {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		if f.Name.Name == "main" {
			return nil
		}
		returnsView := func(ft *ast.FuncType) bool {
			if ft.Results == nil {
				return false
			}
			for _, r := range ft.Results.List {
				var b strings.Builder
				_ = printer.Fprint(&b, fset, r.Type)
				if s := b.String(); s == "*View" && f.Name.Name == "isolator" || s == "*isolator.View" {
					return true
				}
			}
			return false
		}
		for _, decl := range f.Decls {
			switch d := decl.(type) {
			case *ast.FuncDecl:
				if !d.Name.IsExported() || !returnsView(d.Type) {
					continue
				}
				name := f.Name.Name + "." + d.Name.Name
				if d.Recv != nil {
					var b strings.Builder
					_ = printer.Fprint(&b, fset, d.Recv.List[0].Type)
					name = f.Name.Name + "." + strings.TrimPrefix(b.String(), "*") + "." + d.Name.Name
				}
				if !allowed[name] {
					found = append(found, name+" ("+path+")")
				}
			case *ast.GenDecl:
				ast.Inspect(d, func(n ast.Node) bool {
					fld, ok := n.(*ast.Field)
					if !ok {
						return true
					}
					if ft, ok := fld.Type.(*ast.FuncType); ok && returnsView(ft) {
						for _, nm := range fld.Names {
							if nm.IsExported() {
								found = append(found, f.Name.Name+" field "+nm.Name+" ("+path+")")
							}
						}
					}
					return true
				})
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(found) > 0 {
		t.Errorf("exported ways to make a View other than isolator.ViewOf (a harness picks bwrap's view for a container's Plan with them and reads host files the container does not see):\n%s", strings.Join(found, "\n"))
	}
}

// The zero View denies every path, rather than answer with no mount table.
func TestZeroViewDenies(t *testing.T) {
	var v isolator.View
	if err := v.CheckRead("/etc/hostname"); !errors.Is(err, isolator.ErrOutsideView) {
		t.Errorf("zero View CheckRead = %v, want ErrOutsideView", err)
	}
	if f, err := v.Open("/etc/hostname", os.O_RDONLY, 0); !errors.Is(err, isolator.ErrOutsideView) {
		if f != nil {
			f.Close()
		}
		t.Errorf("zero View Open = %v, want ErrOutsideView", err)
	}
}
