package krun

import (
	"fmt"
	"path/filepath"
	"sort"
	"strings"

	spec "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/devsandbox/devsandbox/isolator/shim/wire"
)

// Script renders the spec as the podman CLI command people can read and run. Secret
// and passed-through values appear as names only: `-e NAME` takes the value from the
// caller's environment, and secret files are read from their host source by the
// shell. devsandbox itself talks to podman's API and adds --framed, which makes the
// init read secrets, input, window sizes and signals from its stdin protocol.
func (s *Spec) Script() string {
	var b strings.Builder
	g := s.Gen
	b.WriteString("# devsandbox drives podman's API; this is the equivalent podman CLI invocation.\n")
	if g.OCIRuntime != "runc" {
		fmt.Fprintf(&b, "# the runtime %s boots a libkrun microVM: %s vCPUs, %s MiB (also in %s)\n", g.OCIRuntime, g.Annotations[CPUsAnnotation], g.Annotations[RAMAnnotation], VMConfigPath)
	}
	switch {
	case g.SeccompProfilePath != "":
		fmt.Fprintf(&b, "# the syscall policy (%s) as a seccomp profile: %s\n", s.Policy, g.SeccompProfilePath)
	case s.Manifest != nil && s.Manifest.Seccomp != nil:
		fmt.Fprintf(&b, "# the syscall policy (%s): loaded by devsandbox-init in the VM\n", s.Policy)
	}
	for _, sec := range s.Secrets {
		switch {
		case !sec.AsFile:
			fmt.Fprintf(&b, "# secret %s: environment, from the host variable %s\n", sec.Name, sec.EnvSource)
		case sec.FileSource != "":
			fmt.Fprintf(&b, "# secret %s: file /run/secrets/%s (0400, tmpfs), from the host file %s\n", sec.Name, sec.Name, sec.FileSource)
		default:
			fmt.Fprintf(&b, "# secret %s: file /run/secrets/%s (0400, tmpfs), from the host variable %s\n", sec.Name, sec.Name, sec.EnvSource)
		}
	}
	b.WriteString("# host files the container binds (not secret):\n")
	for _, d := range s.Dirs {
		fmt.Fprintf(&b, "mkdir -p -m 0700 %s\n", shellQuote(d))
	}
	if s.EmptyFile != "" {
		fmt.Fprintf(&b, "test -e %s || install -D -m 0444 /dev/null %s\n", shellQuote(s.EmptyFile), shellQuote(s.EmptyFile))
	}
	for _, f := range s.Files {
		fmt.Fprintf(&b, "test -e %s || { mkdir -p -m 0700 %s && printf %%s %s > %s; }\n", shellQuote(f.Path), shellQuote(filepath.Dir(f.Path)), shellQuote(string(f.Content)), shellQuote(f.Path))
	}
	w := &argWriter{b: &b}
	w.word("podman", "run", "--rm", "-i")
	w.flag("--runtime", g.OCIRuntime)
	w.flag("--userns", string(g.UserNS.NSMode))
	w.flag("--user", g.User)
	w.flag("--workdir", g.WorkDir)
	w.flag("--hostname", g.Hostname)
	net := string(g.NetNS.NSMode)
	if net == "" || net == "default" {
		net = "slirp4netns"
	}
	w.flag("--network", net)
	w.word("--read-only")
	w.flag("--passwd=false")
	for _, c := range g.CapDrop {
		w.flag("--cap-drop", c)
	}
	w.flag("--security-opt", "no-new-privileges")
	if g.SeccompProfilePath != "" {
		w.flag("--security-opt", "seccomp="+g.SeccompProfilePath)
	}
	if r := g.ResourceLimits; r != nil {
		if r.Memory != nil && r.Memory.Limit != nil {
			w.flag("--memory", fmt.Sprint(*r.Memory.Limit))
			w.flag("--memory-swap", fmt.Sprint(*r.Memory.Swap))
		}
		if r.CPU != nil && r.CPU.Quota != nil {
			w.flag("--cpus", fmt.Sprintf("%g", float64(*r.CPU.Quota)/float64(*r.CPU.Period)))
		}
	}
	for _, r := range g.Rlimits {
		w.flag("--ulimit", fmt.Sprintf("%s=%d:%d", r.Type, r.Soft, r.Hard))
	}
	for _, d := range g.Devices {
		w.flag("--device", d.Path)
	}
	for _, m := range g.Mounts {
		if m.Type == "tmpfs" {
			w.flag("--tmpfs", m.Destination+":"+strings.Join(m.Options, ","))
			continue
		}
		w.flag("--mount", mountFlag(m))
	}
	for _, k := range sortedKeys(g.Annotations) {
		w.flag("--annotation", k+"="+g.Annotations[k])
	}
	for _, k := range sortedKeys(g.Labels) {
		w.flag("--label", k+"="+g.Labels[k])
	}
	for _, e := range s.Env {
		if e.FromHost {
			w.flag("-e", e.Name)
		} else {
			w.flag("-e", e.Name+"="+e.Value)
		}
	}
	for _, sec := range s.Secrets {
		switch {
		case !sec.AsFile && sec.EnvSource == sec.Name:
			w.flag("-e", sec.Name)
		case !sec.AsFile:
			w.raw("-e", sec.Name+`="$`+sec.EnvSource+`"`)
		case sec.FileSource != "":
			w.raw("-e", wire.SecretFileEnvPrefix+sec.Name+`="$(base64 -w0 < `+shellQuote(sec.FileSource)+`)"`)
		default:
			w.raw("-e", wire.SecretFileEnvPrefix+sec.Name+`="$(printf %s "$`+sec.EnvSource+`" | base64 -w0)"`)
		}
	}
	w.flag("-e", wire.ManifestEnv+"="+g.Env[wire.ManifestEnv])
	w.flag("--entrypoint", InitPath)
	var cmd []string
	for _, a := range g.Command {
		if a != "--framed" { // a hand-run command has no one speaking the protocol
			cmd = append(cmd, a)
		}
	}
	w.word(append([]string{g.Image}, cmd...)...)
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
		line := "# " + strings.Join(c.Argv, " ")
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

// argWriter writes a shell command line, one flag per continuation line.
type argWriter struct {
	b *strings.Builder
	n int
}

func (w *argWriter) sep(newline bool) {
	if w.n > 0 {
		if newline {
			w.b.WriteString(" \\\n  ")
		} else {
			w.b.WriteByte(' ')
		}
	}
	w.n++
}

func (w *argWriter) word(words ...string) {
	for i, s := range words {
		w.sep(i == 0)
		w.b.WriteString(shellQuote(s))
	}
}

func (w *argWriter) flag(name string, values ...string) {
	if len(values) == 0 {
		w.sep(true)
		w.b.WriteString(name)
	}
	for _, v := range values {
		w.sep(true)
		w.b.WriteString(name + " " + shellQuote(v))
	}
}

// raw writes a flag whose value is shell syntax to be expanded, not quoted.
func (w *argWriter) raw(name, value string) {
	w.sep(true)
	w.b.WriteString(name + " " + value)
}

// shellQuote quotes s for a POSIX shell when it needs it.
func shellQuote(s string) string {
	if s == "" {
		return "''"
	}
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_./:=@%+,", r)) {
			return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
		}
	}
	return s
}
