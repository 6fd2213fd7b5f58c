package netfilter

import (
	"bytes"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/nftables"
	"github.com/google/nftables/userdata"
	"golang.org/x/sys/unix"

	"github.com/devsandbox/devsandbox/egress"
	probecheck "github.com/devsandbox/devsandbox/egress/netfilter/probe"
)

// childEnv makes the test binary run inNamespace instead of the tests: the parent
// re-executes itself in a new user and network namespace.
const childEnv = "DEVSANDBOX_NETFILTER_TEST_CHILD"

func TestMain(m *testing.M) {
	if os.Getenv(childEnv) != "" {
		if err := inNamespace(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// TestApplyInNamespace applies rules for real, in a throwaway user and network
// namespace where the test is root.
func TestApplyInNamespace(t *testing.T) {
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), childEnv+"=1")
	cmd.SysProcAttr = &syscall.SysProcAttr{
		Cloneflags:  syscall.CLONE_NEWUSER | syscall.CLONE_NEWNET,
		UidMappings: []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Getuid(), Size: 1}},
		GidMappings: []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Getgid(), Size: 1}},
	}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("user namespaces are required in CI: %v", err)
		}
		t.Skipf("no user namespaces: %v", err)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("in the namespace: %v\n%s", err, out.String())
	}
}

// inNamespace runs as root of a fresh user and network namespace.
func inNamespace() error {
	if err := loopbackUp(); err != nil {
		return err
	}
	if err := sendProbe(); err != nil {
		return fmt.Errorf("before Apply, the probe datagram: %v", err)
	}
	if err := probecheck.Check(egress.ProbeAddr); err == nil || !strings.Contains(err.Error(), "not in effect") {
		return fmt.Errorf("before Apply, probe.Check = %v, want not in effect", err)
	}
	fw, err := egress.Compile(egress.SampleRules)
	if err != nil {
		return err
	}
	if err := Apply(fw); err != nil {
		return fmt.Errorf("Apply: %v", err)
	}
	if err := sendProbe(); !errors.Is(err, unix.EPERM) {
		return fmt.Errorf("after Apply, the probe datagram: %v, want EPERM", err)
	}
	if err := probecheck.Check(egress.ProbeAddr); err != nil {
		return fmt.Errorf("after Apply, probe.Check: %v", err)
	}
	// Loopback is accepted after the probe rule.
	if err := sendUDP(netip.MustParseAddrPort("127.0.0.1:9")); err != nil {
		return fmt.Errorf("after Apply, a datagram to 127.0.0.1:9: %v", err)
	}
	// probe, established, lo, deny 198.51.100.0/24, two rules for each of two allows,
	// the default deny.
	if err := countRules(9, "probe", "deny 198.51.100.0/24",
		"allow 192.0.2.10:443", "allow 192.0.2.10:443", "allow [2001:db8::10]:443", "allow [2001:db8::10]:443", "default deny"); err != nil {
		return err
	}
	// A second Apply replaces the table, here with fewer rules.
	fw.Matches = fw.Matches[:1]
	if err := Apply(fw); err != nil {
		return fmt.Errorf("Apply again: %v", err)
	}
	if err := countRules(5, "probe", "deny 198.51.100.0/24", "default deny"); err != nil {
		return fmt.Errorf("after the second Apply: %v", err)
	}
	if err := sendProbe(); !errors.Is(err, unix.EPERM) {
		return fmt.Errorf("after the second Apply, the probe datagram: %v, want EPERM", err)
	}
	return nil
}

// countRules reads the table back with a connection of its own: the output chain
// has outputRules rules with comments (rules without one are left out), the input
// chain two.
func countRules(outputRules int, comments ...string) error {
	c, err := nftables.New()
	if err != nil {
		return err
	}
	out, err := c.GetRules(table, outputChain())
	if err != nil {
		return fmt.Errorf("listing the output chain: %v", err)
	}
	in, err := c.GetRules(table, inputChain())
	if err != nil {
		return fmt.Errorf("listing the input chain: %v", err)
	}
	if len(out) != outputRules || len(in) != 2 {
		return fmt.Errorf("read back %d output and %d input rules, want %d and 2", len(out), len(in), outputRules)
	}
	var got []string
	for _, r := range out {
		if s, ok := userdata.GetString(r.UserData, userdata.TypeComment); ok {
			got = append(got, s)
		}
	}
	if !slices.Equal(got, comments) {
		return fmt.Errorf("rule comments %q, want %q", got, comments)
	}
	return nil
}

func loopbackUp() error {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	ifr, err := unix.NewIfreq("lo")
	if err != nil {
		return err
	}
	if err := unix.IoctlIfreq(fd, unix.SIOCGIFFLAGS, ifr); err != nil {
		return fmt.Errorf("reading the flags of lo: %v", err)
	}
	ifr.SetUint16(ifr.Uint16() | unix.IFF_UP)
	if err := unix.IoctlIfreq(fd, unix.SIOCSIFFLAGS, ifr); err != nil {
		return fmt.Errorf("bringing lo up: %v", err)
	}
	return nil
}

func sendProbe() error { return sendUDP(netip.MustParseAddrPort(egress.ProbeAddr)) }

func sendUDP(to netip.AddrPort) error {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	tv := unix.NsecToTimeval(int64(time.Second))
	_ = unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_SNDTIMEO, &tv)
	return unix.Sendto(fd, []byte("x"), 0, &unix.SockaddrInet4{Addr: to.Addr().As4(), Port: int(to.Port())})
}
