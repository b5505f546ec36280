package rehearsal_test

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/relcap/relcap/workflow"
	"github.com/relcap/relcap/workflow/breakglass"
	"github.com/relcap/relcap/workflow/ownership"
	"github.com/relcap/relcap/workflow/rehearsal"
	"github.com/relcap/relcap/workflow/workflowtest"
)

// testProject is the workflow tests' project: staging then prod, each
// with its Terraform root, registry, environment repo and application.
func testProject(planApprovals int) *workflow.Project {
	env := func(name string) workflow.Environment {
		return workflow.Environment{
			Name:      name,
			Terraform: workflow.TerraformTarget{Dir: "/infra/" + name, Workspace: "default"},
			Registry:  workflow.RegistryTarget{Repository: "registry.test/" + name + "/web", RequireSignature: name == "prod"},
			EnvRepo:   workflow.EnvRepoTarget{Path: "/env", Branch: "main", File: "apps/web/" + name + "/kustomization.yaml", Image: "web", Format: workflow.FormatKustomize},
			ArgoCD:    workflow.ArgoCDTarget{Server: "argocd.test:443", App: "web-" + name},
			Approvals: workflow.ApprovalPolicy{Plan: planApprovals, DistinctFromAuthor: true},
		}
	}
	return &workflow.Project{
		File: "/repo/relcap.yaml", App: "web",
		Ownership: ownership.Map{File: "ownership.yaml", Rules: []ownership.Rule{
			{Line: 3, Match: ownership.Match{TerraformType: "aws_*"}, Owner: ownership.OwnerTerraform},
			{Line: 5, Match: ownership.Match{Group: "apps", Kind: "Deployment", Namespace: "web"}, Owner: ownership.OwnerArgoCD},
		}},
		Environments: []workflow.Environment{env("staging"), env("prod")},
		Classify:     workflow.DefaultClassify(),
		Effort:       workflow.EffortPolicy{IdleThreshold: 2 * time.Minute, BaselineHoursPerRelease: 3},
	}
}

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
