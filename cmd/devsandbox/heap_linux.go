package main

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

// The Go runtime's heap arenas on 64-bit Linux are 64 MiB and aligned to their size
// (runtime.heapArenaBytes); a transparent huge page is 2 MiB.
const (
	heapArena = 64 << 20
	hugePage  = 2 << 20
)

// hugeHeap backs devsandbox's heap with transparent huge pages where the host grants
// them on request (THP "madvise", the usual default). A launch writes about 1.2 MiB of
// fresh heap, about 300 page faults; on a virtual machine whose faults trap to the
// hypervisor each costs 20-50 µs (measured here on a PVM guest), several milliseconds
// of the launch. The arena holding a fresh allocation is advised MADV_HUGEPAGE for the
// pages it has not touched yet, and the 2 MiB around that allocation, which package
// initialisation already touched in 4 KiB pages, is collapsed into one huge page. Both
// are advice: where the kernel or the host refuses them, only the speed differs. The
// cost is resident memory rounded up to 2 MiB.
func hugeHeap() {
	p := uintptr(unsafe.Pointer(new([64]byte)))
	madvise(p&^(heapArena-1), heapArena, unix.MADV_HUGEPAGE)
	madvise(p&^(hugePage-1), hugePage, unix.MADV_COLLAPSE)
}

// madvise takes the address as a number: the ranges are the runtime's memory, not a
// Go object's.
func madvise(addr, length uintptr, advice int) {
	_, _, _ = unix.Syscall(unix.SYS_MADVISE, addr, length, uintptr(advice))
}
