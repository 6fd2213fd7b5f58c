package watch

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// errIndex is the error for an index this reader does not understand.
var errIndex = errors.New("unreadable git index")

// gitlinks returns the paths of the gitlink entries (mode 160000: a submodule's
// commit) of a git index, versions 2 to 4 (gitformat-index(5)); hashLen is 20 for
// SHA-1 repositories, 32 for SHA-256 ones. Those are the directories the host's git
// status enters and runs git in.
func gitlinks(b []byte, hashLen int) ([]string, error) {
	if len(b) < 12 || string(b[:4]) != "DIRC" {
		return nil, fmt.Errorf("%w: no DIRC header", errIndex)
	}
	version := binary.BigEndian.Uint32(b[4:])
	if version < 2 || version > 4 {
		return nil, fmt.Errorf("%w: version %d", errIndex, version)
	}
	count := binary.BigEndian.Uint32(b[8:])
	pos := 12
	var out []string
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
		if mode&0o170000 == 0o160000 {
			out = append(out, name)
		}
	}
	return out, nil
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
