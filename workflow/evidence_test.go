package workflow_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/relcap/relcap/workflow"
	"github.com/relcap/relcap/workflow/appstate"
	"github.com/relcap/relcap/workflow/image"
)

// TestEvidenceRecordedAsStringsReadsTyped: releases recorded before
// evidence was typed kept every detail value as a string; each kind reads
// into its detail type, numbers, booleans, times, digests and platform
// lists included.
func TestEvidenceRecordedAsStringsReadsTyped(t *testing.T) {
	t.Parallel()
	digest := "sha256:" + hex64('a')
	legacy := `[
 {"kind":"ownership.checked","subject":"staging","detail":{"findings":"1","objects":"4"}},
 {"kind":"plan.fingerprint","subject":"fp","detail":{"create":"1","delete":"0","replace":"2","revision":"abc","update":"3"}},
 {"kind":"plan.approval","subject":"fp","detail":{"approver":"bob","at":"2026-12-01T06:41:33Z"}},
 {"kind":"plan.applied","subject":"fp","detail":{"state_serial":"7"}},
 {"kind":"digest.resolved","subject":"` + digest + `","detail":{"created":"0001-01-01T00:00:00Z","first_seen":"2026-12-01T06:41:33Z","media_type":"application/vnd.oci.image.index.v1+json","platforms":"linux/amd64,linux/arm64/v8","reference":"r/ci/web:1","referrers":"2","repository":"r/ci/web","signed":"true","size":"3561"}},
 {"kind":"digest.verified","subject":"` + digest + `","detail":{"blobs_uploaded":"5","referrers":"2","repository":"r/staging/web","signed":"true"}},
 {"kind":"envrepo.pinned","subject":"c1","detail":{"branch":"relcap/staging/x","pushed":"true"}},
 {"kind":"envrepo.commit","subject":"c2","detail":{"branch":"main","pushed":"false"}},
 {"kind":"app.converged","subject":"web-staging","detail":{"digest":"` + digest + `","health":"Healthy","intended_revision":"c2","revision":"c2","sync":"Synced"}},
 {"kind":"app.operation-terminated","subject":"web-staging","detail":{"app":"web-staging","message":"boom","retries":"2","revision":"bad"}}
]`
	var got []workflow.Evidence
	require.NoError(t, json.Unmarshal([]byte(legacy), &got))
	d, err := image.ParseDigest(digest)
	require.NoError(t, err)
	at := time.Date(2026, 12, 1, 6, 41, 33, 0, time.UTC)
	want := []workflow.EvidenceDetail{
		workflow.OwnershipChecked{Objects: 4, Findings: 1},
		workflow.PlanReviewed{Revision: "abc", Create: 1, Update: 3, Replace: 2},
		workflow.PlanApproved{Approver: "bob", At: at},
		workflow.PlanApplied{StateSerial: 7},
		workflow.DigestResolved{Reference: "r/ci/web:1", Repository: "r/ci/web", MediaType: "application/vnd.oci.image.index.v1+json",
			Platforms: workflow.Platforms{"linux/amd64", "linux/arm64/v8"}, Size: 3561, Signed: true, Referrers: 2, FirstSeen: at},
		workflow.DigestVerified{Repository: "r/staging/web", Signed: true, Referrers: 2, BlobsUploaded: 5},
		workflow.EnvPinned{Branch: "relcap/staging/x", Pushed: true},
		workflow.EnvLanded{Branch: "main"},
		workflow.AppConverged{IntendedRevision: "c2", Digest: d, Sync: appstate.SyncSynced, Revision: "c2", Health: appstate.HealthHealthy},
		workflow.OperationTerminated{App: "web-staging", Revision: "bad", Retries: 2, Message: "boom"},
	}
	require.Len(t, got, len(want))
	for i, e := range got {
		require.Equal(t, want[i], e.Detail, "%s", e.Kind)
		require.Equal(t, want[i].EvidenceKind(), e.Kind)
	}

	// Written again they are typed JSON, and read back equal.
	b, err := json.Marshal(got)
	require.NoError(t, err)
	require.Contains(t, string(b), `"platforms":["linux/amd64","linux/arm64/v8"]`)
	require.Contains(t, string(b), `"signed":true`)
	var again []workflow.Evidence
	require.NoError(t, json.Unmarshal(b, &again))
	require.Equal(t, got, again)
}

// TestEvidenceOfAKindThisVersionDoesNotKnowSurvivesASave: a newer
// version's evidence is kept byte for byte.
func TestEvidenceOfAKindThisVersionDoesNotKnowSurvivesASave(t *testing.T) {
	t.Parallel()
	in := `{"kind":"forge.merged","subject":"pr/7","detail":{"number":7,"reviewers":["bob"]}}`
	var e workflow.Evidence
	require.NoError(t, json.Unmarshal([]byte(in), &e))
	require.Equal(t, workflow.EvidenceKind("forge.merged"), e.Kind)
	require.Empty(t, e.Detail.Facts())
	b, err := json.Marshal(e)
	require.NoError(t, err)
	require.JSONEq(t, in, string(b))
}

// TestALegacyValueThatDoesNotParseIsAnErrorNamingTheField: nothing is
// silently dropped.
func TestALegacyValueThatDoesNotParseIsAnErrorNamingTheField(t *testing.T) {
	t.Parallel()
	var e workflow.Evidence
	err := json.Unmarshal([]byte(`{"kind":"plan.applied","subject":"fp","detail":{"state_serial":"seven"}}`), &e)
	require.ErrorContains(t, err, "evidence plan.applied: field state_serial")
}

func TestEvidenceOfFindsTheLatestOfAType(t *testing.T) {
	t.Parallel()
	es := []workflow.Evidence{
		workflow.NewEvidence("fp1", workflow.PlanReviewed{Create: 1}),
		workflow.NewEvidence("c", workflow.EnvPinned{Branch: "b"}),
		workflow.NewEvidence("fp2", workflow.PlanReviewed{Update: 1}),
	}
	d, e, ok := workflow.EvidenceOf[workflow.PlanReviewed](es)
	require.True(t, ok)
	require.Equal(t, "fp2", e.Subject)
	require.Equal(t, 1, d.Update)
	_, _, ok = workflow.EvidenceOf[workflow.DigestVerified](es)
	require.False(t, ok)
}

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
