// Package companion is the protocol of the session's egress services where the docker
// engine is: a companion container beside the sandbox, running devsandbox-proxy (static,
// copied in through the Engine API before it starts), serves the session's filtering
// proxy and relays its published ports, so a sandbox needs nothing from the host's file
// system but the project, its home and the user's mounts (DESIGN guarantee 11), on an
// engine in a VM (Docker Desktop) or on another machine as on this one.
//
// The companion and the sandbox share the endpoint directory, an engine-side volume
// (in memory, owned by the sandbox's user): the proxy listens there on ProxySocket,
// the sandbox's init serves each published port in PublishDir, and the sandbox keeps
// no network of its own in egress proxy mode.
//
// The host talks to the companion over its attached standard streams, nothing else:
//   - stdin: first the Request, one JSON line holding the policy and the secrets it
//     names (the MITM CA, credential values and placeholders), so that no secret is
//     ever in the container's config, argv, environment, a label or an image; then
//     nothing. Its end (the host is done, or gone: the engine closes a container's
//     stdin when the attach connection drops) ends the companion: it stops
//     accepting, gives requests in flight two seconds and exits.
//   - stdout: ReadyLine once the proxy socket and the published ports listen, then the
//     proxy's audit records, one JSON line each, which the host relays into its audit
//     log (audit.Writer.Relay) as they come.
//   - stderr: diagnostics.
package companion

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"strconv"
	"strings"
)

// Proxy serves the session's proxy by settings on ln until ctx is done, writing its
// audit records to log, and returns the process's exit code. getenv reads the
// secrets' variables; isLocal reports the addresses the proxy refuses as the engine
// host's own.
type Proxy func(ctx context.Context, settings json.RawMessage, getenv func(string) (string, bool),
	isLocal func(netip.Addr) bool, ln net.Listener, log io.Writer) int

// ReadyLine is the companion's first line on stdout.
const ReadyLine = "devsandbox-companion ready"

// Arg is the argument devsandbox-proxy runs the companion with.
const Arg = "companion"

// HostAddressesArg is the argument devsandbox-proxy prints its host's interface
// addresses with, one a line: run in a container of a remote engine's host network,
// it tells devsandbox the engine host's addresses, which the companion refuses.
const HostAddressesArg = "host-addresses"

// HoldArg, after Arg, is the main process of a kept container's companion: it serves
// nothing and waits for SIGTERM; each session's companion is a process exec'd beside it
// (devsandbox-proxy Arg).
const HoldArg = "hold"

// MaxRequestBytes bounds the request line.
const MaxRequestBytes = 4 << 20

// Request is what the host sends first.
type Request struct {
	Session string `json:"session"`
	// Dir is the endpoint directory's path inside the companion.
	Dir string `json:"dir"`
	// Proxy is the proxy's settings (the host's proxy/service.Settings), nil when the
	// session has no proxy (published ports only).
	Proxy json.RawMessage `json:"proxy,omitempty"`
	// Secrets are the values of the variables Proxy names.
	Secrets map[string]string `json:"secrets,omitempty"`
	// Roots, when set, are the certificates (PEM) the proxy checks upstream servers
	// against instead of the image's: the host's SSL_CERT_FILE and SSL_CERT_DIR, whose
	// paths the companion cannot see.
	Roots []byte `json:"roots,omitempty"`
	// Refuse are addresses of the engine's host the proxy refuses as it refuses its
	// own (as far as the host knows them; the companion adds its gateway's).
	Refuse []string `json:"refuse,omitempty"`
	// Publish are the published ports: the companion listens on each Listen port (the
	// engine publishes it on its host) and relays every connection to the sandbox's
	// socket for its Sandbox port in PublishDir.
	Publish []Port `json:"publish,omitempty"`
}

// Port is a published port.
type Port struct {
	Listen  int `json:"listen"`
	Sandbox int `json:"sandbox"`
}

// ProxySocket is the name of session's proxy socket in the endpoint directory.
func ProxySocket(session string) string { return "proxy-" + session + ".sock" }

// PublishDir is the name of session's publish directory in the endpoint directory.
func PublishDir(session string) string { return "publish-" + session }

// PublishSocket is the name of the socket for sandbox port in a publish directory.
func PublishSocket(port int) string { return strconv.Itoa(port) + ".sock" }

// ErrCompanion is the class of the errors of the companion's own side of the protocol.
var ErrCompanion = errors.New("companion")

// validSession reports whether s can name files: the host's session ids are.
func validSession(s string) bool {
	return s != "" && len(s) <= 64 && strings.Trim(s, "abcdefghijklmnopqrstuvwxyz0123456789-") == ""
}

// WriteRequest writes r as the request line.
func WriteRequest(w io.Writer, r Request) error {
	if !validSession(r.Session) {
		return fmt.Errorf("%w: session id %q", ErrCompanion, r.Session)
	}
	b, err := json.Marshal(r)
	if err != nil {
		return err
	}
	if len(b) >= MaxRequestBytes {
		return fmt.Errorf("%w: the request is %d bytes, more than %d", ErrCompanion, len(b), MaxRequestBytes)
	}
	_, err = w.Write(append(b, '\n'))
	return err
}

// ReadRequest reads the request line.
func ReadRequest(br *bufio.Reader) (Request, error) {
	var line []byte
	for {
		chunk, err := br.ReadSlice('\n')
		line = append(line, chunk...)
		if len(line) > MaxRequestBytes {
			return Request{}, fmt.Errorf("%w: the request is longer than %d bytes", ErrCompanion, MaxRequestBytes)
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		if err != nil {
			return Request{}, fmt.Errorf("%w: reading the request: %w", ErrCompanion, err)
		}
		break
	}
	var r Request
	if err := json.Unmarshal(line, &r); err != nil {
		return Request{}, fmt.Errorf("%w: the request: %w", ErrCompanion, err)
	}
	if !validSession(r.Session) || !strings.HasPrefix(r.Dir, "/") {
		return Request{}, fmt.Errorf("%w: the request names session %q in %q", ErrCompanion, r.Session, r.Dir)
	}
	for _, p := range r.Publish {
		if p.Listen < 1 || p.Listen > 65535 || p.Sandbox < 1 || p.Sandbox > 65535 {
			return Request{}, fmt.Errorf("%w: published port %d:%d", ErrCompanion, p.Listen, p.Sandbox)
		}
	}
	return r, nil
}

// AwaitReady reads the companion's first line from its stdout: nil when it is
// ReadyLine; the rest of br is then the audit stream.
func AwaitReady(br *bufio.Reader) error {
	line, err := br.ReadString('\n')
	if err != nil {
		return fmt.Errorf("%w: ended before it was ready: %w", ErrCompanion, err)
	}
	if strings.TrimSuffix(line, "\n") != ReadyLine {
		return fmt.Errorf("%w: its first line is %.80q, not the ready line", ErrCompanion, line)
	}
	return nil
}
