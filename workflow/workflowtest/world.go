package workflowtest

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"
	"sync"

	"github.com/relcap/relcap/workflow"
	"github.com/relcap/relcap/workflow/appstate"
	"github.com/relcap/relcap/workflow/fault"
	"github.com/relcap/relcap/workflow/image"
	"github.com/relcap/relcap/workflow/ownership"
	"github.com/relcap/relcap/workflow/tfplan"
	"github.com/relcap/relcap/workflow/tooloutput"
)

// World is the outside world the fakes act on: Terraform state, registry
// contents, Git branches and an Argo CD application. It outlives a Service,
// the way real systems outlive a killed relcap process, and counts every
// side effect it really made.
type World struct {
	mu sync.Mutex

	Objects []ownership.ManagedObject

	StateSerial int64
	Changes     []tfplan.ResourceChange
	// PlanShows, when set, adds what a plan shows besides its changes
	// (drift, checks, completeness) to the facts the core reviews.
	PlanShows func(*tfplan.Facts)
	plans     int
	applied   map[string]int64 // fingerprint → serial after its apply
	Applies   int
	// Discarded are the plans whose saved file was deleted unapplied
	// (an abandoned release's), by fingerprint.
	Discarded []string

	// The failed-apply drill's scratch roots (FakeTerraform's
	// rehearsal.Roots), by directory; StatePulls counts reads of the real
	// state; ScratchLockHeld makes the scratch state's lock held.
	scratch         map[string]*scratchRoot
	StatePulls      int
	ScratchLockHeld bool

	Artifact image.Artifact
	Repos    map[string]map[image.Digest]bool
	Copies   int

	Branches map[string]string // branch → commit
	Commits  int
	Landed   map[string]string // env → landed commit
	Lands    int

	App appstate.AppState
	// landedImage is, per environment, the repository@digest its last
	// landed change pins: what its Pods run.
	landedImage map[string]string
	// NeverReady are digests whose Pods never pass their readiness
	// probe (TreeConvergence; the application never becomes healthy).
	NeverReady map[image.Digest]bool
	// Unhealthy makes the application degrade instead of converging.
	Unhealthy bool

	// Gate, when set, runs before each side effect; a non-nil error
	// prevents it, as a dead process makes no calls.
	Gate func() error
	// Interrupt, when set, runs after each side effect (named "apply",
	// "copy", "commit") and before the fake returns; a non-nil error is
	// returned as if the process had died right after the effect.
	Interrupt func(effect string) error
}

// NewWorld returns a world with one image, one planned change and one
// healthy application at an old revision.
func NewWorld() *World {
	d, _ := image.ParseDigest("sha256:" + hex64("web:1.2.3"))
	return &World{
		Objects: []ownership.ManagedObject{
			{Manager: ownership.OwnerTerraform, TerraformAddress: "aws_s3_bucket.assets", TerraformType: "aws_s3_bucket"},
			{Manager: ownership.OwnerArgoCD, App: "web-staging", Group: "apps", Kind: "Deployment", Namespace: "web", Name: "web", Fields: []string{"spec.template.spec.containers[web].image"}},
		},
		StateSerial: 1,
		Changes:     []tfplan.ResourceChange{{Address: "terraform_data.web", Type: "terraform_data", Name: "web", Action: tfplan.ActionCreate}},
		Artifact:    image.Artifact{Reference: "registry.test/ci/web:1.2.3", Repository: "registry.test/ci/web", Digest: d, Referrers: []image.Referrer{{Kind: "signature", Scheme: "cosign-tag"}}},
		Repos:       map[string]map[image.Digest]bool{"registry.test/ci/web": {d: true}},
		Branches:    map[string]string{},
		applied:     map[string]int64{},
		App:         appstate.AppState{Name: "web", SyncStatus: appstate.SyncSynced, SyncRevision: "0000000old", Health: appstate.HealthHealthy, Images: []string{"registry.test/ci/web@sha256:" + hex64("old")}, Version: "1"},
	}
}

func hex64(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}

func (w *World) gate(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if w.Gate != nil {
		return w.Gate()
	}
	return nil
}

func (w *World) interrupt(effect string) error {
	if w.Interrupt != nil {
		return w.Interrupt(effect)
	}
	return nil
}

// Ownership is a fake workflow.OwnershipSource over the world's objects.
type Ownership struct{ W *World }

// ManagedObjects returns the world's objects.
func (o Ownership) ManagedObjects(context.Context, workflow.Environment) ([]ownership.ManagedObject, error) {
	o.W.mu.Lock()
	defer o.W.mu.Unlock()
	return append([]ownership.ManagedObject(nil), o.W.Objects...), nil
}

// Terraform is a fake Planner and Applier over the world's state. Like
// the real adapter it returns facts; the core reviews them.
type Terraform struct {
	W *World
}

var (
	_ workflow.Planner = Terraform{}
	_ workflow.Applier = Terraform{}
)

func (t Terraform) inputs(env workflow.Environment) tfplan.Inputs {
	return tfplan.Inputs{Revision: "abc123", Workspace: env.Terraform.Workspace, StateLineage: "lineage-1", StateSerial: t.W.StateSerial}
}

// Plan makes a plan of the world's pending changes.
func (t Terraform) Plan(ctx context.Context, env workflow.Environment, author string) (tfplan.Facts, error) {
	if err := t.W.gate(ctx); err != nil {
		return tfplan.Facts{}, err
	}
	if sc := t.W.scratchAt(env.Terraform.Dir); sc != nil {
		return t.planScratch(env, sc, author), nil
	}
	if w, ok := tooloutput.From(ctx); ok {
		// What Terraform prints first, so output reaches whoever listens.
		fmt.Fprintf(w, "Initializing the backend...\n\nPlan: %d to add, 0 to change, 0 to destroy.\n", len(t.W.Changes))
	}
	t.W.mu.Lock()
	defer t.W.mu.Unlock()
	t.W.plans++
	p := tfplan.Facts{Env: env.Name, Author: author, Inputs: t.inputs(env), Changes: append([]tfplan.ResourceChange(nil), t.W.Changes...)}
	p.PlanHash = hex64(fmt.Sprintf("plan-%d-%d", t.W.plans, t.W.StateSerial))
	if t.W.PlanShows != nil {
		t.W.PlanShows(&p)
	}
	return p, nil
}

// Plans is how many plans were made.
func (w *World) Plans() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.plans
}

// Inputs returns the current inputs.
func (t Terraform) Inputs(_ context.Context, env workflow.Environment) (tfplan.Inputs, error) {
	t.W.mu.Lock()
	defer t.W.mu.Unlock()
	if sc := t.W.scratch[env.Terraform.Dir]; sc != nil {
		return sc.inputs(), nil
	}
	return t.inputs(env), nil
}

// Apply applies the changes once; a plan made against an older state is
// refused, and one already applied is reported as such, as Terraform would.
func (t Terraform) Apply(ctx context.Context, req workflow.ApplyRequest) (workflow.ApplyResult, error) {
	if err := t.W.gate(ctx); err != nil {
		return workflow.ApplyResult{}, err
	}
	if sc := t.W.scratchAt(req.Env.Terraform.Dir); sc != nil {
		return t.applyScratch(req, sc)
	}
	t.W.mu.Lock()
	if serial, ok := t.W.applied[req.Fingerprint]; ok {
		t.W.mu.Unlock()
		return workflow.ApplyResult{AlreadyApplied: true, StateSerial: serial}, nil
	}
	if req.Inputs.StateSerial != t.W.StateSerial {
		t.W.mu.Unlock()
		return workflow.ApplyResult{}, fmt.Errorf("%w: state moved", fault.ErrStalePlan)
	}
	t.W.Applies++
	t.W.StateSerial++
	t.W.Changes = nil
	serial := t.W.StateSerial
	t.W.applied[req.Fingerprint] = serial
	t.W.mu.Unlock()
	if err := t.W.interrupt("apply"); err != nil {
		return workflow.ApplyResult{}, err
	}
	return workflow.ApplyResult{StateSerial: serial}, nil
}

// Registry is a fake workflow.Registry.
type Registry struct{ W *World }

var _ workflow.Registry = Registry{}

// Resolve returns the world's artifact.
func (r Registry) Resolve(ctx context.Context, ref string) (image.Artifact, error) {
	if err := r.W.gate(ctx); err != nil {
		return image.Artifact{}, err
	}
	r.W.mu.Lock()
	defer r.W.mu.Unlock()
	if at := strings.LastIndexByte(ref, '@'); at > 0 {
		// By digest: only where the world holds it, as a registry answers
		// a manifest it does not have with MANIFEST_UNKNOWN.
		d, err := image.ParseDigest(ref[at+1:])
		if err == nil && d != r.W.Artifact.Digest {
			if !r.W.Repos[ref[:at]][d] {
				return image.Artifact{}, fmt.Errorf("%s: manifest unknown: %w", ref, fault.ErrNotFound)
			}
			a := r.W.Artifact
			a.Reference, a.Repository, a.Digest = ref, ref[:at], d
			return a, nil
		}
	}
	return r.W.Artifact, nil
}

// Promote copies the digest into the target repository unless present.
func (r Registry) Promote(ctx context.Context, req image.PromoteRequest) (image.PromoteResult, error) {
	if err := r.W.gate(ctx); err != nil {
		return image.PromoteResult{}, err
	}
	r.W.mu.Lock()
	if !r.W.Repos[req.From][req.Digest] {
		r.W.mu.Unlock()
		return image.PromoteResult{}, &workflow.TerminalError{Err: fmt.Errorf("%s not in %s: %w", req.Digest, req.From, fault.ErrNotFound)}
	}
	res := image.PromoteResult{Target: r.W.Artifact}
	res.Target.Repository, res.Target.Digest = req.To, req.Digest
	if r.W.Repos[req.To] == nil {
		r.W.Repos[req.To] = map[image.Digest]bool{}
	}
	copied := !r.W.Repos[req.To][req.Digest]
	if copied {
		r.W.Repos[req.To][req.Digest] = true
		r.W.Copies++
		res.BlobsUploaded = 3
	} else {
		res.BlobsPresent = 3
	}
	r.W.mu.Unlock()
	if copied {
		if err := r.W.interrupt("copy"); err != nil {
			return image.PromoteResult{}, err
		}
	}
	return res, nil
}

// EnvRepo is a fake workflow.EnvRepo; a pin also makes the application start
// rolling out that commit, as Argo CD would after the change merges.
type EnvRepo struct{ W *World }

var _ workflow.EnvRepo = EnvRepo{}

// Pin commits once per branch.
func (e EnvRepo) Pin(ctx context.Context, req workflow.PinRequest) (workflow.EnvChange, error) {
	if req.Digest.IsZero() {
		return workflow.EnvChange{}, fmt.Errorf("refusing to pin without a digest")
	}
	if err := e.W.gate(ctx); err != nil {
		return workflow.EnvChange{}, err
	}
	branch := fmt.Sprintf("relcap/%s/%s", req.Env, req.ReleaseID)
	e.W.mu.Lock()
	if c, ok := e.W.Branches[branch]; ok {
		e.W.mu.Unlock()
		return workflow.EnvChange{Branch: branch, Commit: c, Existing: true}, nil
	}
	e.W.Commits++
	commit := hex64(branch)[:40]
	e.W.Branches[branch] = commit
	e.W.mu.Unlock()
	if err := e.W.interrupt("commit"); err != nil {
		return workflow.EnvChange{}, err
	}
	return workflow.EnvChange{Branch: branch, Commit: commit, Diff: "-old\n+" + req.Digest.String()}, nil
}

// Land moves the environment to the pinned commit once, as a merge
// would; the application then starts rolling it out.
func (e EnvRepo) Land(ctx context.Context, req workflow.PinRequest) (workflow.EnvChange, error) {
	if err := e.W.gate(ctx); err != nil {
		return workflow.EnvChange{}, err
	}
	branch := fmt.Sprintf("relcap/%s/%s", req.Env, req.ReleaseID)
	e.W.mu.Lock()
	commit, ok := e.W.Branches[branch]
	if !ok {
		e.W.mu.Unlock()
		return workflow.EnvChange{}, fmt.Errorf("%w: %s not pinned", fault.ErrUsage, branch)
	}
	if e.W.Landed == nil {
		e.W.Landed = map[string]string{}
	}
	if e.W.Landed[req.Env] == commit {
		e.W.mu.Unlock()
		return workflow.EnvChange{Branch: req.Target.Branch, Commit: commit, Existing: true}, nil
	}
	e.W.Landed[req.Env] = commit
	if e.W.landedImage == nil {
		e.W.landedImage = map[string]string{}
	}
	e.W.landedImage[req.Env] = req.Image + "@" + req.Digest.String()
	e.W.Lands++
	e.W.App.SyncStatus = appstate.SyncOutOfSync
	e.W.App.Health = appstate.HealthProgressing
	e.W.mu.Unlock()
	if err := e.W.interrupt("land"); err != nil {
		return workflow.EnvChange{}, err
	}
	return workflow.EnvChange{Branch: req.Target.Branch, Commit: commit}, nil
}

// Preview shows the change without making it.
func (e EnvRepo) Preview(_ context.Context, req workflow.PinRequest) (workflow.EnvChange, error) {
	return workflow.EnvChange{Branch: fmt.Sprintf("relcap/%s/%s", req.Env, req.ReleaseID), Diff: "-old\n+" + req.Digest.String()}, nil
}

// Pinned reports the artifact's repository and digest once pinned.
func (e EnvRepo) Pinned(_ context.Context, _ workflow.EnvRepoTarget, repo string) (image.Ref, error) {
	e.W.mu.Lock()
	defer e.W.mu.Unlock()
	if len(e.W.Branches) == 0 {
		return image.Ref{Repository: repo, Tag: "old"}, nil
	}
	return image.Ref{Repository: repo, Digest: e.W.Artifact.Digest}, nil
}

// Convergence is a fake workflow.Convergence: Watch rolls the application
// out to the last pinned commit in three updates.
type Convergence struct{ W *World }

var _ workflow.Convergence = Convergence{}

// Get returns the application's state.
func (c Convergence) Get(context.Context, appstate.AppRef) (appstate.AppState, error) {
	c.W.mu.Lock()
	defer c.W.mu.Unlock()
	return c.W.App, nil
}

// Watch replays a rollout to the pinned commit and digest.
func (c Convergence) Watch(ctx context.Context, app appstate.AppRef, _ string) (<-chan workflow.AppUpdate, error) {
	c.W.mu.Lock()
	commit := c.W.Landed[app.Env]
	image := c.W.Artifact.Repository + "@" + c.W.Artifact.Digest.String()
	if landed, ok := c.W.landedImage[app.Env]; ok {
		image = c.W.Artifact.Repository + landed[strings.LastIndexByte(landed, '@'):]
	}
	failing := c.W.podFailure(app.Env) != ""
	steps := []appstate.AppState{
		{SyncStatus: appstate.SyncSynced, SyncRevision: commit, Health: appstate.HealthProgressing, Operation: appstate.OperationRunning, Images: []string{image}},
		{SyncStatus: appstate.SyncSynced, SyncRevision: commit, Health: appstate.HealthProgressing, Operation: appstate.OperationSucceeded, Images: []string{image}},
	}
	final := appstate.AppState{SyncStatus: appstate.SyncSynced, SyncRevision: commit, Health: appstate.HealthHealthy, Operation: appstate.OperationSucceeded, Images: []string{image}}
	if c.W.Unhealthy {
		final.Health, final.HealthMessage = appstate.HealthDegraded, "Back-off pulling image"
	}
	if failing {
		// The Pods do not run: the application stays Progressing, and
		// only the resource tree (TreeConvergence) says why.
		final.Health = appstate.HealthProgressing
	}
	steps = append(steps, final)
	c.W.mu.Unlock()
	ch := make(chan workflow.AppUpdate)
	go func() {
		defer close(ch)
		for i, s := range steps {
			s.Name = "web"
			s.Version = fmt.Sprint(i + 2)
			// The application is in this state before anyone hears of it,
			// as Argo CD's is: a Get after the watch returns agrees. A
			// watch its reader gave up on changes nothing: the reader may
			// already watch the next rollout, which this one must not
			// overwrite.
			c.W.mu.Lock()
			if ctx.Err() != nil {
				c.W.mu.Unlock()
				return
			}
			c.W.App = s
			c.W.mu.Unlock()
			select {
			case ch <- workflow.AppUpdate{State: s}:
			case <-ctx.Done():
				return
			}
		}
		if failing {
			<-ctx.Done() // a stuck rollout sends nothing more
		}
	}()
	return ch, nil
}
