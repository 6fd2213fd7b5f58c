package maskscan

import (
	"encoding/binary"
	"errors"
	"hash/crc32"
	"io/fs"
	"os"
	"path/filepath"
	"unsafe"

	"github.com/devsandbox/devsandbox/internal/rawfile"
)

// The cache file, all integers little-endian, strings as a uvarint length and bytes:
//
//	magic    "dsmscan" and the format version, 8 bytes
//	crc      CRC-32 (IEEE) of everything after it, 4 bytes (not CRC-32C: its
//	         tables cost 0.25–0.35 ms to build in each fresh process)
//	start    when the scan that wrote it started, ns since the epoch, 8 bytes
//	root     string: the absolute root
//	matcher  string: Matcher.key
//	count    uvarint: the number of directories
//	tree     the root directory, in pre-order
//
// A directory is its name (string, "" for the root), a flags byte (1: it was read),
// when read its stamp (dev, ino, mtime, ctime: 4 × 8 bytes), the number of its
// masked entries and each as a flags byte (1: a symlink) and a name, then the number
// of its subdirectories and each of them. Names and subdirectories are sorted.
const magic = "dsmscan\x02"

const headerSize = len(magic) + 4

// load reads the tree that cacheFile stores for root and matcher key, or returns
// nil when there is none that fits; now is when the scan loading it started.
func load(cacheFile, root string, key []byte, now int64) *node {
	data, err := rawfile.ReadFile(cacheFile) // not os.ReadFile: read at plan and in the watch's last pass, after bwrap exits
	if err != nil {
		return nil
	}
	return decode(data, root, key, now)
}

// decode returns the tree that data, a cache file, stores for root and matcher key,
// or nil; now is when the scan decoding it started. It keeps data, which the
// caller must not change.
func decode(data []byte, root string, key []byte, now int64) *node {
	if len(data) < headerSize || string(data[:len(magic)]) != magic ||
		crc32.ChecksumIEEE(data[headerSize:]) != binary.LittleEndian.Uint32(data[len(magic):]) {
		return nil
	}
	// Every name is a substring of the file, viewed as a string: data is not
	// written to after this.
	d := &decoder{b: data, s: unsafe.String(&data[0], len(data)), pos: headerSize}
	// A cache from the future was written while the clock was ahead: its start
	// proves nothing about when the directories were read.
	start := min(int64(d.u64()), now)
	if d.str() != root || d.str() != string(key) {
		return nil
	}
	count := d.uvarint()
	if d.bad || count == 0 || count > uint64(len(data)) { // a directory takes 3 bytes or more
		return nil
	}
	nodes := make([]node, count)
	kids := make([]*node, count-1) // every directory but the root is a subdirectory
	used, nk := 1, 0
	tree := &nodes[0]
	d.node(tree, start)
	if tree.name != "" {
		return nil
	}
	// Pre-order: each directory is followed by its subdirectories.
	type frame struct {
		n    *node
		next int
	}
	stack := []frame{}
	take := func(n *node, nkids uint64) bool {
		if nkids > uint64(len(kids)-nk) || !n.ok && nkids > 0 {
			return false
		}
		n.kids, nk = kids[nk:nk+int(nkids):nk+int(nkids)], nk+int(nkids)
		if nkids > 0 {
			stack = append(stack, frame{n: n})
		}
		return true
	}
	if !take(tree, d.uvarint()) {
		return nil
	}
	for len(stack) > 0 && !d.bad {
		f := &stack[len(stack)-1]
		if f.next == len(f.n.kids) {
			stack = stack[:len(stack)-1]
			continue
		}
		if used == len(nodes) {
			return nil
		}
		k := &nodes[used]
		used++
		d.node(k, start)
		if !validName(k.name) || f.next > 0 && f.n.kids[f.next-1].name >= k.name {
			return nil
		}
		k.parent, f.n.kids[f.next] = f.n, k
		f.next++
		if !take(k, d.uvarint()) {
			return nil
		}
	}
	if d.bad || used != len(nodes) || d.pos != len(data) {
		return nil
	}
	return tree
}

// decoder reads the cache format from b (s is b as a string) at pos; bad is set,
// and stays set, at the first error.
type decoder struct {
	b   []byte
	s   string
	pos int
	bad bool
}

// node reads a directory up to its number of subdirectories; start is when the
// scan that wrote the cache started, for the racy check.
func (d *decoder) node(n *node, start int64) {
	n.name = d.str()
	flags := d.byte()
	if flags&^1 != 0 {
		d.bad = true
	}
	if n.ok = flags == 1; n.ok {
		n.st = stamp{dev: d.u64(), ino: d.u64(), mtime: int64(d.u64()), ctime: int64(d.u64())}
		n.trusted = !racy(n.st, start)
	}
	count := d.uvarint()
	if count > uint64(len(d.b)-d.pos) || !n.ok && count > 0 {
		d.bad = true
		return
	}
	for i := range count {
		flags, name := d.byte(), d.str()
		if flags&^1 != 0 || !validName(name) || i > 0 && n.matches[i-1].name >= name {
			d.bad = true
			return
		}
		n.matches = append(n.matches, entry{name, flags == 1})
	}
}

func validName(s string) bool {
	for i := range len(s) { // names are short: a loop beats strings.IndexByte
		if s[i] == '/' || s[i] == 0 {
			return false
		}
	}
	return s != "" && s != "." && s != ".."
}

func (d *decoder) byte() byte {
	if d.pos >= len(d.b) {
		d.bad = true
		return 0
	}
	d.pos++
	return d.b[d.pos-1]
}

func (d *decoder) u64() uint64 {
	if len(d.b)-d.pos < 8 {
		d.bad, d.pos = true, len(d.b)
		return 0
	}
	d.pos += 8
	return binary.LittleEndian.Uint64(d.b[d.pos-8:])
}

func (d *decoder) uvarint() uint64 {
	v, n := binary.Uvarint(d.b[d.pos:])
	if n <= 0 {
		d.bad, d.pos = true, len(d.b)
		return 0
	}
	d.pos += n
	return v
}

func (d *decoder) str() string {
	n := d.uvarint()
	if n > uint64(len(d.b)-d.pos) {
		d.bad, d.pos = true, len(d.b)
		return ""
	}
	d.pos += int(n)
	return d.s[d.pos-int(n) : d.pos]
}

// encode returns the cache file for tree, the directory root as scanned for the
// matcher key by a scan that started at start.
func encode(root string, key []byte, start int64, tree *node) []byte {
	b := make([]byte, headerSize, 64<<10)
	copy(b, magic)
	b = binary.LittleEndian.AppendUint64(b, uint64(start))
	b = appendString(b, root)
	b = appendString(b, string(key))
	var count func(n *node) uint64
	count = func(n *node) uint64 {
		c := uint64(1)
		for _, k := range n.kids {
			c += count(k)
		}
		return c
	}
	b = binary.AppendUvarint(b, count(tree))
	var put func(n *node)
	put = func(n *node) {
		b = appendString(b, n.name)
		if !n.ok {
			b = append(b, 0, 0, 0) // flags, no matches, no subdirectories
			return
		}
		b = append(b, 1)
		for _, v := range []uint64{n.st.dev, n.st.ino, uint64(n.st.mtime), uint64(n.st.ctime)} {
			b = binary.LittleEndian.AppendUint64(b, v)
		}
		b = binary.AppendUvarint(b, uint64(len(n.matches)))
		for _, e := range n.matches {
			flags := byte(0)
			if e.symlink {
				flags = 1
			}
			b = appendString(append(b, flags), e.name)
		}
		b = binary.AppendUvarint(b, uint64(len(n.kids)))
		for _, k := range n.kids {
			put(k)
		}
	}
	put(tree)
	binary.LittleEndian.PutUint32(b[len(magic):], crc32.ChecksumIEEE(b[headerSize:]))
	return b
}

// store replaces cacheFile with data atomically: a reader sees the old file or
// the new one. Its directory is created (0700) when missing.
func store(cacheFile string, data []byte) error {
	dir, base := filepath.Dir(cacheFile), filepath.Base(cacheFile)
	f, err := os.CreateTemp(dir, base+".*.tmp") // mode 0600
	if errors.Is(err, fs.ErrNotExist) {
		if err = os.MkdirAll(dir, 0o700); err == nil {
			f, err = os.CreateTemp(dir, base+".*.tmp")
		}
	}
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(f.Name(), cacheFile)
	}
	if err != nil {
		os.Remove(f.Name())
	}
	return err
}
