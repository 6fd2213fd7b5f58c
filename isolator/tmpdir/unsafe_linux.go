package tmpdir

import "unsafe"

// unsafePointer returns a pointer to the first byte of b (an inotify event header).
func unsafePointer(b []byte) unsafe.Pointer { return unsafe.Pointer(&b[0]) }
