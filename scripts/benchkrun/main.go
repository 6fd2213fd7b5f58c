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
// It also reports the Go package init time of devsandbox and devsandbox-krun.
//
//	benchkrun -bin bin/devsandbox [-n 20] [-image devsandbox-test/busybox:1] [-user dsbtest]
package main

import (
	"bytes"
	"flag"
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

type runner struct {
	cred *syscall.Credential
	env  []string
	dir  string
}

func (r runner) output(argv []string) (string, time.Duration, error) {
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir, cmd.Env = r.dir, r.env
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: r.cred}
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	start := time.Now()
	err := cmd.Run()
	d := time.Since(start)
	if err != nil {
		return "", 0, fmt.Errorf("%s: %v: %s", strings.Join(argv, " "), err, errb.String())
	}
	return out.String(), d, nil
}

func (r runner) time(argv []string) (time.Duration, error) {
	_, d, err := r.output(argv)
	return d, err
}

func run(bin string, n int, image, userName string) error {
	bin, err := filepath.Abs(bin)
	if err != nil {
		return err
	}
	home, _ := os.UserHomeDir()
	r := runner{}
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
		tmp, err := os.MkdirTemp("", "benchkrun-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(tmp)
		if err := os.Chmod(tmp, 0o755); err != nil {
			return err
		}
		for _, f := range []string{"devsandbox", "devsandbox-init", "devsandbox-krun"} {
			data, err := os.ReadFile(filepath.Join(filepath.Dir(bin), f))
			if err != nil {
				return err
			}
			if err := os.WriteFile(filepath.Join(tmp, f), data, 0o755); err != nil {
				return err
			}
		}
		bin = filepath.Join(tmp, "devsandbox")
	}
	proj, err := os.MkdirTemp(home, "benchkrun-proj-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(proj)
	cfg := filepath.Join(proj, "krun.toml")
	if err := os.WriteFile(cfg, []byte("[krun]\nruntime = \"runc\"\n"), 0o644); err != nil {
		return err
	}
	for _, p := range []string{proj, cfg} {
		if err := os.Lchown(p, uid, gid); err != nil {
			return err
		}
	}
	rt := fmt.Sprintf("/run/user/%d", uid)
	r.dir = proj
	r.env = []string{"HOME=" + home, "USER=" + name, "LOGNAME=" + name, "PATH=/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin", "LANG=C.UTF-8", "XDG_RUNTIME_DIR=" + rt}
	if _, err := r.time([]string{"podman", "image", "exists", image}); err != nil {
		if err := loadImage(r, image); err != nil {
			return err
		}
	}

	ds := []string{bin, "--config", cfg, "--isolator=krun", "--image=" + image, "--egress=open", "--", "true"}
	plain, err := alternate(r, n, []string{"podman", "run", "--rm", image, "true"}, ds)
	if err != nil {
		return err
	}
	keep, err := alternate(r, n, []string{"podman", "run", "--rm", "--userns=keep-id", image, "true"}, ds)
	if err != nil {
		return err
	}
	fmt.Printf("krun isolator (krun.runtime = runc), %d alternating runs each, image %s, as %s\n", n, image, name)
	plain.print("podman run --rm IMAGE true", "devsandbox --isolator=krun -- true", 1.2)
	keep.print("podman run --rm --userns=keep-id IMAGE", "devsandbox --isolator=krun -- true", 1.2)
	for _, b := range []string{bin, filepath.Join(filepath.Dir(bin), "devsandbox-krun")} {
		if err := initTrace(b); err != nil {
			return err
		}
	}
	return nil
}

// loadImage copies image from the docker engine into the user's podman storage.
func loadImage(r runner, image string) error {
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
	_, err = r.time([]string{"podman", "load", "-q", "-i", f.Name()})
	return err
}

type pair struct{ a, b []time.Duration }

func alternate(r runner, n int, a, b []string) (pair, error) {
	var p pair
	for i := 0; i < 2; i++ { // warm up (and start devsandbox's podman service)
		if _, err := r.time(b); err != nil {
			return p, err
		}
		if _, err := r.time(a); err != nil {
			return p, err
		}
	}
	for i := 0; i < n; i++ {
		d, err := r.time(a)
		if err != nil {
			return p, err
		}
		p.a = append(p.a, d)
		if d, err = r.time(b); err != nil {
			return p, err
		}
		p.b = append(p.b, d)
	}
	return p, nil
}

func (p pair) print(nameA, nameB string, target float64) {
	ma, mb := pct(p.a, 50), pct(p.b, 50)
	fmt.Printf("  %-40s median %7.1f ms  p90 %7.1f ms\n", nameA, ms(ma), ms(pct(p.a, 90)))
	fmt.Printf("  %-40s median %7.1f ms  p90 %7.1f ms\n", nameB, ms(mb), ms(pct(p.b, 90)))
	fmt.Printf("  ratio (median) %.2fx   target <= %.1fx\n", float64(mb)/float64(ma), target)
}

func initTrace(bin string) error {
	cmd := exec.Command(bin, "version")
	if filepath.Base(bin) == "devsandbox-krun" {
		cmd = exec.Command(bin) // prints its usage: package init is what is measured
	}
	cmd.Env = append(os.Environ(), "GODEBUG=inittrace=1")
	var errb bytes.Buffer
	cmd.Stderr = &errb
	_ = cmd.Run()
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
	fmt.Printf("Go package init of %s: %.2f ms over %d packages\n", filepath.Base(bin), total, n)
	return nil
}

func pct(d []time.Duration, p int) time.Duration {
	s := append([]time.Duration(nil), d...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s[(len(s)-1)*p/100]
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
