package docker

import (
	"slices"
	"strings"
)

// The engine gives every container the environment of its image (its ENV), under
// the variables the container's config sets: an image that sets GODEBUG (the TLS
// stack's compatibility switches), GOGC, GOMEMLIMIT, GOTRACEBACK or GOMAXPROCS would
// set them for devsandbox's own programs in its containers too: the companion proxy
// (the session's credentials and MITM CA key), the firewall helper (root, NET_ADMIN)
// and the sandbox's init, whose Go runtime reads them at its start. A name without
// "=" in a container's or an exec's Env removes the variable (the engine's rule for
// `docker run -e NAME` when NAME is not set), the image's value with it. So each of
// those containers names every variable of the image it does not set itself: its
// programs start with only what devsandbox gives them, and the engine's own (PATH
// when nothing sets one, HOSTNAME, HOME). The command's environment keeps the image's
// ENV as documented: the init gives it back to the command (wire.Manifest.ImageEnv).

// unsetImageEnv returns env with, added, the name alone of each variable of image
// (the image's ENV) that env does not set. Pure.
func unsetImageEnv(image, env []string) []string {
	out := slices.Clone(env)
	for _, kv := range image {
		k, _, _ := strings.Cut(kv, "=")
		if k != "" && !setsVar(env, k) {
			out = append(out, k)
		}
	}
	if out == nil {
		out = []string{}
	}
	return out
}

// imageEnvFor returns the variables of image (the image's ENV) that env does not
// set, as "NAME=value": what the init gives back to the command. Pure.
func imageEnvFor(image, env []string) []string {
	var out []string
	for _, kv := range image {
		k, _, ok := strings.Cut(kv, "=")
		if ok && k != "" && !setsVar(env, k) {
			out = append(out, kv)
		}
	}
	return out
}

// setsVar reports whether env has an entry for the variable k.
func setsVar(env []string, k string) bool {
	for _, kv := range env {
		if name, _, _ := strings.Cut(kv, "="); name == k {
			return true
		}
	}
	return false
}
