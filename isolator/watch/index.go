package watch

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
)

// errIndex is the error for an index this reader does not understand.
var errIndex = errors.New("unreadable git index")

// indexEntry is one entry of a git index: its path, whether it is a gitlink, and
// its position in the index.
type indexEntry struct {
	name    string
	gitlink bool
	pos     int
}

// gitIndex is what the watch takes from a git index file (gitformat-index(5)): the
// entries it kept (see readIndex) and, for a split index, its link extension.
type gitIndex struct {
	entries []indexEntry
	// shared is the hex object name of the shared index a split index's link
	// extension names ("" for an index that is not split): git reads the entries
	// of $GIT_DIR/sharedindex.<shared> as this index's own, whatever core.splitIndex
	// says.
	shared string
	// replacing counts the entries with an empty name: in a split index, those
	// that replace the shared entries the replace bitmap names, in order.
	// linkOrdinals holds the ordinals among them of the gitlinks, and linkPos the
	// positions in the shared index these replace, once the link extension is read;
	// replaceKnown is false when it holds no replace bitmap or one this reader
	// cannot decode.
	replacing    int
	linkOrdinals []int
	linkPos      []int
	replaceKnown bool
}

// Bounds on what the index reader holds of a file the sandbox may have written.
const (
	maxIndexName = 1 << 20  // one path
	maxLink      = 16 << 20 // a link extension: a hash and two EWAH bitmaps
)

// gitlinks returns the paths of the gitlink entries (mode 160000: a submodule's
// commit) of a git index, versions 2 to 4; hashLen is 20 for SHA-1 repositories, 32
// for SHA-256 ones. Those are the directories the host's git status enters and runs
// git in. For a split index these are only the entries of the index file itself:
// see splitGitlinks.
func gitlinks(b []byte, hashLen int) ([]string, error) {
	ix, err := readIndex(bytes.NewReader(b), int64(len(b)), hashLen, mainEntry)
	if err != nil {
		return nil, err
	}
	return ix.gitlinks(), nil
}

// keepFunc says whether readIndex keeps the entry with a path at pos, a gitlink or
// not. Entries without a path (those of a split index that replace shared ones) are
// only counted (gitIndex.replacing, linkOrdinals).
type keepFunc func(gitlink bool, pos int) bool

// mainEntry is what readIndex keeps of an index file: its gitlinks.
func mainEntry(gitlink bool, _ int) bool { return gitlink }

// allEntries keeps every entry with a path.
func allEntries(bool, int) bool { return true }

// gitlinks returns the paths of ix's gitlinks that have a name.
func (ix *gitIndex) gitlinks() []string {
	var out []string
	for _, e := range ix.entries {
		if e.gitlink && e.name != "" {
			out = append(out, e.name)
		}
	}
	return out
}

// replacedGitlinks returns the positions in the shared index of the entries ix
// replaces with a gitlink (ix read with mainEntry); ok is false when its replace
// bitmap does not say which they are.
func (ix *gitIndex) replacedGitlinks() (pos []int, ok bool) {
	if len(ix.linkOrdinals) == 0 {
		return nil, true
	}
	if !ix.replaceKnown || len(ix.linkPos) != len(ix.linkOrdinals) {
		return nil, false
	}
	return ix.linkPos, true
}

// splitGitlinks returns the gitlinks git takes from the shared index sh of a split
// index: every gitlink of sh (those the delete bitmap removes too: more is checked,
// never less), and the entries the index replaces with a gitlink, whose positions
// sh was read to keep (replacedGitlinks).
func splitGitlinks(sh *gitIndex, replaced []int) []string {
	want := map[int]bool{}
	for _, p := range replaced {
		want[p] = true
	}
	var out []string
	for _, e := range sh.entries {
		if e.gitlink || want[e.pos] {
			out = append(out, e.name)
		}
	}
	return out
}

// readIndex reads a git index of size bytes from r and keeps the entries keep
// chooses, holding at most one path and the link extension of it at a time: an
// index the sandbox wrote may be as large as maxIndex. The extensions after the
// entries are skipped, but for a split index's link; reading stops at one whose
// name says git must understand it to use the index and this reader does not (git
// refuses an index it does not understand: nothing it enters is missed).
func readIndex(r io.ReadSeeker, size int64, hashLen int, keep keepFunc) (*gitIndex, error) {
	s := &indexStream{r: r, br: bufio.NewReaderSize(r, 64<<10)}
	h, err := s.read(12)
	if err != nil || string(h[:4]) != "DIRC" {
		return nil, fmt.Errorf("%w: no DIRC header", errIndex)
	}
	version := binary.BigEndian.Uint32(h[4:])
	if version < 2 || version > 4 {
		return nil, fmt.Errorf("%w: version %d", errIndex, version)
	}
	count := binary.BigEndian.Uint32(h[8:])
	ix := &gitIndex{}
	var prev []byte
	fixed := 40 + hashLen + 2 // stat data, hash, flags
	for n := uint32(0); n < count; n++ {
		e, err := s.read(fixed)
		if err != nil {
			return nil, fmt.Errorf("%w: entry %d truncated", errIndex, n)
		}
		mode := binary.BigEndian.Uint32(e[24:])
		flags := binary.BigEndian.Uint16(e[40+hashLen:])
		length := fixed
		if flags&0x4000 != 0 { // extended flags
			if version < 3 || s.skip(2) != nil {
				return nil, fmt.Errorf("%w: entry %d: bad extended flags", errIndex, n)
			}
			length += 2
		}
		if version == 4 {
			strip, err := s.varint()
			if err != nil || strip > uint64(len(prev)) {
				return nil, fmt.Errorf("%w: entry %d: bad path prefix", errIndex, n)
			}
			suffix, err := s.name(len(prev) - int(strip))
			if err != nil {
				return nil, fmt.Errorf("%w: entry %d: %w", errIndex, n, err)
			}
			prev = append(prev[:len(prev)-int(strip)], suffix...)
		} else {
			name, err := s.name(0)
			if err != nil {
				return nil, fmt.Errorf("%w: entry %d: %w", errIndex, n, err)
			}
			prev = append(prev[:0], name...)
			// Entries are padded with NULs to a multiple of 8 bytes (at least one NUL).
			l := length + len(name)
			if s.skip(int64((l+8)&^7-(l+1))) != nil {
				return nil, fmt.Errorf("%w: entry %d truncated", errIndex, n)
			}
		}
		gitlink := mode&0o170000 == 0o160000
		switch {
		case len(prev) == 0:
			if gitlink {
				ix.linkOrdinals = append(ix.linkOrdinals, ix.replacing)
			}
			ix.replacing++
		case keep(gitlink, int(n)):
			ix.entries = append(ix.entries, indexEntry{name: string(prev), gitlink: gitlink, pos: int(n)})
		}
	}
	// The extensions follow, each a signature, a size and its data, then the
	// index's own hash.
	for s.pos+8 <= size-int64(hashLen) {
		h, err := s.read(8)
		if err != nil {
			return nil, fmt.Errorf("%w: extension truncated", errIndex)
		}
		sig, n := string(h[:4]), int64(binary.BigEndian.Uint32(h[4:]))
		if n > size-int64(hashLen)-s.pos {
			return nil, fmt.Errorf("%w: extension %q truncated", errIndex, sig)
		}
		switch {
		case sig == "link":
			if n > maxLink {
				return nil, fmt.Errorf("%w: a link extension of %d bytes", errIndex, n)
			}
			data := make([]byte, n)
			if _, err := io.ReadFull(s.br, data); err != nil {
				return nil, fmt.Errorf("%w: link extension truncated", errIndex)
			}
			s.pos += n
			if err := ix.link(data, hashLen); err != nil {
				return nil, err
			}
		case sig[0] < 'A' || sig[0] > 'Z': // git must understand it (sdir: a sparse index)
			return ix, nil
		default:
			if s.skip(n) != nil {
				return nil, fmt.Errorf("%w: extension %q truncated", errIndex, sig)
			}
		}
	}
	return ix, nil
}

// link reads a split index's link extension: the shared index's name, then, when
// there is more, the delete and the replace bitmaps.
func (ix *gitIndex) link(data []byte, hashLen int) error {
	if len(data) < hashLen {
		return fmt.Errorf("%w: link extension too short", errIndex)
	}
	if oid := data[:hashLen]; !allZero(oid) {
		ix.shared = hex.EncodeToString(oid)
	}
	rest := data[hashLen:]
	if len(rest) == 0 {
		return nil
	}
	n, err := ewahEach(rest, nil)
	if err != nil {
		return nil // the replace bitmap is unknown
	}
	// The k-th set bit is the shared position the k-th replacing entry replaces;
	// more set bits than replacing entries make git refuse the index.
	k, next := 0, 0
	_, err = ewahEach(rest[n:], func(pos int64) error {
		if k >= ix.replacing {
			return fmt.Errorf("%w: more replacements than entries", errIndex)
		}
		if next < len(ix.linkOrdinals) && ix.linkOrdinals[next] == k {
			ix.linkPos = append(ix.linkPos, int(pos))
			next++
		}
		k++
		return nil
	})
	ix.replaceKnown = err == nil
	return nil
}

// indexStream reads an index through a buffer, counting its offset.
type indexStream struct {
	r   io.ReadSeeker
	br  *bufio.Reader
	pos int64
	buf []byte
}

// read returns the next n bytes (n at most the buffer's size), valid until the
// next read.
func (s *indexStream) read(n int) ([]byte, error) {
	if cap(s.buf) < n {
		s.buf = make([]byte, n)
	}
	b := s.buf[:n]
	if _, err := io.ReadFull(s.br, b); err != nil {
		return nil, err
	}
	s.pos += int64(n)
	return b, nil
}

// skip passes n bytes, seeking past what the buffer does not hold.
func (s *indexStream) skip(n int64) error {
	if n <= int64(s.br.Buffered()) {
		_, err := s.br.Discard(int(n))
		s.pos += n
		return err
	}
	s.pos += n
	if _, err := s.r.Seek(s.pos, io.SeekStart); err != nil {
		return err
	}
	s.br.Reset(s.r)
	_, err := s.br.Peek(1) // past the end: as a read there would
	if errors.Is(err, io.EOF) {
		return io.ErrUnexpectedEOF
	}
	return nil
}

// name reads a path up to its NUL (not returned), at most maxIndexName bytes with
// the have bytes it is appended to.
func (s *indexStream) name(have int) ([]byte, error) {
	var long []byte
	for {
		b, err := s.br.ReadSlice(0)
		s.pos += int64(len(b))
		if (err == nil || errors.Is(err, bufio.ErrBufferFull)) && have+len(long)+len(b) > maxIndexName+1 {
			return nil, errors.New("a path longer than 1 MiB")
		}
		switch {
		case err == nil:
			if long == nil {
				return b[:len(b)-1], nil
			}
			return append(long, b[:len(b)-1]...), nil
		case errors.Is(err, bufio.ErrBufferFull):
			long = append(long, b...)
		default:
			return nil, errors.New("unterminated path")
		}
	}
}

// varint reads git's offset varint (varint.c).
func (s *indexStream) varint() (uint64, error) {
	c, err := s.br.ReadByte()
	if err != nil {
		return 0, err
	}
	s.pos++
	v := uint64(c & 127)
	for w := 1; c&128 != 0; w++ {
		if w > 9 {
			return 0, errors.New("varint too long")
		}
		if c, err = s.br.ReadByte(); err != nil {
			return 0, err
		}
		s.pos++
		v++
		v = v<<7 + uint64(c&127)
	}
	return v, nil
}

func allZero(b []byte) bool {
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}

// ewahEach decodes the EWAH bitmap at the start of b (git's ewah/ewah_io.c: the
// number of bits, the number of 64-bit words, the words, the position of the last
// run-length word, all big-endian), calls each (when not nil) with the position of
// every set bit in order until it returns an error, and returns the bitmap's
// length in bytes.
func ewahEach(b []byte, each func(pos int64) error) (n int, err error) {
	if len(b) < 8 {
		return 0, fmt.Errorf("%w: bitmap truncated", errIndex)
	}
	nbits, words := int64(binary.BigEndian.Uint32(b)), int64(binary.BigEndian.Uint32(b[4:]))
	if words > int64(len(b)-12)/8 {
		return 0, fmt.Errorf("%w: bitmap truncated", errIndex)
	}
	n = 12 + 8*int(words)
	if each == nil {
		return n, nil
	}
	word := func(i int64) uint64 { return binary.BigEndian.Uint64(b[8+8*i:]) }
	var pos int64
	for i := int64(0); i < words && pos < nbits; { // no bit is set past nbits
		rlw := word(i)
		i++
		run, literals := int64(rlw>>1&0xFFFFFFFF)*64, int64(rlw>>33)
		if rlw&1 != 0 {
			for p := pos; p < pos+run && p < nbits; p++ {
				if err := each(p); err != nil {
					return 0, err
				}
			}
		}
		pos += run
		for j := int64(0); j < literals && i < words && pos < nbits; j, i = j+1, i+1 {
			for w, c := word(i), int64(0); w != 0 && c < 64; c++ {
				if w>>c&1 != 0 && pos+c < nbits {
					if err := each(pos + c); err != nil {
						return 0, err
					}
				}
			}
			pos += 64
		}
	}
	return n, nil
}
