package docker

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	dockercontainer "github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/mount"
	"github.com/docker/docker/api/types/network"
	"github.com/docker/docker/pkg/stdcopy"

	"github.com/devsandbox/devsandbox/isolator"
	"github.com/devsandbox/devsandbox/isolator/container"
	"github.com/devsandbox/devsandbox/isolator/sandboxinit/wire"
)

// LabelRole marks the short-lived helper containers (value "firewall").
const LabelRole = "dev.devsandbox.role"

// firewallHelper renders the helper container that applies fw in the network
// namespace of the container target: it joins that namespace, holds NET_ADMIN and
// nothing else, and runs devsandbox-init (in the derived image; static, so any base
// image works) to program the rules through netlink and read them back. The engine does the namespace joining, so this works without root on the
// host, and the same way against a daemon in a VM. Pure.
func firewallHelper(args []string, vols []string, target, image string, imageEnv []string, labels map[string]string) (*dockercontainer.Config, *dockercontainer.HostConfig) {
	l := map[string]string{LabelRole: "firewall", LabelKept: "false"}
	for _, k := range []string{LabelProject, LabelName, LabelDir, LabelVersion, LabelUser} {
		if v, ok := labels[k]; ok {
			l[k] = v
		}
	}
	cfg := &dockercontainer.Config{
		User:         "0:0",
		Image:        image,
		Entrypoint:   []string{InitPath},
		Cmd:          args,
		Env:          unsetImageEnv(imageEnv, nil), // none of the image's (imageenv.go)
		Healthcheck:  noHealthcheck(),
		Labels:       ownLabels(l),
		AttachStdout: true,
		AttachStderr: true,
	}
	hc := &dockercontainer.HostConfig{
		NetworkMode: dockercontainer.NetworkMode("container:" + target),
		CapDrop:     []string{"ALL"},
		CapAdd:      []string{"NET_ADMIN"},
		SecurityOpt: []string{"no-new-privileges"},
		AutoRemove:  true,
	}
	for i, v := range vols {
		hc.Mounts = append(hc.Mounts, mount.Mount{Type: mount.TypeVolume, Source: v, Target: fmt.Sprintf("/v/%d", i)})
	}
	return cfg, hc
}

// firewallArgs are the firewall helper's arguments for spec of p, and the volumes it
// mounts: the rules, and with a kept container the session's volatile files to
// rewrite in place (each volume i at /v/i). Pure.
func firewallArgs(p *isolator.Plan, spec *Spec) (args, vols []string) {
	args = []string{spec.FirewallArg}
	for i, f := range spec.Layout.Volatile {
		vols = append(vols, volatileVolume(p.Project.Name, f.Path))
		args = append(args, fmt.Sprintf("%s/v/%d/%s=%s", wire.WriteInPlaceArg, i, contentFile, base64.StdEncoding.EncodeToString(f.Content)))
	}
	return args, vols
}

// applyFirewall applies the Plan's egress rules in the network namespace of the
// running container target, through a helper container, and returns once they are in
// place. Any failure is an isolator.ErrProtection: the command must not start.
func (b *Isolator) applyFirewall(ctx context.Context, e Engine, p *isolator.Plan, spec *Spec, target string) error {
	if spec.FirewallArg == "" {
		return fmt.Errorf("%w: the egress rules could not be applied: the spec has none", isolator.ErrProtection)
	}
	args, vols := firewallArgs(p, spec)
	cfg, hc := firewallHelper(args, vols, target, spec.Config.Image, spec.ImageEnv, spec.Config.Labels)
	if b.FirewallTool != "" {
		cfg.Entrypoint = []string{b.FirewallTool}
	}
	failed := func(format string, args ...any) error {
		return fmt.Errorf("%w: the egress rules could not be applied in the container: %s; the command did not run. `devsandbox doctor` checks the engine", isolator.ErrProtection, fmt.Sprintf(format, args...))
	}
	created, err := createNamed(ctx, e, cfg, hc, &network.NetworkingConfig{}, "devsandbox-"+p.Project.Name+"-fw-"+container.RandomSuffix())
	if err != nil {
		return failed("the engine refused the firewall helper container: %v", err)
	}
	id := created.ID
	// The engine removes the helper once it exited (AutoRemove); until it started,
	// removing it is ours.
	started := false
	defer func() {
		if !started {
			_ = e.ContainerRemove(context.WithoutCancel(ctx), id, dockercontainer.RemoveOptions{Force: true, RemoveVolumes: true})
		}
	}()
	hj, err := e.ContainerAttach(ctx, id, dockercontainer.AttachOptions{Stream: true, Stdout: true, Stderr: true})
	if err != nil {
		return failed("attaching to the firewall helper: %v", err)
	}
	defer hj.Close()
	waitc, werrc := e.ContainerWait(ctx, id, dockercontainer.WaitConditionNextExit)
	if err := e.ContainerStart(ctx, id, dockercontainer.StartOptions{}); err != nil {
		return failed("starting the firewall helper: %v", err)
	}
	started = true
	var out, errOut bytes.Buffer
	_, _ = stdcopy.StdCopy(&out, &errOut, hj.Reader)
	var code int64
	select {
	case r := <-waitc:
		code = r.StatusCode
	case err := <-werrc:
		return failed("waiting for the firewall helper: %v", err)
	}
	if code != 0 || strings.TrimSpace(out.String()) != "ok" {
		msg := strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(errOut.String()), "devsandbox-init: "))
		if msg == "" {
			msg = fmt.Sprintf("the helper exited with status %d", code)
		}
		return failed("%s", msg)
	}
	return nil
}

// firewallDigest identifies the rules applied to a kept container: its id, when it
// started (a restart makes a new network namespace, without rules) and the rules.
func firewallDigest(arg, id, started string) string {
	sum := sha256.Sum256([]byte(id + " " + started + " " + arg))
	return hex.EncodeToString(sum[:])
}

// ensureKeptFirewall applies the rules to the kept container id unless the same rules
// are known to be in its current network namespace (names resolved at launch may
// resolve elsewhere now). It runs under the project's lock. The exec's init checks
// the rules are in force either way.
func (b *Isolator) ensureKeptFirewall(ctx context.Context, e Engine, p *isolator.Plan, spec *Spec, id string) error {
	in, err := e.ContainerInspect(ctx, id)
	if err != nil || in.State == nil {
		return fmt.Errorf("%w: inspecting the kept container %s: %w", isolator.ErrProtection, spec.Name, err)
	}
	record := filepath.Join(p.StateDir, "docker-firewall")
	// The session's volatile files are rewritten with the rules: they are part of it.
	args, _ := firewallArgs(p, spec)
	digest := firewallDigest(strings.Join(args, " "), id, in.State.StartedAt)
	if old, err := os.ReadFile(record); err == nil && string(old) == digest {
		return nil
	}
	if err := b.applyFirewall(ctx, e, p, spec, id); err != nil {
		return err
	}
	b.phase("firewall")
	_ = os.WriteFile(record, []byte(digest), 0o600)
	return nil
}
