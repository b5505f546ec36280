package argosim_test

import (
	"context"
	"encoding/json"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/emptypb"

	"github.com/argoproj/argo-cd/v2/pkg/apiclient/application"
	"github.com/argoproj/argo-cd/v2/pkg/apiclient/project"
	"github.com/argoproj/argo-cd/v2/pkg/apiclient/version"
	"github.com/argoproj/argo-cd/v2/pkg/apis/application/v1alpha1"

	"github.com/relcap/relcap/adapters/argocd/argosim"
	"github.com/relcap/relcap/adapters/argocd/argosim/argosimtest"
)

// client is a plain gRPC client of the simulator, built from argo-cd's
// generated code; the argocd adapter's tests cover argo-cd's apiclient.
type client struct {
	app  application.ApplicationServiceClient
	conn *grpc.ClientConn
	tok  string
}

func dial(t *testing.T, addr, tok string) *client {
	t.Helper()
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	require.NoError(t, err)
	t.Cleanup(func() { _ = conn.Close() })
	return &client{app: application.NewApplicationServiceClient(conn), conn: conn, tok: tok}
}

func (c *client) ctx(t *testing.T) context.Context {
	return metadata.AppendToOutgoingContext(t.Context(), "token", c.tok)
}

func (c *client) get(t *testing.T, name string) *v1alpha1.Application {
	t.Helper()
	a, err := c.app.Get(c.ctx(t), &application.ApplicationQuery{Name: &name})
	require.NoError(t, err)
	return a
}

// eventually polls Get until cond holds, failing with the last state.
func (c *client) eventually(t *testing.T, name string, within time.Duration, cond func(*v1alpha1.Application) bool) *v1alpha1.Application {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		a := c.get(t, name)
		if cond(a) {
			return a
		}
		if time.Now().After(deadline) {
			require.Failf(t, "condition not met", "last state: sync %s@%s health %s (%s) op %v images %v",
				a.Status.Sync.Status, a.Status.Sync.Revision, a.Status.Health.Status, a.Status.Health.Message, opPhase(a), a.Status.Summary.Images)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func opPhase(a *v1alpha1.Application) string {
	if a.Status.OperationState == nil {
		return ""
	}
	return string(a.Status.OperationState.Phase) + ": " + a.Status.OperationState.Message
}

func convergedAt(rev, digest string) func(*v1alpha1.Application) bool {
	return func(a *v1alpha1.Application) bool {
		return a.Status.Sync.Status == v1alpha1.SyncStatusCodeSynced && a.Status.Sync.Revision == rev &&
			a.Status.Health.Status == "Healthy" && len(a.Status.Summary.Images) == 1 &&
			a.Status.Summary.Images[0] == argosimtest.Image+"@"+digest
	}
}

func TestCommitSyncsAndTurnsHealthyAtThatRevisionWithTheDigest(t *testing.T) {
	t.Parallel()
	repo, rev1 := argosimtest.NewRepo(t, "v1")
	sim, addr := argosimtest.Start(t, repo.App("web-staging"))
	c := dial(t, addr, sim.Token())

	first := c.eventually(t, "web-staging", 2*time.Second, convergedAt(rev1, argosimtest.Digest("v1")))
	since := first.ResourceVersion

	name := "web-staging"
	ctx, cancel := context.WithCancel(c.ctx(t))
	defer cancel()
	stream, err := c.app.Watch(ctx, &application.ApplicationQuery{Name: &name, ResourceVersion: &since})
	require.NoError(t, err)

	rev2 := repo.Pin(t, "v2")
	var seen []string
	for {
		ev, err := stream.Recv()
		require.NoError(t, err)
		a := ev.Application
		seen = append(seen, string(a.Status.Sync.Status)+"/"+string(a.Status.Health.Status)+"/"+opPhase(&a))
		if convergedAt(rev2, argosimtest.Digest("v2"))(&a) {
			break
		}
	}
	joined := strings.Join(seen, "\n")
	require.Contains(t, joined, "OutOfSync/Healthy", "the new commit is seen before it is synced")
	require.Contains(t, joined, "Running", "an operation runs")
	require.Contains(t, joined, "Synced/Progressing", "the rollout progresses before it is healthy")

	a := c.get(t, name)
	last := a.Status.History[len(a.Status.History)-1]
	require.Equal(t, rev2, last.Revision)
	require.True(t, last.InitiatedBy.Automated)
	require.Equal(t, rev2, a.Status.OperationState.SyncResult.Revision)
	require.False(t, a.Status.ReconciledAt.Before(a.Status.OperationState.FinishedAt), "reconciledAt is not before finishedAt once done (app wait relies on it)")
}

func TestManualSyncPolicyWaitsForTheSyncCall(t *testing.T) {
	t.Parallel()
	repo, _ := argosimtest.NewRepo(t, "v1")
	cfg := repo.App("web-manual")
	cfg.Automated = false
	sim, addr := argosimtest.Start(t, cfg)
	c := dial(t, addr, sim.Token())

	rev2 := repo.Pin(t, "v2")
	a := c.eventually(t, cfg.Name, 2*time.Second, func(a *v1alpha1.Application) bool { return a.Status.Sync.Revision == rev2 })
	require.Equal(t, v1alpha1.SyncStatusCodeOutOfSync, a.Status.Sync.Status)
	require.Equal(t, "Healthy", string(a.Status.Health.Status), "the old release still runs")
	require.Equal(t, []string{argosimtest.Image + "@" + argosimtest.Digest("v1")}, a.Status.Summary.Images)

	time.Sleep(300 * time.Millisecond)
	require.Equal(t, v1alpha1.SyncStatusCodeOutOfSync, c.get(t, cfg.Name).Status.Sync.Status, "no automated sync")

	name := cfg.Name
	synced, err := c.app.Sync(c.ctx(t), &application.ApplicationSyncRequest{Name: &name})
	require.NoError(t, err)
	require.NotNil(t, synced.Operation, "the sync request is recorded on the application")
	a = c.eventually(t, name, 2*time.Second, convergedAt(rev2, argosimtest.Digest("v2")))
	last := a.Status.History[len(a.Status.History)-1]
	require.False(t, last.InitiatedBy.Automated)
	require.Equal(t, "admin", last.InitiatedBy.Username)
}

func TestTokenIsRequiredWhereArgoCDLooksForIt(t *testing.T) {
	t.Parallel()
	repo, _ := argosimtest.NewRepo(t, "v1")
	sim, addr := argosimtest.Start(t, repo.App("web"))
	c := dial(t, addr, sim.Token())
	name := "web"
	q := &application.ApplicationQuery{Name: &name}

	_, err := c.app.Get(t.Context(), q)
	require.Equal(t, codes.Unauthenticated, status.Code(err))
	require.Contains(t, err.Error(), "simulator")

	_, err = c.app.Get(metadata.AppendToOutgoingContext(t.Context(), "token", "wrong"), q)
	require.Equal(t, codes.Unauthenticated, status.Code(err))

	for _, kv := range [][2]string{
		{"token", sim.Token()},
		{"authorization", "Bearer " + sim.Token()},
		{"grpcgateway-cookie", "argocd.token=" + sim.Token()},
	} {
		_, err = c.app.Get(metadata.AppendToOutgoingContext(t.Context(), kv[0], kv[1]), q)
		require.NoError(t, err, kv[0])
	}

	v, err := version.NewVersionServiceClient(c.conn).Version(t.Context(), &emptypb.Empty{})
	require.NoError(t, err, "the version probe needs no token, as on Argo CD")
	require.Contains(t, v.ExtraBuildInfo, "simulator")

	other := "nope"
	_, err = c.app.Get(c.ctx(t), &application.ApplicationQuery{Name: &other})
	require.Equal(t, codes.PermissionDenied, status.Code(err), "as Argo CD, which does not say whether an app exists")
}

func TestImagePullFailureDegradesPodsAndApp(t *testing.T) {
	t.Parallel()
	repo, rev := argosimtest.NewRepo(t, "v1")
	sim, addr := argosimtest.Start(t, repo.App("web"))
	c := dial(t, addr, sim.Token())
	c.eventually(t, "web", 2*time.Second, convergedAt(rev, argosimtest.Digest("v1")))

	require.NoError(t, sim.FailImagePull("web"))
	a := c.get(t, "web")
	require.Equal(t, "Degraded", string(a.Status.Health.Status))
	require.Contains(t, a.Status.Health.Message, "Back-off pulling image")

	name := "web"
	tree, err := c.app.ResourceTree(c.ctx(t), &application.ResourcesQuery{ApplicationName: &name})
	require.NoError(t, err)
	kinds := map[string]int{}
	for _, n := range tree.Nodes {
		kinds[n.Kind]++
		if n.Kind == "Pod" {
			require.Equal(t, "Degraded", string(n.Health.Status))
			require.Contains(t, n.Health.Message, `Back-off pulling image "`+argosimtest.Image+"@")
			require.Len(t, n.ParentRefs, 1)
			require.Equal(t, "ReplicaSet", n.ParentRefs[0].Kind)
		}
	}
	require.Equal(t, map[string]int{"Deployment": 1, "ReplicaSet": 1, "Pod": 1}, kinds)

	require.NoError(t, sim.Recover("web"))
	c.eventually(t, "web", 2*time.Second, convergedAt(rev, argosimtest.Digest("v1")))
}

func TestReadinessFailureProgressesThenDegrades(t *testing.T) {
	t.Parallel()
	repo, rev := argosimtest.NewRepo(t, "v1")
	sim, addr := argosimtest.Start(t, repo.App("web"))
	c := dial(t, addr, sim.Token())
	c.eventually(t, "web", 2*time.Second, convergedAt(rev, argosimtest.Digest("v1")))

	start := time.Now()
	require.NoError(t, sim.FailReadiness("web"))
	require.Equal(t, "Progressing", string(c.get(t, "web").Status.Health.Status))
	name := "web"
	tree, err := c.app.ResourceTree(c.ctx(t), &application.ResourcesQuery{ApplicationName: &name})
	require.NoError(t, err)
	var podMsgs []string
	for _, n := range tree.Nodes {
		if n.Kind == "Pod" {
			podMsgs = append(podMsgs, n.Health.Message)
		}
	}
	require.Len(t, podMsgs, 1)
	require.Contains(t, podMsgs[0], "Readiness probe failed")

	a := c.eventually(t, "web", 3*time.Second, func(a *v1alpha1.Application) bool { return a.Status.Health.Status == "Degraded" })
	require.GreaterOrEqual(t, time.Since(start), 900*time.Millisecond, "degraded only after the progress deadline")
	require.Contains(t, a.Status.Health.Message, "progress deadline")
}

func TestFailedSyncIsReportedAndNotRetriedForTheSameRevision(t *testing.T) {
	t.Parallel()
	repo, _ := argosimtest.NewRepo(t, "v1")
	sim, addr := argosimtest.Start(t, repo.App("web"))
	c := dial(t, addr, sim.Token())

	require.NoError(t, sim.FailSync("web", "admission webhook denied the request (simulated)"))
	rev2 := repo.Pin(t, "v2")
	a := c.eventually(t, "web", 2*time.Second, func(a *v1alpha1.Application) bool {
		return a.Status.OperationState != nil && a.Status.OperationState.Phase == "Failed"
	})
	require.Equal(t, "admission webhook denied the request (simulated)", a.Status.OperationState.Message)
	require.Equal(t, rev2, a.Status.OperationState.Operation.Sync.Revision)
	require.Equal(t, v1alpha1.SyncStatusCodeOutOfSync, a.Status.Sync.Status)
	n := len(a.Status.History)

	time.Sleep(300 * time.Millisecond)
	a = c.get(t, "web")
	require.Equal(t, "Failed", string(a.Status.OperationState.Phase), "no automatic retry of a failed revision")

	require.NoError(t, sim.Recover("web"))
	a = c.eventually(t, "web", 2*time.Second, convergedAt(rev2, argosimtest.Digest("v2")))
	require.Len(t, a.Status.History, n+1)
}

func TestDriftIsSelfHealedAndRecordedInHistory(t *testing.T) {
	t.Parallel()
	repo, rev := argosimtest.NewRepo(t, "v1")
	cfg := repo.App("web")
	cfg.SelfHeal = true
	cfg.SelfHealDelay = time.Second // long enough to observe the drift first
	sim, addr := argosimtest.Start(t, cfg)
	c := dial(t, addr, sim.Token())
	before := len(c.eventually(t, "web", 2*time.Second, convergedAt(rev, argosimtest.Digest("v1"))).Status.History)

	require.NoError(t, sim.Drift("web", "spec.replicas"))
	a := c.get(t, "web")
	require.Equal(t, v1alpha1.SyncStatusCodeOutOfSync, a.Status.Sync.Status)
	name := "web"
	mr, err := c.app.ManagedResources(c.ctx(t), &application.ResourcesQuery{ApplicationName: &name})
	require.NoError(t, err)
	require.Len(t, mr.Items, 1)
	require.True(t, mr.Items[0].Modified)
	var live, target struct {
		Spec struct {
			Replicas int `json:"replicas"`
		} `json:"spec"`
	}
	require.NoError(t, json.Unmarshal([]byte(mr.Items[0].LiveState), &live))
	require.NoError(t, json.Unmarshal([]byte(mr.Items[0].TargetState), &target))
	require.Equal(t, 4, live.Spec.Replicas)
	require.Equal(t, 1, target.Spec.Replicas)

	a = c.eventually(t, "web", 3*time.Second, func(a *v1alpha1.Application) bool {
		return a.Status.Sync.Status == v1alpha1.SyncStatusCodeSynced && a.Status.OperationState != nil && a.Status.OperationState.Phase == "Succeeded"
	})
	require.Len(t, a.Status.History, before, "as Argo CD 2.x: a self-heal is a partial sync, kept out of history")
	heal := a.Status.OperationState.Operation
	require.Equal(t, rev, heal.Sync.Revision, "self-heal re-syncs the same revision")
	require.True(t, heal.InitiatedBy.Automated)
	require.Equal(t, int64(1), heal.Sync.SelfHealAttemptsCount)
	require.Equal(t, []v1alpha1.SyncOperationResource{{Group: "apps", Kind: "Deployment", Name: "web"}}, heal.Sync.Resources, "only the drifted resource")

	require.NoError(t, sim.Drift("web", "spec.replicas"))
	a = c.eventually(t, "web", 3*time.Second, func(a *v1alpha1.Application) bool {
		return a.Status.Sync.Status == v1alpha1.SyncStatusCodeSynced && a.Status.OperationState.Operation.Sync.SelfHealAttemptsCount == 2
	})
	require.Len(t, a.Status.History, before, "a second self-heal in a row is counted, not recorded")
}

func TestDriftWithoutSelfHealStaysOutOfSync(t *testing.T) {
	t.Parallel()
	repo, rev := argosimtest.NewRepo(t, "v1")
	sim, addr := argosimtest.Start(t, repo.App("web"))
	c := dial(t, addr, sim.Token())
	c.eventually(t, "web", 2*time.Second, convergedAt(rev, argosimtest.Digest("v1")))

	require.NoError(t, sim.Drift("web", "image"))
	time.Sleep(600 * time.Millisecond)
	a := c.get(t, "web")
	require.Equal(t, v1alpha1.SyncStatusCodeOutOfSync, a.Status.Sync.Status)
	require.Equal(t, []string{argosimtest.Image + ":hand-patched"}, a.Status.Summary.Images, "the live image is what runs")
}

func TestCloseWatchesEndsStreamsWithUnavailable(t *testing.T) {
	t.Parallel()
	repo, _ := argosimtest.NewRepo(t, "v1")
	sim, addr := argosimtest.Start(t, repo.App("web"))
	c := dial(t, addr, sim.Token())
	name := "web"
	stream, err := c.app.Watch(c.ctx(t), &application.ApplicationQuery{Name: &name})
	require.NoError(t, err)
	ev, err := stream.Recv()
	require.NoError(t, err)
	require.Equal(t, "ADDED", string(ev.Type), "a named watch starts with the current object")
	require.Eventually(t, func() bool { return sim.OpenWatches() == 1 }, time.Second, 10*time.Millisecond)

	sim.CloseWatches()
	for {
		_, err = stream.Recv()
		if err != nil {
			break
		}
	}
	require.NotErrorIs(t, err, io.EOF)
	require.Equal(t, codes.Unavailable, status.Code(err))
}

func TestMergePatchChangesSyncPolicy(t *testing.T) {
	t.Parallel()
	repo, _ := argosimtest.NewRepo(t, "v1")
	sim, addr := argosimtest.Start(t, repo.App("web"))
	c := dial(t, addr, sim.Token())
	name, merge := "web", "merge"

	patch := `{"spec":{"syncPolicy":{"automated":null}}}`
	a, err := c.app.Patch(c.ctx(t), &application.ApplicationPatchRequest{Name: &name, Patch: &patch, PatchType: &merge})
	require.NoError(t, err)
	require.Nil(t, a.Spec.SyncPolicy.Automated)

	rev2 := repo.Pin(t, "v2")
	c.eventually(t, name, 2*time.Second, func(a *v1alpha1.Application) bool { return a.Status.Sync.Revision == rev2 })
	time.Sleep(300 * time.Millisecond)
	require.Equal(t, v1alpha1.SyncStatusCodeOutOfSync, c.get(t, name).Status.Sync.Status, "automated sync is off")

	patch = `{"spec":{"syncPolicy":{"automated":{"selfHeal":true}}}}`
	a, err = c.app.Patch(c.ctx(t), &application.ApplicationPatchRequest{Name: &name, Patch: &patch, PatchType: &merge})
	require.NoError(t, err)
	require.True(t, a.Spec.SyncPolicy.Automated.SelfHeal)
	c.eventually(t, name, 2*time.Second, convergedAt(rev2, argosimtest.Digest("v2")))

	src := `{"spec":{"source":{"path":"elsewhere"}}}`
	_, err = c.app.Patch(c.ctx(t), &application.ApplicationPatchRequest{Name: &name, Patch: &src, PatchType: &merge})
	require.Equal(t, codes.Unimplemented, status.Code(err), "the simulator refuses what it does not model")
}

func TestRevisionMetadataReadsTheCommit(t *testing.T) {
	t.Parallel()
	repo, rev := argosimtest.NewRepo(t, "v1")
	sim, addr := argosimtest.Start(t, repo.App("web"))
	c := dial(t, addr, sim.Token())
	name := "web"
	md, err := c.app.RevisionMetadata(c.ctx(t), &application.RevisionMetadataQuery{Name: &name, Revision: &rev})
	require.NoError(t, err)
	require.Equal(t, "initial release", md.Message)
	require.Contains(t, md.Author, "captain@example.com")
}

func TestAddAppRejectsWhatItCannotFollow(t *testing.T) {
	t.Parallel()
	repo, _ := argosimtest.NewRepo(t, "v1")
	sim, err := argosim.New(argosim.Config{})
	require.NoError(t, err)
	require.NotEmpty(t, sim.Token())

	cfg := repo.App("web")
	cfg.Path = "apps/missing.yaml"
	require.ErrorContains(t, sim.AddApp(cfg), "apps/missing.yaml")
	cfg = repo.App("web")
	cfg.Branch = "nope"
	require.ErrorContains(t, sim.AddApp(cfg), "branch nope")
	require.NoError(t, sim.AddApp(repo.App("web")))
	require.ErrorContains(t, sim.AddApp(repo.App("web")), "already exists")
}

// TestADenyWindowStopsAutomatedSyncAndManualSyncsOnlyWhereAllowed: as Argo
// CD, a deny window holds a new commit back from automated sync, refuses a
// manual sync unless the window has manualSync, and stale project writes
// conflict.
func TestADenyWindowStopsAutomatedSyncAndManualSyncsOnlyWhereAllowed(t *testing.T) {
	t.Parallel()
	repo, rev1 := argosimtest.NewRepo(t, "v1")
	sim, addr := argosimtest.Start(t, repo.App("web-staging"))
	c := dial(t, addr, sim.Token())
	name := "web-staging"
	c.eventually(t, name, 3*time.Second, convergedAt(rev1, argosimtest.Digest("v1")))
	projects := project.NewProjectServiceClient(c.conn)
	proj, err := projects.Get(c.ctx(t), &project.ProjectQuery{Name: "default"})
	require.NoError(t, err)
	stale := proj.DeepCopy()
	proj.Spec.SyncWindows = append(proj.Spec.SyncWindows, &v1alpha1.SyncWindow{Kind: "deny", Schedule: "* * * * *", Duration: "1h", Applications: []string{name}})
	updated, err := projects.Update(c.ctx(t), &project.ProjectUpdateRequest{Project: proj})
	require.NoError(t, err)
	require.Equal(t, "UTC", updated.Spec.SyncWindows[0].TimeZone, "the time zone defaults to UTC, as Argo CD's validation sets it")
	stale.Spec.Description = "stale"
	_, err = projects.Update(c.ctx(t), &project.ProjectUpdateRequest{Project: stale})
	require.Equal(t, codes.Aborted, status.Code(err), "a write of a stale project conflicts: %v", err)

	rev2 := repo.Pin(t, "v2")
	c.eventually(t, name, 3*time.Second, func(a *v1alpha1.Application) bool { return a.Status.Sync.Revision == rev2 })
	time.Sleep(500 * time.Millisecond)
	a := c.get(t, name)
	require.Equal(t, v1alpha1.SyncStatusCodeOutOfSync, a.Status.Sync.Status, "no automated sync while the window denies")
	_, err = c.app.Sync(c.ctx(t), &application.ApplicationSyncRequest{Name: &name})
	require.Equal(t, codes.PermissionDenied, status.Code(err))
	require.ErrorContains(t, err, "cannot sync: blocked by sync window")
	windows, err := c.app.GetApplicationSyncWindows(c.ctx(t), &application.ApplicationSyncWindowsQuery{Name: &name})
	require.NoError(t, err)
	require.Len(t, windows.ActiveWindows, 1)
	require.False(t, windows.GetCanSync())

	updated.Spec.SyncWindows[0].ManualSync = true
	updated, err = projects.Update(c.ctx(t), &project.ProjectUpdateRequest{Project: updated})
	require.NoError(t, err)
	_, err = c.app.Sync(c.ctx(t), &application.ApplicationSyncRequest{Name: &name})
	require.NoError(t, err, "manualSync lets a person sync by hand during the window")
	c.eventually(t, name, 3*time.Second, convergedAt(rev2, argosimtest.Digest("v2")))

	rev3 := repo.Pin(t, "v3")
	c.eventually(t, name, 3*time.Second, func(a *v1alpha1.Application) bool { return a.Status.Sync.Revision == rev3 })
	updated.Spec.SyncWindows = nil
	_, err = projects.Update(c.ctx(t), &project.ProjectUpdateRequest{Project: updated})
	require.NoError(t, err)
	c.eventually(t, name, 3*time.Second, convergedAt(rev3, argosimtest.Digest("v3")))
}
