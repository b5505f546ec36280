package workflow

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/relcap/relcap/workflow/appstate"
	"github.com/relcap/relcap/workflow/finding"
	"github.com/relcap/relcap/workflow/image"
)

// Want is what convergence means for one release.
type Want struct {
	Revision string
	Digest   image.Digest
}

// Verdict is the judgement of one observed state against a Want. Sync and
// health are judged separately: "applied but not healthy" is its own state.
type Verdict struct {
	Kind       appstate.VerdictKind `json:"kind"`
	Reason     string               `json:"reason,omitempty"`
	NextAction string               `json:"next_action,omitempty"`
	// Terminal is true when waiting longer will not help.
	Terminal bool `json:"terminal,omitempty"`
}

// Converged is the pure predicate of the convergence watch (after argo-cd's
// checkAppWaitConditions): synced at the intended revision, last operation
// succeeded, healthy, and running the promoted digest.
func Converged(s appstate.AppState, w Want) Verdict {
	// A failed operation counts against the wanted revision only when it
	// was that revision's (or nobody knows): after a bad commit is
	// reverted, Argo CD may find the revert already in sync and start no
	// new operation, leaving the old failure in place.
	opForWant := w.Revision == "" || s.OperationRevision == "" || s.OperationRevision == w.Revision
	if s.Operation.Failed() && opForWant {
		return Verdict{Kind: appstate.VerdictSyncFailed, Terminal: true,
			Reason:     fmt.Sprintf("sync%s %s: %s", ofRevision(s.OperationRevision), strings.ToLower(string(s.Operation)), s.OperationMsg),
			NextAction: "fix the manifests in the environment repo (a new commit), or roll back with relcap rollback"}
	}
	if s.Operation == appstate.OperationRunning && s.OperationRetries > 0 {
		if !opForWant {
			// Argo CD starts no sync while an operation is in progress,
			// and a retried one keeps its revision: the intended commit
			// waits until every retry of the older one has failed.
			return Verdict{Kind: appstate.VerdictProgressing,
				Reason: fmt.Sprintf("Argo CD is still retrying the failed sync of %s (attempt #%d); %s waits for it: %s",
					revOrNone(s.OperationRevision), s.OperationRetries, revOrNone(w.Revision), s.OperationMsg)}
		}
		if rejectedManifest(s.OperationMsg) {
			// The API server refused the objects as invalid: the same
			// manifests fail every retry, so waiting out Argo CD's
			// back-off (minutes by default) only delays the decision.
			return Verdict{Kind: appstate.VerdictSyncFailed, Terminal: true,
				Reason: fmt.Sprintf("sync of %s failed and Argo CD is retrying (attempt #%d), but the API server rejects the manifests, so no retry can pass: %s",
					revOrNone(s.OperationRevision), s.OperationRetries, s.OperationMsg),
				NextAction: "fix the manifests in the environment repo (a new commit), or roll back with relcap rollback, which ends the retries first"}
		}
		return Verdict{Kind: appstate.VerdictProgressing,
			Reason: fmt.Sprintf("sync failed, Argo CD retrying (attempt #%d): %s", s.OperationRetries, s.OperationMsg)}
	}
	atRevision := w.Revision == "" || s.SyncRevision == w.Revision
	if s.SyncStatus != appstate.SyncSynced || !atRevision {
		if s.SyncStatus == appstate.SyncSynced && !atRevision && s.Health == appstate.HealthHealthy {
			return Verdict{Kind: appstate.VerdictWrongRevision,
				Reason:     fmt.Sprintf("synced and healthy at %s, not at the intended %s", revOrNone(s.SyncRevision), revOrNone(w.Revision)),
				NextAction: "wait for Argo CD to pick up the commit, or refresh the application"}
		}
		return Verdict{Kind: appstate.VerdictProgressing, Reason: fmt.Sprintf("sync %s at %s", s.SyncStatus, revOrNone(s.SyncRevision))}
	}
	if s.Operation == appstate.OperationRunning {
		reason := "sync operation running"
		if s.OperationMsg != "" {
			reason += ": " + s.OperationMsg
		}
		return Verdict{Kind: appstate.VerdictProgressing, Reason: reason}
	}
	if !w.Digest.IsZero() && !RunsDigest(s.Images, w.Digest) {
		return Verdict{Kind: appstate.VerdictWrongArtifact,
			Reason:     fmt.Sprintf("live images %s do not include %s", strings.Join(s.Images, ", "), w.Digest),
			NextAction: "check that the environment repo pins the promoted digest and that nothing else overrides the image"}
	}
	switch s.Health {
	case appstate.HealthHealthy:
		return Verdict{Kind: appstate.VerdictConverged}
	case appstate.HealthDegraded:
		// Argo CD's application health repeats the Pod's message once the
		// Deployment degrades: name the failure as the tree would.
		if slices.ContainsFunc(imagePullSigns, func(sign string) bool { return strings.Contains(s.HealthMessage, sign) }) ||
			strings.Contains(s.HealthMessage, "Readiness probe failed") {
			v, _ := ResourceFailure([]appstate.AppResource{{Kind: "Pod", Health: appstate.HealthDegraded, Message: s.HealthMessage}}, image.Digest{}, nil, 0)
			v.Reason = "applied but degraded: " + s.HealthMessage
			return v
		}
		return Verdict{Kind: appstate.VerdictAppliedUnhealthy, Terminal: true,
			Reason:     "applied but degraded: " + s.HealthMessage,
			NextAction: "inspect the failing resources; roll back with relcap rollback if the new digest is at fault"}
	}
	return Verdict{Kind: appstate.VerdictAppliedUnhealthy, Reason: fmt.Sprintf("applied, health %s", s.Health)}
}

// invalidSigns are how the Kubernetes API server words a refusal of an
// object itself (HTTP 422, a failed validation or admission), as opposed
// to a transient failure (a timeout, a missing CRD being installed).
var invalidSigns = []string{" is invalid: ", "Invalid value:", "admission webhook", "denied request:", "is forbidden: violates"}

// rejectedManifest says a failed sync's message is the API server
// refusing the manifests, which retrying the same revision cannot fix.
func rejectedManifest(msg string) bool {
	return slices.ContainsFunc(invalidSigns, func(sign string) bool { return strings.Contains(msg, sign) })
}

// ofRevision is " of <rev>" for a message, or "" when unknown.
func ofRevision(rev string) string {
	if rev == "" {
		return ""
	}
	return " of " + revOrNone(rev)
}

// RunsDigest reports whether one of images (a Pod's, as Argo CD reports
// them) runs digest d.
func RunsDigest(images []string, d image.Digest) bool {
	return slices.ContainsFunc(images, func(img string) bool { return strings.HasSuffix(img, "@"+d.String()) })
}

// revOrNone abbreviates a revision for a message; "(none)" when unknown.
func revOrNone(rev string) string {
	if rev == "" {
		return "(none)"
	}
	return ShortHash(rev)
}

// ReadinessGrace is how long a Pod may report failing readiness probes
// before the watch calls it a failed rollout: new Pods commonly fail a few
// probes while they start.
const ReadinessGrace = 90 * time.Second

var imagePullSigns = []string{"ImagePullBackOff", "ErrImagePull", "Back-off pulling image", "InvalidImageName", "pull access denied", "manifest unknown"}

// ResourceFailure judges a resource tree: a Pod that cannot pull its image
// fails the rollout at once; a Pod that is not ready fails it when it is
// Degraded, or when it has failed readiness for longer than grace
// (notReadyFor says for how long each resource has). When the digest
// being rolled out is known, a Pod that reports other images is the
// previous rollout's, being replaced (a rollback's broken Pod backs off
// until the restored ReplicaSet is ready): its failure is not this one's.
func ResourceFailure(resources []appstate.AppResource, promoted image.Digest, notReadyFor func(appstate.AppResource) time.Duration, grace time.Duration) (Verdict, bool) {
	resources = slices.DeleteFunc(slices.Clone(resources), func(r appstate.AppResource) bool {
		return !promoted.IsZero() && len(r.Images) > 0 && !RunsDigest(r.Images, promoted)
	})
	for _, r := range resources {
		for _, sign := range imagePullSigns {
			if strings.Contains(r.Message, sign) {
				return Verdict{Kind: appstate.VerdictImagePullFailed, Terminal: true,
					Reason:     fmt.Sprintf("%s %s/%s cannot pull its image: %s", r.Kind, r.Namespace, r.Name, r.Message),
					NextAction: "check that the promoted digest is in the environment's registry and the cluster can pull it (pull secret); if it cannot, roll back with relcap rollback"}, true
			}
		}
	}
	for _, r := range resources {
		if r.Kind != "Pod" || !isReadinessFailure(r) {
			continue
		}
		if r.Health == appstate.HealthDegraded || (notReadyFor != nil && notReadyFor(r) > grace) {
			// Say how long it was given, so a captain whose application
			// is merely slow knows which setting to raise.
			given := ""
			if r.Health != appstate.HealthDegraded {
				given = fmt.Sprintf(" (not ready for over %s, argocd.readiness_grace)", grace)
			}
			return Verdict{Kind: appstate.VerdictReadinessFailed, Terminal: true,
				Reason:     fmt.Sprintf("Pod %s/%s does not become ready%s: %s", r.Namespace, r.Name, given, r.Message),
				NextAction: "read the Pod's events and logs; the new version fails its readiness probe: roll back with relcap rollback, then fix forward"}, true
		}
	}
	return Verdict{}, false
}

func isReadinessFailure(r appstate.AppResource) bool {
	return strings.Contains(r.Message, "Readiness probe failed") || strings.Contains(r.Message, "not ready") || (r.Kind == "Pod" && r.Health == appstate.HealthDegraded)
}

// AppUpdate is one item of a convergence watch: a new state, or the error
// that ended the stream.
type AppUpdate struct {
	State appstate.AppState
	Err   error
}

// SyncWindow is a sync window of an Argo CD project: while a deny window
// that applies to an application is active, Argo CD runs no automated sync
// and no self-heal of it (and a manual sync only when ManualSync allows
// it); when the window closes, Argo CD resumes them by itself.
type SyncWindow struct {
	Kind string `json:"kind"` // SyncWindowDeny or SyncWindowAllow
	// Project is the Argo CD project that holds the window; empty before
	// the adapter has placed it.
	Project string `json:"project,omitempty"`
	// Applications are the application names (globs) the window applies
	// to; relcap's windows name exactly one.
	Applications []string `json:"applications"`
	// Schedule is when the window opens, a five-field cron expression
	// (minute hour day-of-month month day-of-week) in TimeZone.
	Schedule string        `json:"schedule"`
	Duration time.Duration `json:"duration"`
	TimeZone string        `json:"time_zone,omitempty"`
	// ManualSync lets a person sync by hand while a deny window is active.
	ManualSync bool `json:"manual_sync"`
	// Description says whose window it is, where the server keeps one
	// (Argo CD 3.1 and later); empty otherwise.
	Description string `json:"description,omitempty"`
	// Active is Argo CD's verdict when the window was read (ListWindows).
	Active bool `json:"active,omitempty"`
}

// Sync window kinds.
const (
	SyncWindowDeny  = "deny"
	SyncWindowAllow = "allow"
)

// Same reports whether w and o are the same window as Argo CD applies it:
// kind, applications, schedule, duration, time zone (none means UTC) and
// manual sync. Project, Description and Active are not compared: a server
// that drops descriptions still holds the same window.
func (w SyncWindow) Same(o SyncWindow) bool {
	tz := func(s string) string {
		if s == "" {
			return "UTC"
		}
		return s
	}
	a, b := slices.Clone(w.Applications), slices.Clone(o.Applications)
	slices.Sort(a)
	slices.Sort(b)
	return w.Kind == o.Kind && slices.Equal(a, b) && w.Schedule == o.Schedule && w.Duration == o.Duration &&
		tz(w.TimeZone) == tz(o.TimeZone) && w.ManualSync == o.ManualSync
}

func (w SyncWindow) String() string {
	s := fmt.Sprintf("%s window %q for %s, %s in %s", w.Kind, w.Schedule, strings.Join(w.Applications, ","), finding.ShortDuration(w.Duration), w.TimeZone)
	if w.Project != "" {
		s += " on project " + w.Project
	}
	return s
}

// SyncPolicy is an Argo CD application's automated sync policy, as a
// break-glass record from before sync windows saved it to restore.
type SyncPolicy struct {
	Automated bool `json:"automated"`
	SelfHeal  bool `json:"self_heal"`
	Prune     bool `json:"prune"`
}

// UnmarshalJSON reads a policy object, or the JSON string holding one that
// break-glass records kept before checkpoints were typed.
func (p *SyncPolicy) UnmarshalJSON(b []byte) error {
	type plain SyncPolicy
	var s string
	if json.Unmarshal(b, &s) == nil {
		b = []byte(s)
	}
	var v plain
	if err := json.Unmarshal(b, &v); err != nil {
		return fmt.Errorf("sync policy: %w", err)
	}
	*p = SyncPolicy(v)
	return nil
}

func (p SyncPolicy) String() string {
	if !p.Automated {
		return "manual"
	}
	return fmt.Sprintf("automated (self-heal %t, prune %t)", p.SelfHeal, p.Prune)
}
