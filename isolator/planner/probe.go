package planner

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/devsandbox/devsandbox/internal/buildstamp"
	"github.com/devsandbox/devsandbox/internal/hostaddr"
	"github.com/devsandbox/devsandbox/internal/rawfile"
	"github.com/devsandbox/devsandbox/isolator/handoff"
	"github.com/devsandbox/devsandbox/isolator/maskscan"
	"github.com/devsandbox/devsandbox/isolator/sockdir"
	"github.com/devsandbox/devsandbox/proxy/ca/capem"
	"github.com/devsandbox/devsandbox/proxy/service"
	"golang.org/x/sys/unix"
)

// Probe is how Build reads the host. Every field is a function so tests can build
// Plans against a fake host; OS returns the real one.
type Probe struct {
	Cwd      string
	Lstat    func(string) (fs.FileInfo, error)
	Stat     func(string) (fs.FileInfo, error)
	ReadFile func(string) ([]byte, error)
	// ReadRegular reads a file a sandbox could have written (rawfile.ReadRegular): a
	// regular file of at most limit bytes, a final symlink followed only with follow,
	// never blocking on a FIFO. When nil, a stat then ReadFile stand in for it.
	ReadRegular func(path string, limit int64, follow bool) ([]byte, error)
	// ReadHead reads at most the first n bytes of a regular file, refusing a final
	// symlink and never blocking on a FIFO (tools.Host.ReadHead).
	ReadHead func(path string, n int) ([]byte, error)
	ReadDir  func(string) ([]fs.DirEntry, error)
	// ReadDirN returns at most n entries of a directory, in directory order.
	ReadDirN func(dir string, n int) ([]fs.DirEntry, error)
	// ReadNames returns the names in a directory, in any order, and an error when it
	// could not be read to its end (ReadDir's names when nil).
	ReadNames    func(dir string) ([]string, error)
	EvalSymlinks func(string) (string, error)
	Readlink     func(string) (string, error)
	// ACL returns a directory's POSIX access ACL as stored (system.posix_acl_access),
	// nil when it has none; nil means no ACLs (a fake host).
	ACL func(dir string) ([]byte, error)
	// LookPath reports whether a command is on PATH. OS leaves it nil: ToolHost then
	// searches the host's PATH as exec.LookPath does, through Stat (in Build, its
	// stat cache).
	LookPath func(string) bool
	// UnixSockets lists the paths of the host's bound Unix sockets (procNetUnix on
	// the host); nil lists none. Read only where a view shows more of the host than
	// the minimal one (maskHostSockets).
	UnixSockets func() ([]string, error)
	// ScanMasks finds the files to mask below a root (maskscan.Scan when nil).
	ScanMasks func(root string, m maskscan.Matcher, cacheFile string) ([]maskscan.Match, error)
	// LookupIP resolves a host name (allowlist mode resolves its plain hosts at launch).
	LookupIP func(host string) ([]netip.Addr, error)
	// HostAddrs lists this host's interface addresses, which no allowed name may
	// resolve to in allowlist mode (hostaddr.Read, as the proxy's; nil: none).
	HostAddrs  func() ([]netip.Addr, error)
	Executable func() (string, error)
	// SameBuild returns an error when the helper name installed at path comes from
	// another build than the running binary (buildstamp.CheckSelf); nil checks nothing
	// (a fake host).
	SameBuild func(name, path string) error
	// SocketDir chooses the project's socket directory (sockdir.Choose when nil).
	SocketDir func(h sockdir.Host, stateDir, projectID string) (string, error)
	// ProxyCA returns the project's proxy CA from dir, creating it when create is set
	// and it is missing or expiring; without create, a missing CA is nil, no error
	// (loadCA with MakeProxyCA when nil).
	ProxyCA func(dir, name string, create bool) (*capem.File, error)
	// MakeProxyCA makes or renews the project's proxy CA in dir (ca.LoadOrCreate; by
	// devsandbox-proxy, makeCA, when nil).
	MakeProxyCA func(dir, name string) error

	// osLinks: Lstat, Readlink and EvalSymlinks are the host's, so Build may resolve
	// links with its own cache (see evalCache), built from the first two.
	osLinks bool
	// head is the system view LoadDir started working out for Build (startAhead).
	head *SystemHead
}

// loadCA is Probe.ProxyCA on the host's files. devsandbox links no crypto package
// (package capem): it reads the CA, and when the CA is missing or expiring, maker (by
// default devsandbox-proxy) makes it. devsandbox-proxy checks the CA whole (its key
// pairs with the certificate) when it starts, on the PEM the plan hands it.
func loadCA(dir, name string, create bool, maker func(dir, name string) error) (*capem.File, error) {
	path := filepath.Join(dir, capem.FileName)
	c, err := capem.Load(path)
	switch {
	case err == nil && (!create || time.Now().Add(capem.Renew).Before(c.NotAfter)):
		return c, nil
	case err != nil && !errors.Is(err, fs.ErrNotExist):
		return nil, err
	case !create:
		return nil, nil
	}
	if maker == nil {
		maker = makeCA
	}
	if err := maker(dir, name); err != nil {
		return nil, err
	}
	return capem.Load(path)
}

// makeCA has devsandbox-proxy, which links the crypto packages devsandbox does not,
// make or renew the proxy CA in dir (ca.CreateArg: ca.LoadOrCreate). Nothing secret
// is in its argv or environment; the key goes only into the CA file.
func makeCA(dir, name string) error {
	bin := handoff.Beside(service.Program)
	if bin == "" {
		return fmt.Errorf("creating the proxy CA needs %s, which is not installed next to devsandbox: reinstall devsandbox (make install, or scripts/install.sh)", service.Program)
	}
	if err := buildstamp.CheckSelf(service.Program, bin); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	// devsandbox-proxy makes the CA in its own process, with no child: killing it
	// alone ends it.
	cmd := exec.CommandContext(ctx, bin, capem.CreateArg, dir, name)
	var stderr strings.Builder
	cmd.Env, cmd.Stderr, cmd.WaitDelay = []string{}, &stderr, time.Second
	if err := cmd.Run(); err != nil {
		if msg := strings.TrimSpace(stderr.String()); msg != "" {
			return fmt.Errorf("%s: %w", strings.TrimPrefix(msg, service.Program+": "), err)
		}
		return fmt.Errorf("creating the proxy CA with %s: %w", bin, err)
	}
	return nil
}

// OS returns a Probe of the real host with cwd as the working directory.
func OS(cwd string) Probe {
	return Probe{
		Cwd:          cwd,
		Lstat:        os.Lstat,
		Stat:         os.Stat,
		ReadFile:     os.ReadFile,
		ReadRegular:  rawfile.ReadRegular,
		ReadHead:     readHead,
		ReadDir:      os.ReadDir,
		ReadDirN:     readDirN,
		ReadNames:    readNames,
		EvalSymlinks: filepath.EvalSymlinks,
		Readlink:     os.Readlink,
		ACL:          readACL,
		UnixSockets:  procNetUnix,
		osLinks:      true,
		LookupIP: func(host string) ([]netip.Addr, error) {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			return net.DefaultResolver.LookupNetIP(ctx, "ip", host)
		},
		HostAddrs: hostaddr.Read,
		SameBuild: buildstamp.Checker(),
		Executable: func() (string, error) {
			p, err := os.Executable()
			if err != nil {
				return "", err
			}
			return filepath.EvalSymlinks(p)
		},
	}
}

// readHead is Probe.ReadHead on the host.
func readHead(p string, n int) ([]byte, error) {
	f, err := os.OpenFile(p, os.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%s: not a regular file", p)
	}
	b := make([]byte, n)
	m, err := io.ReadFull(f, b)
	if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, io.EOF) {
		return nil, err
	}
	return b[:m], nil
}

// sameBuild checks that each helper at paths ("" skipped) comes from the running
// binary's build (SameBuild).
func (pr Probe) sameBuild(paths ...string) error {
	if pr.SameBuild == nil {
		return nil
	}
	for _, p := range paths {
		if p == "" {
			continue
		}
		if err := pr.SameBuild(filepath.Base(p), p); err != nil {
			return err
		}
	}
	return nil
}

func (pr Probe) exists(p string) bool {
	_, err := pr.Lstat(p)
	return err == nil
}

// readPresent is ReadFile for a file that is usually absent: one Lstat answers
// "does not exist" first, which in Build the stat cache often knows from a directory
// listing without a system call (readMiserc's files, two per directory from the
// project up to the home). Lstat failing with ENOENT means the open would have; any
// other answer (a link, a directory, no permission) leaves the verdict to ReadFile.
//
// The files it reads (.miserc.toml) may be the sandbox's: it reads a regular file
// only, a symlink to one included (mise follows links), at most maxWritableFile bytes.
func (pr Probe) readPresent(p string) ([]byte, error) {
	if _, err := pr.Lstat(p); errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	return pr.readWritable(p, true)
}

// maxWritableFile is the most devsandbox reads of a file a sandbox could have written
// (a .miserc.toml, git's pointer files and config in the project): a link to
// /dev/zero or a huge file must not fill the host's memory.
const maxWritableFile = 16 << 20

// readWritable reads p, a file a sandbox could have written, through ReadRegular: a
// regular file (a final symlink followed only with follow) of at most
// maxWritableFile bytes, without blocking on a FIFO left in its place.
func (pr Probe) readWritable(p string, follow bool) ([]byte, error) {
	if pr.ReadRegular != nil {
		return pr.ReadRegular(p, maxWritableFile, follow)
	}
	stat := pr.Lstat
	if follow {
		stat = pr.Stat
	}
	fi, err := stat(p)
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, rawfile.ErrNotRegular
	}
	if fi.Size() > maxWritableFile {
		return nil, rawfile.ErrTooLarge
	}
	return pr.ReadFile(p)
}

func (pr Probe) isDir(p string) bool {
	fi, err := pr.Stat(p)
	return err == nil && fi.IsDir()
}

// readDirN uses ReadDirN when set (fakes may leave it out), else ReadDir.
func (pr Probe) readDirN(dir string, n int) ([]fs.DirEntry, error) {
	if pr.ReadDirN != nil {
		return pr.ReadDirN(dir, n)
	}
	ents, err := pr.ReadDir(dir)
	if len(ents) > n {
		ents = ents[:n]
	}
	return ents, err
}

// names returns the sorted names in dir.
func (pr Probe) names(dir string) ([]string, error) {
	var out []string
	var err error
	switch {
	case pr.ReadNames != nil:
		out, err = pr.ReadNames(dir)
	case pr.ReadDir != nil:
		var ents []fs.DirEntry
		ents, err = pr.ReadDir(dir)
		for _, e := range ents {
			out = append(out, e.Name())
		}
	default:
		return nil, nil
	}
	sort.Strings(out)
	return out, err
}

// listedMax and listedMaxSize bound the directories a statCache lists: one with more
// names, or larger (st_size: a few 4 KiB blocks on ext4), is asked about path by path
// instead (reading all of /usr/bin costs more than the few names Build asks in it).
const (
	listedMax     = 512
	listedMaxSize = 16384
)
