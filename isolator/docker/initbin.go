package docker

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"runtime"

	"github.com/devsandbox/devsandbox/isolator"
	"github.com/devsandbox/devsandbox/isolator/container"
)

// initBinary returns the host path of a devsandbox-init the engine can run. On Linux
// with a local engine that is the Plan's Self (devsandbox-init next to devsandbox, or
// devsandbox itself, which acts as the init when started as InitPath): both are static.
// Elsewhere (macOS) it is a Linux build embedded for the engine's architecture
// (build tag embedinit, see the Makefile), written once to the state directory.
func initBinary(p *isolator.Plan, addr Address, arch func() (string, error)) (string, error) {
	if runtime.GOOS == "linux" && addr.Local() {
		return p.Self, nil
	}
	if embeddedInits != nil {
		a, err := arch()
		if err != nil {
			return "", err
		}
		return embeddedInit(filepath.Dir(p.StateDir), a, embeddedInits)
	}
	return "", fmt.Errorf("%w: the engine at %s runs Linux containers, and this build of devsandbox carries no Linux devsandbox-init to give them; build with `make embed` (tag embedinit)", isolator.ErrUnavailable, addr.Host)
}

// embeddedInit writes the embedded init for arch (GOARCH naming) below dir and
// returns its path.
func embeddedInit(dir, arch string, bins map[string][]byte) (string, error) {
	b, ok := bins[arch]
	if !ok {
		return "", fmt.Errorf("%w: no embedded devsandbox-init for linux/%s", isolator.ErrUnavailable, arch)
	}
	sum := sha256.Sum256(b)
	path := filepath.Join(dir, "init-"+hex.EncodeToString(sum[:6])+"-linux-"+arch)
	if cur, err := os.ReadFile(path); err == nil && bytes.Equal(cur, b) {
		return path, nil
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", err
	}
	tmp := path + ".tmp" + container.RandomSuffix()
	if err := os.WriteFile(tmp, b, 0o755); err != nil {
		return "", err
	}
	if err := os.Rename(tmp, path); err != nil {
		_ = os.Remove(tmp)
		return "", err
	}
	return path, nil
}
