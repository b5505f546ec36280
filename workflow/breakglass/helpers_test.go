package breakglass_test

import (
	"time"

	"github.com/relcap/relcap/workflow"
	"github.com/relcap/relcap/workflow/breakglass"
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

// process is one relcap process: the core Service and the break-glass
// service over its ports, with its session journal.
type process struct {
	core    *workflow.Service
	svc     *breakglass.Service
	journal *workflowtest.Journal
}
