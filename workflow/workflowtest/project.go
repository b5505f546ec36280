package workflowtest

import (
	"time"

	"github.com/relcap/relcap/workflow"
	"github.com/relcap/relcap/workflow/approval"
	"github.com/relcap/relcap/workflow/ownership"
	"github.com/relcap/relcap/workflow/tfplan"
)

// T0 is the tests' start of time.
var T0 = time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)

// Project is the domain tests' project: app web in staging and prod, each
// needing planApprovals plan approvals from someone other than the author,
// prod's registry requiring signatures, and an ownership map that gives
// aws_* to Terraform and web's Deployments to Argo CD.
func Project(planApprovals int) *workflow.Project {
	env := func(name string) workflow.Environment {
		return workflow.Environment{
			Name:      name,
			Terraform: workflow.TerraformTarget{Dir: "/infra/" + name, Workspace: "default"},
			Registry:  workflow.RegistryTarget{Repository: "registry.test/" + name + "/web", RequireSignature: name == "prod"},
			EnvRepo:   workflow.EnvRepoTarget{Path: "/env", Branch: "main", File: "apps/web/" + name + "/kustomization.yaml", Image: "web", Format: workflow.FormatKustomize},
			ArgoCD:    workflow.ArgoCDTarget{Server: "argocd.test:443", App: "web-" + name},
			Approvals: approval.Policy{Plan: planApprovals, DistinctFromAuthor: true},
		}
	}
	return &workflow.Project{
		File: "/repo/relcap.yaml", App: "web",
		Ownership: ownership.Map{File: "ownership.yaml", Rules: []ownership.Rule{
			{Line: 3, Match: ownership.Match{TerraformType: "aws_*"}, Owner: ownership.OwnerTerraform},
			{Line: 5, Match: ownership.Match{Group: "apps", Kind: "Deployment", Namespace: "web"}, Owner: ownership.OwnerArgoCD},
		}},
		Environments: []workflow.Environment{env("staging"), env("prod")},
		Classify:     tfplan.DefaultClassify(),
		Effort:       workflow.EffortPolicy{IdleThreshold: 2 * time.Minute, BaselineHoursPerRelease: 3},
	}
}
