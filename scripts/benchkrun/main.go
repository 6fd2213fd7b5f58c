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
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"

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
	r.Dir = proj
	r.Env = []string{"HOME=" + home, "USER=" + name, "LOGNAME=" + name, "PATH=/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin", "LANG=C.UTF-8", "XDG_RUNTIME_DIR=" + rt}
	if _, err := r.Time([]string{"podman", "image", "exists", image}); err != nil {
		if err := loadImage(r, image); err != nil {
			return err
		}
	}

	ds := []string{bin, "--config", cfg, "--isolator=krun", "--image=" + image, "--egress=open", "--", "true"}
	plain, err := benchrun.Alternate(r, n, []string{"podman", "run", "--rm", image, "true"}, ds)
	if err != nil {
		return err
	}
	keep, err := benchrun.Alternate(r, n, []string{"podman", "run", "--rm", "--userns=keep-id", image, "true"}, ds)
	if err != nil {
		return err
	}
	fmt.Printf("krun isolator (krun.runtime = runc), %d alternating runs each, image %s, as %s\n", n, image, name)
	plain.Print(40, "podman run --rm IMAGE true", "devsandbox --isolator=krun -- true", 1.2)
	keep.Print(40, "podman run --rm --userns=keep-id IMAGE", "devsandbox --isolator=krun -- true", 1.2)
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
