package shim

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/devsandbox/devsandbox/egress"
	"github.com/devsandbox/devsandbox/egress/netfilter"
)

// firewallChildEnv makes the test binary run firewallCheckInNamespace instead of the
// tests (re-executed in a new user and network namespace).
const firewallChildEnv = "DEVSANDBOX_SHIM_FIREWALL_CHILD"

func TestMain(m *testing.M) {
	if os.Getenv(firewallChildEnv) != "" {
		if err := firewallCheckInNamespace(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// The init's check of the egress state (guarantee 9) fails without the rules and
// passes with them, in a real network namespace.
func TestVerifyFirewallInNamespace(t *testing.T) {
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), firewallChildEnv+"=1")
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

func firewallCheckInNamespace() error {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return err
	}
	ifr, err := unix.NewIfreq("lo")
	if err != nil {
		return err
	}
	if err := unix.IoctlIfreq(fd, unix.SIOCGIFFLAGS, ifr); err != nil {
		return err
	}
	ifr.SetUint16(ifr.Uint16() | unix.IFF_UP)
	if err := unix.IoctlIfreq(fd, unix.SIOCSIFFLAGS, ifr); err != nil {
		return fmt.Errorf("bringing lo up: %v", err)
	}
	unix.Close(fd)
	if err := verifyFirewall(egress.ProbeAddr); err == nil || !strings.Contains(err.Error(), "not in effect") {
		return fmt.Errorf("without rules: verifyFirewall = %v, want not in effect", err)
	}
	fw, err := egress.Compile(egress.SampleRules)
	if err != nil {
		return err
	}
	if err := netfilter.Apply(fw); err != nil {
		return err
	}
	if err := verifyFirewall(egress.ProbeAddr); err != nil {
		return fmt.Errorf("with the rules: %v", err)
	}
	return nil
}
