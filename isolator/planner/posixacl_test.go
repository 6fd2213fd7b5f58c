package planner

import (
	"encoding/binary"
	"fmt"
	"testing"
)

// TestParseACLWriters: who an access ACL lets write, with the mask limiting the named
// entries and the owning group's, never the owner's or others'.
func TestParseACLWriters(t *testing.T) {
	owner, other := aclObj(aclUserObj, 7), aclObj(aclOther, 5)
	for _, tc := range []struct {
		name string
		acl  []byte
		want string // fmt of aclWriters, or the error
	}{
		{"the mode's three entries", acl(owner, aclObj(aclGroupObj, 5), other), "{[] [] false false}"},
		{"the owning group writes, no mask", acl(owner, aclObj(aclGroupObj, 7), other), "{[] [] true false}"},
		{"others write", acl(owner, aclObj(aclGroupObj, 5), aclObj(aclOther, 7)), "{[] [] false true}"},
		{"named entries through a mask with write", acl(owner, aclNamed(aclUser, 7, 1001), aclObj(aclGroupObj, 7), aclNamed(aclGroup, 6, 2000), aclObj(aclMask, 7), other), "{[1001] [2000] true false}"},
		{"a mask without write limits all but the owner and others", acl(owner, aclNamed(aclUser, 7, 1001), aclObj(aclGroupObj, 7), aclNamed(aclGroup, 7, 2000), aclObj(aclMask, 5), aclObj(aclOther, 7)), "{[] [] false true}"},
		{"the mask before the entries it limits", acl(aclObj(aclMask, 5), owner, aclNamed(aclUser, 7, 1001), aclObj(aclGroupObj, 7), other), "{[] [] false false}"},
		{"entries without write", acl(owner, aclNamed(aclUser, 5, 1001), aclObj(aclGroupObj, 5), aclObj(aclMask, 7), other), "{[] [] false false}"},
		{"another version", append([]byte{3, 0, 0, 0}, acl(owner)[4:]...), "an ACL of version 3"},
		{"an unknown tag", acl(owner, aclObj(0x40, 7)), "an ACL entry of unknown tag 0x40"},
		{"a partial entry", acl(owner)[:10], "an ACL of 10 bytes, not whole entries"},
		{"empty", nil, "an ACL of 0 bytes, not whole entries"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w, err := parseACLWriters(tc.acl)
			got := fmt.Sprint(w)
			if err != nil {
				got = err.Error()
			}
			if got != tc.want {
				t.Fatalf("parseACLWriters = %s; want %s", got, tc.want)
			}
		})
	}
}

// acl is an access ACL as Linux stores it: entries of tag, permissions and id.
func acl(entries ...[3]uint32) []byte {
	b := binary.LittleEndian.AppendUint32(nil, aclVersion)
	for _, e := range entries {
		b = binary.LittleEndian.AppendUint16(b, uint16(e[0]))
		b = binary.LittleEndian.AppendUint16(b, uint16(e[1]))
		b = binary.LittleEndian.AppendUint32(b, e[2])
	}
	return b
}

// The entries acl takes: the owner's, the owning group's and others' (mask named
// once, rwx = 7), a named user's or group's.
func aclObj(tag, perm uint32) [3]uint32       { return [3]uint32{tag, perm, 0xffffffff} }
func aclNamed(tag, perm, id uint32) [3]uint32 { return [3]uint32{tag, perm, id} }
