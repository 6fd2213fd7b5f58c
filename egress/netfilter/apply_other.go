//go:build !linux

package netfilter

import (
	"errors"
	"fmt"

	"github.com/devsandbox/devsandbox/egress"
)

// Apply needs Linux netfilter; elsewhere it always fails, with egress.ErrFirewall and
// errors.ErrUnsupported.
func Apply(egress.Firewall) error {
	return fmt.Errorf("%w: nftables needs Linux: %w", egress.ErrFirewall, errors.ErrUnsupported)
}
