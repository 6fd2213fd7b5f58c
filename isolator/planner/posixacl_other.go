//go:build !linux

package planner

import (
	"errors"
	"fmt"
)

// readACL is Probe.ACL where devsandbox does not read ACLs: an error, so that a
// directory whose group may write is refused on the way to a followed link (a
// group-writable directory is accepted only with its ACL read, see safeHolders).
func readACL(dir string) ([]byte, error) {
	return nil, fmt.Errorf("reading the ACL of %s: %w", dir, errors.ErrUnsupported)
}
