package workflowtest

import (
	"context"
	"errors"
	"sync/atomic"

	"github.com/relcap/relcap/workflow"
	"github.com/relcap/relcap/workflow/ownership"
)

// Fakes of the ownership check's sources without a live Argo CD.

// TerraformObjects is a fake Terraform ownership source: its objects, and
// the Kubernetes-capable providers its configuration requires
// (workflow.KubernetesCapable).
type TerraformObjects struct {
	Objects   []ownership.ManagedObject
	Providers []string
}

var (
	_ workflow.OwnershipSource   = TerraformObjects{}
	_ workflow.KubernetesCapable = TerraformObjects{}
)

// ManagedObjects returns the objects.
func (t TerraformObjects) ManagedObjects(context.Context, workflow.Environment) ([]ownership.ManagedObject, error) {
	return append([]ownership.ManagedObject(nil), t.Objects...), nil
}

// KubernetesProviders returns the providers.
func (t TerraformObjects) KubernetesProviders(context.Context, workflow.Environment) ([]string, error) {
	return t.Providers, nil
}

// FakeArgoCD is a fake live Argo CD ownership source
// (workflow.ClusterOwnershipSource): it returns Objects, or Err when set,
// and counts its calls.
type FakeArgoCD struct {
	Objects []ownership.ManagedObject
	Err     error
	calls   atomic.Int32
}

var _ workflow.ClusterOwnershipSource = (*FakeArgoCD)(nil)

// ReadsCluster marks it as the cluster's source.
func (*FakeArgoCD) ReadsCluster() {}

// ManagedObjects returns Objects or Err.
func (a *FakeArgoCD) ManagedObjects(context.Context, workflow.Environment) ([]ownership.ManagedObject, error) {
	a.calls.Add(1)
	if a.Err != nil {
		return nil, a.Err
	}
	return append([]ownership.ManagedObject(nil), a.Objects...), nil
}

// Calls counts the reads.
func (a *FakeArgoCD) Calls() int { return int(a.calls.Load()) }

// Reporter is what a forbidden fake reports to: a *testing.T.
type Reporter interface {
	Helper()
	Errorf(format string, args ...any)
}

// ForbiddenArgoCD is a fake live Argo CD ownership source that fails the
// test it belongs to when it is read: for checks that must not need Argo
// CD at all.
type ForbiddenArgoCD struct{ T Reporter }

var _ workflow.ClusterOwnershipSource = ForbiddenArgoCD{}

// ReadsCluster marks it as the cluster's source.
func (ForbiddenArgoCD) ReadsCluster() {}

// ManagedObjects fails the test.
func (f ForbiddenArgoCD) ManagedObjects(context.Context, workflow.Environment) ([]ownership.ManagedObject, error) {
	f.T.Helper()
	f.T.Errorf("Argo CD was asked for managed objects, but the check must not need it")
	return nil, errors.New("forbidden fake Argo CD was read")
}

// ForbiddenDesired is a fake workflow.DesiredSource that fails the test
// when asked.
type ForbiddenDesired struct{ T Reporter }

// DesiredObjects fails the test.
func (f ForbiddenDesired) DesiredObjects(context.Context, workflow.Environment) (ownership.Desired, error) {
	f.T.Helper()
	f.T.Errorf("the environment repository was rendered, but the check must not need it")
	return ownership.Desired{}, errors.New("forbidden fake desired source was read")
}

// DesiredRepo is a fake workflow.DesiredSource: what the environment
// repository renders to.
type DesiredRepo struct{ Desired ownership.Desired }

// DesiredObjects returns Desired.
func (d DesiredRepo) DesiredObjects(context.Context, workflow.Environment) (ownership.Desired, error) {
	return d.Desired, nil
}
