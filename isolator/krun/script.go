package krun

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	spec "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/devsandbox/devsandbox/internal/termsafe"
	"github.com/devsandbox/devsandbox/isolator/container"
	"github.com/devsandbox/devsandbox/isolator/sandboxinit/wire"
)

// writeRlimits says what a launch sets each rlimit to that set (the spec's, printed
// as --ulimit) does not: a launch gives the container every rlimit, so that a
// containers.conf's default_ulimits add none, and a rendering does not read the
// host's limits or the service's (the script is the same on every machine).
func writeRlimits(b *strings.Builder, set []spec.POSIXRlimit) {
	has := func(name string) bool {
		return slices.ContainsFunc(set, func(r spec.POSIXRlimit) bool { return rlimitName(r.Type) == name })
	}
	var rest []string
	for name := range rlimitInfos {
		if !has(name) && name != "nofile" {
			rest = append(rest, name)
		}
	}
	if len(rest) == 0 && has("nofile") {
		return
	}
	sort.Strings(rest)
	b.WriteString("# rlimits: a launch sets every one (a containers.conf's default_ulimits add none); besides the --ulimit flags below:\n")
	if !has("nofile") {
		b.WriteString("#   nofile: your hard limit of open files at launch (ulimit -Hn)\n")
	}
	if len(rest) > 0 {
		fmt.Fprintf(b, "#   %s: the podman service's own (its /proc/PID/limits, read at launch), which it can give\n", strings.Join(rest, ", "))
	}
}

// Script renders the spec as the podman CLI command people can read and run. Secret
// and passed-through values appear as names only (see package container). devsandbox
// itself talks to podman's API and adds --framed, which makes the init read secrets,
// input, window sizes and signals from its stdin protocol.
func (s *Spec) Script() string {
	var b strings.Builder
	g, l := s.Gen, s.Layout
	b.WriteString("# devsandbox drives podman's API; this is the equivalent podman CLI invocation.\n")
	b.WriteString(s.Reserve)
	if g.OCIRuntime != "runc" {
		fmt.Fprintf(&b, "# the runtime %s boots a libkrun microVM: %s vCPUs, %s MiB (also in %s)\n", g.OCIRuntime, g.Annotations[CPUsAnnotation], g.Annotations[RAMAnnotation], VMConfigPath)
	}
	switch {
	case g.SeccompProfilePath != "":
		fmt.Fprintf(&b, "# the syscall policy (%s) as a seccomp profile: %s\n", s.Policy, g.SeccompProfilePath)
	case l.Manifest.Seccomp != nil:
		fmt.Fprintf(&b, "# the syscall policy (%s): loaded by devsandbox-init in the VM\n", s.Policy)
	}
	container.WriteSecretComments(&b, l.Secrets)
	if len(s.ByPath) > 0 {
		b.WriteString("# bound by path here so that this runs as printed; a launch never does: it opens each\n# where no symbolic link is followed, checks it, and has podman bind what it opened\n# (devsandbox-krun stage-anchors), since a concurrent session can swap these for a link:\n")
		for _, p := range s.ByPath {
			fmt.Fprintf(&b, "#   %s\n", termsafe.Line(p))
		}
	}
	l.WriteHostFiles(&b)
	l.WriteMountPoints(&b, container.MadeBySubUID)
	writeRlimits(&b, g.Rlimits)
	w := container.NewArgWriter(&b)
	w.Word("podman", "run", "--rm", "-i")
	w.Flag("--runtime", g.OCIRuntime)
	w.Flag("--userns", string(g.UserNS.NSMode))
	w.Flag("--user", g.User)
	w.Flag("--workdir", g.WorkDir)
	w.Flag("--hostname", g.Hostname)
	net := string(g.NetNS.NSMode)
	if net == "" || net == "default" {
		net = "slirp4netns"
	}
	w.Flag("--network", net)
	w.Word("--read-only")
	w.Flag("--passwd=false")
	for _, c := range g.CapDrop {
		w.Flag("--cap-drop", c)
	}
	w.Flag("--security-opt", "no-new-privileges")
	if g.SeccompProfilePath != "" {
		w.Flag("--security-opt", "seccomp="+g.SeccompProfilePath)
	}
	if r := g.ResourceLimits; r != nil {
		if r.Memory != nil && r.Memory.Limit != nil {
			w.Flag("--memory", fmt.Sprint(*r.Memory.Limit))
			w.Flag("--memory-swap", fmt.Sprint(*r.Memory.Swap))
		}
		if r.CPU != nil && r.CPU.Quota != nil {
			w.Flag("--cpus", fmt.Sprintf("%g", float64(*r.CPU.Quota)/float64(*r.CPU.Period)))
		}
	}
	for _, r := range g.Rlimits {
		w.Flag("--ulimit", fmt.Sprintf("%s=%s:%s", r.Type, ulimitValue(r.Soft), ulimitValue(r.Hard)))
	}
	for _, d := range g.Devices {
		w.Flag("--device", d.Path)
	}
	for _, m := range g.Mounts {
		if m.Type == "tmpfs" {
			w.Flag("--tmpfs", m.Destination+":"+strings.Join(m.Options, ","))
			continue
		}
		w.Flag("--mount", mountFlag(m))
	}
	for _, k := range sortedKeys(g.Annotations) {
		w.Flag("--annotation", k+"="+g.Annotations[k])
	}
	for _, k := range sortedKeys(g.Labels) {
		w.Flag("--label", k+"="+g.Labels[k])
	}
	l.WriteEnv(w)
	w.Flag("-e", wire.ManifestEnv+"="+g.Env[wire.ManifestEnv])
	w.Flag("--entrypoint", InitPath)
	w.Word(append([]string{g.Image}, container.PlainArgs(g.Command)...)...)
	b.WriteString("\n")
	s.firewallScript(&b)
	return b.String()
}

// firewallScript writes the egress calls as comments: they need the running
// container's namespaces as descriptors, which a shell line cannot name portably.
func (s *Spec) firewallScript(b *strings.Builder) {
	if len(s.Firewall) == 0 {
		return
	}
	fmt.Fprintf(b, "# egress allowlist: once the container runs, and before its init gets the go (the hello frame),\n")
	fmt.Fprintf(b, "# devsandbox applies the rules from the host in the container's network namespace: descriptor %d\n", netNSFD)
	fmt.Fprintf(b, "# is /proc/PID/ns/net (PID: podman inspect --format '{{.State.Pid}}'), descriptor %d the user namespace\n", userNSFD)
	fmt.Fprintf(b, "# that owns it (ioctl NS_GET_USERNS), whose root may change its firewall; a failed call removes the\n")
	fmt.Fprintf(b, "# container. Run by hand, the command above gets no rules: under runc its init's egress check then\n")
	fmt.Fprintf(b, "# fails (125); in a microVM nothing inside can check them.\n")
	for _, c := range s.Firewall {
		line := "# " + termsafe.Line(strings.Join(c.Argv, " "))
		if c.Stdin == "" {
			b.WriteString(line + "\n")
			continue
		}
		b.WriteString(line + " <<'EOF'\n")
		for _, l := range strings.Split(strings.TrimSuffix(c.Stdin, "\n"), "\n") {
			b.WriteString("#   " + l + "\n")
		}
		b.WriteString("# EOF\n")
	}
}

func sortedKeys(m map[string]string) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

func mountFlag(m spec.Mount) string {
	parts := []string{"type=" + m.Type, "src=" + m.Source, "dst=" + m.Destination}
	for _, o := range m.Options {
		if o != "rw" && o != "rbind" {
			parts = append(parts, o)
		}
	}
	return strings.Join(parts, ",")
}

// ulimitValue is an rlimit value as podman's --ulimit takes it: -1 for unlimited.
func ulimitValue(v uint64) string {
	if v == unlimited {
		return "-1"
	}
	return fmt.Sprint(v)
}
