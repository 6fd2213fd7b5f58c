//go:build integration

package integration

import (
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// An image's VOLUME is a directory the engine makes an anonymous volume of, filled
// from the image, in every container created from it: the sandbox (a writable spot in
// its read-only root), and each helper devsandbox runs (the home volume's chown, the
// mask volume's, the companion, the firewall helper, all made from the user's image or
// the one derived from it). Nothing names those volumes: a container removed without
// its volumes leaves one behind on the engine, with what the image and the sandbox
// wrote into it, after every run, and neither `sandboxes rm` nor prune can find it.
// A one-shot run must leave nothing of the sandbox's behind, and `sandboxes rm` must
// take what a kept container held.
func TestImageVolumesLeaveNothing(t *testing.T) {
	isos := withRootless(dockerVariants())
	if slices.Contains(isolators(), "krun") {
		isos = append(isos, "krun")
	}
	forEachIsolatorOf(t, isos, func(t *testing.T, iso string) {
		marker := "DSBRT6-" + randHex(8)
		tag := "devsandbox-test/rt6-volume:" + strings.ToLower(randHex(4))
		builder := iso
		if iso == "krun" {
			builder = localDocker
		}
		t.Cleanup(func() {
			if ids, err := dockerCmd(builder, "images", "-q", "--filter", "label=dev.devsandbox.base-ref="+tag).Output(); err == nil && len(ids) > 0 {
				_ = dockerCmd(builder, append([]string{"rmi", "-f"}, strings.Fields(string(ids))...)...).Run()
			}
			_ = dockerCmd(builder, "rmi", "-f", tag).Run()
			if iso == "krun" {
				_, _ = podmanAs("rmi", "-f", tag)
			}
			// What the runs left (the failure above) goes too, found the same way.
			for _, v := range markedVolumes(t, iso, marker) {
				v = strings.Fields(v)[0]
				if iso == "krun" {
					_, _ = podmanAs("volume", "rm", "-f", v)
				} else {
					_ = dockerCmd(iso, "volume", "rm", "-f", v).Run()
				}
			}
		})
		dir := t.TempDir()
		df := "FROM devsandbox-test/debian:3\nRUN mkdir /rt6vol && echo " + marker + " > /rt6vol/marker && chmod 1777 /rt6vol\nVOLUME /rt6vol\n"
		if err := os.WriteFile(filepath.Join(dir, "Dockerfile"), []byte(df), 0o644); err != nil {
			t.Fatal(err)
		}
		if out, err := dockerCmd(builder, "build", "-q", "-t", tag, dir).CombinedOutput(); err != nil {
			t.Fatalf("building the image: %v\n%s", err, out)
		}
		if iso == "krun" {
			f, err := os.CreateTemp("", "devsandbox-it-rt6-*.tar") // the test user reads it
			if err != nil {
				t.Fatal(err)
			}
			tar := f.Name()
			f.Close()
			defer os.Remove(tar)
			if out, err := dockerCmd(builder, "save", "-o", tar, tag).CombinedOutput(); err != nil {
				t.Fatalf("docker save: %v\n%s", err, out)
			}
			_ = os.Chmod(tar, 0o644)
			if out, err := podmanAs("load", "-q", "-i", tar); err != nil {
				t.Fatalf("podman load: %v\n%s", err, out)
			}
		}
		p := newProject(t)
		// A new project: its home volume is made (the chown helper, from the image)
		// by the first run; the proxy brings the companion and the firewall helper.
		script := `echo ` + marker + `-loot > /rt6vol/loot 2>/dev/null; echo ran`
		args := []string{"--isolator=" + iso, "--image=" + tag, "--egress=proxy"}
		if r := run(t, p.dir, nil, "", append(args, "--", "/bin/sh", "-c", script)...); r.code != 0 || r.stdout != "ran\n" {
			t.Fatalf("the one-shot run:\n%s", r)
		}
		if left := markedVolumes(t, iso, marker); len(left) > 0 {
			t.Errorf("a one-shot run left the image's VOLUME behind on the engine, nameless, with what the sandbox wrote: %s; want every container devsandbox made removed with its anonymous volumes", left)
		}
		if iso == "krun" {
			return // krun keeps no container
		}
		keep := append(slices.Clone(args), "--keep-container", "--", "/bin/sh", "-c", script)
		for range 2 {
			if r := run(t, p.dir, nil, "", keep...); r.code != 0 || r.stdout != "ran\n" {
				t.Fatalf("the kept run:\n%s", r)
			}
		}
		if r := run(t, p.dir, []string{"DOCKER_HOST=" + engineOf(iso)}, "", "sandboxes", "rm", p.name()); r.code != 0 {
			t.Fatalf("removing the kept container:\n%s", r)
		}
		if left := markedVolumes(t, iso, marker); len(left) > 0 {
			t.Errorf("after `sandboxes rm`, the image's VOLUME of the kept containers is still on the engine: %s; want them removed with their containers", left)
		}
	})
}

// markedVolumes are the volumes on iso's engine (the test user's podman storage for
// krun) whose directory holds the file marker with marker in it: the ones made from
// the test's image, each named with what the sandbox wrote into it.
func markedVolumes(t *testing.T, iso, marker string) []string {
	t.Helper()
	var names []string
	var out string
	var err error
	if iso == "krun" {
		out, err = podmanAs("volume", "ls", "-q")
	} else {
		var b []byte
		b, err = dockerCmd(iso, "volume", "ls", "-q").Output()
		out = string(b)
	}
	if err != nil {
		t.Fatalf("listing the volumes: %v: %s", err, out)
	}
	for _, v := range strings.Fields(out) {
		var mp string
		if iso == "krun" {
			mp, err = podmanAs("volume", "inspect", "--format", "{{.Mountpoint}}", v)
		} else {
			var b []byte
			b, err = dockerCmd(iso, "volume", "inspect", "--format", "{{.Mountpoint}}", v).Output()
			mp = strings.TrimSpace(string(b))
		}
		if err != nil {
			continue // removed meanwhile (another test's)
		}
		if b, err := os.ReadFile(filepath.Join(mp, "marker")); err == nil && strings.TrimSpace(string(b)) == marker {
			if loot, err := os.ReadFile(filepath.Join(mp, "loot")); err == nil {
				v += " (holding the sandbox's " + strings.TrimSpace(string(loot)) + ")"
			}
			names = append(names, v)
		}
	}
	return names
}

// On an engine that cannot bind this machine's paths (tcp://, Docker Desktop), the home
// is a named volume, and a new one is root's: devsandbox gives it to the sandbox's user
// before the first run. That step must not run the image's programs: they are anyone's
// (an image's /bin/sh and chown are files of the image like any other), and there they
// would run as root with CAP_CHOWN and CAP_FOWNER on the volume, planting in the
// sandbox's home files owned by root (or by any uid) that its user cannot change or
// remove. Here the image's chown leaves a mark of the uid it ran as in the volume.
func TestHomeVolumeRunsNoImageCode(t *testing.T) {
	// The home is a named volume only on an engine reached other than by a Unix socket.
	if !slices.Contains(withTCP(dockerVariants()), tcpDocker) {
		t.Skip("docker-tcp runs with docker-remote, which DEVSANDBOX_IT_ISOLATORS does not name")
	}
	forEachIsolatorOf(t, []string{tcpDocker}, func(t *testing.T, iso string) {
		tag := "devsandbox-test/rt6-chown:" + strings.ToLower(randHex(4))
		t.Cleanup(func() {
			if ids, err := dockerCmd(iso, "images", "-q", "--filter", "label=dev.devsandbox.base-ref="+tag).Output(); err == nil && len(ids) > 0 {
				_ = dockerCmd(iso, append([]string{"rmi", "-f"}, strings.Fields(string(ids))...)...).Run()
			}
			_ = dockerCmd(iso, "rmi", "-f", tag).Run()
		})
		dir := t.TempDir()
		df := "FROM devsandbox-test/debian:3\n" +
			"RUN mv /usr/bin/chown /usr/bin/chown.real && printf '#!/bin/sh\\nfor a; do last=$a; done\\n" +
			"touch \"$last/.rt6-image-chown-ran-as-$(id -u)\"\\nexec /usr/bin/chown.real \"$@\"\\n' > /usr/bin/chown && chmod 0755 /usr/bin/chown\n"
		if err := os.WriteFile(filepath.Join(dir, "Dockerfile"), []byte(df), 0o644); err != nil {
			t.Fatal(err)
		}
		if out, err := dockerCmd(iso, "build", "-q", "-t", tag, dir).CombinedOutput(); err != nil {
			t.Fatalf("building the image: %v\n%s", err, out)
		}
		p := newProject(t)
		t.Cleanup(func() {
			_ = run(t, p.dir, tcpEnv(), "", "sandboxes", "rm", p.name())
		})
		r := run(t, p.dir, nil, "", "--isolator="+iso, "--image="+tag, "--egress=none", "--", "/bin/sh", "-c",
			`ls -a "$HOME" | grep rt6- ; stat -c 'home %u %a' "$HOME"; touch "$HOME/mine" && echo writable`)
		if r.code != 0 {
			t.Fatalf("the run:\n%s", r)
		}
		if strings.Contains(r.stdout, "rt6-image-chown-ran-as") {
			t.Errorf("the image's chown ran when devsandbox made the home volume (its mark in the home): want none of the image's programs run outside the sandbox, got:\n%s", r)
		}
		if want := "home " + strconv.Itoa(it.uid) + " 700\nwritable\n"; !strings.HasSuffix(r.stdout, want) {
			t.Errorf("the home volume: want the sandbox user's, 0700, writable (%q), got:\n%s", want, r)
		}
	})
}
