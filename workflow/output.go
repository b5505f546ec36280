package workflow

import (
	"bytes"
	"context"
	"errors"
	"io"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/relcap/relcap/workflow/journal"
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

// WithToolOutput returns ctx carrying w, the writer adapters stream tool
// output to for operations under ctx.
func WithToolOutput(ctx context.Context, w io.Writer) context.Context {
	return context.WithValue(ctx, toolOutputKey{}, w)
}

// ToolOutput returns the writer ctx carries for tool output, if any.
func ToolOutput(ctx context.Context) (io.Writer, bool) {
	w, ok := ctx.Value(toolOutputKey{}).(io.Writer)
	return w, ok && w != nil
}

// maxJournaledOutput bounds how much of one operation's tool output the
// journal keeps: a plan of ten thousand resources prints megabytes, and
// the journal is evidence, not a log archive. What is cut is counted.
const maxJournaledOutput = 1 << 20

// outputLines splits tool output into lines, hands each to emit as it
// completes and keeps them (up to maxJournaledOutput bytes) for the
// journal. It is safe for concurrent use: Terraform's stdout and stderr
// are copied by two goroutines.
type outputLines struct {
	emit    func(line string)
	secrets *secret.Set // masked in every line before it is shown or kept
	// keepNone keeps no line: nothing journals them (ScrubbedLines).
	keepNone bool

	mu      sync.Mutex
	partial []byte
	kept    []string
	size    int
	dropped int
}

func newOutputLines(emit func(string), secrets *secret.Set) *outputLines {
	return &outputLines{emit: emit, secrets: secrets}
}

// Write splits p into lines; a trailing part waits for the rest of its line.
func (o *outputLines) Write(p []byte) (int, error) {
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
func (o *outputLines) Flush() {
	o.mu.Lock()
	defer o.mu.Unlock()
	if len(o.partial) > 0 {
		o.line(string(o.partial))
		o.partial = nil
	}
}

// line records one complete line; o.mu is held.
func (o *outputLines) line(s string) {
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

// ScrubbedLines is tool output for a command that gives tools w directly,
// outside the Service's operations (which journal theirs): each complete
// line, made printable and with secrets masked as known when the line
// completes, goes to w; flush ends a trailing partial line. Masking whole
// lines catches a secret a tool's output splits across two writes.
func ScrubbedLines(w io.Writer, secrets *secret.Set) (out io.Writer, flush func()) {
	o := newOutputLines(func(line string) {
		_, _ = io.WriteString(w, line+"\n") // a terminal's write error cannot be reported anywhere better
	}, secrets)
	o.keepNone = true
	return o, o.Flush
}

// Lines returns what was kept and how many lines were not.
func (o *outputLines) Lines() ([]string, int) {
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

// withToolOutput is ctx for one operation of the Service outside a release
// run (relcap plan, apply, unlock, ownership check): tool output goes to
// Deps.ToolOutput as it comes, and done journals it, joined to the
// operation's error.
func (s *Service) withToolOutput(ctx context.Context, release string, step StepKind) (context.Context, func(error) error) {
	out := newOutputLines(func(line string) {
		if w := s.toolOutput(); w != nil {
			_, _ = io.WriteString(w, line+"\n") // a terminal's write error cannot be reported anywhere better
		}
	}, s.d.Secrets)
	return WithToolOutput(ctx, out), func(err error) error {
		return joinJournalError(err, s.journalOutput(ctx, out, release, step))
	}
}

// journalOutput records what a tool printed during step, if anything.
func (s *Service) journalOutput(ctx context.Context, out *outputLines, release string, step StepKind) error {
	out.Flush()
	lines, dropped := out.Lines()
	if len(lines) == 0 && dropped == 0 {
		return nil
	}
	return s.journal(context.WithoutCancel(ctx), journal.StepOutput{Release: release, Step: step.String(), Lines: lines, Dropped: dropped})
}

// joinJournalError adds a failed journal write to an operation's result.
func joinJournalError(err, jerr error) error {
	if jerr == nil {
		return err
	}
	if err == nil {
		return jerr
	}
	return errors.Join(err, journalFailed(jerr))
}

// SetToolOutput changes where tool output of operations outside a release
// run goes (Deps.ToolOutput); nil discards it. The cockpit sets nil: no
// child process may write to its terminal.
func (s *Service) SetToolOutput(w io.Writer) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.d.ToolOutput = w
}

func (s *Service) toolOutput() io.Writer {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.d.ToolOutput
}
