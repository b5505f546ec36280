package argocd_test

import (
	"context"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/relcap/relcap/adapters/argocd"
	"github.com/relcap/relcap/adapters/argocd/argosim"
	"github.com/relcap/relcap/adapters/argocd/argosim/argosimtest"
	"github.com/relcap/relcap/workflow"
	"github.com/relcap/relcap/workflow/appstate"
	"github.com/relcap/relcap/workflow/image"
)

// env is one simulator with one application, and an adapter talking to it
// through argo-cd's real apiclient over loopback.
type env struct {
	sim     *argosim.Server
	repo    *argosimtest.Repo
	adapter *argocd.Adapter
	ref     appstate.AppRef
	rev1    string
}

// newEnv starts a simulator serving cfg (built from a fresh repository by
// configure) and an adapter with the simulator's token.
func newEnv(t testing.TB, configure func(*argosim.AppConfig)) *env {
	t.Helper()
	repo, rev1 := argosimtest.NewRepo(t, "v1")
	cfg := repo.App("web-staging")
	if configure != nil {
		configure(&cfg)
	}
	sim, addr := argosimtest.Start(t, cfg)
	ad, err := argocd.New(argocd.Options{Server: addr, AuthToken: sim.Token(), PlainText: true, MinBackoff: 100 * time.Millisecond})
	require.NoError(t, err)
	t.Cleanup(func() { _ = ad.Close() })
	return &env{sim: sim, repo: repo, adapter: ad, ref: appstate.AppRef{Env: "staging", Name: cfg.Name}, rev1: rev1}
}

func digest(t testing.TB, seed string) image.Digest {
	t.Helper()
	d, err := image.ParseDigest(argosimtest.Digest(seed))
	require.NoError(t, err)
	return d
}

// imageRef is the reference the simulator reports for seed's digest.
func imageRef(seed string) string { return argosimtest.Image + "@" + argosimtest.Digest(seed) }

// waitState reads updates until cond holds, failing after within.
func waitState(t testing.TB, updates <-chan workflow.AppUpdate, within time.Duration, cond func(appstate.AppState) bool) (appstate.AppState, []appstate.AppState) {
	t.Helper()
	timeout := time.After(within)
	var seen []appstate.AppState
	for {
		select {
		case u, ok := <-updates:
			require.True(t, ok, "watch closed early; saw %v", summary(seen))
			require.NoError(t, u.Err)
			seen = append(seen, u.State)
			if cond(u.State) {
				return u.State, seen
			}
		case <-timeout:
			require.FailNow(t, "condition not met", "saw %v", summary(seen))
		}
	}
}

func summary(states []appstate.AppState) []string {
	out := make([]string, 0, len(states))
	for _, s := range states {
		out = append(out, fmt.Sprintf("%s %s@%s %s op=%s", s.Version, s.SyncStatus, short(s.SyncRevision), s.Health, s.Operation))
	}
	return out
}

func short(s string) string {
	if len(s) > 7 {
		return s[:7]
	}
	return s
}

func convergedAt(rev, seed string) func(appstate.AppState) bool {
	return func(s appstate.AppState) bool {
		return s.SyncStatus == appstate.SyncSynced && s.SyncRevision == rev && s.Health == appstate.HealthHealthy &&
			s.Operation == appstate.OperationSucceeded && len(s.Images) == 1 && s.Images[0] == imageRef(seed)
	}
}

// getUntil polls Get until cond holds.
func getUntil(t testing.TB, ctx context.Context, e *env, within time.Duration, cond func(appstate.AppState) bool) appstate.AppState {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		st, err := e.adapter.Get(ctx, e.ref)
		require.NoError(t, err)
		if cond(st) {
			return st
		}
		if time.Now().After(deadline) {
			require.FailNow(t, "condition not met", "last state %v", summary([]appstate.AppState{st}))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func version(t testing.TB, v string) uint64 {
	t.Helper()
	n, err := strconv.ParseUint(v, 10, 64)
	require.NoError(t, err)
	return n
}

// fixedClock is a workflow.Clock that always reads the same time.
type fixedClock struct{ t time.Time }

func (c fixedClock) Now() time.Time { return c.t }

// After is time.After: these tests time nothing with the clock.
func (fixedClock) After(d time.Duration) <-chan time.Time { return time.After(d) }
