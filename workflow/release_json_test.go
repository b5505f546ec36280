package workflow_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/relcap/relcap/workflow"
)

// TestCheckpointsReadTheOutputsMapOfOlderReleases: the typed checkpoints
// are stored under the keys of the string map they replace, so an older
// release body loads unchanged (the break-glass policy was a JSON string).
func TestCheckpointsReadTheOutputsMapOfOlderReleases(t *testing.T) {
	t.Parallel()
	digest := "sha256:" + hex64('b')
	var r workflow.Release
	require.NoError(t, json.Unmarshal([]byte(`{"id":"x","kind":"release","status":"converged","steps":[],"outputs":{
		"plan.fingerprint":"fp","apply.done":"12","digest":"`+digest+`","digest.repository":"r/ci/web","promotion.copied":"r/staging/web",
		"envrepo.branch":"relcap/staging/x","envrepo.pinned":"c1","envrepo.diff":"-a\n+b","envrepo.commit":"c2",
		"converged.at":"2026-12-01T06:41:33.123456789Z","rollback.restore-from":"c0","promotion.force-unverified":"hotfix",
		"breakglass.saved_policy":"{\"automated\":true,\"self_heal\":true,\"prune\":false}","breakglass.expires_at":"2026-12-01T07:11:33.5Z",
		"breakglass.reason":"OOM","breakglass.approver":"carol","breakglass.capture":"relcap/staging/x-bg"}}`), &r))
	c := r.Checkpoints
	require.Equal(t, "fp", c.Fingerprint)
	require.Equal(t, workflow.Applied{Done: true, StateSerial: 12}, c.Applied)
	require.Equal(t, digest, c.Digest.String())
	require.Equal(t, "r/ci/web", c.DigestRepository)
	require.Equal(t, "r/staging/web", c.CopiedTo)
	require.Equal(t, "c1", c.EnvPinned)
	require.Equal(t, "-a\n+b", c.EnvDiff)
	require.True(t, c.Landed())
	require.Equal(t, time.Date(2026, 12, 1, 6, 41, 33, 123456789, time.UTC), c.ConvergedAt)
	require.Equal(t, "c0", c.RestoreFrom)
	require.Equal(t, "hotfix", c.ForceUnverified)
	require.Equal(t, &workflow.SyncPolicy{Automated: true, SelfHeal: true}, c.SavedPolicy)
	require.Equal(t, "OOM", c.Reason)
	require.Equal(t, "carol", c.Approver)
	require.Equal(t, "relcap/staging/x-bg", c.Capture)

	b, err := json.Marshal(r)
	require.NoError(t, err)
	var again workflow.Release
	require.NoError(t, json.Unmarshal(b, &again))
	require.Equal(t, r.Checkpoints, again.Checkpoints)

	var noChanges workflow.Release
	require.NoError(t, json.Unmarshal([]byte(`{"id":"y","outputs":{"apply.done":"no-changes"}}`), &noChanges))
	require.Equal(t, workflow.Applied{Done: true, NoChanges: true}, noChanges.Checkpoints.Applied)
	require.Error(t, json.Unmarshal([]byte(`{"id":"z","outputs":{"apply.done":"later"}}`), &noChanges))
}

func hex64(c byte) string {
	b := make([]byte, 64)
	for i := range b {
		b[i] = c
	}
	return string(b)
}
