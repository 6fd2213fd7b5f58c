package planner

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"path/filepath"

	"github.com/devsandbox/devsandbox/config"
	"github.com/devsandbox/devsandbox/isolator"
)

// ErrProject is wrapped by errors about the project directory itself.
var ErrProject = errors.New("unusable project directory")

// FindProject returns the project for the working directory: the nearest ancestor
// holding a .git (the git top level), else the working directory itself. It refuses
// the root, h.Home and what contains it, and the user's home as /etc/passwd names it
// and what contains that (checkPasswdHome): every path that reads a project's files
// (its .devsandbox.toml, .miserc.toml, the .env scan) asks here first, so a refused
// directory's files are never opened.
func FindProject(pr Probe, h config.Host) (isolator.Project, error) {
	proj, err := findProject(pr, h.Home)
	if err != nil {
		return proj, err
	}
	if err := checkPasswdHome(pr, proj.Dir, h); err != nil {
		return isolator.Project{}, err
	}
	return proj, nil
}

// findProject is FindProject without the passwd home's check.
func findProject(pr Probe, home string) (isolator.Project, error) {
	cwd, err := pr.EvalSymlinks(pr.Cwd)
	if err != nil {
		return isolator.Project{}, fmt.Errorf("resolving the working directory %s: %w", pr.Cwd, err)
	}
	dir := cwd
	for d := cwd; ; d = filepath.Dir(d) {
		if _, err := pr.Lstat(filepath.Join(d, ".git")); err == nil {
			dir = d
			break
		}
		if d == "/" {
			break
		}
	}
	realHome, err := pr.EvalSymlinks(home)
	if err != nil {
		realHome = home
	}
	switch {
	case dir == "/":
		return isolator.Project{}, fmt.Errorf("%w: / is the root directory; run devsandbox from a project directory (or a subdirectory of one)", ErrProject)
	case dir == realHome:
		return isolator.Project{}, fmt.Errorf("%w: %s is your home directory; run devsandbox from a project directory (or a subdirectory of one)", ErrProject, dir)
	case isolator.Within(realHome, dir):
		return isolator.Project{}, fmt.Errorf("%w: %s contains your home directory; run devsandbox from a project directory (or a subdirectory of one)", ErrProject, dir)
	}
	id, name := projectName(dir)
	return isolator.Project{Dir: dir, ID: id, Name: name}, nil
}

// projectName returns the id and the name of the project at dir (its real path):
// the short hash of the path, and <basename>-<id>, the name of its directories in
// devsandbox's data and state.
func projectName(dir string) (id, name string) {
	sum := sha256.Sum256([]byte(dir))
	id = hex.EncodeToString(sum[:4])
	return id, filepath.Base(dir) + "-" + id
}
