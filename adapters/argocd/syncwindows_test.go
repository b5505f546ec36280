package argocd_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/relcap/relcap/adapters/argocd"
	"github.com/relcap/relcap/adapters/argocd/argosim"
	"github.com/relcap/relcap/adapters/argocd/argosim/argosimtest"
	"github.com/relcap/relcap/workflow"
	"github.com/relcap/relcap/workflow/appstate"
	"github.com/relcap/relcap/workflow/breakglass"
	"github.com/relcap/relcap/workflow/fault"
)

// shortDenyWindow is a deny window for app that opened at the start of
// this minute and closes `left` from now: what breakglass.DenyWindow makes,
// with a time box short enough for a test.
func shortDenyWindow(app string, left time.Duration) (workflow.SyncWindow, time.Time) {
	now := time.Now()
	w, _ := breakglass.DenyWindow(app, now, time.Minute)
	start := now.UTC().Truncate(time.Minute)
	closes := now.Add(left).Truncate(time.Millisecond)
	w.Duration = closes.Sub(start)
	return w, closes
}

// TestADenyWindowHoldsAHotfixUntilItClosesThenSelfHealResumes is what
// break-glass relies on: while relcap's deny window is active, drift is
// not healed although the application stays automated with self-heal;
// when the window closes, self-heal puts Git's state back with nobody
// calling Argo CD.
func TestADenyWindowHoldsAHotfixUntilItClosesThenSelfHealResumes(t *testing.T) {
	t.Parallel()
	e := newEnv(t, func(c *argosim.AppConfig) { c.SelfHeal, c.SelfHealDelay = true, 200*time.Millisecond })
	ctx := t.Context()
	getUntil(t, ctx, e, 3*time.Second, convergedAt(e.rev1, "v1"))

	w, closes := shortDenyWindow(e.ref.Name, 3*time.Second)
	w.Description = "relcap break-glass test"
	got, err := e.adapter.DenySync(ctx, e.ref, w)
	require.NoError(t, err)
	require.Equal(t, "default", got.Project, "the application's project holds the window")
	require.True(t, got.Same(w))
	require.Empty(t, got.Description, "a 2.14 server keeps no description")
	windows, err := e.adapter.ListWindows(ctx, e.ref)
	require.NoError(t, err)
	require.Len(t, windows, 1)
	require.True(t, windows[0].Active)
	require.True(t, windows[0].Same(w))
	stored, err := e.sim.SyncWindows("default")
	require.NoError(t, err)
	require.Equal(t, []argosim.SyncWindow{{Kind: "deny", Schedule: w.Schedule, Duration: w.Duration.String(), Applications: []string{"web-staging"},
		ManualSync: true, TimeZone: "UTC"}}, stored)
	policy, err := e.adapter.SyncPolicy(ctx, e.ref)
	require.NoError(t, err)
	require.Equal(t, argocd.SyncPolicy{Automated: true, SelfHeal: true}, policy, "the sync policy is left alone")

	again, err := e.adapter.DenySync(ctx, e.ref, w)
	require.NoError(t, err, "idempotent: a resumed start finds its window")
	require.True(t, again.Same(w))
	stored, _ = e.sim.SyncWindows("default")
	require.Len(t, stored, 1, "not added twice")

	require.NoError(t, e.sim.Drift(e.ref.Name, "spec.replicas"))
	time.Sleep(800 * time.Millisecond) // four self-heal delays
	require.Less(t, time.Now(), closes, "the test must still be inside the window")
	drift, err := e.adapter.Drift(ctx, e.ref)
	require.NoError(t, err)
	require.Len(t, drift, 1, "the hotfix survives while the window is active")

	healed := getUntil(t, ctx, e, 10*time.Second, func(s appstate.AppState) bool { return s.SyncStatus == appstate.SyncSynced })
	require.False(t, time.Now().Before(closes), "healed only once the window closed (%s)", healed.Version)
	drift, err = e.adapter.Drift(ctx, e.ref)
	require.NoError(t, err)
	require.Empty(t, drift)
	windows, err = e.adapter.ListWindows(ctx, e.ref)
	require.NoError(t, err)
	require.Len(t, windows, 1, "a closed window stays on the project until removed")
	require.False(t, windows[0].Active)

	removed, err := e.adapter.RemoveWindow(ctx, e.ref, got)
	require.NoError(t, err)
	require.True(t, removed)
	removed, err = e.adapter.RemoveWindow(ctx, e.ref, got)
	require.NoError(t, err)
	require.False(t, removed, "already gone")
	windows, err = e.adapter.ListWindows(ctx, e.ref)
	require.NoError(t, err)
	require.Empty(t, windows)
}

// TestRemoveWindowTakesOnlyRelcapsOwnWindow: windows of other teams on
// the same project, even one for the same application and minute, stay.
func TestRemoveWindowTakesOnlyRelcapsOwnWindow(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	ctx := t.Context()
	w, _ := breakglass.DenyWindow(e.ref.Name, time.Now(), 10*time.Minute)
	others := []argosim.SyncWindow{
		{Kind: "deny", Schedule: w.Schedule, Duration: "10m", Applications: []string{"web-prod"}, ManualSync: true, TimeZone: "UTC"},
		{Kind: "deny", Schedule: w.Schedule, Duration: "5m", Applications: []string{e.ref.Name}, ManualSync: true, TimeZone: "UTC"},
		{Kind: "allow", Schedule: "0 22 * * *", Duration: "1h", Applications: []string{"*"}, TimeZone: "Europe/Berlin"},
	}
	for _, o := range others {
		require.NoError(t, e.sim.AddSyncWindow("default", o))
	}
	got, err := e.adapter.DenySync(ctx, e.ref, w)
	require.NoError(t, err)
	windows, err := e.adapter.ListWindows(ctx, e.ref)
	require.NoError(t, err)
	require.Len(t, windows, 3, "the windows that apply to web-staging: both of its own and the allow-all")

	removed, err := e.adapter.RemoveWindow(ctx, e.ref, got)
	require.NoError(t, err)
	require.True(t, removed)
	stored, err := e.sim.SyncWindows("default")
	require.NoError(t, err)
	require.Equal(t, others, stored, "every other window is untouched, in order")
}

// TestDenySyncNamesAMissingApplicationAndABadWindow: errors say what is
// wrong before anything is written.
func TestDenySyncNamesAMissingApplicationAndABadWindow(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	ctx := t.Context()
	w, _ := breakglass.DenyWindow("nope", time.Now(), time.Minute)
	_, err := e.adapter.DenySync(ctx, appstate.AppRef{Env: "staging", Name: "nope"}, w)
	require.ErrorIs(t, err, argocd.ErrTokenRejected, "argo cd hides which applications exist")
	_, err = e.adapter.DenySync(ctx, e.ref, workflow.SyncWindow{Kind: "allow", Applications: []string{"x"}, Schedule: "* * * * *", Duration: time.Minute})
	require.ErrorIs(t, err, fault.ErrUsage)
	bad := w
	bad.Applications, bad.Schedule = []string{e.ref.Name}, "61 25 * * *"
	_, err = e.adapter.DenySync(ctx, e.ref, bad)
	require.ErrorContains(t, err, "InvalidArgument")
	require.ErrorContains(t, err, "cannot parse schedule")
	stored, err := e.sim.SyncWindows("default")
	require.NoError(t, err)
	require.Empty(t, stored)
}

// TestSyncWindowsOverGRPCWeb: the project is edited as wire bytes over
// gRPC-Web too (argo-cd's apiclient keeps its connection to itself).
func TestSyncWindowsOverGRPCWeb(t *testing.T) {
	t.Parallel()
	repo, _ := argosimtest.NewRepo(t, "v1")
	ca := argosimtest.NewCA(t, "team-ca")
	sim, addr := argosimtest.StartTLS(t, ca, "/argo-cd", repo.App("web-staging"))
	ref := appstate.AppRef{Env: "staging", Name: "web-staging"}
	ad := tlsAdapter(t, addr, sim.Token(), argocd.Options{CAFile: ca.CAFile, PathPrefix: "/argo-cd"})
	w, _ := breakglass.DenyWindow(ref.Name, time.Now(), 2*time.Minute)
	got, err := ad.DenySync(t.Context(), ref, w)
	require.NoError(t, err)
	require.Equal(t, "default", got.Project)
	windows, err := ad.ListWindows(t.Context(), ref)
	require.NoError(t, err)
	require.Len(t, windows, 1)
	require.True(t, windows[0].Active)
	removed, err := ad.RemoveWindow(t.Context(), ref, got)
	require.NoError(t, err)
	require.True(t, removed)

	bad := tlsAdapter(t, addr, "wrong-token", argocd.Options{CAFile: ca.CAFile, PathPrefix: "/argo-cd"})
	_, err = bad.RemoveWindow(t.Context(), ref, got)
	require.ErrorIs(t, err, argocd.ErrTokenRejected, "a gRPC status in the gRPC-Web answer is an error like any other")
	require.NotContains(t, err.Error(), "wrong-token")
}
