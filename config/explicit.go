package config

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"github.com/devsandbox/devsandbox/internal/rawfile"
)

// WritableCheck reports whether a sandbox can write the host path p (absolute and
// clean; asked as named and with its links resolved), and why, for people: where it
// lies and what makes that writable ("it lies in /data: sandbox.rw_binds").
type WritableCheck func(p string) (why string, ok bool)

// explicitFile is the --config file as Load read it: the bytes applied are the bytes
// whose hash is checked against the trust records.
type explicitFile struct {
	path  string
	real  string // path resolved when it was read; "" for a pipe
	sum   string // contentHash of the bytes applied
	links uint64 // its number of names when read (0: not known)
}

// applyExplicit reads and applies the --config file path, which replaces the user
// file. Whether a sandbox can write it depends on the whole configuration (its binds
// come from this file, the flags and the tools), so checkExplicit decides whether it
// may apply once Load has it all. A file (a name on disk, as opposed to a pipe such as
// /dev/stdin or <(...)) is read as the project file is: regular and bounded, since a
// sandbox may have left a FIFO or a link to /dev/zero there.
func applyExplicit(c *Config, path string) error {
	real, onDisk := realPath(path)
	var doc []byte
	var info rawfile.Info
	var err error
	if onDisk {
		doc, info, err = readProjectFileInfo(path)
	} else {
		doc, err = readFile(path)
	}
	if err != nil {
		return missingFix(err, "--config names the file to read instead of your user config: fix the path, or write a starter one there with `devsandbox config init "+path+"`")
	}
	// What was judged a file when read is judged as one: a link swapped for one to a
	// pipe since does not make it need no trust.
	c.explicit = &explicitFile{path: path, real: real, sum: contentHash(doc), links: info.Links}
	return mergeFile(c, path, doc)
}

// checkExplicit refuses the --config file c was loaded with when a sandbox can write
// it (writable, what the run's sandbox and the others devsandbox knows of can write)
// and the trust records do not hold its content: untrusted, with an error matching
// ErrUntrustedConfigFile; changed since trusted, one matching ErrUntrustedChange. A
// file trusted once is held to its record wherever it lies now: the sandbox that
// could write it may have removed the bind that made it writable. A nil writable
// knows nothing the sandbox cannot write: every file on disk needs trust. A pipe lies
// nowhere and needs none.
func checkExplicit(c *Config, writable func(*Config) WritableCheck) error {
	e := c.explicit
	if e == nil || e.real == "" {
		return nil
	}
	real := e.real
	named := trustKey(e.path)
	recs, err := readTrust(TrustFile(c.Host))
	if err != nil {
		return err
	}
	for _, key := range []string{named, real} {
		rec, found := recs.Files[key]
		switch {
		case !found:
			continue
		case rec.SHA256 != e.sum:
			return &Error{File: e.path, Err: untrustedChangef("%s (trusted %s); a sandbox could write it: review the changes, then run `devsandbox config trust %s` again",
				ErrUntrustedChange, rec.TrustedAt.Format(time.RFC3339), e.path)}
		}
		return nil
	}
	why := "devsandbox was not told what a sandbox can write"
	if e.links > 1 {
		// Another name of it may lie where a sandbox writes (the project), and no
		// path tells where: a hard link is found by nothing but its count.
		return &Error{File: e.path, Err: untrustedConfigf("%s: it is hard-linked (%d names), and another of its names may lie where a sandbox can write it, so it applies only once trusted; review it, then run `devsandbox config trust %s`",
			ErrUntrustedConfigFile, e.links, e.path)}
	}
	if writable != nil {
		in := writable(c)
		var ok bool
		for _, p := range []string{absClean(e.path), named, real} {
			if why, ok = in(p); ok {
				break
			}
		}
		if !ok {
			return nil
		}
		why = "a sandbox can write it (" + why + ")"
	}
	return &Error{File: e.path, Err: untrustedConfigf("%s: %s, so it applies only once trusted; review it, then run `devsandbox config trust %s`",
		ErrUntrustedConfigFile, why, e.path)}
}

// realPath returns path absolute with its links resolved, and whether it names a
// file on disk at all: a pipe (/dev/stdin, /dev/fd/63 from <(...)) resolves to no
// file.
func realPath(path string) (string, bool) {
	real, err := filepath.EvalSymlinks(absClean(path))
	if err != nil {
		return "", false
	}
	return real, true
}

// absClean is path absolute and clean.
func absClean(path string) string {
	if abs, err := filepath.Abs(path); err == nil {
		return abs
	}
	return filepath.Clean(path)
}

// untrustedConfigf returns a cause matching ErrUntrustedConfigFile.
func untrustedConfigf(format string, args ...any) error {
	return &valueError{msg: fmt.Sprintf(format, args...), classes: []error{ErrUntrustedConfigFile}}
}

// TrustConfigFile records the current content of the --config file path as trusted, at
// now, and returns its sha256 in hex: what `devsandbox config trust FILE` does for a
// --config file a sandbox can write (checkExplicit). It is recorded under the file's
// name (its directory's links resolved, trustKey), which Load looks up before the
// file's resolved path. The file must be one a run would apply (valid, as a --config
// file: over the defaults alone, since it replaces the user file), and pass checks.
func TrustConfigFile(host Host, path string, now time.Time, checks ...func(*Config) error) (string, error) {
	if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
		// Not "not a file on disk": the file is missing (or a link to nothing).
		return "", missingFix(&Error{File: path, Err: syscall.ENOENT}, "fix the path: `devsandbox config trust FILE` trusts an existing --config file")
	}
	if _, onDisk := realPath(path); !onDisk {
		return "", &Error{File: path, Err: invalidf("not a file on disk: a pipe applies without trust")}
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
		r.Files[trustKey(path)] = trustRecord{SHA256: sum, TrustedAt: now.UTC().Truncate(time.Second)}
	})
	return sum, err
}
