package diskguard

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/devsandbox/devsandbox/isolator"
)

// Beside's verdict comes from Ready, once the guard made beside the launch read the
// free space: a reserve already breached is the run's error before the command
// may start ("the command did not run", ErrLow), a reserve that holds lets it
// start; a launch that failed before Ready returns its own error; without a
// reserve run gets no guard at all.
func TestBeside(t *testing.T) {
	plan := func(reserve uint64) *isolator.Plan {
		dir := t.TempDir()
		p := &isolator.Plan{Mounts: []isolator.Mount{{Kind: isolator.Bind, Source: dir, Dest: "/data"}}}
		p.Limits.DiskReserve = reserve
		return p
	}
	t.Run("breached", func(t *testing.T) {
		readyErr := errors.New("not called")
		code, err := Beside(context.Background(), plan(1<<62), func(ctx context.Context, pd *Pending) (int, error) {
			pd.Begin()
			readyErr = pd.Ready()
			if readyErr != nil {
				return 0, readyErr
			}
			return 7, nil
		})
		if !errors.Is(readyErr, ErrLow) || !strings.Contains(readyErr.Error(), "the command did not run") {
			t.Errorf("Ready = %v; want the LowError, the command not run", readyErr)
		}
		if code != 0 || !errors.Is(err, ErrLow) {
			t.Errorf("Beside = %d, %v; want 0 and the LowError", code, err)
		}
	})
	t.Run("holds", func(t *testing.T) {
		code, err := Beside(context.Background(), plan(1), func(ctx context.Context, pd *Pending) (int, error) {
			pd.Begin()
			if err := pd.Ready(); err != nil {
				return 0, err
			}
			return 7, ctx.Err()
		})
		if code != 7 || err != nil {
			t.Errorf("Beside = %d, %v; want 7, nil", code, err)
		}
	})
	t.Run("Ready without Begin", func(t *testing.T) {
		_, err := Beside(context.Background(), plan(1<<62), func(ctx context.Context, pd *Pending) (int, error) {
			return 0, pd.Ready()
		})
		if !errors.Is(err, ErrLow) {
			t.Errorf("Beside = %v; want the LowError", err)
		}
	})
	t.Run("failed before Ready", func(t *testing.T) {
		failed := errors.New("bwrap not found")
		_, err := Beside(context.Background(), plan(1<<62), func(ctx context.Context, pd *Pending) (int, error) {
			pd.Begin()
			return 0, failed
		})
		if err != failed {
			t.Errorf("Beside = %v; want the launch's own error", err)
		}
	})
	t.Run("unreadable directory", func(t *testing.T) {
		// A watched directory that cannot be opened: the reserve cannot be kept,
		// and the command must not start.
		p := plan(1)
		p.Mounts[0].Source = filepath.Join(p.Mounts[0].Source, "file", "below")
		if err := os.WriteFile(filepath.Dir(p.Mounts[0].Source), nil, 0o600); err != nil {
			t.Fatal(err)
		}
		_, err := Beside(context.Background(), p, func(ctx context.Context, pd *Pending) (int, error) {
			pd.Begin()
			return 0, pd.Ready()
		})
		if err == nil || !strings.Contains(err.Error(), "the command did not run") {
			t.Errorf("Beside = %v; want the command not run", err)
		}
	})
	t.Run("no reserve", func(t *testing.T) {
		_, err := Beside(context.Background(), plan(0), func(ctx context.Context, pd *Pending) (int, error) {
			if pd != nil {
				t.Error("a guard without a reserve")
			}
			pd.Begin() // nil: nothing
			return 0, pd.Ready()
		})
		if err != nil {
			t.Errorf("Beside = %v; want nil", err)
		}
	})
}
