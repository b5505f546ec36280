package tooloutput

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestToolLinesAreCleanedOfWhatWouldMoveTheCursor: a tool's output is
// shown inside the cockpit's pane, so colour codes, cursor moves, titles
// and other control characters are dropped; text stays.
func TestToolLinesAreCleanedOfWhatWouldMoveTheCursor(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"Plan: 1 to add":                           "Plan: 1 to add",
		"\x1b[1m\x1b[32mApply complete!\x1b[0m":    "Apply complete!",
		"\x1b]0;title\x07after":                    "after",
		"\x1b]8;;http://x\x1b\\link\x1b]8;;\x1b\\": "link",
		"a\tb":                      "a    b",
		"bell\x07 and \x1b[2Jclear": "bell and clear",
		"bad \xff byte":             "bad \uFFFD byte",
		"trailing esc \x1b":         "trailing esc ",
	} {
		require.Equal(t, want, printable(in), "%q", in)
	}
}

// TestOutputLinesSplitWritesAndKeepAPartialLine: writes arrive in pieces
// from two goroutines; lines are whole when emitted.
func TestOutputLinesSplitWritesAndKeepAPartialLine(t *testing.T) {
	t.Parallel()
	var got []string
	o := NewLines(func(s string) { got = append(got, s) }, nil)
	_, _ = o.Write([]byte("Initial"))
	_, _ = o.Write([]byte("izing\r\nthe backend\npart"))
	require.Equal(t, []string{"Initializing", "the backend"}, got)
	o.Flush()
	require.Equal(t, []string{"Initializing", "the backend", "part"}, got)
	lines, dropped := o.Lines()
	require.Equal(t, got, lines)
	require.Zero(t, dropped)
}
