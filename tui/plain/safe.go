package plain

import (
	"io"

	"github.com/relcap/relcap/workflow"
)

// SafeWriter writes to w what it is given with every rune a terminal could
// act on made visible (workflow.TerminalSafe): text relcap prints comes
// from people, files and tools (a reason, a resource address, a branch
// name), and none of it may move the cursor, retitle the window or forge
// a line with a carriage return. Each Write is escaped on its own, so a
// rune split across two writes shows as its bytes' escapes, never raw.
func SafeWriter(w io.Writer) io.Writer { return safeWriter{w} }

type safeWriter struct{ w io.Writer }

func (s safeWriter) Write(p []byte) (int, error) {
	safe := workflow.TerminalSafe(string(p))
	if len(safe) == len(p) && safe == string(p) {
		return s.w.Write(p)
	}
	if _, err := io.WriteString(s.w, safe); err != nil {
		return 0, err
	}
	return len(p), nil
}
