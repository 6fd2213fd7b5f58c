//go:build !linux

package egress

import (
	"context"
	"errors"
	"fmt"
)

// Probe needs Linux user and network namespaces, where the rules are applied to
// bwrap's sandboxes; elsewhere it always fails, with ErrFirewall and
// errors.ErrUnsupported.
func Probe(context.Context, Rules, Binaries) error {
	return fmt.Errorf("%w: probing needs Linux user and network namespaces: %w", ErrFirewall, errors.ErrUnsupported)
}
