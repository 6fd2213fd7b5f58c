package main

import (
	"encoding/json"
	"go/ast"
	"go/parser"
	"go/token"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// threadEnders are the functions of devsandbox's packages whose goroutine may return
// locked to its thread, and so end it: each runs in a process of its own role that
// starts no child with a parent-death signal from another thread (the key is the
// package path and the function's name; a function literal counts as its
// enclosing declaration).
var threadEnders = map[string]string{
	// The container init's output copy: in the init, whose command has no
	// parent-death signal.
	module + "/isolator/sandboxinit.loop": "the container init's, never devsandbox's",
	// The init's Landlock domain belongs to the thread that starts the command: the
	// init's main goroutine, which returns only as the init exits.
	module + "/isolator/landlock.ScopeAbstractUnix": "the init's main goroutine, which ends with the process",
	// krun's service supervisor locks its main goroutine for its whole life (the
	// podman service's parent-death signal is that thread's), then exits.
	module + "/isolator/krun.Supervise": "devsandbox-krun's supervisor role, on its main goroutine until its exit",
	// The lasting thread's goroutine never returns: its thread lives as long as the
	// process, and children with a parent-death signal are forked on it.
	module + "/internal/lastingthread.serve": "never returns: the thread lives as long as the process",
}

// pdeathsigStarts are the functions of devsandbox's host programs that set a child's
// parent-death signal (Pdeathsig), and why the thread that forks the child outlives
// it: the kernel sends the signal when that THREAD ends, and any goroutine of the
// program (an embedder's too) that lands on a thread, locks it and returns, ends
// it. A new one fails TestPdeathsigStarts until it is named here with its reason.
var pdeathsigStarts = map[string]string{
	// bwrap's starts go through startChild or startGuarded, which fork a child with
	// a parent-death signal in lastingthread.Run (checked below).
	module + "/isolator/bwrap.run":        "startChild: lastingthread.Run",
	module + "/isolator/bwrap.startEarly": "startGuarded: lastingthread.Run",
	module + "/isolator/bwrap.runTrial":   "startChild: lastingthread.Run",
	// The proxy is forked by spawn's goroutine, locked to its thread until the proxy
	// has exited (then unlocked, never ended: TestNoThreadEnded).
	module + "/proxy/service.sysProcAttr": "spawn's goroutine holds its thread locked for the proxy's life",
	// The podman service is forked by devsandbox-krun's supervisor, a program of its
	// own whose main goroutine stays locked to its thread until the program exits.
	module + "/isolator/krun.serviceSysProcAttr": "devsandbox-krun's supervisor, locked to its main thread for life",
}

// lastingForks are the functions that fork a child with a parent-death signal and
// must do it in lastingthread.Run.
var lastingForks = []string{module + "/isolator/bwrap.startGuarded"}

// hostCommands are the programs that run on the host beside a sandbox, whose
// packages TestNoThreadEnded reads: each starts children with a parent-death signal
// (bwrap, the session proxy, krun's podman service).
var hostCommands = []string{"devsandbox", "devsandbox-docker", "devsandbox-proxy", "devsandbox-krun"}

// buildTags are the Makefile's (TAGS): the docker and krun programs' packages need
// them to be listed as they are built.
const buildTags = "urfave_cli_no_docs remote exclude_graphdriver_btrfs exclude_graphdriver_devicemapper containers_image_openpgp"

// TestNoThreadEnded: no goroutine of devsandbox's host programs (hostCommands)
// returns locked to its thread
// (runtime.LockOSThread without a deferred runtime.UnlockOSThread in the same
// function), which makes the runtime end the thread. The kernel sends a child's
// parent-death signal when the thread that forked it ends, not the process: bwrap
// is started with SIGKILL as its parent-death signal from whichever thread Run's
// goroutine is on, and the proxy's goroutine, which returned locked once the proxy
// had exited, ended that thread when it was that one: bwrap was killed after the
// command's work, before its own exit (a run that exited 137 with nothing said).
func TestNoThreadEnded(t *testing.T) {
	checked, seen := 0, map[string]bool{}
	eachFunc(t, func(fset *token.FileSet, key string, fn *ast.FuncDecl) {
		checkBodies(fn.Body, func(body *ast.BlockStmt, lock token.Pos) {
			checked++
			if _, ok := threadEnders[key]; ok {
				seen[key] = true
				return
			}
			if !defersUnlock(body) {
				t.Errorf("%s (%s): runtime.LockOSThread without a deferred runtime.UnlockOSThread in the same function: its goroutine returns locked, and the runtime ends the thread, which kills every child that thread started with a parent-death signal (bwrap's SIGKILL)", fset.Position(lock), key)
			}
		})
	})
	if checked == 0 {
		t.Fatal("no runtime.LockOSThread found in devsandbox's packages: the check looks at nothing")
	}
	for key := range threadEnders {
		if !seen[key] {
			t.Errorf("threadEnders names %s, which locks no thread in devsandbox's packages now: remove it", key)
		}
	}
}

// TestPdeathsigStarts: every function of devsandbox's host programs that sets a
// child's parent-death signal is one of pdeathsigStarts, whose thread outlives the
// child, and the forks of lastingForks are made in lastingthread.Run. Before, bwrap
// was forked from whichever thread Run's goroutine was on, and a goroutine of an
// embedding program that locked that thread and returned killed the sandbox.
func TestPdeathsigStarts(t *testing.T) {
	seen, forks := map[string]bool{}, map[string]bool{}
	eachFunc(t, func(fset *token.FileSet, key string, fn *ast.FuncDecl) {
		ast.Inspect(fn.Body, func(n ast.Node) bool {
			var at token.Pos
			switch n := n.(type) {
			case *ast.KeyValueExpr:
				if id, ok := n.Key.(*ast.Ident); ok && id.Name == "Pdeathsig" {
					at = n.Pos()
				}
			case *ast.SelectorExpr:
				if n.Sel.Name == "Pdeathsig" {
					at = n.Pos()
				}
			case *ast.CallExpr:
				if sel, ok := n.Fun.(*ast.SelectorExpr); ok && sel.Sel.Name == "Run" {
					if id, ok := sel.X.(*ast.Ident); ok && id.Name == "lastingthread" {
						forks[key] = true
					}
				}
			}
			if at.IsValid() {
				if _, ok := pdeathsigStarts[key]; !ok && !slices.Contains(lastingForks, key) {
					t.Errorf("%s (%s): a child's parent-death signal is set here, and the thread that forks the child may end before it (the kernel sends the signal then; a goroutine that returns locked to its thread ends it): fork it in lastingthread.Run (as startChild does), or name the function in pdeathsigStarts with why its thread outlives the child", fset.Position(at), key)
				}
				seen[key] = true
			}
			return true
		})
	})
	for key := range pdeathsigStarts {
		if !seen[key] {
			t.Errorf("pdeathsigStarts names %s, which sets no parent-death signal now: remove it", key)
		}
	}
	for _, key := range lastingForks {
		if !forks[key] {
			t.Errorf("%s forks bwrap with its parent-death signal without lastingthread.Run: the thread that forks it may end before it", key)
		}
	}
}

// eachFunc calls found with each function declaration with a body in the Linux
// build of the packages of devsandbox's host programs (hostCommands), its key the
// package path and the function's name.
func eachFunc(t *testing.T, found func(fset *token.FileSet, key string, fn *ast.FuncDecl)) {
	t.Helper()
	args := []string{"list", "-tags", buildTags, "-deps", "-json=ImportPath,Dir,GoFiles"}
	for _, c := range hostCommands {
		args = append(args, module+"/cmd/"+c)
	}
	cmd := exec.Command("go", args...)
	cmd.Env = append(cmd.Environ(), "GOOS=linux")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	dec := json.NewDecoder(strings.NewReader(string(out)))
	listed := map[string]bool{}
	for dec.More() {
		var p struct {
			ImportPath, Dir string
			GoFiles         []string
		}
		if err := dec.Decode(&p); err != nil {
			t.Fatal(err)
		}
		if p.ImportPath != module && !strings.HasPrefix(p.ImportPath, module+"/") || listed[p.ImportPath] {
			continue
		}
		listed[p.ImportPath] = true
		for _, name := range p.GoFiles {
			fset := token.NewFileSet()
			f, err := parser.ParseFile(fset, filepath.Join(p.Dir, name), nil, 0)
			if err != nil {
				t.Fatal(err)
			}
			for _, d := range f.Decls {
				if fn, ok := d.(*ast.FuncDecl); ok && fn.Body != nil {
					found(fset, p.ImportPath+"."+fn.Name.Name, fn)
				}
			}
		}
	}
}

// checkBodies calls found with the innermost function body (a declaration's or a
// literal's) of each runtime.LockOSThread call in body.
func checkBodies(body *ast.BlockStmt, found func(*ast.BlockStmt, token.Pos)) {
	ast.Inspect(body, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.FuncLit:
			checkBodies(n.Body, found)
			return false
		case *ast.CallExpr:
			if isRuntimeCall(n, "LockOSThread") {
				found(body, n.Pos())
			}
		}
		return true
	})
}

// defersUnlock reports whether body defers runtime.UnlockOSThread (not inside a
// function literal of its own).
func defersUnlock(body *ast.BlockStmt) bool {
	ok := false
	ast.Inspect(body, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.FuncLit:
			return false
		case *ast.DeferStmt:
			if isRuntimeCall(n.Call, "UnlockOSThread") {
				ok = true
			}
		}
		return true
	})
	return ok
}

func isRuntimeCall(c *ast.CallExpr, name string) bool {
	sel, ok := c.Fun.(*ast.SelectorExpr)
	if !ok || sel.Sel.Name != name {
		return false
	}
	id, ok := sel.X.(*ast.Ident)
	return ok && id.Name == "runtime"
}
