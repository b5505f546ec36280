package store

import (
	"encoding/json"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/relcap/relcap/workflow"
	"github.com/relcap/relcap/workflow/approval"
	"github.com/relcap/relcap/workflow/audit"
	"github.com/relcap/relcap/workflow/effort"
	"github.com/relcap/relcap/workflow/finding"
	"github.com/relcap/relcap/workflow/image"
	"github.com/relcap/relcap/workflow/rehearsal"
	"github.com/relcap/relcap/workflow/report"
)

// rowCounts counts the rows of every table of l's schema.
func rowCounts(t *testing.T, l *Ledger) map[string]int {
	t.Helper()
	ctx := t.Context()
	txs, err := l.readSnapshots(ctx, 1)
	require.NoError(t, err)
	defer func() { _ = txs[0].Rollback() }()
	tables, err := l.d.schemaTables(ctx, txs[0].Tx)
	require.NoError(t, err)
	out := map[string]int{}
	for _, tb := range tables {
		var n int
		require.NoError(t, txs[0].QueryRowContext(ctx, `SELECT count(*) FROM `+quoteIdent(tb.name)).Scan(&n))
		out[tb.name] = n
	}
	return out
}

// fillHistory gives l a generated history plus what genLedger leaves out:
// approvals (two of them equal, as the audit record keeps duplicates) and
// a sealed session.
func fillHistory(t *testing.T, l *Ledger, n int, seed uint64) {
	t.Helper()
	ctx := t.Context()
	genLedger(t, l, n, seed)
	a := approval.Approval{Kind: approval.Plan, Subject: "fp0000001", Env: "prod", Approver: "bob", Comment: "ok", At: t0}
	require.NoError(t, l.RecordApproval(ctx, a))
	require.NoError(t, l.RecordApproval(ctx, a))
	require.NoError(t, l.SaveRehearsal(ctx, &rehearsal.Rehearsal{ID: "rh-web-staging-1", App: "web", Env: "staging", Drill: rehearsal.DrillUnavailableImage,
		State: rehearsal.StatePassed, StartedAt: t0, InjectedAt: t0.Add(time.Second), DetectedAt: t0.Add(time.Minute)}))
	require.NoError(t, l.OpenSession(ctx, workflow.Session{ID: "s1", Actor: "ana", Command: "plan", ReleaseID: "web-prod-0000001", StartedAt: t0}))
	lines := sealedLines(t, "ana", 2)
	require.NoError(t, l.AppendJournal(ctx, "s1", lines))
	head := entryOf(t, lines[1])
	require.NoError(t, l.CloseSession(ctx, "s1", t0.Add(time.Minute)))
	self, err := l.LedgerIdentity(ctx)
	require.NoError(t, err)
	require.NoError(t, l.SealSession(ctx, audit.SessionSeal{SealedHead: audit.SealedHead{
		Head:      audit.SessionHead{Session: "s1", Actor: "ana", Command: "plan", Release: "web-prod-0000001", Ledger: self, Seq: 2, Hash: head.Hash, At: t0.Add(time.Minute)},
		Signature: approval.Signature{Armored: "sig", Key: "SHA256:k"},
	}}))
}

// reportsOf builds both reports of the whole of l as JSON, to compare.
func reportsOf(t *testing.T, l *Ledger) string {
	t.Helper()
	data, err := l.ReportData(t.Context(), report.Query{})
	require.NoError(t, err)
	o := report.Options{From: genFrom.Add(-time.Hour), To: genFrom.Add(100 * 24 * time.Hour), Now: genFrom.Add(100 * 24 * time.Hour), ProdEnv: "prod"}
	e, err := report.BuildEffort(data, o)
	require.NoError(t, err)
	m, err := report.BuildMeasures(data, o)
	require.NoError(t, err)
	b, err := json.Marshal([]any{e, m})
	require.NoError(t, err)
	return string(b)
}

// TestMigrateCopiesEveryTableBothWays: from SQLite to PostgreSQL and back,
// every table but the derived and the schema's own arrives whole (the
// duplicate approvals both, the sealed session as sealed), the effort
// summaries rebuilt by the target's trigger give the same reports, and a
// second run copies nothing.
func TestMigrateCopiesEveryTableBothWays(t *testing.T) {
	t.Parallel()
	for _, dir := range [][2]backend{{sqliteBackend, postgresBackend}, {postgresBackend, sqliteBackend}} {
		t.Run(dir[0].name+" to "+dir[1].name, func(t *testing.T) {
			t.Parallel()
			ctx := t.Context()
			from, to := dir[0].openNew(t), dir[1].openNew(t)
			fillHistory(t, from, 40, 7)

			rep, err := Migrate(ctx, from, to, MigrateOptions{})
			require.NoError(t, err)
			want := rowCounts(t, from)
			got := rowCounts(t, to)
			seen := map[string]bool{}
			for _, tm := range rep.Tables {
				seen[tm.Table] = true
				require.Equal(t, want[tm.Table], tm.Source, tm.Table)
				require.Equal(t, tm.Source, tm.Copied, tm.Table)
				require.Zero(t, tm.Present, tm.Table)
				require.Equal(t, want[tm.Table], got[tm.Table], tm.Table)
			}
			for _, s := range rep.Skipped {
				seen[s.Table] = true
			}
			for name := range want {
				require.True(t, seen[name], "table %s is copied or skipped with a reason", name)
			}
			require.Equal(t, 2, got["approvals"], "duplicates are kept")
			require.Equal(t, 1, got["rehearsals"], "rehearsals travel too")
			require.Len(t, rep.Releases, 40)
			require.Equal(t, []string{"s1"}, rep.Sessions)
			require.Equal(t, reportsOf(t, from), reportsOf(t, to))
			a, err := from.SessionSeal(ctx, "s1")
			require.NoError(t, err)
			b, err := to.SessionSeal(ctx, "s1")
			require.NoError(t, err)
			require.True(t, b.Sealed())
			require.Equal(t, a, b, "the sealed head names the source's ledger, as signed")
			fromID, err := from.LedgerIdentity(ctx)
			require.NoError(t, err)
			toID, err := to.LedgerIdentity(ctx)
			require.NoError(t, err)
			require.Equal(t, fromID, b.Head.Ledger)
			require.NotEqual(t, fromID, toID, "each ledger keeps its own identity")

			again, err := Migrate(ctx, from, to, MigrateOptions{})
			require.NoError(t, err)
			require.Zero(t, again.Copied())
			for _, tm := range again.Tables {
				require.Equal(t, tm.Source, tm.Present, tm.Table)
			}
			require.Equal(t, got, rowCounts(t, to), "the second run changed nothing")
		})
	}
}

// TestMigrateIntoATeamLedgerKeepsItsRows: the target's own releases,
// effort and approvals stay and the migrated ones join them under numbers
// the target assigns; a sighting of the same tag and digest is merged to
// span both; a dry run reports the same and writes nothing.
func TestMigrateIntoATeamLedgerKeepsItsRows(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	from, to := sqliteBackend.openNew(t), postgresBackend.openNew(t)
	fillHistory(t, from, 10, 3)
	other := workflow.NewRelease("api-prod-20261101-aaaaaa", "api", "prod", "registry.example.com/api:2", "carol", t0)
	require.NoError(t, to.SaveRelease(ctx, other))
	require.NoError(t, to.RecordEffort(ctx, []effort.Entry{{ReleaseID: other.ID, Person: "carol", Role: effort.RoleCaptain, Step: "plan-review", Kind: effort.Active, Duration: time.Minute, At: t0}}))
	require.NoError(t, to.RecordApproval(ctx, approval.Approval{Kind: approval.Plan, Subject: "fp-api", Env: "prod", Approver: "dan", At: t0}))
	var ref, dig string
	var at int64
	require.NoError(t, from.db.QueryRowContext(ctx, `SELECT reference, digest, at FROM sightings ORDER BY id LIMIT 1`).Scan(&ref, &dig, &at))
	d, err := image.ParseDigest(dig)
	require.NoError(t, err)
	earlier := time.Unix(0, at).Add(-time.Hour)
	_, err = to.RecordSighting(ctx, ref, d, earlier)
	require.NoError(t, err)
	before := rowCounts(t, to)
	src := rowCounts(t, from)

	dry, err := Migrate(ctx, from, to, MigrateOptions{DryRun: true})
	require.NoError(t, err)
	require.True(t, dry.DryRun)
	require.Equal(t, before, rowCounts(t, to), "a dry run writes nothing")

	rep, err := Migrate(ctx, from, to, MigrateOptions{})
	require.NoError(t, err)
	require.Equal(t, dry.Tables, rep.Tables, "the dry run said what would be done")
	after := rowCounts(t, to)
	for _, tm := range rep.Tables {
		switch tm.Table {
		case "sightings":
			require.Equal(t, 1, tm.Merged)
			require.Equal(t, before[tm.Table]+src[tm.Table]-1, after[tm.Table])
		default:
			require.Equal(t, before[tm.Table]+src[tm.Table], after[tm.Table], tm.Table)
		}
	}
	kept, err := to.LoadRelease(ctx, other.ID)
	require.NoError(t, err)
	require.Equal(t, "carol", kept.Captain)
	var first int64
	require.NoError(t, to.db.QueryRowContext(ctx, `SELECT at FROM sightings WHERE reference = ? AND digest = ?`, ref, dig).Scan(&first))
	require.Equal(t, earlier.UnixNano(), first, "seen first at the earlier of the two")

	again, err := Migrate(ctx, from, to, MigrateOptions{})
	require.NoError(t, err)
	require.Zero(t, again.Copied())
	require.Equal(t, after, rowCounts(t, to))
}

// TestMigrateRefusesAConflictAndWritesNothing: a release under the same
// ID with another body in the target is named, table and key, and not one
// row of the source is written; a ledger is not migrated into itself.
func TestMigrateRefusesAConflictAndWritesNothing(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, b backend) {
		ctx := t.Context()
		from := sqliteBackend.openNew(t)
		to := b.openNew(t)
		fillHistory(t, from, 5, 1)
		theirs := workflow.NewRelease("web-prod-0000002", "web", "prod", "registry.example.com/web:other", "carol", t0)
		require.NoError(t, to.SaveRelease(ctx, theirs))
		before := rowCounts(t, to)

		_, err := Migrate(ctx, from, to, MigrateOptions{})
		var ce *ConflictError
		require.ErrorAs(t, err, &ce)
		require.Equal(t, 1, ce.Total)
		require.Equal(t, "releases", ce.Conflicts[0].Table)
		require.Equal(t, "id=web-prod-0000002", ce.Conflicts[0].Key)
		require.Contains(t, ce.Conflicts[0].Differs, "body")
		require.ErrorContains(t, err, "releases id=web-prod-0000002")
		require.ErrorContains(t, err, "nothing was written")
		require.Equal(t, before, rowCounts(t, to))

		_, err = Migrate(ctx, from, from, MigrateOptions{})
		require.ErrorContains(t, err, "is both the source and the target")
		again := b.openAt(t, to.loc0(t))
		_, err = Migrate(ctx, to, again, MigrateOptions{})
		require.ErrorContains(t, err, "is both the source and the target", "two handles on one ledger")
	})
}

// loc0 is where l was opened, to open it again.
func (s *Ledger) loc0(t *testing.T) string {
	t.Helper()
	if s.path != "" {
		return s.path
	}
	p := s.d.(*postgresDialect)
	return fmt.Sprintf("postgres://%s:%s@%s:%d/%s", p.cfg.User, p.cfg.Password, p.cfg.Host, p.cfg.Port, p.cfg.Database)
}

// TestMigrateCopiesTablesAddedLater: a table a later migration adds is
// copied by the same code: found in the catalogue, copied after the
// table its foreign key points at (it sorts before it), a JSON column
// compared as JSON (PostgreSQL's JSONB rewrites it), and a table keyed by
// a number the database assigns matched on its other columns.
func TestMigrateCopiesTablesAddedLater(t *testing.T) {
	t.Parallel()
	ddl := map[string]string{
		"sqlite": `
CREATE TABLE attachments (
	release_id TEXT NOT NULL REFERENCES releases (id),
	n          INTEGER NOT NULL,
	meta       TEXT NOT NULL CHECK (json_valid(meta)),
	PRIMARY KEY (release_id, n)
) STRICT;
CREATE TABLE comments (id INTEGER PRIMARY KEY, release_id TEXT NOT NULL, text TEXT NOT NULL) STRICT;`,
		"postgres": `
CREATE TABLE attachments (
	release_id TEXT COLLATE "C" NOT NULL REFERENCES releases (id),
	n          BIGINT NOT NULL,
	meta       JSONB NOT NULL,
	PRIMARY KEY (release_id, n)
);
CREATE TABLE comments (id BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY, release_id TEXT NOT NULL, text TEXT NOT NULL);`,
	}
	for _, dir := range [][2]backend{{sqliteBackend, postgresBackend}, {postgresBackend, sqliteBackend}} {
		t.Run(dir[0].name+" to "+dir[1].name, func(t *testing.T) {
			t.Parallel()
			ctx := t.Context()
			from, to := dir[0].openNew(t), dir[1].openNew(t)
			for _, l := range []*Ledger{from, to} {
				_, err := l.db.DB.ExecContext(ctx, ddl[map[bool]string{true: "sqlite", false: "postgres"}[l.path != ""]])
				require.NoError(t, err)
			}
			r := workflow.NewRelease("web-prod-1", "web", "prod", "registry.example.com/web:1", "ana", t0)
			require.NoError(t, from.SaveRelease(ctx, r))
			_, err := from.db.ExecContext(ctx, `INSERT INTO attachments (release_id, n, meta) VALUES (?, 1, ?), (?, 2, ?)`,
				r.ID, `{"z": 1, "a": [1, 2]}`, r.ID, `{"name":"plan.txt"}`)
			require.NoError(t, err)
			_, err = from.db.ExecContext(ctx, `INSERT INTO comments (release_id, text) VALUES (?, 'go'), (?, 'go'), (?, 'done')`, r.ID, r.ID, r.ID)
			require.NoError(t, err)
			// The team's own comment, numbered 1 like the source's first.
			_, err = to.db.ExecContext(ctx, `INSERT INTO comments (release_id, text) VALUES ('api-1', 'theirs')`)
			require.NoError(t, err)

			rep, err := Migrate(ctx, from, to, MigrateOptions{})
			require.NoError(t, err)
			order := make([]string, 0, len(rep.Tables))
			for _, tm := range rep.Tables {
				order = append(order, tm.Table)
				switch tm.Table {
				case "attachments":
					require.Equal(t, TableMigration{Table: tm.Table, Source: 2, Copied: 2}, tm)
				case "comments":
					require.Equal(t, TableMigration{Table: tm.Table, Source: 3, Copied: 3}, tm)
				}
			}
			require.Less(t, slices.Index(order, "releases"), slices.Index(order, "attachments"), "parents first")
			var texts []string
			rows, err := to.db.QueryContext(ctx, `SELECT text FROM comments ORDER BY id`)
			require.NoError(t, err)
			for rows.Next() {
				var s string
				require.NoError(t, rows.Scan(&s))
				texts = append(texts, s)
			}
			require.NoError(t, rows.Err())
			require.Equal(t, []string{"theirs", "go", "go", "done"}, texts, "the team's row kept, the migrated ones numbered after it")

			again, err := Migrate(ctx, from, to, MigrateOptions{})
			require.NoError(t, err)
			require.Zero(t, again.Copied(), "JSON compared as JSON: %+v", again.Tables)
		})
	}
}

// TestMigrateMergesAnOpenFindingBothLedgersHave: the same ownership
// finding still open in both ledgers is one observation, open since the
// earlier of the two; another message for it is a conflict.
func TestMigrateMergesAnOpenFindingBothLedgersHave(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, b backend) {
		ctx := t.Context()
		from, to := sqliteBackend.openNew(t), b.openNew(t)
		if b.name == "sqlite" {
			from = postgresBackend.openNew(t)
		}
		f := finding.Finding{Severity: finding.Blocker, Code: "ownership.conflict", Subject: "Deployment web", Message: "two owners"}
		require.NoError(t, from.RecordFindings(ctx, "ownership/staging", t0, []finding.Finding{f}))
		require.NoError(t, to.RecordFindings(ctx, "ownership/staging", t0.Add(-time.Hour), []finding.Finding{f}))

		rep, err := Migrate(ctx, from, to, MigrateOptions{})
		require.NoError(t, err)
		for _, tm := range rep.Tables {
			if tm.Table == "findings" {
				require.Equal(t, TableMigration{Table: "findings", Source: 1, Merged: 1}, tm)
			}
		}
		rows := findingRows(t, to, "ownership/staging")
		require.Len(t, rows, 1)
		requireTimeEqual(t, t0.Add(-time.Hour), rows[0].first)
		requireTimeEqual(t, t0, rows[0].last)
		again, err := Migrate(ctx, from, to, MigrateOptions{})
		require.NoError(t, err)
		require.Zero(t, again.Copied())

		other := b.openNew(t)
		f.Message = "three owners"
		require.NoError(t, other.RecordFindings(ctx, "ownership/staging", t0, []finding.Finding{f}))
		_, err = Migrate(ctx, from, other, MigrateOptions{})
		require.ErrorContains(t, err, "findings scope=ownership/staging, code=ownership.conflict, subject=Deployment web (open) (message")
	})
}
