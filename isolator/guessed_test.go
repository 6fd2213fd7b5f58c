package isolator_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/devsandbox/devsandbox/isolator"
)

// WithGuess tells the failure and then the hint, and keeps the failure's chain; the
// failure alone is found through errors.As. No hint, no Guessed.
func TestWithGuess(t *testing.T) {
	engine := errors.New("no such file or directory")
	failure := fmt.Errorf("%w: the engine could not start the container: %w", isolator.ErrProtection, engine)
	if err := isolator.WithGuess(failure, ""); err != failure {
		t.Errorf("WithGuess without a hint: %v, want the failure itself", err)
	}
	err := isolator.WithGuess(failure, " (if the engine is old: upgrade it)")
	if err.Error() != failure.Error()+" (if the engine is old: upgrade it)" || !errors.Is(err, engine) || !errors.Is(err, isolator.ErrProtection) {
		t.Errorf("WithGuess: %v, want the failure, the hint and the failure's chain", err)
	}
	var g *isolator.Guessed
	if !errors.As(fmt.Errorf("wrapped: %w", err), &g) || g.Err != failure {
		t.Errorf("errors.As: %#v, want the failure", g)
	}
}
