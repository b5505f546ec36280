package owners_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/relcap/relcap/workflow"
	"github.com/relcap/relcap/workflow/config"
	"github.com/relcap/relcap/workflow/fault"
	"github.com/relcap/relcap/workflow/journal"
	"github.com/relcap/relcap/workflow/owners"
	"github.com/relcap/relcap/workflow/ownership"
	"github.com/relcap/relcap/workflow/workflowtest"
)

var t0 = time.Date(2026, 12, 3, 18, 0, 0, 0, time.UTC)

// inferWorld is a project whose staging Deployment Terraform and Argo CD
// both write (the fakes named workflowtest.TerraformObjects and
// workflowtest.FakeArgoCD stand for Terraform state and Argo CD), with
// its ownership map in a temporary directory.
func inferWorld(t *testing.T) (*workflow.Service, *workflowtest.Journal, *workflow.Project) {
	t.Helper()
	dir := t.TempDir()
	p := workflowtest.Project(0)
	p.Environments = p.Environments[:1]
	p.OwnershipFile = filepath.Join(dir, "ownership.yaml")
	require.NoError(t, os.WriteFile(p.OwnershipFile, []byte("version: 1\nrules: []\n"), 0o644))
	tf := workflowtest.TerraformObjects{Objects: []ownership.ManagedObject{{Manager: ownership.OwnerTerraform, TerraformAddress: "kubectl_manifest.web_scale",
		TerraformType: "kubectl_manifest", Group: "apps", Kind: "Deployment", Namespace: "web", Name: "web",
		Fields: []string{"spec.replicas", "spec.template.spec.containers[web].image"}}}}
	argo := &workflowtest.FakeArgoCD{Objects: []ownership.ManagedObject{{Manager: ownership.OwnerArgoCD, App: "web-staging",
		Group: "apps", Kind: "Deployment", Namespace: "web", Name: "web",
		Fields: []string{"spec.replicas", "spec.template.spec.containers[web].image", "spec.template.spec.containers[web].ports[0].containerPort"},
		Live: []ownership.FieldManager{
			{Manager: "argocd-controller", Operation: "Update", Time: t0, Fields: []string{"spec.replicas", "spec.template.spec.containers[web].image",
				"spec.template.spec.containers[web].ports[0].containerPort"}},
		}}}}
	clock := workflowtest.NewClock(t0)
	j := workflowtest.NewJournal(clock, "alice")
	svc, err := workflow.NewService(workflow.Deps{Project: p, Ledger: workflowtest.NewLedger(), Journal: j, Clock: clock, Actor: "alice",
		Ownership: []workflow.OwnershipSource{tf, argo}})
	require.NoError(t, err)
	return svc, j, p
}

func TestInferWritesADraftBesideTheMapThatValidateAccepts(t *testing.T) {
	svc, j, p := inferWorld(t)
	res, err := owners.Infer(t.Context(), svc, owners.InferRequest{})
	require.NoError(t, err)
	draft := filepath.Join(filepath.Dir(p.OwnershipFile), owners.DraftName)
	require.Equal(t, draft, res.Written)
	contested, flipping := res.Contested()
	require.Equal(t, 2, contested)
	require.Equal(t, 2, flipping, "Terraform declares both and holds neither")

	data, err := os.ReadFile(draft)
	require.NoError(t, err)
	require.Equal(t, res.YAML, data)
	m, err := config.LoadOwnership(draft)
	require.NoError(t, err, "relcap validate reads the draft as it reads the map")
	require.Equal(t, ownership.Owner("argocd"), m.Rules[0].Owner)
	require.Contains(t, string(data), "spec.replicas: argocd, terraform; held by argocd-controller (argocd); flips: terraform writes it back")
	require.Empty(t, res.Changes, "the current map already gives web's Deployments to Argo CD (ownership.yaml:5)")

	var rec journal.OwnershipInferred
	entries := j.Entries()
	require.NoError(t, json.Unmarshal(entries[len(entries)-1].Data, &rec))
	require.Equal(t, journal.OwnershipInferred{Envs: []string{"staging"}, Objects: 1, Contested: 2, Flipping: 2, Changes: 0, Live: true,
		Draft: draft, SHA256: rec.SHA256}, rec)
	require.Len(t, rec.SHA256, 64)

	// A second run replaces its own draft.
	_, err = owners.Infer(t.Context(), svc, owners.InferRequest{})
	require.NoError(t, err)
}

func TestInferNeverWritesOverTheMapOrAPersonsFile(t *testing.T) {
	svc, j, p := inferWorld(t)
	before := len(j.Entries())
	_, err := owners.Infer(t.Context(), svc, owners.InferRequest{Out: p.OwnershipFile})
	require.ErrorIs(t, err, fault.ErrUsage)
	require.ErrorContains(t, err, "is the ownership map itself")

	mine := filepath.Join(t.TempDir(), "notes.yaml")
	require.NoError(t, os.WriteFile(mine, []byte("my notes\n"), 0o644))
	_, err = owners.Infer(t.Context(), svc, owners.InferRequest{Out: mine})
	require.ErrorIs(t, err, fault.ErrUsage)
	data, _ := os.ReadFile(mine)
	require.Equal(t, "my notes\n", string(data))

	_, err = owners.Infer(t.Context(), svc, owners.InferRequest{Out: filepath.Join(t.TempDir(), "missing", "d.yaml")})
	require.ErrorContains(t, err, "its directory does not exist")
	_, err = owners.Infer(t.Context(), svc, owners.InferRequest{Envs: []string{"nope"}})
	require.Error(t, err)
	require.Len(t, j.Entries(), before, "nothing journaled for bad input")

	res, err := owners.Infer(t.Context(), svc, owners.InferRequest{Out: "-"})
	require.NoError(t, err)
	require.Empty(t, res.Written)
	require.NotEmpty(t, res.YAML)
}
