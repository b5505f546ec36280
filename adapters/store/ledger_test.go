package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/relcap/relcap/adapters/store/pgtest"
	"github.com/relcap/relcap/workflow"
	"github.com/relcap/relcap/workflow/approval"
	"github.com/relcap/relcap/workflow/audit"
	"github.com/relcap/relcap/workflow/effort"
	"github.com/relcap/relcap/workflow/evidence"
	"github.com/relcap/relcap/workflow/fault"
	"github.com/relcap/relcap/workflow/finding"
	"github.com/relcap/relcap/workflow/forge"
	"github.com/relcap/relcap/workflow/image"
	"github.com/relcap/relcap/workflow/journal"
	"github.com/relcap/relcap/workflow/tfplan"
)

// t0 has nanoseconds and a non-UTC zone, so round trips prove exactness and
// that times come back as the same instant.
var t0 = time.Date(2026, 11, 30, 14, 55, 27, 123456789, time.FixedZone("CET", 3600))

func TestMain(m *testing.M) {
	if url := os.Getenv(lockHelperEnv); url != "" {
		os.Exit(holdLockHelper(url))
	}
	os.Exit(pgtest.Main(m))
}

// backend is one of the databases the store's suite runs on: every test of
// the ledger's behaviour runs once per backend (forEachBackend).
type backend struct {
	name string
	// newLocation returns where a new, empty ledger may be opened: a file
	// path, or the URL of an empty database.
	newLocation func(tb testing.TB) string
	open        func(ctx context.Context, location string, opts ...Option) (*Ledger, error)
}

var (
	sqliteBackend   = backend{name: "sqlite", newLocation: func(tb testing.TB) string { return filepath.Join(tb.TempDir(), "ledger.db") }, open: OpenSQLite}
	postgresBackend = backend{name: "postgres", newLocation: pgtest.Database, open: OpenPostgres}
	backends        = []backend{sqliteBackend, postgresBackend}
)

// forEachBackend runs test once per backend, as parallel subtests named
// after it.
func forEachBackend(t *testing.T, test func(t *testing.T, b backend)) {
	t.Helper()
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			test(t, b)
		})
	}
}

// openNew opens a new, empty ledger, closed when tb ends.
func (b backend) openNew(tb testing.TB, opts ...Option) *Ledger {
	tb.Helper()
	return b.openAt(tb, b.newLocation(tb), opts...)
}

// openAt opens the ledger at location, closed when tb ends.
func (b backend) openAt(tb testing.TB, location string, opts ...Option) *Ledger {
	tb.Helper()
	l, err := b.open(context.Background(), location, opts...)
	require.NoError(tb, err)
	tb.Cleanup(func() { _ = l.Close() })
	return l
}

func digest(t *testing.T, c byte) image.Digest {
	t.Helper()
	d, err := image.ParseDigest("sha256:" + strings.Repeat(string(c), 64))
	require.NoError(t, err)
	return d
}

func requireTimeEqual(t *testing.T, want, got time.Time) {
	t.Helper()
	require.Truef(t, want.Equal(got), "want %s, got %s", want.Format(time.RFC3339Nano), got.Format(time.RFC3339Nano))
}

// TestMigrationsAreOrdered: versions follow the slice order, and every
// migration is written for both databases.
func TestMigrationsAreOrdered(t *testing.T) {
	t.Parallel()
	for i, m := range migrations {
		require.Equal(t, i+1, m.version, "migration %d", i)
		require.NotEmpty(t, strings.TrimSpace(m.sqlite), "migration %d has no SQLite text", m.version)
		require.NotEmpty(t, strings.TrimSpace(m.postgres), "migration %d has no PostgreSQL text", m.version)
	}
}

func TestMigrationsIdempotentOnReopen(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, b backend) {
		loc := b.newLocation(t)
		ctx := t.Context()
		l, err := b.open(ctx, loc)
		require.NoError(t, err)
		r := workflow.NewRelease("web-prod-1", "web", "prod", "img:1", "ana", t0)
		require.NoError(t, l.SaveRelease(ctx, r))
		require.NoError(t, l.Close())

		for range 2 {
			l, err = b.open(ctx, loc)
			require.NoError(t, err)
			var n, v int
			require.NoError(t, l.db.QueryRowContext(ctx, "SELECT COUNT(*), MAX(version) FROM schema_migrations").Scan(&n, &v))
			require.Equal(t, len(migrations), n)
			require.Equal(t, schemaVersion(), v)
			got, err := l.LoadRelease(ctx, r.ID)
			require.NoError(t, err)
			require.Equal(t, r.ID, got.ID)
			require.NoError(t, l.Close())
		}
	})
}

func TestOpenRefusesNewerSchema(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, b backend) {
		loc := b.newLocation(t)
		l, err := b.open(t.Context(), loc)
		require.NoError(t, err)
		where := l.Location()
		newer := schemaVersion() + 7
		_, err = l.db.ExecContext(t.Context(), "INSERT INTO schema_migrations (version, applied_at) VALUES (?, 0)", newer)
		require.NoError(t, err)
		require.NoError(t, l.Close())

		_, err = b.open(t.Context(), loc)
		require.Error(t, err)
		require.EqualError(t, err, fmt.Sprintf("ledger %s has schema version %d, this relcap knows up to %d: upgrade relcap", where, newer, schemaVersion()))
	})
}

func TestReleaseRoundTrip(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, b backend) {
		ctx := t.Context()
		l := b.openNew(t)

		r := workflow.NewRelease("web-prod-20261130-abc123", "web", "prod", "registry/web:1.2", "ana", t0)
		r.Checkpoints.Digest = digest(t, 'a')
		st := r.Step(r.Steps[0].Kind)
		st.Status = workflow.Succeeded
		st.StartedAt, st.EndedAt = t0, t0.Add(90*time.Second)
		st.Findings = []finding.Finding{{Severity: finding.Warning, Code: "c", Subject: "s", Message: "m", Facts: finding.Facts{finding.Of("k", "v")}}}
		st.Evidence = []evidence.Evidence{evidence.New("fp", evidence.PlanReviewed{Revision: "b", Create: 1}),
			evidence.New("https://forge.test/team/env/pulls/4", evidence.PullRequestOpened{Number: 4, Forge: forge.Gitea, Head: "relcap/prod/x", Base: "main", Commit: "c1"}),
			evidence.New("m1", evidence.PullRequestLanded{Number: 4, URL: "https://forge.test/team/env/pulls/4", Reviewed: "c1", MergedBy: "relcap-bot", ByRelcap: true, Reviewers: []string{"bob-gh → bob"}})}
		// A pull request's record: number, reviews (login → principal),
		// merge commit.
		r.Checkpoints.PullRequest = &forge.PullRequestRecord{Forge: forge.Gitea, Number: 4, URL: "https://forge.test/team/env/pulls/4",
			Head: "relcap/prod/x", Base: "main", HeadSHA: "c1", State: forge.PullRequestMerged, MergeCommit: "m1", MergedBy: "relcap-bot", ByRelcap: true,
			Reviews: []forge.ReviewVerdict{{Login: "bob-gh", Principal: "bob", State: forge.ReviewApproved, Commit: "c1", Counted: true}}}
		require.NoError(t, l.SaveRelease(ctx, r))

		got, err := l.LoadRelease(ctx, r.ID)
		require.NoError(t, err)
		requireTimeEqual(t, r.CreatedAt, got.CreatedAt)
		requireTimeEqual(t, st.EndedAt, got.Steps[0].EndedAt)
		// Times compare by instant; everything else must be identical.
		norm := func(r *workflow.Release) *workflow.Release {
			c := r.Clone()
			c.CreatedAt, c.UpdatedAt = c.CreatedAt.UTC(), c.UpdatedAt.UTC()
			for i := range c.Steps {
				c.Steps[i].StartedAt, c.Steps[i].EndedAt = c.Steps[i].StartedAt.UTC(), c.Steps[i].EndedAt.UTC()
			}
			return c
		}
		require.Equal(t, norm(r), norm(got))

		// Saving again replaces.
		r.Status, r.EndedAt, r.UpdatedAt = workflow.ReleaseConverged, t0.Add(time.Hour), t0.Add(time.Hour)
		require.NoError(t, l.SaveRelease(ctx, r))
		got, err = l.LoadRelease(ctx, r.ID)
		require.NoError(t, err)
		require.Equal(t, workflow.ReleaseConverged, got.Status)
		requireTimeEqual(t, r.EndedAt, got.EndedAt)
		var status string
		var ended int64
		require.NoError(t, l.db.QueryRowContext(ctx, "SELECT status, ended_at FROM releases WHERE id = ?", r.ID).Scan(&status, &ended))
		require.Equal(t, "converged", status)
		require.Equal(t, r.EndedAt.UnixNano(), ended)

		_, err = l.LoadRelease(ctx, "nope")
		require.ErrorIs(t, err, fault.ErrNotFound)
		require.ErrorIs(t, l.SaveRelease(ctx, &workflow.Release{}), fault.ErrUsage)
	})
}

func TestListReleases(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, b backend) {
		ctx := t.Context()
		l := b.openNew(t)
		mk := func(id, app, env string, day int) {
			require.NoError(t, l.SaveRelease(ctx, workflow.NewRelease(id, app, env, "img", "ana", t0.AddDate(0, 0, day))))
		}
		mk("a1", "web", "staging", 0)
		mk("a2", "web", "prod", 1)
		mk("a3", "web", "prod", 2)
		mk("b1", "api", "prod", 3)

		ids := func(f workflow.ReleaseFilter) []string {
			rs, err := l.ListReleases(ctx, f)
			require.NoError(t, err)
			var out []string
			for _, r := range rs {
				out = append(out, r.ID)
			}
			return out
		}
		require.Equal(t, []string{"b1", "a3", "a2", "a1"}, ids(workflow.ReleaseFilter{}))
		require.Equal(t, []string{"a3", "a2", "a1"}, ids(workflow.ReleaseFilter{App: "web"}))
		require.Equal(t, []string{"b1", "a3", "a2"}, ids(workflow.ReleaseFilter{Env: "prod"}))
		require.Equal(t, []string{"a3", "a2"}, ids(workflow.ReleaseFilter{App: "web", Env: "prod"}))
		require.Equal(t, []string{"a3", "a2"}, ids(workflow.ReleaseFilter{From: t0.AddDate(0, 0, 1), To: t0.AddDate(0, 0, 3)}), "From inclusive, To exclusive")
		require.Equal(t, []string{"b1", "a3"}, ids(workflow.ReleaseFilter{Limit: 2}))
		require.Empty(t, ids(workflow.ReleaseFilter{App: "none"}))
	})
}

func TestPlanRoundTrip(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, b backend) {
		ctx := t.Context()
		l := b.openNew(t)
		p := tfplan.Summary{
			Env: "prod", Fingerprint: "fp1", PlanFile: "/p/fp1.tfplan", PlanHash: "h",
			Inputs:  tfplan.Inputs{Revision: "abc", LockFileHash: "l", VarFileHashes: map[string]string{"prod.tfvars": "x"}, Workspace: "prod", StateLineage: "lin", StateSerial: 7},
			Counts:  tfplan.Counts{Create: 1, ReplaceDeleteFirst: 1},
			Changes: []tfplan.ResourceChange{{Address: "a.b", Type: "a", Name: "b", Action: tfplan.ActionReplaceDeleteFirst, ReplacePaths: []string{"x"}, Flags: []string{tfplan.FlagDestructive}, Attributes: []tfplan.AttributeChange{{Path: "x", Before: "1", After: tfplan.SensitiveMask, Sensitive: true}}}},
			Outputs: []tfplan.OutputChange{{Name: "o", Action: tfplan.ActionCreate}},
			Author:  "ana", CreatedAt: t0.UTC(), TerraformVersion: "1.5.7",
		}
		require.NoError(t, l.SavePlan(ctx, p))
		got, err := l.LoadPlan(ctx, "fp1")
		require.NoError(t, err)
		requireTimeEqual(t, p.CreatedAt, got.CreatedAt)
		require.Equal(t, p, got)

		appliedAt := func() sql.NullInt64 {
			var v sql.NullInt64
			require.NoError(t, l.db.QueryRowContext(ctx, "SELECT applied_at FROM plans WHERE fingerprint = 'fp1'").Scan(&v))
			return v
		}
		require.False(t, appliedAt().Valid)
		require.NoError(t, l.MarkPlanApplied(ctx, "fp1", t0))
		require.NoError(t, l.MarkPlanApplied(ctx, "fp1", t0.Add(time.Hour)), "a resumed apply")
		requireTimeEqual(t, t0, timeOf(appliedAt()))
		require.NoError(t, l.SavePlan(ctx, p))
		requireTimeEqual(t, t0, timeOf(appliedAt()))

		_, err = l.LoadPlan(ctx, "nope")
		require.ErrorIs(t, err, fault.ErrNotFound)
		require.ErrorIs(t, l.MarkPlanApplied(ctx, "nope", t0), fault.ErrNotFound)
		require.ErrorIs(t, l.SavePlan(ctx, tfplan.Summary{}), fault.ErrUsage)
	})
}

func TestApprovalsRoundTrip(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, b backend) {
		ctx := t.Context()
		l := b.openNew(t)
		a1 := approval.Approval{Kind: approval.Plan, Subject: "fp1", Env: "prod", Approver: "bo", Comment: "lgtm", At: t0.Add(time.Minute),
			Signature: approval.Signature{Armored: "-----BEGIN SSH SIGNATURE-----\nU1NIU0lH\n-----END SSH SIGNATURE-----\n", Key: "SHA256:abc"}}
		a2 := approval.Approval{Kind: approval.Plan, Subject: "fp1", Env: "prod", Approver: "cy", At: t0}
		other := []approval.Approval{
			{Kind: approval.Plan, Subject: "fp2", Env: "prod", Approver: "bo", At: t0},
			{Kind: approval.Promotion, Subject: "fp1", Env: "prod", Approver: "bo", At: t0, Commit: "c0ffee", Digest: "sha256:" + strings.Repeat("a", 64)},
			{Kind: approval.BreakGlass, Subject: "prod/web-prod", Env: "prod", Approver: "cy", At: t0, TimeBox: 30*time.Minute + 7, Comment: "OOM"},
		}
		a1.People = "git:0123abcd:4567ef89"
		before := time.Now().Add(-time.Second)
		for _, a := range append([]approval.Approval{a1, a2}, other...) {
			a.ReceivedAt = t0.Add(-24 * time.Hour) // the writer's claim is not kept
			require.NoError(t, l.RecordApproval(ctx, a))
		}
		after := time.Now().Add(time.Second)
		got, err := l.Approvals(ctx, approval.Plan, "fp1")
		require.NoError(t, err)
		require.Len(t, got, 2)
		// Oldest first.
		for i, want := range []approval.Approval{a2, a1} {
			requireTimeEqual(t, want.At, got[i].At)
			want.At = got[i].At
			// The ledger's own clock says when it received the approval.
			require.True(t, got[i].ReceivedAt.After(before) && got[i].ReceivedAt.Before(after), "received at %s, recorded between %s and %s", got[i].ReceivedAt, before, after)
			want.ReceivedAt = got[i].ReceivedAt
			require.Equal(t, want, got[i])
		}
		promo, err := l.Approvals(ctx, approval.Promotion, "fp1")
		require.NoError(t, err)
		require.Len(t, promo, 1)
		require.Equal(t, other[1].Commit, promo[0].Commit, "the promotion approval keeps the commit it approved")
		require.Equal(t, other[1].Digest, promo[0].Digest)
		bg, err := l.Approvals(ctx, approval.BreakGlass, "prod/web-prod")
		require.NoError(t, err)
		require.Len(t, bg, 1)
		require.Equal(t, 30*time.Minute+7, bg[0].TimeBox, "the break-glass approval keeps the time box it signed, to the nanosecond")
		require.Zero(t, got[0].TimeBox, "other approvals have none")
		require.ErrorIs(t, l.RecordApproval(ctx, approval.Approval{Kind: approval.BreakGlass, Subject: "x", Approver: "cy", TimeBox: -1}), fault.ErrUsage)
		none, err := l.Approvals(ctx, approval.Plan, "fp9")
		require.NoError(t, err)
		require.Empty(t, none)
		require.ErrorIs(t, l.RecordApproval(ctx, approval.Approval{Kind: "plan"}), fault.ErrUsage)
	})
}

func TestEffortRoundTrip(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, b backend) {
		ctx := t.Context()
		l := b.openNew(t)
		entries := []effort.Entry{
			{ReleaseID: "r1", Person: "ana", Role: effort.RoleCaptain, Step: "plan", Kind: effort.Active, Duration: 90*time.Second + 7, At: t0, Inputs: 4},
			{ReleaseID: "r1", Step: "apply", Kind: effort.Wait, Duration: 3 * time.Minute, At: t0.Add(time.Minute)},
			{ReleaseID: "r1", Person: "bo", Role: effort.RoleApprover, Step: effort.WholeRelease, Kind: effort.OffTool, Duration: time.Hour, At: t0.Add(2 * time.Minute), Note: "change board"},
			{ReleaseID: "r1", Person: "ci", Role: effort.RoleCaptain, Step: "apply", Kind: effort.Unmeasured, At: t0.Add(3 * time.Minute), Note: "no terminal"},
			{ReleaseID: "r2", Person: "ana", Step: "plan", Kind: effort.Active, Duration: time.Second, At: t0},
		}
		require.NoError(t, l.RecordEffort(ctx, entries))
		require.NoError(t, l.RecordEffort(ctx, nil))
		got, err := l.Effort(ctx, "r1")
		require.NoError(t, err)
		require.Len(t, got, 4)
		for i, want := range entries[:4] {
			requireTimeEqual(t, want.At, got[i].At)
			want.At = got[i].At
			require.Equal(t, want, got[i])
		}
		none, err := l.Effort(ctx, "r9")
		require.NoError(t, err)
		require.Empty(t, none)
	})
}

// TestRecordEffortRejectsWholeBatch protects earlier data and atomicity: one
// invalid entry must not leave half a batch behind.
func TestRecordEffortRejectsWholeBatch(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, b backend) {
		ctx := t.Context()
		l := b.openNew(t)
		ok := effort.Entry{ReleaseID: "r1", Person: "ana", Step: "plan", Kind: effort.Active, Duration: time.Second, At: t0}
		require.NoError(t, l.RecordEffort(ctx, []effort.Entry{ok}))
		bad := ok
		bad.Duration = -time.Second
		err := l.RecordEffort(ctx, []effort.Entry{ok, ok, bad})
		require.ErrorIs(t, err, fault.ErrUsage)
		tooLate := ok
		tooLate.At = time.Date(2300, 1, 1, 0, 0, 0, 0, time.UTC)
		require.ErrorIs(t, l.RecordEffort(ctx, []effort.Entry{ok, tooLate}), fault.ErrUsage)

		got, err := l.Effort(ctx, "r1")
		require.NoError(t, err)
		require.Len(t, got, 1)
	})
}

// TestFailedTransactionKeepsEarlierData makes a write fail inside the
// database (a CHECK constraint, reached by bypassing Go validation) and
// checks that the rows written before it in the same call are rolled back
// and earlier calls' rows are intact.
func TestFailedTransactionKeepsEarlierData(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, b backend) {
		ctx := t.Context()
		l := b.openNew(t)
		require.NoError(t, l.RecordEffort(ctx, []effort.Entry{{ReleaseID: "r1", Person: "ana", Step: "plan", Kind: effort.Active, Duration: time.Second, At: t0}}))
		err := l.inTx(ctx, "test", func(tx ledgerTx) error {
			if _, err := tx.ExecContext(ctx, "INSERT INTO effort (release_id, step, kind, duration_ns) VALUES ('r1', 'x', 'active', 5)"); err != nil {
				return err
			}
			_, err := tx.ExecContext(ctx, "INSERT INTO effort (release_id, step, kind, duration_ns) VALUES ('r1', 'x', 'active', -5)")
			return err
		})
		require.ErrorContains(t, err, "ledger "+l.Location()+": test: ")
		got, err := l.Effort(ctx, "r1")
		require.NoError(t, err)
		require.Len(t, got, 1)
	})
}

func TestConvergence(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, b backend) {
		ctx := t.Context()
		l := b.openNew(t)
		d, other := digest(t, 'a'), digest(t, 'b')
		ok, err := l.HasConverged(ctx, "web", "staging", d)
		require.NoError(t, err)
		require.False(t, ok)
		require.NoError(t, l.RecordConvergence(ctx, workflow.ConvergenceRecord{ReleaseID: "r1", App: "web", Env: "staging", Digest: d, Revision: "abc", At: t0}))
		for _, c := range []struct {
			app, env string
			d        image.Digest
			want     bool
		}{
			{"web", "staging", d, true},
			{"web", "prod", d, false},
			{"api", "staging", d, false},
			{"web", "staging", other, false},
		} {
			ok, err := l.HasConverged(ctx, c.app, c.env, c.d)
			require.NoError(t, err)
			require.Equal(t, c.want, ok, "%s/%s/%s", c.app, c.env, c.d.Short())
		}
		require.ErrorIs(t, l.RecordConvergence(ctx, workflow.ConvergenceRecord{App: "web", Env: "prod"}), fault.ErrUsage)
	})
}

func TestRecordSighting(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, b backend) {
		ctx := t.Context()
		l := b.openNew(t)
		ref := "registry.example/web:1.2"
		da, db := digest(t, 'a'), digest(t, 'b')

		first, err := l.RecordSighting(ctx, ref, da, t0)
		require.NoError(t, err)
		require.Equal(t, ref, first.Reference)
		require.Equal(t, da, first.Digest)
		requireTimeEqual(t, t0, first.At)

		// The tag moved: the first sighting is still a.
		got, err := l.RecordSighting(ctx, ref, db, t0.Add(time.Hour))
		require.NoError(t, err)
		require.Equal(t, da, got.Digest)
		requireTimeEqual(t, t0, got.At)

		// Seen again at a: nothing changes.
		got, err = l.RecordSighting(ctx, ref, da, t0.Add(2*time.Hour))
		require.NoError(t, err)
		require.Equal(t, da, got.Digest)
		requireTimeEqual(t, t0, got.At)

		// Another reference has its own history.
		got, err = l.RecordSighting(ctx, "registry.example/web:1.3", db, t0.Add(3*time.Hour))
		require.NoError(t, err)
		require.Equal(t, db, got.Digest)

		_, err = l.RecordSighting(ctx, ref, image.Digest{}, t0)
		require.ErrorIs(t, err, fault.ErrUsage)
	})
}

type findingRow struct {
	code, subject, severity, message string
	first, last                      time.Time
	resolved                         time.Time
}

func findingRows(t *testing.T, l *Ledger, scope string) []findingRow {
	t.Helper()
	rows, err := l.db.QueryContext(t.Context(), `
SELECT code, subject, severity, message, first_seen, last_seen, resolved_at FROM findings
WHERE scope = ? ORDER BY id`, scope)
	require.NoError(t, err)
	defer rows.Close()
	var out []findingRow
	for rows.Next() {
		var r findingRow
		var first, last, resolved sql.NullInt64
		require.NoError(t, rows.Scan(&r.code, &r.subject, &r.severity, &r.message, &first, &last, &resolved))
		r.first, r.last, r.resolved = timeOf(first), timeOf(last), timeOf(resolved)
		out = append(out, r)
	}
	require.NoError(t, rows.Err())
	return out
}

func TestRecordFindings(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, b backend) {
		ctx := t.Context()
		l := b.openNew(t)
		const scope = "ownership/staging"
		conflict := finding.Finding{Severity: finding.Blocker, Code: "ownership.conflict", Subject: "Deployment web", Message: "two owners"}
		drift := finding.Finding{Severity: finding.Warning, Code: "drift", Subject: "bucket logs", Message: "changed outside"}
		t1, t2, t3, t4 := t0, t0.Add(time.Hour), t0.Add(2*time.Hour), t0.Add(3*time.Hour)

		// Opened.
		require.NoError(t, l.RecordFindings(ctx, scope, t1, []finding.Finding{conflict, drift}))
		// Another scope is independent.
		require.NoError(t, l.RecordFindings(ctx, "ownership/prod", t1, []finding.Finding{conflict}))

		// conflict still there (with a new message), drift gone.
		conflict2 := conflict
		conflict2.Message = "three owners"
		require.NoError(t, l.RecordFindings(ctx, scope, t2, []finding.Finding{conflict2, conflict2}))
		rows := findingRows(t, l, scope)
		require.Len(t, rows, 2)
		require.Equal(t, "three owners", rows[0].message)
		requireTimeEqual(t, t1, rows[0].first)
		requireTimeEqual(t, t2, rows[0].last)
		require.True(t, rows[0].resolved.IsZero())
		require.Equal(t, "drift", rows[1].code)
		requireTimeEqual(t, t2, rows[1].resolved)

		// drift is back: a new finding, its age restarts.
		require.NoError(t, l.RecordFindings(ctx, scope, t3, []finding.Finding{conflict2, drift}))
		rows = findingRows(t, l, scope)
		require.Len(t, rows, 3)
		requireTimeEqual(t, t1, rows[0].first)
		require.Equal(t, "drift", rows[2].code)
		require.Equal(t, "warning", rows[2].severity)
		requireTimeEqual(t, t3, rows[2].first)
		require.True(t, rows[2].resolved.IsZero())

		// All resolved.
		require.NoError(t, l.RecordFindings(ctx, scope, t4, nil))
		for _, r := range findingRows(t, l, scope) {
			require.False(t, r.resolved.IsZero(), "%s", r.code)
		}
		prod := findingRows(t, l, "ownership/prod")
		require.Len(t, prod, 1)
		require.True(t, prod[0].resolved.IsZero())

		require.ErrorIs(t, l.RecordFindings(ctx, "", t1, nil), fault.ErrUsage)
	})
}

func TestSessionsRoundTrip(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, b backend) {
		ctx := t.Context()
		l := b.openNew(t)
		s1 := workflow.Session{ID: "s1", Actor: "ana", Command: "release web prod", ReleaseID: "r1", StartedAt: t0}
		s2 := workflow.Session{ID: "s2", Actor: "bo", Command: "approve", StartedAt: t0.Add(time.Minute)}
		require.NoError(t, l.OpenSession(ctx, s2))
		require.NoError(t, l.OpenSession(ctx, s1))
		require.Error(t, l.OpenSession(ctx, s1), "an ID is registered once")

		h, err := l.JournalHead(ctx, "s1")
		require.NoError(t, err)
		require.Equal(t, journal.Head{SessionID: "s1"}, h)

		lines := sealedLines(t, "ana", 4)
		forged := sealedLines(t, "mallory", 4)
		require.NoError(t, l.AppendJournal(ctx, "s1", lines[:1]))
		require.NoError(t, l.AppendJournal(ctx, "s1", lines[1:2]))
		require.NoError(t, l.AppendJournal(ctx, "s1", lines[:2]), "repeating is harmless")
		require.ErrorContains(t, l.AppendJournal(ctx, "s1", forged[:1]), "refusing another entry 1", "a held entry is never replaced")
		require.ErrorContains(t, l.AppendJournal(ctx, "s1", forged[1:2]), "refusing another entry 2", "the head is never rewritten")
		require.ErrorContains(t, l.AppendJournal(ctx, "s1", lines[3:4]), "gap")
		require.ErrorContains(t, l.AppendJournal(ctx, "s1", forged[2:3]), "not linked")
		require.ErrorIs(t, l.AppendJournal(ctx, "s1", []journal.Line{{Number: 3, Text: []byte(`{"seq":3`)}}), fault.ErrUsage, "not an entry")
		edited := journal.Line{Number: 3, Text: []byte(strings.Replace(string(lines[2].Text), `"ana"`, `"bo"`, 1))}
		require.ErrorContains(t, l.AppendJournal(ctx, "s1", []journal.Line{edited}), "does not match its hash")
		require.ErrorContains(t, l.AppendJournal(ctx, "s1", []journal.Line{lines[2], lines[3], forged[2]}), "refusing", "all or nothing")
		h, err = l.JournalHead(ctx, "s1")
		require.NoError(t, err)
		require.Equal(t, journal.Head{SessionID: "s1", Seq: 2, Hash: entryOf(t, lines[1]).Hash}, h)
		cp, err := l.JournalCopy(ctx, "s1")
		require.NoError(t, err)
		require.Equal(t, audit.JournalCopy{Kept: true, Lines: lines[:2], Head: h}, cp, "the copy is the lines as given, with the head")

		end := t0.Add(time.Hour)
		require.NoError(t, l.CloseSession(ctx, "s1", end))

		got, err := l.Sessions(ctx)
		require.NoError(t, err)
		require.Len(t, got, 2)
		require.Equal(t, "s1", got[0].ID)
		requireTimeEqual(t, s1.StartedAt, got[0].StartedAt)
		requireTimeEqual(t, end, got[0].EndedAt)
		want := s1
		want.StartedAt, want.EndedAt, want.Entries = got[0].StartedAt, got[0].EndedAt, 2
		require.Equal(t, want, got[0])
		require.True(t, got[1].EndedAt.IsZero())

		_, err = l.JournalHead(ctx, "nope")
		require.ErrorIs(t, err, fault.ErrNotFound)
		require.ErrorIs(t, l.AppendJournal(ctx, "nope", lines[:1]), fault.ErrNotFound)
		_, err = l.JournalCopy(ctx, "nope")
		require.ErrorIs(t, err, fault.ErrNotFound)
		require.ErrorIs(t, l.CloseSession(ctx, "nope", end), fault.ErrNotFound)
		require.ErrorIs(t, l.OpenSession(ctx, workflow.Session{}), fault.ErrUsage)
	})
}

// TestTwoHandlesWriteConcurrently stands in for two relcap processes
// sharing one ledger: nothing may be lost and no writer may fail with
// "database is locked".
func TestTwoHandlesWriteConcurrently(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, b backend) {
		ctx := t.Context()
		loc := b.newLocation(t)
		const perHandle = 50
		handles := make([]*Ledger, 2)
		// Opened concurrently too: both may try to migrate a new ledger at once.
		var wg sync.WaitGroup
		errs := make([]error, len(handles))
		for i := range handles {
			wg.Go(func() { handles[i], errs[i] = b.open(ctx, loc) })
		}
		wg.Wait()
		for i := range handles {
			require.NoError(t, errs[i])
			t.Cleanup(func() { _ = handles[i].Close() })
		}

		errc := make(chan error, 2*perHandle)
		for i, h := range handles {
			for n := range perHandle {
				wg.Go(func() {
					errc <- h.RecordEffort(ctx, []effort.Entry{{
						ReleaseID: "r1", Person: fmt.Sprintf("p%d", i), Step: "plan",
						Kind: effort.Active, Duration: time.Duration(n+1) * time.Second, At: t0.Add(time.Duration(n) * time.Millisecond),
					}})
				})
			}
		}
		wg.Wait()
		close(errc)
		for err := range errc {
			require.NoError(t, err)
		}
		for _, h := range handles {
			got, err := h.Effort(ctx, "r1")
			require.NoError(t, err)
			require.Len(t, got, 2*perHandle)
		}
		var n int
		require.NoError(t, handles[0].db.QueryRowContext(ctx, "SELECT COUNT(*) FROM schema_migrations").Scan(&n))
		require.Equal(t, len(migrations), n, "each migration applied once")
	})
}

func TestWriteVisibleToAnotherHandleBeforeClose(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, b backend) {
		ctx := t.Context()
		loc := b.newLocation(t)
		one := b.openAt(t, loc)
		other := b.openAt(t, loc)
		require.NoError(t, one.SavePlan(ctx, tfplan.Summary{Env: "prod", Fingerprint: "fp"}))
		_, err := other.LoadPlan(ctx, "fp")
		require.NoError(t, err)
	})
}

func TestSealSessionRecordsTheHeadOnce(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, b backend) {
		ctx := t.Context()
		l := b.openNew(t)
		require.NoError(t, l.OpenSession(ctx, workflow.Session{ID: "s1", Actor: "ana", Command: "plan", ReleaseID: "r1", StartedAt: t0}))
		lines := sealedLines(t, "ana", 3)
		require.NoError(t, l.AppendJournal(ctx, "s1", lines))
		h3 := entryOf(t, lines[2]).Hash

		seal, err := l.SessionSeal(ctx, "s1")
		require.NoError(t, err)
		require.False(t, seal.Sealed())
		self, err := l.LedgerIdentity(ctx)
		require.NoError(t, err)
		require.Regexp(t, `^[0-9a-f]{32}$`, self)
		require.Equal(t, audit.SessionHead{Session: "s1", Actor: "ana", Command: "plan", Release: "r1", Ledger: self, Seq: 3, Hash: h3}, seal.Head,
			"the head to seal names this ledger")
		require.Contains(t, string(seal.Head.Statement()), "relcap journal head v2\n", "and is signed as such")
		require.Contains(t, string(seal.Head.Statement()), `ledger: "`+self+`"`)
		otherLedger := seal
		otherLedger.Head.At, otherLedger.Head.Ledger = t0, "0123456789abcdef0123456789abcdef"
		require.ErrorContains(t, l.SealSession(ctx, otherLedger), "in ledger", "a seal naming another ledger is refused")

		stale := seal
		stale.Head.At, stale.Head.Seq, stale.Head.Hash = t0, 2, entryOf(t, lines[1]).Hash
		require.ErrorContains(t, l.SealSession(ctx, stale), "the ledger holds entry 3", "a seal of another head is refused")
		other := seal
		other.Head.At, other.Head.Actor = t0, "bo"
		require.Error(t, l.SealSession(ctx, other), "a seal naming another actor is refused")

		seal.Head.At = t0
		seal.Signature = approval.Signature{Armored: "-----BEGIN SSH SIGNATURE-----\nAAAA\n-----END SSH SIGNATURE-----\n", Key: "SHA256:k"}
		seal.Anchor = "refs/relcap/journal 0123456789ab of /env.git"
		require.NoError(t, l.SealSession(ctx, seal))
		got, err := l.SessionSeal(ctx, "s1")
		require.NoError(t, err)
		require.True(t, got.Sealed())
		requireTimeEqual(t, t0, got.Head.At)
		got.Head.At = seal.Head.At
		require.Equal(t, seal, got)
		require.Equal(t, string(seal.Head.Statement()), string(got.Head.Statement()), "the statement reads back the same")

		again := seal
		again.Signature = approval.Signature{}
		again.Unsigned = "no key"
		require.ErrorContains(t, l.SealSession(ctx, again), "a seal is never replaced")

		// relcap never moves a sealed head; the trigger says so to anyone
		// who tries through the database.
		_, err = l.db.ExecContext(ctx, `UPDATE sessions SET head_hash = 'forged' WHERE id = 's1'`)
		require.ErrorContains(t, err, "a sealed session head is never changed")
		_, err = l.db.ExecContext(ctx, `UPDATE sessions SET head_ledger = '0123456789abcdef0123456789abcdef' WHERE id = 's1'`)
		require.ErrorContains(t, err, "a sealed session head is never changed", "nor the ledger it names")
		_, err = l.db.ExecContext(ctx, `UPDATE ledger_identity SET id = '0123456789abcdef0123456789abcdef'`)
		require.ErrorContains(t, err, "a ledger's identity never changes")
		_, err = l.db.ExecContext(ctx, `DELETE FROM ledger_identity`)
		require.ErrorContains(t, err, "a ledger's identity never changes")
		again2, err := l.LedgerIdentity(ctx)
		require.NoError(t, err)
		require.Equal(t, self, again2)
		_, err = l.db.ExecContext(ctx, `DELETE FROM sessions WHERE id = 's1'`)
		require.ErrorContains(t, err, "sessions are never deleted")

		_, err = l.SessionSeal(ctx, "nope")
		require.ErrorIs(t, err, fault.ErrNotFound)
		require.ErrorIs(t, l.SealSession(ctx, audit.SessionSeal{SealedHead: audit.SealedHead{Head: audit.SessionHead{Session: "nope", At: t0}}}), fault.ErrNotFound)
		require.ErrorIs(t, l.SealSession(ctx, audit.SessionSeal{SealedHead: audit.SealedHead{Head: audit.SessionHead{Session: "s1"}}}), fault.ErrUsage, "a seal has a time")
	})
}

// sealedLines is a journal of n sealed entries by actor, as lines.
func sealedLines(t *testing.T, actor string, n int) []journal.Line {
	t.Helper()
	var (
		prev  *journal.Entry
		lines []journal.Line
	)
	for i := range n {
		e, err := journal.Next(prev, t0.Add(time.Duration(i)*time.Second), actor, "tick", map[string]int{"i": i})
		require.NoError(t, err)
		b, err := json.Marshal(e)
		require.NoError(t, err)
		lines = append(lines, journal.Line{Number: i + 1, Text: b})
		prev = &e
	}
	return lines
}

// entryOf decodes a journal line.
func entryOf(t *testing.T, l journal.Line) journal.Entry {
	t.Helper()
	var e journal.Entry
	require.NoError(t, json.Unmarshal(l.Text, &e))
	return e
}
