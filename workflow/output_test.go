package workflow_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/relcap/relcap/workflow"
	"github.com/relcap/relcap/workflow/workflowtest"
)

// TestToolOutputBecomesEventsAndIsJournaled: what Terraform prints during
// a step reaches the run's sink line by line (the cockpit's log pane) and
// the session journal as one step.output entry, never a terminal.
func TestToolOutputBecomesEventsAndIsJournaled(t *testing.T) {
	t.Parallel()
	clock := workflowtest.NewClock(t0)
	w, l := workflowtest.NewWorld(), workflowtest.NewLedger()
	alice := newProcess(t, testProject(0), w, l, clock, "alice")
	r, err := alice.svc.Start(t.Context(), workflow.StartRequest{Env: "staging", Image: "registry.test/ci/web:1.2.3"})
	require.NoError(t, err)
	var lines []string
	_, err = alice.svc.Run(t.Context(), r.ID, func(e workflow.Event) {
		if e.Kind == workflow.EventStepOutput {
			require.Equal(t, workflow.StepPlanReview, e.Step)
			lines = append(lines, e.Output)
		}
	})
	require.NoError(t, err)
	require.Equal(t, []string{"Initializing the backend...", "", "Plan: 1 to add, 0 to change, 0 to destroy."}, lines)

	var journaled []workflow.StepOutput
	for _, e := range alice.journal.Entries() {
		if e.Kind == workflow.KindStepOutput {
			var o workflow.StepOutput
			require.NoError(t, json.Unmarshal(e.Data, &o))
			journaled = append(journaled, o)
		}
	}
	require.Equal(t, []workflow.StepOutput{{Release: r.ID, Step: "plan-review", Lines: lines}}, journaled)
}

// TestToolOutputOfACommandGoesToItsWriter: relcap plan prints Terraform's
// progress where the command says (stderr) and journals it.
func TestToolOutputOfACommandGoesToItsWriter(t *testing.T) {
	t.Parallel()
	clock := workflowtest.NewClock(t0)
	w, l := workflowtest.NewWorld(), workflowtest.NewLedger()
	p := newProcess(t, testProject(1), w, l, clock, "alice")
	var stderr strings.Builder
	p.svc.SetToolOutput(&stderr)
	_, err := p.svc.PlanEnv(t.Context(), "staging")
	require.NoError(t, err)
	require.Equal(t, "Initializing the backend...\n\nPlan: 1 to add, 0 to change, 0 to destroy.\n", stderr.String())
	require.Contains(t, p.journal.Kinds(), string(workflow.KindStepOutput))

	p.svc.SetToolOutput(nil)
	stderr.Reset()
	_, err = p.svc.PlanEnv(t.Context(), "staging")
	require.NoError(t, err)
	require.Empty(t, stderr.String(), "the cockpit's setting: nothing printed, still journaled")
}
