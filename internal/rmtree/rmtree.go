// Package rmtree removes a directory tree that a sandbox wrote: its session /tmp, its
// home, its state. A sandbox can leave a directory its owner cannot list or empty
// (mode 000 or 0500), and os.RemoveAll then fails with EACCES and leaves the tree,
// and whatever it holds, on the host. RemoveAll gives such directories their owner's
// rwx back and removes the tree, never following a link.
package rmtree
