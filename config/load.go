package config

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/devsandbox/devsandbox/internal/rawfile"
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
	// Writable tells what a sandbox can write once the configuration is fully loaded
	// (its binds come from the layers, the --config file's included): a --config file
	// it holds applies only while trusted (checkExplicit). planner.Load passes what
	// the planner binds read-write; nil knows nothing, so every --config file on disk
	// needs trust.
	Writable func(*Config) WritableCheck
}

// ProjectFileName is the name of the project config file in the project root.
const ProjectFileName = ".devsandbox.toml"

// IsolatorVar is the environment variable that sets isolator, between files and flags.
const IsolatorVar = "DEVSANDBOX_ISOLATOR"

const isolatorVar = IsolatorVar

// UserFile returns the path of the user config file for host.
func UserFile(host Host) string {
	return filepath.Join(host.ConfigHome, "devsandbox", "config.toml")
}

// Load returns the effective configuration: defaults, then the user file (or the
// --config file, which replaces it, above the project file), the trusted project
// file, DEVSANDBOX_ISOLATOR and the flags:
//
//	defaults < user file < trusted project file < --config file < env < flags
//
// The user file may be missing; a missing --config file is an error. The project
// file <ProjectDir>/.devsandbox.toml applies only while the trust records hold its
// current content (see Trust): an untrusted one is ignored with a warning saying how
// to trust it; a trusted one that changed since stops Load with an error matching
// ErrUntrustedChange. A project file may not loosen protections (see checkProject).
// When the project file is the --config file, it applies as that. A --config file
// where a sandbox can write it (opts.Writable, asked once the configuration is fully
// loaded) applies only while the trust records hold its content (checkExplicit).
//
// Warnings are sentences for people. Errors hold an *Error (errors.As) naming the
// file and line or the flag; those about the content of the configuration match
// ErrInvalid, and a file that cannot be read keeps its cause (fs.ErrNotExist for a
// missing --config file). A file with several unknown keys yields one *Error per
// key, joined.
func Load(opts LoadOptions) (*Config, []string, error) {
	host, err := HostFromEnviron(opts.Environ, opts.UID, opts.GID)
	if err != nil {
		return nil, nil, err
	}
	c := defaults(host)
	var warnings []string

	explicit := opts.Flags.ConfigFile
	if explicit == "" {
		if err := applyFile(c, UserFile(host), false); err != nil {
			return nil, nil, err
		}
	}
	w, err := applyProject(c, opts.ProjectDir, explicit)
	if err != nil {
		return nil, nil, err
	}
	if w != "" {
		warnings = append(warnings, w)
	}
	if explicit != "" {
		if err := applyExplicit(c, explicit); err != nil {
			return nil, nil, err
		}
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

	if err := checkEngineEnv(c); err != nil {
		return nil, nil, err
	}
	warnings = append(warnings, finish(c)...)
	if err := checkExplicit(c, opts.Writable); err != nil {
		return nil, nil, err
	}
	return c, warnings, nil
}

// effectiveIsolator is the isolator once the flags are in.
func effectiveIsolator(c *Config, f Flags) string {
	if f.Isolator != nil {
		return *f.Isolator
	}
	return c.Isolator
}

// LoadFile returns the configuration of the file at path on its own, over the
// defaults, with the warnings: what a run reads with `--config path` and no flags,
// through the same checks (applyFile), so a file it accepts a run accepts too, and
// the other way round. It is what `config validate FILE` checks. The file must exist;
// host expands `~`.
func LoadFile(path string, host Host) (*Config, []string, error) {
	c := defaults(host)
	if err := applyFile(c, path, true); err != nil {
		err = missingFix(err, "name an existing config file, or write a starter one there with `devsandbox config init "+path+"`")
		return nil, nil, err
	}
	if err := checkEngineEnv(c); err != nil {
		return nil, nil, err
	}
	return c, finish(c), nil
}

// ValidateFile checks one config file on its own (see LoadFile).
func ValidateFile(path string, host Host) error {
	_, _, err := LoadFile(path, host)
	return err
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
	return mergeFile(c, path, doc)
}

// mergeFile decodes doc, the contents of the file at path, checks it and merges it
// into c.
func mergeFile(c *Config, path string, doc []byte) error {
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
	if err := l.checkLoopbackAllow(src, c.Egress.LoopbackEntries); err != nil {
		return err
	}
	return merge(c, l, src)
}

// readFile reads a config file; the error is an *Error naming the file.
// missingFix adds fix to err when err says the file it names does not exist, so the
// message says what to do: "FILE: no such file or directory; fix". Other errors pass
// unchanged; the result still matches fs.ErrNotExist.
func missingFix(err error, fix string) error {
	var e *Error
	if !errors.Is(err, fs.ErrNotExist) || !errors.As(err, &e) {
		return err
	}
	return &Error{File: e.File, Line: e.Line, Key: e.Key, Source: e.Source, Err: fmt.Errorf("%w; %s", e.Err, fix)}
}

func readFile(path string) ([]byte, error) {
	doc, err := rawfile.ReadFile(path)
	if err != nil {
		return nil, &Error{File: path, Err: err} // the *Error names the file already
	}
	return doc, nil
}

// maxProjectFile is the most a project file may hold. The sandbox can write the
// project, so the file may be anything: a FIFO must not hang the launch, a link to
// /dev/zero must not fill the host's memory.
const maxProjectFile = 1 << 20

// readProjectFile reads the project file at path: a regular file (a symlink to one
// is followed: trust is by content) of at most maxProjectFile bytes. Anything else
// is an *Error naming the file and the fix.
func readProjectFile(path string) ([]byte, error) {
	doc, _, err := readProjectFileInfo(path)
	return doc, err
}

// readProjectFileInfo is readProjectFile that also returns what the descriptor it
// read through says of the file (its number of names).
func readProjectFileInfo(path string) ([]byte, rawfile.Info, error) {
	doc, info, err := rawfile.ReadRegularInfo(path, maxProjectFile, true)
	switch {
	case errors.Is(err, rawfile.ErrNotRegular), errors.Is(err, rawfile.ErrTooLarge):
		return nil, info, &Error{File: path, Err: fmt.Errorf("%w; a sandboxed run may have left it: remove it (or make it a regular file, at most %d bytes) and run again", err, maxProjectFile)}
	case err != nil:
		return nil, info, &Error{File: path, Err: err}
	}
	return doc, info, nil
}

// applyProject applies the project file of projectDir when it exists, is trusted and
// is not the --config file explicit. It returns a warning when the file is ignored.
// The file is read once: the bytes whose hash is checked are the bytes applied.
func applyProject(c *Config, projectDir, explicit string) (string, error) {
	if projectDir == "" {
		return "", nil
	}
	path := filepath.Join(projectDir, ProjectFileName)
	if explicit != "" && sameFile(path, explicit) {
		return "", nil
	}
	doc, err := readProjectFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		if err := checkGone(c.Host, path); err != nil {
			return "", err
		}
		return "", checkEnclosing(c.Host, projectDir)
	}
	if err != nil {
		return "", err
	}
	state, rec, err := trustState(c.Host, path, doc)
	switch {
	case err != nil:
		return "", err
	case state == Untrusted:
		if err := checkEnclosing(c.Host, projectDir); err != nil {
			return "", err
		}
		return "ignoring project config " + path + ": it is not trusted; review it, then run `devsandbox config trust` in the project to apply it", nil
	case state == Changed:
		return "", &Error{File: path, Err: untrustedChangef("%s (trusted %s); review the changes, then run `devsandbox config trust` in the project again",
			ErrUntrustedChange, rec.TrustedAt.Format(time.RFC3339))}
	}
	return "", applyProjectDoc(c, path, doc)
}

// applyProjectDoc checks doc, the content of the project file at path, against c (the
// layers below it) with the project-file rules, and merges it into c: what a run does
// with a trusted project file, and what Trust checks before trusting one.
func applyProjectDoc(c *Config, path string, doc []byte) error {
	l, src, err := decodeFile(path, doc)
	if err != nil {
		return err
	}
	if err := l.check(src, c.Host); err != nil {
		return err
	}
	if err := checkProject(c, l, src); err != nil {
		return err
	}
	if err := l.checkLoopbackAllow(src, c.Egress.LoopbackEntries); err != nil {
		return err
	}
	if err := merge(c, l, src); err != nil {
		return err
	}
	c.Files = append(c.Files, path)
	return nil
}

// checkGone refuses a project file that is missing while the trust records hold it: a
// trusted file is never silently dropped, and a removal is a change. Only the
// project's own file is read-only in its sandbox: a nested repository's (a submodule,
// a vendored repository run on its own) is an ordinary file in the enclosing
// project's, which a sandbox there can remove.
func checkGone(host Host, path string) error {
	r, err := readTrust(TrustFile(host))
	if err != nil {
		return err
	}
	rec, ok := r.Files[trustKey(path)]
	if !ok {
		return nil
	}
	return &Error{File: path, Err: untrustedChangef("trusted (trusted %s) and is gone (or a link to nothing), so its settings would not apply; a sandboxed run may have removed it: restore it (`git checkout -- %s`), or, if you removed it, run `devsandbox config trust` in the project to forget it",
		rec.TrustedAt.Format(time.RFC3339), ProjectFileName)}
}

// checkEnclosing refuses a project nested in another project whose project file the
// user trusted, when the nested project has no trusted file of its own. The project
// is the nearest directory holding a .git, and a sandbox can make one anywhere in its
// project (`git init sub` is ordinary work, and passes the watch): the user's next run
// from that directory would then be a project of its own, and the enclosing project's
// trusted file (its masks, its egress mode, its limits) would silently not apply.
// A trusted file is never silently dropped, so the run stops naming both; a file of
// the nested project's own, once trusted, is the user's word that it is a project.
func checkEnclosing(host Host, projectDir string) error {
	r, err := readTrust(TrustFile(host))
	if err != nil || len(r.Files) == 0 {
		return err
	}
	for d := filepath.Dir(projectDir); ; d = filepath.Dir(d) {
		file := filepath.Join(d, ProjectFileName)
		if _, ok := r.Files[trustKey(file)]; ok {
			_, errGit := os.Lstat(filepath.Join(d, ".git"))
			_, errFile := os.Lstat(file)
			if errGit == nil && errFile == nil {
				return fmt.Errorf("%s holds a .git, so it is a project of its own, inside the project %s whose trusted %s would not apply here (a sandboxed run of %s can make that .git): %w; run devsandbox from %s, or, if %s is a project of its own, give it a %s, review it and run `devsandbox config trust` there",
					projectDir, d, file, d, ErrEnclosingProject, d, projectDir, ProjectFileName)
			}
		}
		if d == "/" || d == "." {
			return nil
		}
	}
}

func sameFile(a, b string) bool {
	fa, errA := os.Stat(a)
	fb, errB := os.Stat(b)
	return errA == nil && errB == nil && os.SameFile(fa, fb)
}
