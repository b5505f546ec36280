package main

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/relcap/relcap/adapters/store"
)

// TestNoSecretAnywhereInAScriptedReleaseThroughAPullRequest: a release of
// the generated secrets' Terraform root is validated, planned by alice,
// approved by bob and applied, its image promoted through a pull request
// on a fake forge (whose first merge fails with an error quoting the
// forge's token), converged, then rotated (replicas changes, so
// terraform_data is replaced and its unmarked output is a before value),
// planned, approved and applied again; off-tool time is logged; every
// report is printed in every format and every journal listed, shown and
// verified. No form of any secret is in anything relcap wrote, the pull
// request bodies included.
func TestNoSecretAnywhereInAScriptedReleaseThroughAPullRequest(t *testing.T) {
	w := newLeakWorld(t, leakOptions{pullRequest: true})
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
	requireNoLeak(t, w, s)
}
