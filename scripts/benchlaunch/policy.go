package main

import (
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/devsandbox/devsandbox/syscalls"
)

// benchPolicy measures what the syscall policy adds to a launch: rendering the
// seccomp program (ahead of time for the strict policy, at launch for a relaxed one),
// and bwrap loading it (plain bwrap with and without --seccomp, the program on a
// descriptor as devsandbox passes it); then devsandbox with the strict and a relaxed
// policy, the latter rendering its program at launch.
func benchPolicy(r runner, bin string, bwrap []string, n int) error {
	arch, err := syscalls.Native()
	if err != nil {
		return err
	}
	relaxed, _ := syscalls.New([]string{"io_uring"})
	for _, c := range []struct {
		name string
		pol  syscalls.Policy
	}{{"strict (rendered ahead of time)", syscalls.Policy{}}, {"relaxed io_uring (rendered now)", relaxed}} {
		const reps = 2000
		start := time.Now()
		for range reps {
			if _, err := syscalls.Seccomp(c.pol, arch); err != nil {
				return err
			}
		}
		fmt.Printf("syscall policy: rendering the seccomp program, %s: %.1f µs (mean of %d)\n", c.name, float64(time.Since(start).Nanoseconds())/reps/1000, reps)
	}
	prog, err := syscalls.Seccomp(syscalls.Policy{}, arch)
	if err != nil {
		return err
	}
	dir, err := os.MkdirTemp("", "benchpolicy-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	_ = os.Chmod(dir, 0o755)
	file := filepath.Join(dir, "seccomp.bpf")
	if err := os.WriteFile(file, prog, 0o644); err != nil {
		return err
	}
	withFilter := r
	withFilter.files = []string{file}
	plain := append(append([]string{}, bwrap...), "--", "true")
	filtered := append(append([]string{}, bwrap...), "--seccomp", "3", "--", "true")
	meds, err := compareRunners([]runner{r, withFilter}, [][]string{plain, filtered}, n)
	if err != nil {
		return err
	}
	fmt.Printf("syscall policy: bwrap loading the strict program (%d instructions)\n", len(prog)/8)
	fmt.Printf("  %-32s median %7.2f ms\n", "plain bwrap --share-net", ms(meds[0]))
	fmt.Printf("  %-32s median %7.2f ms   difference %+.3f ms\n", "bwrap --share-net --seccomp", ms(meds[1]), ms(meds[1]-meds[0]))

	cfg := filepath.Join(r.dir, "relaxed.toml")
	if err := os.WriteFile(cfg, []byte("[sandbox]\nrelax_syscalls = [\"io_uring\"]\n"), 0o644); err != nil {
		return err
	}
	if r.cred != nil {
		_ = os.Lchown(cfg, int(r.cred.Uid), int(r.cred.Gid))
	}
	meds, err = compare(r, [][]string{{bin, "--egress=open", "--", "true"}, {bin, "--egress=open", "--config", cfg, "--", "true"}}, n)
	if err != nil {
		return err
	}
	fmt.Printf("syscall policy: devsandbox, strict against relaxed (rendered at launch)\n")
	fmt.Printf("  %-32s median %7.2f ms\n", "devsandbox --egress=open", ms(meds[0]))
	fmt.Printf("  %-32s median %7.2f ms   difference %+.3f ms\n", "... relax_syscalls io_uring", ms(meds[1]), ms(meds[1]-meds[0]))
	return nil
}
