package store

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/relcap/relcap/adapters/store/pgtest"
	"github.com/relcap/relcap/workflow"
	"github.com/relcap/relcap/workflow/approval"
	"github.com/relcap/relcap/workflow/effort"
	"github.com/relcap/relcap/workflow/fault"
	"github.com/relcap/relcap/workflow/journal"
	"github.com/relcap/relcap/workflow/report"
	"github.com/relcap/relcap/workflow/secret"
	"github.com/relcap/relcap/workflow/tfplan"
)

// TestPostgresChangeFeedWithinASecond: an approval recorded through one
// handle (a teammate's relcap approve) reaches the ChangeFeed of another
// (the captain's cockpit) within a second, every time; so do releases and
// plans. A transaction that rolls back signals nothing: the NOTIFY is part
// of the write's transaction.
func TestPostgresChangeFeedWithinASecond(t *testing.T) {
	t.Parallel()
	loc := pgtest.Database(t)
	cockpit := postgresBackend.openAt(t, loc)
	teammate := postgresBackend.openAt(t, loc)
	ctx := t.Context()
	changes := cockpit.Changes(ctx)

	// await measures from before the write: the write's own round trips
	// count against the second.
	await := func(what string, start time.Time) time.Duration {
		t.Helper()
		select {
		case <-changes:
			return time.Since(start)
		case <-time.After(time.Second - time.Since(start)):
			t.Fatalf("%s was not signalled within a second", what)
			return 0
		}
	}
	quiet := func(what string) {
		t.Helper()
		select {
		case <-changes:
			t.Fatalf("signalled after %s", what)
		case <-time.After(300 * time.Millisecond):
		}
	}

	quiet("nothing changed")
	var worst time.Duration
	for i := range 5 {
		start := time.Now()
		require.NoError(t, teammate.RecordApproval(ctx, approval.Approval{
			Kind: approval.Plan, Subject: fmt.Sprintf("fp%d", i), Env: "staging", Approver: "bob", At: time.Now()}))
		worst = max(worst, await(fmt.Sprintf("approval %d", i), start))
	}
	t.Logf("slowest of 5 approvals, from the write's start to the signal: %s", worst)

	start := time.Now()
	require.NoError(t, teammate.SaveRelease(ctx, workflow.NewRelease("r1", "web", "staging", "img", "ana", t0)))
	await("a saved release", start)
	start = time.Now()
	require.NoError(t, teammate.SavePlan(ctx, tfplan.Summary{Env: "staging", Fingerprint: "fp9"}))
	await("a saved plan", start)
	start = time.Now()
	require.NoError(t, teammate.MarkPlanApplied(ctx, "fp9", t0))
	await("a plan marked applied", start)

	err := teammate.inTx(ctx, "test", func(tx ledgerTx) error {
		if err := tx.notify(ctx, "approvals"); err != nil {
			return err
		}
		return errors.New("changed my mind")
	})
	require.Error(t, err)
	quiet("a rolled-back transaction")
}

// TestPostgresChangeFeedReconnects: the feed's connection is ended by the
// server (a restart, a DBA's pg_terminate_backend); the feed connects
// again, says something may have changed meanwhile, and signals the next
// approval as before.
func TestPostgresChangeFeedReconnects(t *testing.T) {
	t.Parallel()
	loc := pgtest.Database(t)
	cockpit := postgresBackend.openAt(t, loc)
	teammate := postgresBackend.openAt(t, loc)
	ctx := t.Context()
	changes := cockpit.Changes(ctx)

	var ended bool
	require.NoError(t, teammate.db.QueryRowContext(ctx, `
SELECT pg_terminate_backend(pid) FROM pg_stat_activity
WHERE datname = current_database() AND query = 'LISTEN `+changeChannel+`'`).Scan(&ended))
	require.True(t, ended)
	select {
	case <-changes:
	case <-time.After(10 * time.Second):
		t.Fatal("no signal after the feed's connection was ended")
	}
	require.NoError(t, teammate.RecordApproval(ctx, approval.Approval{
		Kind: approval.Plan, Subject: "fp", Env: "staging", Approver: "bob", At: time.Now()}))
	select {
	case <-changes:
	case <-time.After(time.Second):
		t.Fatal("an approval after the reconnect was not signalled within a second")
	}
}

// TestPostgresEffortKeysAreNumberedOnce: effort recorded again and again
// under the same person, role, step and kind keeps one key number, so the
// summary's key numbers stay small (readEffortKeys indexes a slice by
// them); an upsert that numbered on every insert would exhaust them.
func TestPostgresEffortKeysAreNumberedOnce(t *testing.T) {
	t.Parallel()
	l := postgresBackend.openNew(t)
	ctx := t.Context()
	for i := range 20 {
		require.NoError(t, l.RecordEffort(ctx, []effort.Entry{
			{ReleaseID: "r1", Person: "ana", Step: "plan", Kind: effort.Active, Duration: time.Second, At: t0.Add(time.Duration(i))},
			{ReleaseID: "r2", Person: "bo", Step: "plan", Kind: effort.Active, Duration: time.Second, At: t0.Add(time.Duration(i))},
		}))
	}
	var n, top int
	require.NoError(t, l.db.QueryRowContext(ctx, `SELECT count(*), max(id) FROM effort_keys`).Scan(&n, &top))
	require.Equal(t, 2, n)
	require.Equal(t, 2, top)
}

// TestPostgresEffortCannotBeTruncated: TRUNCATE skips row triggers, so it
// has one of its own; effort stays append-only.
func TestPostgresEffortCannotBeTruncated(t *testing.T) {
	t.Parallel()
	l := postgresBackend.openNew(t)
	ctx := t.Context()
	require.NoError(t, l.RecordEffort(ctx, []effort.Entry{{ReleaseID: "r1", Person: "ana", Step: "plan", Kind: effort.Active, Duration: time.Second, At: t0}}))
	_, err := l.db.ExecContext(ctx, `TRUNCATE effort`)
	require.ErrorContains(t, err, "effort is append-only: entries are never deleted")
	got, err := l.Effort(ctx, "r1")
	require.NoError(t, err)
	require.Len(t, got, 1)
}

// TestOpenPostgresExplainsWhatIsWrong: every way a URL can fail gives a
// message that names the ledger (password masked), says what to do, and
// never shows the password; a URL that cannot be read is a usage error.
func TestOpenPostgresExplainsWhatIsWrong(t *testing.T) {
	t.Parallel()
	server, err := url.Parse(pgtest.Server(t))
	require.NoError(t, err)
	const pw = "hunter2-pg-secret"
	withPassword := func(u url.URL, db string) string {
		u.User = url.UserPassword(u.User.Username(), pw)
		u.Path = "/" + db
		return u.String()
	}
	closed, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	closedPort := closed.Addr().(*net.TCPAddr).Port
	require.NoError(t, closed.Close())

	for _, tc := range []struct {
		name  string
		url   string
		usage bool
		want  []string
	}{
		{"not a URL", "postgres://relcap:" + pw + "@db:5432/%zz", true, []string{"postgres://xxxxx@db:5432/%zz", "is not a URL", "postgres://USER@HOST:PORT/DATABASE"}},
		{"bad port", "postgres://relcap:" + pw + "@db:notaport/relcap", true, []string{"postgres://", "xxxxx", "postgres://USER@HOST:PORT/DATABASE"}},
		{"bad parameter", "postgres://relcap:" + pw + "@db/relcap?sslmode=sometimes", true, []string{"postgres://relcap:xxxxx@db/relcap?sslmode=sometimes", "sslmode"}},
		{"password parameter", "postgres://relcap@db/relcap?sslmode=sometimes&password=" + pw, true, []string{"password=xxxxx"}},
		{"not postgres", "mysql://relcap:" + pw + "@db/relcap", true, []string{"is not a postgres:// or postgresql:// URL"}},
		{"nobody listening", fmt.Sprintf("postgres://relcap:%s@127.0.0.1:%d/relcap", pw, closedPort), false,
			[]string{fmt.Sprintf("ledger postgres://relcap:xxxxx@127.0.0.1:%d/relcap: cannot reach the PostgreSQL server at 127.0.0.1:%d", closedPort, closedPort), "connection refused", "check the host and port"}},
		{"wrong password", withPassword(*server, "postgres"), false, []string{"refused user " + server.User.Username(), "check the user and password", "xxxxx"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			set := secret.NewSet()
			l, err := OpenPostgres(t.Context(), tc.url, WithSecrets(set))
			require.Error(t, err)
			require.Nil(t, l)
			msg := err.Error()
			require.NotContains(t, msg, pw)
			require.Equal(t, tc.usage, errors.Is(err, fault.ErrUsage), msg)
			for _, w := range tc.want {
				require.Contains(t, msg, w)
			}
			require.True(t, set.Contains(pw), "the password joins the process's secrets")
		})
	}

	// The right password, a database that does not exist.
	missing := *server
	missing.Path = "/relcap_missing"
	_, err = OpenPostgres(t.Context(), missing.String())
	require.Error(t, err)
	require.Contains(t, err.Error(), "database relcap_missing does not exist on 127.0.0.1:")
	require.Contains(t, err.Error(), "create it (createdb")
	sp, _ := server.User.Password()
	require.NotContains(t, err.Error(), sp)
}

// TestOpenPostgresAddsItsPasswordToTheSecrets: whatever the ledger's
// password, it is masked in everything the process writes afterwards.
func TestOpenPostgresAddsItsPasswordToTheSecrets(t *testing.T) {
	t.Parallel()
	loc := pgtest.Database(t)
	u, err := url.Parse(loc)
	require.NoError(t, err)
	pw, _ := u.User.Password()
	set := secret.NewSet()
	l := postgresBackend.openAt(t, loc, WithSecrets(set))
	require.True(t, set.Contains(pw))
	require.NotContains(t, l.Location(), pw)
	require.Contains(t, l.Location(), ":xxxxx@")
	require.Empty(t, l.Path())
}

// TestConcurrentWritersKeepHeadsAndCounts: several handles (processes)
// write one ledger at once: journals appending entries, effort batches,
// approvals. Every journal verifies against its head, every count is the
// number written, and the effort summary equals the sum of the entries.
// Several writers racing to move one head from the same entry: exactly one
// wins.
func TestConcurrentWritersKeepHeadsAndCounts(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, b backend) {
		ctx := t.Context()
		loc := b.newLocation(t)
		const handles, journalsPer, entries, batches = 4, 2, 20, 10
		ls := make([]*Ledger, handles)
		for i := range ls {
			ls[i] = b.openAt(t, loc)
		}
		for _, id := range []string{"r1", "r2", "r3"} {
			require.NoError(t, ls[0].SaveRelease(ctx, workflow.NewRelease(id, "web", "prod", "img", "ana", t0)))
		}
		dir := t.TempDir()
		var (
			wg       sync.WaitGroup
			mu       sync.Mutex
			journals []*FileJournal
			errs     []error
		)
		fail := func(err error) {
			mu.Lock()
			defer mu.Unlock()
			errs = append(errs, err)
		}
		for h, l := range ls {
			for j := range journalsPer {
				wg.Go(func() {
					jr, err := OpenSession(ctx, l, dir, workflow.Session{Actor: fmt.Sprintf("p%d", h), Command: "load"}, &stepClock{t: t0})
					if err != nil {
						fail(err)
						return
					}
					mu.Lock()
					journals = append(journals, jr)
					mu.Unlock()
					for n := range entries {
						if _, err := jr.Append(ctx, testRecord{kind: "tick", N: n}); err != nil {
							fail(err)
						}
					}
				})
				wg.Go(func() {
					for n := range batches {
						batch := []effort.Entry{
							{ReleaseID: "r1", Person: fmt.Sprintf("p%d", h), Step: "plan", Kind: effort.Active, Duration: time.Duration(n+1) * time.Second, At: t0},
							{ReleaseID: fmt.Sprintf("r%d", 2+j), Person: "shared", Step: "apply", Kind: effort.Wait, Duration: time.Second, At: t0},
						}
						if err := l.RecordEffort(ctx, batch); err != nil {
							fail(err)
						}
						if err := l.RecordApproval(ctx, approval.Approval{Kind: approval.Plan, Subject: "fp", Approver: fmt.Sprintf("p%d", h), At: t0}); err != nil {
							fail(err)
						}
					}
				})
			}
		}
		wg.Wait()
		require.Empty(t, errs)
		require.Len(t, journals, handles*journalsPer)
		for _, jr := range journals {
			lines, err := ReadJournal(jr.Path())
			require.NoError(t, err)
			head, err := ls[0].JournalHead(ctx, jr.SessionID())
			require.NoError(t, err)
			n, problem := journal.Verify(lines, head)
			require.Nil(t, problem)
			require.Equal(t, int64(entries), n)
			require.NoError(t, jr.Close(ctx))
		}
		sessions, err := ls[1].Sessions(ctx)
		require.NoError(t, err)
		require.Len(t, sessions, handles*journalsPer)

		var want time.Duration
		for n := range batches {
			want += time.Duration(n+1) * time.Second
		}
		got, err := ls[2].Effort(ctx, "r1")
		require.NoError(t, err)
		require.Len(t, got, handles*journalsPer*batches)
		approvals, err := ls[3].Approvals(ctx, approval.Plan, "fp")
		require.NoError(t, err)
		require.Len(t, approvals, handles*journalsPer*batches)
		data, err := ls[0].ReportData(ctx, report.Query{From: t0.Add(-time.Hour), To: t0.Add(time.Hour), EffortOnly: true})
		require.NoError(t, err)
		sums := map[string]time.Duration{}
		for _, e := range data.Effort {
			sums[e.ReleaseID+"/"+e.Person] += e.Duration
		}
		for h := range handles {
			require.Equal(t, journalsPer*want, sums[fmt.Sprintf("r1/p%d", h)], "the summary of p%d's effort", h)
		}
		require.Equal(t, time.Duration(handles*batches)*time.Second, sums["r2/shared"])

		// One head, many writers moving it from the same place.
		require.NoError(t, ls[0].OpenSession(ctx, workflow.Session{ID: "race", Actor: "ana", StartedAt: t0}))
		var won, lost int
		var count sync.Mutex
		for i := range 8 {
			wg.Go(func() {
				err := ls[i%handles].AppendJournal(ctx, "race", sealedLines(t, fmt.Sprintf("p%d", i), 1))
				count.Lock()
				defer count.Unlock()
				if err == nil {
					won++
				} else {
					require.True(t, strings.Contains(err.Error(), "refusing another entry 1"), err.Error())
					lost++
				}
			})
		}
		wg.Wait()
		require.Equal(t, 1, won, "exactly one writer moves the head")
		require.Equal(t, 7, lost)
	})
}

func TestRedactURL(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"postgres://relcap:s3cret@db.internal:5432/relcap":           "postgres://relcap:xxxxx@db.internal:5432/relcap",
		"postgresql://relcap@db/relcap":                              "postgresql://relcap@db/relcap",
		"postgres://db/relcap?sslmode=require&password=s3cret":       "postgres://db/relcap?password=xxxxx&sslmode=require",
		"postgres://relcap:s3cret@db:5432/%zz":                       "postgres://xxxxx@db:5432/%zz",
		"postgres://relcap:s3c@ret@db/relcap":                        "postgres://relcap:xxxxx@db/relcap",
		"/var/lib/relcap/ledger.db":                                  "/var/lib/relcap/ledger.db",
		"postgres://relcap:p%40ss@[::1]:5432/relcap?sslmode=disable": "postgres://relcap:xxxxx@[::1]:5432/relcap?sslmode=disable",
	} {
		require.Equal(t, want, secret.RedactURL(in), in)
	}
	require.Contains(t, secret.URLCredentials("postgres://relcap:p%40ss@db/relcap"), "p@ss")
	require.Contains(t, secret.URLCredentials("postgres://db/relcap?password=s3cret"), "s3cret")
	require.Empty(t, secret.URLCredentials("postgres://relcap@db/relcap"))
	require.True(t, IsPostgresURL("PostgreSQL://db/x"))
	require.False(t, IsPostgresURL("mysql://db/x"))
	require.False(t, IsPostgresURL("./postgres"))
}

func TestRebindDollar(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"SELECT 1":                                  "SELECT 1",
		"a = ? AND b = ?":                           "a = $1 AND b = $2",
		"x = '?' AND y = ? -- why?\nAND z = ?":      "x = '?' AND y = $1 -- why?\nAND z = $2",
		`"odd?col" = ? AND w = 'it''s ?' AND v = ?`: `"odd?col" = $1 AND w = 'it''s ?' AND v = $2`,
		"LIMIT ?": "LIMIT $1",
		"VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)": "VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)",
	} {
		require.Equal(t, want, rebindDollar(in), in)
	}
}

// TestPostgresReportSnapshotsAgree: the report's two transactions see the
// same committed state even while another handle writes in between.
func TestPostgresReportSnapshotsAgree(t *testing.T) {
	t.Parallel()
	loc := pgtest.Database(t)
	l := postgresBackend.openAt(t, loc)
	writer := postgresBackend.openAt(t, loc)
	ctx := t.Context()
	require.NoError(t, writer.SaveRelease(ctx, workflow.NewRelease("r1", "web", "prod", "img", "ana", t0)))
	txs, err := l.readSnapshots(ctx, 2)
	require.NoError(t, err)
	defer func() {
		for _, tx := range txs {
			_ = tx.Rollback()
		}
	}()
	var before int
	require.NoError(t, txs[0].QueryRowContext(ctx, `SELECT count(*) FROM releases`).Scan(&before))
	require.NoError(t, writer.SaveRelease(ctx, workflow.NewRelease("r2", "web", "prod", "img", "ana", t0)))
	for _, tx := range txs {
		var n int
		require.NoError(t, tx.QueryRowContext(ctx, `SELECT count(*) FROM releases`).Scan(&n))
		require.Equal(t, before, n, "a release saved after the snapshot is not seen")
	}
	require.Equal(t, 1, before)
	var readOnly string
	require.NoError(t, txs[1].QueryRowContext(ctx, `SHOW transaction_read_only`).Scan(&readOnly))
	require.Equal(t, "on", readOnly)
}
