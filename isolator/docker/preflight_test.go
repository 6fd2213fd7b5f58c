package docker

import (
	"errors"
	"strings"
	"testing"

	"github.com/devsandbox/devsandbox/isolator"
	"github.com/devsandbox/devsandbox/isolator/container"
)

// An engine's refusal of a bind source it cannot see names the engine, the path,
// what it is and the fix; other errors are not this one.
func TestUnseen(t *testing.T) {
	l := &container.Layout{Home: "/home/u", Workdir: "/tmp/p/sub", Mounts: []container.Mount{
		{Type: container.Bind, Source: "/tmp/p", Target: "/tmp/p"},
		{Type: container.Bind, Source: "/st/home", Target: "/home/u"},
		{Type: container.Bind, Source: "/st/files/0a1b", Target: "/etc/passwd", ReadOnly: true},
		{Type: container.Bind, Source: "/data", Target: "/mnt/data"},
	}}
	addr := Address{Host: "unix:///var/lib/dsb-remote/docker.sock", Origin: "DOCKER_HOST"}
	for msg, want := range map[string]string{
		`Error response from daemon: invalid mount config for type "bind": bind source path does not exist: /tmp/p`: "/tmp/p, the project,",
		`bind source path does not exist: /st/home`:                                                                 "/st/home, the sandbox home,",
		`bind source path does not exist: /st/files/0a1b`:                                                           "a file devsandbox generates",
		`Mounts denied: The path /data is not shared from the host and is not known to Docker.`:                     "/data, the mount at /mnt/data,",
	} {
		err := unseen(errors.New(msg), addr, l)
		if !errors.Is(err, isolator.ErrUnavailable) || !strings.Contains(err.Error(), want) ||
			!strings.Contains(err.Error(), addr.Host) || !strings.Contains(err.Error(), "share the directory") {
			t.Errorf("%s:\n%v\nwant it to hold %q, the engine and the fix", msg, err, want)
		}
	}
	if err := unseen(errors.New("no such image"), addr, l); err != nil {
		t.Errorf("another error: %v", err)
	}
}
