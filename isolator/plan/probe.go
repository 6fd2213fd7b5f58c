package plan

import (
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
)

// Probe is how Build reads the host. Every field is a function so tests can build
// Plans against a fake host; OS returns the real one.
type Probe struct {
	Cwd          string
	Lstat        func(string) (fs.FileInfo, error)
	Stat         func(string) (fs.FileInfo, error)
	ReadFile     func(string) ([]byte, error)
	ReadDir      func(string) ([]fs.DirEntry, error)
	EvalSymlinks func(string) (string, error)
	Readlink     func(string) (string, error)
	LookPath     func(string) bool
	Executable   func() (string, error)
}

// OS returns a Probe of the real host with cwd as the working directory.
func OS(cwd string) Probe {
	return Probe{
		Cwd:          cwd,
		Lstat:        os.Lstat,
		Stat:         os.Stat,
		ReadFile:     os.ReadFile,
		ReadDir:      os.ReadDir,
		EvalSymlinks: filepath.EvalSymlinks,
		Readlink:     os.Readlink,
		LookPath: func(name string) bool {
			_, err := exec.LookPath(name)
			return err == nil
		},
		Executable: func() (string, error) {
			p, err := os.Executable()
			if err != nil {
				return "", err
			}
			return filepath.EvalSymlinks(p)
		},
	}
}

func (pr Probe) exists(p string) bool {
	_, err := pr.Lstat(p)
	return err == nil
}

func (pr Probe) isDir(p string) bool {
	fi, err := pr.Stat(p)
	return err == nil && fi.IsDir()
}
