package workflow_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/relcap/relcap/workflow"
	"github.com/relcap/relcap/workflow/effort"
	"github.com/relcap/relcap/workflow/finding"
	"github.com/relcap/relcap/workflow/journal"
	"github.com/relcap/relcap/workflow/ownership"
	"github.com/relcap/relcap/workflow/workflowtest"
)

func TestEffortClockCountsOnlyEngagedTime(t *testing.T) {
	t.Parallel()
	clock := workflowtest.NewClock(t0)
	c := effort.NewClock(clock, 2*time.Minute, "r1")

	c.Touch("alice", effort.RoleCaptain, "plan-review")
	clock.Advance(90 * time.Second) // engaged: counts
	c.Touch("alice", effort.RoleCaptain, "plan-review")
	clock.Advance(2 * time.Minute) // exactly the threshold: counts
	c.Touch("alice", effort.RoleCaptain, "apply")
	clock.Advance(10 * time.Minute) // went for coffee: counts nothing
	c.Touch("alice", effort.RoleCaptain, "apply")
	clock.Advance(30 * time.Second)
	c.Touch("alice", effort.RoleCaptain, "promotion")

	c.Touch("bob", effort.RoleApprover, "plan-review")
	clock.Advance(time.Minute)
	c.Touch("bob", effort.RoleApprover, "plan-review")

	c.BeginWait("apply")
	clock.Advance(5 * time.Minute)
	c.EndWait("apply")

	got := map[string]time.Duration{}
	for _, e := range c.Drain() {
		got[fmt.Sprintf("%s/%s/%s/%s", e.Kind, e.Person, e.Role, e.Step)] = e.Duration
	}
	require.Equal(t, map[string]time.Duration{
		"active/alice/captain/plan-review": 210 * time.Second,
		"active/alice/captain/apply":       30 * time.Second,
		"active/bob/approver/plan-review":  time.Minute,
		"wait///apply":                     5 * time.Minute,
	}, got)
	require.Empty(t, c.Drain(), "drain empties the clock")
}

func TestEffortTotalsKeepStaffAndMachineApart(t *testing.T) {
	t.Parallel()
	totals := effort.Sum([]effort.Entry{
		{Kind: effort.Active, Duration: time.Hour},
		{Kind: effort.OffTool, Duration: 30 * time.Minute},
		{Kind: effort.Wait, Duration: 2 * time.Hour},
	})
	require.Equal(t, 90*time.Minute, totals.Staff())
	require.Equal(t, 2*time.Hour, totals.Wait)
}

func journalLines(t *testing.T, n int) ([]journal.Line, journal.Head) {
	t.Helper()
	var prev *journal.Entry
	var lines []journal.Line
	for i := range n {
		e, err := journal.Next(prev, t0.Add(time.Duration(i)*time.Second), "alice", "effort.logged", map[string]any{"minutes": i + 1, "what": "standup"})
		require.NoError(t, err)
		b, err := json.Marshal(e)
		require.NoError(t, err)
		lines = append(lines, journal.Line{Number: i + 1, Text: b})
		prev = &e
	}
	return lines, journal.Head{SessionID: "s", Seq: prev.Seq, Hash: prev.Hash}
}

func TestVerifyJournalDetectsEveryKindOfTampering(t *testing.T) {
	t.Parallel()
	lines, head := journalLines(t, 4)
	n, problem := journal.Verify(lines, head)
	require.Nil(t, problem)
	require.EqualValues(t, 4, n)

	edit := func(i int, f func(string) string) []journal.Line {
		out := append([]journal.Line(nil), lines...)
		out[i] = journal.Line{Number: out[i].Number, Text: []byte(f(string(out[i].Text)))}
		return out
	}
	cases := map[string]struct {
		lines    []journal.Line
		line     int
		contains string
	}{
		"one byte edited":    {edit(1, func(s string) string { return strings.Replace(s, "standup", "standuq", 1) }), 2, "edited"},
		"line deleted":       {append(append([]journal.Line(nil), lines[:1]...), lines[2:]...), 3, "removed"},
		"lines reordered":    {[]journal.Line{lines[0], lines[2], lines[1], lines[3]}, 3, "removed or reordered"},
		"last line deleted":  {lines[:3], 0, "truncated"},
		"truncated mid-line": {edit(3, func(s string) string { return s[:len(s)/2] }), 4, "damaged or truncated"},
		"garbage":            {edit(0, func(string) string { return "{" }), 1, "not a journal entry"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			_, p := journal.Verify(c.lines, head)
			require.NotNil(t, p)
			require.Equal(t, c.line, p.Line)
			require.Contains(t, p.Reason, c.contains)
		})
	}

	// A whole rewritten chain is consistent but differs from the ledger.
	forged, _ := journalLines(t, 4)
	forged[3] = func() journal.Line {
		var e journal.Entry
		require.NoError(t, json.Unmarshal(forged[3].Text, &e))
		e.Data = json.RawMessage(`{"minutes":400}`)
		e.Hash = e.ComputeHash()
		b, _ := json.Marshal(e)
		return journal.Line{Number: 4, Text: b}
	}()
	_, p := journal.Verify(forged, head)
	require.NotNil(t, p)
	require.Contains(t, p.Reason, "rewritten")
}

func TestConvergedJudgesSyncHealthRevisionAndDigestSeparately(t *testing.T) {
	t.Parallel()
	d, err := workflow.ParseDigest("sha256:" + strings.Repeat("ab", 32))
	require.NoError(t, err)
	img := "registry.test/web@" + d.String()
	want := workflow.Want{Revision: "rev2", Digest: d}
	cases := []struct {
		name     string
		state    workflow.AppState
		verdict  workflow.VerdictKind
		terminal bool
	}{
		{"converged", workflow.AppState{SyncStatus: "Synced", SyncRevision: "rev2", Health: "Healthy", Operation: "Succeeded", Images: []string{img}}, workflow.VerdictConverged, false},
		{"healthy at the wrong revision", workflow.AppState{SyncStatus: "Synced", SyncRevision: "rev1", Health: "Healthy", Images: []string{img}}, workflow.VerdictWrongRevision, false},
		{"out of sync", workflow.AppState{SyncStatus: "OutOfSync", SyncRevision: "rev1", Health: "Healthy"}, workflow.VerdictProgressing, false},
		{"applied, still progressing", workflow.AppState{SyncStatus: "Synced", SyncRevision: "rev2", Health: "Progressing", Images: []string{img}}, workflow.VerdictAppliedUnhealthy, false},
		{"applied, degraded", workflow.AppState{SyncStatus: "Synced", SyncRevision: "rev2", Health: "Degraded", Images: []string{img}}, workflow.VerdictAppliedUnhealthy, true},
		{"running another digest", workflow.AppState{SyncStatus: "Synced", SyncRevision: "rev2", Health: "Healthy", Images: []string{"registry.test/web:latest"}}, workflow.VerdictWrongArtifact, false},
		{"sync failed", workflow.AppState{SyncStatus: "OutOfSync", Operation: "Failed", OperationMsg: "invalid manifest"}, workflow.VerdictSyncFailed, true},
		{"sync operation running", workflow.AppState{SyncStatus: "Synced", SyncRevision: "rev2", Health: "Healthy", Operation: "Running", Images: []string{img}}, workflow.VerdictProgressing, false},
		{"sync failed, retried, manifest rejected by the API server", workflow.AppState{SyncStatus: "OutOfSync", SyncRevision: "rev2", Health: "Healthy", Operation: "Running", OperationRetries: 1, OperationRevision: "rev2",
			OperationMsg: `one or more objects failed to apply, reason: Deployment.apps "web" is invalid: spec.template.spec.containers[0].ports[0].containerPort: Invalid value: 70000`}, workflow.VerdictSyncFailed, true},
		{"sync failed, retried, transient", workflow.AppState{SyncStatus: "OutOfSync", SyncRevision: "rev2", Health: "Healthy", Operation: "Running", OperationRetries: 2, OperationRevision: "rev2",
			OperationMsg: "one or more objects failed to apply, reason: the server could not find the requested resource"}, workflow.VerdictProgressing, false},
		{"retries of an older revision hold the wanted one back", workflow.AppState{SyncStatus: "Synced", SyncRevision: "rev2", Health: "Healthy", Operation: "Running", OperationRetries: 3, OperationRevision: "rev1",
			OperationMsg: `Deployment.apps "web" is invalid`, Images: []string{img}}, workflow.VerdictProgressing, false},
	}
	for _, c := range cases {
		v := workflow.Converged(c.state, want)
		require.Equal(t, c.verdict, v.Kind, c.name)
		require.Equal(t, c.terminal, v.Terminal, c.name)
		if v.Terminal {
			require.NotEmpty(t, v.NextAction, c.name)
		}
	}
}

func TestCountApprovalsBindsToTheExactSubject(t *testing.T) {
	t.Parallel()
	approvals := []workflow.Approval{
		{Kind: "plan", Subject: "fp-old", Approver: "carol"},
		{Kind: "plan", Subject: "fp-new", Approver: "alice"},
		{Kind: "plan", Subject: "fp-new", Approver: "bob"},
		{Kind: "plan", Subject: "fp-new", Approver: "bob"},
	}
	c := workflow.ApprovalRule{Kind: workflow.ApprovePlan, Required: 2, DistinctFromAuthor: true}.Count("fp-new", "alice", approvals)
	require.Len(t, c.Counted, 1, "only bob counts: alice is the author, carol approved another plan, bob counts once")
	require.Equal(t, 1, c.Missing())
	require.Contains(t, c.Ignored["carol"], "fp-old")

	c = workflow.ApprovalRule{Kind: workflow.ApprovePlan, Required: 2}.Count("fp-new", "alice", approvals)
	require.True(t, c.Satisfied())
}

func TestParseDigestRejectsTagsAndMalformedDigests(t *testing.T) {
	t.Parallel()
	for _, bad := range []string{"", "latest", "sha256:abc", "md5:" + strings.Repeat("a", 32), "sha256:" + strings.Repeat("A", 64)} {
		_, err := workflow.ParseDigest(bad)
		require.ErrorIs(t, err, workflow.ErrUsage, bad)
	}
	d, err := workflow.ParseDigest("sha256:" + strings.Repeat("0f", 32))
	require.NoError(t, err)
	require.Equal(t, "0f0f0f0f0f0f", d.Short())
}

func TestCheckOwnershipFindsConflictsWrongOwnersUnownedAndStaleRules(t *testing.T) {
	t.Parallel()
	m := ownership.Map{File: "ownership.yaml", Rules: []ownership.Rule{
		{Line: 3, Match: ownership.Match{TerraformType: "aws_*"}, Owner: "terraform"},
		{Line: 5, Match: ownership.Match{Kind: "Namespace"}, Owner: "terraform"},
		{Line: 7, Match: ownership.Match{Group: "apps", Kind: "Deployment", Namespace: "web"}, Owner: "argocd"},
		{Line: 9, Match: ownership.Match{Kind: "CronJob"}, Owner: "argocd"},
	}}
	objects := []ownership.ManagedObject{
		{Manager: "terraform", TerraformAddress: "aws_s3_bucket.a", TerraformType: "aws_s3_bucket"},
		{Manager: "argocd", App: "web", Group: "apps", Kind: "Deployment", Namespace: "web", Name: "web", Fields: []string{"spec.replicas", "spec.template.spec.containers[web].image"}},
		{Manager: "terraform", TerraformAddress: "kubectl_manifest.web", TerraformType: "kubectl_manifest", Group: "apps", Kind: "Deployment", Namespace: "web", Name: "web", Fields: []string{"spec.replicas"}},
		{Manager: "terraform", TerraformAddress: "google_pubsub_topic.t", TerraformType: "google_pubsub_topic"},
	}
	fs := ownership.Check(m, objects)
	codes := map[string]finding.Finding{}
	var stale []string
	for _, f := range fs {
		codes[f.Code] = f
		if f.Code == "ownership.stale-rule" {
			stale = append(stale, f.Subject)
		}
	}
	require.Equal(t, "ownership.conflict", fs[0].Code)
	require.Equal(t, "spec.replicas", codes["ownership.conflict"].Fact("fields"))
	require.Contains(t, codes["ownership.wrong-owner"].Message, "kubectl_manifest.web")
	require.Equal(t, "google_pubsub_topic.t", codes["ownership.unowned"].Subject)
	require.Equal(t, []string{"ownership.yaml:5", "ownership.yaml:9"}, stale)
	require.True(t, finding.Blocking(fs))
}

func TestResourceFailureNamesPodFailuresThatTheApplicationHides(t *testing.T) {
	t.Parallel()
	pull := []workflow.AppResource{{Kind: "Deployment", Namespace: "web", Name: "web", Health: "Progressing"},
		{Kind: "Pod", Namespace: "web", Name: "web-1", Health: "Progressing", Message: "Back-off pulling image \"r/web@sha256:…\""}}
	v, failed := workflow.ResourceFailure(pull, nil, time.Minute)
	require.True(t, failed)
	require.Equal(t, workflow.VerdictImagePullFailed, v.Kind)
	require.Contains(t, v.NextAction, "relcap rollback")

	starting := []workflow.AppResource{{Kind: "Pod", Namespace: "web", Name: "web-2", Health: "Progressing", Message: "Readiness probe failed: connection refused"}}
	_, failed = workflow.ResourceFailure(starting, func(workflow.AppResource) time.Duration { return 10 * time.Second }, time.Minute)
	require.False(t, failed, "a starting pod may fail a few probes")
	v, failed = workflow.ResourceFailure(starting, func(workflow.AppResource) time.Duration { return 2 * time.Minute }, time.Minute)
	require.True(t, failed)
	require.Equal(t, workflow.VerdictReadinessFailed, v.Kind)

	_, failed = workflow.ResourceFailure([]workflow.AppResource{{Kind: "Pod", Name: "ok", Health: "Healthy"}}, nil, time.Minute)
	require.False(t, failed)
}

// TestConvergedIgnoresAFailedOperationOfAnotherRevision protects the fix of
// a bad commit: after it is reverted Argo CD may find the revert already in
// sync and start no operation, so the last operation is still the failed
// one of the bad commit. Found against real Argo CD in the lab.
func TestConvergedIgnoresAFailedOperationOfAnotherRevision(t *testing.T) {
	t.Parallel()
	d, err := workflow.ParseDigest("sha256:" + strings.Repeat("cd", 32))
	require.NoError(t, err)
	img := "registry.test/web@" + d.String()
	st := workflow.AppState{SyncStatus: "Synced", SyncRevision: "revert", Health: "Healthy", Images: []string{img},
		Operation: "Failed", OperationMsg: "spec.replicas: Invalid value: -1", OperationRevision: "bad"}
	require.Equal(t, workflow.VerdictConverged, workflow.Converged(st, workflow.Want{Revision: "revert", Digest: d}).Kind)
	v := workflow.Converged(st, workflow.Want{Revision: "bad", Digest: d})
	require.Equal(t, workflow.VerdictSyncFailed, v.Kind, "the bad commit's own failure still counts")
	require.True(t, v.Terminal)
}
