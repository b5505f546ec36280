package home

import (
	"github.com/relcap/relcap/workflow"
)

// shapeOf is the release's shape as last decided, or as its record says
// for a release written before shapes (no I/O: the plan is not read here).
func shapeOf(r *workflow.Release) workflow.ShapeDecision {
	d := workflow.ShapeOf(r, nil)
	if r.Shape != workflow.ShapeUndecided && r.Shape != d.Shape {
		// The run decided it with the plan at hand; say that shape.
		d = workflow.ShapeDecision{Shape: r.Shape, Why: "decided by the run from its plan"}
	}
	return d
}

// shapeLine is the decision map's line for the release's shape.
func (m Model) shapeLine(r *workflow.Release) string {
	th := m.Theme
	d := shapeOf(r)
	return th.Label.Render("Shape ") + th.Accent.Render(d.Shape.String()) + th.Muted.Render(" · "+d.Why)
}

// skippedWhy is why the release's shape skips step k while it is pending,
// or "".
func skippedWhy(r *workflow.Release, k workflow.StepKind) string {
	if r.Step(k).Status != workflow.Pending {
		return ""
	}
	for _, p := range workflow.PlanSteps(r, shapeOf(r)) {
		if p.Step == k && !p.Runs {
			return "will be skipped: " + p.Why
		}
	}
	return ""
}
