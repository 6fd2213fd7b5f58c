//go:build !linux

package maskscan

import "sync/atomic"

// walk is the portable walk here (readDirScan), with the fields scanner.scan sets
// and reads. It takes nothing from the cache and never marks it dirty, so a scan
// neither trusts nor rewrites the cache file.
type walk struct {
	m       *matcher
	start   int64
	restamp func(*stamp)
	dirty   atomic.Bool
	reads   atomic.Int64
}

func (w *walk) run(root string, _ *node, _ int) (*node, error) {
	tree, reads, err := readDirScan(root, w.m)
	w.reads.Store(reads)
	return tree, err
}
