package argosim

import (
	"context"
	"fmt"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/argoproj/argo-cd/v2/pkg/apis/application/v1alpha1"

	"github.com/relcap/relcap/workflow"
)

// The simulated controller: it follows the branch, resolves the pinned
// image, and runs sync operations (automated, self-heal) like Argo CD's.

func (s *Server) startReconciler(a *app) {
	ctx := s.ctx
	s.wg.Go(func() { s.reconcileLoop(ctx, a) })
}

// reconcileLoop is the simulated application controller: it polls the
// branch tip and advances operations and rollouts with the clock.
func (s *Server) reconcileLoop(ctx context.Context, a *app) {
	t := time.NewTicker(s.cfg.PollInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-a.kick:
		}
		s.mu.Lock()
		down := s.controllerDown != nil
		s.mu.Unlock()
		if !down {
			s.reconcile(a, time.Now())
		}
	}
}

// wake runs the reconciler now instead of at its next tick.
func (a *app) wake() {
	select {
	case a.kick <- struct{}{}:
	default:
	}
}

// reconcile reads Git outside the lock, then advances the state machine.
func (s *Server) reconcile(a *app, now time.Time) {
	var target *rendered
	tip, gitErr := a.readRef()
	if gitErr == nil && tip != a.renderedTip {
		var data []byte
		if data, gitErr = a.fileAtLocked(tip); gitErr == nil {
			target, gitErr = render(tip, data, a.renderOptions())
			if gitErr != nil {
				gitErr = fmt.Errorf("%s at %s: %w", a.cfg.Path, workflow.ShortHash(tip), gitErr)
			}
		}
		if gitErr == nil {
			a.renderedTip = tip
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	// A reader can catch a ref file mid-write (go-git truncates, then
	// writes); report Git errors only when they persist.
	if gitErr != nil {
		a.gitFailures++
		if a.gitFailures >= 3 {
			a.gitErr = gitErr
		}
	} else {
		a.gitFailures, a.gitErr = 0, nil
	}
	if target != nil {
		s.cfg.Logf("argosim: app %s: branch %s moved to %s", a.cfg.Name, a.cfg.Branch, workflow.ShortHash(tip))
		a.target = target
	}
	s.step(a, now)
	s.publish(a, now, false)
}

// readRef returns the branch tip.
func (a *app) readRef() (string, error) {
	a.gitMu.Lock()
	defer a.gitMu.Unlock()
	ref, err := a.repo.Reference(plumbing.NewBranchReferenceName(a.cfg.Branch), true)
	if err != nil {
		return "", fmt.Errorf("read branch %s: %w", a.cfg.Branch, err)
	}
	return ref.Hash().String(), nil
}

// readTip returns the branch tip and the file's content there.
func (a *app) readTip() (string, []byte, error) {
	tip, err := a.readRef()
	if err != nil {
		return "", nil, err
	}
	data, err := a.fileAtLocked(tip)
	return tip, data, err
}

func (a *app) fileAtLocked(rev string) ([]byte, error) {
	a.gitMu.Lock()
	defer a.gitMu.Unlock()
	return a.fileAt(plumbing.NewHash(rev))
}

// fileAt reads the app's file at commit h; a.gitMu is held.
func (a *app) fileAt(h plumbing.Hash) ([]byte, error) {
	c, err := a.repo.CommitObject(h)
	if err != nil {
		return nil, fmt.Errorf("read commit %s: %w", workflow.ShortHash(h.String()), err)
	}
	f, err := c.File(a.cfg.Path)
	if err != nil {
		return nil, fmt.Errorf("read %s at %s: %w", a.cfg.Path, workflow.ShortHash(h.String()), err)
	}
	s, err := f.Contents()
	if err != nil {
		return nil, fmt.Errorf("read %s at %s: %w", a.cfg.Path, workflow.ShortHash(h.String()), err)
	}
	return []byte(s), nil
}

// resolve turns a revision (empty for the branch tip, a branch, or a full
// or abbreviated commit hash) into its rendered file.
func (a *app) resolve(rev string) (*rendered, error) {
	a.gitMu.Lock()
	defer a.gitMu.Unlock()
	if rev == "" || rev == "HEAD" {
		rev = a.cfg.Branch
	}
	h, err := a.repo.ResolveRevision(plumbing.Revision(rev))
	if err != nil {
		return nil, fmt.Errorf("unable to resolve %q to a commit: %w", rev, err)
	}
	data, err := a.fileAt(*h)
	if err != nil {
		return nil, err
	}
	return render(h.String(), data, a.renderOptions())
}

// commit returns the commit object for RevisionMetadata.
func (a *app) commit(rev string) (*object.Commit, error) {
	a.gitMu.Lock()
	defer a.gitMu.Unlock()
	h, err := a.repo.ResolveRevision(plumbing.Revision(rev))
	if err != nil {
		return nil, err
	}
	return a.repo.CommitObject(*h)
}

// step advances operations; s.mu is held.
func (s *Server) step(a *app, now time.Time) {
	// The API server recorded a sync request (Sync RPC): the controller
	// picks it up and clears app.operation, as Argo CD does.
	if a.obj.Operation != nil && a.op == nil {
		req := a.obj.Operation
		a.obj.Operation = nil
		rev := ""
		if req.Sync != nil {
			rev = req.Sync.Revision
		}
		target, err := a.resolveLocked(rev)
		if err != nil {
			a.opState = &v1alpha1.OperationState{Operation: *req, Phase: "Error", Message: "simulated sync: " + err.Error(), StartedAt: metav1.NewTime(now), FinishedAt: ptr(metav1.NewTime(now))}
		} else {
			s.startOp(a, target, req.InitiatedBy, false, now)
		}
	}
	if a.op != nil && !now.Before(a.op.started) && now.Sub(a.op.started) >= a.cfg.SyncDuration {
		s.finishOp(a, now)
	}
	if a.op != nil || a.obj.Operation != nil || a.target == nil || !a.automated() {
		return
	}
	// As argo-cd's controller: an active deny window (or an allow window
	// that is closed) stops automated sync and self-heal; when it closes,
	// both resume at the next pass.
	if denied := !s.canSync(a, false); denied != a.windowDenied {
		a.windowDenied = denied
		if denied {
			s.cfg.Logf("argosim: app %s: sync prevented by sync window", a.cfg.Name)
		} else {
			s.cfg.Logf("argosim: app %s: no sync window prevents sync any more", a.cfg.Name)
		}
	}
	if a.windowDenied {
		return
	}
	gitChanged := a.deployed == nil || a.target.json != a.deployed.json
	switch {
	case gitChanged && a.failedAuto != a.target.revision:
		s.startOp(a, a.target, v1alpha1.OperationInitiator{Automated: true}, false, now)
	case !gitChanged && a.drift != "" && a.selfHeal() && now.Sub(a.driftAt) >= a.cfg.SelfHealDelay:
		s.startOp(a, a.target, v1alpha1.OperationInitiator{Automated: true}, true, now)
	}
}

// resolveLocked resolves rev, using the already rendered tip when it can
// (s.mu is held; Git is read only when another revision is asked for).
func (a *app) resolveLocked(rev string) (*rendered, error) {
	if a.target != nil && (rev == "" || rev == "HEAD" || rev == a.cfg.Branch || rev == a.target.revision) {
		return a.target, nil
	}
	return a.resolve(rev)
}

func (a *app) automated() bool {
	sp := a.obj.Spec.SyncPolicy
	return sp != nil && sp.Automated != nil
}

func (a *app) selfHeal() bool { return a.automated() && a.obj.Spec.SyncPolicy.Automated.SelfHeal }

func (s *Server) startOp(a *app, target *rendered, by v1alpha1.OperationInitiator, selfHeal bool, now time.Time) {
	a.op = &operation{target: target, started: now, initiator: by, selfHeal: selfHeal}
	op := v1alpha1.Operation{Sync: &v1alpha1.SyncOperation{Revision: target.revision, Prune: a.cfg.Prune}, InitiatedBy: by}
	if selfHeal {
		// As Argo CD 2.x: a self-heal syncs only the out-of-sync
		// resources, and counts self-heals of one revision in a row
		// unless the last sync ended longer than the cool-down ago.
		var n int64
		if prev := a.opState; prev != nil && prev.Operation.Sync != nil && prev.Operation.Sync.Revision == target.revision &&
			(prev.FinishedAt == nil || now.Sub(prev.FinishedAt.Time) < selfHealCooldown) {
			n = prev.Operation.Sync.SelfHealAttemptsCount
		}
		op.Sync.SelfHealAttemptsCount = n + 1
		op.Sync.Resources = []v1alpha1.SyncOperationResource{{Group: "apps", Kind: "Deployment", Name: target.meta("name", a.cfg.Workload)}}
	}
	a.opState = &v1alpha1.OperationState{
		Operation: op,
		Phase:     "Running",
		Message:   "one or more tasks are running [simulated]",
		StartedAt: metav1.NewTime(now),
	}
	why := "sync"
	if selfHeal {
		why = "self-heal sync"
	}
	s.cfg.Logf("argosim: app %s: %s to %s started", a.cfg.Name, why, workflow.ShortHash(target.revision))
}

func (s *Server) finishOp(a *app, now time.Time) {
	op := a.op
	a.op = nil
	a.opState.FinishedAt = ptr(metav1.NewTime(now))
	if a.failSync != "" && (a.failSyncMarker == "" || strings.Contains(op.target.source, a.failSyncMarker)) {
		if op.initiator.Automated && int(a.opState.RetryCount) < a.cfg.SyncRetries {
			// Argo CD's retry: the operation stays Running with the same
			// revision, the next attempt starts after the back-off, and
			// the message carries the controller's own words.
			a.opState.RetryCount++
			a.opState.Phase = "Running"
			next := now.Add(a.cfg.RetryBackoff)
			a.opState.Message = fmt.Sprintf("%s due to application controller sync timeout. Retrying attempt #%d at %s.", a.failSync, a.opState.RetryCount, next.Format(time.Kitchen))
			op.started = next
			a.op = op
			s.cfg.Logf("argosim: app %s: sync to %s failed, retry #%d at %s", a.cfg.Name, workflow.ShortHash(op.target.revision), a.opState.RetryCount, next.Format(time.TimeOnly))
			return
		}
		a.opState.Phase = "Failed"
		a.opState.Message = a.failSync
		if a.opState.RetryCount > 0 {
			a.opState.Message += fmt.Sprintf(" (retried %d times).", a.opState.RetryCount)
		}
		if op.initiator.Automated {
			a.failedAuto = op.target.revision
		}
		s.cfg.Logf("argosim: app %s: sync to %s failed: %s", a.cfg.Name, workflow.ShortHash(op.target.revision), a.failSync)
		return
	}
	a.opState.Phase = "Succeeded"
	a.opState.Message = "successfully synced (all tasks run) [simulated]"
	a.opState.SyncResult = &v1alpha1.SyncOperationResult{
		Revision: op.target.revision,
		Source:   *a.obj.Spec.Source,
		Resources: v1alpha1.ResourceResults{{
			Group: "apps", Version: "v1", Kind: "Deployment", Namespace: a.cfg.Namespace, Name: op.target.meta("name", a.cfg.Workload),
			Status: "Synced", Message: "deployment.apps/" + op.target.meta("name", a.cfg.Workload) + " configured (simulated)", SyncPhase: "Sync",
		}},
	}
	if a.deployed == nil || !slices.Equal(a.deployed.images, op.target.images) || a.driftedImages() {
		// New pods: a rollout starts and failures injected into the old
		// pods are gone with them.
		a.rollout = now
		a.podFailure = podFailNone
		for _, img := range op.target.images {
			switch {
			case a.cfg.Pull != nil && a.cfg.Pull(img) != nil:
				a.podFailure, a.podFailureAt = podFailImagePull, now
			case a.cfg.NeverReady != nil && a.cfg.NeverReady(img) && a.podFailure == podFailNone:
				a.podFailure, a.podFailureAt = podFailReadiness, now
			}
		}
	}
	a.deployed = op.target
	a.drift, a.driftedLive = "", nil
	a.failedAuto = ""
	if !op.selfHeal {
		// Argo CD keeps full syncs in history; a self-heal, a partial
		// sync, shows only in the operation state.
		a.recordHistory(op.target, op.started, now, op.initiator)
	}
	s.cfg.Logf("argosim: app %s: synced to %s", a.cfg.Name, workflow.ShortHash(op.target.revision))
}

func (a *app) driftedImages() bool {
	return a.driftedLive != nil && a.deployed != nil && !slices.Equal(a.driftedLive.images, a.deployed.images)
}

// selfHealCooldown is Argo CD's --self-heal-backoff-cooldown-seconds
// default: self-heals further apart start counting again.
const selfHealCooldown = 330 * time.Second

// historyLimit is Argo CD's default spec.revisionHistoryLimit.
const historyLimit = 10

func (a *app) recordHistory(r *rendered, started, at time.Time, by v1alpha1.OperationInitiator) {
	src := v1alpha1.ApplicationSource{RepoURL: "file://" + filepath.ToSlash(a.cfg.RepoPath), Path: path.Dir(a.cfg.Path), TargetRevision: a.cfg.Branch}
	a.history = append(a.history, v1alpha1.RevisionHistory{
		ID: a.nextID, Revision: r.revision, DeployedAt: metav1.NewTime(at), DeployStartedAt: ptr(metav1.NewTime(started)),
		Source: src, InitiatedBy: by,
	})
	a.nextID++
	if len(a.history) > historyLimit {
		a.history = slices.Clone(a.history[len(a.history)-historyLimit:])
	}
}
