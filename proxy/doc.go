// Package proxy is devsandbox's filtering HTTP(S) proxy, built on elazarl/goproxy.
//
// A Server forwards plain HTTP requests and tunnels CONNECT requests for one sandbox
// session. Every destination passes a Policy (allow entries, deny entries and a default,
// in the egress grammar of DESIGN.md) after name resolution and at dial time: the Dialer
// resolves a host once, decides on the name and on every resolved address, and connects
// only to the addresses it checked, so a name that rebinds to the LAN, the host's
// loopback or a metadata service cannot be reached unless an allow entry names it.
//
// The Server listens on a Unix socket of mode 0600 (ListenUnix), serves a listener it is
// handed (Serve: the socket devsandbox binds and passes to devsandbox-proxy), or listens
// on a loopback TCP port that demands a per-session Proxy-Authorization secret
// (ListenTCP, with Server.Env). Each request or tunnel is written as one JSON line to
// the audit log of package proxy/audit, which never holds headers or query strings.
//
// Each Server owns its goproxy instance and transport; the package keeps no mutable
// global state and never touches goproxy's globals (GoproxyCa, MitmConnect, …). Each
// CONNECT is decided in one place, which returns a goproxy ConnectAction: reject or
// tunnel today; a MITM action with a per-server goproxy.TLSConfigFromCA is where
// credential injection will plug in, its inner requests reaching the same checked
// transport as plain HTTP.
//
// A Policy may also limit git pushes (Policy.WithGitPush): every smart-HTTP push the
// proxy sees (plain HTTP, decrypted HTTPS) is read up to the end of its ref-update
// commands (package proxy/gitpush) and refused whole, before any byte reaches the
// server, unless every ref it changes matches a pattern; a refusal is answered as
// receive-pack answers, so git prints the reason. Each push decision is a KindPush
// record of the audit log. While such a policy is set, CONNECTs to port 22 (git over
// ssh, which cannot be read) are refused unless it allows ssh.
//
// Not guaranteed: the proxy filters by destination only, and by request only where it
// sees requests; it does not inspect tunnels it does not decrypt (a push inside one is
// not checked), and a path in the audit log may itself carry a token when an API puts
// one there.
package proxy
