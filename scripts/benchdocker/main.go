// Command benchdocker measures the launch cost of devsandbox's docker isolator against
// the docker CLI doing the same thing, alternating the two so machine noise hits both:
//
//   - first: one run right after the binaries were put in place (it derives the image
//     the containers run);
//   - cold: `devsandbox --isolator=docker --egress=open -- true` against
//     `docker run --rm IMAGE true` (target <= 1.2x);
//   - warm: a keep_container run against `docker exec CONTAINER true` into the same
//     kept container (target <= 1.0x);
//   - egress: cold with --egress=allowlist (a helper container applies the rules
//     before the command starts) against `docker run --rm IMAGE true`, and warm with
//     --egress=proxy (the kept container's stable proxy endpoint) against `docker
//     exec` (no targets named).
//
// For the warm runs it also alternates n more of each while it reads the engine's
// events, and prints each side's time split into the engine's own (exec_start to
// exec_die) and the client's (enginetime.go).
//
// It also prints the Engine API requests of one warm run and of one `docker exec`
// (through a recording socket in front of the engine's), and the Go package init
// time of devsandbox and devsandbox-docker.
//
// With -only warm it measures only the warm runs (and prints their requests); with
// -base DIR it also alternates DIR's devsandbox and devsandbox-docker with -bin's in
// warm runs and prints when each sent its exec's start (compare.go). The two builds
// must report the same version and carry the same build stamp: build both with
// `make build VERSION=bench STAMP=S`, S printed once by `scripts/buildstamp.sh bench`.
//
// With -busy N another session holds N sleeping processes in the kept container during
// the warm --egress=open runs (busy.go); it ends before the --egress=proxy runs, which
// make the kept container anew.
//
//	benchdocker -bin bin/devsandbox [-n 20] [-image devsandbox-test/busybox:1] [-user dsbtest] [-only warm] [-base DIR] [-busy N]
package main

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/devsandbox/devsandbox/isolator/projlock"
	"github.com/devsandbox/devsandbox/scripts/benchrun"
)

func main() {
	bin := flag.String("bin", "bin/devsandbox", "devsandbox binary (devsandbox-docker and devsandbox-init beside it)")
	n := flag.Int("n", 20, "runs of each")
	image := flag.String("image", "devsandbox-test/busybox:1", "image for both sides")
	userName := flag.String("user", "dsbtest", "unprivileged user (in the docker group) to run as when root")
	only := flag.String("only", "", `"warm": only the warm runs (kept container, --egress=open and proxy)`)
	base := flag.String("base", "", "a directory with another build's devsandbox and devsandbox-docker to alternate with -bin's in warm runs, through the request recorder (both built with the same VERSION and STAMP)")
	busy := flag.Int("busy", 0, "processes another session holds in the kept container during the warm --egress=open runs")
	flag.Parse()
	if *only != "" && *only != "warm" {
		fmt.Fprintf(os.Stderr, "benchdocker: -only %q: want warm\n", *only)
		os.Exit(2)
	}
	if err := run(*bin, *n, *image, *userName, *only == "warm", *base, *busy); err != nil {
		fmt.Fprintf(os.Stderr, "benchdocker: %v\n", err)
		os.Exit(1)
	}
}

func run(bin string, n int, image, userName string, warmOnly bool, base string, busy int) error {
	st, cleanup, err := benchrun.AsUser(bin, userName, "benchdocker-", []string{"devsandbox", "devsandbox-init", "devsandbox-docker", "devsandbox-proxy"}, true)
	defer cleanup()
	if err != nil {
		return err
	}
	bin, name, uid, gid, r := st.Bin, st.Name, st.UID, st.GID, st.Runner
	// Not in the user's own home, which the integration suite guards
	// (benchrun.ThrowawayHome); the containers' home is this one, as the default
	// /home/<user> is for a user whose home that is.
	home, dropHome, err := benchrun.ThrowawayHome(st.Home, uid, gid)
	defer dropHome()
	if err != nil {
		return err
	}
	if err := benchrun.WriteConfig(home, uid, gid, fmt.Sprintf("[docker]\nhome = %q\n", home)); err != nil {
		return err
	}
	proj, err := os.MkdirTemp(home, "benchdocker-proj-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(proj)
	if err := os.Lchown(proj, uid, gid); err != nil {
		return err
	}
	r.Dir = proj
	r.Env = []string{"HOME=" + home, "USER=" + name, "LOGNAME=" + name, "PATH=/usr/local/bin:/usr/bin:/bin", "LANG=C.UTF-8"}

	ds := []string{bin, "--isolator=docker", "--image=" + image, "--egress=open", "--", "true"}
	raw := []string{"docker", "run", "--rm", image, "true"}
	// The binaries were just copied: the first run derives the image it runs (the
	// cache is keyed by the programs' files), the cost of a first run after an
	// install or an image change.
	first, err := r.Time(ds)
	if err != nil {
		return err
	}
	var cold, coldAllow benchrun.Pair
	if !warmOnly {
		if cold, err = benchrun.Alternate(r, n, raw, ds); err != nil {
			return err
		}
	}
	kept := []string{bin, "--isolator=docker", "--image=" + image, "--egress=open", "--keep-container", "--", "true"}
	for i := 0; i < 3; i++ { // create and settle the kept container
		if _, err := r.Time(kept); err != nil {
			return err
		}
	}
	// Everything the runs left in the engine: the kept containers and their companion
	// with their anonymous volumes (the anchors), then the project's volumes (the kept
	// container's endpoint volume stayed, one per benchmark run).
	defer func() {
		out, _, _ := r.Output([]string{"docker", "ps", "-aq", "--filter", "label=dev.devsandbox.dir=" + proj})
		images := map[string]bool{}
		for _, c := range strings.Fields(out) {
			if img, err := exec.Command("docker", "inspect", "-f", "{{.Image}}", c).Output(); err == nil {
				images[strings.TrimSpace(string(img))] = true
			}
			_ = exec.Command("docker", "rm", "-f", "-v", c).Run()
		}
		// The image the runs derived (its content is this run's: the programs were
		// copied for it); not forced, so one another container still uses stays.
		for img := range images {
			_ = exec.Command("docker", "rmi", img).Run()
		}
		// Content volumes carry the project's name, not its directory.
		out, _, _ = r.Output([]string{"docker", "volume", "ls", "-q", "--filter", "label=dev.devsandbox.name"})
		for _, v := range strings.Fields(out) {
			if strings.HasPrefix(v, "devsandbox-"+filepath.Base(proj)+"-") {
				_ = exec.Command("docker", "volume", "rm", "-f", v).Run()
			}
		}
		// And the project's state and data in the user's home (devsandbox names them
		// after the project's directory; its sandbox home may hold files the engine
		// made as root, which this process, root, removes).
		for _, d := range []string{".local/state/devsandbox", ".local/share/devsandbox"} {
			left, _ := filepath.Glob(filepath.Join(home, d, filepath.Base(proj)+"-*"))
			for _, l := range left {
				_ = os.RemoveAll(l)
			}
		}
		locks, _ := filepath.Glob(projlock.Path(filepath.Join(home, ".local/state/devsandbox", filepath.Base(proj)+"-*")))
		for _, l := range locks {
			_ = os.Remove(l)
		}
	}()
	id, err := keptContainer(r, proj)
	if err != nil {
		return err
	}
	var bs *busySession
	if busy > 0 {
		if bs, err = startBusy(r, kept, busy); err != nil {
			return err
		}
		defer bs.stop()
	}
	warm, err := benchrun.Alternate(r, n, []string{"docker", "exec", id, "true"}, kept)
	if err != nil {
		return err
	}
	warmSplit, err := splitEngine(r, id, n, []string{"docker", "exec", id, "true"}, kept)
	if err != nil {
		return err
	}
	// What one warm run asks of the engine, against docker exec, through a socket that
	// records the requests (the derived image is found under the engine's other
	// address: the kept container is the same).
	sock, err := engineSocket()
	if err != nil {
		return err
	}
	counter, err := startCounter(filepath.Join(filepath.Dir(bin), "engine.sock"), sock)
	if err != nil {
		return err
	}
	defer counter.Close()
	rc := r
	rc.Env = append(append([]string(nil), r.Env...), "DOCKER_HOST=unix://"+filepath.Join(filepath.Dir(bin), "engine.sock"))
	requests := func(argv ...[]string) ([][]request, error) {
		var reqs [][]request
		for _, a := range argv {
			counter.take()
			if _, err := rc.Time(a); err != nil {
				return nil, err
			}
			reqs = append(reqs, counter.take())
		}
		return reqs, nil
	}
	// The first run through the counter warms the engine's other address.
	reqs, err := requests(kept, kept, []string{"docker", "exec", id, "true"})
	if err != nil {
		return err
	}
	var compared string
	if base != "" {
		if base, err = filepath.Abs(base); err != nil {
			return err
		}
		if compared, err = compareBuilds(rc, counter, bin, base, kept, id, n); err != nil {
			return err
		}
	}
	allow := []string{bin, "--isolator=docker", "--image=" + image, "--egress=allowlist", "--allow", "192.0.2.1:443", "--", "true"}
	if !warmOnly {
		if coldAllow, err = benchrun.Alternate(r, n, raw, allow); err != nil {
			return err
		}
	}
	bs.stop() // the proxy runs make the kept container anew, refused while a session is attached
	keptProxy := []string{bin, "--isolator=docker", "--image=" + image, "--egress=proxy", "--keep-container", "--", "true"}
	for i := 0; i < 3; i++ { // recreate the kept container for this policy
		if _, err := r.Time(keptProxy); err != nil {
			return err
		}
	}
	id2, err := keptContainer(r, proj)
	if err != nil {
		return err
	}
	warmProxy, err := benchrun.Alternate(r, n, []string{"docker", "exec", id2, "true"}, keptProxy)
	if err != nil {
		return err
	}
	proxySplit, err := splitEngine(r, id2, n, []string{"docker", "exec", id2, "true"}, keptProxy)
	if err != nil {
		return err
	}
	proxyReqs, err := requests(keptProxy, keptProxy)
	if err != nil {
		return err
	}
	fmt.Printf("docker isolator, %d alternating runs each, image %s\n", n, image)
	fmt.Printf("  %-46s %7.1f ms\n", "first run after install (derives the image)", float64(first.Microseconds())/1000)
	if !warmOnly {
		cold.Print(46, "docker run --rm IMAGE true", "devsandbox --isolator=docker -- true", 1.2)
	}
	if busy > 0 {
		fmt.Printf("  (warm --egress=open runs with another session holding %d processes in the kept container)\n", busy)
	}
	warm.Print(46, "docker exec CONTAINER true", "devsandbox --keep-container -- true", 1.0)
	warmSplit.print("docker exec CONTAINER true", "devsandbox --keep-container -- true")
	printRequests("devsandbox --keep-container -- true (warm)", reqs[1])
	printRequests("docker exec CONTAINER true", reqs[2])
	fmt.Print(compared)
	if !warmOnly {
		coldAllow.Print(46, "docker run --rm IMAGE true", "devsandbox --egress=allowlist -- true", 0)
	}
	warmProxy.Print(46, "docker exec CONTAINER true", "devsandbox --keep-container --egress=proxy -- true", 0)
	proxySplit.print("docker exec CONTAINER true", "devsandbox --keep-container --egress=proxy -- true")
	printRequests("devsandbox --keep-container --egress=proxy -- true (warm)", proxyReqs[1])
	if err := benchrun.InitTrace([]string{bin, "version"}, true); err != nil {
		return err
	}
	// devsandbox-docker only serves a hand-off; run bare it prints its usage and
	// fails: package init is what is measured.
	return benchrun.InitTrace([]string{filepath.Join(filepath.Dir(bin), "devsandbox-docker")}, false)
}

// keptContainer is the id of proj's running kept container (not its companion).
func keptContainer(r benchrun.Runner, proj string) (string, error) {
	out, _, err := r.Output([]string{"docker", "ps", "--filter", "label=dev.devsandbox.dir=" + proj,
		"--filter", "label=dev.devsandbox.kept=true", "--format", `{{.ID}} {{.Label "dev.devsandbox.role"}}`})
	if err != nil {
		return "", fmt.Errorf("finding the kept container: %w", err)
	}
	for _, line := range strings.Split(out, "\n") {
		if id, role, _ := strings.Cut(strings.TrimSpace(line), " "); id != "" && role == "" {
			return id, nil
		}
	}
	return "", fmt.Errorf("finding the kept container: none running")
}
