package argosim

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"path"
	"path/filepath"
	"sync"
	"time"

	"github.com/go-git/go-git/v5"
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
