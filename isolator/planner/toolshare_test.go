package planner

import (
	"bytes"
	"maps"
	"net"
	"reflect"
	"strings"
	"testing"

	"github.com/devsandbox/devsandbox/config"
	"github.com/devsandbox/devsandbox/isolator"
	"github.com/devsandbox/devsandbox/tools"
)

// The --config check and Build share the tools' work (toolShare), so the check must
// see what Build binds: its list (checkWritable) is the one a fresh ToolHost with
// Build's ssh ProxyCommand gives, it covers every path Build's plan lets the sandbox
// write, every tool path it lists is one the plan binds read-write, and the tools'
// bindings are worked out once, with the ProxyCommand Build writes into ssh's
// configuration overlay: in the open mode and in the proxy mode (where ssh goes
// through the proxy), with ssh's agent bound read-write.
func TestCheckWritableIsBuilds(t *testing.T) {
	for _, mode := range []string{"open", "proxy"} {
		t.Run(mode, func(t *testing.T) {
			f := newFixture(t)
			mkdirs(t, f.root+"/rw", f.root+"/mnt", f.home+"/.codex", f.home+"/.claude", f.home+"/.ssh", f.home+"/.cache")
			writeFile(t, f.home+"/.codex/auth.json", "{}")
			writeFile(t, f.home+"/.ssh/config", "Host x\n  User y\n")
			sock := f.root + "/agent.sock"
			l, err := net.Listen("unix", sock)
			if err != nil {
				t.Fatal(err)
			}
			defer l.Close()
			writeFile(t, f.home+"/.config/devsandbox/config.toml", f.expand(nil, `[sandbox]
rw_binds = ["$ROOT/rw"]
host_mounts = ["$ROOT/mnt:/mnt/x"]
[egress]
mode = "`+mode+`"
[tools.codex]
enabled = true
[tools.claude]
enabled = true
[tools.ssh]
enabled = true
`)[0])
			cfg := f.load(t, "SSH_AUTH_SOCK="+sock)
			// ssh's Bindings, counted, with the ProxyCommand each call saw.
			var asked []string
			var ts []tools.Tool
			for _, tl := range tools.Default().Tools() {
				if tl.Name == "ssh" {
					inner := tl.Bindings
					tl.Bindings = func(h tools.Host) []tools.Binding {
						asked = append(asked, h.ProxyCommand)
						return inner(h)
					}
				}
				ts = append(ts, tl)
			}
			reg := tools.NewRegistry(ts...)

			pr := probe(f.proj)
			pr.share = newToolShare(cfg.Host, pr, f.proj, nil)
			_, own := checkWritable(cfg, reg, pr, f.proj)
			p, _, err := Build(cfg, reg, pr, Request{Command: []string{"true"}})
			if err != nil {
				t.Fatalf("Build: %v", err)
			}

			want := sshProxyCommand(cfg)
			if (want != "") != (mode == "proxy") {
				t.Fatalf("sshProxyCommand in mode %s: %q", mode, want)
			}
			if len(asked) != 1 || asked[0] != want {
				t.Errorf("ssh's bindings were worked out with ProxyCommand %q; want once, with %q (shared by the check and Build)", asked, want)
			}
			overlay := false
			for _, m := range p.Mounts {
				if m.Kind == isolator.Data && m.HomeRel == ".ssh/config" {
					overlay = true
					if got := bytes.Contains(m.Content, []byte("ProxyCommand "+want)); got != (want != "") {
						t.Errorf("the plan's ssh config overlay and the ProxyCommand %q disagree:\n%s", want, m.Content)
					}
				}
			}
			if !overlay {
				t.Fatalf("no ssh config overlay in the plan:\n%s", mountLines(p.Mounts))
			}

			// The same list as without any sharing, with Build's ProxyCommand.
			th := ToolHost(cfg.Host, probe(f.proj), f.proj)
			th.ProxyCommand = want
			fresh := append([]tools.WritablePath{{Path: f.proj, Why: "the project"}}, sandboxWritable(cfg, reg, th)...)
			if !reflect.DeepEqual(own, fresh) {
				t.Errorf("the check's list differs from a fresh one:\n got %+v\nwant %+v", own, fresh)
			}
			roots := isolator.Writable(p)
			for _, r := range roots {
				if r == "" {
					continue
				}
				covered := false
				for _, w := range own {
					covered = covered || w.Holds(r)
				}
				if !covered {
					t.Errorf("the plan lets the sandbox write %s, which the check does not list: %+v", r, own)
				}
			}
			agent := false
			for _, w := range own {
				if !strings.Contains(w.Why, "by tool") && !w.UserBind {
					continue
				}
				agent = agent || w.Path == sock
				bound := false
				for _, r := range roots {
					bound = bound || r == w.Path
				}
				// The agent's socket: Build binds the session's relay in its place
				// (sshagent); the check counts the socket, the safe side.
				if !bound && w.Path != sock {
					t.Errorf("the check lists %s (%s), which the plan does not bind read-write: %v", w.Path, w.Why, roots)
				}
			}
			if !agent {
				t.Errorf("the check does not list ssh's agent socket %s: %+v", sock, own)
			}
		})
	}
}

// The share serves one Build: a second Build from the same Probe asks the tools
// again, and a Build for another host (another environment) does not use it.
func TestToolShareServesOneBuild(t *testing.T) {
	f := newFixture(t)
	writeFile(t, f.home+"/.config/devsandbox/config.toml", "[egress]\nmode = \"open\"\n[tools.ssh]\nenabled = true\n")
	cfg := f.load(t)
	calls := 0
	var ts []tools.Tool
	for _, tl := range tools.Default().Tools() {
		if tl.Name == "ssh" {
			inner := tl.Bindings
			tl.Bindings = func(h tools.Host) []tools.Binding { calls++; return inner(h) }
		}
		ts = append(ts, tl)
	}
	reg := tools.NewRegistry(ts...)
	build := func(cfg *config.Config, pr Probe) {
		t.Helper()
		if _, _, err := Build(cfg, reg, pr, Request{Command: []string{"true"}}); err != nil {
			t.Fatalf("Build: %v", err)
		}
	}

	pr := probe(f.proj)
	pr.share = newToolShare(cfg.Host, pr, f.proj, nil)
	checkWritable(cfg, reg, pr, f.proj)
	build(cfg, pr)
	if calls != 1 {
		t.Fatalf("the check and the first Build worked out ssh's bindings %d times; want 1", calls)
	}
	build(cfg, pr)
	if calls != 2 {
		t.Errorf("a second Build from the same Probe: %d calls in all; want 2 (the share serves one Build)", calls)
	}

	other := probe(f.proj)
	other.share = newToolShare(cfg.Host, other, f.proj, nil)
	checkWritable(cfg, reg, other, f.proj)
	moved := *cfg
	moved.Host.Vars = maps.Clone(cfg.Host.Vars)
	moved.Host.Vars["SSH_AUTH_SOCK"] = f.root + "/elsewhere.sock"
	build(&moved, other)
	if calls != 4 {
		t.Errorf("a Build for another environment: %d calls in all; want 4 (the share is not for it)", calls)
	}
}
