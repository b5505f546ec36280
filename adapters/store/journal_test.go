package store

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/relcap/relcap/workflow"
	"github.com/relcap/relcap/workflow/fault"
	"github.com/relcap/relcap/workflow/journal"
)

// stepClock advances one second per reading, so entries have distinct
// times.
type stepClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *stepClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(time.Second)
	return c.t
}

// After is time.After: these tests time nothing with the clock.
func (*stepClock) After(d time.Duration) <-chan time.Time { return time.After(d) }

func TestNewSessionID(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 11, 30, 14, 55, 27, 0, time.FixedZone("CET", 3600))
	id := NewSessionID(now)
	require.Regexp(t, regexp.MustCompile(`^20261130T135527Z-[0-9a-f]{6}$`), id)
	require.NotEqual(t, id, NewSessionID(now))

	var ids []string
	for i := range 5 {
		ids = append(ids, NewSessionID(now.Add(time.Duration(4-i)*time.Hour)))
	}
	require.True(t, sort.StringsAreSorted([]string{ids[4], ids[3], ids[2], ids[1], ids[0]}), "IDs sort by time")
}

type journalFixture struct {
	ledger *Ledger
	dir    string
	j      *FileJournal
}

func openJournal(t *testing.T, b backend) journalFixture {
	t.Helper()
	l := b.openNew(t)
	dir := filepath.Join(t.TempDir(), "sessions")
	j, err := OpenSession(t.Context(), l, dir, workflow.Session{Actor: "ana", Command: "release web prod", ReleaseID: "r1"}, &stepClock{t: t0})
	require.NoError(t, err)
	return journalFixture{ledger: l, dir: dir, j: j}
}

func TestOpenSessionCreatesPrivateJournalAndRegisters(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, b backend) {
		ctx := t.Context()
		fx := openJournal(t, b)
		id := fx.j.SessionID()
		require.Regexp(t, `^20261130T135528Z-[0-9a-f]{6}$`, id, "ID from the clock's start time")
		require.Equal(t, filepath.Join(fx.dir, id, JournalFile), fx.j.Path())

		for path, mode := range map[string]os.FileMode{fx.dir: 0o700, filepath.Dir(fx.j.Path()): 0o700, fx.j.Path(): 0o600} {
			fi, err := os.Stat(path)
			require.NoError(t, err)
			require.Equal(t, mode, fi.Mode().Perm(), path)
		}

		sessions, err := fx.ledger.Sessions(ctx)
		require.NoError(t, err)
		require.Len(t, sessions, 1)
		require.Equal(t, id, sessions[0].ID)
		require.Equal(t, "ana", sessions[0].Actor)
		require.Equal(t, "r1", sessions[0].ReleaseID)
		require.True(t, sessions[0].EndedAt.IsZero())

		require.NoError(t, fx.j.Close(ctx))
		require.NoError(t, fx.j.Close(ctx), "Close is idempotent")
		sessions, err = fx.ledger.Sessions(ctx)
		require.NoError(t, err)
		require.False(t, sessions[0].EndedAt.IsZero())
		_, err = fx.j.Append(ctx, testRecord{kind: "late"})
		require.ErrorContains(t, err, "is closed")

		// The same session cannot be opened twice.
		_, err = OpenSession(ctx, fx.ledger, fx.dir, fx.j.Session(), &stepClock{t: t0})
		require.ErrorContains(t, err, "already exists")
	})
}

func TestOpenSessionRefusesPathLikeIDs(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, b backend) {
		l := b.openNew(t)
		for _, id := range []string{"..", ".", "a/b", `a\b`} {
			_, err := OpenSession(t.Context(), l, t.TempDir(), workflow.Session{ID: id, Actor: "ana"}, &stepClock{t: t0})
			require.ErrorIs(t, err, fault.ErrUsage, id)
		}
	})
}

func TestOpenSessionLedgerFailureLeavesNoFile(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, b backend) {
		l := b.openNew(t)
		dir := t.TempDir()
		s := workflow.Session{ID: "s1", Actor: "ana", StartedAt: t0}
		require.NoError(t, l.OpenSession(t.Context(), s)) // taken in the ledger
		_, err := OpenSession(t.Context(), l, dir, s, &stepClock{t: t0})
		require.Error(t, err)
		_, err = os.Stat(filepath.Join(dir, "s1"))
		require.ErrorIs(t, err, os.ErrNotExist)
	})
}

// appendThree writes three entries and returns the journal's path and the
// ledger's head.
func appendThree(t *testing.T, b backend) (string, journal.Head, []journal.Entry) {
	t.Helper()
	ctx := t.Context()
	fx := openJournal(t, b)
	var written []journal.Entry
	for i, kind := range []string{"release.start", "plan.reviewed", "apply.done"} {
		e, err := fx.j.Append(ctx, testRecord{kind: journal.Kind(kind), N: i, Note: "<b>&</b>\nline"})
		require.NoError(t, err)
		require.Equal(t, int64(i+1), e.Seq)
		require.Equal(t, "ana", e.Actor)
		written = append(written, e)
	}
	require.NoError(t, fx.j.Close(ctx))
	head, err := fx.ledger.JournalHead(ctx, fx.j.SessionID())
	require.NoError(t, err)
	require.Equal(t, journal.Head{SessionID: fx.j.SessionID(), Seq: 3, Hash: written[2].Hash}, head)
	return fx.j.Path(), head, written
}

func TestJournalAppendVerifiesAndReads(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, b backend) {
		path, head, written := appendThree(t, b)

		lines, err := ReadJournal(path)
		require.NoError(t, err)
		require.Len(t, lines, 3)
		for i, l := range lines {
			require.Equal(t, i+1, l.Number)
			require.NotContains(t, string(l.Text), "\n")
		}
		n, problem := journal.Verify(lines, head)
		require.Nil(t, problem)
		require.Equal(t, int64(3), n)

		entries, err := ReadEntries(path)
		require.NoError(t, err)
		require.Len(t, entries, 3)
		for i, e := range entries {
			requireTimeEqual(t, written[i].Time, e.Time)
			require.Equal(t, written[i].Hash, e.Hash)
			require.Equal(t, written[i].ComputeHash(), e.ComputeHash())
			require.JSONEq(t, string(written[i].Data), string(e.Data))
		}
	})
}

func TestJournalTamperingIsDetected(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, b backend) {
		for _, tc := range []struct {
			name     string
			change   func(b []byte) []byte
			wantLine int
			wantSeq  int64
		}{
			{
				name: "edit one byte",
				change: func(b []byte) []byte {
					// Change the kind of entry 2: "plan.reviewed" → "plan.reviewes".
					i := bytes.Index(b, []byte("plan.reviewed"))
					b[i+len("plan.reviewed")-1] = 's'
					return b
				},
				wantLine: 2, wantSeq: 2,
			},
			{
				name: "delete a line",
				change: func(b []byte) []byte {
					ls := bytes.SplitAfter(b, []byte("\n"))
					return bytes.Join([][]byte{ls[0], ls[2]}, nil)
				},
				wantLine: 2, wantSeq: 2,
			},
			{
				name: "truncate the last line mid-way",
				change: func(b []byte) []byte {
					last := bytes.LastIndex(b[:len(b)-1], []byte("\n")) + 1
					return b[:last+(len(b)-last)/2]
				},
				wantLine: 3, wantSeq: 3,
			},
			{
				name: "truncate the whole last line",
				change: func(b []byte) []byte {
					return b[:bytes.LastIndex(b[:len(b)-1], []byte("\n"))+1]
				},
				wantLine: 0, wantSeq: 3, // missing entry against the ledger's head
			},
		} {
			t.Run(tc.name, func(t *testing.T) {
				t.Parallel()
				path, head, _ := appendThree(t, b)
				content, err := os.ReadFile(path)
				require.NoError(t, err)
				require.NoError(t, os.WriteFile(path, tc.change(content), 0o600))

				lines, err := ReadJournal(path)
				require.NoError(t, err)
				_, problem := journal.Verify(lines, head)
				require.NotNil(t, problem)
				require.Equal(t, tc.wantLine, problem.Line, problem.String())
				require.Equal(t, tc.wantSeq, problem.Seq, problem.String())
			})
		}
	})
}

func TestReadJournalLines(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for _, tc := range []struct {
		content string
		want    []string
	}{
		{"", nil},
		{"a\n", []string{"a"}},
		{"a\nb", []string{"a", "b"}},
		{"a\n\nb\n", []string{"a", "", "b"}},
	} {
		path := filepath.Join(dir, "j")
		require.NoError(t, os.WriteFile(path, []byte(tc.content), 0o600))
		lines, err := ReadJournal(path)
		require.NoError(t, err)
		var got []string
		for i, l := range lines {
			require.Equal(t, i+1, l.Number)
			got = append(got, string(l.Text))
		}
		require.Equal(t, tc.want, got, "%q", tc.content)
	}

	_, err := ReadJournal(filepath.Join(dir, "missing"))
	require.ErrorIs(t, err, fault.ErrNotFound)
	_, err = ReadEntries(filepath.Join(dir, "missing"))
	require.ErrorIs(t, err, fault.ErrNotFound)
}

func TestReadEntriesStopsAtDamage(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, b backend) {
		path, _, _ := appendThree(t, b)
		content, err := os.ReadFile(path)
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(path, content[:len(content)-10], 0o600))
		entries, err := ReadEntries(path)
		require.ErrorContains(t, err, "line 3 is not a journal entry")
		require.Len(t, entries, 2)
	})
}

func TestJournalConcurrentAppends(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, b backend) {
		ctx := t.Context()
		fx := openJournal(t, b)
		const n = 40
		var wg sync.WaitGroup
		errc := make(chan error, n)
		for i := range n {
			wg.Go(func() {
				_, err := fx.j.Append(ctx, testRecord{kind: "tick", N: i})
				errc <- err
			})
		}
		wg.Wait()
		close(errc)
		for err := range errc {
			require.NoError(t, err)
		}
		lines, err := ReadJournal(fx.j.Path())
		require.NoError(t, err)
		head, err := fx.ledger.JournalHead(ctx, fx.j.SessionID())
		require.NoError(t, err)
		count, problem := journal.Verify(lines, head)
		require.Nil(t, problem)
		require.Equal(t, int64(n), count)
		require.NoError(t, fx.j.Close(ctx))
	})
}

func TestJournalAppendHonoursCancelledContext(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, b backend) {
		fx := openJournal(t, b)
		ctx, cancel := context.WithCancel(t.Context())
		cancel()
		_, err := fx.j.Append(ctx, testRecord{kind: "x"})
		require.ErrorIs(t, err, context.Canceled)
		lines, err := ReadJournal(fx.j.Path())
		require.NoError(t, err)
		require.Empty(t, lines)
	})
}

// testRecord is a journal record of the kind it names, for tests of the
// journal itself.
type testRecord struct {
	kind journal.Kind
	N    int    `json:"n"`
	Note string `json:"note,omitempty"`
}

func (r testRecord) JournalKind() journal.Kind { return r.kind }

// TestSessionFilesListsEverySessionDirectory: journal verify finds the
// journals no ledger row accounts for from this list: every session
// directory, with a journal or not, and nothing else.
func TestSessionFilesListsEverySessionDirectory(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	none, err := SessionFiles{Dir: filepath.Join(dir, "missing")}.SessionIDs(t.Context())
	require.NoError(t, err, "no sessions directory yet is no sessions")
	require.Empty(t, none)
	for _, d := range []string{"20261130T100000Z-00000b", "20261130T090000Z-00000a", "empty"} {
		require.NoError(t, os.MkdirAll(filepath.Join(dir, d), 0o700))
	}
	require.NoError(t, os.WriteFile(filepath.Join(dir, "20261130T090000Z-00000a", JournalFile), []byte("{}\n"), 0o600))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "stray.txt"), []byte("x"), 0o600))
	ids, err := SessionFiles{Dir: dir}.SessionIDs(t.Context())
	require.NoError(t, err)
	require.Equal(t, []string{"20261130T090000Z-00000a", "20261130T100000Z-00000b", "empty"}, ids)
}
