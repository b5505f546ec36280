package workflow_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/relcap/relcap/workflow"
	"github.com/relcap/relcap/workflow/journal"
	"github.com/relcap/relcap/workflow/owners"
	"github.com/relcap/relcap/workflow/ownership"
	"github.com/relcap/relcap/workflow/secret"
	"github.com/relcap/relcap/workflow/tooloutput"
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

	var journaled []journal.StepOutput
	for _, e := range alice.journal.Entries() {
		if e.Kind == journal.KindStepOutput {
			var o journal.StepOutput
			require.NoError(t, json.Unmarshal(e.Data, &o))
			journaled = append(journaled, o)
		}
	}
	require.Equal(t, []journal.StepOutput{{Release: r.ID, Step: "plan-review", Lines: lines}}, journaled)
}

// printingSource is an ownership source that prints as Terraform does.
type printingSource struct{}

func (printingSource) ManagedObjects(ctx context.Context, _ workflow.Environment) ([]ownership.ManagedObject, error) {
	if w, ok := tooloutput.From(ctx); ok {
		fmt.Fprint(w, "Initializing the backend...\n")
	}
	return nil, nil
}

// TestToolOutputOfACommandGoesToItsWriter: relcap ownership check prints
// Terraform's progress where the command says (stderr) and journals it;
// the cockpit's setting prints nothing and still journals.
func TestToolOutputOfACommandGoesToItsWriter(t *testing.T) {
	t.Parallel()
	clock := workflowtest.NewClock(t0)
	j := workflowtest.NewJournal(clock, "alice")
	var stderr strings.Builder
	svc, err := workflow.NewService(workflow.Deps{Project: testProject(0), Ledger: workflowtest.NewLedger(), Journal: j, Clock: clock, Actor: "alice",
		Ownership: []workflow.OwnershipSource{printingSource{}}, ToolOutput: &stderr})
	require.NoError(t, err)
	_, err = owners.Check(t.Context(), svc, "staging")
	require.NoError(t, err)
	require.Equal(t, "Initializing the backend...\n", stderr.String())
	require.Contains(t, j.Kinds(), string(journal.KindStepOutput))

	svc.SetToolOutput(nil)
	stderr.Reset()
	_, err = owners.Check(t.Context(), svc, "staging")
	require.NoError(t, err)
	require.Empty(t, stderr.String())
	require.Equal(t, 2, strings.Count(strings.Join(j.Kinds(), " "), string(journal.KindStepOutput)), "journaled either way")
}

// TestScrubbedLinesMasksASecretSplitAcrossWrites: a tool's output arrives
// in chunks that need not end at a line; each line is masked whole, so a
// secret cut in two by the chunks is still caught, and control sequences
// never reach the terminal.
func TestScrubbedLinesMasksASecretSplitAcrossWrites(t *testing.T) {
	t.Parallel()
	var term strings.Builder
	out, flush := tooloutput.Scrubbed(&term, secret.NewSet("tok-7f3a9c2e51"))
	for _, chunk := range []string{"token = \"tok-7f3", "a9c2e51\"\n\x1b[31mred", " tok-7f3a9c", "2e51"} {
		_, err := out.Write([]byte(chunk))
		require.NoError(t, err)
	}
	require.Equal(t, "token = \"(sensitive)\"\n", term.String(), "a partial line waits for its end")
	flush()
	require.Equal(t, "token = \"(sensitive)\"\nred (sensitive)\n", term.String())
}
