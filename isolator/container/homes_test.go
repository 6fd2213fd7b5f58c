package container

import (
	"errors"
	"testing"

	"github.com/devsandbox/devsandbox/isolator"
	"github.com/devsandbox/devsandbox/isolator/internal/plantest"
)

// A containers' home above or below the host home is refused while the plan shows
// something at a host path at, above or below the host home, with the fix: a library
// caller's Plan and Options never passed config's check of docker.home. Apart from the
// host home, at its path, or with nothing shown there, the layout is made.
func TestHomesApart(t *testing.T) {
	outside := func(p *isolator.Plan) { // the project outside the host home, a tool's binding in the sandbox home
		p.Project.Dir, p.Workdir = "/work/app", "/work/app"
		p.Mounts = []isolator.Mount{
			{Kind: isolator.Bind, Source: plantest.SandboxHome, Dest: plantest.Home, Why: "sandbox home"},
			{Kind: isolator.Bind, Source: "/work/app", Dest: "/work/app", Why: "project"},
			{Kind: isolator.Bind, Source: plantest.Home + "/.gitconfig", HomeRel: ".gitconfig", ReadOnly: true, Why: "tool git"},
			{Kind: isolator.MaskDir, HomeRel: ".ssh", Why: "sandbox.hide_paths"},
			{Kind: isolator.MaskDir, Dest: plantest.Home + "/.ssh", Why: "sandbox.hide_paths (at its host path)"},
		}
	}
	add := func(m isolator.Mount) func(*isolator.Plan) {
		return func(p *isolator.Plan) { outside(p); p.Mounts = append(p.Mounts, m) }
	}
	const fix = "a path below the host home would be at two places inside one another; set docker.home to /home/u, or to a path neither above nor below it"
	cases := []struct {
		name, home string
		edit       func(*isolator.Plan)
		want       string // the error; "" for none
	}{
		{name: "at the host home's path", home: "/home/u"},
		{name: "apart", home: "/home/dev"},
		{name: "inside, the project below the host home", home: "/home/u/box",
			want: "configuration does not fit this host: the containers' home /home/u/box lies inside the host home /home/u, where the sandbox shows /home/u/src/app (project) at its host path: " + fix},
		{name: "above, the project below the host home", home: "/home",
			want: "configuration does not fit this host: the containers' home /home contains the host home /home/u, where the sandbox shows /home/u/src/app (project) at its host path: " + fix},
		{name: "the default /home/u inside a host home /home/u/x", home: "", edit: func(p *isolator.Plan) {
			p.User.HostHome, p.Project.Dir, p.Workdir = "/home/u/x", "/home/u/x/app", "/home/u/x/app"
			p.Mounts = p.Mounts[:1]
			p.Mounts[0].Dest = "/home/u/x"
			p.Mounts = append(p.Mounts, isolator.Mount{Kind: isolator.Bind, Source: "/home/u/x/app", Dest: "/home/u/x/app", Why: "project"})
		}, want: "configuration does not fit this host: the containers' home /home/u contains the host home /home/u/x, where the sandbox shows /home/u/x/app (project) at its host path: " +
			"a path below the host home would be at two places inside one another; set docker.home to /home/u/x, or to a path neither above nor below it"},
		{name: "inside, nothing shown at a host path of the home", home: "/home/u/box", edit: outside},
		{name: "inside, a user's bind above the host home", home: "/home/u/box", edit: add(isolator.Mount{Kind: isolator.Bind, Source: "/home", Dest: "/home", ReadOnly: true, Why: "sandbox.ro_binds"}),
			want: "configuration does not fit this host: the containers' home /home/u/box lies inside the host home /home/u, where the sandbox shows /home (sandbox.ro_binds) at its host path: " + fix},
		{name: "inside, generated data below the host home", home: "/home/u/box", edit: add(isolator.Mount{Kind: isolator.Data, Dest: "/home/u/notes/x", Content: []byte("x"), Why: "tool x"}),
			want: "configuration does not fit this host: the containers' home /home/u/box lies inside the host home /home/u, where the sandbox shows /home/u/notes/x (tool x) at its host path: " + fix},
	}
	for _, c := range cases {
		p := plantest.Base()
		if c.edit != nil {
			c.edit(p)
		}
		_, err := Lay(p, Options{Home: c.home, FilesDir: plantest.StateDir + "/files"}, "1.0")
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%s: %v", c.name, err)
		case c.want != "" && (err == nil || err.Error() != c.want || !errors.Is(err, isolator.ErrConfig)):
			t.Errorf("%s: got %v\nwant %s (ErrConfig)", c.name, err, c.want)
		}
	}
}
