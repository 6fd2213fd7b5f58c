package docker

import (
	"archive/tar"
	"bytes"
	"context"
	"fmt"
	"os"
	"runtime"

	dockercontainer "github.com/docker/docker/api/types/container"

	"github.com/devsandbox/devsandbox/isolator"
	"github.com/devsandbox/devsandbox/isolator/handoff"
	"github.com/devsandbox/devsandbox/proxy/service"
)

// The programs devsandbox ships into containers through the Engine API: the init
// into the sandbox's ShipDir, the proxy into a companion's root.
const (
	initName  = "init" // in container.ShipDir: container.InitPath
	proxyName = "devsandbox-proxy"
)

// programs are the Linux builds of what a run ships, for the engine's architecture.
type programs struct {
	arch  string
	init  []byte
	proxy []byte // nil when the run needs no companion
}

// shipped reads the programs for the engine whose architecture arch reports: on a
// Linux host whose architecture is the engine's, the static builds installed next to
// devsandbox (the Plan's Self is the init); otherwise the Linux builds embedded for
// macOS (build tag embedinit; `make embed`).
func shipped(p *isolator.Plan, arch func() (string, error), proxy bool) (programs, error) {
	a, err := arch()
	if err != nil {
		return programs{}, err
	}
	pr := programs{arch: a}
	if runtime.GOOS == "linux" && a == runtime.GOARCH {
		if pr.init, err = os.ReadFile(p.Self); err != nil {
			return programs{}, fmt.Errorf("%w: reading devsandbox-init: %w; reinstall devsandbox", isolator.ErrUnavailable, err)
		}
		if proxy {
			bin := handoff.Beside(service.Program)
			if bin == "" {
				return programs{}, fmt.Errorf("%w: the egress proxy %s is not installed next to devsandbox; reinstall devsandbox (make install, or scripts/install.sh), or run with --egress=open or --egress=none without --publish", isolator.ErrProtection, service.Program)
			}
			if pr.proxy, err = os.ReadFile(bin); err != nil {
				return programs{}, fmt.Errorf("%w: reading %s: %w", isolator.ErrUnavailable, bin, err)
			}
		}
		return pr, nil
	}
	var ok bool
	if pr.init, ok = embeddedInits[a]; !ok {
		return programs{}, fmt.Errorf("%w: the docker engine runs linux/%s containers, and this build of devsandbox carries no devsandbox-init for them; build with `make embed` (tag embedinit)", isolator.ErrUnavailable, a)
	}
	if proxy {
		if pr.proxy, ok = embeddedProxies[a]; !ok {
			return programs{}, fmt.Errorf("%w: the docker engine runs linux/%s containers, and this build of devsandbox carries no devsandbox-proxy for them; build with `make embed` (tag embedinit)", isolator.ErrUnavailable, a)
		}
	}
	return pr, nil
}

// tarOf is a tar archive of one root-owned, read-only executable.
func tarOf(name string, content []byte) []byte {
	var b bytes.Buffer
	tw := tar.NewWriter(&b)
	_ = tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: name, Mode: 0o555, Size: int64(len(content)), Format: tar.FormatPAX})
	_, _ = tw.Write(content)
	_ = tw.Close()
	return b.Bytes()
}

// copyIn copies the executable name with content into directory dir of the created
// container id, before it starts: a sandbox's ShipDir (a volume of its own), a
// companion's root.
func copyIn(ctx context.Context, e Engine, id, dir, name string, content []byte) error {
	if err := e.CopyToContainer(ctx, id, dir, bytes.NewReader(tarOf(name, content)), dockercontainer.CopyToContainerOptions{}); err != nil {
		return fmt.Errorf("%w: copying %s into the container: %w; the command did not run", isolator.ErrProtection, name, err)
	}
	return nil
}
