package egress

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"

	"github.com/devsandbox/devsandbox/internal/procgroup"
)

// Probe applies r with the prologue in a throwaway user and network namespace, the
// way a sandbox would, and returns nil when the rules are in place. It catches what a
// look at PATH cannot: nft installed but the netfilter modules missing, user
// namespaces disabled. It starts one short-lived process.
func Probe(ctx context.Context, r Rules, bin Binaries) error {
	script, err := PastaPrologue(r, bin, 3)
	if err != nil {
		return err
	}
	rd, wr, err := os.Pipe()
	if err != nil {
		return err
	}
	defer rd.Close()
	ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "/bin/sh", "-c", script, "sh", "/bin/true")
	cmd.ExtraFiles = []*os.File{wr}
	cmd.SysProcAttr = &syscall.SysProcAttr{
		Cloneflags:  syscall.CLONE_NEWUSER | syscall.CLONE_NEWNET,
		UidMappings: []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Getuid(), Size: 1}},
		GidMappings: []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Getgid(), Size: 1}},
	}
	// The end of the bound kills the prologue's commands (nft, iptables) with the
	// shell, not the shell alone.
	procgroup.Own(cmd, time.Second)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	err = cmd.Start()
	wr.Close()
	if err != nil {
		return fmt.Errorf("%w: creating a user and network namespace: %w", ErrFirewall, err)
	}
	line, _ := bufio.NewReader(rd).ReadString('\n')
	waitErr := cmd.Wait()
	line = strings.TrimSpace(line)
	switch {
	case line == StatusOK && waitErr == nil:
		return nil
	case strings.HasPrefix(line, StatusFail):
		return fmt.Errorf("%w: %s", ErrFirewall, strings.TrimPrefix(line, StatusFail))
	}
	return fmt.Errorf("%w: the prologue exited without a status (%w): %s", ErrFirewall, waitErr, strings.TrimSpace(stderr.String()))
}
