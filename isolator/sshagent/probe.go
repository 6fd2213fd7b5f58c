package sshagent

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"time"
)

// ProbeExt names the extension request with which devsandbox-init proves, before the
// command starts, that the socket the engine bound into a container is this
// session's relay: the relay answers it itself (Relay.Key), never the agent. The
// request carries the key's first half; the relay answers SSH_AGENT_SUCCESS and the
// second half only to the first half of its own key, and SSH_AGENT_FAILURE
// otherwise. A relay without a key passes the request to Allowed, which refuses it.
//
// The key is not a credential (the init reads it from its manifest; it grants
// nothing but this answer) and the init links no crypto package (see
// cmd/devsandbox/deps_test.go): what it proves is that this session's relay, not
// another's, a stale socket or nothing, answers at the path. That nothing of the
// sandbox's can serve that path is the bind's (read-only, of a directory holding
// only relays' sockets) and the container's (a read-only root file system).
const ProbeExt = "probe@devsandbox.dev"

// ProbeKeyLen is the length of a probe key: the request's half, then the answer's.
const ProbeKeyLen = 32

// probeRequest is the whole probe request for key.
func probeRequest(key []byte) []byte {
	ask := key[:ProbeKeyLen/2]
	req := make([]byte, 0, headerLen+1+4+len(ProbeExt)+len(ask))
	req = binary.BigEndian.AppendUint32(req, uint32(1+4+len(ProbeExt)+len(ask)))
	req = append(req, extensionRequest)
	req = binary.BigEndian.AppendUint32(req, uint32(len(ProbeExt)))
	return append(append(req, ProbeExt...), ask...)
}

// probeResponse is the whole answer to a probe request, key's second half.
func probeResponse(key []byte) []byte {
	answer := key[ProbeKeyLen/2:]
	b := binary.BigEndian.AppendUint32(nil, uint32(1+len(answer)))
	return append(append(b, agentSuccess), answer...)
}

// isProbe reports whether req, a whole request, is a probe, and whether it asks
// with key's half (a probe of another key is answered SSH_AGENT_FAILURE).
func isProbe(req, key []byte) (probe, ours bool) {
	msg := req[headerLen:]
	if len(msg) == 0 || msg[0] != extensionRequest {
		return false, false
	}
	name, ok := extensionName(msg[1:])
	if !ok || name != ProbeExt {
		return false, false
	}
	return true, len(key) == ProbeKeyLen && equal(msg[1+4+len(name):], key[:ProbeKeyLen/2])
}

// equal compares a and b in time independent of where they differ (crypto/subtle
// is not linked into the init).
func equal(a, b []byte) bool {
	if len(a) != len(b) {
		return false
	}
	var d byte
	for i := range a {
		d |= a[i] ^ b[i]
	}
	return d == 0
}

// ErrNotRelay: what answered a probe is not the relay holding the key.
var ErrNotRelay = errors.New("the socket's answer does not prove the session's relay")

// Probe connects to the Unix socket path and proves that the relay holding key
// (ProbeKeyLen bytes) serves it, within timeout. It returns nil, or why not (the
// socket is missing, refuses, does not answer in time, or answers wrong:
// ErrNotRelay).
func Probe(path string, key []byte, timeout time.Duration) error {
	if len(key) != ProbeKeyLen {
		return fmt.Errorf("a probe key of %d bytes, not %d", len(key), ProbeKeyLen)
	}
	c, err := net.DialTimeout("unix", path, timeout)
	if err != nil {
		return err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(timeout))
	if _, err := c.Write(probeRequest(key)); err != nil {
		return err
	}
	resp, err := readFrame(c)
	if err != nil {
		return fmt.Errorf("reading the probe's answer: %w", err)
	}
	if !equal(resp, probeResponse(key)) {
		return ErrNotRelay
	}
	return nil
}
