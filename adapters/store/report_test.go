package store

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"os/exec"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/relcap/relcap/workflow"
	"github.com/relcap/relcap/workflow/effort"
	"github.com/relcap/relcap/workflow/finding"
	"github.com/relcap/relcap/workflow/image"
	"github.com/relcap/relcap/workflow/ownership"
	"github.com/relcap/relcap/workflow/report"
	"github.com/relcap/relcap/workflow/tfplan"
)

var genFrom = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// genLedger fills l with n releases spread over 90 days from genFrom, in
// two environments, with about eight effort entries each, plans,
// convergences, sightings and findings, all in one transaction (a row at
// a time through the public API would take minutes for 100,000). It
// returns what it inserted, as the report would want it.
func genLedger(tb testing.TB, l *Ledger, n int, seed uint64) report.Data {
	tb.Helper()
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(seed, 9))
	var (
		data     report.Data
		releases []*workflow.Release
	)
	span := int64(90 * 24 * time.Hour)
	steps := []string{"ownership", "plan-review", "apply", "promotion", "convergence"}
	digestN := func(i int) image.Digest {
		d, err := image.ParseDigest(fmt.Sprintf("sha256:%064x", i))
		require.NoError(tb, err)
		return d
	}
	// Releases are written when they are created, so a real ledger's rows
	// (and their effort) are in creation order; so are these.
	times := make([]time.Time, n)
	for i := range times {
		times[i] = genFrom.Add(time.Duration(rng.Int64N(span))).Truncate(time.Millisecond)
	}
	slices.SortFunc(times, time.Time.Compare)
	for i := range n {
		created := times[i]
		env := []string{"staging", "prod"}[rng.IntN(2)]
		r := workflow.NewRelease(fmt.Sprintf("web-%s-%07d", env, i), "web", env, "registry.example.com/web:1."+fmt.Sprint(i), "cap"+fmt.Sprint(rng.IntN(5)), created)
		r.UpdatedAt = created.Add(time.Duration(rng.Int64N(int64(3 * time.Hour))))
		for j := range r.Steps {
			r.Steps[j].Status, r.Steps[j].StartedAt, r.Steps[j].EndedAt = workflow.Succeeded, created, r.UpdatedAt
		}
		switch x := rng.IntN(20); {
		case x < 15:
			r.Status, r.EndedAt = workflow.ReleaseConverged, r.UpdatedAt
		case x < 16:
			r.Status = workflow.ReleaseFailed
			r.Steps[2].Status, r.Steps[2].EndedAt = workflow.Failed, created.Add(time.Minute)
			r.Steps[3].Status, r.Steps[4].Status = workflow.Pending, workflow.Pending
		case x < 17:
			r.Status = workflow.ReleaseRolledBack
		case x < 18:
			r.Kind, r.RollbackOf = workflow.KindRollback, fmt.Sprintf("web-%s-%07d", env, max(i-1, 0))
			r.Status, r.EndedAt = workflow.ReleaseConverged, r.UpdatedAt
		case x < 19:
			r.Status = workflow.ReleaseInProgress
		default:
			r.Kind, r.Status, r.EndedAt = workflow.KindBreakGlass, workflow.ReleaseEnded, r.UpdatedAt
		}
		r.Checkpoints.Digest = digestN(i)
		data.Releases = append(data.Releases, report.FactOf(r))
		for _, s := range steps {
			data.Effort = append(data.Effort, effort.Entry{ReleaseID: r.ID, Person: r.Captain, Role: effort.RoleCaptain, Step: s,
				Kind: effort.Active, Duration: time.Duration(rng.Int64N(int64(15 * time.Minute))), At: r.UpdatedAt})
		}
		data.Effort = append(data.Effort,
			effort.Entry{ReleaseID: r.ID, Person: "appr" + fmt.Sprint(rng.IntN(3)), Role: effort.RoleApprover, Step: "plan-review",
				Kind: effort.Active, Duration: time.Duration(rng.Int64N(int64(20 * time.Minute))), At: r.UpdatedAt},
			effort.Entry{ReleaseID: r.ID, Step: "convergence", Kind: effort.Wait, Duration: time.Duration(rng.Int64N(int64(10 * time.Minute))), At: r.UpdatedAt},
			effort.Entry{ReleaseID: r.ID, Person: r.Captain, Role: effort.RoleCaptain, Step: effort.WholeRelease, Kind: effort.OffTool,
				Duration: time.Duration(rng.IntN(60)) * time.Minute, At: r.UpdatedAt.Add(time.Hour), Note: "go/no-go"})
		if r.Status == workflow.ReleaseConverged {
			data.Convergences = append(data.Convergences, workflow.ConvergenceRecord{ReleaseID: r.ID, App: "web", Env: env, Digest: digestN(i), Revision: "abc", At: r.EndedAt})
			data.Sightings = append(data.Sightings, workflow.Sighting{Reference: r.Image, Digest: digestN(i), At: created.Add(-time.Hour)})
		}
		p := report.PlanFact{Fingerprint: fmt.Sprintf("fp%07d", i), Env: env, CreatedAt: created.Add(-time.Duration(rng.Int64N(int64(2 * time.Hour))))}
		if rng.IntN(4) > 0 {
			p.AppliedAt = created.Add(time.Duration(rng.Int64N(int64(time.Hour))))
		}
		data.Plans = append(data.Plans, p)
		if i%50 == 0 {
			f := report.FindingFact{Scope: "ownership/" + env, Code: ownership.CodeConflict, Subject: fmt.Sprint(i), FirstSeen: created}
			if rng.IntN(3) > 0 {
				f.ResolvedAt = created.Add(time.Duration(rng.Int64N(int64(10 * 24 * time.Hour))))
			}
			data.Findings = append(data.Findings, f)
		}
		releases = append(releases, r)
	}
	require.NoError(tb, l.runTx(ctx, func(tx ledgerTx) error { return bulkInsert(ctx, tx, releases, data) }))
	return data
}

// bulkInsert writes a generated ledger with prepared statements in the
// caller's transaction.
func bulkInsert(ctx context.Context, tx ledgerTx, releases []*workflow.Release, data report.Data) error {
	prep := func(q string) (ledgerStmt, error) { return tx.PrepareContext(ctx, q) }
	// A ledger of an older schema (TestEffortSummaryBackfillAndTrigger)
	// gets the columns of version 1, and its migrations fill the rest
	// from the bodies.
	var version int
	if err := tx.QueryRowContext(ctx, `SELECT MAX(version) FROM schema_migrations`).Scan(&version); err != nil {
		return err
	}
	insertRelease, columnsOf := upsertRelease, releaseColumns
	if version < 15 {
		insertRelease = `INSERT INTO releases (id, app, env, status, kind, captain, created_at, updated_at, ended_at, body) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`
		columnsOf = func(r *workflow.Release) ([]any, error) {
			cols, err := releaseColumns(r)
			if err != nil {
				return nil, err
			}
			return append(cols[:9:9], cols[len(cols)-1]), nil
		}
	}
	rel, err := prep(insertRelease)
	if err != nil {
		return err
	}
	eff, err := prep(`INSERT INTO effort (release_id, person, role, step, kind, duration_ns, at, note) VALUES (?, ?, ?, ?, ?, ?, ?, ?)`)
	if err != nil {
		return err
	}
	conv, err := prep(`INSERT INTO convergences (release_id, app, env, digest, revision, at) VALUES (?, ?, ?, ?, ?, ?)`)
	if err != nil {
		return err
	}
	sight, err := prep(`INSERT INTO sightings (reference, digest, at, last_seen) VALUES (?, ?, ?, ?)`)
	if err != nil {
		return err
	}
	plan, err := prep(`INSERT INTO plans (fingerprint, env, author, created_at, applied_at, body) VALUES (?, ?, '', ?, ?, '{}')`)
	if err != nil {
		return err
	}
	find, err := prep(`INSERT INTO findings (scope, code, subject, severity, message, body, first_seen, last_seen, resolved_at) VALUES (?, ?, ?, 'blocker', 'conflict', '{}', ?, ?, ?)`)
	if err != nil {
		return err
	}
	for _, r := range releases {
		cols, err := columnsOf(r)
		if err != nil {
			return err
		}
		if _, err := rel.ExecContext(ctx, cols...); err != nil {
			return err
		}
	}
	for _, e := range data.Effort {
		if _, err := eff.ExecContext(ctx, e.ReleaseID, e.Person, e.Role, e.Step, string(e.Kind), int64(e.Duration), e.At.UnixNano(), e.Note); err != nil {
			return err
		}
	}
	for _, c := range data.Convergences {
		if _, err := conv.ExecContext(ctx, c.ReleaseID, c.App, c.Env, c.Digest.String(), c.Revision, c.At.UnixNano()); err != nil {
			return err
		}
	}
	for _, s := range data.Sightings {
		if _, err := sight.ExecContext(ctx, s.Reference, s.Digest.String(), s.At.UnixNano(), s.At.UnixNano()); err != nil {
			return err
		}
	}
	for _, p := range data.Plans {
		applied, _ := timeValue(p.AppliedAt)
		if _, err := plan.ExecContext(ctx, p.Fingerprint, p.Env, p.CreatedAt.UnixNano(), applied); err != nil {
			return err
		}
	}
	for _, f := range data.Findings {
		resolved, _ := timeValue(f.ResolvedAt)
		if _, err := find.ExecContext(ctx, f.Scope, f.Code, f.Subject, f.FirstSeen.UnixNano(), f.FirstSeen.UnixNano(), resolved); err != nil {
			return err
		}
	}
	return nil
}

func openGenerated(tb testing.TB, b backend, n int, seed uint64) (*Ledger, report.Data) {
	tb.Helper()
	l := b.openNew(tb)
	return l, genLedger(tb, l, n, seed)
}

// TestReportDataReadsTheLedgerAsWritten: reports built from the ledger's
// bulk reads equal reports built from the records that were written, for
// the whole ledger, a period inside it, one environment and one person.
func TestReportDataReadsTheLedgerAsWritten(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, b backend) {
		l, data := openGenerated(t, b, 2000, 1)
		now := genFrom.AddDate(0, 6, 0)
		for name, q := range map[string]report.Query{
			"all":          {From: genFrom, To: genFrom.AddDate(0, 3, 0)},
			"february":     {From: genFrom.AddDate(0, 1, 0), To: genFrom.AddDate(0, 2, 0)},
			"prod":         {Env: "prod", From: genFrom.AddDate(0, 0, 10), To: genFrom.AddDate(0, 0, 50)},
			"one person":   {Person: "cap3", From: genFrom, To: genFrom.AddDate(0, 3, 0)},
			"app filtered": {App: "web", From: genFrom, To: genFrom.AddDate(0, 3, 0)},
		} {
			t.Run(name, func(t *testing.T) {
				t.Parallel()
				got, err := l.ReportData(t.Context(), q)
				require.NoError(t, err)
				o := report.Options{From: q.From, To: q.To, Env: q.Env, Person: q.Person, Now: now, BaselineHoursPerRelease: 2, ProdEnv: "prod"}
				wantE, err := report.BuildEffort(data, o)
				require.NoError(t, err)
				gotE, err := report.BuildEffort(got, o)
				require.NoError(t, err)
				require.Equal(t, wantE, gotE)
				require.NotZero(t, gotE.Counts.Total)
				if q.Person != "" {
					return // measures have no per-person view
				}
				wantM, err := report.BuildMeasures(data, o)
				require.NoError(t, err)
				gotM, err := report.BuildMeasures(got, o)
				require.NoError(t, err)
				require.Equal(t, wantM, gotM)
				require.NotZero(t, gotM.PlanLeadTime.Count)
				require.NotZero(t, gotM.Recovery.Count+gotM.Unrecovered)
			})
		}
		got, err := l.ReportData(t.Context(), report.Query{App: "other", From: genFrom, To: now})
		require.NoError(t, err)
		require.Empty(t, got.Releases)
		require.Empty(t, got.Effort)
	})
}

// TestReportDataReadsWhatTheServiceSaves goes through the ledger's own
// write path, so a change to how releases are saved cannot silently break
// the report's reads of columns and JSON.
func TestReportDataReadsWhatTheServiceSaves(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, b backend) {
		l := b.openNew(t)
		ctx := t.Context()
		r := workflow.NewRelease("r1", "web", "prod", "img:1", "alice", t0)
		r.Status, r.UpdatedAt = workflow.ReleaseFailed, t0.Add(2*time.Hour)
		r.Step(workflow.StepApply).Status = workflow.Failed
		r.Step(workflow.StepApply).EndedAt = t0.Add(time.Hour)
		require.NoError(t, l.SaveRelease(ctx, r))
		rb := workflow.NewRelease("r2", "web", "prod", "img:0", "alice", t0.Add(3*time.Hour))
		rb.Kind, rb.RollbackOf, rb.Status = workflow.KindRollback, "r0", workflow.ReleaseConverged
		require.NoError(t, l.SaveRelease(ctx, rb))
		// A rehearsal's drill release, failed on purpose: no release of the
		// team's, so no report counts it.
		drill := workflow.NewRelease("r3", "web", "prod", "img:drill", "alice", t0.Add(5*time.Hour))
		drill.Status, drill.Checkpoints.Rehearsal = workflow.ReleaseFailed, "rh-web-prod-1"
		drill.Step(workflow.StepConvergence).Status = workflow.Failed
		require.NoError(t, l.SaveRelease(ctx, drill))
		require.NoError(t, l.RecordEffort(ctx, []effort.Entry{{ReleaseID: "r1", Person: "alice", Role: effort.RoleCaptain, Step: "apply", Kind: effort.Active, Duration: time.Minute, At: t0}}))
		require.NoError(t, l.RecordConvergence(ctx, workflow.ConvergenceRecord{ReleaseID: "r2", App: "web", Env: "prod", Digest: digest(t, 'a'), At: t0.Add(4 * time.Hour)}))
		_, err := l.RecordSighting(ctx, "img:0", digest(t, 'a'), t0.Add(-time.Hour))
		require.NoError(t, err)
		require.NoError(t, l.RecordFindings(ctx, "ownership/prod", t0, []finding.Finding{{Severity: finding.Blocker, Code: ownership.CodeConflict, Subject: "x"}}))
		require.NoError(t, l.SavePlan(ctx, tfplan.Summary{Env: "prod", Fingerprint: "fp", CreatedAt: t0}))
		require.NoError(t, l.MarkPlanApplied(ctx, "fp", t0.Add(time.Minute)))

		got, err := l.ReportData(ctx, report.Query{From: t0.Add(-time.Hour), To: t0.Add(24 * time.Hour)})
		require.NoError(t, err)
		require.Len(t, got.Releases, 2, "the drill release is left out")
		require.Equal(t, "r2", got.Releases[1].ID)
		require.Equal(t, "r0", got.Releases[1].RollbackOf)
		require.Empty(t, got.Releases[1].Steps, "converged releases' steps are not read")
		requireTimeEqual(t, t0.Add(time.Hour), report.FailureDetectedAt(got.Releases[0]))
		require.Len(t, got.Effort, 1)
		require.Len(t, got.Convergences, 1)
		require.Len(t, got.Sightings, 1)
		requireTimeEqual(t, t0.Add(-time.Hour), got.Sightings[0].At)
		require.Len(t, got.Findings, 1)
		require.Len(t, got.Plans, 1)
		requireTimeEqual(t, t0.Add(time.Minute), got.Plans[0].AppliedAt)
	})
}

// BenchmarkReport100k measures a report from a 100,000-release ledger
// (about 900,000 effort rows): the bulk reads plus both reports'
// computation (issue 9 budget: under 1 s), and each half apart. Besides
// wall time it reports CPU time per operation, the steadier figure on a
// shared machine.
func BenchmarkReport100k(b *testing.B) {
	file := sqliteBackend.newLocation(b)
	l := sqliteBackend.openAt(b, file)
	genLedger(b, l, 100_000, 100)
	ctx := context.Background()
	q := report.Query{From: genFrom, To: genFrom.AddDate(0, 3, 0)}
	o := report.Options{From: q.From, To: q.To, Now: genFrom.AddDate(0, 6, 0), BaselineHoursPerRelease: 3, ProdEnv: "prod"}
	read := func(b *testing.B) report.Data {
		data, err := l.ReportData(ctx, q)
		if err != nil {
			b.Fatal(err)
		}
		return data
	}
	compute := func(b *testing.B, data report.Data) {
		e, err := report.BuildEffort(data, o)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := report.BuildMeasures(data, o); err != nil {
			b.Fatal(err)
		}
		if e.Counts.Total < 90_000 {
			b.Fatalf("only %d releases counted", e.Counts.Total)
		}
	}
	b.Run("effort-report", func(b *testing.B) {
		// relcap report effort: the releases and their effort only, and
		// the effort report; the budget is for this, under 1 s.
		eq := q
		eq.EffortOnly = true
		cpu := cpuTime()
		var worst time.Duration
		for b.Loop() {
			start := time.Now()
			data, err := l.ReportData(ctx, eq)
			if err != nil {
				b.Fatal(err)
			}
			e, err := report.BuildEffort(data, o)
			if err != nil {
				b.Fatal(err)
			}
			if e.Counts.Total < 90_000 {
				b.Fatalf("only %d releases counted", e.Counts.Total)
			}
			worst = max(worst, time.Since(start))
		}
		b.ReportMetric(float64((cpuTime()-cpu).Milliseconds())/float64(b.N), "cpu-ms/op")
		b.ReportMetric(float64(worst.Milliseconds()), "worst-ms")
	})
	b.Run("sqlite3-floor", func(b *testing.B) {
		// The floor: the effort report's queries, as ReportData sends
		// them, run by the sqlite3 command-line program (SQLite in C) on
		// the same ledger file, its rows written to a pipe we discard.
		// The effort report cannot be faster than its own queries.
		sqlite3, err := exec.LookPath("sqlite3")
		if err != nil {
			b.Fatal("sqlite3 is not installed: apt-get install sqlite3 (make bench does), the floor this benchmark compares with")
		}
		from, _ := timeValue(q.From)
		to, _ := timeValue(q.To)
		sel, sandbox := reportSelection(q, from, to, false), reportSelection(q, from, to, true)
		script := strings.Join([]string{
			"SELECT id, person, role, step, kind FROM effort_keys",
			inlineArgs(b, "SELECT count(*) FROM releases r"+sel.where(), sel.args),
			inlineArgs(b, releaseFactsSQL(sel.where()), sel.args),
			inlineArgs(b, effortSumsSQL(sel.where()), sel.args),
			inlineArgs(b, "SELECT count(*) FROM releases r"+sandbox.where(), sandbox.args),
		}, ";\n") + ";\n"
		cpu := childCPUTime()
		var worst time.Duration
		rows := 0
		for b.Loop() {
			start := time.Now()
			cmd := exec.Command(sqlite3, "-readonly", "-batch", file)
			cmd.Stdin = strings.NewReader(script)
			out, err := cmd.Output()
			if err != nil {
				b.Fatalf("sqlite3: %v", err)
			}
			rows = bytes.Count(out, []byte("\n"))
			worst = max(worst, time.Since(start))
		}
		if rows < 180_000 {
			b.Fatalf("sqlite3 printed only %d rows", rows)
		}
		b.ReportMetric(float64((childCPUTime()-cpu).Milliseconds())/float64(b.N), "cpu-ms/op")
		b.ReportMetric(float64(worst.Milliseconds()), "worst-ms")
	})
	b.Run("read+compute", func(b *testing.B) {
		cpu := cpuTime()
		for b.Loop() {
			compute(b, read(b))
		}
		b.ReportMetric(float64((cpuTime()-cpu).Milliseconds())/float64(b.N), "cpu-ms/op")
	})
	b.Run("read", func(b *testing.B) {
		cpu := cpuTime()
		for b.Loop() {
			read(b)
		}
		b.ReportMetric(float64((cpuTime()-cpu).Milliseconds())/float64(b.N), "cpu-ms/op")
	})
	b.Run("compute", func(b *testing.B) {
		data := read(b)
		cpu := cpuTime()
		for b.Loop() {
			compute(b, data)
		}
		b.ReportMetric(float64((cpuTime()-cpu).Milliseconds())/float64(b.N), "cpu-ms/op")
	})
}

// inlineArgs writes args into query's placeholders as SQL literals, for
// the sqlite3 program, which takes no bound parameters from a script.
func inlineArgs(tb testing.TB, query string, args []any) string {
	tb.Helper()
	parts := strings.Split(query, "?")
	if len(parts) != len(args)+1 {
		tb.Fatalf("%d placeholders for %d arguments in %s", len(parts)-1, len(args), query)
	}
	var sb strings.Builder
	for i, a := range args {
		sb.WriteString(parts[i])
		switch v := a.(type) {
		case string:
			sb.WriteString("'" + strings.ReplaceAll(v, "'", "''") + "'")
		case int, int64:
			fmt.Fprint(&sb, v)
		default:
			tb.Fatalf("argument %d is a %T: no SQL literal for it", i, a)
		}
	}
	sb.WriteString(parts[len(args)])
	return sb.String()
}

// childCPUTime is the user plus system CPU time of the child processes
// waited for so far.
func childCPUTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_CHILDREN, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// cpuTime is the process's user plus system CPU time so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// TestEffortSummaryBackfillAndTrigger: a ledger written before the effort
// summary existed (schema version 1) gets its sums from migration 2, and
// effort recorded afterwards is added to them by the trigger, repeated
// keys summed; the reports equal those built from the records.
func TestEffortSummaryBackfillAndTrigger(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, b backend) {
		ctx := t.Context()
		loc := b.newLocation(t)
		old, err := b.open(ctx, loc, func(o *options) { o.schemaVersion = 1 })
		require.NoError(t, err)
		var v int
		require.NoError(t, old.db.QueryRowContext(ctx, `SELECT MAX(version) FROM schema_migrations`).Scan(&v))
		require.Equal(t, 1, v, "a ledger of schema version 1")
		data := genLedger(t, old, 300, 7)
		require.NoError(t, old.Close())

		l := b.openAt(t, loc)
		// More effort against the same releases and keys, and a new key.
		var more []effort.Entry
		for i, e := range data.Effort[:200] {
			e.Duration = time.Duration(i) * time.Second
			e.Note = ""
			if i%7 == 0 {
				e.Person, e.Role = "newcomer", effort.RoleApprover
				if e.Kind == effort.Wait {
					e.Kind = effort.Active
				}
			}
			more = append(more, e)
		}
		require.NoError(t, l.RecordEffort(ctx, more))
		data.Effort = append(data.Effort, more...)

		now := genFrom.AddDate(0, 6, 0)
		for _, q := range []report.Query{
			{From: genFrom, To: genFrom.AddDate(0, 3, 0)},
			{Person: "newcomer", From: genFrom, To: genFrom.AddDate(0, 3, 0)},
		} {
			got, err := l.ReportData(ctx, q)
			require.NoError(t, err)
			o := report.Options{From: q.From, To: q.To, Person: q.Person, Now: now, BaselineHoursPerRelease: 2, ProdEnv: "prod"}
			want, err := report.BuildEffort(data, o)
			require.NoError(t, err)
			gotE, err := report.BuildEffort(got, o)
			require.NoError(t, err)
			require.Equal(t, want, gotE)
			require.NotZero(t, gotE.Counts.Total)
			if q.Person == "" {
				// The failed steps and rollbacks migration 15 took out of
				// the bodies give the same measures as the records.
				wantM, err := report.BuildMeasures(data, o)
				require.NoError(t, err)
				gotM, err := report.BuildMeasures(got, o)
				require.NoError(t, err)
				require.Equal(t, wantM, gotM)
				require.NotZero(t, gotM.DORA.ChangeFailRate.FailedConvergence, "failed steps read from the migrated columns")
			}
		}
		// Effort is append-only: the sums could not follow a change.
		_, err = l.db.ExecContext(ctx, `UPDATE effort SET duration_ns = 0`)
		require.ErrorContains(t, err, "append-only")
		_, err = l.db.ExecContext(ctx, `DELETE FROM effort`)
		require.ErrorContains(t, err, "append-only")
	})
}

// TestParseSums: the fast reader takes what SQLite and PostgreSQL write and
// hands anything else to encoding/json.
func TestParseSums(t *testing.T) {
	t.Parallel()
	keys := []effortKey{{}, {person: "a", kind: effort.Active}, {person: "b", kind: effort.OffTool, skip: true}, {kind: effort.Wait}}
	for in, want := range map[string][]int64{
		`{}`:                          nil,
		`{"1":5}`:                     {1, 5},
		`{"1":5,"2":6,"3":7}`:         {1, 5, 3, 7},
		`{ "3" : 7 }`:                 {3, 7},
		`{"1":12345678901234567890}`:  nil, // too big for int64: error
		`{"1":5,}`:                    nil,
		`{"9":1}`:                     nil, // unknown key: error
		`{"1":1234567890123456789}`:   {1, 1234567890123456789},
		`{"1":123456789012345678}`:    {1, 123456789012345678},
		`{"1":0,"3":100000000000000}`: {1, 0, 3, 100000000000000},
		`{"1": 5, "2": 6, "3": 7}`:    {1, 5, 3, 7}, // PostgreSQL's jsonb
		`{"1": 5, }`:                  nil,
		`{"1": 5,}`:                   nil,
		`{"1":  5}`:                   {1, 5}, // two spaces: encoding/json reads it
	} {
		got, err := appendSums(nil, []byte(in), keys)
		if want == nil && in != `{}` {
			require.Error(t, err, in)
			continue
		}
		require.NoError(t, err, in)
		require.Equal(t, want, got, in)
	}
	// PostgreSQL's shape is read without encoding/json too.
	got, ok := parseSums(nil, []byte(`{"1": 900000000000, "4": 60000000000}`))
	require.True(t, ok)
	require.Equal(t, []int64{1, 900000000000, 4, 60000000000}, got)
}

// TestMigration12BackfillsTheRehearsalColumn: releases saved before
// schema 12 get the column reports filter drill releases by, from their
// bodies, on both databases.
func TestMigration12BackfillsTheRehearsalColumn(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, b backend) {
		ctx := t.Context()
		l := b.openNew(t)
		drill := workflow.NewRelease("r1", "web", "staging", "img:drill", "alice", t0)
		drill.Checkpoints.Rehearsal = "rh-web-staging-1"
		require.NoError(t, l.SaveRelease(ctx, drill))
		require.NoError(t, l.SaveRelease(ctx, workflow.NewRelease("r2", "web", "staging", "img:1", "alice", t0)))
		_, err := l.db.ExecContext(ctx, `UPDATE releases SET rehearsal = ''`) // as saved before schema 12
		require.NoError(t, err)

		m := migrations[11]
		require.Equal(t, 12, m.version)
		var backfill string
		for _, line := range strings.Split(l.d.migrationSQL(m), "\n") {
			if strings.HasPrefix(line, "UPDATE releases") {
				backfill = line
			}
		}
		require.NotEmpty(t, backfill)
		_, err = l.db.ExecContext(ctx, backfill)
		require.NoError(t, err)
		got := map[string]string{}
		rows, err := l.db.QueryContext(ctx, `SELECT id, rehearsal FROM releases`)
		require.NoError(t, err)
		defer rows.Close()
		for rows.Next() {
			var id, rh string
			require.NoError(t, rows.Scan(&id, &rh))
			got[id] = rh
		}
		require.NoError(t, rows.Err())
		require.Equal(t, map[string]string{"r1": "rh-web-staging-1", "r2": ""}, got)
	})
}
