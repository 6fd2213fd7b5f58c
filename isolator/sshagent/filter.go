// Package sshagent is the host-side relay between a sandbox and the user's ssh agent:
// the sandbox gets a socket of the session's (in the socket directory, package
// sockdir) whose every connection is relayed to the agent, and only the requests
// that list keys and sign with them pass. Adding, removing, locking and every other
// request are answered SSH_AGENT_FAILURE without reaching the agent, so a sandbox can
// use the keys while the run lasts but cannot change the agent.
package sshagent

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
)

// The ssh-agent protocol's message numbers used here (draft-miller-ssh-agent).
const (
	agentFailure       = 5  // SSH_AGENT_FAILURE
	agentSuccess       = 6  // SSH_AGENT_SUCCESS
	requestIdentities  = 11 // SSH_AGENTC_REQUEST_IDENTITIES
	signRequest        = 13 // SSH_AGENTC_SIGN_REQUEST
	extensionRequest   = 27 // SSH_AGENTC_EXTENSION
	sessionBind        = "session-bind@openssh.com"
	extensionQuery     = "query"
	headerLen          = 4
	extensionNameLimit = 256
)

// MaxMessage bounds a message's length, either way: OpenSSH's agent refuses longer
// ones too (AGENT_MAX_LEN, 256 KiB).
const MaxMessage = 256 * 1024

// ErrFrame is the class of a malformed frame: an empty or over-long message. The
// relay closes the connection on it.
var ErrFrame = errors.New("malformed ssh agent message")

// Allowed reports whether msg, a request's contents (its type byte first, without
// the length), may reach the agent: a listing of keys, a signature, or the
// extensions "session-bind@openssh.com" (ssh binds its agent connection to the
// session it authenticates, PROTOCOL.agent §1) and "query" (which extensions the
// agent supports). Everything else, including an extension whose name is malformed,
// is refused.
func Allowed(msg []byte) bool {
	if len(msg) == 0 {
		return false
	}
	switch msg[0] {
	case requestIdentities, signRequest:
		return true
	case extensionRequest:
		name, ok := extensionName(msg[1:])
		return ok && (name == sessionBind || name == extensionQuery)
	}
	return false
}

// extensionName reads the string an extension request starts with.
func extensionName(b []byte) (string, bool) {
	if len(b) < headerLen {
		return "", false
	}
	n := binary.BigEndian.Uint32(b)
	if n > extensionNameLimit || uint64(n) > uint64(len(b)-headerLen) {
		return "", false
	}
	return string(b[headerLen : headerLen+n]), true
}

// readFrame reads one length-prefixed message from r and returns it whole (length
// included). A length of 0 or over MaxMessage is an ErrFrame; a short read is
// io.ErrUnexpectedEOF, an end before the first byte io.EOF.
func readFrame(r io.Reader) ([]byte, error) {
	var h [headerLen]byte
	if _, err := io.ReadFull(r, h[:]); err != nil {
		return nil, err
	}
	n := binary.BigEndian.Uint32(h[:])
	if n == 0 || n > MaxMessage {
		return nil, fmt.Errorf("%w: length %d", ErrFrame, n)
	}
	b := make([]byte, headerLen+int(n))
	copy(b, h[:])
	if _, err := io.ReadFull(r, b[headerLen:]); err != nil {
		if errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		return nil, err
	}
	return b, nil
}

// failure is the whole SSH_AGENT_FAILURE answer.
var failure = []byte{0, 0, 0, 1, agentFailure}
