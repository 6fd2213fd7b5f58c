// Package wire is the protocol between devsandbox on the host and devsandbox-init as
// the init of a container (the docker backend). It is portable and has no effects, so
// the host side builds on any platform.
//
// Two things travel:
//
//   - The Manifest, in the container's environment (ManifestEnv): what the init must
//     verify before it runs the command (DESIGN guarantee 9). It holds paths and
//     sizes, never a secret.
//   - Frames on the init's stdin, in framed mode (the only mode devsandbox uses; a
//     plain `docker run` line leaves it off): a Hello first, carrying the secrets and
//     the window size, then the command's input, window sizes and signals. The host
//     never ends the stream while it lives, so end of file means the host is gone and
//     the init takes the command down.
//
// The init reports on its stderr, before anything else runs: ReadyMarker once the
// command is about to start, or FailPrefix + reason + MarkerEnd when a protection is
// not in effect (it then exits 125 without running the command). The markers are
// terminal APC sequences, which terminals ignore, should one ever reach a screen.
package wire

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/devsandbox/devsandbox/syscalls"
)

// ManifestEnv is the environment variable holding the JSON Manifest. The init removes
// it before running the command.
const ManifestEnv = "DEVSANDBOX_INIT"

// UnsetGOMAXPROCSArg, an argument of the bwrap init and of the container init's
// session role (a kept container's exec), says that GOMAXPROCS=1 in its
// environment is the init's alone: the host added it (the command's environment has
// no GOMAXPROCS), and the init removes it before anything copies its environment,
// then takes the default number of Ps (runtime.SetDefaultGOMAXPROCS). With one P the
// Go runtime starts a thread fewer and touches fewer pages before the init's main
// (no thread woken for forcegchelper's start, no second P's caches), on the way to
// the command's exec. The container init takes the default once the command started.
const UnsetGOMAXPROCSArg = "--unset-gomaxprocs"

// ScopeAbstractArg, an argument of the bwrap init, has it start the command in a
// Landlock domain that reaches only the abstract Unix sockets made inside it: under
// egress "open" the sandbox shares the host's network namespace, and with it the
// host's abstract sockets (an X server's, a D-Bus bus at an abstract address), which
// no mount can hide. Where the kernel has no Landlock scopes (before Linux 6.12) the
// command starts without it.
const ScopeAbstractArg = "--scope-abstract-unix"

// AwaitGoArg, an argument of the bwrap init with a readiness socket (--ready-fd), has
// it wait for the host's go-ahead, one GoByte on that socket, after its own checks and
// before it starts the command: what the host checks beside bwrap's setup (the disk
// reserve's first reading) is then in force before the command's first instruction.
// An end of the socket, or anything else on it, ends the init without the command.
const AwaitGoArg = "--await-go"

// GoByte is the host's go-ahead on the readiness socket (AwaitGoArg).
const GoByte = 'g'

// InitGOMAXPROCS is the variable the host adds with UnsetGOMAXPROCSArg.
const InitGOMAXPROCS = "GOMAXPROCS=1"

// SecretFileEnvPrefix names the variables from which the init writes secret files in
// plain mode (a hand-run `docker run` line): DEVSANDBOX_SECRET_FILE_<NAME> holds the
// base64 of /run/secrets/<NAME>. The init removes them before running the command.
const SecretFileEnvPrefix = "DEVSANDBOX_SECRET_FILE_"

// WriteInPlaceArg follows the firewall role's rules argument: "PATH=BASE64" makes the
// init, once the rules are in place, rewrite the existing file PATH in place (same
// inode: a kept container binds it) with the decoded content. The docker isolator's
// firewall helper thus writes a kept container's /etc/hosts of the session.
const WriteInPlaceArg = "--write-in-place="

// Markers the init writes on stderr.
const (
	ReadyMarker = "\x1b_devsandbox:ready\x1b\\"
	// AgentStreamMarker, before ReadyMarker: the bound agent socket
	// (Manifest.AgentBound) did not prove itself; the init waits for Manifest.Agent.
	AgentStreamMarker = "\x1b_devsandbox:agent-stream\x1b\\"
	FailPrefix        = "\x1b_devsandbox:fail:"
	MarkerEnd         = "\x1b\\"
)

// CheckKind is what a Check expects at its path.
type CheckKind string

const (
	CheckMaskFile CheckKind = "maskfile" // an empty regular file on a read-only mount
	CheckMaskDir  CheckKind = "maskdir"  // an empty directory on a read-only mount
	CheckRO       CheckKind = "ro"       // exists, on a read-only mount
	CheckRW       CheckKind = "rw"       // exists (a bind the command may write)
	CheckData     CheckKind = "data"     // a regular file of Size bytes on a read-only mount
	// CheckSealed: exists, and neither it nor a directory above it is the command's
	// or writable by anyone but its owner, so the command (with no capability, which
	// the init checks too) cannot change or replace it: a file devsandbox copied into
	// the container through the Engine API, on a volume the engine must let it write.
	CheckSealed CheckKind = "sealed"
)

// Check is one protection the init verifies.
type Check struct {
	Kind CheckKind `json:"k"`
	Path string    `json:"p"`
	Size int64     `json:"s,omitempty"`
	// Allow names the entries a masked directory may hold: mount points of later
	// mounts inside it (a tool's file below a hidden directory).
	Allow []string `json:"a,omitempty"`
	// Dev and Ino, when Ino is set, identify the file the host opened as the
	// mount's source (isolator.Mount.ID): the path must lead to it without crossing
	// a symlink. The numbers are compared only on the host's own kernel (see
	// Manifest.BootID); elsewhere the path is still walked without symlinks.
	Dev uint64 `json:"d,omitempty"`
	Ino uint64 `json:"i,omitempty"`
	// MayVanish: a mask whose target (a host service's socket) may be gone by the
	// time the command starts; gone, there is nothing left to mask.
	MayVanish bool `json:"v,omitempty"`
}

// Manifest is what the init verifies and how it runs the command.
type Manifest struct {
	Checks []Check `json:"checks,omitempty"`
	// ContainerRoot: the command runs as the container's uid 0, which must be the
	// user's on the host (a rootless engine's user namespace), never the host's root.
	ContainerRoot bool `json:"containerRoot,omitempty"`
	// Network is the expected egress state: "none" (only loopback), "firewall" (the
	// egress rules in force: a datagram to EgressProbe is refused) or "" (not checked).
	Network string `json:"network,omitempty"`
	// EgressProbe is "ADDR:PORT", the UDP destination the firewall's probe rule drops
	// (egress.ProbeAddr): sending to it fails with EPERM only while the rules are in
	// effect, and sends nothing off the sandbox's loopback when they are not.
	EgressProbe string `json:"egressProbe,omitempty"`
	// Forward is "ADDR=UNIXPATH": listen on the TCP address ADDR inside and relay each
	// connection to the Unix socket (the session proxy, egress proxy mode).
	Forward string `json:"forward,omitempty"`
	// ForwardDir is "ADDR=DIR", for the keeper of a kept container: listen on ADDR
	// for the container's life and relay each connection to a live session proxy
	// socket (proxy-*.sock) in DIR, the project's stable proxy endpoint.
	ForwardDir string `json:"forwardDir,omitempty"`
	// ProxySocket is a kept session's own proxy socket, its name in the keeper's
	// ForwardDir: the session's init names it when it registers, and the keeper
	// relays the session's connections to it, not to another session's.
	ProxySocket string `json:"proxySocket,omitempty"`
	// Policy is a digest of a kept container's egress policy (docker), which makes it
	// part of the container's spec; nothing reads it inside.
	Policy string `json:"policy,omitempty"`
	// Publish lists published ports as "PORT=UNIXPATH": serve the Unix socket (in a
	// directory the host shares) and relay each connection to 127.0.0.1:PORT inside.
	Publish []string `json:"publish,omitempty"`
	// Memory is the sandbox's memory limit in bytes (0: none). When the command dies
	// of SIGKILL and the kernel's out-of-memory killer ran in the sandbox, the init
	// says so with OOMMarker after the command's output.
	Memory int64 `json:"memory,omitempty"`
	// OOMFromVMStat: the sandbox is a virtual machine whose memory is the limit; the
	// init reads out-of-memory kills from the guest kernel's /proc/vmstat rather
	// than from a cgroup.
	OOMFromVMStat bool `json:"oomVMStat,omitempty"`
	// Seccomp, when set, is the syscall policy the init loads for the command
	// itself (a microVM, where the runtime's profile would filter the VMM on the
	// host instead of the guest's processes).
	Seccomp *syscalls.Policy `json:"seccomp,omitempty"`
	// Nproc, when set, is RLIMIT_NPROC for the command, set by the init: in the
	// container's own user namespace it counts only the sandbox's tasks (krun; the
	// docker engine limits tasks with a pids cgroup instead).
	Nproc int `json:"nproc,omitempty"`
	// Sticky are directories of the sandbox user's the init gives mode 1777 before
	// the command starts, when they have another: a tmpfs /tmp to which runc gave the
	// mode of the image's directory it covers (0755), over its mode option.
	Sticky []string `json:"sticky,omitempty"`
	// SecretDir is where secret files are written (a tmpfs owned by the user).
	SecretDir string `json:"secretDir,omitempty"`
	// ShellFallback: when the command is exactly this path and it does not exist in
	// the image, run /bin/sh instead (the host user's shell may not be installed).
	ShellFallback string `json:"shellFallback,omitempty"`
	// ProbeReadOnly: statfs cannot see that a mount is read-only (krun's guest sees the
	// host's files through virtio-fs, whose statfs reports the guest's own mount
	// flags while the host enforces the bind's), so a path statfs calls writable
	// passes a read-only check only if a write that changes nothing (chmod to its own
	// mode) is refused as read-only.
	ProbeReadOnly bool `json:"probeRO,omitempty"`
	// BootID is the host's /proc/sys/kernel/random/boot_id: an init that reads the
	// same runs on the host's kernel (bwrap, a local Linux engine), where device and
	// inode numbers of the host's files are the ones it sees, and compares them.
	BootID string `json:"bootID,omitempty"`
	// Agent is the ssh agent's socket the session's command is given (docker: served
	// by an exec of its own): the init starts the command only once it is served,
	// and fails (125) when it is not within a bound. devsandbox-docker sends the
	// hello only after the exec's; this makes the order the init's own too.
	Agent string `json:"agent,omitempty"`
	// AgentBound is the session's ssh agent relay's socket as the engine bound it
	// from this host (docker, a local engine), or "": before the command starts the
	// init proves that this session's relay answers there (sshagent.Probe with
	// AgentKey) and gives it to the command as SSH_AUTH_SOCK. When it does not, the
	// init says AgentStreamMarker and waits for Agent, which devsandbox-docker then
	// serves with an exec.
	AgentBound string `json:"agentBound,omitempty"`
	// AgentKey is the session relay's probe key (sshagent.Probe): not a
	// credential, it proves which relay answers at AgentBound.
	AgentKey []byte `json:"agentKey,omitempty"`
	// ImageEnv is the image's ENV, "NAME=value", less what the run sets (docker, krun):
	// the container's config removes those variables, so that none of devsandbox's
	// programs in the container starts with them, and the init gives them to the
	// command, under the run's own variables and the session's.
	ImageEnv []string `json:"imageEnv,omitempty"`
}

// Encode returns the manifest as the value of ManifestEnv.
func (m *Manifest) Encode() string {
	b, _ := json.Marshal(m)
	return string(b)
}

// DecodeManifest parses a ManifestEnv value: JSON, or the form EncodeChecks writes.
func DecodeManifest(s string) (*Manifest, error) {
	if rest, ok := strings.CutPrefix(s, checksHeader); ok {
		m, err := decodeChecks(rest)
		if err != nil {
			return nil, fmt.Errorf("bad %s: %w", ManifestEnv, err)
		}
		return m, nil
	}
	var m Manifest
	if err := json.Unmarshal([]byte(s), &m); err != nil {
		return nil, fmt.Errorf("bad %s: %w", ManifestEnv, err)
	}
	return &m, nil
}

// StartFirstArg (an argument of the container init's session role, framed) starts
// the command without waiting for the host's hello, which the engine relays only
// once the exec has started (2-4 ms after the init is ready for it here). The host
// passes it when the session's hello carries nothing (no secret, no terminal, no
// out-of-memory nonce) and nothing waits to be ready before the command starts (no
// egress proxy or published port, no egress rules to apply). The init ignores it
// when its manifest says otherwise (a forwarder, published ports, egress rules, a
// memory limit) and reads the hello first, as without it. With it the hello is still
// the stream's first frame: one that carries anything but End ends the command.
const StartFirstArg = "--start-first"

// SessionIDArg, an argument of the container init's session role, names the session
// to the kept container's keeper ("--session-id=ID", ID of ValidSessionID): the host
// then asks the keeper, by that name, to end what is left of the session and confirm
// that none of its processes runs (the init's role "end") when the init did not say
// so itself (EndMarker). Not a secret: only a process the engine started may ask.
const SessionIDArg = "--session-id="

// ValidSessionID reports whether id may name a session (SessionIDArg): 1 to 64
// lowercase letters, digits and dashes. Pure.
func ValidSessionID(id string) bool {
	return id != "" && len(id) <= 64 && strings.Trim(id, "abcdefghijklmnopqrstuvwxyz0123456789-") == ""
}

// Frame types on the init's stdin.
const (
	FrameHello  = 'H' // JSON Hello; first and once
	FrameData   = 'D' // bytes for the command's stdin
	FrameClose  = 'C' // the command's stdin ends
	FrameResize = 'W' // rows, cols: two big-endian uint16
	FrameSignal = 'S' // one byte: a signal number for the command's process group
)

// MaxFrame bounds a frame's payload; larger data is split.
const MaxFrame = 1 << 20

// Hello is the first frame: what must be in place before the command starts.
type Hello struct {
	// Nonce, unique to the session, authenticates the init's out-of-memory report
	// (OOMMarker): the init holds it in memory the command cannot read (it is not
	// dumpable), so the command cannot fake the report on the shared stderr.
	Nonce string `json:"nonce,omitempty"`
	// End, unique to the session, authenticates the session init's report that every
	// process of its session is gone (EndMarker), which a kept container's host waits
	// for before its last look at what the session wrote. Not for the command: it
	// may arrive after the command started (StartFirstArg).
	End   string            `json:"end,omitempty"`
	Env   map[string]string `json:"env,omitempty"`   // secret variables
	Files map[string][]byte `json:"files,omitempty"` // secret files by name
	TTY   bool              `json:"tty,omitempty"`   // run the command on a terminal of its own
	Rows  uint16            `json:"rows,omitempty"`
	Cols  uint16            `json:"cols,omitempty"`
	// OneStream (without TTY) gives the command one pipe as both stdout and stderr,
	// as a shell's `2>&1` does, which the init copies to its stdout: the host's
	// stdout and stderr are one file (isolator.SharedOutput), and the engine, which
	// copies a container's two streams apart, would not keep the order between them.
	// The init's own reports stay on its stderr.
	OneStream bool `json:"one_stream,omitempty"`
	// Jobs is the host's job-control protocol (JobProtocol): an init framed by a
	// host of another version (an older one sends none) refuses the session. Not the
	// command's.
	Jobs int `json:"jobs,omitempty"`
}

// CarriesNothing reports whether h holds nothing the command must have before it
// starts: no secret variable or file, no terminal, no one stream, no nonce
// (StartFirstArg). End and Jobs are not the command's.
func (h *Hello) CarriesNothing() bool {
	return len(h.Env) == 0 && len(h.Files) == 0 && !h.TTY && !h.OneStream && h.Nonce == ""
}

// WriteFrame writes one frame.
func WriteFrame(w io.Writer, typ byte, payload []byte) error {
	if len(payload) > MaxFrame {
		return fmt.Errorf("frame of %d bytes exceeds %d", len(payload), MaxFrame)
	}
	buf := make([]byte, 5+len(payload))
	buf[0] = typ
	binary.BigEndian.PutUint32(buf[1:5], uint32(len(payload)))
	copy(buf[5:], payload)
	_, err := w.Write(buf)
	return err
}

// WriteHello writes the Hello frame.
func WriteHello(w io.Writer, h *Hello) error {
	b, err := json.Marshal(h)
	if err != nil {
		return err
	}
	return WriteFrame(w, FrameHello, b)
}

// ResizePayload encodes a window size.
func ResizePayload(rows, cols uint16) []byte {
	var b [4]byte
	binary.BigEndian.PutUint16(b[0:2], rows)
	binary.BigEndian.PutUint16(b[2:4], cols)
	return b[:]
}

// ParseResize decodes a FrameResize payload.
func ParseResize(p []byte) (rows, cols uint16, ok bool) {
	if len(p) != 4 {
		return 0, 0, false
	}
	return binary.BigEndian.Uint16(p[0:2]), binary.BigEndian.Uint16(p[2:4]), true
}

// ErrTruncated is returned by ReadFrame when the stream ends inside a frame.
var ErrTruncated = errors.New("stream ended inside a frame")

// ReadFrame reads one frame; io.EOF at a frame boundary means the host is gone.
func ReadFrame(r io.Reader) (typ byte, payload []byte, err error) {
	var hdr [5]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		if errors.Is(err, io.ErrUnexpectedEOF) {
			return 0, nil, ErrTruncated
		}
		return 0, nil, err
	}
	n := binary.BigEndian.Uint32(hdr[1:5])
	if n > MaxFrame {
		return 0, nil, fmt.Errorf("frame of %d bytes exceeds %d", n, MaxFrame)
	}
	payload = make([]byte, n)
	if _, err := io.ReadFull(r, payload); err != nil {
		return 0, nil, ErrTruncated
	}
	return hdr[0], payload, nil
}

// ParseHello decodes a FrameHello payload.
func ParseHello(p []byte) (*Hello, error) {
	var h Hello
	if err := json.Unmarshal(p, &h); err != nil {
		return nil, fmt.Errorf("bad hello frame: %w", err)
	}
	return &h, nil
}

// OOMMarker is what the init writes on stderr, after the command's output, when the
// memory limit's out-of-memory killer ended the command.
func OOMMarker(nonce string) string { return markerStart + "oom:" + nonce + MarkerEnd }

// EndMarker is what a kept container's session init writes on stderr as it exits,
// last, once every process of its session is gone (the kernel says it has no child
// left): the host may then look at what the session wrote for the last time.
func EndMarker(nonce string) string { return markerStart + "end:" + nonce + MarkerEnd }

// FailMarker returns the failure report for reason (one line, no escape characters).
func FailMarker(reason string) string {
	r := strings.Map(func(c rune) rune {
		if c < 0x20 || c == 0x7f {
			return ' '
		}
		return c
	}, reason)
	return FailPrefix + r + MarkerEnd
}

// ListenerMsg tags a message on bwrap's readiness socket that carries one listening
// socket, the init's on egress.SandboxProxyAddr, for the host to hand to the session
// proxy (the other messages there are the init's readiness and failure reports).
const ListenerMsg = 'L'

// Job control (see the init's freezer): the host sends FrameStop with a token of
// its own, the init stops the session's processes and answers with StopAnswer on its
// stderr (stopped, running, or the command had ended); FrameGo continues them. Where
// the engine pauses the container, the host pauses it after a "stopped" answer too.
const (
	FrameStop = 'Z' // a token (ValidToken): stop the session's processes, then answer
	FrameGo   = 'G' // continue the processes the last FrameStop stopped
)

// ValidToken reports whether t can be a FrameStop token: 8 to 64 hex digits, so that
// the init's answer holds nothing but them.
func ValidToken(t []byte) bool {
	if len(t) < 8 || len(t) > 64 {
		return false
	}
	for _, c := range t {
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// JobProtocol is the version of job control between the host and the container's
// init (FrameStop, FrameGo and the init's answer, StopAnswer). The host names it in
// its hello (Hello.Jobs); an init that speaks another version refuses the session
// (a failure report, 125) before the command starts. An init of version 1 (which
// answers with StopMarkerV1) is told apart by its answer: the host ends the session
// with a message naming the skew, as it does for a stop that is not confirmed.
// Version 2 added the answer that the command had ended by the stop (StopEnded).
const JobProtocol = 2

// The states of the init's answer to a stop (StopAnswer).
const (
	// StopStopped: every process of the session was seen stopped, the command's
	// included; the host stops devsandbox.
	StopStopped = "stopped"
	// StopRunning: a process kept running after SIGSTOP (jobstop.StopBound); the
	// stop is not confirmed.
	StopRunning = "running"
	// StopEnded: the command had ended (exited, whether reaped or not) by the time
	// every process of the session was stopped; the init has continued what it
	// stopped (the command's orphans, which go with the init's exit), and the host
	// does not stop devsandbox: the run ends with the command's status, as a native
	// command that exits as Ctrl-Z comes is reported exited.
	StopEnded = "ended"
)

// StopAnswer is the init's answer (JobProtocol) to FrameStop with token: state is
// StopStopped, StopRunning or StopEnded.
func StopAnswer(token, state string) string {
	return fmt.Sprintf("%sstop%d:%s:%s%s", markerStart, JobProtocol, state, token, MarkerEnd)
}

// StopMarkerV1 is the answer of an init of job-control protocol 1 to FrameStop with
// token (ok: every process stopped). The host recognises it only to say that the
// init is from another build.
func StopMarkerV1(token string, ok bool) string {
	if ok {
		return markerStart + "stopped:" + token + MarkerEnd
	}
	return markerStart + "running:" + token + MarkerEnd
}
