package bwrap

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/devsandbox/devsandbox/internal/rawfile"
	"github.com/devsandbox/devsandbox/isolator"
)

// PasswdFile returns where PrepareHost writes the plan's SystemView.Passwd for
// WrapArgv, which binds it by path at /etc/passwd: a file named by its content's
// hash in the project's state directory, outside every sandbox's view, so runs with
// different homes each have theirs and none can change another's.
func PasswdFile(p *isolator.Plan) (string, error) {
	if p.StateDir == "" {
		return "", errors.New("the plan has no state directory to keep its /etc/passwd in (Plan.StateDir)")
	}
	sum := sha256.Sum256(p.System.Passwd)
	return filepath.Join(p.StateDir, "passwd", hex.EncodeToString(sum[:16])), nil
}

// writePasswdFile writes p's SystemView.Passwd to PasswdFile, read-only, unless the
// file there holds it already; a file of other content there (not one devsandbox
// wrote) is replaced by rename, never written through.
func writePasswdFile(p *isolator.Plan) error {
	if p.System.Passwd == nil {
		return nil
	}
	path, err := PasswdFile(p)
	if err != nil {
		return err
	}
	if b, err := rawfile.ReadRegular(path, int64(len(p.System.Passwd))+1, false); err == nil && bytes.Equal(b, p.System.Passwd) {
		return nil
	}
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("creating %s for the sandbox's /etc/passwd: %w", dir, err)
	}
	f, err := os.CreateTemp(dir, ".tmp-")
	if err != nil {
		return fmt.Errorf("writing the sandbox's /etc/passwd in %s: %w", dir, err)
	}
	_, err = f.Write(p.System.Passwd)
	if err == nil {
		err = f.Chmod(0o444)
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(f.Name(), path)
	}
	if err != nil {
		_ = os.Remove(f.Name())
		return fmt.Errorf("writing the sandbox's /etc/passwd to %s: %w", path, err)
	}
	return nil
}
