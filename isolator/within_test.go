package isolator

import "testing"

func TestWithin(t *testing.T) {
	for _, c := range []struct {
		p, dir string
		want   bool
	}{
		{"/a", "/a", true},
		{"/a/b", "/a", true},
		{"/a/b/c", "/a", true},
		{"/ab", "/a", false},
		{"/a", "/a/b", false},
		{"/", "/", true},
		{"/a", "/", true},
		{"/b", "/a", false},
		{"", "/a", false},
		{"/a/", "/a", true}, // not clean: the same answer as before, dir followed by "/"
		{"/a/b", "/a/", false},
		{"/a//b", "/a/", true},
	} {
		if got := Within(c.p, c.dir); got != c.want {
			t.Errorf("Within(%q, %q) = %v, want %v", c.p, c.dir, got, c.want)
		}
	}
}

var withinSink bool

// BenchmarkWithin: planning asks Within thousands of times a launch; it must not
// allocate.
func BenchmarkWithin(b *testing.B) {
	p, dir := "/home/someone/projects/a-longer-project-name/sub/dir", "/home/someone/projects/a-longer-project-name"
	b.ReportAllocs()
	for b.Loop() {
		if !Within(p, dir) {
			b.Fatal("not within")
		}
	}
	if a := testing.AllocsPerRun(100, func() { withinSink = Within(p, dir) }); a != 0 {
		b.Fatalf("%v allocations per call", a)
	}
}
