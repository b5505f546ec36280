// Package tooloutput carries what tools print for a person (Terraform's
// "Initializing the backend…" and its progress) from the adapters that
// start them to whoever shows and keeps it: the writer travels in the
// operation's context (With, From), and Lines cuts it into printable
// lines with secrets masked. It is a leaf apart from the release core
// because every adapter that starts a tool writes to it and none of them
// needs the core for that; the core decides where the lines go (events,
// the journal).
package tooloutput

import (
	"bytes"
	"context"
	"io"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/relcap/relcap/workflow/secret"
)

// Tool output: what Terraform (or any tool an adapter starts) prints for a
// person, "Initializing the backend…" and the plan's progress. Under the
// cockpit no child process may write to the terminal, so the Service gives
// every operation a writer that turns the output into events (the
// cockpit's log pane, the headless printer's stderr) and keeps it for the
// session journal. The writer travels in the operation's context because
// any port that may start a tool (the ownership source, Plan, Inputs,
// Apply, ForceUnlock) needs it, and the tool's output is the operation's,
// not the adapter's.

type toolOutputKey struct{}

// With returns ctx carrying w, the writer adapters stream tool
// output to for operations under ctx.
func With(ctx context.Context, w io.Writer) context.Context {
	return context.WithValue(ctx, toolOutputKey{}, w)
}

// From returns the writer ctx carries for tool output, if any.
func From(ctx context.Context) (io.Writer, bool) {
	w, ok := ctx.Value(toolOutputKey{}).(io.Writer)
	return w, ok && w != nil
}

// maxJournaledOutput bounds how much of one operation's tool output the
// journal keeps: a plan of ten thousand resources prints megabytes, and
// the journal is evidence, not a log archive. What is cut is counted.
const maxJournaledOutput = 1 << 20

// Lines splits tool output into lines, hands each to emit as it
// completes and keeps them (up to maxJournaledOutput bytes) for the
// journal. It is safe for concurrent use: Terraform's stdout and stderr
// are copied by two goroutines.
type Lines struct {
	emit    func(line string)
	secrets *secret.Set // masked in every line before it is shown or kept
	// keepNone keeps no line: nothing journals them (Scrubbed).
	keepNone bool

	mu      sync.Mutex
	partial []byte
	kept    []string
	size    int
	dropped int
}

// NewLines is tool output whose complete lines, masked and made
// printable, go to emit and are kept for the journal.
func NewLines(emit func(string), secrets *secret.Set) *Lines {
	return &Lines{emit: emit, secrets: secrets}
}

// Write splits p into lines; a trailing part waits for the rest of its line.
func (o *Lines) Write(p []byte) (int, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.partial = append(o.partial, p...)
	for {
		i := bytes.IndexByte(o.partial, '\n')
		if i < 0 {
			break
		}
		o.line(string(o.partial[:i]))
		o.partial = o.partial[i+1:]
	}
	return len(p), nil
}

// Flush ends a trailing partial line.
func (o *Lines) Flush() {
	o.mu.Lock()
	defer o.mu.Unlock()
	if len(o.partial) > 0 {
		o.line(string(o.partial))
		o.partial = nil
	}
}

// line records one complete line; o.mu is held.
func (o *Lines) line(s string) {
	s = o.secrets.Scrub(printable(strings.TrimRight(s, "\r")))
	switch {
	case o.keepNone:
	case o.size+len(s) <= maxJournaledOutput:
		o.kept = append(o.kept, s)
		o.size += len(s)
	default:
		o.dropped++
	}
	if o.emit != nil {
		o.emit(s)
	}
}

// Scrubbed is tool output for a command that gives tools w directly,
// outside the Service's operations (which journal theirs): each complete
// line, made printable and with secrets masked as known when the line
// completes, goes to w; flush ends a trailing partial line. Masking whole
// lines catches a secret a tool's output splits across two writes.
func Scrubbed(w io.Writer, secrets *secret.Set) (out io.Writer, flush func()) {
	o := NewLines(func(line string) {
		_, _ = io.WriteString(w, line+"\n") // a terminal's write error cannot be reported anywhere better
	}, secrets)
	o.keepNone = true
	return o, o.Flush
}

// Lines returns what was kept and how many lines were not.
func (o *Lines) Lines() ([]string, int) {
	o.mu.Lock()
	defer o.mu.Unlock()
	return append([]string(nil), o.kept...), o.dropped
}

// printable drops terminal control sequences and other control characters
// (tabs become spaces): a tool's line must not move the cockpit's cursor,
// and invalid UTF-8 is replaced.
func printable(s string) string {
	if !strings.ContainsFunc(s, func(r rune) bool { return r < 0x20 || r == 0x7f || r == utf8.RuneError }) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == 0x1b:
			i += escapeLen(s[i:])
			continue
		case r == '\t':
			b.WriteString("    ")
		case r == utf8.RuneError && n == 1:
			b.WriteRune('\uFFFD')
		case r < 0x20 || r == 0x7f:
		default:
			b.WriteRune(r)
		}
		i += n
	}
	return b.String()
}

// escapeLen is the length of the escape sequence s starts with: CSI
// (ESC [ … final byte), OSC (ESC ] … BEL or ESC \), or ESC and one byte.
func escapeLen(s string) int {
	if len(s) < 2 {
		return len(s)
	}
	switch s[1] {
	case '[':
		for i := 2; i < len(s); i++ {
			if s[i] >= 0x40 && s[i] <= 0x7e {
				return i + 1
			}
		}
	case ']':
		for i := 2; i < len(s); i++ {
			if s[i] == 0x07 {
				return i + 1
			}
			if s[i] == 0x1b && i+1 < len(s) && s[i+1] == '\\' {
				return i + 2
			}
		}
	default:
		return 2
	}
	return len(s)
}
