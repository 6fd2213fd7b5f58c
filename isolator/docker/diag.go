package docker

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/devsandbox/devsandbox/isolator"
	"github.com/devsandbox/devsandbox/isolator/docker/engineaddr"
)

// Diagnose implements isolator.Diagnoser: the engine answers, its API version, the
// default image is present, rootless or not.
func (b *Isolator) Diagnose(ctx context.Context) []isolator.Check {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	var rows []isolator.Check
	ok := func(name, detail string) {
		rows = append(rows, isolator.Check{Name: name, Status: isolator.Status{State: isolator.Active}, Detail: detail})
	}
	bad := func(name, reason, fix string) {
		rows = append(rows, isolator.Check{Name: name, Status: isolator.Status{State: isolator.Unavailable, Reason: reason, Fix: fix}})
	}
	if b.dial == nil {
		// A refused address (an ssh:// DOCKER_HOST or context) in Check's words.
		if _, err := b.address(); err != nil {
			bad("docker engine", err.Error(), addressFix)
			return rows
		}
	}
	e, a, err := b.engine()
	if err != nil {
		bad("docker engine", err.Error(), dialFix(err))
		return rows
	}
	defer e.Close()
	v, err := e.ServerVersion(ctx)
	if err != nil {
		st := engineDown(a, err)
		bad("docker engine", st.Reason, st.Fix)
		return rows
	}
	ok("docker engine", fmt.Sprintf("%s (%s), Docker %s %s/%s; reached over %s", a.Host, a.Origin, v.Version, v.Os, v.Arch, a.Describe()))
	if ch := a.Channel(); ch == engineaddr.Clear || ch == engineaddr.ClearLoopback {
		reason := "plain TCP: what devsandbox sends the engine (the project's files, the sandbox's input and output) crosses unencrypted, and whoever reaches " + a.Host + " controls the engine"
		if ch == engineaddr.Clear {
			reason += "; a run that would send a secret, a variable taken for a credential (env.passthrough or env.set: by its name or its value's form), a proxy credential or the ssh agent is refused, and so is one that would send, as the content of a project file (.git/config and the files it includes, .envrc and the other files host tools run), a setting taken for a credential"
		}
		rows = append(rows, isolator.Check{Name: "docker engine channel", Status: isolator.Status{State: isolator.Warning, Reason: reason, Fix: engineaddr.ClearFix}})
	}
	if apiBefore(v.APIVersion, MinAPI) {
		bad("docker API version", fmt.Sprintf("the engine speaks API %s, older than %s", v.APIVersion, MinAPI), "upgrade Docker to 20.10 or newer")
	} else {
		ok("docker API version", fmt.Sprintf("engine %s (minimum %s); devsandbox uses no feature newer than %s", v.APIVersion, v.MinAPIVersion, MinAPI))
	}
	if _, err := e.ImageInspect(ctx, b.Image); err != nil {
		bad("docker image", fmt.Sprintf("%s is not on the engine", b.Image), imageFix)
	} else {
		ok("docker image", b.Image)
	}
	if info, err := e.Info(ctx); err == nil {
		rootless := false
		for _, o := range info.SecurityOptions {
			if strings.Contains(o, "name=rootless") {
				rootless = true
			}
		}
		if rootless {
			ok("docker rootless", "rootless engine")
		} else {
			ok("docker rootless", "no: a rootful engine (access to it is root-equivalent)")
		}
	}
	return rows
}
