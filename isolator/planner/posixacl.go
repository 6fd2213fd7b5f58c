package planner

import (
	"encoding/binary"
	"fmt"
)

// aclAccessXattr is the extended attribute that holds a file's POSIX access ACL.
const aclAccessXattr = "system.posix_acl_access"

// The POSIX ACL as Linux stores it in aclAccessXattr (linux/posix_acl_xattr.h): a
// little-endian version (2), then entries of a tag, permissions and an id (a uid or
// gid for the named entries, -1 for the others).
const (
	aclVersion    = 2
	aclHeaderSize = 4
	aclEntrySize  = 8

	aclUserObj  = 0x01
	aclUser     = 0x02
	aclGroupObj = 0x04
	aclGroup    = 0x08
	aclMask     = 0x10
	aclOther    = 0x20

	aclWrite = 0x02
)

// aclWriters is who an access ACL lets write, besides the file's owner (whose bits
// are the mode's): the named users and groups and the owning group (groupObj) whose
// entry grants write once the mask applies, and others.
type aclWriters struct {
	users, groups   []uint32
	groupObj, other bool
}

// parseACLWriters reads who b, an aclAccessXattr value, lets write. The mask limits
// the named entries and the owning group's, as the kernel does; without a mask
// (allowed only without named entries) the owning group's entry stands alone. An
// unknown version or tag, or a length that is not whole entries, is an error: what
// cannot be read is not taken as harmless.
func parseACLWriters(b []byte) (aclWriters, error) {
	var w aclWriters
	if len(b) < aclHeaderSize || (len(b)-aclHeaderSize)%aclEntrySize != 0 {
		return w, fmt.Errorf("an ACL of %d bytes, not whole entries", len(b))
	}
	if v := binary.LittleEndian.Uint32(b); v != aclVersion {
		return w, fmt.Errorf("an ACL of version %d", v)
	}
	type entry struct {
		tag, perm uint16
		id        uint32
	}
	var es []entry
	mask, masked := uint16(0), false
	for off := aclHeaderSize; off < len(b); off += aclEntrySize {
		e := entry{binary.LittleEndian.Uint16(b[off:]), binary.LittleEndian.Uint16(b[off+2:]), binary.LittleEndian.Uint32(b[off+4:])}
		switch e.tag {
		case aclMask:
			mask, masked = e.perm, true
		case aclUserObj, aclUser, aclGroupObj, aclGroup, aclOther:
			es = append(es, e)
		default:
			return w, fmt.Errorf("an ACL entry of unknown tag %#x", e.tag)
		}
	}
	for _, e := range es {
		perm := e.perm
		if masked && e.tag != aclUserObj && e.tag != aclOther {
			perm &= mask
		}
		if perm&aclWrite == 0 {
			continue
		}
		switch e.tag {
		case aclUser:
			w.users = append(w.users, e.id)
		case aclGroup:
			w.groups = append(w.groups, e.id)
		case aclGroupObj:
			w.groupObj = true
		case aclOther:
			w.other = true
		}
	}
	return w, nil
}
