package evidence_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/relcap/relcap/workflow/appstate"
	"github.com/relcap/relcap/workflow/evidence"
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
	var got []evidence.Evidence
	require.NoError(t, json.Unmarshal([]byte(legacy), &got))
	d, err := image.ParseDigest(digest)
	require.NoError(t, err)
	at := time.Date(2026, 12, 1, 6, 41, 33, 0, time.UTC)
	want := []evidence.Detail{
		evidence.OwnershipChecked{Objects: 4, Findings: 1},
		evidence.PlanReviewed{Revision: "abc", Create: 1, Update: 3, Replace: 2},
		evidence.PlanApproved{Approver: "bob", At: at},
		evidence.PlanApplied{StateSerial: 7},
		evidence.DigestResolved{Reference: "r/ci/web:1", Repository: "r/ci/web", MediaType: "application/vnd.oci.image.index.v1+json",
			Platforms: evidence.Platforms{"linux/amd64", "linux/arm64/v8"}, Size: 3561, Signed: true, Referrers: 2, FirstSeen: at},
		evidence.DigestVerified{Repository: "r/staging/web", Signed: true, Referrers: 2, BlobsUploaded: 5},
		evidence.EnvPinned{Branch: "relcap/staging/x", Pushed: true},
		evidence.EnvLanded{Branch: "main"},
		evidence.AppConverged{IntendedRevision: "c2", Digest: d, Sync: appstate.SyncSynced, Revision: "c2", Health: appstate.HealthHealthy},
		evidence.OperationTerminated{App: "web-staging", Revision: "bad", Retries: 2, Message: "boom"},
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
	var again []evidence.Evidence
	require.NoError(t, json.Unmarshal(b, &again))
	require.Equal(t, got, again)
}

// TestEvidenceOfAKindThisVersionDoesNotKnowSurvivesASave: a newer
// version's evidence is kept byte for byte.
func TestEvidenceOfAKindThisVersionDoesNotKnowSurvivesASave(t *testing.T) {
	t.Parallel()
	in := `{"kind":"forge.merged","subject":"pr/7","detail":{"number":7,"reviewers":["bob"]}}`
	var e evidence.Evidence
	require.NoError(t, json.Unmarshal([]byte(in), &e))
	require.Equal(t, evidence.Kind("forge.merged"), e.Kind)
	require.Empty(t, e.Detail.Facts())
	b, err := json.Marshal(e)
	require.NoError(t, err)
	require.JSONEq(t, in, string(b))
}

// TestALegacyValueThatDoesNotParseIsAnErrorNamingTheField: nothing is
// silently dropped.
func TestALegacyValueThatDoesNotParseIsAnErrorNamingTheField(t *testing.T) {
	t.Parallel()
	var e evidence.Evidence
	err := json.Unmarshal([]byte(`{"kind":"plan.applied","subject":"fp","detail":{"state_serial":"seven"}}`), &e)
	require.ErrorContains(t, err, "evidence plan.applied: field state_serial")
}

func TestEvidenceOfFindsTheLatestOfAType(t *testing.T) {
	t.Parallel()
	es := []evidence.Evidence{
		evidence.New("fp1", evidence.PlanReviewed{Create: 1}),
		evidence.New("c", evidence.EnvPinned{Branch: "b"}),
		evidence.New("fp2", evidence.PlanReviewed{Update: 1}),
	}
	d, e, ok := evidence.Of[evidence.PlanReviewed](es)
	require.True(t, ok)
	require.Equal(t, "fp2", e.Subject)
	require.Equal(t, 1, d.Update)
	_, _, ok = evidence.Of[evidence.DigestVerified](es)
	require.False(t, ok)
}

func hex64(c byte) string {
	b := make([]byte, 64)
	for i := range b {
		b[i] = c
	}
	return string(b)
}
