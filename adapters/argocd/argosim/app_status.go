package argosim

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/argoproj/gitops-engine/pkg/health"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/argoproj/argo-cd/v2/pkg/apis/application/v1alpha1"
)

// What the simulated Application reports: its live object, health, status
// and resource tree, and how status changes are published to watchers.

// live is what the cluster runs: the deployed object, with drift applied.
func (a *app) live() *rendered {
	if a.driftedLive != nil {
		return a.driftedLive
	}
	return a.deployed
}

// publish recomputes the status and, when anything changed, bumps the
// resourceVersion and notifies watchers; s.mu is held. force publishes
// even an unchanged object (a new app).
func (s *Server) publish(a *app, now time.Time, force bool) {
	st := a.status(now)
	old := a.obj.Status
	old.ReconciledAt, old.ObservedAt = nil, nil
	if !force && reflect.DeepEqual(old, st) {
		return
	}
	st.ReconciledAt = ptr(metav1.NewTime(now))
	st.ObservedAt = ptr(metav1.NewTime(now))
	// Argo CD's controller refreshes the app after an operation; app wait
	// treats reconciledAt before finishedAt as still in progress.
	if st.OperationState != nil && st.OperationState.FinishedAt != nil && st.ReconciledAt.Before(st.OperationState.FinishedAt) {
		st.ReconciledAt = st.OperationState.FinishedAt.DeepCopy()
	}
	a.obj.Status = st
	a.obj.ResourceVersion = s.nextVersion()
	s.broadcast(&a.obj)
}

// bump publishes a spec or metadata change (Update, Patch, Sync).
func (s *Server) bump(a *app, now time.Time) {
	a.obj.Status.ReconciledAt = ptr(metav1.NewTime(now))
	a.obj.ResourceVersion = s.nextVersion()
	s.broadcast(&a.obj)
}

// simulated marks health messages, which read like Argo CD's, as coming
// from simulated pods.
const simulated = " (simulated)"

// health is the Deployment's health and message at now.
func (a *app) health(now time.Time) (status, msg string) {
	live := a.live()
	if live == nil {
		return "Missing", ""
	}
	name := live.meta("name", a.cfg.Workload)
	switch a.podFailure {
	case podFailImagePull:
		return "Degraded", fmt.Sprintf("Deployment %q: pod %s: Back-off pulling image %q", name, a.podName(0), firstImage(live)) + simulated
	case podFailReadiness:
		if now.Sub(a.podFailureAt) >= a.cfg.ProgressDeadline {
			return "Degraded", fmt.Sprintf("Deployment %q exceeded its progress deadline: pod %s: Readiness probe failed", name, a.podName(0)) + simulated
		}
		return "Progressing", fmt.Sprintf("Waiting for rollout to finish: 0 of %d updated replicas are available...", a.cfg.Replicas) + simulated
	}
	if now.Sub(a.rollout) < a.cfg.TimeToHealthy {
		return "Progressing", fmt.Sprintf("Waiting for rollout to finish: 0 of %d updated replicas are available...", a.cfg.Replicas) + simulated
	}
	return "Healthy", ""
}

// podHealth is one pod's health and message at now.
func (a *app) podHealth(now time.Time) (status, msg string, reason string) {
	live := a.live()
	switch a.podFailure {
	case podFailImagePull:
		return "Degraded", fmt.Sprintf("Back-off pulling image %q", firstImage(live)) + simulated, "ImagePullBackOff"
	case podFailReadiness:
		m := "Readiness probe failed: HTTP probe failed with statuscode: 503" + simulated
		if now.Sub(a.podFailureAt) >= a.cfg.ProgressDeadline {
			return "Degraded", m, "Running"
		}
		return "Progressing", m, "Running"
	}
	if now.Sub(a.rollout) < a.cfg.TimeToHealthy {
		return "Progressing", "", "ContainerCreating"
	}
	return "Healthy", "", "Running"
}

func firstImage(r *rendered) string {
	if r == nil || len(r.images) == 0 {
		return ""
	}
	return r.images[0]
}

// status is the Application status at now, without reconciledAt.
func (a *app) status(now time.Time) v1alpha1.ApplicationStatus {
	st := v1alpha1.ApplicationStatus{SourceType: a.obj.Status.SourceType, History: slices.Clone(a.history), ControllerNamespace: "argocd"}
	if a.opState != nil {
		st.OperationState = a.opState.DeepCopy()
	}
	live := a.live()
	syncCode := v1alpha1.SyncStatusCodeOutOfSync
	if a.target != nil && live != nil && a.target.json == live.json {
		syncCode = v1alpha1.SyncStatusCodeSynced
	}
	if a.target != nil {
		st.Sync = v1alpha1.SyncStatus{Status: syncCode, Revision: a.target.revision,
			ComparedTo: v1alpha1.ComparedTo{Source: *a.obj.Spec.Source, Destination: a.obj.Spec.Destination}}
	} else {
		st.Sync = v1alpha1.SyncStatus{Status: v1alpha1.SyncStatusCodeUnknown}
	}
	if a.gitErr != nil {
		st.Conditions = []v1alpha1.ApplicationCondition{{Type: v1alpha1.ApplicationConditionComparisonError, Message: "simulated comparison: " + a.gitErr.Error()}}
	}
	h, msg := a.health(now)
	st.Health = v1alpha1.HealthStatus{Status: health.HealthStatusCode(h), Message: msg}
	ref := a.target
	if ref == nil {
		ref = live
	}
	name := a.cfg.Workload
	if ref != nil {
		name = ref.meta("name", a.cfg.Workload)
	}
	st.Resources = []v1alpha1.ResourceStatus{{
		Group: "apps", Version: "v1", Kind: "Deployment", Namespace: a.cfg.Namespace, Name: name,
		Status: syncCode, Health: &v1alpha1.HealthStatus{Status: health.HealthStatusCode(h), Message: msg},
	}}
	if live != nil {
		st.Summary.Images = slices.Clone(live.images)
	}
	return st
}

// tree is the resource tree: Deployment → ReplicaSet → Pods.
func (a *app) tree(now time.Time) *v1alpha1.ApplicationTree {
	live := a.live()
	if live == nil {
		return &v1alpha1.ApplicationTree{}
	}
	name := live.meta("name", a.cfg.Workload)
	h, msg := a.health(now)
	dep := v1alpha1.ResourceRef{Group: "apps", Version: "v1", Kind: "Deployment", Namespace: a.cfg.Namespace, Name: name, UID: a.uid + "-deploy"}
	rsName := a.replicaSetName()
	rs := v1alpha1.ResourceRef{Group: "apps", Version: "v1", Kind: "ReplicaSet", Namespace: a.cfg.Namespace, Name: rsName, UID: a.uid + "-" + rsName}
	rsHealth := h
	if h == "Degraded" {
		rsHealth = "Progressing"
	}
	t := &v1alpha1.ApplicationTree{Nodes: []v1alpha1.ResourceNode{
		{ResourceRef: dep, Health: &v1alpha1.HealthStatus{Status: health.HealthStatusCode(h), Message: msg}, ResourceVersion: a.obj.ResourceVersion, CreatedAt: ptr(metav1.NewTime(a.created))},
		{ResourceRef: rs, ParentRefs: []v1alpha1.ResourceRef{dep}, Health: &v1alpha1.HealthStatus{Status: health.HealthStatusCode(rsHealth)}, CreatedAt: ptr(metav1.NewTime(a.rollout)),
			Info: []v1alpha1.InfoItem{{Name: "Revision", Value: "Rev:" + fmt.Sprint(a.nextID)}}},
	}}
	ph, pmsg, reason := a.podHealth(now)
	ready := "1/1"
	if ph != "Healthy" {
		ready = "0/1"
	}
	for i := range a.cfg.Replicas {
		t.Nodes = append(t.Nodes, v1alpha1.ResourceNode{
			ResourceRef: v1alpha1.ResourceRef{Version: "v1", Kind: "Pod", Namespace: a.cfg.Namespace, Name: a.podName(i), UID: a.uid + "-" + a.podName(i)},
			ParentRefs:  []v1alpha1.ResourceRef{rs},
			Images:      slices.Clone(live.images),
			Health:      &v1alpha1.HealthStatus{Status: health.HealthStatusCode(ph), Message: pmsg},
			Info:        []v1alpha1.InfoItem{{Name: "Status Reason", Value: reason}, {Name: "Containers", Value: ready}, {Name: "Node", Value: "simulated-node"}},
			CreatedAt:   ptr(metav1.NewTime(a.rollout)),
		})
	}
	return t
}

func (a *app) replicaSetName() string {
	live := a.live()
	sum := sha256.Sum256([]byte(strings.Join(live.images, ",")))
	return live.meta("name", a.cfg.Workload) + "-" + hex.EncodeToString(sum[:])[:10]
}

func (a *app) podName(i int) string {
	sum := sha256.Sum256(fmt.Appendf(nil, "%s/%d/%d", a.replicaSetName(), a.rollout.UnixNano(), i))
	return a.replicaSetName() + "-" + hex.EncodeToString(sum[:])[:5]
}

func ptr[T any](v T) *T { return &v }
