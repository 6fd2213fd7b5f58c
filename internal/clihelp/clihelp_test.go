package clihelp

import "testing"

func TestWrap(t *testing.T) {
	got := wrap("one two three four five six", 2, 4, 14)
	want := "  one two\n    three four\n    five six\n"
	if got != want {
		t.Errorf("wrap = %q, want %q", got, want)
	}
	if got := wrap("averyveryverylongword x", 0, 0, 8); got != "averyveryverylongword\nx\n" {
		t.Errorf("a long word: %q", got)
	}
}
