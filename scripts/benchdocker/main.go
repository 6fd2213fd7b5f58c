// Command benchdocker measures the launch cost of devsandbox's docker isolator against
// the docker CLI doing the same thing, alternating the two so machine noise hits both:
//
//   - cold: `devsandbox --isolator=docker --egress=open -- true` against
//     `docker run --rm IMAGE true` (target <= 1.2x);
//   - warm: a keep_container run against `docker exec CONTAINER true` into the same
//     kept container (target <= 1.0x).
//
// It also reports the Go package init time of devsandbox and devsandbox-docker.
//
//	benchdocker -bin bin/devsandbox [-n 20] [-image devsandbox-test/busybox:1] [-user dsbtest]
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
	bin := flag.String("bin", "bin/devsandbox", "devsandbox binary (devsandbox-docker and devsandbox-init beside it)")
	n := flag.Int("n", 20, "runs of each")
	image := flag.String("image", "devsandbox-test/busybox:1", "image for both sides")
	userName := flag.String("user", "dsbtest", "unprivileged user (in the docker group) to run as when root")
	flag.Parse()
	if err := run(*bin, *n, *image, *userName); err != nil {
		fmt.Fprintf(os.Stderr, "benchdocker: %v\n", err)
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
		var groups []uint32
		gids, _ := u.GroupIds()
		for _, g := range gids {
			if n, err := strconv.Atoi(g); err == nil {
				groups = append(groups, uint32(n))
			}
		}
		r.cred = &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid), Groups: groups}
		tmp, err := os.MkdirTemp("", "benchdocker-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(tmp)
		if err := os.Chmod(tmp, 0o755); err != nil {
			return err
		}
		for _, f := range []string{"devsandbox", "devsandbox-init", "devsandbox-docker"} {
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
	proj, err := os.MkdirTemp(home, "benchdocker-proj-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(proj)
	if err := os.Lchown(proj, uid, gid); err != nil {
		return err
	}
	r.dir = proj
	r.env = []string{"HOME=" + home, "USER=" + name, "LOGNAME=" + name, "PATH=/usr/local/bin:/usr/bin:/bin", "LANG=C.UTF-8"}

	ds := []string{bin, "--isolator=docker", "--image=" + image, "--egress=open", "--", "true"}
	raw := []string{"docker", "run", "--rm", image, "true"}
	cold, err := alternate(r, n, raw, ds)
	if err != nil {
		return err
	}
	kept := []string{bin, "--isolator=docker", "--image=" + image, "--egress=open", "--keep-container", "--", "true"}
	for i := 0; i < 3; i++ { // create and settle the kept container
		if _, err := r.time(kept); err != nil {
			return err
		}
	}
	id, _, err := r.output([]string{"docker", "ps", "-q", "--filter", "label=dev.devsandbox.dir=" + proj})
	if err != nil || strings.TrimSpace(id) == "" {
		return fmt.Errorf("finding the kept container: %v", err)
	}
	id = strings.TrimSpace(id)
	defer exec.Command("docker", "rm", "-f", id).Run()
	warm, err := alternate(r, n, []string{"docker", "exec", id, "true"}, kept)
	if err != nil {
		return err
	}
	fmt.Printf("docker isolator, %d alternating runs each, image %s\n", n, image)
	cold.print("docker run --rm IMAGE true", "devsandbox --isolator=docker -- true", 1.2)
	warm.print("docker exec CONTAINER true", "devsandbox --keep-container -- true", 1.0)
	for _, b := range []string{bin, filepath.Join(filepath.Dir(bin), "devsandbox-docker")} {
		if err := initTrace(b); err != nil {
			return err
		}
	}
	return nil
}

type pair struct{ a, b []time.Duration }

func alternate(r runner, n int, a, b []string) (pair, error) {
	var p pair
	for i := 0; i < 2; i++ { // warm up
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
	fmt.Printf("  %-38s median %7.1f ms  p90 %7.1f ms\n", nameA, ms(ma), ms(pct(p.a, 90)))
	fmt.Printf("  %-38s median %7.1f ms  p90 %7.1f ms\n", nameB, ms(mb), ms(pct(p.b, 90)))
	fmt.Printf("  ratio (median) %.2fx   target <= %.1fx\n", float64(mb)/float64(ma), target)
}

func initTrace(bin string) error {
	cmd := exec.Command(bin, "version")
	cmd.Env = append(os.Environ(), "GODEBUG=inittrace=1")
	var errb bytes.Buffer
	cmd.Stderr = &errb
	if err := cmd.Run(); err != nil {
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
	fmt.Printf("Go package init of %s: %.2f ms over %d packages\n", filepath.Base(bin), total, n)
	return nil
}

func pct(d []time.Duration, p int) time.Duration {
	s := append([]time.Duration(nil), d...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s[(len(s)-1)*p/100]
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
