package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/relcap/relcap/adapters/store"
	"github.com/relcap/relcap/workflow"
	"github.com/relcap/relcap/workflow/evidence"
	"github.com/relcap/relcap/workflow/report"
)

// legacyLedgers are ledgers (with their session journals) written by the
// last version released before checkpoints, evidence and journal records
// were typed (commit add17ba): "cli" by promote, converge, approve, resume,
// rollback, break-glass start/end and effort log against the Argo CD API
// simulator, "demo" by relcap demo --headless. Beside each: what that
// version's journal verify and reports printed.
var legacyLedgers = []string{"cli", "demo"}

// copyTree copies the fixture so the test may write to it.
func copyTree(t *testing.T, from string) string {
	t.Helper()
	to := t.TempDir()
	require.NoError(t, os.CopyFS(to, os.DirFS(from)))
	return to
}

// TestALedgerWrittenByTheLastLandedVersionReadsAndVerifies: every release
// of an older ledger loads into the typed checkpoints and evidence, its
// journals verify, and the reports are what that version printed.
func TestALedgerWrittenByTheLastLandedVersionReadsAndVerifies(t *testing.T) {
	t.Parallel()
	for _, name := range legacyLedgers {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			fixture := filepath.Join("testdata", "ledger-add17ba", name)
			dir := copyTree(t, fixture)
			ledger := filepath.Join(dir, "ledger.db")

			code, out, errOut := invoke(t, t.TempDir(), "--ledger", ledger, "journal", "verify")
			require.Equal(t, 0, code, errOut)
			want, err := os.ReadFile(filepath.Join(fixture, "verify.txt"))
			require.NoError(t, err)
			require.Equal(t, string(want), out)

			for _, rep := range []string{"effort", "measures"} {
				code, out, errOut := invoke(t, t.TempDir(), "--ledger", ledger, "report", rep, "--from", "2026-11-01", "--to", "2027-01-01", "--format", "json")
				require.Equal(t, 0, code, errOut)
				want, err := os.ReadFile(filepath.Join(fixture, rep+".json"))
				require.NoError(t, err)
				got := []byte(out)
				switch rep {
				case "measures":
					got = withoutUnsignedApprovals(t, got)
					got = withoutKeys(t, got, "dora")                        // added by issue 20
					got = withoutCount(t, got, "failed_releases", "stalled") // added by issue 28
				case "effort":
					// Issue 20 put staff figures over measured releases only;
					// these ledgers hold no measured release (the CLI's
					// commands measured nobody, the demo only its scripted
					// approver), so their coverage is checked instead and
					// what the coverage redefined is left out of the match.
					requireLegacyCoverage(t, name, got)
					got = withoutKeys(t, got, issue20EffortKeys...)
					// Issue 28 named a release left seven days without an
					// update "stalled" (still a failure), apart from one
					// abandoned on purpose; these ledgers hold neither.
					got = withoutCount(t, got, "releases", "stalled")
					// Issue 29 counts the sandbox releases it leaves out;
					// these ledgers were written before the mark.
					got = withoutCount(t, got, "releases", "sandbox_excluded")
					want = withoutKeys(t, want, issue20EffortKeys...)
				}
				require.JSONEq(t, withoutGeneratedAt(t, want), withoutGeneratedAt(t, got), rep)
			}

			l, err := store.OpenSQLite(t.Context(), ledger)
			require.NoError(t, err)
			defer l.Close()
			releases, err := l.ListReleases(t.Context(), workflow.ReleaseFilter{})
			require.NoError(t, err)
			require.NotEmpty(t, releases)
			for _, r := range releases {
				c := r.Checkpoints
				switch r.Kind {
				case workflow.KindBreakGlass:
					require.NotNil(t, c.SavedPolicy, "%s: the saved sync policy, once a JSON string, decodes", r.ID)
					require.True(t, c.SavedPolicy.Automated, r.ID)
					require.False(t, c.ExpiresAt.IsZero(), r.ID)
					require.NotEmpty(t, c.Reason, r.ID)
				default:
					require.False(t, c.Digest.IsZero(), r.ID)
					require.True(t, c.Landed(), r.ID)
					if r.Status == workflow.ReleaseConverged {
						require.True(t, c.Converged(), r.ID)
					}
					resolved, _, ok := evidence.Of[evidence.DigestResolved](r.Step(workflow.StepPromotion).Evidence)
					if r.Kind != workflow.KindRollback {
						require.True(t, ok, "%s: digest.resolved evidence, once all strings, is typed", r.ID)
						require.Positive(t, resolved.Size, r.ID)
						require.NotEmpty(t, resolved.MediaType, r.ID)
						require.False(t, resolved.FirstSeen.IsZero(), r.ID)
						if name == "demo" { // the sandbox's image: two platforms, a signature and an attestation
							require.Len(t, resolved.Platforms, 2, r.ID)
							require.True(t, resolved.Signed, r.ID)
							require.Equal(t, 2, resolved.Referrers, r.ID)
						}
					}
					landed, ev, ok := evidence.Of[evidence.EnvLanded](r.Step(workflow.StepPromotion).Evidence)
					require.True(t, ok, r.ID)
					require.Equal(t, c.EnvCommit, ev.Subject, r.ID)
					require.Equal(t, "main", landed.Branch, r.ID)
				}
				if r.Kind == workflow.KindRelease {
					require.NotEmpty(t, c.Fingerprint, r.ID)
					require.False(t, c.Applied.IsZero(), r.ID)
					_, _, ok := evidence.Of[evidence.PlanReviewed](r.Step(workflow.StepPlanReview).Evidence)
					require.True(t, ok, r.ID)
				}
				// Saved again, it reads back the same.
				require.NoError(t, l.SaveRelease(t.Context(), r))
				again, err := l.LoadRelease(t.Context(), r.ID)
				require.NoError(t, err)
				require.Equal(t, r.Checkpoints, again.Checkpoints, r.ID)
				require.Equal(t, len(r.Steps), len(again.Steps), r.ID)
				for i := range r.Steps {
					require.Equal(t, r.Steps[i].Evidence, again.Steps[i].Evidence, r.ID)
					require.Equal(t, r.Steps[i].Findings, again.Steps[i].Findings, r.ID)
				}
			}
		})
	}
}

func withoutGeneratedAt(t *testing.T, b []byte) string {
	t.Helper()
	var v map[string]any
	require.NoError(t, json.Unmarshal(b, &v))
	delete(v, "generated_at")
	out, err := json.Marshal(v)
	require.NoError(t, err)
	return string(out)
}

// withoutUnsignedApprovals checks the measures' sections that version did
// not have: approvals (a ledger from before signing holds only unsigned
// approvals, each listed) and rehearsals (none). It returns the report
// without them.
func withoutUnsignedApprovals(t *testing.T, b []byte) []byte {
	t.Helper()
	var v map[string]any
	require.NoError(t, json.Unmarshal(b, &v))
	a, ok := v["approvals"].(map[string]any)
	require.True(t, ok, "measures have an approvals section: %s", b)
	require.EqualValues(t, 0, a["signed"], "nothing was signed before signing existed")
	for _, u := range a["unsigned"].([]any) {
		require.NotEmpty(t, u.(map[string]any)["approver"])
	}
	delete(v, "approvals")
	// Rehearsals came later too: a ledger from before them has none.
	require.Equal(t, []any{}, v["rehearsals"], "no rehearsal before relcap rehearse existed")
	delete(v, "rehearsals")
	out, err := json.Marshal(v)
	require.NoError(t, err)
	return out
}

// issue20EffortKeys are the effort report's sections whose figures issue
// 20 redefined (staff and active over measured releases, per-month and
// per-person coverage) or added.
var issue20EffortKeys = []string{"coverage", "staff_per_release", "active_per_release", "by_role", "by_step", "by_month", "people", "items"}

// requireLegacyCoverage checks what coverage says of the legacy ledgers:
// the CLI's scripted releases were measured for nobody; the demo's two
// only for its scripted approver, never for the captain.
func requireLegacyCoverage(t *testing.T, name string, b []byte) {
	t.Helper()
	var rep report.Effort
	require.NoError(t, json.Unmarshal(b, &rep))
	c := rep.Coverage
	require.Zero(t, c.Measured, name)
	require.Zero(t, rep.Staff.Count, name)
	require.Nil(t, rep.Comparison, name)
	switch name {
	case "cli":
		require.Equal(t, 4, c.Unmeasured, name)
		require.Empty(t, c.MeasuredPeople, name)
	case "demo":
		require.Equal(t, 2, c.PartlyMeasured, name)
		require.Equal(t, []string{"demo-approver"}, c.MeasuredPeople, name)
		require.NotEmpty(t, c.UnmeasuredPeople, "the captain: %s", name)
	}
}

// withoutKeys drops top-level keys of a JSON object.
// withoutCount drops one count of a report's section, for a count added
// after the ledger was written; it must be zero there.
func withoutCount(t *testing.T, b []byte, section, key string) []byte {
	t.Helper()
	var v map[string]any
	require.NoError(t, json.Unmarshal(b, &v))
	counts, ok := v[section].(map[string]any)
	require.True(t, ok, "the report has a %s section", section)
	require.EqualValues(t, 0, counts[key], "these ledgers hold no %s release", key)
	delete(counts, key)
	out, err := json.Marshal(v)
	require.NoError(t, err)
	return out
}

func withoutKeys(t *testing.T, b []byte, keys ...string) []byte {
	t.Helper()
	var v map[string]any
	require.NoError(t, json.Unmarshal(b, &v))
	for _, k := range keys {
		delete(v, k)
	}
	out, err := json.Marshal(v)
	require.NoError(t, err)
	return out
}
