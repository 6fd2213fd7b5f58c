package docker

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"runtime"

	"github.com/devsandbox/devsandbox/internal/buildstamp"
	"github.com/devsandbox/devsandbox/isolator"
	"github.com/devsandbox/devsandbox/isolator/handoff"
	"github.com/devsandbox/devsandbox/proxy/service"
)

// The programs devsandbox ships into the image it derives from the user's, in
// container.ShipDir: the init (at container.InitPath) and the companion's proxy.
const (
	initName  = "init" // in container.ShipDir: container.InitPath
	proxyName = "devsandbox-proxy"
)

// programs are the Linux builds of what a run ships, for the engine's architecture.
type programs struct {
	arch  string
	init  program
	proxy program // none when it is not installed and the run needs no companion
}

// program is a file installed next to devsandbox (path), or a build embedded in it.
type program struct {
	path string
	data []byte
}

func (g program) none() bool { return g.path == "" && g.data == nil }

// id identifies g's content without reading a file: its path, size and time of
// modification (the derived image's cache key; a build hashes the content itself).
func (g program) id() (string, error) {
	switch {
	case g.none():
		return "-", nil
	case g.data != nil:
		sum := sha256.Sum256(g.data)
		return hex.EncodeToString(sum[:]), nil
	}
	st, err := os.Stat(g.path)
	if err != nil {
		return "", fmt.Errorf("%w: %s: %w; reinstall devsandbox", isolator.ErrUnavailable, g.path, err)
	}
	return fmt.Sprintf("%s %d %d", g.path, st.Size(), st.ModTime().UnixNano()), nil
}

// read returns g's content.
func (g program) read() ([]byte, error) {
	if g.path == "" {
		return g.data, nil
	}
	b, err := os.ReadFile(g.path)
	if err != nil {
		return nil, fmt.Errorf("%w: reading %s: %w; reinstall devsandbox", isolator.ErrUnavailable, g.path, err)
	}
	return b, nil
}

// shipped finds the programs for the engine whose architecture arch reports: on a
// Linux host whose architecture is the engine's, the static builds installed next to
// devsandbox (the Plan's Self is the init); otherwise the Linux builds embedded for
// macOS (build tag embedinit; `make embed`). The proxy is shipped whenever it is at
// hand, so one derived image serves every egress mode; a run that needs it fails
// without it.
func shipped(p *isolator.Plan, arch func() (string, error), proxy bool) (programs, error) {
	a, err := arch()
	if err != nil {
		return programs{}, err
	}
	pr := programs{arch: a}
	if runtime.GOOS == "linux" && a == runtime.GOARCH {
		pr.init = program{path: p.Self}
		if bin := handoff.Beside(service.Program); bin != "" {
			if err := buildstamp.CheckSelf(service.Program, bin); err != nil {
				return programs{}, err
			}
			pr.proxy = program{path: bin}
		} else if proxy {
			return programs{}, fmt.Errorf("%w: the egress proxy %s is not installed next to devsandbox; reinstall devsandbox (make install, or scripts/install.sh), or run with --egress=open or --egress=none without --publish", isolator.ErrProtection, service.Program)
		}
		return pr, nil
	}
	init, ok := embeddedInits[a]
	if !ok {
		return programs{}, fmt.Errorf("%w: the docker engine runs linux/%s containers, and this build of devsandbox carries no devsandbox-init for them; build with `make embed` (tag embedinit)", isolator.ErrUnavailable, a)
	}
	pr.init = program{data: init}
	if px, ok := embeddedProxies[a]; ok {
		pr.proxy = program{data: px}
	} else if proxy {
		return programs{}, fmt.Errorf("%w: the docker engine runs linux/%s containers, and this build of devsandbox carries no devsandbox-proxy for them; build with `make embed` (tag embedinit)", isolator.ErrUnavailable, a)
	}
	return pr, nil
}
