package sandboxinit

import (
	"reflect"
	"sort"
	"testing"
)

// A process is a live session's when it descends from an exec'd process (parent pid
// 0); everything else but the keeper is a stray, whatever its depth.
func TestStrayPids(t *testing.T) {
	ps := []process{
		{1, 0},                      // the keeper
		{10, 0}, {11, 10}, {12, 11}, // a session's init, its command, a grandchild
		{20, 1}, {21, 20}, // an orphan of an ended session, and its child
		{30, 12}, // deep below a live session: the session's
		{40, 99}, // its parent started after the listing: looked up again
		{50, 98}, // its parent is gone
	}
	lookup := map[int]int{99: 10}
	got := strayPids(ps, 1, func(pid int) int {
		if pp, ok := lookup[pid]; ok {
			return pp
		}
		return -1
	})
	sort.Ints(got)
	if want := []int{20, 21, 50}; !reflect.DeepEqual(got, want) {
		t.Fatalf("strays %v, want %v", got, want)
	}
}
