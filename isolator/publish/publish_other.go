//go:build !linux

package publish

import (
	"errors"
	"fmt"

	"github.com/devsandbox/devsandbox/isolator"
)

// Start refuses: published ports are relayed through Unix sockets in a directory the
// sandbox shares, which Docker Desktop's VM does not pass through.
func Start(*isolator.Plan) (stop func(), err error) {
	return nil, fmt.Errorf("%w: --publish / egress.publish needs Linux (the ports are relayed through Unix sockets, which Docker Desktop does not share with its VM); %w", isolator.ErrProtection, errors.ErrUnsupported)
}
