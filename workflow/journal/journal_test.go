package journal_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/relcap/relcap/workflow/journal"
)

var t0 = time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)

func journalLines(t *testing.T, n int) ([]journal.Line, journal.Head) {
	t.Helper()
	var prev *journal.Entry
	var lines []journal.Line
	for i := range n {
		e, err := journal.Next(prev, t0.Add(time.Duration(i)*time.Second), "alice", "effort.logged", map[string]any{"minutes": i + 1, "what": "standup"})
		require.NoError(t, err)
		b, err := json.Marshal(e)
		require.NoError(t, err)
		lines = append(lines, journal.Line{Number: i + 1, Text: b})
		prev = &e
	}
	return lines, journal.Head{SessionID: "s", Seq: prev.Seq, Hash: prev.Hash}
}

func TestVerifyJournalDetectsEveryKindOfTampering(t *testing.T) {
	t.Parallel()
	lines, head := journalLines(t, 4)
	n, problem := journal.Verify(lines, head)
	require.Nil(t, problem)
	require.EqualValues(t, 4, n)

	edit := func(i int, f func(string) string) []journal.Line {
		out := append([]journal.Line(nil), lines...)
		out[i] = journal.Line{Number: out[i].Number, Text: []byte(f(string(out[i].Text)))}
		return out
	}
	cases := map[string]struct {
		lines    []journal.Line
		line     int
		contains string
	}{
		"one byte edited":    {edit(1, func(s string) string { return strings.Replace(s, "standup", "standuq", 1) }), 2, "edited"},
		"line deleted":       {append(append([]journal.Line(nil), lines[:1]...), lines[2:]...), 3, "removed"},
		"lines reordered":    {[]journal.Line{lines[0], lines[2], lines[1], lines[3]}, 3, "removed or reordered"},
		"last line deleted":  {lines[:3], 0, "truncated"},
		"truncated mid-line": {edit(3, func(s string) string { return s[:len(s)/2] }), 4, "damaged or truncated"},
		"garbage":            {edit(0, func(string) string { return "{" }), 1, "not a journal entry"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			_, p := journal.Verify(c.lines, head)
			require.NotNil(t, p)
			require.Equal(t, c.line, p.Line)
			require.Contains(t, p.Reason, c.contains)
		})
	}

	// A whole rewritten chain is consistent but differs from the ledger.
	forged, _ := journalLines(t, 4)
	forged[3] = func() journal.Line {
		var e journal.Entry
		require.NoError(t, json.Unmarshal(forged[3].Text, &e))
		e.Data = json.RawMessage(`{"minutes":400}`)
		e.Hash = e.ComputeHash()
		b, _ := json.Marshal(e)
		return journal.Line{Number: 4, Text: b}
	}()
	_, p := journal.Verify(forged, head)
	require.NotNil(t, p)
	require.Contains(t, p.Reason, "rewritten")
}
