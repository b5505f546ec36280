package argocd_test

import (
	"context"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/relcap/relcap/adapters/argocd"
	"github.com/relcap/relcap/adapters/argocd/argosim"
	"github.com/relcap/relcap/workflow/appstate"
	"github.com/relcap/relcap/workflow/fault"
)

func TestGetTranslatesTheApplication(t *testing.T) {
	t.Parallel()
	e := newEnv(t, func(c *argosim.AppConfig) { c.SelfHeal = true })
	at := time.Date(2025, 3, 4, 5, 6, 7, 0, time.UTC)
	ad, err := argocd.New(argocd.Options{Server: e.sim.Addr(), AuthToken: e.sim.Token(), PlainText: true, Clock: fixedClock{at}})
	require.NoError(t, err)
	t.Cleanup(func() { _ = ad.Close() })

	st, err := ad.Get(t.Context(), e.ref)
	require.NoError(t, err)
	require.NotEmpty(t, st.Version)
	require.WithinDuration(t, time.Now(), st.ReconciledAt, time.Minute, "the controller's last reconciliation is translated")
	st.Version, st.ReconciledAt = "", time.Time{}
	require.Equal(t, appstate.AppState{
		Name:              "web-staging",
		SyncStatus:        appstate.SyncSynced,
		SyncRevision:      e.rev1,
		Health:            appstate.HealthHealthy,
		Operation:         appstate.OperationSucceeded,
		OperationMsg:      "successfully synced (all tasks run) [simulated]",
		OperationRevision: e.rev1,
		Images:            []string{imageRef("v1")},
		Resources:         []appstate.AppResource{{Group: "apps", Kind: "Deployment", Namespace: "web", Name: "web", Status: appstate.SyncSynced, Health: appstate.HealthHealthy}},
		AutoSync:          true,
		SelfHeal:          true,
		ObservedAt:        at,
		HealthMessage:     "",
	}, st)
}

func TestWatchEmitsEveryTransitionThroughSyncedAndHealthy(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	ctx := t.Context()
	first, err := e.adapter.Get(ctx, e.ref)
	require.NoError(t, err)
	updates, err := e.adapter.Watch(ctx, e.ref, first.Version)
	require.NoError(t, err)

	rev2 := e.repo.Pin(t, "v2")
	_, seen := waitState(t, updates, 5*time.Second, convergedAt(rev2, "v2"))

	prev := version(t, first.Version)
	for _, s := range seen {
		v := version(t, s.Version)
		require.Greater(t, v, prev, "versions only move forward and since itself is not repeated: %v", summary(seen))
		prev = v
	}
	joined := strings.Join(summary(seen), "\n")
	require.Contains(t, joined, "OutOfSync@"+short(rev2)+" Healthy", "the new commit is seen before it is synced")
	require.Contains(t, joined, "op=Running", "the operation is seen running")
	require.Contains(t, joined, "Synced@"+short(rev2)+" Progressing", "the rollout is seen progressing")
}

// TestWatchReconnectDoesNotLoseTheFinalTransition drops every watch stream
// in the middle of a rollout: the adapter must reconnect and still deliver
// Synced+Healthy.
func TestWatchReconnectDoesNotLoseTheFinalTransition(t *testing.T) {
	t.Parallel()
	e := newEnv(t, func(c *argosim.AppConfig) { c.TimeToHealthy = 600 * time.Millisecond })
	ctx := t.Context()
	first, err := e.adapter.Get(ctx, e.ref)
	require.NoError(t, err)
	updates, err := e.adapter.Watch(ctx, e.ref, first.Version)
	require.NoError(t, err)

	rev2 := e.repo.Pin(t, "v2")
	waitState(t, updates, 5*time.Second, func(s appstate.AppState) bool {
		return s.SyncStatus == appstate.SyncSynced && s.SyncRevision == rev2 && s.Health == appstate.HealthProgressing
	})
	e.sim.CloseWatches()
	require.Zero(t, e.sim.OpenWatches())
	waitState(t, updates, 5*time.Second, convergedAt(rev2, "v2"))
	require.Eventually(t, func() bool { return e.sim.OpenWatches() == 1 }, 2*time.Second, 10*time.Millisecond, "the adapter watches again")
}

// TestWatchReconnectReadsTransitionsMissedWhileDisconnected makes the only
// transition happen while no stream is open: only the Get on reconnect can
// deliver it.
func TestWatchReconnectReadsTransitionsMissedWhileDisconnected(t *testing.T) {
	t.Parallel()
	e := newEnv(t, func(c *argosim.AppConfig) { c.TimeToHealthy = 0 })
	ctx := t.Context()
	first := getUntil(t, ctx, e, 2*time.Second, convergedAt(e.rev1, "v1"))
	updates, err := e.adapter.Watch(ctx, e.ref, first.Version)
	require.NoError(t, err)
	require.Eventually(t, func() bool { return e.sim.OpenWatches() == 1 }, 2*time.Second, 10*time.Millisecond)

	e.sim.CloseWatches()
	require.NoError(t, e.sim.FailImagePull(e.ref.Name)) // broadcast to nobody
	st, _ := waitState(t, updates, 3*time.Second, func(s appstate.AppState) bool { return s.Health == appstate.HealthDegraded })
	require.Contains(t, st.HealthMessage, "Back-off pulling image")

	require.NoError(t, e.sim.Recover(e.ref.Name))
	waitState(t, updates, 3*time.Second, convergedAt(e.rev1, "v1"))
}

func TestWatchClosesWhenTheContextEnds(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	ctx, cancel := context.WithCancel(t.Context())
	updates, err := e.adapter.Watch(ctx, e.ref, "")
	require.NoError(t, err)
	u := <-updates
	require.NoError(t, u.Err)
	require.Equal(t, "web-staging", u.State.Name, "an empty since starts with the current state")
	cancel()
	require.Eventually(t, func() bool {
		select {
		case _, ok := <-updates:
			return !ok
		default:
			return false
		}
	}, 2*time.Second, 5*time.Millisecond, "the channel closes when ctx ends")
}

func TestBadTokenIsAClearErrorPromptly(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	ad, err := argocd.New(argocd.Options{Server: e.sim.Addr(), AuthToken: "not-the-token", PlainText: true, TokenEnv: "RELCAP_STAGING_TOKEN"})
	require.NoError(t, err)
	t.Cleanup(func() { _ = ad.Close() })

	start := time.Now()
	_, err = ad.Get(t.Context(), e.ref)
	require.ErrorIs(t, err, argocd.ErrTokenRejected)
	require.ErrorContains(t, err, "argo cd rejected the token from $RELCAP_STAGING_TOKEN: invalid session")
	require.NotContains(t, err.Error(), "not-the-token", "the token never appears in errors")
	require.Less(t, time.Since(start), 2*time.Second)

	updates, err := ad.Watch(t.Context(), e.ref, "")
	require.NoError(t, err)
	u := <-updates
	require.ErrorIs(t, u.Err, argocd.ErrTokenRejected, "a rejected watch ends with a final error, not retries")
	_, ok := <-updates
	require.False(t, ok)
}

func TestUnknownApplicationIsNotRetried(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	ref := appstate.AppRef{Name: "nope"}
	_, err := e.adapter.Get(t.Context(), ref)
	require.ErrorIs(t, err, argocd.ErrTokenRejected)
	require.ErrorContains(t, err, "for application nope")
	require.ErrorContains(t, err, "no application has that name")

	_, err = e.adapter.Get(t.Context(), appstate.AppRef{Name: "web-staging", Server: "argocd.elsewhere.example:443"})
	require.ErrorIs(t, err, fault.ErrUsage)
}

func TestUnreachableServerIsAClearErrorWithinSeconds(t *testing.T) {
	t.Parallel()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := lis.Addr().String()
	require.NoError(t, lis.Close()) // nothing listens there now

	ad, err := argocd.New(argocd.Options{Server: addr, AuthToken: "t", PlainText: true})
	require.NoError(t, err)
	start := time.Now()
	_, err = ad.Get(t.Context(), appstate.AppRef{Name: "web"})
	require.ErrorIs(t, err, argocd.ErrUnreachable)
	require.ErrorContains(t, err, "cannot reach argo cd at "+addr)
	require.Less(t, time.Since(start), 3*time.Second)
}

// TestSilentServerTimesOut covers a port that accepts TCP but never speaks
// gRPC (a wrong port, a stuck proxy): apiclient would wait forever.
func TestSilentServerTimesOut(t *testing.T) {
	t.Parallel()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	var mu sync.Mutex
	var conns []net.Conn
	go func() {
		for {
			c, err := lis.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		_ = lis.Close()
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			_ = c.Close()
		}
	})

	ad, err := argocd.New(argocd.Options{Server: lis.Addr().String(), AuthToken: "t", PlainText: true, Timeout: time.Second})
	require.NoError(t, err)
	start := time.Now()
	_, err = ad.Get(t.Context(), appstate.AppRef{Name: "web"})
	require.ErrorIs(t, err, argocd.ErrUnreachable)
	require.ErrorContains(t, err, "no answer within 1s")
	require.Less(t, time.Since(start), 3*time.Second)
}

func TestGetHonoursCancellation(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	_, err := e.adapter.Get(ctx, e.ref)
	require.ErrorIs(t, err, context.Canceled)
}

// TestTLSAgainstAPlaintextServerSaysSo covers the first mistake people make
// with a port-forward or an --insecure argocd-server.
func TestTLSAgainstAPlaintextServerSaysSo(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	ad, err := argocd.New(argocd.Options{Server: e.sim.Addr(), AuthToken: e.sim.Token()})
	require.NoError(t, err)
	t.Cleanup(func() { _ = ad.Close() })
	start := time.Now()
	_, err = ad.Get(t.Context(), e.ref)
	require.ErrorIs(t, err, argocd.ErrUnreachable)
	require.ErrorContains(t, err, "set argocd.plaintext: true")
	require.Less(t, time.Since(start), 5*time.Second)
}
