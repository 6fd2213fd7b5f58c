package docker

import (
	"fmt"
	"path/filepath"
	"sort"
	"strings"

	"github.com/docker/docker/api/types/mount"

	"github.com/devsandbox/devsandbox/isolator/shim/wire"
)

// Script renders the spec as docker CLI commands people can read and run: `docker
// run` (with keep_container, `docker run -d` for the kept container and `docker exec`
// for the command). Secret and passed-through values appear as names only: `-e NAME`
// takes the value from the caller's environment, and secret files are read from
// their host source by the shell. devsandbox itself talks to the Engine API and adds
// --framed, which makes the init read secrets, input, window sizes and signals from
// its stdin protocol instead.
func (s *Spec) Script() string {
	var b strings.Builder
	b.WriteString("# devsandbox drives the Engine API; this is the equivalent docker CLI invocation.\n")
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
		if f.InPlace {
			fmt.Fprintf(&b, "mkdir -p -m 0700 %s && printf %%s %s > %s\n", shellQuote(filepath.Dir(f.Path)), shellQuote(string(f.Content)), shellQuote(f.Path))
			continue
		}
		fmt.Fprintf(&b, "test -e %s || { mkdir -p -m 0700 %s && printf %%s %s > %s; }\n", shellQuote(f.Path), shellQuote(filepath.Dir(f.Path)), shellQuote(string(f.Content)), shellQuote(f.Path))
	}
	if f := s.Profile; f != nil {
		fmt.Fprintf(&b, "# the syscall policy (%s) as a seccomp profile (the engine gets it in the request):\n", s.Policy)
		fmt.Fprintf(&b, "test -e %s || { mkdir -p -m 0700 %s && printf %%s %s > %s; }\n", shellQuote(f.Path), shellQuote(filepath.Dir(f.Path)), shellQuote(string(f.Content)), shellQuote(f.Path))
	}
	if s.FirewallArg != "" {
		b.WriteString("# egress allowlist: once the container runs, and before its init starts the command, a helper\n")
		b.WriteString("# container joins its network namespace and applies the rules (devsandbox-init speaks netlink):\n")
		name := s.Name
		if name == "" {
			name = "CONTAINER"
		}
		fmt.Fprintf(&b, "#   docker run --rm --network container:%s --user 0:0 --cap-drop ALL --cap-add NET_ADMIN \\\n", name)
		fmt.Fprintf(&b, "#     --mount type=bind,src=%s,dst=%s,readonly --entrypoint %s %s \\\n", shellQuote(s.initSource()), InitPath, InitPath, s.Config.Image)
		fmt.Fprintf(&b, "#     %s\n", shellQuote(s.FirewallArg))
	}
	w := &argWriter{b: &b}
	if s.Exec == nil {
		w.word("docker", "run", "--rm", "-i")
		if s.TTY {
			w.word("-t")
		}
		s.containerFlags(w)
		s.envFlags(w, true)
		w.flag("--entrypoint", InitPath)
		w.word(append([]string{s.Config.Image}, plainCmd(s.Config.Cmd)...)...)
		b.WriteString("\n")
		return b.String()
	}
	b.WriteString("# the kept container (created once, reused while its spec is unchanged):\n")
	w.word("docker", "run", "-d")
	w.flag("--name", s.Name)
	s.containerFlags(w)
	w.flag("-e", s.Config.Env...)
	w.flag("--entrypoint", InitPath)
	w.word(append([]string{s.Config.Image}, plainCmd(s.Config.Cmd)...)...)
	b.WriteString("\n# each run:\n")
	w = &argWriter{b: &b}
	w.word("docker", "exec", "-i")
	if s.TTY {
		w.word("-t")
	}
	w.flag("--user", s.Exec.User)
	w.flag("--workdir", s.Exec.WorkingDir)
	s.envFlags(w, false)
	for _, e := range s.Exec.Env {
		if strings.HasPrefix(e, wire.ManifestEnv+"=") {
			w.flag("-e", e)
		}
	}
	w.word(append([]string{s.Name}, plainCmd(s.Exec.Cmd)...)...)
	b.WriteString("\n")
	return b.String()
}

func (s *Spec) containerFlags(w *argWriter) {
	c, h := s.Config, s.Host
	w.flag("--user", c.User)
	w.flag("--workdir", c.WorkingDir)
	w.flag("--hostname", c.Hostname)
	w.flag("--network", string(h.NetworkMode))
	if h.ReadonlyRootfs {
		w.word("--read-only")
	}
	for _, cp := range h.CapDrop {
		w.flag("--cap-drop", cp)
	}
	for _, o := range h.SecurityOpt {
		if strings.HasPrefix(o, "seccomp=") && s.Profile != nil {
			o = "seccomp=" + s.Profile.Path // the CLI reads the profile from a file
		}
		w.flag("--security-opt", o)
	}
	if h.PidsLimit != nil {
		w.flag("--pids-limit", fmt.Sprint(*h.PidsLimit))
	}
	if h.NanoCPUs > 0 {
		w.flag("--cpus", fmt.Sprintf("%g", float64(h.NanoCPUs)/1e9))
	}
	if h.Memory > 0 {
		w.flag("--memory", fmt.Sprint(h.Memory))
	}
	if h.MemorySwap > 0 {
		w.flag("--memory-swap", fmt.Sprint(h.MemorySwap))
	}
	keys := make([]string, 0, len(h.Tmpfs))
	for k := range h.Tmpfs {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		w.flag("--tmpfs", k+":"+h.Tmpfs[k])
	}
	for _, m := range h.Mounts {
		w.flag("--mount", mountFlag(m))
	}
	lk := make([]string, 0, len(c.Labels))
	for k := range c.Labels {
		lk = append(lk, k)
	}
	sort.Strings(lk)
	for _, k := range lk {
		w.flag("--label", k+"="+c.Labels[k])
	}
}

// envFlags writes the command's environment and secrets; withManifest adds the
// init's manifest (a one-shot container carries everything).
func (s *Spec) envFlags(w *argWriter, withManifest bool) {
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
	if withManifest {
		for _, e := range s.Config.Env {
			if strings.HasPrefix(e, wire.ManifestEnv+"=") {
				w.flag("-e", e)
			}
		}
	}
}

func mountFlag(m mount.Mount) string {
	parts := []string{"type=" + string(m.Type)}
	if m.Source != "" {
		parts = append(parts, "src="+m.Source)
	}
	parts = append(parts, "dst="+m.Target)
	if m.ReadOnly {
		parts = append(parts, "readonly")
	}
	if o := m.TmpfsOptions; o != nil {
		if o.SizeBytes > 0 {
			parts = append(parts, fmt.Sprintf("tmpfs-size=%d", o.SizeBytes))
		}
		if o.Mode != 0 {
			parts = append(parts, fmt.Sprintf("tmpfs-mode=%o", o.Mode))
		}
	}
	return strings.Join(parts, ",")
}

// initSource is the host path of the init the container binds.
func (s *Spec) initSource() string {
	for _, m := range s.Host.Mounts {
		if m.Target == InitPath {
			return m.Source
		}
	}
	return ""
}

// plainCmd drops --framed: a hand-run command has no one speaking the protocol.
func plainCmd(cmd []string) []string {
	var out []string
	for _, a := range cmd {
		if a != "--framed" {
			out = append(out, a)
		}
	}
	return out
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

// word writes words on one line, starting a continuation line unless it is the first.
func (w *argWriter) word(words ...string) {
	for i, s := range words {
		w.sep(i == 0)
		w.b.WriteString(shellQuote(s))
	}
}

func (w *argWriter) flag(name string, values ...string) {
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
	safe := true
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_./:=@%+,", r)) {
			safe = false
			break
		}
	}
	if safe {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
