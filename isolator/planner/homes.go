package planner

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"strconv"
	"sync"

	"github.com/devsandbox/devsandbox/config"
	"github.com/devsandbox/devsandbox/isolator"
	"github.com/devsandbox/devsandbox/tools"
)

// otherHome returns the user's home as /etc/passwd names it when it is not the HOME
// devsandbox runs with (a CI runner, `sudo -u`, `HOME=/elsewhere devsandbox`), and
// nor is it below that HOME, where the sandbox home replaces it: the home a host view
// or a bind may show with the user's own 0600 files in it (~/.ssh, ~/.aws), which the
// sandbox, running as the user, can read. "" when there is none. It is asked only
// where a view other than the default one or a bind of the user's may show it: the
// default view holds no home, and its launch reads nothing more.
func otherHome(pr Probe, cfg *config.Config, h config.Host) string {
	s := cfg.Sandbox
	if len(s.SystemBinds) == 0 && len(s.ROBinds) == 0 && len(s.RWBinds) == 0 && len(s.HostMounts) == 0 {
		return ""
	}
	host, err := pr.readWritable(isolator.PasswdPath, true)
	if err != nil {
		return ""
	}
	ph := passwdHomeOf(host, h.UID)
	if ph == "" || !filepath.IsAbs(ph) {
		return ""
	}
	ph = filepath.Clean(ph)
	if ph == "/" || isolator.Within(ph, h.Home) {
		return ""
	}
	return ph
}

// maskXDGDirs masks whole the user's XDG base directories (config, data, state,
// cache) and XDG_RUNTIME_DIR that lie outside both homes, where the system view shows them
// (system_binds = ["host"], or a listed directory that holds them): the hide set and
// devsandbox's own masks name places below the homes and <dir>/devsandbox only, and
// other tools keep their tokens there ($XDG_CONFIG_HOME/gh/hosts.yml, gcloud's
// credentials, which the hide set names as ~/.config/gcloud). Like maskOtherHome it
// runs before the sandbox home, the project and the binds, so what a tool binding or
// a bind of the user's shows inside stays. One that does not exist needs no mask; one
// that cannot be resolved stops the run, as does a project holding one (its bind
// would show it again). Directories below a home cost nothing here.
func (b *mountBuilder) maskXDGDirs(h config.Host, other, project string) error {
	const tokens = "other tools' credentials"
	for _, x := range []struct{ dir, name, holds string }{
		{h.ConfigHome, "XDG_CONFIG_HOME", tokens}, {h.DataHome, "XDG_DATA_HOME", tokens},
		{h.StateHome, "XDG_STATE_HOME", tokens}, {h.CacheHome, "XDG_CACHE_HOME", tokens},
		// Your session's sockets: the D-Bus session bus (systemd-run --user runs
		// anything on the host), agents, a rootless engine's, and other sessions'
		// of devsandbox. A read-only mount does not stop connect(2).
		{h.RuntimeDir, "XDG_RUNTIME_DIR", "your session's sockets (D-Bus, agents, other devsandbox sessions')"},
	} {
		d := x.dir
		if d == "" || isolator.Within(d, h.Home) || (other != "" && isolator.Within(d, other)) || !b.visible(d) {
			continue
		}
		real, err := b.pr.EvalSymlinks(d)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			continue
		case err != nil:
			return fmt.Errorf("%w: sandbox.system_binds shows %s (%s), which holds %s, and it cannot be masked: %w; fix it, or set sandbox.system_binds to paths that do not hold it", ErrConfig, d, x.name, x.holds, err)
		case isolator.Within(real, project):
			return fmt.Errorf("%w: the project %s holds %s (%s), which sandbox.system_binds would show; run devsandbox from a project that does not hold it, or move %s", ErrProject, project, real, x.name, x.name)
		case isolator.Within(real, h.Home), other != "" && isolator.Within(real, other):
			continue
		}
		if !b.visible(real) || b.covering(real) >= 0 {
			continue
		}
		b.add(isolator.Mount{Kind: isolator.MaskDir, Dest: real, Why: "your " + x.name + " outside your home (sandbox.system_binds)"})
	}
	return nil
}

// checkPasswdHome refuses a project that is, or contains, the user's home as
// /etc/passwd names it when that is not the HOME devsandbox runs with (FindProject
// refuses $HOME and what contains it): the project is bound read-write, and the
// sandbox would read and rewrite the real home's ~/.ssh, ~/.aws and shell startup
// files (`HOME=/tmp/x devsandbox` run from ~ or from /home). It reads /etc/passwd
// through pr, which Build has read it once for (withPasswdOnce): every launch reads
// it already, for the sandbox's passwd entry (sandboxPasswd) or for otherHome. An
// unreadable file, or no entry, leaves nothing to refuse.
func checkPasswdHome(pr Probe, project string, h config.Host) error {
	host, err := pr.readWritable(isolator.PasswdPath, true)
	if err != nil {
		return nil
	}
	ph := passwdHomeOf(host, h.UID)
	if ph == "" || !filepath.IsAbs(ph) {
		return nil
	}
	ph = filepath.Clean(ph)
	if ph == "/" || ph == h.Home {
		return nil // the root is refused as a project anyway; $HOME FindProject checked
	}
	real := ph
	if r, err := pr.EvalSymlinks(ph); err == nil {
		real = r
	}
	if !isolator.Within(real, project) && !isolator.Within(ph, project) {
		return nil
	}
	const why = "the sandbox would read and rewrite its files (~/.ssh, ~/.aws, shell startup files); run devsandbox from a project directory (or a subdirectory of one), or with HOME="
	if project == real || project == ph {
		return fmt.Errorf("%w: %s is your home in /etc/passwd (devsandbox runs with HOME=%s): %s%s", ErrProject, project, h.Home, why, ph)
	}
	return fmt.Errorf("%w: %s contains %s, your home in /etc/passwd (devsandbox runs with HOME=%s): %s%s", ErrProject, project, ph, h.Home, why, ph)
}

// withPasswdOnce returns pr with /etc/passwd (followed, as every reader here asks for
// it) read at most once: checkPasswdHome, otherHome and sandboxPasswd share the
// bytes, which none of them changes. A Probe without ReadRegular (a fake) is returned
// as it is.
func withPasswdOnce(pr Probe) Probe {
	read := pr.ReadRegular
	if read == nil {
		return pr
	}
	var (
		once sync.Once
		data []byte
		rerr error
	)
	pr.ReadRegular = func(p string, limit int64, follow bool) ([]byte, error) {
		if p != isolator.PasswdPath || !follow || limit != maxWritableFile {
			return read(p, limit, follow)
		}
		once.Do(func() { data, rerr = read(p, limit, follow) })
		return data, rerr
	}
	return pr
}

// passwdHomeOf returns the home field of the first entry of uid in host (an
// /etc/passwd), or "".
func passwdHomeOf(host []byte, uid int) string {
	id := strconv.Itoa(uid)
	for off := 0; off < len(host); {
		line, next := host[off:], len(host)
		if end := bytes.IndexByte(line, '\n'); end >= 0 {
			line, next = line[:end], off+end+1
		}
		if string(passwdField(line, 2)) == id && len(line) > 0 && line[0] != '+' && line[0] != '-' {
			return string(passwdField(line, 5))
		}
		off = next
	}
	return ""
}

// atOtherHome returns paths with, for each one below home, the same path below
// other: the hide set applies at every home of the user the view may show.
func atOtherHome(paths []string, home, other string) []string {
	if other == "" {
		return paths
	}
	out := append([]string(nil), paths...)
	for _, p := range paths {
		if rel := homeRel(p, home); rel != "" {
			out = append(out, filepath.Join(other, rel))
		}
	}
	return out
}

// protectOtherHome adds the hide paths and credential paths at other, the user's
// passwd home, to the paths no bind may expose (sources.go).
func (b *mountBuilder) protectOtherHome(hides []string, home, other string) {
	if other == "" {
		return
	}
	add := func(p, why, fix string) {
		r := p
		if rp, err := b.pr.EvalSymlinks(p); err == nil {
			r = rp
		}
		b.protected = append(b.protected, protected{path: p, real: r, why: why, fix: fix})
	}
	for _, p := range atOtherHome(hides, home, other)[len(hides):] {
		add(p, "sandbox.hide_paths (at your home in /etc/passwd)", "remove it from sandbox.hide_paths in your user config to share it")
	}
	for _, p := range tools.CredentialPaths(other) {
		add(p, "a credential path", "pass the credential as a secret (-e NAME, --secret-file) instead")
	}
}

// maskOtherHome masks other, the user's passwd home, whole, where the system view
// shows it (system_binds = ["host"], or a listed directory that holds it): the view
// shows the user's home as the sandbox home only at HOME, and every file the user
// keeps in the other one, 0600 or not, would be readable there. It runs before the
// sandbox home, the project and the user's binds are placed, so what they show
// inside it stays (the project below it, a HOME below it). A home that does not
// exist needs no mask; one that cannot be resolved, or that the project holds (its
// bind would show the home again), stops the run.
func (b *mountBuilder) maskOtherHome(other, project string) error {
	if other == "" || !b.visible(other) {
		return nil
	}
	real, err := b.pr.EvalSymlinks(other)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil
	case err != nil:
		return fmt.Errorf("%w: sandbox.system_binds shows %s, your home in /etc/passwd, and it cannot be masked: %w; run devsandbox with HOME=%s, or set sandbox.system_binds to paths that do not hold it", ErrConfig, other, err, other)
	case isolator.Within(real, project):
		return fmt.Errorf("%w: the project %s holds %s, your home in /etc/passwd, which sandbox.system_binds would show; run devsandbox from a project that does not hold it, or with HOME=%s", ErrProject, project, real, real)
	case isolator.Within(real, b.home):
		return nil // the sandbox home replaces it
	}
	if !b.visible(real) {
		return nil
	}
	b.add(isolator.Mount{Kind: isolator.MaskDir, Dest: real, Why: "your home in /etc/passwd (sandbox.system_binds)"})
	return nil
}
