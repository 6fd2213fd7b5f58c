package bwrap

import (
	"os"
	"slices"
	"testing"

	"github.com/devsandbox/devsandbox/isolator/tty"
)

// TestPlainTerminals: only the output streams that are terminals get a pty, one
// for both when they are one terminal (their order holds); pipes and stdin keep
// the caller's descriptors.
func TestPlainTerminals(t *testing.T) {
	master, term, err := tty.Open()
	if err != nil {
		t.Fatal(err)
	}
	defer master.Close()
	defer term.Close()
	other, err := os.OpenFile(term.Name(), os.O_WRONLY, 0) // the same terminal, another file
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()

	for _, c := range []struct {
		name             string
		in, out, errw    *os.File
		ptyOut, ptyErr   bool
		sameOutAndErrPty bool
	}{
		{name: "pipes", in: r, out: w, errw: w},
		{name: "stdout and stderr one terminal", in: r, out: term, errw: other, ptyOut: true, ptyErr: true, sameOutAndErrPty: true},
		{name: "one file for both", in: r, out: term, errw: term, ptyOut: true, ptyErr: true, sameOutAndErrPty: true},
		{name: "stderr alone", in: term, out: w, errw: term, ptyErr: true},
		{name: "stdout alone", in: r, out: term, errw: w, ptyOut: true},
	} {
		t.Run(c.name, func(t *testing.T) {
			s, err := newChildStdio(c.in, c.out, c.errw)
			if err != nil {
				t.Fatal(err)
			}
			done, err := plainTerminals(s, tty.FilterOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if s.files[0] != c.in {
				t.Errorf("stdin changed")
			}
			if got := s.files[1] != c.out; got != c.ptyOut {
				t.Errorf("stdout replaced: %v, want %v", got, c.ptyOut)
			}
			if got := s.files[2] != c.errw; got != c.ptyErr {
				t.Errorf("stderr replaced: %v, want %v", got, c.ptyErr)
			}
			if got := s.files[1] == s.files[2]; c.ptyOut && c.ptyErr && got != c.sameOutAndErrPty {
				t.Errorf("one pty for stdout and stderr: %v, want %v", got, c.sameOutAndErrPty)
			}
			for i, f := range s.files[1:] {
				if f != c.out && f != c.errw && !tty.IsTerminal(f.Fd()) {
					t.Errorf("descriptor %d is not a terminal", i+1)
				}
			}
			if (done != nil) != (c.ptyOut || c.ptyErr) {
				t.Fatalf("a wait for the copies: %v, want %v", done != nil, c.ptyOut || c.ptyErr)
			}
			s.close() // as startChild does once bwrap holds them
			if done != nil {
				if err := done(); err != nil {
					t.Error(err)
				}
			}
		})
	}
}

// TestPagerEnv: PAGER=cat is added unless the environment sets PAGER, even empty.
func TestPagerEnv(t *testing.T) {
	for _, c := range []struct{ env, want []string }{
		{env: nil, want: []string{"PAGER=cat"}},
		{env: []string{"HOME=/h", "PAGERS=x"}, want: []string{"HOME=/h", "PAGERS=x", "PAGER=cat"}},
		{env: []string{"PAGER=less -R", "HOME=/h"}, want: []string{"PAGER=less -R", "HOME=/h"}},
		{env: []string{"PAGER="}, want: []string{"PAGER="}},
	} {
		if got := pagerEnv(c.env); !slices.Equal(got, c.want) {
			t.Errorf("pagerEnv(%q) = %q, want %q", c.env, got, c.want)
		}
	}
}
