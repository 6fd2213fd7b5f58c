package docker

import (
	"fmt"
	"path"
	"sort"
	"strings"

	"github.com/docker/docker/api/types/mount"

	"github.com/devsandbox/devsandbox/internal/sh"
	"github.com/devsandbox/devsandbox/internal/termsafe"
	"github.com/devsandbox/devsandbox/isolator/container"
	"github.com/devsandbox/devsandbox/isolator/sandboxinit/wire"
)

// Script renders the spec as docker CLI commands people can read and run: `docker
// run` (with keep_container, `docker run -d` for the kept container and `docker exec`
// for the command). Secret and passed-through values appear as names only (see
// package container). devsandbox itself talks to the Engine API and adds --framed,
// which makes the init read secrets, input, window sizes and signals from its stdin
// protocol instead.
func (s *Spec) Script() string {
	var b strings.Builder
	l := s.Layout
	b.WriteString("# devsandbox drives the Engine API; this is the equivalent docker CLI invocation.\n")
	b.WriteString(s.Reserve)
	if len(s.ByPath) > 0 {
		b.WriteString("# run by hand, it binds these by path, which a launch never does (a concurrent session could swap\n")
		b.WriteString("# one for a link): a launch mounts each directory as a sub-path of a volume of the directory it lies\n")
		b.WriteString("# in (API " + SubpathAPI + ", Docker 26), or on an older engine on this host from the one it opened\n")
		b.WriteString("# (volume-opt=device=/proc/<pid>/fd/<N>); an older engine elsewhere gets a read-only one as content\n")
		b.WriteString("# and refuses a writable one; a file goes as the content read through its descriptor:\n")
		for _, p := range s.ByPath {
			fmt.Fprintf(&b, "#   %s\n", termsafe.Line(p))
		}
	}
	container.WriteSecretComments(&b, l.Secrets)
	s.writeDerived(&b)
	l.WriteHostFiles(&b)
	l.WriteMountPoints(&b, container.MadeByRoot)
	s.writeAnchorVolumes(&b)
	if f := s.Profile; f != nil {
		fmt.Fprintf(&b, "# the syscall policy (%s) as a seccomp profile (the engine gets it in the request):\n", s.Policy)
		container.WriteHostFile(&b, *f)
	}
	if s.FirewallArg != "" {
		b.WriteString("# egress allowlist: once the container runs, and before its init starts the command, a helper\n")
		b.WriteString("# container joins its network namespace and applies the rules (devsandbox-init speaks netlink):\n")
		name := s.Name
		if name == "" {
			name = "CONTAINER"
		}
		fmt.Fprintf(&b, "#   docker run --rm --network container:%s --user 0:0 --cap-drop ALL --cap-add NET_ADMIN --no-healthcheck \\\n", name)
		if src := s.initSource(); src != "" {
			fmt.Fprintf(&b, "#     --mount type=bind,src=%s,dst=%s,readonly --entrypoint %s %s \\\n", sh.Quote(src), InitPath, InitPath, s.Config.Image)
		} else {
			fmt.Fprintf(&b, "#     --entrypoint %s %s \\\n", InitPath, s.derivedName())
		}
		fmt.Fprintf(&b, "#     %s\n", sh.Quote(s.FirewallArg))
	}
	if s.Config.NetworkDisabled {
		b.WriteString("# no network: a launch creates the container with the API's NetworkDisabled, which the docker CLI\n")
		b.WriteString("# cannot set; the engine then runs no network hook at its start and writes no /etc/hosts (the bind of\n")
		b.WriteString("# devsandbox's, with the loopback's names, is it) nor /etc/resolv.conf. --network none below is the\n")
		b.WriteString("# same namespace, loopback only, at the cost of the engine's hook, and with its /etc/resolv.conf.\n")
	}
	if s.AgentSocket != "" {
		name := s.Name
		if name == "" {
			name = "CONTAINER"
		}
		b.WriteString("# the ssh agent: once the container runs, and before its init starts the command, an exec serves\n")
		b.WriteString("# SSH_AUTH_SOCK and carries its connections over its stdin and stdout to devsandbox's filter:\n")
		x := agentExec(s.AgentSocket, s.agentUser)
		fmt.Fprintf(&b, "#   docker exec -i --user %s %s %s\n", x.User, name, sh.Join(x.Cmd))
	}
	w := container.NewArgWriter(&b)
	if s.Exec == nil {
		w.Word("docker", "run", "--rm", "-i")
		if l.TTY {
			w.Word("-t")
		}
		s.containerFlags(w)
		l.WriteEnv(w)
		s.manifestFlag(w, s.Config.Env)
		w.Flag("--entrypoint", InitPath)
		s.imageWords(w, container.PlainArgs(s.Config.Cmd))
		b.WriteString("\n")
		s.writeCleanup(&b)
		return b.String()
	}
	b.WriteString("# the kept container (created once, reused while its spec is unchanged):\n")
	w.Word("docker", "run", "-d")
	w.Flag("--name", s.Name)
	s.containerFlags(w)
	w.Flag("-e", s.Config.Env...)
	w.Flag("--entrypoint", InitPath)
	s.imageWords(w, container.PlainArgs(s.Config.Cmd))
	b.WriteString("\n# each run:\n")
	w = container.NewArgWriter(&b)
	w.Word("docker", "exec", "-i")
	if l.TTY {
		w.Word("-t")
	}
	w.Flag("--user", s.Exec.User)
	w.Flag("--workdir", s.Exec.WorkingDir)
	l.WriteEnv(w)
	s.manifestFlag(w, s.Exec.Env)
	w.Word(append([]string{s.Name}, container.PlainArgs(s.Exec.Cmd)...)...)
	b.WriteString("\n")
	return b.String()
}

// manifestFlag writes the init's manifest among env.
func (s *Spec) manifestFlag(w *container.ArgWriter, env []string) {
	for _, e := range env {
		if strings.HasPrefix(e, wire.ManifestEnv+"=") {
			w.Flag("-e", e)
		}
	}
}

func (s *Spec) containerFlags(w *container.ArgWriter) {
	c, h := s.Config, s.Host
	w.Flag("--user", c.User)
	w.Flag("--workdir", c.WorkingDir)
	w.Flag("--hostname", c.Hostname)
	w.Flag("--network", string(h.NetworkMode))
	if h.ReadonlyRootfs {
		w.Word("--read-only")
	}
	if hc := c.Healthcheck; hc != nil && len(hc.Test) == 1 && hc.Test[0] == "NONE" {
		w.Word("--no-healthcheck") // the image's is a command run outside the init
	}
	for _, cp := range h.CapDrop {
		w.Flag("--cap-drop", cp)
	}
	for _, o := range h.SecurityOpt {
		if strings.HasPrefix(o, "seccomp=") && s.Profile != nil {
			o = "seccomp=" + s.Profile.Path // the CLI reads the profile from a file
		}
		w.Flag("--security-opt", o)
	}
	if h.PidsLimit != nil {
		w.Flag("--pids-limit", fmt.Sprint(*h.PidsLimit))
	}
	if h.NanoCPUs > 0 {
		w.Flag("--cpus", fmt.Sprintf("%g", float64(h.NanoCPUs)/1e9))
	}
	if h.Memory > 0 {
		w.Flag("--memory", fmt.Sprint(h.Memory))
	}
	if h.MemorySwap > 0 {
		w.Flag("--memory-swap", fmt.Sprint(h.MemorySwap))
	}
	keys := make([]string, 0, len(h.Tmpfs))
	for k := range h.Tmpfs {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		w.Flag("--tmpfs", k+":"+h.Tmpfs[k])
	}
	for _, m := range h.Mounts {
		w.Flag("--mount", mountFlag(m))
	}
	for _, x := range h.ExtraHosts {
		w.Flag("--add-host", x)
	}
	lk := make([]string, 0, len(c.Labels))
	for k := range c.Labels {
		lk = append(lk, k)
	}
	sort.Strings(lk)
	for _, k := range lk {
		w.Flag("--label", k+"="+c.Labels[k])
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
	if o := m.VolumeOptions; o != nil {
		if o.NoCopy {
			parts = append(parts, "volume-nocopy")
		}
		if o.Subpath != "" {
			parts = append(parts, "volume-subpath="+o.Subpath)
		}
		lk := make([]string, 0, len(o.Labels))
		for k := range o.Labels {
			lk = append(lk, k)
		}
		sort.Strings(lk)
		for _, k := range lk {
			parts = append(parts, "volume-label="+k+"="+o.Labels[k])
		}
		if d := o.DriverConfig; d != nil {
			parts = append(parts, "volume-driver="+d.Name)
			keys := make([]string, 0, len(d.Options))
			for k := range d.Options {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			for _, k := range keys {
				opt := "volume-opt=" + k + "=" + d.Options[k]
				if strings.ContainsAny(opt, ",\"") {
					// --mount is CSV: a comma in a value (o=bind,ro) is quoted.
					opt = `"` + strings.ReplaceAll(opt, `"`, `""`) + `"`
				}
				parts = append(parts, opt)
			}
		}
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

// derivedName is how the script names the image the containers run: docker.image
// itself, or the image derived from it.
func (s *Spec) derivedName() string {
	if s.Layout.ImageFiles == nil {
		return s.Config.Image
	}
	return `"$DERIVED_IMAGE"`
}

// imageWords writes the image the container runs and its command.
func (s *Spec) imageWords(w *container.ArgWriter, cmd []string) {
	if s.Layout.ImageFiles == nil {
		w.Word(append([]string{s.Config.Image}, cmd...)...)
		return
	}
	q := make([]string, len(cmd))
	for i, c := range cmd {
		q[i] = sh.Quote(c)
	}
	w.Raw(s.derivedName(), strings.Join(q, " "))
}

// writeCleanup removes, once the one-shot container is gone, the image writeDerived
// made by hand and the session's endpoint volume, which `docker run` made (a run
// removes its own: left, the engine keeps it, unlabelled, where no sweep or prune
// finds it); the script's status stays the container's.
func (s *Spec) writeCleanup(b *strings.Builder) {
	ep := s.sessionEndpointVolume()
	if s.Layout.ImageFiles == nil && ep == "" {
		return
	}
	b.WriteString("status=$?\n")
	if s.Layout.ImageFiles != nil {
		b.WriteString("docker rmi \"$DERIVED_IMAGE\" >/dev/null\n")
	}
	if ep != "" {
		fmt.Fprintf(b, "docker volume rm %s >/dev/null\n", sh.Quote(ep))
	}
	b.WriteString("exit $status\n")
}

// sessionEndpointVolume is the session's endpoint volume a one-shot container mounts,
// "" without one.
func (s *Spec) sessionEndpointVolume() string {
	for _, m := range s.Host.Mounts {
		if m.Type == mount.TypeVolume && m.Target == container.EndpointDir {
			return m.Source
		}
	}
	return ""
}

// writeDerived says what the image derived from docker.image carries and how it is
// made: once per engine, base image and devsandbox build, used by its ID.
func (s *Spec) writeDerived(b *strings.Builder) {
	l := s.Layout
	if l.ImageFiles == nil {
		return
	}
	fmt.Fprintf(b, "# the containers run $DERIVED_IMAGE: %s with devsandbox's files added, root's, on the read-only root\n", s.Config.Image)
	b.WriteString("# (nothing of devsandbox's is bound from this host; devsandbox makes it once per engine, base image\n")
	b.WriteString("# and devsandbox build, labelled " + LabelBase + ", and uses it by its ID). A launch loads it: it\n")
	b.WriteString("# writes the image's config itself (the base's, with the init as entrypoint, no command, and these\n")
	b.WriteString("# labels) and one layer, the archive of the files below, and gives the engine both as `docker load`\n")
	b.WriteString("# takes them; so the image's ID, the config's digest, is known before the engine is asked, and an\n")
	b.WriteString("# image of that ID the engine has already is used, whoever made it. An engine that does not take\n")
	b.WriteString("# that load (one whose images are in containerd's store) gets it made as below, by a commit:\n")
	fmt.Fprintf(b, "#   %s  devsandbox-init (0555)\n", InitPath)
	fmt.Fprintf(b, "#   %s/%s  the egress companion's proxy (0555)\n", container.ShipDir, proxyName)
	for _, f := range l.ImageFiles {
		fmt.Fprintf(b, "#   %s  %d bytes (0444)\n", termsafe.Line(f.Path), len(f.Content))
	}
	b.WriteString("# made here by hand, by a commit: the same files and settings, another ID (devsandbox's own is kept):\n")
	top := map[string]bool{"run": true}
	fmt.Fprintf(b, "d=$(mktemp -d) && mkdir -p \"$d\"%s && cp %s \"$d\"%s && chmod 0555 \"$d\"%s\n",
		container.ShipDir, sh.Quote(s.InitHost), InitPath, InitPath)
	for _, f := range l.ImageFiles {
		top[strings.SplitN(strings.TrimPrefix(f.Path, "/"), "/", 2)[0]] = true
		fmt.Fprintf(b, "mkdir -p \"$d\"%s && %s && chmod 0444 \"$d\"%s\n",
			sh.Quote(path.Dir(f.Path)), container.Content(`"$d"`+sh.Quote(f.Path), f.Content, f.Parts), sh.Quote(f.Path))
	}
	tops := make([]string, 0, len(top))
	for t := range top {
		tops = append(tops, t)
	}
	sort.Strings(tops)
	b.WriteString("find \"$d\" -mindepth 1 -type d -exec chmod 0755 {} +\n")
	fmt.Fprintf(b, "id=$(docker create --network none --entrypoint %s %s) &&\n", InitPath, sh.Quote(s.Config.Image))
	fmt.Fprintf(b, "  tar -C \"$d\" -c --owner=0 --group=0 %s | docker cp - \"$id\":/ &&\n", strings.Join(tops, " "))
	b.WriteString("  DERIVED_IMAGE=$(docker commit \"$id\") && docker rm -v \"$id\" >/dev/null\n")
	if s.usesMask() {
		b.WriteString("# the source of file masks: an empty file in the engine's volume " + maskVolume + "\n")
		fmt.Fprintf(b, "docker volume create --label %s=mask %s >/dev/null && : > \"$d/%s\" && chmod 0444 \"$d/%s\" &&\n", LabelRole, maskVolume, maskFile, maskFile)
		fmt.Fprintf(b, "  id=$(docker create --network none --mount type=volume,src=%s,dst=/m --entrypoint %s %s) &&\n", maskVolume, InitPath, sh.Quote(s.Config.Image))
		fmt.Fprintf(b, "  tar -C \"$d\" -c --owner=0 --group=0 %s | docker cp - \"$id\":/m && docker rm -v \"$id\" >/dev/null\n", maskFile)
	}
	type volFile struct {
		f                     container.ImageFile
		name, role, mode, why string
		owner, group          string // tar's --owner and --group
	}
	var vfs []volFile
	uid, gid, _ := strings.Cut(l.User, ":") // a content file is the sandbox user's (contentvol.go)
	for _, f := range l.Contents {
		vfs = append(vfs, volFile{f, contentVolume(l.Labels[LabelName], f.Content, uid == "0"), roleContent, "0444", "a generated file below a mount", ":" + uid, ":" + gid})
	}
	for _, f := range l.Volatile {
		vfs = append(vfs, volFile{f, volatileVolume(l.Labels[LabelName], f.Path), roleVolatile, "0644", "the session's file, which each session's firewall helper rewrites in place", "0", "0"})
	}
	for _, v := range vfs {
		f, name := v.f, v.name
		fmt.Fprintf(b, "# %s: %s, in the engine's volume %s\n", termsafe.Line(f.Path), v.why, termsafe.Line(name))
		fmt.Fprintf(b, "docker volume create --label %s=%s --label %s=%s --label %s=%s --label %s=%s %s >/dev/null &&\n", LabelRole, v.role,
			LabelUser, s.Config.Labels[LabelUser], LabelProject, l.Labels[LabelProject], LabelName, sh.Quote(l.Labels[LabelName]), sh.Quote(name))
		// The previous volume's file, read-only, is in the way.
		fmt.Fprintf(b, "  rm -f \"$d/%s\" && %s && chmod %s \"$d/%s\" &&\n", contentFile, container.Content(`"$d/`+contentFile+`"`, f.Content, f.Parts), v.mode, contentFile)
		fmt.Fprintf(b, "  id=$(docker create --network none --mount type=volume,src=%s,dst=/m --entrypoint %s %s) &&\n", name, InitPath, sh.Quote(s.Config.Image))
		fmt.Fprintf(b, "  tar -C \"$d\" -c --owner=%s --group=%s %s | docker cp - \"$id\":/m && docker rm -v \"$id\" >/dev/null\n", v.owner, v.group, contentFile)
	}
	b.WriteString("rm -rf \"$d\"\n")
}

// usesMask reports whether a mount binds the engine's mask file.
func (s *Spec) usesMask() bool {
	for _, m := range s.Host.Mounts {
		if m.Type == mount.TypeBind && s.MaskSource != "" && m.Source == s.MaskSource {
			return true
		}
	}
	return false
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

// writeAnchorVolumes says how the anchors are mounted (anchorvol.go): the engine
// makes each top directory's volume from the mount's options when it is missing.
func (s *Spec) writeAnchorVolumes(b *strings.Builder) {
	if len(s.AnchorRoots) == 0 {
		return
	}
	b.WriteString("# directories a sandbox can write in are mounted as sub-paths of a volume of the directory they lie in,\n")
	b.WriteString("# which the engine opens without following a symlink out of it (API " + SubpathAPI + ", Docker 26; an older engine on\n")
	b.WriteString("# this host gets the directory devsandbox opened, as volume-opt=device=/proc/<pid>/fd/<n>; an older one\n")
	b.WriteString("# elsewhere gets a read-only one as content and refuses a writable one)\n")
}
