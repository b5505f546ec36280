package argosim

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"path"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/argoproj/gitops-engine/pkg/health"
	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/argoproj/argo-cd/v2/pkg/apis/application/v1alpha1"

	"github.com/relcap/relcap/workflow"
)

// AppConfig describes one simulated Argo CD Application.
type AppConfig struct {
	// Name is the Application's name.
	Name string
	// RepoPath is a local Git repository (working tree or bare) whose
	// branch the application follows.
	RepoPath string
	// Branch is followed like spec.source.targetRevision; default "main".
	Branch string
	// Path is the file in the repository that pins the image, e.g.
	// apps/web/staging/kustomization.yaml.
	Path string
	// Format is kustomize, helm-values or manifest; empty infers it from
	// the file (kustomization.yaml by name, a file with a kind as a
	// manifest, anything else as helm values).
	Format string
	// Namespace is the destination namespace; default the app name.
	Namespace string
	// Workload names the Deployment a kustomize or helm file implies;
	// default the app name (a manifest names its own).
	Workload string
	// Replicas is the rendered Deployment's replica count; default 1.
	Replicas int
	// Automated, SelfHeal and Prune are spec.syncPolicy.automated.
	Automated bool
	SelfHeal  bool
	Prune     bool
	// InitiallySynced starts the application synced and healthy at the
	// branch tip, as if Argo CD had deployed it before the simulator
	// started.
	InitiallySynced bool
	// TimeToHealthy is how long a rollout stays Progressing before it is
	// Healthy; zero means healthy as soon as it is synced.
	TimeToHealthy time.Duration
	// SyncDuration is how long a sync operation stays Running; default
	// 200ms.
	SyncDuration time.Duration
	// ProgressDeadline is how long failing readiness probes keep the
	// rollout Progressing before it is Degraded (a Deployment's
	// progressDeadlineSeconds, scaled down); default 2s.
	ProgressDeadline time.Duration
	// SelfHealDelay is how long drift stays before self-heal syncs it
	// away; default 1s.
	SelfHealDelay time.Duration
	// SyncRetries is how often a failed automated sync is retried, as
	// Argo CD does (5 times unless spec.syncPolicy.retry says otherwise),
	// RetryBackoff apart. While it retries, its operation stays Running
	// and no newer revision is synced. Zero: a failed automated sync is
	// not retried.
	SyncRetries  int
	RetryBackoff time.Duration
	// Pull, when set, is how the simulated kubelet pulls each image of a
	// rollout: an error makes the new pods fail to pull (ImagePullBackOff),
	// as a digest missing from the registry does. Nil pulls every image.
	Pull func(image string) error
	// NeverReady, when set, says an image's pods never pass their
	// readiness probe (a build that does not start).
	NeverReady func(image string) bool
}

func (c *AppConfig) defaults() error {
	if c.Name == "" {
		return errors.New("argosim: app name is empty")
	}
	if c.RepoPath == "" || c.Path == "" {
		return fmt.Errorf("argosim: app %s: RepoPath and Path are required", c.Name)
	}
	if c.SyncRetries < 0 {
		return fmt.Errorf("argosim: app %s: negative SyncRetries %d", c.Name, c.SyncRetries)
	}
	for _, d := range []time.Duration{c.TimeToHealthy, c.SyncDuration, c.ProgressDeadline, c.SelfHealDelay, c.RetryBackoff} {
		if d < 0 {
			return fmt.Errorf("argosim: app %s: negative duration %s", c.Name, d)
		}
	}
	if c.Branch == "" {
		c.Branch = "main"
	}
	if c.Namespace == "" {
		c.Namespace = c.Name
	}
	if c.Workload == "" {
		c.Workload = c.Name
	}
	if c.Replicas <= 0 {
		c.Replicas = 1
	}
	if c.SyncDuration == 0 {
		c.SyncDuration = 200 * time.Millisecond
	}
	if c.ProgressDeadline == 0 {
		c.ProgressDeadline = 2 * time.Second
	}
	if c.SelfHealDelay == 0 {
		c.SelfHealDelay = time.Second
	}
	c.Path = path.Clean(filepath.ToSlash(c.Path))
	return nil
}

// Pod failure kinds injected with FailImagePull and FailReadiness.
const (
	podFailNone = iota
	podFailImagePull
	podFailReadiness
)

// operation is a sync the simulated controller is running.
type operation struct {
	target    *rendered
	started   time.Time
	initiator v1alpha1.OperationInitiator
	selfHeal  bool
}

// app is one Application and its simulated controller state. gitMu
// guards repo; Server.mu guards the fields from obj on, except renderedTip.
type app struct {
	cfg    AppConfig
	uid    string
	kick   chan struct{}
	gitMu  sync.Mutex // go-git's Repository is not documented as safe for concurrent use
	repo   *git.Repository
	format string

	obj    v1alpha1.Application // what the API serves
	target *rendered            // rendered at tip
	gitErr error
	// gitFailures counts consecutive failed Git reads.
	gitFailures int
	deployed    *rendered // what the last successful sync applied
	rollout     time.Time // when the deployed images started rolling out
	op          *operation
	opState     *v1alpha1.OperationState
	history     v1alpha1.RevisionHistories
	nextID      int64

	podFailure   int
	podFailureAt time.Time
	failSync     string // armed: every sync fails with this message
	// failSyncMarker narrows failSync to revisions whose file contains it.
	failSyncMarker string
	failedAuto     string // revision whose automated sync failed; not retried (as Argo CD)
	windowDenied   bool   // a sync window prevented automated sync at the last pass
	drift          string // field changed on the live object
	driftAt        time.Time
	driftedLive    *rendered
	created        time.Time
	// renderedTip is the tip a.target was rendered from; only the
	// reconciler goroutine (and AddApp, before it starts) touches it.
	renderedTip string
}

// AddApp registers an application and reads its branch tip once, so a bad
// repository, branch or file is reported here rather than in the status.
func (s *Server) AddApp(cfg AppConfig) error {
	if err := cfg.defaults(); err != nil {
		return err
	}
	repo, err := git.PlainOpen(cfg.RepoPath)
	if err != nil {
		return fmt.Errorf("argosim: app %s: open repository %s: %w", cfg.Name, cfg.RepoPath, err)
	}
	a := &app{cfg: cfg, repo: repo, kick: make(chan struct{}, 1), created: time.Now()}
	sum := sha256.Sum256([]byte(cfg.Name + "\x00" + cfg.RepoPath))
	h := hex.EncodeToString(sum[:16])
	a.uid = h[:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:32]
	tip, data, err := a.readTip()
	if err != nil {
		return fmt.Errorf("argosim: app %s: %w", cfg.Name, err)
	}
	a.format = cfg.Format
	if a.format == "" {
		a.format = formatOf(cfg.Path, data)
	}
	target, err := render(tip, data, a.renderOptions())
	if err != nil {
		return fmt.Errorf("argosim: app %s: %s at %s: %w", cfg.Name, cfg.Path, workflow.ShortHash(tip), err)
	}
	a.target, a.renderedTip = target, tip
	now := time.Now()
	a.obj = a.baseObject()
	if cfg.InitiallySynced {
		a.deployed = target
		a.rollout = now.Add(-cfg.TimeToHealthy)
		a.recordHistory(target, now, now, v1alpha1.OperationInitiator{Automated: cfg.Automated, Username: "bootstrap"})
		a.opState = &v1alpha1.OperationState{
			Operation:  v1alpha1.Operation{Sync: &v1alpha1.SyncOperation{Revision: tip}, InitiatedBy: v1alpha1.OperationInitiator{Automated: cfg.Automated, Username: "bootstrap"}},
			Phase:      "Succeeded",
			Message:    "successfully synced (all tasks run) [simulated]",
			SyncResult: &v1alpha1.SyncOperationResult{Revision: tip, Source: *a.obj.Spec.Source},
			StartedAt:  metav1.NewTime(now),
			FinishedAt: ptr(metav1.NewTime(now)),
		}
	}

	s.mu.Lock()
	defer s.mu.Unlock()
	if _, dup := s.apps[cfg.Name]; dup {
		return fmt.Errorf("argosim: app %s already exists", cfg.Name)
	}
	s.apps[cfg.Name] = a
	s.publish(a, now, true)
	if s.started && !s.stopped {
		s.startReconciler(a)
	}
	s.cfg.Logf("argosim: app %s follows %s@%s:%s (tip %s)", cfg.Name, cfg.RepoPath, cfg.Branch, cfg.Path, workflow.ShortHash(tip))
	return nil
}

func (a *app) renderOptions() renderOptions {
	return renderOptions{format: a.format, name: a.cfg.Workload, namespace: a.cfg.Namespace, replicas: a.cfg.Replicas}
}

// baseObject is the Application's metadata and spec.
func (a *app) baseObject() v1alpha1.Application {
	var automated *v1alpha1.SyncPolicyAutomated
	if a.cfg.Automated {
		automated = &v1alpha1.SyncPolicyAutomated{SelfHeal: a.cfg.SelfHeal, Prune: a.cfg.Prune}
	}
	srcType := v1alpha1.ApplicationSourceTypeDirectory
	switch a.format {
	case workflow.FormatKustomize:
		srcType = v1alpha1.ApplicationSourceTypeKustomize
	case workflow.FormatHelmValues:
		srcType = v1alpha1.ApplicationSourceTypeHelm
	}
	return v1alpha1.Application{
		TypeMeta: metav1.TypeMeta{Kind: "Application", APIVersion: "argoproj.io/v1alpha1"},
		ObjectMeta: metav1.ObjectMeta{
			Name: a.cfg.Name, Namespace: "argocd", UID: types.UID(a.uid), Generation: 1,
			CreationTimestamp: metav1.NewTime(a.created),
			Annotations:       map[string]string{"argosim.relcap.dev/simulated": "this Application is served by the " + Name},
		},
		Spec: v1alpha1.ApplicationSpec{
			Source: &v1alpha1.ApplicationSource{
				RepoURL:        "file://" + filepath.ToSlash(a.cfg.RepoPath),
				Path:           path.Dir(a.cfg.Path),
				TargetRevision: a.cfg.Branch,
			},
			Destination: v1alpha1.ApplicationDestination{Server: "https://kubernetes.default.svc", Namespace: a.cfg.Namespace},
			Project:     "default",
			SyncPolicy:  &v1alpha1.SyncPolicy{Automated: automated},
		},
		Status: v1alpha1.ApplicationStatus{SourceType: srcType},
	}
}

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
