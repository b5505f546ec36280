package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/relcap/relcap/adapters/store"
	"github.com/relcap/relcap/workflow"
)

// seedRelease records release id (of app web, in environment env) in the
// ledger at where (an SQLite path or a postgres:// URL), ended: effort log refuses a release the ledger does not
// hold, so the tests that log time first need one.
func seedRelease(t *testing.T, where, id, env string) {
	t.Helper()
	ctx := context.Background()
	var (
		l   *store.Ledger
		err error
	)
	if strings.HasPrefix(where, "postgres") {
		l, err = store.OpenPostgres(ctx, where)
	} else {
		l, err = store.OpenSQLite(ctx, where)
	}
	require.NoError(t, err)
	defer l.Close()
	// Ended, so it is nobody's release in progress and no flow resumes it.
	now := time.Now().UTC()
	r := workflow.NewRelease(id, "web", env, "img:1", "alice", now)
	r.Status, r.EndedAt = workflow.ReleaseConverged, now
	require.NoError(t, l.SaveRelease(ctx, r))
}
