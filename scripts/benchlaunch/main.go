// Command benchlaunch measures the launch cost of devsandbox against the raw tool it
// drives, alternating the two so machine noise hits both alike, and prints the ratio.
// It also reports Go package init time of the binary (GODEBUG=inittrace=1).
//
//	benchlaunch -bin bin/devsandbox [-n 200] [-user dsbtest] [-only throughput] [-bwrap PATH] [-mounts N [-propagation shared|private]] [-tty all|out|err|in]
//
// -tty runs every launch on a new pty of its own, its controlling terminal in a
// session of its own (as a shell in a terminal runs a command in the foreground),
// plain bwrap and devsandbox alike: all gives it as stdin, stdout and stderr (an
// interactive run), out as stdout and stderr with stdin /dev/null (a build run), err
// as stderr alone, in as stdin alone (`cmd | less`); the other descriptors are
// /dev/null. devsandbox puts a pty of its own (and a relay or a filter) between the
// command and a terminal, so this is the launch a user at a terminal gets.
//
// -mounts N (root) runs the benchmark with N extra tmpfs mounts in the mount table:
// benchlaunch re-executes itself in a private mount namespace of its own and mounts
// them there, so the host's mount table stays as it is. bubblewrap before 0.13 reads
// the whole table after each of its mounts, so a host with many mounts (docker, snap)
// pays for it on each launch. -propagation shared (the default) makes each of them a
// peer group of its own, as the mounts of a host whose / is shared (systemd's) are:
// bwrap's copies of them are then slaves, and each line of the table it reads is longer
// and costs the kernel more to print; private leaves them private.
//
// -bwrap runs another bubblewrap for both sides: the plain bwrap baseline runs it, and
// devsandbox finds it first on its PATH (a directory holding only a link named bwrap).
package main

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/devsandbox/devsandbox/isolator/projlock"
	"github.com/devsandbox/devsandbox/scripts/benchrun"
)

func main() {
	bin := flag.String("bin", "bin/devsandbox", "devsandbox binary")
	n := flag.Int("n", 200, "runs of each")
	userName := flag.String("user", "dsbtest", "unprivileged user to run as when root")
	files := flag.Int("files", 0, "files in the benchmark project (spread over files/100 dirs)")
	only := flag.String("only", "", "run only the cases whose title contains this")
	large := flag.Int("large", 0, "also compare an empty project with one of this many files (e.g. 200000)")
	originAddr := flag.String("origin", "", "internal: serve the proxy benchmark's origin on this address")
	bwrapBin := flag.String("bwrap", "", "bwrap binary for the plain bwrap runs and devsandbox's (default: bwrap on PATH)")
	mounts := flag.Int("mounts", 0, "run with this many extra tmpfs mounts, in a private mount namespace (root)")
	ttyFlag := flag.String("tty", "", "run every launch on a pty of its own, as its controlling terminal: all (stdin, stdout, stderr), out (stdout, stderr), err (stderr) or in (stdin)")
	prop := flag.String("propagation", propShared, "-mounts: make each extra tmpfs shared (a peer group of its own, as on a host whose / is shared) or leave it private")
	args, inNS := withoutMountNSFlag(os.Args[1:])
	flag.CommandLine.Parse(args)
	if flag.NArg() > 0 {
		// The flag package stops at the first non-flag: `-only egress open` unquoted
		// would silently drop every flag after it (a -mounts run without its mounts).
		fmt.Fprintf(os.Stderr, "benchlaunch: unexpected argument %q (flags after it were not read; quote -only's value)\n", flag.Arg(0))
		os.Exit(2)
	}
	shape, err := parseShape(*ttyFlag)
	if err != nil {
		fmt.Fprintf(os.Stderr, "benchlaunch: %v\n", err)
		os.Exit(2)
	}
	if err := checkMounts(*mounts, *prop, os.Getuid()); err != nil {
		fmt.Fprintf(os.Stderr, "benchlaunch: %v\n", err)
		os.Exit(2)
	}
	if *mounts > 0 && !inNS {
		err := reexecInMountNS(args)
		var exit *exec.ExitError
		if errors.As(err, &exit) {
			os.Exit(exit.ExitCode())
		}
		if err != nil {
			fmt.Fprintf(os.Stderr, "benchlaunch: %v\n", err)
			os.Exit(1)
		}
		return
	}
	title, cleanup := "", func() {}
	if inNS {
		lines, undo, err := setupMounts(*mounts, *prop == propShared)
		if err != nil {
			fmt.Fprintf(os.Stderr, "benchlaunch: -mounts: %v\n", err)
			os.Exit(1)
		}
		cleanup = undo
		title = fmt.Sprintf(" with %d extra host mounts (%s)", *mounts, *prop)
		fmt.Printf("mount table: %d lines in /proc/self/mountinfo (%d extra tmpfs, %s, in a private mount namespace)\n", lines, *mounts, *prop)
	} else if lines, err := countLines("/proc/self/mountinfo"); err == nil {
		fmt.Printf("mount table: %d lines in /proc/self/mountinfo\n", lines)
	}
	if *originAddr != "" {
		if err := serveOrigin(*originAddr); err != nil {
			fmt.Fprintf(os.Stderr, "benchlaunch: origin: %v\n", err)
			os.Exit(1)
		}
		return
	}
	if *ttyFlag != "" {
		title += fmt.Sprintf(" on a terminal (-tty %s)", *ttyFlag)
	}
	err = run(*bin, *bwrapBin, *n, *userName, *files, *only, *large, title, shape)
	cleanup()
	if err != nil {
		fmt.Fprintf(os.Stderr, "benchlaunch: %v\n", err)
		os.Exit(1)
	}
}

type runner struct {
	cred *syscall.Credential
	env  []string
	dir  string
	// files are opened for each run and passed as descriptors 3, 4, ...
	files []string
	// tty: the standard descriptors that are a new pty for each run (onTerminal).
	tty ttyShape
}

// ttyShape says which of stdin, stdout and stderr are a terminal.
type ttyShape [3]bool

// parseShape reads -tty's value.
func parseShape(s string) (ttyShape, error) {
	switch s {
	case "":
		return ttyShape{}, nil
	case "all":
		return ttyShape{true, true, true}, nil
	case "out":
		return ttyShape{false, true, true}, nil
	case "err":
		return ttyShape{false, false, true}, nil
	case "in":
		return ttyShape{true, false, false}, nil
	}
	return ttyShape{}, fmt.Errorf("-tty %q: want all, out, err or in", s)
}

func (t ttyShape) any() bool { return t[0] || t[1] || t[2] }

func (r runner) time(argv []string) (time.Duration, error) {
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir, cmd.Env = r.dir, r.env
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: r.cred}
	for _, name := range r.files {
		f, err := os.Open(name)
		if err != nil {
			return 0, err
		}
		defer f.Close()
		cmd.ExtraFiles = append(cmd.ExtraFiles, f)
	}
	var errb bytes.Buffer
	cmd.Stderr = &errb
	if r.tty.any() {
		done, err := onTerminal(cmd, r.tty)
		if err != nil {
			return 0, err
		}
		defer done()
		if !r.tty[2] {
			cmd.Stderr = &errb
		}
	}
	start := time.Now()
	err := cmd.Run()
	d := time.Since(start)
	if err != nil {
		return 0, fmt.Errorf("%s: %v: %s", strings.Join(argv, " "), err, errb.String())
	}
	return d, nil
}

// run runs the benchmarks; title follows "launch of `true`" in the launch sections.
func run(bin, bwrapBin string, n int, userName string, files int, only string, large int, title string, shape ttyShape) error {
	bin, err := filepath.Abs(bin)
	if err != nil {
		return err
	}
	bwrap, path := "bwrap", "/usr/local/bin:/usr/bin:/bin"
	if bwrapBin != "" {
		dir, err := bwrapDir(bwrapBin)
		if err != nil {
			return err
		}
		defer os.RemoveAll(dir)
		bwrap, path = filepath.Join(dir, "bwrap"), dir+":"+path
	}
	if v, err := exec.Command(bwrap, "--version").Output(); err == nil {
		fmt.Printf("bwrap: %s (%s)\n", bwrap, strings.TrimSpace(string(v)))
	}
	home, _ := os.UserHomeDir()
	r := runner{tty: shape}
	uid, gid := os.Getuid(), os.Getgid()
	name := os.Getenv("USER")
	if uid == 0 {
		u, err := user.Lookup(userName)
		if err != nil {
			return fmt.Errorf("user %s: %w (run scripts/setup-test-env.sh)", userName, err)
		}
		uid, _ = strconv.Atoi(u.Uid)
		gid, _ = strconv.Atoi(u.Gid)
		home, name = u.HomeDir, userName
		r.cred = &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
		// The binary must be readable by that user.
		tmp, err := os.MkdirTemp("", "benchlaunch-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(tmp)
		os.Chmod(tmp, 0o755)
		for _, name := range []string{"devsandbox", "devsandbox-init", "devsandbox-bwrap-init", "devsandbox-proxy"} {
			data, err := os.ReadFile(filepath.Join(filepath.Dir(bin), name))
			if errors.Is(err, fs.ErrNotExist) && name == "devsandbox-bwrap-init" {
				continue // a build from before it existed: devsandbox runs devsandbox-init
			}
			if err != nil {
				return err
			}
			if err := os.WriteFile(filepath.Join(tmp, name), data, 0o755); err != nil {
				return err
			}
		}
		bin = filepath.Join(tmp, "devsandbox")
	}
	// Not in the user's own home, which the integration suite guards (benchrun.ThrowawayHome).
	home, dropHome, err := benchrun.ThrowawayHome(home, uid, gid)
	defer dropHome()
	if err != nil {
		return err
	}
	proj, err := os.MkdirTemp(home, "bench-proj-")
	if err != nil {
		return err
	}
	defer forget(home, proj)
	if err := populate(proj, files); err != nil {
		return err
	}
	if err := filepath.Walk(proj, func(p string, _ os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		return os.Lchown(p, uid, gid)
	}); err != nil {
		return err
	}
	r.dir = proj
	r.env = []string{"HOME=" + home, "USER=" + name, "LOGNAME=" + name, "PATH=" + path, "LANG=C.UTF-8"}
	if v, ok := os.LookupEnv("DEVSANDBOX_EARLY_START"); ok {
		// devsandbox's early start (on by default): DEVSANDBOX_EARLY_START=0 for
		// benchlaunch measures without it, always whatever the load.
		r.env = append(r.env, "DEVSANDBOX_EARLY_START="+v)
	}

	bwrapBase := []string{bwrap, "--unshare-all", "--die-with-parent", "--new-session",
		"--ro-bind", "/usr", "/usr", "--symlink", "usr/bin", "/bin", "--symlink", "usr/lib", "/lib",
		"--symlink", "usr/lib64", "/lib64", "--dev", "/dev", "--proc", "/proc"}
	withNet := append(append([]string{}, bwrapBase[:2]...), append([]string{"--share-net"}, bwrapBase[2:]...)...)
	cases := []struct {
		title string
		argvs [][]string
		names []string
	}{
		{"launch of `true`, egress open", [][]string{append(withNet, "--", "true"), {bin, "--egress=open", "--", "true"}},
			[]string{"plain bwrap --share-net", "devsandbox --egress=open"}},
		{"launch of `true`, egress proxy (the default)", [][]string{
			append(bwrapBase, "--", "true"),
			{bin, "--egress=proxy", "--", "true"},
			{bin, "--egress=none", "--", "true"},
		}, []string{"plain bwrap (no network)", "devsandbox --egress=proxy", "devsandbox --egress=none"}},
		// pasta in a group of its own: the kernel tears a network namespace down in a
		// worker after its last process exits, pasta's (with its tap device and
		// routes) the longest, and the next command's namespace setup waits on it.
		// Alternated with the devsandbox launches, it made the one right after it
		// pay for pasta's teardown.
		{"launch of `true`, pasta", [][]string{
			append(bwrapBase, "--", "true"),
			append([]string{"pasta", "--config-net", "--quiet", "--"}, append(withNet, "--", "true")...),
		}, []string{"plain bwrap (no network)", "pasta --config-net -- bwrap"}},
	}
	if large > 0 {
		big, err := os.MkdirTemp(home, "bench-large-")
		if err != nil {
			return err
		}
		defer forget(home, big)
		fmt.Printf("creating a project of %d files in %d directories...\n", large, (large+99)/100)
		if err := populate(big, large); err != nil {
			return err
		}
		if err := chownTree(big, uid, gid); err != nil {
			return err
		}
		rb := r
		rb.dir = big
		ds := []string{bin, "--egress=open", "--", "true"}
		meds, err := compareRunners([]runner{r, rb}, [][]string{ds, ds}, n)
		if err != nil {
			return err
		}
		fmt.Printf("launch of `true` on a large project (mask scan with its cache)\n")
		fmt.Printf("  %-32s median %7.2f ms   ratio 1.00x\n", "empty project", ms(meds[0]))
		fmt.Printf("  %-32s median %7.2f ms   ratio %.2fx   target <= 1.3x\n", fmt.Sprintf("%d files", large), ms(meds[1]), float64(meds[1])/float64(meds[0]))
	}
	if only != "" {
		var keep = cases[:0]
		for _, c := range cases {
			if strings.Contains(c.title, only) {
				keep = append(keep, c)
			}
		}
		cases = keep
	}
	fmt.Printf("project of %d files; %d alternating runs of each command\n", files, n)
	for _, c := range cases {
		meds, err := compare(r, c.argvs, n)
		if err != nil {
			return err
		}
		fmt.Printf("%s\n", strings.Replace(c.title, "launch of `true`", "launch of `true`"+title, 1))
		for i, name := range c.names {
			fmt.Printf("  %-32s median %7.2f ms   ratio %.2fx\n", name, ms(meds[i]), float64(meds[i])/float64(meds[0]))
		}
	}
	if only == "" || strings.Contains("egress proxy throughput", only) {
		if err := benchProxy(r, bin); err != nil {
			return err
		}
	}
	if only == "" || strings.Contains("syscall policy", only) {
		if err := benchPolicy(r, bin, withNet, n); err != nil {
			return err
		}
	}
	return initTrace(bin)
}

// bwrapDir makes a directory, readable by everyone, holding only a link named bwrap
// to bin: first on devsandbox's PATH, it makes devsandbox run bin.
func bwrapDir(bin string) (string, error) {
	bin, err := filepath.Abs(bin)
	if err != nil {
		return "", err
	}
	if _, err := os.Stat(bin); err != nil {
		return "", fmt.Errorf("-bwrap: %w", err)
	}
	dir, err := os.MkdirTemp("", "benchlaunch-bwrap-")
	if err != nil {
		return "", err
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		os.RemoveAll(dir)
		return "", err
	}
	if err := os.Symlink(bin, filepath.Join(dir, "bwrap")); err != nil {
		os.RemoveAll(dir)
		return "", err
	}
	return dir, nil
}

// populate fills dir with files spread over files/100 directories.
func populate(dir string, files int) error {
	for i := 0; i < files; i++ {
		d := filepath.Join(dir, fmt.Sprintf("d%04d", i/100))
		if i%100 == 0 {
			if err := os.MkdirAll(d, 0o755); err != nil {
				return err
			}
		}
		if err := os.WriteFile(filepath.Join(d, fmt.Sprintf("f%d.txt", i)), nil, 0o644); err != nil {
			return err
		}
	}
	return nil
}

func initTrace(bin string) error {
	cmd := exec.Command(bin, "version")
	cmd.Env = append(os.Environ(), "GODEBUG=inittrace=1")
	var errb bytes.Buffer
	cmd.Stderr = &errb
	if err := cmd.Run(); err != nil {
		return err
	}
	type pkg struct {
		name string
		ms   float64
	}
	var pkgs []pkg
	total := 0.0
	for _, l := range strings.Split(errb.String(), "\n") {
		f := strings.Fields(l)
		if len(f) < 6 || f[0] != "init" {
			continue
		}
		v, _ := strconv.ParseFloat(f[4], 64)
		total += v
		pkgs = append(pkgs, pkg{f[1], v})
	}
	sort.Slice(pkgs, func(i, j int) bool { return pkgs[i].ms > pkgs[j].ms })
	fmt.Printf("Go package init: %.2f ms in all; largest:", total)
	for i := 0; i < 3 && i < len(pkgs); i++ {
		fmt.Printf(" %s %.2f ms;", pkgs[i].name, pkgs[i].ms)
	}
	fmt.Println()
	return nil
}

// compareRunners is compare with a runner (working directory) per argv.
func compareRunners(rs []runner, argvs [][]string, n int) ([]time.Duration, error) {
	samples := make([][]time.Duration, len(argvs))
	for i := -3; i < n; i++ {
		for j, a := range argvs {
			d, err := rs[j].time(a)
			if err != nil {
				return nil, err
			}
			if i >= 0 {
				samples[j] = append(samples[j], d)
			}
		}
	}
	meds := make([]time.Duration, len(argvs))
	for j := range samples {
		meds[j] = median(samples[j])
	}
	return meds, nil
}

// forget removes a benchmark project and what devsandbox keeps for it.
func forget(home, proj string) {
	os.RemoveAll(proj)
	sum := sha256.Sum256([]byte(proj))
	name := filepath.Base(proj) + "-" + hex.EncodeToString(sum[:4])
	os.RemoveAll(filepath.Join(home, ".local/state/devsandbox", name))
	os.RemoveAll(filepath.Join(home, ".local/share/devsandbox", name))
	os.Remove(projlock.Path(filepath.Join(home, ".local/state/devsandbox", name)))
}

func chownTree(dir string, uid, gid int) error {
	return filepath.Walk(dir, func(p string, _ os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		return os.Lchown(p, uid, gid)
	})
}

// compare runs each argv n times, alternating, after a warm-up, and returns medians.
func compare(r runner, argvs [][]string, n int) ([]time.Duration, error) {
	for i := 0; i < 3; i++ {
		for _, a := range argvs {
			if _, err := r.time(a); err != nil {
				return nil, err
			}
		}
	}
	samples := make([][]time.Duration, len(argvs))
	for i := 0; i < n; i++ {
		for j, a := range argvs {
			d, err := r.time(a)
			if err != nil {
				return nil, err
			}
			samples[j] = append(samples[j], d)
		}
	}
	meds := make([]time.Duration, len(argvs))
	for j := range samples {
		meds[j] = median(samples[j])
	}
	return meds, nil
}

func median(d []time.Duration) time.Duration { return pct(d, 50) }

func pct(d []time.Duration, p int) time.Duration {
	s := append([]time.Duration(nil), d...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s[(len(s)-1)*p/100]
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
