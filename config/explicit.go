package config

import (
	"fmt"
	"path/filepath"
	"strings"
	"time"
)

// applyExplicit applies the --config file path, which replaces the user file. A file
// that lies where a sandbox can write it (sandboxWritable) is the sandbox's to change
// between runs, so it applies only while the trust records hold its content, like
// the project file: untrusted, it stops Load with an error matching
// ErrUntrustedConfigFile; changed since trusted, one matching ErrUntrustedChange. The
// file is read once: the bytes whose hash is checked are the bytes applied. Any other
// file (the user's own, a pipe) applies without trust.
func applyExplicit(c *Config, path, projectDir string) error {
	key, writable := sandboxWritable(path, writableRoots(c.Host, projectDir))
	read := readFile
	if writable {
		read = readProjectFile // regular and bounded: the sandbox may have left a FIFO
	}
	doc, err := read(path)
	if err != nil {
		return err
	}
	if writable {
		rec, found, err := trustRecordOf(c.Host, key)
		switch {
		case err != nil:
			return err
		case !found:
			return &Error{File: path, Err: untrustedConfigf("%s: a sandbox can write it (it lies in %s), so it applies only once trusted; review it, then run `devsandbox config trust %s`",
				ErrUntrustedConfigFile, writableRootOf(key, writableRoots(c.Host, projectDir)), path)}
		case rec.SHA256 != contentHash(doc):
			return &Error{File: path, Err: untrustedChangef("%s (trusted %s); a sandbox can write it: review the changes, then run `devsandbox config trust %s` again",
				ErrUntrustedChange, rec.TrustedAt.Format(time.RFC3339), path)}
		}
	}
	return mergeFile(c, path, doc)
}

// writableRoots are the host directories a sandbox may write: the project (read-write
// in every run of it) and devsandbox's data and state directories, which hold every
// project's sandbox home and session /tmp. Other read-write binds are the user's own
// choice (docs/security-model.md).
func writableRoots(h Host, projectDir string) []string {
	roots := []string{filepath.Join(h.DataHome, "devsandbox"), filepath.Join(h.StateHome, "devsandbox")}
	if projectDir != "" {
		roots = append(roots, projectDir)
	}
	for i, r := range roots {
		if real, err := filepath.EvalSymlinks(r); err == nil {
			roots[i] = real
		}
	}
	return roots
}

// sandboxWritable reports whether the file at path lies in one of roots, as named
// (a link there the sandbox can point anywhere) or once its links are resolved (a
// link elsewhere to a file there), and returns the key its trust is recorded under:
// trustKey's for a name in roots, else the resolved path. A pipe (/dev/stdin,
// <(...)) resolves to no file and lies nowhere.
func sandboxWritable(path string, roots []string) (string, bool) {
	key := trustKey(path)
	abs, err := filepath.Abs(path)
	if err != nil {
		abs = filepath.Clean(path)
	}
	for _, p := range []string{abs, key} {
		if writableRootOf(p, roots) != "" {
			return key, true
		}
	}
	if real, err := filepath.EvalSymlinks(abs); err == nil && writableRootOf(real, roots) != "" {
		return real, true
	}
	return "", false
}

// writableRootOf returns the root of roots that p lies in, or "".
func writableRootOf(p string, roots []string) string {
	for _, r := range roots {
		if p == r || strings.HasPrefix(p, strings.TrimSuffix(r, "/")+"/") {
			return r
		}
	}
	return ""
}

// untrustedConfigf returns a cause matching ErrUntrustedConfigFile.
func untrustedConfigf(format string, args ...any) error {
	return &valueError{msg: fmt.Sprintf(format, args...), classes: []error{ErrUntrustedConfigFile}}
}

// TrustConfigFile records the current content of the --config file path as trusted, at
// now, and returns its sha256 in hex: what `devsandbox config trust FILE` does for a
// --config file a sandbox can write (applyExplicit). The file must be one a run would
// apply (valid, as a --config file: over the defaults alone, since it replaces the user
// file), and pass checks. A file no sandbox can write needs no trust: an error
// matching ErrInvalid says so.
func TrustConfigFile(host Host, path, projectDir string, now time.Time, checks ...func(*Config) error) (string, error) {
	key, writable := sandboxWritable(path, writableRoots(host, projectDir))
	if !writable {
		return "", &Error{File: path, Err: invalidf("not in the project nor devsandbox's data or state: a --config file there applies without trust")}
	}
	doc, err := readProjectFile(path)
	if err != nil {
		return "", err
	}
	c := defaults(host)
	l, src, err := decodeFile(path, doc)
	if err != nil {
		return "", err
	}
	if err := apply(c, l, src); err != nil {
		return "", err
	}
	finish(c) // its warnings are the run's to give
	for _, check := range checks {
		if err := check(c); err != nil {
			return "", err
		}
	}
	sum := contentHash(doc)
	err = updateTrust(host, func(r *trustRecords) {
		r.Files[key] = trustRecord{SHA256: sum, TrustedAt: now.UTC().Truncate(time.Second)}
	})
	return sum, err
}
