package store

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/relcap/relcap/workflow"
	"github.com/relcap/relcap/workflow/audit"
	"github.com/relcap/relcap/workflow/journal"
)

// recordedSession is a closed session of three entries and a screen
// recording, its journal file and ledger, and how to verify it from this
// "machine".
type recordedSession struct {
	b      backend
	ledger *Ledger
	dir    string
	id     string
	path   string // the journal file
	cast   string // the recording
}

func recordSession(t *testing.T, b backend) recordedSession {
	t.Helper()
	ctx := t.Context()
	fx := openJournal(t, b)
	for i, kind := range []string{"release.start", "plan.reviewed"} {
		_, err := fx.j.Append(ctx, testRecord{kind: journal.Kind(kind), N: i})
		require.NoError(t, err)
	}
	rec, err := fx.j.StartRecording()
	require.NoError(t, err)
	_, err = rec.Write([]byte(`{"version":2}` + "\n"))
	require.NoError(t, err)
	require.NoError(t, rec.Finish(ctx, "r1"))
	require.NoError(t, fx.j.Close(ctx))
	return recordedSession{b: b, ledger: fx.ledger, dir: fx.dir, id: fx.j.SessionID(), path: fx.j.Path(), cast: filepath.Join(filepath.Dir(fx.j.Path()), ScreenFile)}
}

// verify checks the session as relcap journal verify does.
func (s recordedSession) verify(t *testing.T) audit.SessionVerification {
	t.Helper()
	q, err := audit.New(audit.Deps{Project: &workflow.Project{}, Ledger: s.ledger, Sessions: SessionFiles{Dir: s.dir}})
	require.NoError(t, err)
	vs, err := q.VerifySessions(t.Context(), []string{s.id})
	require.NoError(t, err)
	require.Len(t, vs, 1)
	return vs[0]
}

// exec runs SQL on the ledger's database directly, as someone with the
// database (not relcap) would.
func (s recordedSession) exec(t *testing.T, q string) {
	t.Helper()
	_, err := s.ledger.db.ExecContext(t.Context(), q)
	require.NoError(t, err, q)
}

// dropTrigger removes one of the ledger's guards, as someone with the
// database could.
func (s recordedSession) dropTrigger(t *testing.T, name, table string) {
	t.Helper()
	if s.b.name == "postgres" {
		s.exec(t, "DROP TRIGGER "+name+" ON "+table)
		return
	}
	s.exec(t, "DROP TRIGGER "+name)
}

func TestJournalEntriesAreKeptInTheLedgerAsWritten(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, b backend) {
		ctx := t.Context()
		s := recordSession(t, b)
		file, err := ReadJournal(s.path)
		require.NoError(t, err)
		require.Len(t, file, 3)
		cp, err := s.ledger.JournalCopy(ctx, s.id)
		require.NoError(t, err)
		require.True(t, cp.Kept)
		require.Equal(t, file, cp.Lines, "the ledger holds every line exactly as the file does")
		head, err := s.ledger.JournalHead(ctx, s.id)
		require.NoError(t, err)
		require.Equal(t, head, cp.Head)
		n, p := journal.Verify(cp.Lines, cp.Head)
		require.Nil(t, p)
		require.EqualValues(t, 3, n)

		// The copy is append-only to relcap and to anyone who does not
		// drop the triggers first.
		_, err = s.ledger.db.ExecContext(ctx, `UPDATE journal_entries SET line = 'x' WHERE seq = 1`)
		require.ErrorContains(t, err, "journal entries are append-only: entries are never changed")
		_, err = s.ledger.db.ExecContext(ctx, `DELETE FROM journal_entries`)
		require.ErrorContains(t, err, "journal entries are append-only: entries are never deleted")
		_, err = s.ledger.db.ExecContext(ctx, `UPDATE sessions SET journal_copy = FALSE`)
		require.ErrorContains(t, err, "set when it opens and never changed")
		if b.name == "postgres" {
			_, err = s.ledger.db.ExecContext(ctx, `TRUNCATE journal_entries`)
			require.ErrorContains(t, err, "never deleted")
		}
	})
}

// flakyStore fails the first AppendJournal after the ledger committed it,
// as a connection lost before the commit's answer would.
type flakyStore struct {
	*Ledger
	failed bool
}

func (f *flakyStore) AppendJournal(ctx context.Context, id string, lines []journal.Line) error {
	if !f.failed {
		f.failed = true
		if err := f.Ledger.AppendJournal(ctx, id, lines); err != nil {
			return err
		}
		return errors.New("connection reset before the commit was confirmed")
	}
	return f.Ledger.AppendJournal(ctx, id, lines)
}

// failingStore refuses the next AppendJournal, committing nothing.
type failingStore struct {
	*Ledger
	fail bool
}

func (f *failingStore) AppendJournal(ctx context.Context, id string, lines []journal.Line) error {
	if f.fail {
		f.fail = false
		return errors.New("server closed the connection")
	}
	return f.Ledger.AppendJournal(ctx, id, lines)
}

// TestJournalResendsLinesTheLedgerDidNotConfirm: a line written to the
// file whose ledger update failed (nothing committed, or committed without
// the answer reaching relcap) is sent again with the next one, so the
// ledger's copy has no gap and holds no line twice.
func TestJournalResendsLinesTheLedgerDidNotConfirm(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, b backend) {
		ctx := t.Context()
		for _, tc := range []struct {
			name  string
			store func(l *Ledger) (workflow.SessionStore, func())
		}{
			{"nothing committed", func(l *Ledger) (workflow.SessionStore, func()) {
				f := &failingStore{Ledger: l}
				return f, func() { f.fail = true }
			}},
			{"committed unconfirmed", func(l *Ledger) (workflow.SessionStore, func()) {
				f := &flakyStore{Ledger: l, failed: true}
				return f, func() { f.failed = false }
			}},
		} {
			t.Run(tc.name, func(t *testing.T) {
				l := b.openNew(t)
				st, breakNext := tc.store(l)
				j, err := OpenSession(ctx, st, t.TempDir(), workflow.Session{Actor: "ana", Command: "plan"}, &stepClock{t: t0})
				require.NoError(t, err)
				_, err = j.Append(ctx, testRecord{kind: "one"})
				require.NoError(t, err)
				breakNext()
				_, err = j.Append(ctx, testRecord{kind: "two"})
				require.ErrorContains(t, err, "entry 2 is written but the ledger did not keep it")
				_, err = j.Append(ctx, testRecord{kind: "three"})
				require.NoError(t, err)
				require.NoError(t, j.Close(ctx))

				file, err := ReadJournal(j.Path())
				require.NoError(t, err)
				cp, err := l.JournalCopy(ctx, j.SessionID())
				require.NoError(t, err)
				require.Equal(t, file, cp.Lines)
				_, p := journal.Verify(cp.Lines, cp.Head)
				require.Nil(t, p)
				require.EqualValues(t, 3, cp.Head.Seq)
			})
		}
	})
}

func TestVerifyFromTheFileAndTheLedgersCopy(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, b backend) {
		t.Run("both intact", func(t *testing.T) {
			t.Parallel()
			v := recordSession(t, b).verify(t)
			require.True(t, v.Intact, "%v", v.Failed)
			require.Equal(t, audit.JournalFromFile, v.Journal)
			require.Equal(t, audit.VerifyOK, v.Checks.LedgerCopy.Status)
			require.Contains(t, v.Checks.LedgerCopy.Detail, "agrees with the file, line for line (3 entries)")
			require.Equal(t, "1 recording(s)", v.Checks.Recordings.Detail)
		})
		t.Run("file deleted: verified from the ledger", func(t *testing.T) {
			t.Parallel()
			s := recordSession(t, b)
			require.NoError(t, os.Remove(s.path))
			v := s.verify(t)
			require.True(t, v.Intact, "%v", v.Failed)
			require.Equal(t, audit.JournalFromLedger, v.Journal)
			require.EqualValues(t, 3, v.Entries)
			require.Equal(t, "3 entries in the ledger's copy", v.Checks.Chain.Detail)
			require.Equal(t, audit.VerifyOK, v.Checks.LedgerHead.Status)
			require.Contains(t, v.Checks.LedgerCopy.Detail, "not on this machine")
			require.Equal(t, audit.VerifyOK, v.Checks.Recordings.Status, "the recording is here, so it is checked")

			// The recording stays on the machine that made it.
			require.NoError(t, os.Remove(s.cast))
			v = s.verify(t)
			require.True(t, v.Intact, "%v", v.Failed)
			require.Equal(t, audit.VerifyUnchecked, v.Checks.Recordings.Status)
			require.Contains(t, v.Checks.Recordings.Detail, "screen.cast recorded on another machine, not checked here")
			require.Contains(t, strings.Join(v.Warnings, "\n"), "recordings not checked: screen.cast recorded on another machine")

			// A recording that is here and differs is tampering all the same.
			require.NoError(t, os.WriteFile(s.cast, []byte("forged\n"), 0o600))
			v = s.verify(t)
			require.False(t, v.Intact)
			require.Equal(t, []string{"recordings: entry 3: recording screen.cast differs from the SHA-256 journaled in entry 3: it was edited or truncated"}, v.Failed)
		})
		t.Run("recording deleted beside the journal file", func(t *testing.T) {
			t.Parallel()
			s := recordSession(t, b)
			require.NoError(t, os.Remove(s.cast))
			v := s.verify(t)
			require.False(t, v.Intact, "missing on the machine that has the journal file is a failure")
			require.Equal(t, audit.VerifyFailed, v.Checks.Recordings.Status)
			require.Contains(t, v.Checks.Recordings.Detail, "recording screen.cast is missing")
		})
		t.Run("ledger entry edited", func(t *testing.T) {
			t.Parallel()
			s := recordSession(t, b)
			s.dropTrigger(t, "journal_entries_no_update", "journal_entries")
			s.exec(t, `UPDATE journal_entries SET line = replace(line, 'plan.reviewed', 'plan.reviewes') WHERE seq = 2`)
			v := s.verify(t)
			require.False(t, v.Intact)
			require.Equal(t, audit.VerifyOK, v.Checks.Chain.Status, "the file is intact")
			require.Equal(t, audit.VerifyFailed, v.Checks.LedgerCopy.Status)
			require.Equal(t, "line 2 (entry 2): differs from the ledger's copy of entry 2: the ledger's copy was edited", v.Checks.LedgerCopy.Detail)
			require.Equal(t, 2, v.Problem.Line)

			// Without the file, the copy's own chain gives it away.
			require.NoError(t, os.Remove(s.path))
			v = s.verify(t)
			require.False(t, v.Intact)
			require.Equal(t, audit.JournalFromLedger, v.Journal)
			require.Equal(t, "line 2 (entry 2): in the ledger's copy: content does not match its hash: the entry was edited", v.Checks.Chain.Detail)
		})
		t.Run("ledger entry deleted", func(t *testing.T) {
			t.Parallel()
			s := recordSession(t, b)
			s.dropTrigger(t, "journal_entries_no_delete", "journal_entries")
			s.exec(t, `DELETE FROM journal_entries WHERE seq = 2`)
			v := s.verify(t)
			require.False(t, v.Intact)
			require.Equal(t, "line 2 (entry 2): not in the ledger's copy, which has no entry 2", v.Checks.LedgerCopy.Detail)
			s.exec(t, `DELETE FROM journal_entries`)
			v = s.verify(t)
			require.Equal(t, "line 1 (entry 1): not in the ledger's copy, which has no entry 1", v.Checks.LedgerCopy.Detail, "a copy emptied is no older session")
		})
		t.Run("file edited", func(t *testing.T) {
			t.Parallel()
			s := recordSession(t, b)
			content, err := os.ReadFile(s.path)
			require.NoError(t, err)
			require.NoError(t, os.WriteFile(s.path, []byte(strings.Replace(string(content), "plan.reviewed", "plan.reviewes", 1)), 0o600))
			v := s.verify(t)
			require.False(t, v.Intact)
			require.Equal(t, []string{
				"chain: line 2 (entry 2): content does not match its hash: the entry was edited",
				"ledger_copy: line 2 (entry 2): differs from the ledger's copy of entry 2: the journal file was edited",
			}, v.Failed)
		})
		t.Run("file truncated", func(t *testing.T) {
			t.Parallel()
			s := recordSession(t, b)
			lines, err := ReadJournal(s.path)
			require.NoError(t, err)
			require.NoError(t, os.WriteFile(s.path, append(lines[0].Text, '\n'), 0o600))
			v := s.verify(t)
			require.False(t, v.Intact)
			require.Equal(t, "entry 2: the ledger's copy holds entry 2, but the journal file ends at line 1: the file was truncated", v.Checks.LedgerCopy.Detail)
		})
	})
}

// TestSessionsFromBeforeTheLedgerKeptJournalsVerifyFromTheirFile: a
// session recorded by a relcap at schema 5 has its head in the ledger and
// its entries in its file alone; after the upgrade it verifies from the
// file as before, and a missing file is still a failure.
func TestSessionsFromBeforeTheLedgerKeptJournalsVerifyFromTheirFile(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, b backend) {
		ctx := t.Context()
		loc := b.newLocation(t)
		old, err := b.open(ctx, loc, func(o *options) { o.schemaVersion = 5 })
		require.NoError(t, err)
		lines := sealedLines(t, "ana", 2)
		last := entryOf(t, lines[1])
		// What relcap at schema 5 wrote: the session and its head.
		_, err = old.db.ExecContext(ctx, `INSERT INTO sessions (id, actor, command, started_at, head_seq, head_hash) VALUES ('old', 'ana', 'plan', ?, ?, ?)`,
			t0.UnixNano(), last.Seq, last.Hash)
		require.NoError(t, err)
		require.NoError(t, old.Close())
		dir := t.TempDir()
		require.NoError(t, os.MkdirAll(filepath.Join(dir, "old"), 0o700))
		path := filepath.Join(dir, "old", JournalFile)
		require.NoError(t, os.WriteFile(path, append(append(lines[0].Text, '\n'), append(lines[1].Text, '\n')...), 0o600))

		s := recordedSession{b: b, ledger: b.openAt(t, loc), dir: dir, id: "old", path: path}
		cp, err := s.ledger.JournalCopy(ctx, "old")
		require.NoError(t, err)
		require.False(t, cp.Kept)
		require.Empty(t, cp.Lines)
		v := s.verify(t)
		require.True(t, v.Intact, "%v", v.Failed)
		require.Equal(t, audit.JournalFromFile, v.Journal)
		require.Equal(t, audit.VerifyAbsent, v.Checks.LedgerCopy.Status)
		require.Contains(t, v.Checks.LedgerCopy.Detail, "before the ledger kept journal entries")

		require.NoError(t, os.Remove(path))
		v = s.verify(t)
		require.False(t, v.Intact)
		require.Equal(t, []string{"chain: journal file is missing; the ledger's head is entry 2"}, v.Failed)
	})
}

// TestMigrateBringsOlderSessionsJournalFilesAlong: a captain's session
// from before the ledger kept journal entries lives in its file alone;
// ledger migrate copies the file's entries (once they verify against the
// head) into the team's ledger, so a teammate without the file verifies
// it from the ledger's copy. A second migration finds them there; a file
// that does not verify is left out and named.
func TestMigrateBringsOlderSessionsJournalFilesAlong(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	loc := sqliteBackend.newLocation(t)
	old, err := sqliteBackend.open(ctx, loc, func(o *options) { o.schemaVersion = 5 })
	require.NoError(t, err)
	dir := t.TempDir()
	for _, id := range []string{"old", "edited"} {
		lines := sealedLines(t, "ana", 3)
		last := entryOf(t, lines[2])
		_, err = old.db.ExecContext(ctx, `INSERT INTO sessions (id, actor, command, started_at, head_seq, head_hash) VALUES (?, 'ana', 'plan', ?, ?, ?)`,
			id, t0.UnixNano(), last.Seq, last.Hash)
		require.NoError(t, err)
		var file []byte
		for _, l := range lines {
			file = append(append(file, l.Text...), '\n')
		}
		if id == "edited" {
			file = bytes.Replace(file, []byte(`"actor":"ana"`), []byte(`"actor":"eve"`), 1)
		}
		require.NoError(t, os.MkdirAll(filepath.Join(dir, id), 0o700))
		require.NoError(t, os.WriteFile(filepath.Join(dir, id, JournalFile), file, 0o600))
	}
	require.NoError(t, old.Close())
	src := sqliteBackend.openAt(t, loc)
	team := postgresBackend.openNew(t)

	opts := MigrateOptions{Journals: SessionFiles{Dir: dir}.JournalLines}
	rep, err := Migrate(ctx, src, team, opts)
	require.NoError(t, err)
	require.Equal(t, 1, rep.Journals.Copied)
	require.Len(t, rep.Journals.Left, 1)
	require.Contains(t, rep.Journals.Left[0], "edited: its journal file does not verify")

	elsewhere := recordedSession{b: postgresBackend, ledger: team, dir: t.TempDir(), id: "old"}
	v := elsewhere.verify(t)
	require.True(t, v.Intact, "%v", v.Failed)
	require.Equal(t, audit.JournalFromLedger, v.Journal, "a teammate without the file verifies the ledger's copy")
	require.Equal(t, int64(3), v.Entries)
	here := recordedSession{b: postgresBackend, ledger: team, dir: dir, id: "old"}
	v = here.verify(t)
	require.True(t, v.Intact, "%v", v.Failed)
	require.Equal(t, audit.VerifyOK, v.Checks.LedgerCopy.Status, "the captain's file and the copy agree")

	rep, err = Migrate(ctx, src, team, opts)
	require.NoError(t, err)
	require.Equal(t, 0, rep.Copied())
	require.Equal(t, JournalBackfill{Present: 1, Left: rep.Journals.Left}, rep.Journals, "the second run copies nothing")
}
