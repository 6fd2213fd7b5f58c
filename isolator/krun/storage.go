package krun

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/devsandbox/devsandbox/isolator"
)

// podmanEnvNames are the variables that decide which image storage and configuration
// a rootless podman uses: its storage is $XDG_DATA_HOME/containers/storage unless a
// storage.conf ($CONTAINERS_STORAGE_CONF, else $XDG_CONFIG_HOME/containers/) says
// otherwise.
var podmanEnvNames = []string{"CONTAINERS_CONF", "CONTAINERS_CONF_OVERRIDE", "CONTAINERS_REGISTRIES_CONF", "CONTAINERS_STORAGE_CONF", "XDG_CONFIG_HOME", "XDG_DATA_HOME"}

// podmanEnv returns, from environ, the podman variables (podmanEnvNames) that make
// podman use other than the account's usual storage and configuration, as NAME=VALUE
// in podmanEnvNames' order: XDG_CONFIG_HOME and XDG_DATA_HOME as podman resolves them
// (unset: under $HOME, so another HOME is another storage) unless they are the
// defaults under accountHome (the account's home from the password database; "" when
// unknown: $HOME's are taken as usual), the others when set.
func podmanEnv(environ []string, accountHome string) []string {
	vars := map[string]string{}
	for _, kv := range environ {
		if k, v, ok := strings.Cut(kv, "="); ok {
			vars[k] = v
		}
	}
	home := vars["HOME"]
	usual := accountHome
	if usual == "" {
		usual = home
	}
	under := map[string]string{"XDG_DATA_HOME": ".local/share", "XDG_CONFIG_HOME": ".config"}
	var out []string
	for _, n := range podmanEnvNames {
		v := vars[n]
		if sub, ok := under[n]; ok {
			if v == "" && home != "" {
				v = filepath.Join(home, sub)
			}
			if usual != "" && filepath.Clean(v) == filepath.Join(usual, sub) {
				continue
			}
		}
		if v != "" {
			out = append(out, n+"="+v)
		}
	}
	return out
}

// accountHome is the home directory of the account devsandbox runs as, from the
// password database ("" when it has none): podman's usual storage and configuration
// are under it.
func accountHome() string {
	u, err := user.LookupId(strconv.Itoa(os.Getuid()))
	if err != nil {
		return ""
	}
	return u.HomeDir
}

// serviceKey names the service devsandbox starts for environ: "" when podman would
// use the account's usual storage and configuration, else a short hash of podmanEnv.
// The service is shared by every run that finds it listening, and it keeps the
// storage of the environment it was started with: a run whose podman variables
// differ gets a service of its own, never one that would look in another storage.
func serviceKey(environ []string, accountHome string) string {
	set := podmanEnv(environ, accountHome)
	if len(set) == 0 {
		return ""
	}
	sum := sha256.Sum256([]byte(strings.Join(set, "\x00")))
	return hex.EncodeToString(sum[:4])
}

// imageMissing explains how to put the image in the podman storage the run uses:
// graphRoot is that storage ("" when podman did not say), set the podman variables
// that moved it (podmanEnv).
func imageMissing(image, graphRoot string, set []string) error {
	where := "your podman storage"
	if graphRoot != "" {
		where += " (" + graphRoot + ")"
	}
	load := "podman load"
	var moved string
	if len(set) > 0 {
		where = "the podman storage of this environment"
		if graphRoot != "" {
			where += " (" + graphRoot + ")"
		}
		load = strings.Join(set, " ") + " podman load"
		moved = fmt.Sprintf("; podman chose it from %s, which devsandbox passes on to podman: to use your usual storage, run devsandbox without them, or keep them and name that storage as rootless_storage_path in a storage.conf given by CONTAINERS_STORAGE_CONF", strings.Join(names(set), " and "))
	}
	return fmt.Errorf("%w: %w: %s is not in %s; load the docker isolator's image (docker save %s | %s), or build it (podman build -t %s -f isolator/docker/Dockerfile .), or set krun.image / --image%s",
		isolator.ErrUnavailable, errNoImage, image, where, image, load, image, moved)
}

// names returns the names of NAME=VALUE entries.
func names(set []string) []string {
	out := make([]string, len(set))
	for i, kv := range set {
		out[i], _, _ = strings.Cut(kv, "=")
	}
	return out
}
