package krun

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"time"

	"github.com/devsandbox/devsandbox/egress"
	"github.com/devsandbox/devsandbox/isolator"
)

// netns applies egress rules from the host in a container's network namespace.
type netns interface {
	// Open opens the network namespace of process pid and the user namespace that
	// owns it; user is nil when that is the caller's own (nothing to enter).
	Open(pid int) (user, net *os.File, err error)
	// Run runs call with files as its descriptors 3, 4, ...
	Run(ctx context.Context, call egress.Call, files []*os.File) error
}

// firewallTimeout bounds each call (nft loads a few dozen rules in milliseconds).
const firewallTimeout = 30 * time.Second

// applyFirewall applies the egress rules (s.Firewall, rendered for the descriptors
// userNSFD and netNSFD) in the network namespace of the container's process pid. It
// returns an error wrapping isolator.ErrProtection and egress.ErrFirewall, with the
// fix, if any call fails.
func applyFirewall(ctx context.Context, ns netns, pid int, s *Spec, p *isolator.Plan, bin egress.Binaries) error {
	fail := func(err error) error {
		return fmt.Errorf("%w: %w in the container's network namespace: %w; the command did not run. Install nftables (sudo apt-get install nftables) and nsenter (util-linux); `devsandbox doctor` checks them", isolator.ErrProtection, egress.ErrFirewall, err)
	}
	user, net, err := ns.Open(pid)
	if err != nil {
		return fail(err)
	}
	defer net.Close()
	calls, files := s.Firewall, []*os.File{user, net}
	if user == nil {
		// The namespace is the caller's (rootful podman): enter only the network
		// namespace, the only descriptor passed (3).
		files = []*os.File{net}
		if calls, err = egress.NsenterCalls(p.Egress, egress.Target{NetFD: 3}, bin); err != nil {
			return fail(err)
		}
	} else {
		defer user.Close()
	}
	for _, c := range calls {
		cctx, cancel := context.WithTimeout(ctx, firewallTimeout)
		err := ns.Run(cctx, c, files)
		cancel()
		if err != nil {
			return fail(err)
		}
	}
	return nil
}

// hostNetns is netns on the host's nsenter.
type hostNetns struct{}

// Run runs the call with a fixed environment: devsandbox-krun's own holds the
// run's secret values.
func (hostNetns) Run(ctx context.Context, call egress.Call, files []*os.File) error {
	// nsenter enters the namespaces (no pid namespace, no --fork) and execs the
	// call's program in its own process: killing it alone ends the call.
	cmd := exec.CommandContext(ctx, call.Argv[0], call.Argv[1:]...)
	cmd.Env = []string{"PATH=/usr/sbin:/usr/bin:/sbin:/bin", "LC_ALL=C"}
	cmd.Dir = "/"
	cmd.Stdin = strings.NewReader(call.Stdin)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	cmd.ExtraFiles = files
	cmd.WaitDelay = time.Second
	if err := cmd.Run(); err != nil {
		msg := strings.Join(strings.Fields(out.String()), " ")
		if len(msg) > 400 {
			msg = msg[:400] + "…"
		}
		if msg != "" {
			msg = ": " + msg
		}
		return fmt.Errorf("%s: %v%s", strings.Join(call.Argv, " "), err, msg)
	}
	return nil
}
