package main

import (
	"encoding/json"
	"net/url"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/relcap/relcap/adapters/store"
	"github.com/relcap/relcap/adapters/store/pgtest"
	"github.com/relcap/relcap/workflow"
	"github.com/relcap/relcap/workflow/approval"
)

// ledgerOutputs are what journal verify and the effort report print for
// the ledger named by --ledger.
func ledgerOutputs(t *testing.T, data, ledger string) (verify string, effort map[string]any) {
	t.Helper()
	code, verify, errOut := invokeEnv(t, data, nil, "--ledger", ledger, "journal", "verify")
	require.Equal(t, 0, code, errOut)
	code, doc, errOut := invokeEnv(t, data, nil, "--ledger", ledger, "report", "effort", "--from", "2020-01", "--format", "json")
	require.Equal(t, 0, code, errOut)
	return verify, comparableEffort(t, doc)
}

func migrate(t *testing.T, data string, args ...string) (int, string, string) {
	t.Helper()
	return invokeEnv(t, data, nil, append([]string{"ledger", "migrate"}, args...)...)
}

// TestLedgerMigrateMovesACaptainsHistoryIntoPostgres: the SQLite ledger
// of a real plan → approve → apply flow moves into PostgreSQL with
// every row; journal verify and the effort report say the same of both;
// the URL's password shows nowhere; a second run copies nothing and says
// so.
func TestLedgerMigrateMovesACaptainsHistoryIntoPostgres(t *testing.T) {
	t.Parallel()
	dbURL := pgtest.Database(t)
	u, err := url.Parse(dbURL)
	require.NoError(t, err)
	pw, _ := u.User.Password()
	_, _, data := ledgerFlow(t, nil)
	sqlitePath := filepath.Join(data, "relcap", "ledger.db")
	verifyBefore, effortBefore := ledgerOutputs(t, data, sqlitePath)

	code, out, errOut := migrate(t, data, "--from", "sqlite:"+sqlitePath, "--to", dbURL, "--dry-run")
	require.Equal(t, 0, code, out+errOut)
	require.Contains(t, out, "dry run: nothing was written")
	l, err := store.OpenPostgres(t.Context(), dbURL)
	require.NoError(t, err)
	defer l.Close()
	none, err := l.Sessions(t.Context())
	require.NoError(t, err)
	require.Empty(t, none, "a dry run writes nothing")

	code, out, errOut = migrate(t, data, "--from", "sqlite:"+sqlitePath, "--to", dbURL)
	require.Equal(t, 0, code, out+errOut)
	t.Logf("migrate:\n%s%s", out, errOut)
	require.NotContains(t, out+errOut, pw)
	require.Contains(t, out, "postgres://relcap:xxxxx@")
	require.Regexp(t, `(?m)^\s*releases\s+1\s+1\s+0\s+0$`, out)
	require.Regexp(t, `(?m)^\s*sessions\s+5\s+5\s+0\s+0$`, out)
	require.Regexp(t, `(?m)^\s*approvals\s+1\s+1\s+0\s+0$`, out)
	require.Contains(t, out, "not copied: effort_totals (derived")
	require.Contains(t, out, "journals: 5 of 5 sessions verify against")
	require.Contains(t, out, "(5 intact;")
	require.Contains(t, out, "effort: the report over the 1 migrated releases is the same on both")
	require.Contains(t, out, "\nverified\n")
	require.NotContains(t, errOut, "note:", "the default SQLite ledger's journals are where relcap reads a PostgreSQL ledger's")

	verifyAfter, effortAfter := ledgerOutputs(t, data, dbURL)
	require.Equal(t, verifyBefore, verifyAfter)
	require.Equal(t, effortBefore, effortAfter)
	require.Equal(t, float64(1500), effortAfter["off_tool_per_release"].(map[string]any)["total_seconds"], "bob's 25 minutes")

	code, out, errOut = migrate(t, data, "--json", "--from", sqlitePath, "--to", dbURL)
	require.Equal(t, 0, code, out+errOut)
	var res struct {
		Migration store.MigrateReport
		Verified  bool
	}
	require.NoError(t, json.Unmarshal([]byte(out), &res))
	require.True(t, res.Verified)
	require.Zero(t, res.Migration.Copied())
	for _, tm := range res.Migration.Tables {
		require.Equal(t, tm.Source, tm.Present, tm.Table)
	}
	code, out, errOut = migrate(t, data, "--from", sqlitePath, "--to", dbURL)
	require.Equal(t, 0, code, out+errOut)
	require.Contains(t, out, "copied 0 rows: every row of "+sqlitePath+" is already in postgres://relcap:xxxxx@")
	verifyAgain, effortAgain := ledgerOutputs(t, data, dbURL)
	require.Equal(t, verifyBefore, verifyAgain)
	require.Equal(t, effortBefore, effortAgain)
}

// TestLedgerMigrateIntoATeamStoreKeepsTheOtherCaptainsHistory: a team's
// PostgreSQL that already holds another captain's release keeps it, and
// gets the migrated one beside it; both captains' journals still verify.
func TestLedgerMigrateIntoATeamStoreKeepsTheOtherCaptainsHistory(t *testing.T) {
	t.Parallel()
	dbURL := pgtest.Database(t)
	_, _, teamData := ledgerFlow(t, nil, "--ledger", dbURL)
	_, _, data := ledgerFlow(t, nil)
	sqlitePath := filepath.Join(data, "relcap", "ledger.db")
	teamVerify, _ := ledgerOutputs(t, teamData, dbURL)

	code, out, errOut := migrate(t, teamData, "--from", sqlitePath, "--to", dbURL)
	require.Equal(t, 0, code, out+errOut)
	require.Contains(t, out, "\nverified\n")
	require.Contains(t, errOut, "note: the journals stay in "+filepath.Join(data, "relcap", "sessions"))

	l, err := store.OpenPostgres(t.Context(), dbURL)
	require.NoError(t, err)
	defer l.Close()
	releases, err := l.ListReleases(t.Context(), workflow.ReleaseFilter{})
	require.NoError(t, err)
	require.Len(t, releases, 2, "the team's and the migrated")
	sessions, err := l.Sessions(t.Context())
	require.NoError(t, err)
	require.Len(t, sessions, 10, "the apply refused as already applied records nothing, so has no session")
	code, verify, errOut := invokeEnv(t, teamData, nil, "--ledger", dbURL, "journal", "verify", sessionIDs.FindString(teamVerify))
	require.Equal(t, 0, code, verify+errOut)
	require.Equal(t, 10, strings.Count(teamVerify+strings.Repeat("ok ", 5), "ok "), "the team's five sessions verified before")
}

// TestLedgerMigrateRefusesAConflictingRelease: a release under the same
// ID with other content in the target is refused, naming the table and
// the key, and nothing is written; so is a ledger migrated into itself,
// and a source that does not exist.
func TestLedgerMigrateRefusesAConflictingRelease(t *testing.T) {
	t.Parallel()
	dbURL := pgtest.Database(t)
	_, _, data := ledgerFlow(t, nil)
	sqlitePath := filepath.Join(data, "relcap", "ledger.db")
	src, err := store.OpenSQLite(t.Context(), sqlitePath)
	require.NoError(t, err)
	mine, err := src.ListReleases(t.Context(), workflow.ReleaseFilter{})
	require.NoError(t, err)
	require.NoError(t, src.Close())
	require.Len(t, mine, 1)

	l, err := store.OpenPostgres(t.Context(), dbURL)
	require.NoError(t, err)
	defer l.Close()
	theirs := workflow.NewRelease(mine[0].ID, "web", "staging", "registry.example.com/web:other", "mallory", mine[0].CreatedAt)
	require.NoError(t, l.SaveRelease(t.Context(), theirs))

	code, out, errOut := migrate(t, data, "--from", sqlitePath, "--to", dbURL)
	require.Equal(t, exitError, code, out+errOut)
	require.Contains(t, errOut, "releases id="+mine[0].ID)
	require.Contains(t, errOut, "nothing was written")
	kept, err := l.LoadRelease(t.Context(), mine[0].ID)
	require.NoError(t, err)
	require.Equal(t, "mallory", kept.Captain)
	sessions, err := l.Sessions(t.Context())
	require.NoError(t, err)
	require.Empty(t, sessions, "not one row of the source")
	got, err := l.Approvals(t.Context(), approval.Plan, mine[0].Checkpoints.Fingerprint)
	require.NoError(t, err)
	require.Empty(t, got)

	code, _, errOut = migrate(t, data, "--from", sqlitePath, "--to", "sqlite:"+sqlitePath)
	require.Equal(t, exitUsage, code)
	require.Contains(t, errOut, "name two different ledgers")
	code, _, errOut = migrate(t, data, "--from", dbURL, "--to", dbURL)
	require.Equal(t, exitError, code)
	require.Contains(t, errOut, "is both the source and the target")
	code, _, errOut = migrate(t, data, "--from", filepath.Join(data, "nope.db"), "--to", dbURL)
	require.Equal(t, exitUsage, code)
	require.Contains(t, errOut, "no ledger there")
	code, _, errOut = migrate(t, data, "--to", dbURL)
	require.Equal(t, exitUsage, code)
	require.Contains(t, errOut, "--from is required")
}
