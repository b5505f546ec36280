package argocd_test

import (
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/relcap/relcap/adapters/argocd/argosim"
	"github.com/relcap/relcap/workflow/appstate"
)

// BenchmarkWatchLatency measures how long a state change takes from the
// server to the Watch channel: the simulator changes the application's
// health (an injected image pull failure, then its recovery) and the clock
// stops when the adapter delivers the new state. The budget is 1s; the
// p50/p99/max are reported as metrics and logged.
//
//	go test -run '^$' -bench WatchLatency ./adapters/argocd/
func BenchmarkWatchLatency(b *testing.B) {
	e := newEnv(b, func(c *argosim.AppConfig) { c.TimeToHealthy = 0 })
	ctx := b.Context()
	first := getUntil(b, ctx, e, 3*time.Second, convergedAt(e.rev1, "v1"))
	updates, err := e.adapter.Watch(ctx, e.ref, first.Version)
	require.NoError(b, err)

	var lat []time.Duration
	healthy := true
	for b.Loop() {
		want, change := appstate.HealthDegraded, e.sim.FailImagePull
		if !healthy {
			want, change = appstate.HealthHealthy, e.sim.Recover
		}
		start := time.Now()
		require.NoError(b, change(e.ref.Name))
		waitState(b, updates, 5*time.Second, func(s appstate.AppState) bool { return s.Health == want })
		lat = append(lat, time.Since(start))
		healthy = !healthy
	}
	slices.Sort(lat)
	pct := func(p float64) time.Duration { return lat[min(len(lat)-1, int(p*float64(len(lat))))] }
	b.ReportMetric(float64(pct(0.50).Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(pct(0.99).Microseconds())/1000, "p99-ms")
	b.ReportMetric(float64(lat[len(lat)-1].Microseconds())/1000, "max-ms")
	b.Logf("watch latency over %d changes: p50 %s, p99 %s, max %s (budget 1s)", len(lat), pct(0.50), pct(0.99), lat[len(lat)-1])
	if lat[len(lat)-1] > time.Second {
		b.Errorf("watch latency %s exceeds the 1s budget", lat[len(lat)-1])
	}
}
