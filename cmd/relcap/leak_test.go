package main

import (
	"context"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/jackc/pgx/v5"

	"github.com/relcap/relcap/adapters/store"
	"github.com/relcap/relcap/adapters/store/pgtest"
)

// TestNoSecretAnywhereInAScriptedReleaseThroughAPullRequest: a release of
// the generated secrets' Terraform root (alice and bob signing with their
// own SSH keys, so every head is anchored) is validated, planned by alice,
// approved by bob and applied, its image promoted through a pull request
// on a fake forge (whose first merge fails with an error quoting the
// forge's token), converged, then rotated (replicas changes, so
// terraform_data is replaced and its unmarked output is a before value),
// planned, approved and applied again; off-tool time is logged; every
// report is printed in every format and every journal listed, shown and
// verified. No form of any secret is in anything relcap wrote, the pull
// request bodies included.
func TestNoSecretAnywhereInAScriptedReleaseThroughAPullRequest(t *testing.T) {
	if ranInOwnProcess(t) {
		return
	}
	w := newLeakWorld(t, leakOptions{pullRequest: true, signed: true})
	w.relcap(t, exitOK, "validate")

	fp, release := w.plan(t, "alice")
	// Hold the ledger open, as a teammate's cockpit would: the last
	// connection to close folds the WAL into the file, so holding one
	// keeps -wal and -shm on disk for the scan.
	holder, err := store.OpenSQLite(t.Context(), w.ledgerDB)
	require.NoError(t, err)
	defer holder.Close()

	w.relcap(t, exitOK, "--actor", "bob", "approve", "--plan", fp)
	w.relcap(t, exitOK, "--actor", "alice", "apply", "--plan", fp)
	w.push(t, "1.0.0")
	w.relcap(t, exitError, "--actor", "alice", "promote", "--env", "staging", "--release", release, "--image", w.host+"/ci/web:1.0.0")
	w.relcap(t, exitOK, "--actor", "alice", "promote", "--env", "staging", "--release", release, "--image", w.host+"/ci/web:1.0.0")
	w.relcap(t, exitOK, "--actor", "alice", "converge", "--env", "staging", "--release", release, "--timeout", "60s")
	require.NotEmpty(t, w.forge.Bodies(), "the promotion went through a pull request")

	w.setReplicas(t, 2) // replaces terraform_data.mirror
	fp, _ = w.plan(t, "alice")
	w.relcap(t, exitOK, "--actor", "bob", "approve", "--plan", fp)
	w.relcap(t, exitOK, "--actor", "alice", "apply", "--plan", fp)
	w.relcap(t, exitOK, "--actor", "bob", "effort", "log", "--release", release, "--minutes", "20", "--what", "change board")
	w.records(t)

	s := w.scan(t)
	sources := s.Sources()
	require.Contains(t, sources, w.ledgerDB+"-wal", "the ledger's write-ahead log was scanned")
	refs := gitOut(t, w.envRepo, "for-each-ref", "--format=%(refname)")
	require.Contains(t, refs, "refs/relcap/journal", "the sessions' heads are anchored in the environment repository, scanned")
	t.Logf("%d referrer(s) in the registry scanned", w.scanRegistry(t, s, "ci/web", "staging/web"))
	requireNoLeak(t, w, s)
}

// TestNoSecretAnywhereInBreakGlassRehearsalsAndTheCockpit: on the same
// generated secrets, after a scripted release converged, the captain
// breaks the glass (start, status, end and its capture branch), drills an
// unavailable image and a failed apply (a scratch copy of the root,
// planned and applied with real Terraform, each plan approved by bob),
// then runs a release in the cockpit (its plan and apply streamed into
// the log pane and the screen recording). No form of any secret is in
// anything relcap wrote, screen.cast included.
func TestNoSecretAnywhereInBreakGlassRehearsalsAndTheCockpit(t *testing.T) {
	if ranInOwnProcess(t) {
		return
	}
	w := newLeakWorld(t, leakOptions{})
	fp, release := w.plan(t, "alice")
	w.relcap(t, exitOK, "--actor", "bob", "approve", "--plan", fp)
	w.relcap(t, exitOK, "--actor", "alice", "apply", "--plan", fp)
	w.push(t, "1.0.0")
	w.relcap(t, exitOK, "--actor", "alice", "promote", "--env", "staging", "--release", release, "--image", w.host+"/ci/web:1.0.0")
	w.relcap(t, exitOK, "--actor", "alice", "converge", "--env", "staging", "--release", release, "--timeout", "60s")

	w.relcap(t, exitOK, "--actor", "alice", "breakglass", "start", "--env", "staging", "--reason", "OOM: raise memory by hand", "--ttl", "30m")
	w.relcap(t, exitOK, "breakglass", "status", "--env", "staging")
	w.relcap(t, exitOK, "--actor", "alice", "breakglass", "end", "--env", "staging")
	rev := strings.TrimSpace(gitOut(t, w.envRepo, "rev-parse", "main"))
	w.relcap(t, exitOK, "converge", "--env", "staging", "--revision", rev, "--timeout", "60s")

	w.relcap(t, exitOK, "--actor", "alice", "rehearse", "--env", "staging", "--drill", "unavailable-image", "--timeout", "30s")
	// The failed-apply drill plans twice (inject, recover); each plan
	// waits for bob's approval, then the drill is resumed.
	approval := regexp.MustCompile(`relcap approve --plan ([0-9a-f]{64})`)
	code, _, errOut := w.relcapAny(t, "--actor", "alice", "rehearse", "--env", "staging", "--drill", "failed-apply")
	id := regexp.MustCompile(`relcap rehearse --resume (rh-\S+),`).FindStringSubmatch(errOut)
	for range 3 {
		if code != exitBlocked {
			break
		}
		require.NotNil(t, id, errOut)
		m := approval.FindStringSubmatch(errOut)
		require.NotNil(t, m, errOut)
		w.relcap(t, exitOK, "--actor", "bob", "approve", "--plan", m[1])
		code, _, errOut = w.relcapAny(t, "--actor", "alice", "rehearse", "--resume", id[1])
	}
	require.Equal(t, exitOK, code, errOut)
	requireNoScratch(t, w.data)
	w.relcap(t, exitOK, "rehearse", "list", "--env", "staging")
	// The drills' recovery lands a rollback: let staging settle on it
	// before the cockpit's release, so the watch judges that release alone.
	rev = strings.TrimSpace(gitOut(t, w.envRepo, "rev-parse", "main"))
	w.relcap(t, exitOK, "converge", "--env", "staging", "--revision", rev, "--timeout", "120s")

	w.cockpitRelease(t, 2)
	w.records(t)
	casts, err := filepath.Glob(filepath.Join(w.data, "relcap", "sessions", "*", "screen.cast"))
	require.NoError(t, err)
	require.NotEmpty(t, casts, "the cockpit's recording is scanned")
	requireNoLeak(t, w, w.scan(t))
}

// TestNoSecretAnywhereOnAPostgresLedger: the team ledger's role has a
// generated password with every character a URL must escape, given
// percent-escaped in --ledger to every command of a release (plan,
// approve, apply, effort log, reports, journal list/show/verify), and
// once written unescaped, the easy mistake. No form of the password or of
// any other secret is in the commands' output, the journals, or any row of
// any table of the database (each read as text).
func TestNoSecretAnywhereOnAPostgresLedger(t *testing.T) {
	if ranInOwnProcess(t, pgtest.EnvURL+"="+pgtest.Server(t)) {
		return
	}
	admin := pgtest.Database(t)
	u, err := url.Parse(admin)
	require.NoError(t, err)
	conn, err := pgx.Connect(t.Context(), admin)
	require.NoError(t, err)
	defer conn.Close(context.Background())

	w := newLeakWorld(t, leakOptions{})
	password := w.gen.Password("postgres password", 12)
	w.secrets = append(w.secrets, password)
	_, err = conn.Exec(t.Context(), "CREATE ROLE leak_captain LOGIN PASSWORD '"+strings.ReplaceAll(password.Value, "'", "''")+"'")
	require.NoError(t, err)
	_, err = conn.Exec(t.Context(), "ALTER DATABASE "+pgx.Identifier{strings.TrimPrefix(u.Path, "/")}.Sanitize()+" OWNER TO leak_captain")
	require.NoError(t, err)
	team := *u
	team.User = url.UserPassword("leak_captain", password.Value)
	w.ledgerURL = team.String()
	w.ledgerDB = ""

	// The password written in --ledger unescaped: refused, and not shown.
	unescaped := "postgres://leak_captain:" + password.Value + "@" + u.Host + u.Path + "?" + u.RawQuery
	code, _, _ := w.relcapAny(t, "--ledger", unescaped, "journal", "list")
	require.NotEqual(t, exitOK, code)

	w.relcap(t, exitOK, "validate")
	fp, release := w.plan(t, "alice")
	w.relcap(t, exitOK, "--actor", "bob", "approve", "--plan", fp)
	w.relcap(t, exitOK, "--actor", "alice", "apply", "--plan", fp)
	w.relcap(t, exitOK, "--actor", "bob", "effort", "log", "--release", release, "--minutes", "20", "--what", "change board")
	w.records(t)
	_, err = os.Stat(filepath.Join(w.data, "relcap", "ledger.db"))
	require.True(t, os.IsNotExist(err), "the records are in PostgreSQL")

	s := w.scan(t, dumpTables(t, conn)...)
	requireNoLeak(t, w, s)
}
