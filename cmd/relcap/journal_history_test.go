package main

import (
	"database/sql"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/relcap/relcap/adapters/gitrepo"
	"github.com/relcap/relcap/workflow"
)

// journalWorld is a project whose environment repository (dir/env) is a
// real bare git repository, with an origin of its own or none, and the
// data home whose default SQLite ledger and journals relcap writes.
type journalWorld struct {
	t      *testing.T
	dir    string // the project: relcap.yaml, env
	origin string // the origin's bare repository, "" for none
	data   string
}

func newJournalWorld(t *testing.T, withOrigin bool) *journalWorld {
	t.Helper()
	w := &journalWorld{t: t, dir: releaseRepo(t, validConfig), data: t.TempDir()}
	env := filepath.Join(w.dir, "env")
	gitRun(t, "", "init", "-q", "--bare", env)
	if withOrigin {
		w.origin = filepath.Join(t.TempDir(), "origin.git")
		gitRun(t, "", "init", "-q", "--bare", w.origin)
		gitRun(t, env, "remote", "add", "origin", w.origin)
	}
	seedRelease(t, filepath.Join(w.data, "relcap", "ledger.db"), "web-prod-1", "prod")
	return w
}

func gitRun(t *testing.T, dir string, args ...string) string {
	t.Helper()
	if dir != "" {
		args = append([]string{"-C", dir}, args...)
	}
	out, err := exec.Command("git", args...).CombinedOutput()
	require.NoError(t, err, "git %v: %s", args, out)
	return strings.TrimSpace(string(out))
}

// anchorRepo is where the anchors live: origin, else env itself.
func (w *journalWorld) anchorRepo() string {
	if w.origin != "" {
		return w.origin
	}
	return filepath.Join(w.dir, "env")
}

func (w *journalWorld) relcap(args ...string) (int, string, string) {
	return invokeEnv(w.t, w.data, nil, args...)
}

// session runs one state-changing command (an effort log) and returns
// its session's ID and stderr.
func (w *journalWorld) session() (string, string) {
	w.t.Helper()
	before := w.sessionIDs()
	code, _, errOut := w.relcap("-c", filepath.Join(w.dir, "relcap.yaml"), "--actor", "alice", "effort", "log", "--release", "web-prod-1", "--minutes", "5", "--what", "standup")
	require.Equal(w.t, 0, code, errOut)
	after := w.sessionIDs()
	require.Len(w.t, after, len(before)+1)
	for _, id := range after {
		if !strings.Contains(strings.Join(before, " "), id) {
			return id, errOut
		}
	}
	w.t.Fatal("no new session")
	return "", ""
}

func (w *journalWorld) sessionIDs() []string {
	w.t.Helper()
	if _, err := os.Stat(filepath.Join(w.data, "relcap", "ledger.db")); errors.Is(err, fs.ErrNotExist) {
		return nil // nothing recorded yet: journal list refuses a ledger that is not there
	}
	code, out, errOut := w.relcap("--json", "journal", "list")
	require.Equal(w.t, 0, code, errOut)
	var sessions []workflow.Session
	require.NoError(w.t, json.Unmarshal([]byte(out), &sessions))
	var ids []string
	for _, s := range sessions {
		ids = append(ids, s.ID)
	}
	return ids
}

// verify runs journal verify, with the configuration or without, and
// returns its exit code, stdout and stderr.
func (w *journalWorld) verify(withConfig bool, extra ...string) (int, string, string) {
	args := []string{"journal", "verify"}
	if withConfig {
		args = append([]string{"-c", filepath.Join(w.dir, "relcap.yaml")}, args...)
	}
	return w.relcap(append(extra, args...)...)
}

// erase deletes every trace of session id this machine keeps: its rows
// in the SQLite ledger (the triggers that refuse it dropped first, as
// anyone holding the file can) and its journal directory.
func (w *journalWorld) erase(id string) {
	w.t.Helper()
	db, err := sql.Open("sqlite", filepath.Join(w.data, "relcap", "ledger.db"))
	require.NoError(w.t, err)
	defer db.Close()
	for _, q := range []string{
		`DROP TRIGGER IF EXISTS sessions_no_delete`,
		`DROP TRIGGER IF EXISTS journal_entries_no_delete`,
		`DELETE FROM journal_entries WHERE session_id = '` + id + `'`,
		`DELETE FROM sessions WHERE id = '` + id + `'`,
	} {
		_, err := db.ExecContext(w.t.Context(), q)
		require.NoError(w.t, err, q)
	}
	require.NoError(w.t, os.RemoveAll(filepath.Join(w.data, "relcap", "sessions", id)))
}

// commitOnAnchor checks refs/relcap/journal of repo out into a scratch
// clone, runs edit there, commits as mallory and pushes it back: an
// ordinary fast-forward, which a ref protected against non-fast-forward
// pushes and deletions accepts. It returns the new commit.
func commitOnAnchor(t *testing.T, repo string, edit func(dir string)) string {
	t.Helper()
	dir := t.TempDir()
	gitRun(t, dir, "init", "-q")
	gitRun(t, dir, "fetch", "-q", repo, "refs/relcap/journal:refs/heads/journal")
	gitRun(t, dir, "checkout", "-q", "journal")
	edit(dir)
	gitRun(t, dir, "add", "-A")
	gitRun(t, dir, "-c", "user.name=mallory", "-c", "user.email=mallory@example.com", "commit", "-qm", "tidy up the anchors")
	gitRun(t, dir, "push", "-q", repo, "journal:refs/relcap/journal")
	return gitRun(t, dir, "rev-parse", "HEAD")
}

// TestAFastForwardThatErasesASessionIsCaught: issue 26 #10. A session's
// head is anchored on origin; the captain removes its anchor file with a
// fast-forward commit (which the recommended protection allows) and
// deletes its ledger rows and journal. journal verify reads the ref's
// whole history: the session is TAMPERED, naming the commit that removed
// it. Read from the tip alone, nothing would be left to tell.
func TestAFastForwardThatErasesASessionIsCaught(t *testing.T) {
	t.Parallel()
	w := newJournalWorld(t, true)
	first, _ := w.session()
	victim, errOut := w.session()
	require.NotContains(t, errOut, "anchor not protected", "the anchors are pushed to an origin")
	last, _ := w.session()

	code, out, errOut := w.verify(true)
	require.Equal(t, 0, code, out+errOut)
	require.Equal(t, 3, strings.Count(out, "ok       "), out)
	require.NotContains(t, errOut, "anchor not protected")

	removedBy := commitOnAnchor(t, w.origin, func(dir string) {
		gitRun(t, dir, "rm", "-q", gitrepo.AnchorFile(victim))
	})
	w.erase(victim)

	code, out, errOut = w.verify(true)
	require.Equal(t, exitBlocked, code, out+errOut)
	require.Contains(t, out, "TAMPERED "+victim)
	require.Contains(t, out, "was removed by commit "+removedBy[:12]+" (mallory <mallory@example.com>, ")
	require.Contains(t, out, gitrepo.AnchorFile(victim))
	require.Contains(t, out, "ok       "+first)
	require.Contains(t, out, "ok       "+last)
	requireFailedList(t, errOut, 3, victim)

	code, out, _ = w.verify(true, "--json")
	require.Equal(t, exitBlocked, code)
	var list []verified
	require.NoError(t, json.Unmarshal([]byte(out), &list))
	for _, v := range list {
		if v.Session == victim {
			requireFailed(t, v, "chain", "ledger_head", "anchor")
			require.Contains(t, v.Checks["anchor"].Detail, "the anchor was erased by a later commit")
		}
	}

	// Changing another session's anchor file by a fast-forward is caught
	// the same way.
	changedBy := commitOnAnchor(t, w.origin, func(dir string) {
		f := filepath.Join(dir, gitrepo.AnchorFile(last))
		b, err := os.ReadFile(f)
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(f, []byte(strings.Replace(string(b), `"actor": "alice"`, `"actor": "bob"`, 1)), 0o600))
	})
	code, out, errOut = w.verify(true)
	require.Equal(t, exitBlocked, code, out+errOut)
	require.Contains(t, out, "TAMPERED "+last)
	require.Contains(t, out, "was changed by commit "+changedBy[:12])
}

// TestARewoundLocalAnchorIsCaughtByTheRecordedCommitAndWarnedAbout: issue
// 26 #11. The environment repository is local and has no origin: every
// seal and every verification says its anchors can be rewound unnoticed.
// A rewind of refs/relcap/journal is caught through the anchor commit the
// ledger recorded for each session, even when the later heads are
// anchored again on top; a rewind that also deletes every trace of the
// session on this machine leaves nothing to catch, hence the warning.
func TestARewoundLocalAnchorIsCaughtByTheRecordedCommitAndWarnedAbout(t *testing.T) {
	t.Parallel()
	w := newJournalWorld(t, false)
	env := w.anchorRepo()
	unprotected := "anchor not protected: " + env + " has no origin; rewinds cannot be detected"
	first, errOut := w.session()
	require.Contains(t, errOut, "relcap: warning: the journal head of session "+first+" is anchored, but "+unprotected, "said when sealing")
	atFirst := gitRun(t, env, "rev-parse", "refs/relcap/journal")
	victim, _ := w.session()
	last, _ := w.session()
	lastFile := gitRun(t, env, "show", "refs/relcap/journal:"+gitrepo.AnchorFile(last))
	lastCommit := gitRun(t, env, "rev-parse", "refs/relcap/journal")

	code, out, errOut := w.verify(true)
	require.Equal(t, 0, code, out+errOut)
	require.Equal(t, 1, strings.Count(errOut, unprotected), "said once: %s", errOut)
	code, out, _ = w.verify(true, "--json")
	require.Equal(t, 0, code)
	var list []struct {
		Session  string
		Warnings []string
	}
	require.NoError(t, json.Unmarshal([]byte(out), &list))
	require.Len(t, list, 3)
	for _, v := range list {
		require.Contains(t, strings.Join(v.Warnings, "\n"), unprotected, v.Session)
	}

	// git update-ref drops the last anchor: its session's recorded
	// anchor commit is no longer in the history.
	gitRun(t, env, "update-ref", "refs/relcap/journal", "refs/relcap/journal~1")
	code, out, errOut = w.verify(true)
	require.Equal(t, exitBlocked, code, out+errOut)
	require.Contains(t, out, "TAMPERED "+last)
	require.Contains(t, out, "the ledger records its head anchored at commit "+lastCommit[:12])
	require.Contains(t, out, "no longer contains: the ref was rewound or rewritten")

	// Rewound to the first anchor, the last head anchored again on top
	// (the tip holds every head the ledger has), the middle session's
	// rows and journal deleted: the last session's recorded commit still
	// tells.
	gitRun(t, env, "update-ref", "refs/relcap/journal", atFirst)
	commitOnAnchor(t, env, func(dir string) {
		f := filepath.Join(dir, gitrepo.AnchorFile(last))
		require.NoError(t, os.MkdirAll(filepath.Dir(f), 0o700))
		require.NoError(t, os.WriteFile(f, []byte(lastFile+"\n"), 0o600))
	})
	w.erase(victim)
	code, out, errOut = w.verify(true)
	require.Equal(t, exitBlocked, code, out+errOut)
	require.Contains(t, out, "TAMPERED "+last)
	require.Contains(t, out, "the ledger records its head anchored at commit "+lastCommit[:12])
	require.NotContains(t, out, victim, "its every trace on this machine is gone")

	// What nothing local can catch: the last session rewound away with
	// its rows and journal. The verification passes, and says why it
	// cannot vouch for that.
	gitRun(t, env, "update-ref", "refs/relcap/journal", atFirst)
	w.erase(last)
	code, out, errOut = w.verify(true)
	require.Equal(t, 0, code, out+errOut)
	require.Equal(t, "ok       "+first+"  "+regexp.MustCompile(`\d+ entries`).FindString(out)+"\n", out)
	require.Contains(t, errOut, "warning  "+unprotected)
}

// TestVerifyWithoutAConfigurationReportsAJournalWithoutALedgerRow: issue
// 26 #12. A session's ledger rows are deleted, its journal left on disk;
// journal verify without -c names it TAMPERED (its journal names this
// ledger), exits non-zero, and says the anchors were not checked.
func TestVerifyWithoutAConfigurationReportsAJournalWithoutALedgerRow(t *testing.T) {
	t.Parallel()
	w := newJournalWorld(t, true)
	kept, _ := w.session()
	orphan, _ := w.session()
	journalFile := filepath.Join(w.data, "relcap", "sessions", orphan, "journal.jsonl")
	saved, err := os.ReadFile(journalFile)
	require.NoError(t, err)
	w.erase(orphan)
	require.NoError(t, os.MkdirAll(filepath.Dir(journalFile), 0o700))
	require.NoError(t, os.WriteFile(journalFile, saved, 0o600)) // the journal stays

	code, out, errOut := w.verify(false)
	require.Equal(t, exitBlocked, code, out+errOut)
	require.Contains(t, out, "ok       "+kept)
	require.Contains(t, out, "TAMPERED "+orphan)
	require.Contains(t, out, "journal on disk without a ledger row: its journal names this ledger (")
	require.Contains(t, out, "its ledger row was deleted")
	require.Contains(t, errOut, "warning  anchors not checked: no relcap.yaml (-c)")
	requireFailedList(t, errOut, 2, orphan)

	code, out, errOut = w.verify(true)
	require.Equal(t, exitBlocked, code, out+errOut)
	require.Contains(t, out, "TAMPERED "+orphan, "with the configuration, the anchor names it too")
	require.NotContains(t, errOut, "anchors not checked")
}
