package rehearsal_test

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/relcap/relcap/workflow"
	"github.com/relcap/relcap/workflow/breakglass"
	"github.com/relcap/relcap/workflow/rehearsal"
	"github.com/relcap/relcap/workflow/workflowtest"
)

// testProject is workflowtest.Project: app web in staging and prod.
func testProject(planApprovals int) *workflow.Project { return workflowtest.Project(planApprovals) }

// process is one relcap process: the release core over a shared world
// and ledger, and the drills that run through it.
type process struct {
	svc     *workflow.Service
	rh      *rehearsal.Service
	journal *workflowtest.Journal
}

// withDrills is the process of svc, its drills wired as relcap wires
// them: the ledger keeps the rehearsals, the fake Terraform makes the
// scratch roots, break-glass pauses reconciliation unless commands do.
func withDrills(t *testing.T, svc *workflow.Service, j *workflowtest.Journal, commands rehearsal.CommandRunner) process {
	t.Helper()
	rh, err := rehearsal.New(rehearsal.Deps{Core: svc, Commands: commands, Pauser: breakglass.New(svc.Deps())})
	require.NoError(t, err)
	return process{svc: svc, rh: rh, journal: j}
}

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
	return withDrills(t, svc, j, nil)
}

// errKilled is what a test's ledger answers in place of the process that
// was killed there.
var errKilled = errors.New("killed")
