package main

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/relcap/relcap/workflow"
)

// TestPlanWithoutKubernetesObjectsNeedsNoArgoCD plans a real Terraform
// root of terraform_data resources with $ARGOCD_AUTH_TOKEN unset: no
// Kubernetes object can be in its plan, so Argo CD is never asked.
func TestPlanWithoutKubernetesObjectsNeedsNoArgoCD(t *testing.T) {
	t.Parallel()
	cfg, _, _ := tfRepo(t, 0, false)
	data := t.TempDir()

	code, out, errOut := invokeEnv(t, data, nil, "-c", cfg, "--actor", "alice", "plan", "--env", "staging")
	require.Equal(t, 0, code, out+errOut)
	require.NotContains(t, out+errOut, "ARGOCD_AUTH_TOKEN")
	require.Contains(t, out+errOut, "no Kubernetes objects in the plan; ownership check not needed")
	require.Contains(t, out, "2 to create")
}

func TestALiveCheckThatCouldNotRunRefusesWithExit3(t *testing.T) {
	t.Parallel()
	err := &workflow.StepError{Step: workflow.StepApply, Err: fmt.Errorf("%w: prod is a production environment", workflow.ErrLiveOwnershipUnchecked)}
	require.Equal(t, exitBlocked, exitCode(err))
}
