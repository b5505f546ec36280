package sharedplan_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/relcap/relcap/workflow"
	"github.com/relcap/relcap/workflow/workflowtest"
)

var t0 = workflowtest.T0

// testProject is workflowtest.Project: app web in staging and prod.
func testProject(planApprovals int) *workflow.Project { return workflowtest.Project(planApprovals) }

// process is one relcap process: a Service over a shared world and ledger.
type process struct {
	svc     *workflow.Service
	journal *workflowtest.Journal
}

// newProcess is a process of actor without a team store (as with SQLite):
// nothing is shared.
func newProcess(t *testing.T, p *workflow.Project, w *workflowtest.World, l *workflowtest.Ledger, clock workflow.Clock, actor string) process {
	t.Helper()
	j := workflowtest.NewJournal(clock, actor)
	tf := workflowtest.Terraform{W: w}
	svc, err := workflow.NewService(workflow.Deps{
		Project: p, Ledger: l, Journal: j, Clock: clock, Actor: actor,
		Ownership: []workflow.OwnershipSource{workflowtest.Ownership{W: w}},
		Planner:   tf, Applier: tf,
		Registry: workflowtest.Registry{W: w}, EnvRepo: workflowtest.EnvRepo{W: w},
		Convergence: workflowtest.Convergence{W: w}, ConvergeTimeout: time.Minute,
	})
	require.NoError(t, err)
	return process{svc: svc, journal: j}
}
