// Package fdpass reads the descriptors passed with a message on a Unix socket
// (SCM_RIGHTS): a kept container's keeper and its companion's holder each take one
// from a registering session (its end of the host's stream), the proxy's service
// the listeners it is handed.
package fdpass

import "golang.org/x/sys/unix"

// First returns the first descriptor passed in the control messages oob (as read by
// ReadMsgUnix) and closes every other, so that a sender cannot make the receiver hold
// descriptors it does not use; -1 when none came or oob does not parse.
func First(oob []byte) int {
	msgs, err := unix.ParseSocketControlMessage(oob)
	if err != nil {
		return -1
	}
	fd := -1
	for _, msg := range msgs {
		fds, err := unix.ParseUnixRights(&msg)
		if err != nil {
			continue
		}
		for _, f := range fds {
			if fd < 0 {
				fd = f
			} else {
				unix.Close(f)
			}
		}
	}
	return fd
}

// All returns every descriptor passed in the control messages oob, and an error
// when a message does not parse (with the descriptors read before it, which the
// caller closes).
func All(oob []byte) ([]int, error) {
	msgs, err := unix.ParseSocketControlMessage(oob)
	if err != nil {
		return nil, err
	}
	var fds []int
	for i := range msgs {
		got, err := unix.ParseUnixRights(&msgs[i])
		if err != nil {
			return fds, err
		}
		fds = append(fds, got...)
	}
	return fds, nil
}
