package krun

import (
	"errors"
	"slices"
	"testing"

	"github.com/devsandbox/devsandbox/isolator"
)

// The podman variables that move podman's storage or configuration decide the
// service: the usual environment (unset, or set to the defaults under the account's
// home) keeps the shared one, any other gets a service of its own, the same one for
// the same values. Another HOME is another storage: podman resolves the unset
// XDG_CONFIG_HOME and XDG_DATA_HOME under it.
func TestServiceKey(t *testing.T) {
	home := "HOME=/home/u"
	for _, tc := range []struct {
		name    string
		environ []string
		account string
		set     []string
	}{
		{"none", []string{home, "PATH=/bin", "XDG_RUNTIME_DIR=/run/user/1000", "XDG_STATE_HOME=/x/state"}, "/home/u", nil},
		{"no account", []string{home, "PATH=/bin"}, "", nil},
		{"defaults", []string{home, "XDG_DATA_HOME=/home/u/.local/share/", "XDG_CONFIG_HOME=/home/u/.config", "CONTAINERS_CONF="}, "/home/u", nil},
		{"data", []string{home, "XDG_DATA_HOME=/x/data"}, "/home/u", []string{"XDG_DATA_HOME=/x/data"}},
		{"no home", []string{"XDG_DATA_HOME=/home/u/.local/share"}, "", []string{"XDG_DATA_HOME=/home/u/.local/share"}},
		{"no home, the account's", []string{"XDG_DATA_HOME=/home/u/.local/share"}, "/home/u", nil},
		{"another home", []string{"HOME=/var/tmp/h", "PATH=/bin"}, "/home/u",
			[]string{"XDG_CONFIG_HOME=/var/tmp/h/.config", "XDG_DATA_HOME=/var/tmp/h/.local/share"}},
		{"another home, the account's data", []string{"HOME=/var/tmp/h", "XDG_DATA_HOME=/home/u/.local/share"}, "/home/u",
			[]string{"XDG_CONFIG_HOME=/var/tmp/h/.config"}},
		{"ordered", []string{home, "XDG_DATA_HOME=/x/data", "CONTAINERS_STORAGE_CONF=/x/s.conf", "XDG_CONFIG_HOME=/x/cfg"}, "/home/u",
			[]string{"CONTAINERS_STORAGE_CONF=/x/s.conf", "XDG_CONFIG_HOME=/x/cfg", "XDG_DATA_HOME=/x/data"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := podmanEnv(tc.environ, tc.account); !slices.Equal(got, tc.set) {
				t.Errorf("podmanEnv = %q, want %q", got, tc.set)
			}
			key := serviceKey(tc.environ, tc.account)
			if (key == "") != (len(tc.set) == 0) || key != "" && len(key) != 8 {
				t.Errorf("serviceKey = %q for %q", key, tc.set)
			}
		})
	}
	a := serviceKey([]string{home, "XDG_DATA_HOME=/x/data"}, "/home/u")
	if b := serviceKey([]string{"XDG_DATA_HOME=/x/data", "PATH=/bin", home}, "/home/u"); b != a {
		t.Errorf("the same podman variables gave keys %q and %q", a, b)
	}
	if b := serviceKey([]string{home, "XDG_DATA_HOME=/y/data"}, "/home/u"); b == a {
		t.Errorf("another XDG_DATA_HOME gave the same key %q", a)
	}
	if a, b := serviceKey([]string{"HOME=/var/tmp/h1"}, "/home/u"), serviceKey([]string{"HOME=/var/tmp/h2"}, "/home/u"); a == b {
		t.Errorf("two homes gave the same key %q", a)
	}
}

// A missing image names the storage podman looked in and, when variables of the
// environment moved it, them and the ways out.
func TestImageMissing(t *testing.T) {
	for _, tc := range []struct {
		name, root string
		set        []string
		want       string
	}{
		{"usual", "/home/u/.local/share/containers/storage", nil,
			"isolator unavailable: image not found: img:1 is not in your podman storage (/home/u/.local/share/containers/storage); load the docker isolator's image (docker save img:1 | podman load), or build it (podman build -t img:1 -f isolator/docker/Dockerfile .), or set krun.image / --image"},
		{"no info", "", nil,
			"isolator unavailable: image not found: img:1 is not in your podman storage; load the docker isolator's image (docker save img:1 | podman load), or build it (podman build -t img:1 -f isolator/docker/Dockerfile .), or set krun.image / --image"},
		{"moved", "/x/data/containers/storage", []string{"XDG_DATA_HOME=/x/data"},
			"isolator unavailable: image not found: img:1 is not in the podman storage of this environment (/x/data/containers/storage); load the docker isolator's image (docker save img:1 | XDG_DATA_HOME=/x/data podman load), or build it (podman build -t img:1 -f isolator/docker/Dockerfile .), or set krun.image / --image; podman chose it from XDG_DATA_HOME, which devsandbox passes on to podman: to use your usual storage, run devsandbox without them, or keep them and name that storage as rootless_storage_path in a storage.conf given by CONTAINERS_STORAGE_CONF"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := imageMissing("img:1", tc.root, tc.set)
			if !errors.Is(err, isolator.ErrUnavailable) || !errors.Is(err, errNoImage) {
				t.Errorf("error classes: %v", err)
			}
			if err.Error() != tc.want {
				t.Errorf("got\n%s\nwant\n%s", err, tc.want)
			}
		})
	}
}
