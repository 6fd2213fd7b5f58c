package egress

import (
	"fmt"
	"strings"

	"github.com/devsandbox/devsandbox/internal/sh"
)

// Binaries are the absolute paths of the programs the rules are applied with. Tests
// point Nft at a program that fails to prove a broken firewall aborts the run.
type Binaries struct {
	Nft, Iptables, Ip6tables, IP, Nsenter, Pasta string
}

// DefaultBinaries are the Debian/Ubuntu/Fedora locations.
var DefaultBinaries = Binaries{
	Nft: "/usr/sbin/nft", Iptables: "/usr/sbin/iptables", Ip6tables: "/usr/sbin/ip6tables",
	IP: "/usr/sbin/ip", Nsenter: "/usr/bin/nsenter", Pasta: "/usr/bin/pasta",
}

// SandboxProxyAddr is where the session proxy is reachable from inside every sandbox
// (a forwarder in the sandbox's own network namespace relays it to the host's proxy).
const SandboxProxyAddr = "127.0.0.1:3128"

// Status lines the prologue writes on its status descriptor.
const (
	StatusOK   = "ok"
	StatusFail = "fail " // followed by the reason
)

// PastaPrologue returns a POSIX sh script run as root of pasta's user and network
// namespaces, with the bwrap command line as its arguments. It applies the firewall
// (nft, else iptables), deletes the default routes of families without rules,
// verifies both, writes StatusOK on statusFD and execs "$@". On any failure it writes
// StatusFail and a reason instead and exits 125: the command never starts. If
// devsandbox is gone (the status write fails), it exits without starting anything.
func PastaPrologue(r Rules, bin Binaries, statusFD int) (string, error) {
	fw, err := Compile(r)
	if err != nil {
		return "", err
	}
	var b strings.Builder
	fmt.Fprintf(&b, "# devsandbox egress prologue (mode %s): firewall, routes, verify, then exec bwrap.\n", r.Mode)
	b.WriteString("set -u\n")
	fmt.Fprintf(&b, "fail() { printf '%s%%s\\n' \"$1\" >&%d; exit 125; }\n", StatusFail, statusFD)
	fmt.Fprintf(&b, "nft_ok=0\nif [ -x %s ]; then\n", sh.Quote(bin.Nft))
	fmt.Fprintf(&b, "\t%s -f - <<'DEVSANDBOX_NFT' && nft_ok=1\n%sDEVSANDBOX_NFT\n", sh.Quote(bin.Nft), fw.NftScript())
	fmt.Fprintf(&b, "\t[ $nft_ok = 1 ] && { %s list chain inet %s output >/dev/null 2>&1 || fail %s; }\n",
		sh.Quote(bin.Nft), Table, sh.Quote("nft loaded the egress rules but they are not in place"))
	b.WriteString("fi\n")
	fmt.Fprintf(&b, "if [ $nft_ok = 0 ]; then\n\t[ -x %s ] || fail %s\n", sh.Quote(bin.Iptables),
		sh.Quote(fmt.Sprintf("cannot apply the egress rules: %s failed or is missing and %s is missing; install nftables (and make sure the nf_tables kernel modules load) — `devsandbox doctor` checks this", bin.Nft, bin.Iptables)))
	for _, c := range fw.IptablesCommands(bin.Iptables, bin.Ip6tables) {
		fmt.Fprintf(&b, "\t%s || fail %s\n", sh.Join(c), sh.Quote("iptables could not apply the egress rules: "+strings.Join(c[1:], " ")))
	}
	for _, ipt := range []string{bin.Iptables, bin.Ip6tables} {
		fmt.Fprintf(&b, "\t%s -w -S OUTPUT | grep -qx -- '-P OUTPUT DROP' || fail %s\n", sh.Quote(ipt), sh.Quote(ipt+" rules are not in place"))
	}
	b.WriteString("fi\n")
	for _, fam := range routeFamilies(fw) {
		fmt.Fprintf(&b, "%s %s route del default 2>/dev/null\n", sh.Quote(bin.IP), fam)
		fmt.Fprintf(&b, "[ -z \"$(%s %s route show default)\" ] || fail %s\n", sh.Quote(bin.IP), fam,
			sh.Quote("could not remove the "+fam+" default route"))
	}
	fmt.Fprintf(&b, "printf '%s\\n' >&%d || exit 125\n", StatusOK, statusFD)
	fmt.Fprintf(&b, "exec %d>&-\nexec \"$@\"\n", statusFD)
	return b.String(), nil
}

// routeFamilies are the families whose default route is not needed.
func routeFamilies(fw Firewall) []string {
	var fams []string
	if !fw.V4 {
		fams = append(fams, "-4")
	}
	if !fw.V6 {
		fams = append(fams, "-6")
	}
	return fams
}

// Call is one command run from the host into a sandbox's namespaces.
type Call struct {
	Argv  []string
	Stdin string
}

// Target names the network namespace NsenterCalls enters, in one of two ways.
type Target struct {
	// PID enters the network namespace of that process (nsenter --target) from the
	// caller's user namespace (a root-owned container engine).
	PID int
	// NetFD, when set instead of PID, is a descriptor open on the network namespace
	// in nsenter's process, and UserFD (0: none) one open on the user namespace that
	// owns it (ioctl NS_GET_USERNS). nsenter enters the user namespace first and
	// becomes its root, which holds CAP_NET_ADMIN over the network namespace. This is
	// the form for rootless podman, whose container network namespace belongs to a
	// user namespace of podman's or of the container's, depending on the podman
	// version, the network backend and --userns; the caller passes the descriptors
	// (exec.Cmd.ExtraFiles).
	NetFD, UserFD int
}

// nsenter returns the nsenter argv prefix that enters t.
func (t Target) nsenter(bin string) []string {
	if t.NetFD != 0 {
		argv := []string{bin}
		if t.UserFD != 0 {
			argv = append(argv, fmt.Sprintf("--user=/proc/self/fd/%d", t.UserFD))
		}
		return append(argv, fmt.Sprintf("--net=/proc/self/fd/%d", t.NetFD))
	}
	return []string{bin, "--target", fmt.Sprint(t.PID), "--net"}
}

// NsenterCalls returns the commands that apply the rules inside the network namespace
// t: load the nft rules, verify them, delete unneeded default routes. Each must
// succeed, in order; the sandboxed command must not start before they have.
func NsenterCalls(r Rules, t Target, bin Binaries) ([]Call, error) {
	fw, err := Compile(r)
	if err != nil {
		return nil, err
	}
	if t.PID == 0 && t.NetFD == 0 {
		return nil, fmt.Errorf("nsenter target: no process and no namespace descriptor")
	}
	enter := t.nsenter(bin.Nsenter)
	in := func(argv ...string) []string { return append(append(append([]string{}, enter...), "--"), argv...) }
	calls := []Call{
		{Argv: in(bin.Nft, "-f", "-"), Stdin: fw.NftScript()},
		{Argv: in(bin.Nft, "list", "chain", "inet", Table, "output")},
	}
	for _, fam := range routeFamilies(fw) {
		calls = append(calls, Call{Argv: in(bin.IP, fam, "route", "flush", "default")})
	}
	return calls, nil
}
