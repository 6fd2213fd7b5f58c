package isolator

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// CheckDestinations refuses mount destinations reached through a symlink in the
// persistent sandbox home or the project: bwrap follows them, so a link a previous
// session planted (~/.ssh -> elsewhere) would redirect a mask or a bind, or have bwrap
// create files at a host path of the sandbox's choosing. Every isolator's launch runs it
// (the CLI does, before Run).
func CheckDestinations(p *Plan) error {
	home := p.User.HostHome
	for _, m := range p.Mounts {
		dst := m.Target(home)
		var root, hostPath string
		switch {
		case Within(dst, p.Project.Dir):
			root, hostPath = p.Project.Dir, dst
		case dst != home && Within(dst, home) && m.Why != "sandbox home":
			root, hostPath = p.SandboxHome, filepath.Join(p.SandboxHome, strings.TrimPrefix(dst, home+"/"))
		default:
			continue
		}
		for q := hostPath; q != root && Within(q, root); q = filepath.Dir(q) {
			fi, err := os.Lstat(q)
			if err == nil && fi.Mode()&os.ModeSymlink != 0 {
				return fmt.Errorf("%w: %s is a symlink, and the sandbox mounts %s through it (%s); remove the link (a sandboxed program may have planted it)", ErrProtection, q, dst, m.Why)
			}
		}
	}
	return nil
}
