//go:build integration

package integration

// Disk and memory fill: a command that writes without end fills what it writes to.
// sandbox.tmp_size bounds a tmpfs /tmp; sandbox.disk_reserve keeps free space on
// the host file systems the sandbox writes by stopping the run.

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestTmpSizeBoundsTmp: with sandbox.tmp_size a write into /tmp stops at the size
// with "No space left on device" inside the sandbox (bwrap's tmpfs /tmp, the
// containers'); bwrap refuses the key with its session /tmp, a host directory no
// size bounds, before the command runs.
func TestTmpSizeBoundsTmp(t *testing.T) {
	forEachIsolator(t, func(t *testing.T, iso string) {
		p := newProject(t)
		cfg := p.writeConfig(iso, "c.toml", "[sandbox]\ntmp = \"tmpfs\"\ntmp_size = \"8m\"\n")
		out := p.mustSandbox(iso, []string{"--config", cfg}, `dd if=/dev/zero of=/tmp/fill bs=1M count=32 2>&1; echo "size $(wc -c </tmp/fill)"`)
		if !strings.Contains(out, "No space left on device") {
			t.Errorf("a 32 MiB write into an 8 MiB /tmp did not fail with ENOSPC:\n%s", out)
		}
		n := -1
		for _, l := range strings.Split(out, "\n") {
			if s, ok := strings.CutPrefix(l, "size "); ok {
				n, _ = strconv.Atoi(strings.TrimSpace(s))
			}
		}
		if n <= 0 || n > 8<<20 {
			t.Errorf("/tmp took %d bytes; want some, at most 8 MiB:\n%s", n, out)
		}
		if iso != "bwrap" {
			return
		}
		cfg = p.writeConfig(iso, "session.toml", "[sandbox]\ntmp_size = \"8m\"\n")
		r := p.sandbox(iso, []string{"--config", cfg}, "touch ran")
		if r.code != 125 || !strings.Contains(r.stderr, "sandbox.tmp_size") || !strings.Contains(r.stderr, `sandbox.tmp = "session"`) {
			t.Errorf("sandbox.tmp_size with the session /tmp: want 125 naming both keys; got %s", r)
		}
		if _, err := os.Stat(filepath.Join(p.dir, "ran")); err == nil {
			t.Error("the command ran although its /tmp could not be bounded")
		}
	})
}

// smallProject moves p's project onto a tmpfs of size bytes of its own (unmounted
// at the test's end), so that what the sandbox writes there fills that file system
// only.
func smallProject(t *testing.T, p *project, size int) string {
	t.Helper()
	if os.Getuid() != 0 {
		needOrSkip(t, "needs root to mount a small file system for the project")
	}
	mnt := p.path("small")
	p.mkdir("small")
	if err := syscall.Mount("tmpfs", mnt, "tmpfs", syscall.MS_NOSUID|syscall.MS_NODEV, fmt.Sprintf("size=%d,mode=0755", size)); err != nil {
		t.Fatalf("mounting the small file system: %v", err)
	}
	t.Cleanup(func() {
		if err := syscall.Unmount(mnt, syscall.MNT_DETACH); err != nil {
			t.Errorf("unmounting %s: %v", mnt, err)
		}
	})
	p.dir = filepath.Join(mnt, "proj")
	p.mkdir("small/proj/.git/hooks")
	p.write("small/proj/.git/config", "[core]\n\trepositoryformatversion = 0\n")
	p.write("small/proj/.git/HEAD", "ref: refs/heads/main\n")
	p.mkdir("small/proj/.git/objects")
	p.mkdir("small/proj/.git/refs")
	return mnt
}

func availBytes(t *testing.T, path string) uint64 {
	t.Helper()
	var st syscall.Statfs_t
	if err := syscall.Statfs(path, &st); err != nil {
		t.Fatal(err)
	}
	return st.Bavail * uint64(st.Bsize)
}

// fillProject writes 1 MiB files into the project until a write fails, 20 a second
// (a fast disk's pace for the guard's reads five times a second: 4 MiB between two),
// then says so.
const fillProject = `i=0; while dd if=/dev/zero of=fill$i bs=1M count=1 2>/dev/null; do i=$((i+1)); sleep 0.05; done; echo "full after $i"`

// TestDiskReserveStopsTheRun: a command filling the project's file system (a 64 MiB
// tmpfs here) is stopped when the free space falls under sandbox.disk_reserve
// (24m): devsandbox exits 125 naming the key, the file system keeps most of the
// reserve, and what the command wrote stays. With no reserve ("0") the same command
// fills the file system to the last block: the attack the reserve stops.
func TestDiskReserveStopsTheRun(t *testing.T) {
	var isos []string
	for _, iso := range isolators() {
		// Engines that see the host's mounts as they are now: docker-remote's
		// namespace does not receive a mount made after its start, and rootless
		// podman's neither (krun refuses the run: the project's .git is not there
		// in podman's namespace). The guard is the same code in every isolator's
		// Run (diskguard.Run).
		if iso == "bwrap" || iso == localDocker {
			isos = append(isos, iso)
		}
	}
	forEachIsolatorOf(t, isos, func(t *testing.T, iso string) {
		const size, reserve = 64 << 20, 24 << 20
		t.Run("reserve", func(t *testing.T) {
			p := newProject(t)
			cfg := p.writeConfig(iso, "c.toml", "[sandbox]\ndisk_reserve = \"24m\"\n")
			mnt := smallProject(t, p, size)
			r := p.sandbox(iso, []string{"--config", cfg}, fillProject)
			avail := availBytes(t, mnt)
			if r.code != 125 || !strings.Contains(r.stderr, "stopped the run") || !strings.Contains(r.stderr, "sandbox.disk_reserve") {
				t.Errorf("want the run stopped (125) naming sandbox.disk_reserve; got %s", r)
			}
			if strings.Contains(r.stdout, "full after") {
				t.Errorf("the command filled the file system (%d bytes left): %s", avail, r)
			}
			if avail < reserve/2 {
				t.Errorf("%d bytes left on the project's file system; want at least half the %d reserve", avail, reserve)
			}
			files, _ := filepath.Glob(filepath.Join(p.dir, "fill*"))
			if len(files) < (size-reserve)/(2<<20) {
				t.Errorf("%d files of the command's left in the project; want what it wrote, about %d", len(files), (size-reserve)>>20)
			}
		})
		t.Run("writer ignoring SIGTERM", func(t *testing.T) {
			// A hostile command does not stop when asked: the reserve must hold
			// without the stop's grace, which it would write through.
			p := newProject(t)
			cfg := p.writeConfig(iso, "c.toml", "[sandbox]\ndisk_reserve = \"24m\"\n")
			mnt := smallProject(t, p, size)
			r := p.sandbox(iso, []string{"--config", cfg}, `trap "" TERM; `+fillProject)
			avail := availBytes(t, mnt)
			if r.code != 125 || !strings.Contains(r.stderr, "stopped the run") || !strings.Contains(r.stderr, "sandbox.disk_reserve") {
				t.Errorf("want the run stopped (125) naming sandbox.disk_reserve; got %s", r)
			}
			if avail < reserve/2 {
				t.Errorf("%d bytes left on the project's file system after a writer that ignores SIGTERM; want at least half the %d reserve", avail, reserve)
			}
			files, _ := filepath.Glob(filepath.Join(p.dir, "fill*"))
			if len(files) < (size-reserve)/(2<<20) {
				t.Errorf("%d files of the command's left in the project; want what it wrote, about %d", len(files), (size-reserve)>>20)
			}
		})
		if iso == localDocker {
			t.Run("kept container", func(t *testing.T) {
				// The stop kills the breaching session's processes, not the kept
				// container's other sessions.
				p := newProject(t)
				cfg := p.writeConfig(iso, "c.toml", "[sandbox]\ndisk_reserve = \"24m\"\n")
				mnt := smallProject(t, p, size)
				keep := []string{"--config", cfg, "--keep-container"}
				// The other session keeps no reserve: its own guard would stop it too
				// (it writes the same file system), which is not what is shown here.
				none := p.writeConfig(iso, "none.toml", "[sandbox]\ndisk_reserve = \"0\"\n")
				// The other session says it started through one fifo and waits on
				// another until the breaching session has been stopped: it must be
				// alive through the whole stop, not for a fixed time.
				started, release := filepath.Join(p.dir, "other-started"), filepath.Join(p.dir, "other-go")
				for _, f := range []string{started, release} {
					if err := unix.Mkfifo(f, 0o600); err != nil {
						t.Fatal(err)
					}
					p.chownUp(f)
				}
				other := make(chan result, 1)
				go func() {
					other <- p.sandbox(iso, []string{"--config", none, "--keep-container"}, `echo up > other-started; read x < other-go; echo alive`)
				}()
				up := make(chan error, 1)
				go func() { _, err := os.ReadFile(started); up <- err }() // until the session writes and closes it
				select {
				case err := <-up:
					if err != nil {
						t.Fatal(err)
					}
				case o := <-other:
					t.Fatalf("the other session ended before it started: %s", o)
				case <-time.After(60 * time.Second):
					t.Fatal("the other session did not start within 60 s")
				}
				r := p.sandbox(iso, keep, `trap "" TERM; `+fillProject)
				avail := availBytes(t, mnt)
				if r.code != 125 || !strings.Contains(r.stderr, "sandbox.disk_reserve") || avail < reserve/2 {
					t.Errorf("want the session stopped (125) with at least half the %d reserve left; %d left; got %s", reserve, avail, r)
				}
				// Read-write: the open does not wait for a reader, and the line waits
				// in the fifo for one; a killed session never reads it.
				g, err := os.OpenFile(release, os.O_RDWR, 0)
				if err != nil {
					t.Fatal(err)
				}
				defer g.Close()
				if _, err := g.WriteString("go\n"); err != nil {
					t.Fatal(err)
				}
				if o := <-other; o.code != 0 || o.stdout != "alive\n" {
					t.Errorf("the kept container's other session did not outlive the stop: %s", o)
				}
			})
		}
		t.Run("refused", func(t *testing.T) {
			// Already under the reserve: the isolator's Run refuses before the
			// sandbox starts (for docker, in devsandbox-docker, where the Plan went).
			p := newProject(t)
			cfg := p.writeConfig(iso, "c.toml", "[sandbox]\ndisk_reserve = \"128m\"\n")
			smallProject(t, p, size)
			r := p.sandbox(iso, []string{"--config", cfg}, "touch ran")
			if r.code != 125 || !strings.Contains(r.stderr, "the command did not run") || !strings.Contains(r.stderr, "sandbox.disk_reserve") {
				t.Errorf("want the run refused (125) naming sandbox.disk_reserve; got %s", r)
			}
			if _, err := os.Stat(filepath.Join(p.dir, "ran")); err == nil {
				t.Error("the command ran although the file system was under the reserve")
			}
		})
		t.Run("no reserve", func(t *testing.T) {
			p := newProject(t)
			cfg := p.writeConfig(iso, "c.toml", "[sandbox]\ndisk_reserve = \"0\"\n")
			mnt := smallProject(t, p, size)
			r := p.sandbox(iso, []string{"--config", cfg}, fillProject)
			if r.code != 0 || !strings.Contains(r.stdout, "full after") || availBytes(t, mnt) > 1<<20 {
				t.Errorf("without a reserve the command should fill the file system: %d bytes left; %s", availBytes(t, mnt), r)
			}
		})
	})
}

// TestDiskReserveLibrary: a harness embedding devsandbox (bwrap.Begin, then
// bwrap.Command, its own subprocess) keeps sandbox.disk_reserve as the devsandbox
// command does: its command, filling the project's file system (64 MiB) while
// ignoring SIGTERM, is killed with at least half of the 24m reserve left, and the
// session says why (Session.Err); a session begun under the reserve is refused
// before any command runs.
func TestDiskReserveLibrary(t *testing.T) {
	if !slices.Contains(isolators(), "bwrap") {
		t.Skip("needs bwrap among DEVSANDBOX_IT_ISOLATORS")
	}
	requireBwrap(t)
	const size, reserve = 64 << 20, 24 << 20
	harness := func(t *testing.T, p *project, reserveKey, script string) []string {
		p.write("c.toml", "[sandbox]\ndisk_reserve = \""+reserveKey+"\"\n[krun]\nruntime = \"runc\"\npodman_socket = \""+p.path("no-podman.sock")+"\"\n")
		e := startEmbed(t, embedJob{Iso: "bwrap", Dirs: []string{p.dir}, Library: true, Config: p.path("c.toml"), Script: script}, p.root)
		_ = e.in.Close()
		var lines []string
		for {
			l := e.lines.next()
			lines = append(lines, l)
			if strings.HasPrefix(l, "result ") {
				break
			}
		}
		_ = e.cmd.Wait()
		return lines
	}
	t.Run("stopped", func(t *testing.T) {
		p := newProject(t)
		mnt := smallProject(t, p, size)
		lines := harness(t, p, "24m", `trap "" TERM; `+fillProject)
		avail := availBytes(t, mnt)
		all := strings.Join(lines, "\n")
		if !strings.Contains(all, "out 0 stopped ") || !strings.Contains(all, "sandbox.disk_reserve") || strings.Contains(all, "full after") {
			t.Errorf("want the harness's command killed by the session naming sandbox.disk_reserve; got:\n%s", all)
		}
		if avail < reserve/2 {
			t.Errorf("%d bytes left on the project's file system after the harness's command; want at least half the %d reserve\n%s", avail, reserve, all)
		}
	})
	t.Run("refused", func(t *testing.T) {
		p := newProject(t)
		smallProject(t, p, size)
		lines := harness(t, p, "128m", `touch ran`)
		all := strings.Join(lines, "\n")
		if len(lines) != 1 || !strings.HasPrefix(lines[0], "result 0 0 the library session did not start: ") || !strings.Contains(all, "sandbox.disk_reserve") {
			t.Errorf("a session begun under the reserve: want it refused naming sandbox.disk_reserve; got:\n%s", all)
		}
		if _, err := os.Stat(filepath.Join(p.dir, "ran")); err == nil {
			t.Error("the command ran although the file system was under the reserve")
		}
	})
}

// TestImageTmpWritable: the docker sandbox's /tmp is a tmpfs of mode 1777 whatever
// the image's /tmp: the busybox test image's is 0755 root, whose mode the runtime
// gives the tmpfs mounted over it (over mode=1777), and the user could not write
// /tmp. (krun's podman storage holds the default image only, whose /tmp is 1777.)
func TestImageTmpWritable(t *testing.T) {
	forEachDocker(t, func(t *testing.T, iso string) {
		p := newProject(t)
		r := p.sandbox(iso, []string{"--image=devsandbox-test/busybox:1"}, `ls -ld /tmp | cut -c1-10; echo x >/tmp/w && echo wrote`)
		if r.code != 0 || r.stdout != "drwxrwxrwt\nwrote\n" {
			t.Errorf("/tmp in an image whose /tmp is 0755: want mode 1777 and a write by the user; got %s", r)
		}
	})
}

// TestKrunImageTmpWritable: krun's /tmp is a tmpfs of mode 1777, writable by the
// user, in an image whose /tmp is 0755 root: runc gives the tmpfs the mode of the
// directory it covers, over mode=1777, and krun runs the image as it is (no layer of
// devsandbox's, unlike docker: TestImageTmpWritable).
func TestKrunImageTmpWritable(t *testing.T) {
	if !slices.Contains(isolators(), "krun") {
		t.Skip("needs krun among DEVSANDBOX_IT_ISOLATORS")
	}
	requirePodman(t)
	tag := "localhost/devsandbox-test/tmp0755:" + strings.ToLower(randHex(4))
	dir, err := os.MkdirTemp("", "dsbtmp-") // the test user's podman reads it
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.WriteFile(filepath.Join(dir, "Dockerfile"), []byte("FROM "+krunImage+"\nUSER root\nRUN chmod 0755 /tmp\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _ = podmanAs("rmi", "-f", tag) })
	mustPodman(t, "build", "-q", "-t", tag, dir)
	p := newProject(t)
	r := p.sandbox("krun", []string{"--image=" + tag}, `ls -ld /tmp | cut -c1-10; echo x >/tmp/w && echo wrote`)
	if r.code != 0 || r.stdout != "drwxrwxrwt\nwrote\n" {
		t.Errorf("/tmp in an image whose /tmp is 0755: want mode 1777 and a write by the user; got %s", r)
	}
}

// TestDiskReserveWatchesSubmounts: a file system mounted below a directory the
// sandbox writes (a disk or a tmpfs of the user's inside the project, or inside a
// writable bind) is reached by the sandbox, since binds are recursive: the reserve
// holds there too. A command filling a 64 MiB tmpfs mounted at the project's sub/ (or
// a sandbox.rw_binds directory's sub/), the project's own file system roomy, is
// stopped (125, naming the mount) with most of the 24m reserve left; one already
// under the reserve there is refused before it runs.
func TestDiskReserveWatchesSubmounts(t *testing.T) {
	var isos []string
	for _, iso := range isolators() {
		// The engines that see a mount made after their start (see
		// TestDiskReserveStopsTheRun); the guard is the same code in every Run.
		if iso == "bwrap" || iso == localDocker {
			isos = append(isos, iso)
		}
	}
	forEachIsolatorOf(t, isos, func(t *testing.T, iso string) {
		const size, reserve = 64 << 20, 24 << 20
		cases := []struct {
			name string
			sub  func(p *project) (dir, config string) // the mount's directory; the config's extra
		}{
			{"below the project", func(p *project) (string, string) {
				p.mkdir("proj/sub")
				return p.path("proj/sub"), ""
			}},
			{"below a writable bind", func(p *project) (string, string) {
				p.mkdir("shared/sub")
				return p.path("shared/sub"), fmt.Sprintf("rw_binds = [%q]\n", p.path("shared"))
			}},
		}
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				if os.Getuid() != 0 {
					needOrSkip(t, "needs root to mount a small file system below the project")
				}
				p := newProject(t)
				mnt, extra := c.sub(p)
				if err := syscall.Mount("tmpfs", mnt, "tmpfs", syscall.MS_NOSUID|syscall.MS_NODEV, fmt.Sprintf("size=%d,mode=0777", size)); err != nil {
					t.Fatalf("mounting the small file system: %v", err)
				}
				t.Cleanup(func() {
					if err := syscall.Unmount(mnt, syscall.MNT_DETACH); err != nil {
						t.Errorf("unmounting %s: %v", mnt, err)
					}
				})
				cfg := p.writeConfig(iso, "c.toml", "[sandbox]\ndisk_reserve = \"24m\"\n"+extra)
				r := p.sandbox(iso, []string{"--config", cfg}, "cd "+mnt+" && "+fillProject)
				avail := availBytes(t, mnt)
				if r.code != 125 || !strings.Contains(r.stderr, "stopped the run") || !strings.Contains(r.stderr, "sandbox.disk_reserve") || !strings.Contains(r.stderr, mnt) {
					t.Errorf("want the run stopped (125) naming sandbox.disk_reserve and %s; got %s", mnt, r)
				}
				if strings.Contains(r.stdout, "full after") || avail < reserve/2 {
					t.Errorf("the command filled the file system mounted at %s: %d bytes left, want at least half the %d reserve; %s", mnt, avail, reserve, r)
				}
				// Now under the reserve there: refused before the command runs.
				cfg = p.writeConfig(iso, "big.toml", "[sandbox]\ndisk_reserve = \"128m\"\n"+extra)
				r = p.sandbox(iso, []string{"--config", cfg}, "touch "+filepath.Join(mnt, "ran"))
				if r.code != 125 || !strings.Contains(r.stderr, "the command did not run") || !strings.Contains(r.stderr, mnt) {
					t.Errorf("want the run refused (125) naming %s; got %s", mnt, r)
				}
				if _, err := os.Stat(filepath.Join(mnt, "ran")); err == nil {
					t.Error("the command ran although the file system below the project was under the reserve")
				}
			})
		}
	})
}
