package isolator_test

import (
	"context"
	"errors"
	"testing"

	"github.com/devsandbox/devsandbox/isolator"
)

// noViewer is an isolator that cannot say what its sandbox shows.
type noViewer struct{}

func (noViewer) Name() string                                     { return "other" }
func (noViewer) Check(context.Context) isolator.Status            { return isolator.Status{} }
func (noViewer) Render(*isolator.Plan) (isolator.Rendered, error) { return nil, nil }
func (noViewer) Run(context.Context, *isolator.Plan, isolator.Stdio) (int, error) {
	return 0, nil
}

// ViewOf an isolator without a View fails, rather than give bwrap's view of a Plan
// that another sandbox shows otherwise.
func TestViewOfNoViewer(t *testing.T) {
	v, err := isolator.ViewOf(noViewer{}, &isolator.Plan{})
	if v != nil || !errors.Is(err, isolator.ErrUnavailable) {
		t.Errorf("ViewOf(an isolator with no View) = %v, %v; want ErrUnavailable", v, err)
	}
}
