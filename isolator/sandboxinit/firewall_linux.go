package sandboxinit

import (
	"fmt"
	"io"
	"os"

	"github.com/devsandbox/devsandbox/egress"
	"github.com/devsandbox/devsandbox/egress/netfilter"
)

// FirewallArg starts the init's firewall role: `devsandbox-init --firewall=<rules>`
// programs the egress firewall of the network namespace it runs in through netlink
// and prints "ok". The docker isolator runs it in a short-lived helper container
// that joins the sandbox container's network namespace with CAP_NET_ADMIN, since
// user images have no nft.
const FirewallArg = netfilter.FirewallArg

// FirewallArgs returns the arguments (after the program's name) of the firewall role
// applying fw.
func FirewallArgs(fw egress.Firewall) ([]string, error) {
	arg, err := netfilter.EncodeArg(fw)
	if err != nil {
		return nil, err
	}
	return []string{arg}, nil
}

// firewallMain applies the firewall encoded in arg to the current network namespace.
func firewallMain(arg string, stderr io.Writer) int {
	fw, err := netfilter.DecodeArg(arg)
	if err == nil {
		err = netfilter.Apply(fw)
	}
	if err != nil {
		fmt.Fprintf(stderr, "devsandbox-init: %v\n", err)
		return ExitSetupFailed
	}
	fmt.Fprintln(os.Stdout, "ok")
	return 0
}
