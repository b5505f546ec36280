package remote_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/relcap/relcap/adapters/argocd"
	"github.com/relcap/relcap/adapters/argocd/argoconf"
	"github.com/relcap/relcap/adapters/argocd/argosim"
	"github.com/relcap/relcap/adapters/argocd/argosim/argosimtest"
	"github.com/relcap/relcap/adapters/argocd/remote"
	"github.com/relcap/relcap/adapters/argocd/remote/remotetest"
	"github.com/relcap/relcap/workflow"
	"github.com/relcap/relcap/workflow/appstate"
	"github.com/relcap/relcap/workflow/fault"
)

const tokenEnv = "REMOTE_TEST_ARGOCD_TOKEN"

// the test binary's own build: what remotetest builds the helper as.
var testBuild = remote.ResolveBuild("dev", "none")

// fixture is a simulator serving web-staging, a project naming it, and the
// same pool twice: in process (adapters/argocd) and through the helper.
type fixture struct {
	sim     *argosim.Server
	repo    *argosimtest.Repo
	project *workflow.Project
	local   *argocd.Pool
	remote  *remote.Pool
	ref     appstate.AppRef
	env     []string
}

func newFixture(t *testing.T, token string) *fixture {
	t.Helper()
	remotetest.Helper(t)
	repo, _ := argosimtest.NewRepo(t, "v1")
	sim, addr := argosimtest.Start(t, repo.App("web-staging"))
	if token == "" {
		token = sim.Token()
	}
	p := &workflow.Project{Environments: []workflow.Environment{{Name: "staging",
		ArgoCD: workflow.ArgoCDTarget{Server: addr, App: "web-staging", TokenEnv: tokenEnv, PlainText: true}}}}
	env := []string{tokenEnv + "=" + token}
	getenv := func(k string) string {
		if k == tokenEnv {
			return token
		}
		return ""
	}
	f := &fixture{sim: sim, repo: repo, project: p, local: argocd.NewPool(p, getenv),
		remote: remote.NewPool(p, remote.Config{Build: testBuild, Env: env}), ref: appstate.AppRef{Env: "staging", Name: "web-staging"}, env: env}
	t.Cleanup(func() { _ = f.local.Close(); _ = f.remote.Close() })
	return f
}

func TestGetAndWatchThroughTheHelper(t *testing.T) {
	t.Parallel()
	f := newFixture(t, "")
	ctx := t.Context()
	want, err := f.local.Get(ctx, f.ref)
	require.NoError(t, err)
	got, err := f.remote.Get(ctx, f.ref)
	require.NoError(t, err)
	require.Equal(t, want.Name, got.Name)
	require.Equal(t, want.SyncRevision, got.SyncRevision)
	require.Equal(t, want.Images, got.Images)
	require.NotEmpty(t, got.Resources, "the whole state crosses the pipe")

	wctx, cancel := context.WithCancel(ctx)
	updates, err := f.remote.Watch(wctx, f.ref, "")
	require.NoError(t, err)
	rev2 := f.repo.Pin(t, "v2")
	timeout := time.After(30 * time.Second)
	for converged := false; !converged; {
		select {
		case u, ok := <-updates:
			require.True(t, ok, "the watch ended early")
			require.NoError(t, u.Err)
			converged = u.State.SyncRevision == rev2 && u.State.Health == appstate.HealthHealthy && u.State.SyncStatus == appstate.SyncSynced
		case <-timeout:
			require.FailNow(t, "no converged update for the new revision")
		}
	}
	cancel()
	select {
	case _, ok := <-updates:
		for ok {
			_, ok = <-updates
		}
	case <-time.After(15 * time.Second):
		require.FailNow(t, "the watch did not end with its context")
	}

	tree, err := f.remote.ResourceTree(ctx, f.ref)
	require.NoError(t, err)
	require.NotEmpty(t, tree)
	policy, err := f.remote.SyncPolicy(ctx, f.ref)
	require.NoError(t, err)
	require.True(t, policy.Automated)
	objs, err := f.remote.ManagedObjects(ctx, f.project.Environments[0])
	require.NoError(t, err)
	require.NotEmpty(t, objs)
}

// kinds are the errors whose identity the pipe keeps.
var kinds = []error{fault.ErrNotFound, fault.ErrNotReconciled, fault.ErrUsage, context.DeadlineExceeded, context.Canceled,
	argoconf.ErrTokenRejected, argoconf.ErrUnreachable}

// sameError holds when both errors say the same and are the same kinds.
func sameError(t *testing.T, local, remote error) {
	t.Helper()
	require.Error(t, local)
	require.Error(t, remote)
	require.Equal(t, local.Error(), remote.Error())
	for _, k := range kinds {
		require.Equal(t, errors.Is(local, k), errors.Is(remote, k), "%v: %v", k, remote)
	}
}

func TestErrorsKeepTheirKindAcrossThePipe(t *testing.T) {
	t.Parallel()
	f := newFixture(t, "")
	ctx := t.Context()

	t.Run("no such application", func(t *testing.T) {
		ref := appstate.AppRef{Env: "staging", Name: "nope"}
		_, lerr := f.local.Get(ctx, ref)
		_, rerr := f.remote.Get(ctx, ref)
		sameError(t, lerr, rerr)
		require.ErrorIs(t, rerr, argoconf.ErrTokenRejected, "Argo CD hides which applications exist")
	})
	t.Run("no such environment", func(t *testing.T) {
		ref := appstate.AppRef{Env: "qa", Name: "web-qa"}
		_, lerr := f.local.Get(ctx, ref)
		_, rerr := f.remote.Get(ctx, ref)
		sameError(t, lerr, rerr)
		require.ErrorIs(t, rerr, fault.ErrUsage)
	})
	t.Run("not reconciled", func(t *testing.T) {
		f.sim.StopController()
		defer f.sim.StartController()
		lerr := f.local.Refresh(ctx, f.ref, 300*time.Millisecond)
		rerr := f.remote.Refresh(ctx, f.ref, 300*time.Millisecond)
		sameError(t, lerr, rerr)
		require.ErrorIs(t, rerr, fault.ErrNotReconciled)
	})
	t.Run("the caller's deadline reaches the helper", func(t *testing.T) {
		f.sim.StopController()
		defer f.sim.StartController()
		dctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
		defer cancel()
		start := time.Now()
		err := f.remote.Refresh(dctx, f.ref, time.Minute)
		require.ErrorIs(t, err, context.DeadlineExceeded)
		require.Less(t, time.Since(start), 10*time.Second)
	})
	t.Run("a fault's kinds survive its encoding", func(t *testing.T) {
		for _, k := range kinds {
			err := fmt.Errorf("wrapped: %w", k)
			back := remote.FaultOf(err).Err()
			require.ErrorIs(t, back, k)
			require.Equal(t, err.Error(), back.Error())
		}
		require.NoError(t, remote.FaultOf(nil).Err())
	})
}

func TestARejectedTokenIsTheSameKindThroughTheHelper(t *testing.T) {
	t.Parallel()
	f := newFixture(t, "not-the-token")
	_, lerr := f.local.Get(t.Context(), f.ref)
	_, rerr := f.remote.Get(t.Context(), f.ref)
	sameError(t, lerr, rerr)
	require.ErrorIs(t, rerr, argoconf.ErrTokenRejected)
	require.NotContains(t, rerr.Error(), "not-the-token")
}

func TestAHelperKilledMidCallIsAClearErrorNotAHang(t *testing.T) {
	t.Parallel()
	f := newFixture(t, "")
	ctx := t.Context()
	_, err := f.remote.Get(ctx, f.ref)
	require.NoError(t, err)
	pid := remote.HelperProcess(f.remote)
	require.NotZero(t, pid)

	f.sim.StopController()
	defer f.sim.StartController()
	go func() {
		time.Sleep(500 * time.Millisecond)
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}()
	start := time.Now()
	err = f.remote.Refresh(ctx, f.ref, time.Minute) // waits for a reconciliation that never comes
	require.ErrorIs(t, err, remote.ErrHelperStopped)
	require.Contains(t, err.Error(), "relcap-argocd")
	require.Contains(t, err.Error(), "killed")
	require.Less(t, time.Since(start), 10*time.Second)

	_, err = f.remote.Get(ctx, f.ref)
	require.ErrorIs(t, err, remote.ErrHelperStopped, "later calls say so too")
}

func TestAMissingHelperIsOneClearLine(t *testing.T) {
	t.Parallel()
	missing := filepath.Join(t.TempDir(), "relcap-argocd")
	p := remote.NewPool(&workflow.Project{Environments: []workflow.Environment{{Name: "staging"}}},
		remote.Config{Build: testBuild, Env: []string{remote.EnvHelper + "=" + missing}})
	_, err := p.Get(t.Context(), appstate.AppRef{Env: "staging", Name: "web-staging"})
	require.ErrorIs(t, err, remote.ErrHelperMissing)
	require.Contains(t, err.Error(), missing)
	require.NotContains(t, err.Error(), "\n")

	// Neither named nor beside nor on PATH (the test binary has one beside
	// it, so the error is made directly): the line says how to install it.
	err = remote.MissingError(filepath.Dir(missing), remote.Build{Version: "v1.2.3"})
	require.ErrorIs(t, err, remote.ErrHelperMissing)
	require.Contains(t, err.Error(), "go install github.com/relcap/relcap/cmd/relcap-argocd@v1.2.3")
	require.Contains(t, err.Error(), "same release archive")
	require.Contains(t, err.Error(), "$"+remote.EnvHelper)
}

func TestAHelperOfAnotherBuildIsRefused(t *testing.T) {
	t.Parallel()
	f := newFixture(t, "")
	p := remote.NewPool(f.project, remote.Config{Build: remote.Build{Version: "v9.9.9"}, Env: f.env})
	defer p.Close()
	_, err := p.Get(t.Context(), f.ref)
	require.Error(t, err)
	require.Contains(t, err.Error(), "is version "+testBuild.String()+", relcap is v9.9.9: install both from the same release")
}

func TestTheListerListsTheServersApplications(t *testing.T) {
	t.Parallel()
	f := newFixture(t, "")
	l, err := remote.NewLister(argoconf.Options{Server: f.project.Environments[0].ArgoCD.Server, TokenEnv: tokenEnv, PlainText: true, Timeout: 5 * time.Second},
		remote.Config{Build: testBuild, Env: f.env})
	require.NoError(t, err)
	defer l.Close()
	apps, err := l.Applications(t.Context())
	require.NoError(t, err)
	require.Len(t, apps, 1)
	require.Equal(t, "web-staging", apps[0].Name)

	_, err = remote.NewLister(argoconf.Options{Server: "https://argo.example/some/path"}, remote.Config{})
	require.ErrorIs(t, err, fault.ErrUsage, "a bad server is refused before any helper starts")
}

func TestTheSimulatorRunsInTheHelper(t *testing.T) {
	t.Parallel()
	remotetest.Helper(t)
	repo, _ := argosimtest.NewRepo(t, "v1")
	cfg := repo.App("web-staging")
	sim, err := remote.StartSimulator(t.Context(), remote.SimSpec{Apps: []remote.SimApp{{Name: cfg.Name, RepoPath: cfg.RepoPath, Branch: cfg.Branch,
		Path: cfg.Path, Namespace: cfg.Namespace, Workload: cfg.Workload, Replicas: 1, Automated: true, InitiallySynced: true}}},
		remote.Config{Build: testBuild, Env: os.Environ()}, t.Logf)
	require.NoError(t, err)
	defer sim.Stop()
	p := &workflow.Project{Environments: []workflow.Environment{{Name: "staging",
		ArgoCD: workflow.ArgoCDTarget{Server: sim.Addr, App: "web-staging", TokenEnv: tokenEnv, PlainText: true}}}}
	pool := remote.NewPool(p, remote.Config{Build: testBuild, Env: []string{tokenEnv + "=" + sim.Token}})
	defer pool.Close()
	st, err := pool.Get(t.Context(), appstate.AppRef{Env: "staging", Name: "web-staging"})
	require.NoError(t, err)
	require.Equal(t, "web-staging", st.Name)
	sim.Stop()
	sim.Stop() // idempotent
}
