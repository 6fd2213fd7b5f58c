package watch

import (
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
)

// errIndex is the error for an index this reader does not understand.
var errIndex = errors.New("unreadable git index")

// indexEntry is one entry of a git index: its path and whether it is a gitlink.
type indexEntry struct {
	name    string
	gitlink bool
}

// gitIndex is what the watch takes from a git index file (gitformat-index(5)).
type gitIndex struct {
	entries []indexEntry
	// shared is the hex object name of the shared index a split index's link
	// extension names ("" for an index that is not split): git reads the entries
	// of $GIT_DIR/sharedindex.<shared> as this index's own, whatever core.splitIndex
	// says.
	shared string
	// replace holds the positions in the shared index of the entries this index's
	// first entries (those with an empty name, in order) replace; replaceKnown is
	// false when the link extension holds no replace bitmap or one this reader
	// cannot decode.
	replace      []int
	replaceKnown bool
}

// gitlinks returns the paths of the gitlink entries (mode 160000: a submodule's
// commit) of a git index, versions 2 to 4; hashLen is 20 for SHA-1 repositories, 32
// for SHA-256 ones. Those are the directories the host's git status enters and runs
// git in. For a split index these are only the entries of the index file itself:
// see splitGitlinks.
func gitlinks(b []byte, hashLen int) ([]string, error) {
	ix, err := readIndex(b, hashLen)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, e := range ix.entries {
		if e.gitlink && e.name != "" {
			out = append(out, e.name)
		}
	}
	return out, nil
}

// splitGitlinks returns the gitlinks git takes from a split index ix and its shared
// index sh, erring on the side of more: every gitlink of the shared index (those
// the delete bitmap removes too), and the shared entry each gitlink among ix's
// replacing entries replaces (every shared entry's path when the replace bitmap
// does not say which).
func splitGitlinks(ix, sh *gitIndex) []string {
	var out []string
	for _, e := range sh.entries {
		if e.gitlink {
			out = append(out, e.name)
		}
	}
	k := 0 // the replacing entries come first, with empty names
	for _, e := range ix.entries {
		if e.name != "" {
			continue
		}
		if e.gitlink {
			if !ix.replaceKnown || k >= len(ix.replace) || ix.replace[k] >= len(sh.entries) {
				for _, s := range sh.entries {
					out = append(out, s.name)
				}
				return out
			}
			out = append(out, sh.entries[ix.replace[k]].name)
		}
		k++
	}
	return out
}

// readIndex reads the entries of a git index and, for a split index, its link
// extension.
func readIndex(b []byte, hashLen int) (*gitIndex, error) {
	if len(b) < 12 || string(b[:4]) != "DIRC" {
		return nil, fmt.Errorf("%w: no DIRC header", errIndex)
	}
	version := binary.BigEndian.Uint32(b[4:])
	if version < 2 || version > 4 {
		return nil, fmt.Errorf("%w: version %d", errIndex, version)
	}
	count := binary.BigEndian.Uint32(b[8:])
	pos := 12
	ix := &gitIndex{}
	prev := ""
	for n := uint32(0); n < count; n++ {
		start := pos
		fixed := 40 + hashLen + 2 // stat data, hash, flags
		if pos+fixed > len(b) {
			return nil, fmt.Errorf("%w: entry %d truncated", errIndex, n)
		}
		mode := binary.BigEndian.Uint32(b[pos+24:])
		flags := binary.BigEndian.Uint16(b[pos+40+hashLen:])
		pos += fixed
		if flags&0x4000 != 0 { // extended flags
			if version < 3 || pos+2 > len(b) {
				return nil, fmt.Errorf("%w: entry %d: bad extended flags", errIndex, n)
			}
			pos += 2
		}
		var name string
		if version == 4 {
			strip, w := varint(b[pos:])
			if w == 0 || strip > uint64(len(prev)) {
				return nil, fmt.Errorf("%w: entry %d: bad path prefix", errIndex, n)
			}
			pos += w
			end := indexByte(b, pos, 0)
			if end < 0 {
				return nil, fmt.Errorf("%w: entry %d: unterminated path", errIndex, n)
			}
			name = prev[:len(prev)-int(strip)] + string(b[pos:end])
			pos = end + 1
		} else {
			end := indexByte(b, pos, 0)
			if end < 0 {
				return nil, fmt.Errorf("%w: entry %d: unterminated path", errIndex, n)
			}
			name = string(b[pos:end])
			// Entries are padded with NULs to a multiple of 8 bytes (at least one NUL).
			pos = start + ((end-start)+8)&^7
		}
		prev = name
		ix.entries = append(ix.entries, indexEntry{name: name, gitlink: mode&0o170000 == 0o160000})
	}
	// The extensions follow, each a signature, a size and its data, then the
	// index's own hash.
	for pos+8 <= len(b)-hashLen {
		sig, size := string(b[pos:pos+4]), int64(binary.BigEndian.Uint32(b[pos+4:]))
		pos += 8
		if size > int64(len(b)-hashLen-pos) {
			return nil, fmt.Errorf("%w: extension %q truncated", errIndex, sig)
		}
		data := b[pos : pos+int(size)]
		pos += int(size)
		if sig != "link" {
			continue
		}
		if len(data) < hashLen {
			return nil, fmt.Errorf("%w: link extension too short", errIndex)
		}
		if oid := data[:hashLen]; !allZero(oid) {
			ix.shared = hex.EncodeToString(oid)
		}
		rest := data[hashLen:]
		if len(rest) == 0 {
			continue
		}
		if _, n, err := ewahBits(rest, 0); err == nil {
			ix.replace, _, err = ewahBits(rest[n:], len(ix.entries)+1)
			ix.replaceKnown = err == nil
		}
	}
	return ix, nil
}

func allZero(b []byte) bool {
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}

// ewahBits decodes the EWAH bitmap at the start of b (git's ewah/ewah_io.c: the
// number of bits, the number of 64-bit words, the words, the position of the last
// run-length word, all big-endian) and returns the positions of its set bits, at
// most limit of them (0: none are collected, the bitmap is only measured), and its
// length in bytes.
func ewahBits(b []byte, limit int) (bits []int, n int, err error) {
	if len(b) < 8 {
		return nil, 0, fmt.Errorf("%w: bitmap truncated", errIndex)
	}
	nbits, words := int64(binary.BigEndian.Uint32(b)), int64(binary.BigEndian.Uint32(b[4:]))
	if words > int64(len(b)-12)/8 {
		return nil, 0, fmt.Errorf("%w: bitmap truncated", errIndex)
	}
	n = 12 + 8*int(words)
	word := func(i int64) uint64 { return binary.BigEndian.Uint64(b[8+8*i:]) }
	add := func(p int64) error {
		if p >= nbits {
			return nil
		}
		if len(bits) >= limit {
			return fmt.Errorf("%w: bitmap sets more than %d bits", errIndex, limit)
		}
		bits = append(bits, int(p))
		return nil
	}
	var pos int64
	for i := int64(0); i < words && pos < nbits; { // no bit is set past nbits
		rlw := word(i)
		i++
		run, literals := int64(rlw>>1&0xFFFFFFFF)*64, int64(rlw>>33)
		if rlw&1 != 0 && limit > 0 {
			for p := pos; p < pos+run && p < nbits; p++ {
				if err := add(p); err != nil {
					return nil, 0, err
				}
			}
		}
		pos += run
		for j := int64(0); j < literals && i < words && pos < nbits; j, i = j+1, i+1 {
			if w := word(i); w != 0 && limit > 0 {
				for c := int64(0); c < 64; c++ {
					if w>>c&1 != 0 {
						if err := add(pos + c); err != nil {
							return nil, 0, err
						}
					}
				}
			}
			pos += 64
		}
	}
	return bits, n, nil
}

func indexByte(b []byte, from int, c byte) int {
	for i := from; i < len(b); i++ {
		if b[i] == c {
			return i
		}
	}
	return -1
}

// varint decodes git's offset varint (varint.c); w is 0 on a malformed one.
func varint(b []byte) (v uint64, w int) {
	if len(b) == 0 {
		return 0, 0
	}
	c := b[0]
	v, w = uint64(c&127), 1
	for c&128 != 0 {
		if w >= len(b) || w > 9 {
			return 0, 0
		}
		v++
		c = b[w]
		v = v<<7 + uint64(c&127)
		w++
	}
	return v, w
}
