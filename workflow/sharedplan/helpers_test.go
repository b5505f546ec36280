package sharedplan_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/relcap/relcap/workflow"
	"github.com/relcap/relcap/workflow/ownership"
	"github.com/relcap/relcap/workflow/workflowtest"
)

var t0 = time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)

// testProject is the core tests' project: staging and prod of app web.
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
