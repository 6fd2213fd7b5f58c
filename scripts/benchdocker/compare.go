package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/devsandbox/devsandbox/internal/buildstamp"
	"github.com/devsandbox/devsandbox/scripts/benchrun"
)

// compareBuilds alternates `docker exec`, base's devsandbox and bin's (each with its
// own devsandbox-docker, beside the same devsandbox-init and devsandbox-proxy, so both
// use the same kept container) through the request recorder, n runs each, and prints
// per side the median and minimum of the wall time and of when the run sent its
// exec's start (the client's share of the latency: what follows is the engine's).
func compareBuilds(rc benchrun.Runner, counter *apiCounter, bin, base string, kept []string, id string, n int) (string, error) {
	dir := filepath.Dir(bin)
	// The kept container's spec carries devsandbox's version: builds that report
	// different versions would each replace it, under the `docker exec` side's id.
	versions := map[string]string{}
	for _, from := range []string{base, dir} {
		out, err := exec.Command(filepath.Join(from, "devsandbox"), "version").Output()
		if err != nil {
			return "", fmt.Errorf("asking %s/devsandbox its version: %w", from, err)
		}
		versions[from] = strings.TrimSpace(string(out))
	}
	// And the same build stamp: -base swaps only devsandbox and devsandbox-docker, and
	// either refuses the devsandbox-init and devsandbox-proxy beside it when their
	// stamp is not its own, which it is not for two source trees unless given.
	recipe := "build both with the same VERSION and STAMP: in one tree `make build VERSION=bench STAMP=$(scripts/buildstamp.sh bench)`, then `make build VERSION=bench STAMP=<the same value>` in the other"
	if versions[base] != versions[dir] {
		return "", fmt.Errorf("-base needs two builds that report the same version (%q and %q): the kept container is made anew for another version; %s", versions[base], versions[dir], recipe)
	}
	stamps := map[string]string{}
	for _, from := range []string{base, dir} {
		s, err := buildstamp.Read(filepath.Join(from, "devsandbox"))
		if err != nil {
			return "", fmt.Errorf("reading the build stamp of %s/devsandbox: %w", from, err)
		}
		stamps[from] = s.String()
	}
	if stamps[base] != stamps[dir] {
		return "", fmt.Errorf("-base needs two builds with the same build stamp (%s and %s): each devsandbox refuses helpers of another build; %s", stamps[base], stamps[dir], recipe)
	}
	builds := map[string]map[string][]byte{}
	for name, from := range map[string]string{"base": base, "bin": dir} {
		builds[name] = map[string][]byte{}
		for _, f := range []string{"devsandbox", "devsandbox-docker"} {
			b, err := os.ReadFile(filepath.Join(from, f))
			if err != nil {
				return "", err
			}
			builds[name][f] = b
		}
	}
	install := func(name string) error {
		for f, b := range builds[name] {
			tmp := filepath.Join(dir, "."+f+".new")
			if err := os.WriteFile(tmp, b, 0o755); err != nil {
				return err
			}
			if err := os.Chmod(tmp, 0o755); err != nil {
				return err
			}
			if err := os.Rename(tmp, filepath.Join(dir, f)); err != nil {
				return err
			}
		}
		return nil
	}
	sides := []struct{ name, build string }{{"docker exec CONTAINER true", ""}, {"base: " + base, "base"}, {"bin: " + dir, "bin"}}
	wall := make([][]time.Duration, len(sides))
	start := make([][]time.Duration, len(sides))
	for i := -1; i < n; i++ { // the first round settles each build
		for s, side := range sides {
			argv := []string{"docker", "exec", id, "true"}
			if side.build != "" {
				if err := install(side.build); err != nil {
					return "", err
				}
				argv = kept
			}
			counter.take()
			d, err := rc.Time(argv)
			if err != nil {
				return "", err
			}
			reqs := counter.take()
			if i < 0 {
				continue
			}
			wall[s] = append(wall[s], d)
			for _, r := range reqs {
				if strings.HasPrefix(r.line, "POST ") && strings.HasSuffix(r.line, "/start") && strings.Contains(r.line, "/exec/") {
					start[s] = append(start[s], r.sent)
					break
				}
			}
		}
	}
	if err := install("bin"); err != nil {
		return "", err
	}
	var out strings.Builder
	fmt.Fprintf(&out, "  builds alternated through the request recorder, %d runs each (median / min, ms)\n", n)
	fmt.Fprintf(&out, "      %-52s %17s %17s\n", "", "wall", "exec start sent")
	for s, side := range sides {
		fmt.Fprintf(&out, "      %-52s %8.1f / %6.1f %8.1f / %6.1f\n", side.name, med(wall[s]), low(wall[s]), med(start[s]), low(start[s]))
	}
	return out.String(), nil
}

func med(d []time.Duration) float64 {
	if len(d) == 0 {
		return 0
	}
	s := slices.Clone(d)
	slices.Sort(s)
	return ms(s[(len(s)-1)/2])
}

func low(d []time.Duration) float64 {
	if len(d) == 0 {
		return 0
	}
	return ms(slices.Min(d))
}
