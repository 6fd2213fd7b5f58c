// Command benchkrun measures the launch cost of devsandbox's krun isolator (with
// krun.runtime = "runc": no libkrun on the test machines) against the podman CLI
// running the same image as the same user, alternating the two so machine noise hits
// both (target <= 1.2x):
//
//   - `podman run --rm IMAGE true` against `devsandbox --isolator=krun --egress=open
//     -- true` (both with the default rootless network);
//   - `podman run --rm --userns=keep-id IMAGE true` against the same devsandbox run:
//     keep-id (the host UID inside) is part of what devsandbox asks of podman.
//
// It prints the load average before each section, then where devsandbox's launch
// goes: the median of each phase its --debug timings name over n more runs, and the
// Go package init time of devsandbox and devsandbox-krun.
//
//	benchkrun -bin bin/devsandbox [-n 20] [-image devsandbox-test/busybox:1] [-user dsbtest]
package main

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/devsandbox/devsandbox/scripts/benchrun"
)

func main() {
	bin := flag.String("bin", "bin/devsandbox", "devsandbox binary (devsandbox-krun and devsandbox-init beside it)")
	n := flag.Int("n", 20, "runs of each")
	image := flag.String("image", "devsandbox-test/busybox:1", "image for both sides (loaded from docker into the user's podman storage when missing)")
	userName := flag.String("user", "dsbtest", "unprivileged user to run as when root")
	flag.Parse()
	if err := run(*bin, *n, *image, *userName); err != nil {
		fmt.Fprintf(os.Stderr, "benchkrun: %v\n", err)
		os.Exit(1)
	}
}

func run(bin string, n int, image, userName string) error {
	st, cleanup, err := benchrun.AsUser(bin, userName, "benchkrun-", []string{"devsandbox", "devsandbox-init", "devsandbox-krun"}, false)
	defer cleanup()
	if err != nil {
		return err
	}
	bin, home, name, uid, gid, r := st.Bin, st.Home, st.Name, st.UID, st.GID, st.Runner
	proj, err := os.MkdirTemp(home, "benchkrun-proj-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(proj)
	// Outside the project: a config file a sandbox can write applies only once
	// trusted.
	cfgDir, err := os.MkdirTemp("", "benchkrun-config-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(cfgDir)
	cfg := filepath.Join(cfgDir, "krun.toml")
	if err := os.WriteFile(cfg, []byte("[krun]\nruntime = \"runc\"\n"), 0o644); err != nil {
		return err
	}
	for _, p := range []string{proj, cfgDir, cfg} {
		if err := os.Lchown(p, uid, gid); err != nil {
			return err
		}
	}
	rt := fmt.Sprintf("/run/user/%d", uid)
	r.Dir = proj
	r.Env = []string{"HOME=" + home, "USER=" + name, "LOGNAME=" + name, "PATH=/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin", "LANG=C.UTF-8", "XDG_RUNTIME_DIR=" + rt}
	if _, err := r.Time([]string{"podman", "image", "exists", image}); err != nil {
		if err := loadImage(r, image); err != nil {
			return err
		}
	}

	ds := []string{bin, "--config", cfg, "--isolator=krun", "--image=" + image, "--egress=open", "--", "true"}
	fmt.Printf("load %s\n", load())
	plain, err := benchrun.Alternate(r, n, []string{"podman", "run", "--rm", image, "true"}, ds)
	if err != nil {
		return err
	}
	fmt.Printf("load %s\n", load())
	keep, err := benchrun.Alternate(r, n, []string{"podman", "run", "--rm", "--userns=keep-id", image, "true"}, ds)
	if err != nil {
		return err
	}
	fmt.Printf("krun isolator (krun.runtime = runc), %d alternating runs each, image %s, as %s\n", n, image, name)
	plain.Print(40, "podman run --rm IMAGE true", "devsandbox --isolator=krun -- true", 1.2)
	keep.Print(40, "podman run --rm --userns=keep-id IMAGE", "devsandbox --isolator=krun -- true", 1.2)
	fmt.Printf("load %s\n", load())
	if err := phases(r, n, append([]string{ds[0], "--debug"}, ds[1:]...)); err != nil {
		return err
	}
	// devsandbox-krun prints its usage (and fails): package init is what is measured.
	for _, argv := range [][]string{{bin, "version"}, {filepath.Join(filepath.Dir(bin), "devsandbox-krun")}} {
		if err := benchrun.InitTrace(argv, false); err != nil {
			return err
		}
	}
	return nil
}

// loadImage copies image from the docker engine into the user's podman storage.
func loadImage(r benchrun.Runner, image string) error {
	f, err := os.CreateTemp("", "benchkrun-image-*.tar")
	if err != nil {
		return err
	}
	f.Close()
	defer os.Remove(f.Name())
	if out, err := exec.Command("docker", "save", "-o", f.Name(), image).CombinedOutput(); err != nil {
		return fmt.Errorf("%s is in neither podman's nor docker's storage: %v: %s", image, err, out)
	}
	if err := os.Chmod(f.Name(), 0o644); err != nil {
		return err
	}
	_, err = r.Time([]string{"podman", "load", "-q", "-i", f.Name()})
	return err
}

// phases runs argv (devsandbox with --debug) n times and prints the median of each
// phase of the krun isolator its timings line names, in the order they came, and of
// the whole launch.
func phases(r benchrun.Runner, n int, argv []string) error {
	var order []string
	got := map[string][]float64{}
	for i := 0; i < n; i++ {
		_, stderr, _, err := r.Outputs(argv)
		if err != nil {
			return err
		}
		line := ""
		for _, l := range strings.Split(stderr, "\n") {
			if strings.Contains(l, "timings: ") {
				line = l
			}
		}
		m := krunPhases.FindStringSubmatch(line)
		t := totalPhase.FindStringSubmatch(line)
		if m == nil || t == nil {
			return fmt.Errorf("no krun timings in devsandbox --debug's output: %q", stderr)
		}
		for _, ph := range strings.Split(m[1], ", ") {
			// A phase's name may have spaces ("image env"): the value is the last word.
			k := strings.LastIndex(ph, " ")
			if k <= 0 {
				return fmt.Errorf("a phase %q in %q", ph, line)
			}
			name, v := ph[:k], ph[k+1:]
			f, err := strconv.ParseFloat(strings.TrimSuffix(v, "ms"), 64)
			if err != nil {
				return fmt.Errorf("a phase %q in %q", ph, line)
			}
			if _, seen := got[name]; !seen {
				order = append(order, name)
			}
			got[name] = append(got[name], f)
		}
		f, _ := strconv.ParseFloat(t[1], 64)
		got["total"] = append(got["total"], f)
	}
	fmt.Printf("devsandbox --debug phases of the krun launch, medians of %d runs (a phase not in every run: of the runs that have it):\n", n)
	for _, name := range append(order, "total") {
		fmt.Printf("  %-16s %7.2f ms  (%d runs)\n", name, median(got[name]), len(got[name]))
	}
	return nil
}

var (
	krunPhases = regexp.MustCompile(`krun \(([^)]*)\)`)
	totalPhase = regexp.MustCompile(`total ([0-9.]+)ms`)
)

func median(v []float64) float64 {
	s := append([]float64(nil), v...)
	sort.Float64s(s)
	return s[len(s)/2]
}

// load is the 1-minute load average.
func load() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	return strings.Fields(string(b))[0]
}
