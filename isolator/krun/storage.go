package krun

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/devsandbox/devsandbox/isolator"
)

// podmanEnvNames are the variables that decide which image storage and configuration
// a rootless podman uses: its storage is $XDG_DATA_HOME/containers/storage unless a
// storage.conf ($CONTAINERS_STORAGE_CONF, else $XDG_CONFIG_HOME/containers/) says
// otherwise.
var podmanEnvNames = []string{"CONTAINERS_CONF", "CONTAINERS_CONF_OVERRIDE", "CONTAINERS_REGISTRIES_CONF", "CONTAINERS_STORAGE_CONF", "XDG_CONFIG_HOME", "XDG_DATA_HOME"}

// podmanEnv returns, from environ, the podman variables (podmanEnvNames) set to other
// than their defaults ($HOME/.local/share, $HOME/.config, empty), as NAME=VALUE in
// podmanEnvNames' order.
func podmanEnv(environ []string) []string {
	vars := map[string]string{}
	for _, kv := range environ {
		if k, v, ok := strings.Cut(kv, "="); ok {
			vars[k] = v
		}
	}
	home := vars["HOME"]
	defaults := map[string]string{"XDG_DATA_HOME": filepath.Join(home, ".local/share"), "XDG_CONFIG_HOME": filepath.Join(home, ".config")}
	var out []string
	for _, n := range podmanEnvNames {
		v := vars[n]
		if v == "" || home != "" && filepath.Clean(v) == defaults[n] {
			continue
		}
		out = append(out, n+"="+v)
	}
	return out
}

// serviceKey names the service devsandbox starts for environ: "" when podman would
// use the user's usual storage and configuration, else a short hash of podmanEnv.
// The service is shared by every run that finds it listening, and it keeps the
// storage of the environment it was started with: a run whose podman variables
// differ gets a service of its own, never one that would look in another storage.
func serviceKey(environ []string) string {
	set := podmanEnv(environ)
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
