// Package buildstamp tells whether devsandbox and a helper binary installed beside it
// (devsandbox-bwrap-init, devsandbox-init, devsandbox-proxy, devsandbox-docker,
// devsandbox-krun) come from one build. Their command lines and wire protocols change
// together, so a helper from another build fails in ways that blame something else
// (an old init refuses a new flag, and bubblewrap seems to fail).
//
// `make build` stamps every binary of one build with the same ELF build-id note
// (`-ldflags -B`, scripts/buildstamp.sh): a magic, a digest of the sources and the
// version. Reading it is a few small reads of the file's headers, no exec. A binary
// built otherwise (go build, go test) carries no stamp; two unstamped binaries are
// taken to match, as nothing tells them apart. Only ELF files are read: on other
// systems (macOS) every binary reads as unstamped.
package buildstamp

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/devsandbox/devsandbox/isolator"
)

// magic starts the build-id note of a stamped devsandbox binary.
const magic = "dsb1"

// digestLen is the length of the source digest that follows magic; the version
// (at most 20 bytes: the linker takes at most 32 in all) follows it.
const digestLen = 8

// Stamp is a binary's build stamp; the zero Stamp is a binary without one.
type Stamp struct {
	// Digest is the hex digest of the sources the binary was built from.
	Digest string
	// Version is the version the build was given (git describe), perhaps truncated.
	Version string
}

// Stamped reports whether the binary carried a stamp.
func (s Stamp) Stamped() bool { return s.Digest != "" }

// String is the stamp as people read it.
func (s Stamp) String() string {
	if !s.Stamped() {
		return "no build stamp (built without `make build`, or before stamps existed)"
	}
	return fmt.Sprintf("%s (build %s)", s.Version, s.Digest)
}

// Parse decodes a build-id note's description; a note that is not a devsandbox stamp
// (another linker's build id) is no stamp.
func Parse(desc []byte) Stamp {
	if len(desc) < len(magic)+digestLen || string(desc[:len(magic)]) != magic {
		return Stamp{}
	}
	d := desc[len(magic):]
	return Stamp{Digest: hex.EncodeToString(d[:digestLen]), Version: string(bytes.TrimRight(d[digestLen:], "\x00"))}
}

// Read returns the stamp of the binary at path: the zero Stamp for a binary without
// one (or a file that is not ELF), an error when the file cannot be read.
func Read(path string) (Stamp, error) {
	f, err := os.Open(path)
	if err != nil {
		return Stamp{}, err
	}
	defer f.Close()
	desc, err := buildIDNote(f)
	if err != nil {
		return Stamp{}, fmt.Errorf("reading the build stamp of %s: %w", path, err)
	}
	return Parse(desc), nil
}

// Self is the running binary's stamp.
func Self() (Stamp, error) { return Read("/proc/self/exe") }

// ErrSkew is wrapped by a SkewError.
var ErrSkew = errors.New("devsandbox and a helper binary come from different builds")

// SkewError says that a helper beside devsandbox comes from another build.
type SkewError struct {
	Name, Path string // the helper
	Self       string // the running binary
	Want, Got  Stamp  // the running binary's stamp and the helper's
}

func (e *SkewError) Error() string {
	return fmt.Sprintf("%s at %s is from another build than %s at %s (%s: %s; %s: %s): a helper from another build does not speak the same protocol; %s",
		e.Name, e.Path, filepath.Base(e.Self), e.Self, e.Name, e.Got, filepath.Base(e.Self), e.Want, Fix)
}

func (e *SkewError) Unwrap() error { return ErrSkew }

// Fix is what a SkewError tells people to do.
const Fix = "install devsandbox and its helpers together from one build (make install, or scripts/install.sh), and check that no older copy comes first on PATH"

// Check returns a *SkewError when the helper at path was built otherwise than the
// running binary (self is its stamp), and an error when it cannot be read. An
// unstamped running binary (go build, a library's program) checks nothing: it has no
// build to compare with.
func Check(name, path string, self Stamp) error {
	if !self.Stamped() {
		return nil
	}
	got, err := Read(path)
	if err != nil {
		return err
	}
	if got == self {
		return nil
	}
	exe, err := os.Executable()
	if err != nil {
		exe = "/proc/self/exe"
	}
	return &SkewError{Name: name, Path: path, Self: exe, Want: self, Got: got}
}

// Checker returns CheckSelf that reads the running binary's stamp once, at its first
// call (a launch checks two or three helpers).
func Checker() func(name, path string) error {
	self := sync.OnceValues(Self)
	return func(name, path string) error {
		s, err := self()
		if err != nil {
			return err
		}
		return Check(name, path, s)
	}
}

// CheckSelf is Check against the running binary's stamp.
func CheckSelf(name, path string) error {
	self, err := Self()
	if err != nil {
		return err
	}
	return Check(name, path, self)
}

const (
	shtNote       = 7
	ntGNUBuildID  = 3
	maxHeaderRead = 64 << 10
)

// buildIDNote returns the description of the ELF file's GNU build-id note (nil when
// it has none, or is not ELF). Go's linker puts that note in a section of its own,
// outside any PT_NOTE segment, so the section headers are read.
func buildIDNote(r io.ReaderAt) ([]byte, error) {
	var ident [64]byte
	n, err := r.ReadAt(ident[:], 0)
	if n < 52 || string(ident[:4]) != "\x7fELF" {
		if err != nil && !errors.Is(err, io.EOF) {
			return nil, err
		}
		return nil, nil
	}
	var bo binary.ByteOrder = binary.LittleEndian
	if ident[5] == 2 {
		bo = binary.BigEndian
	}
	is64 := ident[4] == 2
	var shoff int64
	var shentsize, shnum int
	if is64 {
		shoff = int64(bo.Uint64(ident[0x28:]))
		shentsize, shnum = int(bo.Uint16(ident[0x3a:])), int(bo.Uint16(ident[0x3c:]))
	} else {
		shoff = int64(bo.Uint32(ident[0x20:]))
		shentsize, shnum = int(bo.Uint16(ident[0x2e:])), int(bo.Uint16(ident[0x30:]))
	}
	if shoff == 0 || shnum == 0 || shentsize < 40 || shentsize*shnum > maxHeaderRead {
		return nil, nil
	}
	sh := make([]byte, shentsize*shnum)
	if _, err := r.ReadAt(sh, shoff); err != nil {
		return nil, fmt.Errorf("section headers: %w", err)
	}
	for i := 0; i < shnum; i++ {
		h := sh[i*shentsize:]
		if bo.Uint32(h[4:]) != shtNote {
			continue
		}
		var off, size int64
		if is64 {
			off, size = int64(bo.Uint64(h[0x18:])), int64(bo.Uint64(h[0x20:]))
		} else {
			off, size = int64(bo.Uint32(h[0x10:])), int64(bo.Uint32(h[0x14:]))
		}
		if size <= 0 || size > maxHeaderRead {
			continue
		}
		b := make([]byte, size)
		if _, err := r.ReadAt(b, off); err != nil {
			return nil, fmt.Errorf("a note section: %w", err)
		}
		if d := gnuBuildID(b, bo); d != nil {
			return d, nil
		}
	}
	return nil, nil
}

// gnuBuildID finds the GNU build-id note in a note section's bytes.
func gnuBuildID(b []byte, bo binary.ByteOrder) []byte {
	for len(b) >= 12 {
		namesz, descsz, typ := int(bo.Uint32(b)), int(bo.Uint32(b[4:])), bo.Uint32(b[8:])
		nameEnd := 12 + (namesz+3)&^3
		descEnd := nameEnd + (descsz+3)&^3
		if namesz < 0 || descsz < 0 || descEnd > len(b) || nameEnd > len(b) {
			return nil
		}
		if typ == ntGNUBuildID && namesz == 4 && string(b[12:16]) == "GNU\x00" {
			return b[nameEnd : nameEnd+descsz]
		}
		b = b[descEnd:]
	}
	return nil
}

// Row is doctor's row on the helpers installed in dir (names that are not there are
// left out): active when each comes from the running binary's build.
func Row(dir string, names []string) isolator.Check {
	row := isolator.Check{Name: "helper binaries"}
	self, err := Self()
	if err != nil {
		row.Status = isolator.Status{State: isolator.Unavailable, Reason: err.Error(), Fix: "reinstall devsandbox (make install)"}
		return row
	}
	var found, bad []string
	for _, n := range names {
		p := filepath.Join(dir, n)
		if _, err := os.Stat(p); err != nil {
			continue
		}
		found = append(found, n)
		if !self.Stamped() {
			continue
		}
		if err := Check(n, p, self); err != nil {
			var se *SkewError
			if errors.As(err, &se) {
				err = fmt.Errorf("%s at %s: %s", n, p, se.Got)
			}
			bad = append(bad, err.Error())
		}
	}
	switch {
	case len(found) == 0:
		row.State, row.Detail = isolator.Active, "none installed beside devsandbox"
	case len(bad) > 0:
		row.Status = isolator.Status{State: isolator.Unavailable, Reason: "from another build than this devsandbox, " + self.String() + ": " + strings.Join(bad, "; "), Fix: Fix}
	case !self.Stamped():
		row.State, row.Detail = isolator.Active, "not compared: this devsandbox carries no build stamp (built without make build); found: "+strings.Join(found, ", ")
	default:
		row.State, row.Detail = isolator.Active, strings.Join(found, ", ")+": all from this build, "+self.String()
	}
	return row
}
