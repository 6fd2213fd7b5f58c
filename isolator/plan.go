package isolator

import (
	"bytes"
	"fmt"
	"path"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/devsandbox/devsandbox/egress"
	"github.com/devsandbox/devsandbox/syscalls"
)

// Plan is the backend-neutral description of one sandboxed run. It is pure data: every
// host fact a backend needs was probed when the Plan was built. Secret values are not
// held in the Plan; Secrets name where each value comes from and Run reads it then.
type Plan struct {
	Project Project
	Workdir string // absolute, inside the project
	User    User

	// SandboxHome is the host directory backing the in-sandbox home. bwrap mounts it at
	// User.HostHome; container isolators at their configured home.
	SandboxHome string
	// StateDir is the per-project state directory on the host.
	StateDir string
	// EmptyFile is a host path of an empty read-only file used as the source of file masks.
	EmptyFile string
	// Self is the host path of the init binary: devsandbox-init next to devsandbox when
	// installed, else devsandbox itself (which acts as the init when run as InitPath).
	Self string
	// BwrapInit, when set, is the host path of the init the bwrap isolator runs in
	// Self's place: devsandbox-bwrap-init, which has the bwrap roles only and so
	// starts faster. The container isolators always use Self.
	BwrapInit string
	// PrivateDirs are host directories Run creates (0700) before mounting them.
	PrivateDirs []string

	System  SystemView
	Mounts  []Mount // in order: a later mount covers an earlier one at or below its path
	Tmp     Tmp
	Env     []EnvVar
	Secrets []Secret
	Egress  egress.Rules
	// Proxy configures the session's filtering proxy (egress modes proxy and
	// allowlist); the Egress rules are its allow and deny lists and Egress.Proxy
	// where it listens.
	Proxy ProxyConfig
	// SSHAgent is the host's ssh agent as the sandbox reaches it: through a relay of
	// the session's that passes only listing and signing (package sshagent).
	SSHAgent AgentRelay
	// Syscalls is the syscall policy every process of the sandbox runs under; the
	// zero value is the strict policy.
	Syscalls syscalls.Policy
	// Limits bound what the sandbox consumes.
	Limits Limits

	Command  []string
	TTY      bool
	ReadOnly bool
	// TerminalClipboard lets the command write the user's clipboard through the
	// relayed terminal (OSC 52, sandbox.terminal_clipboard); the other sequences
	// that act beyond the screen are always removed (tty.Filter).
	TerminalClipboard bool

	// Tripwires are project paths that did not exist at launch and that tools on the
	// host would run or trust if the sandbox created them (agent settings, editor
	// tasks, a file a git config includes). Package watch checks them while the
	// sandbox runs and once more after.
	Tripwires []Tripwire
	// Subdir are the files host tools read in every directory, found below the
	// project's top directory by the project scan; package watch reports one the
	// sandbox creates.
	Subdir SubdirFiles
	// Git is what package watch checks while the sandbox runs, so that the host's
	// git obeys nothing the sandbox wrote.
	Git GitWatch

	// HostEnv holds the host values of FromHost variables and env secrets. Renderers
	// must never print it; Run copies values from it into the child's environment.
	// fmt prints its names only (HostValues.Format), so a Plan logged with %v, or an
	// error that carries one, shows no value.
	HostEnv HostValues `json:"-"`
}

// planFields is a Plan without its methods, for Format.
type planFields Plan

// Format prints the Plan as fmt would without it, except that HostEnv shows names
// only: fmt applies HostValues.Format to the field itself, but not when it prints a
// pointer for a verb a pointer has no meaning for (%s of a []any holding a *Plan).
func (p *Plan) Format(f fmt.State, verb rune) {
	fmt.Fprintf(f, fmt.FormatString(f, verb), (*planFields)(p))
}

// HostValues are host variables' values by name: secrets among them. fmt shows
// the names, never the values, whatever the verb: a harness that logs its Plan with
// %v or %+v, or wraps one in an error, writes no secret.
type HostValues map[string]string

// Format writes the names with each value hidden: map[API_TOKEN:<hidden>] (%#v:
// isolator.HostValues{"API_TOKEN":<hidden>}), in sorted order.
func (h HostValues) Format(f fmt.State, verb rune) {
	names := make([]string, 0, len(h))
	for n := range h {
		names = append(names, n)
	}
	sort.Strings(names)
	if verb == 'v' && f.Flag('#') {
		parts := make([]string, len(names))
		for i, n := range names {
			parts[i] = strconv.Quote(n) + ":<hidden>"
		}
		fmt.Fprintf(f, "isolator.HostValues{%s}", strings.Join(parts, ", "))
		return
	}
	parts := make([]string, len(names))
	for i, n := range names {
		parts[i] = n + ":<hidden>"
	}
	fmt.Fprintf(f, "map[%s]", strings.Join(parts, " "))
}

// HostEnvNames are the host variables whose values Run needs (HostEnv's keys): the
// values of FromHost variables and of env secrets, and what the session proxy needs
// (its CA, the credentials' values and placeholders, the host's choice of CA roots).
// A program the run is handed to (package handoff) gets exactly these in its
// environment.
func (p *Plan) HostEnvNames() []string {
	var names []string
	for _, e := range p.Env {
		if e.FromHost {
			names = append(names, e.Name)
		}
	}
	for _, s := range p.Secrets {
		if s.EnvSource != "" {
			names = append(names, s.EnvSource)
		}
	}
	if p.Egress.NeedsProxy() {
		names = append(names, "SSL_CERT_FILE", "SSL_CERT_DIR")
		if p.Proxy.MITM {
			names = append(names, ProxyCAVar)
		}
		for _, c := range p.Proxy.Credentials {
			for _, n := range []string{c.ValueEnv, c.PlaceholderVar} {
				if n != "" {
					names = append(names, n)
				}
			}
		}
	}
	return names
}

// AgentRelay is the session's ssh agent relay: it listens on Socket, in the socket
// directory (egress.Rules.SocketDir), which the agent's bind shows the sandbox, and
// relays the requests it lets pass to the agent at Upstream. The zero value: no agent
// is forwarded.
type AgentRelay struct {
	Upstream string // the host's agent socket ($SSH_AUTH_SOCK)
	Socket   string // the relay's socket
}

// ProxyConfig is how the session's filtering proxy runs. Its secrets (the MITM CA's
// key, the credentials' values and placeholders) are named here and held in
// HostEnv, never in the Plan.
type ProxyConfig struct {
	// Session names the run: the proxy's socket, the publish directory and the audit
	// records carry it.
	Session string
	// Default is the verdict where no entry decides: "allow" or "deny" (always deny
	// in allowlist mode, where only what is listed passes).
	Default string
	// MITM decrypts HTTPS with the project's CA (proxy.mitm): its certificate and key
	// are HostEnv[ProxyCAVar], the certificate alone in the sandbox's CA bundle.
	MITM bool
	// GitPush are the refs a sandboxed git push may change (proxy.git_push; none: no
	// push policy), GitSSH lets ssh (port 22) through a push policy (proxy.git_ssh).
	GitPush []egress.RefPattern
	GitSSH  bool
	// Credentials are what the proxy adds to requests (proxy.credentials), in order.
	Credentials []ProxyCredential
}

// ProxyCAVar is the HostEnv key of the MITM CA (certificate and key, PEM; package
// proxy/ca).
const ProxyCAVar = "DEVSANDBOX_PROXY_CA"

// ProxyCredential is one credential the proxy adds: its public fields and where its
// secrets are.
type ProxyCredential struct {
	// Name is the placeholder's variable in the sandbox, or the config key
	// (proxy.credentials[i]), for messages.
	Name   string
	Host   string // [https:// | http://] egress entry
	Header string
	Format string // "Bearer {}"; "" is the value alone
	// The value is HostEnv[ValueEnv] (a host variable) or the content of ValueFile,
	// read at launch.
	ValueEnv, ValueFile string
	// PlaceholderVar, when set, is the HostEnv key of the placeholder the sandbox
	// gets in place of the value (a secret of the Plan, like an env secret).
	PlaceholderVar string
}

// Limits bound what one sandbox consumes; zero means no limit. Where an isolator
// cannot enforce a limit the Plan sets, Run fails (ErrProtection) before the command
// starts.
type Limits struct {
	Pids   int     // tasks (processes and threads)
	Memory int64   // bytes
	CPUs   float64 // CPUs' worth of time
	// DiskReserve is the free space, in bytes, the run leaves on each host file
	// system the sandbox writes (sandbox.disk_reserve): every isolator's Run refuses
	// to start under it and kills the sandbox at once when one falls under it
	// (package diskguard); a bwrap library Session (bwrap.Begin) does the same for
	// its commands. Zero: no reserve.
	DiskReserve uint64
}

// MemoryText is the memory limit for people: "256 MiB", "1.5 GiB".
func (l Limits) MemoryText() string {
	switch m := float64(l.Memory); {
	case l.Memory >= 1<<30:
		return strconv.FormatFloat(m/(1<<30), 'f', -1, 64) + " GiB"
	case l.Memory >= 1<<20:
		return strconv.FormatFloat(m/(1<<20), 'f', -1, 64) + " MiB"
	}
	return strconv.FormatInt(l.Memory, 10) + " bytes"
}

// OOMMessage is what devsandbox says after the memory limit killed the command.
func (l Limits) OOMMessage() string {
	return "the sandbox ran out of memory (limit " + l.MemoryText() + ")"
}

// PidsMessage is what devsandbox says after the process limit refused refused
// forks in the sandbox (where the isolator can count them).
func (l Limits) PidsMessage(refused int) string {
	forks := "forks were"
	if refused == 1 {
		forks = "fork was"
	}
	return "the sandbox reached its process limit (limits.pids = " + strconv.Itoa(l.Pids) + "): " + strconv.Itoa(refused) + " " + forks + " refused; raise it with --pids or limits.pids if the command needs more"
}

// Project identifies the project directory.
type Project struct {
	Dir  string // real absolute path
	ID   string // short hash of Dir
	Name string // <basename>-<ID>
}

// User is the host user the sandboxed command runs as.
type User struct {
	Name     string
	UID, GID int
	HostHome string
	Shell    string
	// ContainerRoot: a container runs the command as its uid and gid 0, which the
	// engine's user namespace maps to this user (a rootless Docker engine: its
	// containers' other ids are the user's subordinate ids, whose files the user
	// cannot change). Set by the docker backend only; labels and ownership checks
	// on the host keep UID.
	ContainerRoot bool
}

// InContainer is the uid and gid the command runs as in a container.
func (u User) InContainer() (uid, gid int) {
	if u.ContainerRoot {
		return 0, 0
	}
	return u.UID, u.GID
}

// SystemView says which host system directories are visible.
type SystemView struct {
	Host  bool         // read-only `/`, with masks
	Paths []SystemPath // otherwise: these, read-only
	// Snapshot is the host directory under which bwrap keeps read-only snapshots of
	// the Copy files of /etc (package etcsnap), to bind one directory at /etc instead
	// of copying each file; "" copies them one by one.
	Snapshot string
	// Passwd, when set, is shown at /etc/passwd in place of the host's file: the
	// host's with the user's entry naming HostHome, the sandbox's $HOME (ssh and
	// `~user` read the home from the entry, not $HOME). It is set only when the view
	// shows the host's file and that names another home for the user; the /etc
	// snapshot keeps the host's file.
	Passwd []byte `json:",omitempty"`
}

// PasswdPath is the host's user database, which SystemView.Passwd replaces in the
// sandbox at the same path.
const PasswdPath = "/etc/passwd"

// SystemPath is one system path; Link non-empty means the host path is a symlink to
// Link and is recreated as one.
type SystemPath struct {
	Path     string
	Link     string
	Optional bool
	// Copy places a read-only copy of the (small, regular) file instead of a bind
	// mount: each mount costs bwrap a mountinfo scan, and /etc holds dozens of them.
	Copy bool
}

// MountKind is what appears at a mount's destination.
type MountKind int

const (
	Bind     MountKind = iota // Source bound at the destination
	MaskFile                  // an empty read-only file
	MaskDir                   // an empty read-only directory
	TmpDir                    // an empty writable directory
	Data                      // Content as a read-only file
)

// The Why of the read-only binds of a repository's git config files: the git dir's
// config and config.worktree (WhyGitConfig), and a file one of them includes from
// where a sandbox can write (WhyGitInclude). A file of either is read as git config
// (a docker engine over plain TCP is not sent one holding a credential).
const (
	WhyGitConfig  = "git config"
	WhyGitInclude = "included by git config"
)

// Mount is one entry of the sandbox view. Exactly one of Dest and HomeRel is set:
// HomeRel is relative to the in-sandbox home, which each isolator resolves itself.
type Mount struct {
	Kind     MountKind
	Source   string
	Dest     string
	HomeRel  string
	ReadOnly bool
	// Optional marks a Bind whose Source may vanish before launch (it is skipped
	// then), or a MaskFile whose Dest may: when such a mask has a Source (the host
	// path of the socket it masks), a backend drops the mask if that is gone at
	// launch (package pin), as bubblewrap cannot create its destination in a
	// read-only view.
	Optional bool
	Content  []byte // for Data
	// Parts, when set, say where Content came from, in order (see ContentPart): a
	// --dry-run script rebuilds the file from them instead of printing Content.
	Parts []ContentPart `json:",omitempty"`
	// Volatile marks Data whose content changes from session to session (names
	// resolved at launch): a sandbox that outlives a session (a kept container)
	// binds it from one file rewritten each session, not from its content.
	Volatile bool
	Why      string // where the mount comes from, for people reading --dry-run
	// Anchor marks a Bind whose source lies where a sandbox can write (below one
	// of Writable's directories): a directory bound onto itself to keep a mask in it
	// in place (a mount point cannot be renamed), the git metadata's read-only
	// binds, the files host tools run, a sandbox.writable_dirs entry. Such a source
	// a concurrent session can swap for a symlink while a run starts: a backend must
	// mount the file it pinned (a descriptor) or, read-only, deliver its content,
	// never bind the path, or the engine binds wherever the link leads and makes
	// the mount points in it there.
	Anchor bool `json:",omitempty"`
	// ID identifies the file a Bind mounts (MaskFile: the mask source). Build leaves
	// it nil; Run sets it from the descriptor it opened the source with (package
	// pin), and the sandbox's init checks that the file at the destination is that
	// one, reached without a symlink (guarantee 12: what is mounted is what was
	// checked). A --dry-run has none.
	ID *FileID `json:",omitempty"`
}

// ContentPart is one piece of a Data mount's Content: Text itself, or what was read
// from the host file File (the whole file, or with CertOnly its certificate's PEM
// block alone, as from the proxy CA's file, which holds the key too). A --dry-run
// script reads the files rather than print what they hold (the system's CA bundle
// is thousands of lines), and checks that the result is Content.
type ContentPart struct {
	File     string `json:",omitempty"`
	CertOnly bool   `json:",omitempty"`
	Text     string `json:",omitempty"`
}

// PlacedMount is a mount with its destination in a sandbox.
type PlacedMount struct {
	Mount
	Path string // the destination in the sandbox
}

// VisibleMounts resolves each of p's mounts' destination against the in-sandbox home
// (the sandbox home and home-relative mounts move to home) and drops every mount a
// later one covers: a runtime that sorts mounts by depth would otherwise let a bind
// below a later mask reappear.
func VisibleMounts(p *Plan, home string) []PlacedMount {
	var out []PlacedMount
	for _, m := range p.Mounts {
		t := m.Target(home)
		if m.HomeRel == "" && m.Dest == p.User.HostHome && m.Source == p.SandboxHome {
			t = home
		}
		t = path.Clean(t)
		kept := out[:0]
		for _, o := range out {
			if !Within(o.Path, t) {
				kept = append(kept, o)
			}
		}
		out = append(kept, PlacedMount{m, t})
	}
	return out
}

// Repeats reports whether m, placed right after prev, repeats it: the same mount at
// the same destination given the in-sandbox home home. It changes nothing there, and
// an isolator leaves it out. The planner repeats a mount below the host home at its
// other place in a container (its host path, or the sandbox home), which is its own
// place where the in-sandbox home is the host home (bwrap).
func (m Mount) Repeats(prev Mount, home string) bool {
	return m.Target(home) == prev.Target(home) && m.Kind == prev.Kind && m.Source == prev.Source &&
		m.ReadOnly == prev.ReadOnly && m.Optional == prev.Optional && m.Volatile == prev.Volatile &&
		m.Anchor == prev.Anchor && bytes.Equal(m.Content, prev.Content) &&
		(m.ID == nil) == (prev.ID == nil) && (m.ID == nil || *m.ID == *prev.ID)
}

// FileID identifies a file on a host: its device and inode numbers.
type FileID struct {
	Dev, Ino uint64
}

// Target returns the absolute destination given the in-sandbox home.
func (m Mount) Target(home string) string {
	if m.HomeRel != "" {
		return path.Join(home, m.HomeRel)
	}
	return m.Dest
}

// Tmp is how /tmp is provided.
type Tmp struct {
	Kind    string // session | tmpfs | shm
	Dir     string // host directory holding session dirs (session, shm)
	Session string // the session dir below Dir, chosen by Run; "" before
	// Size bounds a tmpfs /tmp in bytes (sandbox.tmp_size; 0: the kernel's default,
	// half the memory): bwrap's with Kind "tmpfs", a container's whatever the Kind.
	// A renderer that cannot bound its /tmp by it refuses the Plan (ErrConfig):
	// bwrap's session and shm /tmp are directories of a host file system.
	Size int64 `json:",omitempty"`
}

// EnvVar is one variable of the sandbox environment. FromHost variables carry the
// host's value, which is printed by name only.
type EnvVar struct {
	Name     string
	Value    string
	FromHost bool
	// HomeRel is set on a tool's variable naming a location below the host home
	// (CLAUDE_CONFIG_DIR, GH_CONFIG_DIR, CARGO_HOME...): Value is that location,
	// User.HostHome/HomeRel, which the tool's bindings place at HomeRel below the
	// in-sandbox home. A sandbox whose home is elsewhere than the host home
	// (docker.home) gives the variable the path there instead.
	HomeRel string `json:",omitempty"`
	// Credential is set on a variable whose value is taken to be a credential
	// (tools.Registry.Credential: a tool's secret name, a credential's name or a
	// token's form) among those passed by value, the host's (FromHost) and env.set:
	// a docker engine reached over plain TCP is not sent it (engineaddr.Exposes).
	Credential bool `json:",omitempty"`
}

// Secret is one secret delivered to the sandbox. Exactly one of EnvSource and
// FileSource is set. AsFile delivers it as a 0400 file at SecretDir/Name.
type Secret struct {
	Name       string
	EnvSource  string // host variable holding the value
	FileSource string // host file holding the value
	AsFile     bool
}

// InitPath is where every isolator makes the devsandbox-init available inside the
// sandbox (at least in the proxy egress modes, where ssh's ProxyCommand uses it).
const InitPath = "/run/devsandbox/init"

// SecretDir is where secret files appear inside every sandbox.
const SecretDir = "/run/secrets"

// SecretPath returns the in-sandbox path of a file secret.
func (s Secret) SecretPath() string { return SecretDir + "/" + s.Name }

// Within reports whether p is dir or below it (both clean absolute paths).
func Within(p, dir string) bool {
	// The same test as p == dir || strings.HasPrefix(p, dir+"/") without building
	// dir+"/": planning asks it thousands of times a launch.
	return dir == "/" || strings.HasPrefix(p, dir) && (len(p) == len(dir) || p[len(dir)] == '/')
}

// Tripwire is a path the sandbox must not create unnoticed.
type Tripwire struct {
	Path string
	// Pattern: the last element of Path is a pattern (path.Match syntax), for names
	// that are open-ended (mise's mise.<profile>.toml); each entry of Path's directory
	// that matches it is a tripwire.
	Pattern    bool
	Why        string // who on the host would run or trust it
	Quarantine bool   // no legitimate use: move it aside, do not just warn
}

// Covers reports whether the clean absolute path p is one of tw's paths.
func (tw Tripwire) Covers(p string) bool {
	if !tw.Pattern {
		return p == tw.Path
	}
	ok, _ := path.Match(path.Base(tw.Path), path.Base(p))
	return ok && path.Dir(p) == path.Dir(tw.Path)
}

// SubdirFiles are the files host tools read, and may run what they name, in every
// directory from where they run up to / (rustup's rust-toolchain, asdf's
// .tool-versions, mise's config files): below the project's top directory, where
// Tripwires and read-only mounts do not reach, the project scan (maskscan, with
// ScanMarks) finds them, at launch and while the sandbox runs.
type SubdirFiles struct {
	// Names are project-relative names; the last element may be a pattern (path.Match
	// syntax). A path is covered when it ends in a name below a sub-directory.
	Names []string
	// Present are the covered paths that existed at launch (each mounted read-only,
	// or its target when it is a symlink within the project).
	Present []string
	Why     string // who on the host would run or trust one
}

// ScanMarks returns the names the project scan reports (maskscan.Matcher.Mark): .git
// entries and the last element of each of Names, in a fixed order. The planner and
// package watch scan with the same marks, so they share one scan cache.
func (s SubdirFiles) ScanMarks() []string {
	out := []string{".git"}
	for _, n := range s.Names {
		if b := path.Base(n); !slices.Contains(out, b) {
			out = append(out, b)
		}
	}
	return out
}

// Covers reports whether p (clean absolute) is one of Names below a sub-directory of
// the project dir: one that a name also matches at the top (.config/mise/config.toml
// is mise/config.toml below .config) is the Tripwires' and is not covered.
func (s SubdirFiles) Covers(dir, p string) bool {
	if !Within(p, dir) || p == dir {
		return false
	}
	elems := strings.Split(p[len(dir)+1:], "/")
	below := false
	for _, n := range s.Names {
		ne := strings.Split(n, "/")
		if len(ne) > len(elems) || !slices.Equal(ne[:len(ne)-1], elems[len(elems)-len(ne):len(elems)-1]) {
			continue
		}
		if ok, _ := path.Match(ne[len(ne)-1], elems[len(elems)-1]); !ok {
			continue
		}
		if len(ne) == len(elems) {
			return false
		}
		below = true
	}
	return below
}

// GitWatch names the git metadata of a run that the sandbox can write and the host's
// git reads (see package watch).
type GitWatch struct {
	// Dirs are the git dirs the sandbox can write: the project's, a linked
	// worktree's common dir, a submodule's git dir.
	Dirs []string
	// Index is the project's git index, whose gitlinks (submodules) the host's
	// git status enters.
	Index string
	// Nested are the .git entries (directories or gitdir files) below the project
	// at launch, other than the project's own.
	Nested []string
	// Scan finds new .git entries below the project: the mask scan's matcher
	// (maskscan.Matcher) and its cache file.
	ScanMask, ScanAllow, ScanSkip []string
	ScanCache                     string
	// Quarantine is the host directory what fails the checks is moved to.
	Quarantine string
	// PointerRecord is where the run records Pointers, the project's gitdir chain
	// (a linked worktree, a submodule), for the next run to compare.
	PointerRecord, Pointers string
}
