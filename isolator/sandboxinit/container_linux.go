package sandboxinit

import (
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/devsandbox/devsandbox/internal/rmtree"
	"github.com/devsandbox/devsandbox/isolator/sandboxinit/wire"
)

// ContainerArg starts the init in the container init role (the docker backend):
//
//	devsandbox-init --container [--framed [--start-first]] [--role=run|session|keeper] [--session-id=ID] [--unset-gomaxprocs] -- COMMAND [ARG...]
//	devsandbox-init --container --role=end -- ID
//
// Role run (the default) is the container's pid 1: it verifies the Manifest, runs the
// command as a child, forwards signals, reaps every orphan, and exits with the
// command's status, which takes the rest of the container down with it. Role session
// is the same for a command exec'd into a kept container: it is not pid 1, so it
// becomes a child subreaper and kills what the command left behind. Role keeper is the
// idle pid 1 of a kept container. Role end asks a kept container's keeper to end
// what is left of the session named ID (wire.SessionIDArg) and exits 0 once none of
// its processes runs (see endSession). With --framed, stdin carries wire frames (see the
// wire package); without, the command inherits the container's stdio, as a hand-run
// `docker run` line gives it. With --start-first (see wire.StartFirstArg) the
// command starts before the hello is read. With wire.UnsetGOMAXPROCSArg the runtime
// started with the one P of the GOMAXPROCS=1 devsandbox added to a session's exec;
// the init removes the variable and takes the default number of Ps once the command
// started.
const ContainerArg = "--container"

// ContainerMain runs the init's container roles with the arguments after
// ContainerArg.
func ContainerMain(args []string, stderr io.Writer) int {
	c := &container{stderr: stderr, role: "run"}
	for len(args) > 0 && args[0] != "--" {
		switch a := args[0]; {
		case a == "--framed":
			c.framed = true
		case a == wire.StartFirstArg:
			c.startFirst = true
		case a == wire.UnsetGOMAXPROCSArg:
			// Before anything starts a process or copies the environment: the
			// runtime read it at its start, and the command may not inherit it.
			_ = os.Unsetenv("GOMAXPROCS")
			c.oneProc = true
		case strings.HasPrefix(a, "--role="):
			c.role = strings.TrimPrefix(a, "--role=")
		case strings.HasPrefix(a, wire.SessionIDArg):
			c.sessionID = strings.TrimPrefix(a, wire.SessionIDArg)
		default:
			say(stderr, "devsandbox-init", "unknown argument %q", a)
			return ExitSetupFailed
		}
		args = args[1:]
	}
	// Non-dumpable, the init is out of reach of the container's processes, which run
	// as the same user without capabilities: no ptrace, no /proc/<init>/fd (the
	// host's frame stream), environ or mem (which held the session's hello: secret
	// values, the out-of-memory nonce), whether or not the hello carries any. First,
	// before the hello is read or the command started (--start-first). Its children's
	// exec makes them dumpable again; the keeper's and the engine's look at a
	// process's /proc/<pid>/stat and namespaces is unaffected.
	if err := unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0); err != nil {
		return c.fail("making the init non-dumpable: %v", err)
	}
	switch c.role {
	case "keeper":
		return keeper(stderr)
	case "end":
		if len(args) != 2 || !wire.ValidSessionID(args[1]) {
			say(stderr, "devsandbox-init", "role end takes one session id")
			return ExitSetupFailed
		}
		return endSession(args[1], stderr)
	case "run", "session":
	default:
		say(stderr, "devsandbox-init", "unknown role %q", c.role)
		return ExitSetupFailed
	}
	if len(args) < 2 {
		say(stderr, "devsandbox-init", "no command")
		return ExitNotFound
	}
	return c.run(args[1:])
}

type container struct {
	stderr     io.Writer
	framed     bool
	startFirst bool // wire.StartFirstArg
	oneProc    bool // wire.UnsetGOMAXPROCSArg: the runtime started with one P
	role       string
	sessionID  string   // wire.SessionIDArg
	stdin      *os.File // the container's stdin, read for frames
	// laterEnd gets the hello's End when the hello is read after the command
	// started (readFrames, StartFirstArg).
	laterEnd chan string
}

// fail reports that a protection is not in effect and returns the exit status.
func (c *container) fail(format string, args ...any) int {
	msg := fmt.Sprintf(format, args...)
	if c.framed {
		fmt.Fprint(c.stderr, wire.FailMarker(msg))
	}
	say(c.stderr, "devsandbox-init", "%s", msg)
	return ExitSetupFailed
}

// ready reports to the host (framed mode) that the command is about to start.
func (c *container) ready() {
	if c.framed {
		fmt.Fprint(c.stderr, wire.ReadyMarker)
	}
}

func (c *container) run(argv []string) int {
	c.stdin = os.Stdin
	// The reaper's subscription to SIGCHLD (whose default is to be ignored) and to the
	// command's signals run beside the work below and are waited for only before the
	// command starts: each signal.Notify of a signal is a round trip with the
	// runtime's signal-mask thread (the first also starts it), eight in all, which the
	// keeper's answer and the view's checks hide. A signal that arrives meanwhile
	// waits for the command, as under the bwrap init.
	var r *reaper
	sigs := make(chan os.Signal, 8)
	subscribed := make(chan struct{})
	go func() {
		r = newReaper()
		signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT, syscall.SIGUSR1, syscall.SIGUSR2, syscall.SIGWINCH)
		close(subscribed)
	}()
	m := &wire.Manifest{}
	if s, ok := os.LookupEnv(wire.ManifestEnv); ok {
		var err error
		if m, err = wire.DecodeManifest(s); err != nil {
			return c.fail("%v", err)
		}
	}
	_ = os.Unsetenv(wire.ManifestEnv)
	var keeperConn net.Conn
	if c.role == "session" {
		// Before the session's secrets arrive: what an ended session left in the
		// kept container is gone once the keeper lets the session start.
		// A framed session's stream is the host's alone (fd 0): the keeper watches
		// it too, to end the session should the host go while this init is stopped.
		stream := -1
		if c.framed {
			stream = int(os.Stdin.Fd())
		}
		conn, err := registerSession(m.ProxySocket, c.sessionID, stream)
		if err != nil {
			return c.fail("%v", err)
		}
		defer conn.Close()
		keeperConn = conn
	}
	if err := makeSticky(m.Sticky); err != nil {
		return c.fail("%v", err)
	}
	// The view's checks need nothing of the session's: they run while the host's
	// hello is on its way (the engine relays it only once the exec has started). The
	// secret files and the network are checked once it arrived (VerifySession).
	if err := VerifyView(m); err != nil {
		return c.fail("%v", err)
	}

	// Without a hello to wait for, the command starts now; the hello is read after
	// it, and must be empty (readFrames).
	helloLater := c.framed && c.startFirst && m.Network != "firewall" && m.Forward == "" && len(m.Publish) == 0 && m.Memory == 0
	hello := &wire.Hello{}
	if c.framed && !helloLater {
		typ, p, err := wire.ReadFrame(c.stdin)
		if err != nil || typ != wire.FrameHello {
			return c.fail("no hello frame from the host (%v)", err)
		}
		if hello, err = wire.ParseHello(p); err != nil {
			return c.fail("%v", err)
		}
		if err := jobsSkew(hello); err != nil {
			return c.fail("%v", err)
		}
	} else if files, err := secretFilesFromEnv(); err != nil {
		return c.fail("%v", err)
	} else {
		hello.Files = files
	}
	if m.Seccomp != nil {
		// Before anything else starts (the forwarders): everything in the sandbox
		// runs under the policy.
		if err := LoadSeccomp(*m.Seccomp); err != nil {
			return c.fail("%v", err)
		}
	}
	if m.Nproc > 0 {
		if err := SetNproc(m.Nproc); err != nil {
			return c.fail("%v", err)
		}
	}
	if err := writeSecretFiles(m.SecretDir, hello.Files); err != nil {
		return c.fail("%v", err)
	}
	if err := VerifySession(m, hello.Files); err != nil {
		return c.fail("%v", err)
	}
	if m.Forward != "" {
		if err := startForwarder(m.Forward); err != nil {
			return c.fail("starting the proxy forwarder %s: %v", m.Forward, err)
		}
	}
	for _, pub := range m.Publish {
		if err := startPublisher(pub); err != nil {
			return c.fail("publishing port %s: %v", pub, err)
		}
	}
	if m.Agent != "" {
		if err := c.agent(m); err != nil {
			return c.fail("%v", err)
		}
	}
	for k, v := range hello.Env {
		_ = os.Setenv(k, v)
	}
	// The image's ENV, which the container's config kept from the init's own start,
	// is the command's (never the init's: a GODEBUG set in a running program takes
	// effect in it), under the run's variables and the session's. Its PATH is the
	// one the command is looked up on.
	env := commandEnv(os.Environ(), m.ImageEnv, hello.Env)
	if v, ok := envValue(env, "PATH"); ok {
		_ = os.Setenv("PATH", v)
	}
	if c.role == "session" {
		_ = unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
	}

	path, code, msg := lookCommand(argv[0], m.ShellFallback)
	if path == "" {
		c.ready()
		say(c.stderr, "devsandbox", "%s: %s", argv[0], msg)
		return code
	}
	if path != argv[0] && argv[0] == m.ShellFallback {
		argv = []string{path}
	}

	var cio commandIO
	var err error
	switch {
	case c.framed && hello.TTY:
		cio, err = newPtyIO(hello.Rows, hello.Cols)
	case c.framed:
		cio, err = newPipeIO(os.Stdout, os.Stderr, hello.OneStream)
	default:
		cio = newInheritIO()
	}
	if err != nil {
		return c.fail("setting up the command's terminal: %v", err)
	}
	<-subscribed
	ooms := -1
	if m.Memory > 0 && hello.Nonce != "" {
		ooms = oomKills(m)
	}
	c.ready()

	pid, err := syscall.ForkExec(path, argv, &syscall.ProcAttr{
		Env:   env,
		Files: cio.files(),
		Sys:   cio.sys(),
	})
	cio.started()
	if c.oneProc {
		// One P took the init from its start to the command's (a thread fewer, no
		// second P's caches); the relaying that follows takes the default number.
		runtime.SetDefaultGOMAXPROCS()
	}
	if err != nil {
		code := ExitNotExecutable
		if errors.Is(err, syscall.ENOENT) {
			code = ExitNotFound
		}
		say(c.stderr, "devsandbox", "%s: %v", argv[0], err)
		return code
	}

	if keeperConn != nil {
		go reportRefusals(keeperConn, c.stderr, hello.Nonce)
	}
	gone := make(chan struct{})
	if c.framed {
		c.laterEnd = make(chan string, 1)
		// Before the reaper runs: the command's exit is watched from here on.
		go c.readFrames(cio, pid, exitWatch(pid), gone, helloLater)
	}
	exited := make(chan int, 1)
	go r.reap(pid, exited)
	for {
		select {
		case s := <-sigs:
			if s == syscall.SIGWINCH {
				continue // the host sends window sizes as frames
			}
			signalGroup(pid, s.(syscall.Signal))
		case <-gone:
			// The host is gone (killed, or its connection dropped): nobody waits for
			// the command any more, so it must not run on.
			killAll(pid, c.role)
			return 137
		case code := <-exited:
			cio.finish()
			clean := false
			if c.role == "session" {
				clean = killSubtree(sessionKillLimit)
			}
			if code == 128+int(syscall.SIGKILL) && ooms >= 0 && oomKills(m) > ooms {
				fmt.Fprint(c.stderr, wire.OOMMarker(hello.Nonce))
			}
			if clean {
				// Last: nothing of the session runs any more, so the host may look at
				// what it wrote for the last time.
				if end := c.end(hello, helloLater); end != "" {
					fmt.Fprint(c.stderr, wire.EndMarker(end))
				}
			}
			return code
		}
	}
}

// readFrames applies the host's frames until the stream ends, then closes gone. Input
// for the command is queued so a command that does not read its stdin cannot stop the
// reading, which is how the host's disappearance is noticed. With helloFirst the
// first frame is the session's hello, read after the command started
// (wire.StartFirstArg): one that is not empty ends the command (gone).
func (c *container) readFrames(cio commandIO, pid int, ended func() bool, gone chan<- struct{}, helloFirst bool) {
	if helloFirst {
		typ, p, err := wire.ReadFrame(c.stdin)
		if err != nil {
			c.tellEnd("")
			close(gone)
			return
		}
		h, herr := wire.ParseHello(p)
		if typ != wire.FrameHello || herr != nil || !h.CarriesNothing() {
			say(c.stderr, "devsandbox-init", "the session's first frame is not the empty hello %s promised; the command is ended", wire.StartFirstArg)
			c.tellEnd("")
			close(gone)
			return
		}
		if err := jobsSkew(h); err != nil {
			say(c.stderr, "devsandbox-init", "%v; the command is ended", err)
			c.tellEnd("")
			close(gone)
			return
		}
		c.tellEnd(h.End)
	}
	input := make(chan []byte, 256)
	go func() {
		for b := range input {
			if b == nil {
				cio.closeInput()
				continue
			}
			cio.write(b)
		}
	}()
	defer close(gone)
	fz := newFreezer(c.role, c.stderr, ended)
	for {
		typ, p, err := wire.ReadFrame(c.stdin)
		if err != nil {
			return
		}
		switch typ {
		case wire.FrameData:
			if len(p) > 0 {
				select {
				case input <- p:
				default:
					// The command is not reading: keep the newest input waiting
					// behind the queue rather than stop reading frames.
					go func() { input <- p }()
				}
			}
		case wire.FrameClose:
			go func() { input <- nil }()
		case wire.FrameResize:
			if rows, cols, ok := wire.ParseResize(p); ok {
				cio.resize(rows, cols)
			}
		case wire.FrameSignal:
			if len(p) == 1 {
				signalGroup(pid, syscall.Signal(p[0]))
			}
		case wire.FrameStop:
			fz.stop(p)
		case wire.FrameGo:
			fz.cont()
		}
	}
}

// jobsSkew is the error for a hello from a host that speaks another job-control
// protocol than this init (wire.JobProtocol; a host before version 2 names none).
func jobsSkew(h *wire.Hello) error {
	if h.Jobs == wire.JobProtocol {
		return nil
	}
	return fmt.Errorf("the host speaks job-control protocol %d and this devsandbox-init %d: they are from different builds; install devsandbox and its helpers together from one build (make install, or scripts/install.sh), and remove kept containers made by another (devsandbox sandboxes rm)", h.Jobs, wire.JobProtocol)
}

// tellEnd hands the End of a hello read after the command started to end (once).
func (c *container) tellEnd(end string) {
	if c.laterEnd != nil {
		c.laterEnd <- end
	}
}

// laterHelloLimit bounds how long a session init whose command started before the
// hello (StartFirstArg) and has ended waits for the hello's End: the host sends the
// hello as soon as the exec started, so it is on its way.
const laterHelloLimit = 2 * time.Second

// end is the session's End nonce (wire.Hello.End): hello's, or, when the hello comes
// after the command started (later), the one readFrames read ("" if none came
// within laterHelloLimit).
func (c *container) end(hello *wire.Hello, later bool) string {
	if !later {
		return hello.End
	}
	select {
	case end := <-c.laterEnd:
		return end
	case <-time.After(laterHelloLimit):
		return ""
	}
}

func signalGroup(pid int, s syscall.Signal) {
	if err := syscall.Kill(-pid, s); err != nil {
		_ = syscall.Kill(pid, s)
	}
}

// killAll ends the command and, for an exec'd session, everything it started. The
// run role is pid 1: its exit kills the rest of the container.
func killAll(pid int, role string) {
	_ = syscall.Kill(-pid, syscall.SIGKILL)
	_ = syscall.Kill(pid, syscall.SIGKILL)
	if role == "session" {
		killSubtree(sessionKillLimit)
	}
}

// lookCommand resolves argv0 on the container's PATH. On failure it returns "" with
// the exit status and a message. fallback is a shell to replace by /bin/sh when
// missing.
func lookCommand(argv0, fallback string) (path string, code int, msg string) {
	p, err := exec.LookPath(argv0)
	if err == nil || errors.Is(err, exec.ErrDot) {
		return p, 0, ""
	}
	if argv0 == fallback && fallback != "" {
		if _, serr := os.Stat("/bin/sh"); serr == nil {
			return "/bin/sh", 0, ""
		}
	}
	code = ExitNotFound
	if errors.Is(err, os.ErrPermission) || errors.Is(err, syscall.EISDIR) {
		code = ExitNotExecutable
	}
	return "", code, reason(err, code)
}

// secretFilesFromEnv reads plain-mode secret files from the environment and removes
// the variables.
func secretFilesFromEnv() (map[string][]byte, error) {
	files := map[string][]byte{}
	for _, kv := range os.Environ() {
		k, v, _ := strings.Cut(kv, "=")
		if !strings.HasPrefix(k, wire.SecretFileEnvPrefix) {
			continue
		}
		b, err := base64.StdEncoding.DecodeString(v)
		if err != nil {
			return nil, fmt.Errorf("%s is not base64", k)
		}
		files[strings.TrimPrefix(k, wire.SecretFileEnvPrefix)] = b
		_ = os.Unsetenv(k)
	}
	return files, nil
}

// writeSecretFiles writes each file 0400 into dir, replacing an earlier one. The
// temporary file has a name of its own: the sessions of a kept container share dir
// and may write the same files at once, and a shared name was removed or renamed
// away under all but one of them.
func writeSecretFiles(dir string, files map[string][]byte) error {
	for name, data := range files {
		if dir == "" {
			return fmt.Errorf("secret file %s: no secret directory", name)
		}
		if strings.ContainsAny(name, "/\x00") || name == "." || name == ".." {
			return fmt.Errorf("bad secret file name %q", name)
		}
		f, err := os.CreateTemp(dir, "."+name+".*.tmp") // O_EXCL, mode 0600 in a 0700 tmpfs
		if err != nil {
			return fmt.Errorf("writing the secret file %s: %v", name, err)
		}
		tmp := f.Name()
		werr := f.Chmod(0o400)
		if werr == nil {
			_, werr = f.Write(data)
		}
		if cerr := f.Close(); werr == nil {
			werr = cerr
		}
		if werr == nil {
			werr = replace(tmp, dir+"/"+name)
		}
		if werr != nil {
			_ = os.Remove(tmp)
			return fmt.Errorf("writing the secret file %s: %v", name, werr)
		}
	}
	return nil
}

// replace renames the file tmp to p, over whatever is at p: rename(2) replaces a
// file or a link (never what it names) but not a directory, which an earlier session
// of a kept container can leave at a later one's secret file's name (however deep or
// locked: the keeper may have failed to remove it); such a directory is removed
// (rmtree, following no link) and the rename tried again, once.
func replace(tmp, p string) error {
	err := os.Rename(tmp, p)
	if err == nil {
		return nil
	}
	if fi, lerr := os.Lstat(p); lerr != nil || !fi.IsDir() {
		return err
	}
	if rerr := rmtree.RemoveAll(p); rerr != nil {
		return fmt.Errorf("a directory is at its name and could not be removed: %w", rerr)
	}
	return os.Rename(tmp, p)
}

// commandEnv is the command's environment: environ (the engine's variables, the
// run's, the session's) with image's ("NAME=value", wire.Manifest.ImageEnv) set over
// it, except those the session's hello sets. The host left out of image what the run
// sets itself. Pure.
func commandEnv(environ, image []string, hello map[string]string) []string {
	env := slices.Clone(environ)
	for _, kv := range image {
		k, _, ok := strings.Cut(kv, "=")
		if _, session := hello[k]; !ok || k == "" || session {
			continue
		}
		if i := slices.IndexFunc(env, func(e string) bool { return strings.HasPrefix(e, k+"=") }); i >= 0 {
			env[i] = kv
		} else {
			env = append(env, kv)
		}
	}
	return env
}

// envValue is the value of k in env.
func envValue(env []string, k string) (string, bool) {
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, k+"="); ok {
			return v, true
		}
	}
	return "", false
}
