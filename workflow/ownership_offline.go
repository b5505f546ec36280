package workflow

import (
	"context"
	"fmt"
	"strings"

	"github.com/relcap/relcap/workflow/evidence"
	"github.com/relcap/relcap/workflow/fault"
	"github.com/relcap/relcap/workflow/ownership"
	"github.com/relcap/relcap/workflow/tfplan"
)

// The ownership check without a live Argo CD: the ports and the gate. A
// plan whose root cannot write a Kubernetes object needs no Argo CD at
// all; otherwise what Argo CD will write is rendered from the environment
// repository (DesiredSource) and compared with Terraform's objects, and
// the live check (a ClusterOwnershipSource) adds what only the cluster
// knows when it can run. When it cannot, a production apply of a plan that
// touches Kubernetes objects is refused (ErrLiveOwnershipUnchecked).

// DesiredSource renders what an environment's Argo CD application wants
// from the environment repository, as Argo CD would, without Argo CD.
type DesiredSource interface {
	DesiredObjects(ctx context.Context, env Environment) (ownership.Desired, error)
}

// ClusterOwnershipSource is the optional ability of an OwnershipSource
// that reads the cluster (Argo CD): it is asked only when Terraform writes
// Kubernetes objects, and when it cannot be read the check goes on
// offline, saying so.
type ClusterOwnershipSource interface {
	OwnershipSource
	ReadsCluster()
}

// KubernetesCapable is the optional ability of an OwnershipSource
// (Terraform) to say whether its root can write Kubernetes objects it does
// not manage yet: the Kubernetes-capable providers its configuration
// requires (none means no plan of it can hold a Kubernetes object).
type KubernetesCapable interface {
	KubernetesProviders(ctx context.Context, env Environment) ([]string, error)
}

// ErrLiveOwnershipUnchecked: a production apply of a plan that touches
// Kubernetes objects while the live ownership check could not run (exit 3).
var ErrLiveOwnershipUnchecked = fmt.Errorf("%w: live ownership check did not run", fault.ErrBlocked)

// askCluster says when readOwnership asks the cluster (Argo CD).
type askCluster bool

const (
	// clusterWhenKubernetes: a plan review asks only when Terraform
	// writes or may write Kubernetes objects.
	clusterWhenKubernetes askCluster = false
	// clusterAlways: relcap ownership check asks whenever there is a
	// cluster, for what only Argo CD knows (unowned objects, third
	// managers, self-heal loops).
	clusterAlways askCluster = true
)

// readOwnership reads the environment's ownership sources: every source
// but the cluster's first; then the cluster's (as ask says), whose failure
// is recorded, not returned, and when it could not run, the desired
// objects rendered from the environment repository. read runs each read
// (a release run counts it as waiting).
func (s *Service) readOwnership(ctx context.Context, env Environment, ask askCluster, read func(func() ([]ownership.ManagedObject, error)) ([]ownership.ManagedObject, error)) (ownership.Sources, error) {
	var src ownership.Sources
	var cluster []ClusterOwnershipSource
	var capable []KubernetesCapable
	for _, o := range s.d.Ownership {
		if c, ok := o.(ClusterOwnershipSource); ok {
			cluster = append(cluster, c)
			continue
		}
		objs, err := read(func() ([]ownership.ManagedObject, error) { return o.ManagedObjects(ctx, env) })
		if err != nil {
			return src, fmt.Errorf("read managed objects: %w", err)
		}
		src.Terraform = append(src.Terraform, objs...)
		if k, ok := o.(KubernetesCapable); ok {
			capable = append(capable, k)
		}
	}
	why := ownership.KubernetesObjects(src.Terraform)
	if len(why) > 3 {
		why = append(why[:3], fmt.Sprintf("and %d more", len(why)-3))
	}
	for _, k := range capable {
		providers, err := k.KubernetesProviders(ctx, env)
		if err != nil {
			return src, fmt.Errorf("read the Terraform root's providers: %w", err)
		}
		if len(providers) > 0 {
			why = append(why, "its configuration requires "+strings.Join(providers, ", "))
		}
	}
	if len(cluster) == 0 && s.d.Desired == nil {
		// Nothing but Terraform to read (a test world, or an environment
		// without Argo CD): the check is what it always was.
		src.LiveRan = true
	}
	if len(why) == 0 && ask == clusterWhenKubernetes {
		return src, nil
	}
	src.Kubernetes = strings.Join(why, ", ")
	if len(cluster) > 0 {
		src.LiveRan = true
		for _, c := range cluster {
			objs, err := read(func() ([]ownership.ManagedObject, error) { return c.ManagedObjects(ctx, env) })
			if err != nil {
				src.LiveRan, src.LiveError, src.Live = false, err.Error(), nil
				break
			}
			src.Live = append(src.Live, objs...)
		}
	}
	if src.LiveRan || s.d.Desired == nil || env.ArgoCD.App == "" {
		// Argo CD's managed resources are every object of the rendered
		// source, synced or not: the live check has them all.
		return src, nil
	}
	var d ownership.Desired
	_, err := read(func() ([]ownership.ManagedObject, error) {
		var err error
		d, err = s.d.Desired.DesiredObjects(ctx, env)
		return nil, err
	})
	if err != nil {
		// A repository that cannot be rendered is Git's problem to fix,
		// not a reason to stop reviewing the plan.
		d = ownership.Desired{App: env.ArgoCD.App, Unverified: "the environment repository could not be rendered: " + err.Error()}
	}
	src.Desired = append(src.Desired, d)
	return src, nil
}

// liveOwnershipGate refuses a production apply of a plan that touches
// Kubernetes objects when the ownership step's live check could not run.
// The check is tried once more first: Argo CD may be reachable now. ok is
// false with the Blocked result to return.
func (run *releaseRun) liveOwnershipGate(ctx context.Context, plan tfplan.Summary) (StepResult, bool, error) {
	own := run.r.Step(StepOwnership)
	checked, _, found := evidence.Of[evidence.OwnershipChecked](own.Evidence)
	if !found || checked.LiveUnchecked == "" || !run.svc.d.Project.IsProduction(run.env) {
		return StepResult{}, true, nil
	}
	kube := plan.KubernetesChanges()
	if len(kube) == 0 {
		return StepResult{}, true, nil
	}
	again, err := run.ownership(ctx)
	if err != nil {
		return StepResult{}, false, err
	}
	own.Evidence = append(own.Evidence, again.Evidence...)
	if again.Status == Blocked {
		return again, false, nil
	}
	now, _, _ := evidence.Of[evidence.OwnershipChecked](again.Evidence)
	if now.LiveUnchecked == "" {
		return StepResult{}, true, nil
	}
	listed := kube
	if len(listed) > 3 {
		listed = append(listed[:3:3], fmt.Sprintf("and %d more", len(kube)-3))
	}
	msg := fmt.Sprintf("%s is a production environment and plan %s writes Kubernetes objects (%s), but the live ownership check could not run: %s; make Argo CD reachable and run relcap resume %s",
		run.env.Name, ShortHash(plan.Fingerprint), strings.Join(listed, ", "), now.LiveUnchecked, run.r.ID)
	return blocked(ErrLiveOwnershipUnchecked, msg, again.Findings), false, nil
}
