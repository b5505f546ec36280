package plain

import (
	"io"

	"github.com/relcap/relcap/workflow/input"
)

// SafeWriter writes to w what it is given with every rune a terminal could
// act on made visible (input.TerminalSafe): text relcap prints comes
// from people, files and tools (a reason, a resource address, a branch
// name), and none of it may move the cursor, retitle the window or forge
// a line with a carriage return. Each Write is escaped on its own, so a
// rune split across two writes shows as its bytes' escapes, never raw.
//
// When w is a file (a terminal), so is the writer: its Fd, Read and Close
// are w's, so terminal detection still sees the terminal.
func SafeWriter(w io.Writer) io.Writer {
	if f, ok := w.(file); ok {
		return safeFile{safeWriter{w}, f}
	}
	return safeWriter{w}
}

// file is what terminal detection looks for: an *os.File or its like.
type file interface {
	io.ReadWriteCloser
	Fd() uintptr
}

type safeFile struct {
	safeWriter
	f file
}

func (s safeFile) Read(p []byte) (int, error) { return s.f.Read(p) }
func (s safeFile) Close() error               { return s.f.Close() }
func (s safeFile) Fd() uintptr                { return s.f.Fd() }

type safeWriter struct{ w io.Writer }

func (s safeWriter) Write(p []byte) (int, error) {
	safe := input.TerminalSafe(string(p))
	if len(safe) == len(p) && safe == string(p) {
		return s.w.Write(p)
	}
	if _, err := io.WriteString(s.w, safe); err != nil {
		return 0, err
	}
	return len(p), nil
}
