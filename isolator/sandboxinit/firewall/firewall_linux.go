// Package firewall is devsandbox-init's firewall role: `devsandbox-init
// --firewall=<rules>` programs the egress firewall of the network namespace it runs
// in through netlink. It is apart from package sandboxinit so that the roles bwrap
// and the containers start on every launch (and devsandbox, which can play the bwrap
// init) do not link or initialise netlink and nftables; only cmd/devsandbox-init
// dispatches to it.
package firewall

import (
	"encoding/base64"
	"fmt"
	"io"
	"os"
	"strings"
	"syscall"

	"github.com/devsandbox/devsandbox/egress"
	"github.com/devsandbox/devsandbox/egress/netfilter"
	"github.com/devsandbox/devsandbox/internal/termsafe"
	"github.com/devsandbox/devsandbox/isolator/sandboxinit"
	"github.com/devsandbox/devsandbox/isolator/sandboxinit/wire"
)

// Arg starts the init's firewall role: `devsandbox-init --firewall=<rules>`
// programs the egress firewall of the network namespace it runs in through netlink
// and prints "ok". The docker isolator runs it in a short-lived helper container
// that joins the sandbox container's network namespace with CAP_NET_ADMIN, since
// user images have no nft.
const Arg = netfilter.FirewallArg

// Args returns the arguments (after the program's name) of the firewall role
// applying fw.
func Args(fw egress.Firewall) ([]string, error) {
	arg, err := netfilter.EncodeArg(fw)
	if err != nil {
		return nil, err
	}
	return []string{arg}, nil
}

// Main applies the firewall encoded in arg to the current network namespace, then
// performs the writes (wire.WriteInPlaceArg) of writes, and prints "ok"; it returns
// the init's exit status (sandboxinit.ExitSetupFailed when any of it failed).
func Main(arg string, writes []string, stderr io.Writer) int {
	fw, err := netfilter.DecodeArg(arg)
	if err == nil {
		err = netfilter.Apply(fw)
	}
	for _, w := range writes {
		if err != nil {
			break
		}
		err = writeInPlace(w)
	}
	if err != nil {
		fmt.Fprintf(stderr, "devsandbox-init: %s\n", termsafe.Line(err.Error()))
		return sandboxinit.ExitSetupFailed
	}
	fmt.Fprintln(os.Stdout, "ok")
	return 0
}

// writeInPlace performs one wire.WriteInPlaceArg: it truncates and rewrites an
// existing regular file, never following a link.
func writeInPlace(arg string) error {
	spec, ok := strings.CutPrefix(arg, wire.WriteInPlaceArg)
	name, enc, ok2 := strings.Cut(spec, "=")
	if !ok || !ok2 {
		return fmt.Errorf("unknown argument %q", arg)
	}
	content, err := base64.StdEncoding.DecodeString(enc)
	if err != nil {
		return fmt.Errorf("%s: %w", wire.WriteInPlaceArg, err)
	}
	f, err := os.OpenFile(name, os.O_WRONLY|os.O_TRUNC|syscall.O_NOFOLLOW, 0)
	if err != nil {
		return fmt.Errorf("rewriting %s: %w", name, err)
	}
	_, err = f.Write(content)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("rewriting %s: %w", name, err)
	}
	return nil
}
