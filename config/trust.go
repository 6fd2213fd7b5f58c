package config

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"github.com/pelletier/go-toml/v2"
)

// TrustState is what the trust records say about a project file's current content.
type TrustState int

const (
	// Untrusted: no record for the file. Load ignores it with a warning.
	Untrusted TrustState = iota
	// Trusted: the file's content is the one the user trusted. Load applies it.
	Trusted
	// Changed: the file was trusted, but its content differs now. Load stops with
	// ErrUntrustedChange.
	Changed
)

func (s TrustState) String() string {
	switch s {
	case Trusted:
		return "trusted"
	case Changed:
		return "changed since trusted"
	}
	return "untrusted"
}

// trustRecords is trusted.toml: per project file (its absolute path, with the
// directory's symlinks resolved), the hash of the content the user reviewed.
type trustRecords struct {
	Files map[string]trustRecord `toml:"files"`
}

type trustRecord struct {
	SHA256    string    `toml:"sha256"`
	TrustedAt time.Time `toml:"trusted_at"`
}

const trustHeader = "# Project config files trusted with `devsandbox config trust`. A file applies\n" +
	"# only while the sha256 of its content is the one recorded here.\n\n"

// TrustFile returns the path of the trust records for host:
// $XDG_CONFIG_HOME/devsandbox/trusted.toml.
func TrustFile(host Host) string {
	return filepath.Join(host.ConfigHome, "devsandbox", "trusted.toml")
}

// Trust records the current content of projectFile as trusted, at now (to the
// second), and returns its sha256 in hex. The file must be one a run would apply
// today: valid, without keys only the user config may set, and loosening no
// protection below the defaults and the user file (the checks and messages of Load;
// Load judges it again on every run, against the user config of that day). The
// records are replaced atomically (a temporary file renamed over trusted.toml, mode
// 0600, in a directory created 0700). Two concurrent calls may lose one record; they
// never corrupt the file.
//
// checks are the run's checks beyond this package (the planner's tool tables), each
// given the configuration with the file applied; the first error refuses the file.
func Trust(host Host, projectFile string, now time.Time, checks ...func(*Config) error) (string, error) {
	doc, err := readProjectFile(projectFile)
	if err != nil {
		return "", missingFix(err, "there is no project file to trust: write one (`devsandbox config init "+projectFile+"`), or name the --config file to trust (`devsandbox config trust FILE`)")
	}
	// Judged as a run without flags judges it: over the defaults and the user file.
	c := defaults(host)
	if err := applyFile(c, UserFile(host), false); err != nil {
		return "", err
	}
	if err := applyProjectDoc(c, projectFile, doc); err != nil {
		return "", err
	}
	for _, check := range checks {
		if err := check(c); err != nil {
			return "", err
		}
	}
	sum := contentHash(doc)
	err = updateTrust(host, func(r *trustRecords) {
		r.Files[trustKey(projectFile)] = trustRecord{SHA256: sum, TrustedAt: now.UTC().Truncate(time.Second)}
	})
	return sum, err
}

// Untrust removes projectFile's record. Removing a record that is not there is not an
// error.
func Untrust(host Host, projectFile string) error {
	return updateTrust(host, func(r *trustRecords) { delete(r.Files, trustKey(projectFile)) })
}

// ForgetGone removes the record of projectFile when the file is gone (a run stops
// while it is recorded: checkGone), and reports whether there was one and when it was
// trusted. A file that exists is left alone: trusting it is Trust's.
func ForgetGone(host Host, projectFile string) (bool, time.Time, error) {
	if _, err := os.Lstat(projectFile); !errors.Is(err, fs.ErrNotExist) {
		if err == nil {
			err = fmt.Errorf("%s exists", projectFile)
		}
		return false, time.Time{}, err
	}
	r, err := readTrust(TrustFile(host))
	if err != nil {
		return false, time.Time{}, err
	}
	rec, ok := r.Files[trustKey(projectFile)]
	if !ok {
		return false, time.Time{}, nil
	}
	return true, rec.TrustedAt, Untrust(host, projectFile)
}

// CheckTrust reports whether projectFile's current content is trusted. A missing
// project file is an error (fs.ErrNotExist); missing trust records are Untrusted.
func CheckTrust(host Host, projectFile string) (TrustState, error) {
	doc, err := readProjectFile(projectFile)
	if err != nil {
		return Untrusted, err
	}
	st, _, err := trustState(host, projectFile, doc)
	return st, err
}

// trustState judges doc, the content just read from projectFile, so that what is
// checked is what gets applied. It returns the record when there is one.
func trustState(host Host, projectFile string, doc []byte) (TrustState, trustRecord, error) {
	r, err := readTrust(TrustFile(host))
	if err != nil {
		return Untrusted, trustRecord{}, err
	}
	rec, ok := r.Files[trustKey(projectFile)]
	switch {
	case !ok:
		return Untrusted, rec, nil
	case rec.SHA256 == contentHash(doc):
		return Trusted, rec, nil
	}
	return Changed, rec, nil
}

// contentHash is the hex sha256 of a file's bytes: the content alone, not its name,
// mode or time.
func contentHash(doc []byte) string {
	sum := sha256.Sum256(doc)
	return hex.EncodeToString(sum[:])
}

// trustKey is the name a project file is recorded under: its absolute path with the
// directory's symlinks resolved, so that a project reached through a symlink is the
// same project. The file's own name is kept: a symlinked .devsandbox.toml is trusted
// for its content, wherever it points.
func trustKey(projectFile string) string {
	abs, err := filepath.Abs(projectFile)
	if err != nil {
		return filepath.Clean(projectFile)
	}
	if dir, err := filepath.EvalSymlinks(filepath.Dir(abs)); err == nil {
		return filepath.Join(dir, filepath.Base(abs))
	}
	return abs
}

// readTrust reads the trust records; a missing file holds none. The file must be a
// regular file of ours that no one else can write, since it decides what config
// applies.
func readTrust(path string) (*trustRecords, error) {
	r := &trustRecords{Files: map[string]trustRecord{}}
	fi, err := os.Lstat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return r, nil
	}
	if err != nil {
		return nil, &Error{File: path, Err: err}
	}
	if err := private(fi); err != nil {
		return nil, &Error{File: path, Err: err}
	}
	doc, err := readFile(path)
	if err != nil {
		return nil, err
	}
	if err := toml.NewDecoder(bytes.NewReader(doc)).DisallowUnknownFields().Decode(r); err != nil {
		return nil, &Error{File: path, Err: fmt.Errorf("reading trust records: %w", err)}
	}
	if r.Files == nil {
		r.Files = map[string]trustRecord{}
	}
	return r, nil
}

// private refuses a trust record file that another user could have written.
func private(fi fs.FileInfo) error {
	if !fi.Mode().IsRegular() {
		return fmt.Errorf("trust records must be a regular file, not %v", fi.Mode().Type())
	}
	if fi.Mode().Perm()&0o022 != 0 {
		return fmt.Errorf("trust records are writable by other users (mode %v); fix with chmod 600", fi.Mode().Perm())
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok && int(st.Uid) != os.Geteuid() {
		return fmt.Errorf("trust records belong to uid %d, not to you", st.Uid)
	}
	return nil
}

// updateTrust reads the records, lets edit change them and writes them back.
func updateTrust(host Host, edit func(*trustRecords)) error {
	path := TrustFile(host)
	r, err := readTrust(path)
	if err != nil {
		return err
	}
	edit(r)
	body, err := toml.Marshal(r)
	if err != nil {
		return &Error{File: path, Err: err}
	}
	if err := writeAtomic(path, append([]byte(trustHeader), body...)); err != nil {
		return &Error{File: path, Err: err}
	}
	return nil
}

// writeAtomic replaces path with data: a 0600 temporary file in the same directory
// (created 0700 when missing), synced, then renamed over path. Readers see the old
// content or the new, never a part.
func writeAtomic(path string, data []byte) error {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".*") // CreateTemp makes it 0600
	if err != nil {
		return err
	}
	tmp := f.Name()
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		_ = os.Remove(tmp)
		return err
	}
	return nil
}
