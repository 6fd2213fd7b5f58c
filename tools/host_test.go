package tools

import (
	"io/fs"
	"os"
	"reflect"
	"testing"
	"time"
)

type fakeInfo struct {
	mode fs.FileMode
}

func (f fakeInfo) Name() string       { return "" }
func (f fakeInfo) Size() int64        { return 0 }
func (f fakeInfo) Mode() fs.FileMode  { return f.mode }
func (f fakeInfo) ModTime() time.Time { return time.Time{} }
func (f fakeInfo) IsDir() bool        { return f.mode.IsDir() }
func (f fakeInfo) Sys() any           { return nil }

func TestFindExecutable(t *testing.T) {
	stat := func(m map[string]fs.FileMode) func(string) (fs.FileInfo, error) {
		return func(p string) (fs.FileInfo, error) {
			if mode, ok := m[p]; ok {
				return fakeInfo{mode}, nil
			}
			return nil, os.ErrNotExist
		}
	}
	st := stat(map[string]fs.FileMode{
		"/a/claude":      0o644,              // not executable
		"/b/claude":      fs.ModeDir | 0o755, // a directory
		"/c/claude":      0o755,
		"/d/claude":      0o755,
		"rel/claude":     0o755,
		"/home/u/x/tool": 0o700,
	})
	tests := []struct{ path, name, want string }{
		{"/a:/b:/c:/d", "claude", "/c/claude"},
		{"rel:/d", "claude", "/d/claude"}, // relative entries are ignored
		{"/a:/b", "claude", ""},
		{"/home/u/x", "tool", "/home/u/x/tool"},
		{"/c", "x/claude", ""},
		{"", "claude", ""},
	}
	for _, tt := range tests {
		if got := FindExecutable(tt.path, tt.name, st); got != tt.want {
			t.Errorf("FindExecutable(%q, %q) = %q, want %q", tt.path, tt.name, got, tt.want)
		}
	}
}

func TestExecutable(t *testing.T) {
	bin := home + "/.local/bin/tool"
	tests := []struct {
		name  string
		path  string // on PATH
		link  string // what it resolves to, if a symlink
		files map[string]string
		want  []Binding
	}{
		{"system", "/usr/bin/tool", "", nil, nil},
		{"plain", bin, "", nil, []Binding{ro(".local/bin")}},
		{"single binary", bin, home + "/.local/share/tool/versions/1", nil,
			[]Binding{ro(".local/bin"), ro(".local/share/tool/versions")}},
		{"unscoped npm", bin, home + "/.nvm/versions/node/v22/lib/node_modules/tool/cli.js", nil,
			[]Binding{ro(".local/bin"), ro(".nvm/versions/node/v22/lib/node_modules/tool")}},
		{"venv", bin, home + "/.local/share/uv/tools/tool/bin/tool", files(home + "/.local/share/uv/tools/tool/pyvenv.cfg"),
			[]Binding{ro(".local/bin"), ro(".local/share/uv/tools/tool")}},
		{"bin without venv", bin, home + "/.pulumi/bin/tool", nil,
			[]Binding{ro(".local/bin"), ro(".pulumi/bin")}},
		{"link in its own dir", bin, home + "/.local/bin/tool-1.2", nil, []Binding{ro(".local/bin")}},
		{"link into credentials", bin, home + "/.cargo/credentials.toml", nil, []Binding{ro(".local/bin")}},
		{"link into ssh", bin, home + "/.ssh/tool", nil, []Binding{ro(".local/bin")}},
		{"link into a project", bin, home + "/src/app/bin/tool", nil, []Binding{ro(".local/bin")}},
		{"link outside the home", bin, "/opt/tool/bin/tool", nil, []Binding{ro(".local/bin")}},
		{"PATH in a project", home + "/src/app/node_modules/.bin/tool", "", nil, nil},
		{"PATH in credentials", home + "/.aws/bin/tool", "", nil, nil},
		{"in the home itself", home + "/tool", "", nil, nil},
	}
	for _, tt := range tests {
		h := fakeHost(tt.files, "tool="+tt.path)
		if tt.link != "" {
			h = withLinks(h, map[string]string{tt.path: tt.link})
		}
		if got := h.executable("tool"); !reflect.DeepEqual(got, tt.want) {
			t.Errorf("%s: executable = %+v, want %+v", tt.name, got, tt.want)
		}
	}
	if got := fakeHost(nil).executable("tool"); got != nil {
		t.Errorf("not on PATH: %+v", got)
	}
}

func TestEnvPlace(t *testing.T) {
	def := fakeHost(nil).home(".claude")
	tests := []struct {
		value string
		want  place
	}{
		{"", def},
		{"relative/dir", def},
		{home, def},
		{home + "/", def},
		{"/", def},
		{"/home", def},
		{home + "/.ssh", def},
		{home + "/.aws/claude", def},
		{home + "/.cargo", def}, // holds credentials.toml
		{home + "/cfg/claude/", place{src: home + "/cfg/claude", rel: "cfg/claude"}},
		{"/srv/claude", place{src: "/srv/claude"}},
	}
	for _, tt := range tests {
		h := withEnv(fakeHost(nil), "CLAUDE_CONFIG_DIR="+tt.value)
		if got := h.envPlace("CLAUDE_CONFIG_DIR", def); got != tt.want {
			t.Errorf("CLAUDE_CONFIG_DIR=%q: %+v, want %+v", tt.value, got, tt.want)
		}
	}
}

func TestXDGInCredentialsIsIgnored(t *testing.T) {
	h := withEnv(fakeHost(nil), "XDG_CONFIG_HOME="+home+"/.gnupg/cfg")
	if got, want := h.config("gh"), (place{src: home + "/.config/gh", rel: ".config/gh"}); got != want {
		t.Errorf("config = %+v, want %+v", got, want)
	}
}

func TestCompact(t *testing.T) {
	at := func(m Mode, src, dst string) Binding { return Binding{Source: src, Dest: dst, Mode: m} }
	tests := []struct {
		name   string
		in     []Binding
		wantIx []int // indexes of in that remain
	}{
		{"same", []Binding{ro(".a"), ro(".a")}, []int{0}},
		{"nested", []Binding{ro(".a"), ro(".a/b")}, []int{0}},
		{"outer after inner", []Binding{ro(".a/b"), ro(".a")}, []int{0, 1}},
		{"under a writable one", []Binding{mode(RW, ro(".a")), ro(".a/b")}, []int{0, 1}},
		{"covered meanwhile", []Binding{ro(".a"), mode(Tmpfs, ro(".a/b")), ro(".a/b")}, []int{0, 1, 2}},
		{"would cover", []Binding{ro(".a"), mode(RW, ro(".a/b/c")), ro(".a/b")}, []int{0, 1, 2}},
		{"other source", []Binding{ro(".a"), {Source: "/elsewhere", HomeRelativeDest: ".a/b", Mode: RO}}, []int{0, 1}},
		{"dest and home-relative", []Binding{at(RO, home+"/.a", home+"/.a"), ro(".a")}, []int{0, 1}},
		{"absolute", []Binding{at(RO, "/s", "/s"), at(RO, "/s/t", "/s/t")}, []int{0}},
	}
	for _, tt := range tests {
		var want []Binding
		for _, i := range tt.wantIx {
			want = append(want, tt.in[i])
		}
		if got := compact(tt.in); !reflect.DeepEqual(got, want) {
			t.Errorf("%s: compact = %+v, want %+v", tt.name, got, want)
		}
	}
}

// A Neovim release unpacked under the home needs its runtime next to the binary.
func TestNvimRelease(t *testing.T) {
	root := home + "/.local/nvim-linux-x86_64"
	h := withLinks(fakeHost(files(root+"/share/nvim/runtime"), "nvim="+home+"/.local/bin/nvim"),
		map[string]string{home + "/.local/bin/nvim": root + "/bin/nvim"})
	equalBindings(t, "nvim", Nvim().Bindings(h), []Binding{
		ro(".config/nvim"), ro(".local/share/nvim"), ro(".local/nvim-linux-x86_64"), ro(".local/bin"),
	})
}
