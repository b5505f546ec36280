// Package appstate holds an Argo CD application as the domain sees it: its
// sync and health, its last operation, its resources, and the names of the
// convergence verdicts. It imports nothing of the release core; the core's
// convergence watch judges these values.
package appstate

import "time"

// SyncStatus is whether Argo CD finds the live state equal to Git.
type SyncStatus string

// Sync statuses, as Argo CD names them.
const (
	SyncSynced    SyncStatus = "Synced"
	SyncOutOfSync SyncStatus = "OutOfSync"
	SyncUnknown   SyncStatus = "Unknown"
)

// HealthStatus is Argo CD's health of an application or resource.
type HealthStatus string

// Health statuses, as Argo CD names them.
const (
	HealthHealthy     HealthStatus = "Healthy"
	HealthProgressing HealthStatus = "Progressing"
	HealthDegraded    HealthStatus = "Degraded"
	HealthMissing     HealthStatus = "Missing"
	HealthSuspended   HealthStatus = "Suspended"
	HealthUnknown     HealthStatus = "Unknown"
)

// OperationPhase is the phase of an application's last (or running) sync
// operation; "" when Argo CD reports none.
type OperationPhase string

// Operation phases, as Argo CD names them.
const (
	OperationRunning   OperationPhase = "Running"
	OperationSucceeded OperationPhase = "Succeeded"
	OperationFailed    OperationPhase = "Failed"
	OperationError     OperationPhase = "Error"
)

// Failed reports whether the operation ended in failure or error.
func (p OperationPhase) Failed() bool { return p == OperationFailed || p == OperationError }

// AppRef names an Argo CD application.
type AppRef struct {
	Env    string
	Server string
	Name   string
}

// AppState is an Argo CD application as the domain needs it.
type AppState struct {
	Name string `json:"name"`
	// Version is the resource version a Watch resumes from.
	Version       string         `json:"version,omitempty"`
	SyncStatus    SyncStatus     `json:"sync_status"`
	SyncRevision  string         `json:"sync_revision"`
	Health        HealthStatus   `json:"health"`
	HealthMessage string         `json:"health_message,omitempty"`
	Operation     OperationPhase `json:"operation,omitempty"` // last operation phase
	OperationMsg  string         `json:"operation_message,omitempty"`
	// OperationRevision is the revision the last operation synced (or
	// tried to); empty when unknown.
	OperationRevision string `json:"operation_revision,omitempty"`
	// OperationRetries counts how often Argo CD has retried the last
	// operation after it failed (its retry strategy); a Running operation
	// with retries is a failed sync waiting for its next attempt.
	OperationRetries int           `json:"operation_retries,omitempty"`
	Images           []string      `json:"images,omitempty"`
	Resources        []AppResource `json:"resources,omitempty"`
	// Tree is the resource tree down to Pods, when the watch has read it.
	Tree       []AppResource `json:"tree,omitempty"`
	AutoSync   bool          `json:"auto_sync"`
	SelfHeal   bool          `json:"self_heal"`
	ObservedAt time.Time     `json:"observed_at,omitzero"`
	// ReconciledAt is when Argo CD's application controller last
	// compared the application with Git; zero when unknown.
	ReconciledAt time.Time `json:"reconciled_at,omitzero"`
}

// AppResource is one resource of an application with its health.
type AppResource struct {
	Group     string       `json:"group,omitempty"`
	Kind      string       `json:"kind"`
	Namespace string       `json:"namespace,omitempty"`
	Name      string       `json:"name"`
	Status    SyncStatus   `json:"status,omitempty"`
	Health    HealthStatus `json:"health,omitempty"`
	Message   string       `json:"message,omitempty"`
	// Parent is the Key of the resource that owns it in the tree (a Pod's
	// ReplicaSet), "" for a top-level resource.
	Parent string `json:"parent,omitempty"`
	// Images are a Pod's container images as Argo CD reports them (with
	// their digests); empty for other kinds and when unknown.
	Images []string `json:"images,omitempty"`
}

// Key identifies a resource within an application's tree.
func (r AppResource) Key() string { return r.Kind + "/" + r.Namespace + "/" + r.Name }

// VerdictKind names a convergence verdict; a failed release's finding
// code is "convergence." + its kind.
type VerdictKind string

// Convergence verdicts.
const (
	VerdictConverged        VerdictKind = "converged"
	VerdictProgressing      VerdictKind = "progressing"
	VerdictAppliedUnhealthy VerdictKind = "applied-not-healthy"
	VerdictWrongRevision    VerdictKind = "wrong-revision"
	VerdictWrongArtifact    VerdictKind = "wrong-artifact"
	VerdictSyncFailed       VerdictKind = "sync-failed"
	// Found in the resource tree rather than the application.
	VerdictImagePullFailed VerdictKind = "image-pull-failed"
	VerdictReadinessFailed VerdictKind = "readiness-failed"
	// Argo CD's application controller does not reconcile the
	// application (stopped, crashed, stuck).
	VerdictReconcileStalled VerdictKind = "reconciliation-stalled"
	// VerdictReconcilePaused: a deny sync window (a break-glass) holds
	// automated sync off, so the intended revision is not synced.
	VerdictReconcilePaused VerdictKind = "reconciliation-paused"
)

// FindingCode is the code of the finding a failed watch records.
func (k VerdictKind) FindingCode() string { return "convergence." + string(k) }
