// Package asciicast owns the cockpit's screen recording format, asciicast
// v2 (https://docs.asciinema.org/manual/asciicast/v2/): Writer records what
// the program wrote to the terminal with its timing, Play plays a
// recording back. One header JSON line, then one [seconds, "o", data] line
// per write and [seconds, "r", "WxH"] per resize.
package asciicast

import (
	"encoding/json"
	"fmt"
	"io"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/charmbracelet/x/term"
)

// Title is the title every cockpit recording carries.
const Title = "relcap cockpit"

// Writer writes an asciicast v2 recording of exactly the bytes the program
// wrote to the terminal, with their timing. It records the rendered
// screen, which already masks secrets, so a recording never holds more
// than the captain saw. It is safe for concurrent use.
type Writer struct {
	mu      sync.Mutex
	w       io.Writer
	now     func() time.Time
	start   time.Time
	width   int
	height  int
	started bool
	// pending holds the bytes of a UTF-8 sequence split across two writes,
	// since JSON strings must be valid UTF-8.
	pending []byte
	err     error
}

// NewWriter records into w a terminal of width × height, timed by now.
func NewWriter(w io.Writer, width, height int, now func() time.Time) *Writer {
	return &Writer{w: w, now: now, width: width, height: height}
}

// header writes the header line on first use, so the size is the one the
// program settled on.
func (r *Writer) header() {
	if r.started {
		return
	}
	r.started = true
	r.start = r.now()
	h := struct {
		Version   int    `json:"version"`
		Width     int    `json:"width"`
		Height    int    `json:"height"`
		Timestamp int64  `json:"timestamp"`
		Title     string `json:"title"`
	}{2, max(1, r.width), max(1, r.height), r.start.Unix(), Title}
	r.line(h)
}

func (r *Writer) line(v any) {
	if r.err != nil {
		return
	}
	b, err := json.Marshal(v)
	if err != nil {
		r.err = err
		return
	}
	b = append(b, '\n')
	if _, err := r.w.Write(b); err != nil {
		r.err = fmt.Errorf("write screen recording: %w", err)
	}
}

func (r *Writer) elapsed() float64 {
	// Microsecond precision, as asciinema writes it.
	return float64(r.now().Sub(r.start).Microseconds()) / 1e6
}

// Output records bytes written to the terminal.
func (r *Writer) Output(p []byte) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.header()
	data := append(r.pending, p...)
	cut := len(data)
	// Hold back an incomplete trailing UTF-8 sequence (at most 3 bytes).
	for i := len(data) - 1; i >= 0 && i >= len(data)-3; i-- {
		if utf8.RuneStart(data[i]) {
			if !utf8.FullRune(data[i:]) {
				cut = i
			}
			break
		}
	}
	r.pending = append([]byte(nil), data[cut:]...)
	if cut == 0 {
		return
	}
	r.line([]any{r.elapsed(), "o", string(data[:cut])})
}

// Resize records a terminal resize; before the header it sets the size.
func (r *Writer) Resize(w, h int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.started {
		r.width, r.height = w, h
		return
	}
	if w == r.width && h == r.height {
		return
	}
	r.width, r.height = w, h
	r.line([]any{r.elapsed(), "r", fmt.Sprintf("%dx%d", w, h)})
}

// Close flushes held-back bytes and reports the first write error; it
// does not close the underlying writer.
func (r *Writer) Close() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.pending) > 0 {
		r.header()
		r.line([]any{r.elapsed(), "o", string(r.pending)})
		r.pending = nil
	}
	if !r.started {
		r.header()
	}
	return r.err
}

// teeWriter sends output to the terminal and to the recorder. A recording
// failure never breaks the captain's screen; close reports it.
type teeWriter struct {
	out io.Writer
	rec *Writer
}

func (t teeWriter) Write(p []byte) (int, error) {
	n, err := t.out.Write(p)
	if n > 0 {
		t.rec.Output(p[:n])
	}
	return n, err
}

// teeFile is teeWriter over a terminal: Bubble Tea only enters raw mode,
// reads the size and listens for resizes when its output is a term.File,
// so the wrapper must still be one.
type teeFile struct {
	teeWriter
	f term.File
}

func (t teeFile) Read(p []byte) (int, error) { return t.f.Read(p) }
func (t teeFile) Close() error               { return t.f.Close() }
func (t teeFile) Fd() uintptr                { return t.f.Fd() }

// Tee wraps the terminal out so everything written to it is also recorded
// by rec; a recording failure never breaks the screen (Close reports it).
func Tee(out io.Writer, rec *Writer) io.Writer {
	if f, ok := out.(term.File); ok {
		return teeFile{teeWriter{out, rec}, f}
	}
	return teeWriter{out, rec}
}
