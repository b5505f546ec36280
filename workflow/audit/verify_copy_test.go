package audit_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/relcap/relcap/workflow"
	"github.com/relcap/relcap/workflow/audit"
	"github.com/relcap/relcap/workflow/journal"
)

// keptSession registers a closed session whose journal (two entries and a
// screen recording's) the ledger keeps, and writes its file and recording.
func (w *sealWorld) keptSession(t *testing.T, id string) []string {
	t.Helper()
	ctx := t.Context()
	require.NoError(t, w.ledger.OpenSession(ctx, workflow.Session{ID: id, Actor: "ana", Command: "cockpit", StartedAt: t0}))
	var (
		prev  *journal.Entry
		lines []string
		kept  []journal.Line
	)
	for i, rec := range []journal.Record{
		journal.StepStarted{Release: "r1", Step: "plan"},
		journal.ScreenRecorded{File: "screen.cast", Release: "r1", SHA256: "abc"},
	} {
		data, err := json.Marshal(rec)
		require.NoError(t, err)
		e, err := journal.Next(prev, t0.Add(time.Duration(i)*time.Second), "ana", rec.JournalKind(), json.RawMessage(data))
		require.NoError(t, err)
		b, err := json.Marshal(e)
		require.NoError(t, err)
		lines = append(lines, string(b))
		kept = append(kept, journal.Line{Number: i + 1, Text: b})
		prev = &e
	}
	require.NoError(t, w.ledger.AppendJournal(ctx, id, kept))
	require.NoError(t, w.ledger.CloseSession(ctx, id, t0.Add(time.Minute)))
	w.files.SetJournal(id, lines)
	w.files.SetRecording(id, "screen.cast", "abc")
	return lines
}

func TestVerifyComparesTheFileWithTheLedgersCopy(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		change func(w *sealWorld, lines []string)
		check  func(t *testing.T, v audit.SessionVerification)
	}{
		{"both intact", func(*sealWorld, []string) {}, func(t *testing.T, v audit.SessionVerification) {
			require.True(t, v.Intact, "%v", v.Failed)
			require.Equal(t, audit.JournalFromFile, v.Journal)
			require.Equal(t, audit.VerifyOK, v.Checks.LedgerCopy.Status)
		}},
		{"file on another machine", func(w *sealWorld, _ []string) { w.files.RemoveJournal("s1") }, func(t *testing.T, v audit.SessionVerification) {
			require.True(t, v.Intact, "%v", v.Failed)
			require.Equal(t, audit.JournalFromLedger, v.Journal)
			require.EqualValues(t, 2, v.Entries)
			require.Equal(t, audit.VerifyOK, v.Checks.Recordings.Status, "the recording is here")
		}},
		{"file and recording on another machine", func(w *sealWorld, _ []string) {
			w.files.RemoveJournal("s1")
			w.files.RemoveRecording("s1", "screen.cast")
		}, func(t *testing.T, v audit.SessionVerification) {
			require.True(t, v.Intact, "%v", v.Failed)
			require.Equal(t, audit.VerifyUnchecked, v.Checks.Recordings.Status)
			require.Equal(t, "screen.cast recorded on another machine, not checked here (0 of 1 recording(s) checked)", v.Checks.Recordings.Detail)
			require.Contains(t, v.Warnings, "recordings not checked: "+v.Checks.Recordings.Detail)
		}},
		{"recording missing beside the file", func(w *sealWorld, _ []string) { w.files.RemoveRecording("s1", "screen.cast") }, func(t *testing.T, v audit.SessionVerification) {
			require.False(t, v.Intact)
			require.Equal(t, audit.VerifyFailed, v.Checks.Recordings.Status)
		}},
		{"ledger's copy edited", func(w *sealWorld, lines []string) {
			w.ledger.EditJournalCopy("s1", 1, strings.Replace(lines[0], `"plan"`, `"apply"`, 1))
		}, func(t *testing.T, v audit.SessionVerification) {
			require.False(t, v.Intact)
			require.Equal(t, []string{"ledger_copy: line 1 (entry 1): differs from the ledger's copy of entry 1: the ledger's copy was edited"}, v.Failed)
		}},
		{"file edited", func(w *sealWorld, lines []string) {
			w.files.SetJournal("s1", []string{strings.Replace(lines[0], `"plan"`, `"apply"`, 1), lines[1]})
		}, func(t *testing.T, v audit.SessionVerification) {
			require.False(t, v.Intact)
			require.Equal(t, []string{
				"chain: line 1 (entry 1): content does not match its hash: the entry was edited",
				"ledger_copy: line 1 (entry 1): differs from the ledger's copy of entry 1: the journal file was edited",
			}, v.Failed)
		}},
		{"line appended to the file", func(w *sealWorld, lines []string) {
			w.files.SetJournal("s1", append(lines, lines[1]))
		}, func(t *testing.T, v audit.SessionVerification) {
			require.False(t, v.Intact)
			require.Contains(t, v.Failed, "ledger_copy: line 3 (entry 3): not in the ledger's copy, which has no entry 3")
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			w := newSealWorld()
			lines := w.keptSession(t, "s1")
			tc.change(w, lines)
			byID, _ := w.verify(t, audit.Deps{})
			tc.check(t, byID["s1"])
		})
	}
}
