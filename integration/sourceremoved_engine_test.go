//go:build integration

package integration

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The docker and krun variants of TestSourceRemovedDuringSetup: a writable_dirs
// directory removed on the host, or replaced by another directory of the same name,
// after devsandbox pinned it and before the engine mounts it, stops the launch
// (125, the command does not run), and the error names the directory and the race
// (the engine's own message, "bind source path does not exist", or the init's
// identity mismatch, says neither).

type sourceRace struct {
	name string
	sh   string // shell commands run on the directory "$d"
	do   func(dir string) error
}

// sourceRaces are the two ways the source goes: removed, or replaced by another
// directory (an engine that binds by path then mounts that one, which the init
// refuses). The other directory is made before the first is removed, so that it
// cannot get the removed one's inode number, which would make it the same file to
// devsandbox and the init.
var sourceRaces = []sourceRace{
	{"removed", `rmdir "$d"`, os.Remove},
	{"replaced", `mkdir "$d.new" && rmdir "$d" && mv "$d.new" "$d"`, func(dir string) error {
		if err := os.Mkdir(dir+".new", 0o755); err != nil {
			return err
		}
		if err := os.Chown(dir+".new", it.uid, it.gid); err != nil {
			return err
		}
		if err := os.Remove(dir); err != nil {
			return err
		}
		return os.Rename(dir+".new", dir)
	}},
}

// TestSourceRemovedDuringSetupDocker injects the race through the engine's API: a
// proxy socket (DOCKER_HOST) in front of the variant's engine does it to the
// directory when it sees the request that creates the run's container, then passes
// the request on. devsandbox pinned its sources before it sends that request.
func TestSourceRemovedDuringSetupDocker(t *testing.T) {
	forEachDocker(t, func(t *testing.T, iso string) {
		forEachSourceRace(t, iso, func(t *testing.T, p *project, data string, race sourceRace, args []string) result {
			var once sync.Once
			raced := make(chan error, 1)
			sock := engineProxy(t, engineOf(iso), p.path("engine.sock"), func(name string) {
				// The run's container, or the kept one.
				if name != "devsandbox-"+p.name() && !strings.HasPrefix(name, "devsandbox-"+p.name()+"-") {
					return
				}
				once.Do(func() { raced <- race.do(data) })
			})
			r := run(t, p.dir, []string{"DOCKER_HOST=unix://" + sock}, "", append([]string{"--isolator=" + iso}, args...)...)
			select {
			case err := <-raced:
				if err != nil {
					t.Fatalf("changing %s: %v", data, err)
				}
			default:
				t.Fatalf("the proxy saw no request creating the run's container:\n%s", r)
			}
			return r
		})
	})
}

// TestSourceRemovedDuringSetupKrun injects the race through the OCI runtime: podman
// runs the runtime named runc from a containers.conf of the test's (CONTAINERS_CONF,
// which also gives the run a podman service of its own), a wrapper that does it to
// the directory before `runc create`, which mounts the sources.
func TestSourceRemovedDuringSetupKrun(t *testing.T) {
	requirePodman(t)
	runc, err := exec.LookPath("runc")
	if err != nil {
		t.Fatal(err)
	}
	forEachSourceRace(t, "krun", func(t *testing.T, p *project, data string, race sourceRace, args []string) result {
		p.write("wrap/runc", "#!/bin/sh\nd='"+data+"'\nfor a; do\n\tif [ \"$a\" = create ]; then\n\t\t"+race.sh+" || exit 99\n\t\tbreak\n\tfi\ndone\nexec '"+runc+"' \"$@\"\n")
		if err := os.Chmod(p.path("wrap/runc"), 0o755); err != nil {
			t.Fatal(err)
		}
		p.write("containers.conf", "[engine.runtimes]\nrunc = [\""+p.path("wrap/runc")+"\"]\n")
		return run(t, p.dir, []string{"XDG_RUNTIME_DIR=" + runtimeDir(), "CONTAINERS_CONF=" + p.path("containers.conf")}, "",
			append([]string{"--isolator=krun"}, args...)...)
	})
}

// forEachSourceRace runs launch, with the race done to data, as a subtest per race
// and per kind of source: a writable_dirs directory of a read-only project (an
// anchor, which the engines mount from the pinned directory or as a volume's
// sub-path) and a --mount directory beside the project (bound by path), also with
// sandbox.mode = auto, which must not take the failure for an isolator that cannot
// run here and run the command unsandboxed (a local engine's "bind source path does
// not exist" read as an engine that cannot see the path did); on docker, both kinds
// in a kept container too (keep_container). args are the devsandbox arguments after
// --isolator; then it checks the result (expectNamed).
func forEachSourceRace(t *testing.T, iso string, launch func(t *testing.T, p *project, data string, race sourceRace, args []string) result) {
	kinds := []string{"writable_dirs", "mount", "mount_mode_auto"}
	if iso != "krun" {
		kinds = append(kinds, "writable_dirs_kept", "mount_kept")
	}
	for _, kind := range kinds {
		for _, race := range sourceRaces {
			t.Run(kind+"/"+race.name, func(t *testing.T) {
				p := newProject(t)
				var data string
				var args []string
				if strings.HasSuffix(kind, "_kept") {
					args = []string{"--keep-container"}
				}
				if !strings.HasPrefix(kind, "writable_dirs") {
					p.mkdir("shared")
					data = p.path("shared")
					args = append(args, "--mount", data+":"+data)
					if kind == "mount_mode_auto" {
						args = append(args, "--mode=auto")
					}
				} else {
					p.mkdir("proj/data")
					data = p.path("proj/data")
					args = append(args, "--read-only", "--config", p.writeConfig(iso, "ro.toml", "[sandbox]\nwritable_dirs = [\"data\"]\n"))
				}
				ino := inode(t, data)
				r := launch(t, p, data, race, append(args, "--egress=open", "--", "/bin/sh", "-c", "echo RAN"))
				expectNamed(t, r, data, race.name, ino)
			})
		}
	}
}

// expectNamed checks that data (inode ino before the run) was removed or replaced
// (race), and that r is a launch that stopped before the command ran (125) with an
// error naming it.
func expectNamed(t *testing.T, r result, data, race string, ino uint64) {
	t.Helper()
	switch _, err := os.Lstat(data); {
	case race == "removed" && !os.IsNotExist(err):
		t.Fatalf("%s was not removed (%v):\n%s", data, err, r)
	case race == "replaced" && (err != nil || inode(t, data) == ino):
		t.Fatalf("%s was not replaced (%v):\n%s", data, err, r)
	}
	if r.code != 125 || strings.Contains(r.stdout, "RAN") {
		t.Fatalf("the launch went on, or failed otherwise than a setup failure (want 125):\n%s", r)
	}
	want := data + " was removed or replaced on the host while the sandbox was being set up"
	if !strings.Contains(r.stderr, want) {
		t.Errorf("stderr does not name the source gone:\n%s\nwant it to contain %q", r.stderr, want)
	}
	// The cause is known: none of devsandbox's guesses at another (an engine that
	// cannot see the path, or cannot mount an anchor; a symlink a session planted),
	// nor its pointers elsewhere.
	for _, guess := range []string{"cannot see", "upgrade the engine", "symlink", "devsandbox doctor", "devsandbox --dry-run"} {
		if strings.Contains(r.stderr, guess) {
			t.Errorf("stderr guesses at another cause (%q):\n%s", guess, r.stderr)
		}
	}
}

// inode is path's inode number.
func inode(t *testing.T, path string) uint64 {
	t.Helper()
	fi, err := os.Lstat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Sys().(*syscall.Stat_t).Ino
}

// engineProxy serves the Engine API of engine (a unix:// address) on a Unix socket at
// sock, the test user's, and returns sock. before is called with the name of each
// container a request creates, before the request is passed on.
//
// The proxy runs in a process of its own that calls itself dockerd (this test binary
// again, serveEngineRelay): devsandbox takes a socket for a local engine's, whose
// binds reach this machine's files, only when its listener is dockerd or systemd
// (engineaddr: Address.Local asks who listens); through a listener of another name
// the run takes a remote engine's path, refused here before any container is created
// (the engine is older than API 1.45 and the project has writable anchors).
func engineProxy(t *testing.T, engine, sock string, before func(name string)) string {
	t.Helper()
	cmd := exec.Command("/proc/self/exe")
	cmd.Env = append(os.Environ(), engineRelayEnv+"="+strings.TrimPrefix(engine, "unix://"), engineRelaySockEnv+"="+sock)
	cmd.Stderr = os.Stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	lines := bufio.NewReader(out)
	if l, err := lines.ReadString('\n'); l != "ready\n" {
		t.Fatalf("the engine relay did not start: %q, %v", l, err)
	}
	if err := os.Chown(sock, it.uid, it.gid); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(sock, 0o600); err != nil {
		t.Fatal(err)
	}
	go func() {
		for {
			l, err := lines.ReadString('\n')
			if err != nil {
				return
			}
			if name, ok := strings.CutPrefix(strings.TrimSuffix(l, "\n"), "create "); ok {
				before(name)
			}
			if _, err := io.WriteString(in, "go\n"); err != nil {
				return
			}
		}
	}()
	return filepath.Clean(sock)
}

const (
	engineRelayEnv     = "DEVSANDBOX_IT_ENGINE_RELAY"      // the engine's socket: this process is engineProxy's relay
	engineRelaySockEnv = "DEVSANDBOX_IT_ENGINE_RELAY_SOCK" // where it listens
)

// The relay's name is the process's, its main thread's (/proc/PID/comm), set while
// the package initialises on that thread.
func init() {
	if os.Getenv(engineRelayEnv) != "" {
		runtime.LockOSThread()
		name, _ := unix.BytePtrFromString("dockerd")
		_ = unix.Prctl(unix.PR_SET_NAME, uintptr(unsafe.Pointer(name)), 0, 0, 0)
	}
}

// serveEngineRelay is engineProxy's relay (TestMain): it listens at its socket, says
// "ready", and passes each request on to the engine; for one that creates a container
// it first writes "create NAME" and waits for a line back.
func serveEngineRelay() {
	target, sock := os.Getenv(engineRelayEnv), os.Getenv(engineRelaySockEnv)
	rp := &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.Out.URL.Scheme, pr.Out.URL.Host = "http", "docker"
		},
		Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "unix", target)
		}},
		FlushInterval: -1, // waits and attached streams pass as they come
	}
	l, err := net.Listen("unix", sock)
	if err != nil {
		fmt.Fprintf(os.Stderr, "engine relay: %v\n", err)
		os.Exit(1)
	}
	fmt.Println("ready")
	var mu sync.Mutex
	answers := bufio.NewReader(os.Stdin)
	_ = http.Serve(l, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/containers/create") {
			mu.Lock()
			fmt.Printf("create %s\n", r.URL.Query().Get("name"))
			_, err := answers.ReadString('\n')
			mu.Unlock()
			if err != nil {
				os.Exit(0) // the test is gone
			}
		}
		rp.ServeHTTP(w, r)
	}))
}
