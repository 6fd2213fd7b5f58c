//go:build integration

package integration

import (
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
)

// The test user's HOME in every run is a throwaway directory: devsandbox's own
// configuration, data, state and cache (sandbox homes, trust records, session
// directories, locks), the suite's settings and what tests plant as a user's files
// (~/.ssh, tool directories, rc files) land there, never in the user's own home, which
// may be a developer's. TestMain fails the suite if that home changed anyway.

// setupHome makes the throwaway home: a directory of the test user's in /var/tmp,
// with the own home's permissions. Not in /tmp: the projects live in this home, and
// the docker-remote stand-in, like Docker Desktop, does not share /tmp. Its path is
// as short as a user's home (/home/dsbtest and /var/tmp/dsb-0a1b2c are within six
// bytes): the project's socket directory is in its state directory only while the
// longest socket path there fits (sockdir.Choose), which the tests expect.
func setupHome() error {
	dir := ""
	for dir == "" {
		d := "/var/tmp/dsb-" + randHex(3)
		if err := os.Mkdir(d, 0o700); err == nil {
			dir = d
		} else if !os.IsExist(err) {
			return err
		}
	}
	it.home = dir
	mode := fs.FileMode(0o755)
	if fi, err := os.Stat(it.realHome); err == nil {
		mode = fi.Mode().Perm()
	}
	if err := os.Chmod(dir, mode); err != nil {
		return err
	}
	if err := os.Lchown(dir, it.uid, it.gid); err != nil {
		return err
	}
	suiteConfig = fmt.Sprintf("# written by the integration tests\n[docker]\nhome = %q\n", it.home)
	if err := writeUserConfig(suiteConfig); err != nil {
		return err
	}
	elsewhereConfig = filepath.Join(it.home, ".config", "devsandbox", "elsewhere.toml")
	return writeUserFile(elsewhereConfig, fmt.Sprintf("# written by the integration tests: the containers' home elsewhere\n[docker]\nhome = %q\n[krun]\nruntime = \"runc\"\n", homeElsewhere))
}

// suiteConfig is the start of the test user's config file in the throwaway home:
// docker.home (the containers' home, docker's and krun's) at the host home's path, as
// the default /home/<user> is for a user whose home that is. setupPodman adds krun's
// runtime. A host home elsewhere (macOS's /Users/<user>), where a path under the home
// has a second place in a container, is the containers' home of elsewhereVariants in
// every test (elsewhereConfig), and what the hide and tool-directory tests cover on
// every container isolator besides (forEachContainerHome, homeElsewhere).
var suiteConfig string

// elsewhereConfig is the suite's settings for the variants whose containers' home is
// elsewhere (elsewhereVariants): docker.home = homeElsewhere, and krun's runtime.
// isolatorArgs passes it as the --config file of each of their runs that names none
// (a --config file replaces the user file: it is the one way to give two variants of
// one isolator different settings in one home). It lies in the user's config
// directory, where no sandbox can write. Unlike the user file, a --config file applies
// above the project file; the suite's project files set neither key.
var elsewhereConfig string

// writeUserConfig writes the test user's devsandbox config file in the throwaway home.
func writeUserConfig(content string) error {
	return writeUserFile(filepath.Join(it.home, ".config", "devsandbox", "config.toml"), content)
}

// writeUserFile writes file f in the test user's devsandbox config directory.
func writeUserFile(f, content string) error {
	dir := filepath.Dir(f)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(f, []byte(content), 0o644); err != nil {
		return err
	}
	for _, p := range []string{f, dir, filepath.Dir(dir)} {
		if err := os.Lchown(p, it.uid, it.gid); err != nil {
			return err
		}
	}
	return nil
}

// xdgEnv names the XDG base directories at their defaults under home.
func xdgEnv(home string) []string {
	return []string{
		"XDG_CONFIG_HOME=" + filepath.Join(home, ".config"), "XDG_DATA_HOME=" + filepath.Join(home, ".local/share"),
		"XDG_STATE_HOME=" + filepath.Join(home, ".local/state"), "XDG_CACHE_HOME=" + filepath.Join(home, ".cache"),
	}
}

// removeHome removes the throwaway home. Run as the test user itself, the suite may
// leave files of the user's subordinate ids there (what podman made in a sandbox
// home): those go in podman's user namespace.
func removeHome(dir string) {
	err := os.RemoveAll(dir)
	if err != nil && os.Getuid() != 0 {
		if _, lerr := exec.LookPath("podman"); lerr == nil {
			if out, uerr := exec.Command("podman", "unshare", "rm", "-rf", "--", dir).CombinedOutput(); uerr == nil {
				err = nil
			} else {
				err = fmt.Errorf("%w; podman unshare rm: %w: %s", err, uerr, out)
			}
		}
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "integration: removing the throwaway home %s: %v\n", dir, err)
	}
}

// homeSnapshot is what the guard compares in the test user's own home: each
// top-level entry, and everything below devsandbox's own directories (config, data,
// state, cache), as path → type and permissions, size, modification time.
type homeSnapshot map[string]string

// snapshotHome lists home. The devsandbox directories are found as the test user's
// runs would find them: from the suite's own XDG variables when the suite runs as the
// test user, else at their defaults.
func snapshotHome(home string) homeSnapshot {
	s := homeSnapshot{}
	entries, err := os.ReadDir(home)
	if err != nil && !os.IsNotExist(err) {
		s[home] = "unreadable: " + err.Error()
	}
	for _, e := range entries {
		s.add(filepath.Join(home, e.Name()))
	}
	for _, d := range devsandboxDirs(home) {
		_ = filepath.WalkDir(d, func(path string, _ fs.DirEntry, err error) error {
			if err != nil && !os.IsNotExist(err) {
				s[path] = "unreadable: " + err.Error()
			}
			if err == nil {
				s.add(path)
			}
			return nil
		})
	}
	return s
}

func (s homeSnapshot) add(path string) {
	fi, err := os.Lstat(path)
	if err != nil {
		s[path] = "unreadable: " + err.Error()
		return
	}
	s[path] = fmt.Sprintf("%v %d %s", fi.Mode(), fi.Size(), fi.ModTime().UTC().Format("2006-01-02T15:04:05.000000000"))
}

// devsandboxDirs are devsandbox's directories in the test user's own home.
func devsandboxDirs(home string) []string {
	xdg := func(name, def string) string {
		if v := os.Getenv(name); !it.asOther && filepath.IsAbs(v) {
			return v
		}
		return filepath.Join(home, def)
	}
	return []string{
		filepath.Join(xdg("XDG_CONFIG_HOME", ".config"), "devsandbox"),
		filepath.Join(xdg("XDG_DATA_HOME", ".local/share"), "devsandbox"),
		filepath.Join(xdg("XDG_STATE_HOME", ".local/state"), "devsandbox"),
		filepath.Join(xdg("XDG_CACHE_HOME", ".cache"), "devsandbox"),
	}
}

// changes lists what differs in after: paths added, removed or changed.
func (s homeSnapshot) changes(after homeSnapshot) []string {
	var out []string
	for p, b := range s {
		switch a, ok := after[p]; {
		case !ok:
			out = append(out, "removed "+p+" ("+b+")")
		case a != b:
			out = append(out, "changed "+p+": "+b+" -> "+a)
		}
	}
	for p, a := range after {
		if _, ok := s[p]; !ok {
			out = append(out, "added "+p+" ("+a+")")
		}
	}
	slices.Sort(out)
	return out
}
