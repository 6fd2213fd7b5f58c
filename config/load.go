package config

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
)

// LoadOptions are the inputs of Load.
type LoadOptions struct {
	// ProjectDir is the project root; "" when there is none.
	ProjectDir string
	// Flags are the command-line overrides.
	Flags Flags
	// Environ is the process environment in os.Environ form; nil means os.Environ().
	// It is the only place the program reads environment variables from.
	Environ []string
	// UID and GID are the user's; a negative value means os.Getuid() / os.Getgid().
	// Note that the zero value is root's.
	UID, GID int
}

// ProjectFileName is the name of the project config file in the project root.
const ProjectFileName = ".devsandbox.toml"

// isolatorVar is the environment variable that sets isolator, between files and flags.
const isolatorVar = "DEVSANDBOX_ISOLATOR"

// UserFile returns the path of the user config file for host.
func UserFile(host Host) string {
	return filepath.Join(host.ConfigHome, "devsandbox", "config.toml")
}

// Load returns the effective configuration: defaults, then the user file (or the
// --config file, which replaces it), then DEVSANDBOX_ISOLATOR, then the flags. The
// user file may be missing; a missing --config file is an error. The project file is
// not applied yet: when it exists, a warning says so. Warnings are sentences for
// people. Errors hold an *Error (errors.As) naming the file and line or the flag;
// those about the content of the configuration match ErrInvalid, and a file that
// cannot be read keeps its cause (fs.ErrNotExist for a missing --config file). A file
// with several unknown keys yields one *Error per key, joined.
func Load(opts LoadOptions) (*Config, []string, error) {
	host, err := HostFromEnviron(opts.Environ, opts.UID, opts.GID)
	if err != nil {
		return nil, nil, err
	}
	c := defaults(host)
	var warnings []string

	file, required := UserFile(host), false
	if opts.Flags.ConfigFile != "" {
		file, required = opts.Flags.ConfigFile, true
	}
	if err := applyFile(c, file, required); err != nil {
		return nil, nil, err
	}
	if w := projectWarning(opts.ProjectDir, opts.Flags.ConfigFile); w != "" {
		warnings = append(warnings, w)
	}

	if v := host.Vars[isolatorVar]; v != "" {
		l := &layer{Isolator: &v}
		if err := apply(c, l, flagSource("env "+isolatorVar)); err != nil {
			return nil, nil, err
		}
	}

	fls, err := flagLayers(opts.Flags, host)
	if err != nil {
		return nil, nil, err
	}
	if opts.Flags.Image != nil {
		// After the other flags: --isolator decides which image --image names.
		fls = append(fls, imageLayer(opts.Flags.Image, effectiveIsolator(c, opts.Flags)))
	}
	for _, fl := range fls {
		if err := apply(c, fl.l, fl.src); err != nil {
			return nil, nil, err
		}
	}

	return c, append(warnings, finish(c)...), nil
}

// effectiveIsolator is the isolator once the flags are in.
func effectiveIsolator(c *Config, f Flags) string {
	if f.Isolator != nil {
		return *f.Isolator
	}
	return c.Isolator
}

// ValidateFile checks one config file on its own, as `config validate FILE` does: it
// must exist, decode strictly and hold valid values. host expands `~`.
func ValidateFile(path string, host Host) error {
	doc, err := readFile(path)
	if err != nil {
		return err
	}
	l, src, err := decodeFile(path, doc)
	if err != nil {
		return err
	}
	return l.check(src, host)
}

// applyFile reads, checks and merges the file at path into c. A missing file is
// skipped unless required.
func applyFile(c *Config, path string, required bool) error {
	doc, err := readFile(path)
	if !required && errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	l, src, err := decodeFile(path, doc)
	if err != nil {
		return err
	}
	if err := apply(c, l, src); err != nil {
		return err
	}
	c.Files = append(c.Files, path)
	return nil
}

// apply checks l and merges it into c.
func apply(c *Config, l *layer, src *source) error {
	if err := l.check(src, c.Host); err != nil {
		return err
	}
	return merge(c, l, src)
}

// readFile reads a config file; the error is an *Error naming the file.
func readFile(path string) ([]byte, error) {
	doc, err := os.ReadFile(path)
	if err != nil {
		var pe *fs.PathError
		if errors.As(err, &pe) {
			err = pe.Err // the *Error names the file already
		}
		return nil, &Error{File: path, Err: err}
	}
	return doc, nil
}

// projectWarning says that the project file exists but is not applied, unless it is
// the --config file.
func projectWarning(projectDir, configFile string) string {
	if projectDir == "" {
		return ""
	}
	p := filepath.Join(projectDir, ProjectFileName)
	if _, err := os.Lstat(p); err != nil {
		return ""
	}
	if configFile != "" && sameFile(p, configFile) {
		return ""
	}
	return "ignoring project config " + p + ": project files apply only once trusted, and trust arrives in a later release; pass it explicitly with --config " + p + " to use it"
}

func sameFile(a, b string) bool {
	fa, errA := os.Stat(a)
	fb, errB := os.Stat(b)
	return errA == nil && errB == nil && os.SameFile(fa, fb)
}
