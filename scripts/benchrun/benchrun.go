// Package benchrun is what the isolator benchmarks (scripts/benchdocker,
// scripts/benchkrun, scripts/benchctrlz) share: running commands as the unprivileged
// test user, timing two commands in alternation, printing medians and the ratio,
// percentiles, the load average, and the Go package init time of a binary.
package benchrun

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Runner runs commands with a credential, an environment and a working directory.
type Runner struct {
	Cred *syscall.Credential
	Env  []string
	Dir  string
}

// Output runs argv and returns its stdout and how long it took.
func (r Runner) Output(argv []string) (string, time.Duration, error) {
	out, _, d, err := r.Outputs(argv)
	return out, d, err
}

// Outputs runs argv and returns its stdout, its stderr and how long it took.
func (r Runner) Outputs(argv []string) (stdout, stderr string, d time.Duration, err error) {
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir, cmd.Env = r.Dir, r.Env
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: r.Cred}
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	start := time.Now()
	err = cmd.Run()
	d = time.Since(start)
	if err != nil {
		return "", "", 0, fmt.Errorf("%s: %v: %s", strings.Join(argv, " "), err, errb.String())
	}
	return out.String(), errb.String(), d, nil
}

// Time runs argv and returns how long it took.
func (r Runner) Time(argv []string) (time.Duration, error) {
	_, d, err := r.Output(argv)
	return d, err
}

// Setup is who the benchmark runs as and the devsandbox binary it runs.
type Setup struct {
	Bin, Home, Name string
	UID, GID        int
	Runner          Runner
}

// AsUser makes bin absolute and, when running as root, sets up to run as userName
// (with its supplementary groups when groups is set): the named binaries beside bin
// are copied into a temporary directory that user can read. cleanup removes it.
func AsUser(bin, userName, tmpPrefix string, binaries []string, groups bool) (s Setup, cleanup func(), err error) {
	cleanup = func() {}
	bin, err = filepath.Abs(bin)
	if err != nil {
		return s, cleanup, err
	}
	home, _ := os.UserHomeDir()
	s = Setup{Bin: bin, Home: home, Name: os.Getenv("USER"), UID: os.Getuid(), GID: os.Getgid()}
	if s.UID != 0 {
		return s, cleanup, nil
	}
	u, err := user.Lookup(userName)
	if err != nil {
		return s, cleanup, fmt.Errorf("user %s: %w (run scripts/setup-test-env.sh)", userName, err)
	}
	s.UID, _ = strconv.Atoi(u.Uid)
	s.GID, _ = strconv.Atoi(u.Gid)
	s.Home, s.Name = u.HomeDir, userName
	s.Runner.Cred = &syscall.Credential{Uid: uint32(s.UID), Gid: uint32(s.GID)}
	if groups {
		gids, _ := u.GroupIds()
		for _, g := range gids {
			if n, err := strconv.Atoi(g); err == nil {
				s.Runner.Cred.Groups = append(s.Runner.Cred.Groups, uint32(n))
			}
		}
	}
	tmp, err := os.MkdirTemp("", tmpPrefix)
	if err != nil {
		return s, cleanup, err
	}
	cleanup = func() { os.RemoveAll(tmp) }
	if err := os.Chmod(tmp, 0o755); err != nil {
		return s, cleanup, err
	}
	for _, f := range binaries {
		data, err := os.ReadFile(filepath.Join(filepath.Dir(bin), f))
		if err != nil {
			return s, cleanup, err
		}
		if err := os.WriteFile(filepath.Join(tmp, f), data, 0o755); err != nil {
			return s, cleanup, err
		}
	}
	s.Bin = filepath.Join(tmp, "devsandbox")
	return s, cleanup, nil
}

// Pair holds the run times of two commands.
type Pair struct{ A, B []time.Duration }

// Alternate runs a and b n times each, in turn, after two warm-up runs of each (which
// also start what a side starts on first use, such as devsandbox's podman service).
func Alternate(r Runner, n int, a, b []string) (Pair, error) {
	var p Pair
	for i := 0; i < 2; i++ { // warm up
		if _, err := r.Time(b); err != nil {
			return p, err
		}
		if _, err := r.Time(a); err != nil {
			return p, err
		}
	}
	for i := 0; i < n; i++ {
		d, err := r.Time(a)
		if err != nil {
			return p, err
		}
		p.A = append(p.A, d)
		if d, err = r.Time(b); err != nil {
			return p, err
		}
		p.B = append(p.B, d)
	}
	return p, nil
}

// Print (target 0: none named) prints the median and p90 of each side, names padded to width, and the ratio
// of the medians against target.
func (p Pair) Print(width int, nameA, nameB string, target float64) {
	ma, mb := pct(p.A, 50), pct(p.B, 50)
	fmt.Printf("  %-*s median %7.1f ms  p90 %7.1f ms\n", width, nameA, ms(ma), ms(pct(p.A, 90)))
	fmt.Printf("  %-*s median %7.1f ms  p90 %7.1f ms\n", width, nameB, ms(mb), ms(pct(p.B, 90)))
	if target == 0 {
		fmt.Printf("  ratio (median) %.2fx   (no target)\n", float64(mb)/float64(ma))
		return
	}
	fmt.Printf("  ratio (median) %.2fx   target <= %.1fx\n", float64(mb)/float64(ma), target)
}

// InitTrace runs argv with GODEBUG=inittrace=1 and prints the Go package init time
// of argv[0]. When strict, a failed run is returned before anything is printed;
// otherwise its exit is ignored (a binary that prints its usage and fails still
// measures its init).
func InitTrace(argv []string, strict bool) error {
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = append(os.Environ(), "GODEBUG=inittrace=1")
	var errb bytes.Buffer
	cmd.Stderr = &errb
	if err := cmd.Run(); err != nil && strict {
		return err
	}
	total, n := 0.0, 0
	for _, l := range strings.Split(errb.String(), "\n") {
		f := strings.Fields(l)
		if len(f) < 6 || f[0] != "init" {
			continue
		}
		v, _ := strconv.ParseFloat(f[4], 64)
		total += v
		n++
	}
	fmt.Printf("Go package init of %s: %.2f ms over %d packages\n", filepath.Base(argv[0]), total, n)
	return nil
}

// Percentile is the p-th percentile of d, by rank (the median of an even count is the
// lower of the middle two); 0 when d is empty.
func Percentile(d []time.Duration, p int) time.Duration {
	if len(d) == 0 {
		return 0
	}
	return pct(d, p)
}

// LoadAvg is the content of /proc/loadavg (the 1, 5 and 15 minute load averages,
// the running and total tasks, the last pid), "unknown" where it cannot be read.
func LoadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	return strings.TrimSpace(string(b))
}

func pct(d []time.Duration, p int) time.Duration {
	s := append([]time.Duration(nil), d...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s[(len(s)-1)*p/100]
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// ThrowawayHome makes a home for the benchmark's runs beside the user's own home
// (realHome), which the integration suite guards and other runs may use meanwhile:
// a directory of uid's in /var/tmp with realHome's permissions and copies of its
// top-level rc files (the sandbox binds ~/.profile, ~/.bashrc and the like
// read-only: a home without them is a smaller view than a user's). The projects go
// inside it, so a project is below HOME as a user's is; not in /tmp, which
// devsandbox gives the sandbox privately and a remote engine may not share. Its
// path is as the integration suite's throwaway home, within six bytes of
// /home/<user>: the project's socket directory is chosen as for a user's home
// (sockdir.Choose goes by the longest socket path).
// cleanup removes it with what devsandbox kept there.
func ThrowawayHome(realHome string, uid, gid int) (home string, cleanup func(), err error) {
	cleanup = func() {}
	for home == "" {
		var b [3]byte
		if _, err := rand.Read(b[:]); err != nil {
			return "", cleanup, err
		}
		d := "/var/tmp/dsb-" + hex.EncodeToString(b[:])
		if err := os.Mkdir(d, 0o700); err == nil {
			home = d
		} else if !os.IsExist(err) {
			return "", cleanup, err
		}
	}
	cleanup = func() { os.RemoveAll(home) }
	mode := os.FileMode(0o755)
	if fi, err := os.Stat(realHome); err == nil {
		mode = fi.Mode().Perm()
	}
	if err := os.Chmod(home, mode); err != nil {
		return home, cleanup, err
	}
	entries, _ := os.ReadDir(realHome)
	for _, e := range entries {
		if !strings.HasPrefix(e.Name(), ".") || !e.Type().IsRegular() {
			continue
		}
		fi, err := e.Info()
		if err != nil || fi.Size() > 1<<20 {
			continue
		}
		data, err := os.ReadFile(filepath.Join(realHome, e.Name()))
		if err != nil {
			continue // unreadable to this process: not part of the view either way
		}
		dst := filepath.Join(home, e.Name())
		if err := os.WriteFile(dst, data, fi.Mode().Perm()); err != nil {
			return home, cleanup, err
		}
		if err := os.Lchown(dst, uid, gid); err != nil && os.Getuid() == 0 {
			return home, cleanup, err
		}
	}
	if err := os.Lchown(home, uid, gid); err != nil && os.Getuid() == 0 {
		return home, cleanup, err
	}
	return home, cleanup, nil
}

// WriteConfig writes devsandbox's config file in home, owned by uid.
func WriteConfig(home string, uid, gid int, content string) error {
	dir := filepath.Join(home, ".config", "devsandbox")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	f := filepath.Join(dir, "config.toml")
	if err := os.WriteFile(f, []byte(content), 0o644); err != nil {
		return err
	}
	for _, p := range []string{filepath.Join(home, ".config"), dir, f} {
		if err := os.Lchown(p, uid, gid); err != nil && os.Getuid() == 0 {
			return err
		}
	}
	return nil
}
